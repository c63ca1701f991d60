"""Stage `select_best_image` (`lexsem.construct.best_image`): TROHN-Img's one image per negative
caption. Oracles: BiVLC's TROHN_Img_generation.py (one image per caption, saved as
``<index>_<image>_0.jpg``: the image taken is the first), and the highest score re-implemented
here on tiny scores and on a tiny open_clip's similarities computed with open_clip itself."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lexsem.construct.best_image import select_best_image
from lexsem.construct.stage import StageContext
from lexsem.errors import DataError


def _images(out: Path, n_rows: int, k: int) -> list[list[str]]:
    """k generated images per row under out/files/gen, named as BiVLC names them."""
    from PIL import Image

    lists = []
    for r in range(n_rows):
        paths = []
        for j in range(k):
            rel = f"files/gen/{r}_{r:012d}_{j}.png"
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (36, 36), ((60 * r + 90 * j) % 256, 30 * j % 256, 200)).save(out / rel)
            paths.append(rel)
        lists.append(paths)
    return lists


def _rows(lists: list[list[str] | None], rejected: list[str | None] | None = None) -> pa.Table:
    n = len(lists)
    return pa.table(
        {
            "source": ["coco"] * n,
            "source_id": [str(100 + i) for i in range(n)],
            "negative_caption": [f"A red object number {i}." for i in range(n)],
            "images": pa.array(lists, pa.list_(pa.string())),
            "rejected": pa.array(rejected or [None] * n, pa.string()),
        }
    )


def _reference_best(scores: Sequence[float]) -> int:
    """The highest score, the first of equal ones, by a plain loop."""
    best = 0
    for j, s in enumerate(scores):
        if s > scores[best]:
            best = j
    return best


def test_first_is_the_one_image_bivlc_generated(tmp_path: Path) -> None:
    lists = _images(tmp_path, 3, 1)
    ctx = StageContext(tmp_path)
    out = select_best_image(_rows(lists), ctx).to_pylist()
    # TROHN_Img_generation.py: n_images = 1, saved as f"{index}_{image_id[:-4]}_0.jpg"
    assert [r["negative_image"] for r in out] == [f"files/gen/{i}_{i:012d}_0.png" for i in range(3)]
    assert [r["image_choice"] for r in out] == [0, 0, 0] and ctx.counts["images chosen"] == 3
    many = select_best_image(_rows(_images(tmp_path, 2, 4)), ctx).to_pylist()
    assert [r["negative_image"].endswith("_0.png") for r in many] == [True, True]


def test_score_takes_the_reference_argmax_on_tiny_scores(tmp_path: Path) -> None:
    lists = _images(tmp_path, 5, 3)
    table = {  # row -> scores of its 3 images
        "100": [0.1, 0.7, 0.3],
        "101": [0.5, 0.5, 0.2],
        "102": [-1.0, -2.0, -0.5],
        "103": [0.2, 0.2, 0.2],
        "104": [0.0, 0.4, 0.9],
    }
    by_caption = {f"A red object number {i}.": table[str(100 + i)] for i in range(5)}

    def scorer(paths: Sequence[Path], caption: str) -> list[float]:
        assert all(p.is_file() for p in paths) and len(paths) == 3
        return by_caption[caption]

    rows = _rows(lists, [None, None, None, "duplicate", None])
    out = select_best_image(
        rows, StageContext(tmp_path), rule="score", scorer=scorer, min_score=0.25
    ).to_pylist()
    for i, r in enumerate(out):
        if i == 3:  # rejected earlier: untouched
            assert r["negative_image"] is None and r["rejected"] == "duplicate"
            continue
        best = _reference_best(table[r["source_id"]])
        assert r["image_choice"] == best and r["negative_image"] == lists[i][best]
        assert r["image_scores"] == table[r["source_id"]]
    assert [r["rejected"] for r in out] == [
        None,
        None,
        "image score below min_score",
        "duplicate",
        None,
    ]


@pytest.mark.torch
def test_score_with_a_tiny_openclip_is_open_clips_cosine(tmp_path: Path) -> None:
    from builders.backends import require_module
    from builders.tiny_dual_models import write_tiny_openclip

    require_module("open_clip")
    import open_clip
    import torch
    from PIL import Image

    spec = write_tiny_openclip(tmp_path / "clip", "tiny-best-image")
    lists = _images(tmp_path, 2, 3)
    out = select_best_image(
        _rows(lists), StageContext(tmp_path), rule="score", model=spec, device="cpu"
    ).to_pylist()
    model = open_clip.create_model("tiny-best-image")
    model.load_state_dict(torch.load(tmp_path / "clip" / "init.pt"))
    model.eval()
    _, _, preprocess = open_clip.create_model_and_transforms("tiny-best-image")
    tok = open_clip.get_tokenizer("tiny-best-image")
    for i, r in enumerate(out):
        with torch.no_grad():
            pix = torch.stack(
                [preprocess(Image.open(tmp_path / p).convert("RGB")) for p in lists[i]]
            )
            img = model.encode_image(pix, normalize=True)
            txt = model.encode_text(tok([f"A red object number {i}."]), normalize=True)
        want = (img @ txt.T)[:, 0].numpy()
        np.testing.assert_allclose(r["image_scores"], want, rtol=1e-4, atol=1e-5)
        assert r["image_choice"] == _reference_best(list(want))


def test_rows_without_images_are_rejected_and_bad_paths_named(tmp_path: Path) -> None:
    lists = _images(tmp_path, 2, 1)
    ctx = StageContext(tmp_path)
    out = select_best_image(_rows([lists[0], [], None]), ctx).to_pylist()
    assert [r["rejected"] for r in out] == [None, "no image", "no image"]
    with pytest.raises(DataError, match=r"item 101: image 'files/gen/gone.png' is not"):
        select_best_image(_rows([lists[0], ["files/gen/gone.png"]]), ctx)
    with pytest.raises(DataError, match=r"item 100: image '\.\./x.png'"):
        select_best_image(_rows([["../x.png"]]), ctx)
    with pytest.raises(DataError, match="no column 'pictures'"):
        select_best_image(_rows(lists), ctx, images_column="pictures")
    with pytest.raises(DataError, match="needs `model`"):
        select_best_image(_rows(lists), ctx, rule="score")
    with pytest.raises(DataError, match="rule must be one of"):
        select_best_image(_rows(lists), ctx, rule="best")
