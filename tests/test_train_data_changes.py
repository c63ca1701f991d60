"""`lexsem train` when its data changes under it: a manifest or an image changed between a run
and its `--resume` is refused like a changed setting (one line, both digests); an image removed
or damaged during the run stops it with one line naming the image and its manifest line, the
state saved, and `--resume` continues once the image is back; a `--resume` folder that is not
a training run says what it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.backends import require_module
from builders.tiny_dual_models import write_tiny_openclip

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A random tiny open_clip CLIP as a custom arch file and a checkpoint: its spec."""
    require_module("open_clip")
    return write_tiny_openclip(tmp_path_factory.mktemp("tiny-clip"), "tiny-changes")


@pytest.fixture
def manifest(tmp_path: Path) -> Path:
    from lexsem.train.rendered import write_rendered

    return write_rendered(tmp_path / "data", 16, seed=0, size=48)


def _train(tiny: str, manifest: Path, out: Path, *more: str) -> Any:
    from lexsem.cli import app

    args = ["train", "--manifest", str(manifest), "-o", str(out), "-m", tiny, "--batch-size",
            "8", "--epochs", "2", "--lr", "1e-3", "--warmup", "1", "--device", "cpu",
            "--cache-dir", str(out.parent / "cache"), "--n-boot", "0", "-q", *more]  # fmt: skip
    return CliRunner().invoke(app, args)


def _one_error_line(res: Any) -> str:
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    return lines[0]


def _image(manifest: Path, line: int) -> Path:
    row = json.loads(manifest.read_text().splitlines()[line - 1])
    return manifest.parent / row["image"].removeprefix("manifest:")


def test_a_changed_manifest_is_refused_on_resume(tiny: str, manifest: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert _train(tiny, manifest, out, "--max-steps", "1").exit_code == 0
    record = json.loads((out / "train.json").read_text())
    before = record["data"]["sha256"]
    lines = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(lines[:-1]))  # one row fewer
    line = _one_error_line(_train(tiny, manifest, out, "--resume"))
    assert f"{manifest}: the manifest changed since the run in {out} started" in line
    assert f"sha256 {before[:12]} then" in line
    import hashlib

    assert f"{hashlib.sha256(manifest.read_bytes()).hexdigest()[:12]} now" in line
    assert json.loads((out / "train.json").read_text()) == record  # the record untouched
    manifest.write_text("".join(lines))  # the same bytes again: it resumes
    assert _train(tiny, manifest, out, "--resume").exit_code == 0


def test_a_changed_image_is_refused_on_resume(tiny: str, manifest: Path, tmp_path: Path) -> None:
    from PIL import Image

    out = tmp_path / "run"
    assert _train(tiny, manifest, out, "--max-steps", "1").exit_code == 0
    images = json.loads((out / "train.json").read_text())["data"]["images_sha256"]
    Image.new("RGB", (48, 48), "red").save(_image(manifest, 4))
    line = _one_error_line(_train(tiny, manifest, out, "--resume"))
    assert f"{manifest}: an image of the manifest changed since the run in {out}" in line
    assert f"sha256 {images[:12]} then" in line


@pytest.mark.parametrize("damage", ["removed", "garbage"])
@pytest.mark.parametrize("workers", [0, 1])
def test_an_image_lost_mid_run_is_named_with_its_manifest_line(
    tiny: str, manifest: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str,
    workers: int,
) -> None:  # fmt: skip
    """The image is damaged after the manifest was checked, before the first batch."""
    from lexsem.train import loop

    image = _image(manifest, 6)
    kept = image.read_bytes()
    start = loop._Loop.start

    def start_then_damage(self: Any, *args: Any) -> None:
        start(self, *args)
        image.unlink() if damage == "removed" else image.write_bytes(b"not an image")

    monkeypatch.setattr(loop._Loop, "start", start_then_damage)
    out = tmp_path / "run"
    line = _one_error_line(_train(tiny, manifest, out, "--num-workers", str(workers)))
    assert line.startswith(f"error: {manifest}:6: field 'image': ")
    assert "manifest:images/000005.png" in line
    assert "restore the image and continue with --resume" in line
    assert (out / "state.pt").is_file()
    monkeypatch.setattr(loop._Loop, "start", start)
    image.write_bytes(kept)
    done = _train(tiny, manifest, out, "--resume")
    assert done.exit_code == 0 and "done: 4 steps" in done.output, done.output


def test_a_resume_folder_that_is_not_a_training_run_says_what_it_is(
    tiny: str, manifest: Path, tmp_path: Path
) -> None:
    evaluation = tmp_path / "eval-run"
    evaluation.mkdir()
    (evaluation / "run.json").write_text("{}")
    line = _one_error_line(_train(tiny, manifest, evaluation, "--resume"))
    assert f"{evaluation}: it is an evaluation run's folder (run.json)" in line
    line = _one_error_line(_train(tiny, manifest, manifest.parent, "--resume"))
    assert f"{manifest.parent}: not a training run's folder (no train.json nor state.pt)" in line
    line = _one_error_line(_train(tiny, manifest, tmp_path / "absent", "--resume"))
    assert f"{tmp_path / 'absent'} does not exist" in line
    line = _one_error_line(_train(tiny, manifest, manifest, "--resume"))
    assert f"{manifest} is a file, not a training run's folder" in line
    assert not (tmp_path / "absent").exists()
