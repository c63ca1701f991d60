"""A recipe file of `lexsem build` (TOML, or YAML with the same keys): a name, an input, an
ordered list of stages with their settings (docs/building.md has an example). Read by the one
config-file loader (`lexsem.config_file`: strict, unknown keys with "did you mean") and checked
whole before any work: each error is one line naming the file and, where it is one, the stage.

    name = "bivlc-captions"
    seed = 0                          # optional: ctx.seed, and sent to the generator
    generator = "openai:MODEL?base_url=http://127.0.0.1:8000/v1"   # optional
    send_seed = true                  # optional: the seed as a request parameter
    image_generator = "diffusers:MODEL?steps=50"   # optional: for stages that make images
    plugins = ["my_package.stages"]   # optional: modules that register more stages

    [input]
    path = "captions.jsonl"           # relative to the recipe; or: source = "NAME"

    [[stages]]
    use = "caption_format"            # a registered stage
    name = "format"                   # optional: its name in the build folder
    [stages.settings]
    punctuation = "."
"""

from __future__ import annotations

import hashlib
import inspect
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lexsem.config_file import read_config_file, validate_config
from lexsem.construct.catalog import find_recipe, get_stage, import_modules
from lexsem.errors import LexsemError

__all__ = ["InputSpec", "Recipe", "StageSpec", "load_recipe"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputSpec(_Strict):
    path: str | None = None
    source: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one(self) -> InputSpec:
        if (self.path is None) == (self.source is None):
            raise ValueError("give exactly one of `path` (a file) or `source` (a built-in)")
        return self


class StageSpec(_Strict):
    use: str = Field(min_length=1)
    name: str | None = Field(default=None, pattern=r"^[A-Za-z][A-Za-z0-9_-]*$")
    settings: dict[str, Any] = Field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.name or self.use


class Recipe(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    seed: int = Field(default=0, ge=0, le=2**32 - 1)
    generator: str | None = None
    image_generator: str | None = None
    send_seed: bool = True
    plugins: tuple[str, ...] = ()
    input: InputSpec
    stages: list[StageSpec] = Field(min_length=1)
    # filled by load_recipe, never read from the file
    path: Path | None = Field(default=None, exclude=True)
    sha256: str = Field(default="", exclude=True)

    def input_path(self) -> Path | None:
        """The input file, relative paths read from the recipe's folder."""
        if self.input.path is None:
            return None
        p = Path(self.input.path).expanduser()
        base = self.path.parent if self.path is not None else Path.cwd()
        return p if p.is_absolute() else base / p


def load_recipe(path: str | Path) -> Recipe:
    """The recipe of the TOML (or `.yaml`/`.yml`) file `path`, checked: its keys, each stage
    registered, each setting one its stage takes, a generator for the stages that ask one, the
    input there. `path` may name a shipped recipe (`lexsem list recipes`)."""
    file = read_config_file(find_recipe(path), what="recipe")
    recipe = validate_config(
        file,
        Recipe,
        numbered={"stages": ("stage", "use")},
        path=file.path,
        sha256=hashlib.sha256(file.data).hexdigest(),
    )
    _check_stages(recipe, file.path)
    where = recipe.input_path()
    if where is not None and not where.is_file():
        raise LexsemError(
            f"{file.path}: [input] path {recipe.input.path!r}: no such file ({where})"
        )
    return recipe


def _check_stages(recipe: Recipe, path: Path) -> None:
    try:
        import_modules(recipe.plugins)
    except ImportError as exc:
        raise LexsemError(f"{path}: plugins: {exc}") from None
    labels: set[str] = set()
    for n, spec in enumerate(recipe.stages, 1):
        where = f"{path}: stage {n} ({spec.use})"
        try:
            stage = get_stage(spec.use)
        except LexsemError as exc:
            raise LexsemError(f"{where}: {exc}") from None
        if spec.label in labels:
            raise LexsemError(f"{where}: the name {spec.label!r} is taken: give `name`")
        labels.add(spec.label)
        try:
            inspect.signature(stage.fn).bind(None, None, **spec.settings)
        except TypeError as exc:
            raise LexsemError(f"{where}: settings: {exc}") from None
        if stage.generator and recipe.generator is None:
            raise LexsemError(
                f"{where}: the stage asks a generator; the recipe names none (`generator = ...`)"
            )
        if stage.image_generator and recipe.image_generator is None:
            raise LexsemError(
                f"{where}: the stage makes images; the recipe names no image generator "
                "(`image_generator = ...`)"
            )
