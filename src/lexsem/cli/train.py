"""`lexsem train` (fine-tune a CLIP model, judged by lexsem's evaluation every epoch) and
`lexsem train-data` (rendered training scenes with hard negatives)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel

from lexsem.cli.options import (
    LORA,
    ImageFolders,
    config_group,
    config_option,
    from_options,
    quiet_option,
    with_groups,
)
from lexsem.train.config import PRESETS, LoraConfig, TrainConfig

__all__ = ["train", "train_data"]

T = TypeVar("T", bound=BaseModel)

Manifest = config_option(TrainConfig, "manifest", "--manifest")
Out = config_option(TrainConfig, "out", "--out", "-o")
Model = config_option(TrainConfig, "model", "--model", "-m", more="Or a --preset's.", optional=True)
LoraR = config_option(LoraConfig, "r", "--lora-r", more="With --lora.")
LoraAlpha = config_option(LoraConfig, "alpha", "--lora-alpha", more="With --lora.")
TrainSettings = config_group(
    "TrainSettings", TrainConfig, "regime", "epochs", "batch_size", "lr", "weight_decay",
    "warmup", "accumulate", "precision", "seed", "max_steps", "checkpoint_every",
    "clamp_logit_scale", "negative_draw", "select", "select_on", "select_metric",
    "val_fraction", "judge_on", "allow_leakage", "device", "num_workers", "n_boot",
    doc="How the model is trained and judged (TrainConfig's fields).",
    clamp_logit_scale="--clamp-logit-scale/--no-clamp-logit-scale",
    allow_leakage="--allow-leakage/--no-allow-leakage",
)  # fmt: skip


@with_groups
def train(
    ctx: typer.Context,
    manifest: Manifest,
    out: Out,
    model: Model = None,  # TrainConfig requires one: this option or the preset
    preset: Annotated[
        str | None,
        typer.Option(
            help="Paper settings: bivlc-clip-coco, bivlc-trohn-text, bivlc-trohn-img, negclip; "
            "they replace the defaults of the options below, options given replace them."
        ),
    ] = None,
    settings: TrainSettings = TrainSettings.DEFAULTS,
    lora: Annotated[
        str | None,
        typer.Option(
            help="LoRA on these modules (comma-separated suffixes, e.g. c_fc,c_proj); else full "
            "fine-tuning."
        ),
    ] = None,
    lora_r: LoraR = LORA.r,
    lora_alpha: LoraAlpha = LORA.alpha,
    resume: Annotated[bool, typer.Option(help="Continue the run in --out from its state.pt.")] = (
        False
    ),
    folders: ImageFolders = ImageFolders.DEFAULTS,
    quiet: quiet_option("No progress (loss, learning rate, evaluations): the result only.") = False,
) -> None:
    """Fine-tune a CLIP model with in-batch and hard negatives, judged by lexsem's evaluation
    every epoch (several GPUs: `torchrun --nproc_per_node N $(which lexsem) train ...`). Shows
    the loss and learning rate as it trains and each epoch's evaluation; `lexsem report RUN
    --html` draws them."""
    from lexsem.cli.quiet import quiet_libraries
    from lexsem.outputs import check_output_dir, named_paths
    from lexsem.train.loop import Trainer

    quiet_libraries(quiet)

    fields: dict[str, Any] = {"model": model, **settings.given(), **folders.given()}
    given = _preset_and_given(ctx, fields, preset, lora, lora_r, lora_alpha)
    if not resume or (out / "train.json").is_file():  # else the resume check names what it is
        check_output_dir(out, kind="train.json", inputs=named_paths(manifest))
    cfg = _settings(TrainConfig, manifest=manifest, out=out, **given)
    res = Trainer(cfg, progress=not quiet).run(resume=resume)
    state = "stopped (resume with --resume)" if res.stopped else "done"
    typer.echo(f"{state}: {res.steps} steps in {res.folder}")
    if res.final:
        typer.echo(f"final: {res.final}")
    if res.best:
        typer.echo(f"best: {res.best}")


def _preset_and_given(
    ctx: typer.Context,
    fields: dict[str, Any],
    preset: str | None,
    lora: str | None,
    lora_r: int,
    lora_alpha: float,
) -> dict[str, Any]:
    """The training settings: what the command line (or an environment variable) set replaces
    the preset; the rest is the preset's, else TrainConfig's default (the option's)."""
    given = {k: v for k, v in fields.items() if _given(ctx, k)}
    if lora:
        given["lora"] = _settings(
            LoraConfig, targets=tuple(lora.split(",")), r=lora_r, alpha=lora_alpha
        )
    if preset and preset not in PRESETS:
        raise typer.BadParameter(f"unknown preset {preset!r} ({', '.join(PRESETS)})")
    settings = {**(PRESETS[preset] if preset else {}), **given}
    if settings.get("model") is None:
        raise typer.BadParameter("give --model (or a --preset that names one)")
    return settings


def _given(ctx: typer.Context, param: str) -> bool:
    """Whether `param` was set on the command line or by an environment variable (compared by
    name: typer may carry its own copy of click's `ParameterSource`)."""
    source = ctx.get_parameter_source(param)
    return source is not None and getattr(source, "name", str(source)) != "DEFAULT"


#: The option of a config field whose name is not `--` and the field's name with dashes.
OPTION_OF = {"lora.targets": "--lora", "lora.r": "--lora-r", "lora.alpha": "--lora-alpha",
             "targets": "--lora", "r": "--lora-r", "alpha": "--lora-alpha",
             "num_workers": "--num-workers"}  # fmt: skip


def _settings(config: type[T], **fields: Any) -> T:
    """`config(**fields)`, its validation errors one `LexsemError` naming each option."""
    return from_options(config, "training", OPTION_OF, **fields)


def train_data(
    out: Annotated[Path, typer.Argument(help="Folder to write images and manifest.jsonl to.")],
    n: Annotated[int, typer.Option("-n", min=1, help="Examples.")] = 1000,
    seed: Annotated[int, typer.Option(help="Seed of the scenes drawn.")] = 0,
    size: Annotated[
        int, typer.Option(help="Image side in pixels (48 to 2048: MAX_IMAGE_SIZE).")
    ] = 224,
    dev_fraction: Annotated[float, typer.Option(help="Share of examples in the dev split.")] = 0.0,
) -> None:
    """Write rendered training scenes with hard negative captions and images (disjoint from
    the synthetic benchmarks' scenes) and their manifest."""
    from lexsem.outputs import check_output_dir
    from lexsem.train.rendered import write_rendered

    check_output_dir(out, kind=None)

    path = write_rendered(out, n, seed, size=size, dev_fraction=dev_fraction)
    typer.echo(f"manifest: {path}")
