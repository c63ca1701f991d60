"""The study server's routes (FastAPI TestClient): the annotator's way through a study, the
study design (overlap, quotas, practice feedback, gold and flags, randomisation recorded,
timing), the answers table, and trust (tokens, CSRF, images only from the study, rate limits,
headers)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from builders.annotate_studies import (
    HOME,
    MadeStudy,
    make_study,
    need_annotate_extra,
    open_link,
    right_policy,
    served,
    value_of,
    wrong_policy,
)
from lexsem.annotate.answers import answers_table
from lexsem.annotate.kinds import FIXED_CHOICES
from lexsem.annotate.order import posted_values
from lexsem.results.answers_table import ANSWERS_SCHEMA

need_annotate_extra()

from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate.app import create_app  # noqa: E402
from lexsem.annotate.order import annotator_seed, option_order  # noqa: E402
from lexsem.annotate.simulate import ScriptedAnnotator, parse_page  # noqa: E402
from lexsem.annotate.store import connect  # noqa: E402
from lexsem.annotate.study_progress import progress  # noqa: E402


def posted(row: dict[str, object]) -> str:
    """What the page posted for an exported answer."""
    options, answer = row["options"], row["answer"]
    if answer == "skip":
        return "skip"
    fixed = FIXED_CHOICES[str(row["kind"])]
    return posted_values(options, fixed)[options.index(answer)]  # type: ignore[arg-type]


@pytest.fixture
def study(tmp_path: Path) -> MadeStudy:
    return make_study(tmp_path, "-b", "synthetic", "--sample", "2", "--seed", "3",
                      "--practice", "1", "--gold", "2", "--overlap", "2", "--quota", "4",
                      "-n", "4", "--completion-code", "DONE-42")  # fmt: skip


def client(study: MadeStudy, **kw: object) -> TestClient:
    return TestClient(create_app(study.path, **kw))  # type: ignore[arg-type]


def _past_consent(c: TestClient, link: str) -> None:
    """Accept the consent page and the instructions of `link`'s annotator."""
    for _ in range(2):
        page = parse_page(c.get(link).text)
        c.post(page.action, data={"csrf": page.csrf})


def test_a_study_completed_by_scripted_annotators(study: MadeStudy) -> None:
    c = client(study)
    links = list(study.annotators.values())
    runs = []
    for k, link in enumerate(links[:3]):
        policy = right_policy(study.path) if k < 2 else wrong_policy(study.path)
        bot = ScriptedAnnotator(c, link, policy, seed=k)
        assert bot.run(max_steps=200)
        assert bot.code is not None and bot.code.startswith("DONE-42-")
        runs.append(bot)
    assert len({bot.code for bot in runs}) == 3  # each participant's own code
    table = answers_table(connect(study.path))
    assert table.schema == ANSWERS_SCHEMA
    rows = table.to_pylist()
    # every answer recorded once; quota 4 items x 2 kinds + 2 practice units + 4 gold units
    assert Counter(r["annotator"] for r in rows) == {"a0001": 14, "a0002": 14, "a0003": 14}
    assert (
        len({(r["annotator"], r["kind"], r["item_id"], r["practice"], r["gold"]) for r in rows})
        == 42
    )
    for bot, who in zip(runs, ("a0001", "a0002", "a0003"), strict=True):
        mine = [r for r in rows if r["annotator"] == who]
        assert [posted(r) for r in mine] == [a for _, a in bot.answered]
        assert all(r["correct"] == (who != "a0003") for r in mine)
    # overlap 2 with quota 4: the first two annotators share their items, the third gets others
    items = {w: {r["item_id"] for r in rows if r["annotator"] == w and not r["practice"]
                 and not r["gold"]} for w in ("a0001", "a0002", "a0003")}  # fmt: skip
    assert items["a0001"] == items["a0002"] and len(items["a0001"]) == 4
    assert not items["a0003"] & items["a0001"]
    p = progress(connect(study.path))
    flagged = {a.annotator for a in p.annotators if a.flagged}
    assert flagged == {"a0003"}
    assert {k: v[:2] for k, v in p.agreement.items()} == {"itt": (100.0, 4), "tot": (100.0, 4)}
    assert all(v[2] != v[2] for v in p.agreement.values())  # one label only: alpha undefined


