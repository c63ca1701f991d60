"""docs/design.md's "one way" claims, checked on the source as the layer map is
(tests/test_layers.py): one registry mechanism, one key recipe, one file hash, one config-file
loader, one JSON file reader, one option style, one model path. Each check reads src/lexsem with
`ast` and names what breaks it; each is shown to see a planted violation."""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "lexsem"


@functools.cache
def _parsed(src: Path) -> tuple[tuple[str, Path, ast.Module], ...]:
    out = []
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src.parent).with_suffix("").parts)
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.append((name, path, ast.parse(path.read_text(encoding="utf-8"))))
    return tuple(out)


def _modules(src: Path) -> Iterator[tuple[str, Path, ast.Module]]:
    """(dotted module name, path, parsed tree) of every module under `src` (a `lexsem` folder),
    parsed once per test session."""
    yield from _parsed(src)


def _call_name(node: ast.Call) -> str:
    """`a.b(...)` -> "a.b", `f(...)` -> "f", else ""."""
    f = node.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return f"{f.value.id}.{f.attr}"
    if isinstance(f, ast.Name):
        return f.id
    return ""


def _functions(tree: ast.AST) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _calls(node: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call)]


# -- one registry ---------------------------------------------------------------------------


def hand_rolled_registries(src: Path) -> list[str]:
    """Module-level `dict[str, ...]`s written by a module-level `register*` function: a name ->
    object registry beside `lexsem.registry.Registry`."""
    out = []
    for module, _, tree in _modules(src):
        if module == "lexsem.registry":
            continue
        dicts = {
            node.target.id
            for node in tree.body
            if isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and re.match(r"(dict|Dict|MutableMapping)\[str\b", ast.unparse(node.annotation))
        }
        for fn in tree.body:
            if not isinstance(fn, ast.FunctionDef) or not fn.name.startswith("register"):
                continue
            for node in ast.walk(fn):
                targets = node.targets if isinstance(node, ast.Assign) else []
                for t in targets:
                    if (
                        isinstance(t, ast.Subscript)
                        and isinstance(t.value, ast.Name)
                        and t.value.id in dicts
                    ):
                        out.append(f"{module}.{fn.name} writes {t.value.id}")
    return out


def test_one_registry_mechanism() -> None:
    """Every name -> object registry is a `lexsem.registry.Registry` (did-you-mean, lazy
    entries, declared up front): no module keeps a dict of its own with a `register_*`."""
    assert hand_rolled_registries(SRC) == []


def _registry_kinds(src: Path) -> set[str]:
    """The `what` of every module-level `Registry("what", ...)` under `src`."""
    kinds = set()
    for _, _, tree in _modules(src):
        for node in tree.body:
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
            if (
                isinstance(value, ast.Call)
                and _call_name(value) == "Registry"
                and value.args
                and isinstance(value.args[0], ast.Constant)
            ):
                kinds.add(str(value.args[0].value))
    return kinds


def test_every_kind_of_plugin_has_a_registry() -> None:
    """Benchmarks, backends, tasks, paper tables, stages, input sources, recipes, executors and
    study kinds are each one `Registry` (docs/extending.md: one file plus one registry line)."""
    kinds = _registry_kinds(SRC)
    wanted = ["benchmark", "backend", "task", "table", "stage", "source", "recipe", "executor",
              "kind"]  # fmt: skip
    assert [w for w in wanted if not any(w in k for k in kinds)] == []


