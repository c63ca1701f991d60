"""Plugins (`lexsem.plugins`): the example package installed into a throwaway venv is seen by
every command without any flag; `--plugin` and `LEXSEM_PLUGINS` load a module or a file; a
plugin's entry under a taken name is refused naming both; an installed plugin that fails is one
warning line and the command goes on; a plugin the user named that fails is an error."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lexsem import plugins
from lexsem.benchmarks.user import FORMATS
from lexsem.cli import app
from lexsem.errors import LexsemError
from lexsem.models.aliases import ALIASES
from lexsem.models.backend_registry import BACKENDS
from lexsem.sweep.executors import EXECUTORS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "examples" / "lexsem-example-plugin"
CLI = "from lexsem.cli import app; app()"

EXECUTOR_PLUGIN = """
from lexsem.sweep.executors import EXECUTORS
from lexsem.sweep.executors.base import Executor


class Backwards(Executor):
    \"\"\"Runs nothing (a test's plugin).\"\"\"

    def run(self, jobs, ctx):
        pass


EXECUTORS.add({name!r}, Backwards())
"""


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No plugin loaded yet, no installed entry point; the registries, `sys.path`,
    `LEXSEM_PLUGINS` and the plugins' modules restored afterwards."""
    monkeypatch.setattr(plugins, "_plugins", {})
    monkeypatch.setattr(plugins, "_started", False)
    monkeypatch.setattr(plugins, "_entry_points", lambda: [])
    monkeypatch.setenv(plugins.ENV, "")
    monkeypatch.setattr(sys, "path", list(sys.path))
    for registry in (EXECUTORS, BACKENDS, ALIASES, FORMATS):
        for attr in ("_entries", "_loaded", "_origins"):
            monkeypatch.setattr(registry, attr, dict(getattr(registry, attr)))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name.startswith("plug_"):
            del sys.modules[name]


def _plugin(folder: Path, stem: str, executor: str) -> Path:
    path = folder / f"{stem}.py"
    path.write_text(EXECUTOR_PLUGIN.format(name=executor))
    return path


def test_plugin_option_loads_a_file_by_path(fresh: None, tmp_path: Path) -> None:
    path = _plugin(tmp_path, "plug_path", "backwards")
    assert "backwards" not in EXECUTORS
    res = CliRunner().invoke(app, ["--plugin", str(path), "list", "executors"])
    assert res.exit_code == 0, res.output
    line = next(x for x in res.stdout.splitlines() if x.startswith("backwards "))
    assert f"Runs nothing (a test's plugin) (plugin: {path})" in line
    assert EXECUTORS.origin("backwards") is not None
    # its worker processes inherit it
    assert plugins.split_env(os.environ[plugins.ENV]) == [str(path)]
    listed = CliRunner().invoke(app, ["list", "plugins"]).stdout.splitlines()
    assert listed[0].split() == [str(path), str(path), "(--plugin)"]
    assert listed[1:] == ["  executor: backwards"]


