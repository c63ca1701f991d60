"""An existing output file that lexsem did not write (a paper draft, a user's notes, a CSV) is
replaced only with `--force`, and refused before any work otherwise, kept byte for byte;
lexsem's own previous output is told by how it opens (`lexsem.outputs.written_by_lexsem`) and
replaced without `--force`."""

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
from lexsem.outputs import PREFIX_BYTES, check_output_file, written_by_lexsem

runner = CliRunner()

DRAFT = b"\\section{Results}\nOur model wins (Table 2). Three weeks of writing.\n"
NOTES = b'{"todo": ["rerun clip", "ask Ann"], "generator": "lexsem"}\n'  # the mark, not first
ANSWERS = (
    b'{"id": 0, "subset": "swap_obj", "prompt": "scpp3", "ordering": "NPP", "answer": "(1)"}\n'
)


@pytest.fixture(scope="module")
def one_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("one-run")
    evaluate(BagOfWordsEncoder(16, "bow16"), ["synthetic"], out=base / "run",
             cache_dir=base / "cache", n_boot=0, offline=True)  # fmt: skip
    return base / "run"


@pytest.fixture
def run(tmp_path: Path, one_run: Path) -> Path:
    shutil.copytree(one_run, tmp_path / "run")
    return tmp_path / "run"


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    return data


def _cli(*args: str | Path) -> tuple[int, str]:
    res = runner.invoke(app, [str(a) for a in args])
    return res.exit_code, res.output


def _kept_unless_forced(args: list[str | Path], out: Path, option: str, foreign: bytes) -> None:
    """`args` writing `out` (given as `option`): over a foreign file, one line refusing it and
    the file unchanged; with --force, replaced; then again without --force, over its own
    output, replaced (the file is removed first to tell a write from a kept file)."""
    out.write_bytes(foreign)
    code, output = _cli(*args)
    assert code == 2, output
    assert output == (
        f"error: {option} {out} exists and was not written by lexsem; pass --force to replace it\n"
    )
    assert out.read_bytes() == foreign
    code, output = _cli(*args, "--force")
    assert code == 0, output
    own = out.read_bytes()
    assert own != foreign and written_by_lexsem(out)
    with out.open("ab") as fh:  # lexsem's output, edited: still lexsem's, and replaced
        fh.write(b"\n")
    code, output = _cli(*args)
    assert code == 0, output
    assert out.read_bytes() == own


@pytest.mark.parametrize(("fmt", "foreign"), [("md", DRAFT), ("latex", DRAFT), ("md", NOTES)])
def test_report_out_keeps_a_foreign_file_unless_forced(
    run: Path, tmp_path: Path, fmt: str, foreign: bytes
) -> None:
    out = tmp_path / f"table.{fmt}"
    _kept_unless_forced(["report", run, "-f", fmt, "-o", out], out, "--out", foreign)
    first = out.read_text("utf-8").splitlines()[0]
    assert first == {"md": "<!-- lexsem -->", "latex": "% lexsem"}[fmt]


def test_report_tables_in_a_file_are_the_printed_ones_below_the_mark(
    run: Path, tmp_path: Path
) -> None:
    for fmt in ("md", "latex", "csv"):
        code, printed = _cli("report", run, "-f", fmt)
        assert code == 0, printed
        out = tmp_path / f"t.{fmt}"
        assert _cli("report", run, "-f", fmt, "-o", out)[0] == 0
        mark = {"md": "<!-- lexsem -->\n", "latex": "% lexsem\n", "csv": ""}[fmt]
        assert out.read_text("utf-8") == mark + printed


