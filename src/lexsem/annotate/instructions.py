"""The words annotators read: each task kind's question and instructions, taken from the papers
where they publish them, and the default consent text. A study may replace the instructions
and the consent text with its own files (`lexsem annotate create --instructions/--consent`).
`KIND_QUESTIONS` / `KIND_INSTRUCTIONS` are the built-in kinds' words; `QUESTIONS` /
`INSTRUCTIONS` those of every registered kind (`lexsem.annotate.kinds.KINDS`).

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

from collections.abc import Mapping

from lexsem.annotate.kinds import KindField
from lexsem.construct.human import INSTRUCTIONS as BIVLC_STEPS

__all__ = ["CONSENT", "INSTRUCTIONS", "KIND_INSTRUCTIONS", "KIND_QUESTIONS", "QUESTIONS"]

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