def test_lexsem_plugins_loads_modules_and_files(fresh: None, tmp_path: Path) -> None:
    _plugin(tmp_path, "plug_env_module", "by_module")
    path = _plugin(tmp_path, "plug_env_file", "by_file")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(tmp_path)]),
        plugins.ENV: f"plug_env_module{os.pathsep}{path}",
    }
    res = subprocess.run(
        [sys.executable, "-c", CLI, "list", "plugins"],
        env=env, capture_output=True, text=True, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [
        f"{'plug_env_module':24s} plug_env_module (LEXSEM_PLUGINS)",
        "  executor: by_module",
        f"{path!s:24s} {path} (LEXSEM_PLUGINS)",
        "  executor: by_file",
    ]


def test_a_taken_name_is_refused_naming_both(fresh: None, tmp_path: Path) -> None:
    builtin = _plugin(tmp_path, "plug_takes_local", "local")
    res = CliRunner().invoke(app, ["--plugin", str(builtin), "list", "executors"])
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [
        f"error: plugin {str(builtin)!r} (--plugin) cannot be loaded: LexsemError: executor "
        f"'local' of plugin {str(builtin)!r} (--plugin) is refused: the name is already taken "
        "by lexsem (built in)"
    ]
    first = _plugin(tmp_path, "plug_first", "twice")
    second = _plugin(tmp_path, "plug_second", "twice")
    plugins.load([str(first)], "LEXSEM_PLUGINS")
    with pytest.raises(LexsemError) as err:
        plugins.load([str(second)], "grid plugins")
    assert (
        f"executor 'twice' of plugin {str(second)!r} (grid plugins) is refused: the name is "
        f"already taken by plugin {str(first)!r} (LEXSEM_PLUGINS)"
    ) in str(err.value)
    assert EXECUTORS.origin("twice").name == str(first)  # type: ignore[union-attr]


def test_an_installed_plugin_that_fails_is_one_line_and_the_command_goes_on(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _plugin(tmp_path, "plug_good", "good_one")
    # registers an entry, then fails: the entry it added is removed
    (tmp_path / "plug_half.py").write_text(
        EXECUTOR_PLUGIN.format(name="half_done") + "\nraise RuntimeError('half done')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    group = plugins.ENTRY_POINT_GROUP
    points = [
        EntryPoint("broken", "plug_no_such_module", group),
        EntryPoint("good", "plug_good", group),
        EntryPoint("half", "plug_half", group),
    ]
    monkeypatch.setattr(plugins, "_entry_points", lambda: points)
    res = CliRunner().invoke(app, ["list", "executors"])
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines() == [
        "warning: plugin 'broken' (entry point) not loaded, going on without it: "
        "ModuleNotFoundError: No module named 'plug_no_such_module'",
        "warning: plugin 'half' (entry point) not loaded, going on without it: "
        "RuntimeError: half done",
    ]
    names = [line.split()[0] for line in res.stdout.splitlines()]
    assert "good_one" in names and "half_done" not in names and "local" in names
    assert "half_done" not in EXECUTORS


@pytest.mark.parametrize(
    ("line", "what", "listing"),
    [
        ('register_alias("minilm", "st:org/other")', "model alias 'minilm'", "models"),
        ('register_format("scpp", "word_swaps", "m:parse", ".txt")',
         "benchmark file format 'scpp'", "formats"),
    ],
)  # fmt: skip
def test_a_plugin_alias_or_format_under_a_taken_name_is_refused_naming_both(
    fresh: None, tmp_path: Path, line: str, what: str, listing: str
) -> None:
    path = tmp_path / "plug_taken_alias.py"
    path.write_text(
        "from lexsem.benchmarks.user import register_format\n"
        f"from lexsem.models.aliases import register_alias\n\n{line}\n"
    )
    res = CliRunner().invoke(app, ["--plugin", str(path), "list", listing])
    assert res.exit_code == 2
    assert res.stderr.splitlines() == [
        f"error: plugin {str(path)!r} (--plugin) cannot be loaded: LexsemError: {what} of "
        f"plugin {str(path)!r} (--plugin) is refused: the name is already taken by lexsem "
        "(built in)"
    ]
    assert ALIASES.get("minilm").spec == "st:sentence-transformers/all-MiniLM-L6-v2"
    assert FORMATS.origin("scpp") is None


@pytest.mark.parametrize("how", ["--plugin", "env", "grid"])
def test_a_plugin_the_user_named_that_fails_is_an_error(
    fresh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_text('plugins = ["plug_missing"]\n[[block]]\nmodels = ["x"]\nbenchmarks = ["y"]\n')
    if how == "--plugin":
        args = ["--plugin", "plug_missing", "list", "executors"]
        where = "--plugin"
    elif how == "env":
        monkeypatch.setenv(plugins.ENV, "plug_missing")
        args, where = ["list", "executors"], "LEXSEM_PLUGINS"
    else:
        args, where = ["sweep", str(grid), "-o", str(tmp_path / "out")], "grid plugins"
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert res.stderr.splitlines() == [
        f"error: plugin 'plug_missing' ({where}) cannot be loaded: ModuleNotFoundError: No "
        "module named 'plug_missing'"
    ]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway venv seeing this checkout's lexsem and the test venv's packages, with the
    example plugin package installed as a user would (pip, from its folder)."""
    folder = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "lexsem-checkout.pth").write_text(
        f"{ROOT / 'src'}\n{sysconfig.get_paths()['purelib']}\n"
    )
    source = tmp_path_factory.mktemp("package") / PACKAGE.name  # the checkout stays unwritten
    shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    return python


def _lexsem(python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", plugins.ENV)}
    res = subprocess.run(
        [python, "-c", CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, f"lexsem {' '.join(args)}:\n{res.stdout}\n{res.stderr}"
    return res


def test_the_installed_example_plugin_is_seen_by_every_command(venv: Path, tmp_path: Path) -> None:
    listed = _lexsem(venv, tmp_path, "list", "plugins").stdout.splitlines()
    assert listed == [
        f"{'example':24s} lexsem_example_plugin (entry point of lexsem-example-plugin 0.1.0)",
        "  model backend: bow",
        "  benchmark: word_swaps",
        "  task: anchor_p2",
        "  stage: shout_captions",
        "  study kind: plausible",
        "  executor: reverse",
        "  paper table: word_swaps_table",
        "  model alias: bow-16",
        "  benchmark file format: swaps",
    ]
    for what, name in [("backends", "bow:NAME"), ("benchmarks", "word_swaps:"),
                       ("tasks", "anchor_p2"), ("stages", "shout_captions"),
                       ("kinds", "plausible"), ("executors", "reverse"),
                       ("tables", "word_swaps_table"), ("models", "bow-16 "),
                       ("formats", "swaps:PATH")]:  # fmt: skip
        out = _lexsem(venv, tmp_path, "list", what).stdout.splitlines()
        (line,) = [x for x in out if x.startswith(name)]
        assert line.endswith("(plugin: example)"), (what, line)
        assert sum("(plugin:" in x for x in out) == 1, what

    # eval: the plugin's backend on the plugin's benchmark, its own task run by default
    _lexsem(venv, tmp_path, "eval", "-m", "bow:x", "-b", "word_swaps", "--n-boot", "0",
            "-o", "run", "-q")  # fmt: skip
    import json

    record = json.loads((tmp_path / "run" / "run.json").read_text())
    got = {(r["task"], r["subset"]): r["accuracy"] for r in record["results"]}
    # a bag of words ties a word swap with its positive; a replaced word it prefers to a
    # paraphrase of other words
    assert got[("tot", "swap")] == 0.0 and got[("anchor_p2", "replace")] == 100.0

    # eval: the plugin's alias on a user's file in the plugin's format (one subset, the file's)
    (tmp_path / "mine.txt").write_text(
        "a dog chases a cat | a cat is chased by a dog | a cat chases a dog\n"
        "two people ride bikes | a pair of cyclists ride along | two people push bikes\n"
    )
    _lexsem(venv, tmp_path, "eval", "-m", "bow-16", "-b", "swaps:mine.txt", "--n-boot", "0",
            "-o", "mine", "-q")  # fmt: skip
    mine = json.loads((tmp_path / "mine" / "run.json").read_text())
    assert {(r["task"], r["subset"]) for r in mine["results"]} == {
        ("tot", "mine"), ("anchor_p2", "mine")
    }  # fmt: skip
    assert mine["model"]["spec"] == "bow-16"
    assert mine["model"]["fingerprint"] == {"backend": "bow", "name": "example", "dim": 16}

    # lexsem.evaluate from Python sees the entry point too
    code = (
        "import lexsem; r = lexsem.evaluate('bow:x', ['word_swaps/swap'], n_boot=0); "
        "print(sorted({x.task for x in r.record.results}))"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", plugins.ENV)}
    res = subprocess.run([venv, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert res.stdout.strip() == "['anchor_p2', 'tot']"

    # build: a recipe using the plugin's stage
    (tmp_path / "captions.jsonl").write_text(
        '{"id": "a", "caption": "A dog chases a ball."}\n{"id": "b", "caption": "Cats."}\n'
    )
    (tmp_path / "shout.toml").write_text(textwrap.dedent("""\
        name = "shout"
        [input]
        path = "captions.jsonl"
        [[stages]]
        use = "shout_captions"
        """))  # fmt: skip
    _lexsem(venv, tmp_path, "build", "shout.toml", "-o", "built", "-q")
    import pyarrow.parquet as pq

    rows = pq.read_table(tmp_path / "built" / "stages" / "01-shout_captions.parquet").to_pylist()
    assert [(r["caption"], r["rejected"]) for r in rows] == [
        ("A DOG CHASES A BALL.", None), ("CATS.", "too short")
    ]  # fmt: skip

    # annotate: a study of the plugin's kind
    made = _lexsem(venv, tmp_path, "annotate", "create", "s.sqlite", "-b", "word_swaps/swap",
                   "-k", "plausible")  # fmt: skip
    assert "admin:" in made.stdout
    import sqlite3

    con = sqlite3.connect(tmp_path / "s.sqlite")
    kinds = {k for (k,) in con.execute("SELECT kind FROM units")}
    con.close()
    assert kinds == {"plausible"}

    # sweep: the plugin's executor, its jobs in reverse order
    (tmp_path / "grid.toml").write_text(textwrap.dedent("""\
        [defaults]
        n_boot = 0
        cache_dir = "cache"
        [groups]
        bows = ["bow:a", "bow:b?dim=16"]
        [[block]]
        groups = ["bows"]
        benchmarks = ["word_swaps"]
        """))  # fmt: skip
    swept = _lexsem(venv, tmp_path, "sweep", "grid.toml", "-o", "sw", "--executor", "reverse")
    done = [x.split()[1] for x in swept.stderr.splitlines() if x.startswith("done ")]
    assert [d.split("__")[0] for d in done] == ["bow-b-dim-16", "bow-a"]

    # reproduce: the plugin's paper table, run and compared
    _lexsem(venv, tmp_path, "reproduce", "word_swaps_table", "-o", "rep", "-q")
    comparison = (tmp_path / "rep" / "comparison.csv").read_text()
    assert "Bag of words" in comparison and "Replace" in comparison


def test_the_doc_shows_the_example_package() -> None:
    """docs/extending.md shows the example package's registrations and entry point as they are."""
    doc = (ROOT / "docs" / "extending.md").read_text()
    init = PACKAGE / "src" / "lexsem_example_plugin" / "__init__.py"
    assert init.read_text() in doc
    assert '[project.entry-points."lexsem.plugins"]\nexample = "lexsem_example_plugin"' in doc
    assert (
        '[project.entry-points."lexsem.plugins"]\nexample = "lexsem_example_plugin"'
        in (PACKAGE / "pyproject.toml").read_text()
    )
