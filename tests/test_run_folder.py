"""Run folders are never lost, mixed or silently replaced: writes killed at every step (a real
child process, SIGKILL), --out checked before any work, damaged files named, umask and home
paths. See docs/reliability.md."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import lexsem.atomic as atomic
import lexsem.results.folder_swap as folder_mod
import lexsem.results.run_folder as store
from builders.fakes import BagOfWordsEncoder, register_fixture_benchmark
from builders.privileges import where_permission_bits_apply
from lexsem.api import evaluate
from lexsem.atomic import atomic_open
from lexsem.cli import app
from lexsem.errors import LexsemError
from lexsem.results.run import Run
from lexsem.results.run_folder import check_out_dir, load_run

runner = CliRunner()
COMMON: dict[str, Any] = {"n_boot": 0, "offline": True}


class SpyEncoder(BagOfWordsEncoder):
    """Records whether the evaluation touched it at all (fingerprint read, texts encoded)."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__(dim, f"spy{dim}")
        self.touched = False

    @property
    def fingerprint(self) -> dict[str, Any]:
        self.touched = True
        return {"backend": "test-bow", "dim": self.dim}

    def encode(self, texts: Any, *, batch_size: int = 64) -> Any:
        self.touched = True
        return super().encode(texts, batch_size=batch_size)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Run folders A and B of two different runs (different run ids and per-item scores)."""
    base = tmp_path_factory.mktemp("two-runs")
    for name, dim in (("A", 16), ("B", 64)):
        evaluate(
            BagOfWordsEncoder(dim, f"bow{dim}"),
            ["synthetic"],
            out=base / name,
            cache_dir=base / "cache",
            **COMMON,
        )
    return base / "A", base / "B"


@pytest.fixture
def out(tmp_path: Path, two_runs: tuple[Path, Path]) -> Path:
    """A folder (alone in its parent) holding a copy of run A."""
    target = tmp_path / "runs" / "out"
    target.parent.mkdir()
    shutil.copytree(two_runs[0], target)
    return target


def _same_run(folder: Path, expected: Path) -> None:
    """`folder` holds exactly the complete run of `expected`: both files, one run."""
    got, want = Run.load(folder), Run.load(expected)
    assert got.record.run_id == want.record.run_id
    assert got.items.equals(want.items)
    assert sorted(p.name for p in folder_mod.located(folder).iterdir()) == [
        "items.parquet",
        "run.json",
    ]


def _cli(*args: str | Path) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def _cli_error(result: Any, *needles: str | Path) -> None:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "error:" in result.output and "Traceback" not in result.output
    for needle in needles:
        assert str(needle) in result.output, result.output


# ----------------------------------------------------------------- kill during the write

CHILD = r"""
import os, shutil, sys, time
from pathlib import Path

import lexsem.atomic as atomic
import lexsem.results.folder_swap as folder
import lexsem.results.run_folder as store
from lexsem.results.run import Run

source, out, stage, marker, can_exchange = sys.argv[1:]


def block():
    Path(marker).write_text(stage)
    while True:
        time.sleep(3600)  # until SIGKILL


def before(module, name, when=lambda *args: True):
    real = getattr(module, name)

    def wrapper(*args, **kwargs):
        if when(*args):
            block()
        return real(*args, **kwargs)

    setattr(module, name, wrapper)


if can_exchange == "no":  # a file system without RENAME_EXCHANGE: the two-rename fallback
    atomic.exchange = lambda a, b: False
if stage == "between-files":  # items.parquet written, run.json not yet
    before(store, "_write_record")
elif stage == "before-swap":  # the new run complete beside the old one
    before(folder, "replace_dir")
elif stage == "between-renames":  # old run moved aside, new one not yet in place
    before(os, "rename", lambda src, dst: ".lexsem-new-" in str(src))
elif stage == "before-cleanup":  # new run in place, old one not yet removed
    before(shutil, "rmtree", lambda path, *args: ".lexsem-" in str(path))
