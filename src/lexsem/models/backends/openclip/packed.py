"""open_clip's residual attention blocks on packed tokens, for a trimmed causal text batch.

A trimmed batch (`trim.py`) is as wide as its longest text, so its shorter texts carry padding
through every linear layer. The linear layers, the layer norms, the activation and the residuals
act on each token alone; only attention mixes tokens, and in a causal tower a token attends to
those before it only. So `PackedBlocks` runs the per-token work on the texts' own tokens, packed
into one matrix with no padding (one product per layer of as many rows as the batch has tokens;
the residual adds and torch's GELU in place), and the attention on the batch's padded layout, as
`F.scaled_dot_product_attention(..., is_causal=True)` on a (texts, heads, width, head width)
view of the packed QKV product written into a zero-padded buffer. The last block runs its
output projection and MLP on the pooled tokens only (the rows `encode_text` keeps). It is an
inference path: it runs without autograd.

Only open_clip's `ResidualAttentionBlock` with a plain self-attention `nn.MultiheadAttention`
(one packed QKV projection; no key/value biases, no zero attention, no separate key/value layer
norm) is run so; `packed_blocks` gives None for anything else (e.g. `CustomResidualAttentionBlock`
with its own attention), which keeps open_clip's own blocks and the additive causal mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PackedBlocks:
    """A causal tower's residual attention blocks, run on packed tokens (see the module doc)."""

    blocks: tuple[Any, ...]

    def pooled(self, x: Any, lengths: Any) -> Any:
        """The blocks' output at each text's pooled token, (texts, width): `x` is the batch's
        input to the blocks, (texts, tokens, width), and text i's pooled token is at position
        `lengths[i] - 1` (the positions after it change nothing in a causal tower)."""
        import torch

        with torch.no_grad():  # the residuals are added in place
            return self._pooled(x, lengths)

    def _pooled(self, x: Any, lengths: Any) -> Any:
        import torch
        import torch.nn.functional as F

        n, width, dim = x.shape
        own = torch.arange(width, device=x.device) < lengths[:, None]
        rows = own.flatten().nonzero().squeeze(1)  # each text's own tokens, in the padded layout
        last = torch.arange(n, device=x.device) * width + lengths - 1
        x = x.reshape(n * width, dim).index_select(0, rows)
        padded: Any = None
        for i, block in enumerate(self.blocks):
            attn = block.attn
            heads = attn.num_heads
            qkv = F.linear(block.ln_1(x), attn.in_proj_weight, attn.in_proj_bias)
            if padded is None:  # the padding rows stay zero: no text's token attends to them
                padded = qkv.new_zeros(n * width, qkv.shape[1])
            padded.index_copy_(0, rows, qkv)
            q, k, v = padded.view(n, width, 3, heads, dim // heads).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            a = a.transpose(1, 2).reshape(n * width, dim)
            if i == len(self.blocks) - 1:  # only the pooled tokens are kept
                x, a = x.index_select(0, _packed_last(lengths)), a.index_select(0, last)
            else:
                a = a.index_select(0, rows)
            x.add_(block.ls_1(F.linear(a, attn.out_proj.weight, attn.out_proj.bias)))
            x.add_(block.ls_2(_mlp(block.mlp, block.ln_2(x))))
        return x


def _mlp(mlp: Any, x: Any) -> Any:
    """open_clip's block MLP (`c_fc`, the activation, `c_proj`), torch's GELU in place."""
    import torch

    h = mlp.c_fc(x)
    act = mlp.gelu
    h = (
        torch.ops.aten.gelu_(h, approximate=act.approximate)
        if type(act) is torch.nn.GELU
        else act(h)
    )
    return mlp.c_proj(h)


def _packed_last(lengths: Any) -> Any:
    """The row of each text's last token among the packed tokens."""
    return lengths.cumsum(0) - 1


def packed_blocks(transformer: Any) -> PackedBlocks | None:
    """`transformer`'s blocks as `PackedBlocks`, or None when one of them is not open_clip's
    `ResidualAttentionBlock` with a plain self-attention `nn.MultiheadAttention`."""
    import torch
    from open_clip.transformer import ResidualAttentionBlock

    blocks = tuple(getattr(transformer, "resblocks", ()))
    for block in blocks:
        attn = getattr(block, "attn", None)
        if (
            type(block) is not ResidualAttentionBlock
            or hasattr(block, "ln_1_kv")
            or type(attn) is not torch.nn.MultiheadAttention
            or not attn._qkv_same_embed_dim
            or attn.bias_k is not None
            or attn.bias_v is not None
            or attn.add_zero_attn
            or [name for name, _ in block.mlp.named_children()] != ["c_fc", "gelu", "c_proj"]
        ):
            return None
    return PackedBlocks(blocks) if blocks else None
