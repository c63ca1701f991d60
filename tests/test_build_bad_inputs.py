"""`lexsem build` refuses bad input before stage 1 with one `error:` line naming the file or
folder, and writes nothing: a damaged Parquet or CSV input, an input or source that gives no
rows (a 0-byte VSR file), a COCO captions file nested 200,000 deep, an output folder that
cannot be written (a read-only parent; a read-only build folder with --force)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from builders.privileges import where_permission_bits_apply
from builders.recipes import recipe_toml, stage, toml_value
from lexsem.cli.app import app

runner = CliRunner()


def _refused(args: list[str | Path], *needles: str | Path) -> str:
    result = runner.invoke(app, ["build", *map(str, args)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    for needle in needles:
        assert str(needle) in result.output, result.output
    return result.output


def _file_recipe(folder: Path, input_name: str) -> Path:
    recipe = folder / "recipe.toml"
    recipe.write_text(
        recipe_toml("bad", 0, stage("caption_format"), input_path=input_name), encoding="utf-8"
    )
    return recipe


def _source_recipe(folder: Path, source: str, **settings: str) -> Path:
    lines = ['name = "bad"', "seed = 0", "", "[input]", f"source = {toml_value(source)}",
             "[input.settings]", *(f"{k} = {toml_value(v)}" for k, v in settings.items()),
             "", "[[stages]]", 'use = "caption_format"']  # fmt: skip
    recipe = folder / "recipe.toml"
    recipe.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return recipe


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("captions.parquet", b"PAR1 not really parquet", "not a readable Parquet file"),
        ("captions.parquet", b"", "not a readable Parquet file"),
        ("captions.csv", b"", "not a readable CSV file"),
        ("captions.csv", b"caption\n", "no rows"),
        ("captions.jsonl", b"", "no rows"),
    ],
)
def test_a_damaged_or_empty_input_file_is_one_line(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    (tmp_path / name).write_bytes(content)
    out = tmp_path / "b"
    _refused([_file_recipe(tmp_path, name), "-o", out], tmp_path / name, message)
    assert not out.exists()


def test_a_0_byte_vsr_input_is_refused(tmp_path: Path) -> None:
    vsr = tmp_path / "vsr.jsonl"
    vsr.write_bytes(b"")
    out = tmp_path / "b"
    _refused([_source_recipe(tmp_path, "vsr", path=str(vsr)), "-o", out], vsr, "no rows", "vsr")
    assert not out.exists()


def test_a_captions_file_nested_200000_deep_is_one_line(tmp_path: Path) -> None:
    from lexsem.jsonl import MAX_DEPTH

    captions = tmp_path / "captions_train2017.json"
    captions.write_text('{"annotations": ' + "[" * 200_000 + "]" * 200_000 + "}")
    recipe = _source_recipe(tmp_path, "coco_captions", path=str(captions))
    out = tmp_path / "b"
    _refused([recipe, "-o", out], captions, f"JSON nested more than {MAX_DEPTH} deep")
    assert not out.exists()


@where_permission_bits_apply
def test_an_output_folder_that_cannot_be_written_is_refused_before_stage_1(
    tmp_path: Path,
) -> None:
    data = tmp_path / "captions.jsonl"
    data.write_text(json.dumps({"caption": "a dog on a sofa"}) + "\n", encoding="utf-8")
    recipe = _file_recipe(tmp_path, data.name)
    locked = tmp_path / "ro"
    locked.mkdir()
    built = tmp_path / "built"
    done = runner.invoke(app, ["build", str(recipe), "-o", str(built), "-q"])
    assert done.exit_code == 0, done.output
    before = sorted(p.relative_to(built) for p in built.rglob("*"))
    locked.chmod(0o555)
    built.chmod(0o555)
    try:
        assert not os.access(locked, os.W_OK)
        _refused([recipe, "-o", locked / "b"], "-o", locked / "b", f"the folder {locked} is "
                 "read-only")  # fmt: skip
        assert list(locked.iterdir()) == []
        _refused([recipe, "-o", built, "--force"], "-o", built, "is read-only")
        assert sorted(p.relative_to(built) for p in built.rglob("*")) == before
    finally:
        locked.chmod(0o755)
        built.chmod(0o755)


def test_a_benchmark_file_explore_exports_is_a_build_input(tmp_path: Path) -> None:
    """`lexsem explore`'s benchmark export (SugarCrepe++ triplets: a list; SugarCrepe pairs: an
    object keyed by id) reads as a build input: one row per item, its id kept; a file of
    neither shape is one line."""
    from types import SimpleNamespace

    from lexsem.construct.inputs import read_input
    from lexsem.errors import DataError
    from lexsem.explore.exports import benchmark_file

    trip = [SimpleNamespace(p1=f"a dog {i}", p2=f"one dog {i}", n=f"a cat {i}", image=None,
                            subset="swap_obj", id=str(i)) for i in range(3)]  # fmt: skip
    pairs = [SimpleNamespace(pos=f"a dog {i}", neg=f"a cat {i}", image=f"{i}.jpg",
                             subset="swap_obj", id=str(i)) for i in range(2)]  # fmt: skip
    for items, n in ((trip, 3), (pairs, 2)):
        fmt, name, body = benchmark_file(items)
        path = tmp_path / f"{fmt}-{name}"
        path.write_bytes(body)
        rows = read_input(path, None, {}).rows.to_pylist()
        assert len(rows) == n
        assert [r["caption"] for r in rows] == [f"a dog {i}" for i in range(n)]
        assert [r["negative_caption"] for r in rows] == [f"a cat {i}" for i in range(n)]
        assert all(r["source_id"] == r["id"] for r in rows)
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", "utf-8")
    with pytest.raises(DataError, match=r"bad.json: item 1 is not a JSON object"):
        read_input(bad, None, {})
