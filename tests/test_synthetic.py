"""The generated benchmark: deterministic, the right counts, and every caption's truth checked.

Truth is checked by a parser written here, independently of the generator's templates: it reads
a caption back into facts (which objects with which colour and size, which relation between
them) and evaluates them against the scene's own layout.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from lexsem.benchmarks.items import TripletItem
from lexsem.benchmarks.sources import synthetic_text as synthetic
from lexsem.errors import LexsemError

# Pinned: the default generation must not change silently. If you change the generator on
# purpose, bump synthetic.GENERATOR_VERSION and update this value.
DEFAULT_SHA256 = "b2a20658a57f0fb69ef963e4ba8279cf8901f45e0aad284202cf1eb8b0cad372"

SIZE = "small|large"
COLOUR = "|".join(synthetic.COLOURS)
NOUN = "|".join(synthetic.NOUNS)
REL = "to the left of|to the right of|above|below"
REL_NAME = {
    "to the left of": "left_of",
    "to the right of": "right_of",
    "above": "above",
    "below": "below",
    "to its left": "left_of",
    "to its right": "right_of",
    "above it": "above",
    "below it": "below",
}
INVERSE = {"left_of": "right_of", "right_of": "left_of", "above": "below", "below": "above"}


def _np(tag: str) -> str:
    """'a small red ball' -> groups {tag}s, {tag}c, {tag}n."""
    return rf"an? (?P<{tag}s>{SIZE}) (?P<{tag}c>{COLOUR}) (?P<{tag}n>{NOUN})"


def _the_np(tag: str) -> str:
    return rf"the (?P<{tag}s>{SIZE}) (?P<{tag}c>{COLOUR}) (?P<{tag}n>{NOUN})"


def _clause(tag: str) -> str:
    return rf"an? (?P<{tag}n>{NOUN}) that is (?P<{tag}s>{SIZE}) and (?P<{tag}c>{COLOUR})"


# Each pattern states "A rel B" with A, B tagged "a", "b".
PATTERNS = [
    rf"{_np('a')} (?:is )?(?P<rel>{REL}) {_np('b')}",
    rf"there is {_np('a')} (?P<rel>{REL}) {_np('b')}",
    rf"(?P<rel>{REL}) {_the_np('b')} is {_np('a')}",
    rf"{_np('b')} (?:has|with) {_np('a')} (?P<rel>to its left|to its right|above it|below it)",
    rf"{_clause('a')} is (?P<rel>{REL}) {_clause('b')}",
]
# "there is A and B, and the X is rel the Y": relation between the named nouns.
CONJ = (
    rf"there is {_np('a')} and {_np('b')}, "
    rf"and the (?P<x>{NOUN}) is (?P<rel>{REL}) the (?P<y>{NOUN})"
)


@dataclass(frozen=True)
class Facts:
    described: tuple[tuple[str, str, str], ...]  # (noun, colour, size) of each mentioned object
    relation: tuple[str, str, str]  # (subject noun, relation, reference noun)


def parse(caption: str) -> Facts:
    assert caption[0].isupper() and caption.endswith("."), caption
    text = caption[:-1].lower()
    m = re.fullmatch(CONJ, text)
    if m:
        described = tuple((m[f"{t}n"], m[f"{t}c"], m[f"{t}s"]) for t in "ab")
        return Facts(described, (m["x"], REL_NAME[m["rel"]], m["y"]))
    for pattern in PATTERNS:
        m = re.fullmatch(pattern, text)
        if m:
            described = tuple((m[f"{t}n"], m[f"{t}c"], m[f"{t}s"]) for t in "ab")
            return Facts(described, (m["an"], REL_NAME[m["rel"]], m["bn"]))
    raise AssertionError(f"caption matches no known construction: {caption!r}")


def position(scene: synthetic.Scene, noun: str) -> tuple[int, int] | None:
    """(x, y) grid cell of the object named `noun` (y grows downwards); None if absent."""
    step = (1, 0) if scene.relation == "left_of" else (0, 1)
    for i, obj in enumerate((scene.first, scene.second)):
        if obj.noun == noun:
            return (step[0] * i, step[1] * i)
    return None


def true_of(facts: Facts, scene: synthetic.Scene) -> bool:
    objects = {(o.noun, o.colour, o.size) for o in (scene.first, scene.second)}
    if not all(d in objects for d in facts.described):
        return False
    x, rel, y = facts.relation
    px, py = position(scene, x), position(scene, y)
    if px is None or py is None or x == y:
        return False
    dx, dy = px[0] - py[0], px[1] - py[1]
    return {
        "left_of": dx < 0 and dy == 0,
        "right_of": dx > 0 and dy == 0,
        "above": dy < 0 and dx == 0,
        "below": dy > 0 and dx == 0,
    }[rel]


def canonical(relation: tuple[str, str, str]) -> tuple[str, str, str]:
    """'B right_of A' -> 'A left_of B' (likewise below -> above)."""
    x, rel, y = relation
    return (y, INVERSE[rel], x) if rel in ("right_of", "below") else relation


def word_distance(a: str, b: str) -> int:
    wa, wb = words(a), words(b)
    row = list(range(len(wb) + 1))
    for i, x in enumerate(wa, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(wb, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def words(text: str) -> list[str]:
    return re.sub(r"[.,;]", " ", text.lower()).split()


def diff(a: str, b: str) -> list[tuple[str, str]]:
    wa, wb = words(a), words(b)
    assert len(wa) == len(wb), (a, b)
    return [(x, y) for x, y in zip(wa, wb, strict=True) if x != y]


@pytest.fixture(scope="module")
def detailed() -> list[synthetic.SyntheticTriplet]:
    return synthetic.generate_detailed(synthetic.DEFAULT_SEED, synthetic.DEFAULT_PER_SUBSET)


def test_checker_sees_falsehoods() -> None:
    """The test's own checker must reject what is false, or the truth tests below prove nothing."""
    ball = synthetic.SceneObject("ball", "red", "small")
    box = synthetic.SceneObject("box", "blue", "large")
    scene = synthetic.Scene(ball, "left_of", box)
    assert true_of(parse("A small red ball is to the left of a large blue box."), scene)
    assert true_of(parse("A large blue box with a small red ball to its left."), scene)
    assert true_of(parse("To the right of the small red ball is a large blue box."), scene)
    assert not true_of(parse("A small red ball is to the right of a large blue box."), scene)
    assert not true_of(parse("A small red ball is above a large blue box."), scene)
    assert not true_of(parse("A small blue ball is to the left of a large red box."), scene)
    assert not true_of(parse("A small red box is to the left of a large blue ball."), scene)
    assert not true_of(parse("A small red cup is to the left of a large blue box."), scene)
    assert not true_of(parse("A large blue box has a small red ball to its right."), scene)
    with pytest.raises(AssertionError):
        parse("A red ball near a box.")


