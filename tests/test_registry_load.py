"""The benchmark registry and loading a selection (real files via LEXSEM_TEST_DATA)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lexsem.benchmarks import catalog as registry
from lexsem.benchmarks.items import PairItem, TripletItem
from lexsem.benchmarks.load import load_benchmark
from lexsem.benchmarks.selectors import parse_selector
from lexsem.errors import DownloadError, LexsemError
from lexsem.registry import Registry


def test_registry_names_and_selectors() -> None:
    assert {"sugarcrepe", "sugarcrepe_pp", "visla_generic", "visla_spatial", "synthetic"} <= set(
        registry.names()
    )
    spec, subs = parse_selector("sugarcrepe_pp/swap_obj,replace_rel")
    assert spec.name == "sugarcrepe_pp" and [s.name for s in subs] == ["swap_obj", "replace_rel"]
    spec, subs = parse_selector("sugarcrepe")
    assert len(subs) == 7
    with pytest.raises(LexsemError, match="no subset 'bogus'"):
        parse_selector("sugarcrepe/bogus")
    with pytest.raises(LexsemError, match="unknown benchmark 'bogus'"):
        registry.get("bogus")


def test_every_source_is_pinned() -> None:
    for name in registry.names():
        for src in registry.get(name).sources:
            assert len(src.sha256) == 64
            assert "/main/" not in src.url and src.url.startswith("https://")


def test_offline_without_data_says_how_to_fix() -> None:
    with pytest.raises(DownloadError, match="--data-dir"):
        load_benchmark("visla_generic", offline=True)


@pytest.mark.parametrize(
    ("selector", "counts", "kind"),
    [
        (
            "sugarcrepe",
            {
                "add_att": 692,
                "add_obj": 2062,
                "replace_att": 788,
                "replace_obj": 1652,
                "replace_rel": 1406,
                "swap_att": 666,
                "swap_obj": 245,
            },
            PairItem,
        ),
        (
            "sugarcrepe_pp",
            {
                "swap_obj": 245,
                "swap_att": 666,
                "replace_obj": 1652,
                "replace_att": 788,
                "replace_rel": 1406,
            },
            TripletItem,
        ),
        ("visla_generic", {"generic": 973}, TripletItem),
    ],
)
def test_public_files_load(
    selector: str, counts: dict[str, int], kind: type, test_data_dir: Path
) -> None:
    b = load_benchmark(selector, data_dir=test_data_dir)
    assert {s.spec.name: len(s.items) for s in b.subsets} == counts
    assert all(isinstance(it, kind) for it in b.items)
    for s in b.subsets:
        assert s.sha256 == s.spec.source.sha256
        assert len({it.id for it in s.items}) == len(s.items)


def test_scpp_fields(test_data_dir: Path) -> None:
    (sub,) = load_benchmark("sugarcrepe_pp/swap_obj", data_dir=test_data_dir).subsets
    first = sub.items[0]
    assert first.id == "0" and first.image == "000000222235.jpg"
    assert first.p1 == "A cat sits on its hind legs, and swats at the plant."
    assert first.n == "A cat sits on the plant, and swats at its hind legs."


def test_visla_spatial_incomplete_rows_dropped_and_recorded(test_data_dir: Path) -> None:
    b = load_benchmark("visla_spatial", data_dir=test_data_dir)
    (sub,) = b.subsets
    assert len(sub.items) == 640  # the paper's count
    assert len(sub.dropped) == 12
    assert all(it.n.strip() for it in sub.items)
    raw = load_benchmark("visla_spatial", data_dir=test_data_dir, strict=False)
    assert len(raw.items) == 652 and raw.dropped() == {}


def test_a_registry_declares_its_entries_and_checks_their_type() -> None:
    """Entries given to the constructor are declared up front; a type as the check refuses a
    lazy entry of another type when it is first asked for, naming what the registry holds."""
    numbers: Registry[int] = Registry("number", int, {"one": 1, "pi": "math:pi"})
    assert numbers.names() == ["one", "pi"] and numbers.get("one") == 1
    with pytest.raises(TypeError, match="a number registry entry must be a int, got float"):
        numbers.get("pi")
    with pytest.raises(LexsemError, match="unknown number 'on' \\(did you mean 'one'\\?\\)"):
        numbers.get("on")