Run.load(source).save(out, force=True)
print("finished without blocking", file=sys.stderr)
"""

KILL_CASES = [
    ("between-files", "yes", "old"),
    ("before-swap", "yes", "old"),
    ("before-cleanup", "yes", "new"),
    ("between-renames", "no", "old"),
    ("before-cleanup", "no", "new"),
]


def _run_child_until(tmp_path: Path, args: list[str], marker: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    proc = subprocess.Popen(
        [sys.executable, str(script), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 120  # a bound on waiting, not a measurement
        while not marker.exists():
            if proc.poll() is not None:
                pytest.fail(f"the child never blocked: {proc.stderr.read().decode()}")
            assert time.monotonic() < deadline, "the child did not reach its blocking point"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.parametrize(("stage", "can_exchange", "left"), KILL_CASES)
def test_a_write_killed_at_any_step_leaves_one_complete_run(
    tmp_path: Path, two_runs: tuple[Path, Path], out: Path, stage: str, can_exchange: str, left: str
) -> None:
    old, new = two_runs
    marker = tmp_path / "blocked"
    _run_child_until(tmp_path, [str(new), str(out), stage, str(marker), can_exchange], marker)

    expected = old if left == "old" else new
    assert out.exists() == (stage != "between-renames")  # there: the old run is aside
    _same_run(out, expected)  # readers find one complete run (where out is missing: the old)
    report = _cli("report", out)
    assert report.exit_code == 0, report.output
    assert f"bow{16 if left == 'old' else 64}" in report.output
    assert _cli("compare", out, expected).exit_code == 0

    check_out_dir(out, force=True)  # the next run tidies what the killed one left
    assert [p.name for p in out.parent.iterdir()] == ["out"]
    _same_run(out, expected)


def test_a_failed_write_keeps_the_previous_run_and_leaves_nothing(
    out: Path, two_runs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(store.pq, "write_table", full)
    with pytest.raises(LexsemError, match=f"could not write the run folder {out}"):
        Run.load(two_runs[1]).save(out, force=True)
    _same_run(out, two_runs[0])
    assert [p.name for p in out.parent.iterdir()] == ["out"]


def _folder(path: Path, text: str) -> Path:
    path.mkdir()
    (path / "f").write_text(text)
    return path


@pytest.mark.parametrize("can_exchange", [True, False])
def test_replace_dir_swaps_in_a_whole_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, can_exchange: bool
) -> None:
    if not can_exchange:
        monkeypatch.setattr(atomic, "exchange", lambda a, b: False)
    target = _folder(tmp_path / "target", "old")
    atomic.replace_dir(_folder(tmp_path / "new", "new"), target, tmp_path / "backup")
    assert (target / "f").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]
    empty = tmp_path / "empty"
    empty.mkdir()
    atomic.replace_dir(_folder(tmp_path / "new", "x"), empty, tmp_path / "backup")
    atomic.replace_dir(_folder(tmp_path / "new", "y"), tmp_path / "missing", tmp_path / "b")
    assert (empty / "f").read_text() == "x" and (tmp_path / "missing" / "f").read_text() == "y"


def test_replace_dir_puts_the_old_folder_back_when_the_second_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(atomic, "exchange", lambda a, b: False)
    real = os.rename

    def rename(src: Any, dst: Any) -> None:
        if Path(src).name == "new":
            raise OSError(errno.EIO, "I/O error")
        real(src, dst)

    monkeypatch.setattr(os, "rename", rename)
    target = _folder(tmp_path / "target", "old")
    with pytest.raises(OSError):
        atomic.replace_dir(_folder(tmp_path / "new", "new"), target, tmp_path / "backup")
    assert (target / "f").read_text() == "old" and not (tmp_path / "backup").exists()


def test_exchange_swaps_two_folders_where_the_os_can(tmp_path: Path) -> None:
    a, b = _folder(tmp_path / "a", "a"), _folder(tmp_path / "b", "b")
    if atomic.exchange(a, b):
        assert (a / "f").read_text() == "b" and (b / "f").read_text() == "a"
    else:  # another OS or file system: nothing changed, the caller falls back
        assert (a / "f").read_text() == "a" and (b / "f").read_text() == "b"


# ----------------------------------------------------------------- --out checked before work


def test_out_holding_another_run_is_refused_without_force(
    out: Path, two_runs: tuple[Path, Path]
) -> None:
    spy = SpyEncoder(64)
    with pytest.raises(LexsemError) as exc:
        evaluate(spy, ["synthetic"], out=out, **COMMON)
    msg = str(exc.value)
    assert str(out) in msg and "already holds run" in msg and "--force" in msg
    assert not spy.touched  # refused before any work
    _same_run(out, two_runs[0])

    run = evaluate(SpyEncoder(64), ["synthetic"], out=out, force=True, **COMMON)
    assert load_run(out).run_id == run.record.run_id != load_run(two_runs[0]).run_id


def test_the_same_run_into_its_own_folder_also_needs_force(tmp_path: Path) -> None:
    # the run id is known only after the work: replacing always takes --force (documented)
    out = tmp_path / "run"
    first = evaluate(BagOfWordsEncoder(), ["synthetic"], out=out, **COMMON)
    with pytest.raises(LexsemError, match="already holds run"):
        evaluate(BagOfWordsEncoder(), ["synthetic"], out=out, **COMMON)
    again = evaluate(BagOfWordsEncoder(), ["synthetic"], out=out, force=True, **COMMON)
    assert again.record.run_id == first.record.run_id == load_run(out).run_id


def test_cli_eval_refuses_a_run_folder_without_force_before_loading_the_model(
    out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lexsem.models import factory as registry

    loads: list[str] = []

    def load_model(spec: str, **kwargs: object) -> BagOfWordsEncoder:
        loads.append(spec)
        return BagOfWordsEncoder(64, "bow64")

    monkeypatch.setattr(registry, "load_model", load_model)
    before = load_run(out).run_id
    _cli_error(_cli("eval", "-m", "minilm", "-b", "synthetic", "-o", out, "-q"), out, "--force")
    assert loads == [] and load_run(out).run_id == before
    done = _cli("eval", "-m", "minilm", "-b", "synthetic", "-o", out, "-q", "--force")
    assert done.exit_code == 0, done.output
    assert loads == ["minilm"] and load_run(out).run_id != before


def test_out_that_is_a_file_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "results.txt"
    file.write_text("mine\n")
    spy = SpyEncoder()
    with pytest.raises(LexsemError, match="is a file, not a folder"):
        evaluate(spy, ["synthetic"], out=file, **COMMON)
    assert not spy.touched and file.read_text() == "mine\n"

    from lexsem.models import factory as registry

    monkeypatch.setattr(registry, "load_model", _never_load)
    _cli_error(_cli("eval", "-m", "minilm", "-b", "synthetic", "-o", file), file, "is a file")
    _cli_error(_cli("eval", "-m", "minilm", "-b", "synthetic", "-o", file / "run"), file)


def test_out_inside_a_run_folder_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run nested in another run folder was lost at that folder's next `--force` (and made it
    unreplaceable: "holds files that are not a lexsem run")."""
    outer = tmp_path / "x"
    evaluate(SpyEncoder(), ["synthetic"], out=outer, **COMMON)
    spy = SpyEncoder()
    with pytest.raises(LexsemError, match=r"lies inside the run folder .*x \(run "):
        evaluate(spy, ["synthetic"], out=outer / "sub" / "deeper", **COMMON)
    assert not spy.touched and not (outer / "sub").exists()
    from lexsem.models import factory as registry

    monkeypatch.setattr(registry, "load_model", _never_load)
    out = _cli("eval", "-m", "minilm", "-b", "synthetic", "-o", outer / "sub")
    _cli_error(out, outer / "sub", "lies inside the run folder")


