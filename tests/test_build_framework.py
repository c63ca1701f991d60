"""`lexsem build`: recipe checks, stage outputs and build.json, resume, stored generator
requests (a deterministic rule-based fake generator), --replay-only and --max-requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from lexsem.cli.app import app
from lexsem.construct import runner
from lexsem.construct.caption_format import format_caption
from lexsem.construct.catalog import register_stage
from lexsem.construct.recipe import load_recipe
from lexsem.construct.runner import build
from lexsem.construct.stage import StageContext, accepted, reject
from lexsem.errors import LexsemError


class FakeGenerator:
    """A chat model answering by rule (upper case of the prompt), counting what it is sent."""

    name = "fake"
    concurrency = 1

    def __init__(self) -> None:
        self.sent: list[str] = []

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "fake", "rule": "upper"}

    def request_body(self, request: Any, image_part: Any = None) -> dict[str, Any]:
        return {"prompt": request.turns[-1].text, **request.params}

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.sent.append(body["prompt"])
        return body["prompt"].upper(), {"seed": body.get("seed")}


def _prompts(rows: pa.Table, prefix: str = "") -> list[str]:
    return [prefix + c for c in rows.filter(accepted(rows))["caption"].to_pylist()]


def fake_shout(rows: pa.Table, ctx: StageContext, prefix: str = "") -> pa.Table:
    """Asks the generator about the accepted rows; rejects a long answer."""
    answers = iter(ctx.ask(_prompts(rows, prefix)))
    shouts = [next(answers) if ok else None for ok in accepted(rows).to_pylist()]
    rows = rows.append_column("shout", pa.array(shouts, pa.string()))
    return reject(rows, ["too long" if a and len(a) > 12 else None for a in shouts])


def crash(rows: pa.Table, ctx: StageContext, fail: bool = True) -> pa.Table:
    if fail:
        raise RuntimeError("killed")
    return rows


register_stage("fake_shout", fake_shout, generator=True, requests=_prompts, replace=True)
register_stage("crash_test", crash, replace=True)

CAPTIONS = ["a dog on a sofa", "two cats", "  a man in Paris", "", "a red bus parked by a tree"]


@pytest.fixture
def gen(monkeypatch: pytest.MonkeyPatch) -> FakeGenerator:
    model = FakeGenerator()
    monkeypatch.setattr(runner, "_load_generator", lambda spec: model)
    return model


def _recipe(tmp: Path, stages: str, head: str = "") -> Path:
    data = tmp / "captions.jsonl"
    if not data.exists():
        data.write_text("".join(json.dumps({"caption": c}) + "\n" for c in CAPTIONS))
    path = tmp / "recipe.toml"
    path.write_text(f'name = "t"\n{head}\n[input]\npath = "captions.jsonl"\n{stages}')
    return path


FORMAT = '[[stages]]\nuse = "caption_format"\n'
SHOUT = '[[stages]]\nuse = "fake_shout"\n'
HEAD = 'generator = "fake:x"\nseed = 7'


def _build(recipe: Path, out: Path, **kw: Any) -> runner.BuildResult:
    return build(recipe, out, cache_dir=out.parent / "cache", echo=lambda t: None, **kw)


# -- recipe checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stages", "head", "expected"),
    [
        ('[[stages]]\nuse = "nope"\n', "", "stage 1 (nope): unknown stage 'nope'"),
        (FORMAT + "[stages.settings]\ncolour = 1\n", "", "stage 1 (caption_format): settings"),
        (SHOUT, "", "stage 1 (fake_shout): the stage asks a generator"),
        (FORMAT + FORMAT, "", "stage 2 (caption_format): the name 'caption_format' is taken"),
        (FORMAT + '[[stages]]\nuse = "caption_format"\nlimit = 3\n', "", "stage 2"),
        ("", "", "stages"),
        (FORMAT, "seed = -1", "seed"),
    ],
)
def test_recipe_errors_name_the_file_and_stage(
    tmp_path: Path, stages: str, head: str, expected: str
) -> None:
    path = _recipe(tmp_path, stages, head)
    with pytest.raises(LexsemError) as exc:
        load_recipe(path)
    assert str(exc.value).startswith(f"{path}: ")
    assert expected in str(exc.value)
    assert "\n" not in str(exc.value)


def test_recipe_input_must_exist(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text('name = "t"\n[input]\npath = "none.jsonl"\n' + FORMAT)
    with pytest.raises(LexsemError, match="no such file"):
        load_recipe(path)


# -- outputs ---------------------------------------------------------------------------------


def test_format_caption_rules() -> None:
    assert format_caption("a dog in Paris") == "A dog in Paris."
    assert format_caption("  two cats! ", keep_marks=".!?") == "Two cats!"
    assert format_caption("") == ""


def test_stage_outputs_and_build_record(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = _build(_recipe(tmp_path, FORMAT), out)
    table = pq.read_table(out / "stages" / "01-caption_format.parquet")
    assert table["caption"].to_pylist() == [
        "A dog on a sofa.", "Two cats.", "A man in Paris.", "", "A red bus parked by a tree."
    ]  # fmt: skip
    assert table["rejected"].to_pylist() == [None, None, None, "empty caption", None]
    assert table["source"].to_pylist() == ["captions.jsonl"] * 5
    assert table["source_id"].to_pylist() == ["1", "2", "3", "4", "5"]
    record = json.loads((out / "build.json").read_text())
    assert record["complete"] is True
    assert len(record["input"]["sha256"]) == 64 and len(record["recipe"]["sha256"]) == 64
    (stage,) = record["stages"]
    assert (stage["rows"], stage["accepted"], stage["rejected"]) == (5, 4, {"empty caption": 1})
    assert res.output == out / "stages" / "01-caption_format.parquet"


# -- resume ----------------------------------------------------------------------------------


def test_resume_skips_unchanged_and_reruns_from_a_changed_stage(
    tmp_path: Path, gen: FakeGenerator
) -> None:
    out = tmp_path / "out"
    recipe = _recipe(tmp_path, FORMAT + SHOUT, HEAD)
    first = _build(recipe, out)
    assert [r.reused for r in first.stages] == [False, False]
    assert len(gen.sent) == 4  # the empty caption is rejected before it is asked
    again = _build(recipe, out)
    assert [r.reused for r in again.stages] == [True, True]
    recipe.write_text(recipe.read_text() + '[stages.settings]\nprefix = "x "\n')
    changed = _build(recipe, out)
    assert [r.reused for r in changed.stages] == [True, False]
    table = pq.read_table(changed.output)
    assert table["shout"].to_pylist()[0] == "X A DOG ON A SOFA."


def test_a_build_json_without_a_version_resumes_and_a_newer_one_is_refused(
    tmp_path: Path,
) -> None:
    """build.json as lexsem wrote it before it had a version resumes every stage; a record
    written by a newer lexsem stops the build before any stage runs."""
    out = tmp_path / "out"
    recipe = _recipe(tmp_path, FORMAT)
    _build(recipe, out)
    record = json.loads((out / "build.json").read_text())
    assert record["schema_version"] == 1
    del record["schema_version"]
    (out / "build.json").write_text(json.dumps(record))
    assert [r.reused for r in _build(recipe, out).stages] == [True]
    (out / "build.json").write_text(json.dumps({**record, "schema_version": 2}))
    with pytest.raises(LexsemError, match=r"build\.json: build record schema version 2 is newer"):
        _build(recipe, out)


def test_a_killed_build_resumes_at_the_stage_that_failed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    crashing = FORMAT + '[[stages]]\nuse = "crash_test"\n'
    recipe = _recipe(tmp_path, crashing)
    with pytest.raises(RuntimeError, match="killed"):
        _build(recipe, out)
    record = json.loads((out / "build.json").read_text())
    assert record["complete"] is False and [s["name"] for s in record["stages"]] == [
        "caption_format"
    ]
    recipe.write_text(recipe.read_text() + "[stages.settings]\nfail = false\n")
    res = _build(recipe, out)
    assert [r.reused for r in res.stages] == [True, False]


# -- generator requests ----------------------------------------------------------------------


def test_requests_are_stored_and_not_resent(tmp_path: Path, gen: FakeGenerator) -> None:
    recipe = _recipe(tmp_path, FORMAT + SHOUT, HEAD)
    first = _build(recipe, tmp_path / "a")
    assert first.sent == 4 and first.stages[1].requests == {
        "asked": 4, "stored": 0, "sent": 4, "retried": 0
    }  # fmt: skip
    second = _build(recipe, tmp_path / "b")  # a new folder: every stage runs, nothing is sent
    assert second.sent == 0 and len(gen.sent) == 4
    assert second.stages[1].requests == {"asked": 4, "stored": 4, "sent": 0, "retried": 0}
    t = pq.read_table(second.output)
    # answers longer than 12 characters: "A DOG ON A SOFA." (16), "A MAN IN PARIS." (15), the bus
    assert t["rejected"].to_pylist() == ["too long", None, "too long", "empty caption", "too long"]


def test_the_seed_is_part_of_the_request(tmp_path: Path, gen: FakeGenerator) -> None:
    _build(_recipe(tmp_path, FORMAT + SHOUT, HEAD), tmp_path / "a")
    _build(_recipe(tmp_path, FORMAT + SHOUT, 'generator = "fake:x"\nseed = 8'), tmp_path / "b")
    assert len(gen.sent) == 8


def test_replay_only_with_a_missing_answer_is_an_error(tmp_path: Path, gen: FakeGenerator) -> None:
    recipe = _recipe(tmp_path, FORMAT + SHOUT, HEAD)
    with pytest.raises(LexsemError, match="replay only: stage 'fake_shout' has 4 requests"):
        _build(recipe, tmp_path / "a", replay_only=True)
    assert gen.sent == []
    _build(recipe, tmp_path / "a")
    assert _build(recipe, tmp_path / "b", replay_only=True).sent == 0


def test_max_requests_refuses_before_sending(tmp_path: Path, gen: FakeGenerator) -> None:
    recipe = _recipe(tmp_path, FORMAT + SHOUT, HEAD)
    with pytest.raises(LexsemError, match="would send 4 requests, more than --max-requests 3"):
        _build(recipe, tmp_path / "a", max_requests=3)
    assert gen.sent == []
    assert _build(recipe, tmp_path / "a", max_requests=4).sent == 4


# -- the command -----------------------------------------------------------------------------


def test_cli_builds_and_reports_errors_in_one_line(tmp_path: Path, gen: FakeGenerator) -> None:
    recipe = _recipe(tmp_path, FORMAT + SHOUT, HEAD)
    cli = CliRunner()
    args = ["build", str(recipe), "-o", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "c")]
    refused = cli.invoke(app, [*args, "--replay-only"])
    assert refused.exit_code == 2 and refused.output.count("\n") >= 1
    assert "error: replay only" in refused.output and "Traceback" not in refused.output
    done = cli.invoke(app, [*args, "--max-requests", "10"])
    assert done.exit_code == 0, done.output
    assert "too long: 3" in done.output and "(4 requests sent)" in done.output
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    foreign = cli.invoke(app, ["build", str(recipe), "-o", str(tmp_path / "other")])
    assert foreign.exit_code == 2 and "not a build folder" in foreign.output
