"""A SugarCrepe-format pair benchmark of four items (a user file, `sugarcrepe:DIR`, subset
swap_obj) and recorded answers to `sc_gpt4v` about it of the kinds GPT-4V gave, with the hits
each answer rule gives them counted by hand (tests of `lexsem.tasks.answer_rules` and of
`lexsem score-answers`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

PAIRS = [(f"A cat number {i} on a mat.", f"A mat number {i} on a cat.") for i in range(4)]
# right: (1) when the positive is first, (2) when it is second
ANSWERS = {
    (0, "pos_first"): "(1)",  # authors hit, strict hit
    (0, "neg_first"): "(2)",  # hit, hit
    (1, "pos_first"): "1",  # authors miss (no marker), strict hit
    (1, "neg_first"): "Neither caption accurately describes the image. If I must choose, (2).",
    # ^ authors hit, strict miss (none)
    (2, "pos_first"): "Neither (1) nor (2).",  # miss, miss
    (2, "neg_first"): "2",  # authors miss, strict hit
    (3, "pos_first"): "(2)",  # miss, miss
    (3, "neg_first"): "**(2)**",  # hit, hit
}
# by hand from the comments: hits per metric, and the answers whose hit the rules disagree on
AUTHORS = {"pos_first": 1, "neg_first": 3, "circular": 1}
STRICT_HITS = {"pos_first": 2, "neg_first": 3, "circular": 1}
DISAGREE = {"pos_first": 1, "neg_first": 2, "circular": 0}


def pair_files(tmp_path: Path, *, images: bool = False) -> tuple[str, Path]:
    """`PAIRS` as a SugarCrepe user file (subset swap_obj), with images when asked."""
    folder = tmp_path / "pairs"
    folder.mkdir()
    recs = {str(i): {"filename": f"{i}.jpg", "caption": p, "negative_caption": n}
            for i, (p, n) in enumerate(PAIRS)}  # fmt: skip
    (folder / "swap_obj.json").write_text(json.dumps(recs), encoding="utf-8")
    pics = tmp_path / "val2017"
    if images:
        from PIL import Image

        pics.mkdir()
        rng = np.random.default_rng(5)
        for i in range(len(PAIRS)):
            pixels = rng.integers(0, 255, (16, 20, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(pics / f"{i}.jpg")
    return f"sugarcrepe:{folder}", pics


def write_pair_answers(path: Path, extra: Sequence[dict[str, Any]] = ()) -> Path:
    rows = [{"id": str(i), "subset": "swap_obj", "prompt": "sc_gpt4v", "ordering": o, "answer": a}
            for (i, o), a in ANSWERS.items()]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in [*rows, *extra]) + "\n", encoding="utf-8")
    return path
