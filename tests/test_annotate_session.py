"""A participant's personal link is exchanged once for a session cookie (OWASP ASVS 4.0.3,
V3.1.1: no session token in a URL; V3.4: cookie attributes): the cookie's attributes, no page
after the exchange holding the link's token, sessions refused without a live cookie, opening
the link again, the session's lifetime, and the scripted annotator through it all."""

from __future__ import annotations

import re
import socket
import time
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

import pytest

from builders.annotate_studies import (
    HOME,
    MadeStudy,
    make_study,
    need_annotate_extra,
    open_link,
    right_policy,
)
from lexsem.annotate import store
from lexsem.annotate.security import hash_token

need_annotate_extra()

from fastapi.testclient import TestClient  # noqa: E402

from lexsem.annotate import session  # noqa: E402
from lexsem.annotate.app import create_app  # noqa: E402
from lexsem.annotate.local_server import LocalServer  # noqa: E402
from lexsem.annotate.simulate import KeptAliveClient, ScriptedAnnotator, parse_page  # noqa: E402
from lexsem.annotate.study import join_annotator  # noqa: E402


@pytest.fixture
def study(tmp_path: Path) -> MadeStudy:
    return make_study(tmp_path, "-b", "synthetic", "--sample", "2", "--seed", "3",
                      "--practice", "1", "--gold", "1", "--overlap", "2", "--quota", "2",
                      "-n", "3", "--completion-code", "DONE-9")  # fmt: skip


def browser(study: MadeStudy, **kw: Any) -> TestClient:
    return TestClient(create_app(study.path, **kw), follow_redirects=False)


def token(link: str) -> str:
    return link.rsplit("/", 1)[1]


def set_cookie(res: Any) -> tuple[str, dict[str, str]]:
    """The one cookie a response sets: its name and its attributes (names lower case; flags
    present as "")."""
    (line,) = res.headers.get_list("set-cookie")
    jar = SimpleCookie()
    jar.load(line)
    ((name, morsel),) = jar.items()
    attrs = {k: str(v) for k, v in morsel.items() if v}
    flags = {part.strip().lower() for part in line.split(";")[1:] if "=" not in part}
    return name, {**attrs, **dict.fromkeys(flags, "")}


# --- the cookie ------------------------------------------------------------------------------


def test_opening_a_link_sets_a_session_cookie_and_redirects_to_token_free_pages(
    study: MadeStudy,
) -> None:
    c = browser(study)
    link = study.annotators["a0001"]
    res = c.get(link)
    assert res.status_code == 303 and res.headers["location"] == HOME
    assert res.headers["cache-control"] == "no-store"
    name, attrs = set_cookie(res)
    assert name == session.COOKIE == "lexsem-session"
    assert "httponly" in attrs and attrs["samesite"].lower() == "lax" and attrs["path"] == "/"
    assert "secure" not in attrs and "domain" not in attrs  # http here; host-only
    assert int(attrs["max-age"]) == session.LIFETIME <= 24 * 3600
    value = c.cookies[name]
    assert token(link) not in value and len(value) >= 43  # a fresh id, not the link's token
    con = store.connect(study.path)
    (stored,) = con.execute("SELECT hash FROM sessions").fetchall()
    assert stored[0] == hash_token(value)
    assert value not in str(con.execute("SELECT * FROM sessions").fetchall())  # only its hash
    con.close()
    assert "Consent" in c.get(HOME).text


@pytest.mark.parametrize("how", ["config", "https request"])
def test_the_cookie_is_secure_and_host_only_over_https(study: MadeStudy, how: str) -> None:
    if how == "config":  # serve --base-url https://...
        c = browser(study, secure_cookies=True)
    else:
        c = TestClient(create_app(study.path), base_url="https://testserver",
                       follow_redirects=False)  # fmt: skip
    res = c.get(study.annotators["a0001"])
    name, attrs = set_cookie(res)
    assert name == session.SECURE_COOKIE == "__Host-lexsem-session"
    assert "secure" in attrs and "httponly" in attrs and attrs["path"] == "/"
    assert "domain" not in attrs  # what the __Host- prefix asks
    if how == "https request":  # a browser sends it back over https
        assert "Consent" in c.get(HOME).text


