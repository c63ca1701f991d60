"""Store fixtures: a store in the first on-disk layout, and a pair scorer that counts its calls."""

from __future__ import annotations

import hashlib
import io
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from builders.backends import optional_import
from lexsem.images.decode import decode_image

torch = optional_import("torch")

MODEL = "0123abcd" * 8  # looks like a fingerprint key


def write_v1_store(root: Path, model_key: str, keys: list[str], vecs: np.ndarray) -> Path:
    """A schema-1 cache file exactly as lexsem's first `EmbeddingCache` wrote it."""
    path = root / "embeddings" / f"{model_key}.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS vectors ("
            " key TEXT PRIMARY KEY, dim INTEGER NOT NULL, vec BLOB NOT NULL, digest BLOB NOT NULL)"
        )
        conn.executemany(
            "INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)",
            [("model_key", model_key), ("schema_version", "1")],
        )
        rows = []
        for k, v in zip(keys, np.asarray(vecs, dtype="<f4"), strict=True):
            blob = v.tobytes()
            rows.append((k, len(v), blob, hashlib.blake2b(blob, digest_size=8).digest()))
        conn.executemany("INSERT INTO vectors (key, dim, vec, digest) VALUES (?, ?, ?, ?)", rows)
        conn.commit()
    finally:
        conn.close()
    return path


def _to_tensor(image: Any) -> torch.Tensor:
    arr = np.asarray(image.resize((8, 8), Image.BILINEAR), dtype=np.float32) / 255.0
    return torch.from_numpy(arr).permute(2, 0, 1).contiguous()


class FakePairScorer:
    """score = mean pixel value + len(text) / 100."""

    name = "fake-pairs"

    def __init__(self) -> None:
        self.pairs: list[str] = []

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-pairs"}

    def preprocess(self, image: Any) -> torch.Tensor:
        return _to_tensor(image)

    def score(self, images: torch.Tensor, texts: Sequence[str]) -> np.ndarray:
        assert images.shape[0] == len(texts)
        self.pairs.extend(texts)
        means = images.reshape(images.shape[0], -1).mean(dim=1).numpy()
        return means + np.array([len(t) / 100 for t in texts], dtype=np.float32)

    def direct(self, data: bytes, text: str) -> float:
        return float(self.preprocess(decode_image(data)).mean()) + len(text) / 100


def _noise(w: int, h: int, seed: int, fmt: str, mode: str = "RGB", **save: Any) -> bytes:
    rng = np.random.default_rng(seed)
    channels = 3 if mode == "RGB" else 1
    arr = rng.integers(0, 256, size=(h, w, channels) if channels == 3 else (h, w), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr, mode).save(buf, format=fmt, **save)
    return buf.getvalue()
