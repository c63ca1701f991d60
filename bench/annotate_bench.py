"""`make bench`: the study server under load — 50 simulated annotators on 127.0.0.1.

A study of SugarCrepe++-style questions (the synthetic benchmark, 50 items per subset: TOT and
ITT, 2 practice and
2 gold items, overlap 2, quota 10 items per annotator) is served by `lexsem annotate serve`
(uvicorn, one process) and answered at once by 50 scripted annotators (threads with httpx,
`lexsem.annotate.simulate`), each following its personal link through consent, instructions,
practice and questions. Bounded: at most 50 annotators and `--limit` seconds.

Prints p50 / p95 / max latency per request and the answers per second, then checks against the
study file that no answer was lost or duplicated (every answer a client was told was recorded
is in the export, once) and that no item has more annotators than the overlap. Exits 1 on a
failed check.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
from typer.testing import CliRunner

from lexsem.annotate.answers import answers_table
from lexsem.annotate.local_server import LocalServer
from lexsem.annotate.simulate import ScriptedAnnotator
from lexsem.annotate.store import connect
from lexsem.cli import app


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--annotators", type=int, default=50)
    ap.add_argument("--quota", type=int, default=10)
    ap.add_argument("--limit", type=float, default=300.0, help="seconds, at most")
    args = ap.parse_args()
    n = min(args.annotators, 50)
    with tempfile.TemporaryDirectory() as tmp:
        study, links = Path(tmp) / "bench.sqlite", Path(tmp) / "links.json"
        res = CliRunner().invoke(app, [
            "annotate", "create", str(study), "-b", "synthetic", "--sample", "50",
            "-k", "tot", "-k", "itt",
            "--practice", "2", "--gold", "2", "--overlap", "2", "--quota", str(args.quota),
            "-n", str(n), "--links", str(links), "--base-url", "",
        ])  # fmt: skip
        if res.exit_code != 0:
            print(res.output, file=sys.stderr)
            return 1
        paths = list(json.loads(links.read_text())["annotators"].values())
        bots: list[ScriptedAnnotator] = []
        errors: list[BaseException] = []
        deadline = time.monotonic() + args.limit
        with LocalServer(study) as srv:

            def work(i: int, link: str) -> None:
                try:
                    with httpx.Client(base_url=srv.url, timeout=60) as c:
                        bot = ScriptedAnnotator(c, link, seed=i)
                        bots.append(bot)
                        if not bot.run(max_steps=500, deadline=deadline):
                            raise RuntimeError(f"annotator {i} did not finish in time")
                except BaseException as exc:
                    errors.append(exc)

            t0 = time.perf_counter()
            threads = [threading.Thread(target=work, args=(i, p)) for i, p in enumerate(paths)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=args.limit + 30)
            wall = time.perf_counter() - t0
        rows = answers_table(connect(study)).to_pylist()
    lat = sorted(x for b in bots for x in b.latencies)
    given = [(b.link, u) for b in bots for u, _ in b.answered]
    q = statistics.quantiles(lat, n=100) if len(lat) > 1 else [0.0] * 99
    print(f"annotate bench: {n} annotators, {len(lat)} requests, {len(rows)} answers in "
          f"{wall:.1f} s ({len(rows) / wall:.1f} answers/s)")  # fmt: skip
    print(f"  latency per request: p50 {q[49] * 1000:.1f} ms, p95 {q[94] * 1000:.1f} ms, "
          f"max {lat[-1] * 1000:.1f} ms")  # fmt: skip
    ok = True
    if errors:
        print(f"  FAILED: {len(errors)} annotators failed, first: {errors[0]!r}")
        ok = False
    keys = [(r["annotator"], r["kind"], r["item_id"], r["practice"], r["gold"]) for r in rows]
    if len(rows) != len(given) or len(set(keys)) != len(keys):
        print(f"  FAILED: {len(given)} answers sent, {len(rows)} recorded, "
              f"{len(keys) - len(set(keys))} duplicated")  # fmt: skip
        ok = False
    main_items = Counter(
        (r["item_id"], r["annotator"]) for r in rows if not r["practice"] and not r["gold"]
    )
    per_item = Counter(item for item, _ in main_items)
    if per_item and max(per_item.values()) > 2:
        print(f"  FAILED: an item has {max(per_item.values())} annotators (overlap 2)")
        ok = False
    print("  checks: no answer lost, none duplicated, overlap kept" if ok else "  checks FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
