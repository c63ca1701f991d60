"""`openclip:` backend: open_clip models — one object, text and image towers.

Spec NAME forms (docs/openclip.md has the long version):

- `openclip:ARCH/PRETRAINED` — a tag of open_clip's pretrained registry, e.g.
  `openclip:ViT-B-32-quickgelu/openai` or `openclip:ViT-B-16/datacomp_xl_s13b_b90k`. The weights
  are fetched by open_clip (Hugging Face cache, or `~/.cache/clip` for URL-only tags); offline
  (`LEXSEM_OFFLINE` / `HF_HUB_OFFLINE`) only those caches are looked at. The image preprocessing is
  the tag's (mean/std, interpolation, resize mode), as open_clip sets it for that tag.
- `openclip:ARCH@/path/to/checkpoint.pt` — a local checkpoint (a state dict, `.pt`/`.pth`/`.bin`
  or `.safetensors`) for open_clip architecture ARCH; open_clip's default (OpenAI CLIP)
  preprocessing, as `create_model_and_transforms(ARCH, pretrained=path)` gives it. Besides what
  open_clip reads (a state dict, `{"state_dict": ...}`), a training checkpoint
  `{"model_state_dict": ..., "epoch": ..., ...}` — the form of BiVLC's released fine-tuned CLIPs
  (BiVLC, App. E), `module.` prefixes (DDP) allowed — is loaded into the arch built without
  weights (`training_state_dict`); either way the fingerprint is the file's digest.
- `openclip:/path/to/my-arch.json@/path/to/checkpoint.pt` — a custom architecture: a model config
  in open_clip's format (`embed_dim`, `vision_cfg`, `text_cfg`, as `open_clip.add_model_config`
  reads), with a local checkpoint. It is registered under `my-arch-<sha256 of the file, 10 hex>`
  (`custom_arch`), never under its own file name: a config named like a built-in arch must not
  replace that arch for other models in the process, and an edited file is another arch (another
  fingerprint, no stale cache entries).

Options (`?key=value&...`): `quick_gelu=true|false`, `dtype`, `prefix`, `template`. open_clip
text towers take a fixed context length, so `max_length` is not an option.

**QuickGELU.** OpenAI's CLIP weights (and open_clip's `yfcc15m`, `cc12m`, some `laion400m_*` and
MetaCLIP tags) were trained with QuickGELU; the plain arch configs (`ViT-B-32`) build nn.GELU and
the `-quickgelu` ones (`ViT-B-32-quickgelu`) QuickGELU. Loading such weights under the other
activation runs without an error but degrades every embedding. open_clip's registry records what
each tag was trained with (`quick_gelu`, open_clip ≥ 2.29); lexsem compares it with the arch's
config when the encoder is built (no weights needed) and

- raises ModelError naming the right arch when they differ and the spec gives no `quick_gelu`;
- with an explicit `quick_gelu=...` runs that activation (overriding the arch's), warning
  (`QuickGeluWarning`) when it differs from the tag's training — the way to reproduce an
  evaluation that had the bug;
- for a local checkpoint (provenance unknown) uses `quick_gelu` when given, else the arch's own
  activation with a `QuickGeluWarning`.

The activation actually run is in the fingerprint (`quick_gelu`), next to the arch and tag.

**Identity.** A tag is identified by its registry entry (Hub repo and/or URL, which for the
OpenAI/mlfoundations URLs carry the file's sha256); a local checkpoint by the digest of its bytes
(`source.file_digest`), so moving or renaming it keeps its embedding cache.

open_clip (and with it torchvision) is imported only inside functions: lexsem works without it,
and building this encoder without it raises ModelError saying `pip install "lexsem[openclip]"`.
Building reads open_clip's registry and arch configs but loads no weights; they are loaded on the
first `encode`/`encode_images`. The registry facts are remembered on disk (`openclip_facts.py`),
so a process that has not imported open_clip builds the encoder from them without importing it
(nor torch): a rerun served from the store stays fast. `preprocess` needs no weights either: it
is open_clip's eval transform built from the same preprocessing config (CPU-only, picklable).

**Text batches.** Every text is tokenized to the arch's context (77 tokens for CLIP archs),
while SugarCrepe captions are about 15. When the text tower is causal and pooled at the
end-of-text token (`causal_text_tower`: open_clip's CLIP text path with its causal mask and
`argmax`/`eos` pooling, no CLS token or padding mask), the pooled embedding depends only on the
tokens up to that token, so texts are batched by that count and each batch runs only up to its
last one: the same embeddings (to float32 rounding) for a fraction of the work. Such batches hold
up to batch_size x context tokens at their width (`_batches`), the memory of one full-width
batch, so short texts are not run in small, slow matrices. Trimming is checked on a probe batch
when the weights load; bidirectional towers (open_clip's SigLIP archs, HF text towers) and
anything else run the full context in batches of batch_size texts, in character order.
"""

