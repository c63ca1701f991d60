"""Check that an environment holds exactly what a lock file pins (`make` runs it after each
install from locks/; tests/test_lock.py runs it on the test venv).

    python scripts/lock_check.py [--python PYTHON] LOCK

Every requirement of LOCK whose environment marker holds for PYTHON (default: this interpreter)
must be installed at the pinned version; a difference is one line each and exit status 1.
Packages installed beside the lock (pip's, the editable project, ones a user added by hand) are
listed as a note, not an error. Needs only the standard library and `packaging` (pip's own copy
where the interpreter has no other).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

try:
    from packaging.markers import default_environment
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # pragma: no cover - an interpreter with pip only
    from pip._vendor.packaging.markers import default_environment  # type: ignore[no-redef]
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef]

# the installers and the project itself: installed beside every lock, never listed in it
_BESIDE = {"pip", "uv", "lexsem"}


@dataclass(frozen=True)
class Pin:
    name: str  # canonical
    version: str
    marker: str  # "" where it applies everywhere
    hashes: int
    line: int


def read_lock(path: Path) -> list[Pin]:
    """The pins of a `uv pip compile --generate-hashes` (or pip-compile) output file."""
    pins: list[Pin] = []
    logical, start = "", 0
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, raw in enumerate([*lines, ""], start=1):
        text = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not logical:
            start = number
        if text.endswith("\\"):
            logical += text[:-1] + " "
            continue
        logical += text
        if logical.strip():
            pins.append(_pin(path, start, logical))
        logical = ""
    return pins


def _pin(path: Path, line: int, logical: str) -> Pin:
    parts = logical.split()
    hashes = sum(1 for p in parts if p.startswith("--hash="))
    spec = " ".join(p for p in parts if not p.startswith("--hash="))
    req = Requirement(spec)
    exact = [s for s in req.specifier if s.operator == "=="]
    if len(exact) != 1 or len(req.specifier) != 1:
        raise SystemExit(f"{path}:{line}: {spec!r} is not one exact pin (name==version)")
    return Pin(canonicalize_name(req.name), exact[0].version, str(req.marker or ""), hashes, line)


def applies(pin: Pin, env: dict[str, str]) -> bool:
    if not pin.marker:
        return True
    return Requirement(f"{pin.name}; {pin.marker}").marker.evaluate(env)  # type: ignore[union-attr]


_PROBE = """
import json, platform, sys
from importlib import metadata
try:
    from packaging.markers import default_environment
except ImportError:
    from pip._vendor.packaging.markers import default_environment
dists = {}
for d in metadata.distributions():
    name = d.metadata["Name"]
    if name:
        dists[name] = d.version
print(json.dumps({"env": default_environment(), "dists": dists}))
"""


def installed(python: str) -> tuple[dict[str, str], dict[str, str]]:
    """The marker environment and {canonical name: version} of the interpreter `python`."""
    if python == sys.executable:
        from importlib import metadata

        dists = {d.metadata["Name"]: d.version for d in metadata.distributions()}
        env = dict(default_environment())
    else:
        out = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, check=True)
        data = json.loads(out.stdout)
        env, dists = data["env"], data["dists"]
    return env, {canonicalize_name(n): v for n, v in dists.items() if n}


def differences(pins: list[Pin], env: dict[str, str], have: dict[str, str]) -> list[str]:
    """One line per pin that applies here and is missing or at another version."""
    out = []
    for pin in pins:
        if not applies(pin, env):
            continue
        got = have.get(pin.name)
        if got is None:
            out.append(f"{pin.name}=={pin.version}: not installed")
        elif got != pin.version:
            out.append(f"{pin.name}=={pin.version}: {got} installed")
    return out


def extras(pins: list[Pin], have: dict[str, str]) -> list[str]:
    locked = {p.name for p in pins}
    return sorted(f"{n}=={v}" for n, v in have.items() if n not in locked and n not in _BESIDE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lock", type=Path)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    pins = read_lock(args.lock)
    env, have = installed(args.python)
    wrong = differences(pins, env, have)
    beside = extras(pins, have)
    if beside:
        print(f"note: installed beside {args.lock} (not in it): {', '.join(beside)}")
    if wrong:
        print(f"error: {args.python} does not hold what {args.lock} pins:", file=sys.stderr)
        for line in wrong:
            print(f"  {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
