"""A recipe file of `lexsem build` (TOML): a name, an input, an ordered list of stages with
their settings (docs/building.md has an example). Read and checked whole before any work:
each error is one line naming the file and, where it is one, the stage.

    name = "bivlc-captions"
    seed = 0                          # optional: ctx.seed, and sent to the generator
    generator = "openai:MODEL?base_url=http://127.0.0.1:8000/v1"   # optional
    send_seed = true                  # optional: the seed as a request parameter
    image_generator = "diffusers:MODEL?steps=50"   # optional: for stages that make images
    imports = ["my_package.stages"]   # optional: modules that register more stages

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
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lexsem.construct.catalog import find_recipe, get_stage, import_modules
from lexsem.errors import LexsemError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

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
    imports: tuple[str, ...] = ()
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
    """The recipe of the TOML file `path`, checked: its fields, each stage registered, each
    setting one its stage takes, a generator for the stages that ask one, the input there.
    `path` may name a shipped recipe (`lexsem list recipes`)."""
    path = find_recipe(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LexsemError(f"{path}: cannot read the recipe ({exc.strerror})") from None
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LexsemError(f"{path}: not a TOML file ({exc})") from None
    for key in ("path", "sha256"):
        if key in raw:
            raise LexsemError(f"{path}: unknown field {key!r}")
    try:
        recipe = Recipe(**raw, path=path, sha256=hashlib.sha256(data).hexdigest())
    except ValidationError as exc:
        raise LexsemError(f"{path}: {_problem(exc.errors()[0], raw)}") from None
    _check_stages(recipe, path)
    where = recipe.input_path()
    if where is not None and not where.is_file():
        raise LexsemError(f"{path}: [input] path {recipe.input.path!r}: no such file ({where})")
    return recipe


def _problem(error: Any, raw: dict[str, Any]) -> str:
    loc = list(error["loc"])
    msg = error["msg"].removeprefix("Value error, ")
    if loc[:1] == ["stages"] and len(loc) > 1 and isinstance(loc[1], int):
        n = loc[1]
        stages = raw.get("stages") or []
        use = stages[n].get("use") if n < len(stages) and isinstance(stages[n], dict) else None
        rest = ".".join(str(p) for p in loc[2:])
        return f"stage {n + 1}{f' ({use})' if use else ''}: {rest + ': ' if rest else ''}{msg}"
    where = ".".join(str(p) for p in loc)
    return f"{where}: {msg}" if where else msg


def _check_stages(recipe: Recipe, path: Path) -> None:
    try:
        import_modules(recipe.imports)
    except ImportError as exc:
        raise LexsemError(f"{path}: imports: {exc}") from None
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