from __future__ import annotations

import difflib
import logging
import os
import pickle
import sys
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from lexsem import paths
from lexsem.errors import ModelError
from lexsem.models.backends.openclip_facts import (
    OpenClipFacts,
    normalized,
    read_memo,
    write_memo,
)
from lexsem.models.device import torch_dtype
from lexsem.models.options import COMMON, TEXT_INPUT, Option, flag
from lexsem.models.source import file_digest
from lexsem.models.spec import ModelSpec, parse_query
from lexsem.models.text_encoder import LazyTextEncoder

BACKEND = "openclip"
INSTALL_HINT = 'pip install "lexsem[openclip]"'
MIN_OPEN_CLIP = "2.29"  # the first release whose pretrained registry records `quick_gelu`
SYNTAX = (
    "openclip:ARCH/PRETRAINED, openclip:ARCH@/path/to/checkpoint.pt or "
    "openclip:/path/to/arch.json@/path/to/checkpoint.pt [?options]"
)
QUICKGELU_SUFFIX = "-quickgelu"
# the preprocessing keys a pretrained tag may set (open_clip's PreprocessCfg minus the size)
_TAG_PREPROCESS_KEYS = ("mean", "std", "interpolation", "resize_mode", "fill_color")


class QuickGeluWarning(UserWarning):
    """Weights run with an activation other than the one they were trained with, or one that
    lexsem cannot check (a local checkpoint without `quick_gelu=...`)."""


def activation_name(quick_gelu: bool) -> str:
    return "QuickGELU" if quick_gelu else "GELU"


# -- importing open_clip ---------------------------------------------------------------------
def import_open_clip() -> Any:
    """The `open_clip` module, or ModelError saying how to install it / why it does not load."""
    try:
        import open_clip
    except ImportError as exc:
        raise ModelError(
            f"the {BACKEND}: backend needs open_clip, which is not installed: run "
            f"`{INSTALL_HINT}` (open_clip_torch>={MIN_OPEN_CLIP} and a torchvision matching "
            f"your torch). ({exc.__class__.__name__}: {exc})"
        ) from exc
    except RuntimeError as exc:
        if "torchvision::" not in str(exc):
            raise
        raise ModelError(_torchvision_mismatch(exc)) from exc
    return open_clip


def _torchvision_mismatch(exc: Exception) -> str:
    try:
        import torch

        have = f"torch {torch.__version__} (CUDA: {torch.version.cuda or 'none, a CPU build'})"
    except Exception:  # pragma: no cover - torch itself broken
        have = "your torch"
    try:
        from importlib.metadata import version

        tv = f"torchvision {version('torchvision')}"
    except Exception:  # pragma: no cover
        tv = "torchvision"
    return (
        f"open_clip cannot be imported: {tv} does not match {have} — its compiled operators "
        f"did not load ({exc}). Install the torchvision build made for this torch (same "
        f"version pair and the same CPU/CUDA variant, from the same index), e.g. "
        f'pip install "torch==X" "torchvision==Y" from one index.'
    )


# -- the spec ----------------------------------------------------------------------------------
def _is_config_file(arch: str) -> bool:
    return arch.lower().endswith(".json")


def _split_name(name: str) -> tuple[str, str | None, str | None]:
    """NAME → (arch, pretrained tag or None, checkpoint path or None); a custom arch's model
    config file is returned as the arch, as written."""
    text = name.strip()
    if "@" in text:
        arch, _, path = text.partition("@")
        arch, path = arch.strip(), path.strip()
        if not arch or not path:
            raise ModelError(f"open_clip model {name!r}: expected ARCH@/path/to/checkpoint")
        if _is_config_file(arch):
            return arch, None, path
        tag = None
    else:
        arch, sep, tag_str = text.rpartition("/")
        arch, tag_str = arch.strip(), tag_str.strip()
        if not sep or not arch or not tag_str:
            raise ModelError(
                f"open_clip model {name!r} names no weights; {SYNTAX} "
                f"(e.g. openclip:ViT-B-32-quickgelu/openai)"
            )
        tag, path = tag_str, None
        if _is_config_file(arch) or _is_config_file(text):
            raise ModelError(
                f"open_clip model {name!r}: a custom architecture (a model config .json) takes "
                "a local checkpoint: openclip:/path/to/arch.json@/path/to/checkpoint.pt"
            )
    if arch.startswith(("hf-hub:", "local-dir:")):
        raise ModelError(
            f"open_clip model {name!r}: hf-hub:/local-dir: sources are not supported; use a "
            f"registry tag (ARCH/PRETRAINED) or a checkpoint file (ARCH@/path)"
        )
    # open_clip itself accepts OpenAI-style names (ViT-B/32) and maps them to ViT-B-32
    return arch.replace("/", "-"), tag, path


