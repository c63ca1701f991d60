"""SugarCrepe++'s second positive caption as a build stage.

"SugarCrepe++ Dataset: Vision-Language Model Sensitivity to Semantic and Lexical Alterations"
(Dumpala et al., 2024), §2.1 and Appendix C.2-C.3. For each original caption P1 a generator
LLM writes a second positive caption P2 (same meaning, other words) with the meta-prompt
M = M1; M2; M3: the role-play prompt (Figure 2), the rules and the demonstrations (Figure 3).

Algorithm 1 (generation) with its two safeguards:

- P2 identical to P1 (`duplicated`: equal word sequences, case and punctuation ignored):
  regenerate with the full-context prompt M{P1; P2} (`full_context_prompt`);
- P2 superfluous (`superfluous`: the share of P2's distinct words found in P1 below
  `min_overlap`): discarded, regenerate with M{P1}.

Algorithm 2 (automatic validation): a validator agent (the same generator, conditioned on the
validation meta-prompt V of Figure 4) answers ``isConsistent: Yes/No`` for (P1, P2); "No"
starts Algorithm 1 again from M{P1}.

The paper bounds neither loop; here Algorithm 1 runs at most `max_generations` generations
per run and Algorithm 2 at most `max_validations` validations; a row that exhausts a bound is
kept, rejected with the reason of its last failure (`IDENTICAL`, `SUPERFLUOUS`,
`INCONSISTENT`). Every generation and validation is recorded in the column ``attempts`` (JSON).
A regeneration of a prompt already asked for the row sends the seed ``ctx.seed + k`` (k: the
row's generation number, 1 for its second), so it is a new stored request, not the stored
answer. The output is (P1, P2, N) triplets for human validation: ``caption``, ``caption2``,
``negative_caption`` (SugarCrepe++'s field names). docs/building.md ("SugarCrepe++ second
positive") and docs/fidelity.md ("Building: SugarCrepe++ second positive") give the choices.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lexsem.construct.stage import Columns, Stage, StageContext, accepted, reject
from lexsem.errors import DataError, LexsemError

__all__ = [
    "FULL_CONTEXT",
    "IDENTICAL",
    "INCONSISTENT",
    "M1_ROLE_PLAY",
    "M2_RULES",
    "M3_DEMONSTRATIONS",
    "SUPERFLUOUS",
    "V_VALIDATION",
    "duplicated",
    "full_context_prompt",
    "generation_prompt",
    "parse_paraphrase",
    "parse_verdict",
    "scpp_second_positive",
    "superfluous",
    "validation_prompt",
    "word_overlap",
]

# Figure 2 ("Role playing prompt for 'Data Generator AI'"), verbatim.
M1_ROLE_PLAY = (
    "Role-playing Prompt: You are an instruction-following DataGenAI. Your expertise lies in "
    "accurately interpreting and generating datasets based on given instructions. Your "
    "responses are expected to be precise and limited to the required output."
)

# Figure 3 ("Rules and demonstration sub-prompts used to condition the generator LLM"),
# verbatim: the rules (M2) and the demonstrations (M3), the placeholder filled by P1.
M2_RULES = (
    "Rules Instruction: Given an input sentence describing an image caption, follow these "
    "steps: 1. Rephrase each provided sentence, focusing on preserving the original spatial "
    "relationship. 2. Pay careful attention to the positioning of objects or entities in "
    "relation to one another. 3. Ensure that the meaning remains consistent and that both the "
    "original and paraphrased sentences maintain logical coherence and grammatical correctness."
)
M3_DEMONSTRATIONS = (
    "Demonstration: For example, Input: Cat is under the table. Paraphrase Idea: Rephrase the "
    "sentence to convey that the table is positioned above the cat. Paraphrased: The table is "
    "above the cat. Input: The plane flies below the bright white clouds. Paraphrase Idea: "
    "Ensure the spatial context is maintained by stating that the bright white clouds are "
    "situated above the flying plane. Paraphrased: The plane flies below the bright white "
    "clouds. Input: The third balcony is below the fourth balcony from the bottom. Paraphrase "
    "Idea: Emphasize the consistent spatial arrangement while indicating that the fourth "
    "balcony is positioned above the third balcony from the bottom. Paraphrased: The fourth "
    "balcony is above the third balcony from the bottom. Remember to keep the meaning intact, "
    "and both the original and paraphrased sentences should be logically coherent and "
    "grammatically correct. Input: [Original caption goes here] Paraphrase Idea: Focus on "
    "replicating the spatial arrangement while maintaining the original meaning of the "
    "sentence, correct grammar, same meaning. Paraphrased: [Your paraphrased sentence goes here]"
)

# Figure 4 ("Validation Meta-prompt"), V = V1; V2, verbatim but for the figure's margin letters
# lost in the paper's text (docs/fidelity.md): "isConsistent", "newCaption".
V_VALIDATION = (
    "Instruction: Given a pair of captions, you must check if the second caption is "
    "semantically consistent with the first caption. If the second caption is consistent, "
    "output the second caption as is; otherwise, rephrase the second caption to be consistent "
    "with the first sentence. We are neterested in preserving the spatial consistency and "
    "spatial relationship of the objects with each other.\n"
    "Demonstrations: examples,\n"
    "Caption 1: A guy holding a skateboard is speaking into a microphone. Caption 2: The guy "
    "holding the microphone is speaking into the skateboard. isConsistent: No, you cannot "
    "speak into a skateboard. newCaption: The guy is speaking into the microphone while "
    "holding a skateboard.\n"
    "Caption 1: A family are playing frisbee on the beach. Caption 2: The frisbee is being "
    "played on the beach by a family. isConsistent: Yes, caption 2 is consistent as it is the "
    "same caption written in passive voice. new caption is the same as caption 2. newCaption: "
    "A family are playing frisbee on the beach.\n"
    'caption 1:A stop sign vandalized with an "eating animals" sticker below the word '
    '"stop." caption 2: The stop sign is below an "eating animals" sticker. isConsistent: The '
    'stop cannot be below and above the sticker at the same time. newCaption: The word "stop" '
    'sign is above an "eating animals" sticker.\n'
    "caption 1: There is a phone on top of a calculator. caption 2: A calculator lies beneath "
    "the phone. isConsistent: Yes, the sentences are semantically equivalent. new caption is "
    "same as caption 2. newCaption: A calculator lies beneath the phone.\n"
    "Now the same for the below caption only. caption 1: [Original caption goes here] "
    "caption 2: [Generated caption goes here] isConsistent: [Output Here]"
)

# The full-context prompt M{P1; P2} of Algorithm 1, line 5: the paper describes it ("a
# meta-prompt that includes the complete context with basic instructions") without its text;
# this one is lexsem's: M{P1}, then the identical answer and a basic instruction.
FULL_CONTEXT = (
    "Your paraphrased sentence was: {p2}\n"
    "It is identical to the input sentence: {p1}\n"
    "Paraphrase the input sentence again with different words or a different word order, "
    "keeping its meaning exactly. Output only the paraphrased sentence."
)

ORIGINAL = "[Original caption goes here]"
GENERATED = "[Generated caption goes here]"

IDENTICAL = "identical to the input"
SUPERFLUOUS = "superfluous output"
INCONSISTENT = "inconsistent (validator)"

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def generation_prompt(p1: str) -> str:
    """M{P1}: M1; M2; M3 (Figures 2 and 3), the sub-prompts one per line, P1 filled in."""
    return "\n".join((M1_ROLE_PLAY, M2_RULES, M3_DEMONSTRATIONS.replace(ORIGINAL, p1)))


def full_context_prompt(p1: str, p2: str) -> str:
    """M{P1; P2}: M{P1} and the full context of the identical answer (`FULL_CONTEXT`)."""
    return generation_prompt(p1) + "\n" + FULL_CONTEXT.format(p1=p1, p2=p2)


def validation_prompt(p1: str, p2: str) -> str:
    """V{P1, P2} (Figure 4), P1 and P2 filled in."""
    return V_VALIDATION.replace(ORIGINAL, p1).replace(GENERATED, p2)


def parse_paraphrase(answer: str) -> str:
    """P2 from a generator's answer: the text after its last ``Paraphrased:`` (the whole answer
    when it has none), its first non-empty line, without markdown bold or enclosing quotes."""
    text = answer.replace("**", "")
    cut = text.lower().rfind("paraphrased:")
    if cut >= 0:
        text = text[cut + len("paraphrased:") :]
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if len(line) >= 2 and line[0] == line[-1] and line[0] in "\"'":
        line = line[1:-1].strip()
    return line


def parse_verdict(answer: str) -> bool | None:
    """The validator's isConsistent: True for "Yes", False for "No", None when the answer
    (after its ``isConsistent:``, if any) starts with neither."""
    text = answer.replace("**", "")
    cut = text.lower().find("isconsistent:")
    if cut >= 0:
        text = text[cut + len("isconsistent:") :]
    first = _words(text)[:1]
    return {"yes": True, "no": False}.get(first[0]) if first else None


def duplicated(p1: str, p2: str) -> bool:
    """Whether P2 is P1 again: the same words in the same order (case, punctuation and spacing
    ignored)."""
    return _words(p1) == _words(p2)


def word_overlap(p2: str, p1: str) -> float:
    """The share of P2's distinct words that occur in P1 (0 for an empty P2)."""
    mine = set(_words(p2))
    return len(mine & set(_words(p1))) / len(mine) if mine else 0.0


