"""open_clip's residual attention blocks on packed tokens, for a trimmed causal text batch.

A trimmed batch (`trim.py`) is as wide as its longest text, so its shorter texts carry padding
through every linear layer. The linear layers, the layer norms, the activation and the residuals
act on each token alone; only attention mixes tokens, and in a causal tower a token attends to
those before it only. So `PackedBlocks` runs the per-token work on the texts' own tokens, packed
into one matrix with no padding (one product per layer of as many rows as the batch has tokens,
`blocks.Products`), and the attention on each run of consecutive texts of one length (the engine
sends texts sorted by token count, so a batch holds a few such runs) as one
`F.scaled_dot_product_attention(..., is_causal=True)` on a view of the packed QKV product: no
padding, and no copy into or out of a padded layout. The last block runs its attention for each
text's pooled (last) token only, and its output projection and MLP on those tokens only (the rows
`encode_text` keeps). It is an inference path: it runs without autograd.

Only plain blocks (`blocks.plain_blocks`) are run so; `packed_blocks` gives None for anything
else (e.g. `CustomResidualAttentionBlock` with its own attention), which keeps open_clip's own
blocks and the additive causal mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lexsem.models.backends.openclip.blocks import Products, plain_blocks


@dataclass(frozen=True)
class PackedBlocks:
    """A causal tower's residual attention blocks, run on packed tokens (see the module doc)."""

    blocks: tuple[Any, ...]
    products: Products

    def pooled(self, x: Any, lengths: Any) -> Any:
        """The blocks' output at each text's pooled token, (texts, width): `x` is the batch's
        input to the blocks, (texts, tokens, width), and text i's pooled token is at position
        `lengths[i] - 1` (the positions after it change nothing in a causal tower)."""
        import torch

        with torch.no_grad():  # the residuals are added in place
            return self._pooled(x, lengths)

    def _pooled(self, x: Any, lengths: Any) -> Any:
        import torch

        n, width, dim = x.shape
        own = torch.arange(width, device=x.device) < lengths[:, None]
        x = x.reshape(n * width, dim)[own.flatten()]  # each text's own tokens, packed
        runs = equal_runs(lengths.tolist())
        mine = self.products
        last = len(self.blocks) - 1
        for i, block in enumerate(self.blocks):
            heads = block.attn.num_heads
            qkv = mine.qkv(block, x)
            if i == last:  # only the pooled tokens are kept: one query per text
                a = qkv.new_empty(n, dim)
                for first, texts, tokens, row in runs:
                    rows = qkv[first : first + texts * tokens]
                    out = mine.attention(rows, texts, tokens, heads, causal=True,
                                         query=slice(tokens - 1, tokens))  # fmt: skip
                    a[row : row + texts].view(texts, 1, heads, -1).copy_(out)
                x = x.index_select(0, _packed_last(lengths))
            else:
                a = qkv.new_empty(x.shape[0], dim)
                for first, texts, tokens, _ in runs:
                    rows = slice(first, first + texts * tokens)
                    out = mine.attention(qkv[rows], texts, tokens, heads, causal=True)
                    a[rows].view(texts, tokens, heads, -1).copy_(out)
            x = mine.finish(block, x, a)
        return x


def equal_runs(lengths: list[int]) -> list[tuple[int, int, int, int]]:
    """Runs of consecutive texts of one length: (first packed row, texts, tokens each, index of
    the run's first text)."""
    runs: list[tuple[int, int, int, int]] = []
    row = 0
    for i, tokens in enumerate(lengths):
        if runs and runs[-1][2] == tokens:
            first, texts, _, start = runs[-1]
            runs[-1] = (first, texts + 1, tokens, start)
        else:
            runs.append((row, 1, tokens, i))
        row += tokens
    return runs


def _packed_last(lengths: Any) -> Any:
    """The row of each text's last token among the packed tokens."""
    return lengths.cumsum(0) - 1


def packed_blocks(transformer: Any) -> PackedBlocks | None:
    """`transformer`'s blocks as `PackedBlocks`, or None when they are not all plain blocks
    (`blocks.plain_blocks`)."""
    blocks = plain_blocks(transformer)
    if blocks is None:
        return None
    return PackedBlocks(blocks, Products.for_weight(blocks[0].attn.in_proj_weight))
