"""`make bench`: the study server under load — 50 simulated annotators on 127.0.0.1, then a
launch burst of 200 participants arriving through the crowd link at once.

A study of SugarCrepe++-style questions (the synthetic benchmark, 50 items per subset: TOT and
ITT, 2 practice and
2 gold items, overlap 2, quota 10 items per annotator) is served by `lexsem annotate serve`
(uvicorn, one process) and answered at once by 50 scripted annotators (threads, each with one
kept-alive connection: `lexsem.annotate.simulate`, its `KeptAliveClient` a small share of the
two cores the server runs on), each following its personal link through consent,
instructions, practice and questions. Bounded: at most 50 annotators and `--limit` seconds.

Prints p50 / p95 / max latency per request (and, for the 50 annotators, whether the p95 is
within the 300 ms target, with the machine's load average) and the answers per second, then
checks against the study file that no answer was lost or duplicated (every answer a client
was told was recorded is in the export, once) and that no item has more annotators than the
overlap.

The launch burst: 200 participants (`--burst`) open the crowd join link at the same moment,
each consenting (a new annotator), starting (their items reserved) and answering their 2
items; the same figures and checks, and that every participant became one annotator and no
request failed (no lock timeout: the server answers 503 when the study stays busy). Exits 1 on
a failed check.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from typer.testing import CliRunner

from lexsem.annotate.answers import answers_table
from lexsem.annotate.local_server import LocalServer
from lexsem.annotate.simulate import KeptAliveClient, ScriptedAnnotator
from lexsem.annotate.store import annotators as annotators_of
from lexsem.annotate.store import connect
from lexsem.cli import app

P95_TARGET = 0.300  # seconds: 50 annotators on 2 cores (docs/performance.md)


def _make(folder: Path, *args: str) -> tuple[Path, dict]:
    """A study of the synthetic benchmark (TOT and ITT) and its links."""
    study, links = folder / "bench.sqlite", folder / "links.json"
    res = CliRunner().invoke(app, [
        "annotate", "create", str(study), "-b", "synthetic", "-k", "tot", "-k", "itt",
        "--links", str(links), "--base-url", "", *args,
    ])  # fmt: skip
    if res.exit_code != 0:
        raise RuntimeError(res.output)
    return study, json.loads(links.read_text())


def _run_all(srv: LocalServer, starts: list[str], limit: float, join: bool) -> tuple[
    list[ScriptedAnnotator], list[BaseException], float
]:  # fmt: skip
    """Every participant at once (a thread each, released together); `join`: each starts
    at the crowd link, consents there and goes on in the session that begins."""
    bots: list[ScriptedAnnotator] = []
    errors: list[BaseException] = []
    deadline = time.monotonic() + limit
    gate = threading.Barrier(len(starts))

    def work(i: int, link: str) -> None:
        try:
            with KeptAliveClient(srv.url, timeout=60) as c:
                bot = ScriptedAnnotator(c, link, seed=i)
                bots.append(bot)
                gate.wait(timeout=60)
                if join:
                    bot.link = bot.join()
                if not bot.run(max_steps=500, deadline=deadline):
                    raise RuntimeError(f"participant {i} did not finish in time")
        except BaseException as exc:
            errors.append(exc)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=work, args=(i, p)) for i, p in enumerate(starts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=limit + 90)
    return bots, errors, time.perf_counter() - t0


def _report(
    name: str, study: Path, bots: list[ScriptedAnnotator], errors: list[BaseException],
    wall: float, overlap: int, participants: int, p95_target: float | None = None,
) -> bool:  # fmt: skip
    """Print the figures of a run (against `p95_target` seconds where given: a figure, not a
    check) and check it against the study file; True when it passed."""
    con = connect(study)
    try:
        rows = answers_table(con).to_pylist()
        annotators = len(annotators_of(con))
    finally:
        con.close()
    lat = sorted(x for b in bots for x in b.latencies)
    given = [(b.link, u) for b in bots for u, _ in b.answered]
    q = statistics.quantiles(lat, n=100) if len(lat) > 1 else [0.0] * 99
    print(f"annotate bench, {name}: {len(bots)} participants, {len(lat)} requests, "
          f"{len(rows)} answers in {wall:.1f} s ({len(rows) / wall:.1f} answers/s)")  # fmt: skip
    print(f"  latency per request: p50 {q[49] * 1000:.1f} ms, p95 {q[94] * 1000:.1f} ms, "
          f"max {lat[-1] * 1000:.1f} ms")  # fmt: skip
    if p95_target is not None:
        load = os.getloadavg()[0]
        met = "met" if q[94] <= p95_target else "not met"
        print(f"  p95 target {p95_target * 1000:.0f} ms (on 2 quiet cores): {met}; "
              f"load average {load:.1f} on {os.cpu_count()} cores")  # fmt: skip
    ok = True
    if errors:
        print(f"  FAILED: {len(errors)} participants failed, first: {errors[0]!r}")
        ok = False
    keys = [(r["annotator"], r["kind"], r["item_id"], r["practice"], r["gold"]) for r in rows]
    if len(rows) != len(given) or len(set(keys)) != len(keys):
        print(f"  FAILED: {len(given)} answers sent, {len(rows)} recorded, "
              f"{len(keys) - len(set(keys))} duplicated")  # fmt: skip
        ok = False
    if annotators != participants:
        print(f"  FAILED: {participants} participants, {annotators} annotators in the study")
        ok = False
    main_items = Counter(
        (r["item_id"], r["annotator"]) for r in rows if not r["practice"] and not r["gold"]
    )
    per_item = Counter(item for item, _ in main_items)
    if per_item and max(per_item.values()) > overlap:
        print(f"  FAILED: an item has {max(per_item.values())} annotators (overlap {overlap})")
        ok = False
    print("  checks: no request failed, no answer lost, none duplicated, overlap kept"
          if ok else "  checks FAILED")  # fmt: skip
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--annotators", type=int, default=50)
    ap.add_argument("--quota", type=int, default=10)
    ap.add_argument("--burst", type=int, default=200, help="participants of the launch burst")
    ap.add_argument("--limit", type=float, default=300.0, help="seconds per run, at most")
    args = ap.parse_args()
    n = min(args.annotators, 50)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "load"
        folder.mkdir()
        study, links = _make(folder, "--sample", "50", "--practice", "2", "--gold", "2",
                             "--overlap", "2", "--quota", str(args.quota),
                             "-n", str(n))  # fmt: skip
        with LocalServer(study) as srv:
            bots, errors, wall = _run_all(srv, list(links["annotators"].values()), args.limit,
                                          join=False)  # fmt: skip
        ok &= _report(f"{n} annotators", study, bots, errors, wall, 2, n, P95_TARGET)
        if args.burst > 0:
            folder = Path(tmp) / "burst"
            folder.mkdir()
            study, links = _make(folder, "--sample", "50", "--overlap", "2", "--quota", "2")
            with LocalServer(study) as srv:
                bots, errors, wall = _run_all(srv, [links["join"]] * args.burst, args.limit,
                                              join=True)  # fmt: skip
            ok &= _report(f"launch burst of {args.burst}", study, bots, errors, wall, 2,
                          args.burst)  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
