"""Sweep speed: Ray's overhead against the `local` executor on small jobs, and the speed-up
of Ray on this machine's cores for CPU-bound jobs.

The jobs evaluate `sweepfake:` text encoders (tests/builders/sweep_models.py: no torch; its
`work` option spends that many milliseconds of pure-Python CPU per encode call, holding the
GIL, so threads could not share it) on one synthetic subset (100 triplets), with the request
store off (`use_cache = false`) so that every job computes, and no bootstrap.

1. *overhead*: 20 small jobs (no extra work) through `local`, then through `ray` (a local Ray
   of all cores; its start-up timed apart). Prints seconds of each and the ratio ray/local:
   what tiny jobs cost on Ray.
2. *warm cache*: the same 20 jobs with the request store on, once locally to fill it, then
   timed locally and on Ray (per-job stores: each job starts from a snapshot of the main
   store, encodes nothing and sends nothing back). Prints the ratio ray/local; Ray's start-up
   apart.
3. *long jobs*: `--long` jobs of about `--long-s` seconds each (10 s by default) on a Ray of
   ONE CPU against `local`: the same sequence of work, so the ratio ray/local (start-up
   included) is Ray's overhead on jobs of that length. The target: at most 1.2.
4. *speed-up*: N CPU-bound jobs (`--work` ms per encode call) through `local` and `ray`.
   Prints seconds of each, the speed-up local/ray and the machine's cores (its ceiling).

Wall-clock on a shared machine: also prints how many cores were busy during each sweep (from
/proc/stat, this bench's processes included): other users' work lowers the speed-up.

    python bench/sweep_bench.py                  # 20 small jobs; 2 of 10 s; 8 of 300 ms/call
    python bench/sweep_bench.py --jobs 16 --work 500 --long 3
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "src"), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]
).rstrip(os.pathsep)

from lexsem.sweep.grid import Grid  # noqa: E402
from lexsem.sweep.runner import run_sweep  # noqa: E402


def _grid(n: int, work: float, cache: Path, *, use_cache: bool = False) -> Grid:
    models = [f"sweepfake:m{i}?work={work}" for i in range(n)]
    return Grid(
        plugins=["builders.sweep_models"],
        defaults={"n_boot": 0, "use_cache": use_cache, "cache_dir": str(cache)},
        blocks=[{"models": models, "benchmarks": ["synthetic/swap_obj"]}],
    )


ENCODE_CALLS = 5  # encode calls of one sweepfake job on synthetic/swap_obj (300 texts, 64 each)


def _busy_cores() -> tuple[int, int]:
    with open("/proc/stat") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def _timed(grid: Grid, out: Path, executor: str) -> tuple[float, float]:
    """(seconds, cores busy meanwhile) of one sweep."""
    busy0, total0 = _busy_cores()
    t0 = time.perf_counter()
    res = run_sweep(grid, out, executor)
    seconds = time.perf_counter() - t0
    busy1, total1 = _busy_cores()
    assert res.complete, [j.error for j in res.jobs if j.error]
    cores = (os.cpu_count() or 1) * (busy1 - busy0) / max(total1 - total0, 1)
    return seconds, cores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=int, default=20, help="small jobs (overhead)")
    ap.add_argument("--jobs", type=int, default=8, help="CPU-bound jobs (speed-up)")
    ap.add_argument("--work", type=float, default=300.0, help="ms of CPU per encode call")
    ap.add_argument("--long", type=int, default=2, help="jobs of --long-s seconds (0: none)")
    ap.add_argument("--long-s", type=float, default=10.0, help="seconds of one long job")
    args = ap.parse_args()
    import ray

    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        small, heavy = _grid(args.small, 0, root / "c"), _grid(args.jobs, args.work, root / "c")
        warm = _grid(args.small, 0, root / "w", use_cache=True)
        run_sweep(_grid(1, 0, root / "c"), root / "warm", "local")  # imports, data files
        local_s, local_busy = _timed(small, root / "small-local", "local")
        run_sweep(warm, root / "fill", "local")  # the request store filled
        warm_local, _ = _timed(warm, root / "warm-local", "local")
        if args.long:
            long_grid = _grid(args.long, 1000 * args.long_s / ENCODE_CALLS, root / "c")
            long_local, _ = _timed(long_grid, root / "long-local", "local")
            t0 = time.perf_counter()
            ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
            one_start = time.perf_counter() - t0
            try:
                long_ray, _ = _timed(long_grid, root / "long-ray", "ray")
            finally:
                ray.shutdown()
            print(f"long jobs: {args.long} jobs of {long_local / args.long:.1f} s: local "
                  f"{long_local:.1f} s, ray of 1 CPU {long_ray:.1f} s + {one_start:.1f} s to "
                  f"start Ray: ray/local = {long_ray / long_local:.2f} "
                  f"({(long_ray + one_start) / long_local:.2f} with the start-up; target "
                  "<= 1.2)")  # fmt: skip
        t0 = time.perf_counter()
        ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False)
        start_s = time.perf_counter() - t0
        try:
            ray_s, ray_busy = _timed(small, root / "small-ray", "ray")
            print(f"overhead: {args.small} small jobs: local {local_s:.2f} s, ray {ray_s:.2f} s "
                  f"(+ {start_s:.1f} s to start Ray): ray/local = {ray_s / local_s:.2f}; "
                  f"{ray_s / args.small * 1000:.0f} ms/job on Ray vs "
                  f"{local_s / args.small * 1000:.0f} ms/job local")  # fmt: skip
            warm_ray, _ = _timed(warm, root / "warm-ray", "ray")
            print(f"warm cache: {args.small} cached jobs: local {warm_local:.2f} s, ray "
                  f"{warm_ray:.2f} s (+ {start_s:.1f} s to start Ray): warm-cache ray/local = "
                  f"{warm_ray / warm_local:.2f}")  # fmt: skip
            heavy_local, busy_l = _timed(heavy, root / "heavy-local", "local")
            heavy_ray, busy_r = _timed(heavy, root / "heavy-ray", "ray")
        finally:
            ray.shutdown()
    print(f"speed-up: {args.jobs} CPU-bound jobs ({args.work:.0f} ms per encode call): "
          f"local {heavy_local:.2f} s, ray {heavy_ray:.2f} s: local/ray = "
          f"{heavy_local / heavy_ray:.2f} on {cores} cores (ceiling {cores})")  # fmt: skip
    print(f"cores busy meanwhile (all processes): small local {local_busy:.1f}, small ray "
          f"{ray_busy:.1f}, heavy local {busy_l:.1f}, heavy ray {busy_r:.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
