"""Spread encoding: one job's text encoding spread over Ray actors against one process.

The job: the offline MiniLM (`minilm`) over the synthetic benchmark (every subset), an empty
request store, no bootstrap, batch 32. It runs once in one process (`lexsem sweep`'s `local`
executor) and once with its encoding spread over `--workers` actors (`resources.spread`), each
actor one CPU (Ray gives it one torch thread). Prints the seconds of each (Ray's start-up timed
apart), the ratio one process / spread (above 1: the spread is faster), the texts encoded,
that the two runs' stores hold the same values (within the fp32 tolerance: the actors run other
thread counts), and what `lexsem sweep` said of the spread (its warning where the rule of
`lexsem.sweep.spread.spread_advice` says it will not pay, docs/scale.md).

    python bench/spread_bench.py                 # 2 workers
    python bench/spread_bench.py --workers 4 --batch-size 64
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
).rstrip(os.pathsep)
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402

from lexsem.engine.request_store import MERGE_RTOL, store_rows  # noqa: E402
from lexsem.sweep.grid import Grid  # noqa: E402
from lexsem.sweep.runner import run_sweep  # noqa: E402


def _grid(cache: Path, spread: int, batch_size: int, model: str) -> Grid:
    return Grid(
        defaults={"n_boot": 0, "cache_dir": str(cache), "batch_size": batch_size},
        blocks=[{"models": [model], "benchmarks": ["synthetic"], "resources": {"spread": spread}}],
    )


def _same_values(a: dict[Any, tuple[int, bytes]], b: dict[Any, tuple[int, bytes]]) -> bool:
    """The same keys, each vector within the fp32 tolerance of the merge (`MERGE_RTOL`)."""
    if sorted(a) != sorted(b):
        return False
    for key, (_, blob) in a.items():
        if key[1] != "vectors":
            continue
        x, y = np.frombuffer(blob, np.float32), np.frombuffer(b[key][1], np.float32)
        if x.shape != y.shape or np.linalg.norm(x - y) > MERGE_RTOL * np.linalg.norm(x):
            return False
    return True


def _timed(grid: Grid, out: Path, lines: list[str], executor: str = "local") -> float:
    t0 = time.perf_counter()
    res = run_sweep(grid, out, executor, echo=lines.append)
    assert res.complete, [j.error for j in res.jobs if j.error]
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2, help="Ray actors (default 2)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--model", default="minilm")
    args = ap.parse_args()
    import ray

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run_sweep(_grid(root / "warm", 1, args.batch_size, args.model), root / "w")  # imports
        lines: list[str] = []
        one_s = _timed(_grid(root / "c1", 1, args.batch_size, args.model), root / "one", lines)
        t0 = time.perf_counter()
        ray.init(num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False)
        start_s = time.perf_counter() - t0
        try:
            grid = _grid(root / "c2", args.workers, args.batch_size, args.model)
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                spread_s = _timed(grid, root / "spread", lines, "ray")
        finally:
            ray.shutdown()
        advice = [str(w.message) for w in said if "spread encoding" in str(w.message)]
        same = _same_values(store_rows(root / "c1"), store_rows(root / "c2"))
    spread_lines = [line for line in lines if line.startswith("spread ")]
    print(f"{args.model} over synthetic, batch {args.batch_size}: one process {one_s:.2f} s, "
          f"spread over {args.workers} actors {spread_s:.2f} s (+ {start_s:.1f} s to start Ray): "
          f"one/spread = {one_s / spread_s:.2f} on {os.cpu_count()} cores")  # fmt: skip
    print(f"{spread_lines[0] if spread_lines else 'nothing spread'}; same store values: {same}")
    print(
        f"lexsem's advice: {advice[0] if advice else 'none (the rule expects the spread to pay)'}"
    )
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