def _layer_of() -> dict[str, int]:
    """Top-level package -> its layer's index in the `layers` contract (0: the top)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [
        c["layers"] for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"
    ]
    return {m.strip(): i for i, layer in enumerate(layers) for m in layer.split("|")}


def _is_module(src: Path, dotted: str) -> bool:
    rel = Path(*dotted.split(".")[1:]) if "." in dotted else Path()
    return (src / rel).with_suffix(".py").is_file() or (src / rel / "__init__.py").is_file()


def upward_strings(src: Path, layer_of: dict[str, int]) -> list[str]:
    """String constants (not docstrings) naming a lexsem module (`"lexsem.x.y"` or a lazy
    `"lexsem.x.y:attr"`) of a package that is not below the module's own: an import that
    `lint-imports` cannot see, against the layer map."""
    out = []
    for module, _, tree in _modules(src):
        docs = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
        }
        mine = ".".join(module.split(".")[:2])
        if mine not in layer_of:
            continue  # lexsem/__init__.py: the package's own lazy names
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            hit = re.fullmatch(r"(lexsem(?:\.\w+)+)(?::[\w.]+)?", node.value)
            if id(node) in docs or not hit or not _is_module(src, hit.group(1)):
                continue
            theirs = ".".join(hit.group(1).split(".")[:2])
            if theirs != mine and layer_of.get(theirs, -1) <= layer_of[mine]:
                out.append(f"{module} names {node.value!r} (line {node.lineno})")
    return out


def test_lazy_entries_point_down_the_layers() -> None:
    """A lazy registry entry or module name in a string follows the layer map as an import
    does: no package names a module of a package above it or beside it."""
    assert upward_strings(SRC, _layer_of()) == []


# -- one key recipe, one file hash, one config-file loader -----------------------------------


def key_recipes(src: Path) -> dict[str, list[str]]:
    """Module -> its functions that hash canonical JSON (`json.dumps(..., sort_keys=True)` and
    a `hashlib` call in one function): a key recipe."""
    out: dict[str, list[str]] = {}
    for module, _, tree in _modules(src):
        for fn in _functions(tree):
            calls = _calls(fn)
            sorted_json = any(
                _call_name(c) == "json.dumps" and any(k.arg == "sort_keys" for k in c.keywords)
                for c in calls
            )
            if sorted_json and any(_call_name(c).startswith("hashlib.") for c in calls):
                out.setdefault(module, []).append(fn.name)
    return out


def test_one_key_recipe() -> None:
    """Canonical JSON is hashed into a key by one module's function, which every key uses."""
    found = key_recipes(SRC)
    assert len(found) <= 1, found


def file_hashers(src: Path) -> dict[str, list[str]]:
    """Module -> its functions that read a file in blocks into one sha256 (and no other hash):
    a file-hash helper."""
    out: dict[str, list[str]] = {}
    for module, _, tree in _modules(src):
        for fn in _functions(tree):
            calls = _calls(fn)
            hashes = {_call_name(c) for c in calls if _call_name(c).startswith("hashlib.")}
            reads_blocks = any(
                isinstance(c.func, ast.Attribute) and c.func.attr == "read" and c.args
                for c in calls
            )
            updates = any(
                isinstance(c.func, ast.Attribute) and c.func.attr == "update" for c in calls
            )
            if hashes == {"hashlib.sha256"} and reads_blocks and updates:
                out.setdefault(module, []).append(fn.name)
    return out


def test_one_file_hash_helper() -> None:
    found = file_hashers(SRC)
    assert len(found) <= 1, found


def config_file_parsers(src: Path) -> list[str]:
    """Modules that parse TOML or YAML text themselves."""
    parses = {"tomllib.load", "tomllib.loads", "tomli.load", "tomli.loads", "yaml.safe_load",
              "yaml.load", "yaml.full_load"}  # fmt: skip
    return sorted(
        module
        for module, _, tree in _modules(src)
        if any(_call_name(c) in parses for c in _calls(tree))
    )


def test_one_config_file_loader() -> None:
    """Recipes and grids (TOML or YAML) are read by one strict loader."""
    assert len(config_file_parsers(SRC)) <= 1, config_file_parsers(SRC)


# -- one JSON file reader -------------------------------------------------------------------

#: What reads a whole file's bytes or text.
_WHOLE_FILE_READS = {"read_text", "read_bytes"}


def _reads_a_file(node: ast.AST) -> bool:
    """Whether `node` reads a whole file: `x.read_text()`, `x.read_bytes()`, `fh.read()`."""
    return any(
        isinstance(c.func, ast.Attribute)
        and (c.func.attr in _WHOLE_FILE_READS or (c.func.attr == "read" and not c.args))
        for c in _calls(node)
    )


