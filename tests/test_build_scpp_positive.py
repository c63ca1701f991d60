"""The SugarCrepe++ second-positive stage (SugarCrepe++, §2.1, Algorithms 1 and 2, Figures 2-4)
with a deterministic rule-based fake generator: the prompts sent, the two safeguards, the
validator's regenerations and their bound, the attempts recorded, stored requests, and a recipe
run by `lexsem build`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from lexsem.cli.app import app
from lexsem.construct import runner
from lexsem.construct.runner import build
from lexsem.construct.scpp_positive import (
    IDENTICAL,
    INCONSISTENT,
    M1_ROLE_PLAY,
    M2_RULES,
    M3_DEMONSTRATIONS,
    V_VALIDATION,
    duplicated,
    full_context_prompt,
    generation_prompt,
    parse_paraphrase,
    parse_verdict,
    superfluous,
    validation_prompt,
)
from lexsem.errors import LexsemError

# What the fake generator answers to M{P1} (first, then regenerations) and to M{P1; P2}.
FIRST = {
    "A dog on a sofa.": "Paraphrased: A sofa with a dog on it.",
    "Two cats sleep.": "Paraphrased: Two cats sleep.",
    "A red bus.": (
        "Paraphrased: A red bus. Both the original and paraphrased sentences convey the same "
        "meaning and maintain logical coherence and grammatical correctness."
    ),
    "A man rides a horse.": "Paraphrased: A horse rides a man.",
    "A cat on a mat.": "Paraphrased: The mat is upside down on the cat.",
    "Sky.": "Sky.",
}
AGAIN = {
    "A red bus.": "A bus that is red.",
    "A man rides a horse.": "A man is riding a horse.",
    "A cat on a mat.": "The mat is upside down on the cat.",
    "Sky.": "Sky.",
}
FULL = {"Two cats sleep.": "A pair of cats sleep.", "Sky.": "Sky!"}


class RuleGenerator:
    """A chat model answering by rule: paraphrases looked up by P1 (the seed picks a
    regeneration's answer), and the validator's verdict "No" for a P2 with "upside" or
    "horse rides"; it records every prompt and seed it is sent."""

    name = "rules"
    concurrency = 1

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "fake", "rule": "scpp"}

    def request_body(self, request: Any, image_part: Any = None) -> dict[str, Any]:
        return {"prompt": request.turns[-1].text, **request.params}

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        prompt, seed = body["prompt"], body.get("seed")
        self.sent.append((prompt, seed))
        if prompt.startswith("Instruction: Given a pair of captions"):
            p2 = re.findall(r"caption 2: (.*) isConsistent: \[Output Here\]$", prompt)[-1]
            bad = "upside" in p2 or "horse rides" in p2
            return ("isConsistent: No, it is not." if bad else "isConsistent: Yes."), {}
        p1 = prompt.split(" Paraphrase Idea: Focus on replicating")[0].rsplit("Input: ", 1)[1]
        if "Your paraphrased sentence was:" in prompt:
            return FULL[p1], {}
        return (FIRST[p1] if seed in (None, 7) else AGAIN.get(p1, FIRST[p1])), {}


@pytest.fixture
def gen(monkeypatch: pytest.MonkeyPatch) -> RuleGenerator:
    model = RuleGenerator()
    monkeypatch.setattr(runner, "_load_generator", lambda spec: model)
    return model


def _recipe(tmp: Path, captions: list[str], settings: str = "") -> Path:
    data = tmp / "triplets.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"i{n}", "caption": c, "negative_caption": f"not {c}"}) + "\n"
            for n, c in enumerate(captions)
        )
    )
    path = tmp / "recipe.toml"
    path.write_text(
        'name = "scpp"\ngenerator = "fake:x"\nseed = 7\n[input]\npath = "triplets.jsonl"\n'
        f'[[stages]]\nuse = "scpp_second_positive"\nname = "positive"\n{settings}'
    )
    return path


def _build(recipe: Path, out: Path) -> runner.BuildResult:
    return build(recipe, out, cache_dir=out.parent / "cache", echo=lambda t: None)


def _rows(result: runner.BuildResult) -> dict[str, dict[str, Any]]:
    table = pq.read_table(result.output).to_pylist()
    return {r["caption"]: {**r, "attempts": json.loads(r["attempts"])} for r in table}


def _sent(gen: RuleGenerator, p1: str) -> list[tuple[str, Any]]:
    """The generation prompts sent for P1, with their seeds."""
    return [(p, s) for p, s in gen.sent if f"Input: {p1} Paraphrase Idea: Focus" in p]


# -- the paper's prompts ---------------------------------------------------------------------

ROLE_PLAY = (
    "Role-playing Prompt: You are an instruction-following DataGenAI. Your expertise lies in "
    "accurately interpreting and generating datasets based on given instructions. Your "
    "responses are expected to be precise and limited to the required output."
)


def test_the_generation_prompt_sent_is_figures_2_and_3_filled_in(
    tmp_path: Path, gen: RuleGenerator
) -> None:
    _build(_recipe(tmp_path, ["A dog on a sofa."]), tmp_path / "out")
    (prompt, seed), validation = gen.sent
    assert seed == 7  # the recipe's seed, sent by the runner
    role, rules, demo = prompt.split("\n")
    assert role == ROLE_PLAY
    assert rules.startswith("Rules Instruction: Given an input sentence describing an image")
    assert demo.startswith("Demonstration: For example, Input: Cat is under the table.")
    assert demo.endswith(
        "Input: A dog on a sofa. Paraphrase Idea: Focus on replicating the spatial arrangement "
        "while maintaining the original meaning of the sentence, correct grammar, same meaning. "
        "Paraphrased: [Your paraphrased sentence goes here]"
    )
    assert validation[0].startswith("Instruction: Given a pair of captions, you must check")
    assert validation[0].endswith(
        "Now the same for the below caption only. caption 1: A dog on a sofa. caption 2: "
        "A sofa with a dog on it. isConsistent: [Output Here]"
    )


def _paper() -> str | None:
    folder = os.environ.get("LEXSEM_PAPERS")  # the papers' texts (docs/testing.md)
    seeds = Path(folder) if folder else None
    for path in sorted(seeds.glob("*.txt")) if seeds and seeds.is_dir() else []:
        text = path.read_text(encoding="utf-8", errors="replace")
        if "SugarCrepe++" in text and "Role-playing Prompt" in text:
            return text
    return None


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text.replace("**", ""))


def test_the_templates_are_the_papers_text() -> None:
    """Each template (Figure 4 line by line) occurs in the paper's text, whitespace and
    markdown bold ignored; Figure 4's "isConsistent"/"newCaption" lose their margin letters in
    that text ("sConsistent", "hewCaption")."""
    paper = _paper()
    if paper is None:
        pytest.skip("the SugarCrepe++ paper text is not in $LEXSEM_PAPERS (docs/testing.md)")
    squashed = _squash(paper).replace("hewCaption", "newCaption")
    for template in (M1_ROLE_PLAY, M2_RULES, M3_DEMONSTRATIONS):
        assert _squash(template) in squashed
    for line in V_VALIDATION.split("\n"):
        assert _squash(line.replace("isConsistent", "sConsistent")) in squashed, line


# -- Algorithm 1: the safeguards -------------------------------------------------------------


def test_an_identical_output_is_regenerated_with_the_full_context_prompt(
    tmp_path: Path, gen: RuleGenerator
) -> None:
    row = _rows(_build(_recipe(tmp_path, ["Two cats sleep."]), tmp_path / "out"))["Two cats sleep."]
    (first, s1), (second, s2) = _sent(gen, "Two cats sleep.")
    assert first == generation_prompt("Two cats sleep.") and s1 == 7
    assert second == full_context_prompt("Two cats sleep.", "Two cats sleep.") and s2 == 8
    assert second.startswith(first + "\nYour paraphrased sentence was: Two cats sleep.\n")
    assert row["caption2"] == "A pair of cats sleep." and row["rejected"] is None
    steps = [(a["step"], a["outcome"]) for a in row["attempts"]]
    assert steps == [
        ("generate", "identical"),
        ("full_context", "kept"),
        ("validate", "consistent"),
    ]


def test_a_superfluous_output_is_discarded_and_regenerated(
    tmp_path: Path, gen: RuleGenerator
) -> None:
    row = _rows(_build(_recipe(tmp_path, ["A red bus."]), tmp_path / "out"))["A red bus."]
    (first, s1), (second, s2) = _sent(gen, "A red bus.")
    assert first == second == generation_prompt("A red bus.") and (s1, s2) == (7, 8)
    assert row["caption2"] == "A bus that is red."
    assert [a["outcome"] for a in row["attempts"]] == ["superfluous", "kept", "consistent"]
    assert row["attempts"][0]["overlap"] == pytest.approx(3 / 17, abs=1e-4)
    assert row["attempts"][0]["caption2"] == FIRST["A red bus."].removeprefix("Paraphrased: ")


def test_a_row_always_identical_is_rejected_after_the_generation_bound(
    tmp_path: Path, gen: RuleGenerator
) -> None:
    recipe = _recipe(tmp_path, ["Sky."], "[stages.settings]\nmax_generations = 3\n")
    row = _rows(_build(recipe, tmp_path / "out"))["Sky."]
    assert row["rejected"] == IDENTICAL and row["caption2"] is None
    assert [a["step"] for a in row["attempts"]] == ["generate", "full_context", "full_context"]
    assert [a["seed"] for a in row["attempts"]] == [None, 8, 9]
    assert row["generations"] == 3 and row["validations"] == 0


# -- Algorithm 2: the validator --------------------------------------------------------------


def test_is_consistent_no_regenerates_then_accepts(tmp_path: Path, gen: RuleGenerator) -> None:
    row = _rows(_build(_recipe(tmp_path, ["A man rides a horse."]), tmp_path / "out"))[
        "A man rides a horse."
    ]
    assert [a["outcome"] for a in row["attempts"]] == [
        "kept", "inconsistent", "kept", "consistent"
    ]  # fmt: skip
    assert row["caption2"] == "A man is riding a horse." and row["rejected"] is None
    validations = [p for p, _ in gen.sent if p.startswith("Instruction:")]
    assert validations == [
        validation_prompt("A man rides a horse.", "A horse rides a man."),
        validation_prompt("A man rides a horse.", "A man is riding a horse."),
    ]


def test_is_consistent_no_up_to_the_bound_rejects_the_row(
    tmp_path: Path, gen: RuleGenerator
) -> None:
    recipe = _recipe(tmp_path, ["A cat on a mat."], "[stages.settings]\nmax_validations = 2\n")
    res = _build(recipe, tmp_path / "out")
    row = _rows(res)["A cat on a mat."]
    assert row["rejected"] == INCONSISTENT and row["caption2"] is None
    assert [a["step"] for a in row["attempts"]] == ["generate", "validate"] * 2
    assert row["validations"] == 2 and row["generations"] == 2
    assert res.stages[0].rejected == {INCONSISTENT: 1}
    assert res.stages[0].counts["validations not consistent"] == 2


# -- stored requests and the recipe ----------------------------------------------------------

ALL = ["A dog on a sofa.", "Two cats sleep.", "A red bus.", "A man rides a horse.", "Sky."]


def test_a_rerun_sends_nothing(tmp_path: Path, gen: RuleGenerator) -> None:
    recipe = _recipe(tmp_path, ALL)
    first = _build(recipe, tmp_path / "a")
    assert first.sent == len(gen.sent) > len(ALL)
    again = _build(recipe, tmp_path / "b")  # a new folder: the stage runs, answers are stored
    assert again.sent == 0 and again.stages[0].requests["sent"] == 0
    assert pq.read_table(again.output).equals(pq.read_table(first.output))


def test_lexsem_build_runs_the_shipped_recipe_into_triplets(
    tmp_path: Path, gen: RuleGenerator
) -> None:
    """The shipped recipe written by `lexsem build init` with its input and generator, its
    seed edited, built: the triplets, then a pause at the people's validation."""
    _recipe(tmp_path, ALL)
    recipe = tmp_path / "shipped.toml"
    init = ["build", "init", "scpp_positive", "--input", str(tmp_path / "triplets.jsonl"),
            "--generator", "fake:x", "-o", str(recipe)]  # fmt: skip
    written = CliRunner().invoke(app, init)
    assert written.exit_code == 0, written.output
    text = recipe.read_text(encoding="utf-8")
    assert "PATH/TO" not in text and 'generator = "fake:x"' in text
    recipe.write_text(text.replace("seed = 0", "seed = 7"), encoding="utf-8")
    out = tmp_path / "out"
    args = ["build", str(recipe), "-o", str(out), "--cache-dir", str(tmp_path / "c")]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 3, done.output  # paused at the validation study
    assert "paused at stage 2/3 validation" in done.output and "error:" not in done.output
    assert "positive: 5 requests, 5 to send" in done.output
    table = pq.read_table(out / "stages" / "01-positive.parquet").to_pylist()
    kept = [
        (r["caption"], r["caption2"], r["negative_caption"]) for r in table if not r["rejected"]
    ]
    assert kept == [
        ("A dog on a sofa.", "A sofa with a dog on it.", "not A dog on a sofa."),
        ("Two cats sleep.", "A pair of cats sleep.", "not Two cats sleep."),
        ("A red bus.", "A bus that is red.", "not A red bus."),
        ("A man rides a horse.", "A man is riding a horse.", "not A man rides a horse."),
    ]
    assert [r["id"] for r in table] == ["i0", "i1", "i2", "i3", "i4"]
    assert {r["source"] for r in table} == {"triplets.jsonl"}
    record = json.loads((out / "build.json").read_text())
    assert record["stages"][0]["rejected"] == {IDENTICAL: 1}


# -- the rules on the paper's examples --------------------------------------------------------

# SugarCrepe++ Figure 5: (original caption, manual correction by the human validators).
CORRECTED = [
    ("A person in a green shirt is taking a picture with his cell phone.",
     "An individual wearing a green shirt is using his cell phone to take a photo."),
    ("Two small birds walking on a sidewalk next to patches of grass.",
     "Couple of little birds are strolling on a sidewalk alongside patches of grass."),
    ("The woman is enjoying playing a Wii interactive video game.",
     "The woman is playing a Wii interactive video game and she is enjoying it."),
    ("A black and white photo of a farmer standing next to horses.",
     "A monochrome photograph featuring a farmer standing alongside horses."),
    ("Two bear cubs are playing on a log.",
     "The log is positioned under two bear cubs who are playing on it."),
    ("A dog is laying with its water dish in front of it;",
     "The water dish is positioned in front of the lying dog."),
    ("A man using his laptop computer while a cat sits on his lap.",
     "A man with a cat sitting on his lap is using his laptop."),
    ("A man is drinking water from a red bottle.",
     "A man is sipping water from a bottle that is red in color."),
    ("A camera is shown viewing 3 cupcakes, one of which is being touched",
     "Three cupcakes are visible in the camera's view, with one of them being touched."),
    ("A room with a bed, a desk, and a television.",
     "The room contains a television, a bed and a desk."),
]  # fmt: skip


@pytest.mark.parametrize(("p1", "p2"), CORRECTED)
def test_the_papers_corrected_captions_pass_both_safeguards(p1: str, p2: str) -> None:
    assert not duplicated(p1, p2) and not superfluous(p2, p1, 0.25)


def test_duplicates_ignore_case_and_punctuation_only() -> None:
    same = "A person in a green shirt is taking a picture with his cell phone."
    assert duplicated(same, same.upper().rstrip("."))
    assert not duplicated(
        "Two small birds walking on a sidewalk next to patches of grass.",
        "Two small birds are walking on a sidewalk next to patches of grass.",
    )


def test_parsing_the_answers() -> None:
    assert parse_paraphrase('**Paraphrased:** "The table is above the cat."\nDone') == (
        "The table is above the cat."
    )
    assert parse_paraphrase("The table is above the cat.") == "The table is above the cat."
    # Figure 4's demonstrations: "No, ...", "Yes, ...", and one with neither.
    assert parse_verdict("isConsistent: No, you cannot speak into a skateboard.") is False
    assert parse_verdict("Yes, caption 2 is consistent as it is the same caption") is True
    assert parse_verdict("The stop cannot be below and above the sticker") is None


def test_bad_settings_and_rows_are_refused(tmp_path: Path, gen: RuleGenerator) -> None:
    with pytest.raises(LexsemError, match="min_overlap 2"):
        _build(_recipe(tmp_path, ALL, "[stages.settings]\nmin_overlap = 2\n"), tmp_path / "a")
    with pytest.raises(LexsemError, match="no column 'text'"):
        _build(_recipe(tmp_path, ALL, '[stages.settings]\ncolumn = "text"\n'), tmp_path / "b")
    assert gen.sent == []
