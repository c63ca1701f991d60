"""`lexsem validate`: every check fires on a hand-made defect and stays quiet on clean items, for
every item kind; on the public files (LEXSEM_TEST_DATA) it reports the published facts of each
benchmark exactly (subset sizes, SugarCrepe++ items whose N equals P1, VISLA spatial duplicates);
it runs on every registered benchmark (real files, generated data, HF-format parquet fixtures)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.hf_parquet import (
    BIVLC_ROWS,
    bivlc_columns,
    order_columns,
    vg_attribution_columns,
    vg_relation_columns,
    winoground_columns,
    write_parquet,
)
from lexsem.benchmarks.base import Benchmark, SubsetSpec
from lexsem.benchmarks.catalog import names as benchmark_names
from lexsem.benchmarks.items import Item, MultiCaptionItem, PairItem, QuadItem, TripletItem
from lexsem.benchmarks.load import load_benchmark
from lexsem.benchmarks.validate import (
    CHECK_BY_NAME,
    CHECKS,
    HealthReport,
    render_report,
    validate_items,
)
from lexsem.cli import app


def _spec(
    kind: str = "triplet", subsets: tuple[SubsetSpec, ...] = (), origin: str = "files"
) -> Benchmark:
    return Benchmark(
        name="hand",
        description="hand-made items",
        item_kind=kind,  # type: ignore[arg-type]
        subsets=subsets,
        loader=lambda *a, **k: [],  # type: ignore[arg-type,return-value]
        text_tasks=(),
        origin=origin,  # type: ignore[arg-type]
    )


def _t(i: object, p1: str, p2: str, n: str, image: str | None = "a.jpg") -> TripletItem:
    return TripletItem(str(i), "s", image, p1, p2, n)


def _p(i: object, pos: str, neg: str, image: str | None = "a.jpg") -> PairItem:
    return PairItem(str(i), "s", image, pos, neg)


def _q(i: object, c0: str, c1: str, im0: str = "", im1: str = "") -> QuadItem:
    return QuadItem(str(i), "s", im0 or f"mem:q/{i}/0", c0, im1 or f"mem:q/{i}/1", c1)


def _m(i: object, *captions: str, label: str = "on", image: str | None = "") -> MultiCaptionItem:
    return MultiCaptionItem(str(i), "s", f"mem:m/{i}" if image == "" else image, captions, label)


CLEAN_TRIPLETS: list[Item] = [
    _t(0, "A cat on a mat.", "On a mat sits a cat.", "A mat on a cat.", "a.jpg"),
    _t(1, "Two dogs run.", "A pair of dogs runs.", "Two cats run.", "b.jpg"),
    # same image as item 0, other texts: not a duplicate
    _t(2, "A cat is on the mat.", "The mat has a cat on it.", "The mat is on a cat.", "a.jpg"),
]
CLEAN_PAIRS: list[Item] = [
    _p(0, "A red car.", "A blue car.", "a.jpg"),
    _p(1, "A man left of a dog.", "A man right of a dog.", "b.jpg"),
]
CLEAN_QUADS: list[Item] = [
    _q(0, "A cup on a table.", "A table on a cup."),
    _q(1, "The dog bit the man.", "The man bit the dog."),
]
CLEAN_MULTI: list[Item] = [
    _m(0, "the horse is eating the grass", "the grass is eating the horse", label="eating"),
    _m(1, "a man riding a horse", "horse a riding man a", "a horse riding a man", label="riding"),
]


def _report(items: list[Item], kind: str = "triplet", **kw: int) -> HealthReport:
    return validate_items(_spec(kind), {"s": items}, **kw)


def _ids(report: HealthReport, check: str) -> list[str]:
    return report.subset("s").item_ids(check)


# --- clean items ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "kind"),
    [
        (CLEAN_TRIPLETS, "triplet"),
        (CLEAN_PAIRS, "pair"),
        (CLEAN_QUADS, "quad"),
        (CLEAN_MULTI, "multi"),
    ],
)
def test_clean_items_have_no_findings(items: list[Item], kind: str) -> None:
    report = _report(items, kind)
    sub = report.subset("s")
    assert sub.findings == []
    assert set(sub.counts()) == {c.name for c in CHECKS}
    assert all(n == 0 for n in sub.counts().values())
    assert (sub.items, sub.distinct_texts, sub.distinct_items, sub.complete_items) == (
        len(items),
        len(items),
        len(items),
        len(items),
    )
    assert sub.item_kind == kind
    assert not report.has_errors
    assert "No findings." in render_report(report)


# --- counts -----------------------------------------------------------------------------------


def test_counts_vs_file_and_paper() -> None:
    src = None
    items = CLEAN_PAIRS

    ok = validate_items(_spec("pair", (SubsetSpec("s", src, 2, 2),)), {"s": items})
    assert ok.subset("s").findings == []
    no_paper = validate_items(_spec("pair", (SubsetSpec("s", src, 2),)), {"s": items})
    assert no_paper.subset("s").findings == []

    paper = validate_items(_spec("pair", (SubsetSpec("s", src, 2, 3),)), {"s": items})
    sub = paper.subset("s")
    assert (sub.items, sub.expected_items, sub.paper_items) == (2, 2, 3)
    assert sub.counts()["count_vs_paper"] == 1 and sub.counts()["count_vs_file"] == 0
    assert "paper reports 3" in sub.findings[0].detail
    assert not paper.has_errors  # a paper deviation is information, not an error

    short = validate_items(_spec("pair", (SubsetSpec("s", src, 5),)), {"s": items})
    assert short.subset("s").counts()["count_vs_file"] == 1
    assert short.has_errors
    assert "MISMATCH" in render_report(short)


def test_subset_order_and_unknown_subsets() -> None:
    spec = _spec("pair", (SubsetSpec("a", None, 2), SubsetSpec("b", None, 2)))
    report = validate_items(spec, {"zz": CLEAN_PAIRS, "b": CLEAN_PAIRS})
    assert [s.name for s in report.subsets] == ["b", "zz"]  # spec order, unknown last
    assert report.subset("zz").expected_items is None
    assert report.subset("zz").findings == []


# --- duplicates -------------------------------------------------------------------------------


def test_duplicate_ids() -> None:
    items = [*CLEAN_TRIPLETS, _t(1, "A bird sings.", "A bird is singing.", "A bird sleeps.")]
    report = _report(items)
    assert _ids(report, "duplicate_id") == ["1"]
    assert report.has_errors


def test_duplicate_items_and_repeated_texts() -> None:
    a = CLEAN_TRIPLETS[0]
    items = [
        *CLEAN_TRIPLETS,
        _t(3, a.p1, a.p2, a.n, a.image),  # same image and texts
        _t(4, a.p1, a.p2, a.n, "z.jpg"),  # same texts, other image
    ]
    report = _report(items)
    sub = report.subset("s")
    assert _ids(report, "duplicate_item") == ["3"]
    assert _ids(report, "duplicate_texts") == ["4"]
    assert "item 0" in sub.findings[0].detail
    assert (sub.items, sub.distinct_items, sub.distinct_texts) == (5, 4, 3)


def test_duplicate_pairs() -> None:
    items = [*CLEAN_PAIRS, _p(9, "A red car.", "A blue car.", "a.jpg")]
    assert _ids(_report(items, "pair"), "duplicate_item") == ["9"]


# --- positives equal to the negative, P1 == P2 -------------------------------------------------


def test_positive_equals_negative_exact() -> None:
    items = [
        *CLEAN_TRIPLETS,
        _t(5, "A man rides a horse.", "A horse is ridden by a man.", "A man rides a horse."),
        _t(6, "A dog.", "A dog is here.", "A dog is here."),
    ]
    report = _report(items)
    sub = report.subset("s")
    assert _ids(report, "pos_eq_neg") == ["5", "6"]
    assert _ids(report, "pos_eq_neg_normalized") == []
    f5, f6 = (f for f in sub.findings if f.check == "pos_eq_neg")
    assert f5.detail == "P1 == N" and set(f5.texts) == {"p1", "n"}
    assert f6.detail == "P2 == N" and set(f6.texts) == {"p2", "n"}


def test_positive_equals_negative_after_normalisation() -> None:
    items = [
        *CLEAN_TRIPLETS,
        _t(7, "A man rides a horse.", "Horse ridden.", "a man  rides A horse. "),
    ]
    report = _report(items)
    assert _ids(report, "pos_eq_neg") == []
    assert _ids(report, "pos_eq_neg_normalized") == ["7"]


def test_pair_positive_equals_negative() -> None:
    items = [*CLEAN_PAIRS, _p(2, "A cat.", "A cat."), _p(3, "A cat.", " a CAT.")]
    report = _report(items, "pair")
    assert _ids(report, "pos_eq_neg") == ["2"]
    assert _ids(report, "pos_eq_neg_normalized") == ["3"]
    assert _ids(report, "p1_eq_p2") == []


def test_p1_equals_p2() -> None:
    items = [
        *CLEAN_TRIPLETS,
        _t(8, "A small stall.", "A small stall.", "A big stall."),
        _t(9, "A  group of kids.", "A group of kids.", "A group of adults."),
    ]
    report = _report(items)
    assert _ids(report, "p1_eq_p2") == ["8"]
    assert _ids(report, "p1_eq_p2_normalized") == ["9"]
    assert _ids(report, "pos_eq_neg") == []


# --- text hygiene -----------------------------------------------------------------------------


def test_empty_texts() -> None:
    items = [*CLEAN_TRIPLETS, _t(10, "A cat.", "A cat sits.", ""), _t(11, "  ", "A cat.", "A dog.")]
    report = _report(items)
    sub = report.subset("s")
    assert _ids(report, "empty_text") == ["10", "11"]
    assert sub.complete_items == 3
    assert report.has_errors
    # an empty text is not also reported as whitespace
    assert _ids(report, "whitespace") == []


def test_whitespace() -> None:
    items = [
        *CLEAN_TRIPLETS,
        _t(12, " A cat.", "A cat sits.", "A dog."),
        _t(13, "A cat.", "A cat sits. ", "A dog."),
        _t(14, "A cat.", "A cat sits.", "A  dog."),
    ]
    report = _report(items)
    found = {f.item_id: f.detail for f in report.findings if f.check == "whitespace"}
    assert found == {"12": "p1: leading", "13": "p2: trailing", "14": "n: repeated"}


def test_long_texts() -> None:
    long_chars = "A " + "very" * 80 + " long caption."
    long_words = " ".join(["word"] * 61)
    items = [
        *CLEAN_TRIPLETS,
        _t(15, long_chars, "A cat.", "A dog."),
        _t(16, "A.", long_words, "B."),
    ]
    report = _report(items)
    assert _ids(report, "long_text") == ["15", "16"]
    # thresholds are parameters
    assert _ids(_report(items, long_chars=1000, long_words=100), "long_text") == []
    assert _ids(_report(CLEAN_TRIPLETS, long_chars=10), "long_text") == ["0", "1", "2"]
    assert _ids(_report(CLEAN_TRIPLETS, long_words=3), "long_text") == ["0", "1", "2"]


# --- encoding ---------------------------------------------------------------------------------


def test_non_ascii_lists_characters() -> None:
    items = [*CLEAN_TRIPLETS, _t(17, "A café.", "A\xa0café.", "A bar.")]
    report = _report(items)
    sub = report.subset("s")
    assert _ids(report, "non_ascii") == ["17"]
    assert sub.non_ascii_chars == {"é": 2, "\xa0": 1}
    (finding,) = (f for f in sub.findings if f.check == "non_ascii")
    assert "U+00E9 LATIN SMALL LETTER E WITH ACUTE" in finding.detail
    assert "U+00A0 NO-BREAK SPACE" in finding.detail
    # correct non-ASCII text is not mojibake, not non-NFC
    assert _ids(report, "mojibake") == []
    assert _ids(report, "non_nfc") == []
    assert "NO-BREAK SPACE" in render_report(report)


@pytest.mark.parametrize(
    "text", ["A cafÃ© by the sea.", "The dogâ€™s ball.", "Itâ€ is broken â€ here", "ï»¿A cat."]
)
def test_mojibake(text: str) -> None:
    report = _report([*CLEAN_TRIPLETS, _t(18, text, "A cat.", "A dog.")])
    assert _ids(report, "mojibake") == ["18"]


def test_mojibake_shows_the_fix() -> None:
    report = _report([*CLEAN_TRIPLETS, _t(18, "A cafÃ©.", "A cat.", "A dog.")])
    (finding,) = (f for f in report.findings if f.check == "mojibake")
    assert "'A café.'" in finding.detail


@pytest.mark.parametrize(
    "text", ["A cat.\n", "A\tcat.", "A\x00cat.", "A ca\u200bt.", "\ufeffA cat."]
)
def test_control_characters(text: str) -> None:
    report = _report([*CLEAN_TRIPLETS, _t(19, "A dog.", text, "A bird.")])
    assert _ids(report, "control_chars") == ["19"]


def test_control_character_names() -> None:
    report = _report([*CLEAN_TRIPLETS, _t(19, "A dog.", "A cat.\n", "A bird.")])
    (finding,) = (f for f in report.findings if f.check == "control_chars")
    assert "U+000A LINE FEED" in finding.detail


def test_replacement_character() -> None:
    report = _report([*CLEAN_TRIPLETS, _t(20, "A caf\ufffd.", "A cat.", "A dog.")])
    assert _ids(report, "replacement_char") == ["20"]
    assert report.has_errors


def test_non_nfc() -> None:
    report = _report([*CLEAN_TRIPLETS, _t(21, "A cafe\u0301.", "A cat.", "A dog.")])
    assert _ids(report, "non_nfc") == ["21"]
    assert _ids(report, "mojibake") == []


# --- quads and multi-caption items -------------------------------------------------------------


def test_quad_checks() -> None:
    items = [
        *CLEAN_QUADS,
        _q(2, "A cat.", "A cat."),  # caption0 == caption1
        _q(3, "A cat.", " a  CAT."),  # equal after normalisation
        _q(4, "A dog.", "A cat.", "mem:same", "mem:same"),  # image0 == image1
        _q(5, "A bird.", "  "),  # empty caption1
        QuadItem("6", "s", "", "A fish.", "mem:q/6/1", "A shark."),  # missing image0
        _q(7, CLEAN_QUADS[0].caption0, CLEAN_QUADS[0].caption1),  # texts of item 0, other images
    ]
    report = _report(items, "quad")
    sub = report.subset("s")
    assert sub.item_kind == "quad"
    assert _ids(report, "captions_equal") == ["2"]
    assert _ids(report, "captions_equal_normalized") == ["3"]
    assert _ids(report, "images_equal") == ["4"]
    assert _ids(report, "empty_text") == ["5"]
    assert _ids(report, "missing_image") == ["6"]
    assert _ids(report, "duplicate_texts") == ["7"]
    (eq,) = (f for f in sub.findings if f.check == "captions_equal")
    assert eq.detail == "caption0 == caption1" and eq.texts == {
        "caption0": "A cat.",
        "caption1": "A cat.",
    }
    (img,) = (f for f in sub.findings if f.check == "images_equal")
    assert img.detail == "image0 == image1 (mem:same)"
    (miss,) = (f for f in sub.findings if f.check == "missing_image")
    assert miss.detail == "image0: empty"
    # the checks of other kinds neither run nor show
    assert _ids(report, "pos_eq_neg") == [] and _ids(report, "p1_eq_p2") == []
    text = render_report(report)
    assert "# Health report: hand (quad)" in text
    assert "distinct caption pairs (caption0, caption1) 7" in text
    assert "distinct (images + texts) 8" in text
    assert "- captions_equal " in text and "- images_equal " in text
    assert "- p1_eq_p2 " not in text and "- pos_eq_neg " not in text
    assert "item 2: caption0 == caption1" in text


def test_quad_duplicates_compare_both_images() -> None:
    a = _q(0, "A cup.", "A mug.", "x.png", "y.png")
    items = [
        a,
        _q(1, "A cup.", "A mug.", "x.png", "y.png"),
        _q(2, "A cup.", "A mug.", "x.png", "z.png"),
    ]
    report = _report(items, "quad")
    assert _ids(report, "duplicate_item") == ["1"]
    assert _ids(report, "duplicate_texts") == ["2"]
    (dup,) = (f for f in report.findings if f.check == "duplicate_item")
    assert dup.detail == "same images (x.png, y.png) and texts as item 0"


def test_multi_caption_checks() -> None:
    items = [
        *CLEAN_MULTI,
        _m(2, "a dog on a bed", "a bed on a dog", "a dog on a bed", "on a dog a bed", label="on"),
        _m(3, "a cat under a car", "a car under a cat", "a car under  a cat", label="under"),
        _m(4, "a red cup", "a blue cup", label=""),  # no label where the others have one
        _m(5, "a tall man", "a short man", label="tall", image=None),
    ]
    report = _report(items, "multi")
    sub = report.subset("s")
    assert sub.item_kind == "multi"
    assert _ids(report, "pos_eq_neg") == ["2"]
    (hit,) = (f for f in sub.findings if f.check == "pos_eq_neg")
    assert hit.detail == "true == false2" and set(hit.texts) == {"true", "false2"}
    assert _ids(report, "neg_eq_neg") == []
    assert _ids(report, "neg_eq_neg_normalized") == ["3"]
    assert _ids(report, "missing_label") == ["4"]
    assert _ids(report, "missing_image") == ["5"]
    text = render_report(report)
    assert "- neg_eq_neg " in text and "- captions_equal " not in text
    assert "item 2: true == false2" in text
    # ARO's order benchmarks have no label at all: not a finding
    unlabelled = [_m(k, f"a b {k}", f"b a {k}", label="") for k in range(3)]
    assert _ids(_report(unlabelled, "multi"), "missing_label") == []


def test_missing_image_refs_of_triplets_and_pairs() -> None:
    report = _report([*CLEAN_TRIPLETS, _t(30, "A cat.", "A cat sits.", "A dog.", None)])
    assert _ids(report, "missing_image") == ["30"]
    assert not report.has_errors  # text-only tasks need no image
    pairs = _report([*CLEAN_PAIRS, _p(31, "A red car.", "A red bus.", " ")], "pair")
    assert _ids(pairs, "missing_image") == ["31"]


def test_a_text_only_subset_has_no_missing_images() -> None:
    """No item with an image (a frozen text-only build): `missing_image` is n/a, not a warning
    per item; one item with an image makes the others' missing ones findings again."""
    bare = [_t(k, f"A cat {k}.", f"A cat sits {k}.", f"A dog {k}.", None) for k in range(3)]
    report = _report(bare)
    assert _ids(report, "missing_image") == []
    assert "- missing_image " in (text := render_report(report))
    assert "a text-only subset: no item has an image" in text
    mixed = _report([*bare, _t(9, "A cow.", "A cow stands.", "A hen.")])
    assert _ids(mixed, "missing_image") == ["0", "1", "2"]


