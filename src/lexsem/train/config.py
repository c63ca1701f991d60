"""`TrainConfig`: what a fine-tuning run trains, on what, how, and how it is judged — plain data
(pydantic), recorded in the run; `PRESETS` the papers' settings.

Regimes (BiVLC, §5; NegCLIP in "When and why vision-language models behave like
bags-of-words, and what to do about it?", §4): `clip_coco` (in-batch contrastive only),
`trohn_text` (each image's hard negative captions as extra columns, image→text only),
`trohn_img` (hard negative images with their captions: one symmetric 2N×2N batch), `negclip`
(hard images with their captions, and swap negatives of both).

Settings where the two papers' code differs are fields with the reference's value in its
preset: `clamp_logit_scale` (NegCLIP's open_clip training clamps the logit scale to ln 100
after every step; BiVLC's fine-tuning script does not clamp it), `negative_draw` (NegCLIP
draws a caption's negative anew each epoch), and `select` (BiVLC keeps the epoch with the best
in-batch accuracy on its validation split: `lexsem.train.validation`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from lexsem.config import EvalConfig

Regime = Literal["clip_coco", "trohn_text", "trohn_img", "negclip"]
Precision = Literal["fp32", "amp_bf16", "amp_fp16"]
Selection = Literal["benchmark", "val_in_batch_acc"]

__all__ = ["PRESETS", "LoraConfig", "Regime", "Selection", "TrainConfig", "preset"]

#: The negative draw of a regime when `negative_draw` is not given: NegCLIP's loader draws
#: anew each epoch; TROHN-Text has one negative per caption (a manifest with several: the
#: first).
REGIME_DRAW: dict[str, str] = {
    "clip_coco": "first",
    "trohn_text": "first",
    "trohn_img": "first",
    "negclip": "per_epoch",
}

_EVAL = EvalConfig.model_fields  # the fields a training run shares with its evaluations


class EvalPlaces(BaseModel):
    """Where data, caches and images are, and the device: `EvalConfig`'s fields, shared by a
    training run (`TrainConfig`) and a detector's training (`DetectorConfig`) with the
    evaluations they run."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    data_dir: Path | None = _EVAL["data_dir"]
    cache_dir: Path | None = _EVAL["cache_dir"]
    coco_val2017: Path | None = _EVAL["coco_val2017"]
    coco_train2017: Path | None = _EVAL["coco_train2017"]
    image_root: Path | None = _EVAL["image_root"]
    device: str | None = _EVAL["device"]


