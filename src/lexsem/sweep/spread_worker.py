"""The worker of a spread encoding: one per Ray actor, the model loaded once, units encoded.

A text unit is a range of the batches of one chunk: the worker forms the chunk's batches as
one process does (`lexsem.engine.embed.batches`, the encoder's own order; kept for the
chunk's next unit) and makes one `encode_batch` call per batch. An image unit is a run of
whole batches of images: decoded and preprocessed as one process does
(`lexsem.engine.decoding`, the image's decode profile, the store's pixel limit) and encoded
one `encode_image_batch` call per batch; an image that fails is returned as a failure, not
encoded (its batch is encoded without it, as in one process). The worker never writes a
store: the driver does (`lexsem.sweep.spread`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lexsem.engine.decoding import DecodeDataset, decode_loader, on_cuda
from lexsem.engine.embed import batches, encode_batch
from lexsem.engine.image_embed import encode_image_batch
from lexsem.images.decode import DecodeProfile
from lexsem.images.refs import ImageError, ResolvedImage
from lexsem.models.protocols import fingerprint_key

__all__ = ["ImageResult", "SpreadWorker", "TextResult", "Unreadable"]

# (indices into the chunk, their vectors) per batch
TextResult = list[tuple[np.ndarray, np.ndarray]]
# per batch: (keys encoded, their vectors or None, failures as (key, reason, message))
ImageResult = list[tuple[list[str], np.ndarray | None, list[tuple[str, str, str]]]]


@dataclass(frozen=True)
class Unreadable:
    """An image the driver could not read, in its slot of a unit: the worker's decoding
    reports the same failure there, so the batch keeps the composition one process gives it."""

    ref: str
    reason: str
    detail: str

    def read(self) -> bytes:
        raise ImageError(self.detail, ref=self.ref, reason=self.reason)


class SpreadWorker:
    """Loads the model `spec` once (lazily, at its first unit) and encodes units."""

    def __init__(
        self,
        spec: str,
        *,
        device: str | None,
        dtype: str | None,
        offline: bool,
        plugins: tuple[str, ...] = (),
    ) -> None:
        from lexsem.models.factory import load_model
        from lexsem.sweep.job_run import import_plugins

        import_plugins(plugins)
        self.model = load_model(spec, device=device, dtype=dtype, offline=offline)
        self._chunk: tuple[int, list[np.ndarray]] | None = None

    def fingerprint_key(self) -> str:
        """The key of the model's fingerprint here (the driver checks it is its own)."""
        return fingerprint_key(self.model.fingerprint)

    def texts(
        self, index: int, texts: list[str], batch_range: range, batch_size: int
    ) -> TextResult:
        """Encode batches `batch_range` of chunk `index` (whose texts are `texts`)."""
        if self._chunk is None or self._chunk[0] != index:
            self._chunk = (index, batches(self.model, texts, batch_size))
        out: TextResult = []
        for idx in self._chunk[1][batch_range.start : batch_range.stop]:
            vecs = encode_batch(self.model, [texts[i] for i in idx], batch_size, None)
            out.append((idx, vecs))
        return out

    def images(
        self,
        entries: list[tuple[str, ResolvedImage | Unreadable]],
        profiles: dict[str, DecodeProfile],
        max_pixels: int,
        batch_size: int,
        num_workers: int,
    ) -> ImageResult:
        """Decode, preprocess and encode `entries` ((image key, its bytes)) batch by batch."""
        dataset = DecodeDataset(
            entries,  # type: ignore[arg-type]  # an Unreadable reads as a failing image
            self.model.preprocess,
            profiles=profiles,
            max_pixels=max_pixels,
        )
        loader = decode_loader(dataset, batch_size, num_workers, pin=on_cuda(self.model))
        out: ImageResult = []
        for batch in loader:
            keys = [entries[s][0] for s in batch.slots]
            failed = [(entries[s][0], str(r), str(m)) for s, r, m in batch.errors]
            vecs = encode_image_batch(self.model, batch.inputs, len(keys), None) if keys else None
            out.append((keys, vecs, failed))
        return out
