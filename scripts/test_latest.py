"""`make test-latest` and `make test-lowest`: the suite on the newest (or the oldest allowed)
releases, and what moved against the locks.

    python scripts/test_latest.py --work DIR [--lowest] [-- PYTEST_ARGS...]

Newest (the default): two throwaway venvs under DIR, resolved on the day by pip (as a user's
`pip install` would, within pyproject.toml's ranges and the machine's own pip settings):
- DIR/venv: lexsem with the extras `make` installs (test, web, openclip), editable;
- DIR/labelstudio: the requirements of locks/labelstudio.in (Label Studio's version and our
  constraints on its packages), for tests/test_labelstudio_real.py.
`--lowest`: DIR/venv only, from uv's `--resolution lowest-direct` (each of lexsem's direct
dependencies at the lower bound of its range in pyproject.toml, the rest resolved to fit);
Label Studio is the locked one (.peer-labelstudio).
Then prints every package whose version differs from requirements.txt (and
locks/labelstudio.txt), runs pytest in DIR/venv (all of tests/, or PYTEST_ARGS), and prints
the tests that failed. Exit status: 0 where no test failed, 1 where some did, 2 where a venv
could not be built. Not part of `make test` or CI (docs/testing.md, "The locked environment").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lock_check import Pin, applies, installed, read_lock

REPO = Path(__file__).resolve().parents[1]
LOCKS = REPO / "locks"
EXTRAS = "test,web,openclip"
# tests/test_lock.py's check that the venv holds the lock does not apply to this venv
UNLOCKED = {"LEXSEM_UNLOCKED": "1"}


def _run(cmd: list[str], **kw: object) -> None:
    print("+ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


def fresh_venv(path: Path, python: str) -> Path:
    """A new venv at `path` (an older one there is removed: it is a throwaway)."""
    if path.exists():
        shutil.rmtree(path)
    _run([python, "-m", "venv", str(path)])
    py = path / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", "--upgrade", "pip"])
    return py


def drift(lock: Path, python: Path) -> list[str]:
    """`name: locked -> now` for each package of `lock` (applying here) that moved, was added
    or went, in the venv of `python`."""
    env, have = installed(str(python))
    pins: dict[str, Pin] = {p.name: p for p in read_lock(lock) if applies(p, env)}
    lines = []
    for name in sorted(set(pins) | set(have)):
        if name in {"pip", "lexsem"}:
            continue
        old = pins[name].version if name in pins else None
        new = have.get(name)
        if old != new:
            lines.append(f"{name}: {old or '(not in the lock)'} -> {new or '(not installed)'}")
    return lines


def failed_tests(junit: Path) -> list[str]:
    """The node ids of the tests that failed or errored in a pytest JUnit XML report."""
    if not junit.is_file():
        return []
    broken = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            path = case.get("classname", "").replace(".", "/")
            broken.append(f"{path}.py::{case.get('name')}")
    return broken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, required=True, help="folder for the throwaway venvs")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the venvs")
    parser.add_argument("--lowest", action="store_true", help="the lower bounds, not the newest")
    parser.add_argument("--uv", default=str(REPO / ".lock-tools" / "bin" / "uv"),
                        help="uv, for --lowest (make lock's)")  # fmt: skip
    parser.add_argument("pytest_args", nargs="*", help="after --: what pytest runs")
    args = parser.parse_args(argv)
    work = args.work.resolve()
    if work == REPO or REPO.is_relative_to(work):
        parser.error(f"--work {work} would hold the checkout; name a folder of its own")
    work.mkdir(parents=True, exist_ok=True)
    labelstudio = REPO / ".peer-labelstudio" if args.lowest else work / "labelstudio"
    try:
        py = fresh_venv(work / "venv", args.python)
        if args.lowest:
            resolved = work / "lowest.txt"
            extras = [f"--extra={e}" for e in EXTRAS.split(",")]
            _run([args.uv, "pip", "compile", "-q", "--resolution", "lowest-direct",
                  "--python", str(py), "pyproject.toml", *extras, "-o", str(resolved)],
                 cwd=REPO, env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"})  # fmt: skip
            _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "-r", str(resolved)])
            _run([str(py), "-m", "pip", "install", "-q", "--no-deps", "-e", str(REPO)])
        else:
            _run([str(py), "-m", "pip", "install", "-q", "-e", f"{REPO}[{EXTRAS}]"])
            ls_py = fresh_venv(labelstudio, args.python)
            _run([str(ls_py), "-m", "pip", "install", "-q", "-r", str(LOCKS / "labelstudio.in")])
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"error: could not build the venvs: {exc}", file=sys.stderr)
        return 2

    moved = {"requirements.txt": drift(REPO / "requirements.txt", py)}
    if not args.lowest:
        moved["locks/labelstudio.txt"] = drift(LOCKS / "labelstudio.txt", ls_py)
    junit = work / "junit.xml"
    junit.unlink(missing_ok=True)
    env = {**os.environ, **UNLOCKED, "HF_HUB_OFFLINE": "1",
           "LEXSEM_PEER_LABELSTUDIO": str(labelstudio)}  # fmt: skip
    pytest = [str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
              *(args.pytest_args or [])]  # fmt: skip
    print("+ " + " ".join(pytest), flush=True)
    code = subprocess.run(pytest, cwd=REPO, env=env).returncode
    broken = failed_tests(junit)

    name = "test-lowest" if args.lowest else "test-latest"
    print(f"\n== {name}: what moved against the locks ==")
    for lock, lines in moved.items():
        print(f"{lock}: {len(lines)} package(s) differ" + (":" if lines else ""))
        for line in lines:
            print(f"  {line}")
    print(f"== {name}: {len(broken)} test(s) broke (pytest exit status {code}) ==")
    for node in broken:
        print(f"  {node}")
    if code not in (0, 1) and not broken:
        print("  pytest did not finish its run: see its output above")
        return 1
    return 1 if broken or code else 0


if __name__ == "__main__":
    sys.exit(main())
