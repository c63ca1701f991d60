"""How a step reads its images: the options `embed_images` and `pair_scores` share, one object
that carries them to the scan (`lexsem.engine.image_scan`) and the decoding pipeline
(`lexsem.engine.decoding`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lexsem.clock import span
from lexsem.engine.decoding import Decoding, start_decoding
from lexsem.engine.image_scan import OnError, Scan, scan_for
from lexsem.engine.request_store import RequestStore
from lexsem.images.decode import Profiles
from lexsem.images.image_store import ImageStore
from lexsem.images.memory import DecodedImages

__all__ = ["ImageReading"]


@dataclass(frozen=True)
class ImageReading:
    """The keyword options of `embed_images` and `pair_scores` besides `batch_size`.

    num_workers: DataLoader workers; None picks `default_num_workers`.
    on_error: ``"raise"`` (default) — a missing/undecodable image raises `ImageError` naming
        it; ``"skip"`` — its row is NaN and it is listed in the returned `skipped`.
    labels: optional ``{ref: item label}`` named in errors (e.g. ``"sugarcrepe/swap_obj#12"``).
    exif_transpose: without `profiles`, apply the EXIF orientation (None: yes); with them, a
        boolean forces it on or off for every profile, None keeps each profile's.
    profiles: how each image is decoded (`lexsem.images.decode`): one `DecodeProfile` or preset
        name for all refs, or a mapping ref -> profile covering every ref; None: RGB first,
        EXIF as `exif_transpose` says (`flag_profile`). A ``rgb="model"`` profile hands
        raw-mode images only to a model that declares ``accepts_raw_mode = True``; other models
        get them converted to RGB first. Every decode variant has cache keys of its own
        (`image_key`).
    progress: show progress (`lexsem.engine.progress_bar`): a bar on a terminal, periodic lines
        when stderr is piped; it moves per batch. Ctrl-C raises `Interrupted`, which says how
        many results were saved in the cache.
    decoded: decoded images kept in memory across calls (`lexsem.images.memory`): images it
        holds are not read nor decoded again, images decoded now are added while its budget
        has room.
    """

    num_workers: int | None = None
    on_error: OnError = "raise"
    labels: Mapping[str, str] | None = None
    exif_transpose: bool | None = None
    profiles: Profiles = None
    progress: bool = False
    decoded: DecodedImages | None = None

    def scan(
        self,
        model: Any,
        refs: Sequence[str],
        store: ImageStore,
        cache: RequestStore | None,
        batch_size: int,
    ) -> Scan:
        """The checked scan of `refs` under `model`'s decode profiles (`scan_for`): the files
        read and hashed, timed as the run's `image_read`."""
        with span("image_read"):
            return scan_for(
                model, refs, store, cache, on_error=self.on_error, labels=self.labels,
                exif_transpose=self.exif_transpose, profiles=self.profiles, batch_size=batch_size,
            )  # fmt: skip

    def decode(
        self, model: Any, keys: Sequence[str], scan: Scan, store: ImageStore, batch_size: int
    ) -> Decoding:
        """Start decoding and preprocessing the images `keys` for `model` (`start_decoding`)."""
        return start_decoding(model, keys, scan, store, self.decoded, batch_size, self.num_workers)