def test_default_counts_and_ids(detailed: list[synthetic.SyntheticTriplet]) -> None:
    assert synthetic.SUBSETS == (
        "replace_att",
        "replace_obj",
        "replace_rel",
        "swap_att",
        "swap_obj",
    )
    counts = Counter(t.item.subset for t in detailed)
    assert counts == {s: synthetic.DEFAULT_PER_SUBSET for s in synthetic.SUBSETS}
    assert len(detailed) == 500
    ids = [t.item.id for t in detailed]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(rf"{t.item.subset}-\d{{4}}", t.item.id) for t in detailed)
    assert len({t.scene for t in detailed}) == len(detailed)  # no scene used twice
    for t in detailed:
        assert t.item.image == f"synthetic:{t.scene.id}"
        assert synthetic.scene_for(t.item.image) == t.scene


def test_deterministic() -> None:
    a = synthetic.generate(seed=3, per_subset=20)
    b = synthetic.generate(seed=3, per_subset=20)
    assert a == b
    assert all(isinstance(item, TripletItem) for item, _ in a)
    c = synthetic.generate(seed=4, per_subset=20)
    assert [i for i, _ in a] != [i for i, _ in c]
    assert len(synthetic.generate(seed=3, per_subset=7)) == 5 * 7
    assert synthetic.generate(seed=3, per_subset=0) == []


def test_positives_true_negative_false(detailed: list[synthetic.SyntheticTriplet]) -> None:
    for t in detailed:
        item, scene = t.item, t.scene
        assert len({item.p1, item.p2, item.n}) == 3, item
        assert true_of(parse(item.p1), scene), item
        assert true_of(parse(item.p2), scene), item
        assert not true_of(parse(item.n), scene), item
        # The structured captions agree with their texts.
        for cap, text in ((t.p1, item.p1), (t.p2, item.p2), (t.n, item.n)):
            assert cap.text == text
            facts = parse(text)
            stated = {(o.noun, o.colour, o.size) for o in (cap.subject, cap.reference)}
            assert set(facts.described) == stated, (cap, text)
            assert canonical(facts.relation) == canonical(
                (cap.subject.noun, cap.relation, cap.reference.noun)
            ), (cap, text)
        assert t.p1.is_true_of(scene) and t.p2.is_true_of(scene)
        assert not t.n.is_true_of(scene)