def test_summary_wording_says_what_matches_and_what_differs() -> None:
    subsets = (SubsetSpec("same", None, 2, 2), SubsetSpec("short", None, 3, 4),
               SubsetSpec("nopaper", None, 2))  # fmt: skip
    items = {
        "same": CLEAN_PAIRS,
        "short": CLEAN_PAIRS,
        "nopaper": CLEAN_PAIRS,
        "extra": CLEAN_PAIRS,
    }
    text = render_report(validate_items(_spec("pair", subsets), items))
    lines = [ln for ln in text.splitlines() if ln.startswith("- ")]
    for ln in lines:  # "ok" never sits next to what reads as a defect
        status = ln.split()[2]
        assert not (status == "ok" and "differ" in ln), ln
    same, short, nopaper, extra = (text.split(f"## {n}\n")[1] for n in items)
    assert "ok            2 items loaded, matching the pinned public file (2)" in same
    assert "ok            the pinned public file matches the paper (2 items)" in same
    assert "1 error       2 items loaded, but the pinned public file has 3" in short
    assert "1 info        the pinned public file has 3 items, the paper reports 4" in short
    assert "n/a           the paper's count: not recorded" in nopaper
    assert "n/a           no expected count is recorded for this subset" in extra
    assert "ok            no duplicate item ids" in same
    generated = render_report(
        validate_items(_spec("pair", subsets, origin="generated"), {"same": CLEAN_PAIRS})
    )
    assert "2 items | generator default 2 | paper 2" in generated
    assert "2 items loaded, matching the generator's default (2)" in generated


