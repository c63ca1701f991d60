"""The words annotators read: each task kind's question and instructions, taken from the papers
where they publish them, and the default consent text. A study may replace the instructions
and the consent text with its own files (`lexsem annotate create --instructions/--consent`).
`KIND_QUESTIONS` / `KIND_INSTRUCTIONS` are the built-in kinds' words; `QUESTIONS` /
`INSTRUCTIONS` those of every registered kind (`lexsem.annotate.kinds.KINDS`).

A study's instructions page (`study_instructions`) is the kinds' instructions (or the study's
own text, unchanged) with parts made from the study itself (`StudyParts`, `study_parts`): the
keys each kind's question page takes (its options' places, its fixed choices, skip), how many
questions an annotator answers at most, and how many are practice or check attention, where
the study has such questions. Only these made parts change with the study; the papers' words
are quoted as they are.

- BiVLC, App. H.1: the best-of-4 survey ("Select one image that adequately represents the
  description ..."), the ambiguity filter ("Choose the image that best matches the description,
  in the case that both images match the description equally well choose 'Both'") and the
  human baseline's two parts ("Choose the description that BEST represents the image. Pay close
  attention to word order." / "Choose the image that BEST matches the description. Aesthetic
  defects are accepted ...") — quoted; the first two as `lexsem.construct.human.INSTRUCTIONS`
  quotes them, for the same steps of a build.
- SugarCrepe++, §3 ("each person ... was asked to select the negative caption for each
  sample. In TOT setting, only the three captions were provided. In the ITT setting, image along
  with the captions were provided"); the text of its App. J (Figure 14) is an image in the paper,
  so the wording here follows §3.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lexsem.annotate.kinds import CHOICE_KEYS, CHOICE_LABELS, FIXED_CHOICES, KindField
from lexsem.annotate.store import StoredUnit
from lexsem.construct.human import INSTRUCTIONS as BIVLC_STEPS

__all__ = [
    "CONSENT",
    "INSTRUCTIONS",
    "KIND_INSTRUCTIONS",
    "KIND_QUESTIONS",
    "QUESTIONS",
    "Paragraph",
    "Shortcut",
    "StudyParts",
    "kind_keys",
    "study_instructions",
    "study_parts",
]

KIND_QUESTIONS: dict[str, str] = {
    "tot": "Two of these captions mean the same thing. Which one means something different?",
    "itt": "Which caption does not describe the image? (Two of them do, in different words.)",
    "pair": "Which caption describes the image?",
    "bivlc_i2t": "Choose the description that BEST represents the image.",
    "bivlc_t2i": "Choose the image that BEST matches the description.",
    "best_of_k": "Select one image that adequately represents the description, or None.",
    "ambiguity": "Choose the image that best matches the description, or Both.",
    "validate": "Is the caption marked 'to check' right? Accept it, edit it, or reject it.",
}

KIND_INSTRUCTIONS: dict[str, str] = {
    "tot": (
        "Each question shows three captions of one picture. Two of them are written "
        "differently but mean the same thing; the third changes the meaning (an object, an "
        "attribute or a relation is replaced, or two words are swapped). Select the caption "
        "that means something different (SugarCrepe++, §3: the negative caption)."
    ),
    "itt": (
        "Each question shows a picture and three captions. Two captions describe the picture "
        "in different words; one does not. Select the caption that does not describe the "
        "picture (SugarCrepe++, §3)."
    ),
    "pair": "Each question shows a picture and two captions. Select the caption that describes it.",
    "bivlc_i2t": (
        "The question consists of an image and two descriptions. The goal is to choose the "
        "description that BEST represents the image. Important: pay close attention to word "
        "order. (BiVLC, App. H.1)"
    ),
    "bivlc_t2i": (
        "The question consists of a description and two images. The objective is to choose the "
        "image that BEST represents the description. Important: aesthetic defects are "
        "accepted, such as deformed faces, arms, hands etc. (BiVLC, App. H.1)"
    ),
    "best_of_k": BIVLC_STEPS["best_image"],
    "ambiguity": BIVLC_STEPS["ambiguity"],
    "validate": (
        "Each question shows the original caption P1 and a caption to check: either a "
        "generated second positive P2, which must mean exactly what P1 means in different "
        "words, or a negative N (shown alone or with the second positive P2), which must be a "
        "fluent caption that contradicts P1 (and P2): it must not describe what P1 describes, "
        "nor the picture where one is shown. "
        "Accept it if it is right, edit it (and save the edit) if a small change makes it "
        "right, reject it otherwise (SugarCrepe++, §2.1; VISLA, §3.3)."
    ),
}

CONSENT = (
    "This is a research study on how people and computer models read pictures and captions. "
    "You will answer short multiple-choice questions. Taking part is voluntary and you may stop "
    "at any time. We record only your answers, the time each took and an anonymous code: no "
    "name, e-mail, address or other personal information."
)

QUESTIONS: Mapping[str, str] = KindField("question")
INSTRUCTIONS: Mapping[str, str] = KindField("instructions")


@dataclass(frozen=True)
class Shortcut:
    """Keys of a question page and what they do: each entry of `keys` is one key or keys
    pressed together (``("Ctrl", "Enter")``)."""

    keys: tuple[tuple[str, ...], ...]
    does: str


@dataclass(frozen=True)
class Paragraph:
    """One paragraph of a study's instructions: its text, and the keys it lists (if any)."""

    text: str
    keys: tuple[Shortcut, ...] = ()


