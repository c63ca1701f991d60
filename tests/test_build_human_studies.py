"""A build's human steps run in lexsem's own annotation tool, end to end: BiVLC's best-image and
ambiguity steps (BiVLC, §3 steps 3 and 4) as studies made from the build's stage output with
`lexsem annotate create --from-build`, answered by scripted annotators through the study server,
exported and folded back by majority; SugarCrepe++'s second positives validated, one of them
edited (SugarCrepe++, §2.1), folded back and frozen, the data card counting the decisions."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from builders.annotate_studies import MadeStudy, need_annotate_extra, role_policy
from builders.backends import require_module
from builders.tiny_diffusers import write_tiny_pipeline
from builders.tiny_dual_models import write_clip
from lexsem.annotate.store import Unit, connect
from lexsem.cli.app import app
from lexsem.construct import runner
from lexsem.construct.recipe import with_input_path
from lexsem.construct.runner import build
from lexsem.construct.stage import HumanStepPending, row_ids
from lexsem.errors import DataError, LexsemError

need_annotate_extra()

from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate.app import create_app  # noqa: E402
from lexsem.annotate.simulate import ScriptedAnnotator  # noqa: E402

cli = CliRunner()
SOURCE = "items.jsonl:"


def _shipped(name: str) -> str:
    return (resources.files("lexsem.construct") / "recipes" / f"{name}.toml").read_text("utf-8")


def _study_from(readme: Path, folder: Path, n: int, path: Path | None = None) -> MadeStudy:
    """The `lexsem annotate create` command the README gives, run with `n` personal links,
    overlap `n` (every annotator answers every task); `path`: another study file."""
    line = next(x.strip() for x in readme.read_text().splitlines()
                if x.strip().startswith("lexsem annotate create"))  # fmt: skip
    args = shlex.split(line)[1:]
    if path is not None:
        args[2] = str(path)
    links = folder / "links.json"
    res = cli.invoke(app, [*args, "-n", str(n), "--overlap", str(n), "--links", str(links),
                           "--base-url", ""])  # fmt: skip
    assert res.exit_code == 0, res.output
    urls = json.loads(links.read_text())
    links.unlink()
    return MadeStudy(Path(args[2]), urls["admin"], urls["join"], urls["annotators"])


def _units(study: Path) -> dict[int, str]:
    con = connect(study)
    out = {r[0]: r[1] for r in con.execute("SELECT id, item_id FROM units")}
    con.close()
    return out


Plan = dict[str, list[Any]]  # item id (without the source) -> each annotator's answer


def _answer(study: MadeStudy, plan: Plan) -> None:
    """Annotator k answers item X with plan[X][k] (an option id, or ("edit", TEXT))."""
    client = TestClient(create_app(study.path))
    for k, link in enumerate(sorted(study.annotators)):

        def pick(unit: Unit, k: int = k) -> Any:
            return plan[unit.item_id.split(":", 1)[1]][k]

        bot = ScriptedAnnotator(client, study.annotators[link], role_policy(study.path, pick),
                                seed=k)  # fmt: skip
        assert bot.run(max_steps=100)


def _export(study: MadeStudy, answers: Path) -> None:
    res = cli.invoke(app, ["annotate", "export", str(study.path), "--answers", str(answers)])
    assert res.exit_code == 0, res.output


# -- BiVLC: steps 3 and 4 in studies ----------------------------------------------------------

ITEMS = [
    ("a man throwing a ball", "a ball throwing a man", "swap", "obj"),
    ("A red car.", "a blue car", "replace", "att"),
    ("a dog on a sofa", "A dog and a cat on a sofa", "add", "obj"),
    ("a cup on a table", "a cup under a table.", "replace", "rel"),
]


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_module("diffusers")
    return write_tiny_pipeline(tmp_path_factory.mktemp("tiny-sd") / "pipe")


@pytest.fixture
def bivlc_recipe(tmp_path: Path, pipeline_dir: Path) -> Path:
    """The shipped BiVLC recipe, its input and image generator replaced (tiny pipeline)."""
    photos = tmp_path / "photos"
    photos.mkdir()
    lines = []
    for n, (cap, neg, typ, sub) in enumerate(ITEMS):
        Image.new("RGB", (10, 8), (40 * n, 90, 200 - 30 * n)).save(photos / f"{n}.png")
        lines.append(json.dumps({"id": f"coco-{n}", "image": str(photos / f"{n}.png"),
                                 "caption": cap, "negative_caption": neg, "type": typ,
                                 "subtype": sub}))  # fmt: skip
    (tmp_path / "items.jsonl").write_text("\n".join(lines) + "\n")
    text = _shipped("bivlc")
    line = next(x for x in text.splitlines() if x.startswith("image_generator"))
    text = text.replace(line, f'image_generator = "diffusers:{pipeline_dir}?steps=2"')
    text = with_input_path(text, "items.jsonl")
    path = tmp_path / "bivlc.toml"
    path.write_text(text.replace("size = 512", "size = 16"))
    return path


def _build(recipe: Path, out: Path, **kw: Any) -> Any:
    return build(recipe, out, cache_dir=out.parent / "cache", echo=lambda _: None, **kw)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_bivlc_human_steps_in_studies_end_to_end(bivlc_recipe: Path, tmp_path: Path) -> None:
    out = tmp_path / "build"
    with pytest.raises(
        HumanStepPending, match=r"waiting for people: .*best_image.*README"
    ) as paused:
        _build(bivlc_recipe, out)
    assert paused.value.stage == "stage 5/8 best_image"  # a pause, not an error: exit status 3
    # the file the printed export command writes; the message names every file the stage reads
    assert paused.value.answers == out / "human" / "best_image" / "answers.parquet"
    assert "(answers.csv, answers.jsonl, answers.parquet)" in str(paused.value)
    assert f"--answers {paused.value.answers}" in paused.value.commands[-1]
    record = json.loads((out / "build.json").read_text())
    images_stage = pq.read_table(out / record["stages"][2]["output"]).to_pylist()
    images = {r["source_id"]: r["images"] for r in images_stage}
    readme = out / "human" / "best_image" / "README.md"
    create = next(x.strip() for x in readme.read_text().splitlines() if "annotate create" in x)
    assert create == shlex.join([
        "lexsem", "annotate", "create", str(out / "human/best_image/study.sqlite"),
        "--from-build", str(out / "stages/04-ask_best_image.parquet"), "-k", "best_of_k",
        "--column", "caption=negative_caption", "--column", "images=images",
        "--name", "build: best image",  # the build's name and the step: not "study"
    ])  # fmt: skip
    assert paused.value.commands[0] == create  # what `lexsem build` prints

    # step 3: three annotators, every task; the study shows the build's own image files
    study = _study_from(readme, tmp_path, 3)
    con = connect(study.path)
    stored = {r[0] for r in con.execute("SELECT sha FROM images")}
    con.close()
    assert stored == {_sha(out / p) for paths in images.values() for p in paths}
    _answer(study, {
        "coco-0": ["image0", "image0", "image0"],  # A
        "coco-1": ["image1", "none", "image1"],  # B by majority
        "coco-2": ["none", "none", "image3"],  # None
        "coco-3": ["image1", "image3", "none"],  # a tie: None
    })  # fmt: skip
    _export(study, out / "human" / "best_image" / "answers.parquet")
    with pytest.raises(LexsemError, match=r"waiting for people: .*ambiguity"):
        _build(bivlc_recipe, out)
    record = json.loads((out / "build.json").read_text())
    by = {s["name"]: s for s in record["stages"]}
    assert by["best_image"]["rejected"] == {"no_good_image": 2}
    assert by["best_image"]["counts"]["ties"] == 1
    assert by["best_image"]["counts"]["study answers"] == 12

    # step 4: two annotators; a tie is ambiguous
    study = _study_from(out / "human" / "ambiguity" / "README.md", tmp_path, 2)
    _answer(study, {"coco-0": ["image0", "image0"], "coco-1": ["image0", "both"]})
    _export(study, out / "human" / "ambiguity" / "answers.parquet")
    _build(bivlc_recipe, out)
    record = json.loads((out / "build.json").read_text())
    by = {s["name"]: s for s in record["stages"]}
    assert by["ambiguity"]["rejected"] == {"no_good_image": 2, "ambiguous": 1}  # coco-1: a tie
    assert by["ambiguity"]["counts"]["ties"] == 1
    assert by["freeze"]["counts"] == {"frozen": 1, "left out": 3}
    # a third annotator: new answers rerun the build from the ambiguity stage
    study = _study_from(out / "human" / "ambiguity" / "README.md", tmp_path, 3,
                        out / "human" / "ambiguity" / "again.sqlite")  # fmt: skip
    _answer(study, {"coco-0": ["image0", "image0", "both"],
                    "coco-1": ["image1", "image0", "image0"]})  # fmt: skip
    _export(study, out / "human" / "ambiguity" / "answers.parquet")
    result = _build(bivlc_recipe, out)
    assert result.sent == 0
    record = json.loads((out / "build.json").read_text())
    by = {s["name"]: s for s in record["stages"]}
    assert by["ambiguity"]["rejected"] == {"no_good_image": 2}
    assert by["ambiguity"]["counts"]["ties"] == 0
    assert by["freeze"]["counts"] == {"frozen": 2, "left out": 2}

    bench = pq.read_table(out / "benchmark" / "test.parquet").to_pylist()
    assert [b["caption"] for b in bench] == ["A man throwing a ball.", "A red car."]
    assert bench[0]["negative_image"]["bytes"] == (out / images["coco-0"][0]).read_bytes()
    assert bench[1]["negative_image"]["bytes"] == (out / images["coco-1"][1]).read_bytes()
    card = json.loads((out / "benchmark" / "data_card.json").read_text())
    assert [(h["stage"], h["counts"]["ties"]) for h in card["human"]] == [
        ("best_image", 1), ("ambiguity", 0)
    ]  # fmt: skip
    md = (out / "benchmark" / "README.md").read_text()
    assert "## Human steps" in md and "| best_image | fold_back_answers | " in md

    res = cli.invoke(app, ["validate", f"build:{out}"])
    assert res.exit_code == 0, res.output
    run = tmp_path / "run"
    clip = write_clip(tmp_path / "clip")
    res = cli.invoke(app, ["eval", "-m", f"clip:{clip}", "-b", f"build:{out}", "-o", str(run),
                           "--n-boot", "0", "--device", "cpu"])  # fmt: skip
    assert res.exit_code == 0, res.output
    items = json.loads((run / "run.json").read_text())["benchmarks"][0]["items"]
    assert items == {"swap_obj": 1, "replace_att": 1}


def _study_table(rows: list[tuple[str, str, str]], kind: str = "best_of_k") -> pa.Table:
    """An answers table by hand: (item id, annotator, answer) per row."""
    n = len(rows)
    return pa.table({
        "study": ["s"] * n, "kind": [kind] * n, "item_id": [r[0] for r in rows],
        "annotator": [r[1] for r in rows], "practice": [False] * n,
        "answer": [r[2] for r in rows],
    })  # fmt: skip


@pytest.mark.parametrize(
    ("rows", "error"),
    [
        ([("S0", "a1", "image4")], r"answers.parquet, row 1: item 'S0': answer 'image4' is not "
         r"one of image0, image1, image2, image3, none"),
        ([("S0", "a1", "image0"), ("S0", "a1", "none")],
         r"answers.parquet, row 2: item 'S0': annotator a1 answered it again \(first on row 1\)"),
        ([("S0", "a1", "image0"), ("items.jsonl:coco-9", "a1", "none")],
         r"answers.parquet, row 2: item 'items.jsonl:coco-9' is not a task of"),
        ([("S0", "a1", "image0")], r"answers.parquet: 3 of 4 tasks have no answer"),
        ([("S0", "a1", "accept")], r"answers.parquet: no best_of_k answers .* has validate"),
    ],
)  # fmt: skip
def test_bad_study_answers_name_file_row_and_item(
    bivlc_recipe: Path, tmp_path: Path, rows: list[tuple[str, str, str]], error: str
) -> None:
    out = tmp_path / "build"
    with pytest.raises(LexsemError, match="waiting for people"):
        _build(bivlc_recipe, out)
    rows = [(i.replace("S", SOURCE + "coco-"), a, x) for i, a, x in rows]
    kind = "validate" if rows[0][2] == "accept" else "best_of_k"
    pq.write_table(_study_table(rows, kind), out / "human" / "best_image" / "answers.parquet")
    with pytest.raises(DataError, match=error.replace("'S0'", f"'{SOURCE}coco-0'")):
        _build(bivlc_recipe, out)


def test_two_answer_files_are_refused(bivlc_recipe: Path, tmp_path: Path) -> None:
    out = tmp_path / "build"
    with pytest.raises(LexsemError, match="waiting for people"):
        _build(bivlc_recipe, out)
    folder = out / "human" / "best_image"
    (folder / "answers.csv").write_text("task,answer\n")
    pq.write_table(_study_table([]), folder / "answers.parquet")
    with pytest.raises(LexsemError, match=r"2 answer files \(answers.csv, answers.parquet\)"):
        _build(bivlc_recipe, out)


# -- SugarCrepe++ second positives: a validation study ----------------------------------------

PARAPHRASE = {
    "A dog on a sofa.": "A sofa with a dog on it.",
    "Two cats sleep.": "Two cats are sleeping.",
    "A red bus.": "A bus that is red.",
    "A man rides a horse.": "A man is riding a horse.",
}


class Paraphraser:
    """A chat model answering SugarCrepe++'s generation prompt with `PARAPHRASE` and its
    validator prompt with "isConsistent: Yes"."""

    name = "paraphraser"
    concurrency = 1
    fingerprint: ClassVar[dict[str, Any]] = {"backend": "fake", "rule": "paraphrase"}

    def request_body(self, request: Any, image_part: Any = None) -> dict[str, Any]:
        return {"prompt": request.turns[-1].text, **request.params}

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        prompt = body["prompt"]
        if prompt.startswith("Instruction: Given a pair of captions"):
            return "isConsistent: Yes.", {}
        p1 = prompt.split(" Paraphrase Idea: Focus on replicating")[0].rsplit("Input: ", 1)[1]
        return f"Paraphrased: {PARAPHRASE[p1]}", {}


def _paused_commands(output: str) -> list[str]:
    """The `lexsem annotate` commands a paused build printed."""
    return [x.strip() for x in output.splitlines() if x.strip().startswith("lexsem annotate ")]


def test_scpp_positive_pauses_for_its_study_and_resumes_to_a_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm_path: Path
) -> None:
    """`lexsem build scpp_positive --input FILE`: the shipped recipe pauses at the validation
    (exit status 3, no error) with the study's commands; the study, answered and exported as
    they say, and the same command again give a frozen benchmark with an edit in it, which
    `lexsem eval -b build:DIR` runs."""
    monkeypatch.setattr(runner, "_load_generator", lambda spec: Paraphraser())
    (tmp_path / "items.jsonl").write_text("".join(
        json.dumps({"id": f"i{n}", "caption": c, "negative_caption": f"Not {c.lower()}"}) + "\n"
        for n, c in enumerate(PARAPHRASE)
    ))  # fmt: skip
    out = tmp_path / "build"
    command = ["build", "scpp_positive", "--input", str(tmp_path / "items.jsonl"), "--generator",
               "fake:x", "-o", str(out), "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    res = cli.invoke(app, command)
    assert res.exit_code == 3, res.output
    assert "error:" not in res.output
    assert "paused at stage 2/3 validation: fold_back_validation: waiting for people" in res.output
    stage = out / "stages" / "01-positive.parquet"
    assert [r["caption2"] for r in pq.read_table(stage).to_pylist()] == list(PARAPHRASE.values())
    folder = out / "human" / "validate"
    create, serve, export = _paused_commands(res.output)
    assert create == shlex.join([
        "lexsem", "annotate", "create", str(folder / "study.sqlite"), "--from-build", str(stage),
        "-k", "validate", "--column", "original=caption", "--column", "generated=caption2",
        "--name", "build: validation",
    ])  # fmt: skip
    assert serve == shlex.join(["lexsem", "annotate", "serve", str(folder / "study.sqlite")])
    answers = folder / "answers.parquet"
    assert export == shlex.join(["lexsem", "annotate", "export", str(folder / "study.sqlite"),
                                 "--answers", str(answers)])  # fmt: skip
    assert "Then run the same command again to go on: lexsem build scpp_positive" in res.output
    assert _paused_commands((folder / "README.md").read_text())[0] == create

    study = _study_from(folder / "README.md", folder, 2)
    edited = "Two cats are asleep."
    _answer(study, {
        "i0": ["accept", "accept"],
        "i1": [("edit", edited), "accept"],  # kept, edited
        "i2": ["reject", "reject"],
        "i3": ["accept", "reject"],  # a disagreement
    })  # fmt: skip
    _export(study, answers)

    res = cli.invoke(app, command)
    assert res.exit_code == 0, res.output
    assert "reused: positive (unchanged)" in res.output
    bench = json.loads((out / "benchmark" / "all.json").read_text())
    assert [(b["caption"], b["caption2"]) for b in bench] == [
        ("A dog on a sofa.", "A sofa with a dog on it."),
        ("Two cats sleep.", edited),
    ]
    card = json.loads((out / "benchmark" / "data_card.json").read_text())
    (human,) = card["human"]
    assert human["stage"] == "validation" and human["use"] == "fold_back_validation"
    assert {k: human["counts"][k] for k in ("accepted", "edited", "human_rejected",
                                            "human_disagreement")} == {
        "accepted": 1, "edited": 1, "human_rejected": 1, "human_disagreement": 1
    }  # fmt: skip
    assert card["rows"]["left_out"] == {"human_rejected": 1, "human_disagreement": 1}
    md = (out / "benchmark" / "README.md").read_text()
    assert re.search(r"\| validation \| fold_back_validation \| accepted: 1, edited: 1, "
                     r"human_rejected: 1, human_disagreement: 1", md)  # fmt: skip

    res = cli.invoke(app, ["validate", f"build:{out}"])
    assert res.exit_code == 0, res.output
    run = tmp_path / "run"
    res = cli.invoke(app, ["eval", "-m", "minilm", "-b", f"build:{out}", "-o", str(run),
                           "--n-boot", "0", "--device", "cpu"])  # fmt: skip
    assert res.exit_code == 0, res.output


# (image, caption, relation, label): two swapped pairs on images A and C, other captions as
# candidates
VSR = [
    ("A", "The cat is left of the dog.", "left of", 1),
    ("A", "The dog is right of the cat.", "right of", 1),
    ("B", "The cat is right of the dog.", "right of", 1),
    ("B", "The cat is under the dog.", "under", 1),
    ("B", "The dog is on the cat.", "on", 1),
    ("C", "The cup is on the box.", "on", 1),
    ("C", "The box is under the cup.", "under", 1),
    ("D", "The cup is in the box.", "in", 1),
    ("D", "The box is on the cup.", "on", 1),
]


def test_visla_spatial_pauses_for_its_experts_and_resumes_to_a_visla_benchmark(
    tmp_path: Path, minilm_path: Path
) -> None:
    """`lexsem build visla_spatial --input VSR`: pairs and candidates, a pause at the experts'
    validation (P1, P2 and the candidate shown), answers simulated through the study server;
    the same command again keeps the first kept candidate of each pair and freezes a `visla`
    benchmark that `lexsem eval -b build:DIR` scores with T2T (P1-N, P2-N)."""
    photos = tmp_path / "photos"
    photos.mkdir()
    for n, name in enumerate("ABCD"):
        Image.new("RGB", (8, 8), (60 * n, 90, 120)).save(photos / f"{name}.png")
    (tmp_path / "vsr.jsonl").write_text("".join(
        json.dumps({"image": str(photos / f"{i}.png"), "caption": c, "relation": r,
                    "label": lab}) + "\n"
        for i, c, r, lab in VSR
    ))  # fmt: skip
    out = tmp_path / "build"
    command = ["build", "visla_spatial", "--input", str(tmp_path / "vsr.jsonl"), "-o", str(out)]
    res = cli.invoke(app, command)
    assert res.exit_code == 3, res.output
    assert "error:" not in res.output and "paused at stage 4/5 validation" in res.output
    folder = out / "human" / "validate"
    create = _paused_commands(res.output)[0]
    assert create.endswith("-k validate --column original=p1 --column generated=n --column "
                           "positive=p2 --name 'build: validation'")  # fmt: skip
    candidates = pq.read_table(out / "stages" / "03-candidates.parquet").to_pylist()
    pairs = sorted({r["source_id"] for r in candidates if r["rejected"] is None})
    assert len(pairs) >= 2
    ids = row_ids([r["source"] for r in candidates], [r["source_id"] for r in candidates])
    by_pair: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for key, row in zip(ids, candidates, strict=True):
        if row["rejected"] is None:
            by_pair.setdefault(row["source_id"], []).append((key.split(":", 1)[1], row))
    # the first pair: rank 1 rejected, rank 2 accepted (its negative), rank 3 accepted too (not
    # selected); every other pair: its rank 1 edited
    plan: dict[str, list[Any]] = {}
    want = []
    for n, pair in enumerate(pairs):
        ranked = by_pair[pair]
        if n == 0:
            assert len(ranked) == 3
            plan |= {ranked[0][0]: ["reject"], ranked[1][0]: ["accept"], ranked[2][0]: ["accept"]}
            want.append((ranked[1][1]["p1"], ranked[1][1]["p2"], ranked[1][1]["n"]))
        else:
            plan |= {k: ["accept"] for k, _ in ranked}
            plan[ranked[0][0]] = [("edit", f"Edited negative {n}.")]
            want.append((ranked[0][1]["p1"], ranked[0][1]["p2"], f"Edited negative {n}."))

    study = _study_from(folder / "README.md", folder, 1)
    con = connect(study.path)
    payloads = [json.loads(r[0]) for r in con.execute("SELECT payload FROM units")]
    assert con.execute("SELECT COUNT(*) FROM images").fetchone()[0] == 0  # text-only
    con.close()
    shown = [p["context"] for p in payloads]
    assert all(p["base_image"] is None for p in payloads)
    first = by_pair[pairs[0]][0][1]
    assert [["P1 (original)", first["p1"]], ["P2 (second positive)", first["p2"]],
            ["N (negative, n): to check", first["n"]]] in shown  # fmt: skip
    _answer(study, plan)
    _export(study, folder / "answers.parquet")

    res = cli.invoke(app, command)
    assert res.exit_code == 0, res.output
    card = json.loads((out / "benchmark" / "data_card.json").read_text())
    assert card["format"] == "visla" and [f["file"] for f in card["files"]] == ["all.tsv"]
    lines = (out / "benchmark" / "all.tsv").read_text().splitlines()
    head = lines[0].split("\t")
    assert head == ["filename", "caption", "second positive", "negative_caption", "source",
                    "source_id"]  # fmt: skip
    got = [tuple(x.split("\t")[1:4]) for x in lines[1:]]
    assert got == want
    (human,) = card["human"]
    assert human["counts"]["another_selected"] == 1 + sum(len(by_pair[p]) - 1 for p in pairs[1:])
    run = tmp_path / "run"
    res = cli.invoke(app, ["eval", "-m", "minilm", "-b", f"build:{out}", "-o", str(run),
                           "--n-boot", "0", "--device", "cpu"])  # fmt: skip
    assert res.exit_code == 0, res.output
    items = pq.read_table(run / "items.parquet")
    assert {"t2t"} <= set(items["task"].to_pylist())


# -- rows sharing their provenance: one item id each ------------------------------------------


def test_row_ids_number_rows_that_share_a_provenance() -> None:
    ids = row_ids(["vsr", "vsr", "vsr", "vsr"], ["1+2", "1+2", "5+6", "1+2"])
    assert ids == ["vsr:1+2/1", "vsr:1+2/2", "vsr:5+6", "vsr:1+2/3"]


def test_visla_candidates_validated_one_item_per_candidate(tmp_path: Path) -> None:
    """Three candidates of one pair share its source_id; each is its own study item, and the
    validators' decision reaches its own row."""
    from lexsem.construct.fold_back_validation import fold_back_validation

    table = pa.table({
        "source": ["vsr"] * 4, "source_id": ["1+2", "1+2", "1+2", "3+4"],
        "image": [None] * 4, "p1": ["the cat is left of the dog"] * 3 + ["a cup on a box"],
        "n": ["the dog is left of the cat", "the cat is under the dog", "a cat near a dog",
              "a box on a cup"],
        "rejected": pa.array([None] * 4, pa.string()),
    })  # fmt: skip
    stage = tmp_path / "candidates.parquet"
    pq.write_table(table, stage)
    links = tmp_path / "links.json"
    res = cli.invoke(app, ["annotate", "create", str(tmp_path / "s.sqlite"), "--from-build",
                           str(stage), "-k", "validate", "--column", "original=p1", "--column",
                           "generated=n", "-n", "1", "--links", str(links),
                           "--base-url", ""])  # fmt: skip
    assert res.exit_code == 0, res.output
    study = MadeStudy(tmp_path / "s.sqlite", "", "", json.loads(links.read_text())["annotators"])
    assert sorted(_units(study.path).values()) == ["vsr:1+2/1", "vsr:1+2/2", "vsr:1+2/3",
                                                   "vsr:3+4"]  # fmt: skip
    plan: dict[str, list[Any]] = {"1+2/1": ["accept"], "1+2/2": ["reject"],
                                  "1+2/3": [("edit", "a cat right of a dog")],
                                  "3+4": ["accept"]}  # fmt: skip
    _answer(study, plan)
    _export(study, tmp_path / "answers.parquet")
    folded = fold_back_validation(table, None, answers=str(tmp_path / "answers.parquet"),
                                  column="n").to_pylist()  # fmt: skip
    assert [(r["validation"], r["n"], r["rejected"]) for r in folded] == [
        ("accepted", "the dog is left of the cat", None),
        ("rejected", "the cat is under the dog", "human_rejected"),
        ("edited", "a cat right of a dog", None),
        ("accepted", "a box on a cup", None),
    ]
