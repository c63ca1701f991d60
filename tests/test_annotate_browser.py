"""The study server in a real browser: Debian's headless Chromium driven by Playwright (its
executable given explicitly; Playwright's own browser download is never used).

Two studies, every task kind, each completed with the keyboard only by an annotator who answers
right (consent and instructions with Enter, options with 1/2/3, none/both with N/B, a
validation edit with E, typing, Ctrl+Enter, practice feedback with Enter): SugarCrepe++-style
kinds at 1280 px, BiVLC-style kinds at phone width (390 px). Each page is checked: it never
scrolls sideways, its images decode, the key hints show. The exported answers are all right
and the edit is recorded. The admin page is rendered at both widths. Screenshots are written
to the test's folder and copied to $LEXSEM_SCREENSHOTS when set. Chromium (and the playwright
package) are required in CI (`.ci/run` installs chromium), never skipped there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from builders.annotate_studies import MadeStudy, make_study, need_annotate_extra, value_of
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
    page.goto(url + made.annotators["a0001"])
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
    else:
        raise AssertionError("the study did not end")
    assert page.locator("code.code").inner_text().startswith("KEYS-1-")
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