def test_user_files_have_no_expected_counts() -> None:
    spec = _spec("pair", (SubsetSpec("mine", None, 0),), origin="user")
    report = validate_items(spec, {"mine": CLEAN_PAIRS})
    sub = report.subset("mine")
    assert sub.expected_items is None and sub.findings == []
    assert "n/a" in render_report(report)


# --- serialisation and rendering --------------------------------------------------------------


def test_to_dict_is_json_and_render_shows_summary_and_examples() -> None:
    items = [
        *CLEAN_TRIPLETS,
        *(_t(100 + k, f"Cat {k}.", f"A cat {k}.", f"Cat {k}.") for k in range(5)),
        _t(200, "A cafÃ©.", "A cat.", ""),
    ]
    report = _report(items)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["counts"]["pos_eq_neg"] == 5
    assert data["subsets"][0]["counts"]["empty_text"] == 1
    assert data["has_errors"] is True
    assert {"check", "subset", "item_id", "texts", "detail"} <= set(
        data["subsets"][0]["findings"][0]
    )

    text = render_report(report, max_examples=2)
    assert "# Health report: hand (triplet)" in text
    for c in CHECKS:  # a summary line per check of its item kind, and only those
        assert (f"- {c.name} " in text) == c.applies("triplet"), c.name
    assert "- p1_eq_p2 " in text and "- captions_equal " not in text
    assert data["subsets"][0]["checks_run"] == [c.name for c in CHECKS if c.applies("triplet")]
    assert "### pos_eq_neg: a positive is identical to the negative (first 2 of 5)" in text
    assert "item 100: P1 == N" in text and "item 101: P1 == N" in text
    assert "item 102: P1 == N" not in text
    assert "all ids: 100, 101, 102, 103, 104" in text


