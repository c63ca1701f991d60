"""Headless Chromium for the browser tests (Debian's package through Playwright, no download):
the executable, a browser for a module, screenshots, and the layout check every page passes."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from builders.backends import require, require_module

LAYOUT = """() => ({width: window.innerWidth, page: document.documentElement.scrollWidth,
  broken: [...document.images].filter(i => !i.complete || i.naturalWidth === 0).length,
  images: document.images.length})"""


def chromium() -> str:
    """Debian's Chromium (or $LEXSEM_CHROMIUM): required in CI."""
    path = os.environ.get("LEXSEM_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None
    )
    require(path is not None, "Chromium is not installed (apt-get install chromium)")
    assert path is not None
    return path


def launched() -> Iterator[Any]:
    """A headless Chromium, closed after use (the body of a module-scoped fixture)."""
    exe = chromium()
    sync_api = require_module("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def shots(folder: Path, name: str, page: Any) -> None:
    """A full-page screenshot in `folder`, copied to $LEXSEM_SCREENSHOTS where set."""
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    out = os.environ.get("LEXSEM_SCREENSHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(out) / path.name)


def check_layout(page: Any) -> None:
    """The page never scrolls sideways and every image decodes."""
    got = page.evaluate(LAYOUT)
    assert got["page"] <= got["width"], got
    assert got["broken"] == 0, got
