"""Run a plan with a model: one cache-aware path per kind of request.

What a model can do follows from the protocols it implements (`capabilities`): a text encoder
embeds texts, a dual encoder also embeds images, a pair scorer scores (image, text) pairs, a
blind text scorer scores texts. Every request goes through the model's request store, so a
rerun asks the model nothing it has already answered.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lexsem.engine.cosine import l2_normalize
from lexsem.engine.embed import embed_texts
from lexsem.engine.plan import Plan
from lexsem.engine.request_store import RequestStore
from lexsem.engine.scores import Scores
from lexsem.engine.text_scores import score_texts
from lexsem.models.protocols import Answerer, ImageEncoder, PairScorer, TextEncoder, TextScorer

TEXT, IMAGE, PAIR, SCORER, ANSWER = "text", "image", "pair", "scorer", "answer"


def capabilities(model: object) -> set[str]:
    caps = set()
    if isinstance(model, TextEncoder):
        caps.add(TEXT)
        if isinstance(model, ImageEncoder):
            caps.add(IMAGE)
    if isinstance(model, PairScorer):
        caps.add(PAIR)
    if isinstance(model, TextScorer):
        caps.add(SCORER)
    if isinstance(model, Answerer) and callable(getattr(model, "answer", None)):
        caps.add(ANSWER)
    return caps


@dataclass
class RunOptions:
    batch_size: int = 64
    num_workers: int | None = None
    skip_bad_images: bool = False
    exif_transpose: bool | None = None
    progress: bool = False
    decoded: Any = None  # a DecodedImages kept across runs (lexsem.images.memory), or None


@dataclass
class Outcome:
    scores: Scores
    timing: dict[str, Any] = field(default_factory=dict)


def execute(
    model: Any, plan: Plan, store: RequestStore | None, images: Any, opts: RunOptions
) -> Outcome:
    """Make every request of `plan` with `model` (through `store`)."""
    caps = capabilities(model)
    out = Outcome(Scores(), {"encode_s": 0.0, "cache_s": 0.0, "image_s": 0.0})
    if plan.texts:
        _texts(model, caps, plan, store, opts, out)
    if plan.pairs:
        t0 = time.perf_counter()
        if PAIR in caps:
            _pairs(model, plan, store, images, opts, out)
        else:
            _images(model, plan, store, images, opts, out)
        out.timing["image_s"] = time.perf_counter() - t0
    if plan.asks:
        t0 = time.perf_counter()
        _asks(model, plan, store, images, opts, out)
        out.timing["image_s"] = out.timing.get("image_s", 0.0) + time.perf_counter() - t0
    return out


def _texts(
    model: Any,
    caps: set[str],
    plan: Plan,
    store: RequestStore | None,
    opts: RunOptions,
    out: Outcome,
) -> None:
    if SCORER in caps:
        vals, st = score_texts(
            model, plan.texts, store, batch_size=opts.batch_size, progress=opts.progress
        )
        sign = -1.0 if getattr(model, "lower_is_better", False) else 1.0
        # compared at float32 precision, as the scores were stored before the request store
        vals32 = vals.astype(np.float32).astype(np.float64)
        out.scores.text_score = {
            t: sign * v for t, v in zip(plan.texts, vals32.tolist(), strict=True)
        }
    else:
        emb, st = embed_texts(
            model, plan.texts, store, batch_size=opts.batch_size, progress=opts.progress
        )
        out.scores.text_unit = l2_normalize(emb)
        out.scores.text_index = {t: i for i, t in enumerate(plan.texts)}
    out.timing.update(
        encode_s=st.encode_s,
        cache_s=st.cache_s,
        n_texts_unique=st.n_unique,
        n_texts_cached=st.n_cached,
        n_texts_encoded=st.n_encoded,
    )


def _decode_args(profile: str, opts: RunOptions) -> dict[str, Any]:
    """The benchmark's decode profile; an explicit EXIF choice overrides it for all."""
    return {"profiles": profile, "exif_transpose": opts.exif_transpose}


def _image_args(plan: Plan, opts: RunOptions, profile: str) -> dict[str, Any]:
    return {
        "batch_size": opts.batch_size,
        "num_workers": opts.num_workers,
        "on_error": "skip" if opts.skip_bad_images else "raise",
        "labels": plan.labels,
        "progress": opts.progress,
        "decoded": opts.decoded,
        **_decode_args(profile, opts),
    }


def _add(timing: dict[str, Any], **counts: int) -> None:
    for k, v in counts.items():
        timing[k] = timing.get(k, 0) + v


def _add_reasons(timing: dict[str, Any], reasons: dict[str, int]) -> None:
    into = timing.setdefault("image_skip_reasons", {})
    for k, v in reasons.items():
        into[k] = into.get(k, 0) + v


def _pairs(
    model: Any,
    plan: Plan,
    store: RequestStore | None,
    images: Any,
    opts: RunOptions,
    out: Outcome,
) -> None:
    from lexsem.engine.pair_scores import pair_scores

    values: list[np.ndarray] = []
    for profile, pairs in plan.pairs.items():
        vals, pst, _ = pair_scores(model, pairs, images, store, **_image_args(plan, opts, profile))
        base = sum(len(v) for v in values)
        out.scores.pair_index.update({(profile, r, t): base + i for i, (r, t) in enumerate(pairs)})
        values.append(np.asarray(vals))
        _add_pair_stats(out.timing, pst)
    out.scores.pair_values = np.concatenate(values)


def _add_pair_stats(timing: dict[str, Any], st: Any) -> None:
    """Count what one `pair_scores` / `pair_answers` call did into the run's timings."""
    _add(
        timing,
        n_pairs_unique=st.n_unique,
        n_pairs_cached=st.n_cached,
        n_pairs_scored=st.n_scored,
        n_images_unique=st.n_images,
        n_images_from_memory=st.n_from_memory,
        n_images_skipped=st.n_skipped,
    )
    _add_reasons(timing, st.skip_reasons)


def _asks(
    model: Any,
    plan: Plan,
    store: RequestStore | None,
    images: Any,
    opts: RunOptions,
    out: Outcome,
) -> None:
    from lexsem.engine.pair_scores import pair_answers

    for profile, pairs in plan.asks.items():
        texts, ast, _ = pair_answers(
            model, pairs, images, store, **_image_args(plan, opts, profile)
        )
        out.scores.answers.update(
            {(profile, r, p): t for (r, p), t in zip(pairs, texts.tolist(), strict=True)}
        )
        _add_pair_stats(out.timing, ast)


def _images(
    model: Any,
    plan: Plan,
    store: RequestStore | None,
    images: Any,
    opts: RunOptions,
    out: Outcome,
) -> None:
    from lexsem.engine.image_embed import embed_images

    units: list[np.ndarray] = []
    for profile, pairs in plan.pairs.items():
        refs = list(dict.fromkeys(r for r, _ in pairs))
        img, ist, _ = embed_images(model, refs, images, store, **_image_args(plan, opts, profile))
        base = sum(len(u) for u in units)
        out.scores.image_index.update({(profile, r): base + i for i, r in enumerate(refs)})
        units.append(l2_normalize(img))
        _add(
            out.timing,
            n_images_unique=ist.n_unique,
            n_images_cached=ist.n_cached,
            n_images_encoded=ist.n_encoded,
            n_images_from_memory=ist.n_from_memory,
            n_images_skipped=ist.n_skipped,
        )
        _add_reasons(out.timing, ist.skip_reasons)
    out.scores.image_unit = np.concatenate(units)