# --- the public files -------------------------------------------------------------------------


def _validate(data_dir: Path, name: str) -> HealthReport:
    loaded = load_benchmark(name, data_dir=data_dir, strict=False)
    return validate_items(loaded.spec, loaded.items_by_subset())


@pytest.mark.data
def test_visla_spatial_facts(test_data_dir: Path) -> None:
    report = _validate(test_data_dir, "visla_spatial")
    sub = report.subset("spatial")
    assert (sub.items, sub.expected_items, sub.paper_items) == (652, 652, 640)
    assert sub.distinct_texts == 636  # distinct (p1, p2, n) triplets, image not part of identity
    assert sub.distinct_items == 651  # with the image: rows 214 and 215 are the same item
    pos_eq_neg = [f for f in sub.findings if f.check == "pos_eq_neg"]
    assert len(pos_eq_neg) == 2
    assert [f.item_id for f in pos_eq_neg] == ["428", "522"]
    assert all(f.detail == "P1 == N" and f.texts["p1"] == f.texts["n"] for f in pos_eq_neg)
    assert sub.counts()["count_vs_paper"] == 1 and sub.counts()["count_vs_file"] == 0
    assert sub.item_ids("duplicate_item") == ["215"]
    assert len(sub.item_ids("duplicate_texts")) == 15  # 652 - 636 = 1 + 15 repeated rows
    # 12 rows have an empty negative; 652 - 12 = 640, the paper's count
    assert len(sub.item_ids("empty_text")) == 12 and sub.complete_items == 640
    text = render_report(report)
    assert "652 items | public file 652 | paper 640 | distinct triplets (p1, p2, n) 636" in text
    assert "item 428: P1 == N" in text


