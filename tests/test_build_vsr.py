"""VISLA spatial candidates from VSR (`lexsem.construct.vsr_spatial`; VISLA, §3.3): hand-made tables
with every pair and ranking worked out by hand, and the real VSR file checked against an
independent re-count and against VISLA's published spatial triplets."""

from __future__ import annotations

import csv
import itertools
import json
import re
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pytest

from lexsem.construct.stratified_sample import stratified_sample
from lexsem.construct.vsr_spatial import (
    caption_words,
    jaccard,
    vsr_negative_candidates,
    vsr_positive_pairs,
    vsr_read,
)
from lexsem.errors import DataError

# (image, caption, relation, label); the source_id of a row is its 1-based line number.
TINY = [
    ("A", "The cat is in the basket.", "in", 1),  # 1
    ("A", "The basket contains the cat.", "contains", 1),  # 2
    ("A", "The basket is under the cat.", "under", 0),  # 3
    ("A", "The cat is on the dog.", "on", 1),  # 4
    ("B", "The cat is outside the basket.", "outside", 0),  # 5
    ("B", "The basket is far from the cat.", "far from", 1),  # 6
    ("B", "The cat is in the basket.", "in", 1),  # 7
    ("B", "The dog is in the basket.", "in", 1),  # 8
    ("C", "The cat is on the basket.", "on", 1),  # 9
    ("D", "The basket is in the cat.", "in", 0),  # 10
    ("D", "The cat contains the basket.", "contains", 0),  # 11
    ("D", "The cat by the basket.", "by", 0),  # 12
]


def _write(path: Path, rows: list[tuple[str, str, str, int]]) -> Path:
    lines = [
        json.dumps({"image": i, "caption": c, "relation": r, "label": lab, "annotator_id": 0})
        for i, c, r, lab in rows
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture()
def tiny(tmp_path: Path) -> pa.Table:
    return vsr_read(None, None, path=_write(tmp_path / "vsr.jsonl", TINY))


def test_words_and_jaccard() -> None:
    assert caption_words("The Cat is on top-of the cat.") == {"the", "cat", "is", "on", "top", "of"}
    assert jaccard(frozenset("ab"), frozenset("bc")) == 1 / 3
    assert jaccard(frozenset(), frozenset()) == 0.0


def test_read_parses_subject_and_object(tiny: pa.Table) -> None:
    assert tiny.num_rows == 12
    assert set(tiny["source"].to_pylist()) == {"vsr"}
    assert tiny["source_id"].to_pylist() == [str(i) for i in range(1, 13)]
    assert tiny["rejected"].null_count == 12
    got = list(zip(tiny["subj"].to_pylist(), tiny["obj"].to_pylist(), strict=True))
    assert got[1] == ("basket", "cat")
    assert got[5] == ("basket", "cat")  # "is far from"
    assert got[11] == ("cat", "basket")  # no "is"
    assert tiny["label"].to_pylist()[:3] == [True, True, False]


def test_read_keeps_an_unparsed_caption_as_rejected(tmp_path: Path) -> None:
    table = vsr_read(None, None, path=_write(tmp_path / "v.jsonl", [("A", "A cat.", "in", 1)]))
    assert table["rejected"].to_pylist() == ["caption_not_parsed"]
    assert vsr_positive_pairs(table, None).num_rows == 0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "v.jsonl:2: not valid JSON"),
        (
            '{"image": "A", "caption": "The a is in the b.", "label": 1}',
            "missing field(s) relation",
        ),
        (
            '{"image": "A", "caption": "The a is in the b.", "relation": "in", "label": 2}',
            "v.jsonl:2: label must be 0, 1, true or false",
        ),
    ],
)
def test_read_names_the_bad_line(tmp_path: Path, line: str, message: str) -> None:
    path = _write(tmp_path / "v.jsonl", TINY[:1])
    path.write_text(path.read_text(encoding="utf-8") + line + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=re.escape(message)):
        vsr_read(None, None, path=path)


NARROW_PAIRS = {"require_true": True, "same_image": True}
NARROW_POOL = {"pool": "same_objects", "other_image": True}


