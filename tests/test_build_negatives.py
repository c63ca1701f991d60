"""SugarCrepe-style hard negatives (`sugarcrepe_negatives`, `template_filter`) with a
deterministic rule-based fake generator: the conversations sent against the templates of
BiVLC's TROHN-Text script rendered here on their own, the parsing of its answer format and its
failures, each filter reason, and the whole recipe end to end (people's check in a validation
study the build pauses for, blind scores from tiny random Vera and CoLA models, refinement,
freeze) run by `lexsem eval -b build:DIR` and passed by `lexsem validate`."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from PIL import Image
from typer.testing import CliRunner

from builders.answers_table import answer, table
from builders.local_http import send_json, serve_posts
from builders.references import BIVLC, checkout, reference_file
from builders.tiny_text_scorers import write_tiny_cola, write_tiny_vera
from lexsem.cli.app import app
from lexsem.construct import runner
from lexsem.construct.recipe import with_input_path
from lexsem.construct.runner import build
from lexsem.construct.stage import HumanStepPending, StageContext, accepted, row_ids
from lexsem.construct.sugarcrepe_negatives import (
    EMPTY,
    NO_MARKER,
    NOT_YES,
    parse_negative,
    sugarcrepe_negatives,
)
from lexsem.construct.template_filter import ADD, REPLACE, SAME, SWAP_WORDS, template_filter
from lexsem.errors import DataError, LexsemError

SCRIPT = "src/Training_data/TROHN_Text/TROHN_Text_generation.py"
ORDER = ("REPLACE_OBJ", "REPLACE_ATT", "REPLACE_REL", "SWAP_OBJ", "SWAP_ATT", "ADD_OBJ", "ADD_ATT")

# sha256 of each template's two turns (user text, "\x00", assistant text) as read from the
# `templates` dict of BiVLC's script at its HEAD, so the check holds without a checkout.
TEMPLATE_SHA256 = {
    "REPLACE_OBJ": "f6219135c48e4e58966eda59f355b3992963736d8adfcae591ee8d7c1bcd2b8a",
    "REPLACE_ATT": "3b7b15386a98a325b2a21863ebba6807fa29533d7a5b468aab5b21b9d3863453",
    "REPLACE_REL": "46da16fc49330f1cc3f88f59883c1bec5054b1a3902f3cdbb1029dd93f87eb03",
    "SWAP_OBJ": "3300dab99a0242004050757bc3d3cb0195b7163ea526f84ad17043c7f13629b6",
    "SWAP_ATT": "8d5d4e6956471a042a4a8c735f27aeca7d94935c8a5946f67c172425af2806e6",
    "ADD_OBJ": "bef574c5a82affbe5c57a0ba3e3d734f39b6ec34bdffe1eef2e53cb137c648ad",
    "ADD_ATT": "703805c1bb9acff7bba022fcf4da56ff18b4565d15c5ff2ddf7d4a4ccf46392a",
}


def _reference_templates() -> dict[str, list[dict[str, str]]]:
    """The `templates` dict literal of BiVLC's script, read with `ast` from its source in a
    checkout (`builders.references`); without one (CI), lexsem's templates in that form, each
    checked first against the script's digest (`TEMPLATE_SHA256`), so that the conversations
    and the parsing below are checked against the script's procedure, transcribed here, in CI."""
    return _pinned_templates() if checkout(BIVLC) is None else _script_templates()


def _script_templates() -> dict[str, list[dict[str, str]]]:
    """The `templates` dict of BiVLC's script itself (skips without a checkout)."""
    source = reference_file(BIVLC, SCRIPT)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "templates" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise AssertionError("no `templates` in BiVLC's script")


def _pinned_templates() -> dict[str, list[dict[str, str]]]:
    from lexsem.construct.sugarcrepe_templates import TEMPLATES

    out = {}
    for subtype in ORDER:
        t = TEMPLATES[subtype.lower()]
        text = f"{t.demonstration}\x00{t.answer}".encode()
        assert hashlib.sha256(text).hexdigest() == TEMPLATE_SHA256[subtype], subtype
        out[subtype] = [{"role": "user", "content": t.demonstration},
                        {"role": "assistant", "content": t.answer}]  # fmt: skip
    return out


def _reference_messages(
    templates: dict[str, list[dict[str, str]]], subtype: str, caption: str
) -> list[dict[str, str]]:
    """The script's messages for one caption: its caption cleaning (strip, line breaks made
    spaces), the template's turns, and its last user turn."""
    caption = caption.strip().replace("\n", " ")
    messages = list(templates[subtype])
    if subtype in ("SWAP_OBJ", "SWAP_ATT"):
        question = (
            "Is it possible to swap attributes in the input sentence to generate a new "
            "sentence that is different from the input sentence and makes logical sense?"
        )
        messages.append({"role": "user", "content": f" Input: {caption} {question}"})
    else:
        messages.append({"role": "user", "content": f"Original sentence: {caption}"})
    return messages


