"""One researcher's day, end to end, as docs/tutorial.md walks it: raw captions → the shipped
`scpp_positive` recipe, its generator and validator agent the offline fake LLM
(`lexsem.fake_llm`, answers by rule) over HTTP → the build pauses for people → the study its
README names, answered by the study server's scripted participants → exported → the build
resumes and freezes (data card, Parquet) → `eval -b build:DIR` → a `sweep` of three models over
the frozen build and a shipped benchmark → a human baseline study of the frozen items →
`report` with the human row paired → `publish`'s leaderboard → `explore`'s slice "every model
wrong" → its figure, benchmark file and study exported → the exported benchmark evaluates to
the slice's hits and the exported study is created and answered.

Each hand-off asserts what the next step reads (row counts, columns, digests), not only exit
statuses. Tiny randomly initialised models and MiniLM; about a minute on two cores.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from builders.annotate_studies import MadeStudy, need_annotate_extra, role_policy
from builders.explore_runs import create_exported_study
from builders.tiny_dual_models import write_clip
from builders.tiny_text_models import write_tiny_bert, write_tiny_st
from lexsem.cli.app import app
from lexsem.cli.run_paths import run_folders
from lexsem.digests import file_sha256
from lexsem.results.run import Run

need_annotate_extra()

from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate.app import create_app as study_app  # noqa: E402
from lexsem.annotate.simulate import ScriptedAnnotator  # noqa: E402
from lexsem.explore.app import create_app as explore_app  # noqa: E402
from lexsem.explore.runs_table import open_runs  # noqa: E402
from lexsem.explore.slices import Slice, choices, select  # noqa: E402
from lexsem.fake_llm import serve_in_thread  # noqa: E402

pytestmark = pytest.mark.torch

cli = CliRunner()

# A new phenomenon: left and right. Each caption's hard negative swaps the side.
CAPTIONS = [
    ("A dog sits to the left of a red chair.", "A dog sits to the right of a red chair."),
    ("A cup stands left of the laptop.", "A cup stands right of the laptop."),
    ("The man is on the left side of the horse.", "The man is on the right side of the horse."),
    ("A cat sleeps to the right of the lamp.", "A cat sleeps to the left of the lamp."),
    ("A bicycle leans right of the door.", "A bicycle leans left of the door."),
    ("The girl stands to the left of her mother.", "The girl stands to the right of her mother."),
    ("A bottle is right of the plate.", "A bottle is left of the plate."),
    ("The tree grows to the left of the house.", "The tree grows to the right of the house."),
    ("A boat floats right of the pier.", "A boat floats left of the pier."),
    ("The clock hangs to the left of the window.", "The clock hangs to the right of the window."),
    ("A bus waits to the right of the taxi.", "A bus waits to the left of the taxi."),
    ("The lamp is left of the sofa.", "The lamp is right of the sofa."),
]
REJECTED = {"i2"}  # both people reject its second positive
DISAGREED = {"i7"}  # one accepts, one rejects: left out
EDITED = {"i5": "The girl is standing on her mother's left."}  # one edits, one accepts


def _run(*args: str, code: int = 0) -> str:
    res = cli.invoke(app, list(args))
    assert res.exit_code == code, res.output
    return res.output


def _study(create_line: str, folder: Path, n: int) -> MadeStudy:
    """The `lexsem annotate create` line a step printed, run as printed, with `n` personal
    links answering every item (`--overlap n`), the links read back from a file."""
    args = shlex.split(create_line)
    assert args[:3] == ["lexsem", "annotate", "create"]
    links = folder / "links.json"
    _run(*args[1:], "-n", str(n), "--overlap", str(n), "--links", str(links), "--base-url", "")
    urls = json.loads(links.read_text())
    links.unlink()
    return MadeStudy(Path(args[3]), urls["admin"], urls["join"], urls["annotators"])


def _answer(study: MadeStudy, pick: Any) -> list[str]:
    """Each participant answers every unit with `pick(unit, k)` (k: their number) through the
    study server; their completion codes."""
    client = TestClient(study_app(study.path))
    codes = []
    for k, link in enumerate(sorted(study.annotators)):
        bot = ScriptedAnnotator(
            client, study.annotators[link],
            role_policy(study.path, lambda unit, k=k: pick(unit, k)), seed=k,
        )  # fmt: skip
        assert bot.run(max_steps=200)
        assert bot.code
        codes.append(bot.code)
    return codes


def _validation(unit: Any, k: int) -> Any:
    """The crowd's validation answers (SugarCrepe++, §2.1: accept, edit or reject)."""
    item = unit.item_id.split(":", 1)[1]
    if item in REJECTED:
        return "reject"
    if item in DISAGREED:
        return "accept" if k == 0 else "reject"
    if item in EDITED and k == 0:
        return ("edit", EDITED[item])
    return "accept"


