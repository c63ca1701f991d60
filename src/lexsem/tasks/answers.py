"""Free-form answers to a multiple-choice prompt, read as the option they name: deterministic
rules, never a guess. This is lexsem's strict parser: the rule of the SugarCrepe++ presets and
of every preset with `--answer-rule strict`; a preset's authors' rule where they counted
otherwise is in `lexsem.tasks.answer_rules`.

The prompts of SugarCrepe++ (§3.3, App. G.1) and SugarCrepe's GPT-4V evaluation list numbered
options `(1) ...; (2) ...; (3) ...` and ask for `(1)`, `(2)`, `(3)` (or `none`). Models answer
`(2)`, `2.`, `**Caption (2)**`, `The caption that does not match is (3).`, `Neither (1) nor
(2).`, a refusal, or a paragraph quoting the captions. `parse_answer` reads such an answer as
one of:

- ``option``: exactly one option is named (`option` holds its number, 1-based);
- ``none``: the answer says no option applies (`none`, `neither`, `all captions match`);
- ``multiple``: several different options are named, none first;
- ``refusal``: the model declines (`I cannot`, `I'm sorry`, `as an AI`) and names no option;
- ``unparseable``: none of the above (empty, off-topic, a caption quoted that is no option).

The rules, in this order (the first that applies decides; `rule` says which):

1. ``leading``: the answer starts with an option marker — `(2)`, `(b)`, `b)`, or a bare `2`
   followed by the end, punctuation or a dash (`2`, `2.`, `2)`, `2 - ...`) — optionally after
   `Answer:`, `Option`, `Caption`, `Output:` or `The answer is` (a bare `2` followed by a word,
   as in a caption `2 dogs play`, is not a marker; a bare letter never is: `A man ...`). If the
   answer names no other option, that option; if it does (`(1) and (2) match, (3) does not`,
   `2, 3`, `1) a dog 2) a cat`), ``multiple``: which one it means would be a guess;
2. ``none``: it starts with `none` or `neither`, or says `none of the` (not `none of the
   other(s)`), `no caption`, `all (three|the|of the) captions match`, `all of them match`,
   `they all match`;
3. ``markers``: the option markers anywhere in it — `(2)`, `(b)`, `option 2`, `caption 2`,
   `number 2`, `#2` — one distinct option: that option; several: ``multiple``;
4. ``quoted``: the text of exactly one option appears in it (case, spaces and final
   punctuation ignored; an option found only inside another option that is also found, as
   `a dog` in `a dog on a bed`, does not count): that option; of several: ``multiple``;
5. ``refusal``: a refusal phrase;
6. otherwise ``unparseable``.

Markdown emphasis and code marks (`*`, `_`, `` ` ``, `#` headings) are removed first, and the
answer is read case-insensitively. Letters map to numbers (a = 1, b = 2, c = 3). A marker
beyond the number of options (`(4)` of three) is not an option: such an answer is
``unparseable`` unless a later rule applies.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["AnswerKind", "ParsedAnswer", "parse_answer"]

AnswerKind = Literal["option", "none", "multiple", "refusal", "unparseable"]

_MARKDOWN = re.compile(r"[*_`]+|^\s*#+\s*", re.M)
_PREFIX = (
    r"(?:(?:the\s+)?(?:final\s+)?answer\s*(?:is)?\s*[:\-]?\s*|output\s*[:\-]?\s*|"
    r"(?:option|caption|choice)\s*(?:number\s*)?[:\-]?\s*)?"
)
# a leading marker: (2) / (b) / 2) / b) / 2. / 2 at the end, before punctuation or a space
_LEADING = re.compile(
    rf"^\s*{_PREFIX}(?:\(\s*([1-9]|[a-i])\s*\)|([a-i])\)|([1-9])(?=$|[.,;:!)\]]|\s*[-–:]|\s*$|\s+(?:or|and|&)\s+\(?[1-9]))",
)
_NONE = re.compile(
    r"^\s*(?:none|neither)\b|\bnone of (?:the|them|these)\b(?! others?\b)|\bno caption\b|"
    r"\ball (?:three |the |of the )?captions? (?:do )?(?:match|correspond|describe)|"
    r"\ball of them (?:match|correspond)|\bthey all (?:match|correspond)"
)
_MARKERS = re.compile(
    r"\(\s*([1-9]|[a-i])\s*\)|\b(?:option|caption|choice|number)\s*#?\s*([1-9])\b|#([1-9])\b"
)
# what else names an option right after a leading marker: `2) ...`, or a list `2, 3` / `2 or 3`
_OTHER = re.compile(r"(?:^|\s)([1-9])\)")
_LIST = re.compile(r"^\s*(?:,|;|/|&|and|or)\s*\(?\s*([1-9]|[a-i])\s*\)?(?=$|[\s.,;:!)])")
_REFUSAL = re.compile(
    r"\bi(?:'m| am)? (?:sorry|unable|not able)\b|\bi can(?:not|'t|\s+not)\b|\bas an ai\b|"
    r"\bcannot (?:determine|see|view|tell)\b|\bunable to (?:determine|see|view|tell)\b|"
    r"\bno image\b"
)
_TRAILING = re.compile(r"[\s.;,!?\"']+$")


@dataclass(frozen=True)
class ParsedAnswer:
    """What an answer names: `kind`, the option number (1-based) when `kind == "option"`, and the
    rule that decided (see the module doc)."""

    kind: AnswerKind
    option: int | None
    rule: str


def _number(token: str) -> int:
    return int(token) if token.isdigit() else ord(token) - ord("a") + 1


def _clean(text: str) -> str:
    return " ".join(_MARKDOWN.sub(" ", text).lower().split())


def _norm(text: str) -> str:
    return _TRAILING.sub("", " ".join(text.lower().split()))


def parse_answer(answer: str | None, options: int | Sequence[str]) -> ParsedAnswer:
    """Read `answer` to a prompt with `options` (their number, or their texts in prompt order,
    which also lets an answer that quotes one be read: rule ``quoted``)."""
    texts = [] if isinstance(options, int) else [str(o) for o in options]
    n = options if isinstance(options, int) else len(texts)
    text = _clean(answer or "")
    if not text:
        return ParsedAnswer("unparseable", None, "empty")
    named = {_number(next(g for g in mm.groups() if g)) for mm in _MARKERS.finditer(text)}
    named = {k for k in named if 1 <= k <= n}
    m = _LEADING.match(text)
    if m is not None:
        k = _number(next(g for g in m.groups() if g))
        if 1 <= k <= n:
            rest = text[m.end() :]
            others = named | {int(d) for d in _OTHER.findall(rest)}
            listed = _LIST.match(rest)
            if listed is not None:
                others.add(_number(listed.group(1)))
            if {o for o in others if 1 <= o <= n} <= {k}:
                return ParsedAnswer("option", k, "leading")
            return ParsedAnswer("multiple", None, "leading")
    if _NONE.search(text):
        return ParsedAnswer("none", None, "none")
    if len(named) == 1:
        return ParsedAnswer("option", named.pop(), "markers")
    if len(named) > 1:
        return ParsedAnswer("multiple", None, "markers")
    said = _norm(text)
    quoted = [i for i, t in enumerate(texts, 1) if _norm(t) and _norm(t) in said]
    # an option found only inside another found option (`a dog` in `a dog on a bed`) is not
    # quoted on its own
    quoted = [
        i for i in quoted
        if not any(j != i and _norm(texts[i - 1]) in _norm(texts[j - 1]) for j in quoted)
        or any(_norm(texts[i - 1]) == _norm(texts[j - 1]) for j in quoted if j != i)
    ]  # fmt: skip
    if len(quoted) == 1:
        return ParsedAnswer("option", quoted[0], "quoted")
    if len(quoted) > 1:
        return ParsedAnswer("multiple", None, "quoted")
    if _REFUSAL.search(text):
        return ParsedAnswer("refusal", None, "refusal")
    return ParsedAnswer("unparseable", None, "no rule")
