"""The explorer in a real browser: Debian's headless Chromium driven by Playwright (as the
study server's browser tests do; Playwright's own browser download is never used).

At 1280 px: open the page, filter with the mouse (a metric, "every model wrong") and the
keyboard ("/" focuses the text search, Enter applies it), pick items with the mouse, export
each kind (figure PNG and PDF, benchmark file, study) and check each download; open an item.
At 390 px: the same page and an item page, whose run table stacks each run's cells, each named;
the counts of runs with long names wrap inside the window, no box reaching beyond it.
No page scrolls sideways and every image decodes.
Screenshots go to the test's folder (and $LEXSEM_SCREENSHOTS when set)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from builders.browser import check_layout, launched, shots
from builders.explore_runs import served, two_runs

pytestmark = pytest.mark.torch  # the dual encoder's images (builders.fakes)


@pytest.fixture(scope="module")
def browser() -> Any:
    yield from launched()


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return two_runs(tmp_path_factory.mktemp("explore-browser"))[0]


@pytest.fixture(scope="module")
def url(folders: list[Path]) -> Any:
    from lexsem.explore.app import create_app
    from lexsem.explore.runs_table import open_runs

    with served(create_app(open_runs(folders), n_boot=100)) as base:
        yield base


#: The elements whose box reaches beyond the window's right edge (none may: a box cut off
#: inside a scrolling parent is as hidden as one beyond the page).
OVERFLOWING = """() => [...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
  .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : ''))"""


def _download(page: Any, kind: str) -> bytes:
    page.select_option("#kind", kind)
    with page.expect_download() as info:
        page.click("#do-export")
    return Path(info.value.path()).read_bytes()


def test_open_filter_select_export_at_1280(browser: Any, url: str, tmp_path: Path) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(url + "/")
    check_layout(page)
    shots(tmp_path, "explore-1280-all", page)
    assert page.locator("li.row").count() == 20
    page.select_option("select[name=metric]", "tot")
    page.click("text=every model wrong")
    with page.expect_navigation():
        page.click("#apply")
    assert "metric=tot" in page.url and "all_wrong=1" in page.url
    assert page.locator("li.row").count() == 4
    page.keyboard.press("/")
    page.keyboard.type("dog")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "q=dog" in page.url
    rows = page.locator("li.row")
    assert rows.count() == 2  # "A cat chases a dog.", "A small dog sleeps."
    check_layout(page)
    shots(tmp_path, "explore-1280-slice", page)
    # the whole slice, then one picked item
    data = json.loads(_download(page, "benchmark"))
    assert len(data) == 2
    page.locator("input[name=sel]").first.click()
    assert page.inner_text("#picked") == "1 picked"
    data = json.loads(_download(page, "benchmark"))
    assert len(data) == 1
    assert _download(page, "figure.png")[:4] == b"\x89PNG"
    assert _download(page, "figure.pdf")[:5] == b"%PDF-"
    with zipfile.ZipFile(io.BytesIO(_download(page, "study"))) as z:
        assert "create-study.sh" in z.namelist()
    page.click("#select-page")
    assert page.inner_text("#picked") == "2 picked"
    with page.expect_navigation():
        page.locator("li.row .meta a").first.click()
    assert "/item/" in page.url and page.locator("#back").count() == 1
    check_layout(page)
    shots(tmp_path, "explore-1280-item", page)
    page.close()


def test_phone_width(browser: Any, url: str, tmp_path: Path) -> None:
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.goto(url + "/?metric=itt")
    check_layout(page)
    assert page.evaluate(OVERFLOWING) == []
    assert page.locator("li.row img").count() == 5
    shots(tmp_path, "explore-390-slice", page)
    page.goto(url + "/item/5")
    check_layout(page)
    runs = page.evaluate("""() => [...document.querySelectorAll('table.runs tbody tr')].map(
      tr => ({right: tr.getBoundingClientRect().right, cells: tr.querySelectorAll('td').length,
              labelled: getComputedStyle(tr.querySelector('td'), '::before').content}))""")
    assert runs and all(r["right"] <= 390 and r["cells"] == 5 for r in runs), runs
    assert all(r["labelled"] == '"# "' for r in runs), runs  # stacked: each cell named
    shots(tmp_path, "explore-390-item", page)
    page.close()


def test_the_counts_fit_a_phone_with_long_run_names(
    browser: Any, folders: list[Path], tmp_path: Path
) -> None:
    import dataclasses

    from lexsem.explore.app import create_app
    from lexsem.explore.runs_table import open_runs

    table = open_runs(folders)
    name = "hf:sentence-transformers/all-MiniLM-L6-v2?pooling=mean&run="
    long = tuple(dataclasses.replace(r, label=f"{name}{k}") for k, r in enumerate(table.runs))
    with served(create_app(dataclasses.replace(table, runs=long), n_boot=100)) as base:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        page.goto(base + "/")
        check_layout(page)
        shots(tmp_path, "explore-390-counts", page)
        assert page.locator("table.counts tr.group").count() == 4  # itt, itt_p1n, itt_p2n, tot
        assert page.evaluate(OVERFLOWING) == []
        box = page.evaluate("""() => { const w = document.querySelector('table.counts')
          .parentElement; return [w.scrollWidth, w.clientWidth]; }""")
        assert box[0] <= box[1], box  # the table fits its box: nothing scrolls inside it
        page.close()
