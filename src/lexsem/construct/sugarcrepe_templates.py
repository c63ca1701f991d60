"""SugarCrepe's hard-negative generation templates, as BiVLC used them for TROHN-Text (data).

"SugarCrepe: Fixing Hackable Benchmarks for Vision-Language Compositionality" (Hsieh et al.,
2023), §3, writes a hard negative of a caption with an LLM prompted by one template per
category (replace object / attribute / relation, swap object / attribute, add object /
attribute). "BiVLC: Extending Vision-Language Compositionality Evaluation with Text-to-Image
Retrieval" (Miranda et al., 2024), §5.1 and Appendix F, generated TROHN-Text with "the templates
provided in SugarCrepe"; the text below is the one in BiVLC's released script
(IMirandaM/BiVLC, src/Training_data/TROHN_Text/TROHN_Text_generation.py, `templates`), kept
verbatim, its indentation and its quirks included (the swap categories' own question reads
"swap attributes" for objects too); the instructions the templates share are written once
(`_numbered`, `_requirements`, `_swap_steps`). These are prompts, facts of the method, and
lexsem's data.

Each template is a three-turn conversation: the user's instructions ending with a worked
input (`demonstration`), the assistant's worked answer (`answer`), then the caption asked
about, in the user turn `ask` (``{caption}`` filled in). The answer gives the negative after
`marker` (``New sentence: `` or, for the swaps, after a leading ``Yes``, ``Output: ``).
`lexsem.construct.sugarcrepe_negatives` renders and parses them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CATEGORIES", "REFERENCE_NAMES", "TEMPLATES", "Template"]

# The categories, in the order of BiVLC's script (its output files are concatenated in it).
CATEGORIES = (
    "replace_obj",
    "replace_att",
    "replace_rel",
    "swap_obj",
    "swap_att",
    "add_obj",
    "add_att",
)
# The script's names of the categories (its `templates` keys, `--type` values and file names).
REFERENCE_NAMES = {c: c.upper() for c in CATEGORIES}

NEW_SENTENCE = "New sentence: "
OUTPUT = "Output: "
ASK_ORIGINAL = "Original sentence: {caption}"
ASK_SWAP = (
    " Input: {caption} Is it possible to swap attributes in the input sentence to generate a "
    "new sentence that is different from the input sentence and makes logical sense?"
)


@dataclass(frozen=True)
class Template:
    """One category's conversation: the user's `demonstration`, the assistant's `answer`, the
    user turn `ask` with the caption; the negative follows `marker` in a model's answer, which
    must start with "Yes" where `needs_yes`."""

    demonstration: str
    answer: str
    ask: str = ASK_ORIGINAL
    marker: str = NEW_SENTENCE
    needs_yes: bool = False


_SWAP = {"ask": ASK_SWAP, "marker": OUTPUT, "needs_yes": True}

# The script's prompts indent a line by 24 spaces and a numbered step by 28.
_LINE, _STEP = " " * 24, " " * 28
# the first of the three requirements: of the replace, the swap and the add categories
_AS_DIFFERENT = (
    "The new sentence must be describing a scene that is as different as possible from the "
    "original scene."
)
_DIFFERENT = "The new sentence must be describing a different scene from the input sentence."
_NEW_SCENE = "The new sentence must describe a clearly new and different scene."


def _numbered(*steps: str) -> str:
    """Numbered steps, one a line, as the script indents them."""
    return "".join(f"{_STEP}{i}. {step}\n" for i, step in enumerate(steps, 1))


def _requirements(first: str) -> str:
    """The three requirements every template states (the first is the category's)."""
    return f"{_LINE}The new sentence must meet the following three requirements:\n" + _numbered(
        first,
        "The new sentence must be fluent and grammatically correct.",
        "The new sentence must make logical sense.",
    )


def _swap_steps(what: str) -> str:
    """How the swap templates ask to answer: whether a swap is possible, which `what`, the swap."""
    return f"{_LINE}To complete the task, you should:\n" + _numbered(
        "Answer the question of whether generating such a new sentence is possible using Yes or "
        "No.",
        f"Output the swappable {what}.",
        "Swap them to make a new sentence.",
    )


TEMPLATES: dict[str, Template] = {
    "replace_obj": Template(
        demonstration=(
            "Given an input sentence describing a scene, your task is to:\n"
            + _numbered(
                "Locate the noun words in the sentence.",
                "Randomly pick one noun word.",
                "Replace the selected noun word with a new noun word to make a new sentence.",
            )
            + _requirements(_AS_DIFFERENT)
            + "                        Here are some examples:\n"
            "                        Original sentence: A man is in a kitchen making pizzas.\n"
            '                        Nouns: ["man", "kitchen", "pizzas"]\n'
            "                        Selected noun: man\n"
            "                        New noun: woman\n"
            "                        New sentence: A woman is in a kitchen making pizzas.\n"
            "\n"
            "                        Original sentence: a woman seated on wall and birds "
            "besides her"
        ),
        answer=(
            "Nouns: ['woman', 'wall', 'birds']\n"
            "                            Selected noun: wall\n"
            "                            New noun: bench\n"
            "                            New sentence: A woman seated on a bench and birds "
            "besides her.\n"
        ),
    ),
    "replace_att": Template(
        demonstration=(
            "Given an input sentence describing a scene, your task is to:\n"
            + _numbered(
                "Locate the adjective words describing objects in the sentence. If there are no "
                "adjective words, return an empty list.",
                "Randomly pick one adjective word.",
                "Replace the selected adjective word with a new adjective word to make a new "
                "sentence.",
            )
            + _requirements(_AS_DIFFERENT)
            + "                        Here are some examples:\n"
            "                        Original sentence: a blue bike parked on a side walk.\n"
            '                        Adjectives: ["blue"]\n'
            "                        Selected adjective: blue\n"
            "                        New adjective: red\n"
            "                        New sentence: a red bike parked on a side walk.\n"
            "                        Original sentence: The kitchen is clean and ready for us "
            "to see."
        ),
        answer=(
            'Adjectives: ["clean", "ready"]\n'
            "                            Selected adjective: clean\n"
            "                            New adjective: dirty\n"
            "                            New sentence: The kitchen is dirty and ready for us to "
            "see.\n"
        ),
    ),
    "replace_rel": Template(
        demonstration=(
            "Given an input sentence describing a scene, your task is to:\n"
            + _numbered(
                "Find any action or spatial relationships between two objects in the sentence. "
                "If there are no such relationships, return an empty list.",
                "Randomly pick one relationship.",
                "Replace the selected relationship with a new relationship to make a new sentence.",
            )
            + _requirements(_AS_DIFFERENT)
            + "                        Here are some examples:\n"
            "                        Original sentence: The dining table near the kitchen has a "
            "bowl of fruit on it.\n"
            '                        Relationships: ["near", "on"]\n'
            "                        Selected relationship: near\n"
            "                        New relationship: far from\n"
            "                        New sentence: The dining table far from the kitchen has a "
            "bowl of fruit on it.\n"
            "                        Original sentence: A couple of buckets in a white room."
        ),
        answer=(
            "Relationships: ['in']\n"
            "                        Selected relationship: in\n"
            "                        New relationship: outside\n"
            "                        New sentence: A couple of buckets outside a white room.\n"
        ),
    ),
    "swap_obj": Template(
        **_SWAP,
        demonstration=(
            "Given an input sentence describing a scene, your task is to first locate two "
            "swappable noun phrases in the sentence, and then swap them to make a new "
            "sentence.\n"
            + _requirements(_DIFFERENT)
            + _swap_steps("noun phrases")
            + "                        Here are some examples:\n"
            "                        Input: A cat resting on a laptop next to a person.\n"
            "                        Is it possible to swap noun phrases in the input sentence "
            "to generate a new sentence that is different from the input sentence and makes "
            "logical sense? \n"
            "                        Yes\n"
            "                        Swappable noun phrases: laptop, person\n"
            "                        Output: A cat resting on a person next to a laptop.\n"
            "                        Input: A plate of donuts with a person in the background.\n"
            "                        Is it possible to swap noun phrases in the input sentence "
            "to generate a new sentence that is different from the input sentence and makes "
            "logical sense?"
        ),
        answer=(
            "Yes\n"
            "                        Swappable noun phrases: a plate of donuts, a person\n"
            "                        Output: A person with a plate of donuts in the "
            "background.\n"
        ),
    ),
    "swap_att": Template(
        **_SWAP,
        demonstration=(
            "Given an input sentence describing a scene, your task is to first locate two "
            "swappable adjectives in the sentence describing different objects, and then swap "
            "them to make a new sentence.\n"
            + _requirements(_DIFFERENT)
            + _swap_steps("adjectives")
            + "                        Here are some examples:\n"
            "                        Input: A girl in a pink shirt holding a blue umbrella.\n"
            "                        Is it possible to swap attributes in the input sentence to "
            "generate a new sentence that is different from the input sentence and makes "
            "logical sense? \n"
            "                        Yes\n"
            "                        Swappable attributes: pink, blue\n"
            "                        Output: A girl in a blue shirt holding a pink umbrella.\n"
            "                        Input: A girl with a green shirt brushing her teeth with a "
            "blue toothbrush.\n"
            "                        Is it possible to swap attributes in the input sentence to "
            "generate a new sentence that is different from the input sentence and makes "
            "logical sense?"
        ),
        answer=(
            "Yes\n"
            "                        Swappable attributes: green, blue\n"
            "                        Output: A girl with a blue shirt brushing her teeth with a "
            "green toothbrush.\n"
        ),
    ),
    "add_obj": Template(
        demonstration=(
            "Given an input sentence describing a scene, your task is:\n"
            + _numbered(
                "Find the objects in the sentence.",
                "Randomly pick one object.",
                "Generate a new object that's not in the sentence.",
                "Add the new object next to the selected object to make a new sentence.",
            )
            + _requirements(_NEW_SCENE)
            + "                        Here are some examples:\n"
            "                        Original sentence: An elephant standing under the shade of "
            "a tree.\n"
            '                        Objects: ["elephant", "shade of a tree"]\n'
            "                        Selected object: elephant\n"
            "                        New object: squirrel\n"
            "                        New sentence: An elephant and a squirrel standing under "
            "the shade of a tree.\n"
            "                        Original sentence: A bench at the beach next to the sea"
        ),
        answer=(
            "Objects: ['bench', 'beach', 'sea']\n"
            "                        Selected object: bench\n"
            "                        New object: umbrella\n"
            "                        New sentence: An umbrella and a bench at the beach next to "
            "the sea.\n"
        ),
    ),
    "add_att": Template(
        demonstration=(
            "Given an input sentence describing a scene, your task is:\n"
            + _numbered(
                "Find the objects in the sentence.",
                "Randomly pick one object.",
                "Generate a new plausible but uncommon attribute for this object that's not in "
                "the sentence.",
                "Add the new attribute next to the selected object to make a new sentence.",
            )
            + _requirements(_NEW_SCENE)
            + "                        Here are some examples:\n"
            "                        Original sentence: A large white airplane and a person on "
            "a lot.\n"
            '                        Objects: ["airplane", "person"]\n'
            "                        Selected object: airplane\n"
            "                        New attribute: blue\n"
            "                        New sentence: A large white and blue airplane and a person "
            "on a lot.\n"
            "                        Original sentence: three people riding horses on a beach \n"
            "                        "
        ),
        answer=(
            "Objects: ['three people', 'horses', 'beach']\n"
            "                        Selected object: three people\n"
            "                        New attribute: elderly\n"
            "                        New sentence: Three elderly people riding horses on a "
            "beach.\n"
        ),
    ),
}
