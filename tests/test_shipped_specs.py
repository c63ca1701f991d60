"""Every model spec lexsem ships passes the checks a spec passes before weights load: the
training presets, `lexsem train-detector`'s default, the rows of `lexsem reproduce`'s paper
tables (read through `lexsem.report.paper.catalog`), the aliases, and every `openclip:` spec in
the fenced code blocks of docs/*.md and README.md. An `openclip:` registry tag is built into its
encoder (registry, arch config, activation; no weights) with every warning an error, runs the
activation its weights were trained with, and has a fact with a source in
`trained_activation.FACTS`; a local checkpoint is parsed and its options checked (its file is
the user's). Any other backend's spec is parsed and its options checked against the backend
(its files would need the Hugging Face cache)."""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builders.backends import require
from lexsem.errors import ModelError
from lexsem.models.aliases import list_aliases
from lexsem.models.backends.openclip.quickgelu import QuickGeluWarning
from lexsem.models.backends.openclip.spec import as_openclip_spec
from lexsem.models.backends.openclip.trained_activation import (
    FACTS,
    fact,
    registry_activation,
)
from lexsem.models.factory import load_model
from lexsem.models.spec import parse_model_spec
from lexsem.report.paper import catalog

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^\s*(```|~~~)")
OPENCLIP_SPEC = re.compile(r"openclip:[^\s\"'`,)\]]+")
# the syntax's own placeholders (`openclip:ARCH/TAG`, `openclip:ARCH@CKPT`, `.../PATH`)
PLACEHOLDER = re.compile(r"\b(ARCH|TAG|PRETRAINED|PATH|NAME|CKPT|CHECKPOINT)\b")


def _preset_specs() -> Iterator[tuple[str, str]]:
    from lexsem.train.config import PRESETS

    for name, settings in PRESETS.items():
        yield f"preset {name}", settings["model"]


def _train_detector_default() -> Iterator[tuple[str, str]]:
    from lexsem.cli.train_detector import train_detector

    default = inspect.signature(train_detector).parameters["model"].default
    yield "train-detector --model default", default


def _paper_table_specs() -> Iterator[tuple[str, str]]:
    for name in catalog.table_names():
        for row in catalog.get_table(name).rows:
            if row.spec:
                yield f"reproduce {name}: {row.name}", row.spec


def _alias_specs() -> Iterator[tuple[str, str]]:
    for alias, spec in list_aliases().items():
        yield f"alias {alias}", spec


def doc_specs(paths: list[Path], root: Path = ROOT) -> Iterator[tuple[str, str]]:
    """(`file:line`, spec) of every `openclip:` spec in the fenced code blocks of `paths`
    (named relative to `root`), placeholders (`ARCH`, `TAG`, `PATH`, ...) left out."""
    for path in paths:
        inside = False
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                continue
            for match in OPENCLIP_SPEC.finditer(line):
                spec = match.group(0).rstrip(".;:")
                if not PLACEHOLDER.search(spec):
                    yield f"{path.relative_to(root)}:{number}", spec


DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
SHIPPED: list[tuple[str, str]] = [
    *_preset_specs(),
    *_train_detector_default(),
    *_paper_table_specs(),
    *_alias_specs(),
    *doc_specs(DOCS),
]


def _open_clip() -> Any:
    try:
        import open_clip
    except Exception as exc:  # not installed, or a torch/torchvision mismatch
        require(False, f"open_clip does not import ({exc})")
        raise
    return open_clip


def check_spec(spec: str) -> Any:
    """The checks `spec` passes before weights load (module doc); the built model for an
    `openclip:` registry tag, else None. Raises ModelError, or a QuickGeluWarning as an error."""
    parsed = parse_model_spec(spec)
    if parsed.backend != "openclip" or as_openclip_spec(parsed).pretrained is None:
        return None
    _open_clip()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = load_model(spec)
    assert not model.loaded
    assert model.quick_gelu == model.trained_quick_gelu, spec
    assert fact(model.arch, model.pretrained) is not None, (
        f"{spec}: no fact for ({model.arch}, {model.pretrained}) in trained_activation.FACTS"
    )
    return model


@pytest.mark.parametrize(("where", "spec"), SHIPPED, ids=[w for w, _ in SHIPPED])
def test_every_shipped_spec_passes_the_spec_checks(where: str, spec: str) -> None:
    check_spec(spec)


def test_the_walk_finds_every_kind_of_spec() -> None:
    """The lists are not empty, and the docs' walk finds the specs of a fenced block only."""
    kinds = {where.split(" ")[0].split(":")[0] for where, _ in SHIPPED}
    assert {"preset", "train-detector", "reproduce", "alias"} <= kinds
    assert sum(where.startswith("preset ") for where, _ in SHIPPED) == 4
    assert any(where.startswith("README.md:") for where, _ in SHIPPED)
    assert any(where.startswith("docs/training.md:") for where, _ in SHIPPED)
    roberta = [w for w, s in SHIPPED if s == "openclip:roberta-ViT-B-32/laion2b_s12b_b32k"]
    assert any("visla" in w for w in roberta) and any("scpp_table2" in w for w in roberta)