@dataclass(frozen=True, init=False)
class OpenClipSpec(ModelSpec):
    """A parsed `openclip:` spec: NAME (`ARCH/PRETRAINED` or `ARCH@PATH`) and its options.

    A `ModelSpec` of backend `openclip` (same typed views, `format_text`, `to_string`, options
    checked against `OpenClipEncoder.options`) whose NAME is checked and read by this backend's
    own rules; `as_openclip_spec` turns a `ModelSpec` into one."""

    def __init__(
        self, name: str, options: dict[str, str] | None = None, alias: str | None = None
    ) -> None:
        object.__setattr__(self, "backend", BACKEND)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "options", dict(options or {}))
        object.__setattr__(self, "alias", alias)
        self.__post_init__()

    def __post_init__(self) -> None:
        _split_name(self.name)
        super().__post_init__()

    @property
    def arch(self) -> str:
        """The open_clip arch name (a custom config file's registered name, `custom_arch`)."""
        arch = _split_name(self.name)[0]
        return custom_arch(Path(arch).expanduser())[0] if _is_config_file(arch) else arch

    @property
    def config_file(self) -> Path | None:
        """The model config file of a custom architecture (None: a registered arch)."""
        arch = _split_name(self.name)[0]
        return Path(arch).expanduser() if _is_config_file(arch) else None

    @property
    def pretrained(self) -> str | None:
        return _split_name(self.name)[1]

    @property
    def checkpoint(self) -> str | None:
        return _split_name(self.name)[2]

    @property
    def quick_gelu(self) -> bool | None:
        return self.get("quick_gelu")


def parse_openclip_spec(s: str) -> OpenClipSpec:
    """Parse `openclip:NAME[?key=value&...]` (the query read as in `spec.py`)."""
    text = s.strip() if isinstance(s, str) else ""
    head, _, query = text.partition("?")
    backend, sep, name = head.partition(":")
    if not sep or backend.strip().lower() != BACKEND:
        raise ModelError(f"{s!r} is not an {BACKEND}: spec; {SYNTAX}")
    return OpenClipSpec(name.strip(), parse_query(query, s))


def as_openclip_spec(spec: Any) -> OpenClipSpec:
    """A spec string, an `OpenClipSpec`, or a `ModelSpec` whose backend is `openclip`."""
    if isinstance(spec, OpenClipSpec):
        return spec
    if isinstance(spec, str):
        return parse_openclip_spec(spec)
    if getattr(spec, "backend", None) == BACKEND:
        return OpenClipSpec(spec.name, dict(spec.options), alias=getattr(spec, "alias", None))
    shown = spec.to_string() if hasattr(spec, "to_string") else repr(spec)
    raise ModelError(f"{shown!r} is not an {BACKEND}: spec")


# -- custom architectures ----------------------------------------------------------------------
_CONFIG_KEYS = ("embed_dim", "vision_cfg", "text_cfg")  # what open_clip.add_model_config requires


def custom_arch(path: Path) -> tuple[str, dict[str, Any]]:
    """(registered name, config) of a custom architecture's model config file; ModelError
    naming the file when it cannot be read or is not an open_clip model config."""
    import hashlib
    import json

    try:
        raw = path.read_bytes()
    except OSError as exc:
        why = exc.strerror or exc
        raise ModelError(f"open_clip model config {path}: cannot be read ({why})") from None
    try:
        config = json.loads(raw)
    except ValueError as exc:
        raise ModelError(f"open_clip model config {path}: not valid JSON ({exc})") from None
    missing = [k for k in _CONFIG_KEYS if not isinstance(config, dict) or k not in config]
    if missing:
        raise ModelError(
            f"open_clip model config {path}: not an open_clip model config (it lacks "
            f"{', '.join(missing)}; see open_clip's model_configs/*.json)"
        )
    return f"{path.stem}-{hashlib.sha256(raw).hexdigest()[:10]}", config


