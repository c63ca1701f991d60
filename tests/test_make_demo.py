"""`make demo` prints one results table, as README's quick start says: the lexsem commands of the
Makefile's `demo` recipe are run here, in order, with the recipe's own arguments (MiniLM on the
generated `synthetic` benchmark; the run folder moved under the test's folder)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lexsem.cli import app

ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = ROOT / "Makefile"
TABLE_HEADER = re.compile(r"^\| model \|", re.MULTILINE)
runner = CliRunner()


def recipe(makefile: str, target: str) -> list[str]:
    """The command lines of `target`'s recipe (the tab-indented lines after `target:`)."""
    lines = makefile.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        out.append(line.strip())
    return out


def lexsem_commands(lines: list[str]) -> list[tuple[dict[str, str], list[str]]]:
    """(environment, arguments) of each `$(BIN)/lexsem ...` line; any other line is refused
    (the test would not run it)."""
    out = []
    for line in lines:
        words = shlex.split(line)
        env = {}
        while words and re.match(r"^[A-Z_]+=", words[0]):
            key, _, value = words.pop(0).partition("=")
            env[key] = value
        assert words and words[0] == "$(BIN)/lexsem", f"not a lexsem command: {line}"
        out.append((env, words[1:]))
    return out


def test_the_demo_recipe_is_read() -> None:
    commands = lexsem_commands(
        ["HF_HUB_OFFLINE=1 $(BIN)/lexsem eval -m minilm", "$(BIN)/lexsem report r"]
    )
    assert commands == [({"HF_HUB_OFFLINE": "1"}, ["eval", "-m", "minilm"]), ({}, ["report", "r"])]
    twice = "demo: x\n\tA=1 $(BIN)/lexsem eval\n\t$(BIN)/lexsem report\n\nother:\n\tz\n"
    assert recipe(twice, "demo") == ["A=1 $(BIN)/lexsem eval", "$(BIN)/lexsem report"]


def test_make_demo_prints_one_results_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm_path: Path
) -> None:
    commands = lexsem_commands(recipe(MAKEFILE.read_text(encoding="utf-8"), "demo"))
    assert commands, "the demo recipe runs no lexsem command"
    monkeypatch.chdir(tmp_path)  # its run folder (runs/demo) is made here
    printed = ""
    for env, args in commands:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        printed += result.stdout
    assert len(TABLE_HEADER.findall(printed)) == 1, printed
    assert "| minilm |" in printed
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"make demo .*prints (its|a) results table", readme)