def test_positive_pairs_are_swapped_captions_of_one_image(tiny: pa.Table) -> None:
    pairs = vsr_positive_pairs(tiny, None, **NARROW_PAIRS)
    assert pairs["source_id"].to_pylist() == ["1+2", "1+3", "5+6", "6+7", "10+11", "10+12"]
    assert pairs["rejected"].to_pylist() == [
        None,
        "not_both_true",
        "not_both_true",
        None,
        "not_both_true",
        "not_both_true",
    ]
    first = pairs.slice(0, 1).to_pylist()[0]
    assert (first["p1"], first["p2"], first["image"]) == (
        "The cat is in the basket.",
        "The basket contains the cat.",
        "A",
    )
    assert (first["p1_relation"], first["p2_relation"]) == ("in", "contains")
    same_image = vsr_positive_pairs(tiny, None, same_image=True)
    assert same_image["rejected"].null_count == 6


def test_a_repeated_caption_pair_is_one_pair(tmp_path: Path) -> None:
    rows = [TINY[0], TINY[1], TINY[1], TINY[0]]
    captions = vsr_read(None, None, path=_write(tmp_path / "v.jsonl", rows))
    pairs = vsr_positive_pairs(captions, same_image=True)
    assert pairs["source_id"].to_pylist() == ["1+2", "2+4"]  # P2 -> P1 order is another pair


def test_by_default_p2_is_any_swapped_vsr_caption_whatever_its_label(tiny: pa.Table) -> None:
    """VISLA §3.3: for a caption of an image, P2 is a VSR caption with subject and object
    switched; the paper names no label filter and no same-image rule. Worked out by hand from
    TINY: the same-image pairs (1+2, 1+3, 5+6, 6+7, 10+11, 10+12) and, for each caption of an
    image, every swapped caption text that does not occur on that image (its first row)."""
    pairs = vsr_positive_pairs(tiny, None)
    assert pairs["source_id"].to_pylist() == [
        "1+2", "1+3", "1+6", "1+10",
        "2+5", "2+9", "2+11", "2+12",
        "3+5", "3+9", "3+11", "3+12",
        "5+2", "5+3", "5+6", "5+10",
        "6+7", "6+9", "6+11", "6+12",
        "7+2", "7+3", "7+10",
        "9+2", "9+3", "9+6", "9+10",
        "10+1", "10+5", "10+9", "10+11", "10+12",
        "11+2", "11+3", "11+6",
        "12+2", "12+3", "12+6",
    ]  # fmt: skip
    assert pairs["rejected"].null_count == pairs.num_rows
    row = next(r for r in pairs.to_pylist() if r["source_id"] == "1+6")
    assert (row["image"], row["p2"], row["p2_label"]) == (
        "A",
        "The basket is far from the cat.",
        None,
    )
    strict = vsr_positive_pairs(tiny, None, require_true=True)
    kept = [r["source_id"] for r in strict.to_pylist() if r["rejected"] is None]
    assert kept == ["1+2", "6+7"]  # a P2 of another image has no label for the pair's image


def test_by_default_negatives_rank_all_unique_captions(tiny: pa.Table) -> None:
    """VISLA §3.3: "ranking all unique captions in the VSR dataset using Jaccard similarity".
    Pair 1+2 (image A), P1 "The cat is in the basket." {the, cat, is, in, basket}, P2 "The basket
    contains the cat.": every unique text but P1 and P2 is ranked, of any image and objects."""
    pairs = vsr_positive_pairs(tiny, None, **NARROW_PAIRS)
    out = vsr_negative_candidates(pairs, None, captions=tiny, top_k=6)
    assert _ranking(out, "1+2") == [
        ("The basket is in the cat.", 1, 1.0),  # P1's word set
        ("The basket is under the cat.", 2, 4 / 6),  # only on image A; P2-Jaccard 3/6
        ("The cat is on the basket.", 3, 4 / 6),  # P2-Jaccard 3/6, text order
        ("The cat is outside the basket.", 4, 4 / 6),  # P2-Jaccard 3/6, text order
        ("The dog is in the basket.", 5, 4 / 6),  # other objects; P2-Jaccard 2/7
        ("The basket is far from the cat.", 6, 4 / 7),
    ]
    row = next(r for r in out.to_pylist() if r["source_id"] == "1+2" and r["n_rank"] == 2)
    assert (row["n_image"], row["n_source_id"]) == ("A", "3")  # its first occurrence
    top3 = vsr_negative_candidates(pairs, None, captions=tiny)
    assert [n for n, _, _ in _ranking(top3, "1+2")] == [n for n, _, _ in _ranking(out, "1+2")][:3]
    with pytest.raises(DataError, match="other_image is true or false"):
        vsr_negative_candidates(pairs, None, captions=tiny, other_image="yes")


