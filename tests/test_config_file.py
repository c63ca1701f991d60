"""The one config-file loader (`lexsem.config_file`) of recipes and grids: TOML and YAML read
the same, an unknown key is one line naming the file and the key with "did you mean", a file
is bounded in size, YAML aliases are refused."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field

from lexsem.config_file import MAX_CONFIG_BYTES, load_config_file, read_config_file
from lexsem.construct.recipe import load_recipe, with_input_path
from lexsem.errors import LexsemError
from lexsem.sweep.grid import expand, load_grid

RECIPES = Path(__file__).parents[1] / "src" / "lexsem" / "construct" / "recipes"

GRID_TOML = """
name = "t"
plugins = []
[defaults]
n_boot = 0
[groups]
text = ["minilm", { spec = "hf:x", name = "X", resources = { num_gpus = 1, memory = "2GiB" } }]
[[block]]
groups = ["text"]
benchmarks = ["synthetic", ["synthetic/swap_obj", "sugarcrepe_pp"]]
vary = { tie_policy = ["strict", "lenient"] }
options = { batch_size = 8 }
"""

GRID_YAML = """
name: t
plugins: []
defaults:
  n_boot: 0
groups:
  text:
    - minilm
    - spec: "hf:x"
      name: X
      resources: {num_gpus: 1, memory: 2GiB}
block:
  - groups: [text]
    benchmarks: [synthetic, [synthetic/swap_obj, sugarcrepe_pp]]
    vary: {tie_policy: [strict, lenient]}
    options: {batch_size: 8}
"""


def test_a_yaml_grid_loads_as_the_same_toml_grid(tmp_path: Path) -> None:
    (tmp_path / "g.toml").write_text(GRID_TOML)
    (tmp_path / "g.yml").write_text(GRID_YAML)
    toml, yml = load_grid(tmp_path / "g.toml"), load_grid(tmp_path / "g.yml")
    assert yml == toml
    jobs = expand(toml)
    assert len(jobs) == 8 and [j.id for j in expand(yml)] == [j.id for j in jobs]


def _input_replaced(text: str) -> str:
    """A shipped recipe's `[input] path` as `in.jsonl` (a file that is there)."""
    return with_input_path(text, "in.jsonl")


@pytest.mark.parametrize("name", sorted(p.name for p in RECIPES.glob("*.toml")))
def test_every_shipped_recipe_loads_the_same_from_yaml(tmp_path: Path, name: str) -> None:
    text = _input_replaced((RECIPES / name).read_text(encoding="utf-8"))
    (tmp_path / "in.jsonl").write_text('{"caption": "a dog"}\n')
    (tmp_path / "r.toml").write_text(text)
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(tomllib.loads(text)))
    toml, yml = load_recipe(tmp_path / "r.toml"), load_recipe(tmp_path / "r.yaml")
    assert yml.model_dump() == toml.model_dump() and len(toml.stages) >= 1
    assert (yml.path, toml.path) == (tmp_path / "r.yaml", tmp_path / "r.toml")
    assert yml.sha256 != toml.sha256  # each file's own bytes


RECIPE = 'name = "t"\n{head}\n[input]\npath = "in.jsonl"\n[[stages]]\nuse = "caption_format"\n'


@pytest.mark.parametrize(
    ("head", "stage", "message"),
    [
        ('plugin = ["x"]', "", r"unknown key 'plugin' \(did you mean 'plugins'\?\)"),
        ("imports = []", "", r"unknown key 'imports' \(known: name, description, .*\)"),
        ("sha256 = 'x'", "", r"unknown key 'sha256'"),  # filled by the loader, not the file
        ("", "nme = 'f'", r"stage 1 \(caption_format\): unknown key 'nme' \(did you mean 'name'"),
        ("", "[stages.setings]", r"stage 1 \(caption_format\): unknown key 'setings' \(did"),
    ],
)
def test_an_unknown_recipe_key_is_one_line_naming_the_file_and_key(
    tmp_path: Path, head: str, stage: str, message: str
) -> None:
    (tmp_path / "in.jsonl").write_text('{"caption": "a dog"}\n')
    path = tmp_path / "r.toml"
    path.write_text(RECIPE.format(head=head) + stage + "\n")
    with pytest.raises(LexsemError, match=message) as info:
        load_recipe(path)
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)


def test_the_same_unknown_key_in_yaml_says_the_same(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_text('{"caption": "a dog"}\n')
    path = tmp_path / "r.yaml"
    path.write_text("name: t\ninput: {path: in.jsonl}\nstages:\n  - use: caption_format\n"
                    "    setings: {column: caption}\n")  # fmt: skip
    with pytest.raises(LexsemError) as info:
        load_recipe(path)
    assert str(info.value) == (
        f"{path}: stage 1 (caption_format): unknown key 'setings' (did you mean 'settings'?)"
    )


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = Field(1, ge=1)


@pytest.mark.parametrize(
    ("name", "body", "message"),
    [
        ("a.toml", b"size = 0\n", r"a.toml: size: Input should be greater than or equal to 1$"),
        ("a.toml", b"size = [\n", r"a.toml: not a TOML file"),
        ("a.yaml", b"size: [1\n", r"a.yaml:2: not a YAML file"),
        ("a.yaml", b"- 1\n- 2\n", r"a.yaml: a config file is a table of keys; this one is a list"),
        ("a.yaml", b"", r"a.yaml: a config file is a table of keys; this one is empty"),
        ("a.yaml", b"1: 2\n", r"a.yaml: key 1 is not a name"),
        ("a.yaml", b"x: &v {a: 1}\nsize: *v\n", r"a.yaml:2: YAML aliases are not read"),
        ("a.yml", b"\xff\xfe", r"a.yml: not a text file \(not UTF-8\)"),
        ("a.toml", b"x = " + b"[" * 5000 + b"]" * 5000, r"a.toml: (nested too deeply|not a TOML)"),
    ],
)
def test_what_a_config_file_may_not_be(
    tmp_path: Path, name: str, body: bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(body)
    with pytest.raises(LexsemError, match=message) as info:
        load_config_file(path, _Model)
    assert "\n" not in str(info.value)


def test_a_config_file_is_bounded_in_size(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_bytes(b"# " + b"x" * MAX_CONFIG_BYTES + b"\nsize = 2\n")
    with pytest.raises(LexsemError, match=r"big.toml: a grid file is at most \d+ bytes"):
        read_config_file(path, what="grid file")
    path.write_bytes(b"# " + b"x" * (MAX_CONFIG_BYTES - 20) + b"\nsize = 2\n")
    assert load_config_file(path, _Model).size == 2
