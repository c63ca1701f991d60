"""Several processes (`torchrun`, PyTorch's distributed package): each takes a contiguous slice
of every global batch, the embeddings are gathered from all processes (with their gradients)
in process order, so every process computes the loss of the whole global batch — the same
number as one process on that batch — and the gradients are averaged across processes after
each backward pass. The gradient is then exactly the one-process gradient of the global batch:
process r's embeddings receive the sum over processes of ∂L/∂e_r (the all-gather's backward),
i.e. `world`·∂L/∂e_r, and averaging divides by `world` again.

The backend is gloo on the CPU (tested with two processes) and NCCL on CUDA GPUs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

__all__ = ["World", "world_from_env"]


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def local(self, n: int) -> slice:
        """This process's contiguous slice of a global batch of `n` (n divisible by size)."""
        per = n // self.size
        return slice(self.rank * per, (self.rank + 1) * per)

    def gather(self, x: Any) -> Any:
        """`x` of every process, concatenated in process order, gradients kept."""
        if self.size == 1 or x is None:
            return x
        import torch
        from torch.distributed.nn.functional import all_gather

        return torch.cat(all_gather(x.contiguous()), dim=0)

    def average_gradients(self, module: Any) -> None:
        if self.size == 1:
            return
        import torch.distributed as dist

        for p in module.parameters():
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= self.size

    def barrier(self) -> None:
        if self.size > 1:
            import torch.distributed as dist

            dist.barrier()


def world_from_env(device: str) -> World:
    """The world `torchrun` describes (RANK, WORLD_SIZE), its process group started; one
    process otherwise."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return World()
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    return World(dist.get_rank(), dist.get_world_size())