def _ranking(candidates: pa.Table, source_id: str) -> list[tuple[str, int, float]]:
    rows = [r for r in candidates.to_pylist() if r["source_id"] == source_id]
    return [(r["n"], r["n_rank"], r["n_jaccard"]) for r in rows]


def test_negatives_ranked_by_jaccard_with_p1_then_p2_then_text(tiny: pa.Table) -> None:
    pairs = vsr_positive_pairs(tiny, None, **NARROW_PAIRS)
    out = vsr_negative_candidates(pairs, None, captions=tiny, top_k=6, **NARROW_POOL)
    # P1 "The cat is in the basket." on image A; "The cat is in the basket." of image B is P1's
    # text and "The basket is under the cat." occurs only on A: neither is a candidate.
    assert _ranking(out, "1+2") == [
        ("The basket is in the cat.", 1, 1.0),
        ("The cat is on the basket.", 2, 4 / 6),  # ties with the next on P1 and P2: text order
        ("The cat is outside the basket.", 3, 4 / 6),
        ("The basket is far from the cat.", 4, 4 / 7),
        ("The cat contains the basket.", 5, 3 / 6),  # P2-Jaccard 1.0
        ("The cat by the basket.", 6, 3 / 6),  # P2-Jaccard 0.6
    ]
    # P1 "The basket is far from the cat.", P2 "The cat is in the basket." on image B.
    assert _ranking(out, "6+7") == [
        ("The basket is in the cat.", 1, 4 / 7),  # P2-Jaccard 1.0
        ("The basket is under the cat.", 2, 4 / 7),  # P2-Jaccard 4/6, then text order
        ("The cat is on the basket.", 3, 4 / 7),
        ("The basket contains the cat.", 4, 3 / 7),  # P2-Jaccard all 0.5: text order
        ("The cat by the basket.", 5, 3 / 7),
        ("The cat contains the basket.", 6, 3 / 7),
    ]
    row = next(r for r in out.to_pylist() if r["n"] == "The basket is under the cat.")
    assert (row["n_image"], row["n_source_id"], row["n_relation"]) == ("A", "3", "under")
    rejected = [r for r in out.to_pylist() if r["rejected"] is not None]
    assert [r["source_id"] for r in rejected] == ["1+3", "5+6", "10+11", "10+12"]
    assert all(r["n"] is None for r in rejected)


def test_top_three_and_the_all_captions_pool(tiny: pa.Table) -> None:
    pairs = vsr_positive_pairs(tiny, None, **NARROW_PAIRS)
    top3 = vsr_negative_candidates(pairs, None, captions=tiny, **NARROW_POOL)
    assert [n for n, _, _ in _ranking(top3, "6+7")] == [
        "The basket is in the cat.",
        "The basket is under the cat.",
        "The cat is on the basket.",
    ]
    every = vsr_negative_candidates(
        pairs, None, captions=tiny, top_k=4, pool="all", other_image=True
    )
    # "The dog is in the basket." names other objects: a candidate only in the "all" pool.
    assert [n for n, _, _ in _ranking(every, "1+2")] == [
        "The basket is in the cat.",
        "The cat is on the basket.",
        "The cat is outside the basket.",
        "The dog is in the basket.",
    ]


