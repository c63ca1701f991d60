"""`chat:` backend: a local transformers chat model (`AutoModelForCausalLM` and its tokenizer's
chat template) answering text conversations — a `ChatModel` (`lexsem.models.protocols`), so it
is a `lexsem build` generator (`generator = "chat:MODEL"`) and answers `lexsem ask` / `eval`
through the engine's request store like an API.

Spec: `chat:NAME?max_new_tokens=64&batch_size=16&temperature=0&top_p=1&seed=0&dtype=auto&
device=auto&revision=REV&blind=false`.

- A request body is the OpenAI-format body of the conversation (each turn's text) and every
  generation parameter: `max_new_tokens`, `temperature`, `top_p`, `seed` (a request's `params`
  may set these four, `max_tokens` as another name of `max_new_tokens`; any other is refused),
  so each is in the request's store key.
- A conversation is rendered by the tokenizer's chat template up to where the reply starts
  (`add_generation_prompt`); a tokenizer without one is an error. The answer is the generated
  tokens up to the first end-of-sequence token, special tokens removed, stripped.
- `temperature=0` (default): greedy decoding. Requests go `batch_size` at a time through
  `send_batch`, left-padded with an attention mask (the pad token, else EOS), each batch of
  prompts of similar length; the answers are the ones one-prompt-at-a-time `model.generate`
  gives (`tests/test_build_chat_local.py` checks it token for token), so `batch_size` is not in
  the fingerprint. `temperature>0`: sampling with `top_p`, seeded per request (`torch.manual_seed
  (seed)` before each), one request at a time, so a request's answer depends on it alone.
- Only lexsem's options say how it decodes: the model's own `generation_config` sampling and
  penalty settings (`do_sample`, `top_k`, `repetition_penalty`) are not applied.
- Text only: a request with an image is refused, unless `blind=true` (the images are dropped:
  a blind baseline, the model sees the text alone; `blind` is in the fingerprint).

Fingerprint: the model (hub commit at `revision`, or the folder's digest), dtype,
`max_new_tokens`, the decoding (`greedy`, or `sampling` with `temperature`, `top_p`, `seed`)
and `blind`. Weights load on the first answer: a rerun served from the store loads nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from lexsem.errors import ModelError
from lexsem.models.chat import ChatRequest
from lexsem.models.device import torch_dtype
from lexsem.models.lazy import LazyModel
from lexsem.models.options import COMMON, Option, flag, positive_int

__all__ = ["TextChat"]

REQUEST_PARAMS = ("max_new_tokens", "max_tokens", "temperature", "top_p", "seed")


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError("expected a number >= 0")
    return value


def _probability(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise ValueError("expected a number in (0, 1]")
    return value


def _seed(text: str) -> int:
    stripped = text.strip()
    if not (stripped.isascii() and stripped.isdigit()):
        raise ValueError("expected an integer >= 0")
    return int(stripped)


class TextChat(LazyModel):
    """A lazy `ChatModel`: a transformers causal LM answering text conversations, in batches
    (see the module doc)."""

    backend: ClassVar[str] = "chat"
    description = "a local chat model (transformers AutoModelForCausalLM, chat template): chat"
    options: ClassVar[Mapping[str, Option]] = {
        **{k: v for k, v in COMMON.items() if k != "max_length"},
        "device": Option(str),
        "max_new_tokens": positive_int(64),
        "batch_size": positive_int(16),
        "temperature": Option(_non_negative, 0.0),
        "top_p": Option(_probability, 1.0),
        "seed": Option(_seed, 0),
        "blind": flag(False),
    }
    concurrency = 1
    _not_pickled = ("_model", "_loaded_state", "_tokenizer")

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        if self._requested_device is None:
            self._requested_device = self.spec.get("device")
        self.max_new_tokens = int(self.spec.get("max_new_tokens"))
        self.batch_size = int(self.spec.get("batch_size"))
        self.temperature = float(self.spec.get("temperature"))
        self.top_p = float(self.spec.get("top_p"))
        self.seed = int(self.spec.get("seed"))
        self.blind = bool(self.spec.get("blind"))
        self._tokenizer: Any = None

    def _fingerprint_options(self) -> dict[str, Any]:
        out: dict[str, Any] = {"max_new_tokens": self.max_new_tokens, "blind": self.blind}
        if self.temperature == 0:
            return {**out, "decoding": "greedy"}
        return {**out, "decoding": "sampling", "temperature": self.temperature,
                "top_p": self.top_p, "seed": self.seed}  # fmt: skip

    # -- the ChatModel protocol --------------------------------------------------------------
    def request_body(self, request: ChatRequest, image_part: Any = None) -> dict[str, Any]:
        """The conversation's turns as text and every generation parameter (see the module)."""
        unknown = sorted(set(request.params) - set(REQUEST_PARAMS))
        if unknown:
            raise ModelError(
                f"{self.name}: a local chat model takes the request parameters "
                f"{', '.join(REQUEST_PARAMS)}; not {', '.join(unknown)}"
            )
        if any(t.images for t in request.turns) and not self.blind:
            raise ModelError(
                f"{self.name}: a text-only chat model cannot see the request's image; use a "
                "vlm: model for images, or blind=true to answer from the text alone"
            )
        params = dict(request.params)
        if "max_tokens" in params:
            params["max_new_tokens"] = params.pop("max_tokens")
        body: dict[str, Any] = {
            "model": self.spec.name,
            "messages": [{"role": t.role, "content": t.text} for t in request.turns],
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
        }
        body.update(params)
        return body

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """Answer one conversation."""
        return self.send_batch(client, [body])[0]

    def send_batch(
        self, client: Any, bodies: Sequence[dict[str, Any]]
    ) -> list[tuple[str, dict[str, Any]]]:
        """Answer each conversation, in order: the greedy ones in batches of similar length,
        the sampled ones one at a time (see the module)."""
        self._ensure_loaded()
        prompts = [self.prompt_ids(b["messages"]) for b in bodies]
        out: list[Any] = [None] * len(bodies)
        greedy: dict[int, list[int]] = {}
        for i, b in enumerate(bodies):
            if float(b["temperature"]) == 0:
                greedy.setdefault(int(b["max_new_tokens"]), []).append(i)
            else:
                out[i] = self._sampled(prompts[i], b)
        for n_new, idx in greedy.items():
            order = sorted(idx, key=lambda i: len(prompts[i]))
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                texts = self.generate([prompts[i] for i in rows], max_new_tokens=n_new)
                for i, text in zip(rows, texts, strict=True):
                    out[i] = text
        return [(text, {"local": self.spec.name, "prompt_tokens": len(p)})
                for text, p in zip(out, prompts, strict=True)]  # fmt: skip

    # -- generation --------------------------------------------------------------------------
    def prompt_ids(self, messages: list[dict[str, Any]]) -> list[int]:
        """The token ids of a conversation, rendered by the chat template up to the reply."""
        self._ensure_loaded()
        tok = self._tokenizer
        if not getattr(tok, "chat_template", None):
            raise ModelError(
                f"{self.name}: the tokenizer has no chat template (tokenizer_config.json "
                "chat_template); a chat: model needs one"
            )
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return list(tok(text, add_special_tokens=False)["input_ids"])

    def generate(self, prompts: Sequence[Sequence[int]], *, max_new_tokens: int) -> list[str]:
        """Greedy answers to token-id prompts, generated as one left-padded batch."""
        import torch

        model = self._ensure_loaded()
        width = max(len(p) for p in prompts)
        pad = self._pad_id()
        ids = torch.full((len(prompts), width), pad, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for j, p in enumerate(prompts):
            ids[j, width - len(p) :] = torch.as_tensor(list(p), dtype=torch.long)
            mask[j, width - len(p) :] = 1
        with torch.inference_mode():
            new = model.generate(
                input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=pad,
                repetition_penalty=1.0, top_k=None, top_p=None, temperature=None,
            )[:, width:]  # fmt: skip
        return [self._decode(row) for row in new.tolist()]

    def _sampled(self, prompt: Sequence[int], body: Mapping[str, Any]) -> str:
        import torch

        model = self._ensure_loaded()
        torch.manual_seed(int(body["seed"]))
        ids = torch.as_tensor([list(prompt)], dtype=torch.long, device=self.device)
        with torch.inference_mode():
            new = model.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=True,
                temperature=float(body["temperature"]), top_p=float(body["top_p"]), top_k=0,
                max_new_tokens=int(body["max_new_tokens"]), pad_token_id=self._pad_id(),
                repetition_penalty=1.0,
            )[0, len(prompt) :]  # fmt: skip
        return self._decode(new.tolist())

    def _eos_ids(self) -> set[int]:
        eos = self._model.generation_config.eos_token_id
        if eos is None:
            eos = self._tokenizer.eos_token_id
        return set(eos if isinstance(eos, list) else [eos]) - {None}

    def _pad_id(self) -> int:
        """The pad token, else EOS: the first that the model's embedding table holds (a
        tokenizer class may add a pad token of its own past the model's vocabulary)."""
        tok = self._tokenizer
        size = self._model.get_input_embeddings().num_embeddings
        for candidate in (tok.pad_token_id, tok.eos_token_id, *sorted(self._eos_ids())):
            if candidate is not None and 0 <= int(candidate) < size:
                return int(candidate)
        return 0

    def _decode(self, row: list[int]) -> str:
        """The answer of one row of generated ids: up to the first EOS, special tokens out."""
        eos = self._eos_ids()
        cut = next((k for k, t in enumerate(row) if t in eos), len(row))
        return str(self._tokenizer.decode(row[:cut], skip_special_tokens=True)).strip()

    # -- loading -----------------------------------------------------------------------------
    def _load(self) -> Any:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._tokenizer = self._from_pretrained(AutoTokenizer)
        model = self._from_pretrained(AutoModelForCausalLM, dtype=torch_dtype(self.dtype))
        model.to(self.device)
        model.eval()
        return model