def _never_load(*args: object, **kwargs: object) -> None:
    raise AssertionError("the model was loaded although --out is unusable")


@pytest.fixture
def read_only() -> Iterator[Callable[[Path], None]]:
    """Make a folder read-only (the tests using it run where permission bits bind:
    `where_permission_bits_apply`)."""
    made: list[Path] = []

    def make(folder: Path) -> None:
        folder.chmod(0o555)
        made.append(folder)

    yield make
    for folder in made:
        folder.chmod(0o755)


@where_permission_bits_apply
def test_out_in_a_read_only_folder_is_refused_before_any_work(
    tmp_path: Path, read_only: Callable[[Path], None]
) -> None:
    parent = tmp_path / "shared"
    parent.mkdir()
    read_only(parent)
    spy = SpyEncoder()
    with pytest.raises(LexsemError, match="read-only") as exc:
        evaluate(spy, ["synthetic"], out=parent / "run", **COMMON)
    assert str(parent / "run") in str(exc.value)
    assert not spy.touched and list(parent.iterdir()) == []


@where_permission_bits_apply
def test_out_that_is_a_read_only_folder_is_refused_before_any_work(
    tmp_path: Path, read_only: Callable[[Path], None]
) -> None:
    target = tmp_path / "run"
    target.mkdir()
    read_only(target)
    spy = SpyEncoder()
    with pytest.raises(LexsemError, match=f"{target} is read-only"):
        evaluate(spy, ["synthetic"], out=target, force=True, **COMMON)
    assert not spy.touched and target.is_dir()


