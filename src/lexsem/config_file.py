"""A config file (TOML, or YAML by its `.yaml` / `.yml` suffix) read into a pydantic model,
strictly: the one loader of `lexsem build`'s recipes and `lexsem sweep`'s grids.

Every problem is one `LexsemError` line naming the file and the key: a file too large (more
than `MAX_CONFIG_BYTES`), not UTF-8, not TOML or YAML (with its line), not a table of keys; a
key the model does not have (`unknown key 'option' (did you mean 'options'?)`), or a value it
refuses. A field marked `exclude=True` is filled by the program (a recipe's path and sha256),
never read from a file. YAML anchors and aliases are refused: a file says each value where it
is used, so that the model's checks see what the file holds, once.

    file = read_config_file(path, what="grid file")      # its bytes and its keys
    grid = validate_config(file, Grid, numbered={"block": ("block", None)})

`parse_value` reads one value given on the command line the same way (`--set KEY=VALUE`).
"""

from __future__ import annotations

import tomllib
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from lexsem.errors import LexsemError
from lexsem.registry import did_you_mean

__all__ = ["MAX_CONFIG_BYTES", "YAML_SUFFIXES", "ConfigFile", "load_config_file",
           "parse_value", "read_config_file", "validate_config"]  # fmt: skip

#: The largest config file read (bytes): a grid of thousands of models fits in far less.
MAX_CONFIG_BYTES = 4 * 2**20
#: The suffixes read as YAML; any other is read as TOML.
YAML_SUFFIXES = (".yaml", ".yml")

M = TypeVar("M", bound=BaseModel)
# how the items of a top-level array of tables are named in errors: key -> (word, the item's
# key that names it, or None): {"stages": ("stage", "use")} says `stage 2 (caption_format): ...`
Numbered = Mapping[str, tuple[str, str | None]]


@dataclass(frozen=True)
class ConfigFile:
    """A config file read: where it is, its bytes (to hash) and its keys."""

    path: Path
    data: bytes
    raw: dict[str, Any]


