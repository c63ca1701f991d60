"""The layer map is true and checked: the import-linter contracts hold, docs/design.md draws the
same layers as the contracts, and no module reaches into another package's private names."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "lexsem"


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def _layers() -> list[list[str]]:
    """The layers of the `layers` contract, top first, each a list of module names."""
    (contract,) = [c for c in _contracts() if c["type"] == "layers"]
    return [[m.strip() for m in re.split(r"[|:]", layer)] for layer in contract["layers"]]


def test_import_linter_contracts_hold() -> None:
    """`lint-imports` (import-linter) keeps every contract of pyproject.toml."""
    exe = Path(sys.executable).with_name("lint-imports")
    if not exe.exists():
        pytest.fail(
            f"import-linter is not installed beside {sys.executable} (pip install -e .[test])"
        )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [str(exe), "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    kept = re.search(r"Contracts: (\d+) kept, (\d+) broken", done.stdout)
    assert kept and int(kept.group(2)) == 0 and int(kept.group(1)) == len(_contracts())


def _design_map() -> list[list[str]]:
    """The layers drawn in docs/design.md between its `layers:begin` / `layers:end` markers:
    each line starts with the layer's modules (`lexsem.x | lexsem.y`), then what it holds."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- layers:begin -->\n```\n(.*?)```\n<!-- layers:end -->", text, re.S)
    assert block, "docs/design.md has no layer map between <!-- layers:begin/end --> markers"
    out = []
    for line in block.group(1).splitlines():
        head = re.match(r"\s*((?:lexsem[\w.]*\s*\|\s*)*lexsem[\w.]*)", line)
        if head:
            out.append([m.strip() for m in head.group(1).split("|")])
    return out


def test_design_map_is_the_contract() -> None:
    """docs/design.md's map lists the contract's layers, in order, with the same members."""
    assert _design_map() == _layers()


def test_every_package_is_in_a_layer() -> None:
    """No top-level package or module of lexsem escapes the layer contract."""
    placed = {m for layer in _layers() for m in layer}
    found = {
        f"lexsem.{p.stem if p.is_file() else p.name}"
        for p in SRC.iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").exists()
    }
    assert sorted(found - placed) == []
    assert sorted(placed - found) == []


# the packages that may import `lexsem.models.backends`: the models package itself (its registry
# and factory), training (the trained towers), and the CLI through those two only
KNOW_BACKENDS = {"lexsem.models", "lexsem.train"}


def test_backends_contract_names_every_other_package() -> None:
    """The `backends` contract forbids concrete backends to every package but the models
    package, training and the CLI; the `backends-cli` contract lets the CLI reach them only
    through those."""
    contracts = {c["id"]: c for c in _contracts()}
    placed = {m for layer in _layers() for m in layer}
    assert contracts["backends"]["forbidden_modules"] == ["lexsem.models.backends"]
    assert sorted(contracts["backends"]["source_modules"]) == sorted(
        placed - KNOW_BACKENDS - {"lexsem.cli"}
    )
    cli = contracts["backends-cli"]
    assert cli["source_modules"] == ["lexsem.cli"]
    assert cli["forbidden_modules"] == ["lexsem.models.backends"]
    assert cli["allow_indirect_imports"] is True


def _package(module: str) -> str:
    """The top-level package of a module: `lexsem.models.backends.clip` -> `lexsem.models`."""
    return ".".join(module.split(".")[:2])


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def private_uses(path: Path) -> list[str]:
    """Private names (`_x`, not dunders) of another lexsem package that the file at `path` uses:
    imported by name, or read as an attribute of an imported lexsem module."""
    module = _module_of(path)
    mine = _package(module)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bound: dict[str, str] = {}  # local name -> the lexsem module it is
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("lexsem.") and a.asname:
                    bound[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, path.name == "__init__.py")
            if not source.startswith("lexsem"):
                continue
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                if private and _package(source) != mine:
                    out.append(f"{module}: from {source} import {a.name} (line {node.lineno})")
                bound[a.asname or a.name] = f"{source}.{a.name}"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and _package(bound[node.value.id]) != mine
        ):
            out.append(f"{module}: {bound[node.value.id]}.{node.attr} (line {node.lineno})")
    return out


def test_no_private_names_across_packages() -> None:
    found = [use for path in sorted(SRC.rglob("*.py")) for use in private_uses(path)]
    assert found == []


def test_the_private_name_check_can_fail(tmp_path: Path) -> None:
    """The check above sees both forms of reaching into another package."""
    pkg = tmp_path / "lexsem" / "train"
    pkg.mkdir(parents=True)
    bad = pkg / "bad.py"
    bad.write_text(
        "from lexsem.models.backends.clip import _pooled\n"
        "from lexsem.benchmarks.sources import synthetic_text as synthetic\n"
        "from lexsem.train.loop import _fine\n"
        "x = synthetic._usable(1)\n"
        "y = synthetic.__name__\n",
        encoding="utf-8",
    )
    global SRC
    saved, SRC = SRC, tmp_path / "lexsem"
    try:
        found = private_uses(bad)
    finally:
        SRC = saved
    assert found == [
        "lexsem.train.bad: from lexsem.models.backends.clip import _pooled (line 1)",
        "lexsem.train.bad: lexsem.benchmarks.sources.synthetic_text._usable (line 4)",
    ]


def test_design_table_names_every_source_file() -> None:
    """docs/design.md's package table names every module of src/lexsem (in its package's row)."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    table = text[text.index("| package | one idea per file |") :]
    table = table[: table.index("\n\n")]
    named = set(re.findall(r"`([\w/]+\.py)`", table))
    missing = [
        str(p.relative_to(SRC))
        for p in sorted(SRC.rglob("*.py"))
        if p.name != "__init__.py" and p.name not in named
    ]
    assert missing == []
