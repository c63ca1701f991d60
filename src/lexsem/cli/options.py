"""The CLI's options, in one style: `name: Annotated[TYPE, typer.Option(...)] = DEFAULT`.

An option that sets a field of a config (`EvalConfig`, `TrainConfig`, `lexsem annotate`'s in
`lexsem.annotate.config`) is made from that field by `config_option` (its type, its help: the
field's description, its bounds) and its default is the field's (`EVAL.batch_size`,
`TRAIN.epochs`), so the CLI, the Python API and the config cannot disagree;
`tests/test_cli_options.py` checks every one. Bounds are shown in the help and checked by the
config (`from_options`: one error naming each option, before any work). The options
several commands share are named here (`DataDir`, `Device`, `Quiet`, ...); a command's own
options are written in its signature. Options taken together are one `OptionGroup`: the
command has one parameter of the group's type, its default the group's `DEFAULTS`, and is
decorated with `with_groups`, which shows typer the group's options in its place. A group of
a config's fields is made by `config_group` from their names alone (`ImageFolders`, a
command's settings: `EvalSettings`, `TrainSettings`), and `group.given()` is their dict for
the config.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, TypeVar, Union, get_args, get_origin

import annotated_types
import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from lexsem.config import EvalConfig
from lexsem.train.config import LoraConfig, TrainConfig

__all__ = ["EVAL", "FOLDER_OPTIONS", "LORA", "TRAIN", "AnswerRule", "BatchSize", "CacheDir",
           "CocoTrain", "CocoVal", "Confidence", "DataDir", "Device", "ImageFolders",
           "ImageRoot", "JsonOut", "NBoot", "OptionGroup", "Quiet", "Seed", "TiePolicy",
           "check_bounds", "config_group", "config_option", "defaults", "from_options", "one_of",
           "quiet_option", "with_groups"]  # fmt: skip


def defaults(config: type[BaseModel]) -> Any:
    """The config's field defaults as attributes (`defaults(EvalConfig).batch_size` is 64);
    a required field has none."""
    return types.SimpleNamespace(
        **{k: f.default for k, f in config.model_fields.items() if not f.is_required()}
    )


T = TypeVar("T", bound=BaseModel)

EVAL = defaults(EvalConfig)
TRAIN = defaults(TrainConfig)
LORA = defaults(LoraConfig)


def one_of(choices: type[Enum] | tuple[str, ...]) -> Any:
    """A callback checking an option's value against `choices` (an Enum's values, or names),
    with "did you mean"."""
    known = [c.value for c in choices] if isinstance(choices, type) else list(choices)

    def check(value: str | None) -> str | None:
        if value is None or value in known:
            return value
        from lexsem.registry import did_you_mean

        raise typer.BadParameter(
            f"{value!r} is not one of {', '.join(map(repr, known))}{did_you_mean(value, known)}"
        )

    return check


def config_option(
    config: type[BaseModel],
    field: str,
    *decls: str,
    more: str = "",
    optional: bool = False,
    **option: Any,
) -> Any:
    """`Annotated[TYPE, typer.Option(*decls, help=...)]` for `config`'s `field`: its type (a
    tuple is a repeatable option, a Literal a checked string; `optional`: or None, for a
    required field that something else can supply), its description as help (`more` appended)
    with its bounds. `option`: more `typer.Option` arguments (`envvar`, `show_default`, ...).
    The parameter's default is the field's: `= EVAL.<field>`."""
    info = config.model_fields[field]
    cli_type, choices = _cli_type(info.annotation)
    if optional:
        cli_type = cli_type | None
    if choices and "callback" not in option:
        option["callback"] = one_of(choices)
    text = " ".join(t for t in (info.description or "", more, field_bounds(info)) if t)
    return Annotated[cli_type, typer.Option(*decls, help=text, **option)]


def _cli_type(annotation: Any) -> tuple[Any, tuple[str, ...]]:
    """The type typer reads for a field's annotation, and a Literal's values (else ())."""
    args = get_args(annotation)
    optional = type(None) in args and get_origin(annotation) in (Union, types.UnionType)
    inner = next(a for a in args if a is not type(None)) if optional else annotation
    choices: tuple[str, ...] = ()
    if get_origin(inner) is Literal:
        inner, choices = str, get_args(inner)
    elif get_origin(inner) is tuple and get_args(inner)[1:] == (Ellipsis,):
        inner = list[get_args(inner)[0]]  # type: ignore[misc]
    return (inner | None if optional else inner), choices


def check_bounds(config: type[BaseModel], values: dict[str, tuple[str, Any]]) -> None:
    """Check option values against their config fields' bounds, for commands that build no
    config (`report`, `compare`): `values` maps an option (`--n-boot`) to (field, value). A
    value out of bounds is a `LexsemError` naming the option, the value and what is allowed."""
    from lexsem.errors import LexsemError

    for option, (field, value) in values.items():
        info = config.model_fields[field]
        if value is None:
            continue
        if not _within(info, value):
            raise LexsemError(f"{option} {value}: must be {field_bounds(info)[1:-1]}")


def from_options(config: type[T], what: str, option_of: Mapping[str, str], /, **fields: Any) -> T:
    """`config(**fields)` with pydantic's validation errors as one `LexsemError` (`invalid
    WHAT settings: ...`) naming each option, the value given and what is allowed. A field's
    option is `option_of[field]` (dotted for a nested field), else `--` and its name with
    dashes."""
    from pydantic import ValidationError

    from lexsem.errors import LexsemError

    try:
        return config(**fields)
    except ValidationError as exc:
        problems = "; ".join(_problem(config, option_of, e) for e in exc.errors())
        raise LexsemError(f"invalid {what} settings: {problems}") from None


def _problem(config: type[BaseModel], option_of: Mapping[str, str], error: Any) -> str:
    """One validation error in words: `--lr -1.0: must be greater than 0 (more than 0.0)`."""
    loc = ".".join(str(p) for p in error["loc"])
    msg = error["msg"].removeprefix("Value error, ").replace("Input should be", "must be")
    if not loc:  # a rule across fields (model validator)
        return msg
    option = option_of.get(loc, "--" + loc.replace("_", "-"))
    field = config.model_fields.get(str(error["loc"][0]))
    bounds = field_bounds(field) if field is not None and len(error["loc"]) == 1 else ""
    allowed = f" (allowed: {bounds.strip('()')})" if bounds else ""
    given = repr(error.get("input"))
    given = given if len(given) <= 60 else f"{given[:50]}... ({len(given)} characters)"
    return f"{option} {given}: {msg}{allowed}"


def _within(info: FieldInfo, value: Any) -> bool:
    import math

    if isinstance(value, float) and math.isnan(value):
        return False
    checks = {
        "ge": lambda b: value >= b,
        "gt": lambda b: value > b,
        "le": lambda b: value <= b,
        "lt": lambda b: value < b,
    }
    return all(
        checks[k](getattr(m, k))
        for m in info.metadata
        for k in checks
        if isinstance(m, annotated_types.BaseMetadata) and hasattr(m, k)
    )


def field_bounds(info: FieldInfo) -> str:
    """The field's bounds in words, `(at least 1)`, `(more than 0.0, less than 1.0)`; '' for
    none. (Not click's `[x>=1]`: the help's markup would take it for a tag.)"""
    words = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}
    said = [
        f"{words[k]} {getattr(m, k)}"
        for m in info.metadata
        for k in words
        if isinstance(m, annotated_types.BaseMetadata) and hasattr(m, k)
    ]
    return f"({', '.join(said)})" if said else ""


# -- options several commands share (evaluation's fields; a training run shares them) ----------
DataDir = config_option(EvalConfig, "data_dir", "--data-dir", envvar="LEXSEM_DATA_DIR")
CacheDir = config_option(EvalConfig, "cache_dir", "--cache-dir", envvar="LEXSEM_CACHE_DIR")
CocoVal = config_option(EvalConfig, "coco_val2017", "--coco-val2017", envvar="LEXSEM_COCO_VAL2017")
CocoTrain = config_option(
    EvalConfig, "coco_train2017", "--coco-train2017", envvar="LEXSEM_COCO_TRAIN2017"
)
ImageRoot = config_option(EvalConfig, "image_root", "--image-root", envvar="LEXSEM_IMAGE_ROOT")
Device = config_option(EvalConfig, "device", "--device")
NBoot = config_option(EvalConfig, "n_boot", "--n-boot")
Seed = config_option(EvalConfig, "seed", "--seed")
Confidence = config_option(EvalConfig, "confidence", "--confidence")
AnswerRule = config_option(EvalConfig, "answer_rule", "--answer-rule")
BatchSize = config_option(EvalConfig, "batch_size", "--batch-size")
TiePolicy = config_option(EvalConfig, "tie_policy", "--tie-policy")

# -- options several commands share that set no config field ------------------------------------
# `--json FILE`, everywhere: also write what the command printed as JSON to FILE (a JSON object
# opening with `"generator": "lexsem"`; a file lexsem did not write is replaced only with
# `--force`, `lexsem.outputs.check_outputs`)
JsonOut = Annotated[
    Path | None,
    typer.Option(
        "--json", help="Also write it as JSON here (a file lexsem did not write: --force)."
    ),
]


def check_explore_url(url: str | None) -> None:
    """`--explore-url` (report, publish): a web address of a running `lexsem explore`."""
    from lexsem.errors import LexsemError

    if url is not None and not url.startswith(("http://", "https://")):
        raise LexsemError(f"--explore-url {url}: give http://HOST:PORT")


def quiet_option(help: str) -> Any:
    """`--quiet` / `-q`, a switch in every command that prints progress: `help` says what the
    command still prints."""
    return Annotated[bool, typer.Option("--quiet", "-q", help=help)]


#: `--quiet` of the commands whose progress lines are all they leave out.
Quiet = quiet_option("No progress lines.")


# -- options several commands take together -----------------------------------------------------
@dataclasses.dataclass(frozen=True)
class OptionGroup:
    """Options several commands take together: a subclass's fields are the options (each
    annotated with its option alias, its default the option's), a command's parameter of the
    subclass's type receives them as one value (`with_groups`); its default is the subclass's
    `DEFAULTS`, every option left out."""

    DEFAULTS: ClassVar[OptionGroup]

    def given(self) -> dict[str, Any]:
        """The options' values by field name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def config_group(
    name: str, config: type[BaseModel], *fields: str, doc: str = "", **options: Any
) -> type[OptionGroup]:
    """An `OptionGroup` subclass named `name` of `config`'s `fields`, in that order, each an
    option made by `config_option` with the field's default: `--FIELD` (its name with dashes),
    or `options[field]`: the option's flags (`"--x/--no-x"`, `("--model", "-m")`) or a whole
    alias (one with an `envvar`); `options` may hold more fields than are used. A command's
    parameter of this type takes them all (`with_groups`); `given()` is their dict for
    `config`."""

    def option(field: str) -> Any:
        given = options.get(field, "--" + field.replace("_", "-"))
        if isinstance(given, str | tuple):
            return config_option(config, field, *((given,) if isinstance(given, str) else given))
        return given

    made = dataclasses.make_dataclass(
        name,
        [(f, option(f), dataclasses.field(default=config.model_fields[f].default)) for f in fields],
        bases=(OptionGroup,),
        frozen=True,
    )
    made.__doc__ = doc
    made.DEFAULTS = made()
    return made


#: The folder options (evaluation's fields), each read from its environment variable too.
FOLDER_OPTIONS = {"data_dir": DataDir, "cache_dir": CacheDir, "coco_val2017": CocoVal,
                  "coco_train2017": CocoTrain, "image_root": ImageRoot}  # fmt: skip

ImageFolders = config_group(
    "ImageFolders", EvalConfig, *FOLDER_OPTIONS, doc="Where the benchmark files, the caches "
    "and the images are (evaluation's fields).", **FOLDER_OPTIONS,
)  # fmt: skip


R = TypeVar("R")


def with_groups(command: Callable[..., R]) -> Callable[..., R]:
    """`command` as typer sees it: each parameter typed by an `OptionGroup` becomes the
    group's options, in its place; the command is called with the group built from them."""
    signature = inspect.signature(command, eval_str=True)
    groups = {
        p.name: p.annotation
        for p in signature.parameters.values()
        if isinstance(p.annotation, type) and issubclass(p.annotation, OptionGroup)
    }
    params: list[inspect.Parameter] = []
    for p in signature.parameters.values():
        if p.name not in groups:
            params.append(p)
            continue
        hints = typing.get_type_hints(groups[p.name], include_extras=True)
        params += [
            inspect.Parameter(f.name, p.kind, default=f.default, annotation=hints[f.name])
            for f in dataclasses.fields(groups[p.name])
        ]

    @functools.wraps(command)
    def run(**options: Any) -> R:
        for name, group in groups.items():
            names = [f.name for f in dataclasses.fields(group)]
            options[name] = group(**{k: options.pop(k) for k in names})
        return command(**options)

    shown = signature.replace(parameters=params)
    run.__signature__ = shown  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    return run
