"""One model in fp32 and in bf16: the bf16 run says its hits may differ (run.json, the eval
summary, the report), and `lexsem compare` of the two counts the items whose hit differs."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from lexsem.cli import app

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def two_dtypes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from builders.tiny_dual_models import write_tiny_openclip

    root = tmp_path_factory.mktemp("dtypes")
    spec = write_tiny_openclip(root / "model", "tiny-dtype")
    runner = CliRunner()
    out = {}
    for dtype in ("fp32", "bf16"):
        out[dtype] = root / dtype
        args = ["eval", "-m", spec, "-b", "synthetic", "--dtype", dtype, "--device", "cpu"]
        args += ["--n-boot", "0", "--cache-dir", str(root / "cache"), "-o", str(out[dtype])]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        (root / f"{dtype}.stderr").write_text(res.stderr)
    return out


def test_a_bf16_run_says_its_hits_may_differ(two_dtypes: dict[str, Path]) -> None:
    fp32 = json.loads((two_dtypes["fp32"] / "run.json").read_text())["model"]
    bf16 = json.loads((two_dtypes["bf16"] / "run.json").read_text())["model"]
    assert (fp32["dtype"], bf16["dtype"]) == ("fp32", "bf16")
    assert "dtype_note" not in fp32 and "dtype_reason" not in fp32  # fp32 records as they were
    assert bf16["dtype_note"].startswith("bf16: hits may differ from an fp32 run")
    said = (two_dtypes["bf16"].parent / "bf16.stderr").read_text()
    assert "note: bf16: hits may differ from an fp32 run" in said
    res = CliRunner().invoke(app, ["report", str(two_dtypes["fp32"]), str(two_dtypes["bf16"])])
    assert res.exit_code == 0, res.output
    notes = [ln for ln in res.stdout.splitlines() if "reduced precision" in ln]
    assert notes and all("(bf16)" in ln and "(fp32)" not in ln for ln in notes)


def _differ(a: Path, b: Path, metric: str) -> dict[str, int]:
    """Per subset, the items whose hit differs, read from the two per-item files directly."""
    rows = [pq.read_table(p / "items.parquet").to_pylist() for p in (a, b)]
    hits = [
        {(r["subset"], r["item_id"]): r["hit"] for r in t if r["metric"] == metric} for t in rows
    ]
    out: dict[str, int] = {}
    for key, hit in hits[0].items():
        out[key[0]] = out.get(key[0], 0) + int(hit != hits[1][key])
    return out


def test_compare_counts_the_items_whose_hit_differs_per_subset(
    two_dtypes: dict[str, Path],
) -> None:
    res = CliRunner().invoke(app, ["compare", str(two_dtypes["fp32"]), str(two_dtypes["bf16"])])
    assert res.exit_code == 0, res.output
    lines = {ln.split(":")[0]: ln for ln in res.stdout.splitlines() if "hits differ" in ln}
    assert set(lines) == {"synthetic tot", "synthetic itt"}
    for metric in ("tot", "itt"):
        want = _differ(two_dtypes["fp32"], two_dtypes["bf16"], metric)
        line = lines[f"synthetic {metric}"]
        assert f"between fp32 (A) and bf16 (B) on {sum(want.values())} of " in line
        for subset, n in want.items():
            assert f"{subset} {n}/" in line


def test_compare_of_two_models_has_no_dtype_line(two_dtypes: dict[str, Path]) -> None:
    res = CliRunner().invoke(app, ["compare", str(two_dtypes["fp32"]), str(two_dtypes["fp32"])])
    assert res.exit_code == 0, res.output
    assert "hits differ" not in res.stdout


def test_dtype_auto_says_what_it_picked(
    two_dtypes: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lexsem.models import device

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f\n")
    monkeypatch.setattr(device, "CPUINFO", info)
    fp32 = json.loads((two_dtypes["fp32"] / "run.json").read_text())
    out = tmp_path / "auto"
    args = ["eval", "-m", fp32["model"]["spec"], "-b", "synthetic", "--dtype", "auto"]
    args += ["--device", "cpu", "--n-boot", "0", "-o", str(out)]
    args += ["--cache-dir", str(two_dtypes["fp32"].parent / "cache")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "dtype auto: fp32, this CPU has no native bf16" in res.stderr
    model = json.loads((out / "run.json").read_text())["model"]
    assert model["dtype"] == "fp32" and "dtype_note" not in model
    assert model["dtype_reason"].startswith("auto: fp32, this CPU has no native bf16")
    # the same fingerprint as the fp32 run: every embedding came from its store
    assert model["fingerprint_key"] == fp32["model"]["fingerprint_key"]
