"""`openai:` backend: a chat model behind an OpenAI-compatible `/chat/completions` endpoint
(OpenAI, vLLM, llama.cpp's server, Ollama, ...), asked a prompt about an image.

Spec: `openai:MODEL?base_url=URL&max_tokens=64&temperature=0&key_env=OPENAI_API_KEY`
(and, for log-probabilities, `logprobs=top|prompt&top_logprobs=20`; for VQAScore,
`score=vqa|vqa_norm|vqa_diff&question=...&answer=Yes&negative=No`, `lexsem.models.vqascore`).
It is a `ChatModel` and a `LogprobChatModel` (`lexsem.models.protocols`): the engine asks it the
multiple-choice tasks and, through its log-probabilities, scores the image tasks by VQAScore.

- The image goes as a base64 data URL (`image_url`), before the text, in one user message.
- The key is read from the environment variable `key_env` (default `OPENAI_API_KEY`; none is
  sent when it is unset, as local servers expect) and is never written anywhere: not in the
  fingerprint, the store, run files or errors. A credential inside `base_url` (`user:KEY@`,
  `?api_key=KEY`) is sent as given and shown only as `***` (`lexsem.credentials`): in the
  model's name, its fingerprint (`endpoint`) and every error.
- `send` makes one request: HTTP 429, 5xx, time-outs, dropped connections and bodies that are
  not the JSON of a chat completion raise `RetryableError` (the engine retries with backoff); any
  other HTTP error is a `ModelError` (a wrong model name or URL is not retried). No connection
  at all (refused, unknown host) raises `ConnectionFailed` naming `base_url` without its
  userinfo: the engine stops the run when nothing has been answered yet.

The fingerprint holds everything that changes an answer: the endpoint, the model and the
generation parameters, so answers of one setting are never served for another.

Conversations (`ChatRequest`): several turns, user turns with any number of images (k-shot
demonstrations: earlier user/assistant turns before the question), and extra body fields.

Log-probabilities of an answer (`answer_logprob`, VQAScore through an API), two ways, chosen
by the option `logprobs`:

- `top` (default; OpenAI and every server with OpenAI's `logprobs`): one request with
  `logprobs=true, top_logprobs=<top_logprobs, 20>, max_tokens=1`; P(answer) is the sum of
  exp(logprob) over the entries of the first generated token's `top_logprobs` whose token,
  stripped and case-folded, is the answer's (`Yes`, ` yes`, `YES` ...; which ones were summed
  is recorded). An answer none of whose variants is among the top k gets probability 0 and the
  flag `below_top_k` (its true probability is below the k-th entry's, not 0).
- `prompt` (vLLM): one request per answer, the answer sent as the final assistant message and
  continued (`continue_final_message=true, add_generation_prompt=false, prompt_logprobs=1,
  max_tokens=1`); vLLM's `prompt_logprobs` is a list aligned to the prompt's tokens (the first
  `null`), each a `{token id: {logprob, rank, decoded_token}}` of the prompt's token and the
  top-1 (the prompt's token is the one entry, or the less likely of two); the answer's tokens
  are the last ones, found by their `decoded_token`s spelling the answer. P(answer) =
  exp(mean log-probability) of its tokens, as the local `vqa:` backend computes it. Only the
  last 64 entries of `prompt_logprobs` are kept in the stored response.

A response without the log-probabilities asked for, or whose last prompt tokens do not spell
the answer, raises `StopRun` (a `ModelError` every other request would repeat: the engine sends
nothing more). The `logprobs` settings are in each request's body (so in its store key), not in
the fingerprint: chat answers and log-probabilities of one model share its store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from lexsem.errors import RetryableError as Retryable
from lexsem.models.backends.openai_http import OpenAIEndpoint
from lexsem.models.chat import AnswerProb, ChatRequest, StopRun, Turn, chat_messages, data_url_part
from lexsem.models.options import Option, choice, positive_int
from lexsem.models.spec import ModelSpec
from lexsem.models.vqascore import VQA_OPTIONS, VQASettings

__all__ = ["OpenAIChat", "prompt_answer_prob", "top_answer_probs"]

BACKEND = "openai"
LOGPROB_MODES = ("top", "prompt")
KEPT_PROMPT_LOGPROBS = 64  # entries of vLLM's prompt_logprobs kept in the stored response


def _number(text: str) -> float:
    return float(text)


class OpenAIChat(OpenAIEndpoint):
    """A chat model asked a conversation (user turns with their images, assistant turns) per
    request (see the module doc)."""

    backend: ClassVar[str] = BACKEND
    description = "a chat model behind an OpenAI-compatible API: chat, log-probabilities"
    options: ClassVar[Mapping[str, Option]] = {
        "base_url": Option(str, "https://api.openai.com/v1"),
        "max_tokens": positive_int(64),
        "temperature": Option(_number, 0.0),
        "key_env": Option(str, "OPENAI_API_KEY"),
        "timeout": Option(_number, 60.0),
        "logprobs": choice(*LOGPROB_MODES, default="top"),
        "top_logprobs": positive_int(20),
        **VQA_OPTIONS,
    }
    concurrency = 64  # the most requests at a time; `EvalConfig.concurrency` picks fewer

    def __init__(self, spec: ModelSpec | str, *, name: str | None = None, **_: Any) -> None:
        super().__init__(spec, BACKEND, " (openai:MODEL?base_url=URL&...)", name)
        self.max_tokens = int(self.spec.get("max_tokens"))
        self.temperature = float(self.spec.get("temperature"))
        self.top_logprobs = int(self.spec.get("top_logprobs"))
        self.logprobs_mode = str(self.spec.get("logprobs"))
        self.vqascore = VQASettings.of(self.spec)

    @property
    def fingerprint(self) -> dict[str, Any]:
        """What changes the answer to a request: the endpoint, the model and the generation
        parameters (log-probability and VQAScore settings are in each request's body, or in
        the run's fingerprint, not here: chat answers and log-probabilities share a store)."""
        return {
            "backend": BACKEND,
            "base_url": self.endpoint,
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }

    def request_body(
        self, request: ChatRequest, image_part: Callable[[bytes], dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The body of `request`; each image rendered by `image_part` (default: a base64 data
        URL; the engine's store key renders it as its content key)."""
        return {
            "model": self.model,
            "messages": chat_messages(request, image_part or data_url_part, self.name),
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            **request.params,
        }

    # -- log-probabilities of an answer (VQAScore) ------------------------------------------
    def logprob_requests(
        self, image: bytes | None, question: str, answers: Sequence[str]
    ) -> list[ChatRequest]:
        """The requests that give P(answer) for each of `answers`: one (`top`) or one per
        answer (`prompt`); `answer_probs` reads their responses."""
        ask = ChatRequest.ask(question, image).turns
        if self.logprobs_mode == "top":
            params = {"max_tokens": 1, "logprobs": True, "top_logprobs": self.top_logprobs}
            return [ChatRequest(ask, params)]
        params = {"max_tokens": 1, "continue_final_message": True,
                  "add_generation_prompt": False, "prompt_logprobs": 1}  # fmt: skip
        return [ChatRequest((*ask, Turn("assistant", a)), params) for a in answers]

    def answer_probs(
        self, responses: Sequence[dict[str, Any]], answers: Sequence[str]
    ) -> dict[str, AnswerProb]:
        """P(answer) for each of `answers` from the raw responses to `logprob_requests`."""
        if self.logprobs_mode == "top":
            return top_answer_probs(responses[0], answers, self.endpoint)
        return {
            a: prompt_answer_prob(r, a, self.endpoint)
            for a, r in zip(answers, responses, strict=True)
        }

    def answer_logprob(
        self, image_bytes: bytes | None, question: str, answers: Sequence[str] = ("Yes", "No"),
        client: Any = None,
    ) -> dict[str, AnswerProb]:  # fmt: skip
        """P(answer) to `question` about the image, asked now (no store, no retries: the
        engine's `answer_probabilities` is the stored, retried way)."""
        import contextlib

        import httpx

        requests = self.logprob_requests(image_bytes, question, answers)
        with httpx.Client() if client is None else contextlib.nullcontext(client) as c:
            raws = [self.send(c, self.request_body(r))[1] for r in requests]
        return self.answer_probs(raws, answers)

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """One request: (the answer's text, the raw response JSON)."""
        resp = self.post(client, "/chat/completions", body)
        try:
            raw = resp.json()
            text = raw["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise Retryable(f"not a chat completion: {resp.text[:120]!r}") from None
        if not isinstance(text, str):
            raise Retryable(f"no text in the answer: {text!r}")
        return text, self._checked_logprobs(body, raw)

    def _checked_logprobs(self, body: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
        """`raw`, checked to hold the log-probabilities `body` asked for (`StopRun` if not;
        vLLM's prompt log-probs trimmed to their last entries)."""
        if body.get("logprobs"):
            top_answer_probs(raw, (), self.endpoint)
        if "prompt_logprobs" in body:
            answer = body["messages"][-1]["content"]
            prompt_answer_prob(raw, answer, self.endpoint)
            entries = raw["prompt_logprobs"]
            dropped = len(entries) - KEPT_PROMPT_LOGPROBS
            if dropped > 0:
                kept = entries[-KEPT_PROMPT_LOGPROBS:]
                raw = {**raw, "prompt_logprobs": kept, "lexsem_dropped_prompt_logprobs": dropped}
        return raw


def _no_logprobs(server: str, what: str) -> StopRun:
    return StopRun(
        f"this method needs log-probabilities; {server} returned none ({what}): use a server "
        "and model that return them (OpenAI's logprobs / top_logprobs, or vLLM with "
        "logprobs=prompt)"
    )


def top_answer_probs(
    raw: dict[str, Any], answers: Sequence[str], server: str = "the server"
) -> dict[str, AnswerProb]:
    """P(answer) from the top log-probabilities of the first generated token (OpenAI's
    `choices[0].logprobs.content[0].top_logprobs`, each `{token, logprob, bytes}`): the sum of
    exp(logprob) over the entries whose token, stripped and case-folded, is the answer's."""
    try:
        first = raw["choices"][0]["logprobs"]["content"][0]
    except (KeyError, IndexError, TypeError):
        raise _no_logprobs(server, "no choices[0].logprobs.content") from None
    entries = [e for e in first.get("top_logprobs") or [] if isinstance(e, dict)]
    if "token" in first and all(e.get("token") != first["token"] for e in entries):
        entries.append(first)  # the generated token, when the top list leaves it out
    try:
        pairs = [(str(e["token"]), float(e["logprob"])) for e in entries]
    except (KeyError, TypeError, ValueError):
        raise _no_logprobs(server, "top_logprobs entries without token and logprob") from None
    if not pairs:
        raise _no_logprobs(server, "an empty top_logprobs")
    out = {}
    for answer in answers:
        want = answer.strip().casefold()
        hits = [(t, lp) for t, lp in pairs if t.strip().casefold() == want]
        out[answer] = AnswerProb(
            answer, sum(math.exp(lp) for _, lp in hits), tuple(t for t, _ in hits),
            tuple(lp for _, lp in hits), below_top_k=not hits, mode="top",
        )  # fmt: skip
    return out


def prompt_answer_prob(raw: dict[str, Any], answer: str, server: str = "the server") -> AnswerProb:
    """P(`answer`) from vLLM's `prompt_logprobs` of a request whose last message is the answer
    (continued): the last prompt tokens whose decoded text spells the answer; exp(mean
    log-probability) over them."""
    entries = raw.get("prompt_logprobs") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or not entries:
        raise _no_logprobs(server, "no prompt_logprobs")
    want = answer.strip()
    tokens: list[str] = []
    logprobs: list[float] = []
    for entry in reversed(entries):
        token, lp = _prompt_token(entry, server)
        tokens.insert(0, token)
        logprobs.insert(0, lp)
        spelled = "".join(tokens).strip()
        if not spelled and len(tokens) == 1:
            break  # a whitespace token after the answer: the template added text after it
        if spelled == want:
            return AnswerProb(answer, math.exp(sum(logprobs) / len(logprobs)), tuple(tokens),
                              tuple(logprobs), mode="prompt")  # fmt: skip
        if not want.endswith(spelled):
            break
    raise StopRun(
        f"the last prompt tokens {tokens[-8:]!r} that {server} returned do not spell the "
        f"answer {answer!r} (a chat template that adds text after a continued message, or "
        "joins the answer with the text before it, is not supported)"
    )


def _prompt_token(entry: Any, server: str) -> tuple[str, float]:
    """The prompt's own token at one position of vLLM's `prompt_logprobs` (`{token id:
    {logprob, rank, decoded_token}}`: the prompt's token and the top-1, one entry when they are
    the same token): the least likely entry."""
    if not isinstance(entry, dict) or not entry:
        raise _no_logprobs(server, "a prompt_logprobs entry that is not a token map")
    try:
        best = min(entry.values(), key=lambda v: float(v["logprob"]))
        token, lp = best.get("decoded_token"), float(best["logprob"])
    except (AttributeError, KeyError, TypeError, ValueError):
        raise _no_logprobs(server, "prompt_logprobs entries without logprob") from None
    if not isinstance(token, str):
        raise _no_logprobs(server, "prompt_logprobs without decoded_token")
    return token, lp