def test_admin_agreement_alpha_equals_the_krippendorff_package(tmp_path: Path) -> None:
    """Randomly answering annotators on shared items: the admin page's α is the package's α
    on the items × annotators matrix of the exported answers."""
    import krippendorff
    import numpy as np

    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "6", "-k", "tot",
                      "--overlap", "3", "--quota", "6", "-n", "3")  # fmt: skip
    c = client(made)
    for k, link in enumerate(made.annotators.values()):
        assert ScriptedAnnotator(c, link, seed=k).run(max_steps=50)
    rows = [r for r in answers_table(connect(made.path)).to_pylist()
            if not r["practice"] and not r["gold"] and r["answer"] != "skip"]  # fmt: skip
    items = sorted({r["item_id"] for r in rows})
    people = sorted({r["annotator"] for r in rows})
    labels = sorted({r["answer"] for r in rows})
    data = np.full((len(people), len(items)), np.nan)
    for r in rows:
        data[people.index(r["annotator"]), items.index(r["item_id"])] = labels.index(r["answer"])
    expect = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    _pct, pairs, alpha = progress(connect(made.path)).agreement["tot"]
    assert pairs == 6 * 3 and len(labels) > 1
    assert alpha == pytest.approx(expect, abs=1e-12)
    page = c.get(made.admin).text
    assert "Krippendorff" in page and f"{expect:.3f}" in page


def test_overlap_is_never_exceeded(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "3", "-k", "tot",
                      "--overlap", "2", "--quota", "2", "-n", "6")  # fmt: skip
    c = client(made)
    for k, link in enumerate(made.annotators.values()):
        assert ScriptedAnnotator(c, link, seed=k).run(max_steps=50)
    rows = answers_table(connect(made.path)).to_pylist()
    per_item = Counter(r["item_id"] for r in rows)
    assert sorted(per_item.values()) == [2, 2, 2]  # 3 items x overlap 2 = 6 slots, quota 2
    per_person = Counter(r["annotator"] for r in rows)
    assert sorted(per_person.values()) == [1, 1, 2, 2]  # two annotators found the study full
    page = c.get(list(made.annotators.values())[5])
    assert "This study is full" in page.text and "Consent" not in page.text


def test_option_order_is_seeded_per_annotator_and_recorded(study: MadeStudy) -> None:
    c = client(study)
    bot = ScriptedAnnotator(c, study.annotators["a0001"])
    assert bot.run(max_steps=200)
    con = connect(study.path)
    seed = con.execute("SELECT seed FROM annotators WHERE id = 'a0001'").fetchone()[0]
    assert seed == annotator_seed(3, "a0001")
    for unit, options in con.execute(
        "SELECT unit, options FROM assignments WHERE annotator = 'a0001'"
    ):
        assert json.loads(options) == option_order(seed, unit, ["p1", "p2", "n"], [])
    orders = {tuple(r["options"]) for r in answers_table(con).to_pylist()}
    assert len(orders) > 1  # not one fixed order


def test_pages_show_options_in_the_recorded_order(study: MadeStudy) -> None:
    c = client(study)
    link = study.annotators["a0002"]
    _past_consent(c, link)
    page = parse_page(c.get(link).text)
    unit = served(study.path, page)
    assert page.answers == [*posted_values(unit.options, FIXED_CHOICES[unit.kind]), "skip"]
    assert page.answers == ["1", "2", "3", "skip"]  # places, never the roles p1 / p2 / n
    con = connect(study.path)
    shown = con.execute(
        "SELECT options FROM assignments WHERE annotator='a0002' AND unit=?", (unit.id,)
    ).fetchone()[0]
    assert json.loads(shown) == unit.options


def test_practice_feedback_shows_the_right_answer(study: MadeStudy) -> None:
    c = client(study)
    link = study.annotators["a0001"]
    _past_consent(c, link)
    html = c.get(link).text
    assert "Practice" in html
    page = parse_page(html)
    unit = served(study.path, page)
    wrong = next(a for a in page.answers if a not in (value_of(unit, "n"), "skip"))
    res = c.post(page.action, data={"csrf": page.csrf, "page": page.page, "answer": wrong},
                 follow_redirects=False)  # fmt: skip
    assert res.status_code == 303 and res.headers["location"].endswith(f"/feedback/{page.page}")
    fb = c.get(res.headers["location"]).text
    assert "Not quite" in fb
    right = re.search(r'value="(\w+)"[^>]*\n? class="option right', fb)
    assert right and right.group(1) == value_of(unit, "n")