def test_serve_makes_the_cookie_secure_behind_an_https_base_url(
    study: MadeStudy, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    import lexsem.annotate.app as app_module
    import lexsem.annotate.http_server as http_server
    from lexsem.cli import app

    made: dict[str, Any] = {}
    real = app_module.create_app

    def spy(*args: Any, **kw: Any) -> Any:
        made.update(kw)
        return real(*args, **kw)

    monkeypatch.setattr(app_module, "create_app", spy)
    monkeypatch.setattr(http_server, "run", lambda *a, **kw: None)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = str(free.getsockname()[1])
    for base, secure in (("https://study.example.org/", True), ("http://10.0.0.5:8000", False)):
        res = CliRunner().invoke(app, ["annotate", "serve", str(study.path), "--port", port,
                                       "--base-url", base])  # fmt: skip
        assert res.exit_code == 0, res.output
        assert made["secure_cookies"] is secure


# --- no token after the exchange -------------------------------------------------------------


class Recorder:
    """A client that records every response (the scripted annotator's client)."""

    def __init__(self, c: TestClient) -> None:
        self.c = c
        self.seen: list[tuple[str, Any]] = []

    def request(self, method: str, url: str, **kw: Any) -> Any:
        res = self.c.request(method, url, **kw)
        self.seen.append((url, res))
        return res


def test_no_page_after_the_exchange_holds_the_token(study: MadeStudy) -> None:
    """A whole study answered (consent, instructions, practice and its feedback, gold, main
    questions with images, the code): after the first response, no address asked for, no
    page, no header holds the link's token."""
    link = study.annotators["a0001"]
    rec = Recorder(browser(study))
    bot = ScriptedAnnotator(rec, link, right_policy(study.path))
    assert bot.run(max_steps=50) and bot.code is not None
    (first_url, first), *after = rec.seen
    assert first_url == link and first.headers["location"] == HOME
    secret = token(link)
    for url, res in after:
        assert secret not in url
        assert secret not in res.text and not any(secret in v for v in res.headers.values())
    pages = [res.text for _, res in after if res.status_code == 200]
    shown = "\n".join(pages)
    assert "Consent" in shown and "Instructions" in shown and bot.code in shown
    # every page the participant saw, its forms, links and images: under /s, nothing else
    for page in pages:
        for ref in re.findall(r'(?:action|href|src)="([^"]+)"', page):
            assert ref == HOME or ref.startswith((f"{HOME}/", "/static/")), ref
    images = re.findall(r'src="(/s/img/[0-9a-f]{64})"', shown)
    assert images and all(rec.c.get(src).status_code == 200 for src in images)  # by cookie
    practice = bot.answered[0][0]  # the practice question's feedback page (a browser's next)
    feedback = rec.c.get(f"{HOME}/feedback/{practice}")
    assert feedback.status_code == 200 and "Practice" in feedback.text
    assert secret not in feedback.text and f'href="{HOME}"' in feedback.text


def test_a_join_ends_in_the_session_with_no_token_shown(study: MadeStudy) -> None:
    c = browser(study)
    html = c.get(study.join).text
    page = parse_page(html)
    res = c.post(page.action, data={"csrf": page.csrf})
    assert res.status_code == 303 and res.headers["location"] == HOME
    name, attrs = set_cookie(res)
    assert name == session.COOKIE and "httponly" in attrs
    instructions = c.get(HOME).text
    assert "Instructions" in instructions and "/a/" not in instructions
    assert token(study.join) not in instructions


# --- refused without a live session ----------------------------------------------------------

ROUTES = [
    ("GET", HOME, None),
    ("POST", f"{HOME}/consent", {"csrf": "x"}),
    ("POST", f"{HOME}/start", {"csrf": "x"}),
    ("POST", f"{HOME}/answer", {"csrf": "x", "page": "p", "answer": "1"}),
    ("GET", f"{HOME}/feedback/p", None),
    ("GET", f"{HOME}/img/{'0' * 64}", None),
]


@pytest.mark.parametrize("cookie", [None, "forged", "token", "empty"])
def test_a_request_without_a_live_session_is_a_403_page(study: MadeStudy, cookie: str) -> None:
    c = browser(study)
    link = study.annotators["a0001"]
    open_link(TestClient(c.app), link)  # the annotator has a session, in another browser
    value = {"forged": "A" * 43, "token": token(link), "empty": ""}.get(cookie or "")
    if cookie is not None:
        c.cookies.set(session.COOKIE, value or "")
    for method, path, data in ROUTES:
        res = c.request(method, path, data=data)
        assert res.status_code == 403, (path, res.status_code)
        assert "open your personal link again" in res.text and "<html" in res.text.lower()
    con = store.connect(study.path)
    assert store.answers(con) == []
    assert con.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 1
    con.close()


def test_the_old_token_addresses_are_gone(study: MadeStudy) -> None:
    c = browser(study)
    link = study.annotators["a0001"]
    open_link(c, link)
    csrf = parse_page(c.get(HOME).text).csrf
    old = [("POST", f"{link}/consent"), ("POST", f"{link}/answer"),
           ("GET", f"{link}/img/{'0' * 64}"), ("GET", f"{link}/feedback/x")]  # fmt: skip
    for method, path in old:
        res = c.request(method, path, data={"csrf": csrf} if method == "POST" else None)
        assert res.status_code == 404 and "no longer used" in res.text, path
    con = store.connect(study.path)
    assert store.annotator(con, "a0001").consented_at is None  # type: ignore[union-attr]
    con.close()


# --- opening the link again ------------------------------------------------------------------


def test_opening_the_link_again_begins_a_new_session_and_ends_the_old(study: MadeStudy) -> None:
    link = study.annotators["a0001"]
    laptop = browser(study)
    open_link(laptop, link)
    first = laptop.cookies[session.COOKIE]
    page = parse_page(laptop.get(HOME).text)
    assert laptop.post(page.action, data={"csrf": page.csrf}).status_code == 303  # consent
    # the same browser again: a new session, the participant where they were
    open_link(laptop, link)
    second = laptop.cookies[session.COOKIE]
    assert second != first and "Instructions" in laptop.get(HOME).text
    # another device: its own session; the laptop's has ended
    phone = TestClient(laptop.app, follow_redirects=False)
    open_link(phone, link)
    assert "Instructions" in phone.get(HOME).text
    res = laptop.get(HOME)
    assert res.status_code == 403 and "open your personal link again" in res.text
    con = store.connect(study.path)
    assert con.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 1
    con.close()


def test_a_session_lasts_its_lifetime(study: MadeStudy, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [time.time()]
    monkeypatch.setattr(store, "clock", lambda: now[0])
    c = browser(study)
    open_link(c, study.annotators["a0001"])
    now[0] += session.LIFETIME - 1
    assert c.get(HOME).status_code == 200
    now[0] += 2
    assert c.get(HOME).status_code == 403
    open_link(c, study.annotators["a0001"])  # the link again: a new day
    assert c.get(HOME).status_code == 200


def test_revoking_a_link_ends_its_session(study: MadeStudy) -> None:
    c = browser(study)
    open_link(c, study.annotators["a0002"])
    con = store.connect(study.path)
    assert store.revoke(con, "a0002")
    assert con.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
    con.close()
    assert c.get(HOME).status_code == 403
    assert c.get(study.annotators["a0002"]).status_code == 410


def test_a_joined_participant_has_no_link_to_exchange(study: MadeStudy) -> None:
    """A join participant's personal link exists (made by `join_annotator`) and works like any
    other if known; the join itself shows none."""
    con = store.connect(study.path)
    made = join_annotator(con)
    con.close()
    assert made is not None
    c = browser(study)
    open_link(c, f"/a/{made[1]}")
    assert "Instructions" in c.get(HOME).text  # consented through the join link


# --- the scripted annotator ------------------------------------------------------------------


def test_scripted_annotators_complete_a_study_over_http_with_cookies(study: MadeStudy) -> None:
    """The benchmark's client (one kept-alive connection, its own cookie jar) through the
    exchange, a real server: every participant's own session and code."""
    with LocalServer(study.path) as srv:
        codes = []
        for i, link in enumerate(study.annotators.values()):
            with KeptAliveClient(srv.url) as c:
                bot = ScriptedAnnotator(c, link, right_policy(study.path), seed=i)
                assert bot.run(max_steps=60) and bot.code is not None
                assert list(c.cookies) == [session.COOKIE]
                codes.append(bot.code)
        with KeptAliveClient(srv.url) as c:  # a join, then its questions
            joiner = ScriptedAnnotator(c, study.join, right_policy(study.path), seed=9)
            joiner.link = joiner.join()
            assert joiner.link == HOME
            assert joiner.run(max_steps=60)
    assert len(set(codes)) == 3 and all(code.startswith("DONE-9-") for code in codes)