def json_file_parsers(src: Path) -> list[str]:
    """Calls outside `lexsem.jsonl` that parse a JSON file themselves: `json.load(fh)`,
    `json.loads(path.read_text())`, `Model.model_validate_json(path.read_bytes())` (unbounded:
    a file nested 200,000 deep is a RecursionError)."""
    out = []
    for module, _, tree in _modules(src):
        if module == "lexsem.jsonl":
            continue
        for c in sorted(_calls(tree), key=lambda c: c.lineno):
            name = _call_name(c)
            attr = c.func.attr if isinstance(c.func, ast.Attribute) else ""
            parses = name == "json.loads" or attr == "model_validate_json"
            if name == "json.load" or (parses and any(_reads_a_file(a) for a in c.args)):
                out.append(f"{module} (line {c.lineno})")
    return out


def test_one_json_file_reader() -> None:
    """Every JSON file is read by `lexsem.jsonl.read_json` (JSON Lines: `read_jsonl`), which
    bounds its nesting."""
    assert json_file_parsers(SRC) == []


# -- one option style ------------------------------------------------------------------------


#: The one function that may call `inspect.signature` in the CLI: it WRITES a command's
#: signature (an `OptionGroup` parameter replaced by the group's options, whose defaults are the
#: group's fields: checked against their configs below), it reads no default off a function.
SIGNATURE_WRITERS = {"with_groups"}


def signature_defaults(cli: Path) -> list[str]:
    """CLI modules that take option defaults from a function's signature."""
    out = []
    for path in cli.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed = {
            id(c)
            for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef) and f.name in SIGNATURE_WRITERS
            for c in _calls(f)
        }
        out += [
            f"{path.name}:{c.lineno}"
            for c in _calls(tree)
            if _call_name(c) in {"inspect.signature", "signature"} and id(c) not in allowed
        ]
    return sorted(out)


def test_no_option_default_from_a_signature() -> None:
    """An option's default is its config field's (`config_option`), never read off a function."""
    assert signature_defaults(SRC / "cli") == []


def test_option_groups_default_to_their_configs() -> None:
    """Each `OptionGroup`'s fields default to the same-named field of the config its options
    come from (`ImageFolders`: `EvalConfig`; `JobOptions`: `SweepConfig`)."""
    import dataclasses

    from lexsem.cli.options import ImageFolders
    from lexsem.cli.sweep import JobOptions
    from lexsem.config import EvalConfig
    from lexsem.sweep.config import SweepConfig

    for group, config in ((ImageFolders, EvalConfig), (JobOptions, SweepConfig)):
        fields = dataclasses.fields(group)
        assert fields
        for f in fields:
            assert f.default == config.model_fields[f.name].default, (group, f.name)


def _commands() -> Iterator[tuple[str, object]]:
    from lexsem.cli import app

    def walk(cmd: object, path: list[str]) -> Iterator[tuple[str, object]]:
        subs = getattr(cmd, "commands", None)
        if subs is None:
            yield " ".join(path), cmd
        else:
            for name, sub in subs.items():
                yield from walk(sub, [*path, name])

    yield from walk(typer.main.get_command(app), [])


def option_kinds(commands: Iterator[tuple[str, object]]) -> dict[str, dict[str, list[str]]]:
    """Option flags (`--json`) that are a flag in some commands and take a value in others:
    flag -> {"flag" | "value": [commands]}."""
    seen: dict[str, dict[str, list[str]]] = {}
    for path, cmd in commands:
        for p in getattr(cmd, "params", []):
            if p.param_type_name != "option" or p.name == "help":
                continue
            for flag in p.opts:
                kind = "flag" if p.is_flag else "value"
                seen.setdefault(flag, {}).setdefault(kind, []).append(path)
    return {flag: kinds for flag, kinds in seen.items() if len(kinds) > 1}


def test_an_option_means_one_thing_everywhere() -> None:
    """An option's flag is a switch in every command or takes a value in every command."""
    assert option_kinds(_commands()) == {}


def _config_fields() -> set[str]:
    """The fields of every settings model in a `lexsem.*.config` / `lexsem.config` module."""
    import importlib

    from pydantic import BaseModel

    fields: set[str] = set()
    for path in [SRC / "config.py", *sorted(SRC.glob("*/config.py"))]:
        module = importlib.import_module(_dotted(path))
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, BaseModel)
                and obj.__module__ == module.__name__
            ):
                fields |= set(obj.model_fields)
    return fields