@dataclass(frozen=True)
class StudyParts:
    """What a study asks, as its instructions say it: its task kinds (in serving order), each
    with the most options one of its questions shows; its practice and gold questions; the
    most questions one annotator answers (None where that is not known); whether every practice
    question has a right answer (to show after it)."""

    options: Mapping[str, int]
    practice: int = 0
    gold: int = 0
    questions: int | None = None
    practice_right: bool = True


def study_parts(
    units: Sequence[StoredUnit], kinds: Sequence[str], quota: int | None, *, per_annotator: bool
) -> StudyParts:
    """The parts of a study of `units` (`kinds`: its kinds in serving order). With
    `per_annotator`, the most questions one annotator answers: every practice and gold
    question, and the questions of the `quota` largest items (all items without a quota)."""
    options: dict[str, int] = {k: 0 for k in kinds if any(u.kind == k for u in units)}
    for u in units:
        options[u.kind] = max(options.get(u.kind, 0), len(u.payload["options"]))
    practice = sum(u.practice for u in units)
    gold = sum(u.gold for u in units)
    questions = None
    if per_annotator:
        sizes = Counter(u.item_key for u in units if not u.practice and not u.gold)
        largest = sorted(sizes.values(), reverse=True)[: quota or len(sizes)]
        questions = practice + gold + sum(largest)
    right = all(u.correct is not None for u in units if u.practice)
    return StudyParts(options, practice, gold, questions, right)


def kind_keys(kind: str, n_options: int) -> tuple[Shortcut, ...]:
    """The keys a question page of `kind` with `n_options` options takes (the page's own
    `data-key`s and `Ctrl`+`Enter`, `lexsem.annotate.app`)."""
    out = []
    if n_options:
        places = tuple((str(k),) for k in range(1, n_options + 1))
        out.append(Shortcut(places, "choose the option of that number"))
    for choice in (*FIXED_CHOICES[kind], "skip"):
        key = CHOICE_KEYS[choice].upper()
        if choice == "edit":
            out.append(Shortcut(((key,),), "edit the caption"))
            out.append(Shortcut((("Ctrl", "Enter"),), "save the edit"))
        else:
            out.append(Shortcut(((key,),), CHOICE_LABELS[choice].lower()))
    return tuple(out)


def study_instructions(
    parts: StudyParts, own: str | None = None, *, page: bool = True
) -> list[Paragraph]:
    """A study's instructions: its own text `own` unchanged, or each kind's instructions; on
    the study's own `page`, the keys of its question pages (one list where every kind takes
    the same keys, else each kind's after it) and practice with feedback; then how many
    questions an annotator answers, practice and attention checks, where the study has them
    (elsewhere, Label Studio: no keys, no feedback)."""
    kinds = list(parts.options)
    keys = {k: kind_keys(k, parts.options[k]) for k in kinds}
    same = len(set(keys.values())) <= 1
    lead = "answer with the mouse, a tap, or the keyboard:"
    out: list[Paragraph] = [Paragraph(own)] if own is not None else []
    for kind in kinds:
        if own is None:
            out.append(Paragraph(INSTRUCTIONS[kind]))
        if page and not same:
            out.append(Paragraph(f"On the questions “{QUESTIONS[kind]}”, {lead}", keys[kind]))
    if page and same and kinds:
        out.append(Paragraph(lead.capitalize(), keys[kinds[0]]))
    said = []
    if parts.questions is not None:
        n = parts.questions
        extra = ", practice included" if parts.practice else ""
        said.append(f"You will answer at most {n} question{'' if n == 1 else 's'}{extra}.")
    if parts.practice:
        n = parts.practice
        first = "The first question is" if n == 1 else f"The first {n} questions are"
        shown = "the right answer" if parts.practice_right else "your answer again"
        after = f": you will see {shown} after {'it' if n == 1 else 'each'}" if page else ""
        said.append(f"{first} practice{after}.")
    if parts.gold:
        n = parts.gold
        said.append(f"{n} of the questions {'checks' if n == 1 else 'check'} attention: "
                    "answer each with care.")  # fmt: skip
    if said:
        out.append(Paragraph(" ".join(said)))
    return out
