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

What `lexsem build` fills in (`load_recipe`'s overrides, applied to the file's keys before they
are checked, so a mistake is the same one-line error): `--input FILE` is `[input] path`, or the
`path` setting of a built-in source (`[input.settings] path`); `--generator MODEL` and
`--image-generator MODEL` the generators; `--set STAGE.KEY=VALUE` a stage's setting (STAGE: its
`name`, else its `use`; VALUE read as a TOML value — `3`, `true`, `"text"`, `[1, 2]` — else as
text) and `--set input.KEY=VALUE` a setting of the input. A stage setting whose value is
``"{input}"`` (`INPUT_REF`) is the input file, so a shipped recipe names its input once and
holds no path to edit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lexsem.config_file import parse_value, read_config_file, validate_config
from lexsem.construct.catalog import SOURCES, find_recipe, get_stage, import_modules
from lexsem.errors import LexsemError
from lexsem.registry import did_you_mean

__all__ = [
    "INPUT_REF",
    "InputSpec",
    "Recipe",
    "StageSpec",
    "check_input_file",
    "load_recipe",
    "stage_settings",
    "with_input_path",
]

#: A stage setting with this value is the build's input file (`Recipe.input_file`).
INPUT_REF = "{input}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputSpec(_Strict):
    path: str | None = None
    source: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one(self) -> InputSpec:
        if self.path is None and self.source is None:
            raise ValueError(
                "no input file: give it with `lexsem build RECIPE --input FILE` (or write "
                "`path = FILE` under [input], or a built-in `source`)"
            )
        if self.path is not None and self.source is not None:
            raise ValueError("give one of `path` (a file) or `source` (a built-in), not both")
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

    def input_file(self) -> Path | None:
        """The file the build reads: `[input] path`, or a built-in source's `path` setting."""
        if self.input.path is not None:
            return self.input_path()
        given = self.input.settings.get("path")
        return Path(given).expanduser() if isinstance(given, str) else None


def load_recipe(
    path: str | Path,
    *,
    input: str | Path | None = None,
    generator: str | None = None,
    image_generator: str | None = None,
    sets: Sequence[str] = (),
) -> Recipe:
    """The recipe of the TOML (or `.yaml`/`.yml`) file `path`, checked: its keys, each stage
    registered, each setting one its stage takes, a generator for the stages that ask one, the
    input there. `path` may name a shipped recipe (`lexsem list recipes`). `input`,
    `generator`, `image_generator` and `sets` (``STAGE.KEY=VALUE``) replace what the file says
    (see the module doc)."""
    file = read_config_file(find_recipe(path), what="recipe")
    if input is not None:
        check_input_file(input)
    raw = _overridden(file.raw, file.path, input, generator, image_generator, sets)
    recipe = validate_config(
        dataclasses.replace(file, raw=raw),
        Recipe,
        numbered={"stages": ("stage", "use")},
        path=file.path,
        sha256=hashlib.sha256(file.data).hexdigest(),
    )
    _check_input(recipe, file.path)
    recipe = _with_input_refs(recipe, file.path)
    _check_stages(recipe, file.path)
    where = recipe.input_path()
    if where is not None and not where.is_file():
        raise LexsemError(
            f"{file.path}: [input] path {recipe.input.path!r}: no such file ({where})"
        )
    return recipe


def check_input_file(input: str | Path) -> None:
    """`--input` names a file: a folder or nothing there is one line saying which."""
    path = Path(input).expanduser()
    if path.is_dir():
        raise LexsemError(f"--input {input}: a folder, not a file: give the input file in it")
    if not path.is_file():
        raise LexsemError(f"--input {input}: no such file")


def stage_settings(use: str) -> list[str] | None:
    """The settings stage `use` takes (None: any, its function takes ``**settings``)."""
    params = list(inspect.signature(get_stage(use).fn).parameters.values())[2:]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _overridden(
    raw: dict[str, Any], path: Path, input: str | Path | None, generator: str | None,
    image_generator: str | None, sets: Sequence[str],
) -> dict[str, Any]:  # fmt: skip
    """The file's keys with the command line's values in their places (`load_recipe`)."""
    out = dict(raw)
    if generator is not None:
        out["generator"] = generator
    if image_generator is not None:
        out["image_generator"] = image_generator
    if input is not None:
        _set_input(out, "path", str(Path(input).expanduser().absolute()))
    stages = out.get("stages")
    if isinstance(stages, list):
        out["stages"] = [dict(s) if isinstance(s, dict) else s for s in stages]
    for item in sets:
        key, sep, text = item.partition("=")
        where, dot, name = key.strip().rpartition(".")
        if not sep or not dot or not where or not name:
            raise LexsemError(
                f"--set {item}: write STAGE.KEY=VALUE (a stage's name and one of its settings) "
                "or input.KEY=VALUE"
            )
        value = parse_value(text.strip())
        if where == "input":
            _set_input_setting(out, path, item, name, value)
        else:
            _set_stage_setting(out, path, item, where, name, value)
    return out