@pytest.mark.data
def test_sugarcrepe_pp_positive_equals_negative(test_data_dir: Path) -> None:
    report = _validate(test_data_dir, "sugarcrepe_pp")
    sub = report.subset("swap_obj")
    assert sub.items == 245
    hits = {f.item_id: f for f in sub.findings if f.check == "pos_eq_neg"}
    assert "2" in hits
    assert hits["2"].detail == "P1 == N"
    assert hits["2"].texts["p1"] == hits["2"].texts["n"]
    assert sorted(hits) == ["2", "8"]
    assert report.counts()["pos_eq_neg"] == 2  # no other subset has one
    assert report.counts()["count_vs_file"] == 0


@pytest.mark.data
def test_sugarcrepe_swap_obj_count_vs_paper(test_data_dir: Path) -> None:
    report = _validate(test_data_dir, "sugarcrepe")
    sub = report.subset("swap_obj")
    assert (sub.items, sub.expected_items, sub.paper_items) == (245, 245, 246)
    (finding,) = (f for f in sub.findings if f.check == "count_vs_paper")
    assert "245" in finding.detail and "246" in finding.detail
    assert report.counts()["count_vs_paper"] == 1  # only swap_obj differs from the paper
    assert report.counts()["count_vs_file"] == 0
    assert report.counts()["pos_eq_neg"] == 0


