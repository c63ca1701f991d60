"""The one JSON Lines reader (`lexsem.jsonl`): values with their line numbers; every problem a
one-line `DataError` naming the file and the line, bounded in line size and nesting depth."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lexsem.errors import DataError
from lexsem.jsonl import MAX_DEPTH, read_json, read_jsonl


def _one_line_error(path: Path, **bounds: int) -> str:
    with pytest.raises(DataError) as info:
        list(read_jsonl(path, **bounds))
    message = str(info.value)
    assert "\n" not in message
    return message


def test_values_come_with_their_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n\n  \r\n[1, "\\u00e9 ]"]\r\n"x"')  # blank lines, CRLF, no last \n
    assert list(read_jsonl(path)) == [(1, {"a": 1}), (4, [1, "é ]"]), (5, "x")]
    assert list(read_jsonl(tmp_path / "a.jsonl", max_line_bytes=16)) == list(read_jsonl(path))


def test_a_bad_line_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}\n{"a": \n', encoding="utf-8")
    message = _one_line_error(path)
    assert message.startswith(f"{path}:3: not valid JSON (Expecting value, column 7)")


def test_bytes_that_are_not_utf8_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'"ok"\n"caf\xe9"\n')
    assert _one_line_error(path) == f"{path}:2: not valid UTF-8 (byte 0xe9 at column 5)"


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    message = _one_line_error(tmp_path / "none.jsonl")
    assert message.startswith(f"{tmp_path / 'none.jsonl'}: cannot read the file")


def test_deep_nesting_is_one_line_error_not_recursion(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"ok": [[1]]}\n' + "[" * 200_000 + "]" * 200_000 + "\n", encoding="utf-8")
    assert _one_line_error(path) == f"{path}:2: JSON nested more than {MAX_DEPTH} deep"
    objects = tmp_path / "objects.jsonl"
    objects.write_text('{"a":' * 200_000 + "1" + "}" * 200_000 + "\n", encoding="utf-8")
    assert "nested more than" in _one_line_error(objects)


def test_depth_counts_nesting_not_brackets(tmp_path: Path) -> None:
    """Many brackets side by side, or inside strings, are no nesting; MAX_DEPTH itself is."""
    path = tmp_path / "wide.jsonl"
    wide = "[" + ",".join(["[]"] * 5_000) + "]"
    quoted = '["' + "[" * 5_000 + '\\"{"]'
    at_bound = "[" * 3 + "]" * 3
    path.write_text("\n".join([wide, quoted, at_bound]) + "\n", encoding="utf-8")
    values = [v for _, v in read_jsonl(path, max_depth=3)]
    assert len(values[0]) == 5_000 and values[1] == ["[" * 5_000 + '"{'] and values[2] == [[[]]]
    deeper = tmp_path / "deeper.jsonl"
    deeper.write_text("[" * 4 + "]" * 4 + "\n", encoding="utf-8")
    assert _one_line_error(deeper, max_depth=3) == f"{deeper}:1: JSON nested more than 3 deep"


def test_an_over_long_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    path.write_text('"short"\n"' + "x" * 100 + '"\n', encoding="utf-8")
    message = _one_line_error(path, max_line_bytes=64)
    assert re.fullmatch(rf"{re.escape(str(path))}:2: a line longer than 64 bytes .*", message)
    exact = tmp_path / "exact.jsonl"
    exact.write_text('"' + "x" * 62 + '"\n', encoding="utf-8")  # 64 bytes and its newline
    assert list(read_jsonl(exact, max_line_bytes=64)) == [(1, "x" * 62)]


def test_bytes_already_read_a_bom_and_a_hook(tmp_path: Path) -> None:
    """`data`: the bytes a caller read (and hashed); a BOM before the first line; a ValueError
    of `object_pairs_hook` is a DataError naming the file and line."""
    path = tmp_path / "not-on-disk.jsonl"
    data = b'\xef\xbb\xbf{"a": 1}\n{"a": 2, "a": 3}\n'
    assert list(read_jsonl(path, data=data)) == [(1, {"a": 1}), (2, {"a": 3})]

    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        keys = [k for k, _ in pairs]
        if len(set(keys)) < len(keys):
            raise ValueError("a key given twice")
        return dict(pairs)

    with pytest.raises(DataError, match=r"not-on-disk\.jsonl:2: a key given twice"):
        list(read_jsonl(path, data=data, object_pairs_hook=unique))


def test_bad_lines_skipped_with_on_error(tmp_path: Path) -> None:
    """`on_error`: each bad line's DataError is given to it and the line skipped; an over-long
    line is skipped whole."""
    path = tmp_path / "torn.jsonl"
    path.write_bytes(b'"a"\n{"torn": \n"caf\xe9"\n"' + b"x" * 200 + b'"\n"b"\n[[[[1]]]]\n{"c')
    bad: list[DataError] = []
    got = list(read_jsonl(path, max_line_bytes=64, max_depth=3, on_error=bad.append))
    assert got == [(1, "a"), (5, "b")]
    assert [e.line for e in bad] == [2, 3, 4, 6, 7]


def test_a_whole_json_file_is_read_with_the_same_bounds(tmp_path: Path) -> None:
    """`read_json`: a BOM is allowed; bad bytes, bad JSON and deep nesting are one-line
    `DataError`s naming the file (and the line where there is one), never a RecursionError."""
    path = tmp_path / "a.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": [1, {"b": "[[["}]}')
    assert read_json(path) == {"a": [1, {"b": "[[["}]}
    assert read_json(path, object_pairs_hook=list) == [("a", [1, [("b", "[[[")]])]
    deep = tmp_path / "deep.json"
    for text in ("[" * 200_000 + "]" * 200_000, '{"a":' * 200_000 + "1" + "}" * 200_000):
        deep.write_text(text, encoding="utf-8")
        with pytest.raises(DataError) as info:
            read_json(deep)
        assert str(info.value) == f"{deep}: JSON nested more than {MAX_DEPTH} deep"
    deep.write_text("[" * 4 + "]" * 4, encoding="utf-8")
    assert read_json(deep, max_depth=4) == [[[[]]]]
    with pytest.raises(DataError, match="nested more than 3 deep"):
        read_json(deep, max_depth=3)
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "a": 1,\n  "b": \n', encoding="utf-8")
    with pytest.raises(DataError, match=rf"{re.escape(str(bad))}:4: malformed JSON"):
        read_json(bad)
    bad.write_text('{"caption": "A dog."}\n{"caption": "A cat."}\n', encoding="utf-8")
    with pytest.raises(DataError) as info:  # JSON Lines where one document is read
        read_json(bad)
    assert str(info.value) == (
        f"{bad}:2: one JSON document expected, but another value starts at line 2: a JSON Lines "
        "file (one value a line)?"
    )
    bad.write_bytes(b'{"a":\n "caf\xe9"}')
    with pytest.raises(DataError, match=r"bad\.json:2: not valid UTF-8 \(byte 0xe9 at column 6\)"):
        read_json(bad)
    with pytest.raises(DataError, match=r"none\.json: cannot read the file"):
        read_json(tmp_path / "none.json")


def test_read_json_says_what_the_file_was_to_be(tmp_path: Path) -> None:
    path = tmp_path / "train.json"
    path.write_text('{"a": ', encoding="utf-8")
    with pytest.raises(DataError) as info:
        read_json(path, what="a readable training record")
    assert str(info.value).startswith(f"{path}:1: not a readable training record (malformed JSON")
    assert info.value.line == 1