def _dotted(path: Path) -> str:
    return ".".join(path.relative_to(SRC.parent).with_suffix("").parts)


def hand_bounded_options(cli: Path, fields: set[str]) -> list[str]:
    """Options of cli/ (outside options.py) that state bounds (`min=`/`max=`) by hand although
    a config has a field of their name: bounds copied instead of made by `config_option`."""
    out = []
    for path in sorted(cli.glob("*.py")):
        if path.name == "options.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            named: list[tuple[str, ast.AST]] = []
            if isinstance(node, ast.arg) and node.annotation is not None:
                named.append((node.arg, node.annotation))
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                named.append((node.targets[0].id.lower(), node.value))
            for name, expr in named:
                for c in _calls(expr):
                    if not _call_name(c).endswith("Option"):
                        continue
                    if not {k.arg for k in c.keywords} & {"min", "max"}:
                        continue
                    decls = [
                        a.value
                        for a in c.args
                        if isinstance(a, ast.Constant) and str(a.value).startswith("--")
                    ]
                    if not decls and len(name) == 1:
                        continue  # a one-letter option (`-n`): config_option makes long names
                    field = decls[0][2:].replace("-", "_") if decls else name
                    if field in fields:
                        out.append(f"{path.name}:{c.lineno} --{field.replace('_', '-')}")
    return sorted(set(out))


def test_options_of_config_fields_are_made_from_the_field() -> None:
    """An option named as a config field is made by `config_option` (type, help, bounds from
    the field), not re-declared with bounds of its own."""
    assert hand_bounded_options(SRC / "cli", _config_fields()) == []


# -- one model path --------------------------------------------------------------------------


def run_record_assemblers(src: Path) -> list[str]:
    """Modules outside `lexsem.results` and the Evaluator that import the run-record assembly
    (`lexsem.results.build`): a run made beside `Evaluator(config).run(model)`."""
    out = []
    for module, _, tree in _modules(src):
        if module.startswith("lexsem.results") or module == "lexsem.evaluator":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = {f"{node.module}.{a.name}" for a in node.names} | {node.module}
            elif isinstance(node, ast.Import):
                names = {a.name for a in node.names}
            else:
                continue
            if "lexsem.results.build" in names:
                out.append(f"{module} (line {node.lineno})")
    return out


def test_every_run_is_made_by_the_evaluator() -> None:
    """Every run record (models, recorded answers, a human study's answers) is assembled by
    `Evaluator(config).run(model)`: nothing else imports `lexsem.results.build`."""
    assert run_record_assemblers(SRC) == []


# -- each check sees a planted violation -----------------------------------------------------

