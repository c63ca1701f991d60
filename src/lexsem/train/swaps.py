"""NegCLIP's rule-based hard negatives: a caption with two of its content words or phrases of
the same part of speech exchanged ("When and why vision-language models behave like
bags-of-words, and what to do about it?", §4: "The horse is eating the grass" → "The grass is
eating the horse").

`swap_negatives(caption, tagger, rng, k)` tags the caption's words with a pluggable `Tagger`
(tokens → part-of-speech tags, Universal POS), collects every exchange of

- two nouns (a run of nouns, "fire hydrant", is one unit), two adjectives, two verbs, two
  adverbs, whose tags are equal;
- two noun phrases (a run of adjectives / numerals / nouns ending in a noun, e.g. "small red
  ball"), which moves attributes with their objects;

and draws `k` of the distinct results with `rng`. Two words of one noun phrase are never
exchanged ("small red ball" → "red small ball" says the same), nor two equal words; a result
equal to the caption (ignoring case and spacing) or to another result is dropped, so a caption
with no swappable pair gives no negative. The text outside the two exchanged spans is kept as
it is, except that an article before a moved word agrees with it ("an elephant" → "a tree")
and a capital at the start of the caption stays at the start.

A tag may carry a subclass after a colon (``ADJ:colour``): words are exchanged only when their
whole tags are equal. `LexiconTagger`'s default lexicon uses this to exchange colours with
colours and sizes with sizes (as the synthetic benchmark's ``swap_att`` does); `SpacyTagger`
(spaCy's coarse tags, when spaCy and a model are installed) exchanges any two words of one
part of speech, as NegCLIP's own generation did.

`coco_captions_manifest` turns a COCO captions file (``captions_train2017.json``) into a
training manifest (`lexsem.train.manifest`), each caption with its swap negatives.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from lexsem.benchmarks.coco_captions import read_coco_captions
from lexsem.benchmarks.sources import synthetic_text as synthetic
from lexsem.errors import LexsemError
from lexsem.images.refs import ROOT_NAME_RE
from lexsem.train.manifest import Example, write_manifest

__all__ = [
    "DEFAULT_LEXICON",
    "SWAP_KINDS",
    "LexiconTagger",
    "SpacyTagger",
    "Tagger",
    "coco_captions_manifest",
    "swap_candidates",
    "swap_negatives",
    "tokenize",
]

#: The parts of speech whose words are exchanged, and "NP" (noun phrases), in this order.
SWAP_KINDS: tuple[str, ...] = ("NOUN", "ADJ", "VERB", "ADV", "NP")
_PHRASE_POS = frozenset({"ADJ", "NUM", "NOUN"})

_TOKEN_RE = re.compile(r"\w+(?:['’-]\w+)*|[^\w\s]")
_ARTICLE_RE = re.compile(r"\b([Aa]n?)(\s+)$")


@runtime_checkable
class Tagger(Protocol):
    """Tags words: one Universal POS tag (``NOUN``, ``ADJ``, ``VERB``, ``ADV``, ``DET``, ...)
    per token, optionally with a subclass after a colon (``ADJ:colour``)."""

    def tag(self, tokens: Sequence[str]) -> Sequence[str]: ...


# --- the lexicon tagger --------------------------------------------------------------------


def _words(kind: str, text: str) -> dict[str, str]:
    return dict.fromkeys(text.split(), kind)


def _default_lexicon() -> dict[str, str]:
    lex: dict[str, str] = {}
    lex |= _words("DET", "a an the this that these those some another each every its his her")
    lex |= _words("DET", "their no any")
    lex |= _words("NUM", "one two three four five six seven eight nine ten")
    # prepositions, and the words of spatial phrases ("to the left of", "on top of"): never
    # exchanged with the objects they relate
    lex |= _words(
        "ADP",
        "of on in at with by near next to from under over above below behind beside between "
        "into onto across along around through inside outside against atop beneath underneath "
        "for front left right top bottom middle side",
    )
    lex |= _words("AUX", "is are was were be been being has have had can")
    lex |= _words("CCONJ", "and or but")
    lex |= _words("PRON", "it he she they them him someone something who which what")
    lex |= _words("PART", "not")
    lex |= _words("ADJ:colour", " ".join(synthetic.COLOURS))
    lex |= _words("ADJ:colour", "white brown gray grey silver golden")
    lex |= _words("ADJ:size", " ".join(synthetic.SIZES))
    lex |= _words("ADJ:size", "big little tiny huge tall short long")
    lex |= _words(
        "ADJ",
        "old young new wooden empty full open closed dark bright colorful clean dirty fresh "
        "cute pretty busy wet dry sunny snowy grassy metal plastic stuffed",
    )
    lex |= _words("NOUN", " ".join(synthetic.NOUNS))
    lex |= _words(
        "NOUN",
        "man woman men women person people boy girl child children kid baby player guy lady "
        "dog cat horse cow sheep bird elephant giraffe zebra bear animal "
        "table chair bench bed couch sofa desk shelf "
        "street road sidewalk field grass beach water ocean sky snow hill mountain park "
        "building city room kitchen bathroom toilet sink mirror counter floor window door wall "
        "plate bowl pizza sandwich cake food donut banana apple orange broccoli fruit "
        "vegetable glass bottle knife fork spoon "
        "bus train truck motorcycle bike bicycle boat plane airplane vehicle "
        "skateboard surfboard board frisbee umbrella clock sign light pole fence "
        "phone laptop computer keyboard television tv screen "
        "shirt jacket tie coat dress helmet bag suitcase racket bat glove "
        "fire hydrant stop tennis court wave kite tower",
    )
    lex |= _words(
        "VERB",
        "sitting standing riding holding eating walking playing looking lying laying flying "
        "parked carrying wearing driving running jumping throwing catching hitting swinging "
        "talking watching waiting grazing covered filled topped surrounded pulling pushing "
        "sits stands rides holds eats walks plays looks lies flies carries wears drives runs",
    )
    lex |= _words("ADV", "together down up away nearby quickly slowly very")
    return lex


#: The default lexicon of `LexiconTagger`: the synthetic renderer's nouns, colours, sizes and
#: relation words, and common words of COCO captions.
DEFAULT_LEXICON: Mapping[str, str] = _default_lexicon()


class LexiconTagger:
    """A rule-based tagger: each word's tag from a word → tag dictionary (case-insensitive);
    a regular plural (``dogs``, ``boxes``) of a listed noun is a noun; numbers are ``NUM``,
    punctuation ``PUNCT`` and any other word `unknown` (never exchanged)."""

    def __init__(self, lexicon: Mapping[str, str] | None = None, *, unknown: str = "X") -> None:
        source = DEFAULT_LEXICON if lexicon is None else lexicon
        self.lexicon = {word.casefold(): tag for word, tag in source.items()}
        self.unknown = unknown

    def tag(self, tokens: Sequence[str]) -> list[str]:
        return [self._tag(t) for t in tokens]

    def _tag(self, token: str) -> str:
        word = token.casefold()
        if word in self.lexicon:
            return self.lexicon[word]
        for ending in ("es", "s"):  # boxes, dogs
            stem = word.removesuffix(ending)
            if stem != word and self._is_noun(stem):
                return self.lexicon[stem]
        if word.isdigit():
            return "NUM"
        if not any(c.isalnum() for c in word):
            return "PUNCT"
        return self.unknown

    def _is_noun(self, word: str) -> bool:
        return self.lexicon.get(word, "").split(":")[0] == "NOUN"


class SpacyTagger:
    """spaCy's coarse tags (``token.pos_``) of the given tokens (spaCy and the model must be
    installed; lexsem does not depend on them)."""

    def __init__(self, model: str = "en_core_web_sm") -> None:
        try:
            import spacy
        except ImportError:
            raise LexsemError(
                "SpacyTagger needs spaCy, which is not installed (pip install spacy); "
                "LexiconTagger needs nothing"
            ) from None
        try:
            self._nlp = spacy.load(model)
        except OSError as exc:
            raise LexsemError(
                f"the spaCy model {model!r} is not installed (python -m spacy download "
                f"{model}): {exc}"
            ) from None

    def tag(self, tokens: Sequence[str]) -> list[str]:
        from spacy.tokens import Doc

        doc = Doc(self._nlp.vocab, words=list(tokens))
        for _, proc in self._nlp.pipeline:
            doc = proc(doc)
        return [t.pos_ for t in doc]


# --- swapping ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Token:
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class _Unit:
    """A swappable span: tokens [first, last] of the caption, of kind `kind` (its full tag or
    "NP"), inside the noun phrase `phrase` (-1: none)."""

    kind: str
    first: int
    last: int
    phrase: int


def tokenize(text: str) -> list[str]:
    """The words and punctuation marks of `text`, as the tagger sees them."""
    return [m.group() for m in _TOKEN_RE.finditer(text)]


def _tokens(text: str) -> list[_Token]:
    return [_Token(m.group(), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def _pos(tag: str) -> str:
    return tag.split(":", 1)[0]


def _phrases(tags: Sequence[str]) -> list[tuple[int, int]]:
    """Maximal runs of ADJ / NUM / NOUN tokens, as (first, last) token indices."""
    runs: list[tuple[int, int]] = []
    start = None
    for i, tag in enumerate([*tags, "END"]):
        inside = _pos(tag) in _PHRASE_POS
        if inside and start is None:
            start = i
        elif not inside and start is not None:
            runs.append((start, i - 1))
            start = None
    return runs


def _units(tags: Sequence[str]) -> list[_Unit]:
    """Word units (runs of nouns, single adjectives / verbs / adverbs) and noun phrases."""
    phrase_of = {i: p for p, (a, b) in enumerate(_phrases(tags)) for i in range(a, b + 1)}
    units: list[_Unit] = []
    i = 0
    while i < len(tags):
        pos = _pos(tags[i])
        j = i
        if pos == "NOUN":
            while j + 1 < len(tags) and tags[j + 1] == tags[i]:
                j += 1
        if pos in SWAP_KINDS:
            units.append(_Unit(tags[i], i, j, phrase_of.get(i, -1)))
        i = j + 1
    for p, (a, b) in enumerate(_phrases(tags)):
        has_modifier = any(_pos(tags[t]) != "NOUN" for t in range(a, b + 1))
        if has_modifier and _pos(tags[b]) == "NOUN":
            units.append(_Unit("NP", a, b, p))
    return units


def _span(toks: Sequence[_Token], unit: _Unit) -> tuple[int, int]:
    return (toks[unit.first].start, toks[unit.last].end)


def _kind_order(kind: str) -> int:
    return SWAP_KINDS.index(_pos(kind)) if _pos(kind) in SWAP_KINDS else len(SWAP_KINDS)


def _article(word: str) -> str:
    w = word.casefold()
    if w.startswith(("uni", "use", "usu", "one", "eu", "ewe", "ur")):
        return "a"
    if w.startswith(("hour", "honest", "honor", "honour", "heir")) or w[:1] in tuple("aeiou"):
        return "an"
    return "a"


def _fix_article(piece: str, next_text: str) -> str:
    """`piece` with a trailing "a" / "an" made to agree with the word starting `next_text`."""
    m = _ARTICLE_RE.search(piece)
    words = tokenize(next_text)
    if m is None or not words:
        return piece
    want = _article(words[0])
    if m.group(1)[0].isupper():
        want = want.capitalize()
    return piece[: m.start(1)] + want + m.group(2)


def _title_word(text: str) -> bool:
    first = text.split()[0] if text.split() else ""
    return first[:1].isupper() and first[1:] == first[1:].lower()


def _exchange(text: str, a: tuple[int, int], b: tuple[int, int]) -> str:
    """`text` with the character spans `a` and `b` (a before b) exchanged."""
    pre, span_a, mid = text[: a[0]], text[a[0] : a[1]], text[a[1] : b[0]]
    span_b, post = text[b[0] : b[1]], text[b[1] :]
    if not any(c.isalnum() for c in pre) and span_a[:1].isupper() and span_b[:1].islower():
        span_b = span_b[:1].upper() + span_b[1:]
        if _title_word(span_a):
            span_a = span_a[:1].lower() + span_a[1:]
    pre = _fix_article(pre, span_b)
    if any(c.isalnum() for c in mid):
        mid = _fix_article(mid, span_a)
    return pre + span_b + mid + span_a + post


def _key(text: str) -> str:
    return " ".join(text.casefold().split())


def swap_candidates(caption: str, tagger: Tagger) -> list[str]:
    """Every distinct swap negative of `caption`, in a fixed order (by kind: nouns,
    adjectives, verbs, adverbs, noun phrases; then by position)."""
    toks = _tokens(caption)
    tags = list(tagger.tag([t.text for t in toks]))
    if len(tags) != len(toks):
        raise ValueError(
            f"the tagger returned {len(tags)} tags for {len(toks)} tokens of {caption!r}"
        )
    units = sorted(_units(tags), key=lambda u: (_kind_order(u.kind), u.kind, u.first))
    seen = {_key(caption)}
    out: list[str] = []
    for i, u in enumerate(units):
        for v in units[i + 1 :]:
            if v.kind != u.kind or (u.kind != "NP" and u.phrase >= 0 and u.phrase == v.phrase):
                continue
            a, b = sorted([_span(toks, u), _span(toks, v)])
            if a[1] > b[0] or caption[a[0] : a[1]].casefold() == caption[b[0] : b[1]].casefold():
                continue
            negative = _exchange(caption, a, b)
            if _key(negative) not in seen:
                seen.add(_key(negative))
                out.append(negative)
    return out


def swap_negatives(caption: str, tagger: Tagger, rng: random.Random, k: int = 1) -> list[str]:
    """Up to `k` distinct swap negatives of `caption`, drawn with `rng` among
    `swap_candidates` (in the order drawn); none when it has no swappable pair."""
    if k < 0:
        raise ValueError(f"k must be >= 0, not {k}")
    candidates = swap_candidates(caption, tagger)
    return rng.sample(candidates, min(k, len(candidates)))


# --- COCO captions -> manifest ---------------------------------------------------------------


def _in_dev(image_id: int, seed: int, dev_fraction: float) -> bool:
    digest = hashlib.sha256(f"lexsem-coco-dev:{seed}:{image_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < dev_fraction


def coco_captions_manifest(
    captions_json: str | Path,
    images_root: str,
    out: str | Path,
    tagger: Tagger,
    seed: int,
    *,
    k: int = 1,
    dev_fraction: float = 0.0,
) -> dict[str, Any]:
    """A manifest at `out` (``.jsonl`` / ``.parquet``) with one row per caption of the COCO
    captions file `captions_json` (``{"images": [{id, file_name}], "annotations": [{image_id,
    caption}]}``), each with up to `k` swap negatives (`swap_negatives`, one
    ``random.Random(seed)`` over the captions in file order).

    Images are referenced as ``<images_root>:<file_name>``: ``train2017`` names the COCO train
    folder of the image store, as evaluation does. All captions of an image go to one split:
    ``dev`` for a share `dev_fraction` of the images (chosen by a hash of seed and image id).
    Returns a summary: rows, images, rows without a negative, dev rows.
    """
    if not isinstance(images_root, str) or not ROOT_NAME_RE.match(images_root):
        raise ValueError(
            f"images_root must be an image root name such as 'train2017': {images_root!r}"
        )
    if not 0.0 <= dev_fraction < 1.0:
        raise ValueError(f"dev_fraction must be in [0, 1): {dev_fraction}")
    found = read_coco_captions(captions_json, images_required=True)
    captions = [(c.image_id, c.file_name, " ".join(c.caption.split())) for c in found]
    rng = random.Random(seed)
    rows = [
        Example(
            image=f"{images_root}:{name}",
            caption=caption,
            negatives=tuple(swap_negatives(caption, tagger, rng, k)),
            split="dev" if _in_dev(image_id, seed, dev_fraction) else "train",
        )
        for image_id, name, caption in captions
    ]
    written = write_manifest(out, rows)
    return {
        "path": str(written),
        "rows": len(rows),
        "images": len({r.image for r in rows}),
        "without_negative": sum(not r.negatives for r in rows),
        "dev_rows": sum(r.split == "dev" for r in rows),
    }
