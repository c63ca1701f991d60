"""Loaders: well-formed files parse; bad input is a clear error naming the file and row."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lexsem.benchmarks import formats as loaders
from lexsem.benchmarks.items import TripletItem
from lexsem.errors import DataError

SCPP = [
    {
        "id": 0,
        "filename": "a.jpg",
        "caption": "A cat on a mat.",
        "caption2": "On a mat sits a cat.",
        "negative_caption": "A mat on a cat.",
    },
    {
        "id": 7,
        "filename": "b.jpg",
        "caption": "Two dogs.",
        "caption2": "A pair of dogs.",
        "negative_caption": "Two cats.",
    },
]
SC = {"3": {"filename": "a.jpg", "caption": "A red car.", "negative_caption": "A blue car."}}
GENERIC = (
    "filename\tcaption\tsecond positive\tnegative_caption\r\n"
    'x.jpg\tA sign reads "Pub".\tThe sign says "Pub".\tA sign reads "Bar".\r\n'
    "y.jpg\tA man left of a dog.\tA dog right of a man.\tA man right of a dog."
)
SPATIAL = (
    "image\tsent1\tsent2\tBest reference (Semantically close)"
    "\tReference-2 (Completely irrelevant)\n"
    "z.jpg\tThe cat is in the box.\tThe box contains the cat.\tThe cat is outside the box.\tPizza\n"
)


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    return p


def test_scpp(tmp_path: Path) -> None:
    items = loaders.load_scpp_json(_write(tmp_path, "s.json", json.dumps(SCPP)), "swap_obj")
    assert items[1] == TripletItem(
        "7", "swap_obj", "b.jpg", "Two dogs.", "A pair of dogs.", "Two cats."
    )


def test_sugarcrepe(tmp_path: Path) -> None:
    (item,) = loaders.load_sugarcrepe_json(_write(tmp_path, "s.json", json.dumps(SC)), "add_att")
    assert (item.id, item.pos, item.neg, item.image) == ("3", "A red car.", "A blue car.", "a.jpg")


def test_visla_generic_keeps_quotes_and_crlf(tmp_path: Path) -> None:
    items = loaders.load_visla_generic_tsv(_write(tmp_path, "g.tsv", GENERIC), "generic")
    assert [i.id for i in items] == ["0", "1"]
    assert items[0].p1 == 'A sign reads "Pub".' and items[0].n == 'A sign reads "Bar".'
    assert items[1].n == "A man right of a dog."  # last line without newline


def test_visla_spatial(tmp_path: Path) -> None:
    (item,) = loaders.load_visla_spatial_tsv(_write(tmp_path, "s.tsv", SPATIAL), "spatial")
    assert (item.p1, item.p2, item.n) == (
        "The cat is in the box.",
        "The box contains the cat.",
        "The cat is outside the box.",
    )


def test_truncated_json_names_file_and_line(tmp_path: Path) -> None:
    text = json.dumps(SCPP, indent=1)
    p = _write(tmp_path, "cut.json", text[: len(text) // 2])
    with pytest.raises(DataError, match=r"cut\.json:\d+: malformed JSON") as exc:
        loaders.load_scpp_json(p, "x")
    assert exc.value.line is not None and exc.value.line > 1


def test_wrong_top_level_type(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="expected a JSON list"):
        loaders.load_scpp_json(_write(tmp_path, "d.json", json.dumps(SC)), "x")
    with pytest.raises(DataError, match="expected a JSON object"):
        loaders.load_sugarcrepe_json(_write(tmp_path, "l.json", json.dumps(SCPP)), "x")


def test_missing_field_names_item(tmp_path: Path) -> None:
    bad = [dict(SCPP[0]), {k: v for k, v in SCPP[1].items() if k != "caption2"}]
    with pytest.raises(DataError, match=r"m\.json, item 7: missing field 'caption2'"):
        loaders.load_scpp_json(_write(tmp_path, "m.json", json.dumps(bad)), "x")


def test_non_string_field(tmp_path: Path) -> None:
    bad = {"1": {"filename": "a.jpg", "caption": 5, "negative_caption": "x"}}
    with pytest.raises(DataError, match="item 1: field 'caption' must be a string"):
        loaders.load_sugarcrepe_json(_write(tmp_path, "n.json", json.dumps(bad)), "x")


def test_empty_caption_strict_and_lenient(tmp_path: Path) -> None:
    bad = [dict(SCPP[0], negative_caption="   ")]
    p = _write(tmp_path, "e.json", json.dumps(bad))
    with pytest.raises(DataError, match="item 0: field 'negative_caption' is empty"):
        loaders.load_scpp_json(p, "x")
    (item,) = loaders.load_scpp_json(p, "x", strict=False)
    assert item.n == "   "


def test_empty_tsv_field_names_line(tmp_path: Path) -> None:
    text = GENERIC.replace("A dog right of a man.", "")
    with pytest.raises(DataError, match=r"g\.tsv:3, item 1: field 'second positive' is empty"):
        loaders.load_visla_generic_tsv(_write(tmp_path, "g.tsv", text), "generic")


def test_non_utf8_names_line(tmp_path: Path) -> None:
    raw = GENERIC.encode("utf-8").replace(b"A man left", b"A m\xe9n left")
    with pytest.raises(DataError, match=r"g\.tsv:3: not valid UTF-8 \(byte 0xe9"):
        loaders.load_visla_generic_tsv(_write(tmp_path, "g.tsv", raw), "generic")


def test_missing_column(tmp_path: Path) -> None:
    text = GENERIC.replace("second positive", "second")
    with pytest.raises(DataError, match=r"g\.tsv:1: missing column\(s\) \['second positive'\]"):
        loaders.load_visla_generic_tsv(_write(tmp_path, "g.tsv", text), "generic")


def test_wrong_field_count_names_line(tmp_path: Path) -> None:
    text = GENERIC.replace('The sign says "Pub".\t', "")
    with pytest.raises(DataError, match=r"g\.tsv:2: expected 4 tab-separated fields, found 3"):
        loaders.load_visla_generic_tsv(_write(tmp_path, "g.tsv", text), "generic")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot read the file"):
        loaders.load_scpp_json(tmp_path / "nope.json", "x")


def test_empty_tsv(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty file"):
        loaders.load_visla_generic_tsv(_write(tmp_path, "g.tsv", ""), "generic")


def test_every_missing_field_is_named_at_once(tmp_path: Path) -> None:
    bad = [{"id": 3, "caption": "a"}, {"id": 4, "caption": "b"}]
    with pytest.raises(DataError) as exc:
        loaders.load_scpp_json(_write(tmp_path, "m.json", json.dumps(bad)), "x")
    msg = str(exc.value)
    assert "m.json, item 3: missing fields 'caption2', 'negative_caption'" in msg
    assert "1 other item(s) lack fields too" in msg
    pairs = {"7": {"caption": "a"}}
    with pytest.raises(DataError, match=r"item 7: missing field 'negative_caption' \(it has"):
        loaders.load_sugarcrepe_json(_write(tmp_path, "p.json", json.dumps(pairs)), "x")


def test_files_without_image_references_load_as_text_only_items(tmp_path: Path) -> None:
    triplets = [{k: v for k, v in rec.items() if k != "filename"} for rec in SCPP]
    items = loaders.load_scpp_json(_write(tmp_path, "t.json", json.dumps(triplets)), "x")
    assert [it.image for it in items] == [None] * len(SCPP)
    assert [it.p1 for it in items] == [rec["caption"] for rec in SCPP]
    pairs = {k: {f: v for f, v in rec.items() if f != "filename"} for k, rec in SC.items()}
    (pair, *_) = loaders.load_sugarcrepe_json(_write(tmp_path, "p.json", json.dumps(pairs)), "x")
    assert pair.image is None
    no_image_column = "\n".join("\t".join(line.split("\t")[1:]) for line in GENERIC.splitlines())
    rows = loaders.load_visla_generic_tsv(_write(tmp_path, "g.tsv", no_image_column), "generic")
    assert rows and all(it.image is None for it in rows)


@pytest.mark.parametrize("fmt", ["sugarcrepe", "scpp", "visla", "visla_spatial"])
def test_each_formats_documented_example_loads_with_and_without_images(
    fmt: str, tmp_path: Path
) -> None:
    """`lexsem list formats` shows these; a user copies them."""
    from lexsem.benchmarks.user import FORMATS, SCHEMAS, describe_formats

    _, parse, ext = FORMATS.get(fmt)
    schema = SCHEMAS[fmt]
    assert parse is not None and schema.example in describe_formats().replace("\n    ", "\n")
    (item,) = parse(_write(tmp_path, f"ex{ext}", schema.example), "x")
    assert item.image == "000000391895.jpg"
    (image_field,) = schema.optional
    if ext == ".json":
        data = json.loads(schema.example)
        for rec in data.values() if isinstance(data, dict) else data:
            del rec[image_field]
        text = json.dumps(data)
    else:
        text = "\n".join("\t".join(line.split("\t")[1:]) for line in schema.example.splitlines())
    (text_only,) = parse(_write(tmp_path, f"t{ext}", text), "x")
    assert text_only.image is None and text_only.texts() == item.texts()
    for field in schema.required:  # each required field is one the loader asks for
        if ext == ".json":
            data = json.loads(schema.example)
            for rec in data.values() if isinstance(data, dict) else data:
                del rec[field]
            bad = json.dumps(data)
        else:
            bad = schema.example.replace(field, "renamed", 1)
        with pytest.raises(DataError, match=re.escape(repr(field))):
            parse(_write(tmp_path, f"bad{ext}", bad), "x")
