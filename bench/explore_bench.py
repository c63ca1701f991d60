"""`make bench`: `lexsem explore` over 10 runs of 50,000 items (synthetic run folders written
as `lexsem eval` writes them, tests/builders/explore_runs.py): the time to open and join them
(target under 1 s) and to select a slice (target under 300 ms each: every model wrong, run A
right and B wrong, a margin range sorted by margin, sorted by disagreement, a subset), each
the best of `--repeat` tries; and pages served (the route, 50 rows: the whole table, slices
whose intervals are bootstrapped, the next page of one, its counts kept). Prints the
figures; exits 1 when a target is missed."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from builders.explore_runs import synthetic_runs
from lexsem.explore.runs_table import open_runs
from lexsem.explore.slices import Slice, select

SLICES = {
    "every model wrong": Slice(all_wrong=True),
    "run 0 right, run 1 wrong": Slice(right=0, wrong=1),
    "margin in [-0.1, 0], by margin": Slice(mmin=-0.1, mmax=0.0, sort="margin"),
    "by disagreement": Slice(sort="disagreement"),
    "one subset, ties": Slice(subset="swap_obj", ties=True),
}


def _best(fn, repeat: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--items", type=int, default=50_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        folders = synthetic_runs(Path(tmp), args.runs, args.items)
        open_s, table = _best(lambda: open_runs(folders), args.repeat)
        ok = open_s < 1.0
        failed |= not ok
        print(f"explore: open {args.runs} runs x {args.items} items ({len(table)} rows): "
              f"{open_s * 1000:.0f} ms (target < 1000 ms){'' if ok else ' MISSED'}")  # fmt: skip
        for name, s in SLICES.items():
            t, rows = _best(lambda s=s: select(table, s), args.repeat)
            ok = t < 0.3
            failed |= not ok
            print(f"explore: slice {name}: {len(rows)} rows in {t * 1000:.0f} ms "
                  f"(target < 300 ms){'' if ok else ' MISSED'}")  # fmt: skip
        from fastapi.testclient import TestClient

        from lexsem.explore.app import create_app

        client = TestClient(create_app(table, n_boot=1000))
        client.get("/?right=0&wrong=1&metric=tot&subset=add_rel&mmax=-0.5")  # imports scipy
        for url in ("/", "/?all_wrong=1&sort=margin", "/?right=1&wrong=2&subset=swap_att",
                    "/?all_wrong=1&sort=margin&page=2"):  # fmt: skip
            t0 = time.perf_counter()
            res = client.get(url)
            ms = (time.perf_counter() - t0) * 1000
            print(f"explore: the page {url} (50 rows, {args.runs} runs' counts and intervals): "
                  f"{ms:.0f} ms, status {res.status_code}")  # fmt: skip
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