class LoraConfig(BaseModel):
    """LoRA adapters (peft) on the modules named in `targets` (suffixes of module names, as
    peft matches them); everything else frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    targets: tuple[str, ...] = Field(
        min_length=1, description="Module name suffixes to adapt, e.g. c_fc, c_proj."
    )
    r: int = Field(8, ge=1, description="LoRA rank.")
    alpha: float = Field(16.0, gt=0, description="LoRA alpha (scale: alpha / r).")
    dropout: float = Field(0.0, ge=0, lt=1, description="LoRA dropout.")


class TrainConfig(EvalPlaces):
    """A fine-tuning run; every field has the CLI's default (the paper's where it has one).
    No float may be NaN or infinite."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str = Field(
        description="The model to fine-tune: openclip:ARCH/TAG, openclip:ARCH@CHECKPOINT or "
        "clip:FOLDER."
    )
    manifest: Path = Field(description="Training manifest (JSONL or Parquet).")
    out: Path = Field(description="The training run's folder.")
    regime: Regime = Field(
        "clip_coco", description="Loss regime: clip_coco, trohn_text, trohn_img or negclip."
    )
    # optimisation (BiVLC, App. E: lr 1e-6, AdamW 0.9/0.98, eps 1e-6, wd 0.1, 50 warm-up steps)
    epochs: int = Field(10, ge=1, description="Passes over the training data.")
    batch_size: int = Field(400, ge=2, description="Examples per optimizer step.")
    lr: float = Field(1e-6, gt=0, description="Peak learning rate (AdamW).")
    weight_decay: float = Field(0.1, ge=0, description="AdamW weight decay.")
    betas: tuple[float, float] = Field((0.9, 0.98), description="AdamW betas.")
    eps: float = Field(1e-6, gt=0, description="AdamW epsilon.")
    warmup: int = Field(50, ge=0, description="Warm-up steps.")
    accumulate: int = Field(1, ge=1, description="Micro-batches per optimizer step.")
    precision: Precision = Field("fp32", description="fp32, amp_bf16 or amp_fp16 (GPU).")
    seed: int = Field(
        0, ge=0, le=2**32 - 1, description="Seed of the batch order and the initialisation."
    )
    max_steps: int | None = Field(  # smoke runs; a killed run
        None, ge=1, description="Stop after N optimizer steps (resumable)."
    )
    lora: LoraConfig | None = Field(None, description="LoRA adapters (default: full fine-tuning).")
    clamp_logit_scale: bool = Field(
        True,
        description="Clamp the logit scale to [0, ln 100] after every step (open_clip's and "
        "NegCLIP's training; BiVLC's script does not).",
    )
    negative_draw: Literal["per_epoch", "first"] | None = Field(
        None,
        description="Which negative of a caption a batch uses: per_epoch (drawn anew each "
        "epoch, as NegCLIP) or first (default: per_epoch for negclip, else first).",
    )
    checkpoint_every: int | None = Field(
        None, ge=1, description="Optimizer steps between checkpoints (always one at the end)."
    )
    # judging: lexsem's evaluation after every epoch; `select` = (benchmark, metric) chosen on
    select_on: tuple[str, ...] = Field(
        (), description="Benchmark(s) of the model selection (a dev split)."
    )
    select_metric: str | None = Field(
        None, description="Metric of the selection (default: the first benchmark's main metric)."
    )
    select: Selection = Field(
        "benchmark",
        description="Model selection: benchmark (the --select-on evaluation) or "
        "val_in_batch_acc (BiVLC: in-batch accuracy on a validation split).",
    )
    val_fraction: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="With val_in_batch_acc: hold out this share of the training rows, drawn "
        "as BiVLC's train_test_split with the seed (BiVLC: 0.2); default: the dev split.",
    )
    judge_on: tuple[str, ...] = Field(
        (), description="Benchmark(s) evaluated before and after training."
    )
    allow_leakage: bool = Field(
        False,
        description="Record an overlap of the training data with a judged benchmark instead "
        "of refusing it.",
    )
    num_workers: int = Field(
        0, ge=0, description="DataLoader workers of the training batches (0: none)."
    )
    n_boot: int = _EVAL["n_boot"]  # the evaluations' resamples: EvalConfig's field

    @model_validator(mode="after")
    def _checked(self) -> TrainConfig:
        if self.select_metric is not None and not self.select_on:
            raise ValueError("select_metric needs select_on (the benchmarks it is read on)")
        if self.select == "val_in_batch_acc" and self.select_on:
            raise ValueError(
                "select val_in_batch_acc selects on the validation split: give the benchmarks "
                "as judge_on, not select_on"
            )
        if self.val_fraction is not None and self.select != "val_in_batch_acc":
            raise ValueError("val_fraction needs select val_in_batch_acc")
        return self

    @property
    def draw(self) -> str:
        """The negative draw in effect (`negative_draw`, else the regime's)."""
        return self.negative_draw or REGIME_DRAW[self.regime]


#: OpenAI's CLIP ViT-B/32 under the arch that builds its activation (QuickGELU)
OPENAI_B32 = "openclip:ViT-B-32-quickgelu/openai"

PRESETS: dict[str, dict[str, Any]] = {
    # BiVLC, §5 and App. E: open_clip ViT-B/32 from OpenAI's weights, 10 epochs, batch 400;
    # its fine-tuning script (src/CLIP_fine_tuning/CLIP_fine_tuning.py) never clamps the
    # logit scale. OpenAI's weights run QuickGELU, as they were trained and as open_clip builds
    # its `openai` tag (BiVLC, App. E, Evaluation: "using QuickGELU as in the base pretrained
    # model")
    "bivlc-clip-coco": {"model": OPENAI_B32, "regime": "clip_coco",
                        "batch_size": 400, "clamp_logit_scale": False},
    "bivlc-trohn-text": {"model": OPENAI_B32, "regime": "trohn_text",
                         "batch_size": 200, "clamp_logit_scale": False},
    "bivlc-trohn-img": {"model": OPENAI_B32, "regime": "trohn_img",
                        "batch_size": 200, "clamp_logit_scale": False},
    # NegCLIP's loss (ARO paper, §4) with BiVLC's optimiser settings (the ARO paper's own
    # optimisation settings are not among this project's sources: docs/training.md); the
    # logit scale clamped to ln 100 and a negative drawn per epoch, as NegCLIP's code
    # (src/training/train.py, src/training/data.py)
    "negclip": {"model": OPENAI_B32, "regime": "negclip", "batch_size": 200,
                "clamp_logit_scale": True, "negative_draw": "per_epoch"},
}  # fmt: skip


def preset(name: str, **overrides: Any) -> TrainConfig:
    """A `TrainConfig` of preset `name` with `overrides` (at least `manifest` and `out`)."""
    if name not in PRESETS:
        raise KeyError(f"unknown preset {name!r} (presets: {', '.join(PRESETS)})")
    return TrainConfig(**{**PRESETS[name], **overrides})
