"""Recipe files for `lexsem build` tests, written from data: the recipe's name, seed and input,
and its stages as `stage(use, name=..., **settings)` (`stages_toml` alone: stages to end a
recipe's text); and the JSONL input files they read."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_value(value: Any) -> str:
    """`value` (a string, number, bool, list or mapping of those) as a TOML value; mappings
    inline. JSON's strings, numbers and booleans are TOML's."""
    if isinstance(value, Mapping):
        inner = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return f"{{ {inner} }}" if inner else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if value is None:
        raise ValueError("TOML has no null")
    return json.dumps(value, ensure_ascii=False)


def toml_key(key: str) -> str:
    return key if _BARE.match(key) else json.dumps(key, ensure_ascii=False)


def stage(use: str, name: str | None = None, **settings: Any) -> dict[str, Any]:
    """One `[[stages]]` entry: the stage `use`d, its optional `name`, its settings."""
    return {"use": use, "name": name, "settings": settings}


def recipe_toml(
    name: str, seed: int, *stages: Mapping[str, Any], input_path: str = "triplets.jsonl"
) -> str:
    """A recipe's TOML text: `name`, `seed`, `[input] path`, then each stage in order."""
    lines = [f"name = {toml_value(name)}", f"seed = {seed}", "", "[input]",
             f"path = {toml_value(input_path)}"]  # fmt: skip
    return "\n".join(lines) + "\n" + stages_toml(*stages)


def stages_toml(*stages: Mapping[str, Any]) -> str:
    """The `[[stages]]` tables of `stages`, in order (to end a recipe's text)."""
    lines: list[str] = []
    for s in stages:
        lines += ["", "[[stages]]", f"use = {toml_value(s['use'])}"]
        if s.get("name"):
            lines.append(f"name = {toml_value(s['name'])}")
        if s.get("settings"):
            lines.append("[stages.settings]")
            lines += [f"{toml_key(k)} = {toml_value(v)}" for k, v in s["settings"].items()]
    return "".join(line + "\n" for line in lines)


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """`rows` as a JSONL file at `path`, one JSON object a line."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_recipe(
    folder: Path, text: str, rows: Iterable[Mapping[str, Any]], input_path: str = "triplets.jsonl"
) -> Path:
    """`folder/recipe.toml` holding `text`, beside its input `folder/input_path` holding
    `rows`; the recipe's path."""
    write_jsonl(folder / input_path, rows)
    recipe = folder / "recipe.toml"
    recipe.write_text(text, encoding="utf-8")
    return recipe
