"""The test suite's own layout: shared code lives in tests/builders/, test modules never import
one another, and every builder module imports without the optional backends (torch,
torchvision, open_clip): the marker `torch` and tests/conftest.py decide skip or fail."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent
BUILDERS = TESTS / "builders"
# modules directly in tests/ (test modules and conftest): never imported by another module
LOCAL = {p.stem for p in TESTS.glob("*.py")}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, top-level module name) of every absolute import in the file, nested ones too."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name.split(".")[0]) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module.split(".")[0]))
    return out


def test_no_module_imports_a_test_module_or_conftest() -> None:
    files = sorted(TESTS.glob("*.py")) + sorted(BUILDERS.glob("*.py"))
    assert len(files) > 50
    bad = [
        f"{f.relative_to(TESTS)}:{line} imports {name}"
        for f in files
        for line, name in imported_modules(f)
        if name in LOCAL
    ]
    assert not bad, "shared code belongs in tests/builders/:\n" + "\n".join(bad)


def test_the_layout_check_sees_nested_imports(tmp_path: Path) -> None:
    module = tmp_path / "test_x.py"
    module.write_text("def f():\n    from test_models_dual import write_clip\n")
    assert imported_modules(module) == [(2, "test_models_dual")]


BLOCK = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "torchvision", "open_clip"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Block())
import importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
assert "torch" not in sys.modules
"""


def test_every_builder_imports_without_torch() -> None:
    names = [f"builders.{p.stem}" for p in sorted(BUILDERS.glob("*.py")) if p.stem != "__init__"]
    assert "builders.tiny_vlms_other" in names
    done = subprocess.run(
        [sys.executable, "-c", BLOCK, *names],
        cwd=TESTS,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        },
    )
    assert done.returncode == 0, done.stderr[-2000:]
