"""No command writes over one of its inputs, into a run folder, or a run into a folder of
another kind (`lexsem.outputs`): each is refused with one line naming the option and the path,
before any work, and what was there is unchanged."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.fakes import BagOfWordsEncoder, register_fixture_benchmark
from builders.privileges import where_permission_bits_apply
from lexsem.api import evaluate
from lexsem.cli import app
from lexsem.outputs import check_output_dir, check_output_file, check_outputs, run_folder_of

runner = CliRunner()


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("one-run")
    evaluate(BagOfWordsEncoder(16, "bow16"), ["synthetic"], out=base / "run",
             cache_dir=base / "cache", n_boot=0, offline=True)  # fmt: skip
    return base / "run"


@pytest.fixture
def run(tmp_path: Path, one_run: Path) -> Path:
    """A copy of an evaluation run folder, and what its files hold."""
    shutil.copytree(one_run, tmp_path / "run")
    return tmp_path / "run"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _refused(args: list[str | Path], *needles: str | Path) -> None:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    for needle in needles:
        assert str(needle) in result.output, result.output


@pytest.mark.parametrize("name", ["run.json", "items.parquet", "notes.md"])
def test_report_never_writes_into_a_run_folder(run: Path, name: str) -> None:
    before = _snapshot(run)
    _refused(["report", run, "-o", run / name], "--out", run / name, "inside")
    _refused(["report", run, "--html", run / name], "--html", "inside")
    dotted = run.parent / "x" / ".." / "run" / name
    _refused(["report", run / "run.json", "-o", dotted], "--out")
    link = run.parent / "link"
    link.symlink_to(run)
    _refused(["report", link, "-o", link / name], "inside")
    assert _snapshot(run) == before


@where_permission_bits_apply
def test_report_html_into_a_folder_or_a_read_only_folder_is_refused(
    run: Path, tmp_path: Path
) -> None:
    _refused(["report", run, "--html", tmp_path], "--html", "is a folder")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        assert not os.access(locked, os.W_OK)
        _refused(
            ["report", run, "--html", locked / "r.html"], "cannot write there: permission denied"
        )
    finally:
        locked.chmod(0o755)
    _refused(["report", run, "-o", tmp_path / "t.md", "--html", tmp_path / "t.md"], "same file")


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    return data


def test_score_answers_never_writes_over_its_answers(tmp_path: Path, bench: Path) -> None:
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"id": 0, "subset": "swap_obj", "prompt": "scpp3",
                                   "ordering": "NPP", "answer": "(1)"}) + "\n")  # fmt: skip
    before = answers.read_bytes()
    common = ["-b", "fixture_pp", "--data-dir", bench]
    _refused(["score-answers", answers, *common, "--json", answers], "--json", answers, "input")
    link = tmp_path / "link.json"
    link.symlink_to(answers)
    _refused(["score-answers", answers, *common, "--json", link], "input")
    # a run folder holding the answers file would lose it when written (it is replaced whole)
    inside = tmp_path / "r" / "a.jsonl"
    inside.parent.mkdir()
    inside.write_bytes(before)
    _refused(["score-answers", inside, *common, "--run", tmp_path / "r"], "--run", "input")
    assert answers.read_bytes() == before and inside.read_bytes() == before


def test_validate_never_writes_over_the_benchmark_file(bench: Path) -> None:
    file = bench / "fixture_pp" / "swap_obj.json"
    before = file.read_bytes()
    _refused(["validate", f"scpp:{file}", "--json", file], "--json", file, "input")
    _refused(["validate", f"scpp:{file.parent}", "--json", file], "input")
    _refused(["validate", f"scpp:{file}", "--json", bench], "--json", "is a folder")
    assert file.read_bytes() == before


def test_train_never_writes_into_an_evaluation_run(run: Path, tmp_path: Path) -> None:
    before = _snapshot(run)
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("")
    _refused(["train", "--manifest", manifest, "-m", "clip:x", "-o", run],
             "--out", "holds an evaluation run, not a training run")  # fmt: skip
    _refused(["train", "--manifest", manifest, "-m", "clip:x", "-o", run / "sub"],
             "lies inside")  # fmt: skip
    _refused(["train-data", run, "-n", "2", "--size", "32"], "holds an evaluation run")
    assert _snapshot(run) == before
    done = runner.invoke(app, ["eval", "-m", "minilm", "-b", "synthetic", "-o", str(run)])
    assert "--force" in done.output  # still a run folder: eval --force may replace it


def test_eval_out_is_never_the_cache_or_data_folder(tmp_path: Path, bench: Path) -> None:
    cache = tmp_path / "cache"
    args = ["eval", "-m", "minilm", "-b", "fixture_pp", "--data-dir", bench]
    _refused([*args, "--cache-dir", cache, "-o", cache], "--out", cache, "input")
    _refused([*args, "--cache-dir", cache, "-o", bench], "--out", bench, "input")
    _refused([*args, "--cache-dir", bench / "c", "-o", tmp_path], "holds")
    assert not cache.exists()


def test_an_output_inside_an_input_folder_is_no_input(tmp_path: Path, bench: Path) -> None:
    """Only an output that is or holds an input is refused: a new folder or file inside an
    input folder is written there (`eval --data-dir DATA -o DATA/runs`); an existing file
    inside one may be one of its inputs, and is refused."""
    data = tmp_path / "inputs"
    data.mkdir()
    (data / "items.json").write_text("{}")
    for out in (data / "runs", data / "runs" / "a", data):
        if out != data:
            check_output_dir(out, kind="run.json", inputs=[data])
    with pytest.raises(Exception, match=r"--out .*inputs is .*inputs, an input of this command"):
        check_output_dir(data, kind="run.json", inputs=[data])
    with pytest.raises(Exception, match=r"holds .*items\.json, an input of this command"):
        check_output_dir(data, kind=None, inputs=[data / "items.json"])
    check_output_file(data / "new.json", inputs=[data])
    with pytest.raises(Exception, match=r"lies inside .*inputs \(a folder this command reads\)"):
        check_output_file(data / "items.json", inputs=[data], force=True)
    runs = bench / "runs"
    done = runner.invoke(app, ["eval", "-m", "minilm", "-b", "fixture_pp", "--data-dir",
                               str(bench), "-o", str(runs), "--offline"])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert (runs / "run.json").is_file() and (bench / "fixture_pp").is_dir()


def test_convert_answers_never_writes_into_a_run_folder(run: Path, tmp_path: Path) -> None:
    published = tmp_path / "pub"
    published.mkdir()
    _refused(["convert-answers", published, run / "run.json", "--force"], "inside")
    (published / "positive-first").mkdir()
    answers = published / "positive-first" / "gpt4v-swap_obj.json"
    answers.write_text("{}")
    _refused(["convert-answers", published, answers, "--force"], "lies inside", published)
    assert answers.read_text() == "{}"


def test_the_check_itself(tmp_path: Path, run: Path) -> None:
    """The shared check, directly: inputs compared after links and `..`; a training folder is a
    run folder too; a new file in a writable folder passes."""
    f = tmp_path / "in.json"
    f.write_text("{}")
    check_output_file(tmp_path / "out.json", inputs=[f])
    check_outputs({"--a": None, "--b": "-"}, inputs=[f])
    with pytest.raises(Exception, match=r"is .*in\.json"):
        check_output_file(tmp_path / "sub" / ".." / "in.json", inputs=[f])
    training = tmp_path / "t"
    training.mkdir()
    (training / "train.json").write_text("{}")
    assert run_folder_of(training / "eval" / "x.html") == training
    check_output_file(training / "report.html", inputs=[training])  # a new file: kept beside it
    with pytest.raises(Exception, match="inside the run folder"):
        check_output_file(training / "train.json", inputs=[training / "eval"])
    assert run_folder_of(tmp_path / "x.html") is None
    check_output_dir(training, kind="train.json")
    with pytest.raises(Exception, match="holds a training run, not an evaluation run"):
        check_output_dir(training, kind="run.json")
    check_output_dir(tmp_path / "new", kind=None)
