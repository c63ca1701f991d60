"""`lexsem train-data`: every value is checked before anything is drawn or written (image side
within `MAX_IMAGE_SIZE`, example count within the scenes not held out, dev share in [0, 1), a
folder not a file) with one error line naming it, and examples are rendered and written one at
a time (memory does not grow with their number)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lexsem.cli import app
from lexsem.train import rendered
from lexsem.train.rendered import MAX_IMAGE_SIZE, MAX_RENDER_BYTES, render_bytes, write_rendered

BAD = {
    "size-below-min": (["-n", "5", "--size", "32"], "--size 32: must be 48 to 2048"),
    "size-huge": (["-n", "5", "--size", "30000"], "--size 30000: must be 48 to 2048"),
    "dev-above-1": (["-n", "5", "--dev-fraction", "1.5"], "--dev-fraction 1.5: must be"),
    "dev-negative": (["-n", "5", "--dev-fraction", "-0.5"], "--dev-fraction -0.5: must be"),
    "dev-nan": (["-n", "5", "--dev-fraction", "nan"], "--dev-fraction nan: must be"),
    "n-too-many": (["-n", "10000000"], "-n 10000000: must be 1 to "),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_values_are_one_line_before_anything_is_written(tmp_path: Path, case: str) -> None:
    args, message = BAD[case]
    out = tmp_path / "data"
    res = CliRunner().invoke(app, ["train-data", str(out), *args])
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines
    assert not out.exists()  # nothing drawn, nothing written


@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_a_file_given_for_the_folder_is_refused(tmp_path: Path, where: str) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("mine\n")
    out = file if where == "file" else file / "sub"
    res = CliRunner().invoke(app, ["train-data", str(out), "-n", "2", "--size", "48"])
    assert res.exit_code == 2 and res.output.startswith(f"error: {file} is a file"), res.output
    assert file.read_text() == "mine\n"


def test_the_size_bound_is_the_memory_bound() -> None:
    """The largest side allowed renders within `MAX_RENDER_BYTES`, one pixel more does not;
    the estimate is three RGB canvases (canvas, encoder rows, encoded output)."""
    assert render_bytes(MAX_IMAGE_SIZE) == 3 * 3 * MAX_IMAGE_SIZE**2 <= MAX_RENDER_BYTES
    assert render_bytes(MAX_IMAGE_SIZE + 1) > MAX_RENDER_BYTES


def test_examples_are_written_as_they_are_rendered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When an image is drawn, every image drawn before it — except its own example's
    positive image, drawn just before its negative — is on disk already: no example waits in
    memory for the others."""
    out = tmp_path / "data"
    seen: list[int] = []
    draw = rendered.scene_png

    def counting(scene: Any, size: int) -> bytes:
        images = out / "images"
        seen.append(len(list(images.glob("*.png"))) if images.is_dir() else 0)
        return draw(scene, size)

    monkeypatch.setattr(rendered, "scene_png", counting)
    write_rendered(out, 12, seed=0, size=48)
    assert len(seen) == len(list((out / "images").glob("*.png"))) > 12
    assert all(j - 1 <= on_disk <= j for j, on_disk in enumerate(seen)), seen
    assert not list((out / "images").glob(".*.part"))  # no temporary file left
