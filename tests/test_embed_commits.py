"""Text vectors are committed to the store in batches (at least every `COMMIT_EVERY_S`): what
is stored is what was returned, even from an encoder that reuses its output buffer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest


class _BufferEncoder:
    """Returns views of one reused output buffer, as some encoders do."""

    name = "buffer"

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-buffer"}

    def __init__(self) -> None:
        self.buf = np.zeros((64, 4), np.float32)

    def encode(self, texts: Any, *, batch_size: int = 64) -> np.ndarray:
        for i, t in enumerate(texts):
            self.buf[i] = [len(t), t.count("a"), t.count("e"), 1.0]
        return self.buf[: len(texts)]


def test_stored_vectors_are_copies_of_reused_encoder_buffers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lexsem.engine import embed
    from lexsem.engine.request_store import RequestStore

    monkeypatch.setattr(embed, "COMMIT_EVERY_S", 3600.0)  # batches wait for the chunk's end
    texts = [f"text {'a' * i}{'e' * (i % 5)}" for i in range(40)]
    with RequestStore(tmp_path, "buffer") as store:
        got, _ = embed.embed_texts(_BufferEncoder(), texts, store, batch_size=8)
        again, stats = embed.embed_texts(_BufferEncoder(), texts, store, batch_size=8)
    assert stats.n_cached == 40
    np.testing.assert_array_equal(again, got)