def test_a_pair_without_candidates_is_kept_as_rejected(tmp_path: Path) -> None:
    captions = vsr_read(None, None, path=_write(tmp_path / "v.jsonl", TINY[:2]))
    out = vsr_negative_candidates(vsr_positive_pairs(captions, None), None, captions=captions)
    assert out["rejected"].to_pylist() == ["no_negative_candidate"]
    with pytest.raises(DataError, match="top_k must be an integer >= 1"):
        vsr_negative_candidates(out, None, captions=captions, top_k=0)


# --- the real VSR file ---------------------------------------------------------------------


def _vsr(test_data_dir: Path) -> Path:
    return test_data_dir / "vsr" / "all_vsr_validated_data.jsonl"


def _oracle_pairs(path: Path) -> set[tuple[str, str, str]]:
    """Swapped, both-True caption pairs of one image, counted independently of the module."""
    by_image = defaultdict(set)
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        head, tail = r["caption"].split(" " + r["relation"] + " the ", 1)
        subj = re.sub(r"^The | (is|are)$", "", head)
        if r["label"] == 1:
            by_image[r["image"]].add((r["caption"], subj, tail.rstrip(".")))
    out = set()
    for image, captions in by_image.items():
        for a, b in itertools.combinations(sorted(captions), 2):
            if a[1] == b[2] and a[2] == b[1]:
                out.add((image, *sorted((a[0], b[0]))))
    return out


@pytest.mark.data
def test_real_vsr_pairs_match_an_independent_count(test_data_dir: Path) -> None:
    captions = vsr_read(None, None, path=_vsr(test_data_dir))
    assert captions.num_rows == len(_vsr(test_data_dir).read_text(encoding="utf-8").splitlines())
    assert captions["rejected"].null_count == captions.num_rows  # every caption parses
    pairs = vsr_positive_pairs(captions, None, **NARROW_PAIRS)
    kept = [r for r in pairs.to_pylist() if r["rejected"] is None]
    mined = {(r["image"], *sorted((r["p1"], r["p2"]))) for r in kept}
    assert len(mined) == len(kept)
    assert mined == _oracle_pairs(_vsr(test_data_dir))
    again = vsr_positive_pairs(vsr_read(None, None, path=_vsr(test_data_dir)), None, **NARROW_PAIRS)
    assert again.equals(pairs)
    out = vsr_negative_candidates(pairs, None, captions=captions, **NARROW_POOL)
    assert out.equals(vsr_negative_candidates(pairs, None, captions=captions, **NARROW_POOL))
    ranks = defaultdict(list)
    for r in out.to_pylist():
        if r["rejected"] is None:
            ranks[r["source_id"]].append(r["n_rank"])
            assert r["n_image"] != r["image"] and r["n"] not in (r["p1"], r["p2"])
    assert all(v == list(range(1, len(v) + 1)) and len(v) <= 3 for v in ranks.values())


@pytest.mark.data
def test_mined_pairs_cover_the_verbatim_visla_spatial_pairs(test_data_dir: Path) -> None:
    """Of VISLA's published spatial triplets, those whose P1 and P2 are unedited, both-True VSR
    captions of the triplet's image with subject and object swapped are all mined; the
    measured count is at least 185 (docs/fidelity.md, "Building: VISLA spatial")."""
    pairs = vsr_positive_pairs(vsr_read(None, None, path=_vsr(test_data_dir)), None, **NARROW_PAIRS)
    mined = {
        (r["image"], frozenset((r["p1"], r["p2"])))
        for r in pairs.to_pylist()
        if r["rejected"] is None
    }
    with (test_data_dir / "visla" / "Spatial_VISLA.tsv").open(encoding="utf-8") as f:
        visla = list(csv.DictReader(f, delimiter="\t"))
    oracle = _oracle_pairs(_vsr(test_data_dir))
    swapped = [x for x in visla if (x["image"], *sorted((x["sent1"], x["sent2"]))) in oracle]
    found = [x for x in visla if (x["image"], frozenset((x["sent1"], x["sent2"]))) in mined]
    assert found == swapped
    assert len(found) >= 185