def superfluous(p2: str, p1: str, min_overlap: float) -> bool:
    """Superfluous(P2, P1): word overlap below `min_overlap`."""
    return word_overlap(p2, p1) < min_overlap


@dataclass
class _Item:
    """One row's progress through Algorithms 1 and 2."""

    p1: str
    prompt: str = ""
    kind: str = "generate"  # the next request: generate | full_context | validate
    p2: str = ""
    generations: int = 0  # all generations of the row (its seed offset)
    run_generations: int = 0  # generations in the current run of Algorithm 1
    validations: int = 0
    last_failure: str | None = None
    done: bool = False
    rejected: str | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)


def _check_settings(min_overlap: float, max_generations: int, max_validations: int) -> None:
    if not 0.0 <= float(min_overlap) <= 1.0:
        raise LexsemError(f"scpp_second_positive: min_overlap {min_overlap}: must be in [0, 1]")
    for name, value in (("max_generations", max_generations), ("max_validations", max_validations)):
        if not isinstance(value, int) or value < 1:
            raise LexsemError(f"scpp_second_positive: {name} {value!r}: must be 1 or more")


def _captions(rows: pa.Table, column: str) -> list[str | None]:
    if column not in rows.column_names:
        raise DataError(
            f"scpp_second_positive: the rows have no column {column!r} "
            f"(columns: {', '.join(rows.column_names)})"
        )
    mask = accepted(rows).to_pylist()
    out: list[str | None] = []
    for i, (ok, value) in enumerate(zip(mask, rows[column].to_pylist(), strict=True)):
        if not ok:
            out.append(None)
        elif not isinstance(value, str):
            raise DataError(
                f"scpp_second_positive: row {i + 1} ({column!r}): a caption is text, got {value!r}"
            )
        else:
            out.append(value)
    return out


