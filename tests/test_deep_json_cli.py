"""A JSON file nested 200,000 deep given to `validate`, `score-answers`, `convert-answers`,
`report` / `compare` (a run's run.json, a training run's train.json) or `annotate
labelstudio-import` (an export, the key): one `error:` line naming the file (exit 2), never a
RecursionError, nothing written. Every whole-file JSON read goes through
`lexsem.jsonl.read_json` (`build`: tests/test_build_bad_inputs.py); the other files lexsem reads
(a sweep's sweep.json, a build's build.json, a model folder's JSON files, a detector's record)
are one error naming the file too."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.fakes import register_fixture_benchmark
from lexsem.cli import app
from lexsem.errors import LexsemError
from lexsem.jsonl import MAX_DEPTH

runner = CliRunner()
DEEP = "[" * 200_000 + "]" * 200_000


TOO_DEEP = f"JSON nested more than {MAX_DEPTH} deep"


def _one_line(args: list[str], path: Path, said: str = TOO_DEEP) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.output == f"error: {path}: {said}\n"


def test_validate_a_deep_benchmark_file(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP, encoding="utf-8")
    report = tmp_path / "report.json"
    _one_line(["validate", f"scpp:{path}", "--json", str(report)], path)
    assert not report.exists()


def test_score_answers_a_deep_answers_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    path = tmp_path / "answers.json"
    path.write_text(DEEP, encoding="utf-8")
    out = tmp_path / "scores.json"
    _one_line(["score-answers", str(path), "-b", "fixture_pp", "--data-dir", str(data),
               "--prompt", "scpp3", "--json", str(out)], path)  # fmt: skip
    assert not out.exists()


def test_convert_answers_a_deep_published_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lexsem.benchmarks import load as bench_load

    folder = tmp_path / "gpt-4v-results" / "positive-first"
    folder.mkdir(parents=True)
    path = folder / "gpt4v-swap_obj.json"
    path.write_text('{"0": ' + DEEP + "}", encoding="utf-8")

    class Item:
        subset, id = "swap_obj", "0"

    class Loaded:
        items = (Item(),)

    monkeypatch.setattr(bench_load, "load_benchmark", lambda *a, **k: Loaded())
    out = tmp_path / "answers.jsonl"
    _one_line(["convert-answers", str(folder.parent), str(out)], path)
    assert not out.exists()


def test_validate_a_build_whose_data_card_is_nested_too_deep(tmp_path: Path) -> None:
    card = tmp_path / "b" / "benchmark" / "data_card.json"
    card.parent.mkdir(parents=True)
    card.write_text('{"files": ' + DEEP + "}", encoding="utf-8")
    _one_line(["validate", f"build:{tmp_path / 'b'}"], card)


def test_report_and_compare_a_run_whose_run_json_is_nested_too_deep(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(DEEP, encoding="utf-8")
    html = tmp_path / "r.html"
    _one_line(["report", str(run)], run / "run.json")
    _one_line(["report", str(run), "--html", str(html)], run / "run.json")
    _one_line(["compare", str(run), str(run)], run / "run.json")
    assert not html.exists()


def test_report_a_training_run_whose_train_json_is_nested_too_deep(tmp_path: Path) -> None:
    folder = tmp_path / "trained"
    folder.mkdir()
    (folder / "train.json").write_text(DEEP, encoding="utf-8")
    _one_line(
        ["report", str(folder)],
        folder / "train.json",
        f"not a readable training record ({TOO_DEEP})",
    )


KEY = (
    '{"format": "lexsem-labelstudio-key/1", "study": "pilot", "overlap": 1, "projects": {}, '
    '"tasks": {}}'
)


def test_labelstudio_import_of_an_export_or_key_nested_too_deep(tmp_path: Path) -> None:
    export, key, deep = tmp_path / "export.json", tmp_path / "key.json", tmp_path / "deep.json"
    export.write_text("[]", encoding="utf-8")
    key.write_text(KEY, encoding="utf-8")
    deep.write_text(DEEP, encoding="utf-8")
    answers = tmp_path / "answers.parquet"
    args = ["annotate", "labelstudio-import", "-o", str(answers)]
    _one_line(
        [*args, str(deep), "--key", str(key)],
        deep,
        f"not a Label Studio JSON export ({TOO_DEEP})",
    )
    _one_line(
        [*args, str(export), "--key", str(deep)],
        deep,
        f"not a lexsem Label Studio key file ({TOO_DEEP})",
    )
    assert not answers.exists()


def _sweep_summary(folder: Path) -> Any:
    from lexsem.sweep.record import read_summary

    return read_summary(folder)


def _training_evaluations(folder: Path) -> Any:
    from lexsem.train.record import evaluation_folders

    return evaluation_folders(folder)


def _resumed_training(folder: Path) -> Any:
    from lexsem.train import loop

    return loop._read_record(folder)


def _hf_config(folder: Path) -> Any:
    from lexsem.models.hf_config import read_config

    return read_config(folder)


def _model_files(folder: Path) -> Any:
    from lexsem.models.integrity import check_model_files

    return check_model_files(folder, [])


def _open_clip_config(folder: Path) -> Any:
    from lexsem.models.backends.openclip.custom_arch import custom_arch

    return custom_arch(folder / "arch.json")


def _detector(folder: Path) -> Any:
    from lexsem.models.detector_heads import head_paths, load_head

    weights, _ = head_paths(folder, "text")
    weights.write_bytes(b"")
    return load_head(folder, "text")


def _detector_record(folder: Path) -> str:
    from lexsem.models.detector_heads import head_paths

    return head_paths(folder, "text")[1].name


READERS: dict[str, tuple[Callable[[Path], Any], Callable[[Path], str] | str]] = {
    "sweep.json": (_sweep_summary, "sweep.json"),
    "train.json": (_training_evaluations, "train.json"),
    "train.json (resume)": (_resumed_training, "train.json"),
    "config.json": (_hf_config, "config.json"),
    "a model folder's JSON": (_model_files, "tokenizer.json"),
    "open_clip model config": (_open_clip_config, "arch.json"),
    "detector record": (_detector, _detector_record),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_json_file_nested_too_deep_is_one_error_naming_it(
    tmp_path: Path, reader: str
) -> None:
    read, name = READERS[reader]
    path = tmp_path / (name if isinstance(name, str) else name(tmp_path))
    path.write_text(DEEP, encoding="utf-8")
    with pytest.raises(LexsemError) as exc:
        read(tmp_path)
    said = str(exc.value)
    assert str(path) in said and TOO_DEEP in said and "\n" not in said, said


def test_a_build_record_nested_too_deep_is_no_build_record(tmp_path: Path) -> None:
    from lexsem.construct.build_record import BUILD_FILE, read_build_record

    (tmp_path / BUILD_FILE).write_text(DEEP, encoding="utf-8")
    assert read_build_record(tmp_path) is None


def test_a_run_folder_nested_too_deep_is_described_as_a_run(tmp_path: Path) -> None:
    from lexsem.results.folder_swap import RUN_JSON, _describe

    (tmp_path / RUN_JSON).write_text(DEEP, encoding="utf-8")
    assert _describe(tmp_path) == "a run"


def test_train_a_manifest_line_nested_too_deep(tmp_path: Path) -> None:
    """`lexsem train --manifest` with a JSONL line of 200,000 nested arrays: one `error:` line
    naming the manifest and the line (exit 2), nothing written."""
    path = tmp_path / "m.jsonl"
    path.write_text('{"image": "synthetic:x", "caption": "c"}\n' + DEEP + "\n", encoding="utf-8")
    out = tmp_path / "run"
    result = runner.invoke(app, ["train", "--manifest", str(path), "-o", str(out),
                                 "-m", "openclip:x"])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.output == f"error: {path}:2: {TOO_DEEP}\n"
    assert not (out / "train.json").exists()
