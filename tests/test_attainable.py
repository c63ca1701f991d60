"""`lexsem.stats.attainable`: which printed accuracies some k/n gives, worked by hand."""

from __future__ import annotations

import pytest

from lexsem.stats.attainable import attainable, attainable_mean, half_unit, nearest


def test_swap_object_45_18_over_245_items_is_no_k_over_n() -> None:
    """110/245 = 44.897… prints 44.90, 111/245 = 45.306… prints 45.31: nothing prints 45.18."""
    assert nearest(45.18, 245) == (110, 111)
    assert not attainable(45.18, 245, 2)
    assert attainable(44.90, 245, 2) and attainable(45.31, 245, 2)
    assert not attainable(45.0, 245, 2)  # 45.00 lies between 44.90 and 45.31 too


def test_a_coarser_print_admits_more_values() -> None:
    """45.18 at one decimal is 45.2, and 45.306… prints 45.3, not 45.2; 44.9 is 110/245."""
    assert not attainable(45.2, 245, 1)
    assert attainable(44.9, 245, 1)
    assert attainable(45.0, 245, 0)  # 110/245 = 44.9 rounds to 45


def test_edges_zero_hundred_and_one_item() -> None:
    assert attainable(0.0, 245, 2) and attainable(100.0, 245, 2)
    assert attainable(0.0, 1, 2) and attainable(100.0, 1, 2)
    assert not attainable(50.0, 1, 2)  # one item: 0 or 100 only
    assert attainable(0.41, 245, 2) and not attainable(0.40, 245, 2)  # 1/245 = 0.408…
    assert attainable(0.408, 245, 3) and not attainable(0.41, 245, 3)  # 0.410 is not 0.408
    assert not attainable(100.01, 245, 2) and not attainable(-0.01, 245, 2)
    with pytest.raises(ValueError, match="n >= 1"):
        attainable(50.0, 0, 2)


def test_a_halfway_value_counts_for_either_rounding() -> None:
    """1/8 = 12.5 %: at 0 decimals half up prints 13, half to even 12; both are accepted, and
    11 or 14 are not. 3/8 = 37.5 %: 38 (half up and half to even) and 37."""
    assert attainable(12.0, 8, 0) and attainable(13.0, 8, 0)
    assert not attainable(11.0, 8, 0) and not attainable(14.0, 8, 0)
    assert attainable(37.0, 8, 0) and attainable(38.0, 8, 0)
    assert half_unit(2) * 200 == 1


def test_the_printed_decimal_not_the_binary_float() -> None:
    """29/100 = 0.29 is below 29 % in binary (0.28999…), but 29.0 over 100 items is k = 29."""
    assert attainable(29.0, 100, 2) and attainable(0.29 * 100, 100, 2)
    assert attainable(57.14, 7, 2)  # 4/7 = 57.142…


def test_a_mean_of_subset_accuracies() -> None:
    """Subsets of 2 and 3 items: the mean (k/2 + j/3)/2 is (3k + 2j)/12, i.e. the twelfths
    0, 2, 3, 4, …, 12 but not 1/12 (8.33 %): 58.33 = 7/12 (k=1, j=2), 25.00 = 3/12."""
    assert attainable_mean(58.33, [2, 3], 2) and attainable_mean(25.0, [2, 3], 2)
    assert attainable_mean(0.0, [2, 3], 2) and attainable_mean(100.0, [2, 3], 2)
    assert attainable_mean(8.33, [2, 3], 2) is False
    assert attainable_mean(10.0, [2, 3], 2) is False
    assert attainable_mean(44.90, [245], 2) and attainable_mean(45.18, [245], 2) is False


def test_a_mean_the_search_cannot_decide_in_its_budget_is_none() -> None:
    """SugarCrepe++'s five subsets: 50.00 is found at once; a budget of one visit decides
    nothing."""
    ns = [245, 666, 1652, 788, 1406]
    assert attainable_mean(50.0, ns, 2) is True
    assert attainable_mean(50.0, ns, 2, budget=1) is None
    assert attainable_mean(0.01, ns, 2) is True  # 1/1652 … 1/245 over 5 reach 0.01
    with pytest.raises(ValueError, match="at least one"):
        attainable_mean(1.0, [], 2)
