"""Tests of permission bits (a read-only folder, an unreadable file) where the bits bind.

Root reads and writes whatever the bits say, through CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH.
A test decorated with `where_permission_bits_apply` runs as it is when this process lacks both
(not root, or root without them); as root with them, the test is run again in a child pytest
without them: `setpriv --bounding-set=-dac_override,-dac_read_search --inh-caps=...` (root
keeps its uid and owns its temporary files, but the bits bind it), or else as the unprivileged
user `nobody` (`setpriv --reuid=65534 --regid=65534 --clear-groups`). The test's outcome is the
child's. When neither is possible the test fails in CI and skips elsewhere
(`builders.backends.require`).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from builders.backends import require

REPO = Path(__file__).resolve().parents[2]
DAC_OVERRIDE, DAC_READ_SEARCH = 1, 2  # capability numbers (linux/capability.h)
DROP = "-dac_override,-dac_read_search"
NOBODY = 65534

F = TypeVar("F", bound=Callable[..., Any])


def effective_caps(status: str | None = None) -> int:
    """This process's effective capabilities (`CapEff` of /proc/self/status; 0 where there is
    no such file)."""
    if status is None:
        try:
            status = Path("/proc/self/status").read_text(encoding="ascii")
        except OSError:
            return 0
    found = re.search(r"^CapEff:\s*([0-9a-fA-F]+)$", status, re.M)
    return int(found.group(1), 16) if found else 0


def permission_bits_apply() -> bool:
    """Whether permission bits bind this process: not root, or root without
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH."""
    if os.geteuid() != 0:
        return True
    caps = effective_caps()
    return not caps & (1 << DAC_OVERRIDE | 1 << DAC_READ_SEARCH)


def _works(prefix: list[str]) -> bool:
    probe = "import os, sys; from builders.privileges import permission_bits_apply as p; " \
            "sys.exit(0 if p() else 1)"  # fmt: skip
    env = {**os.environ, "PYTHONPATH": _pythonpath()}
    try:
        done = subprocess.run([*prefix, sys.executable, "-c", probe], env=env, cwd=REPO / "tests",
                              capture_output=True, timeout=60)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _pythonpath() -> str:
    parts = [str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


@functools.cache
def dropping_prefix() -> tuple[str, ...] | None:
    """The command prefix that runs a program where permission bits bind, or None."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    for prefix in (
        [setpriv, f"--bounding-set={DROP}", f"--inh-caps={DROP}"],
        [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"],
    ):
        if _works(prefix):
            return tuple(prefix)
    return None


def _current_test() -> str:
    """The node id of the test running now (`tests/test_x.py::test_y[param]`)."""
    return os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]


def rerun_where_permission_bits_apply(nodeid: str) -> None:
    """Run test `nodeid` in a child pytest where permission bits bind; pass, skip or fail as
    it did."""
    prefix = dropping_prefix()
    require(
        prefix is not None,
        "running as root with CAP_DAC_OVERRIDE, and setpriv (util-linux) can neither drop it "
        "nor run the test as nobody",
    )
    assert prefix is not None
    basetemp = Path(tempfile.mkdtemp(prefix="lexsem-unprivileged-"))
    if any(arg.startswith("--reuid") for arg in prefix):
        os.chown(basetemp, NOBODY, NOBODY)
    env = {**os.environ, "PYTHONPATH": _pythonpath(), "HOME": str(basetemp)}
    env.pop("PYTEST_CURRENT_TEST", None)
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
             "--basetemp", str(basetemp / "t"), nodeid],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    finally:
        shutil.rmtree(basetemp, ignore_errors=True)
    out = done.stdout + done.stderr
    shown = f"{nodeid} under {' '.join(prefix)}:\n{out[-4000:]}"
    if done.returncode == 0 and re.search(r"\b1 passed\b", out):
        return
    skipped = re.search(r"^SKIPPED \[\d+\] [^:]+:\d+: (.*)$", out, re.M)
    if done.returncode == 0 and skipped:
        pytest.skip(skipped.group(1))
    pytest.fail(shown)


def where_permission_bits_apply(test: F) -> F:
    """Run `test` where permission bits bind (see the module doc)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> Any:
        if permission_bits_apply():
            return test(*args, **kwargs)
        rerun_where_permission_bits_apply(_current_test())
        return None

    return run  # type: ignore[return-value]
