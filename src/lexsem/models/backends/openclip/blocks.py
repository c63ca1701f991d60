"""open_clip's plain residual attention blocks for inference, with less work around the products.

open_clip runs a block as `nn.MultiheadAttention` (its inference fast path: the QKV product, a
kernel that splits it, adds its bias and scales it, attention by batched products and a softmax,
layout copies) and then the MLP, each linear layer a product whose bias is first copied into its
output, the activation and the residual add each a further pass over memory. On a CPU the work
around the products is a tenth to a quarter of a tower's time (`docs/performance.md`). Here a
block is (`Products`, `attention`):

- each linear layer is one oneDNN product (`torch.ops.mkldnn._linear_pointwise`, the op
  PyTorch's own compiler emits for CPU linear layers) with its bias, and the MLP's GELU or the
  residual add applied by oneDNN to the output tile it has just written (fused), on a CPU where
  oneDNN runs the dtype (fp32 always; bf16 where `torch.ops.mkldnn._is_mkldnn_bf16_supported`)
  and a probe at build time gives the unfused result; else `F.linear` with the GELU and the
  residual add in place;
- attention is `F.scaled_dot_product_attention` on a (texts, heads, tokens, head width) view of
  the QKV product, with none of the fast path's copies; in bf16 on a CPU it runs in fp32 on the
  bf16 values (torch's CPU flash kernel runs bf16 1.2-1.8x slower than fp32 at these sizes, and
  it accumulates in fp32 either way);
- the layer norms are the block's own modules, except open_clip's `LayerNormFp32` on bf16
  activations on the CPU, which becomes torch's mixed-dtype layer norm (the same fp32 arithmetic,
  without casting the activations to fp32 and back).

The results are those of open_clip's blocks to the dtype's rounding: `tests/test_text_trim.py`
and `tests/test_image_blocks.py` compare both towers with open_clip's `encode_text` and
`encode_image`, and each tower is checked against open_clip's own on a probe batch when the
model loads (`trim.py`, `vision.py`). Only open_clip's `ResidualAttentionBlock` with a plain
self-attention `nn.MultiheadAttention` (one packed QKV projection; no key/value biases, no zero
attention, no separate key/value layer norm) and the MLP `c_fc`, activation, `c_proj` is run so
(`plain_blocks`); anything else keeps open_clip's own blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def plain_blocks(transformer: Any) -> tuple[Any, ...] | None:
    """`transformer`'s blocks, or None when one of them is not open_clip's `ResidualAttentionBlock`
    with a plain self-attention `nn.MultiheadAttention` and a `c_fc`/activation/`c_proj` MLP."""
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
    return blocks or None


@dataclass(frozen=True)
class Products:
    """How a block's linear layers, layer norms and attention run (see the module doc): `fused`
    on a CPU where oneDNN runs the dtype with the bias, GELU and residual add fused."""

    fused: bool = False
    mixed_norm: bool = False  # LayerNormFp32 on bf16 activations as one mixed-dtype layer norm
    attention_fp32: bool = False  # bf16 attention on the CPU computed in fp32

    @classmethod
    def for_weight(cls, weight: Any) -> Products:
        """The products for a tower whose linear weights are like `weight`."""
        import torch

        cpu_bf16 = weight.device.type == "cpu" and weight.dtype == torch.bfloat16
        return cls(
            fused=_onednn_runs(weight.dtype, weight.device),
            mixed_norm=cpu_bf16,
            attention_fp32=cpu_bf16,
        )

    def qkv(self, block: Any, x: Any) -> Any:
        """A block's QKV product of its first layer norm of `x`."""
        attn = block.attn
        return self.linear(self.norm(block.ln_1, x), (attn.in_proj_weight, attn.in_proj_bias))

    def finish(self, block: Any, x: Any, a: Any) -> Any:
        """The rest of a block after its attention output `a` (rows of `x`'s): `x` plus the
        output projection of `a`, then plus the MLP of its second layer norm (`x` may be
        overwritten)."""
        x = self.add_linear(x, a, block.attn.out_proj, block.ls_1)
        h, proj = self.mlp(block.mlp, self.norm(block.ln_2, x))
        return self.add_linear(x, h, proj, block.ls_2)

    def linear(self, x: Any, layer: Any) -> Any:
        """`layer(x)` for an `nn.Linear` (or its weight and bias as `(weight, bias)`)."""
        import torch.nn.functional as F

        weight, bias = _weight_bias(layer)
        if self.fused:
            return _onednn(x, weight, bias, "none", "")
        return F.linear(x, weight, bias)

    def norm(self, module: Any, x: Any) -> Any:
        """The block's layer norm `module` on `x`."""
        import torch.nn.functional as F
        from open_clip.transformer import LayerNormFp32

        if self.mixed_norm and type(module) is LayerNormFp32:
            return F.layer_norm(x, module.normalized_shape, module.weight, module.bias, module.eps)
        return module(x)

    def add_linear(self, residual: Any, x: Any, layer: Any, scale: Any) -> Any:
        """`residual + scale(layer(x))` (`scale`: the block's LayerScale or `nn.Identity`); the
        residual may be overwritten."""
        import torch

        weight, bias = _weight_bias(layer)
        if type(scale) is torch.nn.Identity:
            if self.fused:
                return _onednn_add(x, residual, weight, bias)
            return residual.add_(self.linear(x, (weight, bias)))
        return residual.add_(scale(self.linear(x, (weight, bias))))

    def mlp(self, mlp: Any, x: Any) -> Any:
        """open_clip's block MLP (`c_fc`, the activation, `c_proj`) on `x`, without `c_proj`'s
        output: (the activation's output, `c_proj`) for `add_linear`."""
        import torch

        act = mlp.gelu
        exact_gelu = type(act) is torch.nn.GELU and act.approximate in ("none", "tanh")
        if self.fused and exact_gelu:
            w, b = _weight_bias(mlp.c_fc)
            return _onednn(x, w, b, "gelu", act.approximate), mlp.c_proj
        h = self.linear(x, mlp.c_fc)
        h = torch.ops.aten.gelu_(h, approximate=act.approximate) if exact_gelu else act(h)
        return h, mlp.c_proj

    def attention(
        self, qkv: Any, texts: int, tokens: int, heads: int, *, causal: bool, query: Any = None
    ) -> Any:
        """Self-attention of `texts` sequences of `tokens` each, from their QKV product `qkv`
        (texts x tokens rows, 3 x width columns): (texts, query tokens, heads, head width), a
        view. `query` (a slice of token positions) keeps only those queries; with it the
        attention is not causal (a causal query slice is the last positions: they see all)."""
        import torch.nn.functional as F

        if self.attention_fp32:
            qkv = qkv.float()
        q, k, v = qkv.view(texts, tokens, 3, heads, -1).permute(2, 0, 3, 1, 4)
        if query is not None:
            q, causal = q[:, :, query], False
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal).transpose(1, 2)