def _reference_parse(subtype: str, generated: str) -> str | None:
    """The script's parsing of its decoded text (prompt and answer in OpenChat's format:
    "GPT4 Correct User: ...<|end_of_turn|>GPT4 Correct Assistant: ..."), None for 'No'."""
    if subtype in ("SWAP_OBJ", "SWAP_ATT"):
        after = generated.split("Correct Assistant:", 2)[2]
        if (after[:4] == " Yes" or after[:3] == "Yes") and len(generated.split("Output: ", 3)) == 4:
            negative = generated.split("Output: ", 3)[3]
        else:
            return None
    elif len(generated.split("New sentence: ", 3)) == 4:
        negative = generated.split("New sentence: ", 3)[3]
    else:
        return None
    return None if negative == "No" else negative.split("\n")[0]


def _openchat(messages: list[dict[str, str]], answer: str) -> str:
    """The decoded text the script parses: OpenChat 3.5's chat format, then the answer."""
    text = "".join(
        f"GPT4 Correct {'User' if m['role'] == 'user' else 'Assistant'}: {m['content']}"
        "<|end_of_turn|>"
        for m in messages
    )
    return f"<s>{text}GPT4 Correct Assistant:{answer}"


# -- the fake generator -------------------------------------------------------------------------

NOUNS = {"man": "dog", "horse": "box", "ball": "box", "dog": "man", "cat": "horse", "box": "ball"}
ADJECTIVES = {"red": "blue", "blue": "red", "small": "large", "large": "small", "green": "red"}
RELATIONS = {"rides": "carries", "chases": "is chased by", "on": "by", "carries": "rides"}

CAPTIONS = [
    "A man rides a horse.",
    "A red ball on a blue box",  # no final mark: the caption is asked as it is
    "A small dog chases a cat.",
    "  green apples lie\non the table  ",  # stripped, its line break a space
]


def _words(caption: str) -> list[str]:
    return caption.strip().rstrip(".").split()


def _sentence(words: list[str]) -> str:
    text = " ".join(words)
    return text[:1].upper() + text[1:] + "."


def _replace(words: list[str], table: dict[str, str]) -> tuple[str | None, str | None, str]:
    for i, w in enumerate(words):
        if w.lower() in table:
            new = table[w.lower()]
            return w, new, _sentence([*words[:i], new, *words[i + 1 :]])
    return None, None, ""


def rule_answer(category: str, caption: str) -> str:
    """The fake generator's answer, in the template's format (indented as the templates'
    worked answers are). Special cases exercise each failure and filter reason."""
    words = _words(caption)
    if category in ("replace_obj", "replace_att", "replace_rel"):
        table = {"replace_obj": NOUNS, "replace_att": ADJECTIVES, "replace_rel": RELATIONS}
        old, new, sentence = _replace(words, table[category])
        if old is None:  # no adjective: an empty list and no sentence, as the template allows
            return "Adjectives: []\n        Selected adjective: None\n"
        if category == "replace_rel" and "chases" in words:
            sentence = "A small dog chases a cat in the garden."  # an insertion, not a replacement
        return f"Selected: {old}\n        New: {new}\n        New sentence: {sentence}\n"
    if category in ("swap_obj", "swap_att"):
        pool = NOUNS if category == "swap_obj" else ADJECTIVES
        found = [i for i, w in enumerate(words) if w.lower() in pool]
        if len(found) < 2:
            return "No\n        It is not possible to swap them."
        i, j = found[0], found[-1]
        swapped = list(words)
        swapped[i], swapped[j] = words[j], words[i]
        sentence = _sentence(swapped)
        if "dog" in words and category == "swap_obj":
            sentence = "A small cat chases the dogs."  # the words change
        return (
            f"Yes\n        Swappable: {words[i]}, {words[j]}\n        Output: {sentence}\n"
            "        Output: a second output is ignored\n"
        )
    if category == "add_obj":
        i = next(i for i, w in enumerate(words) if w.lower() in NOUNS or w == "apples")
        if "apples" in words:
            return "Objects: ['apples', 'table']\n        New sentence: \n"  # empty
        if "man" in words:
            added = [*words[: i + 1], "and", "a", "dog", *words[i + 1 :], "and", "a", "cat"]
            return f"New object: dog\n        New sentence: {_sentence(added)}\n"  # two places
        added = [*words[: i + 1], "and", "a", "man", *words[i + 1 :]]
        return f"New object: man\n        New sentence: {_sentence(added)}\nMore text."
    # add_att
    if "red" in words:
        return f"New attribute: none\n        New sentence: the {_sentence(words)}\n"  # same words
    i = next(i for i, w in enumerate(words) if w.lower() in NOUNS or w == "apples")
    added = _sentence([*words[:i], "large", *words[i:]])
    return f"New attribute: large\n        New sentence: {added}"