@pytest.mark.data
def test_visla_generic_is_clean_of_defects(test_data_dir: Path) -> None:
    report = _validate(test_data_dir, "visla_generic")
    sub = report.subset("generic")
    assert (sub.items, sub.distinct_texts) == (973, 973)
    for check in ("count_vs_file", "duplicate_item", "pos_eq_neg", "p1_eq_p2", "empty_text"):
        assert sub.counts()[check] == 0, check


# --- every registered benchmark ----------------------------------------------------------------


def _hf_fixtures() -> dict[str, dict[str, list[Any]]]:
    """Parquet fixtures in the HF formats, each with a defect the report must name."""
    bivlc = bivlc_columns([*BIVLC_ROWS, ("A cat.", "A cat.", "swap", "obj")])  # id 5: C0 == C1
    wino = winoground_columns()
    wino["caption_1"][2] = "A  B C"  # id 2: "a b c" after normalisation
    vgr = vg_relation_columns()
    vgr["relation_name"][2] = ""  # id 2: no relation label
    coco = order_columns(4)
    coco["hard_text_2"][0] = coco["correct_caption"][0]  # id 0: the true caption repeated
    coco["hard_text_4"][1] = coco["hard_text_3"][1]  # id 1: two equal false captions
    return {
        "imirandam/BiVLC": bivlc,
        "facebook/winoground": wino,
        "gowitheflow/ARO-Visual-Relation": vgr,
        "gowitheflow/ARO-Visual-Attribution": vg_attribution_columns(),  # rows 1, 2 repeat row 0
        "gowitheflow/ARO-COCO-order": coco,
        "gowitheflow/ARO-Flickr-Order": order_columns(3),
    }


