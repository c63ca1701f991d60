"""A study run for a paid crowd that cannot game it: no question page names the right option
(every task kind), answers only for the question the server served (page tokens, server
timing), a study that fills, pauses and closes, join participants who hold a batch at a time,
idle reservations that go back to the pool (the study's clock moved on, `store.clock`), a
capped join link, revoked and expiring links, a rotated admin token, and completion codes that
are each participant's own and earned by work (`annotate verify`, the participants export)."""

from __future__ import annotations

import csv
import io
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.annotate_studies import (
    HOME,
    MadeStudy,
    make_study,
    need_annotate_extra,
    right_policy,
    served,
)
from lexsem.annotate import lifecycle, store
from lexsem.annotate.answers import answers_table
from lexsem.annotate.config import StudySettings
from lexsem.annotate.store import connect
from lexsem.annotate.study import load_settings
from lexsem.cli import app

need_annotate_extra()

from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate.app import create_app  # noqa: E402
from lexsem.annotate.simulate import Page, ScriptedAnnotator, parse_page  # noqa: E402


def client(made: MadeStudy, **kw: object) -> TestClient:
    return TestClient(create_app(made.path, **kw))  # type: ignore[arg-type]


def cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["annotate", *args])
    return res.exit_code, res.output


def n_answers(made: MadeStudy) -> int:
    return len(answers_table(connect(made.path)))


def past_consent(c: TestClient, link: str) -> Page:
    """Consent and start; the first question page."""
    for _ in range(2):
        page = parse_page(c.get(link).text)
        assert c.post(page.action, data={"csrf": page.csrf}).status_code == 200
    return parse_page(c.get(link).text)


def browser(c: TestClient) -> TestClient:
    """Another browser (its own cookie jar) on `c`'s server."""
    return TestClient(c.app)


def join(c: TestClient, made: MadeStudy) -> TestClient:
    """A participant through the join link, in a browser of their own (a client of `c`'s
    server): the client, holding their session (their pages are at `HOME`)."""
    mine = browser(c)
    page = parse_page(mine.get(made.join).text)
    res = mine.post(page.action, data={"csrf": page.csrf}, follow_redirects=False)
    assert res.status_code == 303 and res.headers["location"] == HOME, res.text
    return mine


def skip_policy(page: Page, rng: object) -> str:
    return "skip"


# --- nothing in the page names a role --------------------------------------------------------