def test_out_on_a_full_disk_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = shutil.disk_usage
    disk = tmp_path / "full"
    disk.mkdir()

    def usage(path: Any) -> Any:
        if Path(path).is_relative_to(disk):
            return SimpleNamespace(total=1 << 30, used=(1 << 30) - 4096, free=4096)
        return real(path)

    monkeypatch.setattr(shutil, "disk_usage", usage)
    spy = SpyEncoder()
    with pytest.raises(LexsemError, match="only 4096 bytes free") as exc:
        evaluate(spy, ["synthetic"], out=disk / "run", **COMMON)
    assert str(disk / "run") in str(exc.value)
    assert not spy.touched and list(disk.iterdir()) == []


def test_a_folder_of_other_files_is_never_replaced(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("years of work\n")
    for force in (False, True):
        spy = SpyEncoder()
        with pytest.raises(LexsemError, match="not a lexsem run"):
            evaluate(spy, ["synthetic"], out=home, force=force, **COMMON)
        assert not spy.touched
    assert [p.name for p in home.iterdir()] == ["thesis.tex"]


def test_an_empty_folder_is_used_as_is(tmp_path: Path) -> None:
    target = tmp_path / "empty"
    target.mkdir()
    run = evaluate(BagOfWordsEncoder(), ["synthetic"], out=target, **COMMON)
    assert load_run(target).run_id == run.record.run_id


# ----------------------------------------------------------------- damaged files


def _corrupt_parquet(folder: Path) -> Path:
    file = folder / "items.parquet"
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])  # truncated: no footer
    return file


@pytest.mark.parametrize(
    "damage",
    [
        b"\xff\xfe\x00garbage\x00",  # not text
        b'{"schema_version": 1, "run_id": ',  # cut short
        b"[1, 2, 3]\n",  # JSON, not a record
    ],
)
def test_damaged_run_json_is_named_by_report_and_compare(
    out: Path, two_runs: tuple[Path, Path], damage: bytes
) -> None:
    (out / "run.json").write_bytes(damage)
    _cli_error(_cli("report", out), out / "run.json")
    _cli_error(_cli("compare", out, two_runs[1]), out / "run.json")
    _cli_error(_cli("compare", two_runs[1], out), out / "run.json")


def test_damaged_items_parquet_is_named_by_report_and_compare(
    out: Path, two_runs: tuple[Path, Path], tmp_path: Path
) -> None:
    file = _corrupt_parquet(out)
    _cli_error(_cli("report", out), file, "unreadable per-item file")
    html = _cli("report", out, "--html", tmp_path / "r.html")
    _cli_error(html, file)
    assert html.output.strip().count("\n") == 0, html.output  # one line, no table before it
    _cli_error(_cli("compare", two_runs[1], out), file)
    with pytest.raises(LexsemError, match="unreadable per-item file"):
        Run.load(out)


def test_a_folder_mixing_two_runs_is_refused(out: Path, two_runs: tuple[Path, Path]) -> None:
    # what a kill between the two renames of an older lexsem left: items of B, run.json of A
    shutil.copyfile(two_runs[1] / "items.parquet", out / "items.parquet")
    for result in (_cli("report", out), _cli("compare", out, two_runs[1])):
        _cli_error(result, out / "items.parquet", out / "run.json", "mixes two runs")


