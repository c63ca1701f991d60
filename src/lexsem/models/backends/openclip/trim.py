"""Text batches run only up to their longest text, for causal text towers.

Every text is tokenized to the arch's context (77 tokens for CLIP archs), while SugarCrepe
captions are about 15. When the text tower is causal and pooled at the end-of-text token
(`causal_text_tower`: open_clip's CLIP text path with its causal mask and `argmax`/`eos`
pooling, no CLS token or padding mask), the pooled embedding depends only on the tokens up to
that token, so a batch can run only up to its last one: the same embeddings (to float32
rounding) for a fraction of the work. Bidirectional towers (open_clip's SigLIP archs, HF text
towers) and anything else are not `CausalTextTower`s. Where the tower's blocks are open_clip's
plain residual attention blocks, a batch's linear layers run on its texts' own tokens only, with
no padding at all (`packed.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lexsem.models.backends.openclip.blocks import same_features
from lexsem.models.backends.openclip.packed import PackedBlocks, packed_blocks


@dataclass(frozen=True)
class CausalTextTower:
    """The parts of an open_clip text tower that `encode_text` runs, for a tower whose pooled
    embedding depends only on the tokens up to the pooled one: a causal attention mask (each
    position attends to itself and those before it), pooled at the end-of-text token (`argmax`:
    the highest id; `eos`: the first `eos_id`), no appended CLS token, no padding mask. Then
    the positions after the last pooled one change nothing, and `encode` runs a batch only up
    to it: the embeddings of the full context, with the work of the batch's longest text, or
    of its texts' own tokens where the blocks run packed (`packed`: `packed.py`)."""

    token_embedding: Any
    positional_embedding: Any
    transformer: Any
    attn_mask: Any
    ln_final: Any
    text_projection: Any
    pool_type: str
    eos_id: int | None
    packed: PackedBlocks | None = None

    def pool_index(self, tokens: Any) -> Any:
        """The pooled position of each row of `tokens` (as open_clip's `text_global_pool`)."""
        if self.pool_type == "argmax":
            return tokens.argmax(dim=-1)
        return (tokens == self.eos_id).int().argmax(dim=-1)

    def encode(self, tokens: Any) -> Any:
        """open_clip's `encode_text` on the columns up to the batch's last pooled position."""
        import torch

        index = self.pool_index(tokens)
        width = int(index.max()) + 1
        cast = self.transformer.get_cast_dtype()
        x = self.token_embedding(tokens[:, :width]).to(cast)
        x = x + self.positional_embedding[:width].to(cast)
        if self.packed is not None:
            x = self.packed.pooled(x, index + 1)
        else:
            # the mask in the blocks' dtype once per batch (each block would cast it again)
            x = self.transformer(x, attn_mask=self.attn_mask[:width, :width].to(cast))
            x = x[torch.arange(x.shape[0], device=x.device), index]
        x = self.ln_final(x)  # of the pooled tokens only: it acts on each token alone
        proj = self.text_projection
        if proj is None:
            return x
        return proj(x) if isinstance(proj, torch.nn.Module) else x @ proj

    def matches_full_width(self, model: Any, tokens: Any) -> bool:
        """Whether `encode(tokens)` gives the model's own full-width `encode_text(tokens)`, as
        unit vectors, to rounding (fp32: 1e-4; fp16/bf16: 5e-2): a tower that is not what the
        structure says gives other vectors altogether. The rounding is the dtype the blocks
        compute in: open_clip's bf16 and fp16 convert the weights of the linear and attention
        layers only, and leave the positional embedding and the layer norms in fp32."""
        import torch

        with torch.inference_mode():
            full, trimmed = model.encode_text(tokens), self.encode(tokens)
        return same_features(full, trimmed, self.transformer.get_cast_dtype())


def causal_text_tower(model: Any) -> CausalTextTower | None:
    """`model`'s text tower as a `CausalTextTower`, or None when it is not one (bidirectional,
    e.g. open_clip's SigLIP towers; pooled at the last position or a CLS token; a padding mask;
    a Hugging Face text model; a class that runs its text otherwise)."""
    from open_clip.model import CLIP, CustomTextCLIP
    from open_clip.transformer import TextTransformer

    encode_text = getattr(type(model), "encode_text", None)
    if encode_text is CLIP.encode_text:
        parts: Any = model
        pool, eos = getattr(model, "text_pool_type", None), getattr(model, "text_eos_id", None)
    elif encode_text is CustomTextCLIP.encode_text and type(model.text) is TextTransformer:
        parts = model.text
        if getattr(parts, "cls_emb", None) is not None or getattr(parts, "use_pad_mask", False):
            return None
        pool, eos = parts.pool_type, getattr(parts, "eos_id", None)
    else:
        return None
    mask = getattr(parts, "attn_mask", None)
    if not _is_causal(mask) or pool not in ("argmax", "eos") or (pool == "eos" and eos is None):
        return None
    return CausalTextTower(
        token_embedding=parts.token_embedding,
        positional_embedding=parts.positional_embedding,
        transformer=parts.transformer,
        attn_mask=mask,
        ln_final=parts.ln_final,
        text_projection=parts.text_projection,
        pool_type=pool,
        eos_id=eos,
        packed=packed_blocks(parts.transformer),
    )


def _is_causal(mask: Any) -> bool:
    """An additive mask that is -inf exactly above the diagonal (and 0 elsewhere)."""
    import torch

    if not isinstance(mask, torch.Tensor) or mask.ndim != 2 or mask.shape[0] != mask.shape[1]:
        return False
    above = torch.ones(mask.shape, dtype=torch.bool, device=mask.device).triu(1)
    return bool(torch.isneginf(mask[above]).all() and (mask[~above] == 0).all())
