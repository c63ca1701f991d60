"""Runs for the explorer's tests and bench: real runs of two tiny models on the SugarCrepe++
user files of `fakes.TRIPLETS`, and synthetic run folders of any size (`synthetic_runs`)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import lexsem
from builders.fakes import BagOfWordsEncoder, OtherDual, scpp_user_files
from builders.local_http import free_port
from builders.run_records import record, result
from lexsem.results.run_folder import save_run
from lexsem.results.schema import BenchmarkInfo, FileInfo


def two_runs(base: Path) -> tuple[list[Path], Path, str]:
    """(run folders of a text model and a dual encoder, the image folder, the selector)."""
    base.mkdir(parents=True, exist_ok=True)
    selector, images = scpp_user_files(base)
    common = {"n_boot": 0, "cache_dir": base / "cache", "offline": True,
              "coco_val2017": images}  # fmt: skip
    runs = []
    for name, model in (("bow", BagOfWordsEncoder(16, "bow")), ("dual", OtherDual())):
        lexsem.evaluate(model, [selector], out=base / "runs" / name, **common)
        runs.append(base / "runs" / name)
    return runs, images, selector


def human_run(base: Path, selector: str, right: dict[tuple[str, str], bool]) -> Path:
    """A run of people's TOT answers on the `selector` files (`lexsem annotate human-run`):
    two annotators per item, both right where `right[(subset, id)]`, both wrong elsewhere."""
    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    import lexsem.cli.app  # noqa: F401  (adds the stats commands to `annotate`)
    from builders.answers_table import answer, table
    from lexsem.cli.annotate import annotate_app

    rows = [
        answer("tot", item, who, "n" if ok else "p1", subset=sub, benchmark=selector)
        for (sub, item), ok in right.items()
        for who in ("a", "b")
    ]
    answers = base / "answers.parquet"
    pq.write_table(table(rows), answers)
    out = base / "runs" / "people"
    res = CliRunner().invoke(annotate_app, [
        "human-run", str(answers), "-o", str(out), "--n-boot", "0",
        "--cache-dir", str(base / "cache"),
    ])  # fmt: skip
    if res.exit_code != 0:
        raise RuntimeError(res.output)
    return out


def synthetic_runs(base: Path, n_runs: int, n_items: int, seed: int = 0) -> list[Path]:
    """`n_runs` run folders of `n_items` text-triplet items each (random scores), as
    `lexsem eval` writes them."""
    rng = np.random.default_rng(seed)
    subsets = np.array(["swap_obj", "replace_att", "add_rel", "swap_att"])
    sub = subsets[np.arange(n_items) % len(subsets)]
    ids = np.arange(n_items).astype(str)
    out = []
    for k in range(n_runs):
        s = rng.random((3, n_items))
        hit = (s[0] > s[1]) & (s[0] > s[2])
        items = pa.table({
            "benchmark": ["sugarcrepe_pp"] * n_items, "subset": sub, "item_id": ids,
            "task": ["tot"] * n_items, "metric": ["tot"] * n_items, "hit": hit,
            "tie": np.zeros(n_items, bool), "s_p1_p2": s[0], "s_p1_n": s[1], "s_p2_n": s[2],
        })  # fmt: skip
        rec = record(f"model{k}", [result("sugarcrepe_pp", "tot", "tot", "_micro", 50.0)])
        rec = rec.model_copy(update={
            "run_id": f"synthetic-{k:04d}",
            "benchmarks": [BenchmarkInfo(
                name="sugarcrepe_pp", subsets=list(subsets),
                items={s_: int((sub == s_).sum()) for s_ in subsets},
                files=[FileInfo(subset=s_, file=None, sha256="0" * 64) for s_ in subsets])],
        })  # fmt: skip
        out.append(save_run(base / f"run{k}", rec, items))
    return out


@contextlib.contextmanager
def served(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """`app` served by uvicorn on `host` (127.0.0.1, or 0.0.0.0: every address) in a thread:
    its base URL on 127.0.0.1 (tests send nothing beyond the loopback); stopped on exit."""
    import uvicorn

    port = free_port(host)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the explorer did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def create_exported_study(zipped: bytes, folder: Path, *options: str) -> Any:
    """The explorer's study zip unpacked in `folder` and its `sh create-study.sh` run with
    `folder/s.sqlite` and `options`, `lexsem` being this Python's lexsem: the finished
    process."""
    import io
    import os
    import subprocess
    import sys
    import zipfile

    with zipfile.ZipFile(io.BytesIO(zipped)) as f:
        f.extractall(folder / "study")
    (folder / "bin").mkdir()
    shim = folder / "bin" / "lexsem"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "from lexsem.cli import app; app()" '
                    '"$@"\n')  # fmt: skip
    shim.chmod(0o755)
    env = os.environ | {"PATH": f"{folder / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["sh", str(folder / "study" / "create-study.sh"), str(folder / "s.sqlite"), *options],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
