"""VQAScore through an API's log-probabilities, end to end against the fake OpenAI-compatible
server of `test_chat_api` (127.0.0.1): OpenAI's top log-probs of the first generated token
(variants of the answer summed, an answer below the top k flagged), vLLM's prompt log-probs of
a continued final assistant message, the request store (a rerun sends nothing), a server that
returns no log-probabilities (a clear error, and nothing more is sent), and `lexsem ask
--vqascore`."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.chat_server import NEGATIVES, ODD, Server
from lexsem.cli import app
from lexsem.engine.chat import answer_probabilities
from lexsem.engine.request_store import RequestStore
from lexsem.errors import LexsemError, ModelError
from lexsem.models.backends.openai_chat import OpenAIChat, prompt_answer_prob, top_answer_probs
from lexsem.models.chat import AnswerProb, StopRun
from lexsem.models.protocols import fingerprint_key


@dataclass
class _Pair:
    text: str
    score: float
    probs: dict[str, AnswerProb]


@dataclass
class _Result:
    pairs: list[_Pair]
    accuracy: dict[str, float] = field(default_factory=dict)  # per subset and "all"
    ties: dict[str, int] = field(default_factory=dict)
    below_top_k: dict[str, int] = field(default_factory=dict)


@dataclass
class _Stats:
    n_requests: int
    n_stored: int
    n_sent: int


def _vqa(url: str, bench: dict[str, Any], spec: str = "", score: str = "vqa",
         **kw: Any) -> tuple[_Result, _Stats]:  # fmt: skip
    """The API model's VQAScore run of the ITT task (`Evaluator.run`, as `ask --vqascore`):
    every pair's probabilities, the accuracy, ties and answers below top-k per subset."""
    from lexsem.config import EvalConfig
    from lexsem.evaluator import Evaluator

    chat = OpenAIChat(f"openai:tiny-vlm?base_url={url}{spec}&score={score}")
    cfg = EvalConfig(benchmarks=["fixture_pp"], tasks=["itt"], data_dir=bench["data"],
                     coco_val2017=bench["images"], cache_dir=bench["cache"], n_boot=0,
                     **kw)  # fmt: skip
    run = Evaluator(cfg).run(chat)
    rows = [r for r in run.items.to_pylist() if r["metric"] == "itt"]
    out = _Result([])
    for subset in [*dict.fromkeys(r["subset"] for r in rows), "all"]:
        mine = [r for r in rows if subset in (r["subset"], "all")]
        out.accuracy[subset] = 100.0 * sum(r["hit"] for r in mine) / len(mine)
        out.ties[subset] = sum(r["tie"] for r in mine)
        out.below_top_k[subset] = 0
        for r in mine:
            for col in ("s_i_p1", "s_i_p2", "s_i_n"):
                d = json.loads(r[f"detail_{col}"])
                probs = {
                    a: AnswerProb(a, p["p"], tuple(p["tokens"]), tuple(p["logprobs"]),
                                  p["below_top_k"])
                    for a, p in d["probs"].items()
                }  # fmt: skip
                out.below_top_k[subset] += sum(p.below_top_k for p in probs.values())
                if subset == "all":
                    out.pairs.append(_Pair(d["text"], d["score"], probs))
    t = run.record.timings
    return out, _Stats(t.n_requests, t.n_requests_stored, t.n_requests_sent)