def test_a_csv_table_is_not_recognisable_and_needs_force(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "t.csv"
    assert _cli("report", run, "-f", "csv", "-o", out)[0] == 0
    table = out.read_bytes()
    code, output = _cli("report", run, "-f", "csv", "-o", out)
    assert code == 2 and "was not written by lexsem; pass --force" in output
    assert out.read_bytes() == table
    assert _cli("report", run, "-f", "csv", "-o", out, "--force")[0] == 0


def test_report_html_keeps_a_foreign_page_unless_forced(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    page = b"<!DOCTYPE html>\n<html><head><title>My lab page</title></head></html>\n"
    _kept_unless_forced(["report", run, "--html", out], out, "--html", page)
    assert b'<meta name="generator" content="lexsem ' in out.read_bytes()[:PREFIX_BYTES]


def test_score_answers_json_keeps_a_foreign_file_unless_forced(tmp_path: Path, bench: Path) -> None:
    answers = tmp_path / "a.jsonl"
    answers.write_bytes(ANSWERS)
    out = tmp_path / "scores.json"
    args: list[str | Path] = ["score-answers", answers, "-b", "fixture_pp", "--data-dir", bench,
                              "--json", out]  # fmt: skip
    _kept_unless_forced(args, out, "--json", NOTES)
    saved = json.loads(out.read_text("utf-8"))
    assert next(iter(saved)) == "generator" and saved["generator"] == "lexsem"
    assert saved["accuracy"][0]["prompt"] == "scpp3"


def test_validate_json_keeps_a_foreign_file_unless_forced(tmp_path: Path, bench: Path) -> None:
    out = tmp_path / "health.json"
    args: list[str | Path] = ["validate", f"scpp:{bench / 'fixture_pp' / 'swap_obj.json'}",
                              "--json", out]  # fmt: skip
    _kept_unless_forced(args, out, "--json", DRAFT)
    saved = json.loads(out.read_text("utf-8"))
    assert next(iter(saved)) == "generator" and saved["item_kind"] == "triplet"


def test_a_link_to_a_foreign_file_is_refused_and_the_file_kept(run: Path, tmp_path: Path) -> None:
    paper = tmp_path / "paper.tex"
    paper.write_bytes(DRAFT)
    link = tmp_path / "table.tex"
    link.symlink_to(paper)
    code, output = _cli("report", run, "-f", "latex", "-o", link)
    assert code == 2 and "exists and was not written by lexsem" in output
    assert paper.read_bytes() == DRAFT and link.is_symlink()


def test_what_counts_as_lexsems_own(tmp_path: Path) -> None:
    def file(name: str, data: bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    assert written_by_lexsem(file("empty.json", b""))  # nothing to lose
    assert written_by_lexsem(file("a.json", b'{\n  "generator": "lexsem",\n  "x": 1\n}'))
    assert written_by_lexsem(file("a.jsonl", b'{"generator": "lexsem", "id": 0}\n'))
    assert written_by_lexsem(file("t.md", b"<!-- lexsem -->\n| a |\n"))
    assert written_by_lexsem(file("t.tex", b"% lexsem\n\\begin{tabular}\n"))
    assert not written_by_lexsem(file("notes.json", NOTES))  # the mark must open the file
    assert not written_by_lexsem(file("answers.jsonl", ANSWERS))  # a user's answers: no mark
    assert not written_by_lexsem(file("t.csv", b"model,acc\nclip,0.5\n"))
    assert not written_by_lexsem(file("x.md", b"# notes\n<!-- lexsem -->\n"))
    assert not written_by_lexsem(file("bin", b"\xff\xfe\x00garbage"))
    # the HTML mark is looked for in the first PREFIX_BYTES bytes only
    far = b"<!DOCTYPE html>\n<head>" + b" " * PREFIX_BYTES + b'<meta name="generator" '
    assert not written_by_lexsem(file("far.html", far + b'content="lexsem 1.0">'))
    near = b'<!DOCTYPE html>\n<head><meta name="generator" content="lexsem 1.0">'
    assert written_by_lexsem(file("near.html", near))
    assert not written_by_lexsem(file("other.html", near.replace(b"lexsem", b"pandoc")))


@where_permission_bits_apply
def test_a_pipe_or_an_unreadable_file_is_not_lexsems(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert not written_by_lexsem(fifo)  # never opened: reading a pipe would wait forever
    secret = tmp_path / "secret.json"
    secret.write_bytes(b'{"generator": "lexsem"}')
    secret.chmod(0o200)
    try:
        assert not os.access(secret, os.R_OK)
        assert not written_by_lexsem(secret)
        with pytest.raises(Exception, match="was not written by lexsem"):
            check_output_file(secret)
        check_output_file(secret, force=True)
    finally:
        secret.chmod(0o600)
