"""The locked environment (docs/testing.md, "The locked environment"): every lock pins exact
versions with hashes and satisfies its inputs (pyproject.toml's ranges, locks/*.in) on x86_64
and aarch64; `make` installs only from the locks; the test venv holds exactly requirements.txt;
scripts/lock_check.py and scripts/test_latest.py on hand-made cases; run.json records what
rebuilds the environment."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from lexsem.results.build import RECORDED_PACKAGES, environment

ROOT = Path(__file__).resolve().parents[1]
MAIN = "requirements.txt"  # the test venv's lock
# each lock and the inputs it is resolved from (`make lock`), relative to the checkout
LOCK_INPUTS = {
    MAIN: ["requirements.in"],
    "locks/labelstudio.txt": ["locks/labelstudio.in"],
    "locks/peer-t2v.txt": ["locks/peer-t2v.in"],
    "locks/peer-clip-benchmark.txt": ["locks/peer-clip-benchmark.in"],
    "locks/tools.txt": ["locks/tools.in"],
}
MAKE_EXTRAS = ("test", "web", "openclip")  # the Makefile's LOCK_EXTRAS and its `-e .` install


def _script(name: str) -> ModuleType:
    path = ROOT / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_scripts_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


lock_check = _script("lock_check")
sys.path.insert(0, str(ROOT / "scripts"))  # test_latest imports lock_check by name
test_latest = _script("test_latest")


def _environments() -> list[dict[str, str]]:
    """This machine's marker environment and the other architecture's, on Linux."""
    here = dict(default_environment())
    linux = {**here, "sys_platform": "linux", "platform_system": "Linux"}
    return [here, {**linux, "platform_machine": "x86_64"}, {**linux, "platform_machine": "aarch64"}]


def _requirements(lines: list[str]) -> list[Requirement]:
    out = []
    for raw in lines:
        text = raw.split("#", 1)[0].strip()
        if text:
            out.append(Requirement(text))
    return out


def _pyproject_requirements() -> list[Requirement]:
    """lexsem's dependencies and those of the extras `make` installs, `lexsem[...]` expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    out = [Requirement(r) for r in project["dependencies"]]
    todo, seen = list(MAKE_EXTRAS), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for text in extras[extra]:
            req = Requirement(text)
            if canonicalize_name(req.name) == "lexsem":
                todo.extend(req.extras)
            else:
                out.append(req)
    return out


def _inputs(lock: str) -> list[Requirement]:
    reqs = []
    for name in LOCK_INPUTS[lock]:
        reqs += _requirements((ROOT / name).read_text().splitlines())
    return reqs + (_pyproject_requirements() if lock == MAIN else [])


@pytest.mark.parametrize("lock", sorted(LOCK_INPUTS))
def test_every_lock_pins_exact_versions_with_hashes(lock: str) -> None:
    pins = lock_check.read_lock(ROOT / lock)
    assert pins, lock
    assert [p.name for p in pins if p.hashes == 0] == []


@pytest.mark.parametrize("lock", sorted(LOCK_INPUTS))
def test_each_lock_satisfies_its_inputs_on_x86_64_and_aarch64(lock: str) -> None:
    """A range raised or a dependency added without `make lock` fails here, on either
    architecture: each input requirement that applies has exactly one pin, within its range."""
    pins = lock_check.read_lock(ROOT / lock)
    problems = []
    for env in _environments():
        applying = [p for p in pins if lock_check.applies(p, env)]
        for req in _inputs(lock):
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            found = [p for p in applying if p.name == canonicalize_name(req.name)]
            where = env["platform_machine"]
            if len(found) != 1:
                problems.append(f"{where}: {req} has {len(found)} pins in {lock}")
            elif not req.specifier.contains(found[0].version, prereleases=True):
                problems.append(f"{where}: {req} but {lock} pins {found[0].version}")
    assert problems == []