class NegativesGenerator:
    """A chat model answering by `rule_answer`, reading the category from the conversation;
    it records every conversation it is sent."""

    name = "rules"
    concurrency = 1

    def __init__(self) -> None:
        self.sent: list[list[dict[str, str]]] = []
        self.params: list[dict[str, Any]] = []

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "fake", "rule": "sugarcrepe-negatives"}

    def request_body(self, request: Any, image_part: Any = None) -> dict[str, Any]:
        turns = [{"role": t.role, "content": t.text} for t in request.turns]
        return {"messages": turns, **request.params}

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        messages = body["messages"]
        self.sent.append(messages)
        self.params.append({k: v for k, v in body.items() if k != "messages"})
        category = _category(messages[0]["content"], messages[1]["content"])
        last = messages[-1]["content"]
        if last.startswith(" Input: "):
            caption = last[len(" Input: ") : last.index(" Is it possible")]
        else:
            caption = last[len("Original sentence: ") :]
        return rule_answer(category, caption), {}


def _category(user: str, assistant: str) -> str:
    """The category whose template opens the conversation (by its worked answer's first
    line)."""
    heads = {
        "Nouns:": "replace_obj", "Adjectives:": "replace_att", "Relationships:": "replace_rel",
        "Swappable noun phrases": "swap_obj", "Swappable attributes": "swap_att",
        "New attribute:": "add_att", "New object:": "add_obj",
    }  # fmt: skip
    for head, category in heads.items():
        if head in assistant:
            return category
    raise AssertionError(f"no template recognised in {user[:60]!r}")


class ListCtx(StageContext):
    """A StageContext whose `ask` answers through a fake generator, without a store."""

    def __init__(self, model: NegativesGenerator) -> None:
        super().__init__(out=Path("."), stage="sugarcrepe_negatives")
        self.model = model

    def ask(self, prompts: Any, **params: Any) -> list[str]:
        return [self.model.send(None, self.model.request_body(p))[0] for p in prompts]


def _rows(captions: list[str]) -> pa.Table:
    return pa.table(
        {
            "source": ["captions.jsonl"] * len(captions),
            "source_id": [str(i) for i in range(len(captions))],
            "caption": captions,
        }
    )


@pytest.fixture
def gen(monkeypatch: pytest.MonkeyPatch) -> NegativesGenerator:
    model = NegativesGenerator()
    monkeypatch.setattr(runner, "_load_generator", lambda spec: model)
    return model


# -- prompts ------------------------------------------------------------------------------------


def test_conversations_sent_are_the_reference_templates_rendered() -> None:
    templates = _reference_templates()
    assert list(templates) == list(ORDER)
    model = NegativesGenerator()
    sugarcrepe_negatives(_rows(CAPTIONS), ListCtx(model))
    expected = [
        _reference_messages(templates, subtype, caption)
        for subtype in ORDER
        for caption in CAPTIONS
    ]
    assert model.sent == expected


def test_template_text_is_pinned_without_a_checkout() -> None:
    from lexsem.construct.sugarcrepe_templates import TEMPLATES

    for subtype, digest in TEMPLATE_SHA256.items():
        t = TEMPLATES[subtype.lower()]
        text = f"{t.demonstration}\x00{t.answer}".encode()
        assert hashlib.sha256(text).hexdigest() == digest, subtype


def test_template_digests_are_the_reference_scripts() -> None:
    templates = _script_templates()
    for subtype in ORDER:
        user, assistant = templates[subtype]
        text = f"{user['content']}\x00{assistant['content']}".encode()
        assert TEMPLATE_SHA256[subtype] == hashlib.sha256(text).hexdigest(), subtype


# -- parsing ------------------------------------------------------------------------------------

PARSE_CASES = [
    ("replace_obj", "Nouns: ['man']\nNew sentence: A dog rides.\nMore", "A dog rides."),
    ("replace_rel", "New sentence: A on B.\nNew sentence: C.", "A on B."),
    ("add_att", "New sentence: A large dog.", "A large dog."),
    ("add_obj", "Objects: []\nNew object: none", None),
    ("add_obj", "New sentence:A dog.", None),  # the marker has its space
    ("replace_att", "New sentence: \nA red dog.", None),  # empty line
    ("swap_obj", "Yes\nSwappable noun phrases: a, b\nOutput: B and a.\n", "B and a."),
    ("swap_att", " Yes\nOutput: x y z.", "x y z."),
    ("swap_att", "No\nOutput: x y z.", None),
    ("swap_obj", "yes\nOutput: x y z.", None),  # the script's check is case-sensitive
    ("swap_obj", "Yes, but no output.", None),
    ("swap_obj", "  Yes\nOutput: x y z.", None),  # two spaces: the script's check fails
    ("swap_att", "\nYes\nOutput: x y z.", None),  # a line break is not the one space
    ("add_att", "New sentence: A large dog. \nMore", "A large dog. "),  # kept as generated
    ("replace_obj", "New sentence:  A cat.", " A cat."),
]  # fmt: skip