@pytest.fixture(scope="module")
def every_data(test_data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data folder: the public files (linked) and the HF fixtures under hf/<repo>/data/."""
    data = tmp_path_factory.mktemp("validate") / "data"
    data.mkdir()
    for sub in ("sugarcrepe", "sugarcrepe_pp", "visla"):
        (data / sub).symlink_to(test_data_dir / sub, target_is_directory=True)
    for repo, columns in _hf_fixtures().items():
        write_parquet(data / "hf" / repo / "data" / "test-00000-of-00001.parquet", columns)
    return data


# benchmark -> {(subset, check): the item ids found (None: a count check, fired once)}; every
# other warning or error check must find nothing in the subsets named, and the counts listed
# under "count_vs_file" are the subsets whose item count differs from the expected one.
FACTS: dict[str, dict[tuple[str, str], list[str] | None]] = {
    "sugarcrepe": {("swap_obj", "count_vs_paper"): None},
    "sugarcrepe_pp": {("swap_obj", "pos_eq_neg"): ["2", "8"],
                      ("swap_att", "duplicate_item"): ["230"],
                      ("swap_att", "duplicate_texts"): ["156"],
                      ("replace_att", "p1_eq_p2"): ["14"],
                      ("replace_rel", "p1_eq_p2_normalized"): ["369"]},
    "visla_generic": {},
    "visla_spatial": {("spatial", "count_vs_paper"): None,
                      ("spatial", "pos_eq_neg"): ["428", "522"]},
    "synthetic": {},
    "synthetic_bi": {},
    "bivlc": {("swap_obj", "captions_equal"): ["5"]},
    "winoground": {("all", "captions_equal_normalized"): ["2"]},
    "aro_vg": {("vg_relation", "missing_label"): ["2"],
               ("vg_attribution", "duplicate_texts"): ["1", "2"]},
    "aro_order": {("coco_order", "pos_eq_neg"): ["0"], ("coco_order", "neg_eq_neg"): ["1"]},
}  # fmt: skip
# the fixtures hold a few rows, not the datasets' counts; the public files and generated data
# hold exactly the expected counts
FIXTURE_COUNTS = {"bivlc", "winoground", "aro_vg", "aro_order"}
# known defects of the public files not asserted in FACTS (see docs/data-facts.md)
KNOWN = {"control_chars", "duplicate_texts", "duplicate_item", "empty_text"}


@pytest.mark.data
@pytest.mark.parametrize("name", benchmark_names())
def test_validate_every_registered_benchmark(name: str, every_data: Path) -> None:
    assert name in FACTS, f"add a fixture and the facts of {name!r} to this test"
    loaded = load_benchmark(name, data_dir=every_data, strict=False)
    report = validate_items(loaded.spec, loaded.items_by_subset())
    assert report.item_kind == loaded.spec.item_kind
    assert [s.name for s in report.subsets] == [s.spec.name for s in loaded.subsets]
    json.dumps(report.to_dict())
    text = render_report(report)
    assert text.startswith(f"# Health report: {name} ({loaded.spec.item_kind})")
    for sub in report.subsets:
        assert sub.item_kind == loaded.spec.item_kind
        assert f"## {sub.name}" in text
        wrong_count = sub.count("count_vs_file") == 1
        assert wrong_count == (name in FIXTURE_COUNTS), sub.name
        facts = {check: ids for (s, check), ids in FACTS[name].items() if s == sub.name}
        for check, ids in facts.items():
            if ids is None:
                assert sub.count(check) == 1, (sub.name, check)
            else:
                assert sub.item_ids(check) == ids, (sub.name, check)
        for c in sub.checks:
            if c.name in facts or c.name in KNOWN or c.name.startswith("count_"):
                continue
            if c.severity != "info":
                assert sub.count(c.name) == 0, (sub.name, c.name, sub.findings[:3])
    if loaded.spec.origin == "hf":
        assert "HF dataset" in text and "but the Hugging Face dataset has" in text


@pytest.mark.data
def test_validate_quads_on_the_command_line(every_data: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(
        app, ["validate", "synthetic_bi/swap_att", "--json", str(tmp_path / "s.json")]
    )
    assert out.exit_code == 0, out.output
    assert "# Health report: synthetic_bi (quad)" in out.output
    assert "no quad has caption0 identical to caption1" in out.output
    for line in out.output.splitlines():  # "ok" never sits next to a word that reads as a defect
        if line.startswith("- ") and " ok " in line:
            assert "differ" not in line, line
    assert json.loads((tmp_path / "s.json").read_text())["item_kind"] == "quad"
    out = runner.invoke(app, ["validate", "bivlc", "--data-dir", str(every_data)])
    assert out.exit_code == 0, out.output
    assert "item 5: caption0 == caption1" in out.output
    assert CHECK_BY_NAME["captions_equal"].title in out.output
