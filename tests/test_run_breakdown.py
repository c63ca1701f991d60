"""Where a run's wall time goes (`lexsem.clock`, run.json `timings.breakdown`, `eval --profile`):
the parts are there, never negative, exclusive, and with the rest they make the wall. No
timing is asserted: how fast is `make bench`'s business."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.fakes import TinyDualEncoder, register_fixture_benchmark_with_images
from lexsem import clock, evaluate
from lexsem.cli import app
from lexsem.results.run_folder import load_run
from lexsem.results.schema import Breakdown

runner = CliRunner()


def _check_sums(b: Breakdown) -> None:
    parts = b.parts()
    assert set(parts) == {name.removesuffix("_s") for name in Breakdown.PARTS}
    assert all(v >= 0.0 for v in parts.values()), parts
    assert b.wall_s > 0.0
    assert sum(parts.values()) == pytest.approx(b.wall_s, rel=1e-9, abs=1e-6)
    assert min(b.decode_read_s, b.decode_pil_s, b.decode_preprocess_s, b.decode_workers_s) >= 0


def test_spans_are_exclusive_and_count_only_on_the_run_thread() -> None:
    with clock.span("text_tower"):  # no clock running: nothing to count, nothing fails
        pass
    with clock.running() as c:
        with clock.span("text_tower"):
            with clock.span("tokenize"), clock.span("tokenize"):  # the same part nested
                pass
            with clock.span("model_load"):
                pass
        elsewhere = threading.Thread(target=lambda: clock.span("store").__enter__())
        elsewhere.start()
        elsewhere.join()
        clock.overlapped("decode", 2.5)
    assert clock._current is None
    assert c.spent["store"] == 0.0  # opened on another thread: not the run's time
    assert c.spent["start_up"] == 0.0  # not a CLI run
    assert all(c.spent[p] >= 0.0 for p in clock.PARTS)
    assert c.beside == {"decode": 2.5}
    assert not c._open


def test_a_span_left_by_an_exception_closes() -> None:
    with clock.running() as c:
        with pytest.raises(ValueError), clock.span("scoring"):
            raise ValueError("x")
        assert not c._open


def test_start_up_counts_once_from_the_process_start() -> None:
    age = clock.process_age()
    assert age is None or age > 0.0
    clock.count_start_up()
    with clock.running() as first:
        pass
    with clock.running() as second:
        pass
    assert first.spent["start_up"] == pytest.approx(age or 0.0, abs=3600)
    assert second.spent["start_up"] == 0.0


@pytest.mark.parametrize("workers", [0, 1])
def test_an_image_run_records_its_breakdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    data, images = register_fixture_benchmark_with_images(tmp_path, monkeypatch)
    run = evaluate(
        TinyDualEncoder(), ["fixture_pp"], data_dir=data, coco_val2017=images, n_boot=50,
        num_workers=workers, batch_size=2,
    )  # fmt: skip
    t = run.record.timings
    b = t.breakdown
    assert b is not None
    _check_sums(b)
    assert b.start_up_s == 0.0  # a library run: its wall is the run's
    assert b.wall_s == pytest.approx(t.total_s)
    assert b.decode_workers == workers
    assert (b.decode_workers_s > 0.0) == (workers > 0)  # work done beside the wall, or none
    # the decoding work of the images encoded was counted (in the workers or in the thread)
    assert b.decode_read_s + b.decode_pil_s + b.decode_preprocess_s > 0.0


def test_an_old_run_json_without_a_breakdown_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, images = register_fixture_benchmark_with_images(tmp_path, monkeypatch)
    out = tmp_path / "run"
    evaluate(TinyDualEncoder(), ["fixture_pp"], data_dir=data, coco_val2017=images, n_boot=0,
             num_workers=0, out=out)  # fmt: skip
    raw = json.loads((out / "run.json").read_text())
    assert "breakdown" in raw["timings"]
    del raw["timings"]["breakdown"]
    (out / "run.json").write_text(json.dumps(raw))
    old = load_run(out)
    assert old.timings.breakdown is None
    # written again as it was: no `breakdown: null`
    assert "breakdown" not in old.model_dump(mode="json")["timings"]


def test_eval_profile_prints_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    from builders.tiny_dual_models import write_clip

    data, images = register_fixture_benchmark_with_images(tmp_path, monkeypatch)
    folder = write_clip(tmp_path / "clip")
    out = tmp_path / "run"
    args = ["eval", "-m", f"clip:{folder}", "-b", "fixture_pp", "--data-dir", str(data),
            "--coco-val2017", str(images), "-o", str(out), "--n-boot", "0", "--num-workers",
            "0", "--device", "cpu", "--offline"]  # fmt: skip
    done = runner.invoke(app, [*args, "--profile"])
    assert done.exit_code == 0, done.output
    for label in ("start-up", "model load", "tokenizing", "text tower", "image tower",
                  "request store", "the rest", "wall"):  # fmt: skip
        assert label in done.output, done.output
    b = load_run(out).timings.breakdown
    assert b is not None
    _check_sums(b)
    assert b.start_up_s > 0.0  # a CLI run's wall starts with its process
    plain = runner.invoke(app, [*args, "--force"])
    assert plain.exit_code == 0 and "the rest" not in plain.output
