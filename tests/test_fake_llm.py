"""The fake OpenAI-compatible server (`lexsem.fake_llm`): its endpoints and limits, its rules
checked with the stages' own parsers, and the shipped LLM recipes built through it by
`lexsem build` up to their people's validation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from lexsem.cli.app import app
from lexsem.construct.scpp_positive import (
    duplicated,
    full_context_prompt,
    generation_prompt,
    parse_paraphrase,
    parse_verdict,
    superfluous,
    validation_prompt,
)
from lexsem.construct.sugarcrepe_negatives import generation_request, parse_negative
from lexsem.construct.sugarcrepe_templates import CATEGORIES
from lexsem.construct.template_filter import follows_template
from lexsem.fake_llm import FINGERPRINT, MAX_BODY, MODEL, answer, serve_in_thread
from lexsem.models.chat import chat_messages, data_url_part

ROOT = Path(__file__).resolve().parent.parent

CAPTIONS = [
    "A dog on a sofa.",
    "Two cats sleep.",
    "A red bus.",
    "A man rides a horse.",
    "Sky.",
    "An elephant standing under the shade of a tree.",
    "A woman in a blue shirt holding a red umbrella.",
    "three people riding horses on a beach ",
]


@pytest.fixture(scope="module")
def base_url() -> str:
    with serve_in_thread() as url:
        yield url


def _user(text: str) -> list[dict[str, object]]:
    return [{"role": "user", "content": [{"type": "text", "text": text}]}]


# -- the rules, read by the stages' own parsers -------------------------------------------------


@pytest.mark.parametrize("p1", CAPTIONS)
def test_scpp_answers_pass_the_safeguards_and_the_validator(p1: str) -> None:
    for prompt in (generation_prompt(p1), full_context_prompt(p1, p1)):
        p2 = parse_paraphrase(answer(_user(prompt)))
        assert p2 and not duplicated(p1, p2) and not superfluous(p2, p1, 0.25), p2
    p2 = parse_paraphrase(answer(_user(generation_prompt(p1))))
    assert p2.startswith("In the picture, ")
    assert parse_verdict(answer([{"role": "user", "content": validation_prompt(p1, p2)}])) is True


def test_sugarcrepe_answers_parse_and_follow_their_templates() -> None:
    parsed = 0
    for caption in CAPTIONS:
        for category in CATEGORIES:
            messages = chat_messages(generation_request(caption, category), data_url_part, "x")
            negative, reason = parse_negative(category, answer(messages))
            if negative is None:  # nothing in the word lists to edit: an answer without one
                assert reason is not None
                continue
            parsed += 1
            assert follows_template(category, caption, negative) is None, (category, negative)
    assert parsed >= len(CAPTIONS) * 3


def test_sugarcrepe_answers_by_category() -> None:
    def ask(category: str, caption: str) -> str | None:
        messages = chat_messages(generation_request(caption, category), data_url_part, "x")
        return parse_negative(category, answer(messages), strip=True)[0]

    caption = "A woman in a blue shirt holding a red umbrella."
    assert ask("replace_att", caption) == "A woman in a red shirt holding a red umbrella."
    assert ask("swap_att", caption) == "A woman in a red shirt holding a blue umbrella."
    assert ask("replace_obj", "An elephant near a tree.") == "A giraffe near a tree."
    assert ask("swap_obj", "A man rides a horse.") == "A horse rides a man."
    assert ask("add_obj", "A dog on a sofa.") == "A dog and a cat on a sofa."
    assert ask("swap_att", "Two cats sleep.") is None  # "No": nothing to swap


def test_other_prompts_get_the_first_option_or_yes() -> None:
    assert answer(_user("Which caption fits? (1) a dog; (2) a cat")) == "(1)"
    assert answer(_user("Is there a dog in the image?")) == "Yes"
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    assert answer([{"role": "user", "content": [image, {"type": "text", "text": "Dog?"}]}]) == "Yes"


# -- the endpoints ------------------------------------------------------------------------------


def test_models_lists_the_fake(base_url: str) -> None:
    got = httpx.get(f"{base_url}/models")
    assert got.status_code == 200
    assert [m["id"] for m in got.json()["data"]] == [MODEL]


def test_chat_completion_says_it_is_the_fake(base_url: str) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Is it a dog?"}]}
    got = httpx.post(f"{base_url}/chat/completions", json=body)
    assert got.status_code == 200
    raw = got.json()
    assert raw["model"] == MODEL and raw["system_fingerprint"] == FINGERPRINT
    assert raw["choices"][0]["message"] == {"role": "assistant", "content": "Yes"}
    assert raw["usage"]["completion_tokens"] == 1


def test_refusals(base_url: str) -> None:
    url = f"{base_url}/chat/completions"
    big = httpx.post(url, content=b"x" * (MAX_BODY + 1))
    assert big.status_code == 413
    assert httpx.post(url, content=b"not json").status_code == 400
    deep = b'{"model": "lexsem-fake", "messages": ' + b"[" * 100 + b"]" * 100 + b"}"
    assert httpx.post(url, content=deep).status_code == 400
    other = {"model": "mistralai/Mistral-7B-Instruct-v0.2", "messages": _user("Hi")}
    refused = httpx.post(url, json=other)
    assert refused.status_code == 404 and "rules, not a model" in refused.text
    assert httpx.post(url, json={"model": MODEL, "messages": []}).status_code == 400
    assert (
        httpx.post(url, json={"model": MODEL, "messages": _user("x"), "stream": True}).status_code
        == 400
    )
    assert httpx.get(f"{base_url}/nowhere").status_code == 404
    assert httpx.post(base_url.removesuffix("/v1") + "/v1/embeddings", json={}).status_code == 404


def test_module_prints_its_banner(tmp_path: Path) -> None:
    """`python -m lexsem.fake_llm --port 0` prints the address and the generator spec."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lexsem.fake_llm", "--port", "0", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = proc.stdout.readline()
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert line.startswith("lexsem fake LLM at http://127.0.0.1:")
    assert "answers are rules, not a model" in line
    url = line.split(" at ", 1)[1].split(" ", 1)[0]
    assert f"generator spec: openai:{MODEL}?base_url={url}" in line


