"""open_clip's ViT image tower run through `blocks.py`, pooled token only in the last block.

`VisionBlocks.encode` is open_clip's `VisionTransformer.forward` (its own patch embedding, class
and positional embeddings and `ln_pre`, then its own pooling, `ln_post` and projection) with the
blocks run by `blocks.Products`: one product per linear layer with its bias, GELU or residual add
fused on the CPU, attention by `F.scaled_dot_product_attention` on views of the QKV product. A
tower pooled at its class token (`pool_type="tok"`, no attention pooler) keeps only that token
from the last block, so the last block's attention runs one query per image and its output
projection and MLP one row per image instead of all 50 (ViT-B/32 at 224 px).

Only a `VisionTransformer` of plain blocks (`blocks.plain_blocks`) with no attention pooler and
no token output is run so (`vision_blocks` gives None for anything else: open_clip's own
`encode_image` then runs), and the encoder checks the result against open_clip's own on a probe
batch when the model loads (`OpenClipEncoder._vision_blocks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lexsem.models.backends.openclip.blocks import Products, plain_blocks


@dataclass(frozen=True)
class VisionBlocks:
    """An open_clip ViT image tower run through `blocks.Products` (see the module doc)."""

    visual: Any
    blocks: tuple[Any, ...]
    products: Products
    pooled_token_only: bool

    def encode(self, pixels: Any) -> Any:
        """The tower's image features (open_clip's `encode_image` without normalising)."""
        import torch

        with torch.no_grad():  # the residuals are added in place
            return self._encode(pixels)

    def _encode(self, pixels: Any) -> Any:
        visual, mine = self.visual, self.products
        x = visual._embeds(pixels)
        n, tokens, dim = x.shape
        x = x.reshape(n * tokens, dim)
        last = len(self.blocks) - 1
        kept = tokens
        for i, block in enumerate(self.blocks):
            heads = block.attn.num_heads
            qkv = mine.qkv(block, x)
            query = slice(0, 1) if i == last and self.pooled_token_only else None
            out = mine.attention(qkv, n, tokens, heads, causal=False, query=query)
            if query is not None:  # the class token only, from here on
                kept = 1
                x = x.view(n, tokens, dim)[:, 0].contiguous()
            a = qkv.new_empty(n * kept, dim)
            a.view(n, kept, heads, -1).copy_(out)
            x = mine.finish(block, x, a)
        pooled, _ = visual._pool(x.view(n, kept, dim))
        return pooled @ visual.proj if visual.proj is not None else pooled


def vision_blocks(model: Any) -> VisionBlocks | None:
    """`model`'s image tower as `VisionBlocks`, or None when it is not an open_clip
    `VisionTransformer` of plain blocks with no attention pooler and no token output."""
    from open_clip.transformer import VisionTransformer

    visual = getattr(model, "visual", None)
    if (
        type(visual) is not VisionTransformer
        or getattr(visual, "attn_pool", None) is not None
        or getattr(visual, "output_tokens", False)
        or not all(hasattr(visual, name) for name in ("_embeds", "_pool", "pool_type", "proj"))
    ):
        return None
    blocks = plain_blocks(visual.transformer)
    if blocks is None:
        return None
    return VisionBlocks(
        visual=visual,
        blocks=blocks,
        products=Products.for_weight(blocks[0].attn.in_proj_weight),
        pooled_token_only=visual.pool_type == "tok",
    )