def test_an_answer_is_recorded_once(study: MadeStudy) -> None:
    c = client(study)
    link = study.annotators["a0001"]
    _past_consent(c, link)
    page = parse_page(c.get(link).text)
    data = {"csrf": page.csrf, "page": page.page, "answer": page.answers[0]}
    assert c.post(page.action, data=data, follow_redirects=False).status_code == 303
    for _ in range(2):  # a double click, a resubmitted form: refused, nothing stored
        res = c.post(page.action, data=data, follow_redirects=False)
        assert res.status_code == 409 and "answered already" in res.text
    data2 = {**data, "answer": page.answers[1]}
    assert c.post(page.action, data=data2, follow_redirects=False).status_code == 409
    rows = answers_table(connect(study.path)).to_pylist()
    assert len(rows) == 1 and posted(rows[0]) == page.answers[0]


def test_validate_edit_is_recorded(tmp_path: Path) -> None:
    made = make_study(tmp_path, "-b", "synthetic/swap_obj", "--sample", "1", "-k", "validate",
                      "-n", "1")  # fmt: skip
    c = client(made)
    link = made.annotators["a0001"]
    _past_consent(c, link)
    html = c.get(link).text
    page = parse_page(html)
    assert page.answers == ["accept", "edit", "reject", "skip"]
    assert "<textarea" in html
    bad = c.post(page.action, data={"csrf": page.csrf, "page": page.page, "answer": "edit",
                                    "edit": "  "})  # fmt: skip
    assert bad.status_code == 422
    c.post(page.action, data={"csrf": page.csrf, "page": page.page, "answer": "edit",
                              "edit": "An edited caption."})  # fmt: skip
    (row,) = answers_table(connect(made.path)).to_pylist()
    assert row["answer"] == "edit" and row["edit"] == "An edited caption."
    assert row["correct"] is None and row["options"] == ["accept", "edit", "reject"]


def test_join_link_makes_a_consented_annotator(study: MadeStudy) -> None:
    c = client(study)
    page = parse_page(c.get(study.join).text)
    assert c.post(page.action, data={}).status_code == 403  # no CSRF token
    res = c.post(page.action, data={"csrf": page.csrf}, follow_redirects=False)
    assert res.status_code == 303 and res.headers["location"] == HOME  # no personal link shown
    assert "lexsem-session=" in res.headers["set-cookie"]
    html = c.get(HOME).text
    assert "Instructions" in html and "in this browser within 24 hours" in html
    con = connect(study.path)
    assert con.execute("SELECT COUNT(*) FROM annotators").fetchone()[0] == 5


def test_csrf_is_checked_on_every_form(study: MadeStudy) -> None:
    app = create_app(study.path)
    c, c2 = TestClient(app), TestClient(app)  # two browsers
    other = parse_page(c2.get(study.annotators["a0002"]).text).csrf
    mine = parse_page(c.get(study.annotators["a0001"]).text).csrf
    for bad in ({}, {"csrf": "x" * 64}, {"csrf": other}):
        assert c.post(f"{HOME}/consent", data=bad).status_code == 403
    # a form's CSRF token is its session's: after the link is opened again, reload
    open_link(c, study.annotators["a0001"])
    assert c.post(f"{HOME}/consent", data={"csrf": mine}).status_code == 403
    fresh = parse_page(c.get(HOME).text).csrf
    assert fresh != mine and c.post(f"{HOME}/consent", data={"csrf": fresh}).status_code == 200
    assert c.post(f"{study.admin}/invite", data={"n": "1"}).status_code == 403
    admin_csrf = re.search(r'name="csrf" value="(\w+)"', c.get(study.admin).text).group(1)
    res = c.post(f"{study.admin}/invite", data={"n": "2", "csrf": admin_csrf})
    assert res.status_code == 200 and res.text.count("/a/") == 2


def test_tokens_and_admin(study: MadeStudy) -> None:
    c = client(study)
    assert c.get("/a/not-a-token").status_code == 404
    assert c.get("/admin/" + study.annotators["a0001"].rsplit("/", 1)[1]).status_code == 404
    assert c.get(study.admin.replace("/admin/", "/a/")).status_code == 404
    html = c.get(study.admin).text
    assert "a0001" in html and "Agreement" in html


