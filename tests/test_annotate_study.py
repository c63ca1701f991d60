"""`lexsem annotate create`: what a study holds, from a benchmark selection or a build table.

Checked against the benchmark items themselves: each kind's options are the item's captions or
images, its right answer the one the paper says (SugarCrepe++ §3: the negative caption; BiVLC
§4: each image's own caption and each caption's own image), the sample is N items per subset,
practice and gold items are outside the sample, and bad input fails with one line."""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from builders.annotate_studies import make_study, need_annotate_extra
from lexsem.annotate.instructions import KIND_INSTRUCTIONS
from lexsem.annotate.store import connect
from lexsem.benchmarks.load import load_benchmark
from lexsem.cli import app

need_annotate_extra()


def units(path: Path) -> list[dict]:
    con = connect(path)
    rows = [dict(r) for r in con.execute("SELECT * FROM units ORDER BY position")]
    con.close()
    for r in rows:
        r["payload"] = json.loads(r["payload"])
    return rows


def test_scpp_style_study_samples_per_subset_and_asks_for_the_negative(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic", "--sample", "3", "--seed", "7",
                      "--practice", "2", "--gold", "2", "-n", "2")  # fmt: skip
    rows = units(made.path)
    items = {it.id: it for it in load_benchmark("synthetic").items}
    main = [r for r in rows if not r["practice"] and not r["gold"]]
    # 3 items of each of the 5 subsets, each asked as TOT and ITT
    assert Counter(r["subset"] for r in main if r["kind"] == "tot") == dict.fromkeys(
        ["replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj"], 3
    )
    assert Counter(r["kind"] for r in main) == {"tot": 15, "itt": 15}
    for r in rows:
        it = items[r["item_id"]]
        texts = {o["id"]: o["text"] for o in r["payload"]["options"]}
        assert texts == {"p1": it.p1, "p2": it.p2, "n": it.n}
        assert r["correct"] == "n"
        assert (r["payload"]["base_image"] is not None) == (r["kind"] == "itt")
    main_ids = {r["item_id"] for r in main}
    extra = {r["item_id"] for r in rows if r["practice"] or r["gold"]}
    assert len(extra) == 4 and not extra & main_ids
    assert len(made.annotators) == 2


def test_same_seed_same_sample_other_seed_other_sample(tmp_path: Path) -> None:
    def ids(name: str, seed: str) -> set[str]:
        made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "5", "--seed", seed,
                          "-k", "tot", name=name)  # fmt: skip
        return {r["item_id"] for r in units(made.path)}

    assert ids("a", "1") == ids("b", "1")
    assert ids("a2", "1") != ids("c", "2")


def test_sample_total_draws_from_the_whole_selection(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic_bi", "--sample-total", "7", "--seed", "2",
                      "--practice", "1", "-k", "bivlc_i2t")  # fmt: skip
    rows = units(made.path)
    main = {r["item_id"].split("#")[0] for r in rows if not r["practice"]}
    assert len(main) == 7 and len({r["subset"] for r in rows if not r["practice"]}) > 1
    practice = {r["item_id"].split("#")[0] for r in rows if r["practice"]}
    assert len(practice) == 1 and not practice & main