def _set_input(raw: dict[str, Any], name: str, value: Any) -> None:
    """`[input] path` of a file input; a built-in source's setting `name` otherwise."""
    spec = dict(raw["input"]) if isinstance(raw.get("input"), dict) else {}
    if name == "path" and "source" not in spec:
        spec["path"] = value
    else:
        settings = dict(spec["settings"]) if isinstance(spec.get("settings"), dict) else {}
        settings[name] = value
        spec["settings"] = settings
    raw["input"] = spec


def _set_input_setting(raw: dict[str, Any], path: Path, item: str, name: str, value: Any) -> None:
    spec = raw.get("input") if isinstance(raw.get("input"), dict) else {}
    source = spec.get("source") if isinstance(spec, dict) else None
    if name != "path":
        if not isinstance(source, str):
            raise LexsemError(f"--set {item}: the input of {path} is a file: only input.path")
        known = _source_settings(source)
        if known is not None and name not in known:
            raise LexsemError(
                f"--set {item}: the input source {source!r} has no setting {name!r}"
                f"{did_you_mean(name, known)}; its settings: {', '.join(known)}"
            )
    _set_input(raw, name, str(Path(str(value)).expanduser().absolute()) if name == "path"
               else value)  # fmt: skip


def _source_settings(source: str) -> list[str] | None:
    try:
        fn = SOURCES.get(source)
    except LexsemError:
        return None  # the recipe's check names the unknown source
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return [p.name for p in params]


def _set_stage_setting(
    raw: dict[str, Any], path: Path, item: str, label: str, name: str, value: Any
) -> None:
    stages = raw.get("stages") if isinstance(raw.get("stages"), list) else []
    labels = [str(s.get("name") or s.get("use")) if isinstance(s, dict) else "" for s in stages]
    if label not in labels:
        raise LexsemError(
            f"--set {item}: {path} has no stage {label!r}{did_you_mean(label, labels)}; its "
            f"stages: {', '.join(labels)}"
        )
    spec = stages[labels.index(label)]
    try:
        known = stage_settings(str(spec.get("use")))
    except LexsemError:
        known = None  # the recipe's check names the unknown stage
    if known is not None and name not in known:
        raise LexsemError(
            f"--set {item}: stage {label!r} ({spec.get('use')}) has no setting {name!r}"
            f"{did_you_mean(name, known)}; its settings: {', '.join(known) or 'none'}"
        )
    settings = dict(spec["settings"]) if isinstance(spec.get("settings"), dict) else {}
    settings[name] = value
    spec["settings"] = settings


def _check_input(recipe: Recipe, path: Path) -> None:
    """A built-in source is given the settings it needs (its `path`: `--input FILE`)."""
    source = recipe.input.source
    if source is None:
        return
    try:
        fn = SOURCES.get(source)
    except LexsemError as exc:
        raise LexsemError(f"{path}: [input] source: {exc}") from None
    try:
        inspect.signature(fn).bind(**recipe.input.settings)
    except TypeError as exc:
        hint = (
            " (the input file: `lexsem build RECIPE --input FILE`, or `path` in [input.settings])"
            if "path" not in recipe.input.settings
            else ""
        )
        raise LexsemError(f"{path}: [input] source {source!r}: {exc}{hint}") from None


def _with_input_refs(recipe: Recipe, path: Path) -> Recipe:
    """The recipe with every stage setting `INPUT_REF` replaced by the input file."""
    uses = [(n, k) for n, s in enumerate(recipe.stages) for k, v in s.settings.items()
            if v == INPUT_REF]  # fmt: skip
    if not uses:
        return recipe
    file = recipe.input_file()
    if file is None:
        n, key = uses[0]
        raise LexsemError(
            f"{path}: stage {n + 1} ({recipe.stages[n].use}): setting {key!r} is {INPUT_REF!r}, "
            "the input file, and the recipe has none: `lexsem build RECIPE --input FILE`"
        )
    stages = list(recipe.stages)
    for n, key in uses:
        settings = {**stages[n].settings, key: str(file)}
        stages[n] = stages[n].model_copy(update={"settings": settings})
    return recipe.model_copy(update={"stages": stages})


def _check_stages(recipe: Recipe, path: Path) -> None:
    try:
        import_modules(recipe.plugins)
    except LexsemError as exc:
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


def with_input_path(text: str, path: str) -> str:
    """A recipe's TOML text with `path` as its input file: `[input] path`, or the `path`
    setting of its built-in source (after ``[input.settings]``, or in a new such table); the
    rest of the text, comments included, as it was (`lexsem build init`)."""
    import json

    value = f"path = {json.dumps(path, ensure_ascii=False)}"
    lines = text.splitlines()
    if "[input]" not in lines:
        raise LexsemError("the recipe has no [input] table to give the path to")
    start = lines.index("[input]")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")
                and lines[i] != "[input.settings]"), len(lines))  # fmt: skip
    block = lines[start:end]
    if any(x.startswith("path =") for x in block):  # a path written in the recipe: replaced
        lines[start + next(i for i, x in enumerate(block) if x.startswith("path ="))] = value
    elif any(x.startswith("source =") for x in block):
        if "[input.settings]" in block:
            lines.insert(start + block.index("[input.settings]") + 1, value)
        else:
            at = start + next(i for i, x in enumerate(block) if x.startswith("source ="))
            lines[at + 1 : at + 1] = ["[input.settings]", value]
    else:
        lines.insert(start + 1, value)
    return "\n".join(lines) + "\n"
