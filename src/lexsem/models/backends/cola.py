"""`cola:` backend: a CoLA grammar classifier, a blind text scorer (`TextScorer`; higher is better).

**`cola:NAME` — `GrammarScorer`** (`textattack/distilbert-base-uncased-CoLA`).
`AutoModelForSequenceClassification`, score = P(acceptable) = `softmax(logits)[:, k]`. The
acceptable class k: option `label` (an index or a label name), else the label named `acceptable`
in config.json's `id2label` when there is one, else 1. textattack's CoLA models keep the default
names `LABEL_0`/`LABEL_1` and follow GLUE CoLA (1 = acceptable, 0 = unacceptable); SugarCrepe's
`text_model_eval.py` scores `LABEL_1` as grammatical, so k = 1.

Options: `label`, and `revision`, `dtype`, `max_length`, `trust_remote_code` (see
`text_scorer.py` for what the blind scorers share).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.device import torch_dtype
from lexsem.models.hf_config import read_config
from lexsem.models.options import COMMON, Option
from lexsem.models.text_scorer import LazyTextScorer, takes_argument

__all__ = ["GrammarScorer"]


class GrammarScorer(LazyTextScorer):
    """P(acceptable) of a CoLA sequence classifier (higher is better; see the module doc).

    `spec`: a NAME (e.g. `textattack/distilbert-base-uncased-CoLA`), a `cola:NAME?options`
    string or a parsed spec. `label`: the acceptable class, an index or an `id2label` name.
    """

    backend: ClassVar[str] = "cola"
    description = "CoLA grammar classifier (sequence classification): a blind text scorer"
    options: ClassVar[Mapping[str, Option]] = {**COMMON, "label": Option(str)}
    lower_is_better = False

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        labels = self._labels(read_config(self.source.path))
        self.label_index = _label_index(self.spec.get("label"), labels)
        self.label_name = labels.get(self.label_index, f"LABEL_{self.label_index}")

    def _labels(self, config: dict[str, Any]) -> dict[int, str]:
        """config.json's `id2label` (empty when it has none); ModelError unless 2 labels."""
        labels: dict[int, str] = {}
        with contextlib.suppress(TypeError, ValueError, AttributeError):
            labels = {int(k): str(v) for k, v in (config.get("id2label") or {}).items()}
        n = config.get("num_labels") or (len(labels) if labels else 2)
        if n != 2:
            raise ModelError(
                f"{self.name}: a grammar (CoLA) classifier has 2 labels, this one has {n}"
            )
        return labels

    def _fingerprint_options(self) -> dict[str, Any]:
        return {"score": "softmax", "label": self.label_index}

    def _load(self) -> Any:
        from transformers import AutoModelForSequenceClassification

        tokenizer = self._load_tokenizer()
        model = self._from_pretrained(
            AutoModelForSequenceClassification, dtype=torch_dtype(self.dtype)
        )
        if model.config.num_labels != 2:
            raise ModelError(
                f"{self.name}: a grammar (CoLA) classifier has 2 labels, this one has "
                f"{model.config.num_labels}"
            )
        self._takes_token_types = takes_argument(model, "token_type_ids")
        self._limit = self._resolve_limit(tokenizer, model.config)
        self._tokenizer = tokenizer
        return self._place(model)

    def _score_batch(self, texts: list[str]) -> np.ndarray:
        import torch

        logits = self._model(**self._tokenize_padded(texts)).logits.to(torch.float64)
        return torch.softmax(logits, dim=-1)[:, self.label_index].cpu().numpy()


def _label_index(requested: str | None, labels: dict[int, str]) -> int:
    """The acceptable class: `requested` (an index or a label name), else the label named
    `acceptable`, else 1."""
    if requested is None:
        named = [i for i, v in labels.items() if v.strip().lower() == "acceptable"]
        return named[0] if named else 1
    if requested.strip().isdigit():
        index = int(requested)
        if index not in (0, 1):
            raise ModelError(f"option label={requested!r}: expected 0 or 1 (or a label name)")
        return index
    named = [i for i, v in labels.items() if v == requested]
    if not named:
        known = ", ".join(labels.values()) or "none"
        raise ModelError(f"option label={requested!r}: no such label (labels: {known})")
    return named[0]
