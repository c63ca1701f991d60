"""The study server in a real browser: Debian's headless Chromium driven by Playwright (its
executable given explicitly; Playwright's own browser download is never used).

Two studies, every task kind, each completed with the keyboard only by an annotator who answers
right (consent and instructions with Enter, options with 1/2/3, none/both with N/B, a
validation edit with E, typing, Ctrl+Enter, practice feedback with Enter): SugarCrepe++-style
kinds at 1280 px, BiVLC-style kinds at phone width (390 px). Each page is checked: it never
scrolls sideways, its images decode, the key hints show. The exported answers are all right
and the edit is recorded; the personal link's token leaves the address bar at once (a session
cookie, `lexsem.annotate.session`) and no page holds it. The admin page is rendered at both
widths. A personal link opened from another site (a crowd platform's page) lands on the
study's first page: the SameSite=Lax cookie is sent with the redirect that follows.
Screenshots are written to the test's folder and copied to $LEXSEM_SCREENSHOTS when set.
Chromium (and the playwright package) are required in CI (`.ci/run` installs chromium), never
skipped there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builders.annotate_studies import HOME, MadeStudy, make_study, need_annotate_extra, value_of
from builders.annotate_studies import served as served_unit
from builders.browser import check_layout, launched, shots
from lexsem.annotate.answers import answers_table
from lexsem.annotate.local_server import LocalServer
from lexsem.annotate.simulate import Page
from lexsem.annotate.store import connect

need_annotate_extra()

EDIT = "A large green kite is edited by hand."


@pytest.fixture(scope="module")
def browser() -> Any:
    yield from launched()


def press(page: Any, key: str) -> None:
    """Press a key that submits a form or follows a link, and wait for the next page."""
    with page.expect_navigation():
        page.keyboard.press(key)


def complete_with_keyboard(page: Any, made: MadeStudy, url: str, folder: Path, tag: str) -> int:
    """Answer the annotator's whole study with keys only; returns the questions answered."""
    link = made.annotators["a0001"]
    token = link.rsplit("/", 1)[1]
    seen_urls: list[str] = []
    page.on("framenavigated", lambda f: seen_urls.append(f.url) if f == page.main_frame else None)
    page.goto(url + link)
    assert page.url == url + HOME  # the token is gone from the address bar
    assert page.locator("h1").inner_text() == "Consent"
    check_layout(page)
    shots(folder, f"{tag}-consent", page)
    press(page, "Enter")
    assert page.locator("h1").inner_text() == "Instructions"
    check_layout(page)
    shots(folder, f"{tag}-instructions", page)
    press(page, "Enter")
    seen: set[str] = set()
    answered = 0
    for _ in range(100):
        if page.locator("h1", has_text="Thank you").count():
            break
        if page.locator(".verdict").count():  # practice feedback
            assert page.locator(".verdict.wrong").count() == 0
            check_layout(page)
            shots(folder, f"{tag}-feedback", page)
            press(page, "Enter")
            continue
        served = Page(None, None, page.locator("input[name=page]").get_attribute("value"), [],
                      False, None)  # fmt: skip
        unit = served_unit(made.path, served)
        kind_shot = page.locator("h1.question").inner_text()
        check_layout(page)
        if kind_shot not in seen:
            seen.add(kind_shot)
            shots(folder, f"{tag}-question-{len(seen)}", page)
        if page.locator("textarea").count():  # validate: edit by keyboard
            page.keyboard.press("e")
            page.keyboard.press("Control+A")
            page.keyboard.type(EDIT)
            press(page, "Control+Enter")
        else:
            value = value_of(unit, unit.correct)  # a place: the page names no role
            key = page.locator(f'button[value="{value}"] kbd').inner_text()
            press(page, key.lower())
        answered += 1
        assert token not in page.content()
    else:
        raise AssertionError("the study did not end")
    assert page.locator("code.code").inner_text().startswith("KEYS-1-")
    assert seen_urls and not any(token in u for u in seen_urls), seen_urls
    assert token not in page.content()
    check_layout(page)
    shots(folder, f"{tag}-done", page)
    return answered