PLANTED = {
    "construct/stage.py": (
        "STAGES: dict[str, object] = {}\n"
        "CACHE: dict[tuple[str, str], object] = {}\n"
        "def register_stage(name, fn):\n    STAGES[name] = fn\n"
        "def register_store(key, s):\n    CACHE[key] = s\n"
    ),
    "construct/catalog.py": (
        '"""Names "lexsem.annotate.fold_back:STAGE" in its docstring only."""\n'
        'LAZY = "lexsem.annotate.fold_back:STAGE"\nDOWN = "lexsem.models.spec:parse"\n'
        'NOT_A_MODULE = "lexsem.run_id"\n'
    ),
    "annotate/fold_back.py": "STAGE = 1\n",
    "models/spec.py": "def parse(): ...\n",
    "sweep/grid.py": (
        "import hashlib, json, tomllib\n"
        "def job_id(x):\n"
        "    blob = json.dumps(x, sort_keys=True)\n"
        "    return hashlib.sha256(blob.encode()).hexdigest()\n"
        "def read(text):\n    return tomllib.loads(text)\n"
    ),
    "engine/keys.py": (
        "import hashlib, json\n"
        "def key(x):\n    return hashlib.sha256(json.dumps(x, sort_keys=True).encode())\n"
    ),
    "download.py": (
        "import hashlib\n"
        "def sha256_file(p):\n    h = hashlib.sha256()\n"
        "    with open(p, 'rb') as fh:\n"
        "        while chunk := fh.read(1 << 20):\n            h.update(chunk)\n"
        "    return h.hexdigest()\n"
        "def both(p):\n    a, b = hashlib.sha256(), hashlib.md5()\n"
        "    with open(p, 'rb') as fh:\n"
        "        while chunk := fh.read(1 << 20):\n            a.update(chunk); b.update(chunk)\n"
    ),
    "construct/inputs.py": (
        "import hashlib\n"
        "def file_sha256(p):\n    h = hashlib.sha256()\n"
        "    for block in iter(lambda: open(p, 'rb').read(1 << 20), b''):\n"
        "        h.update(block)\n"
        "    return h.hexdigest()\n"
    ),
    "construct/recipe.py": "import yaml\ndef read(t):\n    return yaml.safe_load(t)\n",
    "cli/sweep.py": (
        "import inspect\nimport typer\nfrom typing import Annotated\n"
        "_DEFAULTS = inspect.signature(print).parameters\n"
        'Seed = Annotated[int, typer.Option("--seed", min=0, help="Bootstrap seed.")]\n'
        "def sweep(\n"
        '    n: Annotated[int, typer.Option("-n", min=1)] = 1,\n'
        "    spread: Annotated[int, typer.Option(min=1)] = 1,\n"
        ") -> None: ...\n"
    ),
    "annotate/human_run.py": "from lexsem.results import build\n",
    "results/run_folder.py": (
        "import json\n"
        "def read(p):\n    return json.loads(p.read_text())\n"
        "def load(p):\n    with open(p) as fh:\n        return json.load(fh)\n"
        "def status(p):\n    return Status.model_validate_json(p.read_bytes())\n"
        "def header(fh):\n    return json.loads(fh.read(8))\n"
    ),
    "evaluator.py": "from lexsem.results import build\n",
}


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("planted") / "lexsem"
    for rel, text in PLANTED.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for folder in [path.parent, *path.parent.parents]:
            if folder == src.parent:
                break
            (folder / "__init__.py").touch()
        path.write_text(text, encoding="utf-8")
    return src


CHECKS: dict[str, tuple[Callable[[Path], object], object]] = {
    "registry": (hand_rolled_registries, ["lexsem.construct.stage.register_stage writes STAGES"]),
    "upward": (
        lambda src: upward_strings(
            src, {"lexsem.annotate": 0, "lexsem.construct": 1, "lexsem.models": 2}
        ),
        ["lexsem.construct.catalog names 'lexsem.annotate.fold_back:STAGE' (line 2)"],
    ),
    "keys": (key_recipes, {"lexsem.engine.keys": ["key"], "lexsem.sweep.grid": ["job_id"]}),
    "file hash": (
        file_hashers,
        {"lexsem.construct.inputs": ["file_sha256"], "lexsem.download": ["sha256_file"]},
    ),
    "config files": (config_file_parsers, ["lexsem.construct.recipe", "lexsem.sweep.grid"]),
    "json files": (
        json_file_parsers,
        [f"lexsem.results.run_folder (line {n})" for n in (3, 6, 8)],
    ),
    "signature": (lambda src: signature_defaults(src / "cli"), ["sweep.py:4"]),
    "bounds": (
        lambda src: hand_bounded_options(src / "cli", {"seed", "spread"}),
        ["sweep.py:5 --seed", "sweep.py:8 --spread"],
    ),
    "model path": (run_record_assemblers, ["lexsem.annotate.human_run (line 1)"]),
}


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_each_check_sees_a_planted_violation(planted: Path, check: str) -> None:
    find, expected = CHECKS[check]
    assert find(planted) == expected


def test_the_option_check_sees_a_flag_that_is_also_a_value() -> None:
    import click

    def command(*params: click.Parameter) -> click.Command:
        return click.Command("c", params=list(params))

    commands = [
        ("status", command(click.Option(["--json"], is_flag=True))),
        ("agreement", command(click.Option(["--json"], type=str))),
        ("report", command(click.Option(["--out"], type=str))),
    ]
    assert option_kinds(iter(commands)) == {"--json": {"flag": ["status"], "value": ["agreement"]}}
