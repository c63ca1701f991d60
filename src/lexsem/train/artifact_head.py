"""Training one synthetic-vs-natural head on frozen embeddings (BiVLC, §5.4 and App. E; the
reference: `src/Detectors/Detector_text_classifier.py` / `Detector_img_classifier.py` of
IMirandaM/BiVLC).

The encoders are frozen, so each item's embedding is computed once (`artifact_detector`) and
the head is trained on the embedding matrices: `natural[i]` and `generated[i]` are the two
sides of training row i (a caption and its negative caption, or an image and its negative
image). The procedure, step by step (the test writes it out by hand):

1. one `torch.Generator` seeded with `seed` draws the head's initial weight (1, d), then its
   bias (1,), each uniform in [-1/sqrt(d), 1/sqrt(d)) (`torch.nn.Linear`'s default bound),
   as ``(rand * 2 - 1) * bound``;
2. each epoch draws the row order with ``torch.randperm(n, generator=g)`` from that generator
   and cuts it into batches of `batch_size` rows (the last one shorter); a batch of B rows is
   2B items, the B natural ones (label 0) first, then their B generated ones (label 1), as the
   reference's `collate_fn` stacks them;
3. per batch: p = sigmoid(x · w + b), loss = `torch.nn.BCELoss()(p, labels)` (the mean),
   Adam (lr, betas, eps, no weight decay) steps once;
4. after each epoch the validation rows, in file order, in batches of `batch_size` rows built
   the same way: the epoch's validation accuracy is the *mean of the per-batch accuracies*
   (each batch's share of items with round(p) == label; `torch.round` rounds 0.5 to 0), as the
   reference averages them;
5. the selected head is the one after the first epoch with the highest validation accuracy
   (the reference saves a checkpoint only when the accuracy is strictly above the best so far).

Train accuracies and losses per epoch are the means over its batches, as the reference prints.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from lexsem.errors import DataError

__all__ = ["EpochResult", "HeadResult", "batch_accuracy", "train_head"]


@dataclass(frozen=True)
class EpochResult:
    epoch: int
    train_loss: float
    train_accuracy: float
    val_loss: float
    val_accuracy: float


@dataclass(frozen=True)
class HeadResult:
    weight: Any  # torch.Tensor (1, d): the selected epoch's
    bias: Any  # torch.Tensor (1,)
    epochs: tuple[EpochResult, ...]
    best_epoch: int
    steps: int

    def as_record(self) -> dict[str, Any]:
        return {"best_epoch": self.best_epoch, "steps": self.steps,
                "epochs": [asdict(e) for e in self.epochs]}  # fmt: skip


def batch_accuracy(probs: Any, labels: Any) -> float:
    """The share of items whose rounded probability equals the label."""
    import torch

    return float((torch.round(probs) == labels).float().mean())


def _batch(natural: Any, generated: Any, rows: Any) -> tuple[Any, Any]:
    import torch

    x = torch.cat([natural[rows], generated[rows]])
    y = torch.cat([torch.zeros(len(rows), 1), torch.ones(len(rows), 1)]).to(x.device)
    return x, y


def train_head(
    natural: Any,
    generated: Any,
    val_natural: Any,
    val_generated: Any,
    *,
    epochs: int,
    batch_size: int,
    lr: float,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    seed: int = 42,
) -> HeadResult:
    """Train a sigmoid head on float32 embeddings (n, d) as the module doc says."""
    import torch

    n, m = len(natural), len(val_natural)
    if n == 0 or m == 0:
        raise DataError(
            f"a detector needs training and validation rows (got {n} training, {m} validation)"
        )
    if generated.shape != natural.shape or val_generated.shape != val_natural.shape:
        raise DataError("natural and generated embeddings must have the same shape")
    d = natural.shape[1]
    g = torch.Generator().manual_seed(seed)
    bound = 1.0 / math.sqrt(d)
    head = torch.nn.Linear(d, 1).to(natural.device)
    with torch.no_grad():
        head.weight.copy_((torch.rand(1, d, generator=g) * 2 - 1) * bound)
        head.bias.copy_((torch.rand(1, generator=g) * 2 - 1) * bound)
    optimizer = torch.optim.Adam(head.parameters(), lr=lr, betas=betas, eps=eps, weight_decay=0)
    criterion = torch.nn.BCELoss()
    results: list[EpochResult] = []
    best: tuple[float, int, Any, Any] | None = None
    steps = 0
    for epoch in range(epochs):
        order = torch.randperm(n, generator=g).to(natural.device)
        losses, accs = [], []
        for start in range(0, n, batch_size):
            x, y = _batch(natural, generated, order[start : start + batch_size])
            probs = torch.sigmoid(head(x))
            loss = criterion(probs, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            losses.append(float(loss.detach()))
            accs.append(batch_accuracy(probs.detach(), y))
        val_losses, val_accs = [], []
        with torch.no_grad():
            for start in range(0, m, batch_size):
                rows = torch.arange(start, min(start + batch_size, m), device=natural.device)
                x, y = _batch(val_natural, val_generated, rows)
                probs = torch.sigmoid(head(x))
                val_losses.append(float(criterion(probs, y)))
                val_accs.append(batch_accuracy(probs, y))
        res = EpochResult(epoch, _mean(losses), _mean(accs), _mean(val_losses), _mean(val_accs))
        results.append(res)
        if best is None or res.val_accuracy > best[0]:
            weight, bias = head.weight.detach().clone(), head.bias.detach().clone()
            best = (res.val_accuracy, epoch, weight, bias)
    assert best is not None  # epochs >= 1
    return HeadResult(best[2], best[3], tuple(results), best[1], steps)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)