def read_config_file(path: str | Path, *, what: str = "config file") -> ConfigFile:
    """The keys of the TOML or YAML file `path`; `what` names it in errors (`grid file`)."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise LexsemError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise LexsemError(f"{path}: a {what} is at most {MAX_CONFIG_BYTES} bytes; this is larger")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LexsemError(f"{path}: not a text file (not UTF-8)") from None
    try:
        raw = _yaml(path, text) if path.suffix.lower() in YAML_SUFFIXES else _toml(path, text)
    except RecursionError:
        raise LexsemError(f"{path}: nested too deeply to read") from None
    if not isinstance(raw, dict):
        kind = "empty" if raw is None else f"a {type(raw).__name__}"
        raise LexsemError(f"{path}: a {what} is a table of keys; this one is {kind}")
    bad = next((k for k in raw if not isinstance(k, str)), None)
    if bad is not None:
        raise LexsemError(f"{path}: key {bad!r} is not a name (write it in quotes)")
    return ConfigFile(path, data, raw)


def parse_value(text: str) -> Any:
    """One value given on the command line (`lexsem build --set KEY=VALUE`): a TOML value
    (`3`, `0.5`, `true`, `"a b"`, `[1, 2]`, `{ k = 1 }`), else the text itself (`/data/coco`,
    `caption`; a TOML date or time is kept as its text)."""
    import datetime

    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    return text if isinstance(value, (datetime.date, datetime.time)) else value


def _toml(path: Path, text: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LexsemError(f"{path}: not a TOML file ({exc})") from None


def _yaml(path: Path, text: str) -> Any:
    import yaml

    class _NoAliases(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise LexsemError(
                    f"{path}:{mark.line + 1}: YAML aliases are not read: write the value out"
                )
            return super().compose_node(parent, index)

    try:
        return yaml.load(text, Loader=_NoAliases)  # a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise LexsemError(f"{path}{line}: not a YAML file ({' '.join(str(exc).split())})") from None


def validate_config(
    file: ConfigFile, model: type[M], *, numbered: Numbered | None = None, **filled: Any
) -> M:
    """`model` validated from the file's keys and `filled` (the fields the program fills,
    `exclude=True`); a problem is one `LexsemError` naming the file and the key."""
    for key in file.raw:
        info = model.model_fields.get(key)
        if info is not None and info.exclude:
            known = _keys(model)
            raise LexsemError(f"{file.path}: unknown key {key!r}{did_you_mean(key, known)}")
    try:
        return model.model_validate({**file.raw, **filled})
    except ValidationError as exc:
        problem = _problem(model, exc, file.raw, numbered or {})
        raise LexsemError(f"{file.path}: {problem}") from None


def load_config_file(
    path: str | Path,
    model: type[M],
    *,
    what: str = "config file",
    numbered: Numbered | None = None,
) -> M:
    """`validate_config(read_config_file(path), model)`."""
    return validate_config(read_config_file(path, what=what), model, numbered=numbered)


# -- errors in words ----------------------------------------------------------------------------
def _problem(model: type[BaseModel], exc: ValidationError, raw: Any, numbered: Numbered) -> str:
    """The first problem (an unknown key before any other), where it is, then what."""
    errors = exc.errors()
    error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = _located(error, raw)
    if error["type"] == "extra_forbidden":
        key = str(loc[-1])
        known = _keys(_model_at(model, loc[:-1]))
        said = did_you_mean(key, known) or f" (known: {', '.join(known)})"
        return _where(loc[:-1], raw, numbered, f"unknown key {key!r}{said}")
    return _where(loc, raw, numbered, error["msg"].removeprefix("Value error, "))


def _located(error: Any, raw: Any) -> list[str | int]:
    """The error's location as keys and indices of the file: pydantic's union member tags
    (`str`, `ModelEntry`) dropped: a part is kept where it is a key or an index of what the
    file holds there, or the missing key a `missing` error names last."""
    loc, node, out = list(error["loc"]), raw, []
    for i, part in enumerate(loc):
        inside = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if inside or (isinstance(node, dict) and part in node):
            node = node[part]  # type: ignore[index]
        elif isinstance(part, int) or (i == len(loc) - 1 and error["type"] == "missing"):
            node = None
        else:
            continue  # a union member's tag
        out.append(part)
    return out


def _where(loc: Sequence[str | int], raw: Any, numbered: Numbered, msg: str) -> str:
    """`stage 2 (caption_format): settings: MSG`, `groups.text[1].spec: MSG`, `MSG`."""
    head, rest = "", list(loc)
    if len(rest) >= 2 and rest[0] in numbered and isinstance(rest[1], int):
        word, by = numbered[str(rest[0])]
        items = raw.get(rest[0]) if isinstance(raw, dict) else None
        item = items[rest[1]] if isinstance(items, list) and rest[1] < len(items) else None
        name = item.get(by) if by and isinstance(item, dict) else None
        head = f"{word} {rest[1] + 1}" + (f" ({name})" if isinstance(name, str) else "")
        rest = rest[2:]
    path = ""
    for p in rest:
        path += f"[{p + 1}]" if isinstance(p, int) else (f".{p}" if path else str(p))
    where = ": ".join(w for w in (head, path) if w)
    return f"{where}: {msg}" if where else msg


def _keys(model: type[BaseModel] | None) -> list[str]:
    """The keys a file may give `model`: its fields (or their aliases) not filled by the
    program."""
    if model is None:
        return []
    out: list[str] = []
    for name, info in model.model_fields.items():
        if not info.exclude:
            out += [info.alias] if info.alias else []
            out += [name] if not info.alias or model.model_config.get("populate_by_name") else []
    return out


def _model_at(model: type[BaseModel], loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model whose keys the file gives at `loc` (None where it is not one)."""
    current: Any = model
    for part in loc:
        current = _narrow(current)
        if isinstance(current, type) and issubclass(current, BaseModel) and isinstance(part, str):
            info = next((f for n, f in current.model_fields.items() if part in (n, f.alias)), None)
            current = info.annotation if info is not None else None
        elif get_origin(current) in (list, tuple) and isinstance(part, int):
            current = get_args(current)[0]
        elif get_origin(current) is dict and isinstance(part, str):
            current = get_args(current)[1]
        else:
            return None
    current = _narrow(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _narrow(annotation: Any) -> Any:
    """An annotation without `Annotated` and `None`; of a union, its model member if any."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        models = [a for a in members if isinstance(a, type) and issubclass(a, BaseModel)]
        annotation = (models or members)[0]
    return annotation
