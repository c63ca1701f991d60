"""The optimiser and schedule of CLIP fine-tuning (`lexsem.train.optim`), by hand."""

from __future__ import annotations

import math

import pytest
import torch

from lexsem.train.optim import (
    MAX_LOGIT_SCALE,
    adamw,
    clamp_logit_scale,
    cosine_with_warmup,
    param_groups,
)

pytestmark = pytest.mark.torch


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 3)  # weight decayed, bias not
        self.ln = torch.nn.LayerNorm(3)  # gain and bias: not decayed
        self.logit_scale = torch.nn.Parameter(torch.tensor(math.log(1 / 0.07)))
        self.frozen = torch.nn.Linear(3, 3)
        self.frozen.requires_grad_(False)


def test_weight_decay_spares_gains_biases_and_the_logit_scale() -> None:
    m = Tiny()
    decay, plain = param_groups(m.named_parameters(), 0.1)
    assert decay["weight_decay"] == 0.1 and plain["weight_decay"] == 0.0
    assert {id(p) for p in decay["params"]} == {id(m.proj.weight)}
    assert {id(p) for p in plain["params"]} == {
        id(m.proj.bias),
        id(m.ln.weight),
        id(m.ln.bias),
        id(m.logit_scale),
    }
    opt = adamw(m, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.98), eps=1e-6)
    assert opt.defaults["betas"] == (0.9, 0.98) and opt.defaults["eps"] == 1e-6
    everything = {id(p) for g in opt.param_groups for p in g["params"]}
    assert id(m.frozen.weight) not in everything  # frozen parameters are not optimised


def test_a_model_with_nothing_trainable_is_refused() -> None:
    m = Tiny().requires_grad_(False)
    with pytest.raises(ValueError, match="no parameter"):
        adamw(m, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.98), eps=1e-6)


def test_cosine_schedule_after_linear_warmup() -> None:
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=1.0)
    sched = cosine_with_warmup(opt, warmup=4, total=14)
    rates = []
    for _ in range(16):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert rates[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])  # linear warm-up
    want = [0.5 * (1 + math.cos(math.pi * (s - 4) / 10)) for s in range(4, 14)]
    assert rates[4:14] == pytest.approx(want)  # cosine from 1 to 0 over the remaining 10
    assert rates[14:] == pytest.approx([0.0, 0.0])  # stays at 0 past the end


def test_the_logit_scale_is_clamped_to_ln_100() -> None:
    m = Tiny()
    with torch.no_grad():
        m.logit_scale.fill_(10.0)
    clamp_logit_scale(m)
    assert float(m.logit_scale) == pytest.approx(MAX_LOGIT_SCALE)
    with torch.no_grad():
        m.logit_scale.fill_(-1.0)
    clamp_logit_scale(m)
    assert float(m.logit_scale) == 0.0


def test_the_saved_state_keeps_the_fp16_gradient_scale(tmp_path: object) -> None:
    """A resumed `amp_fp16` run continues with the gradient scale it had (`state.pt`)."""
    from pathlib import Path

    from lexsem.train.state import Progress, load_state, save_state

    m = Tiny()
    opt = adamw(m, lr=1e-3, weight_decay=0.1, betas=(0.9, 0.98), eps=1e-6)
    sched = cosine_with_warmup(opt, 1, 10)
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    scaler._scale = torch.tensor(256.0)  # as after a few overflows
    path = Path(str(tmp_path)) / "state.pt"
    save_state(path, m, opt, sched, Progress(step=3), scaler)
    fresh = torch.amp.GradScaler("cpu", init_scale=1024.0)
    progress = load_state(path, Tiny(), adamw(Tiny(), lr=1e-3, weight_decay=0.1,
                          betas=(0.9, 0.98), eps=1e-6), sched, fresh)  # fmt: skip
    assert progress.step == 3 and fresh.get_scale() == 256.0
