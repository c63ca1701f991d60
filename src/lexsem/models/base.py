"""What both text-encoder backends share: a parsed spec, a resolved source, lazy loading.

An encoder is cheap to build: it parses its spec and finds the model's files (`source.py`), but
loads nothing. `fingerprint` needs no weights (nor torch, when the dtype is fixed or the machine
has no GPU). The weights are loaded on the first `encode` call, so a run served entirely from the
embedding cache never loads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.device import normalize_dtype, select_device, select_dtype
from lexsem.models.source import ModelSource, resolve_source
from lexsem.models.spec import ModelSpec, parse_model_spec

FINGERPRINT_VERSION = 1


class LazyTextEncoder:
    """Base class: subclasses set `backend` and implement `_load`, `_encode_batches` and
    `_fingerprint_options`."""

    backend: ClassVar[str] = ""
    # attributes a pickled copy leaves out (DataLoader workers under spawn need no weights); they
    # are loaded again on first use
    _not_pickled: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        spec: str | ModelSpec,
        *,
        source: ModelSource | None = None,
        device: str | None = None,
        dtype: str | None = None,
        max_length: int | None = None,
        offline: bool | None = None,
        name: str | None = None,
    ) -> None:
        parsed = parse_model_spec(spec) if isinstance(spec, str) else spec
        if parsed.backend != self.backend:
            raise ModelError(
                f"{type(self).__name__} is the {self.backend!r} backend, but the spec "
                f"{parsed.to_string()!r} is for {parsed.backend!r}"
            )
        if max_length is not None and (not isinstance(max_length, int) or max_length <= 0):
            raise ModelError(f"max_length must be a positive integer, got {max_length!r}")
        self.spec = parsed
        self.name = name or (spec if isinstance(spec, str) else parsed.alias or parsed.to_string())
        self.source = source or resolve_source(
            parsed.name, revision=parsed.revision, offline=offline
        )
        self.max_length = max_length if max_length is not None else parsed.max_length
        self.normalize = parsed.normalize
        self._requested_device = device
        # an explicit dtype argument wins over the spec's own dtype option
        self._requested_dtype = normalize_dtype(dtype) if dtype is not None else parsed.dtype
        self._device: str | None = None
        self._dtype: str | None = None
        self._model: Any = None
        self._dim: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(dict.fromkeys(self._not_pickled))
        return state

    # -- device and dtype (resolved on first use) -----------------------------------------------
    @property
    def device(self) -> str:
        if self._device is None:
            self._device = select_device(self._requested_device)
        return self._device

    @property
    def dtype(self) -> str:
        """The dtype name the model runs in (`fp32`, `fp16` or `bf16`)."""
        if self._dtype is None:
            if self._requested_dtype == "auto":
                self._dtype = select_dtype("auto", self.device)
            else:
                # a fixed dtype needs no device (and no torch) unless it is checked against a GPU
                dev = (self._device or self._requested_device or "cpu").lower()
                self._dtype = select_dtype(self._requested_dtype, dev if dev != "auto" else "cpu")
        return self._dtype

    @property
    def loaded(self) -> bool:
        """Whether the weights have been loaded (they are, on the first `encode`)."""
        return self._model is not None

    # -- the TextEncoder protocol -------------------------------------------------------------
    @property
    def fingerprint(self) -> dict[str, Any]:
        return {
            "fingerprint_version": FINGERPRINT_VERSION,
            "backend": self.backend,
            "model": self.source.identity(),
            "prefix": self.spec.prefix,
            "template": self.spec.template,
            "max_length": self.max_length,
            "normalize": self.normalize,
            "dtype": self.dtype,
            **self._fingerprint_options(),
        }

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """float32 C-contiguous embeddings, shape (len(texts), dim); loads the model first."""
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts, not one string")
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if len(texts) == 0:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        texts = list(texts)
        order = self.batch_order(texts)  # loads the model
        got = np.asarray(self._encode_batches([texts[i] for i in order], batch_size), np.float32)
        if got.ndim != 2 or got.shape[0] != len(texts):
            raise ModelError(
                f"{self.name}: got embeddings of shape {got.shape} for {len(texts)} texts"
            )
        out = np.empty_like(got, order="C")
        out[order] = got  # back to the caller's order
        self._dim = out.shape[1]
        return out

    def batch_order(self, texts: Sequence[str]) -> np.ndarray:
        """The order `encode` runs `texts` in: longest first, by the token count the model will
        see where the backend can count tokens (`_token_lengths`), else by characters. Batches
        of near-equal token counts carry little padding, which is most of the work saved over
        a character-sorted order. Ties keep their input order (stable). Loads the model (the
        token counts come from its tokenizer)."""
        self._ensure_loaded()
        lengths = self._token_lengths(list(texts))
        if lengths is None:
            lengths = [len(t) for t in texts]
        return np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")

    def describe(self) -> dict[str, Any]:
        """Run metadata: spec, backend, resolved source and identity, dtype, device."""
        return {
            "name": self.name,
            "spec": self.spec.to_string(),
            "alias": self.spec.alias,
            "backend": self.backend,
            "source": self.source.describe(),
            "device": self.device,
            "dtype": self.dtype,
            "max_length": self.max_length,
            "normalize": self.normalize,
            "trust_remote_code": self.spec.trust_remote_code,
            "fingerprint": self.fingerprint,
        }

    def __repr__(self) -> str:
        state = "loaded" if self.loaded else "not loaded"
        return f"{type(self).__name__}({self.spec.to_string()!r}, {state})"

    def _ensure_loaded(self) -> Any:
        """The loaded model (loading it on first use)."""
        if self._model is None:
            self._model = self._load()
        return self._model

    # -- for subclasses -----------------------------------------------------------------------
    def _load(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _encode_batches(self, texts: list[str], batch_size: int) -> np.ndarray:
        raise NotImplementedError  # pragma: no cover - abstract

    def _fingerprint_options(self) -> dict[str, Any]:
        return {}

    def _token_lengths(self, texts: list[str]) -> Sequence[int] | None:
        """Each text's token count as the model will see it (after prefix/template and
        truncation), for batching only; None: the backend pads to a fixed width, so sort by
        characters. Called with the model loaded."""
        return None

    def _load_error(self, exc: Exception) -> ModelError:
        msg = f"could not load model {self.name!r} from {self.source.path}: {exc}"
        if "trust_remote_code" in str(exc) and not self.spec.trust_remote_code:
            msg += (
                " — this model ships its own Python code; if you trust it, add "
                "trust_remote_code=true to the spec (…?trust_remote_code=true)"
            )
        return ModelError(msg)
