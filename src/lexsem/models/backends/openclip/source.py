"""Where an open_clip model's weights come from and what identifies them.

A tag is identified by its registry entry (Hub repo and/or URL, which for the OpenAI /
mlfoundations URLs carry the file's sha256); a local checkpoint by the digest of its bytes
(`lexsem.models.source.file_digest`), so moving or renaming it keeps its embedding cache. Tag
weights are fetched by open_clip (Hugging Face cache, or `~/.cache/clip` for URL-only tags);
offline only those caches are looked at (`cached_tag_weights`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lexsem.errors import ModelError
from lexsem.models.backends.openclip import install
from lexsem.models.backends.openclip.custom_arch import register_custom_arch
from lexsem.models.backends.openclip.facts import OpenClipFacts, read_memo
from lexsem.models.backends.openclip.pretrained import openclip_facts
from lexsem.models.backends.openclip.spec import OpenClipSpec
from lexsem.models.source import IdentifiedSource, file_digest


@dataclass(frozen=True)
class OpenClipSource(IdentifiedSource):
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

    def _identify(self) -> dict[str, Any]:
        if self.kind == "local":
            assert self.path is not None
            return {"source": "local", "file": file_digest(self.path)}
        return {
            "source": "openclip",
            "tag": self.tag,
            "hf_hub": self.entry.get("hf_hub") or None,
            "url": self.entry.get("url") or None,
        }

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
        register_custom_arch(oc or install.import_open_clip(), spec.config_file)
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


def cached_tag_weights(entry: dict[str, Any]) -> str | None:
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