class _Attributes(HTMLParser):
    """Every attribute of a page: (tag, name, value); and each button's attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.attrs: list[tuple[str, str, str]] = []
        self.buttons: list[dict[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        got = {k: v or "" for k, v in attrs}
        self.attrs += [(tag, k, v) for k, v in got.items()]
        if tag == "button":
            self.buttons.append(got)


def leaks(html: str, roles: set[str]) -> list[str]:
    """What in the page's attributes names a role (an option id, the right answer) or the
    unit: a value that is one, a path segment or file name that is one, a field named
    "unit"."""
    found = []
    parser = _Attributes()
    parser.feed(html)
    for tag, name, value in parser.attrs:
        parts = {value, *value.split("/"), *(p.split(".")[0] for p in value.split("/"))}
        if parts & roles or (name == "name" and value == "unit"):
            found.append(f"<{tag} {name}={value!r}>")
    return found


def test_the_leak_check_can_fail() -> None:
    page = '<button type="submit" name="answer" value="n"><img src="/a/t/img/image0.png">'
    assert leaks(page, {"n", "p1", "p2"}) == ["<button value='n'>"]
    assert leaks(page, {"image0"}) == ["<img src='/a/t/img/image0.png'>"]
    assert leaks('<input type="hidden" name="unit" value="7">', set())
    assert not leaks('<button value="3" data-key="3">', {"n", "p1", "p2"})


@pytest.mark.parametrize(
    ("selector", "kinds"),
    [
        ("synthetic/swap_att", ("tot", "itt", "pair", "validate")),
        ("synthetic_bi/swap_att", ("bivlc_i2t", "bivlc_t2i", "best_of_k", "ambiguity")),
    ],
)
def test_no_question_page_names_the_right_option(
    tmp_path: Path, selector: str, kinds: tuple[str, ...]
) -> None:
    """Every question page of every kind (practice, gold and main): no attribute names an
    option's role or the unit, and the right option's button differs from the others only
    in its place."""
    kind_args = [a for k in kinds for a in ("-k", k)]
    made = make_study(tmp_path, "-b", selector, "--sample", "2", "--practice", "1", "--gold",
                      "1", *kind_args, "-n", "1")  # fmt: skip
    c = client(made)
    link = made.annotators["a0001"]
    page = past_consent(c, link)
    seen: set[tuple[str, bool, bool]] = set()
    policy = right_policy(made.path)
    for _ in range(100):
        html = c.get(link).text
        page = parse_page(html)
        if page.done:
            break
        if page.page is None:  # practice feedback: it shows the right answer, after answering
            assert "verdict" in html
            continue
        unit = served(made.path, page)
        seen.add((unit.kind, unit.practice, unit.gold))
        roles = {o["id"] for o in unit.payload["options"]} | {unit.correct or "accept"}
        roles -= {"accept"}  # validate's fixed choices are what the page shows
        assert leaks(html, roles) == [], (unit.kind, unit.practice, unit.gold)
        parser = _Attributes()
        parser.feed(html)
        options = [b for b in parser.buttons if "option" in b.get("class", "")]
        shapes = {tuple(sorted(k for k in b if k not in ("value", "data-key", "accesskey")))
                  for b in options}  # fmt: skip
        assert len(shapes) <= 1 and {b["class"] for b in options} <= {"option"}
        assert "gold" not in html.lower()
        data = {"csrf": page.csrf, "page": page.page, "answer": policy(page, None)}
        res = c.post(page.action, data=data, follow_redirects=True)
        assert res.status_code == 200
    else:
        raise AssertionError("the study did not end")
    assert {k for k, _, _ in seen} == set(kinds)
    assert any(p for _, p, _ in seen) and any(g for _, _, g in seen)


# --- served order and timing are the server's ------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> MadeStudy:
    return make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "3", "-k", "tot",
                      "--practice", "1", "--gold", "1", "--overlap", "2", "-n", "2",
                      "--completion-code", "C")  # fmt: skip


def test_an_answer_for_a_question_never_shown_is_refused(small: MadeStudy) -> None:
    c = client(small)
    link = small.annotators["a0001"]
    page = past_consent(c, link)
    con = connect(small.path)
    unseen = con.execute(
        "SELECT COUNT(*) FROM assignments WHERE annotator = 'a0001' AND page IS NULL"
    ).fetchone()[0]
    assert unseen == 4  # gold and main units get a page token only when served
    for data in (
        {"unit": "3", "answer": "1"},  # the old form: a unit id
        {"page": "", "answer": "1"},
        {"page": "None", "answer": "1"},
        {"page": "x" * 43, "answer": "1"},
    ):
        res = c.post(page.action, data={"csrf": page.csrf, **data})
        assert 400 <= res.status_code < 500, data
    other = past_consent(browser(c), small.annotators["a0002"])  # another's page token
    res = c.post(page.action, data={"csrf": page.csrf, "page": other.page, "answer": "1"})
    assert res.status_code == 404
    assert n_answers(small) == 0


def test_practice_and_gold_cannot_be_answered_unseen_and_old_pages_are_refused(
    small: MadeStudy,
) -> None:
    c = client(small)
    link = small.annotators["a0001"]
    first = past_consent(c, link)
    assert served(small.path, first).practice
    data = {"csrf": first.csrf, "page": first.page, "answer": "1"}
    assert c.post(first.action, data=data, follow_redirects=False).status_code == 303
    for answer in ("1", "2", "skip"):  # the practice page again: refused, nothing changed
        res = c.post(first.action, data={**data, "answer": answer}, follow_redirects=False)
        assert res.status_code == 409
    nxt = parse_page(c.get(link).text)
    assert nxt.page != first.page
    rows = answers_table(connect(small.path)).to_pylist()
    assert len(rows) == 1 and rows[0]["practice"]
    con = connect(small.path)
    (gold_page,) = con.execute(
        "SELECT a.page FROM assignments a JOIN units u ON u.id = a.unit"
        " WHERE a.annotator = 'a0001' AND u.gold = 1"
    ).fetchone()
    # the gold unit has a page token (so it can be answered) only once it was shown
    assert (gold_page is None) == (not served(small.path, nxt).gold)
    assert (
        con.execute(
            "SELECT COUNT(*) FROM assignments WHERE annotator = 'a0001' AND page IS NOT NULL"
        ).fetchone()[0]
        == 2
    )  # the practice unit and the question now shown, no other


def test_seconds_come_from_the_server(small: MadeStudy) -> None:
    c = client(small)
    page = past_consent(c, small.annotators["a0001"])
    time.sleep(0.3)
    c.post(page.action, data={"csrf": page.csrf, "page": page.page, "answer": "1",
                              "seconds": "0.001", "served_at": "0"})  # fmt: skip
    (row,) = answers_table(connect(small.path)).to_pylist()
    assert row["seconds"] >= 0.3


# --- study lifecycle ------------------------------------------------------------------------


@pytest.fixture
def nine(tmp_path: Path) -> MadeStudy:
    """9 items, overlap 1, quota 3 (the issue's case)."""
    return make_study(tmp_path, "-b", "synthetic/replace_obj", "--sample", "9", "-k", "tot",
                      "--overlap", "1", "--quota", "3", "-n", "1",
                      "--completion-code", "C")  # fmt: skip


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The study's clock (`store.clock`, seconds), moved on by hand: ``clock[0] += 60``."""
    now = [time.time()]
    monkeypatch.setattr(store, "clock", lambda: now[0])
    return now


def free_items(made: MadeStudy) -> int:
    """The main items a new participant could be given now (idle holders not counted)."""
    con = connect(made.path)
    try:
        settings = load_settings(con)
        return lifecycle.free_items(con, settings, settings.reservation_minutes)
    finally:
        con.close()


def released(made: MadeStudy) -> set[str]:
    """The annotators whose reservation went back to the pool."""
    con = connect(made.path)
    try:
        return {who.id for who in store.annotators(con) if who.released_at is not None}
    finally:
        con.close()


def start_and_leave(c: TestClient, link: str = HOME) -> None:
    page = parse_page(c.get(link).text)
    if "Consent" in c.get(link).text:
        c.post(page.action, data={"csrf": page.csrf})
        page = parse_page(c.get(link).text)
    c.post(page.action, data={"csrf": page.csrf})  # start: items reserved, nothing answered


def test_idle_reservations_go_back_to_the_pool(nine: MadeStudy, clock: list[float]) -> None:
    """Three scripted joins that answer nothing hold every item; once idle for the
    reservation time (the server's, shorter than the study's first-answer time), a real
    participant gets questions and a code."""
    c = client(nine, reservation_minutes=1)
    bots = [join(c, nine) for _ in range(3)]
    for bot in bots:
        start_and_leave(bot)
    assert "This study is full" in c.get(nine.join).text  # while they are active
    clock[0] += 61
    real = ScriptedAnnotator(c, nine.annotators["a0001"], right_policy(nine.path))
    assert real.run(max_steps=40) and real.code is not None
    assert len(real.answered) == 3
    con = connect(nine.path)
    released = con.execute(
        "SELECT COUNT(*) FROM annotators WHERE released_at IS NOT NULL"
    ).fetchone()[0]
    assert released >= 1  # a scripted join's items went back


def test_a_returning_idle_participant_gets_new_items_or_no_code(
    nine: MadeStudy, clock: list[float]
) -> None:
    c = client(nine, reservation_minutes=1)
    idle = join(c, nine)
    start_and_leave(idle)
    clock[0] += 61
    for _ in range(3):  # three others take every item while the first is away
        assert ScriptedAnnotator(join(c, nine), HOME, right_policy(nine.path)).run(max_steps=40)
    html = idle.get(HOME).text
    assert "No completion code" in html and "reservation ran out" in html
    assert 'class="code"' not in html


JOIN_BATCH = StudySettings.model_fields["join_batch"].default
FIRST_ANSWER = StudySettings.model_fields["first_answer_minutes"].default
RESERVATION = StudySettings.model_fields["reservation_minutes"].default


@pytest.fixture
def twenty(tmp_path: Path) -> MadeStudy:
    """20 items, overlap 1, no quota: the study's default settings otherwise."""
    return make_study(tmp_path, "-b", "synthetic/replace_obj", "--sample", "20", "-k", "tot",
                      "--overlap", "1", "-n", "1", "--completion-code", "C")  # fmt: skip


def test_scripted_joins_hold_a_small_batch_each_not_the_study(twenty: MadeStudy) -> None:
    """Three scripted joins that start and never answer hold a batch each (the default
    `join_batch`), not every item: a real participant who joins next gets questions and a
    code at once."""
    assert 1 <= JOIN_BATCH <= 10
    c = client(twenty)
    for _ in range(3):
        start_and_leave(join(c, twenty))
    assert free_items(twenty) == 20 - 3 * JOIN_BATCH
    real = ScriptedAnnotator(join(c, twenty), HOME, right_policy(twenty.path))
    assert real.run(max_steps=40) and real.code is not None
    assert len(real.answered) == min(JOIN_BATCH, 20 - 3 * JOIN_BATCH)


def test_a_join_participant_gets_the_next_batch_as_they_answer(tmp_path: Path) -> None:
    """Batches of 3 up to the quota of 7 (3 + 3 + 1), each reserved as the one before is
    answered; then a code. Without a quota, batches until the pool is empty."""
    made = make_study(tmp_path, "-b", "synthetic/replace_obj", "--sample", "9", "-k", "tot",
                      "--overlap", "1", "--quota", "7", "--join-batch", "3",
                      "--completion-code", "C")  # fmt: skip
    c = client(made)
    mine = join(c, made)
    start_and_leave(mine)
    con = connect(made.path)
    (who,) = store.annotators(con)
    assert who.target == 3 and store.work(con, who.id).main == 3
    bot = ScriptedAnnotator(mine, HOME, right_policy(made.path))
    assert bot.run(max_steps=40) and bot.code is not None and len(bot.answered) == 7
    (who,) = store.annotators(con)
    assert who.target == 7 and store.work(con, who.id).items_done == 7
    other = ScriptedAnnotator(join(c, made), HOME, right_policy(made.path))
    assert other.run(max_steps=40) and other.code is not None and len(other.answered) == 2
    con.close()


def test_idle_joins_give_their_batch_back_after_the_first_answer_time(
    twenty: MadeStudy, clock: list[float]
) -> None:
    """A join that answered nothing is idle after `first_answer_minutes`; one that answered
    a question after `reservation_minutes` without another; their unanswered items go back
    to the pool when the next participant starts."""
    assert 0 < FIRST_ANSWER < RESERVATION
    c = client(twenty)
    bots = [join(c, twenty) for _ in range(3)]
    for bot in bots:
        start_and_leave(bot)
    worker = join(c, twenty)
    start_and_leave(worker)
    page = parse_page(worker.get(HOME).text)
    res = worker.post(page.action, data={"csrf": page.csrf, "page": page.page, "answer": "1"})
    assert res.status_code == 200 and len(answers_table(connect(twenty.path))) == 1
    assert free_items(twenty) == 20 - 4 * JOIN_BATCH
    clock[0] += 60 * FIRST_ANSWER - 5
    assert free_items(twenty) == 20 - 4 * JOIN_BATCH  # not yet
    clock[0] += 10
    assert free_items(twenty) == 20 - JOIN_BATCH  # the three who answered nothing are idle
    assert released(twenty) == set()  # given back when someone next starts
    start_and_leave(join(c, twenty))
    assert released(twenty) == {"a0002", "a0003", "a0004"}
    assert free_items(twenty) == 20 - 2 * JOIN_BATCH
    clock[0] += 60 * RESERVATION
    assert free_items(twenty) == 20 - 1  # every holder idle: only the answered item is held
    html = bots[0].get(HOME).text  # a scripted join back: new items from the pool
    assert parse_page(html).page is not None and released(twenty) >= {"a0005"}


def test_a_full_study_is_said_before_consent_and_gives_no_code(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "2", "-k", "tot",
                      "--practice", "1", "--gold", "1", "--overlap", "1", "-n", "2")  # fmt: skip
    c = client(made)
    assert ScriptedAnnotator(c, made.annotators["a0001"]).run(max_steps=40)
    people = connect(made.path).execute("SELECT COUNT(*) FROM annotators").fetchone()[0]
    for link in (made.join, made.annotators["a0002"]):
        html = c.get(link).text
        assert "This study is full" in html and "Consent" not in html and "csrf" not in html
    bot = ScriptedAnnotator(c, made.annotators["a0002"])
    assert bot.run(max_steps=5) and bot.code is None
    con = connect(made.path)
    assert con.execute("SELECT COUNT(*) FROM annotators").fetchone()[0] == people
    assert (
        con.execute("SELECT COUNT(*) FROM assignments WHERE annotator = 'a0002'").fetchone()[0] == 0
    )  # no practice, no gold
    assert "answered" not in c.get(made.annotators["a0002"]).text


def test_the_join_link_has_a_participant_cap(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "5", "-k", "tot",
                      "--max-participants", "2")  # fmt: skip
    c = client(made)
    join(c, made)
    page = parse_page(c.get(made.join).text)
    join(c, made)
    assert "all the participants it needs" in c.get(made.join).text
    res = c.post(page.action, data={"csrf": page.csrf}, follow_redirects=False)  # an old form
    assert res.status_code == 200 and "all the participants it needs" in res.text
    assert connect(made.path).execute("SELECT COUNT(*) FROM annotators").fetchone()[0] == 2


def test_pause_close_reopen(small: MadeStudy) -> None:
    c = client(small)
    link = small.annotators["a0001"]
    page = past_consent(c, link)
    assert cli("pause", str(small.path)) == (0, f"{small.path}: open -> paused\n")
    res = c.post(page.action, data={"csrf": page.csrf, "page": page.page, "answer": "1"})
    assert res.status_code == 409 and "not saved" in res.text
    assert "paused" in c.get(link).text and "paused" in c.get(small.join).text
    assert n_answers(small) == 0
    assert cli("reopen", str(small.path))[0] == 0
    bot = ScriptedAnnotator(c, link, right_policy(small.path))
    assert bot.run(max_steps=40) and bot.code
    assert cli("close", str(small.path)) == (0, f"{small.path}: open -> closed\n")
    assert bot.code in c.get(link).text  # an earned code is still shown
    for other in (small.annotators["a0002"], small.join):
        html = c.get(other).text
        assert "closed" in html and "Consent" not in html


def test_revoke_a_link_and_rotate_the_admin_token(small: MadeStudy) -> None:
    c = client(small)
    link = small.annotators["a0002"]
    past_consent(c, link)
    code, out = cli("revoke", str(small.path), "a0002")
    assert code == 0 and "a0002" in out
    assert c.get(HOME).status_code == 403  # the revoked link's session has ended
    assert c.get(link).status_code == 410
    con = connect(small.path)
    assert (
        con.execute(
            "SELECT COUNT(*) FROM assignments a JOIN units u ON u.id = a.unit"
            " WHERE a.annotator = 'a0002' AND u.practice = 0 AND u.gold = 0"
        ).fetchone()[0]
        == 0
    )  # their items went back
    assert cli("revoke", str(small.path), "a0002")[0] == 2  # already revoked
    code, out = cli("revoke", str(small.path), small.join)
    assert code == 0 and "join link" in out
    assert c.get(small.join).status_code == 404
    assert c.get(small.admin).status_code == 200
    code, out = cli("rotate-admin", str(small.path), "--base-url", "")
    assert code == 0
    new = out.split("admin: ", 1)[1].split()[0]
    assert c.get(small.admin).status_code == 404  # the running server sees it at once
    assert c.get(new).status_code == 200


def test_links_expire_unless_started(tmp_path: Path, clock: list[float]) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "2", "-k", "tot",
                      "-n", "2", "--link-hours", "1")  # fmt: skip
    c = client(made)
    past_consent(c, made.annotators["a0001"])
    clock[0] += 3601
    assert c.get(made.annotators["a0002"]).status_code == 410
    assert c.get(made.annotators["a0001"]).status_code == 200  # started: keeps working