@pytest.mark.parametrize(("category", "answer", "negative"), PARSE_CASES)
def test_parsing_agrees_with_the_reference_script(
    category: str, answer: str, negative: str | None
) -> None:
    templates = _reference_templates()
    subtype = category.upper()
    decoded = _openchat(_reference_messages(templates, subtype, "A caption."), answer)
    got, reason = parse_negative(category, answer)
    assert got == negative
    ref = _reference_parse(subtype, decoded)
    assert (ref or None if ref is not None else None) == negative
    assert (reason is None) == (negative is not None)


def test_parse_reasons() -> None:
    assert parse_negative("swap_obj", "No.")[1] == NOT_YES
    assert parse_negative("swap_obj", "Yes.")[1] == NO_MARKER.format(marker="Output: ")
    assert parse_negative("add_att", "Sure!")[1] == NO_MARKER.format(marker="New sentence: ")
    assert parse_negative("add_att", "New sentence:   \n")[1] == EMPTY
    assert parse_negative("add_att", "New sentence:  A dog. ", strip=True) == ("A dog.", None)
    assert parse_negative("swap_obj", "  Yes\nOutput: x.")[1] == NOT_YES


def test_reference_parsing_is_shifted_by_a_caption_holding_the_marker() -> None:
    """The script counts markers in the whole decoded text: a caption with one moves its cut
    (docs/fidelity.md); lexsem reads the answer alone."""
    templates = _reference_templates()
    caption = "A sign reads New sentence: stop here."
    answer = "New sentence: A sign reads go here.\n"
    decoded = _openchat(_reference_messages(templates, "REPLACE_OBJ", caption), answer)
    assert _reference_parse("REPLACE_OBJ", decoded).startswith("stop here.<|end_of_turn|>")
    assert parse_negative("replace_obj", answer) == ("A sign reads go here.", None)


# -- the stages ---------------------------------------------------------------------------------


def test_rows_reasons_and_filter() -> None:
    out = template_filter(sugarcrepe_negatives(_rows(CAPTIONS), ListCtx(NegativesGenerator())))
    got = {
        (r["category"], r["source_id"]): (r["negative_caption"], r["rejected"])
        for r in out.to_pylist()
    }
    assert out.num_rows == 7 * len(CAPTIONS)
    assert [r["category"] for r in out.to_pylist()][:: len(CAPTIONS)] == [s.lower() for s in ORDER]
    assert out["caption"].to_pylist()[3] == "green apples lie on the table"
    assert got[("replace_obj", "0")] == ("A dog rides a horse.", None)
    assert got[("replace_att", "0")] == (None, NO_MARKER.format(marker="New sentence: "))
    assert got[("replace_att", "1")] == ("A blue ball on a blue box.", None)
    assert got[("replace_rel", "2")] == ("A small dog chases a cat in the garden.", REPLACE)
    assert got[("replace_rel", "0")] == ("A man carries a horse.", None)
    assert got[("swap_obj", "0")] == ("A horse rides a man.", None)
    assert got[("swap_obj", "2")] == ("A small cat chases the dogs.", SWAP_WORDS)
    assert got[("swap_obj", "3")] == (None, NOT_YES)
    assert got[("swap_att", "1")] == ("A blue ball on a red box.", None)
    assert got[("add_obj", "0")][1] == ADD
    assert got[("add_obj", "2")] == ("A small dog and a man chases a cat.", None)
    assert got[("add_obj", "3")] == (None, EMPTY)
    assert got[("add_att", "1")] == ("the A red ball on a blue box.", SAME)
    assert got[("add_att", "0")] == ("A large man rides a horse.", None)
    raw = out.filter(pc.equal(out["category"], "add_obj"))["answer"].to_pylist()
    assert raw[2] == rule_answer("add_obj", CAPTIONS[2])


