"""Which activation a pretrained tag's weights were trained with: a table of facts per (arch,
tag), each with its source, and open_clip's own answer for every other tag.

The table (`FACTS`) holds every open_clip tag that lexsem ships a spec for (the training
presets, the paper tables of `lexsem reproduce`, the aliases, the documentation's examples) and
says for each whether its weights were trained with QuickGELU, where that is stated, and the
line that states it. Keys are the arch the registry lists the tag under without its
`-quickgelu` suffix (`ViT-B-32`, not `ViT-B-32-quickgelu`) and the tag as open_clip normalises
it.

Any other tag (`trained_activation`): the tag's `quick_gelu` in open_clip's pretrained registry
when the entry has one; else the activation of the arch the registry lists the tag under, which
is what open_clip builds for it (an `ARCH-quickgelu` name builds QuickGELU, a plain config
builds what its `quick_gelu` says, nn.GELU when it says nothing). A missing flag alone does not
mean GELU: open_clip flags only the tags it also lists under an `ARCH-quickgelu` name, so a tag
whose own arch config builds QuickGELU (`roberta-ViT-B-32`'s) carries none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lexsem.models.backends.openclip.quickgelu import QUICKGELU_SUFFIX, activation_name

_OPEN_CLIP = "https://github.com/mlfoundations/open_clip"
_OPENAI_CLIP_MODEL = "https://github.com/openai/CLIP/blob/main/clip/model.py"


@dataclass(frozen=True)
class ActivationFact:
    """What one tag's weights were trained with (True: QuickGELU), where that is stated (a URL
    of the file, at a commit where it changed since) and the line that states it."""

    quick_gelu: bool
    source: str
    evidence: str


@dataclass(frozen=True)
class TrainedActivation:
    """The answer for one (arch, tag): the activation, and on what basis (the fact's source and
    evidence, or the registry's answer); `from_table` when a fact of `FACTS` gave it."""

    quick_gelu: bool
    basis: str
    from_table: bool

    @property
    def name(self) -> str:
        return activation_name(self.quick_gelu)


def _commit(sha: str, path: str) -> str:
    return f"{_OPEN_CLIP}/blob/{sha}/{path}"


_OPENAI = ActivationFact(
    quick_gelu=True,
    source=_OPENAI_CLIP_MODEL,
    evidence="OpenAI CLIP's ResidualAttentionBlock (every text tower and ViT image tower): "
    '`("gelu", QuickGELU())`',
)
_LAION2B = ActivationFact(
    quick_gelu=False,
    source=_commit("98fc29079e870d8d6b313b89b4280e92e76c3c00", "README.md"),
    evidence="open_clip's README from 2022-04-03, before the LAION-2B weights (2022-09 on): "
    '"The model defaults are now nn.GELU ... Future trained models will use nn.GELU"; '
    "registered under the plain (nn.GELU) arch",
)
_DATACOMP = ActivationFact(
    quick_gelu=False,
    source=_commit("648d311a5b1e85324eba28411c1eb0c83ad1518f", "src/open_clip/pretrained.py"),
    evidence="open_clip PR 517 (2023-05-04) registers the DataComp weights under the plain "
    "(nn.GELU) archs `_VITB32`, `_VITB16`, `_VITL14`, not their -quickgelu variants",
)

#: (arch without -quickgelu, tag) -> the fact; see the module doc.
FACTS: dict[tuple[str, str], ActivationFact] = {
    **{
        (arch, "openai"): _OPENAI
        for arch in (
            "RN50",
            "RN101",
            "RN50x4",
            "RN50x16",
            "RN50x64",
            "ViT-B-32",
            "ViT-B-16",
            "ViT-L-14",
            "ViT-L-14-336",
        )
    },
    ("roberta-ViT-B-32", "laion2b_s12b_b32k"): ActivationFact(
        quick_gelu=True,
        source=_commit(
            "8cfe4c3410f36a8838a7282e168a5738769eb444",
            "src/open_clip/model_configs/roberta-ViT-B-32.json",
        ),
        evidence='`"quick_gelu": true` in the arch config since it was added (open_clip PR 93, '
        "2022-11-07), the config the weights were trained with on that branch and registered "
        "for in open_clip PR 221 (2022-11-13), unchanged since; open_clip's results table measures "
        "61.71% ImageNet zero-shot with it, the model card's 61.7%",
    ),
    ("xlm-roberta-base-ViT-B-32", "laion5b_s13b_b90k"): ActivationFact(
        quick_gelu=False,
        source=_commit(
            "bb924a8715bc9fe92728c4980f3ecaab3bd9ee31",
            "src/open_clip/model_configs/xlm-roberta-base-ViT-B-32.json",
        ),
        evidence="the arch config, added for these weights (open_clip PR 216, 2022-11-10), has "
        "no quick_gelu: open_clip builds nn.GELU",
    ),
    ("xlm-roberta-large-ViT-H-14", "frozen_laion5b_s13b_b90k"): ActivationFact(
        quick_gelu=False,
        source=_commit(
            "42c5dc6ef15349c1d0facee23e91c7fb877c40a1",
            "src/open_clip/model_configs/xlm-roberta-large-ViT-H-14.json",
        ),
        evidence="the arch config (open_clip PR 231) has no quick_gelu; its image tower is "
        "ViT-H-14 laion2b_s32b_b79k, frozen (the model card)",
    ),
    ("ViT-B-32", "laion2b_s34b_b79k"): _LAION2B,
    ("ViT-L-14", "laion2b_s32b_b82k"): _LAION2B,
    ("ViT-H-14", "laion2b_s32b_b79k"): _LAION2B,
    ("ViT-g-14", "laion2b_s12b_b42k"): _LAION2B,
    ("ViT-bigG-14", "laion2b_s39b_b160k"): _LAION2B,
    ("ViT-B-32", "datacomp_s_s13m_b4k"): _DATACOMP,
    ("ViT-B-32", "datacomp_m_s128m_b4k"): _DATACOMP,
    ("ViT-B-16", "datacomp_l_s1b_b8k"): _DATACOMP,
    ("ViT-L-14", "datacomp_xl_s13b_b90k"): _DATACOMP,
    ("ViT-B-16", "datacomp_xl_s13b_b90k"): ActivationFact(
        quick_gelu=False,
        source=_commit("76df2ff0d7d5ade55f5954bfc5827c3a36dd90aa", "src/open_clip/pretrained.py"),
        evidence="registered under the plain (nn.GELU) arch `_VITB16` (2023-09-29)",
    ),
}


def base_arch(arch: str) -> str:
    """`arch` without its `-quickgelu` suffix."""
    return arch[: -len(QUICKGELU_SUFFIX)] if arch.endswith(QUICKGELU_SUFFIX) else arch


def fact(arch: str, tag: str) -> ActivationFact | None:
    """The table's fact for (arch, tag), or None."""
    return FACTS.get((base_arch(arch), tag))


def registry_activation(
    entry: dict[str, Any], registered_quick_gelu: bool, registered_arch: str
) -> TrainedActivation:
    """open_clip's answer for a tag (module doc): its registry entry's `quick_gelu`, else the
    activation of `registered_arch`, the arch the registry lists it under."""
    if entry.get("quick_gelu") is not None:
        flag = bool(entry["quick_gelu"])
        return TrainedActivation(
            flag, f"open_clip's pretrained registry: quick_gelu={str(flag).lower()}", False
        )
    return TrainedActivation(
        registered_quick_gelu,
        f"open_clip's pretrained registry gives no quick_gelu; the arch it lists the tag under "
        f"({registered_arch}) builds {activation_name(registered_quick_gelu)}",
        False,
    )


def trained_activation(
    arch: str, tag: str, entry: dict[str, Any], registered_quick_gelu: bool, registered_arch: str
) -> TrainedActivation:
    """What the weights of `tag` were trained with: the table's fact, else open_clip's answer
    (`registry_activation`)."""
    known = fact(arch, tag)
    if known is not None:
        return TrainedActivation(known.quick_gelu, f"{known.source}: {known.evidence}", True)
    return registry_activation(entry, registered_quick_gelu, registered_arch)


def spec_activation(spec: Any) -> str | None:
    """The activation an `openclip:` spec runs, said without building it: the spec's own
    `quick_gelu` when it gives one, else the table's fact for its (arch, tag), which is what
    the encoder runs (it refuses an arch that builds the other). None for a local checkpoint
    or a tag the table does not hold (the encoder answers for those when it is built)."""
    from lexsem.models.backends.openclip.spec import as_openclip_spec

    clip = as_openclip_spec(spec)
    if clip.pretrained is None:
        return None
    if clip.quick_gelu is not None:
        return activation_name(clip.quick_gelu)
    known = fact(clip.arch, clip.pretrained)
    return None if known is None else activation_name(known.quick_gelu)
