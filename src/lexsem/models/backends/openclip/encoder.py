"""`openclip:` backend: `OpenClipEncoder`, an open_clip model as one object with text and
image towers (docs/openclip.md).

Spec NAME forms (`spec.py`): `openclip:ARCH/PRETRAINED` (a tag of open_clip's pretrained
registry, e.g. `openclip:ViT-B-32-quickgelu/openai`; the image preprocessing is the tag's:
mean/std, interpolation, resize mode), `openclip:ARCH@/path/to/checkpoint.pt` (a local state
dict, `.pt`/`.pth`/`.bin` or `.safetensors`, or a training checkpoint: `checkpoints.py`; open_clip's
default preprocessing) and `openclip:/path/to/my-arch.json@/path/to/checkpoint.pt` (a custom
architecture: `custom_arch.py`). Options (`?key=value&...`): `quick_gelu=true|false`, `dtype`,
`prefix`, `template`; open_clip text towers take a fixed context length, so `max_length` is not
an option.

Building reads open_clip's registry and arch configs (`pretrained.py`; from their memo on disk,
`facts.py`, in a process that has not imported open_clip, so that a rerun served from the store
imports neither open_clip nor torch), looks up the activation the weights were trained with
(`trained_activation.py`) and resolves the one to run (`quickgelu.py`), but loads no
weights; they are loaded on the first `encode`/`encode_images`. The fingerprint holds the arch,
the tag or the checkpoint's digest (`source.py`) and the activation actually run. `preprocess`
needs no weights either: it is open_clip's eval transform built from the same preprocessing
config (CPU-only, picklable).

**Text batches.** When the text tower is causal and pooled at the end-of-text token
(`trim.py`), texts are batched by their token count and each batch runs only up to its last
one. Such batches hold up to batch_size x context tokens at their width (`batch_sizes`, which
the engine's text path follows too), the memory of one full-width batch, so short texts are not
run in small, slow matrices. Trimming is checked
on a probe batch when the weights load; any other tower runs the full context in batches of
batch_size texts, in character order.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

import lexsem.paths as paths
from lexsem.clock import span
from lexsem.errors import LexsemError, ModelError
from lexsem.models.backends.openclip import install
from lexsem.models.backends.openclip.blocks import same_features
from lexsem.models.backends.openclip.checkpoints import (
    load_training_state,
    quiet_random_init,
    training_state_dict,
)
from lexsem.models.backends.openclip.custom_arch import register_custom_arch
from lexsem.models.backends.openclip.facts import OpenClipFacts
from lexsem.models.backends.openclip.install import BACKEND, MIN_OPEN_CLIP
from lexsem.models.backends.openclip.pretrained import openclip_facts
from lexsem.models.backends.openclip.quickgelu import activation_name, resolve_quick_gelu
from lexsem.models.backends.openclip.source import (
    OpenClipSource,
    cached_tag_weights,
    resolve_openclip_source,
)
from lexsem.models.backends.openclip.spec import OpenClipSpec, as_openclip_spec
from lexsem.models.backends.openclip.trained_activation import (
    TrainedActivation,
    spec_activation,
    trained_activation,
)
from lexsem.models.backends.openclip.trim import CausalTextTower, causal_text_tower
from lexsem.models.backends.openclip.vision import VisionBlocks, vision_blocks
from lexsem.models.device import torch_dtype
from lexsem.models.options import COMMON, TEXT_INPUT, Option, flag
from lexsem.models.text_encoder import LazyTextEncoder

# the most token rows `_tokenize` keeps between encoder calls (the engine's chunk is 4,096)
TOKEN_MEMO_MAX = 16384


class OpenClipEncoder(LazyTextEncoder):
    """TextEncoder + ImageEncoder over an open_clip model (lazy); see the module doc."""

    backend: ClassVar[str] = BACKEND
    description = "open_clip models: ARCH/PRETRAINED tag or ARCH@/path/to/checkpoint"
    options: ClassVar[Mapping[str, Option]] = {
        "dtype": COMMON["dtype"],
        **TEXT_INPUT,
        "quick_gelu": flag(None),  # None: the activation the weights were trained with
    }
    option_hints: ClassVar[Mapping[str, str]] = {
        "max_length": "open_clip text towers take their fixed context length"
    }
    # `preprocess` takes a PIL image of any mode: open_clip's transform converts to RGB after
    # Resize / CenterCrop, so a decode profile with rgb="model" hands it raw-mode images
    accepts_raw_mode: ClassVar[bool] = True
    # DataLoader workers need only the transform (`_causal` holds parts of the model)
    _not_pickled = ("_model", "_tokenizer", "_causal", "_vision", "_vision_probed")
    # the activation a spec runs, without building it (`lexsem.models.activation`)
    spec_activation = staticmethod(spec_activation)
    spec: OpenClipSpec
    source: OpenClipSource

    def __init__(self, spec: Any, *, max_length: int | None = None, **kwargs: Any) -> None:
        """`max_length`: only the arch's own context length is accepted; the other keyword
        arguments as for `LazyModel`."""
        super().__init__(spec, **kwargs)
        facts = self.source.facts or openclip_facts(self.source.arch, self.source.tag)
        context = facts.context_length
        if max_length is not None and max_length != context:
            raise ModelError(
                f"{self.name}: open_clip text towers take their fixed context length ({context} "
                f"tokens for {self.source.arch}); max_length={max_length} is not supported"
            )
        self.arch = self.source.arch
        self.pretrained = self.source.tag
        self.arch_quick_gelu = facts.arch_quick_gelu
        self.trained_activation = self._trained_activation(facts)
        self.trained_quick_gelu = (
            self.trained_activation.quick_gelu if self.trained_activation else None
        )
        self.quick_gelu = self._resolve_quick_gelu(facts)
        self.context_length = context
        self.image_config = dict(facts.image_config)
        self._tokenizer: Any = None
        self._transform: Any = None
        self._causal: CausalTextTower | None = None
        self._vision: VisionBlocks | None = None  # the image tower's blocks: probed at the
        self._vision_probed = False  # first image batch (reset by `unload`, with the weights)
        self._token_memo: dict[str, Any] = {}

    def _parse_spec(self, spec: Any, overrides: dict[str, object]) -> OpenClipSpec:
        return as_openclip_spec(super()._parse_spec(spec, overrides))

    def _resolve_source(self) -> OpenClipSource:
        return resolve_openclip_source(self.spec)

    @classmethod
    def offline_needs(cls, spec: Any) -> str | None:
        """A tag's weights in open_clip's caches, or a local checkpoint file; else what is
        missing (one line)."""
        shown = spec.to_string() if hasattr(spec, "to_string") else str(spec)
        try:
            source = resolve_openclip_source(as_openclip_spec(spec))
        except (LexsemError, ImportError) as exc:
            why = " ".join(str(exc).split())[:200]
            return f"open_clip and the weights of {shown} ({why})"
        if source.kind == "local" or cached_tag_weights(source.entry) is not None:
            return None
        where = source.entry.get("hf_hub") or source.entry.get("url") or source.tag
        return f"the open_clip weights of {source.arch}/{source.tag} ({str(where).rstrip('/')})"

    def _trained_activation(self, facts: OpenClipFacts) -> TrainedActivation | None:
        """What the weights were trained with (`trained_activation.py`; None: a local
        checkpoint, unknown)."""
        if self.source.kind == "local" or self.pretrained is None:
            return None
        found = trained_activation(
            self.arch,
            self.pretrained,
            self.source.entry,
            bool(facts.registered_quick_gelu),
            facts.registered_arch or self.arch,
        )
        if (
            not found.from_table
            and not facts.registry_knows_activations
            and self.spec.quick_gelu is None
        ):
            raise ModelError(
                f"{self.name}: open_clip {facts.version} does not record which "
                f"activation its pretrained weights were trained with; upgrade it "
                f"(open_clip_torch>={MIN_OPEN_CLIP}) or add quick_gelu=true|false"
            )
        return found

    def _resolve_quick_gelu(self, facts: OpenClipFacts) -> bool:
        trained = self.trained_quick_gelu
        right = facts.variants.get(activation_name(trained)) if trained is not None else None
        return resolve_quick_gelu(
            label=self.name,
            arch=self.arch,
            arch_quick_gelu=self.arch_quick_gelu,
            trained_quick_gelu=trained,
            option=self.spec.quick_gelu,
            right_arch=right if right != self.arch else None,
            tag=self.pretrained,
        )

    # -- fingerprint and metadata -------------------------------------------------------------
    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            **super()._fingerprint_options(),
            "arch": self.arch,
            "pretrained": self.pretrained,
            "quick_gelu": self.quick_gelu,
            "activation": activation_name(self.quick_gelu),
            "image": {"transform": "open_clip eval", **self.image_config},
        }

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(
            arch=self.arch,
            pretrained=self.pretrained,
            quick_gelu=self.quick_gelu,
            trained_quick_gelu=self.trained_quick_gelu,
            trained_activation_basis=(
                self.trained_activation.basis if self.trained_activation else None
            ),
            context_length=self.context_length,
        )
        return out

    # -- loading --------------------------------------------------------------------------------
    def torch_module(self) -> Any:
        """The open_clip model, its weights loaded on first use: the module training updates in
        place (its `encode_image` / `encode_text` run the towers)."""
        return self._ensure_loaded()

    def _weights(self, oc: Any) -> str:
        src = self.source
        if src.kind == "local":
            assert src.path is not None
            return str(src.path)
        offline = paths.offline() if self._offline is None else self._offline
        if offline:
            hit = cached_tag_weights(src.entry)
            if hit is None:
                where = src.entry.get("hf_hub") or src.entry.get("url") or "?"
                raise ModelError(
                    f"{self.name}: the weights of {src.arch}/{src.tag} ({where}) are not in the "
                    f"local cache and lexsem is offline. To fix: run once with network access "
                    f"(unset LEXSEM_OFFLINE and HF_HUB_OFFLINE), or pass a downloaded "
                    f"checkpoint as openclip:{src.arch}@/path/to/checkpoint"
                )
            return hit
        try:
            path = oc.download_pretrained(src.entry)
        except Exception as exc:
            raise ModelError(
                f"{self.name}: could not download the weights of {src.arch}/{src.tag}: {exc}"
            ) from exc
        if not path:
            raise ModelError(f"{self.name}: the registry entry of {src.arch}/{src.tag} has no file")
        return str(path)

    def _open_clip(self) -> Any:
        """open_clip, with this model's custom architecture registered (when it has one)."""
        oc = install.import_open_clip()
        if self.spec.config_file is not None:
            register_custom_arch(oc, self.spec.config_file)
        return oc

    def _load(self) -> Any:
        oc = self._open_clip()
        weights = self._weights(oc)
        # a training checkpoint (BiVLC's release format): built without weights, loaded here
        state = training_state_dict(weights) if self.source.kind == "local" else None
        pp = self.image_config
        try:
            model = self._create(oc, weights if state is None else None)
            if state is not None:
                load_training_state(model, state, self.arch)
        except (
            RuntimeError,
            OSError,
            ValueError,
            KeyError,
            TypeError,
            pickle.UnpicklingError,  # not a checkpoint (weights_only torch.load)
            AssertionError,  # open_clip asserts when a checkpoint does not fit the arch
        ) as exc:
            raise ModelError(
                f"could not load open_clip model {self.name!r} ({self.arch} from {weights}): {exc}"
            ) from exc
        got = dict(getattr(model.visual, "preprocess_cfg", {}) or {})
        if got and _size2(got.get("size")) != _size2(pp["size"]):
            raise ModelError(
                f"{self.name}: the model's image size {got.get('size')} differs from its "
                f"config's {pp['size']}"
            )
        model.eval()  # the transform and tokenizer are the lazy properties below
        self._causal = self._trimmable_tower(model)
        return model

    def _create(self, oc: Any, weights: str | None) -> Any:
        """open_clip's model of the arch with `weights` (None: no weights, not even a tower's
        base weights from the Hub), the activation resolved, the image config's transform."""
        extra: dict[str, Any] = {}
        if self.quick_gelu != self.arch_quick_gelu:
            extra["quick_gelu"] = self.quick_gelu  # model kwargs override the arch config
        if weights is None:
            extra["pretrained_hf"] = False
        pp = self.image_config
        with quiet_random_init(weights is None):
            model, _, _ = oc.create_model_and_transforms(
                self.arch,
                pretrained=weights,
                precision=self.dtype,
                device=self.device,
                image_mean=tuple(pp["mean"]),
                image_std=tuple(pp["std"]),
                image_interpolation=pp["interpolation"],
                image_resize_mode=pp["resize_mode"],
                **extra,
            )
        return model

    def _trimmable_tower(self, model: Any) -> CausalTextTower | None:
        """The model's text tower when batches can run only up to their longest text: a causal
        tower (`causal_text_tower`) whose trimmed run gives the full-width embeddings on a
        probe batch (a check against a variant the structural test cannot see); else None."""
        tower = causal_text_tower(model)
        if tower is None:
            return None
        probe = self.tokenizer(["a", "a photo of a small red cube on a wooden table"])
        return tower if tower.matches_full_width(model, probe.to(self.device)) else None

    def _vision_blocks(self, model: Any) -> VisionBlocks | None:
        """The model's image tower run through `blocks.py` (`vision.py`) when it is a plain ViT
        whose `encode_image` is open_clip's and the run gives open_clip's own features on a
        probe image (unit vectors, to the dtype's rounding as in `trim.py`); else None."""
        import torch
        from open_clip.model import CLIP, CustomTextCLIP

        tower = vision_blocks(model)
        if tower is None or type(model).encode_image not in (
            CLIP.encode_image,
            CustomTextCLIP.encode_image,
        ):
            return None
        h, w = _size2(self.image_config["size"])
        dtype = torch_dtype(self.dtype)
        probe = torch.randn(1, 3, h, w, generator=torch.Generator().manual_seed(0))
        probe = probe.to(device=self.device, dtype=dtype)
        with torch.inference_mode():
            same = same_features(model.encode_image(probe), tower.encode(probe), dtype)
        return tower if same else None

    @property
    def trims_padding(self) -> bool:
        """Whether text batches run only up to their longest text (a causal text tower pooled
        at the end-of-text token: the same embeddings as the full context); known once the
        model is loaded."""
        return self._causal is not None

    # -- text -----------------------------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        """open_clip's tokenizer for the arch (`open_clip.get_tokenizer`); no weights needed."""
        if self._tokenizer is None:
            self._tokenizer = self._open_clip().get_tokenizer(self.arch)
        return self._tokenizer

    def _tokenize(self, formatted: list[str]) -> Any:
        """Token ids (n, context) of formatted texts, reusing the rows `_token_lengths` made:
        the engine counts a whole chunk's tokens (`batch_order`, `batch_sizes`), then encodes it
        one batch per call, and each text goes through the tokenizer once. `_encode_batches`
        drops the rows of the texts it encoded (all of them past `TOKEN_MEMO_MAX`)."""
        import torch

        with span("tokenize"):
            memo = self._token_memo
            missing = [t for t in dict.fromkeys(formatted) if t not in memo]
            if missing:
                memo.update(zip(missing, self.tokenizer(missing), strict=True))
            return torch.stack([memo[t] for t in formatted])

    def _token_lengths(self, texts: list[str]) -> list[int] | None:
        """Tokens up to the pooled (end-of-text) one, where batches are trimmed to them; None
        (character order) where every batch runs the full context."""
        if self._causal is None:
            return None
        tokens = self._tokenize([self.spec.format_text(t) for t in texts])
        return (self._causal.pool_index(tokens) + 1).tolist()

    def _encode_batches(self, texts: list[str], batch_size: int) -> np.ndarray:
        import torch

        model = self._model
        formatted = [self.spec.format_text(t) for t in texts]
        out: list[np.ndarray] = []
        try:
            with torch.inference_mode():
                for batch in self._batches(formatted, batch_size):
                    tokens = self._tokenize(batch).to(self.device)
                    if self._causal is not None:
                        emb = self._causal.encode(tokens)
                    else:
                        emb = model.encode_text(tokens)
                    out.append(emb.to(torch.float32).cpu().numpy())
        finally:  # this call's rows go; rows counted for the caller's next calls stay
            memo = self._token_memo
            for text in formatted:
                memo.pop(text, None)
            if len(memo) > TOKEN_MEMO_MAX:
                memo.clear()
        return np.concatenate(out, axis=0)

    def batch_sizes(self, texts: Sequence[str], batch_size: int) -> list[int]:
        """The sizes of the consecutive batches `encode` runs `texts` in, when they come in its
        `batch_order` (the engine's text path cuts its encoder calls by them, so each call is
        one of these batches): `batch_size` texts each for a full-width tower. A trimmed tower
        runs a batch at its longest text's token count, so its batches hold up to `batch_size`
        x context tokens (counted at that width) instead: short texts go in larger batches,
        with the activation memory of one full-width batch and without the slowness of small
        matrices (on a 2-core CPU a ViT-B/32 text tower costs 1.6x more per token at 64 texts
        x 13 tokens than at 256 x 13). Loads the model."""
        self._ensure_loaded()
        return self._batch_sizes([self.spec.format_text(t) for t in texts], batch_size)

    def _batch_sizes(self, formatted: list[str], batch_size: int) -> list[int]:
        if self._causal is None or not formatted:
            n = len(formatted)
            return [min(batch_size, n - start) for start in range(0, n, batch_size)]
        counts = (self._causal.pool_index(self._tokenize(formatted)) + 1).tolist()
        budget = batch_size * self.context_length
        sizes: list[int] = []
        size = width = 0
        for count in counts:
            if size and (size + 1) * max(width, count) > budget:
                sizes.append(size)
                size = width = 0
            size += 1
            width = max(width, count)
        return [*sizes, size]

    def _batches(self, formatted: list[str], batch_size: int) -> Iterator[list[str]]:
        """Consecutive batches of `formatted`, of the sizes `batch_sizes` gives."""
        start = 0
        for size in self._batch_sizes(formatted, batch_size):
            yield formatted[start : start + size]
            start += size

    # -- images ---------------------------------------------------------------------------------
    @property
    def image_transform(self) -> Any:
        """open_clip's eval transform (PIL image → CPU float32 tensor); no weights needed."""
        if self._transform is None:
            install.import_open_clip()
            from open_clip.transform import PreprocessCfg, image_transform_v2

            cfg = dict(self.image_config)
            for key in ("size", "mean", "std"):
                if isinstance(cfg[key], list):
                    cfg[key] = tuple(cfg[key])
            self._transform = image_transform_v2(PreprocessCfg(**cfg), is_train=False)
        return self._transform

    def preprocess(self, image: Any) -> Any:
        """One PIL image (any mode: the transform converts it to RGB after resizing and
        cropping) → the model's input tensor (C, H, W), float32 on the CPU."""
        return self.image_transform(image)

    def encode_images(self, batch: Any) -> np.ndarray:
        """float32 (n, d) raw image embeddings of a stacked batch of `preprocess` outputs."""
        import torch

        if isinstance(batch, np.ndarray):
            batch = torch.from_numpy(batch)
        if not isinstance(batch, torch.Tensor):
            raise TypeError(f"encode_images takes a tensor batch, got {type(batch).__name__}")
        n = int(batch.shape[0])
        if n == 0:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        model = self._ensure_loaded()
        dtype = torch_dtype(self.dtype)
        with torch.inference_mode():
            pixels = batch.to(device=self.device, dtype=dtype)
            if not self._vision_probed:  # a text-only run never pays for the image probe
                self._vision, self._vision_probed = self._vision_blocks(model), True
            vision = self._vision
            emb = vision.encode(pixels) if vision is not None else model.encode_image(pixels)
        out = np.ascontiguousarray(emb.to(torch.float32).cpu().numpy(), dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != n:
            raise ModelError(f"{self.name}: got image embeddings of shape {out.shape} for {n}")
        self._dim = out.shape[1]
        return out


def _size2(size: Any) -> tuple[int, int]:
    if isinstance(size, (list, tuple)):
        return (int(size[0]), int(size[-1]))
    return (int(size), int(size))
