"""The writes of a launch burst are few and short (docs/human-studies.md, "Launch bursts"): a
start reserves the items, records the start and serves the first question in one write
transaction; an answer serves the next question in its own, so the page the browser is sent
to reads without writing; a `write` inside another is part of it; and the study's units are
read once per study, never another study's at the same path; a participant's request is served on
the event loop, an admin page in a worker thread."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from builders.annotate_studies import MadeStudy, make_study, need_annotate_extra, open_link

need_annotate_extra()

from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate import store  # noqa: E402
from lexsem.annotate.app import create_app  # noqa: E402
from lexsem.annotate.simulate import parse_page  # noqa: E402

ARGS = ("-b", "synthetic", "--sample", "3", "-k", "tot", "--practice", "1", "-n", "1")


@pytest.fixture
def study(tmp_path: Path) -> MadeStudy:
    return make_study(tmp_path, *ARGS)


def _count_write_transactions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every `BEGIN IMMEDIATE` (a write transaction) on the connections opened from now on."""
    began: list[str] = []
    real = store.connect

    def traced(path: str | Path, **kw: bool) -> sqlite3.Connection:
        con = real(path, **kw)
        con.set_trace_callback(lambda sql: began.append(sql) if sql == "BEGIN IMMEDIATE" else None)
        return con

    monkeypatch.setattr(store, "connect", traced)
    return began


def _post_form(c: TestClient, link: str, answer: bool = False) -> str:
    """Post the form of `link`'s current page (with `answer`, its hidden fields and its first
    answer); where the server sends the browser next."""
    html = c.get(link).text
    page = parse_page(html)
    data = {"csrf": page.csrf}
    if answer:
        data |= dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))
        data["answer"] = page.answers[0]
    res = c.post(page.action, data=data)
    assert res.status_code == 303, res.text
    return res.headers["location"]


def test_a_start_and_an_answer_serve_the_next_question_in_their_own_write(
    study: MadeStudy, monkeypatch: pytest.MonkeyPatch
) -> None:
    began = _count_write_transactions(monkeypatch)
    c = TestClient(create_app(study.path), follow_redirects=False)
    (link,) = study.annotators.values()
    link = open_link(c, link)  # the session: one write
    assert len(began) == 1
    began.clear()
    _post_form(c, link)  # consent: one write
    assert len(began) == 1
    _post_form(c, link)  # start: the reservation, the start and the first question, one write
    assert len(began) == 2
    con = store.connect(study.path)
    (aid,) = [a.id for a in store.annotators(con)]
    first = store.annotator_units(con, aid)[0]
    assert first.practice and first.page is not None  # served with the start
    page = parse_page(c.get(link).text)  # the first question's page: no write
    assert page.answers and len(began) == 2
    assert _post_form(c, link, answer=True).endswith(f"/feedback/{first.page}")  # practice: 1 write
    assert len(began) == 3
    main = store.annotator_units(con, aid)[1]
    assert main.page is None  # after practice the feedback page comes first: not yet served
    parse_page(c.get(link).text)  # so showing it writes
    assert len(began) == 4
    _post_form(c, link, answer=True)  # a main answer, and the next question served with it
    assert len(began) == 5
    after = store.annotator_units(con, aid)
    assert after[1].answer is not None and after[2].page is not None
    assert parse_page(c.get(link).text).answers and len(began) == 5  # read only
    con.close()


def test_a_write_inside_a_write_is_part_of_it(study: MadeStudy) -> None:
    con = store.connect(study.path)
    with pytest.raises(RuntimeError), store.write(con):
        store.set_meta(con, "outer", 1)
        with store.write(con):
            store.set_meta(con, "inner", 2)
        assert con.in_transaction  # the inner block did not commit
        raise RuntimeError
    assert store.get_meta(con, "outer") is None and store.get_meta(con, "inner") is None
    with store.write(con), store.write(con):
        store.set_meta(con, "inner", 3)
    assert not con.in_transaction and store.get_meta(con, "inner") == 3
    con.close()


def _payloads(path: Path) -> list[dict]:
    raw = sqlite3.connect(path)
    rows = raw.execute("SELECT payload FROM units ORDER BY position").fetchall()
    raw.close()
    return [json.loads(p) for (p,) in rows]


def test_units_of_another_study_at_the_same_path_are_read_anew(tmp_path: Path) -> None:
    a = make_study(tmp_path / "a", *ARGS, "--seed", "1")
    b = make_study(tmp_path / "b", *ARGS, "--seed", "2")
    assert _payloads(a.path) != _payloads(b.path)  # other items, the same number of units
    con = store.connect(a.path)
    assert [u.payload for u in store.units(con)] == _payloads(a.path)
    con.close()
    shutil.copyfile(b.path, a.path)  # another study where the first was
    con = store.connect(a.path)
    assert [u.payload for u in store.units(con)] == _payloads(b.path)
    con.close()


def test_participants_routes_run_on_the_event_loop_and_admin_routes_in_threads(
    study: MadeStudy,
) -> None:
    """A participant's request is a few statements and a page: served on the event loop, with
    no hop to a worker thread and back; the admin pages (which read every answer) run in
    worker threads so that they do not hold participants up."""
    import inspect

    from fastapi.routing import APIRoute

    routes = [r for r in create_app(study.path).routes if isinstance(r, APIRoute)]
    on_loop = {r.path for r in routes if inspect.iscoroutinefunction(r.endpoint)}
    in_threads = {r.path for r in routes} - on_loop
    assert {
        "/join/{token}",
        "/a/{token}",
        "/s",
        "/s/consent",
        "/s/start",
        "/s/answer",
        "/s/feedback/{page}",
        "/s/img/{name}",
    } <= on_loop
    assert in_threads and all(p.startswith("/admin/") for p in in_threads)  # fmt: skip
