"""The CLI's options are made from the config fields they set (`lexsem.cli.options`): every
option of `eval`, `train`, `sweep`, `reproduce`, `build` and `annotate create|serve|invite` has
its field's default and help,
the exceptions are listed here with why, every size is bounded (one line naming the option, before
any work), and a `--preset` is replaced only by the options given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import BaseModel, Field
from typer.testing import CliRunner

from lexsem.annotate.config import CreateConfig, InviteConfig, ServeConfig, StudySettings
from lexsem.cli import app
from lexsem.cli.options import OptionGroup, config_group, with_groups
from lexsem.config import EvalConfig
from lexsem.construct.config import BuildConfig
from lexsem.reproduce.config import ReproduceConfig
from lexsem.sweep.config import SweepConfig
from lexsem.train.config import PRESETS, LoraConfig, TrainConfig

runner = CliRunner()

# options that set no field of their own name: option -> (config, field), or None for options
# that are not settings of the config (where to write, what to print)
EVAL_OTHER: dict[str, tuple[type[BaseModel], str] | None] = {
    "benchmark": (EvalConfig, "benchmarks"),
    "task": (EvalConfig, "tasks"),
    "model": None,  # Evaluator.run's argument
    "out": None,
    "force": None,
    "no_cache": None,  # use_cache, the other way round: checked below
    "offline": None,  # a flag: checked below
    "ci": None,
    "quiet": None,  # progress, the other way round
    "profile": None,  # shows run.json timings.breakdown: no setting of the run
}
TRAIN_OTHER: dict[str, tuple[type[BaseModel], str] | None] = {
    "lora_r": (LoraConfig, "r"),
    "lora_alpha": (LoraConfig, "alpha"),
    "model": None,  # required by TrainConfig, or given by the preset: checked below
    "preset": None,
    "lora": None,
    "resume": None,
    "quiet": None,  # Trainer's progress, the other way round
    "manifest": None,  # required: no default
    "out": None,
}
CREATE_OTHER: dict[str, tuple[type[BaseModel], str] | None] = {
    "kind": (StudySettings, "kinds"),  # required by the study: default by item kind
    "name": (StudySettings, "name"),  # required by the study: default the file's name
    **{f: (CreateConfig, f) for f in ("sample", "sample_total", "practice", "gold", "annotators")},
    "study": None,  # the file to write
    "benchmark": None,  # selections, stored in `benchmarks` (a build table as parquet:PATH)
    "from_build": None,
    "instructions": None,  # a file whose text is the field: its bound checked below
    "consent": None,
    "completion_code": None,  # the field's "" would show no code: the CLI makes a random one
    "column": None,
    "base_url": None,  # where to serve, for the printed links
    "links": None,
    "data_dir": None,  # evaluation's shared options (checked with eval's above)
    "coco_val2017": None,
    "image_root": None,
}
STUDY_ONLY: dict[str, tuple[type[BaseModel], str] | None] = {"study": None, "base_url": None}
SWEEP_OTHER: dict[str, tuple[type[BaseModel], str] | None] = {
    "grid": None,  # run_sweep's arguments
    "out": None,
    "dry_run": None,  # what to do, not how
    "quiet": None,
}
REPRODUCE_SWEEP = ("executor", "address", "max_retries", "spread")
REPRODUCE_EVAL = ("data_dir", "cache_dir", "coco_val2017", "coco_train2017", "device",
                  "batch_size", "n_boot")  # fmt: skip
REPRODUCE_OTHER: dict[str, tuple[type[BaseModel], str] | None] = {
    **{f: (SweepConfig, f) for f in REPRODUCE_SWEEP},  # ReproduceConfig.sweep
    **{f: (EvalConfig, f) for f in REPRODUCE_EVAL},  # the settings of every job
    "table": None,
    "out": None,
    "quiet": None,
    "list_tables": None,
}
BUILD_OTHER: dict[str, tuple[type[BaseModel], str] | None] = {
    "cache_dir": (EvalConfig, "cache_dir"),  # evaluation's shared option
    "recipe": None,
    "name": None,  # `build init NAME`
    "out": None,
    "quiet": None,  # progress, the other way round
    "list_": None,  # what to do, not how
    "input": None,  # the recipe's own settings: load_recipe's keywords
    "generator": None,
    "image_generator": None,
    "set_": None,
}


def _params(command: str) -> dict[str, Any]:
    """The click parameters of `command` (`annotate create`: a group's command), by name."""
    cmd: Any = typer.main.get_command(app)
    for part in command.split():
        cmd = cmd.commands[part]
    return {p.name: p for p in cmd.params if p.name and p.name != "help"}


def _as_config(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@pytest.mark.parametrize(
    ("command", "config", "other", "least"),
    [
        ("eval", EvalConfig, EVAL_OTHER, 15),
        ("train", TrainConfig, TRAIN_OTHER, 15),
        ("annotate create", StudySettings, CREATE_OTHER, 11),
        ("annotate serve", ServeConfig, STUDY_ONLY, 3),
        ("annotate invite", InviteConfig, STUDY_ONLY, 1),
        ("sweep", SweepConfig, SWEEP_OTHER, 7),
        ("reproduce", ReproduceConfig, REPRODUCE_OTHER, 13),
        ("build", BuildConfig, BUILD_OTHER, 4),
    ],
)
def test_every_option_has_its_config_fields_default_and_help(
    command: str, config: type[BaseModel], other: dict[str, Any], least: int
) -> None:
    checked = 0
    for name, param in _params(command).items():
        if name == "ctx":
            continue
        target = other.get(name, (config, name))
        assert name in other or name in config.model_fields, f"--{name}: no field {name!r}"
        if target is None:
            continue
        cfg, field = target
        info = cfg.model_fields[field]
        if not info.is_required():
            assert _as_config(param.default) == info.default, f"{command} --{name}"
        assert info.description and info.description in (getattr(param, "help", "") or "")
        checked += 1
    assert checked >= least


@pytest.mark.parametrize(
    ("command", "fields", "other"),
    [
        ("sweep", set(SweepConfig.model_fields), SWEEP_OTHER),
        ("build", set(BuildConfig.model_fields), BUILD_OTHER),
        ("reproduce", set(ReproduceConfig.model_fields) - {"sweep"} | set(REPRODUCE_SWEEP),
         {k: v for k, v in REPRODUCE_OTHER.items() if k not in REPRODUCE_SWEEP}),
    ],
)  # fmt: skip
def test_the_options_are_the_config_models_fields(
    command: str, fields: set[str], other: dict[str, Any]
) -> None:
    """No field without its option, no option of its own beside the listed exceptions."""
    assert set(_params(command)) - set(other) == fields


def test_the_configs_are_the_keywords_of_the_functions_they_are_passed_to() -> None:
    """`run_sweep(grid, out, **SweepConfig().model_dump())`, `build(recipe, out,
    **BuildConfig().model_dump())`: the same names and defaults."""
    import inspect

    from lexsem.construct.runner import build
    from lexsem.sweep.runner import run_sweep

    for config, function in ((SweepConfig, run_sweep), (BuildConfig, build)):
        params = inspect.signature(function).parameters
        for name, info in config.model_fields.items():
            assert name in params and params[name].default == info.default, (function, name)
    reproduce = ReproduceConfig()
    assert reproduce.sweep == SweepConfig() and reproduce.rows is None


def test_sweep_and_reproduce_options_are_checked_by_their_config(tmp_path: Path) -> None:
    grid = tmp_path / "g.toml"
    grid.write_text("[[block]]\nmodels = ['m']\nbenchmarks = ['synthetic']\n")
    cases = [
        (["sweep", str(grid), "-o", str(tmp_path / "o"), "--executor", "rey"],
         "unknown executor 'rey' (did you mean 'ray'?)"),
        (["sweep", str(grid), "-o", str(tmp_path / "o"), "--max-retries", "101"],
         "invalid sweep settings: --max-retries 101: must be less than or equal to 100"),
        (["sweep", str(grid), "-o", str(tmp_path / "o"), "--stores", "each"], "'each' is not one"),
        (["reproduce", "scpp_table2", "-o", str(tmp_path / "r"), "--spread", "0"],
         "invalid reproduce settings: --spread 0: must be greater than or equal to 1"),
        (["reproduce", "scpp_table2", "-o", str(tmp_path / "r"), "--batch-size", "0"],
         "--batch-size 0: must be at least 1"),
        (["build", str(tmp_path / "r.toml"), "-o", str(tmp_path / "b"), "--max-requests", "-1"],
         "invalid build settings: --max-requests -1: must be greater than or equal to 0"),
    ]  # fmt: skip
    for args, message in cases:
        out = runner.invoke(app, args)
        assert out.exit_code == 2, (args, out.output)
        assert message in " ".join(out.output.split()), (args, out.output)
    assert not list(tmp_path.glob("[orb]"))  # nothing written


def test_the_exceptions_agree_with_the_config() -> None:
    p = _params("eval")
    fields = EvalConfig.model_fields
    assert p["no_cache"].default is (not fields["use_cache"].default)
    assert p["offline"].default is False and fields["offline"].default is None  # None: env
    # the config shows no progress (the Python API, sweeps); the CLI does unless -q
    assert p["quiet"].default is False and fields["progress"].default is False
    assert _params("train")["model"].default is None


def test_eval_and_train_share_device_and_the_evaluation_settings() -> None:
    e, t = _params("eval"), _params("train")
    for name in ("device", "n_boot", "data_dir", "cache_dir", "coco_val2017", "image_root"):
        assert e[name].default == t[name].default, name
        assert getattr(e[name], "help", None) == getattr(t[name], "help", None), name
    assert e["device"].default is None and "default: auto" in (e["device"].help or "")


def test_train_detector_settings_are_checked_by_its_config_naming_each_option(
    tmp_path: Path,
) -> None:
    """Every wrong setting in one line, in the words every command's settings use (option,
    value given, what is allowed), before the manifest is read or anything is written."""
    args = ["train-detector", str(tmp_path / "m.jsonl"), "-o", str(tmp_path / "d"), "-m", "x:y"]
    out = runner.invoke(app, [*args, "--lr", "0", "--seed", "-2"])
    assert out.exit_code == 2, out.output
    errors = [line for line in out.output.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: invalid detector settings: --lr 0.0: must be greater than 0 (allowed: more than "
        "0); --seed -2: must be greater than or equal to 0 (allowed: at least 0, at most "
        "9223372036854775807)"
    ], out.output
    assert not list(tmp_path.iterdir())


def test_bounds_are_said_in_the_help_and_checked_by_the_config() -> None:
    assert "(at least 1, at most 65536)" in (_params("eval")["batch_size"].help or "")
    assert "(at least 2)" in (_params("train")["batch_size"].help or "")
    out = runner.invoke(app, ["train", "--manifest", "m", "-o", "o", "-m", "x", "--epochs", "0"])
    assert out.exit_code == 2, out.output
    assert (
        "error: invalid training settings: --epochs 0: must be greater than or equal to 1 "
        "(allowed: at least 1)" in out.output
    )


def test_every_size_and_seed_of_an_evaluation_is_bounded() -> None:
    """Resamples, batch size, workers, memory, pixels and seeds have upper bounds too (a huge
    value fails at once, one line, instead of exhausting memory mid-run)."""
    cases = {"--n-boot": "100001", "--batch-size": "65537", "--num-workers": "257",
             "--seed": "-1"}  # fmt: skip
    for option, value in cases.items():
        out = runner.invoke(app, ["eval", "-m", "minilm", "-b", "synthetic", "-o", "o",
                                  option, value])  # fmt: skip
        assert out.exit_code == 2, (option, out.output)
        errors = [line for line in out.output.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and "Traceback" not in out.output, (option, out.output)
    out = runner.invoke(app, ["report", "r", "--n-boot", "100001"])
    assert out.exit_code == 2 and "--n-boot 100001: must be" in out.output, out.output


def test_eval_settings_are_checked_naming_each_option(tmp_path: Path) -> None:
    """`lexsem eval`'s wrong settings are said as every command says them: the option (not
    the config's field), the value given and what is allowed, one line, nothing written."""
    cases = {
        ("--batch-size", "0"): "--batch-size 0: must be greater than or equal to 1 (allowed: "
        "at least 1, at most 65536)",
        ("--seed", "-1"): "--seed -1: must be greater than or equal to 0 (allowed: at least 0, "
        "at most 4294967295)",
        ("--num-workers", "-1"): "--num-workers -1: must be greater than or equal to 0",
        ("--max-image-pixels", "-5"): "--max-image-pixels -5: must be greater than or equal to 1",
        ("--name", ""): "--name '': String should have at least 1 character",
    }
    for (option, value), message in cases.items():
        out = runner.invoke(app, ["eval", "-m", "minilm", "-b", "synthetic",
                                  "-o", str(tmp_path / "o"), option, value])  # fmt: skip
        assert out.exit_code == 2, (option, out.output)
        errors = [line for line in out.output.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, (option, out.output)
        assert errors[0].startswith(f"error: invalid evaluation settings: {message}"), errors
    assert not list(tmp_path.iterdir())


def test_the_annotate_exceptions_agree_with_the_config() -> None:
    p = _params("annotate create")
    assert p["completion_code"].default is None and StudySettings.model_fields[
        "completion_code"
    ].description in (p["completion_code"].help or "")
    assert "(at least 1, at most 1000)" in (p["overlap"].help or "")
    assert "(at least 0, at most 10000)" in (p["annotators"].help or "")
    assert "(at least 1, at most 100000)" in (_params("annotate serve")["rate_limit"].help or "")
    assert "at most 100000 characters" in (p["instructions"].help or "")


ANNOTATE_BOUNDS = [
    ("--overlap", "0"), ("--overlap", "1001"), ("--quota", "0"), ("--quota", "1000001"),
    ("--gold-pass", "1.5"), ("--gold-pass", "-0.1"), ("--seed", "-1"), ("--seed", str(2**32)),
    ("--sample", "0"), ("--sample", "100001"), ("--sample-total", "100001"),
    ("--practice", "1001"), ("--gold", "-1"), ("--gold", "1001"), ("-n", "10001"),
    ("--annotators", "-1"), ("--completion-code", "C" * 201), ("--name", "x" * 201),
]  # fmt: skip


@pytest.mark.parametrize(("option", "value"), ANNOTATE_BOUNDS)
def test_annotate_create_refuses_sizes_out_of_bounds_before_any_work(
    tmp_path: Path, option: str, value: str
) -> None:
    """One line naming the option, exit 2, and nothing read or written: the benchmark named
    does not exist (loading it would be another error) and no study file appears."""
    study = tmp_path / "s.sqlite"
    out = runner.invoke(app, ["annotate", "create", str(study), "-b", "no_such_benchmark",
                              option, value])  # fmt: skip
    assert out.exit_code == 2, out.output
    errors = [line for line in out.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in out.output, out.output
    shown = option if option != "--annotators" else "-n"
    assert f"{shown} " in errors[0] and "no_such_benchmark" not in errors[0], errors[0]
    assert not list(tmp_path.iterdir())


def test_annotate_instructions_longer_than_the_bound_are_refused(tmp_path: Path) -> None:
    from lexsem.annotate.config import MAX_TEXT

    long = tmp_path / "long.txt"
    long.write_text("x" * (MAX_TEXT + 1))
    out = runner.invoke(app, ["annotate", "create", str(tmp_path / "s.sqlite"), "-b",
                              "no_such_benchmark", "--instructions", str(long)])  # fmt: skip
    assert out.exit_code == 2, out.output
    assert f"error: --instructions {long}: {MAX_TEXT + 1} characters, at most {MAX_TEXT}" in (
        out.output
    )
    assert not (tmp_path / "s.sqlite").exists()


@pytest.mark.parametrize(
    ("command", "option", "value"),
    [("serve", "--rate-limit", "100001"), ("serve", "--rate-limit", "0"),
     ("serve", "--port", "0"), ("invite", "-n", "0"), ("invite", "-n", "10001")],
)  # fmt: skip
def test_annotate_serve_and_invite_sizes_are_bounded(
    tmp_path: Path, command: str, option: str, value: str
) -> None:
    """Checked before the study is opened: the study named does not exist."""
    out = runner.invoke(app, ["annotate", command, str(tmp_path / "none.sqlite"), option, value])
    assert out.exit_code == 2, out.output
    errors = [line for line in out.output.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and f"{option} {value}: must be" in errors[0], out.output


@pytest.fixture
def trained(monkeypatch: pytest.MonkeyPatch) -> list[TrainConfig]:
    """`lexsem train`'s configs, captured instead of trained."""
    import lexsem.train.loop as loop

    seen: list[TrainConfig] = []

    class Capture:
        def __init__(self, cfg: TrainConfig, *, progress: bool = False) -> None:
            seen.append(cfg)

        def run(self, resume: bool) -> Any:
            raise typer.Exit(0)

    monkeypatch.setattr(loop, "Trainer", Capture)
    return seen


def test_a_preset_replaces_defaults_and_options_given_replace_the_preset(
    trained: list[TrainConfig], tmp_path: Path
) -> None:
    base = ["train", "--manifest", str(tmp_path / "m.jsonl"), "-o", str(tmp_path / "run")]
    preset = "bivlc-trohn-text"
    for extra in ([], ["--batch-size", "400"], ["--batch-size", "64", "--epochs", "3"]):
        out = runner.invoke(app, [*base, "--preset", preset, *extra])
        assert out.exit_code == 0, out.output
    by_preset, default_given, both_given = trained
    assert (
        by_preset.batch_size
        == PRESETS[preset]["batch_size"]
        != TrainConfig.model_fields["batch_size"].default
    )
    assert by_preset.model == PRESETS[preset]["model"] and by_preset.regime == "trohn_text"
    assert by_preset.epochs == TrainConfig.model_fields["epochs"].default
    assert default_given.batch_size == 400  # given, although it is the default
    assert (both_given.batch_size, both_given.epochs) == (64, 3)
    no_model = runner.invoke(app, base)
    assert no_model.exit_code == 2 and "give --model" in no_model.output


class _Settings(BaseModel):
    """A config for `config_group`'s test: a bounded field, a switch, a required field."""

    batch_rows: int = Field(3, ge=1, description="Rows a batch.")
    exact: bool = Field(True, description="Exact arithmetic.")
    path: str = Field(description="Required: in no group.")


_Group = config_group("_Group", _Settings, "batch_rows", "exact", exact="--exact/--no-exact")


@with_groups
def _command(settings: _Group = _Group.DEFAULTS) -> None:
    typer.echo(repr(sorted(settings.given().items())))


def test_config_group_makes_each_fields_option_from_the_field() -> None:
    """`--FIELD` with dashes (or the flags given), the field's default and help with its
    bounds; the command receives the options as one group, `given()` the config's fields."""
    import dataclasses

    assert issubclass(_Group, OptionGroup)
    assert [f.name for f in dataclasses.fields(_Group)] == ["batch_rows", "exact"]
    assert _Group.DEFAULTS.given() == {"batch_rows": 3, "exact": True}
    one = typer.Typer()
    one.command()(_command)
    params = {p.name: p for p in typer.main.get_command(one).params}
    assert params["batch_rows"].opts == ["--batch-rows"] and params["batch_rows"].default == 3
    assert params["batch_rows"].help == "Rows a batch. (at least 1)"
    assert params["exact"].secondary_opts == ["--no-exact"]
    out = runner.invoke(one, ["--batch-rows", "5", "--no-exact"])
    assert out.exit_code == 0 and out.output.strip() == "[('batch_rows', 5), ('exact', False)]"
    assert runner.invoke(one, []).output.strip() == "[('batch_rows', 3), ('exact', True)]"
    assert _Settings(path="p", **_Group(batch_rows=7).given()).batch_rows == 7


# -- lexsem list backends --------------------------------------------------------------------


def test_list_backends_says_prefix_needs_and_options_without_torch() -> None:
    import json
    import os
    import subprocess
    import sys

    from lexsem.models.backend_registry import BACKEND_EXTRAS, BACKENDS

    code = (
        "import json, sys; from lexsem.cli import app; sys.argv = ['lexsem', 'list', 'backends']\n"
        "try:\n    app()\nexcept SystemExit as exc:\n    code = exc.code\n"
        "from lexsem.models.backend_registry import BACKENDS\n"
        "print(json.dumps({'exit': code, 'torch': 'torch' in sys.modules, "
        "'names': BACKENDS.names()}))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, timeout=120
    )
    *lines, last = res.stdout.splitlines()
    said = json.loads(last)
    assert (said["exit"], said["torch"]) == (0, False), res.stderr
    text = "\n".join(lines)
    blocks = {b.split(":", 1)[0]: b for b in text.split("\n") if b and not b.startswith(" ")}
    # every backend of a fresh process (tests may register more in this one)
    assert sorted(blocks) == said["names"] and set(said["names"]) <= set(BACKENDS.names())
    assert "needs: lexsem[openclip]" in _block(text, "openclip")
    assert BACKEND_EXTRAS["openclip"] == "lexsem[openclip]"
    hf = _block(text, "hf")
    assert hf.splitlines()[0].startswith("hf:NAME  transformers AutoModel")
    assert "pooling=mean" in hf and "normalize=false" in hf and "needs: nothing beyond" in hf
    assert "max_length=128" in _block(text, "vera")


def _block(text: str, name: str) -> str:
    """The lines of backend `name`: its header and the indented lines below it."""
    out: list[str] = []
    for line in text.splitlines():
        if not line.startswith(" "):
            if out:
                break
            if line.startswith(f"{name}:"):
                out.append(line)
        elif out:
            out.append(line)
    return "\n".join(out)


def test_a_backend_that_does_not_import_is_listed_with_why() -> None:
    from lexsem.models.backend_registry import register_backend, unregister_backend

    register_backend("nosuch", "lexsem_no_such_module:Model")
    try:
        out = runner.invoke(app, ["list", "backends"])
    finally:
        unregister_backend("nosuch")
    assert out.exit_code == 0, out.output
    assert "nosuch:NAME  (does not import: ModuleNotFoundError" in out.output
    assert "st:NAME  sentence-transformers" in out.output
