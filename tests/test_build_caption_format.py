"""BiVLC's step-1 caption formatting (`lexsem.construct.caption_format`; BiVLC, §3, step 1)
against BiVLC_img_generation.py's rule, re-done here from its source: a caption all in upper
case is `str.capitalize`d, any other gets its first character upper case, and every caption not
ending with "." gets one."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lexsem.construct.caption_format import caption_format, format_caption
from lexsem.errors import LexsemError


def _script(x: str) -> str:
    """The script's rule without its letter-gluing (`x[1:].strip()` drops the space after a
    one-letter first word: "A dog" -> "Adog"): the inputs below have no such word."""
    head = x.capitalize() if x.isupper() else x[:1].upper() + x[1:]
    return head + "." if x[-1] != "." else head


CAPTIONS = [
    "two dogs play in a park",
    "THE CAT ON THE MAT",  # all upper case: lowered
    "Is this a frisbee?",  # "." after "?"
    "What a goal!",  # "." after "!"
    "the dog sleeps.",
    "STOP SIGN ON A CORNER.",
    "an Apple store in New York",  # not all upper case: kept
    "PLAYING FRISBEE?",
    "BMX rider on a ramp",  # one upper-case word: kept
]


@pytest.mark.parametrize("caption", CAPTIONS)
def test_the_scripts_rule(caption: str) -> None:
    assert format_caption(caption) == _script(caption)


def test_the_options_and_what_is_not_copied() -> None:
    assert format_caption("Is this a frisbee?", keep_marks=".!?") == "Is this a frisbee?"
    assert format_caption("THE CAT ON THE MAT", lower_all_caps=False) == "THE CAT ON THE MAT."
    assert format_caption("A dog runs") == "A dog runs."  # the script writes "Adog runs."
    assert format_caption("  a dog runs.  ") == "A dog runs."
    rows = pa.table({"source": ["t", "t"], "source_id": ["1", "2"],
                     "caption": ["WHAT A GOAL!", "a cat"]})  # fmt: skip
    out = caption_format(rows, None)
    assert out["caption"].to_pylist() == ["What a goal!.", "A cat."]
    old = caption_format(rows, None, lower_all_caps=False, keep_marks=".!?")
    assert old["caption"].to_pylist() == ["WHAT A GOAL!", "A cat."]
    with pytest.raises(LexsemError, match="keep_marks is one or more of"):
        caption_format(rows, None, keep_marks=";")
    with pytest.raises(LexsemError, match="lower_all_caps is true or false"):
        caption_format(rows, None, lower_all_caps="yes")