def _requests(rows: pa.Table, column: str = "caption", **_: Any) -> list[str]:
    """The first generation prompt M{P1} of each accepted row (later prompts depend on the
    answers)."""
    return [generation_prompt(c) for c in _captions(rows, column) if c is not None]


def _start_generation(item: _Item) -> None:
    item.kind, item.prompt, item.run_generations = "generate", generation_prompt(item.p1), 0


def _on_generation(item: _Item, answer: str, seed: int | None, min_overlap: float,
                   max_generations: int, ctx: StageContext) -> None:  # fmt: skip
    """Algorithm 1, one step: the answer to M{P1} or M{P1; P2}."""
    p2 = parse_paraphrase(answer)
    overlap = round(word_overlap(p2, item.p1), 4)
    record = {"step": item.kind, "validation_round": item.validations + 1, "seed": seed,
              "answer": answer, "caption2": p2, "overlap": overlap}  # fmt: skip
    item.generations += 1
    item.run_generations += 1
    if duplicated(item.p1, p2):
        record["outcome"], item.last_failure = "identical", IDENTICAL
        item.kind, item.prompt = "full_context", full_context_prompt(item.p1, p2)
        ctx.count("generations identical to the input")
    elif superfluous(p2, item.p1, min_overlap):
        record["outcome"], item.last_failure = "superfluous", SUPERFLUOUS
        item.kind, item.prompt = "generate", generation_prompt(item.p1)
        ctx.count("generations discarded as superfluous")
    else:
        record["outcome"], item.p2 = "kept", p2
        item.kind, item.prompt = "validate", validation_prompt(item.p1, p2)
    item.attempts.append(record)
    if item.kind != "validate" and item.run_generations >= max_generations:
        item.done, item.rejected = True, item.last_failure


