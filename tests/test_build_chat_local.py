"""The `chat:` backend (a local transformers chat model) on tiny random Llama and Qwen2 models
with a chat template, built here: batched greedy answers equal one-prompt-at-a-time
`model.generate`, the fingerprint and store key, seeded sampling, text-only requests, and the
backend as a `lexsem build` generator and in `lexsem ask`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import builders.build_stages  # noqa: F401  (registers the stage ask_each)
from builders.backends import optional_import
from builders.tiny_chat_models import write_tiny_chat
from lexsem.construct.runner import build
from lexsem.engine.chat import chat_key
from lexsem.errors import ModelError
from lexsem.models.chat import ChatRequest, Turn
from lexsem.models.factory import load_model

torch = optional_import("torch")
optional_import("transformers")

PROMPTS = ["a dog on a sofa", "two cats", "a man in paris and a red ball on the table", "dogs",
           "a red bus by a tree", "the cat sleeps on a small green box",
           "a horse", "a small dog chases a ball and a man rides a horse"]  # fmt: skip


@pytest.fixture(scope="module", params=["llama", "qwen2"])
def tiny_chat(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_chat(tmp_path_factory.mktemp(request.param), family=request.param)


def _one_at_a_time(folder: Path, prompts: list[str], max_new_tokens: int) -> list[str]:
    """The oracle: transformers' own `generate` on each prompt alone (no padding), greedy,
    the new tokens up to EOS decoded without special tokens."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    out = []
    for p in prompts:
        text = tok.apply_chat_template([{"role": "user", "content": p}], tokenize=False,
                                       add_generation_prompt=True)  # fmt: skip
        ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
        with torch.no_grad():
            new = model.generate(
                ids, attention_mask=torch.ones_like(ids), do_sample=False,
                max_new_tokens=max_new_tokens,
            )[0, ids.shape[1] :].tolist()  # fmt: skip
        if tok.eos_token_id in new:
            new = new[: new.index(tok.eos_token_id)]
        out.append(tok.decode(new, skip_special_tokens=True).strip())
    return out


def test_batched_greedy_answers_equal_one_prompt_at_a_time(tiny_chat: Path) -> None:
    expected = _one_at_a_time(tiny_chat, PROMPTS, 10)
    assert len(set(expected)) > 3  # varied answers: a real check, not one repeated string
    for batch_size in (1, 3, 8):
        model = load_model(f"chat:{tiny_chat}?max_new_tokens=10&batch_size={batch_size}")
        bodies = [model.request_body(ChatRequest.ask(p, None)) for p in PROMPTS]
        answers = [text for text, _ in model.send_batch(None, bodies)]
        assert answers == expected, batch_size
    assert model.send(None, bodies[2])[0] == expected[2]


def test_a_pad_token_past_the_vocabulary_is_not_used(tmp_path: Path) -> None:
    """transformers' Qwen2 tokenizer class adds `<|endoftext|>` as its pad token; when the model's
    embedding table ends at the word-level vocabulary, that id is out of range, and the backend
    pads with EOS instead (padding with it fails with an index error)."""
    from builders.tiny_chat_models import CHAT_VOCAB

    folder = write_tiny_chat(tmp_path, family="qwen2", vocab_size=len(CHAT_VOCAB))
    model = load_model(f"chat:{folder}?max_new_tokens=6&batch_size=8")
    bodies = [model.request_body(ChatRequest.ask(p, None)) for p in PROMPTS]
    answers = [text for text, _ in model.send_batch(None, bodies)]
    tok = model._tokenizer
    assert tok.pad_token_id is not None and tok.pad_token_id >= model._model.config.vocab_size
    assert answers == _one_at_a_time(folder, PROMPTS, 6)


def test_fingerprint_and_store_key(tiny_chat: Path) -> None:
    spec = f"chat:{tiny_chat}?max_new_tokens=10"
    model = load_model(spec)
    fp = model.fingerprint
    assert fp["backend"] == "chat" and fp["dtype"] == "fp32" and fp["decoding"] == "greedy"
    assert fp["model"] == model.source.identity() and fp["max_new_tokens"] == 10
    assert not model.loaded  # the fingerprint loads no weights
    assert load_model(spec + "&batch_size=2").fingerprint == fp  # the same answers
    for other in ("max_new_tokens=11", "max_new_tokens=10&temperature=0.7",
                  "max_new_tokens=10&blind=true", "max_new_tokens=10&dtype=bf16"):  # fmt: skip
        assert load_model(f"chat:{tiny_chat}?{other}").fingerprint != fp, other
    ask = ChatRequest.ask("two cats", None)
    key = chat_key(model, ask)
    for params in ({"seed": 1}, {"max_tokens": 5}, {"temperature": 0.5}, {"top_p": 0.9}):
        assert chat_key(model, ChatRequest(ask.turns, params)) != key, params
    with pytest.raises(ModelError, match="not logprobs"):
        model.request_body(ChatRequest(ask.turns, {"logprobs": True}))


