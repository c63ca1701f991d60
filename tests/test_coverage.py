"""Coverage: a result over fewer items than its subsets hold says so everywhere — run.json,
every table (`60.00 (5/245)`), the HTML report and `lexsem eval`'s summary line; a fully
covered table is unchanged (docs/reliability.md, "Data")."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.fakes import TinyDualEncoder, register_fixture_benchmark_with_images
from lexsem import evaluate
from lexsem.benchmarks import catalog as registry
from lexsem.benchmarks.coverage import row_coverage
from lexsem.cli import app
from lexsem.errors import LexsemError
from lexsem.report.all_tables import build_tables
from lexsem.report.html import render_html, runs_metadata, runs_overview_sections
from lexsem.report.tables import coverage_summary, to_csv, to_markdown
from lexsem.results.schema import MetricResult

SETTINGS: dict[str, Any] = {"tasks": ["itt"], "n_boot": 0, "num_workers": 0}


@pytest.fixture
def fixture_pp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """fixture_pp: swap_obj (3 items, images 0-2.jpg) and replace_att (2 items, 0-1.jpg)."""
    data, images = register_fixture_benchmark_with_images(tmp_path, monkeypatch)
    return {"data": data, "images": images}


def _run(fx: dict[str, Path], **kw: Any) -> Any:
    return evaluate(
        TinyDualEncoder(),
        ["fixture_pp"],
        data_dir=fx["data"],
        coco_val2017=fx["images"],
        **SETTINGS,
        **kw,
    )


def test_skipped_items_show_as_scored_of_total(fixture_pp: dict[str, Path]) -> None:
    (fixture_pp["images"] / "2.jpg").unlink()  # swap_obj item 2 loses its image
    run = _run(fixture_pp, skip_bad_images=True)
    rec = run.record
    cov = {r.subset: (r.items_scored, r.items_total) for r in rec.results}
    assert cov == {"swap_obj": (2, 3), "replace_att": (2, 2), "_micro": (4, 5), "_macro": (4, 5)}
    md = to_markdown(build_tables([rec]))
    swap = rec.result("fixture_pp", "itt", "swap_obj")
    assert f"| {swap.accuracy:.2f} (2/3) |" in md
    assert re.search(r"\| \d+\.\d\d \|", md)  # replace_att: all scored, shown as before
    assert "(scored/total): not every item was scored" in md
    assert "(2/3)" in to_csv(build_tables([rec]))
    assert coverage_summary(rec) == (
        "coverage below 100%: fixture_pp ITT 4 of 5 items scored (images skipped: 1 missing)"
    )
    page = render_html("r", runs_overview_sections([rec]), runs_metadata([rec]))
    assert re.search(r'<td class="num">[^<]*\(2/3\)', page)  # still a number column
    assert "fixture_pp ITT 4 of 5 items scored" in page  # the Runs section says so
    assert "&quot;swap_obj&quot;: [&quot;2&quot;]" in page  # metadata: the skipped items


def test_a_fully_covered_run_is_shown_as_before(fixture_pp: dict[str, Path]) -> None:
    rec = _run(fixture_pp).record
    assert all(r.complete and r.items_scored == r.items_total for r in rec.results)
    md = to_markdown(build_tables([rec]))
    assert "/" not in re.sub(r"^###.*$", "", md, flags=re.M) and "scored/total" not in md
    assert coverage_summary(rec) is None
    # a run recorded before coverage existed reads as complete
    old = MetricResult(
        benchmark="b", task="t", metric="m", subset="s", n=3, hits=1, ties=0,
        accuracy=33.3, ci_low=None, ci_high=None,
    )  # fmt: skip
    assert old.complete


def test_eval_summary_line_says_when_coverage_is_below_100(
    fixture_pp: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (fixture_pp["images"] / "2.jpg").unlink()
    monkeypatch.setattr("lexsem.models.factory.load_model", lambda *a, **k: TinyDualEncoder())
    args = ["eval", "-m", "tiny", "-b", "fixture_pp", "-t", "itt", "--n-boot", "0"]
    args += ["--data-dir", str(fixture_pp["data"]), "--coco-val2017", str(fixture_pp["images"])]
    args += ["--skip-bad-images", "--num-workers", "0", "-o", str(tmp_path / "run")]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    summary = next(line for line in out.output.splitlines() if "run written to" in line)
    assert summary.endswith(
        "; coverage below 100%: fixture_pp ITT 4 of 5 items scored (images skipped: 1 missing)"
    )
    assert "(2/3)" in out.output
    quiet = CliRunner().invoke(app, [*args[:-1], str(tmp_path / "run2"), "-q"])
    assert quiet.exit_code == 0, quiet.output
    assert "warning: coverage below 100%: fixture_pp ITT 4 of 5" in quiet.output


def test_nothing_scored_is_an_error(fixture_pp: dict[str, Path]) -> None:
    for f in fixture_pp["images"].iterdir():
        f.unlink()
    with pytest.raises(LexsemError, match=r"no item of fixture_pp could be scored for task 'itt'"):
        _run(fixture_pp, skip_bad_images=True)


def test_aggregate_rows_cover_their_members() -> None:
    sc = registry.get("sugarcrepe")
    totals = {"replace_obj": 10, "replace_att": 5, "swap_obj": 4, "swap_att": 6}
    scored = {"replace_obj": 10, "replace_att": 3, "swap_obj": 4, "swap_att": 6}
    assert row_coverage(sc, "_replace", scored, totals) == (13, 15)
    assert row_coverage(sc, "_swap", scored, totals) == (10, 10)
    assert row_coverage(sc, "_micro", scored, totals, unassigned=2) == (23, 27)
    vg = registry.get("aro_vg")
    cover = {"vg_relation": 8, "vg_attribution": 9}
    assert row_coverage(vg, "_vg_relation_macro", {"vg_relation": 7}, cover) == (7, 8)


def test_compare_shows_paired_items_of_total(fixture_pp: dict[str, Path], tmp_path: Path) -> None:
    (fixture_pp["images"] / "2.jpg").unlink()
    _run(fixture_pp, skip_bad_images=True, out=tmp_path / "a")
    _run(fixture_pp, skip_bad_images=True, out=tmp_path / "b", name="again")
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert "| fixture_pp | itt | 4/5 |" in res.stdout
    assert "coverage below 100%" in res.stdout
