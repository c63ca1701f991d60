"""`hf:` backend: transformers `AutoTokenizer` + `AutoModel` and a pooling of the last hidden state.

- pooling `mean`: average of the non-padding token states (attention-mask aware, in float32);
  `cls`: the first non-padding token (the [CLS] token with right padding); `last`: the last
  non-padding token. All three find the tokens from the attention mask, so they are correct for
  left and right padding alike.
- padding: on the right by default. With right padding and an attention mask a text's embedding
  does not depend on which other texts share its batch (left padding shifts absolute positions),
  which the embedding cache relies on. `padding_side="left"` can be asked for in the constructor.
- EOS for `last` pooling: decoder embedders (e5-mistral, gte-Qwen, ...) are trained to read the
  state of an appended EOS token, but most of their tokenizers do not append one. So with `last`
  pooling, when the tokenizer has an EOS token and a tokenized text does not already end with it,
  it is appended (for a text at `max_length`, in place of its last token, so the length stays
  within `max_length`). Tokenizers without an EOS token (BERT-style, ending in [SEP]) are left as
  they are. Other poolings never add tokens.
- prefix/template are applied to the text before tokenizing; `max_length` truncates (default:
  the tokenizer's `model_max_length`, else the config's `max_position_embeddings`).
- encoder-decoder models (T5, ...) use their encoder. `trust_remote_code` is passed through
  (default False); weights are loaded in the requested dtype, `model.eval()`, under
  `torch.inference_mode()`, in batches of `batch_size`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.device import torch_dtype
from lexsem.models.options import COMMON, NORMALIZE, TEXT_INPUT, Option, choice
from lexsem.models.text_encoder import LazyTextEncoder
from lexsem.models.text_limit import padded_batch, tokenizer_limit

POOLINGS = ("mean", "cls", "last")


def pool(hidden: Any, attention_mask: Any, how: str) -> Any:
    """Pool token states (B, T, H) → (B, H) by `mean`, `cls` or `last` over the masked tokens."""
    import torch

    mask = attention_mask.to(hidden.device)
    if how == "mean":
        m = mask.unsqueeze(-1).to(torch.float32)
        return (hidden.to(torch.float32) * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
    rows = torch.arange(hidden.shape[0], device=hidden.device)
    if how == "cls":
        first = mask.to(torch.int64).argmax(dim=1)  # first 1 of each row
        return hidden[rows, first]
    if how == "last":
        t = mask.shape[1]
        last = t - 1 - mask.to(torch.int64).flip(dims=[1]).argmax(dim=1)  # last 1 of each row
        return hidden[rows, last]
    raise ModelError(f"unknown pooling {how!r}")


class HFTextEncoder(LazyTextEncoder):
    """TextEncoder over transformers `AutoModel` with mean/cls/last pooling (lazy)."""

    backend = "hf"
    description = "transformers AutoModel + pooling"
    options: ClassVar[Mapping[str, Option]] = {
        **COMMON,
        **TEXT_INPUT,
        **NORMALIZE,
        "pooling": choice(*POOLINGS, default="mean"),
    }
    _not_pickled = ("_model", "_tokenizer")

    def __init__(self, spec: Any, *, padding_side: str = "right", **kwargs: Any) -> None:
        """`padding_side`: `right` (the default: a text's embedding does not depend on its
        batch) or `left`; the other keyword arguments as for `LazyModel`."""
        if padding_side not in ("left", "right"):
            raise ModelError(f"padding_side must be left or right, got {padding_side!r}")
        super().__init__(spec, **kwargs)
        self.pooling: str = self.spec.pooling or "mean"
        self.padding_side = padding_side
        self._tokenizer: Any = None
        self._limit: int | None = None

    def _fingerprint_options(self) -> dict[str, Any]:
        fp: dict[str, Any] = {
            **super()._fingerprint_options(),
            "pooling": self.pooling,
            "padding_side": self.padding_side,
        }
        if self.pooling == "last":
            fp["eos"] = "append-if-missing"
        return fp

    def _load(self) -> Any:
        from transformers import AutoModel, AutoTokenizer

        device = self.device
        tokenizer = self._from_pretrained(AutoTokenizer)
        model = self._from_pretrained(AutoModel, dtype=torch_dtype(self.dtype))
        if getattr(model.config, "is_encoder_decoder", False):
            model = model.get_encoder()
        if tokenizer.pad_token is None:
            fallback = tokenizer.eos_token or tokenizer.unk_token
            if fallback is None:
                raise ModelError(f"{self.name}: the tokenizer has no pad, eos or unk token")
            tokenizer.pad_token = fallback
        limit = tokenizer_limit(tokenizer) or getattr(model.config, "max_position_embeddings", None)
        self._limit = self.max_length or limit
        tokenizer.padding_side = self.padding_side  # our own instance: right unless asked
        self._tokenizer = tokenizer
        model.to(device)
        model.eval()
        return model

    def tokenize(self, texts: list[str]) -> dict[str, Any]:
        """Formatted texts → a padded batch of torch tensors (needs the model loaded)."""
        tok = self._tokenizer
        limit = self._limit
        eos = tok.eos_token_id if self.pooling == "last" else None
        if eos is None:
            return padded_batch(tok, texts, limit)
        enc = tok(texts, truncation=limit is not None, max_length=limit, padding=False)
        features = {k: list(v) for k, v in enc.items()}
        for i, ids in enumerate(features["input_ids"]):
            if ids and ids[-1] == eos:
                continue
            keep = len(ids) if limit is None or len(ids) < limit else limit - 1
            for key, seq in features.items():
                extra = {"input_ids": eos, "attention_mask": 1}.get(
                    key, seq[i][-1] if seq[i] else 0
                )
                seq[i] = [*seq[i][:keep], extra]
        return tok.pad(features, padding=True, return_tensors="pt")

    def _token_lengths(self, texts: list[str]) -> list[int]:
        limit = self._limit
        enc = self._tokenizer(
            [self.spec.format_text(t) for t in texts],
            truncation=limit is not None,
            max_length=limit,
            return_attention_mask=False,
        )
        return [len(ids) for ids in enc["input_ids"]]

    def _encode_batches(self, texts: list[str], batch_size: int) -> np.ndarray:
        import torch

        model = self._model
        device = self.device
        formatted = [self.spec.format_text(t) for t in texts]
        out: list[np.ndarray] = []
        with torch.inference_mode():
            for start in range(0, len(formatted), batch_size):
                batch = self.tokenize(formatted[start : start + batch_size])
                batch = {k: v.to(device) for k, v in batch.items()}
                output = model(**batch)
                hidden = getattr(output, "last_hidden_state", None)
                if hidden is None:
                    hidden = output[0]
                emb = pool(hidden, batch["attention_mask"], self.pooling).to(torch.float32)
                if self.normalize:
                    emb = torch.nn.functional.normalize(emb, p=2, dim=1)
                out.append(emb.cpu().numpy())
        return np.concatenate(out, axis=0)
