"""`lexsem reproduce TABLE`: published vs lexsem per cell, Δ marked where the published number
lies outside the run's confidence interval; offline, only installed rows run and the others
say what they need. The MiniLM rows of SugarCrepe++ Table 16 and VISLA generic are reproduced
through the command (needs $LEXSEM_TEST_DATA and the offline MiniLM; required in CI)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.run_records import record
from lexsem.cli.app import app
from lexsem.report.paper.facts import Column, ModelRow, PaperTable, cells
from lexsem.reproduce.published_vs_measured import compare, outside_ci
from lexsem.reproduce.render import to_csv_text, to_markdown_text
from lexsem.reproduce.session import plan_rows
from lexsem.results.schema import MetricResult

runner = CliRunner()
SCPP = "sugarcrepe_pp"


@pytest.fixture
def empty_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Hugging Face cache holding nothing (huggingface_hub reads its folder at import)."""
    import huggingface_hub.constants

    hub = tmp_path / "empty-hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    return hub


def _column(subset: str) -> Column:
    return Column(benchmark=SCPP, task="tot", metric="tot", subset=subset, header=subset)


def _result(subset: str, acc: float, low: float | None, high: float | None) -> MetricResult:
    return MetricResult(
        benchmark=SCPP, task="tot", metric="tot", subset=subset, n=200, hits=int(acc * 2),
        ties=0, accuracy=acc, ci_low=low, ci_high=high,
    )  # fmt: skip


def test_outside_ci() -> None:
    assert outside_ci(50.0, 45.0, 55.0) is False
    assert outside_ci(45.0, 45.0, 55.0) is False  # the bounds belong to the interval
    assert outside_ci(44.99, 45.0, 55.0) is True
    assert outside_ci(60.0, 45.0, 55.0) is True
    assert outside_ci(60.0, None, None) is None


def test_a_difference_outside_the_interval_is_marked_and_one_inside_is_not() -> None:
    table = PaperTable(
        name="hand_made", paper="A paper", table="Table 1", description="d", included="all",
        rows=(ModelRow(name="M", spec="minilm"), ModelRow(name="N", needs="a checkpoint")),
        cells=cells([_column("swap_obj"), _column("swap_att"), _column("replace_obj")],
                    {"M": (40.0, 30.0, 90.0), "N": (1.0, 2.0, 3.0)}),
    )  # fmt: skip
    run = record("M", [
        _result("swap_obj", 42.5, 37.0, 48.0),  # published 40.0 inside: not marked
        _result("swap_att", 36.5, 32.0, 41.0),  # published 30.0 below: marked
        _result("replace_obj", 90.004, None, None),  # no interval: never marked
    ])  # fmt: skip
    got = compare(table, {"M": [run]}, {"N": "a checkpoint"})
    by = {(c.model, c.column.subset): c for c in got}
    inside, outside, no_ci = by["M", "swap_obj"], by["M", "swap_att"], by["M", "replace_obj"]
    assert (inside.outside, outside.outside, no_ci.outside) == (False, True, None)
    assert inside.delta == pytest.approx(2.5) and outside.delta == pytest.approx(6.5)
    assert no_ci.as_printed and not inside.as_printed
    assert {c.status for c in got if c.model == "N"} == {"not run"}

    md = to_markdown_text(table, got)
    lines = {line.split("|")[3].strip(): line for line in md.splitlines()
             if line.startswith("| M |")}  # fmt: skip
    assert "| +2.50 |" in lines["swap_obj"] and "*" not in lines["swap_obj"]
    assert "| +6.50 * |" in lines["swap_att"]
    assert "no interval" in lines["replace_obj"] and "*" not in lines["replace_obj"]
    assert "| N |  | needs a checkpoint |" in md
    rows = list(csv.DictReader(to_csv_text(table, got).splitlines()))
    flags = {(r["model"], r["subset"]): (r["status"], r["outside_ci"]) for r in rows}
    assert flags["M", "swap_obj"] == ("compared", "false")
    assert flags["M", "swap_att"] == ("compared", "true")
    assert flags["M", "replace_obj"] == ("compared", "")
    assert flags["N", "swap_obj"] == ("not run", "")


