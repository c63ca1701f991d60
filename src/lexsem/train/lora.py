"""LoRA adapters through peft: `inject_adapter_in_model` puts them into the module in place
(the evaluation backend keeps using the same object), every other parameter is frozen, and a
target list that matches no module, or trains nothing, is refused before training. For a
checkpoint the evaluation backends load, `merged_state` folds the adapters into the weights
(W + BA·α/r) under the module's own parameter names."""

from __future__ import annotations

from typing import Any

from lexsem.errors import ModelError
from lexsem.train.config import LoraConfig

__all__ = ["add_lora", "merged_state", "trainable_count"]


def trainable_count(module: Any) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def add_lora(module: Any, cfg: LoraConfig) -> Any:
    """Inject LoRA adapters into `module` (in place) and freeze the rest; the module."""
    try:
        from peft import LoraConfig as PeftLora
        from peft import inject_adapter_in_model
    except ImportError as exc:
        raise ModelError(f"LoRA needs peft: pip install 'lexsem[train]' ({exc})") from None
    peft_cfg = PeftLora(r=cfg.r, lora_alpha=cfg.alpha, lora_dropout=cfg.dropout,
                        target_modules=list(cfg.targets))  # fmt: skip
    try:
        inject_adapter_in_model(peft_cfg, module)
    except ValueError as exc:
        raise ModelError(f"LoRA targets {list(cfg.targets)}: {exc}") from None
    for name, p in module.named_parameters():
        p.requires_grad = "lora_" in name
    if trainable_count(module) == 0:
        raise ModelError(f"LoRA targets {list(cfg.targets)} train nothing")
    return module


def merged_state(module: Any) -> dict[str, Any]:
    """The module's state with every LoRA adapter merged into its base weight, under the
    names the module had before the adapters (`...base_layer.weight` -> `...weight`)."""
    from peft.tuners.lora import LoraLayer

    layers = [m for m in module.modules() if isinstance(m, LoraLayer)]
    for m in layers:
        m.merge()
    try:
        state = {}
        for key, value in module.state_dict().items():
            if "lora_" in key:
                continue
            state[key.replace(".base_layer.", ".")] = value.detach().clone()
        return state
    finally:
        for m in layers:
            m.unmerge()
