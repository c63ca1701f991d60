"""The training commands of the CLI (`lexsem train`, `lexsem train-data`), registered on the
main app by `register` (kept apart from `lexsem.cli`, which holds evaluation)."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from lexsem.cli_options import CacheDir, CocoTrain, CocoVal, DataDir, ImageRoot

__all__ = ["register"]


class RegimeName(str, Enum):
    clip_coco = "clip_coco"
    trohn_text = "trohn_text"
    trohn_img = "trohn_img"
    negclip = "negclip"


Opt = typer.Option


def train(
    manifest: Annotated[Path, Opt("--manifest", help="Training manifest (JSONL or Parquet).")],
    out: Annotated[Path, Opt("--out", "-o", help="The training run's folder.")],
    model: Annotated[str | None, Opt("--model", "-m", help="openclip:... or clip:...")] = None,
    preset: Annotated[
        str | None,
        Opt(help="Paper settings: bivlc-clip-coco, bivlc-trohn-text, bivlc-trohn-img, negclip."),
    ] = None,
    regime: Annotated[RegimeName | None, Opt(help="Loss regime (default clip_coco).")] = None,
    epochs: Annotated[int | None, Opt(min=1)] = None,
    batch_size: Annotated[int | None, Opt(min=2)] = None,
    lr: Annotated[float | None, Opt()] = None,
    weight_decay: Annotated[float | None, Opt()] = None,
    warmup: Annotated[int | None, Opt(min=0, help="Warm-up steps.")] = None,
    accumulate: Annotated[int | None, Opt(min=1, help="Micro-batches per step.")] = None,
    precision: Annotated[str | None, Opt(help="fp32, amp_bf16 or amp_fp16 (GPU).")] = None,
    seed: Annotated[int | None, Opt()] = None,
    max_steps: Annotated[int | None, Opt(min=1, help="Stop after N steps (resumable).")] = None,
    lora: Annotated[
        str | None,
        Opt(
            help="LoRA on these modules (comma-separated suffixes, "
            "e.g. c_fc,c_proj); else full fine-tuning."
        ),
    ] = None,
    lora_r: Annotated[int, Opt(min=1)] = 8,
    lora_alpha: Annotated[float, Opt()] = 16.0,
    checkpoint_every: Annotated[int | None, Opt(min=1, help="Steps between checkpoints.")] = None,
    select_on: Annotated[list[str] | None, Opt(help="Benchmark(s) of model selection.")] = None,
    select_metric: Annotated[str | None, Opt(help="Metric of selection.")] = None,
    judge_on: Annotated[list[str] | None, Opt(help="Benchmark(s) judged before/after.")] = None,
    allow_leakage: Annotated[
        bool, Opt(help="Record an overlap with a judged benchmark instead of refusing it.")
    ] = False,
    resume: Annotated[bool, Opt(help="Continue the run in --out from its state.pt.")] = False,
    data_dir: DataDir = None,
    cache_dir: CacheDir = None,
    coco_val2017: CocoVal = None,
    coco_train2017: CocoTrain = None,
    image_root: ImageRoot = None,
    device: Annotated[str | None, Opt()] = None,
    num_workers: Annotated[int, Opt(min=0)] = 0,
    n_boot: Annotated[int, Opt(min=0, help="Bootstrap resamples of each evaluation.")] = 1000,
) -> None:
    """Fine-tune a CLIP model with in-batch and hard negatives, judged by lexsem's evaluation
    every epoch (several GPUs: `torchrun --nproc_per_node N $(which lexsem) train ...`)."""
    from lexsem.train.config import PRESETS, LoraConfig, TrainConfig
    from lexsem.train.loop import Trainer

    given: dict[str, Any] = {
        "model": model, "regime": regime.value if regime else None, "epochs": epochs,
        "batch_size": batch_size, "lr": lr, "weight_decay": weight_decay, "warmup": warmup,
        "accumulate": accumulate, "precision": precision, "seed": seed, "max_steps": max_steps,
        "checkpoint_every": checkpoint_every, "select_on": tuple(select_on or ()),
        "select_metric": select_metric, "judge_on": tuple(judge_on or ()),
        "allow_leakage": allow_leakage, "data_dir": data_dir, "cache_dir": cache_dir,
        "coco_val2017": coco_val2017, "coco_train2017": coco_train2017,
        "image_root": image_root, "device": device, "num_workers": num_workers,
        "n_boot": n_boot,
    }  # fmt: skip
    if lora:
        given["lora"] = LoraConfig(targets=tuple(lora.split(",")), r=lora_r, alpha=lora_alpha)
    if preset and preset not in PRESETS:
        raise typer.BadParameter(f"unknown preset {preset!r} ({', '.join(PRESETS)})")
    base = dict(PRESETS[preset]) if preset else {}
    settings = {**base, **{k: v for k, v in given.items() if v is not None}}
    if "model" not in settings:
        raise typer.BadParameter("give --model (or a --preset that names one)")
    cfg = TrainConfig(manifest=manifest, out=out, **settings)
    res = Trainer(cfg).run(resume=resume)
    state = "stopped (resume with --resume)" if res.stopped else "done"
    typer.echo(f"{state}: {res.steps} steps in {res.folder}")
    if res.final:
        typer.echo(f"final: {res.final}")
    if res.best:
        typer.echo(f"best: {res.best}")


def train_data(
    out: Annotated[Path, typer.Argument(help="Folder to write images and manifest.jsonl to.")],
    n: Annotated[int, Opt("-n", min=1, help="Examples.")] = 1000,
    seed: Annotated[int, Opt()] = 0,
    size: Annotated[int, Opt(help="Image side in pixels.")] = 224,
    dev_fraction: Annotated[float, Opt(help="Share of examples in the dev split.")] = 0.0,
) -> None:
    """Write rendered training scenes with hard negative captions and images (disjoint from
    the synthetic benchmarks' scenes) and their manifest."""
    from lexsem.train.rendered import write_rendered

    path = write_rendered(out, n, seed, size=size, dev_fraction=dev_fraction)
    typer.echo(f"manifest: {path}")


def register(app: typer.Typer, friendly: Callable[[Any], Any]) -> None:
    app.command("train")(friendly(train))
    app.command("train-data")(friendly(train_data))