def test_the_items_file_records_its_run(two_runs: tuple[Path, Path]) -> None:
    meta = pq.read_schema(two_runs[0] / "items.parquet").metadata
    assert meta[store.RUN_ID_KEY].decode() == load_run(two_runs[0]).run_id


# ----------------------------------------------------------------- permissions and paths


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    old = os.umask(0o022)
    os.umask(old)
    yield os.umask
    os.umask(old)


@pytest.mark.parametrize(
    ("mask", "file_mode", "dir_mode"), [(0o022, 0o644, 0o755), (0o027, 0o640, 0o750)]
)
def test_results_get_the_users_umask(
    tmp_path: Path, umask: Callable[[int], None], mask: int, file_mode: int, dir_mode: int
) -> None:
    umask(mask)
    target = tmp_path / "runs" / "run"
    evaluate(BagOfWordsEncoder(), ["synthetic"], out=target, **COMMON)
    assert (target.stat().st_mode & 0o777) == dir_mode
    for name in ("run.json", "items.parquet"):
        assert ((target / name).stat().st_mode & 0o777) == file_mode, name
    table = tmp_path / "table.md"
    assert _cli("report", target, "-o", table).exit_code == 0
    with atomic_open(tmp_path / "other.json") as fh:
        fh.write("{}")
    for path in (table, tmp_path / "other.json"):
        assert (path.stat().st_mode & 0o777) == file_mode, path


def test_run_json_holds_no_home_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home" / "ann"
    home.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    data, _ = register_fixture_benchmark(home, monkeypatch)
    target = tmp_path / "shared-runs" / "run"
    run = evaluate(
        BagOfWordsEncoder(),
        ["fixture_pp", f"scpp:{data / 'fixture_pp' / 'swap_obj.json'}"],
        data_dir=data,
        cache_dir=home / ".cache" / "lexsem",
        out=target,
        **COMMON,
    )
    text = (target / "run.json").read_text()
    assert str(home) not in text and "/ann" not in text
    saved = load_run(target)
    evaluation = saved.config.evaluation
    assert evaluation["data_dir"] == "~/data" and evaluation["cache_dir"] == "~/.cache/lexsem"
    assert evaluation["benchmarks"][1] == "scpp:~/data/fixture_pp/swap_obj.json"
    assert Path(evaluation["data_dir"]).expanduser() == data  # the owner can still follow it
    # only the written paths change: the run id and every result are those of the run
    assert saved.run_id == run.record.run_id
    assert saved.results == run.record.results
    assert json.loads(text)["model"] == run.record.model.model_dump(mode="json")


def test_paths_outside_home_and_lookalikes_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from lexsem.results.redact import shareable

    monkeypatch.setenv("HOME", "/home/ann")
    keep = ["/home/anna/x", "/data/home/ann/x", "/srv/data", "home/ann"]
    base = evaluate(BagOfWordsEncoder(), ["synthetic"], **COMMON).record
    fingerprint = {"spec": "st:/home/ann/models/m?x=1", "others": keep, "home": "/home/ann"}
    model = base.model.model_copy(update={"fingerprint": fingerprint})
    changed = shareable(base.model_copy(update={"model": model}))
    assert changed.model.fingerprint == {
        "spec": "st:~/models/m?x=1",
        "others": keep,
        "home": "~",
    }
    assert shareable(base) is base  # nothing under home: the record as it is


def test_dotdot_and_links_are_resolved_before_the_nested_check(tmp_path: Path) -> None:
    """`-o ../b` from inside a run folder is beside it, not inside; a link into a run folder
    is inside it."""
    from lexsem.results.folder_swap import refuse_nested

    run = tmp_path / "a"
    evaluate(SpyEncoder(), ["synthetic"], out=run, **COMMON)
    refuse_nested(run / ".." / "b")  # beside it: fine
    (tmp_path / "link").symlink_to(run)
    with pytest.raises(LexsemError, match="lies inside the run folder"):
        refuse_nested(tmp_path / "link" / "sub")