def test_the_torch_pair_is_one_per_architecture() -> None:
    pins = lock_check.read_lock(ROOT / MAIN)
    pairs = {}
    for env in _environments()[1:]:
        got = {p.name: p.version for p in pins if lock_check.applies(p, env)}
        pairs[env["platform_machine"]] = (got["torch"], got["torchvision"])
    # torchvision's minor version follows torch's (0.24 <-> 2.9, 0.29 <-> 2.14)
    for torch, vision in pairs.values():
        assert int(vision.split(".")[1]) == int(torch.split(".")[1]) + 15, pairs


def test_label_studio_is_locked_below_sentry_sdk_3() -> None:
    """sentry-sdk 3 stops Label Studio 1.23.2 at start-up (`send_default_pii`)."""
    pins = {p.name: p.version for p in lock_check.read_lock(ROOT / "locks/labelstudio.txt")}
    assert pins["label-studio"] == "1.23.2"
    assert int(pins["sentry-sdk"].split(".")[0]) < 3


@pytest.mark.parametrize("lock", [MAIN, "locks/labelstudio.txt"])
def test_the_installers_agree_with_each_lock(lock: str) -> None:
    """pip and setuptools come from locks/tools.txt into every venv, before the venv's own lock
    (whose source-only packages build with that setuptools): where a lock pins one of them
    too, it is the same version."""
    tools = {p.name: p.version for p in lock_check.read_lock(ROOT / "locks/tools.txt")}
    other = {p.name: p.version for p in lock_check.read_lock(ROOT / lock)}
    assert {n: other[n] for n in tools if n in other} == {n: tools[n] for n in tools if n in other}
    assert "setuptools" in tools


def test_make_installs_nothing_but_the_locks() -> None:
    """Every pip install of the Makefile's set-up targets reads a lock with hashes and no
    dependency resolution, or installs lexsem itself without its dependencies; only
    test-latest resolves on the day (scripts/test_latest.py)."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    locked = re.search(r"^PIP_LOCKED := (.*)$", text, re.M)
    assert locked and "--require-hashes" in locked[1] and "--no-deps" in locked[1]
    assert "--no-build-isolation" in locked[1]  # a source-only package builds with the lock's
    lines = [line.strip() for line in text.splitlines() if not line.lstrip().startswith("#")]
    installs = [line for line in lines if "pip install" in line]
    assert installs == [
        "PIP_LOCKED := -m pip install -q --require-hashes --no-deps --no-build-isolation -r",
        "$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .",
    ]
    assert text.count("$(PIP_LOCKED)") >= 6  # tools x3, main, Label Studio, both peers
    assert "pip install" not in (ROOT / ".ci" / "run").read_text()


@pytest.mark.skipif(os.environ.get("LEXSEM_UNLOCKED") == "1",
                    reason="make test-latest: this venv is resolved on the day")  # fmt: skip
def test_the_test_venv_holds_exactly_the_lock() -> None:
    env, have = lock_check.installed(sys.executable)
    assert lock_check.differences(lock_check.read_lock(ROOT / MAIN), env, have) == []


# scripts/lock_check.py on a hand-made lock

LOCK_TEXT = """\
# a comment
alpha==1.0 \\
    --hash=sha256:aa \\
    --hash=sha256:bb
    # via beta
beta==2.0 ; platform_machine == 'aarch64' \\
    --hash=sha256:cc
beta==3.0 ; platform_machine != 'aarch64' \\
    --hash=sha256:dd
