"""`lm:` backend: causal-LM perplexity, a blind text scorer (`TextScorer`; lower is better).

**`lm:NAME` — `PerplexityScorer`** (any transformers `AutoModelForCausalLM`). Exactly the
"perplexity" of "The Role of Linguistic Priors in Measuring Compositional Generalization of
Vision-Language Models" (§4.1, Eq. 1): for the tokens x1..xn of a text, `PP(x) = −(1/(n−1))
Σ_{i=2..n} log P(x_i | x_1..x_{i−1})`, the mean negative log-likelihood in nats of tokens 2..n; x1
only conditions and is not scored. It is *not* exponentiated: exp(PP) is the textbook perplexity and
ranks the texts of one model identically, but AVG_LM averages these mean NLLs, as the paper defines
it. The tokens are what the tokenizer gives with its default special tokens: GPT-2 adds none, so x1
is the first word token; Llama/Gemma/OPT-style tokenizers prepend BOS, and then BOS is x1 (so every
word token is scored). Option `add_bos=true` prepends BOS when the tokenizer does not;
`add_bos=false` drops the BOS the tokenizer prepends. No other token is added (no EOS). A text of
fewer than two tokens (one word under GPT-2, or empty) has no scored token: its score is NaN.
`max_length` keeps the first `max_length` tokens (default: the tokenizer's `model_max_length` capped
by the model's position count).

Options: `add_bos`, and `revision`, `dtype`, `max_length`, `trust_remote_code` (see
`text_scorer.py` for what the blind scorers share).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.device import torch_dtype
from lexsem.models.options import COMMON, Option, flag
from lexsem.models.text_scorer import LazyTextScorer

__all__ = ["PerplexityScorer"]


class PerplexityScorer(LazyTextScorer):
    """The paper's "perplexity" (Eq. 1): the mean NLL of tokens 2..n under a causal LM (lower is
    better).

    `spec`: a NAME (hub id or local folder), an `lm:NAME?options` string or a parsed spec.
    `add_bos`: None (default) keeps the tokenizer's own special tokens; True prepends BOS when
    the tokenizer does not; False removes the BOS the tokenizer prepends.
    """

    backend: ClassVar[str] = "lm"
    description = "causal-LM perplexity (AutoModelForCausalLM): a blind text scorer"
    options: ClassVar[Mapping[str, Option]] = {**COMMON, "add_bos": flag(None)}
    lower_is_better = True

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.add_bos: bool | None = self.spec.get("add_bos")
        self._bos_edit = 0  # +1 prepend BOS, -1 drop the tokenizer's leading BOS, 0 as is

    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            "score": "mean-nll-tokens-2..n",
            "add_bos": "tokenizer-default" if self.add_bos is None else self.add_bos,
        }

    def _load(self) -> Any:
        from transformers import AutoModelForCausalLM

        tokenizer = self._load_tokenizer()
        model = self._from_pretrained(AutoModelForCausalLM, dtype=torch_dtype(self.dtype))
        self._bos_edit = self._bos_edit_for(tokenizer)
        self._limit = self._resolve_limit(tokenizer, model.config)
        self._tokenizer = tokenizer
        return self._place(model)

    def _bos_edit_for(self, tokenizer: Any) -> int:
        adds_bos = _tokenizer_adds_bos(tokenizer)
        if self.add_bos is True and not adds_bos:
            if tokenizer.bos_token_id is None:
                raise ModelError(f"{self.name}: add_bos=true, but the tokenizer has no BOS token")
            return 1
        if self.add_bos is False and adds_bos:
            return -1
        return 0

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """The token ids x1..xn each text is scored on (BOS handling and truncation applied);
        needs the model loaded (for the tokenizer)."""
        self._ensure_loaded()
        tok = self._tokenizer
        ids = tok(list(texts), add_special_tokens=True)["input_ids"]
        bos = tok.bos_token_id
        out: list[list[int]] = []
        for row in ids:
            row = list(row)
            if self._bos_edit == 1:
                row = [bos, *row]
            elif self._bos_edit == -1 and row[:1] == [bos]:
                row = row[1:]
            if self._limit is not None:
                row = row[: self._limit]
            out.append(row)
        return out

    def _score_all(self, texts: list[str], batch_size: int) -> np.ndarray:
        ids = self.token_ids(texts)
        out = np.full(len(texts), np.nan, dtype=np.float64)  # < 2 tokens: nothing scored
        order = sorted((i for i in range(len(ids)) if len(ids[i]) >= 2), key=lambda i: -len(ids[i]))
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            out[idx] = self._mean_nll([ids[i] for i in idx])
        return out

    def _mean_nll(self, rows: list[list[int]]) -> np.ndarray:
        """Mean NLL of tokens 2..n of each row (every row has ≥ 2 tokens), right-padded."""
        import torch

        input_ids, mask = self._padded(rows)
        out = self._model(input_ids=input_ids, attention_mask=mask, use_cache=False)
        logits = out.logits[:, :-1, :].to(torch.float32)  # position i-1 predicts token i
        targets = input_ids[:, 1:]
        nll = torch.logsumexp(logits, dim=-1) - logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        scored = mask[:, 1:].to(torch.float64)
        total = (nll.to(torch.float64) * scored).sum(dim=1)
        return (total / scored.sum(dim=1)).cpu().numpy()

    def _padded(self, rows: list[list[int]]) -> tuple[Any, Any]:
        """(input_ids, attention_mask) of the rows, right-padded, on the device."""
        import torch

        tok = self._tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        pad = pad if pad is not None else 0
        width = max(len(r) for r in rows)
        input_ids = torch.full((len(rows), width), int(pad), dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for j, r in enumerate(rows):
            input_ids[j, : len(r)] = torch.as_tensor(r, dtype=torch.long)
            mask[j, : len(r)] = 1
        return input_ids.to(self.device), mask.to(self.device)


def _tokenizer_adds_bos(tokenizer: Any) -> bool:
    """Whether the tokenizer prepends its BOS token by default (probed on a short text)."""
    bos = tokenizer.bos_token_id
    if bos is None:
        return False
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    without = tokenizer("a", add_special_tokens=False)["input_ids"]
    return with_special[:1] == [bos] and without[:1] != [bos]
