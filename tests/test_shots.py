"""k-shot demonstrations (SugarCrepe++, Table 14) on hand-made items: which items are drawn
(seeded, never the item itself, only its subset, whatever the pool's order), the right answer
of each prompt and ordering, and the conversation a question with demonstrations is."""

from __future__ import annotations

import random

import pytest

from lexsem.benchmarks.items import PairItem, TripletItem
from lexsem.engine.conversations import item_request
from lexsem.errors import DataError
from lexsem.tasks.choice import render
from lexsem.tasks.choice_task import choice_task
from lexsem.tasks.shots import pick_shots, render_shots, right_answer, shot_plan

TRIPLETS = [
    TripletItem(str(i), sub, f"{sub}{i}.jpg", f"p1 {sub} {i}", f"p2 {sub} {i}", f"n {sub} {i}")
    for sub in ("a", "b")
    for i in range(8)
]
PAIRS = [PairItem(str(i), "p", f"p{i}.jpg", f"pos {i}", f"neg {i}") for i in range(4)]


def test_demonstrations_are_other_items_of_the_subset_drawn_by_the_seed() -> None:
    item = TRIPLETS[3]
    demos = pick_shots(TRIPLETS, item, 3, seed=7)
    assert len(demos) == 3 == len(set(demos))
    assert item not in demos and all(d.subset == item.subset for d in demos)
    shuffled = TRIPLETS[::-1]
    random.Random(1).shuffle(shuffled)
    assert pick_shots(shuffled, item, 3, seed=7) == demos  # the pool's order does not matter
    assert pick_shots(TRIPLETS[:8], item, 3, seed=7) == demos  # nor other subsets
    draws = {tuple(d.id for d in pick_shots(TRIPLETS, item, 3, seed=s)) for s in range(20)}
    assert len(draws) > 5  # the seed changes the draw
    others = {tuple(d.id for d in pick_shots(TRIPLETS, it, 3, seed=7)) for it in TRIPLETS[:8]}
    assert len(others) > 1  # each item has its own draw
    assert pick_shots(TRIPLETS, item, 0, seed=7) == []
    assert len(pick_shots(TRIPLETS, item, 7, seed=7)) == 7  # every other item of the subset
    with pytest.raises(ValueError, match=r"item a/3: 8 shots need 8 other items of subset 'a', "
                                         r"which has 7"):  # fmt: skip
        pick_shots(TRIPLETS, item, 8, seed=7)


def test_an_item_with_the_same_id_is_never_its_own_demonstration() -> None:
    twin = TripletItem("3", "a", "other.jpg", "x", "y", "z")
    assert all(d.id != "3" for d in pick_shots([*TRIPLETS, twin], TRIPLETS[3], 7, seed=0))


def test_the_right_answer_is_the_position_the_prompt_asks_for() -> None:
    t = TRIPLETS[0]
    assert [right_answer("scpp3", t, o) for o in ("NPP", "PNP", "PPN")] == ["(1)", "(2)", "(3)"]
    assert right_answer("scpp_order", t, "PNP", answer_format="{n}") == "2"
    p = PAIRS[0]  # sc_gpt4v asks which caption best describes the image: the positive
    assert [right_answer("sc_gpt4v", p, o) for o in ("pos_first", "neg_first")] == ["(1)", "(2)"]
    with pytest.raises(ValueError, match=r"prompt 'scpp3' lists 3 options, the item has 2"):
        right_answer("scpp3", p, "pos_first")


def test_demonstrations_show_their_options_in_the_question_ordering() -> None:
    demos = TRIPLETS[1:3]
    shots = render_shots("scpp2", demos, "PPN")
    assert [s.prompt for s in shots] == [render("scpp2", d, "PPN") for d in demos]
    assert [s.answer for s in shots] == ["(3)", "(3)"]
    assert [s.item for s in shots] == demos


def test_a_question_with_demonstrations_is_a_conversation() -> None:
    def read(ref: str | None) -> bytes | None:
        return ref.encode() if ref else None

    plan = shot_plan(TRIPLETS, 2, shot_seed=3)
    item = TRIPLETS[5]
    demos = plan["a/5"]
    assert demos == pick_shots(TRIPLETS, item, 2, seed=3)
    (column,) = [c for c in choice_task("scpp3").columns if c.name == "answer_PNP"]
    request = item_request(column, item, read, demos)
    turns = request.turns
    assert [t.role for t in turns] == ["user", "assistant", "user", "assistant", "user"]
    assert turns[0].images == (demos[0].image.encode(),)
    assert turns[0].text == render("scpp3", demos[0], "PNP") and turns[1].text == "(2)"
    assert turns[1].images == () and turns[3].text == "(2)"
    assert turns[-1].text == render("scpp3", item, "PNP") and turns[-1].images == (b"a5.jpg",)
    assert item_request(column, item, read).turns == (turns[-1],)
    with pytest.raises(DataError, match=r"--shots 8: item a/0: 8 shots need 8 other items"):
        shot_plan(TRIPLETS, 8, 0)