gamma==0.1
"""


def test_read_lock_joins_continued_lines(tmp_path: Path) -> None:
    lock = tmp_path / "x.txt"
    lock.write_text(LOCK_TEXT)
    pins = lock_check.read_lock(lock)
    assert [(p.name, p.version, p.hashes, p.line) for p in pins] == [
        ("alpha", "1.0", 2, 2), ("beta", "2.0", 1, 6), ("beta", "3.0", 1, 8),
        ("gamma", "0.1", 0, 10),
    ]  # fmt: skip


def test_read_lock_refuses_a_range_naming_the_line(tmp_path: Path) -> None:
    lock = tmp_path / "x.txt"
    lock.write_text("alpha==1.0\nbeta>=2\n")
    with pytest.raises(SystemExit, match=r"x\.txt:2: 'beta>=2' is not one exact pin"):
        lock_check.read_lock(lock)


def test_differences_follow_the_markers(tmp_path: Path) -> None:
    lock = tmp_path / "x.txt"
    lock.write_text(LOCK_TEXT)
    pins = lock_check.read_lock(lock)
    x86 = {**default_environment(), "platform_machine": "x86_64"}
    arm = {**x86, "platform_machine": "aarch64"}
    have = {"alpha": "1.0", "beta": "3.0", "delta": "9"}
    assert lock_check.differences(pins, x86, have) == ["gamma==0.1: not installed"]
    assert lock_check.differences(pins, arm, have) == [
        "beta==2.0: 3.0 installed", "gamma==0.1: not installed"
    ]  # fmt: skip
    assert lock_check.extras(pins, {**have, "pip": "26", "lexsem": "0"}) == ["delta==9"]


def test_lock_check_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest_version = lock_check.installed(sys.executable)[1]["pytest"]
    lock = tmp_path / "x.txt"
    lock.write_text(f"pytest=={pytest_version}\n")
    assert lock_check.main([str(lock)]) == 0
    lock.write_text("pytest==0.0.1\n")
    assert lock_check.main([str(lock)]) == 1
    assert f"pytest==0.0.1: {pytest_version} installed" in capsys.readouterr().err


# scripts/test_latest.py's report on hand-made inputs


def test_drift_names_each_moved_package(tmp_path: Path) -> None:
    have = lock_check.installed(sys.executable)[1]
    lock = tmp_path / "x.txt"
    lock.write_text(f"pytest=={have['pytest']}\npluggy==0.0.1\nno-such-package-xyz==1.0\n")
    lines = test_latest.drift(lock, Path(sys.executable))
    assert f"pluggy: 0.0.1 -> {have['pluggy']}" in lines
    assert "no-such-package-xyz: 1.0 -> (not installed)" in lines
    assert not any(line.startswith("pytest:") for line in lines)
    assert f"numpy: (not in the lock) -> {have['numpy']}" in lines


def test_failed_tests_reads_pytest_junit(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_a" name="test_ok"/>'
        '<testcase classname="tests.test_a" name="test_bad[x]"><failure message="m"/></testcase>'
        '<testcase classname="tests.test_b" name="test_err"><error message="e"/></testcase>'
        '<testcase classname="tests.test_b" name="test_skip"><skipped/></testcase>'
        "</testsuite></testsuites>"
    )
    assert test_latest.failed_tests(junit) == [
        "tests/test_a.py::test_bad[x]", "tests/test_b.py::test_err"
    ]  # fmt: skip
    assert test_latest.failed_tests(tmp_path / "none.xml") == []


def test_test_latest_refuses_a_work_folder_holding_the_checkout() -> None:
    with pytest.raises(SystemExit) as exc:
        test_latest.main(["--work", str(ROOT.parent)])
    assert exc.value.code == 2


# run.json


def test_run_json_records_what_rebuilds_the_environment() -> None:
    env = environment()
    for pkg in ("torch", "torchvision", "transformers", "sentence-transformers",
                "open_clip_torch", "huggingface-hub", "pillow"):  # fmt: skip
        assert pkg in RECORDED_PACKAGES
        assert env[pkg] == lock_check.installed(sys.executable)[1][canonicalize_name(pkg)]
    digest = hashlib.sha256((ROOT / MAIN).read_bytes()).hexdigest()
    assert env["lock_sha256"] == digest  # the tests run from a checkout
