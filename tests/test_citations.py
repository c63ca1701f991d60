"""Docs, code, tests, benches and the HTML report cite the papers by title and section: never
by an internal name ("paper 004", "SPEC §3") nor by a file outside the repository (the team's
spec, the paper text files)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# the team's own names (a paper's number, the spec, its files, its issue tracker's numbers)
INTERNAL = re.compile(
    r"paper[ -]?0\d\d|\bSPEC\b|SPEC\.md|shared/seeds|\.\./shared/(?!data\b)|\bissues? #\d|\bPR #\d"
)


def _files() -> list[Path]:
    out = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    out += [ROOT / "Makefile", *sorted((ROOT / "bench").glob("*.py"))]
    out += sorted((ROOT / "scripts").glob("*.py"))
    tests = [p for p in sorted((ROOT / "tests").glob("*.py")) if p.name != Path(__file__).name]
    return out + sorted((ROOT / "src" / "lexsem").rglob("*.py")) + tests


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_internal_citations(path: Path) -> None:
    hits = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if INTERNAL.search(line)
    ]
    assert not hits, "\n".join(hits)


def test_the_report_cites_the_priors_paper_by_title_and_section(tmp_path: Path) -> None:
    import lexsem
    from builders.fakes import BagOfWordsEncoder
    from builders.length_scorers import CharLengthScorer
    from lexsem.report.analyses import ReportOptions, build_report
    from lexsem.results.run import Run

    common = {"n_boot": 0, "cache_dir": tmp_path / "cache", "offline": True}
    for key, model in (("bow", BagOfWordsEncoder(32, "bow")), ("blind", CharLengthScorer())):
        lexsem.evaluate(model, ["synthetic"], out=tmp_path / key, **common)
    page = build_report([Run.load(tmp_path / k) for k in ("bow", "blind")], ReportOptions(n_boot=0))
    assert not INTERNAL.search(page), INTERNAL.search(page)
    assert (
        "The Role of Linguistic Priors in Measuring Compositional Generalization of "
        "Vision-Language Models, §5.2"
    ) in page
    assert "The Role of Linguistic Priors, §5.1, Fig. 1" in page
