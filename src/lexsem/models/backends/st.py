"""`st:` backend: a sentence-transformers model, loaded lazily on the first `encode`.

The model's own pipeline (pooling, Dense, Normalize modules, default prompt) comes from its
files, which the fingerprint identifies. A `prefix` is passed as sentence-transformers' `prompt`
(prepended to every text; a model whose pooling excludes prompt tokens keeps doing so); a
`template` is filled in before encoding. `max_length` sets the model's `max_seq_length`;
`normalize` (default false) is `encode(normalize_embeddings=...)`. The weights are loaded from the
resolved local folder only (`local_files_only=True`), in the requested dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from lexsem.clock import span
from lexsem.models.device import torch_dtype
from lexsem.models.options import COMMON, NORMALIZE, TEXT_INPUT, Option
from lexsem.models.text_encoder import LazyTextEncoder


class SentenceTransformerEncoder(LazyTextEncoder):
    """TextEncoder over `sentence_transformers.SentenceTransformer` (lazy)."""

    backend = "st"
    description = "sentence-transformers"
    options: ClassVar[Mapping[str, Option]] = {**COMMON, **TEXT_INPUT, **NORMALIZE}
    option_hints: ClassVar[Mapping[str, str]] = {
        "pooling": "a sentence-transformers model's pooling is in its own config"
    }

    def _load(self) -> Any:
        from sentence_transformers import SentenceTransformer

        dtype = torch_dtype(self.dtype)
        try:
            model = SentenceTransformer(
                str(self.source.path),
                device=self.device,
                trust_remote_code=self.trust_remote_code,
                local_files_only=True,
                model_kwargs={"dtype": dtype},
            )
        except (OSError, ValueError, KeyError, ImportError) as exc:
            raise self._load_error(exc) from exc
        if self.dtype != "fp32":
            model.to(dtype=dtype)  # modules outside the transformer (Dense, ...) as well
        if self.max_length is not None:
            model.max_seq_length = self.max_length
        model.eval()
        return model

    def _formatted(self, texts: list[str]) -> list[str]:
        if self.spec.template is not None:
            return [self.spec.format_text(t) for t in texts]
        return texts

    def _token_lengths(self, texts: list[str]) -> list[int]:
        model = self._model
        prompt = self.spec.prefix or ""
        with span("tokenize"):  # the counts only: encode's own tokenizing is the tower's
            enc = model.tokenizer(
                [prompt + t for t in self._formatted(texts)],
                truncation=True,
                max_length=model.max_seq_length,
                return_attention_mask=False,
                return_token_type_ids=False,
            )
        return [len(ids) for ids in enc["input_ids"]]

    def _encode_batches(self, texts: list[str], batch_size: int) -> np.ndarray:
        # `texts` come in token-length order (`batch_order`); `SentenceTransformer.encode`
        # would re-sort a whole list by characters, so it gets one batch per call
        texts = self._formatted(texts)
        out = [
            self._model.encode(
                texts[start : start + batch_size],
                prompt=self.spec.prefix,
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=self.normalize,
                show_progress_bar=False,
            )
            for start in range(0, len(texts), batch_size)
        ]
        return np.concatenate(out, axis=0).astype(np.float32, copy=False)
