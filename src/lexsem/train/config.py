"""`TrainConfig`: what a fine-tuning run trains, on what, how, and how it is judged — plain data
(pydantic), recorded in the run; `PRESETS` the papers' settings.

Regimes (BiVLC, §5; NegCLIP in "When and why vision-language models behave like
bags-of-words, and what to do about it?", §4): `clip_coco` (in-batch contrastive only),
`trohn_text` (each image's hard negative captions as extra columns, image→text only),
`trohn_img` (hard negative images with their captions: one symmetric 2N×2N batch), `negclip`
(hard images with their captions, and swap negatives of both).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Regime = Literal["clip_coco", "trohn_text", "trohn_img", "negclip"]
Precision = Literal["fp32", "amp_bf16", "amp_fp16"]

__all__ = ["PRESETS", "LoraConfig", "Regime", "TrainConfig", "preset"]


class LoraConfig(BaseModel):
    """LoRA adapters (peft) on the modules named in `targets` (suffixes of module names, as
    peft matches them); everything else frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    targets: tuple[str, ...] = Field(min_length=1)
    r: int = Field(8, ge=1)
    alpha: float = Field(16.0, gt=0)
    dropout: float = Field(0.0, ge=0, lt=1)


class TrainConfig(BaseModel):
    """A fine-tuning run; every field has the CLI's default (the paper's where it has one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str  # a lexsem spec: openclip:ARCH/TAG, openclip:ARCH@ckpt, clip:folder ...
    manifest: Path  # the training manifest (lexsem.train.manifest)
    out: Path  # the training run's folder
    regime: Regime = "clip_coco"
    # optimisation (BiVLC, App. E: lr 1e-6, AdamW 0.9/0.98, eps 1e-6, wd 0.1, 50 warm-up steps)
    epochs: int = Field(10, ge=1)
    batch_size: int = Field(400, ge=2)
    lr: float = Field(1e-6, gt=0)
    weight_decay: float = Field(0.1, ge=0)
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = Field(1e-6, gt=0)
    warmup: int = Field(50, ge=0)
    accumulate: int = Field(1, ge=1)  # micro-batches per optimizer step
    precision: Precision = "fp32"
    seed: int = 0
    max_steps: int | None = Field(None, ge=1)  # stop early (smoke runs; a killed run)
    lora: LoraConfig | None = None
    checkpoint_every: int | None = Field(None, ge=1)  # optimizer steps; always at the end
    # judging: lexsem's evaluation after every epoch; `select` = (benchmark, metric) chosen on
    select_on: tuple[str, ...] = ()  # benchmarks of the model selection (a dev split)
    select_metric: str | None = None  # default: the first benchmark's main metric
    judge_on: tuple[str, ...] = ()  # benchmarks evaluated before and after training
    allow_leakage: bool = False  # overlap of training data with a judged benchmark: record it
    # where data and images are (as EvalConfig)
    data_dir: Path | None = None
    cache_dir: Path | None = None
    coco_val2017: Path | None = None
    coco_train2017: Path | None = None
    image_root: Path | None = None
    device: str | None = None
    num_workers: int = Field(0, ge=0)
    n_boot: int = Field(1000, ge=0)

    @model_validator(mode="after")
    def _checked(self) -> TrainConfig:
        if self.select_metric is not None and not self.select_on:
            raise ValueError("select_metric needs select_on (the benchmarks it is read on)")
        return self


PRESETS: dict[str, dict[str, Any]] = {
    # BiVLC, §5 and App. E: open_clip ViT-B/32 from OpenAI's weights, 10 epochs, batch 400
    "bivlc-clip-coco": {"model": "openclip:ViT-B-32/openai", "regime": "clip_coco",
                        "batch_size": 400},
    "bivlc-trohn-text": {"model": "openclip:ViT-B-32/openai", "regime": "trohn_text",
                         "batch_size": 200},
    "bivlc-trohn-img": {"model": "openclip:ViT-B-32/openai", "regime": "trohn_img",
                        "batch_size": 200},
    # NegCLIP's loss (ARO paper, §4) with BiVLC's fine-tuning settings (the ARO paper's own
    # optimisation settings are not among this project's sources: docs/training.md)
    "negclip": {"model": "openclip:ViT-B-32/openai", "regime": "negclip", "batch_size": 200},
}  # fmt: skip


def preset(name: str, **overrides: Any) -> TrainConfig:
    """A `TrainConfig` of preset `name` with `overrides` (at least `manifest` and `out`)."""
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r} (presets: {', '.join(PRESETS)})")
    return TrainConfig(**{**PRESETS[name], **overrides})
