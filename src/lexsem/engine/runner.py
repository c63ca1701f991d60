"""Run a plan with a model: one cache-aware path per kind of request.

What a model can do follows from the protocols it implements (`capabilities`): a text encoder
embeds texts, a dual encoder also embeds images, a pair scorer scores (image, text) pairs, a
blind text scorer scores texts, a chat model answers the `answer` columns (conversations,
`lexsem.engine.conversations`, through `lexsem.engine.chat`) and, with log-probabilities, scores
(image, text) pairs by VQAScore (`lexsem.models.vqascore`); a model of people's votes gives
them by item (`votes`). Every request goes through the
model's request store, so a rerun asks the model nothing it has already answered.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lexsem.engine.chat import answer_probabilities, asked_answers, chat_records
from lexsem.engine.conversations import answer_requests, image_reader, no_images
from lexsem.engine.cosine import l2_normalize
from lexsem.engine.embed import embed_texts
from lexsem.engine.image_scan import count_reasons
from lexsem.engine.plan import Plan, Work
from lexsem.engine.request_store import RequestStore
from lexsem.engine.scores import Scores
from lexsem.engine.text_scores import score_texts
from lexsem.images.refs import ImageError
from lexsem.models.protocols import (
    ChatModel,
    ImageEncoder,
    LogprobChatModel,
    PairScorer,
    TextEncoder,
    TextScorer,
    VotesModel,
)
from lexsem.models.vqascore import vqa_score

TEXT, IMAGE, PAIR, SCORER = "text", "image", "pair", "scorer"
CHAT, CHAT_SCORES = "chat", "chat_scores"  # answers; VQAScores from log-probabilities
VOTES = "votes"  # people's votes by item (`lexsem.models.item_votes`)


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
    if isinstance(model, VotesModel):
        caps.add(VOTES)
    if isinstance(model, ChatModel) and callable(getattr(model, "send", None)):
        caps.add(CHAT)
        if isinstance(model, LogprobChatModel):
            caps.add(CHAT_SCORES)
    return caps


@dataclass
class RunOptions:
    batch_size: int = 64
    num_workers: int | None = None
    skip_bad_images: bool = False
    exif_transpose: bool | None = None
    progress: bool = False
    decoded: Any = None  # a DecodedImages kept across runs (lexsem.images.memory), or None
    # chat models (`lexsem.engine.chat`)
    shots: int = 0
    shot_seed: int = 0
    replay_only: bool = False
    max_requests: int | None = None
    concurrency: int = 4
    retries: int = 5
    backoff: float = 1.0


@dataclass
class Outcome:
    scores: Scores
    timing: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Run:
    """What each step of `execute` reads (the model, the plan and its works, the store, the
    images, the options) and the outcome it fills."""

    model: Any
    plan: Plan
    works: Sequence[Work]
    store: RequestStore | None
    images: Any
    opts: RunOptions
    out: Outcome


def execute(
    model: Any,
    plan: Plan,
    store: RequestStore | None,
    images: Any,
    opts: RunOptions,
    works: Sequence[Work] = (),
) -> Outcome:
    """Make every request of `plan` (of `works`) with `model` (through `store`)."""
    caps = capabilities(model)
    out = Outcome(Scores(), {"encode_s": 0.0, "cache_s": 0.0, "image_s": 0.0})
    run = _Run(model, plan, works, store, images, opts, out)
    if VOTES in caps:
        out.scores.votes = model.votes_for(works)
    if plan.texts:
        _texts(run, SCORER in caps)
    if plan.pairs:
        t0 = time.perf_counter()
        if PAIR in caps:
            _pairs(run)
        elif CHAT_SCORES in caps:
            _chat_scores(run)
        else:
            _images(run)
        out.timing["image_s"] = time.perf_counter() - t0
    if plan.asks:
        t0 = time.perf_counter()
        _chats(run)
        out.timing["image_s"] = out.timing.get("image_s", 0.0) + time.perf_counter() - t0
    return out


def _texts(run: _Run, scorer: bool) -> None:
    model, plan, store, opts, out = run.model, run.plan, run.store, run.opts, run.out
    if scorer:
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


def _note_workers(timing: dict[str, Any], workers: int) -> None:
    """The most DataLoader workers a step decoded with (the run's `decode_workers`)."""
    timing["decode_workers"] = max(int(timing.get("decode_workers", 0)), int(workers))


def _add_reasons(timing: dict[str, Any], reasons: dict[str, int]) -> None:
    into = timing.setdefault("image_skip_reasons", {})
    for k, v in reasons.items():
        into[k] = into.get(k, 0) + v


def _add_skipped(timing: dict[str, Any], skipped: Mapping[str, str]) -> None:
    """Count the images a chat step skipped (ref -> reason) into the run's timings."""
    if skipped:
        _add(timing, n_images_skipped=len(skipped))
        _add_reasons(timing, count_reasons(skipped))


def _pairs(run: _Run) -> None:
    from lexsem.engine.pair_scores import pair_scores

    plan, opts, out = run.plan, run.opts, run.out
    values: list[np.ndarray] = []
    for profile, pairs in plan.pairs.items():
        vals, pst, _ = pair_scores(
            run.model, pairs, run.images, run.store, **_image_args(plan, opts, profile)
        )
        base = sum(len(v) for v in values)
        out.scores.pair_index.update({(profile, r, t): base + i for i, (r, t) in enumerate(pairs)})
        values.append(np.asarray(vals))
        _add_stats(out.timing, pst, _PAIR_STATS)
        _note_workers(out.timing, pst.num_workers)
    out.scores.pair_values = np.concatenate(values)


# the run's timings (key) that a step's stats (attribute) add to
_PAIR_STATS = {
    "n_pairs_unique": "n_unique",
    "n_pairs_cached": "n_cached",
    "n_pairs_scored": "n_scored",
    "n_images_unique": "n_images",
    "n_images_from_memory": "n_from_memory",
    "n_images_skipped": "n_skipped",
}
_IMAGE_STATS = {
    "n_images_unique": "n_unique",
    "n_images_cached": "n_cached",
    "n_images_encoded": "n_encoded",
    "n_images_from_memory": "n_from_memory",
    "n_images_skipped": "n_skipped",
}
_CHAT_STATS = {
    "n_requests": "n_requests",
    "n_requests_stored": "n_stored",
    "n_requests_imported": "n_imported",
    "n_requests_sent": "n_sent",
    "n_request_attempts": "n_attempts",
}


def _add_stats(timing: dict[str, Any], st: Any, names: Mapping[str, str]) -> None:
    """Count what one call did (its stats `st`) into the run's timings, as `names` says; and
    the reasons of the images it skipped, where it skips images."""
    _add(timing, **{key: getattr(st, attr) for key, attr in names.items()})
    if hasattr(st, "skip_reasons"):
        _add_reasons(timing, st.skip_reasons)


def chat_options(model: Any, opts: RunOptions) -> dict[str, Any]:
    """How `chat_records` sends `model`'s requests: at most the model's `concurrency` at a
    time (1 when it says nothing)."""
    return {
        "replay_only": opts.replay_only,
        "max_requests": opts.max_requests,
        "concurrency": max(1, min(opts.concurrency, int(getattr(model, "concurrency", 1)))),
        "retries": opts.retries,
        "backoff": opts.backoff,
        "progress": opts.progress,
    }


def _chats(run: _Run) -> None:
    """The answers of every `answer` column: one conversation per item and column. A model
    that answers by item (`by_item`: recorded answers) is shown no image."""
    model, store, opts, out = run.model, run.store, run.opts, run.out
    by_item = bool(getattr(model, "by_item", False))
    read = no_images if by_item else image_reader(run.images)
    asked = answer_requests(run.works, read, shots=0 if by_item else opts.shots,
                            shot_seed=opts.shot_seed,
                            skip_bad_images=opts.skip_bad_images,
                            exif_transpose=opts.exif_transpose)  # fmt: skip
    expect = getattr(model, "expect", None)
    if callable(expect):
        expect(asked.requests)
    records, st = chat_records(model, asked.requests, store, **chat_options(model, opts))
    out.scores.answers.update({k: r["text"] for k, r in zip(asked.keys, records, strict=True)})
    out.scores.answers.update(dict.fromkeys(asked.skipped))
    _add_stats(out.timing, st, _CHAT_STATS)
    _add_skipped(out.timing, asked.skipped)


def _chat_scores(run: _Run) -> None:
    """VQAScore of every (image, text) pair from `model`'s log-probabilities
    (`lexsem.models.vqascore`: the `vqa:` backend's definition); a pair whose image is skipped
    scores NaN."""
    model, plan, store, opts, out = run.model, run.plan, run.store, run.opts, run.out
    settings = model.vqascore
    answers = asked_answers(model, settings.answer, settings.negative, settings.score)
    read = image_reader(run.images)
    values: list[float] = []
    for profile, pairs in plan.pairs.items():
        asked: list[tuple[int, bytes | None, str]] = []
        skipped: dict[str, str] = {}
        for i, (ref, text) in enumerate(pairs):
            try:
                asked.append((i, read(ref), text))
            except ImageError as exc:
                if not (opts.skip_bad_images and exc.skippable):
                    raise exc.for_item(plan.labels.get(ref)) from None
                skipped[ref] = exc.reason
        probs, st = answer_probabilities(
            model, [(img, text) for _, img, text in asked], store,
            question=settings.question, answers=answers, **chat_options(model, opts),
        )  # fmt: skip
        base = len(values)
        row = [np.nan] * len(pairs)
        for (i, _, _), p in zip(asked, probs, strict=True):
            yes = p[settings.answer].prob
            no = p[settings.negative].prob if settings.negative in p else None
            row[i] = vqa_score(settings.score, yes, no)
            ref, text = pairs[i]
            out.scores.pair_details[(profile, ref, text)] = {
                "score": row[i],
                "probs": {a: {"p": q.prob, "tokens": list(q.tokens),
                              "below_top_k": q.below_top_k, "logprobs": list(q.logprobs)}
                     for a, q in p.items()},
            }  # fmt: skip
        values += row
        out.scores.pair_index.update({(profile, r, t): base + i for i, (r, t) in enumerate(pairs)})
        _add_stats(out.timing, st, _CHAT_STATS)
        _add_skipped(out.timing, skipped)
    out.scores.pair_values = np.asarray(values, dtype=np.float64)


def _images(run: _Run) -> None:
    from lexsem.engine.image_embed import embed_images

    plan, opts, out = run.plan, run.opts, run.out
    units: list[np.ndarray] = []
    for profile, pairs in plan.pairs.items():
        refs = list(dict.fromkeys(r for r, _ in pairs))
        img, ist, _ = embed_images(
            run.model, refs, run.images, run.store, **_image_args(plan, opts, profile)
        )
        base = sum(len(u) for u in units)
        out.scores.image_index.update({(profile, r): base + i for i, r in enumerate(refs)})
        units.append(l2_normalize(img))
        _add_stats(out.timing, ist, _IMAGE_STATS)
        _note_workers(out.timing, ist.num_workers)
    out.scores.image_unit = np.concatenate(units)
