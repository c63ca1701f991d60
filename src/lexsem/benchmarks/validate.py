"""`lexsem validate`: a health report over loaded benchmark items, for every item kind.

`validate_items` is a pure function over items that were loaded with `strict=False` (so empty
texts survive to be reported); `render_report` turns the result into plain text / Markdown for the
terminal, and `HealthReport.to_dict()` into JSON.

Items are triplets (p1, p2, n), pairs (pos, neg), quads (image0, caption0, image1, caption1:
BiVLC, Winoground, synthetic_bi) or multi-caption items (the true caption then the false ones:
ARO). Each check applies to some item kinds (`Check.kinds`); a subset is checked, and its
summary lists, only the checks of its kind. Checks, per subset (see `CHECKS` for the names used
in the report and in JSON):

- counts: items loaded vs the count expected of the source (`expected_items`: the rows of the
  pinned public file or of the Hugging Face dataset, or the generator's default) vs the number
  the paper reports (`paper_items`);
- duplicate item ids; duplicate items (same images *and* same texts); repeated texts (same texts
  with other images). Identity of an item for "distinct" counts is its texts only, e.g.
  (p1, p2, n) or (pos, neg), without the image: the text-only tasks (TOT/T2T) cannot tell two such
  rows apart, and this is the identity under which the VISLA spatial file has 636 distinct
  triplets among its 652 rows (the VISLA paper, §3.3, reports 640). With the image, it has 651.
  Images are compared by reference (file name or `mem:` ref), not by content;
- texts that should differ but are identical, compared exactly and, separately, equal only after
  whitespace/case normalisation (NFC, whitespace runs collapsed, ends stripped, casefolded); an
  exact match is not repeated under the normalised check: a positive equal to the negative
  (P1 == N or P2 == N; pos == neg; the true caption == a false one), P1 == P2, two false captions
  equal, caption0 == caption1 of a quad;
- quads whose two images are the same ref; missing (empty) image refs; multi-caption items
  without a label in a subset whose other items have one (the label is what the per-relation /
  per-attribute macro average groups by);
- empty or whitespace-only texts; leading, trailing or repeated whitespace;
- very long texts (more than `long_chars` characters or `long_words` words; CLIP truncates at 77
  tokens);
- encoding: non-ASCII characters (listed), mojibake (UTF-8 read as cp1252/latin-1, e.g. "Ã©",
  "â€™"), control and invisible format characters, U+FFFD replacement characters, non-NFC text.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from lexsem.benchmarks.base import Benchmark, SubsetSpec
from lexsem.benchmarks.items import Item, MultiCaptionItem, PairItem, QuadItem, TripletItem

ITEM_KINDS = ("triplet", "pair", "quad", "multi")


@dataclass(frozen=True)
class Check:
    name: str
    title: str  # what is wrong, when the check fires
    ok: str  # what holds, when it does not
    severity: str  # "error" (the data is unusable as is), "warning" (a known defect), "info"
    kinds: tuple[str, ...] = ITEM_KINDS  # the item kinds it applies to

    def applies(self, kind: str) -> bool:
        """True for the item kinds it checks; every check applies to "mixed" and "empty"."""
        return kind in self.kinds or kind not in ITEM_KINDS


CHECKS: tuple[Check, ...] = (
    Check("count_vs_file", "item count differs from the source", "item count matches the source",
          "error"),
    Check("count_vs_paper", "source count differs from the paper",
          "source count matches the paper", "info"),
    Check("duplicate_id", "duplicate item ids", "no duplicate item ids", "error"),
    Check("duplicate_item", "duplicate items (same images and texts)", "no duplicate items",
          "warning"),
    Check("duplicate_texts", "repeated texts with other images", "no repeated texts", "warning"),
    Check("pos_eq_neg", "a positive is identical to the negative",
          "no positive is identical to a negative", "warning", ("triplet", "pair", "multi")),
    Check("pos_eq_neg_normalized", "a positive equals the negative after normalisation",
          "no positive equals a negative after normalisation", "warning",
          ("triplet", "pair", "multi")),
    Check("p1_eq_p2", "the two positives are identical", "no P1 is identical to its P2",
          "warning", ("triplet",)),
    Check("p1_eq_p2_normalized", "the two positives are equal after normalisation",
          "no P1 equals its P2 after normalisation", "warning", ("triplet",)),
    Check("neg_eq_neg", "two false captions are identical", "no two false captions are identical",
          "warning", ("multi",)),
    Check("neg_eq_neg_normalized", "two false captions are equal after normalisation",
          "no two false captions are equal after normalisation", "warning", ("multi",)),
    Check("captions_equal", "caption0 is identical to caption1",
          "no quad has caption0 identical to caption1", "warning", ("quad",)),
    Check("captions_equal_normalized", "caption0 equals caption1 after normalisation",
          "no quad has caption0 equal to caption1 after normalisation", "warning", ("quad",)),
    Check("images_equal", "image0 and image1 are the same image",
          "no quad has the same image twice", "warning", ("quad",)),
    Check("missing_image", "missing image refs", "every item has its image refs", "warning"),
    Check("missing_label", "items without a label (relation/attribute)",
          "labels are all present or all absent", "warning", ("multi",)),
    Check("empty_text", "empty or whitespace-only texts", "no empty texts", "error"),
    Check("whitespace", "leading, trailing or repeated whitespace", "no stray whitespace", "info"),
    Check("long_text", "very long texts", "no very long texts", "info"),
    Check("non_ascii", "non-ASCII characters", "ASCII only", "info"),
    Check("mojibake", "mojibake (UTF-8 decoded as cp1252/latin-1)", "no mojibake", "warning"),
    Check("control_chars", "control or invisible format characters",
          "no control or invisible characters", "warning"),
    Check("replacement_char", "Unicode replacement character U+FFFD", "no U+FFFD", "error"),
    Check("non_nfc", "text not in Unicode NFC", "all texts in NFC", "info"),
)  # fmt: skip
CHECK_BY_NAME = {c.name: c for c in CHECKS}

# How the source of `expected_items` is named, by `Benchmark.origin`: (in sentences, short).
_SOURCES = {
    "files": ("the pinned public file", "public file"),
    "hf": ("the Hugging Face dataset", "HF dataset"),
    "generated": ("the generator's default", "generator default"),
}

# Typical sequences left when UTF-8 bytes are decoded as cp1252 or latin-1.
# "Ã" + a continuation byte shown as latin-1/cp1252 ("Ã©" for "é"), "â€" (the start of a
# cp1252-decoded "’", "“", "–" ...), "Â" + a latin-1 symbol ("Â " for NBSP), a decoded BOM.
_MOJIBAKE = re.compile(
    "Ã[\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u017e\u0192\u02c6\u02dc"
    "\u2013-\u203a\u20ac\u2122]|â€|Â[\u00a0-\u00bf]|ï»¿"
)
_MULTI_SPACE = re.compile(r"\s{2,}")


@dataclass
class Finding:
    """One defect: the check, where it is (subset, item id) and the offending texts."""

    check: str
    subset: str
    item_id: str | None
    texts: dict[str, str] = field(default_factory=dict)  # field name ("p1", "n", ...) -> text
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "subset": self.subset,
            "item_id": self.item_id,
            "texts": dict(self.texts),
            "detail": self.detail,
        }


@dataclass
class SubsetHealth:
    name: str
    item_kind: str  # "triplet" | "pair" | "quad" | "multi" | "mixed" | "empty"
    items: int
    expected_items: int | None  # items the source holds (public file, HF dataset, generator)
    paper_items: int | None  # what the paper reports
    distinct_items: int  # distinct (images, texts)
    distinct_texts: int  # distinct texts: (p1, p2, n), (pos, neg), (caption0, caption1), captions
    complete_items: int  # items none of whose texts is empty or whitespace-only
    non_ascii_chars: dict[str, int] = field(default_factory=dict)  # char -> occurrences
    findings: list[Finding] = field(default_factory=list)
    text_only: bool = False  # no item has an image: `missing_image` does not apply

    @property
    def checks(self) -> tuple[Check, ...]:
        """The checks that apply to this subset's item kind, in `CHECKS` order."""
        return tuple(c for c in CHECKS if c.applies(self.item_kind))

    def count(self, check: str) -> int:
        return sum(1 for f in self.findings if f.check == check)

    def counts(self) -> dict[str, int]:
        """Findings per check, every check listed (0 when clean or not applicable)."""
        return {c.name: self.count(c.name) for c in CHECKS}

    def item_ids(self, check: str) -> list[str]:
        return [f.item_id for f in self.findings if f.check == check and f.item_id is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "item_kind": self.item_kind,
            "items": self.items,
            "expected_items": self.expected_items,
            "paper_items": self.paper_items,
            "distinct_items": self.distinct_items,
            "distinct_texts": self.distinct_texts,
            "complete_items": self.complete_items,
            "non_ascii_chars": dict(self.non_ascii_chars),
            "checks_run": [c.name for c in self.checks],
            "counts": self.counts(),
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class HealthReport:
    benchmark: str
    item_kind: str
    long_chars: int
    long_words: int
    subsets: list[SubsetHealth] = field(default_factory=list)
    origin: str = "files"  # Benchmark.origin: where `expected_items` counts come from

    def subset(self, name: str) -> SubsetHealth:
        for s in self.subsets:
            if s.name == name:
                return s
        raise KeyError(name)

    @property
    def findings(self) -> list[Finding]:
        return [f for s in self.subsets for f in s.findings]

    def counts(self) -> dict[str, int]:
        """Findings per check over all subsets."""
        total = Counter(f.check for f in self.findings)
        return {c.name: total[c.name] for c in CHECKS}

    @property
    def has_errors(self) -> bool:
        """True when a check of severity "error" fired (the CLI may exit non-zero)."""
        return any(CHECK_BY_NAME[f.check].severity == "error" for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "item_kind": self.item_kind,
            "origin": self.origin,
            "thresholds": {"long_chars": self.long_chars, "long_words": self.long_words},
            "has_errors": self.has_errors,
            "counts": self.counts(),
            "checks": {
                c.name: {"title": c.title, "ok": c.ok, "severity": c.severity, "kinds": c.kinds}
                for c in CHECKS
            },
            "subsets": [s.to_dict() for s in self.subsets],
        }


# --- item helpers -----------------------------------------------------------------------------


def normalize_text(text: str) -> str:
    """Whitespace/case normalisation for the "equal after normalisation" checks."""
    return " ".join(unicodedata.normalize("NFC", text).split()).casefold()


def item_kind(item: Item) -> str:
    """ "triplet", "pair", "quad" or "multi"."""
    if isinstance(item, TripletItem):
        return "triplet"
    if isinstance(item, PairItem):
        return "pair"
    if isinstance(item, QuadItem):
        return "quad"
    if isinstance(item, MultiCaptionItem):
        return "multi"
    raise TypeError(f"not a benchmark item: {type(item).__name__}")


def _fields(item: Item) -> dict[str, str]:
    """The item's texts by field name: p1/p2/n, pos/neg, caption0/caption1, true/false1..."""
    if isinstance(item, TripletItem):
        return {"p1": item.p1, "p2": item.p2, "n": item.n}
    if isinstance(item, PairItem):
        return {"pos": item.pos, "neg": item.neg}
    if isinstance(item, QuadItem):
        return {"caption0": item.caption0, "caption1": item.caption1}
    true, *false = item.captions
    return {"true": true, **{f"false{k}": t for k, t in enumerate(false, 1)}}


def _images(item: Item) -> dict[str, str | None]:
    """The item's image refs by field name."""
    if isinstance(item, QuadItem):
        return {"image0": item.image0, "image1": item.image1}
    return {"image": item.image}


def _image_key(item: Item) -> tuple[str | None, ...]:
    return tuple(_images(item).values())


def _equal_pairs(item: Item) -> dict[str, list[tuple[str, str]]]:
    """check -> the field pairs whose texts must differ."""
    if isinstance(item, TripletItem):
        return {"pos_eq_neg": [("p1", "n"), ("p2", "n")], "p1_eq_p2": [("p1", "p2")]}
    if isinstance(item, PairItem):
        return {"pos_eq_neg": [("pos", "neg")]}
    if isinstance(item, QuadItem):
        return {"captions_equal": [("caption0", "caption1")]}
    false = [k for k in _fields(item) if k != "true"]
    return {
        "pos_eq_neg": [("true", k) for k in false],
        "neg_eq_neg": list(combinations(false, 2)),
    }


_SHOWN = {"p1": "P1", "p2": "P2", "n": "N", "pos": "POS", "neg": "NEG"}


def _shown(key: str) -> str:
    return _SHOWN.get(key, key)


_CONTROL_NAMES = {
    "\t": "CHARACTER TABULATION",
    "\n": "LINE FEED",
    "\v": "LINE TABULATION",
    "\f": "FORM FEED",
    "\r": "CARRIAGE RETURN",
    "\x00": "NULL",
    "\x1b": "ESCAPE",
    "\x7f": "DELETE",
}


def _char_name(ch: str) -> str:
    """`'\\xa0' U+00A0 NO-BREAK SPACE`: how a character is named in findings."""
    name = unicodedata.name(ch, "") or _CONTROL_NAMES.get(ch, "<control>")
    return f"{ch!r} U+{ord(ch):04X} {name}"


def _whitespace_problems(text: str) -> list[str]:
    problems = []
    if text[:1].isspace():
        problems.append("leading")
    if text[-1:].isspace():
        problems.append("trailing")
    if _MULTI_SPACE.search(text.strip()):
        problems.append("repeated")
    return problems


def _mojibake_fix(text: str) -> str | None:
    """The text with mojibake undone, or None when it does not look like mojibake."""
    if text.isascii():
        return None
    for codec in ("cp1252", "latin-1"):
        try:
            fixed = text.encode(codec).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
        if fixed != text:
            return fixed
    if _MOJIBAKE.search(text):
        return ""
    return None


def _control_chars(text: str) -> list[str]:
    # Cc: C0/C1 controls (tab and newline included: a caption has none); Cf: invisible format
    # characters such as U+200B ZERO WIDTH SPACE, U+00AD SOFT HYPHEN or a stray U+FEFF BOM.
    return sorted({ch for ch in text if unicodedata.category(ch) in ("Cc", "Cf")})


# --- the validator ----------------------------------------------------------------------------


def _subset_kind(items: list[Item]) -> str:
    kinds = {item_kind(i) for i in items}
    if not kinds:
        return "empty"
    return kinds.pop() if len(kinds) == 1 else "mixed"


def _source(origin: str, short: bool = False) -> str:
    names = _SOURCES.get(origin, ("the source", "source"))
    return names[1] if short else names[0]


def _count_findings(
    name: str, n: int, sub: SubsetSpec | None, origin: str, findings: list[Finding]
) -> None:
    if sub is None:
        return
    source = _source(origin)
    if n != sub.expected_items:
        detail = f"{n} items loaded; {source} has {sub.expected_items}"
        findings.append(Finding("count_vs_file", name, None, detail=detail))
    if sub.paper_items is not None and sub.paper_items != sub.expected_items:
        detail = (
            f"{source} has {sub.expected_items} items; the paper reports "
            f"{sub.paper_items} ({sub.expected_items - sub.paper_items:+d})"
        )
        findings.append(Finding("count_vs_paper", name, None, detail=detail))


def _shown_images(item: Item) -> str:
    return ", ".join(str(ref) for ref in _images(item).values())


def _duplicate_findings(name: str, items: list[Item], findings: list[Finding]) -> None:
    by_id: dict[str, list[Item]] = {}
    for it in items:
        by_id.setdefault(it.id, []).append(it)
    for item_id, group in by_id.items():
        if len(group) > 1:
            detail = f"id {item_id!r} is used by {len(group)} items"
            findings.append(Finding("duplicate_id", name, item_id, _fields(group[0]), detail))

    first_full: dict[tuple[Any, ...], Item] = {}
    first_texts: dict[tuple[str, ...], Item] = {}
    for it in items:
        texts = it.texts()
        full = (_image_key(it), *texts)
        images = "images" if isinstance(it, QuadItem) else "image"
        if full in first_full:
            first = first_full[full]
            detail = f"same {images} ({_shown_images(it)}) and texts as item {first.id}"
            findings.append(Finding("duplicate_item", name, it.id, _fields(it), detail))
        elif texts in first_texts:
            first = first_texts[texts]
            detail = (
                f"same texts as item {first.id} "
                f"({images} {_shown_images(it)} vs {_shown_images(first)})"
            )
            findings.append(Finding("duplicate_texts", name, it.id, _fields(it), detail))
        first_full.setdefault(full, it)
        first_texts.setdefault(texts, it)


def _equality_findings(name: str, it: Item, findings: list[Finding]) -> None:
    f = _fields(it)
    for check, pairs in _equal_pairs(it).items():
        exact = [(a, b) for a, b in pairs if f[a] == f[b]]
        norm = [
            (a, b)
            for a, b in pairs
            if f[a] != f[b] and normalize_text(f[a]) == normalize_text(f[b])
        ]
        for kind, hits in ((check, exact), (f"{check}_normalized", norm)):
            if not hits:
                continue
            keys = sorted({k for pair in hits for k in pair}, key=list(f).index)
            same = "==" if kind == check else "~"
            tail = "" if kind == check else " (whitespace/case)"
            detail = ", ".join(f"{_shown(a)} {same} {_shown(b)}{tail}" for a, b in hits)
            findings.append(Finding(kind, name, it.id, {k: f[k] for k in keys}, detail))


def _image_findings(name: str, it: Item, findings: list[Finding]) -> None:
    refs = _images(it)
    missing = [k for k, ref in refs.items() if ref is None or not str(ref).strip()]
    if missing:
        detail = "; ".join(f"{k}: {'none' if refs[k] is None else 'empty'}" for k in missing)
        findings.append(Finding("missing_image", name, it.id, {}, detail))
    if isinstance(it, QuadItem) and not missing and it.image0 == it.image1:
        detail = f"image0 == image1 ({it.image0})"
        findings.append(Finding("images_equal", name, it.id, dict(refs), detail))


def _label_findings(name: str, items: list[Item], findings: list[Finding]) -> None:
    """Multi-caption items without a label, where other items of the subset have one."""
    multi = [it for it in items if isinstance(it, MultiCaptionItem)]
    if not any(it.label for it in multi):
        return  # ARO's order benchmarks have no labels at all
    labelled = sum(1 for it in multi if it.label)
    for it in multi:
        if not it.label.strip():
            detail = f"no label ({labelled} of {len(multi)} items have one)"
            findings.append(Finding("missing_label", name, it.id, {}, detail))


def _text_findings(
    name: str,
    it: Item,
    findings: list[Finding],
    non_ascii: Counter[str],
    *,
    long_chars: int,
    long_words: int,
) -> None:
    per_check: dict[str, list[tuple[str, str]]] = {}  # check -> [(field, detail)]
    f = _fields(it)
    for key, text in f.items():

        def add(check: str, detail: str, key: str = key) -> None:
            per_check.setdefault(check, []).append((key, detail))

        if not text.strip():
            add("empty_text", "empty" if not text else f"whitespace only ({text!r})")
            continue
        ws = _whitespace_problems(text)
        if ws:
            add("whitespace", "/".join(ws))
        n_words = len(text.split())
        if len(text) > long_chars or n_words > long_words:
            add("long_text", f"{len(text)} chars, {n_words} words")
        if not text.isascii():
            chars = [ch for ch in text if not ch.isascii()]
            non_ascii.update(chars)
            add("non_ascii", ", ".join(_char_name(ch) for ch in dict.fromkeys(chars)))
            fix = _mojibake_fix(text)
            if fix is not None:
                add("mojibake", f"reads as {fix!r}" if fix else "mojibake pattern")
            if "\ufffd" in text:
                add("replacement_char", f"{text.count(chr(0xFFFD))} x U+FFFD")
            if not unicodedata.is_normalized("NFC", text):
                add("non_nfc", "NFC form differs")
        ctrl = _control_chars(text)
        if ctrl:
            add("control_chars", ", ".join(_char_name(ch) for ch in ctrl))
    for check, hits in per_check.items():
        detail = "; ".join(f"{k}: {d}" for k, d in hits)
        findings.append(Finding(check, name, it.id, {k: f[k] for k, _ in hits}, detail))


def validate_subset(
    name: str,
    items: list[Item],
    sub: SubsetSpec | None = None,
    *,
    origin: str = "files",
    kind: str | None = None,
    long_chars: int = 300,
    long_words: int = 60,
) -> SubsetHealth:
    """Health of one subset; `kind` (the benchmark's item kind) names an empty subset's kind."""
    findings: list[Finding] = []
    _count_findings(name, len(items), sub, origin, findings)
    _duplicate_findings(name, items, findings)
    _label_findings(name, items, findings)
    non_ascii: Counter[str] = Counter()
    text_only = bool(items) and all(
        ref is None or not str(ref).strip() for it in items for ref in _images(it).values()
    )
    for it in items:
        _equality_findings(name, it, findings)
        if not text_only:
            _image_findings(name, it, findings)
        _text_findings(name, it, findings, non_ascii, long_chars=long_chars, long_words=long_words)
    order = {c.name: i for i, c in enumerate(CHECKS)}
    findings.sort(key=lambda f: order[f.check])  # stable: file order within a check
    return SubsetHealth(
        name=name,
        item_kind=_subset_kind(items) if items or kind is None else kind,
        items=len(items),
        expected_items=sub.expected_items if sub is not None else None,
        paper_items=sub.paper_items if sub is not None else None,
        distinct_items=len({(_image_key(it), *it.texts()) for it in items}),
        distinct_texts=len({it.texts() for it in items}),
        complete_items=sum(all(t.strip() for t in it.texts()) for it in items),
        non_ascii_chars=dict(non_ascii.most_common()),
        findings=findings,
        text_only=text_only,
    )


def validate_items(
    spec: Benchmark,
    items_by_subset: dict[str, list[Item]],
    *,
    long_chars: int = 300,
    long_words: int = 60,
) -> HealthReport:
    """Health report of the given subsets of `spec` (spec order; unknown subsets last).

    Load the items with `strict=False` so that empty texts reach the report. A user's file
    (origin "user") has no expected count: its counts are not checked.
    """
    known = {s.name: s for s in spec.subsets}
    names = [s.name for s in spec.subsets if s.name in items_by_subset]
    names += [n for n in items_by_subset if n not in known]
    origin = spec.origin
    report = HealthReport(spec.name, spec.item_kind, long_chars, long_words, origin=origin)
    for name in names:
        report.subsets.append(
            validate_subset(
                name,
                items_by_subset[name],
                known.get(name) if origin != "user" else None,
                origin=origin,
                kind=spec.item_kind,
                long_chars=long_chars,
                long_words=long_words,
            )
        )
    return report


# --- rendering --------------------------------------------------------------------------------

_KIND_TEXTS = {
    "triplet": "triplets (p1, p2, n)",
    "pair": "pairs (pos, neg)",
    "quad": "caption pairs (caption0, caption1)",
    "multi": "caption lists (true, false...)",
}
_ALL_IDS = ("duplicate_id", "pos_eq_neg", "pos_eq_neg_normalized", "captions_equal")


def _clip(text: str, width: int = 90) -> str:
    shown = repr(text)
    return shown if len(shown) <= width else shown[: width - 4] + "...'"


def _subset_header(s: SubsetHealth, origin: str) -> str:
    parts = [f"{s.items} items"]
    if s.expected_items is not None:
        mark = "" if s.items == s.expected_items else "  <-- MISMATCH"
        parts.append(f"{_source(origin, short=True)} {s.expected_items}{mark}")
    if s.paper_items is not None:
        parts.append(f"paper {s.paper_items}")
    what = _KIND_TEXTS.get(s.item_kind, "texts")
    parts.append(f"distinct {what} {s.distinct_texts}")
    images = "images" if s.item_kind == "quad" else "image"
    parts.append(f"distinct ({images} + texts) {s.distinct_items}")
    if s.complete_items != s.items:
        parts.append(f"without empty texts {s.complete_items}")
    return " | ".join(parts)


def _count_status(c: Check, s: SubsetHealth, origin: str) -> tuple[str, str]:
    """(status, what it means) of the two count checks, with the numbers."""
    source, n = _source(origin), s.count(c.name)
    status = f"{n} {c.severity}" if n else "ok"
    if s.expected_items is None:
        return "n/a", "no expected count is recorded for this subset"
    if c.name == "count_vs_file":
        if n:
            return status, f"{s.items} items loaded, but {source} has {s.expected_items}"
        return status, f"{s.items} items loaded, matching {source} ({s.expected_items})"
    if s.paper_items is None:
        why = "generated data, no paper" if origin == "generated" else "not recorded"
        return "n/a", f"the paper's count: {why}"
    if n:
        return status, f"{source} has {s.expected_items} items, the paper reports {s.paper_items}"
    return status, f"{source} matches the paper ({s.paper_items} items)"


def _summary_line(c: Check, s: SubsetHealth, origin: str, width: int) -> str:
    if c.name in ("count_vs_file", "count_vs_paper"):
        status, text = _count_status(c, s, origin)
    elif c.name == "missing_image" and s.text_only:
        status, text = "n/a", "a text-only subset: no item has an image"
    else:
        n = s.count(c.name)
        status, text = (f"{n} {c.severity}", c.title) if n else ("ok", c.ok)
    line = f"- {c.name:<{width}}  {status:<12}  {text}"
    if status != "ok" and c.name == "non_ascii":
        top = list(s.non_ascii_chars.items())[:12]
        line += ": " + ", ".join(f"{_char_name(ch)} x{k}" for ch, k in top)
    return line


def _examples(c: Check, s: SubsetHealth, max_examples: int) -> list[str]:
    hits = [f for f in s.findings if f.check == c.name]
    if not hits:
        return []
    shown = f"first {min(max_examples, len(hits))} of {len(hits)}"
    out = ["", f"### {c.name}: {c.title} ({shown})"]
    for f in hits[:max_examples]:
        where = f"item {f.item_id}" if f.item_id is not None else s.name
        out.append(f"- {where}: {f.detail}")
        out += [f"    {key}: {_clip(text)}" for key, text in f.texts.items()]
    if c.name in _ALL_IDS and len(hits) > max_examples:
        out.append("  all ids: " + ", ".join(f.item_id for f in hits if f.item_id is not None))
    return out


def render_report(report: HealthReport, *, max_examples: int = 3) -> str:
    """Plain-text (Markdown) report: a summary line per applicable check, then examples.

    A summary line says "ok" and what holds when a check found nothing, the number and severity
    of its findings and what is wrong when it did, "n/a" when there is nothing to compare.
    """
    out = [f"# Health report: {report.benchmark} ({report.item_kind})", ""]
    totals = report.counts()
    fired = [c for c in CHECKS if totals[c.name]]
    if fired:
        out.append(
            "Findings over all subsets: " + ", ".join(f"{c.name} {totals[c.name]}" for c in fired)
        )
    else:
        out.append("No findings.")
    out.append(
        f"Long text: > {report.long_chars} characters or > {report.long_words} words "
        "(CLIP truncates at 77 tokens)."
    )
    width = max(len(c.name) for c in CHECKS)
    for s in report.subsets:
        out += ["", f"## {s.name}", "", _subset_header(s, report.origin), ""]
        out += [_summary_line(c, s, report.origin, width) for c in s.checks]
        for c in s.checks:
            out += _examples(c, s, max_examples)
    return "\n".join(out) + "\n"