def test_admin_page_shows_state_participants_items_and_exports(small: MadeStudy) -> None:
    c = client(small)
    assert ScriptedAnnotator(c, small.annotators["a0001"], right_policy(small.path)).run()
    html = c.get(small.admin).text
    assert "State: <b>open</b>" in html and 'id="participants"' in html and 'id="items"' in html
    assert f"take {JOIN_BATCH} items at a time" in html and "30.0 idle minutes" in html
    assert f"({FIRST_ANSWER:.1f} for a participant who has answered nothing)" in html
    page = parse_page(html)
    res = c.post(f"{small.admin}/state", data={"csrf": page.csrf, "state": "paused"})
    assert res.status_code == 200 and "State: <b>paused</b>" in res.text
    assert c.post(f"{small.admin}/state", data={"state": "closed"}).status_code == 403
    got = c.get(f"{small.admin}/export/participants.csv")
    rows = list(csv.DictReader(io.StringIO(got.text)))
    assert [r["annotator"] for r in rows] == ["a0001", "a0002"]
    assert rows[0]["code"].startswith("C-") and rows[1]["code"] == ""
    assert c.get(f"{small.admin}/export/answers.parquet").content[:4] == b"PAR1"


# --- completion codes -----------------------------------------------------------------------


def test_codes_are_per_participant_earned_and_verifiable(tmp_path: Path) -> None:
    """Two participants who press skip on everything get no code; two who answer get
    different codes, each verified as theirs; the export has the code column."""
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "12", "-k", "tot",
                      "--overlap", "4", "-n", "4", "--completion-code", "PAY")  # fmt: skip
    c = client(made)
    links = list(made.annotators.values())
    skippers = [ScriptedAnnotator(c, link, skip_policy) for link in links[:2]]
    workers = [ScriptedAnnotator(c, link, right_policy(made.path)) for link in links[2:]]
    for bot in [*skippers, *workers]:
        assert bot.run(max_steps=40)
    assert [b.code for b in skippers] == [None, None]
    assert "No completion code" in c.get(links[0]).text
    codes = [b.code for b in workers]
    assert None not in codes and codes[0] != codes[1]
    assert all(code.startswith("PAY-") for code in codes)  # type: ignore[union-attr]
    code, out = cli("verify", str(made.path), codes[1])  # type: ignore[arg-type]
    assert code == 0 and "annotator a0004" in out and "12 answered, 0 skipped" in out
    code, out = cli("verify", str(made.path), "PAY-AAAAAAAAAAAA")
    assert code == 2 and "no participant" in out
    out_csv = tmp_path / "people.csv"
    code, out = cli("export", str(made.path), "--answers", str(tmp_path / "a.parquet"),
                    "--participants", str(out_csv))  # fmt: skip
    assert code == 0, out
    rows = {r["annotator"]: r for r in csv.DictReader(out_csv.open())}
    assert [rows[a]["code"] for a in ("a0001", "a0002")] == ["", ""]
    assert [rows[a]["code"] for a in ("a0003", "a0004")] == codes
    assert rows["a0001"]["main_skipped"] == "12"
