"""Stage `select_best_image`: one negative image per negative caption, chosen among the images
generated for it (TROHN-Img, BiVLC §5.2, step 4).

BiVLC generates exactly one image per caption for TROHN-Img ("we generate one image per
caption with the SDXL-DPO model"; its ``src/Training_data/TROHN_Img/TROHN_Img_generation.py``
runs SDXL-DPO with ``num_images_per_prompt = 1`` and saves it as ``<index>_<image>_0.jpg``):
no image is chosen there, the one image is taken. Its ``TROHN_Img_scoring.py`` and
``TROHN_Img_best_selection.py`` score and select *captions* (Vera, CoLA, a CLIP text
similarity; the `blind_scores`, `score_percentile`, `clean_captions` and
`adversarial_refine` stages), not images. For BiVLC's test set people chose among four
images (§3, step 3: `export_human_task`).

Rules (`rule`):

- ``first`` (default): the first image of the row's list, what TROHN-Img trains on when the
  images were generated one per caption (K = 1), and its ``_0`` image for any K;
- ``score``: each image scored with the negative caption by a model of lexsem's model layer
  (`model`, e.g. ``openclip:ViT-B-32-quickgelu/openai``; a pair scorer's ``score`` — VQAScore, ITM,
  BLIP-2 — or else the cosine of a dual encoder's image and text embeddings); the
  highest-scoring image is taken (the first of equal ones), and with `min_score` a row whose
  best score is below it is rejected (``image score below min_score``). This rule is
  lexsem's, not BiVLC's (docs/fidelity.md, "TROHN-Img: one image per caption").

Input: a list column of image paths relative to the build folder (`images_column`: what
`generate_images` adds). Output columns: `out_column` (the chosen path), ``image_choice``
(its position in the list) and, for ``score``, ``image_scores`` (every image's score). A row
with no image (a null or empty list) is rejected (``no image``). A path outside the build
folder or a missing file is a `DataError` naming the row's ``source_id``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from lexsem.construct.images import build_image
from lexsem.construct.stage import Stage, StageContext, accepted, reject
from lexsem.errors import DataError

__all__ = ["RULES", "best_position", "select_best_image"]

RULES = ("first", "score")

Scorer = Callable[[Sequence[Path], str], list[float]]


def best_position(scores: Sequence[float]) -> int:
    """The position of the highest score, the first of equal ones."""
    return int(np.argmax(np.asarray(scores, dtype=np.float64)))


def _open_rgb(path: Path, item: str) -> Any:
    from PIL import Image

    try:
        with Image.open(path) as im:
            return im.convert("RGB")
    except Exception as exc:  # PIL raises many kinds for undecodable files
        raise DataError(
            f"not a readable image ({type(exc).__name__}: {exc})", file=path, item=item
        ) from None


def _stack(inputs: list[Any]) -> Any:
    import torch

    from lexsem.models.protocols import ImageRows

    if all(isinstance(x, torch.Tensor) for x in inputs):
        return torch.stack(inputs)
    return ImageRows(inputs)


def model_scorer(spec: str, device: str | None = None) -> Scorer:
    """Scores of images with one text by the model `spec` (see the module doc)."""
    from lexsem.models.factory import load_model

    model = load_model(spec, device=device)
    pairwise = callable(getattr(model, "score", None))
    if not pairwise and not (hasattr(model, "encode_images") and hasattr(model, "encode")):
        raise DataError(
            f"select_best_image: the model {spec!r} neither scores image-text pairs nor "
            "embeds images and texts"
        )

    def score(paths: Sequence[Path], text: str) -> list[float]:
        batch = _stack([model.preprocess(_open_rgb(p, text)) for p in paths])
        if pairwise:
            return [float(s) for s in model.score(batch, [text] * len(paths))]
        images = np.asarray(model.encode_images(batch), dtype=np.float64)
        texts = np.asarray(model.encode([text]), dtype=np.float64)
        images /= np.linalg.norm(images, axis=1, keepdims=True)
        texts /= np.linalg.norm(texts, axis=1, keepdims=True)
        return (images @ texts[0]).tolist()

    return score


def select_best_image(
    rows: pa.Table,
    ctx: StageContext | None,
    *,
    images_column: str = "images",
    caption_column: str = "negative_caption",
    out_column: str = "negative_image",
    rule: str = "first",
    model: str | None = None,
    device: str | None = None,
    min_score: float | None = None,
    scorer: Scorer | None = None,
) -> pa.Table:
    """Choose one image per accepted row (see the module doc). `scorer` replaces the model
    (``rule = "score"`` from Python: `fn(paths, caption) -> scores`)."""
    if rule not in RULES:
        raise DataError(f"select_best_image: rule must be one of {', '.join(RULES)}, not {rule!r}")
    for column in (images_column, *([caption_column] if rule == "score" else [])):
        if column not in rows.column_names:
            raise DataError(
                f"select_best_image: the rows have no column {column!r}; they have "
                f"{', '.join(rows.column_names)}"
            )
    if scorer is not None and not callable(scorer):
        raise DataError("select_best_image: `scorer` is a function (from Python), not a setting")
    if rule == "score" and scorer is None:
        if not model:
            raise DataError('select_best_image: rule "score" needs `model` (a model spec)')
        scorer = model_scorer(model, device)
    if rule == "first" and (model is not None or min_score is not None):
        raise DataError('select_best_image: `model` and `min_score` go with rule "score"')
    base = ctx.out if ctx is not None else Path.cwd()
    ids = rows["source_id"].to_pylist()
    lists = rows[images_column].to_pylist()
    captions = rows[caption_column].to_pylist() if rule == "score" else [None] * rows.num_rows
    chosen: list[str | None] = []
    positions: list[int | None] = []
    all_scores: list[list[float] | None] = []
    reasons: list[str | None] = []
    for ok, item, paths, caption in zip(
        accepted(rows).to_pylist(), ids, lists, captions, strict=True
    ):
        pick: int | None = None
        scores: list[float] | None = None
        reason: str | None = None
        if ok and not paths:
            reason = "no image"
        elif ok:
            files = [build_image(base, p, str(item)) for p in paths]
            if rule == "first":
                pick = 0
            else:
                assert scorer is not None
                if not isinstance(caption, str) or not caption.strip():
                    raise DataError(f"no caption in {caption_column!r}", item=str(item))
                scores = [float(s) for s in scorer(files, caption)]
                pick = best_position(scores)
                if min_score is not None and scores[pick] < min_score:
                    reason = "image score below min_score"
        chosen.append(paths[pick] if pick is not None else None)
        positions.append(pick)
        all_scores.append(scores)
        reasons.append(reason)
    rows = _put(rows, out_column, pa.array(chosen, pa.string()))
    rows = _put(rows, "image_choice", pa.array(positions, pa.int64()))
    if rule == "score":
        rows = _put(rows, "image_scores", pa.array(all_scores, pa.list_(pa.float64())))
    if ctx is not None:
        ctx.count("images chosen", sum(p is not None for p in positions))
    return reject(rows, reasons)


def _put(rows: pa.Table, name: str, values: pa.Array) -> pa.Table:
    if name in rows.column_names:
        return rows.set_column(rows.column_names.index(name), name, values)
    return rows.append_column(name, values)


STAGE = Stage("select_best_image", select_best_image)