def _on_validation(item: _Item, answer: str, max_validations: int, ctx: StageContext) -> None:
    """Algorithm 2, one step: the validator's answer to V{P1, P2}."""
    verdict = parse_verdict(answer)
    item.validations += 1
    outcome = {True: "consistent", False: "inconsistent", None: "unreadable"}[verdict]
    item.attempts.append({"step": "validate", "validation_round": item.validations,
                          "answer": answer, "caption2": item.p2, "outcome": outcome})  # fmt: skip
    if verdict:
        item.done = True
        return
    ctx.count("validations not consistent")
    item.last_failure = INCONSISTENT
    if item.validations >= max_validations:
        item.done, item.rejected = True, INCONSISTENT
    else:
        _start_generation(item)


def scpp_second_positive(
    rows: pa.Table,
    ctx: StageContext,
    *,
    column: str = "caption",
    negative_column: str = "negative_caption",
    min_overlap: float = 0.25,
    max_generations: int = 5,
    max_validations: int = 3,
) -> pa.Table:
    """A second positive ``caption2`` for each accepted row's `column` (P1), by Algorithm 1
    with its safeguards and Algorithm 2's validator (see the module doc); ``attempts`` (JSON),
    ``generations`` and ``validations`` per row; a row that exhausts a bound is rejected with
    the reason of its last failure. `negative_column` (N), when the rows have it, is copied to
    ``negative_caption``."""
    _check_settings(min_overlap, max_generations, max_validations)
    captions = _captions(rows, column)
    items = [None if c is None else _Item(c) for c in captions]
    for item in items:
        if item is not None:
            _start_generation(item)
    while True:
        # One batch per distinct request parameters: validations, and generations by seed.
        groups: dict[int | None, list[_Item]] = defaultdict(list)
        validating: list[_Item] = []
        for item in items:
            if item is None or item.done:
                continue
            if item.kind == "validate":
                validating.append(item)
            else:
                groups[ctx.seed + item.generations if item.generations else None].append(item)
        if not groups and not validating:
            break
        if validating:
            answers = ctx.ask([i.prompt for i in validating])
            for item, answer in zip(validating, answers, strict=True):
                _on_validation(item, answer, max_validations, ctx)
        for seed, batch in sorted(groups.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
            params = {} if seed is None else {"seed": seed}
            answers = ctx.ask([i.prompt for i in batch], **params)
            for item, answer in zip(batch, answers, strict=True):
                _on_generation(item, answer, seed, min_overlap, max_generations, ctx)
        ctx.log(
            f"{sum(1 for i in items if i is not None and i.done)} / "
            f"{sum(1 for i in items if i is not None)} done"
        )
    return _table(rows, items, column, negative_column)


def _table(
    rows: pa.Table, items: list[_Item | None], column: str, negative_column: str
) -> pa.Table:
    def put(table: pa.Table, name: str, values: pa.Array) -> pa.Table:
        if name in table.column_names:
            return table.set_column(table.column_names.index(name), name, values)
        return table.append_column(name, values)

    out = rows
    if column != "caption":
        out = put(out, "caption", rows[column])
    if negative_column in rows.column_names and negative_column != "negative_caption":
        out = put(out, "negative_caption", rows[negative_column])
    p2 = [None if i is None or i.rejected else i.p2 for i in items]
    out = put(out, "caption2", pa.array(p2, pa.string()))
    attempts = [None if i is None else json.dumps(i.attempts, ensure_ascii=False) for i in items]
    out = put(out, "attempts", pa.array(attempts, pa.string()))
    out = put(out, "generations", pa.array([0 if i is None else i.generations for i in items],
                                           pa.int32()))  # fmt: skip
    out = put(out, "validations", pa.array([0 if i is None else i.validations for i in items],
                                           pa.int32()))  # fmt: skip
    return reject(out, [None if i is None else i.rejected for i in items])


def _columns(
    have: frozenset[str], *, column: str = "caption", negative_column: str = "negative_caption",
    **_: Any,
) -> Columns:  # fmt: skip
    made = {"caption", "caption2", "attempts", "generations", "validations"}
    return Columns({"column": column}, frozenset(
        made | ({"negative_caption"} if negative_column in have else set())))  # fmt: skip


STAGE = Stage("scpp_second_positive", scpp_second_positive, generator=True, requests=_requests,
              columns=_columns)  # fmt: skip