def test_sampling_is_seeded_per_request(tiny_chat: Path) -> None:
    model = load_model(f"chat:{tiny_chat}?max_new_tokens=12&temperature=1.5&batch_size=4")
    assert model.fingerprint["decoding"] == "sampling"
    body = model.request_body(ChatRequest.ask("two cats", None))
    alone = model.send(None, body)[0]
    with_others = model.send_batch(None, [model.request_body(ChatRequest.ask("dogs", None)),
                                          body])[1][0]  # fmt: skip
    assert alone == with_others  # a request's answer depends on it alone
    seeds = {model.send(None, {**body, "seed": s})[0] for s in range(6)}
    assert len(seeds) > 1  # another seed, another sample


def test_text_only_images_refused_unless_blind(tiny_chat: Path) -> None:
    asked = ChatRequest((Turn("user", "two cats", (b"\x89PNG....",)),))
    with pytest.raises(ModelError, match="text-only chat model cannot see the request's image"):
        load_model(f"chat:{tiny_chat}").request_body(asked)
    blind = load_model(f"chat:{tiny_chat}?blind=true")
    assert blind.request_body(asked)["messages"] == [{"role": "user", "content": "two cats"}]


def test_a_tokenizer_without_chat_template_is_an_error(tmp_path: Path) -> None:
    folder = write_tiny_chat(tmp_path / "m")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    for extra in folder.glob("chat_template.*"):
        extra.unlink()
    model = load_model(f"chat:{folder}")
    with pytest.raises(ModelError, match="the tokenizer has no chat template"):
        model.send(None, model.request_body(ChatRequest.ask("two cats", None)))


def test_a_build_with_a_local_generator_stores_its_answers(tiny_chat: Path, tmp_path: Path) -> None:
    captions = PROMPTS[:6]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"caption": c}) + "\n" for c in captions))
    recipe = tmp_path / "r.toml"
    recipe.write_text(
        f'name = "local"\nplugins = ["builders.build_stages"]\n'
        f'generator = "chat:{tiny_chat}?max_new_tokens=8&batch_size=4"\nseed = 0\n'
        '[input]\npath = "in.jsonl"\n[[stages]]\nuse = "ask_each"\n'
    )
    lines: list[str] = []
    kw: dict[str, Any] = {"cache_dir": tmp_path / "cache", "echo": lines.append}
    first = build(recipe, tmp_path / "a", **kw)
    assert first.sent == 6
    answers = pq.read_table(first.output)["answer"].to_pylist()
    assert answers == _one_at_a_time(tiny_chat, captions, 8)
    assert "ask_each: 6 requests, 6 to send" in lines
    again = build(recipe, tmp_path / "b", **kw)  # another folder: every answer from the store
    assert again.sent == 0 and pq.read_table(again.output)["answer"].to_pylist() == answers
    record = json.loads((tmp_path / "b" / "build.json").read_text())
    assert record["model"]["fingerprint"]["backend"] == "chat"
    assert record["stages"][0]["requests"] == {"asked": 6, "stored": 6, "sent": 0, "retried": 0}


def test_ask_answers_a_benchmark_blind(
    tiny_chat: Path, bench: dict[str, Any], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from lexsem.cli.app import app

    args = ["ask", "-m", f"chat:{tiny_chat}?blind=true&max_new_tokens=4", "-b", "fixture_pp",
            "--prompt", "scpp_order", "--data-dir", str(bench["data"]),
            "--coco-val2017", str(bench["images"]), "--cache-dir", str(bench["cache"])]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "15 requests: 0 answered from the store, 15 sent" in res.stderr
    again = CliRunner().invoke(app, [*args, "--replay-only"])
    assert again.exit_code == 0 and "15 answered from the store, 0 sent" in again.stderr
    refused = CliRunner().invoke(app, [*args[:2], f"chat:{tiny_chat}", *args[3:]])
    assert refused.exit_code == 2 and "text-only chat model" in refused.output
