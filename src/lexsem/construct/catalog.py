"""The registries of `lexsem build`: stages (name -> `Stage`), input sources (name -> a function
`fn(**settings) -> InputTable`, a recipe's ``[input] source = NAME``) and the shipped recipes
(name -> its TOML file in ``recipes/``), each a `lexsem.registry.Registry`.

The built-in stages and sources are lazy "module:attr" entries declared here (a stage's module
is imported when a recipe first names it), so registering a user's stage never hides a built-in
one, whatever the order. Adding a stage is one file that defines its `Stage` and one line
below; a user's stage is one `register_stage` call in a module the recipe `imports`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lexsem import plugins
from lexsem.construct.stage import FilesFn, RequestsFn, Stage, StageFn
from lexsem.errors import LexsemError
from lexsem.registry import Registry, did_you_mean

__all__ = [
    "RECIPES",
    "SOURCES",
    "STAGES",
    "find_recipe",
    "get_stage",
    "import_modules",
    "register_source",
    "register_stage",
    "shipped_recipe",
    "stage_names",
]


def _source(obj: object) -> Callable[..., Any]:
    if not callable(obj):
        raise TypeError(f"an input source must be a function, got {type(obj).__name__}")
    return obj  # type: ignore[return-value]


STAGES: Registry[Stage] = Registry(
    "stage",
    Stage,
    {
        "adversarial_refine": "lexsem.construct.refine:STAGE",
        "baseline_scores": "lexsem.construct.baselines:STAGE",
        "blind_scores": "lexsem.construct.blind_scores:STAGE",
        "caption_format": "lexsem.construct.caption_format:STAGE",
        "clean_captions": "lexsem.construct.clean_captions:STAGE",
        "export_human_task": "lexsem.construct.human:EXPORT_STAGE",
        "fold_back_answers": "lexsem.construct.human:FOLD_BACK_STAGE",
        "fold_back_validation": "lexsem.construct.fold_back_validation:STAGE",
        "freeze": "lexsem.construct.freeze:STAGE",
        "generate_images": "lexsem.construct.images:STAGE",
        "scpp_second_positive": "lexsem.construct.scpp_positive:STAGE",
        "score_percentile": "lexsem.construct.score_percentile:STAGE",
        "select_best_image": "lexsem.construct.best_image:STAGE",
        "stratified_sample": "lexsem.construct.stratified_sample:STAGE",
        "sugarcrepe_negatives": "lexsem.construct.sugarcrepe_negatives:STAGE",
        "template_filter": "lexsem.construct.template_filter:STAGE",
        "train_manifest": "lexsem.construct.train_manifest:STAGE",
        "vsr_negative_candidates": "lexsem.construct.vsr_spatial:NEGATIVES_STAGE",
        "vsr_spatial_pairs": "lexsem.construct.vsr_spatial:PAIRS_STAGE",
    },
)

SOURCES: Registry[Callable[..., Any]] = Registry(
    "input source",
    _source,
    {
        "coco_captions": "lexsem.construct.coco_captions:coco_captions_source",
        "vsr": "lexsem.construct.vsr_spatial:vsr_source",
    },
)

_SHIPPED = Path(__file__).parent / "recipes"
RECIPES: Registry[Path] = Registry("recipe", Path)
for _name in (
    "bivlc",
    "scpp_positive",
    "sugarcrepe_negatives",
    "trohn_img",
    "trohn_text",
    "visla_spatial",
):
    RECIPES.add(_name, _SHIPPED / f"{_name}.toml")


def register_stage(
    name: str,
    fn: StageFn,
    *,
    generator: bool = False,
    requests: RequestsFn | None = None,
    image_generator: bool = False,
    files: FilesFn | None = None,
    replace: bool = False,
) -> None:
    """Make `fn` usable as stage `name` in recipes (see `lexsem.construct.stage.Stage`); a
    taken name is refused unless `replace` (registering the same function again is not)."""
    if not isinstance(name, str) or not name.replace("_", "").isalnum() or not name[:1].isalpha():
        raise LexsemError(f"a stage name is letters, digits and '_', got {name!r}")
    same = name in STAGES and STAGES.get(name).fn is fn
    STAGES.add(
        name, Stage(name, fn, generator, requests, image_generator, files), replace=replace or same
    )


def register_source(name: str, fn: Callable[..., Any], *, replace: bool = False) -> None:
    """Make `fn(**settings) -> InputTable` usable as ``[input] source = NAME``."""
    SOURCES.add(name, fn, replace=replace)


def get_stage(name: str) -> Stage:
    """The stage registered as `name`; a `LexsemError` naming the known ones."""
    return STAGES.get(name)


def stage_names() -> list[str]:
    """The registered stage names, sorted."""
    return STAGES.names()


def find_recipe(recipe: str | Path) -> Path:
    """The recipe file `recipe` names: a file, or else a shipped recipe's name (a folder of
    that name, such as the build folder of ``lexsem build bivlc -o bivlc``, is not a recipe);
    a name that is neither (no such file, no folder or suffix in it) is an error naming the
    shipped recipes, with "did you mean"."""
    path = Path(recipe)
    if path.is_file():
        return path
    name = str(recipe)
    if name in RECIPES or (len(path.parts) == 1 and not path.suffix):
        return shipped_recipe(name, or_file=True)
    return path


def shipped_recipe(name: str, *, or_file: bool = False) -> Path:
    """The file of the shipped recipe `name`; an unknown name is one line with "did you mean"
    (a close name, or else the one that `name` begins or is part of: ``scpp`` ->
    ``scpp_positive``) and the shipped names."""
    if name in RECIPES:
        return RECIPES.get(name)
    known = RECIPES.names()
    hint = did_you_mean(name, known)
    if not hint:
        part = [k for k in known if name and name.lower() in k]
        hint = f" (did you mean {part[0]!r}?)" if len(part) == 1 else ""
    raise LexsemError(
        f"unknown recipe {name!r}{hint}; known: {', '.join(known)} (lexsem build --list)"
        + ("; or give a recipe file" if or_file else "")
    )


def import_modules(names: Sequence[str]) -> None:
    """Load a recipe's `plugins` (`lexsem.plugins.load`: modules or `.py` paths that register
    stages or sources); one that fails is a `LexsemError` naming it."""
    plugins.load(names, "recipe plugins")
