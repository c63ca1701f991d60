"""The grid file of `lexsem sweep`: what it expands to, deterministic job ids, and one-line
errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from lexsem.errors import LexsemError
from lexsem.sweep.grid import Grid, expand, job_id, load_grid

GRID = """
name = "t"
[defaults]
n_boot = 0
cache_dir = "/tmp/one"
[groups]
text = ["minilm", { spec = "hf:x", name = "X", resources = { num_gpus = 1, memory = "2GiB" } }]
[[block]]
groups = ["text"]
models = ["st:y"]
benchmarks = ["synthetic", ["synthetic/swap_obj", "sugarcrepe_pp"]]
vary = { tie_policy = ["strict", "lenient"] }
options = { batch_size = 8 }
[[block]]
models = ["minilm"]
benchmarks = ["synthetic"]
vary = { tie_policy = ["strict"] }
options = { batch_size = 8 }
"""


def _write(tmp_path: Path, text: str, name: str = "grid.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_grid_expands_to_models_times_benchmarks_times_values(tmp_path: Path) -> None:
    jobs = expand(load_grid(_write(tmp_path, GRID)))
    # 3 models x 2 selections x 2 tie policies; block 2 repeats one job of block 1: run once
    assert len(jobs) == 12
    assert len({j.id for j in jobs}) == 12
    first = jobs[0]
    assert first.model == "minilm" and first.config.benchmarks == ("synthetic",)
    assert first.config.batch_size == 8 and first.config.tie_policy == "strict"
    x = [j for j in jobs if j.model == "hf:x"]
    assert {j.config.name for j in x} == {"X"}
    assert x[0].resources.num_gpus == 1 and x[0].resources.memory == 2 * 2**30
    assert first.resources.num_gpus == 0  # the grid's default resources
    assert [j.config.benchmarks for j in jobs if j.model == "st:y"][2] == (
        "synthetic/swap_obj",
        "sugarcrepe_pp",
    )


def test_job_ids_are_readable_and_depend_on_results_not_on_where(tmp_path: Path) -> None:
    jobs = expand(load_grid(_write(tmp_path, GRID)))
    moved = expand(load_grid(_write(tmp_path, GRID.replace("/tmp/one", "/tmp/two"), "b.toml")))
    assert [j.id for j in jobs] == [j.id for j in moved]  # the cache folder is no part of it
    assert jobs[0].id.startswith("minilm__synthetic__tie_policy=strict__")  # the varied value
    changed = jobs[0].config.model_copy(update={"seed": 1})
    varied = {"tie_policy": "strict"}
    assert job_id("minilm", changed, varied) != jobs[0].id
    assert job_id("minilm", jobs[0].config, varied) == jobs[0].id


def test_a_grid_built_in_python_expands_the_same(tmp_path: Path) -> None:
    grid = Grid(
        defaults={"n_boot": 0, "cache_dir": "/tmp/one"},
        groups={"text": ["minilm"]},
        blocks=[{"groups": ["text"], "benchmarks": ["synthetic"], "options": {"batch_size": 8},
                 "vary": {"tie_policy": ["strict"]}}],
    )  # fmt: skip
    (job,) = expand(grid)
    assert job.id == expand(load_grid(_write(tmp_path, GRID)))[0].id


def test_yaml_grid(tmp_path: Path) -> None:
    text = "block:\n  - models: [minilm]\n    benchmarks: [synthetic]\n"
    (job,) = expand(load_grid(_write(tmp_path, text, "g.yaml")))
    assert job.model == "minilm"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[block]]\nmodels = ['m']\nbenchmarks = ['synthetic']\noptions = { batch_sise = 2 }",
         r"block 1: options: unknown evaluation setting 'batch_sise' \(did you mean 'batch_size'"),
        ("[[block]]\nmodels = ['m']\nbenchmarks = ['synthetic']\noptions = { batch_size = 0 }",
         r"block 1: model 'm': batch_size: .*greater than or equal to 1"),
        ("[[block]]\nmodels = ['m']\nbenchmarks = []", r"block 1: benchmarks: .*at least 1"),
        ("[[block]]\ngroups = ['txt']\nbenchmarks = ['x']\n[groups]\ntext = ['m']",
         r"block 1: groups: no model group 'txt' \(did you mean 'text'\?\)"),
        ("[[block]]\nbenchmarks = ['x']", r"block 1: no model"),
        ("[[block]]\nmodels = ['m']\nbenchmarks = ['x']\noptions = { benchmarks = ['y'] }",
         r"'benchmarks' is set by a block's benchmarks"),
        ("[[block]]\nmodels = ['m']\nbenchmarks = ['x']\nvary = { seed = [] }",
         r"block 1: vary: vary.seed has no value"),
        ("[[block]]\nmodels = ['m']\nbenchmarks = ['x']\nresources = { memory = 'lots' }",
         r"block 1: resources.memory: .*'lots' is not a size"),
        ("[[block]]\nmodels = [3]\nbenchmarks = ['x']", r"block 1: models\[1\]"),
        ("[[blok]]\nmodels = ['m']\nbenchmarks = ['x']",
         r"grid.toml: unknown key 'blok' \(did you mean 'block'\?\)$"),
        ("name = 'g'", r"block: Field required"),
        ("[[block]]\nmodel = ['m']\nbenchmarks = ['x']",
         r"block 1: unknown key 'model' \(did you mean 'models'\?\)$"),
        ("[[block]]\nmodels = [{ spec = 'm', nme = 'M' }]\nbenchmarks = ['x']",
         r"block 1: models\[1\]: unknown key 'nme' \(did you mean 'name'\?\)$"),
        ("[[block]]\nmodels = ['m']\nbenchmarks = ['x']\nresources = { num_gpu = 1 }",
         r"block 1: resources: unknown key 'num_gpu' \(did you mean 'num_gpus'\?\)$"),
        ("[groups]\ntext = [{ spek = 'm' }]\n[[block]]\ngroups = ['text']\nbenchmarks = ['x']",
         r"groups.text\[1\]: unknown key 'spek' \(did you mean 'spec'\?\)$"),
        ("colour = 1\n[[block]]\nmodels = ['m']\nbenchmarks = ['x']",
         r"unknown key 'colour' \(known: name, max_jobs, plugins, .*\)$"),
        ("[[block]]\nmodels = ['m']\nbenchmarks = ['x'\n", r"not a TOML file"),
        ("max_jobs = 0\n[[block]]\nmodels = ['m']\nbenchmarks = ['x']", r"max_jobs: "),
    ],
)  # fmt: skip
def test_bad_grids_are_one_line_naming_file_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(LexsemError, match=message) as info:
        load_grid(path)
    assert str(info.value).startswith(f"{path}: ")
    assert "\n" not in str(info.value)


def test_the_number_of_jobs_is_bounded(tmp_path: Path) -> None:
    models = ", ".join(f"'m{i}'" for i in range(30))
    text = f"max_jobs = 50\n[[block]]\nmodels = [{models}]\nbenchmarks = ['a', 'b']"
    with pytest.raises(LexsemError, match=r"expands to 60 jobs, more than max_jobs = 50"):
        load_grid(_write(tmp_path, text))
    with pytest.raises(LexsemError, match=r"max_jobs: .*less than or equal to 100000"):
        load_grid(_write(tmp_path, text.replace("50", "1000000")))


def test_missing_and_unreadable_grid_files(tmp_path: Path) -> None:
    with pytest.raises(LexsemError, match=r"nope.toml: cannot read the grid file"):
        load_grid(tmp_path / "nope.toml")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(LexsemError, match=r"bin.toml: not a text file"):
        load_grid(tmp_path / "bin.toml")
