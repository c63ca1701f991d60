"""`vera:` backend: Vera plausibility, a blind text scorer (`TextScorer`; higher is better).

**`vera:NAME` — `PlausibilityScorer`** (`liujch1998/vera`). Vera is a T5 encoder whose scalar head
lives in its input-embedding matrix, as in its model card, its demo and SugarCrepe's
`text_model_eval.py`: `T5EncoderModel`, the last hidden state of the last non-padding token (the
`</s>` the T5 tokenizer appends), `logit = w·h + b` with `w = shared.weight[32099]`,
`b = shared.weight[32098, 0]`, and a temperature `t = shared.weight[32097, 0]`; the score is
`sigmoid(logit / t)` (the calibrated score Vera reports and SugarCrepe used), or `sigmoid(logit)`
with `calibrate=false`. Inputs are truncated to `max_length` tokens, default 128 as in that code.
The head is applied in float32 (the reference applies it in the model dtype; identical in fp32).
Vera is T5-v1.1-XXL sized (~5B parameters): fp32 needs ~20 GB; on a GPU `dtype=auto` gives bf16
(T5 is known to overflow in fp16).

Options: `calibrate`, and `revision`, `dtype`, `max_length`, `trust_remote_code` (see
`text_scorer.py` for what the blind scorers share).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.device import torch_dtype
from lexsem.models.options import COMMON, Option, flag, positive_int
from lexsem.models.text_scorer import LazyTextScorer, in_length_batches

__all__ = ["VERA_BIAS_ROW", "VERA_TEMPERATURE_ROW", "VERA_WEIGHT_ROW", "PlausibilityScorer"]

# Vera's head, stored in rows of `shared.weight` (model card / demo / SugarCrepe code)
VERA_WEIGHT_ROW = 32099  # (D,) the linear head's weight
VERA_BIAS_ROW = 32098  # [.., 0]: its bias
VERA_TEMPERATURE_ROW = 32097  # [.., 0]: the calibration temperature


class PlausibilityScorer(LazyTextScorer):
    """Vera's plausibility score `sigmoid(logit / t)` (higher is better; see the module doc).

    `spec`: a NAME (hub id or local folder, e.g. `liujch1998/vera`), a `vera:NAME?options`
    string or a parsed spec. `calibrate=False` gives the uncalibrated `sigmoid(logit)`.
    """

    backend: ClassVar[str] = "vera"
    description = "Vera plausibility (T5 encoder + scalar head): a blind text scorer"
    options: ClassVar[Mapping[str, Option]] = {
        **COMMON,
        "max_length": positive_int(128),  # as in SugarCrepe's text_model_eval.py
        "calibrate": flag(True),
    }
    lower_is_better = False
    _not_pickled = ("_model", "_tokenizer", "_head")

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.calibrate: bool = self.spec.get("calibrate")
        self._head: tuple[Any, Any, float] | None = None  # (w float32 (D,), b float32 (), t)

    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            "head": (
                f"last-token; shared.weight[{VERA_WEIGHT_ROW}], [{VERA_BIAS_ROW},0], "
                f"t=[{VERA_TEMPERATURE_ROW},0]"
            ),
            "calibrate": self.calibrate,
        }

    def _load(self) -> Any:
        tokenizer = self._load_tokenizer()
        model = self._load_encoder()
        head = self._read_head(model.shared.weight)
        self._limit = self._resolve_limit(tokenizer, model.config)
        self._tokenizer = tokenizer
        model = self._place(model)
        self._head = head
        return model

    def _load_encoder(self) -> Any:
        from transformers import T5EncoderModel

        model, info = self._from_pretrained(
            T5EncoderModel,
            remote_code=False,
            dtype=torch_dtype(self.dtype),
            output_loading_info=True,
        )
        self._check_weights(
            info,
            "of a T5 encoder",
            "is it a Vera (T5 encoder) checkpoint?",
            prefixes=("shared.", "encoder."),
        )
        return model

    def _read_head(self, shared: Any) -> tuple[Any, Any, float]:
        """(w, b, t) from the embedding matrix, w and b in float32 on the device."""
        import torch

        if shared.shape[0] <= VERA_WEIGHT_ROW:
            raise ModelError(
                f"{self.name}: the embedding matrix has {shared.shape[0]} rows, but Vera's head "
                f"is stored in rows {VERA_TEMPERATURE_ROW}-{VERA_WEIGHT_ROW}; is it a Vera "
                f"checkpoint?"
            )
        with torch.no_grad():
            w = shared[VERA_WEIGHT_ROW, :].detach().to(torch.float32).clone()
            b = shared[VERA_BIAS_ROW, 0].detach().to(torch.float32).clone()
            t = float(shared[VERA_TEMPERATURE_ROW, 0].item())
        if not math.isfinite(t) or t == 0.0:
            raise ModelError(f"{self.name}: Vera's temperature (shared[32097, 0]) is {t}")
        return w.to(self.device), b.to(self.device), t

    def logits(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """Vera's uncalibrated logits `w·h + b` (float64, shape (n,)); loads the model first."""
        return self._inference(
            texts,
            batch_size,
            "logits",
            lambda t, n: in_length_batches(t, n, lambda b: self._logits(b).cpu().numpy()),
        )

    def _logits(self, texts: list[str]) -> Any:
        import torch

        from lexsem.models.backends.hf import pool

        assert self._head is not None
        w, b, _ = self._head
        batch = self._tokenize_padded(texts)
        hidden = self._model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).last_hidden_state
        last = pool(hidden, batch["attention_mask"], "last").to(torch.float32)  # (B, D)
        return (last @ w + b).to(torch.float64)

    def _score_batch(self, texts: list[str]) -> np.ndarray:
        import torch

        assert self._head is not None
        logit = self._logits(texts)
        if self.calibrate:
            logit = logit / self._head[2]
        return torch.sigmoid(logit).cpu().numpy()