def test_images_only_from_the_study(study: MadeStudy, tmp_path: Path) -> None:
    c = client(study)
    link = study.annotators["a0001"]
    con = connect(study.path)
    every = {r[0] for r in con.execute("SELECT sha FROM images")}
    for _ in range(4):  # to the first question with an image (practice tot, then itt)
        html = c.get(link).text
        if "/img/" in html:
            break
        page = parse_page(html)
        data = {"csrf": page.csrf} | ({"page": page.page, "answer": "1"} if page.page else {})
        c.post(page.action, data=data)
    (sha,) = re.findall(r"/img/([0-9a-f]{64})", html)
    res = c.get(f"{HOME}/img/{sha}")
    assert res.status_code == 200 and res.headers["content-type"].startswith("image/")
    for other in every - {sha}:  # the study's images of questions not yet shown: refused
        assert c.get(f"{HOME}/img/{other}").status_code == 404
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    for name in ("../../../../etc/passwd", "..%2f..%2fetc%2fpasswd", str(secret),
                 "%2e%2e/%2e%2e/etc/passwd", sha.upper(), "0" * 64, f"{sha}.png",
                 "....//....//etc/passwd", "%00" + sha):  # fmt: skip
        res = c.get(f"{HOME}/img/{name}")
        assert res.status_code == 404, name
        assert b"secret" not in res.content and b"root:" not in res.content
    assert client(study).get(f"{HOME}/img/{sha}").status_code == 403  # images need a session
    assert c.get(f"{link}/img/{sha}").status_code == 404  # the old token-bearing address


def test_rate_limit_per_annotator(study: MadeStudy) -> None:
    c = client(study, rate_limit=5, rate_window=60.0)
    open_link(c, study.annotators["a0001"])  # the link, then its session: one bucket
    codes = [c.get(HOME).status_code for _ in range(6)]
    assert codes == [200] * 4 + [429] * 2
    assert c.get(study.annotators["a0002"]).status_code == 200  # another one is not limited


def test_security_headers(study: MadeStudy) -> None:
    c = client(study)
    res = c.get(study.annotators["a0001"])
    assert res.headers["referrer-policy"] == "no-referrer"
    csp = res.headers["content-security-policy"]
    nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
    assert f'<script nonce="{nonce}">' in res.text
    assert "default-src 'none'" in csp and "frame-ancestors 'none'" in csp
    assert res.headers["x-frame-options"] == "DENY"


def test_study_text_is_escaped_in_pages(tmp_path: Path) -> None:
    """The study's name and consent text are the researcher's, shown as text: markup in them
    is escaped, never run."""
    (tmp_path / "consent.txt").write_text("I agree <script>alert(1)</script>")
    made = make_study(tmp_path, "-b", "synthetic", "--sample", "2", "-k", "tot", "-n", "1",
                      "--name", "<img src=x onerror=alert(2)>",
                      "--consent", str(tmp_path / "consent.txt"))  # fmt: skip
    html = client(made).get(made.annotators["a0001"]).text
    assert "I agree &lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "<script>alert" not in html and "<img src=x" not in html


def test_answer_must_be_offered(study: MadeStudy) -> None:
    c = client(study)
    link = study.annotators["a0001"]
    _past_consent(c, link)
    page = parse_page(c.get(link).text)
    for bad in ("none", "n", "p1", "4", "0", ""):
        res = c.post(page.action, data={"csrf": page.csrf, "page": page.page, "answer": bad})
        assert res.status_code == 422, bad
    assert c.post(page.action, data={"csrf": page.csrf, "page": "x" * 43,
                                     "answer": "1"}).status_code == 404  # fmt: skip


def test_seconds_are_timed_from_first_display(study: MadeStudy) -> None:
    import time

    c = client(study)
    link = study.annotators["a0001"]
    _past_consent(c, link)
    page = parse_page(c.get(link).text)
    time.sleep(0.3)
    c.get(HOME)  # a reload does not restart the clock
    c.post(page.action, data={"csrf": page.csrf, "page": page.page, "answer": "skip"})
    (row,) = answers_table(connect(study.path)).to_pylist()
    assert 0.3 <= row["seconds"] < 30
    assert row["answer"] == "skip" and row["correct"] is False
