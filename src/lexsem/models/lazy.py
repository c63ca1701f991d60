"""`LazyModel`: what every model backend shares — a checked spec, a resolved source, lazy weights.

A model is cheap to build: it parses its spec (checked against the backend's declared `options`),
finds the model's files (`source.py`) and loads nothing. `fingerprint` needs no weights (nor
torch, when the dtype is fixed or the machine has no GPU): it is the cache key of everything the
model computes, so a run served entirely from the cache never loads them. The weights are loaded
on first use (`_ensure_loaded`), and a pickled copy (DataLoader workers under spawn) carries none.

A backend subclass sets `backend`, `description` and `options` (and `option_hints`: why an
option it does not take is refused), implements `_load`, and adds what changes its outputs with
`_fingerprint_options`. Keyword arguments of the constructor override the spec's options.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from lexsem.clock import span
from lexsem.errors import LexsemError, ModelError
from lexsem.models.device import DtypeChoice, dtype_choice, select_device
from lexsem.models.host_memory import keep_freed_memory
from lexsem.models.integrity import check_model_files, check_safe_pickles
from lexsem.models.options import COMMON, Option
from lexsem.models.source import resolve_source, weight_files
from lexsem.models.spec import ModelSpec, parse_model_spec
from lexsem.models.weights import weights_digest, weights_state

FINGERPRINT_VERSION = 1
F = TypeVar("F", bound=Callable[..., Any])


class LazyModel:
    """Base class of every backend; see the module doc."""

    backend: ClassVar[str] = ""
    description: ClassVar[str] = ""
    options: ClassVar[Mapping[str, Option]] = COMMON
    option_hints: ClassVar[Mapping[str, str]] = {}
    # attributes a pickled copy leaves out, and `unload` drops; loaded again on first use
    _not_pickled: ClassVar[tuple[str, ...]] = ("_model", "_loaded_state")

    def __init__(
        self,
        spec: str | ModelSpec | Any,
        *,
        source: Any = None,
        device: str | None = None,
        offline: bool | None = None,
        name: str | None = None,
        **options: object,
    ) -> None:
        self.spec = self._parse_spec(spec, options)
        self.name = name or (spec if isinstance(spec, str) else self.spec.alias or self.spec_string)
        self._offline = offline
        self.source = source or self._resolve_source()
        self.max_length: int | None = self.spec.max_length
        self.trust_remote_code = self.spec.trust_remote_code
        self._requested_device = device
        self._requested_dtype = self.spec.dtype
        self._device: str | None = None
        self._dtype: str | None = None
        self._dtype_why: str | None = None
        self._model: Any = None

    def _parse_spec(self, spec: str | ModelSpec | Any, overrides: dict[str, object]) -> ModelSpec:
        """`spec` (a spec string, a bare NAME of this backend, a `ModelSpec` or anything with
        `backend`, `name` and `options`) with the keyword options set."""
        if isinstance(spec, str):
            parsed = parse_model_spec(spec, backend=self.backend)
        elif isinstance(spec, ModelSpec):
            parsed = spec
        else:
            parsed = ModelSpec(
                spec.backend, spec.name, dict(spec.options or {}), getattr(spec, "alias", None)
            )
        if parsed.backend != self.backend:
            raise ModelError(
                f"{type(self).__name__} is the {self.backend!r} backend, but the spec "
                f"{parsed.to_string()!r} is for backend {parsed.backend!r}"
            )
        return parsed.with_options(**overrides)

    @classmethod
    def offline_needs(cls, spec: ModelSpec) -> str | None:
        """None when the model of `spec` can be built here without the network, else what it
        needs (one line). NAME is a local folder, a packaged offline copy or in the Hugging Face
        cache; a backend whose files live elsewhere says so by overriding this."""
        try:
            resolve_source(spec.name, offline=True, backend=spec.backend)
        except LexsemError:
            return f"the Hugging Face Hub: {spec.name}"
        return None

    def _resolve_source(self) -> Any:
        """Where the model's files are and what identifies them (no weights are read)."""
        return resolve_source(
            self.spec.name,
            revision=self.spec.revision,
            offline=self._offline,
            backend=self.spec.backend,
        )

    def check_files(self) -> None:
        """Fail now, with a `ModelError` naming the file, when a model file cannot be read or a
        weight file is damaged (`integrity.py`: headers and file ends only), rather than after
        the benchmarks are loaded. Also computes the source's identity (memoised; the
        fingerprint needs it), which reads the files of a local folder."""
        path = getattr(self.source, "path", None)
        if path is not None and Path(path).exists():
            check_model_files(Path(path), weight_files(path))
        identity = getattr(self.source, "identity", None)
        if callable(identity):
            identity()

    @property
    def spec_string(self) -> str:
        """The canonical `BACKEND:NAME[?options]` string (options sorted, values URL-encoded)."""
        return self.spec.to_string()

    # -- device and dtype (resolved on first use) -----------------------------------------------
    @property
    def device(self) -> str:
        if self._device is None:
            self._device = select_device(self._requested_device)
        return self._device

    @property
    def dtype(self) -> str:
        """The dtype name the model runs in (`fp32`, `fp16` or `bf16`)."""
        return self._dtype_choice().name

    @property
    def dtype_reason(self) -> str | None:
        """Why `dtype` is what it is, in one line, where the spec asked for `dtype=auto` (e.g.
        `auto: bf16, this CPU has native bf16 (amx_bf16)`); None otherwise."""
        return self._dtype_choice().reason

    def _dtype_choice(self) -> DtypeChoice:
        if self._dtype is None:
            if self._requested_dtype in (None, "auto"):
                choice = dtype_choice(self._requested_dtype, self.device)
            else:
                # a fixed dtype needs no device (and no torch) unless it is checked against a GPU
                dev = (self._device or self._requested_device or "cpu").lower()
                choice = dtype_choice(self._requested_dtype, dev if dev != "auto" else "cpu")
            self._dtype, self._dtype_why = choice.name, choice.reason
        return DtypeChoice(self._dtype, self._dtype_why)

    @property
    def loaded(self) -> bool:
        """Whether the weights have been loaded (they are, on first use)."""
        return self._model is not None

    # -- identity and metadata ------------------------------------------------------------------
    @property
    def fingerprint(self) -> dict[str, Any]:
        """Everything that changes the model's outputs; needs no weights."""
        return {
            "fingerprint_version": FINGERPRINT_VERSION,
            "backend": self.backend,
            "model": self.source.identity(),
            "max_length": self.max_length,
            "dtype": self.dtype,
            **self._fingerprint_options(),
            **self._changed_weights(),
        }

    def _changed_weights(self) -> dict[str, str]:
        """{"weights": digest} once the loaded weights differ from the files' (training)."""
        if self._model is None or getattr(self, "_loaded_state", None) is None:
            return {}
        state = weights_state(self._model)
        if state == self._loaded_state:
            return {}
        if state != getattr(self, "_digest_state", None):
            self._digest_state, self._digest = state, weights_digest(self._model)
        return {"weights": self._digest}

    def describe(self) -> dict[str, Any]:
        """Run metadata: spec, backend, resolved source and identity, dtype, device."""
        return {
            "name": self.name,
            "spec": self.spec_string,
            "alias": self.spec.alias,
            "backend": self.backend,
            "source": self.source.describe(),
            "device": self.device,
            "dtype": self.dtype,
            "dtype_reason": self.dtype_reason,
            "max_length": self.max_length,
            "trust_remote_code": self.trust_remote_code,
            "fingerprint": self.fingerprint,
        }

    def __repr__(self) -> str:
        state = "loaded" if self.loaded else "not loaded"
        return f"{type(self).__name__}({self.spec_string!r}, {state})"

    # -- lazy weights ---------------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(dict.fromkeys(self._not_pickled))
        return state

    def _ensure_loaded(self) -> Any:
        """The loaded model (loading it on first use)."""
        if self._model is None:
            with span("model_load"):
                path = getattr(self.source, "path", None)
                if path is not None and Path(path).exists():
                    check_safe_pickles(weight_files(path))
                self._model = self._load()
                self._loaded_state = weights_state(self._model)
            if self._device == "cpu":  # a torch model on the CPU: its activations reuse memory
                keep_freed_memory()
        return self._model

    def unload(self) -> None:
        """Drop the weights (the next use loads them again)."""
        for attr in self._not_pickled:
            setattr(self, attr, None)
        if self._device is not None and self._device.startswith("cuda"):
            import torch

            torch.cuda.empty_cache()

    def _from_pretrained(self, cls: Any, *, remote_code: bool = True, **kwargs: Any) -> Any:
        """`cls.from_pretrained` on the model's files, local files only, with the spec's
        `trust_remote_code` (unless `remote_code` is False) and `kwargs`; a file that cannot be
        loaded is the ModelError of `_load_error`."""
        if remote_code:
            kwargs["trust_remote_code"] = self.trust_remote_code
        try:
            return cls.from_pretrained(str(self.source.path), local_files_only=True, **kwargs)
        except (OSError, ValueError, KeyError, ImportError) as exc:
            raise self._load_error(exc) from exc

    def _transformers_class(self, name: str, needed_for: str) -> Any:
        """The class `name` of the installed transformers; ModelError when it has none."""
        import transformers

        cls = getattr(transformers, name, None)
        if cls is None:
            raise ModelError(
                f"{self.name}: the installed transformers {transformers.__version__} has no "
                f"{name} (needed for {needed_for}); upgrade transformers"
            )
        return cls

    def _check_weights(
        self, info: Any, needs: str, hint: str, prefixes: tuple[str, ...] = ("",), first: str = ""
    ) -> None:
        """ModelError when a load left weights random: the keys `info` (of `from_pretrained(...,
        output_loading_info=True)`) reports missing that start with one of `prefixes`, those
        containing `first` listed first."""
        missing = sorted(
            (k for k in (info or {}).get("missing_keys") or () if k.startswith(prefixes)),
            key=lambda k: (first not in k, k),
        )
        if missing:
            shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
            raise ModelError(
                f"{self.name}: the checkpoint at {self.source.path} lacks weights {needs} "
                f"({len(missing)} missing: {shown}); {hint}"
            )

    def _load_error(self, exc: Exception) -> ModelError:
        msg = f"could not load model {self.name!r} from {self.source.path}: {exc}"
        if "trust_remote_code" in str(exc) and not self.trust_remote_code:
            msg += (
                " — this model ships its own Python code; if you trust it, add "
                "trust_remote_code=true to the spec (…?trust_remote_code=true)"
            )
        return ModelError(msg)

    # -- for subclasses -------------------------------------------------------------------------
    def _load(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _fingerprint_options(self) -> dict[str, Any]:
        return {}


def builds(cls: type[LazyModel]) -> Callable[[F], F]:
    """Mark a factory function as a backend that builds `cls` (or a subclass it picks per
    model): it takes `cls`'s options, so specs of its backend are checked against them."""

    def mark(factory: F) -> F:
        for attr in ("backend", "description", "options", "option_hints", "offline_needs"):
            setattr(factory, attr, getattr(cls, attr))
        return factory

    return mark