def register_custom_arch(oc: Any, path: Path) -> str:
    """Register the config file `path` with open_clip under its `custom_arch` name (a copy in
    lexsem's cache, named so); returns that name."""

    name, config = custom_arch(path)
    if oc.get_model_config(name) is None:
        oc.add_model_config(_config_copy(name, config))
    return name


def _config_copy(name: str, config: dict[str, Any]) -> Path:
    """The config written as `<name>.json` (open_clip names an arch after its file), in
    lexsem's cache, or in a temporary folder when the cache cannot be written."""
    import json
    import tempfile

    from lexsem.atomic import atomic_open

    for folder in (paths.cache_dir() / "models" / "openclip-configs", None):
        try:
            where = folder if folder is not None else Path(tempfile.mkdtemp(prefix="lexsem-oc-"))
            where.mkdir(parents=True, exist_ok=True)
            copy = where / f"{name}.json"
            if not copy.is_file():
                with atomic_open(copy, "w", encoding="utf-8") as fh:
                    json.dump(config, fh)
            return copy
        except OSError as exc:
            error = exc
    raise ModelError(f"cannot write the open_clip model config {name}.json: {error}")


# -- the registry: arch configs, tags, activations ----------------------------------------------
def _arch_config(oc: Any, arch: str) -> dict[str, Any]:
    cfg = oc.get_model_config(arch)
    if cfg is None:
        known = oc.list_models()
        close = difflib.get_close_matches(arch, known, n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ModelError(
            f"open_clip has no architecture {arch!r}{hint} (open_clip.list_models() lists "
            f"{len(known)})"
        )
    return dict(cfg)


def _tag_entry(oc: Any, arch: str, tag: str) -> dict[str, Any]:
    """The registry entry of `tag` for `arch`; for an ARCH-quickgelu name, the plain arch's
    entry when only that has the tag (so the activation check can name the right arch)."""
    entry = oc.get_pretrained_cfg(arch, tag)
    if not entry and arch.endswith(QUICKGELU_SUFFIX):
        entry = oc.get_pretrained_cfg(arch[: -len(QUICKGELU_SUFFIX)], tag)
    if entry:
        return dict(entry)
    tags = oc.list_pretrained_tags_by_model(arch)
    others = oc.list_pretrained_models_by_tag(tag)
    msg = f"open_clip has no pretrained tag {tag!r} for {arch}"
    msg += f"; its tags: {', '.join(tags)}" if tags else " (it has no pretrained tags)"
    if others:
        msg += f". Archs with tag {tag!r}: {', '.join(others[:8])}"
    raise ModelError(msg + ". A local checkpoint is ARCH@/path/to/checkpoint.pt")


def _registry_knows_activations(oc: Any) -> bool:
    """Whether this open_clip's registry records `quick_gelu` (OpenAI's tags always have it)."""
    return bool(oc.get_pretrained_cfg("RN50", "openai").get("quick_gelu"))


def _right_arch(oc: Any, arch: str, quick_gelu: bool) -> str | None:
    """The arch name building `quick_gelu`'s activation that has the same config otherwise."""
    base = arch[: -len(QUICKGELU_SUFFIX)] if arch.endswith(QUICKGELU_SUFFIX) else arch
    name = base + QUICKGELU_SUFFIX if quick_gelu else base
    return name if name != arch and oc.get_model_config(name) is not None else None


def resolve_quick_gelu(
    *,
    label: str,
    arch: str,
    arch_quick_gelu: bool,
    trained_quick_gelu: bool | None,
    option: bool | None,
    right_arch: str | None = None,
    tag: str | None = None,
) -> bool:
    """The activation to run (True = QuickGELU), per the policy in the module doc.

    trained_quick_gelu: what the weights were trained with (None: unknown, a local checkpoint).
    option: the spec's `quick_gelu` (None: not given). Raises ModelError on an unrequested
    mismatch; warns (QuickGeluWarning) on a requested one or an unknown provenance."""
    if option is None:
        if trained_quick_gelu is None:
            warnings.warn(
                f"{label}: the checkpoint's activation is unknown; running {arch}'s "
                f"{activation_name(arch_quick_gelu)}. If the weights were trained with QuickGELU "
                f"(OpenAI CLIP and models fine-tuned from it, open_clip's yfcc15m/cc12m and some "
                f"laion400m/MetaCLIP weights) add quick_gelu=true, otherwise quick_gelu=false "
                f"to say so (and silence this warning)",
                QuickGeluWarning,
                stacklevel=3,
            )
            return arch_quick_gelu
        if trained_quick_gelu == arch_quick_gelu:
            return arch_quick_gelu
        trained, built = activation_name(trained_quick_gelu), activation_name(arch_quick_gelu)
        fix = (
            f"use openclip:{right_arch}/{tag}"
            if right_arch and tag
            else f"add quick_gelu={str(trained_quick_gelu).lower()}"
        )
        raise ModelError(
            f"{label}: the {tag!r} weights were trained with {trained} but arch {arch} builds "
            f"{built}; they would load without an error and give degraded embeddings. To fix: "
            f"{fix}. To reproduce an evaluation that ran them with {built} on purpose, add "
            f"quick_gelu={str(arch_quick_gelu).lower()}"
        )
    if trained_quick_gelu is not None and option != trained_quick_gelu:
        warnings.warn(
            f"{label}: running weights trained with {activation_name(trained_quick_gelu)} with "
            f"{activation_name(option)} (quick_gelu={str(option).lower()} asks for it); their "
            f"embeddings are degraded",
            QuickGeluWarning,
            stacklevel=3,
        )
    return option


# -- the source --------------------------------------------------------------------------------
@dataclass(frozen=True)
class OpenClipSource:
    """Where an open_clip model's weights come from and what identifies them.

    kind: `openclip-tag` (a registry tag; `entry` is its registry entry) or `local` (`path` is
    the checkpoint file)."""

    name: str
    arch: str
    kind: str
    tag: str | None = None
    path: Path | None = None
    entry: dict[str, Any] = field(default_factory=dict, compare=False)
    facts: OpenClipFacts | None = field(default=None, compare=False, repr=False)
    _memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False, init=False)

    def identity(self) -> dict[str, Any]:
        if "identity" not in self._memo:
            if self.kind == "local":
                assert self.path is not None
                ident: dict[str, Any] = {"source": "local", "file": file_digest(self.path)}
            else:
                ident = {
                    "source": "openclip",
                    "tag": self.tag,
                    "hf_hub": self.entry.get("hf_hub") or None,
                    "url": self.entry.get("url") or None,
                }
            self._memo["identity"] = ident
        return dict(self._memo["identity"])

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "arch": self.arch,
            "tag": self.tag,
            "path": str(self.path) if self.path is not None else None,
            "identity": self.identity(),
        }


