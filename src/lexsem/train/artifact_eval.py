"""Artifact detectors judged as BiVLC's reference judges them (BiVLC, §5.4 and Table 5; the
reference: `src/Detectors/Detector_evaluation_BiVLC.py` and `Detector_evaluation_SugarCrepe.py`
of IMirandaM/BiVLC): detection accuracy, and the retrieval scores with the reference's rule.

With c0, c1 the text head's P(generated) of an item's natural and generated caption and i0, i1
the image head's of its natural and generated image (label 0 natural, 1 generated; ``round``
sends an exact 0.5 to 0, as numpy and torch round half to even):

- Ipos2T: round(i0) = 0 and c0 < c1 — the natural image is detected natural and the natural
  caption is rated more natural;
- Ineg2T: round(i1) = 1 and c0 < c1;
- Tpos2I: round(c0) = 0 and i0 < i1;  Tneg2I: round(c1) = 1 and i0 < i1;
- I2T = Ipos2T and Ineg2T, T2I = Tpos2I and Tneg2I, Group = I2T and T2I.

Ties (c0 = c1, i0 = i1) fail, the comparisons being strict. Text (image) detection accuracy is
the share of the 2N captions (images) whose rounded probability is their label. SugarCrepe
(pairs of one natural image, a natural and a generated caption): an item is solved when
c0 < c1, the text head alone.

`lexsem eval -m artifact:DIR` runs the same detectors through the Evaluator as a pair scorer;
its rule counts an item whose query is misdetected and whose candidates are ranked the wrong
way round as solved (`lexsem.models.backends.artifact`); these functions count it as the
reference does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lexsem.errors import LexsemError

__all__ = [
    "detection_accuracy",
    "evaluate_detectors",
    "reference_pair_hits",
    "reference_quad_hits",
]


def _round(p: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(p, dtype=np.float64))  # half to even: 0.5 -> 0


def reference_quad_hits(
    c0: np.ndarray, c1: np.ndarray, i0: np.ndarray, i1: np.ndarray
) -> dict[str, np.ndarray]:
    """Per-item hits (bool arrays) of BiVLC's detector rule (module doc)."""
    c0, c1, i0, i1 = (np.asarray(a, dtype=np.float64) for a in (c0, c1, i0, i1))
    texts_ordered, images_ordered = c0 < c1, i0 < i1
    out = {
        "ipos2t": (_round(i0) == 0) & texts_ordered,
        "ineg2t": (_round(i1) == 1) & texts_ordered,
        "tpos2i": (_round(c0) == 0) & images_ordered,
        "tneg2i": (_round(c1) == 1) & images_ordered,
    }
    out["i2t"] = out["ipos2t"] & out["ineg2t"]
    out["t2i"] = out["tpos2i"] & out["tneg2i"]
    out["group"] = out["i2t"] & out["t2i"]
    return out


def reference_pair_hits(c_pos: np.ndarray, c_neg: np.ndarray) -> np.ndarray:
    """Per-item hits of the reference's SugarCrepe rule: the true caption rated more natural."""
    return np.asarray(c_pos, dtype=np.float64) < np.asarray(c_neg, dtype=np.float64)


def detection_accuracy(natural: np.ndarray, generated: np.ndarray) -> float:
    """The share of items whose rounded P(generated) is their label (natural 0, generated 1)."""
    hits = np.concatenate([_round(natural) == 0, _round(generated) == 1])
    return float(hits.mean())


def _percent(hits: np.ndarray) -> float:
    return round(100.0 * float(np.mean(hits)), 2)


def _image_probs(scorer: Any, refs: Sequence[str], images: Any, batch: int) -> np.ndarray:
    import torch

    from lexsem.images.decode import decode_image

    unique = list(dict.fromkeys(refs))
    probs: dict[str, float] = {}
    for start in range(0, len(unique), batch):
        chunk = unique[start : start + batch]
        pixels = [
            scorer.preprocess(decode_image(images.read(r), max_pixels=images.max_pixels, ref=r))
            for r in chunk
        ]
        probs.update(zip(chunk, scorer.image_probs(torch.stack(pixels)).tolist(), strict=True))
    return np.array([probs[r] for r in refs], dtype=np.float32)


def _text_probs(scorer: Any, texts: Sequence[str], batch: int) -> np.ndarray:
    unique = list(dict.fromkeys(texts))
    probs: dict[str, float] = {}
    for start in range(0, len(unique), batch):
        chunk = unique[start : start + batch]
        probs.update(zip(chunk, scorer.text_probs(chunk).tolist(), strict=True))
    return np.array([probs[t] for t in texts], dtype=np.float32)


def evaluate_detectors(
    folder: Path, benchmark: str, *, batch: int = 256, **config: Any
) -> dict[str, Any]:
    """Table 5's numbers of the detectors in `folder` on `benchmark` (a selector: `bivlc`,
    `sugarcrepe`, `build:DIR`, ...; `config`: more `EvalConfig` fields, e.g. `device`,
    `data_dir`): detection accuracies and the reference's retrieval scores in %, with the
    item count. Quad benchmarks give text and image detection accuracy and I2T / T2I / group
    (and their four parts); pair benchmarks the text detection accuracy and the text score."""
    from lexsem.config import EvalConfig
    from lexsem.evaluator import Evaluator
    from lexsem.models.factory import load_model

    ev = Evaluator(EvalConfig(benchmarks=[benchmark], **config))
    (bench,) = ev.benchmarks()
    items = list(bench.items)
    scorer = load_model(f"artifact:{folder}", device=config.get("device"))
    kind = bench.spec.item_kind
    out: dict[str, Any] = {"benchmark": benchmark, "items": len(items), "rule": "reference"}
    if kind == "quad":
        c0 = _text_probs(scorer, [it.caption0 for it in items], batch)
        c1 = _text_probs(scorer, [it.caption1 for it in items], batch)
        store = ev.image_store()
        i0 = _image_probs(scorer, [it.image0 for it in items], store, batch)
        i1 = _image_probs(scorer, [it.image1 for it in items], store, batch)
        hits = reference_quad_hits(c0, c1, i0, i1)
        out["text_detection_accuracy"] = round(100 * detection_accuracy(c0, c1), 2)
        out["image_detection_accuracy"] = round(100 * detection_accuracy(i0, i1), 2)
        out.update({name: _percent(h) for name, h in hits.items()})
    elif kind == "pair":
        pos = _text_probs(scorer, [it.pos for it in items], batch)
        neg = _text_probs(scorer, [it.neg for it in items], batch)
        out["text_detection_accuracy"] = round(100 * detection_accuracy(pos, neg), 2)
        out["text"] = _percent(reference_pair_hits(pos, neg))
    else:
        raise LexsemError(
            f"{benchmark}: the detectors are judged on quad (BiVLC) and pair (SugarCrepe) "
            f"items, not {kind} items"
        )
    return out