def _printed_commands(output: str) -> tuple[str, str, str]:
    lines = [x.strip() for x in output.splitlines()]
    create = next(x for x in lines if x.startswith("lexsem annotate create"))
    serve = next(x for x in lines if x.startswith("lexsem annotate serve"))
    export = next(x for x in lines if x.startswith("lexsem annotate export"))
    return create, serve, export


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> dict[str, str]:
    """Three model specs: MiniLM (real weights, offline), a tiny SentenceTransformer and a
    tiny CLIP (random weights, written to local folders)."""
    root = tmp_path_factory.mktemp("models")
    st = write_tiny_st(root / "st", write_tiny_bert(root / "bert"))
    clip = write_clip(root / "clip")
    return {"minilm": "minilm", "tiny-st": f"st:{st}", "tiny-clip": f"clip:{clip}"}


@pytest.fixture
def fake_llm() -> Iterator[str]:
    """The fake LLM's base URL (a thread of this process, up for the whole day)."""
    with serve_in_thread() as base_url:
        yield base_url


def test_one_researchers_day(
    tmp_path: Path,
    models: dict[str, str],
    test_data_dir: Path,
    fake_llm: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / "cache"
    monkeypatch.setenv("LEXSEM_CACHE_DIR", str(cache))

    # 1. raw captions -> the shipped recipe with a generator -> paused for people
    items = tmp_path / "captions.jsonl"
    items.write_text("".join(
        json.dumps({"id": f"i{n}", "caption": c, "negative_caption": neg}) + "\n"
        for n, (c, neg) in enumerate(CAPTIONS)
    ))  # fmt: skip
    build = tmp_path / "build"
    base_url = fake_llm
    command = ["build", "scpp_positive", "--input", str(items), "--generator",
               f"openai:lexsem-fake?base_url={base_url}", "-o", str(build)]  # fmt: skip
    paused = _run(*command, code=3)
    assert "paused at stage 2/3 validation" in paused and "error" not in paused.lower()
    stage = build / "stages" / "01-positive.parquet"
    generated = pq.read_table(stage).to_pylist()
    assert [r["caption"] for r in generated] == [c for c, _ in CAPTIONS]
    assert all(r["caption2"] and r["caption2"] != r["caption"] for r in generated)
    assert all(r["rejected"] is None for r in generated)  # the validator agent said yes
    assert f"people will see all {len(CAPTIONS)} rows" in paused
    create, _serve, export = _printed_commands(paused)
    readme = (build / "human" / "validate" / "README.md").read_text()
    assert _printed_commands(readme) == (create, _serve, export)
    assert f"--from-build {stage}" in create and "-k validate" in create

    # 2. the crowd validates through the study server; the printed export command
    validation = _study(create, tmp_path, 2)
    _answer(validation, _validation)
    _run(*shlex.split(export)[1:])
    answers = build / "human" / "validate" / "answers.parquet"
    assert len(pq.read_table(answers)) == 2 * len(CAPTIONS)

    # 3. the same command again: resumed, folded back, frozen
    resumed = _run(*command, "--replay-only")  # nothing sent: the stage's output is kept
    assert "reused: positive (unchanged)" in resumed
    frozen = json.loads((build / "benchmark" / "all.json").read_text())
    kept = len(CAPTIONS) - len(REJECTED) - len(DISAGREED)
    assert len(frozen) == kept
    assert EDITED["i5"] in [b["caption2"] for b in frozen]
    card = json.loads((build / "benchmark" / "data_card.json").read_text())
    (human,) = card["human"]
    assert human["counts"]["edited"] == 1 and human["counts"]["human_rejected"] == 1
    assert card["rows"]["left_out"] == {"human_rejected": 1, "human_disagreement": 1}
    assert (
        "lexsem's fake LLM: its answers are fixed rules, not a model"
        in (build / "benchmark" / "README.md").read_text()
    )
    shards = list((build / "benchmark" / "data").glob("*.parquet"))
    assert sum(pq.read_metadata(p).num_rows for p in shards) == kept

    # 4. one model on the frozen build: every frozen row is an item, the file's digest recorded
    one = tmp_path / "runs" / "minilm"
    _run("eval", "-m", models["minilm"], "-b", f"build:{build}", "-o", str(one),
         "--n-boot", "0", "--device", "cpu")  # fmt: skip
    run = Run.load(one)
    assert len({r["item_id"] for r in run.items.to_pylist()}) == kept
    frozen_sha = file_sha256(build / "benchmark" / "all.json")
    rec = json.loads((one / "run.json").read_text())
    assert [f["sha256"] for f in rec["benchmarks"][0]["files"]] == [frozen_sha]
    swap_att_sha = file_sha256(test_data_dir / "sugarcrepe_pp" / "swap_att.json")

    # 5. a sweep of three models over the frozen build and a shipped benchmark
    grid = tmp_path / "grid.toml"
    grid.write_text(_grid(models, build, test_data_dir))
    sweep = tmp_path / "sweep"
    _run("sweep", str(grid), "-o", str(sweep), "-q")
    swept = run_folders([sweep])
    assert len(swept) == 2 * len(models)
    for folder in swept:
        rec = json.loads((folder / "run.json").read_text())
        shas = {f["sha256"] for b in rec["benchmarks"] for f in b["files"]}
        assert shas & {frozen_sha, swap_att_sha}, folder

    # 6. a human baseline of the frozen items, paired with the models in the report
    base = tmp_path / "baseline"
    base.mkdir()
    baseline = _study(
        f"lexsem annotate create {base / 'study.sqlite'} -b build:{build} -k tot", base, 2
    )
    wrong_once = {"0"}  # participant 1 misses item 0

    def baseline_answer(unit: Any, k: int) -> Any:
        item = unit.item_id.rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        if k == 1 and item in wrong_once:
            return next(o for o in unit.options if o not in (unit.correct, "skip"))
        return unit.correct

    _answer(baseline, baseline_answer)
    _run("annotate", "export", str(baseline.path), "--answers", str(base / "answers.parquet"))
    human = tmp_path / "runs" / "human"
    _run("annotate", "human-run", str(base / "answers.parquet"), "-o", str(human), "--n-boot", "0")
    assert len(Run.load(human).items) == kept
    table = _run("report", str(sweep), str(human), "--data-dir", str(test_data_dir),
                 "--n-boot", "0")  # fmt: skip
    # the tie of item 0 (one right, one wrong) counts as a miss, as a model's tie does
    assert f"| human | {100 * (kept - 1) / kept:.2f} (n={kept}) |" in table
    assert "### human and the models on the same items — build:build TOT" in table
    people = _hits(human)
    paired = 0
    for folder in swept:
        model = _hits(folder)
        if not people.keys() <= model.keys():
            continue  # the run on swap_att
        name = json.loads((folder / "run.json").read_text())["model"]["name"]
        right = 100 * sum(model[k] for k in people) / len(people)
        only_people = sum(people[k] and not model[k] for k in people)
        only_model = sum(model[k] and not people[k] for k in people)
        assert f"| {name} | all | {kept} | {right:.2f} |" in table
        assert f"| {only_people} | {only_model} |" in table
        paired += 1
    assert paired == len(models)

    # 7. explore: the items every model misses on the frozen build; export them
    folders = [*swept, human]
    joined = open_runs(folders)
    explorer = TestClient(explore_app(joined, n_boot=0))
    assert choices(joined)["bench"] == ["build:build", "sugarcrepe_pp"]
    bench_name = "build:build"
    s = Slice(bench=bench_name, metric="tot", all_wrong=True)
    hard = select(joined, s)
    assert hard.size > 0, "no item every model misses: make the tiny models' task harder"
    query = s.query()
    png = explorer.get(f"/export/figure.png?{query}")
    assert png.status_code == 200 and png.content[:4] == b"\x89PNG"
    exported = explorer.get(f"/export/benchmark?{query}")
    assert exported.status_code == 200
    file = tmp_path / "hard.json"
    file.write_bytes(exported.content)
    assert len(json.loads(file.read_text())) == hard.size
    for name, spec in models.items():
        again = tmp_path / "runs" / f"hard-{name}"
        _run("eval", "-m", spec, "-b", f"scpp:{file}", "-o", str(again), "--n-boot", "0",
             "--task", "tot", "--device", "cpu")  # fmt: skip
        hits = [r["hit"] for r in Run.load(again).items.to_pylist() if r["metric"] == "tot"]
        assert len(hits) == hard.size and not any(hits), name  # every model wrong, as sliced

    # a leaderboard of the day: every model and the people on the frozen build, ranked
    said = _run("publish", str(sweep), str(human), "-o", str(tmp_path / "site"))
    assert f"{len(models) + 1} models" in said
    board = json.loads((tmp_path / "site" / "leaderboard.json").read_text())
    (day,) = [s for s in board["sections"] if s["benchmark"] == "build:build"]
    assert {r["model"] for r in day["rows"] if not r["published"]} == {*models, "human"}

    # the exported study: its script creates it; a participant answers it
    study_zip = explorer.get(f"/export/study?{query}")
    assert study_zip.status_code == 200
    made = create_exported_study(
        study_zip.content,
        tmp_path / "exported",
        "-n",
        "1",
        "--links",
        str(tmp_path / "exported" / "links.json"),
        "--base-url",
        "",
    )
    assert made.returncode == 0, made.stdout + made.stderr
    links = json.loads((tmp_path / "exported" / "links.json").read_text())
    path = tmp_path / "exported" / "s.sqlite"
    again_study = MadeStudy(path, links["admin"], links["join"], links["annotators"])
    (code,) = _answer(again_study, lambda unit, k: unit.correct)
    _run("annotate", "export", str(path), "--answers", str(tmp_path / "exported" / "a.parquet"))
    assert len(pq.read_table(tmp_path / "exported" / "a.parquet")) == hard.size
    assert code in _run("annotate", "verify", str(path), code)


def _hits(folder: Path) -> dict[tuple[str, str], bool]:
    """A run's TOT hits by (subset, item id)."""
    return {(r["subset"], r["item_id"]): r["hit"] for r in Run.load(folder).items.to_pylist()
            if r["metric"] == "tot"}  # fmt: skip


def _grid(models: dict[str, str], build: Path, data: Path) -> str:
    """The sweep's grid: every model on the frozen build and SugarCrepe++'s swap_att, TOT."""
    entries = ", ".join(f"{{ spec = {json.dumps(s)}, name = {json.dumps(n)} }}"
                        for n, s in models.items())  # fmt: skip
    return (
        'name = "day"\n[defaults]\nn_boot = 50\ndevice = "cpu"\n'
        f"data_dir = {json.dumps(str(data))}\n\n[[block]]\nmodels = [{entries}]\n"
        f'benchmarks = [{json.dumps(f"build:{build}")}, "sugarcrepe_pp/swap_att"]\n'
        'options = { tasks = ["tot"] }\n'
    )