# -- the shipped recipes built through it -------------------------------------------------------


def _build(recipe: str, data: Path, out: Path, base_url: str, cache: Path) -> object:
    args = [
        "build",
        recipe,
        "--input",
        str(data),
        "--generator",
        f"openai:{MODEL}?base_url={base_url}",
        "-o",
        str(out),
        "--cache-dir",
        str(cache),
    ]
    return CliRunner().invoke(app, args)


def test_scpp_positive_recipe_reaches_the_validation(base_url: str, tmp_path: Path) -> None:
    data = tmp_path / "items.jsonl"
    data.write_text(
        "".join(json.dumps({"caption": c, "negative_caption": f"not {c}"}) + "\n" for c in CAPTIONS)
    )
    done = _build("scpp_positive", data, tmp_path / "out", base_url, tmp_path / "cache")
    assert done.exit_code == 3, done.output  # paused at the people's validation
    assert "error:" not in done.output
    rows = pq.read_table(tmp_path / "out" / "stages" / "01-positive.parquet").to_pylist()
    assert len(rows) == len(CAPTIONS)
    for row in rows:
        assert row["rejected"] is None and row["caption2"].startswith("In the picture, ")
        assert row["generations"] == 1 and row["validations"] == 1


def test_sugarcrepe_negatives_recipe_reaches_the_validation(base_url: str, tmp_path: Path) -> None:
    data = tmp_path / "captions.jsonl"
    data.write_text("".join(json.dumps({"caption": c}) + "\n" for c in CAPTIONS))
    done = _build("sugarcrepe_negatives", data, tmp_path / "out", base_url, tmp_path / "cache")
    assert done.exit_code == 3, done.output
    assert "error:" not in done.output
    rows = pq.read_table(tmp_path / "out" / "stages" / "01-generate.parquet").to_pylist()
    assert len(rows) == len(CAPTIONS) * len(CATEGORIES)
    kept = [r for r in rows if r["negative_caption"] is not None]
    assert len(kept) >= len(CAPTIONS) * 3
    assert all(r["rejected"] is None for r in kept)
    assert {r["category"] for r in kept} == set(CATEGORIES)