def test_bivlc_study_has_four_queries_per_instance(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic_bi/replace_obj", "--sample", "2")
    rows = units(made.path)
    quads = {it.id: it for it in load_benchmark("synthetic_bi").items}
    assert Counter(r["kind"] for r in rows) == {"bivlc_i2t": 4, "bivlc_t2i": 4}
    con = connect(made.path)
    shas = {r[0] for r in con.execute("SELECT sha FROM images")}
    for sha, data in con.execute("SELECT sha, data FROM images"):
        assert hashlib.sha256(data).hexdigest() == sha
    con.close()
    for r in rows:
        base_id, query = r["item_id"].split("#")
        q = quads[base_id]
        k = query[-1]
        if r["kind"] == "bivlc_i2t":  # image k with both captions: its own caption is right
            assert query == f"image{k}" and r["correct"] == f"caption{k}"
            assert [o["text"] for o in r["payload"]["options"]] == [q.caption0, q.caption1]
            assert r["payload"]["base_image"] in shas
        else:  # caption k with both images: its own image is right
            assert query == f"caption{k}" and r["correct"] == f"image{k}"
            assert r["payload"]["base_text"] == (q.caption0, q.caption1)[int(k)]
            assert {o["image"] for o in r["payload"]["options"]} <= shas


@pytest.mark.parametrize(
    ("kind", "right"), [("best_of_k", "image1"), ("ambiguity", "image0"), ("pair", None)]
)
def test_other_kinds_from_a_benchmark(tmp_path: Path, kind: str, right: str | None) -> None:
    sel = "synthetic" if kind == "pair" else "synthetic_bi"
    made = make_study(tmp_path, "-b", f"{sel}/swap_att", "--sample", "2", "-k", kind)
    rows = units(made.path)
    assert len(rows) == 2 and {r["kind"] for r in rows} == {kind}
    assert {r["correct"] for r in rows} == {right or "pos"}


def _png(path: Path, colour: str) -> str:
    Image.new("RGB", (8, 8), colour).save(path)
    return path.name


def test_build_table_validate_best_of_k_ambiguity(tmp_path: Path) -> None:
    imgs = [_png(tmp_path / f"{c}.png", c) for c in ("red", "green", "blue")]
    table = pa.table({
        "source": ["sc", "sc", "sc"], "source_id": ["1", "2", "3"],
        "caption": ["A dog on a mat.", "A cat.", "A bird."],
        "caption2": ["On a mat is a dog.", "A feline.", "A bird flies."],
        "negative_caption": ["A mat on a dog.", "A dog.", "A fish."],
        "images": [imgs, imgs[:2], imgs[1:]], "image": imgs, "negative_image": imgs[::-1],
        "rejected": [None, "too_long", None],
    })  # fmt: skip
    pq.write_table(table, tmp_path / "stage.parquet")
    for kind in ("validate", "best_of_k", "ambiguity"):
        made = make_study(tmp_path, "--from-build", str(tmp_path / "stage.parquet"), "-k", kind,
                          name=kind)  # fmt: skip
        rows = units(made.path)
        assert [r["item_id"] for r in rows] == ["sc:1", "sc:3"]  # the rejected row left out
        assert all(r["correct"] is None for r in rows)
    validate = units(tmp_path / "validate.sqlite")
    assert validate[0]["payload"]["edit_text"] == "On a mat is a dog."
    best = units(tmp_path / "best_of_k.sqlite")
    assert [o["id"] for o in best[1]["payload"]["options"]] == ["image0", "image1"]
    green = hashlib.sha256((tmp_path / "green.png").read_bytes()).hexdigest()
    assert best[1]["payload"]["options"][0]["image"] == green
    made = make_study(tmp_path, "--from-build", str(tmp_path / "stage.parquet"), "-k", "validate",
                      "--column", "generated=negative_caption", name="neg")  # fmt: skip
    assert units(made.path)[0]["payload"]["edit_text"] == "A mat on a dog."


def test_build_table_validate_a_negative_without_a_second_positive(tmp_path: Path) -> None:
    """`--column negative=NAME`: the text to check is a negative shown beside P1 alone (a
    SugarCrepe-style negative), marked N; with `--column generated` too, one line, no study."""
    table = pa.table({
        "source": ["sc"], "source_id": ["1"], "caption": ["A dog on a mat."],
        "caption2": ["On a mat is a dog."], "negative_caption": ["A mat on a dog."],
    })  # fmt: skip
    pq.write_table(table, tmp_path / "stage.parquet")
    made = make_study(tmp_path, "--from-build", str(tmp_path / "stage.parquet"), "-k", "validate",
                      "--column", "negative=negative_caption")  # fmt: skip
    (unit,) = units(made.path)
    assert unit["payload"]["edit_text"] == "A mat on a dog."
    assert unit["payload"]["context"] == [
        ["P1 (original)", "A dog on a mat."],
        ["N (negative, negative_caption): to check", "A mat on a dog."],
    ]
    assert "a negative N (shown alone" in KIND_INSTRUCTIONS["validate"]
    both = ["--column", "negative=negative_caption", "--column", "generated=caption2"]
    code, out = run_create(str(tmp_path / "s.sqlite"), "--from-build",
                           str(tmp_path / "stage.parquet"), "-k", "validate", *both)  # fmt: skip
    assert code == 2 and out.startswith("error: --column negative:") and "not both" in out, out
    assert not (tmp_path / "s.sqlite").exists()
    code, out = run_create(str(tmp_path / "s.sqlite"), "--from-build",
                           str(tmp_path / "stage.parquet"), "-k", "validate", "--column",
                           "negative=n")  # fmt: skip
    assert code == 2 and "no column 'n' (validate negative;" in out, out


def _coco_triplets(path: Path) -> Path:
    """A build table of VISLA-style text triplets whose images are COCO file names (VSR's), no
    COCO folder given: reading one fails."""
    pq.write_table(pa.table({
        "source": ["vsr"] * 3, "source_id": ["1+2", "1+2", "5+6"],
        "image": ["000000000139.jpg", "000000000139.jpg", "000000000285.jpg"],
        "p1": ["The cat is left of the dog.", "The cat is left of the dog.", "A cup on a box."],
        "p2": ["The dog is right of the cat.", "The dog is right of the cat.", "A box under."],
        "n": ["The dog is left of the cat.", "The cat is under the dog.", "A box on a cup."],
        "caption": ["A cat.", "A cat.", "A cup."], "caption2": ["One cat.", "One cat.", "A mug."],
    }), path)  # fmt: skip
    return path


@pytest.mark.parametrize(
    "roles",
    [
        ["--column", "original=p1", "--column", "generated=n", "--column", "positive=p2"],
        [],  # SugarCrepe++'s second positive caption2 beside P1
        ["--column", "original=p1", "--column", "generated=n", "--column", "image="],
    ],
)
def test_validating_text_rows_needs_no_image(tmp_path: Path, roles: list[str]) -> None:
    """A negative beside P1 and P2 (VISLA), or a second positive beside P1 (SugarCrepe++), is
    judged from the texts: the study is text-only and reads no image, though the rows name COCO
    images that are not here; `--column image=` leaves the image out in any case."""
    table = _coco_triplets(tmp_path / "stage.parquet")
    made = make_study(tmp_path, "--from-build", str(table), "-k", "validate", *roles)
    rows = units(made.path)
    assert len(rows) == 3 and all(r["payload"]["base_image"] is None for r in rows)
    con = connect(made.path)
    assert con.execute("SELECT COUNT(*) FROM images").fetchone()[0] == 0
    con.close()


def test_an_image_asked_for_or_judged_on_is_read(tmp_path: Path) -> None:
    """A negative beside P1 alone (SugarCrepe's: is it false of the image?) shows the image, as
    does `--column image=NAME`: a COCO image that is not here is then an error."""
    table = _coco_triplets(tmp_path / "stage.parquet")
    for roles in (["--column", "negative=n", "--column", "positive="],
                  ["--column", "original=p1", "--column", "generated=n", "--column",
                   "image=image"]):  # fmt: skip
        code, out = run_create(str(tmp_path / "s.sqlite"), "--from-build", str(table), "-k",
                               "validate", *roles)  # fmt: skip
        assert code == 2 and "000000000139.jpg" in out, out
        assert not (tmp_path / "s.sqlite").exists()
    _png(tmp_path / "red.png", "red")
    pq.write_table(pa.table({"source": ["sc"], "source_id": ["1"], "caption": ["A dog."],
                             "negative_caption": ["A cat."], "image": ["red.png"]}),
                   table)  # fmt: skip
    made = make_study(tmp_path, "--from-build", str(table), "-k", "validate", "--column",
                      "negative=negative_caption")  # fmt: skip
    (unit,) = units(made.path)
    assert (
        unit["payload"]["base_image"]
        == hashlib.sha256((tmp_path / "red.png").read_bytes()).hexdigest()
    )


def test_from_build_samples_as_create_does(tmp_path: Path) -> None:
    """`--sample N` draws N rows of each subset (the rows' `subset` column), `--sample-total N`
    N rows of what that leaves, seeded by `--seed`; practice and gold are refused, one line
    naming the option."""
    n = 12
    pq.write_table(pa.table({
        "source": ["sc"] * n, "source_id": [str(i) for i in range(n)],
        "subset": ["swap_obj", "add_att", "replace_rel"] * 4,
        "caption": [f"A dog {i}." for i in range(n)],
        "caption2": [f"One dog {i}." for i in range(n)],
        "rejected": [None] * (n - 1) + ["too_long"],
    }), tmp_path / "stage.parquet")  # fmt: skip
    base = ["--from-build", str(tmp_path / "stage.parquet"), "-k", "validate"]

    def drawn(name: str, *args: str) -> list[tuple[str, str]]:
        made = make_study(tmp_path, *base, *args, name=name)
        return sorted((r["subset"], r["item_id"]) for r in units(made.path))

    per_subset = drawn("a", "--sample", "2", "--seed", "1")
    assert Counter(s for s, _ in per_subset) == {"swap_obj": 2, "add_att": 2, "replace_rel": 2}
    assert "sc:11" not in {i for _, i in drawn("all")}  # the rejected row is never drawn
    total = drawn("b", "--sample-total", "5", "--seed", "1")
    assert len(total) == 5 and total == drawn("c", "--sample-total", "5", "--seed", "1")
    assert {i for _, i in total} != {i for _, i in drawn("d", "--sample-total", "5", "--seed", "2")}
    assert len(drawn("e", "--sample", "3", "--sample-total", "4")) == 4
    for option in ("--practice", "--gold"):
        code, out = run_create(str(tmp_path / "s.sqlite"), *base, option, "1")
        assert code == 2 and out.startswith(f"error: {option} 1: not with --from-build"), out
        assert out.count("\n") == 1 and not (tmp_path / "s.sqlite").exists()


def test_a_required_role_named_empty_is_one_line(tmp_path: Path) -> None:
    table = _coco_triplets(tmp_path / "stage.parquet")
    code, out = run_create(str(tmp_path / "s.sqlite"), "--from-build", str(table), "-k",
                           "validate", "--column", "original=")  # fmt: skip
    assert code == 2 and out.startswith("error: --column original=: task kind 'validate' needs")


def run_create(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["annotate", "create", *args])
    return res.exit_code, res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-b", "synthetic", "-k", "tott"], "--kind 'tott' (did you mean 'tot'?)"),
        (["-b", "synthetic", "-k", "bivlc_i2t"], "needs QuadItem items"),
        (["-b", "synthetic/swap_obj", "--practice", "200"], "leaves 0"),
        ([], "give either --benchmark"),
        (["-b", "synthetic", "--column", "a=b"], "--column names a build table"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    code, out = run_create(str(tmp_path / "s.sqlite"), *args)
    assert code == 2 and message in out, out
    assert out.startswith("error: ") and "Traceback" not in out
    assert not (tmp_path / "s.sqlite").exists()


def test_build_table_errors_name_the_file(tmp_path: Path) -> None:
    pq.write_table(pa.table({"caption": ["x"], "source": ["s"], "source_id": ["1"]}),
                   tmp_path / "t.parquet")  # fmt: skip
    code, out = run_create(str(tmp_path / "s.sqlite"), "--from-build",
                           str(tmp_path / "t.parquet"), "-k", "validate")  # fmt: skip
    assert code == 2 and "t.parquet" in out and "'caption2'" in out and "--column" in out
    (tmp_path / "bad.parquet").write_bytes(b"not parquet")
    code, out = run_create(str(tmp_path / "s.sqlite"), "--from-build",
                           str(tmp_path / "bad.parquet"), "-k", "validate")  # fmt: skip
    assert code == 2 and "bad.parquet" in out and "not a readable Parquet" in out


def test_an_existing_study_is_never_overwritten(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "1")
    before = made.path.read_bytes()
    code, out = run_create(str(made.path), "-b", "synthetic/swap_obj")
    assert code == 2 and "never overwritten" in out
    assert made.path.read_bytes() == before


def test_study_file_is_wal_and_tokens_are_stored_hashed(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "1", "-n", "2")
    raw = made.path.read_bytes()
    for link in [made.admin, made.join, *made.annotators.values()]:
        token = link.rsplit("/", 1)[1]
        assert token.encode() not in raw
        assert len(token) >= 40
    con = connect(made.path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    hashes = {r[0] for r in con.execute("SELECT token_hash FROM annotators")}
    con.close()
    expect = {
        hashlib.sha256(t.rsplit("/", 1)[1].encode()).hexdigest() for t in made.annotators.values()
    }
    assert hashes == expect


def test_instructions_and_consent_files(tmp_path: Path) -> None:
    (tmp_path / "i.txt").write_text("Pick the odd one out.\n")
    (tmp_path / "empty.txt").write_text("")
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "1",
                      "--instructions", str(tmp_path / "i.txt"))  # fmt: skip
    con = connect(made.path)
    settings = json.loads(con.execute("SELECT value FROM meta WHERE key='settings'").fetchone()[0])
    con.close()
    assert settings["instructions"] == "Pick the odd one out."
    code, out = run_create(str(tmp_path / "s2.sqlite"), "-b", "synthetic",
                           "--consent", str(tmp_path / "empty.txt"))  # fmt: skip
    assert code == 2 and "empty.txt" in out and "empty" in out


def test_images_are_real_images(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "1", "-k", "itt")
    con = connect(made.path)
    (mime, data) = con.execute("SELECT mime, data FROM images").fetchone()
    con.close()
    with Image.open(io.BytesIO(data)) as img:
        assert mime == f"image/{img.format.lower()}"


# a study file's settings as lexsem stores them: one JSON object, these keys in this order
# (tuples as lists); stored settings are read as stored, so a seed below 0 (outside the bounds a
# user's --seed is checked against) still loads
CROWD_SETTINGS = ["code_min_answered", "reservation_minutes", "max_participants", "link_hours",
                  "join_batch", "first_answer_minutes"]  # fmt: skip
STORED_SETTINGS = (
    '{"name": "pilot", "kinds": ["tot"], "benchmarks": ["synthetic/swap_obj"], "overlap": 2, '
    '"quota": null, "gold_pass": 0.75, "seed": -3, "completion_code": "OLD-1", '
    '"instructions": null, "consent": "Say yes.", "extra": {}}'
)


def test_a_study_file_in_the_stored_format_opens_and_new_files_keep_it(tmp_path: Path) -> None:
    from lexsem.annotate.study import load_settings

    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "1", "-k", "tot",
                      "--completion-code", "NEW-1", "--overlap", "3")  # fmt: skip
    con = connect(made.path)
    (written,) = con.execute("SELECT value FROM meta WHERE key='settings'").fetchone()
    # the same keys, and the crowd settings after them (a file without them opens: defaults)
    assert list(json.loads(written)) == [*json.loads(STORED_SETTINGS), *CROWD_SETTINGS]
    assert json.loads(written)["kinds"] == ["tot"] and json.loads(written)["overlap"] == 3
    with con:
        con.execute("UPDATE meta SET value = ? WHERE key = 'settings'", (STORED_SETTINGS,))
    s = load_settings(con)
    con.close()
    assert (s.name, s.kinds, s.benchmarks, s.overlap, s.quota, s.gold_pass, s.seed) == (
        "pilot", ("tot",), ("synthetic/swap_obj",), 2, None, 0.75, -3
    )  # fmt: skip
    assert (s.completion_code, s.instructions, s.consent, s.extra) == (
        "OLD-1",
        None,
        "Say yes.",
        {},
    )
    assert (s.reservation_minutes, s.join_batch, s.first_answer_minutes) == (30.0, 5, 10.0)
    runner = CliRunner()
    out = runner.invoke(app, ["annotate", "status", str(made.path)])
    assert out.exit_code == 0 and "pilot: 1 items x overlap 2" in out.output, out.output
    out = runner.invoke(app, ["annotate", "invite", str(made.path), "-n", "1"])
    assert out.exit_code == 0 and "a0001" in out.output, out.output


def test_stored_settings_that_are_not_lexsems_are_one_line(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "1", "-k", "tot")
    foreign = json.loads(STORED_SETTINGS)
    foreign["colour"] = "red"
    del foreign["kinds"]
    con = connect(made.path)
    with con:
        con.execute("UPDATE meta SET value = ? WHERE key = 'settings'", (json.dumps(foreign),))
    con.close()
    out = CliRunner().invoke(app, ["annotate", "status", str(made.path)])
    assert out.exit_code == 2, out.output
    assert f"error: {made.path}: the study's stored settings are not lexsem's " in out.output
    assert "(unknown: colour; missing: kinds)" in out.output