def test_doc_walk_reads_fenced_blocks_only(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Inline `openclip:ViT-B-32/openai` is prose.\n"
        "```bash\n"
        'lexsem eval -m "openclip:ViT-B-32/openai" -b x   # openclip:ARCH/TAG\n'
        "```\n"
        "~~~\nopenclip:RN50-quickgelu/openai.\n~~~\n",
        encoding="utf-8",
    )
    found = list(doc_specs([page], root=tmp_path))
    assert found == [
        ("page.md:3", "openclip:ViT-B-32/openai"),
        ("page.md:6", "openclip:RN50-quickgelu/openai"),
    ]


def test_the_check_refuses_a_wrong_activation() -> None:
    """The check can fail: OpenAI's QuickGELU weights under the GELU arch, and an explicit
    mismatch (a warning, an error here)."""
    with pytest.raises(ModelError, match="use openclip:ViT-B-32-quickgelu/openai"):
        check_spec("openclip:ViT-B-32/openai")
    with pytest.raises(QuickGeluWarning):
        check_spec("openclip:ViT-B-32-quickgelu/openai?quick_gelu=false")
    with pytest.raises(ModelError, match="pooling"):
        check_spec("openclip:ViT-B-32-quickgelu/openai?pooling=cls")


def test_roberta_vit_b_32_runs_quickgelu_as_trained() -> None:
    """open_clip's roberta-ViT-B-32 config builds QuickGELU and its tag has no flag: the
    weights were trained with that config, so it runs QuickGELU, with the fact's source."""
    model = check_spec("openclip:roberta-ViT-B-32/laion2b_s12b_b32k")
    assert model.quick_gelu is True and model.fingerprint["activation"] == "QuickGELU"
    basis = model.describe()["trained_activation_basis"]
    assert "roberta-ViT-B-32.json" in basis and '"quick_gelu": true' in basis
    with pytest.warns(QuickGeluWarning, match="degraded"):
        gelu = load_model("openclip:roberta-ViT-B-32/laion2b_s12b_b32k?quick_gelu=false")
    assert gelu.fingerprint["activation"] == "GELU"


def test_every_fact_has_a_source_and_agrees_with_open_clips_own_build() -> None:
    """Each fact names its source and one line of evidence, and is what open_clip itself
    builds for the tag (its registry flag, else the arch it lists the tag under): a new
    open_clip that says otherwise fails here."""
    from lexsem.models.backends.openclip.pretrained import registry_facts

    oc = _open_clip()
    assert len(FACTS) >= 20
    for (arch, tag), known in FACTS.items():
        assert known.source.startswith("https://github.com/"), (arch, tag)
        assert known.evidence and "\n" not in known.evidence, (arch, tag)
        facts = registry_facts(oc, arch, tag)
        assert facts.registered_arch is not None and facts.registered_quick_gelu is not None
        said = registry_activation(facts.entry, facts.registered_quick_gelu, facts.registered_arch)
        assert said.quick_gelu == known.quick_gelu, (arch, tag, said.basis)


@pytest.mark.parametrize(
    ("arch", "config_quick_gelu", "flag", "want"),
    [
        ("lexsem-qg-config", True, None, True),  # roberta-ViT-B-32's case: the config says it
        ("lexsem-gelu-config", False, None, False),
        ("lexsem-gelu-config", False, True, True),  # the registry's flag wins over the config
        ("lexsem-qg-config", True, False, False),
    ],
)
def test_a_tag_outside_the_table_follows_open_clip(
    arch: str,
    config_quick_gelu: bool,
    flag: bool | None,
    want: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The documented default for an (arch, tag) the table does not hold: the registry's
    quick_gelu for the tag, else the activation of the arch it is listed under."""
    import json

    oc = _open_clip()
    config = json.loads(json.dumps(oc.get_model_config("ViT-B-32")))
    config["quick_gelu"] = config_quick_gelu
    (tmp_path / f"{arch}.json").write_text(json.dumps(config), encoding="utf-8")
    oc.add_model_config(tmp_path)
    entry: dict[str, Any] = {"hf_hub": "lexsem-no-such-org/no-such-repo/"}
    if flag is not None:
        entry["quick_gelu"] = flag
    monkeypatch.setitem(oc.pretrained._PRETRAINED, arch, {"lexsem_tag": entry})
    spec = f"openclip:{arch}/lexsem_tag"
    if want == config_quick_gelu:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model = load_model(spec)
        assert model.quick_gelu is want and model.trained_quick_gelu is want
        assert "registry" in model.describe()["trained_activation_basis"]
    else:
        with pytest.raises(ModelError, match=f"trained with {'QuickGELU' if want else 'GELU'}"):
            load_model(spec)