@pytest.mark.parametrize(
    ("category", "positive", "negative", "reason"),
    [
        ("swap_obj", "A cat on a dog.", "The dog on a cat.", None),
        ("swap_att", "a red ball and a blue box", "a blue ball and a red box", None),
        ("swap_att", "a red ball and a blue box", "a blue ball and a red boxes", SWAP_WORDS),
        ("swap_obj", "A cat on a dog.", "a cat on the dog", SAME),
        ("add_obj", "A woman seated on wall", "A woman and a dog seated on wall", None),
        ("add_att", "an elephant", "a large elephant", None),
        ("add_att", "a dog", "a dog", SAME),
        ("add_att", "a dog on a sofa", "a dog by a red sofa", ADD),
        ("add_obj", "a dog on a sofa", "a dog on sofa bed", None),
        ("replace_obj", "a woman seated on wall", "A woman seated on a bench.", None),
        ("replace_rel", "the table near the kitchen", "the table far from the kitchen", None),
        ("replace_att", "a red bike on a wide road", "a blue bike on a narrow road", REPLACE),
        ("replace_obj", "a man in a kitchen", "a man in a big kitchen", REPLACE),
    ],
)
def test_template_filter_reasons(
    category: str, positive: str, negative: str, reason: str | None
) -> None:
    rows = pa.table(
        {"source": ["t"], "source_id": ["0"], "caption": [positive],
         "negative_caption": [negative], "category": [category]}
    )  # fmt: skip
    assert template_filter(rows)["rejected"].to_pylist() == [reason]


def test_rejected_rows_pass_through_once() -> None:
    rows = _rows(CAPTIONS[:2]).append_column("rejected", pa.array([None, "earlier"], pa.string()))
    out = sugarcrepe_negatives(rows, ListCtx(NegativesGenerator()), categories=["add_att"])
    assert out["rejected"].to_pylist()[0] == "earlier"
    assert out["category"].to_pylist() == [None, "add_att"]
    assert out.num_rows == 2


def test_bad_settings_are_named() -> None:
    with pytest.raises(LexsemError, match="categories are some of"):
        sugarcrepe_negatives(_rows(CAPTIONS), ListCtx(NegativesGenerator()), categories=["x"])
    with pytest.raises(DataError, match="no caption column 'text'"):
        sugarcrepe_negatives(_rows(CAPTIONS), ListCtx(NegativesGenerator()), column="text")
    with pytest.raises(DataError, match="item 1: sugarcrepe_negatives: no caption text"):
        sugarcrepe_negatives(_rows(["a dog", " "]), ListCtx(NegativesGenerator()))


# -- the recipe end to end ----------------------------------------------------------------------

RECIPES = Path(__file__).parents[1] / "src" / "lexsem" / "construct" / "recipes"
RECIPE = RECIPES / "sugarcrepe_negatives.toml"


@pytest.fixture(scope="module")
def scorers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("scorers")
    return {"vera": write_tiny_vera(root / "vera"), "cola": write_tiny_cola(root / "cola")}


