"""The OpenAI-compatible chat backend and the request store, end to end against a fake server on
127.0.0.1 started here: rate limits, server errors, time-outs, broken JSON and dropped
connections are retried; every answer is stored as it arrives and never asked twice; failed
requests are not stored; replay-only and the request cap refuse before sending anything."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.chat_server import NEGATIVES, Server
from builders.fakes import TRIPLETS
from lexsem.cli import app
from lexsem.engine.chat import chat_records
from lexsem.engine.conversations import answer_requests, image_reader
from lexsem.engine.plan import Work
from lexsem.engine.request_store import RequestStore
from lexsem.errors import LexsemError, ModelError
from lexsem.images.image_store import ImageStore
from lexsem.models.backends.openai_chat import OpenAIChat
from lexsem.models.protocols import fingerprint_key
from lexsem.tasks.catalog import get_task
from lexsem.tasks.choice import Answer, score_choices

KEY = "sk-test-never-written-0123456789"


def ask_choices(
    chat: Any, items: list[Any], images: Any, prompt: str, store: Any, **send: Any
) -> tuple[list[Answer], Any]:
    """The answers of `chat` to `prompt` about `items` in every ordering, as a run asks them
    (`lexsem.engine.conversations`, `lexsem.engine.chat`)."""
    work = Work("fixture_pp", items, [get_task(f"choice_{prompt}")])
    asked = answer_requests([work], image_reader(images))
    records, stats = chat_records(chat, asked.requests, store, **send)
    answers = [
        Answer(item, subset, prompt, column.removeprefix("answer_"), r["text"])
        for (_, _, column, subset, item), r in zip(asked.keys, records, strict=True)
    ]
    return answers, stats


def _ask(url: str, bench: dict[str, Any], **kw: Any) -> tuple[list[Any], Any]:
    chat = OpenAIChat(f"openai:tiny-vlm?base_url={url}&timeout=1")
    store = RequestStore(bench["cache"], fingerprint_key(chat.fingerprint))
    with store:
        return ask_choices(
            chat, bench["items"], ImageStore(coco_val2017=bench["images"]), "scpp3", store,
            backoff=0.01, **kw,
        )  # fmt: skip


def test_faults_are_retried_and_every_answer_is_asked_once(
    server: tuple[Server, str], bench: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    state, url = server
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    state.faults = ["429", "500", "json", "drop", "slow"]
    answers, stats = _ask(url, bench, concurrency=2)
    n = len(bench["items"]) * 3
    assert len(answers) == n and stats.n_sent == n and stats.n_stored == 0
    assert stats.n_attempts == n + 5  # each fault cost one more attempt
    assert len(state.answered) == n == len(set(state.answered))  # nothing answered twice
    items = {f"{it.subset}/{it.id}": it for it in bench["items"]}
    scores = score_choices(answers, items)
    assert set(scores.accuracy.values()) == {100.0}  # the oracle's answers, in every ordering
    assert state.auth == {f"Bearer {KEY}"}
    stored = b"".join(p.read_bytes() for p in bench["cache"].rglob("*") if p.is_file())
    assert KEY.encode() not in stored  # the key is never written
    # a rerun sends nothing
    posts = state.posts
    again, stats2 = _ask(url, bench)
    assert state.posts == posts and stats2.n_stored == n and stats2.n_sent == 0
    assert [a.text for a in again] == [a.text for a in answers]


def test_failed_requests_are_not_stored_and_a_rerun_sends_only_them(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    state, url = server
    victim = TRIPLETS["swap_obj"][1][2]  # one item's negative: its prompts always fail
    state.fail = victim
    with pytest.raises(ModelError, match=r"3 of 15 requests failed .* tried 5 times"):
        _ask(url, bench)
    assert len(state.answered) == 12
    state.fail = None
    state.answered.clear()
    _, stats = _ask(url, bench)
    assert stats.n_stored == 12 and stats.n_sent == 3
    assert all(victim in prompt for prompt, _ in state.answered)


def test_replay_only_and_the_request_cap_refuse_before_sending(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    state, url = server
    with pytest.raises(LexsemError, match=r"replay only: 15 requests have no stored answer"):
        _ask(url, bench, replay_only=True)
    with pytest.raises(
        LexsemError, match=r"15 requests would be sent, more than --max-requests 10"
    ):
        _ask(url, bench, max_requests=10)
    assert state.posts == 0
    _ask(url, bench, max_requests=15)
    _, stats = _ask(url, bench, replay_only=True)
    assert stats.n_sent == 0 and stats.n_stored == 15


def test_ask_from_the_cli_writes_answers_that_score_answers_reads(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    _, url = server
    out = tmp_path / "answers.jsonl"
    common = ["-b", "fixture_pp", "--prompt", "scpp_order", "--data-dir", str(bench["data"]),
              "--coco-val2017", str(bench["images"]),
              "--cache-dir", str(bench["cache"])]  # fmt: skip
    res = CliRunner().invoke(app, ["ask", "-m", f"openai:tiny-vlm?base_url={url}", *common,
                                   "-o", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "| scpp_order | NPP | 5/5 | 100.00 |" in res.stdout
    assert "15 requests: 0 answered from the store, 15 sent" in res.stderr
    rescored = CliRunner().invoke(app, ["score-answers", str(out), *common[:6]])
    assert rescored.exit_code == 0, rescored.output
    assert "| scpp_order | PPN | 5/5 | 100.00 |" in rescored.stdout
    # its own answers file is replaced by a rerun; a user's file only with --force
    written = out.read_bytes()
    assert all(line.startswith(b'{"generator": "lexsem", ') for line in written.splitlines())
    out.write_bytes(written + b"\n")
    ask = ["ask", "-m", f"openai:tiny-vlm?base_url={url}", *common, "--replay-only", "-o", str(out)]
    assert CliRunner().invoke(app, ask).exit_code == 0 and out.read_bytes() == written
    mine = b'{"id": 0, "subset": "swap_obj", "ordering": "NPP", "answer": "(2)"}\n'
    out.write_bytes(mine)
    refused = CliRunner().invoke(app, ask)
    assert refused.exit_code == 2 and refused.output == (
        f"error: --out {out} exists and was not written by lexsem; pass --force to replace it\n"
    )
    assert out.read_bytes() == mine
    assert CliRunner().invoke(app, [*ask, "--force"]).exit_code == 0 and out.read_bytes() == written
    bad = CliRunner().invoke(app, ["ask", "-m", f"openai:tiny-vlm?base_ur={url}", *common])
    assert bad.exit_code == 2
    assert "unknown model option 'base_ur' (did you mean 'base_url'?)" in bad.output


def test_a_client_error_is_not_retried_and_names_the_server(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    """A wrong model name (HTTP 404) fails at once: retrying cannot fix it."""
    state, url = server
    chat = OpenAIChat(f"openai:no-such-model?base_url={url}")
    with RequestStore(bench["cache"], fingerprint_key(chat.fingerprint)) as store:
        with pytest.raises(ModelError, match=r"HTTP 404 from http://127\.0\.0\.1:\d+/v1"):
            ask_choices(
                chat, bench["items"][:1], ImageStore(coco_val2017=bench["images"]), "scpp3",
                store, backoff=0.01, concurrency=1,
            )  # fmt: skip
        assert store.count("records") == 0
    assert state.posts == 3  # one per ordering, none retried


def test_the_store_key_of_a_one_image_question_is_unchanged(bench: dict[str, Any]) -> None:
    """Conversations are keyed with each image by content; a one-turn question keeps the key
    it had before conversations existed, so stored answers stay served."""
    from lexsem.engine.chat import chat_key
    from lexsem.engine.keys import content_key, request_key
    from lexsem.models.chat import ChatRequest

    chat = OpenAIChat("openai:tiny-vlm?base_url=http://127.0.0.1:9/v1")
    image = (bench["images"] / "0.jpg").read_bytes()
    old = request_key("chat", model=chat.fingerprint, body={
        "model": "tiny-vlm", "max_tokens": 64, "temperature": 0.0,
        "messages": [{"role": "user", "content": [
            {"type": "image", "content_key": content_key("image", image)},
            {"type": "text", "text": "which?"}]}],
    })  # fmt: skip
    assert chat_key(chat, ChatRequest.ask("which?", image)) == old


def _cli(url: str, bench: dict[str, Any], *args: str) -> Any:
    common = ["-m", f"openai:tiny-vlm?base_url={url}", "-b", "fixture_pp",
              "--data-dir", str(bench["data"]), "--coco-val2017", str(bench["images"]),
              "--cache-dir", str(bench["cache"])]  # fmt: skip
    return CliRunner().invoke(app, ["ask", *common, *args])


def test_ask_refuses_a_bad_concurrency_and_a_model_that_is_no_chat_model(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    """`--concurrency 0` (and the other bounded sizes) and a text encoder as the model: one
    `error:` line each (exit 2), before any request is sent or any file written."""
    state, url = server
    out = tmp_path / "answers.jsonl"
    for args, message in (
        (["--concurrency", "0"], "error: --concurrency 0: must be at least 1, at most 64"),
        (["--concurrency", "65"], "error: --concurrency 65: must be at least 1, at most 64"),
        (["--shots", "-1"], "error: --shots -1: must be at least 0"),
        (["--max-requests", "-1"], "error: --max-requests -1: must be at least 0"),
    ):
        res = _cli(url, bench, "--prompt", "scpp3", "-o", str(out), *args)
        assert res.exit_code == 2 and res.output.startswith(message), res.output
        assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    common = ["-b", "fixture_pp", "--data-dir", str(bench["data"]),
              "--cache-dir", str(bench["cache"]), "-o", str(out)]  # fmt: skip
    for args in (["--prompt", "scpp3"], ["--vqascore"]):
        res = CliRunner().invoke(app, ["ask", "-m", "minilm", *common, *args])
        assert res.exit_code == 2, res.output
        assert res.output.startswith("error: ask needs a chat model: openai:MODEL"), res.output
        assert "'minilm'" in res.output and len(res.output.strip().splitlines()) == 1
    assert state.posts == 0 and not out.exists()


def _recorded(path: Path, bench: dict[str, Any], answer: str = "(1)", **extra: Any) -> Path:
    """A recorded-answers file: `answer` to scpp3 for every item and ordering."""
    rows = [{"id": it.id, "subset": it.subset, "ordering": o, "answer": answer, **extra}
            for it in bench["items"] for o in ("NPP", "PNP", "PPN")]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_imported_answers_are_replayed_without_sending_anything(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    state, url = server
    state.fail_all = True  # any request sent would fail
    published = _recorded(tmp_path / "published.jsonl", bench)  # a model always answering (1)
    res = _cli(url, bench, "--prompt", "scpp3", "--import", str(published), "--replay-only")
    assert res.exit_code == 0, res.output
    assert "published.jsonl: 15 answers: 15 imported into" in res.stderr
    assert "15 requests: 15 answered from the store (15 imported), 0 sent" in res.stderr
    assert "| scpp3 | NPP | 5/5 | 100.00 |" in res.stdout  # N is first under NPP
    assert "| scpp3 | PNP | 5/5 | 0.00 |" in res.stdout
    again = _cli(url, bench, "--prompt", "scpp3", "--replay-only")  # from the store alone
    assert again.exit_code == 0 and "| scpp3 | NPP | 5/5 | 100.00 |" in again.stdout
    assert state.posts == 0
    chat = OpenAIChat(f"openai:tiny-vlm?base_url={url}")
    with RequestStore(bench["cache"], fingerprint_key(chat.fingerprint)) as store:
        from lexsem.engine.chat import chat_key
        from lexsem.engine.conversations import item_request

        item = bench["items"][0]
        read = image_reader(ImageStore(coco_val2017=bench["images"]))
        (column,) = [c for c in get_task("choice_scpp3").columns if c.name == "answer_PNP"]
        key = chat_key(chat, item_request(column, item, read))
        record = store.get_records([key])[key]
    assert record == {"text": "(1)", "response": {"imported_from": "published.jsonl",
                                                  "where": "line 2"}}  # fmt: skip


def test_an_import_never_replaces_a_different_answer_unless_forced(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    _, url = server
    assert _cli(url, bench, "--prompt", "scpp3").exit_code == 0  # the oracle's answers
    ones = _recorded(tmp_path / "ones.jsonl", bench)
    refused = _cli(url, bench, "--prompt", "scpp3", "--import", str(ones), "--replay-only")
    assert refused.exit_code == 2
    assert re.search(
        r"ones\.jsonl, line 2: the store already has another answer for item swap_obj/0, "
        r"scpp3, PNP \('\(2\)', not '\(1\)'\) \(and 9 more\); nothing was imported "
        r"\(--force replaces them\)", refused.output.replace("\n", " "),
    )  # fmt: skip
    forced = _cli(url, bench, "--prompt", "scpp3", "--import", str(ones), "--force",
                  "--replay-only")  # fmt: skip
    assert forced.exit_code == 0, forced.output
    assert "10 replaced" in forced.stderr and "5 there already" in forced.stderr
    assert "| scpp3 | PNP | 5/5 | 0.00 |" in forced.stdout  # the imported (1)s now


def test_an_import_names_the_file_and_line_of_a_record_that_fits_no_item(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    state, url = server
    bad = tmp_path / "bad.jsonl"
    cases = {
        '{"id": 9, "subset": "swap_obj", "ordering": "NPP", "answer": "(1)"}':
            r"bad\.jsonl, line 2: item swap_obj/9 is not in the benchmark selection",
        '{"id": 0, "subset": "swap_obj", "ordering": "pos_first", "answer": "(1)"}':
            r"bad\.jsonl, line 2: item swap_obj/0 has 3 captions; prompt 'scpp3' with "
            r"ordering 'pos_first' does not fit it",
        '{"id": 0, "subset": "swap_obj", "ordering": "NPP", "answer": "(3)"}':
            r"bad\.jsonl, line 2: another answer for item swap_obj/0, scpp3, NPP than line "
            r"1's \('\(3\)', not '\(1\)'\)",
    }  # fmt: skip
    first = '{"id": 0, "subset": "swap_obj", "ordering": "NPP", "answer": "(1)"}'
    for line, message in cases.items():
        bad.write_text(f"{first}\n{line}\n", encoding="utf-8")
        res = _cli(url, bench, "--prompt", "scpp3", "--import", str(bad), "--replay-only")
        assert res.exit_code == 2 and re.search(message, res.output.replace("\n", " ")), res.output
    chat = OpenAIChat(f"openai:tiny-vlm?base_url={url}")
    with RequestStore(bench["cache"], fingerprint_key(chat.fingerprint)) as store:
        assert store.count("records") == 0  # nothing imported from a file with an error
    assert state.posts == 0


def test_shots_are_earlier_turns_and_part_of_the_key(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    state, url = server
    res = _cli(url, bench, "--prompt", "scpp3", "--shots", "1", "--shot-seed", "4")
    assert res.exit_code == 0, res.output
    assert "| scpp3 | PPN | 5/5 | 100.00 |" in res.stdout
    assert "1 demonstrations before each question (seed 4)" in res.stdout
    assert len(state.bodies) == 15
    for body in state.bodies:
        roles = [m["role"] for m in body["messages"]]
        assert roles == ["user", "assistant", "user"]
        demo, answer, question = body["messages"]
        assert [p["type"] for p in demo["content"]] == ["image_url", "text"]
        assert demo["content"][1]["text"] != question["content"][1]["text"]
        # the demonstration is answered rightly: the negative's position, options in the
        # question's ordering (the same marker position as the question's own negative)
        demo_options = re.findall(r"\((\d)\)\s*([^;]+?);", demo["content"][1]["text"] + ";")
        right = next(k for k, text in demo_options if text.strip() in NEGATIVES)
        assert answer["content"] == f"({right})"
        q_options = re.findall(r"\((\d)\)\s*([^;]+?);", question["content"][1]["text"] + ";")
        assert right == next(k for k, text in q_options if text.strip() in NEGATIVES)
    again = _cli(url, bench, "--prompt", "scpp3", "--shots", "1", "--shot-seed", "4")
    assert "15 answered from the store, 0 sent" in again.stderr
    other_seed = _cli(url, bench, "--prompt", "scpp3", "--shots", "1", "--shot-seed", "5",
                      "--replay-only")  # fmt: skip
    no_shots = _cli(url, bench, "--prompt", "scpp3", "--replay-only")
    assert "replay only: 15 requests have no stored answer" in no_shots.output
    # another seed draws other demonstrations for some items: those are new requests
    assert other_seed.exit_code == 2 and "replay only:" in other_seed.output
    too_many = _cli(url, bench, "--prompt", "scpp3", "--shots", "2")
    assert too_many.exit_code == 2
    assert "--shots 2: item replace_att/0: 2 shots need 2 other items of subset " in (
        too_many.output.replace("\n", " ")
    )


def test_answers_imported_with_shots_are_served_to_the_same_shots(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    state, url = server
    state.fail_all = True
    published = _recorded(tmp_path / "published.json", bench)
    published.write_text(  # a JSON list this time
        json.dumps([json.loads(line) for line in published.read_text().splitlines()])
    )
    shots = ["--prompt", "scpp3", "--shots", "1", "--shot-seed", "2"]
    res = _cli(url, bench, *shots, "--import", str(published), "--replay-only")
    assert res.exit_code == 0, res.output
    assert "15 answered from the store (15 imported), 0 sent" in res.stderr
    plain = _cli(url, bench, "--prompt", "scpp3", "--replay-only")  # other messages, other keys
    assert plain.exit_code == 2 and "replay only: 15 requests have no stored answer" in (
        plain.output
    )
    assert state.posts == 0