def test_top_logprobs_sum_the_answer_variants_and_flag_answers_below_top_k(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    state, url = server
    result, stats = _vqa(url, bench, score="vqa_norm")
    assert stats.n_sent == 15 == len(state.bodies)  # one request per (image, caption)
    body = state.bodies[0]
    assert (body["logprobs"], body["top_logprobs"], body["max_tokens"]) == (True, 20, 1)
    assert body["messages"][-1]["content"][-1]["text"].startswith('Does this figure show "')
    for pair in result.pairs:
        yes, no = pair.probs["Yes"], pair.probs["No"]
        if pair.text == ODD:  # "No" is not among the top log-probabilities
            assert (no.prob, no.below_top_k, pair.score) == (0.0, True, 1.0)
        elif pair.text in NEGATIVES:
            assert yes.prob == pytest.approx(0.2) and yes.tokens == ("Yes",)
            assert no.prob == pytest.approx(0.75) and no.tokens == ("No", " no")
        else:
            assert yes.prob == pytest.approx(0.8) and yes.tokens == ("Yes", " yes")
            assert pair.score == pytest.approx(0.8 / 0.95)
    assert result.accuracy == {"swap_obj": 100.0, "replace_att": 100.0, "all": 100.0}
    assert result.below_top_k["all"] == 1 and result.ties["all"] == 0
    # a rerun sends nothing; the cap and replay-only refuse before sending
    posts = state.posts
    again, stats2 = _vqa(url, bench, score="vqa_norm", replay_only=True)
    assert state.posts == posts and stats2.n_stored == 15
    assert [p.score for p in again.pairs] == [p.score for p in result.pairs]
    with pytest.raises(LexsemError, match=r"15 requests would be sent, more than"):
        _vqa(url, bench, spec="&top_logprobs=5", max_requests=3)  # other settings, other keys
    assert state.posts == posts


def test_prompt_logprobs_read_the_continued_answer_tokens(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    state, url = server
    result, stats = _vqa(url, bench, spec="&logprobs=prompt", score="vqa_diff")
    assert stats.n_sent == 30  # one request per answer
    body = state.bodies[0]
    assert body["messages"][-1] == {"role": "assistant", "content": body["messages"][-1]["content"]}
    assert body["messages"][-1]["content"] in ("Yes", "No")
    assert (body["continue_final_message"], body["add_generation_prompt"],
            body["prompt_logprobs"], body["max_tokens"]) == (True, False, 1, 1)  # fmt: skip
    assert "logprobs" not in body
    for pair in result.pairs:
        p_yes = 0.2 if pair.text in NEGATIVES else (0.9 if pair.text == ODD else 0.8)
        yes = pair.probs["Yes"]
        # "Yes" is two tokens ("Ye", "s"): exp(mean log-probability), as the vqa: backend
        assert yes.tokens == ("Ye", "s") and yes.prob == pytest.approx(math.sqrt(p_yes))
        assert yes.logprobs[0] == pytest.approx(math.log(p_yes))  # not the more likely top-1
    assert result.accuracy["all"] == 100.0
    chat = OpenAIChat(f"openai:tiny-vlm?base_url={url}")
    with RequestStore(bench["cache"], fingerprint_key(chat.fingerprint)) as store:
        raws = [json.loads(json.dumps(r)) for r in store_records(store)]
    assert all(len(r["response"]["prompt_logprobs"]) == 64 for r in raws)  # trimmed
    assert {r["response"]["lexsem_dropped_prompt_logprobs"] for r in raws} == {19, 18}
    again, stats2 = _vqa(url, bench, spec="&logprobs=prompt", score="vqa_diff", replay_only=True)
    assert stats2.n_stored == 30 and [p.score for p in again.pairs] == [
        p.score for p in result.pairs
    ]
    only_yes, stats3 = _vqa(url, bench, spec="&logprobs=prompt", score="vqa", replay_only=True)
    assert stats3.n_requests == 15 and set(only_yes.pairs[0].probs) == {"Yes"}


def store_records(store: RequestStore) -> list[Any]:
    import sqlite3

    with sqlite3.connect(store.path) as conn:
        return [json.loads(doc) for (doc,) in conn.execute("SELECT doc FROM records")]


def test_a_server_without_logprobs_is_a_clear_error_and_nothing_more_is_sent(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    state, url = server
    state.no_logprobs = True
    for spec in ("", "&logprobs=prompt"):
        state.posts = 0
        with pytest.raises(
            ModelError,
            match=r"this method needs log-probabilities; http://127\.0\.0\.1:\d+/v1 returned none"
            r".*nothing more was sent",
        ):
            _vqa(url, bench, spec=spec, concurrency=1)
        assert state.posts == 1
    chat = OpenAIChat(f"openai:tiny-vlm?base_url={url}")
    with RequestStore(bench["cache"], fingerprint_key(chat.fingerprint)) as store:
        assert store.count("records") == 0


def test_answer_logprob_asks_one_image_now(server: tuple[Server, str], bench: dict[str, Any]):
    _, url = server
    image = (bench["images"] / "0.jpg").read_bytes()
    chat = OpenAIChat(f"openai:tiny-vlm?base_url={url}")
    probs = chat.answer_logprob(image, 'Does this figure show "a cat"? Please answer yes or no.')
    assert probs["Yes"].prob == pytest.approx(0.8) and probs["No"].prob == pytest.approx(0.15)


def test_the_engine_function_serves_pairs_in_order(
    server: tuple[Server, str], bench: dict[str, Any]
) -> None:
    _, url = server
    chat = OpenAIChat(f"openai:tiny-vlm?base_url={url}")
    image = (bench["images"] / "1.jpg").read_bytes()
    texts = [next(iter(NEGATIVES)), "a cat", ODD]
    probs, stats = answer_probabilities(
        chat, [(image, t) for t in texts], None, question='Is it "{text}"?', answers=("yes",)
    )
    assert [round(p["yes"].prob, 6) for p in probs] == [0.2, 0.8, 0.9]
    assert stats.n_sent == 3


def test_top_logprobs_parsing() -> None:
    raw = {"choices": [{"logprobs": {"content": [{
        "token": "Yes", "logprob": math.log(0.6),
        "top_logprobs": [{"token": "YES", "logprob": math.log(0.1)},
                         {"token": "no", "logprob": math.log(0.2)}],
    }]}}]}  # fmt: skip
    probs = top_answer_probs(raw, ("Yes", "No", "Maybe"))
    # the generated token counts when the top list leaves it out
    assert probs["Yes"].prob == pytest.approx(0.7) and probs["Yes"].tokens == ("YES", "Yes")
    assert probs["No"].prob == pytest.approx(0.2)
    assert probs["Maybe"].below_top_k and probs["Maybe"].prob == 0.0
    for bad in ({"choices": [{"message": {"content": "Yes"}}]}, {"choices": [{"logprobs": None}]}):
        with pytest.raises(StopRun, match=r"needs log-probabilities; the server returned none"):
            top_answer_probs(bad, ("Yes",))


def test_prompt_logprobs_parsing() -> None:
    def entry(token: str, lp: float) -> dict[str, Any]:
        return {"5": {"logprob": lp, "rank": 1, "decoded_token": token}}

    raw = {"prompt_logprobs": [None, entry("assistant", -1.0), entry("\n", -0.1),
                               entry(" Yes", -0.2)]}  # fmt: skip
    p = prompt_answer_prob(raw, "Yes")
    assert p.tokens == (" Yes",) and p.prob == pytest.approx(math.exp(-0.2))
    merged = {"prompt_logprobs": [None, entry(":Yes", -0.2)]}  # the answer joined to the text
    trailing = {"prompt_logprobs": [None, entry("Yes", -0.2), entry("\n", -0.1)]}
    for bad in (merged, trailing):
        with pytest.raises(StopRun, match=r"do not spell the answer 'Yes'"):
            prompt_answer_prob(bad, "Yes")
    with pytest.raises(StopRun, match=r"returned none \(no prompt_logprobs\)"):
        prompt_answer_prob({"choices": []}, "Yes")


def test_ask_vqascore_from_the_cli(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    state, url = server
    out = tmp_path / "scores.jsonl"
    common = ["-m", f"openai:tiny-vlm?base_url={url}", "-b", "fixture_pp",
              "--data-dir", str(bench["data"]), "--coco-val2017", str(bench["images"]),
              "--cache-dir", str(bench["cache"])]  # fmt: skip
    res = CliRunner().invoke(app, ["ask", *common, "--vqascore", "--score", "vqa", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "| swap_obj | 3 | 100.00 | 0 | 0 | ITT: s(I,P1) > s(I,N) and s(I,P2) > s(I,N) |" in (
        res.stdout
    )
    assert "| all | 5 | 100.00 | 0 | 1 |" in res.stdout
    assert "15 requests: 0 answered from the store, 15 sent" in res.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 15 and {r["role"] for r in rows} == {"p1", "p2", "n"}
    assert all(r["generator"] == "lexsem" for r in rows)  # lexsem's: replaced by a rerun
    assert rows[0]["probs"]["Yes"]["tokens"] == ["Yes", " yes"]
    replay = CliRunner().invoke(app, ["ask", *common, "--vqascore", "--replay-only"])
    assert replay.exit_code == 0 and "15 answered from the store, 0 sent" in replay.stderr
    assert state.posts == 15
    mixed = CliRunner().invoke(app, ["ask", *common, "--vqascore", "--prompt", "scpp3"])
    assert mixed.exit_code == 2 and "--vqascore asks no multiple-choice prompt" in mixed.output
    neither = CliRunner().invoke(app, ["ask", *common])
    assert neither.exit_code == 2 and "give --prompt" in neither.output
    bad_score = CliRunner().invoke(app, ["ask", *common, "--vqascore", "--score", "itm"])
    assert bad_score.exit_code == 2 and "unknown --score 'itm'" in bad_score.output


def test_ask_writes_runs_that_compare_like_local_runs(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    """`ask --run`: the API's VQAScores (ITT) and multiple-choice answers become run folders;
    a replay writes the same run; `compare` reads them."""
    from lexsem.results.run import Run
    from lexsem.stats.bootstrap import MICRO

    _, url = server
    common = ["-m", f"openai:tiny-vlm?base_url={url}", "-b", "fixture_pp",
              "--data-dir", str(bench["data"]), "--coco-val2017", str(bench["images"]),
              "--cache-dir", str(bench["cache"])]  # fmt: skip
    res = CliRunner().invoke(app, ["ask", *common, "--vqascore", "--run", str(tmp_path / "v")])
    assert res.exit_code == 0, res.output
    vqa = Run.load(tmp_path / "v")
    assert vqa.record.config.tasks == ["itt"] and vqa.record.model.name == "tiny-vlm"
    assert vqa.accuracy(vqa.record.benchmarks[0].name, "itt", MICRO) == 100.0  # as printed
    assert vqa.record.model.fingerprint["vqascore"]["score"] == "vqa"
    again = CliRunner().invoke(
        app, ["ask", *common, "--vqascore", "--replay-only", "--run", str(tmp_path / "v2")]
    )
    assert again.exit_code == 0, again.output
    assert Run.load(tmp_path / "v2").record.run_id == vqa.record.run_id
    kept = CliRunner().invoke(app, ["ask", *common, "--vqascore", "--run", str(tmp_path / "v")])
    assert kept.exit_code != 0 and "--force" in kept.output  # never overwritten unasked
    mc = CliRunner().invoke(
        app, ["ask", *common, "--prompt", "scpp3", "--run", str(tmp_path / "m"), "--name", "mc"]
    )
    assert mc.exit_code == 0, mc.output
    run = Run.load(tmp_path / "m")
    assert run.record.config.tasks == ["choice_scpp3"] and run.record.model.name == "mc"
    assert {r.metric for r in run.record.results} == {"NPP", "PNP", "PPN", "circular"}
    # the prompt is the task's (config.tasks, part of the run id); the model's store is one
    assert run.record.model.fingerprint["backend"] == "openai"
    assert "api_key" not in json.dumps(run.record.model.fingerprint).lower()


def test_ask_vqascore_on_two_image_items_gives_a_bivlc_run(
    server: tuple[Server, str], tmp_path: Path
) -> None:
    """BiVLC-style items (two images, two captions): every image with every caption is asked,
    and the run has the benchmark's I2T / T2I / group metrics."""
    from lexsem.results.run import Run

    state, url = server
    common = ["-m", f"openai:tiny-vlm?base_url={url}", "-b", "synthetic_bi/swap_att",
              "--cache-dir", str(tmp_path / "c")]  # fmt: skip
    res = CliRunner().invoke(app, ["ask", *common, "--vqascore", "--run", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    run = Run.load(tmp_path / "b")
    n_items = run.record.results[0].items_total
    assert state.posts == 4 * n_items  # (I0, C0), (I0, C1), (I1, C0), (I1, C1) per item
    assert {r.metric for r in run.record.results} >= {"i2t", "t2i", "group"}
    assert "group: I2T" in res.stdout
