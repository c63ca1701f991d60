"""What open_clip's pretrained registry says about an arch and a tag: the arch's config, the
tag's registry entry, the activation the tag was trained with and the arch that builds it, the
eval preprocessing config — all without weights. `openclip_facts` reads them from open_clip, or
from their memo on disk (`facts.py`) in a process that has not imported open_clip."""

from __future__ import annotations

import difflib
import sys
from dataclasses import asdict
from typing import Any

from lexsem.errors import ModelError
from lexsem.models.backends.openclip import install
from lexsem.models.backends.openclip.facts import OpenClipFacts, normalized, read_memo, write_memo
from lexsem.models.backends.openclip.quickgelu import QUICKGELU_SUFFIX

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
