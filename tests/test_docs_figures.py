"""Speed figures (`3.6×`, `0.97×`) are measured in one place, docs/performance.md, with their
dates and commits; README.md and the other docs link to it rather than quote a number that the
next measurement would leave stale."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a ratio written as a number and ×, not a product of sizes (`12000×12000`, `5 subsets × 100`)
RATIO = re.compile(r"\d(?:\.\d+)?×(?!\s*\d)")


def test_speed_figures_are_quoted_only_in_performance_md() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    quoted = {
        f"{page.relative_to(ROOT)}:{k}: {line.strip()}"
        for page in pages
        if page.name != "performance.md"
        for k, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if RATIO.search(line)
    }
    assert not quoted, sorted(quoted)
    assert RATIO.search((ROOT / "docs" / "performance.md").read_text(encoding="utf-8"))
