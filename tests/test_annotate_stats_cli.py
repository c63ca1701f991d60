"""The `lexsem annotate` commands of `lexsem.cli.annotate_stats` (agreement, human-run,
labelstudio-export, labelstudio-import) through `typer.testing.CliRunner` on the `lexsem annotate`
sub-app."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import typer
from typer.testing import CliRunner

from builders.answers_table import answer, table
from builders.fakes import TRIPLETS, scpp_user_files
from lexsem.results.run import Run

runner = CliRunner()


@pytest.fixture
def app() -> typer.Typer:
    import lexsem.cli.app  # noqa: F401  (adds the commands to the `annotate` sub-app)
    from lexsem.cli.annotate import annotate_app

    return annotate_app


def _answers(tmp_path: Path, bench: str) -> Path:
    rows = []
    for sub, items in TRIPLETS.items():
        for i in range(len(items)):
            rows.append(answer("tot", str(i), "a", "n", subset=sub, benchmark=bench))
            rows.append(answer("tot", str(i), "b", "p1" if i == 1 else "n", subset=sub,
                               benchmark=bench))  # fmt: skip
    path = tmp_path / "answers.parquet"
    pq.write_table(table(rows), path)
    return path


def test_agreement_command(app: typer.Typer, tmp_path: Path) -> None:
    sel, _ = scpp_user_files(tmp_path)
    path = _answers(tmp_path, sel)
    out = tmp_path / "agree.json"
    res = runner.invoke(app, ["agreement", str(path), "--n-boot", "50", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "| tot | swap_obj | cohen_kappa | a / b | 3 | 2 |" in res.output
    body = json.loads(out.read_text(encoding="utf-8"))  # strict JSON: NaN written as null
    assert body["generator"] == "lexsem" and body["n_boot"] == 50
    assert {r["statistic"] for r in body["rows"]} >= {"fleiss_kappa", "krippendorff_alpha"}
    out.write_text("my notes")
    res = runner.invoke(app, ["agreement", str(path), "--json", str(out)])
    assert res.exit_code == 2 and "was not written by lexsem" in res.output
    res = runner.invoke(app, ["agreement", str(tmp_path / "none.parquet")])
    assert res.exit_code == 2 and "no such answers file" in res.output
    assert "Traceback" not in res.output


def test_human_run_command(app: typer.Typer, tmp_path: Path) -> None:
    sel, _ = scpp_user_files(tmp_path)
    path = _answers(tmp_path, sel)
    out = tmp_path / "human"
    args = ["human-run", str(path), "-o", str(out), "--n-boot", "20",
            "--cache-dir", str(tmp_path / "c")]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert f"run folder: {out} (human; tot)" in res.output
    assert "| tot | _all | 10 | 8 | 2 | 80.00 |" in res.output  # over answers
    run = Run.load(out)
    # items 1 split one right / one wrong: ties, failures under the strict policy
    assert run.accuracy("scpp:triplets", "tot") == pytest.approx(100 * 3 / 5)
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "--force" in res.output  # a run is replaced only with --force
    res = runner.invoke(app, [*args, "--force", "--tie-policy", "lenient"])
    assert res.exit_code == 0, res.output
    assert Run.load(out).accuracy("scpp:triplets", "tot") == 100.0
    res = runner.invoke(app, ["human-run", str(path), "-o", str(tmp_path), "--tie-policy", "x"])
    assert res.exit_code == 2


@pytest.mark.parametrize("study", [[], ["--study", "pilot"]])
def test_human_run_on_a_file_without_answers_says_so(
    app: typer.Typer, tmp_path: Path, study: list[str]
) -> None:
    path = tmp_path / "answers.parquet"
    pq.write_table(table([]), path)
    res = runner.invoke(app, ["human-run", str(path), "-o", str(tmp_path / "h"), *study])
    assert res.exit_code == 2, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {path}: the answers file holds no answers (of any study)"]
    assert not (tmp_path / "h").exists()


def test_human_run_of_a_study_the_file_lacks_names_the_studies_it_has(
    app: typer.Typer, tmp_path: Path
) -> None:
    path = _answers(tmp_path, "synthetic")
    res = runner.invoke(app, ["human-run", str(path), "-o", str(tmp_path / "h"),
                              "--study", "pilot"])  # fmt: skip
    assert res.exit_code == 2, res.output
    assert f"error: {path}: no answers of study 'pilot' (it has st)" in res.output


def test_label_studio_commands(app: typer.Typer, tmp_path: Path) -> None:
    from builders.annotate_studies import make_study
    from builders.labelstudio_exports import annotation, shown_position
    from lexsem.annotate import store

    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "1", "-k", "pair",
                      name="pilot")  # fmt: skip
    res = runner.invoke(app, ["labelstudio-export", str(made.path), "-o", str(tmp_path / "ls")])
    assert res.exit_code == 0, res.output
    assert f"{tmp_path / 'ls' / 'pair' / 'tasks.json'}\n" in res.output
    data = json.loads((tmp_path / "ls" / "pair" / "tasks.json").read_text("utf-8"))[0]["data"]
    con = store.connect(made.path)
    (unit,) = store.units(con)
    con.close()
    pick = str(shown_position(data, unit, unit.correct))
    export = [{"id": 1, "data": data, "annotations": [annotation(3, pick, to_name="base")]}]
    (tmp_path / "export.json").write_text(json.dumps(export), encoding="utf-8")
    out = tmp_path / "answers.parquet"
    args = ["labelstudio-import", str(tmp_path / "export.json"), "--key",
            str(tmp_path / "ls" / "lexsem-key.json"), "-o", str(out)]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    (row,) = pq.read_table(out).to_pylist()
    assert (row["answer"], row["correct"], row["annotator"], row["study"]) == (
        unit.correct, True, "ls-3", "pilot")  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "--force" in res.output
    res = runner.invoke(app, [*args, "--force", "--study", "renamed"])
    assert res.exit_code == 0 and pq.read_table(out).column("study").to_pylist() == ["renamed"]
    res = runner.invoke(app, ["labelstudio-export", str(tmp_path / "export.json"), "-o",
                              str(tmp_path / "x")])  # fmt: skip
    assert res.exit_code == 2 and "not a lexsem study" in res.output, res.output


@pytest.mark.parametrize(
    ("option", "value"),
    [("--seed", "-1"), ("--confidence", "1.0"), ("--confidence", "0.0"), ("--n-boot", "100001")],
)
def test_the_bootstrap_options_are_evaluations_with_its_bounds(
    app: typer.Typer, tmp_path: Path, option: str, value: str
) -> None:
    """`--seed`, `--confidence` and `--n-boot` are `lexsem eval`'s (EvalConfig's fields): the
    same help and bounds, one line before the answers are read (they do not exist here)."""
    from lexsem.cli.options import Confidence, NBoot, Seed

    assert "Bootstrap seed." in Seed.__metadata__[0].help
    assert "Confidence level" in Confidence.__metadata__[0].help
    assert "Bootstrap resamples" in NBoot.__metadata__[0].help
    for command in (["agreement"], ["human-run", "-o", str(tmp_path / "run")]):
        res = runner.invoke(app, [*command, str(tmp_path / "none.parquet"), option, value])
        assert res.exit_code == 2, res.output
        assert f"{option} {value}: must be" in res.output and "none.parquet" not in res.output
