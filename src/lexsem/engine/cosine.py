"""Cosine similarities of embedding rows."""

from __future__ import annotations

import numpy as np


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (float32); zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, np.float32(1), norms)


def row_cosine(unit: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(unit[a[i]], unit[b[i]]) for each i, from already normalised rows (float32)."""
    return np.einsum("ij,ij->i", unit[a], unit[b], dtype=np.float32)