def test_each_open_clip_row_says_the_activation_of_the_facts_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The printed table, the CSV and --list say what each open_clip row runs, read from
    `trained_activation.FACTS` (a changed fact changes it) or the spec's own quick_gelu; a
    table without such rows has no Activation column."""
    from lexsem.cli.reproduce import activation_lines
    from lexsem.models.backends.openclip import trained_activation
    from lexsem.reproduce.render import activation

    rows = (ModelRow(name="RoBERTa", spec="openclip:roberta-ViT-B-32/laion2b_s12b_b32k"),
            ModelRow(name="H", spec="openclip:ViT-H-14/laion2b_s32b_b79k"),
            ModelRow(name="Asked", spec="openclip:RN50-quickgelu/openai?quick_gelu=false"),
            ModelRow(name="M", spec="minilm"),
            ModelRow(name="N", needs="a checkpoint"))  # fmt: skip
    table = _table(*rows)
    got = compare(table, {"M": [record("M", [_result("swap_obj", 50.0, 45.0, 55.0)])]},
                  {r.name: "weights" for r in rows[:3]} | {"N": "a checkpoint"})  # fmt: skip
    activation.cache_clear()
    md = to_markdown_text(table, got)
    assert "| Model | Spec | Why | Activation |" in md and "Activation: what the row's" in md
    assert "| needs weights | QuickGELU |" in md.split("| RoBERTa |")[1].splitlines()[0]
    assert md.split("| H |")[1].splitlines()[0].endswith("| GELU |")
    assert md.split("| Asked |")[1].splitlines()[0].endswith("| GELU |")
    assert "| N |  | needs a checkpoint | — |" in md
    assert md.split("| M |")[1].splitlines()[0].endswith("| — |")
    by_model = {
        r["model"]: r["activation"] for r in csv.DictReader(to_csv_text(table, got).splitlines())
    }
    assert by_model == {"RoBERTa": "QuickGELU", "H": "GELU", "Asked": "GELU", "M": "", "N": ""}
    assert activation_lines(table) == ["    runs GELU: H, Asked", "    runs QuickGELU: RoBERTa"]
    flipped = trained_activation.ActivationFact(False, "https://github.com/x", "a test")
    monkeypatch.setitem(
        trained_activation.FACTS, ("roberta-ViT-B-32", "laion2b_s12b_b32k"), flipped
    )
    activation.cache_clear()
    try:
        assert activation_lines(table) == ["    runs GELU: RoBERTa, H, Asked"]
    finally:
        monkeypatch.undo()
        activation.cache_clear()
    text_only = _table(ModelRow(name="M", spec="minilm"))
    assert "Activation" not in to_markdown_text(text_only, compare(text_only, {}, {"M": "x"}))
    listed = runner.invoke(app, ["reproduce", "--list"])
    assert "    runs QuickGELU: RN50, RN101, RN50x4, RN50x16, RN50x64, RoBERTa-ViT-B-32" in (
        listed.output
    )


def _table(*rows: ModelRow, column: Column | None = None) -> PaperTable:
    """A table whose rows each have one cell, in `column` (SugarCrepe++ TOT by default)."""
    column = column or _column("swap_obj")
    return PaperTable(
        name="hand_made", paper="A paper", table="Table 1", description="d", included="all",
        rows=rows, cells=cells([column], {r.name: (50.0,) for r in rows}),
    )  # fmt: skip


def test_offline_rows_needing_the_hub_say_so_and_do_not_run(
    empty_hub: Path, test_data_dir: Path
) -> None:
    rows = (ModelRow(name="CLIP", spec="clip:openai/clip-vit-base-patch32"),
            ModelRow(name="ALBEF", needs="its LAVIS checkpoint"))  # fmt: skip
    table, here = _table(*rows), {"data_dir": test_data_dir}
    run, why = plan_rows(table, rows, only_installed=False, is_offline=True, settings=here)
    assert run == []
    assert why == {
        "CLIP": "the Hugging Face Hub: openai/clip-vit-base-patch32",
        "ALBEF": "its LAVIS checkpoint",
    }
    # online, a row with a spec runs (its weights are fetched as any run does)
    run, why = plan_rows(table, rows, only_installed=False, is_offline=False, settings=here)
    assert [r.name for r in run] == ["CLIP"] and set(why) == {"ALBEF"}
    run, why = plan_rows(table, rows, only_installed=True, is_offline=False, settings=here)
    assert run == [] and set(why) == {"CLIP", "ALBEF"}


def test_list_names_every_table() -> None:
    out = runner.invoke(app, ["reproduce", "--list"])
    assert out.exit_code == 0, out.output
    names = [line.split()[0] for line in out.output.splitlines() if line[:1].strip()]
    assert names == ["bivlc_table2", "bivlc_table3", "bivlc_table4", "bivlc_table5",
                     "priors_table2", "scpp_table12", "scpp_table16", "scpp_table19",
                     "scpp_table2", "scpp_table3", "scpp_table4", "sugarcrepe",
                     "visla_generic", "visla_spatial"]  # fmt: skip


def test_unknown_table_or_row_is_one_error_line(tmp_path: Path) -> None:
    out = runner.invoke(app, ["reproduce", "scpp_table17", "-o", str(tmp_path / "o")])
    assert out.exit_code == 2 and "unknown paper table 'scpp_table17'" in out.output
    assert not (tmp_path / "o").exists()
    out = runner.invoke(
        app, ["reproduce", "scpp_table16", "--row", "MiniLM", "-o", str(tmp_path / "o")]
    )
    assert out.exit_code == 2 and "has no row 'MiniLM'" in out.output
    out = runner.invoke(app, ["reproduce"])
    assert out.exit_code == 2 and "give a TABLE" in out.output


# -- the offline MiniLM rows, through the command -----------------------------------------------
@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("reproduce-cache")


def _reproduce(table: str, out: Path, data: Path, cache: Path) -> list[dict[str, str]]:
    done = runner.invoke(app, ["reproduce", table, "-o", str(out), "--data-dir", str(data),
                               "--cache-dir", str(cache), "--n-boot", "200", "-q"])  # fmt: skip
    assert done.exit_code == 0, done.output
    assert (out / "comparison.md").read_text().startswith("<!-- lexsem -->")
    return list(csv.DictReader((out / "comparison.csv").read_text().splitlines()))


def _check_minilm_rows(rows: list[dict[str, str]], published: dict[str, float]) -> None:
    mine = [r for r in rows if r["model"] == "All-MiniLM-L6-v2"]
    got = {(r["metric"] if r["task"] == "t2t" else r["subset"]): r for r in mine}
    assert set(got) == set(published)
    for key, value in published.items():
        r = got[key]
        assert r["status"] == "compared" and float(r["published"]) == value
        assert round(float(r["lexsem"]), 2) == value  # as the paper prints it
        assert r["outside_ci"] == "false"
        assert float(r["ci_low"]) <= value <= float(r["ci_high"])
    others = [r for r in rows if r["model"] != "All-MiniLM-L6-v2"]
    assert others and all(r["status"] == "not run" for r in others)


@pytest.mark.data
@pytest.mark.slow
def test_scpp_table16_minilm_row_reproduced(
    test_data_dir: Path, minilm_path: Path, shared_cache: Path, tmp_path: Path, empty_hub: Path
) -> None:  # fmt: skip
    rows = _reproduce("scpp_table16", tmp_path / "t16", test_data_dir, shared_cache)
    _check_minilm_rows(rows, {"swap_obj": 14.29, "swap_att": 22.52, "replace_obj": 93.95,
                              "replace_att": 64.97, "replace_rel": 63.94})  # fmt: skip
    why = {r["model"]: r["why"] for r in rows if r["status"] == "not run"}
    assert why["BGE-small-en-v1.5"] == "the Hugging Face Hub: BAAI/bge-small-en-v1.5"
    assert len(list((tmp_path / "t16" / "runs").iterdir())) == 1  # only MiniLM ran


@pytest.mark.data
@pytest.mark.slow
def test_visla_generic_minilm_row_reproduced(
    test_data_dir: Path, minilm_path: Path, shared_cache: Path, tmp_path: Path, empty_hub: Path
) -> None:  # fmt: skip
    out = tmp_path / "visla"
    rows = _reproduce("visla_generic", out, test_data_dir, shared_cache)
    _check_minilm_rows(rows, {"t2t": 58.89, "p1n": 93.22, "p2n": 60.12})
    why = {r["model"]: r["why"] for r in rows if r["status"] == "not run"}
    # and, without COCO images here, where they are looked for
    assert why["CLIP-ViT-B-32"].startswith("the Hugging Face Hub: openai/clip-vit-base-patch32")
    assert why["ALBEF"].startswith("its LAVIS checkpoint")
    # a second call reads the finished run instead of running it again
    (run_dir,) = (out / "runs").iterdir()
    stamp = (run_dir / "run.json").stat().st_mtime_ns
    again = _reproduce("visla_generic", out, test_data_dir, shared_cache)
    assert (run_dir / "run.json").stat().st_mtime_ns == stamp
    assert again == rows