def resolve_openclip_source(spec: OpenClipSpec, oc: Any | None = None) -> OpenClipSource:
    """Check the arch and the tag or checkpoint of `spec` (no weights are read); the registry
    facts come from open_clip (`oc`, else imported) or from their memo (`openclip_facts`)."""
    arch = spec.arch
    if spec.config_file is not None and (
        oc is not None or "open_clip" in sys.modules or read_memo(arch, None) is None
    ):  # open_clip's registry will be asked (`openclip_facts`): the arch must be in it
        register_custom_arch(oc or import_open_clip(), spec.config_file)
    if spec.checkpoint is not None:
        facts = openclip_facts(arch, None, oc)
        path = Path(spec.checkpoint).expanduser()
        if not path.is_file():
            raise ModelError(f"open_clip checkpoint {spec.checkpoint!r} is not a file")
        return OpenClipSource(
            name=spec.name, arch=arch, kind="local", path=path.resolve(), facts=facts
        )
    assert spec.pretrained is not None
    tag = spec.pretrained.lower().replace("-", "_")  # open_clip's own tag normalisation
    facts = openclip_facts(arch, tag, oc)
    return OpenClipSource(
        name=spec.name, arch=arch, kind="openclip-tag", tag=tag, entry=facts.entry, facts=facts
    )


def openclip_facts(arch: str, tag: str | None, oc: Any | None = None) -> OpenClipFacts:
    """The registry facts of `arch` (and `tag`): from open_clip when it is given or already
    imported (then remembered), else from their memo when there is one (no import: see
    `openclip_facts.py`), else from open_clip, imported now."""
    if oc is None and "open_clip" not in sys.modules:
        memo = read_memo(arch, tag)
        if memo is not None:
            return memo
    facts = registry_facts(oc or import_open_clip(), arch, tag)
    write_memo(facts)
    return facts


def registry_facts(oc: Any, arch: str, tag: str | None) -> OpenClipFacts:
    """The facts read from open_clip's registry; ModelError for an unknown arch or tag."""
    config = _arch_config(oc, arch)
    entry = _tag_entry(oc, arch, tag) if tag is not None else {}
    trained = bool(entry.get("quick_gelu", False))
    facts = OpenClipFacts(
        version=str(getattr(oc, "__version__", "?")),
        arch=arch,
        tag=tag,
        config=config,
        image_config=_image_config(config, entry),
        registry_knows_activations=_registry_knows_activations(oc) if tag else True,
        entry=entry,
        right_arch=_right_arch(oc, arch, trained) if tag else None,
    )
    return normalized(facts)


