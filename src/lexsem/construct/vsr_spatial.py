"""VISLA spatial candidates mined from Visual Spatial Reasoning (VSR) captions.

Dumpala et al., "VISLA Benchmark: Evaluating Embedding Sensitivity to Semantic and Lexical
Alterations", §3.3 (Spatial VISLA Benchmark): a positive pair (P1, P2) is a caption of an image
and a caption with its subject and object switched ("Positive Caption Mining"); the negative
candidates (N) are "the top three negative candidates for each data point by ranking all unique
captions in the VSR dataset using Jaccard similarity" ("Negative Caption"); people then select
or edit the triplets (the last step is not automatic). The paper names no label filter and no
narrower pool or image rule: by default every parsed caption of an image is paired with every
VSR caption whose subject and object are switched, whatever their True/False labels and wherever
the second occurs, and every unique caption text of VSR but P1 and P2 is ranked. The narrower
choices are options: `require_true` (both captions labelled True for the pair's image),
`same_image` (P2 a caption of the same image), `pool="same_objects"` (only captions naming the
pair's two objects) and `other_image` (only captions occurring on another image). Three stages,
each a pure function `fn(rows, ctx, **settings) -> pyarrow.Table` (docs/building.md, "VISLA
spatial from VSR"):

- `vsr_read`: VSR's JSONL (`all_vsr_validated_data.jsonl`) -> one row per caption, with the
  subject and object parsed from the caption ("The <subj> [is|are] <relation> the <obj>.").
- `vsr_positive_pairs`: captions -> one row per (image, swapped pair).
- `vsr_negative_candidates`: pairs -> one row per (pair, negative candidate), top `top_k`.

Jaccard similarity is over word sets: a caption's words are the maximal runs of `[a-z0-9]`
after lower-casing (`caption_words`); J(A, B) = |A ∩ B| / |A ∪ B| (0 when both are empty).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from lexsem.construct.inputs import InputTable
from lexsem.construct.stage import Stage, StageContext
from lexsem.digests import file_sha256
from lexsem.errors import DataError
from lexsem.jsonl import read_jsonl

SOURCE = "vsr"
REQUIRED_FIELDS = ("image", "caption", "label", "relation")
_WORD = re.compile(r"[a-z0-9]+")

CAPTION_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("source_id", pa.string()),
        ("image", pa.string()),
        ("caption", pa.string()),
        ("label", pa.bool_()),
        ("relation", pa.string()),
        ("subj", pa.string()),
        ("obj", pa.string()),
        ("rejected", pa.string()),
    ]
)

PAIR_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("source_id", pa.string()),
        ("image", pa.string()),
        ("p1", pa.string()),
        ("p2", pa.string()),
        ("p1_source_id", pa.string()),
        ("p2_source_id", pa.string()),
        ("p1_relation", pa.string()),
        ("p2_relation", pa.string()),
        ("p1_label", pa.bool_()),
        ("p2_label", pa.bool_()),
        ("subj", pa.string()),
        ("obj", pa.string()),
        ("rejected", pa.string()),
    ]
)

CANDIDATE_SCHEMA = pa.schema(
    [
        *PAIR_SCHEMA,
        ("n", pa.string()),
        ("n_rank", pa.int32()),
        ("n_jaccard", pa.float64()),
        ("n_source_id", pa.string()),
        ("n_image", pa.string()),
        ("n_relation", pa.string()),
    ]
)


def caption_words(caption: str) -> frozenset[str]:
    """The word set Jaccard similarity is computed over: lower-cased runs of `[a-z0-9]`
    (punctuation and the final full stop are separators, not words)."""
    return frozenset(_WORD.findall(caption.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 0.0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def parse_caption(caption: str, relation: str) -> tuple[str, str] | None:
    """(subject, object) of a VSR caption "The <subj> [is |are ]<relation> the <obj>.", or None
    when the caption does not have that shape. The subject is the shortest match."""
    pattern = rf"The (.+?) (?:is |are )?{re.escape(relation)} the (.+?)\.?"
    m = re.fullmatch(pattern, caption.strip())
    return (m.group(1), m.group(2)) if m else None


def _label(value: Any, path: Path, line: int) -> bool:
    if isinstance(value, bool):
        return value
    if value in (0, 1):
        return bool(value)
    raise DataError(f"label must be 0, 1, true or false, got {value!r}", file=path, line=line)


def vsr_read(
    rows: pa.Table | None, ctx: StageContext | None = None, *, path: str | Path
) -> pa.Table:
    """VSR's JSONL -> one row per caption (`CAPTION_SCHEMA`). `source_id` is the 1-based line
    number in the file. `rows` is ignored (a reading stage starts a recipe). A caption whose
    subject and object cannot be parsed is kept with `rejected="caption_not_parsed"`."""
    file = Path(path)
    out: dict[str, list[Any]] = {name: [] for name in CAPTION_SCHEMA.names}
    for number, record in read_jsonl(file):
        if not isinstance(record, dict):
            raise DataError("not a JSON object", file=file, line=number)
        missing = [f for f in REQUIRED_FIELDS if f not in record]
        if missing:
            raise DataError(f"missing field(s) {', '.join(missing)}", file=file, line=number)
        for field in ("image", "caption", "relation"):
            if not isinstance(record[field], str):
                raise DataError(f"{field} must be a string", file=file, line=number)
        parsed = parse_caption(record["caption"], record["relation"])
        out["source"].append(SOURCE)
        out["source_id"].append(str(number))
        out["image"].append(record["image"])
        out["caption"].append(record["caption"])
        out["label"].append(_label(record["label"], file, number))
        out["relation"].append(record["relation"])
        out["subj"].append(parsed[0] if parsed else None)
        out["obj"].append(parsed[1] if parsed else None)
        out["rejected"].append(None if parsed else "caption_not_parsed")
    return pa.Table.from_pydict(out, schema=CAPTION_SCHEMA)


def _check_columns(rows: pa.Table, needed: Iterable[str], stage: str) -> None:
    missing = [c for c in needed if c not in rows.column_names]
    if missing:
        raise DataError(f"{stage}: the input table lacks column(s) {', '.join(missing)}")


def vsr_positive_pairs(
    rows: pa.Table,
    ctx: StageContext | None = None,
    *,
    require_true: bool = False,
    same_image: bool = False,
) -> pa.Table:
    """Captions -> swapped pairs (`PAIR_SCHEMA`), VISLA §3.3 "Positive Caption Mining".

    For each image, a caption P1 of it and a caption P2 form a pair when one's subject is the
    other's object and the other way round (exact string match of the parsed names). P2 is any
    unique caption text of VSR ("we extracted P2 such that subject and object were switched"):
    a caption of the same image, or, unless `same_image`, one that occurs only on other images
    (then P2's row is its first occurrence in the file, and `p2_label` is null: it has no label
    for the pair's image). Two captions of the image: P1 is the one read first (lower
    `source_id`), P2 the later one, and a pair of identical caption texts is one pair,
    whichever rows they come from (its first occurrence is kept); a caption of the image and
    one of another image: P1 is the image's. The paper pairs captions whatever their labels;
    with `require_true` (an option, not the paper's), a pair in which either caption is not
    labelled True for the pair's image is kept with `rejected="not_both_true"`. Captions
    already rejected are not paired. `source_id` is "P1_ID+P2_ID"; rows come out in order of
    (P1, P2) source ids.
    """
    _check_columns(rows, CAPTION_SCHEMA.names, "vsr_positive_pairs")
    if not isinstance(same_image, bool) or not isinstance(require_true, bool):
        raise DataError("vsr_positive_pairs: require_true and same_image are true or false")
    records = [r for r in rows.to_pylist() if r["rejected"] is None]
    records.sort(key=lambda r: int(r["source_id"]))
    by_image: dict[str, list[dict[str, Any]]] = defaultdict(list)
    first_of_text: dict[str, dict[str, Any]] = {}
    for r in records:
        by_image[r["image"]].append(r)
        first_of_text.setdefault(r["caption"], r)
    everywhere: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in first_of_text.values():
        everywhere[(r["subj"], r["obj"])].append(r)
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for captions in by_image.values():
        by_names: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for r in captions:
            by_names[(r["subj"], r["obj"])].append(r)
        here = {r["caption"] for r in captions}
        seen: set[tuple[str, str]] = set()
        for first in captions:
            for second in by_names.get((first["obj"], first["subj"]), []):
                if int(second["source_id"]) <= int(first["source_id"]):
                    continue
                texts = (first["caption"], second["caption"])
                if texts in seen:
                    continue
                seen.add(texts)
                pairs.append((first, second))
            if same_image:
                continue
            for second in everywhere.get((first["obj"], first["subj"]), []):
                texts = (first["caption"], second["caption"])
                if second["caption"] in here or texts in seen:
                    continue
                seen.add(texts)
                pairs.append((first, second | {"label": None}))
    pairs.sort(key=lambda p: (int(p[0]["source_id"]), int(p[1]["source_id"])))
    out: dict[str, list[Any]] = {name: [] for name in PAIR_SCHEMA.names}
    for p1, p2 in pairs:
        both_true = bool(p1["label"]) and bool(p2["label"])
        out["source"].append(p1["source"])
        out["source_id"].append(f"{p1['source_id']}+{p2['source_id']}")
        out["image"].append(p1["image"])
        out["p1"].append(p1["caption"])
        out["p2"].append(p2["caption"])
        out["p1_source_id"].append(p1["source_id"])
        out["p2_source_id"].append(p2["source_id"])
        out["p1_relation"].append(p1["relation"])
        out["p2_relation"].append(p2["relation"])
        out["p1_label"].append(p1["label"])
        out["p2_label"].append(p2["label"])
        out["subj"].append(p1["subj"])
        out["obj"].append(p1["obj"])
        out["rejected"].append(None if both_true or not require_true else "not_both_true")
    return pa.Table.from_pydict(out, schema=PAIR_SCHEMA)


def _pool(
    captions: pa.Table,
) -> list[tuple[str, frozenset[str], list[tuple[str, str, str]], frozenset[str]]]:
    """Every unique caption text of `captions` (parsed ones): (text, word set, its
    occurrences as (source_id, image, relation) in source-id order, its object names)."""
    occurrences: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    names: dict[str, frozenset[str]] = {}
    for r in sorted(captions.to_pylist(), key=lambda r: int(r["source_id"])):
        if r["rejected"] is not None:
            continue
        occurrences[r["caption"]].append((r["source_id"], r["image"], r["relation"]))
        names[r["caption"]] = frozenset((r["subj"], r["obj"]))
    return [(t, caption_words(t), occ, names[t]) for t, occ in occurrences.items()]


@dataclass(frozen=True)
class _Ranks:
    """Jaccard similarity of each given text with each pool caption (`value`), and its rank
    among all the values (`rank`: equal values, equal ranks; `levels`: the largest rank)."""

    value: np.ndarray
    rank: np.ndarray
    levels: int


def _jaccard_ranks(texts: list[str], pool: list[Any]) -> _Ranks:
    """`_Ranks` of `texts` against the pool's captions, from word-incidence matrices:
    |A ∩ B| is a product of 0/1 rows, |A ∪ B| = |A| + |B| - |A ∩ B| (`jaccard`'s values)."""
    vocab: dict[str, int] = {}
    sets = [caption_words(t) for t in texts]
    for words in [*sets, *(entry[1] for entry in pool)]:
        for w in words:
            vocab.setdefault(w, len(vocab))

    def matrix(word_sets: Iterable[frozenset[str]], n: int) -> np.ndarray:
        m = np.zeros((n, max(len(vocab), 1)), dtype=np.float32)
        for row, words in enumerate(word_sets):
            m[row, [vocab[w] for w in words]] = 1.0
        return m

    a, b = matrix(sets, len(texts)), matrix((e[1] for e in pool), len(pool))
    inter = np.rint(a @ b.T).astype(np.int32)
    union = a.sum(axis=1).astype(np.int32)[:, None] + b.sum(axis=1).astype(np.int32)[None, :]
    union -= inter
    value = np.divide(inter, union, out=np.zeros(inter.shape), where=union > 0)
    levels, rank = np.unique(value, return_inverse=True)
    return _Ranks(value, rank.reshape(value.shape).astype(np.int32), len(levels))


def vsr_negative_candidates(
    rows: pa.Table,
    ctx: StageContext | None = None,
    *,
    captions: pa.Table | None = None,
    path: str | Path | None = None,
    top_k: int = 3,
    pool: str = "all",
    other_image: bool = False,
) -> pa.Table:
    """Pairs -> negative candidates (`CANDIDATE_SCHEMA`), VISLA §3.3 "Negative Caption".

    The candidates of a pair are the unique caption texts of `captions` (the `vsr_read` table;
    read from the VSR file at `path` when not given) other than P1 and P2: with the defaults,
    every one (the paper's "all unique captions in the VSR dataset"); with
    `pool="same_objects"` only those naming the pair's two objects in either order; with
    `other_image` only those occurring on an image other than the pair's. They are ranked by
    Jaccard similarity of word sets with P1 (highest first), ties broken by Jaccard with P2
    (highest first), then by the caption text (code-point order). The top `top_k` each make
    one row: the pair's columns and `n`, `n_rank` (1-based), `n_jaccard` (with P1) and the
    candidate's first occurrence (with `other_image`, its first on another image):
    `n_source_id`, `n_image`, `n_relation`. A pair already
    rejected passes through once with empty `n*` columns; an accepted pair with no candidate
    is kept once with `rejected="no_negative_candidate"`.
    """
    _check_columns(rows, PAIR_SCHEMA.names, "vsr_negative_candidates")
    if captions is None:
        if path is None:
            raise DataError("vsr_negative_candidates: give the VSR file as path (or captions)")
        captions = vsr_read(None, ctx, path=path)
    _check_columns(captions, CAPTION_SCHEMA.names, "vsr_negative_candidates")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise DataError(f"vsr_negative_candidates: top_k must be an integer >= 1, got {top_k!r}")
    if pool not in ("same_objects", "all"):
        raise DataError(f"vsr_negative_candidates: pool must be same_objects or all, got {pool!r}")
    if not isinstance(other_image, bool):
        raise DataError(
            f"vsr_negative_candidates: other_image is true or false, got {other_image!r}"
        )
    everything = _pool(captions)
    pairs = rows.to_pylist()
    live = [p for p in pairs if p["rejected"] is None]
    texts = sorted({t for p in live for t in (p["p1"], p["p2"])})
    ranks = _jaccard_ranks(texts, everything)
    pair_text = {t: i for i, t in enumerate(texts)}
    pool_text = {entry[0]: c for c, entry in enumerate(everything)}
    text_order = np.argsort(np.argsort(np.array([e[0] for e in everything], dtype=object)))
    # lexicographic key as one int64: Jaccard with P1, then with P2, then text order, larger first
    levels = int(ranks.levels) + 1
    tail = len(everything) - 1 - text_order.astype(np.int64)
    names = [entry[3] for entry in everything]
    images = [{o[1] for o in entry[2]} for entry in everything]
    empty = {"n": None, "n_rank": None, "n_jaccard": None}
    empty |= {"n_source_id": None, "n_image": None, "n_relation": None}
    out: list[dict[str, Any]] = []
    for pair in pairs:
        if pair["rejected"] is not None:
            out.append(pair | empty)
            continue
        r1 = ranks.rank[pair_text[pair["p1"]]].astype(np.int64)
        r2 = ranks.rank[pair_text[pair["p2"]]].astype(np.int64)
        key = (r1 * levels + r2) * len(everything) + tail
        allowed = np.ones(len(everything), dtype=bool)
        for own in (pair["p1"], pair["p2"]):
            if own in pool_text:
                allowed[pool_text[own]] = False
        if pool == "same_objects":
            wanted = frozenset((pair["subj"], pair["obj"]))
            allowed &= np.fromiter((n == wanted for n in names), bool, len(names))
        if other_image:
            allowed &= np.fromiter(
                (len(im) > 1 or pair["image"] not in im for im in images), bool, len(images)
            )
        choice = np.flatnonzero(allowed)
        if choice.size == 0:
            out.append(pair | empty | {"rejected": "no_negative_candidate"})
            continue
        keys = key[choice]  # distinct (the text order is in each), so the top is unique
        if keys.size > top_k:
            best = np.argpartition(-keys, top_k - 1)[:top_k]
            choice, keys = choice[best], keys[best]
        top = choice[np.argsort(-keys)]
        for rank, c in enumerate(top.tolist(), start=1):
            text, _, occurrences, _ = everything[c]
            source_id, image, relation = next(
                o for o in occurrences if not other_image or o[1] != pair["image"]
            )
            out.append(
                pair
                | {
                    "n": text,
                    "n_rank": rank,
                    "n_jaccard": float(ranks.value[pair_text[pair["p1"]], c]),
                }
                | {"n_source_id": source_id, "n_image": image, "n_relation": relation}
            )
    return pa.Table.from_pylist(out, schema=CANDIDATE_SCHEMA)


def vsr_source(path: str) -> InputTable:
    """The recipe input ``[input] source = "vsr"`` (`[input.settings] path = ...`): VSR's JSONL
    read by `vsr_read`, with the file's sha256."""
    return InputTable(vsr_read(None, path=path), file_sha256(Path(path)), str(path))


PAIRS_STAGE = Stage("vsr_spatial_pairs", vsr_positive_pairs)
NEGATIVES_STAGE = Stage("vsr_negative_candidates", vsr_negative_candidates)
