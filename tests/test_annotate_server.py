"""The study server as a real process (`lexsem annotate serve` under uvicorn, 127.0.0.1): killed
with SIGKILL mid-study and restarted, it has lost no answer and serves each annotator the same
unanswered unit, never giving an item to more annotators than the overlap; and a small load
test (the full one is `bench/annotate_bench.py` in `make bench`): concurrent annotators, each
on a `KeptAliveClient` as the benchmark's are, every answer recorded exactly once."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from builders.annotate_studies import make_study, need_annotate_extra
from lexsem.annotate.answers import answers_table
from lexsem.annotate.local_server import LocalServer
from lexsem.annotate.simulate import KeptAliveClient, ScriptedAnnotator, parse_page
from lexsem.annotate.store import connect

need_annotate_extra()


def test_kill_9_and_restart_mid_study(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "6", "-k", "tot",
                      "--overlap", "2", "--quota", "3", "-n", "5")  # fmt: skip
    srv = LocalServer(made.path)
    with srv, httpx.Client(base_url=srv.url) as c:
        bots = {a: ScriptedAnnotator(c, link, seed=i)
                for i, (a, link) in enumerate(made.annotators.items())}  # fmt: skip
        for a in ("a0001", "a0002", "a0003"):  # three annotators answer 2 of their 3 items
            assert not bots[a].run(max_steps=4)
        pending = parse_page(c.get(made.annotators["a0001"], follow_redirects=True).text).page
        assert pending is not None
    assert srv.proc is not None and srv.proc.returncode == -9
    before = answers_table(connect(made.path)).to_pylist()
    assert len(before) == 6
    with LocalServer(made.path, port=srv.port) as srv2, httpx.Client(base_url=srv2.url) as c:
        assert (
            parse_page(c.get(made.annotators["a0001"], follow_redirects=True).text).page == pending
        )
        for i, (a, link) in enumerate(made.annotators.items()):
            bot = ScriptedAnnotator(c, link, seed=100 + i)
            assert bot.run(max_steps=20), a
    rows = answers_table(connect(made.path)).to_pylist()
    for row in before:  # nothing lost, nothing changed
        assert row in rows
    assert Counter(r["item_id"] for r in rows) == dict.fromkeys({r["item_id"] for r in rows}, 2)
    assert len(rows) == 12  # 6 items x overlap 2: a0005 found the study full
    assert len({(r["annotator"], r["item_id"]) for r in rows}) == 12


def test_concurrent_annotators_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    n, quota = 8, 3
    made = make_study(tmp_path, "-b", "synthetic/replace_obj", "--sample", "12", "-k", "tot",
                      "--overlap", "2", "--quota", str(quota), "-n", str(n))  # fmt: skip
    errors: list[BaseException] = []
    done: list[ScriptedAnnotator] = []
    deadline = time.monotonic() + 120
    with LocalServer(made.path) as srv:

        def work(i: int, link: str) -> None:
            try:
                with KeptAliveClient(srv.url, timeout=30) as c:
                    bot = ScriptedAnnotator(c, link, seed=i)
                    assert bot.run(max_steps=50, deadline=deadline)
                    done.append(bot)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i, link))
                   for i, link in enumerate(made.annotators.values())]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=150)
    assert not errors, errors[0]
    rows = answers_table(connect(made.path)).to_pylist()
    given = sorted((b.link, u, a) for b in done for u, a in b.answered)
    assert len(rows) == n * quota == len(given)
    assert len({(r["annotator"], r["item_id"]) for r in rows}) == len(rows)
    assert max(Counter(r["item_id"] for r in rows).values()) <= 2
