"""No test reaches outside the repository by default: what lives elsewhere (the public data, the
papers' texts, the reference checkouts) is named by an environment variable
(`LEXSEM_TEST_DATA`, `LEXSEM_PAPERS`, `LEXSEM_REFERENCES`: docs/testing.md), never by a path
written in a test, nor by climbing above the repository from a test file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).parent
ROOT = TESTS.parent
# this machine's workspace and its mirrors of other repositories (other absolute paths in tests
# are data: a path shown, a path refused)
OUTSIDE = re.compile(r"^/work(/|$)|/\.mirror/")
ENV_GET = ("os.environ.get", "environ.get", "os.getenv", "getenv")


def outside_paths(path: Path, root: Path) -> list[str]:
    """Where the test file at `path` names a place outside `root`: a string naming this
    machine's workspace, an environment variable whose default is an absolute path, or
    `Path(__file__).parents[N]` / `.parent` chains above `root`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if OUTSIDE.search(node.value) and "\n" not in node.value:
                out.append(f"{path.name}:{node.lineno} {node.value!r}")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ENV_GET:
            default = node.args[1] if len(node.args) > 1 else None
            if isinstance(default, ast.Constant) and str(default.value).startswith("/"):
                out.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        elif isinstance(node, (ast.Subscript, ast.Attribute)):
            up = _levels_above_file(node)
            if up is not None and not _inside(path, up, root):
                out.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    return sorted(out, key=lambda hit: int(hit.split(":")[1].split()[0]))


def _levels_above_file(node: ast.AST) -> int | None:
    """N for `Path(__file__)...parents[N]` (or N `.parent`s), else None."""
    levels = 0
    while True:
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
            if node.value.attr != "parents" or not isinstance(node.slice, ast.Constant):
                return None
            levels += int(node.slice.value) + 1
            node = node.value.value
        elif isinstance(node, ast.Attribute) and node.attr == "parent":
            levels += 1
            node = node.value
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr == "resolve":
                node = node.func.value
                continue
            if not node.args:
                return None
            first = node.args[0]
            is_file = isinstance(first, ast.Name) and first.id == "__file__"
            return levels if is_file and levels else None
        elif isinstance(node, ast.Attribute) and node.attr == "resolve":
            node = node.value
        else:
            return None


def _inside(path: Path, up: int, root: Path) -> bool:
    target = path.resolve()
    for _ in range(up):
        target = target.parent
    return target == root.resolve() or root.resolve() in target.parents


def test_no_test_defaults_to_a_path_outside_the_repository() -> None:
    files = sorted(TESTS.glob("*.py")) + sorted((TESTS / "builders").glob("*.py"))
    files.remove(Path(__file__))  # its planted case below
    found = [hit for f in files for hit in outside_paths(f, ROOT)]
    assert found == []


def test_the_check_sees_paths_outside(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    tests = root / "tests" / "builders"
    tests.mkdir(parents=True)
    bad = tests / "test_x.py"
    bad.write_text(
        "from pathlib import Path\n"
        'A = Path("/work/.mirror/IMirandaM+BiVLC/repo")\n'
        'B = Path(__file__).resolve().parents[3] / "shared"\n'
        "C = Path(__file__).parent.parent.parent.parent\n"
        'D = Path(__file__).resolve().parents[2] / ".references"\n'  # the repository: fine
        'E = "../../etc/passwd"\n'  # a path-safety case: fine
        'F = os.environ.get("LEXSEM_X", "/nonexistent")\n',
        encoding="utf-8",
    )
    assert outside_paths(bad, root) == [
        "test_x.py:2 '/work/.mirror/IMirandaM+BiVLC/repo'",
        "test_x.py:3 Path(__file__).resolve().parents[3]",
        "test_x.py:4 Path(__file__).parent.parent.parent.parent",
        "test_x.py:7 os.environ.get('LEXSEM_X', '/nonexistent')",
    ]