@pytest.mark.parametrize(
    ("tag", "selector", "kinds", "width", "height"),
    [
        ("desktop", "synthetic/swap_att", ("tot", "itt", "pair", "validate"), 1280, 900),
        ("phone", "synthetic_bi/swap_att",
         ("bivlc_i2t", "bivlc_t2i", "best_of_k", "ambiguity"), 390, 844),
    ],
)  # fmt: skip
def test_annotator_completes_a_study_with_the_keyboard(
    browser: Any, tmp_path: Path, tag: str, selector: str, kinds: tuple[str, ...],
    width: int, height: int,
) -> None:  # fmt: skip
    kind_args = [a for k in kinds for a in ("-k", k)]
    made = make_study(tmp_path, "-b", selector, "--sample", "1", "--practice", "1", "--gold",
                      "1", *kind_args, "-n", "1", "--completion-code", "KEYS-1")  # fmt: skip
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    with LocalServer(made.path) as srv:
        answered = complete_with_keyboard(page, made, srv.url, tmp_path, tag)
        page.goto(srv.url + made.admin)
        assert "a0001" in page.locator("#annotators").inner_text()
        check_layout(page)
        shots(tmp_path, f"{tag}-admin", page)
    ctx.close()
    assert errors == []  # no CSP violation, no script error
    rows = answers_table(connect(made.path)).to_pylist()
    assert len(rows) == answered
    assert {r["kind"] for r in rows} == set(kinds)
    for r in rows:
        if r["kind"] == "validate":
            assert r["answer"] == "edit" and r["edit"] == EDIT
        else:
            assert r["correct"] is True, r


@pytest.mark.parametrize("samesite", ["lax", "strict"])
def test_a_link_opened_from_another_site_lands_on_the_study(
    browser: Any, tmp_path: Path, samesite: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crowd platform's page (another site) links to the personal link: the click (a
    cross-site top-level navigation) sets the cookie with the 303, and the ``GET /s`` it leads
    to carries it with SameSite=Lax, as the server sets it; a Strict cookie would not be sent
    on that redirect (shown with the study served in-process with Strict)."""
    import threading

    import uvicorn

    from lexsem.annotate import session
    from lexsem.annotate.app import create_app

    made = make_study(tmp_path, "-b", "synthetic/swap_att", "--sample", "1", "-k", "tot",
                      "-n", "1")  # fmt: skip
    real = session.set_cookie

    def with_samesite(res: Any, sid: str, *, secure: bool) -> None:
        real(res, sid, secure=secure)
        line = res.headers["set-cookie"].replace("SameSite=lax", f"SameSite={samesite}")
        assert f"SameSite={samesite}" in line and "HttpOnly" in line
        del res.headers["set-cookie"]
        res.headers.append("set-cookie", line)

    monkeypatch.setattr(session, "set_cookie", with_samesite)
    server = uvicorn.Server(uvicorn.Config(create_app(made.path), host="127.0.0.1", port=0,
                                           log_level="warning"))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        for _ in range(100):
            if server.started:
                break
            threading.Event().wait(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        ctx = browser.new_context()
        crowd = "https://crowd.example/study"  # another site, served by the browser's router
        ctx.route(crowd, lambda route: route.fulfill(
            content_type="text/html",
            body=f'<a id="go" href="{url}{made.annotators["a0001"]}">Take part</a>'))  # fmt: skip
        page = ctx.new_page()
        page.goto(crowd)
        with page.expect_navigation(url=f"{url}{HOME}"):
            page.click("#go")
        heading = page.locator("h1").inner_text()
        ctx.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    if samesite == "lax":
        assert heading == "Consent"
    else:  # the cookie was set, but not sent with the cross-site redirect's GET
        assert heading == "Sorry"