def same_features(want: Any, got: Any, dtype: Any) -> bool:
    """Whether two batches of features are the same as unit vectors, to the rounding of the
    dtype the blocks compute in (fp32: 1e-4; fp16/bf16: 5e-2): a tower that is not what its
    structure says gives other vectors altogether."""
    import torch

    if want.shape != got.shape:
        return False
    tol = 1e-4 if dtype == torch.float32 else 5e-2
    unit = torch.nn.functional.normalize
    return bool(torch.allclose(unit(want.float(), dim=-1), unit(got.float(), dim=-1), rtol=0,
                               atol=tol))  # fmt: skip


def _weight_bias(layer: Any) -> tuple[Any, Any]:
    return layer if isinstance(layer, tuple) else (layer.weight, layer.bias)


def _onednn(x: Any, weight: Any, bias: Any, attr: str, algorithm: str) -> Any:
    import torch

    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, attr, [], algorithm)


def _onednn_add(x: Any, residual: Any, weight: Any, bias: Any) -> Any:
    import torch

    return torch.ops.mkldnn._linear_pointwise(x, residual, weight, bias, "add")


_RUNS: dict[tuple[str, str], bool] = {}


def _onednn_runs(dtype: Any, device: Any) -> bool:
    """Whether oneDNN's fused linear op runs `dtype` on `device` and gives the unfused result on
    a probe (cached per dtype and device)."""
    key = (str(dtype), str(device))
    if key not in _RUNS:
        _RUNS[key] = _probe(dtype, device)
    return _RUNS[key]


def _probe(dtype: Any, device: Any) -> bool:
    import torch
    import torch.nn.functional as F

    if getattr(device, "type", str(device)) != "cpu" or dtype not in (
        torch.float32,
        torch.bfloat16,
    ):
        return False
    mkldnn = torch.ops.mkldnn
    if not torch.backends.mkldnn.is_available() or not hasattr(mkldnn, "_linear_pointwise"):
        return False
    if dtype == torch.bfloat16 and not (
        hasattr(mkldnn, "_is_mkldnn_bf16_supported") and mkldnn._is_mkldnn_bf16_supported()
    ):
        return False
    g = torch.Generator().manual_seed(0)
    x, residual = (torch.randn(6, 16, generator=g).to(dtype) for _ in range(2))
    weight, bias = torch.randn(16, 16, generator=g).to(dtype) / 4, torch.randn(16).to(dtype)
    try:
        with torch.inference_mode():
            want = [
                F.linear(x, weight, bias),
                F.gelu(F.linear(x, weight, bias)),
                F.gelu(F.linear(x, weight, bias), approximate="tanh"),
                residual + F.linear(x, weight, bias),
            ]
            got = [
                _onednn(x, weight, bias, "none", ""),
                _onednn(x, weight, bias, "gelu", "none"),
                _onednn(x, weight, bias, "gelu", "tanh"),
                _onednn_add(x, residual, weight, bias),
            ]
    except (RuntimeError, NotImplementedError, TypeError):
        return False
    tol = 1e-5 if dtype == torch.float32 else 5e-2
    return all(
        a.shape == b.shape and bool(torch.allclose(a.float(), b.float(), rtol=tol, atol=tol))
        for a, b in zip(want, got, strict=True)
    )