def test_p2_is_a_different_construction(detailed: list[synthetic.SyntheticTriplet]) -> None:
    for t in detailed:
        item = t.item
        assert t.p1.template != t.p2.template
        # Same facts, different surface: the paraphrase is further from P1 than the negative.
        assert canonical(parse(item.p1).relation) == canonical(parse(item.p2).relation)
        assert sorted(parse(item.p1).described) == sorted(parse(item.p2).described)
        assert word_distance(item.p1, item.n) < word_distance(item.p1, item.p2), item
    templates = Counter(t.p1.template for t in detailed) + Counter(t.p2.template for t in detailed)
    assert set(templates) == set(synthetic.TEMPLATES)


def test_negatives_change_what_the_subset_says(detailed: list[synthetic.SyntheticTriplet]) -> None:
    colours, nouns, sizes = set(synthetic.COLOURS), set(synthetic.NOUNS), {"small", "large"}
    for t in detailed:
        item, scene = t.item, t.scene
        scene_colours = {scene.first.colour, scene.second.colour}
        scene_nouns = {scene.first.noun, scene.second.noun}
        changes = diff(item.p1, item.n)
        assert changes, item
        if item.subset == "replace_rel":
            assert len(changes) == 1, item
            assert set(changes[0]) in ({"left", "right"}, {"above", "below"}), item
        elif item.subset == "replace_att":
            assert len(changes) == 1, item
            old, new = changes[0]
            assert old in scene_colours and new in colours - scene_colours, item
        elif item.subset == "replace_obj":
            assert len(set(changes)) == 1, item  # the noun may be mentioned twice
            old, new = changes[0]
            assert old in scene_nouns and new in nouns - scene_nouns, item
        else:
            assert Counter(words(item.p1)) == Counter(words(item.n)), item
            swapped = {frozenset(c) for c in changes}
            assert len(swapped) == 1, item  # one pair of words exchanged
            (pair,) = swapped
            assert all((y, x) in changes for x, y in changes), item
            # Both attributes differ, so swapping one is not the same edit as swapping the rest.
            assert scene.first.colour != scene.second.colour, item
            assert scene.first.size != scene.second.size, item
            if item.subset == "swap_obj":
                assert pair == frozenset(scene_nouns), item
            else:
                assert pair == frozenset(scene_colours) or pair == sizes, item


def test_subsets_cover_both_kinds(detailed: list[synthetic.SyntheticTriplet]) -> None:
    swapped = Counter(
        "size" if {"small", "large"} & set(diff(t.item.p1, t.item.n)[0]) else "colour"
        for t in detailed
        if t.item.subset == "swap_att"
    )
    assert swapped["size"] > 10 and swapped["colour"] > 10
    rels = Counter(t.p1.relation for t in detailed)
    assert set(rels) == {"left_of", "right_of", "above", "below"}


def test_load_synthetic() -> None:
    items = synthetic.load_synthetic(None, "swap_obj")
    assert len(items) == synthetic.DEFAULT_PER_SUBSET
    assert all(i.subset == "swap_obj" for i in items)
    default = [i for i, _ in synthetic.generate() if i.subset == "swap_obj"]
    assert items == default
    with pytest.raises(LexsemError, match="replace_att, replace_obj"):
        synthetic.load_synthetic(None, "add_att")
    with pytest.raises(LexsemError, match="generated"):
        synthetic.load_synthetic(Path("x.json"), "swap_obj")


def test_content_sha256() -> None:
    sha = synthetic.content_sha256(synthetic.DEFAULT_SEED, synthetic.DEFAULT_PER_SUBSET)
    assert re.fullmatch(r"[0-9a-f]{64}", sha)
    assert sha == synthetic.content_sha256(0, 100)
    assert sha != synthetic.content_sha256(1, 100)
    assert sha != synthetic.content_sha256(0, 99)
    assert sha == DEFAULT_SHA256


def test_scene_for_rejects_bad_refs() -> None:
    for ref in ("coco/1.jpg", "synthetic:nope", "synthetic:small-red-ball.inside.large-blue-box"):
        with pytest.raises(LexsemError):
            synthetic.scene_for(ref)
    with pytest.raises(LexsemError):  # same noun twice
        synthetic.scene_for("synthetic:small-red-ball.above.large-blue-ball")
