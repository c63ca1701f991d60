"""The published site in a real browser: Debian's headless Chromium driven by Playwright, the
pages opened from `file://` as a reader opens a downloaded site.

A board of five runs on one benchmark (two subsets and `_micro`): "good", its "twin" (two items
apart: McNemar p = 0.5, one rank group), "fair", a model whose name is markup, and "bf16"
(another backend and dtype, for the filters); a paper's row for "good" (the published rows
stubbed, as in tests/test_publish.py). Checked: no console error, page error or content
security policy violation (the site's script runs: it marks the page `js`); a header click sorts
the rows, a second reverses them, empty cells stay last; a filter hides rows; the twins share
rank 1 and group a; the published row carries its mark and Δ; a model's link opens its page
with the run's provenance (lexsem version, sha256, the command that runs it again); with
JavaScript off the tables read the same. At 1280 and 390 px no page scrolls sideways (a wide
table scrolls inside its box) and every image decodes. Screenshots go to the test's folder
(and $LEXSEM_SCREENSHOTS when set). Chromium is required in CI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from builders.browser import check_layout, launched, shots
from builders.run_records import items_run
from lexsem.publish import publish
from lexsem.publish import publisher as publisher_module
from lexsem.publish.published import PublishedRow
from lexsem.results.run import Run

WIDTHS = (1280, 390)
PAPER = PublishedRow(source="paper_table1", model="Good (paper)", spec="test:good",
                     benchmark="bench", task="tot", metric="tot", subset="_micro",
                     accuracy=50.0, attainable=False)  # fmt: skip


def _run(base: Path, name: str, hits: np.ndarray, folder: str, *, backend: str = "test",
         dtype: str | None = None) -> Path:  # fmt: skip
    keyed = {(f"s{1 + k % 2}", f"i{k}"): bool(h) for k, h in enumerate(hits)}
    run = items_run(name, keyed, backend=backend)
    rec = run.record
    model = rec.model.model_copy(update={"dtype": dtype})
    rec = rec.model_copy(update={"model": model, "run_id": f"{folder}-run"})
    return Run(rec, run.items).save(base / "runs" / folder, force=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("publish-browser")
    truth = np.random.default_rng(0).random(60)
    good = truth < 0.9
    twin = good.copy()
    twin[np.flatnonzero(good)[:2]] = False  # two discordant items: p = 0.5
    runs = [
        _run(base, "good", good, "good"),
        _run(base, "twin", twin, "twin"),
        _run(base, "fair", truth < 0.6, "fair"),
        _run(base, "<script>alert(1)</script>", truth < 0.3, "markup"),
        _run(base, "bf16", truth < 0.5, "bf16", backend="other", dtype="bfloat16"),
    ]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(publisher_module, "published_rows", lambda: [PAPER])
        publish(runs, base / "site")
    return base / "site"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched()


class Opened:
    """A page and what it said: console errors and warnings, uncaught errors."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.said: list[str] = []
        page.on("console", lambda m: m.type in ("error", "warning") and self.said.append(
            f"{m.type}: {m.text}"))  # fmt: skip
        page.on("pageerror", lambda e: self.said.append(f"pageerror: {e}"))


@pytest.fixture
def opened(browser: Any, site: Path) -> Iterator[Opened]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    got = Opened(page)
    page.goto((site / "index.html").as_uri())
    page.wait_for_load_state("load")
    yield got
    context.close()


ROWS = "table.board tbody tr"


def _column(page: Any, n: int) -> list[str]:
    """The text of column `n` (1-based) of the visible rows."""
    return page.eval_on_selector_all(
        ROWS, f"rs => rs.filter(r => r.offsetParent !== null)"
        f".map(r => r.cells[{n - 1}].textContent.trim())",
    )  # fmt: skip


def _header(page: Any, text: str) -> Any:
    return page.locator("table.board thead th", has_text=text).first


def test_opens_from_file_without_errors(opened: Opened) -> None:
    page = opened.page
    assert page.url.startswith("file://")
    assert page.evaluate("document.documentElement.classList.contains('js')")  # site.js ran
    check_layout(page)  # the figure decodes (img-src 'self' over file://)
    assert page.locator("figure img").count() == 1
    assert opened.said == []