def _image_config(config: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """open_clip's eval preprocessing config for a model (no weights needed)."""
    from open_clip.transform import PreprocessCfg

    out: dict[str, Any] = asdict(PreprocessCfg())
    size = config.get("vision_cfg", {}).get("image_size")
    if size is not None:
        out["size"] = size
    for key in _TAG_PREPROCESS_KEYS:
        if entry.get(key) is not None:
            out[key] = entry[key]
    for key, value in out.items():  # JSON-friendly (the fingerprint holds it)
        if isinstance(value, tuple):
            out[key] = list(value)
    return out


def _cached_tag_weights(entry: dict[str, Any]) -> str | None:
    """The already-downloaded weights file of a registry entry, or None (never downloads)."""
    if entry.get("file"):
        return entry["file"] if os.path.isfile(entry["file"]) else None
    hf_hub = entry.get("hf_hub") or ""
    if hf_hub:
        from huggingface_hub import try_to_load_from_cache

        # as open_clip reads it: `org/name/` (its default file) or `org/name/file.ext`
        repo_id, filename = os.path.split(hf_hub)
        if not filename:
            names = ["open_clip_model.safetensors", "open_clip_pytorch_model.bin"]
        elif filename.endswith((".bin", ".pth")):
            names = [filename[:-4] + ".safetensors", filename]
        else:
            names = [filename]
        for fname in names:
            hit = try_to_load_from_cache(repo_id, fname)
            if isinstance(hit, str) and os.path.isfile(hit):
                return hit
    url = entry.get("url") or ""
    if url:
        local = Path("~/.cache/clip").expanduser() / os.path.basename(url)
        if local.is_file():
            return str(local)
    return None


#: The key of the weights in a training checkpoint as BiVLC releases its fine-tuned CLIPs
#: (``{"epoch", "model_state_dict", "optimizer_state_dict", "loss"}``: BiVLC, App. E), which
#: open_clip's `load_checkpoint` does not read (it knows a bare state dict and "state_dict").
TRAINING_STATE_KEY = "model_state_dict"
_NOT_TORCH_PICKLES = (".safetensors", ".npz", ".npy")


def training_state_dict(path: str | Path) -> dict[str, Any] | None:
    """The model weights of a training checkpoint holding them under `TRAINING_STATE_KEY`
    (DDP's ``module.`` prefixes removed), or None for any other file, which open_clip reads
    itself (a state dict, ``{"state_dict": ...}``, safetensors) or refuses with its own error.

    Read with ``weights_only`` and memory-mapped: looking at an ordinary checkpoint costs
    little more than its pickled structure."""
    if Path(path).suffix.lower() in _NOT_TORCH_PICKLES:
        return None
    import torch

    try:
        with warnings.catch_warnings():  # e.g. "looks like a TorchScript archive"
            warnings.simplefilter("ignore")
            ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # not a zip-format torch file: left to open_clip, which says why
        return None
    if not isinstance(ckpt, Mapping) or "state_dict" in ckpt:
        return None
    state = ckpt.get(TRAINING_STATE_KEY)
    if not isinstance(state, Mapping):
        return None
    return {str(k).removeprefix("module."): v for k, v in state.items()}


def _listed(names: list[str], limit: int = 3) -> str:
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _misfit(model: Any, state: Mapping[str, Any]) -> str | None:
    """Why `state` does not fit `model` (missing, unexpected, other-shaped weights), or None."""
    own = model.state_dict()
    missing = [k for k in own if k not in state]
    unexpected = [k for k in state if k not in own]
    shapes = [
        f"{k} {tuple(state[k].shape)} for {tuple(v.shape)}"
        for k, v in own.items()
        if k in state and tuple(getattr(state[k], "shape", ())) != tuple(v.shape)
    ]
    problems = [
        f"{label}: {_listed(names)}"
        for label, names in (("missing", missing), ("unexpected", unexpected), ("shape", shapes))
        if names
    ]
    return "; ".join(problems) or None


def _load_training_state(model: Any, state: Mapping[str, Any], arch: str) -> None:
    """Load the weights of a training checkpoint into `model`: every weight, of its shape."""
    problem = _misfit(model, state)
    if problem is not None:
        raise ValueError(f"its {TRAINING_STATE_KEY!r} does not fit {arch} ({problem})")
    model.load_state_dict(state, strict=True)


class _NoRandomInitNote(logging.Filter):
    """Hides open_clip's "initialized randomly" note for a model whose weights load next."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "initialized randomly" not in record.getMessage()


@contextmanager
def _quiet_random_init(active: bool) -> Iterator[None]:
    note = _NoRandomInitNote()
    root = logging.getLogger()  # open_clip logs with logging.warning
    if active:
        root.addFilter(note)
    try:
        yield
    finally:
        root.removeFilter(note)


# -- the encoder -------------------------------------------------------------------------------
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
    _not_pickled = ("_model", "_tokenizer", "_causal")
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
        self.trained_quick_gelu = self._trained_quick_gelu(facts)
        self.quick_gelu = self._resolve_quick_gelu(facts)
        self.context_length = context
        self.image_config = dict(facts.image_config)
        self._tokenizer: Any = None
        self._transform: Any = None
        self._causal: CausalTextTower | None = None
        self._token_memo: dict[str, Any] = {}

    def _parse_spec(self, spec: Any, overrides: dict[str, object]) -> OpenClipSpec:
        return as_openclip_spec(super()._parse_spec(spec, overrides))

    def _resolve_source(self) -> OpenClipSource:
        return resolve_openclip_source(self.spec)

    def _trained_quick_gelu(self, facts: OpenClipFacts) -> bool | None:
        """The activation the weights were trained with (None: a local checkpoint, unknown)."""
        if self.source.kind == "local":
            return None
        if not facts.registry_knows_activations and self.spec.quick_gelu is None:
            raise ModelError(
                f"{self.name}: open_clip {facts.version} does not record which "
                f"activation its pretrained weights were trained with; upgrade it "
                f"(open_clip_torch>={MIN_OPEN_CLIP}) or add quick_gelu=true|false"
            )
        return bool(self.source.entry.get("quick_gelu", False))

    def _resolve_quick_gelu(self, facts: OpenClipFacts) -> bool:
        trained = self.trained_quick_gelu
        return resolve_quick_gelu(
            label=self.name,
            arch=self.arch,
            arch_quick_gelu=self.arch_quick_gelu,
            trained_quick_gelu=trained,
            option=self.spec.quick_gelu,
            right_arch=facts.right_arch if trained is not None else None,
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
            context_length=self.context_length,
        )
        return out

    # -- loading --------------------------------------------------------------------------------
    def _weights(self, oc: Any) -> str:
        src = self.source
        if src.kind == "local":
            assert src.path is not None
            return str(src.path)
        offline = paths.offline() if self._offline is None else self._offline
        if offline:
            hit = _cached_tag_weights(src.entry)
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
        oc = import_open_clip()
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
                _load_training_state(model, state, self.arch)
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
        with _quiet_random_init(weights is None):
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
        """Token ids (n, context) of formatted texts, reusing the rows `_token_lengths` made."""
        import torch

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
        finally:
            self._token_memo.clear()
        return np.concatenate(out, axis=0)

    def _batches(self, formatted: list[str], batch_size: int) -> Iterator[list[str]]:
        """Consecutive batches of `formatted`: `batch_size` texts each for a full-width tower.
        A trimmed tower runs a batch at its longest text's token count, so its batches hold up
        to `batch_size` x context tokens (counted at that width) instead: short texts go in
        larger batches, with the activation memory of one full-width batch and without the
        slowness of small matrices (on a 2-core CPU a ViT-B/32 text tower costs 1.6x more per
        token at 64 texts x 13 tokens than at 256 x 13)."""
        if self._causal is None:
            for start in range(0, len(formatted), batch_size):
                yield formatted[start : start + batch_size]
            return
        counts = (self._causal.pool_index(self._tokenize(formatted)) + 1).tolist()
        budget = batch_size * self.context_length
        batch: list[str] = []
        width = 0
        for text, count in zip(formatted, counts, strict=True):
            if batch and (len(batch) + 1) * max(width, count) > budget:
                yield batch
                batch, width = [], 0
            batch.append(text)
            width = max(width, count)
        if batch:
            yield batch

    # -- images ---------------------------------------------------------------------------------
    @property
    def image_transform(self) -> Any:
        """open_clip's eval transform (PIL image → CPU float32 tensor); no weights needed."""
        if self._transform is None:
            import_open_clip()
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
            emb = model.encode_image(batch.to(device=self.device, dtype=dtype))
        out = np.ascontiguousarray(emb.to(torch.float32).cpu().numpy(), dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != n:
            raise ModelError(f"{self.name}: got image embeddings of shape {out.shape} for {n}")
        self._dim = out.shape[1]
        return out


# -- trimming the padding of causal text towers ---------------------------------------------------
@dataclass(frozen=True)
class CausalTextTower:
    """The parts of an open_clip text tower that `encode_text` runs, for a tower whose pooled
    embedding depends only on the tokens up to the pooled one: a causal attention mask (each
    position attends to itself and those before it), pooled at the end-of-text token (`argmax`:
    the highest id; `eos`: the first `eos_id`), no appended CLS token, no padding mask. Then
    the positions after the last pooled one change nothing, and `encode` runs a batch only up
    to it: the embeddings of the full context, with the work of the batch's longest text."""

    token_embedding: Any
    positional_embedding: Any
    transformer: Any
    attn_mask: Any
    ln_final: Any
    text_projection: Any
    pool_type: str
    eos_id: int | None

    def pool_index(self, tokens: Any) -> Any:
        """The pooled position of each row of `tokens` (as open_clip's `text_global_pool`)."""
        if self.pool_type == "argmax":
            return tokens.argmax(dim=-1)
        return (tokens == self.eos_id).int().argmax(dim=-1)

    def encode(self, tokens: Any) -> Any:
        """open_clip's `encode_text` on the columns up to the batch's last pooled position."""
        import torch

        index = self.pool_index(tokens)
        width = int(index.max()) + 1
        cast = self.transformer.get_cast_dtype()
        x = self.token_embedding(tokens[:, :width]).to(cast)
        x = x + self.positional_embedding[:width].to(cast)
        x = self.transformer(x, attn_mask=self.attn_mask[:width, :width])
        x = self.ln_final(x)
        x = x[torch.arange(x.shape[0], device=x.device), index]
        proj = self.text_projection
        if proj is None:
            return x
        return proj(x) if isinstance(proj, torch.nn.Module) else x @ proj

    def matches_full_width(self, model: Any, tokens: Any) -> bool:
        """Whether `encode(tokens)` gives the model's own full-width `encode_text(tokens)`, as
        unit vectors, to rounding (fp32: 1e-4; fp16/bf16: 5e-2): a tower that is not what the
        structure says gives other vectors altogether."""
        import torch

        with torch.inference_mode():
            full = model.encode_text(tokens).float()
            trimmed = self.encode(tokens).float()
        if full.shape != trimmed.shape:
            return False
        tol = 1e-4 if self.positional_embedding.dtype == torch.float32 else 5e-2
        unit = torch.nn.functional.normalize
        return bool(torch.allclose(unit(full, dim=-1), unit(trimmed, dim=-1), rtol=0, atol=tol))


def causal_text_tower(model: Any) -> CausalTextTower | None:
    """`model`'s text tower as a `CausalTextTower`, or None when it is not one (bidirectional,
    e.g. open_clip's SigLIP towers; pooled at the last position or a CLS token; a padding mask;
    a Hugging Face text model; a class that runs its text otherwise)."""
    from open_clip.model import CLIP, CustomTextCLIP
    from open_clip.transformer import TextTransformer

    encode_text = getattr(type(model), "encode_text", None)
    if encode_text is CLIP.encode_text:
        parts: Any = model
        pool, eos = getattr(model, "text_pool_type", None), getattr(model, "text_eos_id", None)
    elif encode_text is CustomTextCLIP.encode_text and type(model.text) is TextTransformer:
        parts = model.text
        if getattr(parts, "cls_emb", None) is not None or getattr(parts, "use_pad_mask", False):
            return None
        pool, eos = parts.pool_type, getattr(parts, "eos_id", None)
    else:
        return None
    mask = getattr(parts, "attn_mask", None)
    if not _is_causal(mask) or pool not in ("argmax", "eos") or (pool == "eos" and eos is None):
        return None
    return CausalTextTower(
        token_embedding=parts.token_embedding,
        positional_embedding=parts.positional_embedding,
        transformer=parts.transformer,
        attn_mask=mask,
        ln_final=parts.ln_final,
        text_projection=parts.text_projection,
        pool_type=pool,
        eos_id=eos,
    )


def _is_causal(mask: Any) -> bool:
    """An additive mask that is -inf exactly above the diagonal (and 0 elsewhere)."""
    import torch

    if not isinstance(mask, torch.Tensor) or mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
        return False
    above = torch.ones(mask.shape, dtype=torch.bool, device=mask.device).triu(1)
    return bool(torch.isneginf(mask[above]).all() and (mask[~above] == 0).all())


def _size2(size: Any) -> tuple[int, int]:
    if isinstance(size, (list, tuple)):
        return (int(size[0]), int(size[-1]))
    return (int(size), int(size))
