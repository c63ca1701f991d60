"""What open_clip's pretrained registry says about an arch and a tag: the arch's config, the
tag's registry entry and the arch it is listed under, the arch names building each activation,
the eval preprocessing config — all without weights. `openclip_facts` reads them from
open_clip, or from their memo on disk (`facts.py`) in a process that has not imported
open_clip. What the weights were trained with is decided from them in
`trained_activation.py`."""

from __future__ import annotations

import difflib
import sys
from dataclasses import asdict
from typing import Any

from lexsem.errors import ModelError
from lexsem.models.backends.openclip import install
from lexsem.models.backends.openclip.facts import OpenClipFacts, normalized, read_memo, write_memo
from lexsem.models.backends.openclip.quickgelu import QUICKGELU_SUFFIX, activation_name
from lexsem.models.backends.openclip.trained_activation import base_arch

# the preprocessing keys a pretrained tag may set (open_clip's PreprocessCfg minus the size)
_TAG_PREPROCESS_KEYS = ("mean", "std", "interpolation", "resize_mode", "fill_color")


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


def _tag_entry(oc: Any, arch: str, tag: str) -> tuple[str, dict[str, Any]]:
    """The arch the registry lists `tag` under and its entry: `arch`'s, or for an
    ARCH-quickgelu name the plain arch's when only that has the tag (so the activation check
    can name the right arch)."""
    entry = oc.get_pretrained_cfg(arch, tag)
    if entry:
        return arch, dict(entry)
    base = base_arch(arch)
    entry = oc.get_pretrained_cfg(base, tag) if base != arch else None
    if entry:
        return base, dict(entry)
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


def _variants(oc: Any, arch: str) -> dict[str, str]:
    """The registered arch names with `arch`'s config otherwise, by the activation they build:
    the plain name and its ARCH-quickgelu variant."""
    out: dict[str, str] = {}
    base = base_arch(arch)
    for name in (base, base + QUICKGELU_SUFFIX):
        config = oc.get_model_config(name)
        if config is not None:
            out.setdefault(activation_name(bool(config.get("quick_gelu", False))), name)
    return out


def openclip_facts(arch: str, tag: str | None, oc: Any | None = None) -> OpenClipFacts:
    """The registry facts of `arch` (and `tag`): from open_clip when it is given or already
    imported (then remembered), else from their memo when there is one (no import: see
    `facts.py`), else from open_clip, imported now."""
    if oc is None and "open_clip" not in sys.modules:
        memo = read_memo(arch, tag)
        if memo is not None:
            return memo
    facts = registry_facts(oc or install.import_open_clip(), arch, tag)
    write_memo(facts)
    return facts


def registry_facts(oc: Any, arch: str, tag: str | None) -> OpenClipFacts:
    """The facts read from open_clip's registry; ModelError for an unknown arch or tag."""
    config = _arch_config(oc, arch)
    registered, entry = _tag_entry(oc, arch, tag) if tag is not None else (None, {})
    registered_config = oc.get_model_config(registered) if registered is not None else None
    facts = OpenClipFacts(
        version=str(getattr(oc, "__version__", "?")),
        arch=arch,
        tag=tag,
        config=config,
        image_config=_image_config(config, entry),
        registry_knows_activations=_registry_knows_activations(oc) if tag else True,
        entry=entry,
        registered_arch=registered,
        registered_quick_gelu=bool((registered_config or {}).get("quick_gelu", False))
        if registered is not None
        else None,
        variants=_variants(oc, arch) if tag else {},
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
