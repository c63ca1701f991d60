"""A tiny random Stable Diffusion pipeline built from configs (as diffusers' own tests build
theirs): UNet2DConditionModel, AutoencoderKL, CLIPTextModel, a CLIP tokenizer over single
characters and a DDIM scheduler, saved as a pipeline folder; 16 x 16 images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from builders.backends import optional_import
from builders.tiny_dual_models import clip_tokenizer

torch = optional_import("torch")
T = optional_import("transformers")
D = optional_import("diffusers")


def tiny_pipeline(seed: int = 0) -> Any:
    """The pipeline, weights drawn from `seed`."""
    torch.manual_seed(seed)
    unet = D.UNet2DConditionModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=8, in_channels=4,
        out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=16,
        attention_head_dim=2, norm_num_groups=4,
    )  # fmt: skip
    vae = D.AutoencoderKL(
        block_out_channels=(8, 16), in_channels=3, out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        latent_channels=4, norm_num_groups=4, sample_size=16,
    )  # fmt: skip
    tok = clip_tokenizer()
    text = T.CLIPTextModel(
        T.CLIPTextConfig(
            bos_token_id=0, eos_token_id=1, pad_token_id=1, hidden_size=16, intermediate_size=32,
            num_attention_heads=2, num_hidden_layers=1, vocab_size=len(tok),
            max_position_embeddings=80,
        )
    )  # fmt: skip
    tok.model_max_length = 80
    scheduler = D.DDIMScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
        set_alpha_to_one=False, steps_offset=1,
    )  # fmt: skip
    return D.StableDiffusionPipeline(
        unet=unet, vae=vae, text_encoder=text, tokenizer=tok, scheduler=scheduler,
        safety_checker=None, feature_extractor=None, requires_safety_checker=False,
    )  # fmt: skip


def write_tiny_pipeline(folder: Path, seed: int = 0) -> Path:
    """The pipeline saved as a diffusers folder (model_index.json and its components)."""
    tiny_pipeline(seed).save_pretrained(str(folder), safe_serialization=True)
    return folder


def write_tiny_unet(folder: Path, seed: int = 1) -> Path:
    """Another UNet of the same shape (another seed), saved under ``unet/`` as a hub UNet
    repository is (SDXL-DPO's ``mhdang/dpo-sdxl-text2image-v1``)."""
    tiny_pipeline(seed).unet.save_pretrained(str(folder / "unet"), safe_serialization=True)
    return folder