def _oracle_unique_caption_pairs(path: Path) -> set[tuple[str, str, str]]:
    """(image, sorted texts) of every caption of an image paired with any VSR caption text whose
    subject and object are switched, labels ignored: counted independently of the module."""
    names: dict[str, tuple[str, str]] = {}
    by_image = defaultdict(set)
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        head, tail = r["caption"].split(" " + r["relation"] + " the ", 1)
        names[r["caption"]] = (re.sub(r"^The | (is|are)$", "", head), tail.rstrip("."))
        by_image[r["image"]].add(r["caption"])
    swapped = defaultdict(set)
    for text, (subj, obj) in names.items():
        swapped[(obj, subj)].add(text)
    return {
        (image, *sorted((a, b)))
        for image, texts in by_image.items()
        for a in texts
        for b in swapped[names[a]]
    }


@pytest.mark.data
def test_real_vsr_default_pairs_and_their_visla_coverage(test_data_dir: Path) -> None:
    """The default mining (any swapped VSR caption as P2, labels ignored) equals an independent
    count, and finds the published spatial triplets whose P1 and P2 are unedited swapped VSR
    captions of which at least one is on the triplet's image (docs/fidelity.md, "Building:
    VISLA spatial": 185 + 84 + 17)."""
    captions = vsr_read(None, None, path=_vsr(test_data_dir))
    pairs = vsr_positive_pairs(captions, None)
    mined = [(r["image"], *sorted((r["p1"], r["p2"]))) for r in pairs.to_pylist()]
    assert len(set(mined)) == len(mined) == pairs["rejected"].null_count
    assert set(mined) == _oracle_unique_caption_pairs(_vsr(test_data_dir))
    with (test_data_dir / "visla" / "Spatial_VISLA.tsv").open(encoding="utf-8") as f:
        visla = list(csv.DictReader(f, delimiter="\t"))
    found = [x for x in visla if (x["image"], *sorted((x["sent1"], x["sent2"]))) in set(mined)]
    assert len(found) == 185 + 84 + 17
    some = pairs.slice(0, 200)
    out = vsr_negative_candidates(some, None, captions=captions)
    for r in out.to_pylist():
        assert r["n"] not in (r["p1"], r["p2"]) and 1 <= r["n_rank"] <= 3


def test_the_shipped_recipe_builds_the_same_candidates_through_lexsem_build(
    test_data_dir: Path, tmp_path: Path
) -> None:
    """`lexsem build visla_spatial --input VSR`, the shipped recipe run by name on the real VSR
    file: its stage outputs equal the stage functions called directly (652 of the 73,684 pairs
    drawn by relation with the recipe's seed, 3 candidates each); it pauses at the expert
    validation (exit status 3, no error) with 1,956 rows for people, naming the option that
    changes the target, and a rerun redoes nothing before it."""
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from lexsem.cli import app

    out = tmp_path / "built"
    args = ["build", "visla_spatial", "--input", str(_vsr(test_data_dir)), "-o", str(out), "-q"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 3, res.output
    assert "error:" not in res.output
    assert "paused at stage 4/5 validation: fold_back_validation: waiting for people" in res.output
    assert "1956 rows to validate" in res.output
    assert "add --set sample.target=N (now 652) to the build command" in res.output
    stages = sorted((out / "stages").glob("*.parquet"))
    assert [p.name.split("-", 1)[1] for p in stages] == [
        "pairs.parquet",
        "sample.parquet",
        "candidates.parquet",
    ]
    captions = vsr_read(None, None, path=_vsr(test_data_dir))
    pairs = vsr_positive_pairs(captions, None)
    assert pairs.num_rows == 73_684
    drawn = stratified_sample(pairs, None, target=652, by="p1_relation")  # seed 0, the recipe's
    assert drawn.num_rows == 652
    want = vsr_negative_candidates(drawn, None, path=_vsr(test_data_dir), top_k=3)
    assert want.num_rows == 1956
    got = pq.read_table(stages[2])
    assert got.select(want.column_names).equals(want)
    record = json.loads((out / "build.json").read_text("utf-8"))
    assert record["complete"] is False and len(record["stages"]) == 3
    assert record["stages"][1]["counts"]["units drawn"] == 652
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 3, again.output
    assert json.loads((out / "build.json").read_text("utf-8"))["stages"] == record["stages"]