def test_header_click_sorts(opened: Opened) -> None:
    page = opened.page
    models = _column(page, 3)
    assert models[:2] == ["good", "twin"] and "published" in models[-1]
    _header(page, "Model").click()
    by_name = _column(page, 3)
    assert by_name == sorted(by_name, key=str.lower)
    _header(page, "Model").click()
    assert _column(page, 3) == by_name[::-1]
    _header(page, "s2").click()  # numbers: high to low first
    cells = _column(page, 9)
    assert cells[-1] == ""  # the published row has no s2: last
    s2 = [float(t.split()[0]) for t in cells[:-1]]
    assert s2 == sorted(s2, reverse=True)
    _header(page, "Rank").click()  # ranks: 1 first; the published row (no rank) last
    ranks = _column(page, 1)
    assert ranks[-1] == "" and [int(r) for r in ranks[:-1]] == sorted(int(r) for r in ranks[:-1])
    _header(page, "Rank").click()
    assert _column(page, 1)[-1] == ""  # reversed, and still last
    assert opened.said == []


def test_filter_hides_rows(opened: Opened) -> None:
    page = opened.page
    assert len(_column(page, 3)) == 6
    page.select_option("select[data-filter=dtype]", "bfloat16")
    assert _column(page, 3) == ["bf16"]
    page.select_option("select[data-filter=dtype]", "")
    page.select_option("select[data-filter=family]", "test")
    assert sorted(_column(page, 3)) == sorted(["good", "twin", "fair",
                                               "<script>alert(1)</script>"])  # fmt: skip
    page.select_option("select[data-filter=family]", "")
    assert len(_column(page, 3)) == 6
    assert opened.said == []


def test_indistinguishable_models_share_a_group(opened: Opened) -> None:
    page = opened.page
    rows = {m: (r, g) for r, g, m in zip(_column(page, 1), _column(page, 2), _column(page, 3),
                                          strict=True)}  # fmt: skip
    assert rows["good"] == ("1", "a") and rows["twin"] == ("1", "a")
    assert rows["<script>alert(1)</script>"][0] != "1"
    assert page.get_by_role("link", name="<script>alert(1)</script>").count() == 1  # as text


def test_published_row(opened: Opened) -> None:
    page = opened.page
    row = page.locator("tr.published")
    assert row.count() == 1
    assert row.locator(".published-mark").inner_text() == "published"
    assert "Good (paper)" in row.inner_text() and "paper_table1" in row.inner_text()
    assert "50.00 †" in row.inner_text() and "Δ +" in row.inner_text()
    assert row.evaluate("r => getComputedStyle(r).fontStyle") == "italic"


def test_model_page_shows_provenance(opened: Opened, site: Path) -> None:
    page = opened.page
    page.get_by_role("link", name="good", exact=True).click()
    page.wait_for_load_state("load")
    assert page.url.startswith("file://") and "/models/" in page.url
    assert page.locator("h1").inner_text() == "good"
    facts = page.locator("section.run table.facts").inner_text()
    assert "0.0.test" in facts  # the run's lexsem version
    assert "lexsem eval --model test:good" in facts
    assert "0" * 64 in page.locator("section.run table.files").inner_text()
    assert page.evaluate("document.documentElement.classList.contains('js')")
    _header(page, "Others right").click()  # the model page's tables sort too
    assert opened.said == []


@pytest.mark.parametrize("width", WIDTHS)
def test_layout_and_screenshots(browser: Any, site: Path, width: int) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    said = Opened(page).said
    model = next((site / "models").glob("good-*.html"))
    for name, path in (("index", site / "index.html"), ("model", model)):
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        # the figures load lazily: every one loaded (scrolled to) before the layout is judged
        page.evaluate("() => { for (const i of document.images) i.scrollIntoView(); }")
        page.wait_for_function("() => [...document.images].every(i => i.complete)")
        page.evaluate("() => window.scrollTo(0, 0)")
        check_layout(page)
        shots(site.parent, f"publish-{name}-{width}", page)
    if width < 600:  # the board is wider than a phone: it scrolls inside its box
        page.goto((site / "index.html").as_uri())
        wide = page.eval_on_selector(".table-wrap", "w => w.scrollWidth > w.clientWidth")
        assert wide
    context.close()
    assert said == []


def test_readable_without_javascript(browser: Any, site: Path) -> None:
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1280,
                                                                       "height": 900})  # fmt: skip
    page = context.new_page()
    page.goto((site / "index.html").as_uri())
    page.wait_for_load_state("load")
    assert not page.evaluate("document.documentElement.classList.contains('js')")
    assert not page.locator("#filters").is_visible()  # filters need the script: not shown
    text = page.locator("table.board").inner_text()
    for shown in ("good", "twin", "<script>alert(1)</script>", "Good (paper)", "published"):
        assert shown in text
    assert page.locator(f"{ROWS}:visible").count() == 6
    shots(site.parent, "publish-index-nojs", page)
    context.close()