def _recipe(tmp: Path, scorers: dict[str, Path]) -> Path:
    rows = [{"caption": c, "image": f"{i:012d}.jpg"} for i, c in enumerate(CAPTIONS)]
    (tmp / "captions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = RECIPE.read_text()
    text = with_input_path(text, "captions.jsonl")
    text = re.sub(r'^generator = ".*"$', 'generator = "fake:rules"', text, flags=re.M)
    text = text.replace('"vera:liujch1998/vera"', f'"vera:{scorers["vera"]}"')
    text = text.replace(
        '"cola:textattack/distilbert-base-uncased-CoLA"', f'"cola:{scorers["cola"]}"'
    )
    text = text.replace("batch_size = 32", 'batch_size = 2\ndevice = "cpu"')
    path = tmp / "recipe.toml"
    path.write_text(text)
    return path


def test_the_recipe_builds_a_benchmark_that_eval_runs(
    tmp_path: Path, gen: NegativesGenerator, scorers: dict[str, Path]
) -> None:
    recipe = _recipe(tmp_path, scorers)
    out = tmp_path / "build"
    said: list[str] = []
    with pytest.raises(HumanStepPending) as paused:  # people check the negatives first
        build(recipe, out, cache_dir=tmp_path / "cache", echo=said.append)
    assert paused.value.stage == "stage 3/6 validation"
    assert not (out / "stages" / "04-scores.parquet").exists()
    _accept_all(out / "stages" / "02-template.parquet", paused.value.answers)
    build(recipe, out, cache_dir=tmp_path / "cache", echo=said.append)
    n = 7 * len(CAPTIONS)
    assert f"generate: {n} requests, {n} to send" in said  # counted before, params included
    assert len(gen.sent) == n
    assert all(p["max_tokens"] == 350 for p in gen.params)  # the recipe's `params`
    record = json.loads((out / "build.json").read_text())
    assert [s["use"] for s in record["stages"]] == [
        "sugarcrepe_negatives", "template_filter", "fold_back_validation", "blind_scores",
        "adversarial_refine", "freeze",
    ]  # fmt: skip
    assert record["stages"][0]["requests"]["sent"] == n

    refined = pq.read_table(out / "stages" / "05-refine.parquet").to_pylist()
    kept: dict[str, list[tuple[str, str, str]]] = {}
    for r in refined:
        if r["rejected"] is None:
            kept.setdefault(r["category"], []).append(
                (r["caption"], r["negative_caption"], r["image"])
            )
    assert kept and sum(map(len, kept.values())) % 2 == 0  # refinement keeps mirrored pairs
    frozen = {}
    for path in (out / "benchmark").glob("*.json"):
        if path.name != "data_card.json":
            items = json.loads(path.read_text()).values()
            frozen[path.stem] = [
                (i["caption"], i["negative_caption"], i["filename"]) for i in items
            ]
    assert frozen == kept
    card = json.loads((out / "benchmark" / "data_card.json").read_text())
    assert card["format"] == "sugarcrepe"

    cli = CliRunner()
    res = cli.invoke(app, ["validate", f"build:{out}"])
    assert res.exit_code == 0, res.output
    run = tmp_path / "run"
    res = cli.invoke(
        app,
        ["eval", "-m", f"vera:{scorers['vera']}", "-b", f"build:{out}", "-o", str(run),
         "--n-boot", "10", "--device", "cpu"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    record = json.loads((run / "run.json").read_text())
    assert record["benchmarks"][0]["name"] == "build:build"

    (out / "stages" / "01-generate.parquet").unlink()  # the stage runs again: all stored
    said.clear()
    build(recipe, out, cache_dir=tmp_path / "cache", echo=said.append)
    assert f"generate: {n} requests, 0 to send" in said
    assert len(gen.sent) == n  # nothing sent twice


def _accept_all(stage: Path, answers: Path) -> None:
    """The validation study's answers file: one validator accepting every kept row of `stage`."""
    rows = pq.read_table(stage)
    ids = row_ids(rows["source"].to_pylist(), rows["source_id"].to_pylist())
    kept = [i for i, ok in zip(ids, accepted(rows).to_pylist(), strict=True) if ok]
    answers.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table([answer("validate", i, "a1", "accept") for i in kept]), answers)


def _rules_server_reply(gen: NegativesGenerator) -> Any:
    """An OpenAI-compatible chat endpoint answering as `gen` (`rule_answer`)."""

    def reply(handler: Any) -> None:
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        messages = [
            {"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
             else "".join(p["text"] for p in m["content"] if p["type"] == "text")}
            for m in body["messages"]
        ]  # fmt: skip
        text, _ = gen.send(None, {**body, "messages": messages})
        choice = {"message": {"role": "assistant", "content": text}}
        send_json(handler, 200, json.dumps({"choices": [choice]}).encode())

    return reply


def test_the_shipped_recipe_pauses_for_people_and_freezes_what_they_kept(
    tmp_path: Path, scorers: dict[str, Path]
) -> None:
    """`lexsem build sugarcrepe_negatives --input FILE --generator openai:...` against a local
    chat server: a pause at the validation (exit status 3, no error) with the study's
    commands, the negatives shown beside their caption and image; the study answered through
    the study server (one negative edited, one rejected, one a tie) and exported; the same
    command again freezes a `sugarcrepe` benchmark of exactly the negatives the refinement
    kept of those people kept or edited."""
    from builders.annotate_studies import need_annotate_extra, role_policy

    need_annotate_extra()
    from fastapi.testclient import TestClient

    from lexsem.annotate.app import create_app
    from lexsem.annotate.simulate import ScriptedAnnotator
    from lexsem.annotate.store import Unit, connect

    photos = tmp_path / "photos"
    photos.mkdir()
    rows = []
    for i, caption in enumerate(CAPTIONS):
        Image.new("RGB", (8, 8), (50 * i, 90, 120)).save(photos / f"{i}.png")
        rows.append({"caption": caption, "image": str(photos / f"{i}.png")})
    (tmp_path / "captions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "build"
    gen = NegativesGenerator()
    cli = CliRunner()
    with serve_posts(_rules_server_reply(gen)) as url:
        command = [
            "build", "sugarcrepe_negatives", "--input", str(tmp_path / "captions.jsonl"),
            "--generator", f"openai:rules?base_url={url}", "-o", str(out),
            "--cache-dir", str(tmp_path / "cache"),
            "--set", f"scores.vera=vera:{scorers['vera']}",
            "--set", f"scores.cola=cola:{scorers['cola']}",
            "--set", "scores.batch_size=2", "--set", "scores.device=cpu",
        ]  # fmt: skip
        res = cli.invoke(app, command)
        assert res.exit_code == 3, res.output
        assert "error:" not in res.output
        assert "paused at stage 3/6 validation: fold_back_validation: waiting for people" in (
            res.output
        )
        assert len(gen.sent) == 7 * len(CAPTIONS)
        folder = out / "human" / "validate"
        stage = out / "stages" / "02-template.parquet"
        lines = [x.strip() for x in res.output.splitlines()
                 if x.strip().startswith("lexsem annotate ")]  # fmt: skip
        study = folder / "study.sqlite"
        assert lines[0] == shlex.join([
            "lexsem", "annotate", "create", str(study), "--from-build", str(stage), "-k",
            "validate", "--column", "original=caption", "--column", "negative=negative_caption",
            "--name", f"{out.name}: validation",
        ])  # fmt: skip
        assert "negative_caption" in (folder / "README.md").read_text()

        checked = pq.read_table(stage)
        ids = row_ids(checked["source"].to_pylist(), checked["source_id"].to_pylist())
        flags = accepted(checked).to_pylist()
        kept = [(i, r) for i, r, ok in zip(ids, checked.to_pylist(), flags, strict=True) if ok]
        # every negative accepted first: the rows the refinement then leaves out are those
        # the people's decisions below touch, so that it still keeps some of the others
        _accept_all(stage, folder / "answers.parquet")
        res = cli.invoke(app, command)
        assert res.exit_code == 0, res.output
        left_out = {(r["source_id"], r["category"])
                    for r in pq.read_table(out / "stages" / "05-refine.parquet").to_pylist()
                    if r["rejected"] == "adversarial_refinement"}  # fmt: skip
        touched = [(i, r) for i, r in kept if (r["source_id"], r["category"]) in left_out]
        assert len(touched) >= 3 and len(kept) > len(left_out)
        (e_id, edited_row), (r_id, _), (t_id, _) = touched[:3]
        edited = f"Edited: {edited_row['negative_caption'].strip()}"
        plan: dict[str, list[Any]] = {i: ["accept", "accept"] for i, _ in kept}
        plan[e_id] = [("edit", edited), "accept"]
        plan[r_id] = ["reject", "reject"]
        plan[t_id] = ["accept", "reject"]  # a tie: left out

        links = folder / "links.json"
        made = cli.invoke(app, [*shlex.split(lines[0])[1:], "-n", "2", "--overlap", "2",
                                "--links", str(links), "--base-url", ""])  # fmt: skip
        assert made.exit_code == 0, made.output
        annotators = json.loads(links.read_text())["annotators"]
        con = connect(study)
        shown = {r[0]: json.loads(r[1])["context"]
                 for r in con.execute("SELECT item_id, payload FROM units")}  # fmt: skip
        con.close()
        assert shown[e_id] == [
            ["P1 (original)", edited_row["caption"]],
            ["N (negative, negative_caption): to check", edited_row["negative_caption"]],
        ]
        client = TestClient(create_app(study))
        for k, link in enumerate(sorted(annotators)):

            def pick(unit: Unit, k: int = k) -> Any:
                return plan[unit.item_id][k]

            bot = ScriptedAnnotator(client, annotators[link], role_policy(study, pick), seed=k)
            assert bot.run(max_steps=200)
        res = cli.invoke(app, shlex.split(lines[2])[1:])
        assert res.exit_code == 0, res.output

        sent = len(gen.sent)
        res = cli.invoke(app, command)
        assert res.exit_code == 0, res.output
        assert len(gen.sent) == sent  # nothing asked again

    validated = pq.read_table(out / "stages" / "03-validation.parquet").to_pylist()
    decided = dict(zip(ids, validated, strict=True))
    assert decided[e_id]["negative_caption"] == edited
    assert decided[e_id]["validation"] == "edited"
    assert decided[r_id]["rejected"] == "human_rejected"
    assert decided[t_id]["rejected"] == "human_disagreement"
    refined = pq.read_table(out / "stages" / "05-refine.parquet").to_pylist()
    kept_after = {(r["category"], r["caption"], r["negative_caption"], r["image"])
                  for r in refined if r["rejected"] is None}  # fmt: skip
    people_kept = {(r["category"], r["caption"], r["negative_caption"], r["image"])
                   for r in validated if r["rejected"] is None}  # fmt: skip
    assert kept_after and kept_after <= people_kept  # the refinement chose among them
    frozen = set()
    for path in (out / "benchmark").glob("*.json"):
        if path.name != "data_card.json":
            frozen |= {(path.stem, i["caption"], i["negative_caption"], i["filename"])
                       for i in json.loads(path.read_text()).values()}  # fmt: skip
    assert frozen == kept_after
    card = json.loads((out / "benchmark" / "data_card.json").read_text())
    (human,) = card["human"]
    assert human["stage"] == "validation"
    assert {k: human["counts"][k] for k in ("edited", "human_rejected", "human_disagreement")} == {
        "edited": 1, "human_rejected": 1, "human_disagreement": 1
    }  # fmt: skip
    assert human["counts"]["accepted"] == len(kept) - 3


# -- blind scores -------------------------------------------------------------------------------


def test_blind_scores_are_the_backends_scores(scorers: dict[str, Path]) -> None:
    from lexsem.construct.blind_scores import SCORE_COLUMNS, blind_scores
    from lexsem.models.factory import load_text_scorer

    rows = pa.table(
        {
            "source": ["t"] * 3,
            "source_id": ["0", "1", "2"],
            "caption": ["a man rides a horse .", "a red ball", "a cat"],
            "negative_caption": ["a horse rides a man .", "a blue ball", "a dog"],
            "rejected": [None, None, "earlier"],
        }
    )
    vera, cola = f"vera:{scorers['vera']}", f"cola:{scorers['cola']}"
    out = blind_scores(rows, None, vera=vera, cola=cola, batch_size=2, device="cpu")
    assert out.column_names == [*rows.column_names, *SCORE_COLUMNS]
    for prefix, spec in (("vera", vera), ("cola", cola)):
        scorer = load_text_scorer(spec, device="cpu")
        for r in range(2):
            pos = float(scorer.score_texts([rows["caption"][r].as_py()], batch_size=1)[0])
            neg = float(scorer.score_texts([rows["negative_caption"][r].as_py()], batch_size=1)[0])
            assert out[f"{prefix}_pos"][r].as_py() == pytest.approx(pos, rel=1e-6, abs=1e-9)
            assert out[f"{prefix}_neg"][r].as_py() == pytest.approx(neg, rel=1e-6, abs=1e-9)
            gap = out[f"{prefix}_gap"][r].as_py()
            assert gap == out[f"{prefix}_pos"][r].as_py() - out[f"{prefix}_neg"][r].as_py()
        assert out[f"{prefix}_gap"][2].as_py() is None  # a rejected row is not scored
    assert len({out["vera_pos"][0].as_py(), out["vera_neg"][0].as_py()}) == 2


def test_blind_scores_bad_input_is_named(scorers: dict[str, Path]) -> None:
    from lexsem.construct.blind_scores import blind_scores

    rows = pa.table({"source": ["t"], "source_id": ["7"], "caption": ["a"],
                     "negative_caption": [None]})  # fmt: skip
    with pytest.raises(DataError, match="item 7: blind_scores"):
        blind_scores(rows, None, vera=f"vera:{scorers['vera']}", cola=f"cola:{scorers['cola']}")
    with pytest.raises(DataError, match="no column 'negative'"):
        blind_scores(rows, None, negative="negative")


# -- SugarCrepe's own unrefined negatives through the filter and the refinement ------------------


@pytest.mark.data
def test_unrefined_sugarcrepe_through_filter_and_refinement(test_data_dir: Path) -> None:
    """SugarCrepe's generated negatives before refinement, filtered here, then refined per
    category with given (seeded) gaps: each category keeps what SugarCrepe's procedure
    (`refine_keep`, checked against the reference script in test_build_refine.py) keeps of that
    category's filtered items alone, and a row the filter rejected keeps its reason."""
    import numpy as np

    from lexsem.construct.refine import adversarial_refine, refine_keep

    records = []
    for category in [s.lower() for s in ORDER]:
        items = json.loads(
            (test_data_dir / "sugarcrepe_unrefined" / f"{category}.json").read_text()
        )
        for key, item in items.items():
            records.append({"source": "sugarcrepe_unrefined", "source_id": f"{category}/{key}",
                            "category": category, "caption": item["caption"],
                            "negative_caption": item["negative_caption"]})  # fmt: skip
    rng = np.random.default_rng(5)
    for r in records:
        r["vera_gap"] = round(float(rng.uniform(-1, 1)), 3)
        r["cola_gap"] = round(float(rng.uniform(-1, 1)), 2)  # rounded: some gaps are 0
    rows = pa.Table.from_pylist(records)
    filtered = template_filter(rows)
    reasons = filtered["rejected"].to_pylist()
    assert reasons.count(None) > rows.num_rows // 2
    assert {r for r in reasons if r} == {ADD, REPLACE, SWAP_WORDS}
    refined = adversarial_refine(filtered, group_by="category", seed=5, order="input").to_pylist()
    for category in [s.lower() for s in ORDER]:
        part = [i for i, r in enumerate(refined) if r["category"] == category]
        live = [i for i in part if reasons[i] is None]
        keep = refine_keep(
            [records[i]["vera_gap"] for i in live],
            [records[i]["cola_gap"] for i in live],
            np.random.RandomState(5),
        )
        expected = {records[live[k]]["source_id"] for k in keep}
        got = {refined[i]["source_id"] for i in part if refined[i]["rejected"] is None}
        assert got == expected and expected, category
    after = [r["rejected"] for r in refined]
    assert all(a == b for a, b in zip(after, reasons, strict=True) if b is not None)
