"""VISLA spatial candidates mined from Visual Spatial Reasoning (VSR) captions.

Dumpala et al., "VISLA Benchmark: Evaluating Embedding Sensitivity to Semantic and Lexical
Alterations", §3.3 (Spatial VISLA Benchmark): positive pairs (P1, P2) are two captions of one
image whose subject and object are swapped; negative candidates (N) come from captions of other
images about the same objects, the top three ranked by Jaccard similarity; people then select or
edit the triplets (the last step is not automatic). Three stages, each a pure function
`fn(rows, ctx, **settings) -> pyarrow.Table` (docs/building.md, "VISLA spatial from VSR"):

- `vsr_read`: VSR's JSONL (`all_vsr_validated_data.jsonl`) -> one row per caption, with the
  subject and object parsed from the caption ("The <subj> [is|are] <relation> the <obj>.").
- `vsr_positive_pairs`: captions -> one row per swapped pair of one image (both True).
- `vsr_negative_candidates`: pairs -> one row per (pair, negative candidate), top `top_k`.

Jaccard similarity is over word sets: a caption's words are the maximal runs of `[a-z0-9]`
after lower-casing (`caption_words`); J(A, B) = |A ∩ B| / |A ∪ B| (0 when both are empty).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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
    rows: pa.Table, ctx: StageContext | None = None, *, require_true: bool = True
) -> pa.Table:
    """Captions -> swapped pairs (`PAIR_SCHEMA`), VISLA §3.3 "Positive Caption Mining".

    Two captions of one image form a pair when one's subject is the other's object and the
    other way round (exact string match of the parsed names). P1 is the caption read first
    (lower `source_id`), P2 the later one; a pair of identical caption texts is one pair,
    whichever rows they come from (its first occurrence is kept). With `require_true` (the
    paper's "both true"), a pair in which either caption is labelled False is kept with
    `rejected="not_both_true"`. Captions already rejected are not paired. `source_id` is
    "P1_ID+P2_ID"; rows come out in order of (P1, P2) source ids.
    """
    _check_columns(rows, CAPTION_SCHEMA.names, "vsr_positive_pairs")
    records = [r for r in rows.to_pylist() if r["rejected"] is None]
    records.sort(key=lambda r: int(r["source_id"]))
    by_image: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_image[r["image"]].append(r)
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for captions in by_image.values():
        by_names: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for r in captions:
            by_names[(r["subj"], r["obj"])].append(r)
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


def vsr_negative_candidates(
    rows: pa.Table,
    ctx: StageContext | None = None,
    *,
    captions: pa.Table | None = None,
    path: str | Path | None = None,
    top_k: int = 3,
    pool: str = "same_objects",
) -> pa.Table:
    """Pairs -> negative candidates (`CANDIDATE_SCHEMA`), VISLA §3.3 "Negative Caption".

    The candidates of a pair are the unique caption texts of `captions` (the `vsr_read` table;
    read from the VSR file at `path` when not given) that occur on an image other than the
    pair's, differ from P1 and P2, and (with `pool="same_objects"`) name the same two objects
    as the pair in either order; with
    `pool="all"` every unique caption of another image is a candidate. They are ranked by
    Jaccard similarity of word sets with P1 (highest first), ties broken by Jaccard with P2
    (highest first), then by the caption text (code-point order). The top `top_k` each make
    one row: the pair's columns and `n`, `n_rank` (1-based), `n_jaccard` (with P1) and the
    first other-image occurrence's `n_source_id`, `n_image`, `n_relation`. A pair already
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
    everything = _pool(captions)
    by_names: dict[frozenset[str], list[int]] = defaultdict(list)
    for index, entry in enumerate(everything):
        by_names[entry[3]].append(index)
    empty = {"n": None, "n_rank": None, "n_jaccard": None}
    empty |= {"n_source_id": None, "n_image": None, "n_relation": None}
    out: list[dict[str, Any]] = []
    for pair in rows.to_pylist():
        if pair["rejected"] is not None:
            out.append(pair | empty)
            continue
        w1, w2 = caption_words(pair["p1"]), caption_words(pair["p2"])
        indices = (
            by_names.get(frozenset((pair["subj"], pair["obj"])), [])
            if pool == "same_objects"
            else range(len(everything))
        )
        ranked = []
        for index in indices:
            text, words, occurrences, _ = everything[index]
            if text in (pair["p1"], pair["p2"]):
                continue
            other = next((o for o in occurrences if o[1] != pair["image"]), None)
            if other is None:
                continue
            ranked.append((-jaccard(w1, words), -jaccard(w2, words), text, other))
        ranked.sort(key=lambda c: c[:3])
        if not ranked:
            out.append(pair | empty | {"rejected": "no_negative_candidate"})
            continue
        for rank, (score, _, text, (source_id, image, relation)) in enumerate(
            ranked[:top_k], start=1
        ):
            out.append(
                pair
                | {"n": text, "n_rank": rank, "n_jaccard": -score}
                | {"n_source_id": source_id, "n_image": image, "n_relation": relation}
            )
    return pa.Table.from_pylist(out, schema=CANDIDATE_SCHEMA)


def vsr_source(path: str) -> InputTable:
    """The recipe input ``[input] source = "vsr"`` (`[input.settings] path = ...`): VSR's JSONL
    read by `vsr_read`, with the file's sha256."""
    return InputTable(vsr_read(None, path=path), file_sha256(Path(path)), str(path))


PAIRS_STAGE = Stage("vsr_spatial_pairs", vsr_positive_pairs)
NEGATIVES_STAGE = Stage("vsr_negative_candidates", vsr_negative_candidates)
