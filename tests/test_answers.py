"""The multiple-choice answer parser on realistic free-form answers: each row is an answer as a
model writes it and what it names, decided by hand from the rules in `lexsem.tasks.answers`."""

from __future__ import annotations

import pytest

from lexsem.tasks.answers import parse_answer

OPTIONS = [
    "A man rides a brown horse on the beach.",
    "On the beach, a man is riding a horse that is brown.",
    "A horse rides a brown man on the beach.",
]

# (answer, kind, option)
TABLE: list[tuple[str, str, int | None]] = [
    # plain markers
    ("(1)", "option", 1),
    ("(3)", "option", 3),
    ("3", "option", 3),
    ("2.", "option", 2),
    ("2)", "option", 2),
    ("( 2 )", "option", 2),
    ("(b)", "option", 2),
    ("c)", "option", 3),
    ("(C)", "option", 3),
    ("(3).", "option", 3),
    ("(3) A horse rides a brown man on the beach.", "option", 3),
    ("(3) - the roles of the man and the horse are swapped.", "option", 3),
    ("3: the third caption", "option", 3),
    # prefixes, case, markdown
    ("Answer: (3)", "option", 3),
    ("answer: 3", "option", 3),
    ("The answer is (3).", "option", 3),
    ("Final answer: (1)", "option", 1),
    ("Output: (2)", "option", 2),
    ("Option 3", "option", 3),
    ("Caption (3)", "option", 3),
    ("**(3)**", "option", 3),
    ("**Caption 3** does not match the image.", "option", 3),
    ("`(2)`", "option", 2),
    ("## (1)\nThe first caption is wrong.", "option", 1),
    ("  \n(3)\n", "option", 3),
    # markers later in the answer
    ("The caption that does not match the image is (3).", "option", 3),
    ("Looking at the image, caption 3 is incorrect.", "option", 3),
    ("I think it's option #2.", "option", 2),
    ("The mismatched one: (c)", "option", 3),
    ("Sorry for the confusion, the answer is (2).", "option", 2),
    # none
    ("none", "none", None),
    ("None.", "none", None),
    ("NONE", "none", None),
    ("Neither (1) nor (2).", "none", None),
    ("Neither caption matches the image.", "none", None),
    ("None of the captions fail to correspond with the image.", "none", None),
    ("All three captions match the image.", "none", None),
    ("All of them match.", "none", None),
    ("They all correspond to the image.", "none", None),
    ("There is no caption that does not match.", "none", None),
    # several options named, none first
    ("Both (1) and (3) could be wrong.", "multiple", None),
    ("(1) and (2) match the image, while (3) does not.", "multiple", None),  # never a guess
    ("(3). Captions (1) and (2) describe the image correctly.", "multiple", None),
    ("2, 3", "multiple", None),
    ("2 or 3", "multiple", None),
    ("1) a dog 2) a cat", "multiple", None),
    ("The image shows a horse, so (2) is correct; none of the other captions fit.", "option", 2),
    ("Captions (2) and (3) do not match.", "multiple", None),
    ("It is either option 1 or option 3.", "multiple", None),
    # quoted option text, no marker
    ("A horse rides a brown man on the beach", "option", 3),
    ('"a horse rides a brown man on the beach."', "option", 3),
    (
        "The caption 'A man rides a brown horse on the beach' fits, but 'A horse rides a brown "
        "man on the beach' does not.",
        "multiple",
        None,
    ),
    # refusals
    ("I'm sorry, but I can't help with that.", "refusal", None),
    ("I cannot determine which caption does not match without seeing the image.", "refusal", None),
    ("As an AI, I am unable to view images.", "refusal", None),
    ("I am unable to see the image.", "refusal", None),
    # nothing readable
    ("", "unparseable", None),
    ("   ", "unparseable", None),
    ("The image shows a man and a horse.", "unparseable", None),
    ("A man is on a beach with a horse.", "unparseable", None),  # no option quoted, no marker
    ("(4)", "unparseable", None),  # no such option
    ("2 men ride horses.", "unparseable", None),  # a number starting a sentence is no marker
    ("A", "unparseable", None),  # a bare letter is no marker
    ("yes", "unparseable", None),
]


@pytest.mark.parametrize(("answer", "kind", "option"), TABLE)
def test_realistic_answers(answer: str, kind: str, option: int | None) -> None:
    got = parse_answer(answer, OPTIONS)
    assert (got.kind, got.option) == (kind, option), got


def test_rules_are_reported_and_the_count_form_reads_markers_only() -> None:
    assert parse_answer("(2)", 3).rule == "leading"
    assert parse_answer("it is (2)", 3).rule == "markers"
    assert parse_answer(OPTIONS[2], OPTIONS).rule == "quoted"
    assert parse_answer(OPTIONS[2], 3).kind == "unparseable"  # no texts given: nothing quoted
    assert parse_answer(None, 2).kind == "unparseable"
    # two options (SugarCrepe GPT-4V: "Output (1) or (2).")
    assert parse_answer("(3)", 2).kind == "unparseable"
    assert (parse_answer("(2)", 2).kind, parse_answer("(2)", 2).option) == ("option", 2)


def test_an_option_inside_another_option_is_not_quoted_on_its_own() -> None:
    """SugarCrepe add_* negatives often extend the positive: `a dog` / `a dog on a bed`."""
    options = ["a dog", "a dog on a bed", "a cat"]
    got = parse_answer("A dog on a bed.", options)
    assert (got.kind, got.option, got.rule) == ("option", 2, "quoted")
    assert parse_answer("a dog", options).option == 1
    assert parse_answer("a dog on a bed, or a cat", options).kind == "multiple"


def test_the_parser_is_deterministic() -> None:
    for answer, _, _ in TABLE:
        assert parse_answer(answer, OPTIONS) == parse_answer(answer, OPTIONS)
