"""Text batches run only up to their longest text where that gives the full-width embeddings.

A causal text tower pooled at the end-of-text token (CLIP, open_clip's CLIP archs) computes the
pooled token from the tokens before it only, so the padding after it changes nothing: lexsem
runs each batch (texts sorted by token count) only up to its last pooled position. A
bidirectional tower (SigLIP; open_clip's towers without a causal mask) sees the padding, so it
keeps the full width. Tiny random models built here: open_clip archs registered with
`add_model_config` (argmax and eos pooling, and a bidirectional one), transformers CLIP and
SigLIP (the tiny models of test_models_dual).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
import transformers as T

from builders.backends import require_module
from builders.numeric import assert_close_to_reference
from builders.tiny_dual_models import direct_tokens, write_clip, write_siglip
from lexsem.models.backends.openclip.encoder import OpenClipEncoder
from lexsem.models.backends.openclip.trim import causal_text_tower
from lexsem.models.factory import load_text_encoder

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

TEXTS = [
    "a cat",
    "a small red dog chases the big blue ball on the table",
    "",
    "Two horses, one brown & one white!",
    "the cat",
    " ".join(["a red ball and a blue box"] * 12),  # past the 77-token context: truncated
]
TEXT_CFG = {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 2}
VISION_CFG = {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16}
ARCHS: dict[str, dict[str, Any]] = {
    # the standard CLIP text tower: causal mask, pooled at the highest token id (EOT)
    "lexsem-trim-argmax": {"text_cfg": TEXT_CFG},
    # pooled at the first end-of-text id (as open_clip's towers with HF tokenizers)
    "lexsem-trim-eos": {"text_cfg": {**TEXT_CFG, "pool_type": "eos", "eos_id": 49407}},
    # open_clip's custom blocks (their own attention): trimmed, not packed
    "lexsem-trim-custom": {"text_cfg": {**TEXT_CFG, "block_type": "custom"}},
    # bidirectional, pooled at the last position (open_clip's SigLIP towers)
    "lexsem-trim-bidir": {
        "custom_text": True,
        "text_cfg": {**TEXT_CFG, "no_causal_mask": True, "pool_type": "last"},
    },
}


@pytest.fixture(scope="module")
def open_clip_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    oc = require_module("open_clip")
    configs = tmp_path_factory.mktemp("trim-configs")
    for arch, extra in ARCHS.items():
        cfg = {"embed_dim": 16, "vision_cfg": VISION_CFG, **extra}
        (configs / f"{arch}.json").write_text(json.dumps(cfg))
    oc.add_model_config(configs)
    out: dict[str, Any] = {}
    for seed, arch in enumerate(ARCHS):
        torch.manual_seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, _, _ = oc.create_model_and_transforms(arch)
        ckpt = tmp_path_factory.mktemp("trim-ckpt") / f"{arch}.pt"
        torch.save(model.state_dict(), ckpt)
        out[arch] = SimpleNamespace(model=model.eval(), ckpt=ckpt, tokenizer=oc.get_tokenizer(arch))
    return out


def _assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Close as unit vectors (the engine compares those): float32 matmuls of other shapes round
    differently."""
    unit = lambda x: np.atleast_2d(x / np.linalg.norm(x, axis=-1, keepdims=True))  # noqa: E731
    assert_close_to_reference(unit(got), unit(want))


def _encoder(arch: str, models: dict[str, Any]) -> OpenClipEncoder:
    return OpenClipEncoder(f"openclip:{arch}@{models[arch].ckpt}?quick_gelu=false", device="cpu")


def _full_width(arch: str, models: dict[str, Any], texts: list[str]) -> np.ndarray:
    """open_clip's own embeddings, every text padded to the full context."""
    m = models[arch]
    with torch.no_grad():
        return m.model.encode_text(m.tokenizer(texts)).numpy()


def _shapes(enc: OpenClipEncoder, texts: list[str], batch_size: int) -> tuple[np.ndarray, list]:
    """enc.encode(texts), and the (texts, tokens) shape of each batch the text tower ran (the
    token ids it embedded)."""
    enc.encode(["load"])
    shapes: list[Any] = []
    model = enc._ensure_loaded()
    embed = getattr(model, "token_embedding", None) or model.text.token_embedding
    hook = embed.register_forward_hook(lambda m, args, out: shapes.append(args[0].shape[:2]))
    try:
        got = enc.encode(texts, batch_size=batch_size)
    finally:
        hook.remove()
    return got, shapes


# -- open_clip ----------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["lexsem-trim-argmax", "lexsem-trim-eos", "lexsem-trim-custom"])
def test_causal_open_clip_towers_trim_to_the_same_embeddings(
    arch: str, open_clip_models: dict[str, Any]
) -> None:
    enc = _encoder(arch, open_clip_models)
    got, shapes = _shapes(enc, TEXTS, batch_size=2)
    assert enc.trims_padding
    # open_clip's plain blocks run packed (`packed.py`), its custom blocks as they are
    assert enc._causal is not None
    assert (enc._causal.packed is None) == (arch == "lexsem-trim-custom")
    want = _full_width(arch, open_clip_models, TEXTS)
    _assert_same(got, want)
    # by token count, each batch only as wide as its longest text and holding up to
    # batch_size x 77 tokens at that width: the truncated text and the next one run the full
    # 77, the four shortest run together at the third's count
    tokens = open_clip_models[arch].tokenizer(TEXTS)
    counts = sorted(((tokens == 49407).int().argmax(1) + 1).tolist(), reverse=True)
    assert counts[0] == 77 and 4 * counts[2] <= 2 * 77 < 3 * 77
    assert [tuple(x) for x in shapes] == [(2, 77), (4, counts[2])]
    # each text alone (its own width) gives its full-width embedding too
    for text, row in zip(TEXTS, want, strict=True):
        _assert_same(enc.encode([text])[0], row)


def test_packed_blocks_run_each_texts_own_tokens(open_clip_models: dict[str, Any]) -> None:
    """A trimmed batch's linear layers run on its texts' own tokens, no padding (the first
    block's MLP, behind its layer norm, sees as many rows as the batch has tokens), the last
    block's output projection and MLP on the pooled tokens only; the embeddings are those of
    the padded run."""
    from dataclasses import replace

    arch = "lexsem-trim-argmax"
    m = open_clip_models[arch]
    tower = causal_text_tower(m.model)
    assert tower is not None and tower.packed is not None
    tokens = m.tokenizer(TEXTS[:5])
    counts = ((tokens == 49407).int().argmax(1) + 1).tolist()
    rows: list[int] = []
    blocks = m.model.transformer.resblocks
    hooks = [
        b.ln_2.register_forward_hook(lambda mod, args, out: rows.append(args[0].shape[0]))
        for b in (blocks[0], blocks[-1])
    ]
    try:
        with torch.inference_mode():
            packed = tower.encode(tokens)
    finally:
        for hook in hooks:
            hook.remove()
    assert rows == [sum(counts), len(counts)] and sum(counts) < len(counts) * max(counts)
    with torch.inference_mode():
        padded = replace(tower, packed=None).encode(tokens)
    _assert_same(packed.numpy(), padded.numpy())
    _assert_same(packed.numpy(), _full_width(arch, open_clip_models, TEXTS[:5]))


@pytest.mark.parametrize("quick_gelu", [False, True])
def test_a_vit_b_32_text_tower_packed_gives_open_clips_embeddings(quick_gelu: bool) -> None:
    """The packed run of a random text tower of ViT-B/32's size (12 blocks of width 512, 8
    heads; torch's GELU, run in place, or QuickGELU) against open_clip's own `encode_text` at
    the full context, on texts of many token counts in one batch."""
    oc = require_module("open_clip")
    from open_clip.model import CustomTextCLIP

    text_cfg = oc.get_model_config("ViT-B-32")["text_cfg"]
    torch.manual_seed(0)
    model = CustomTextCLIP(
        embed_dim=512, vision_cfg=VISION_CFG, text_cfg=text_cfg, quick_gelu=quick_gelu
    ).eval()
    tower = causal_text_tower(model)
    assert tower is not None and tower.packed is not None
    texts = [*TEXTS, "a photo of a dog", "three red apples beside a green pear on a plate"]
    tokens = oc.get_tokenizer("ViT-B-32")(texts)
    with torch.inference_mode():
        got, want = tower.encode(tokens), model.encode_text(tokens)
    _assert_same(got.numpy(), want.numpy())


def test_the_engine_runs_the_trimmed_batches_of_one_call(
    open_clip_models: dict[str, Any],
) -> None:
    """`embed_texts` makes one encoder call per batch of the encoder's own `batch_sizes`
    (batch_size x 77 tokens at each batch's width): the batches, hence the vectors, of one
    `encode` call for the whole chunk, with no batch cut at `batch_size` texts."""
    from lexsem.engine.embed import batches, embed_texts

    enc = _encoder("lexsem-trim-argmax", open_clip_models)
    texts = [*TEXTS, "a red cube", "the blue ball", "two dogs", "a photo of a cat on a mat"]
    order = np.argsort([-len(t) for t in texts], kind="stable")  # embed_texts' chunk order
    chunk = [texts[i] for i in order]
    one_call, shapes = _shapes(enc, chunk, batch_size=2)
    cut = batches(enc, chunk, 2)
    assert [len(b) for b in cut] == enc.batch_sizes([chunk[i] for i in enc.batch_order(chunk)], 2)
    assert [len(b) for b in cut] == [s[0] for s in shapes] and max(len(b) for b in cut) > 2
    per_batch, _ = embed_texts(enc, texts, None, batch_size=2)
    assert np.array_equal(per_batch[order], one_call)


def test_the_engine_tokenizes_each_text_once(open_clip_models: dict[str, Any]) -> None:
    """The engine counts a chunk's tokens, then encodes it one batch per call: the token rows
    of the count are the ones each call encodes (one tokenizer pass per text), and the vectors
    are those of one `encode` call; nothing is kept once the chunk is encoded."""
    from lexsem.engine.embed import embed_texts

    enc = _encoder("lexsem-trim-argmax", open_clip_models)
    texts = [*TEXTS, "a red cube", "the blue ball", "two dogs", "a photo of a cat on a mat"]
    one_call = enc.encode(texts, batch_size=2)
    seen: list[str] = []
    tokenizer = enc.tokenizer

    def counting(batch: list[str]) -> Any:
        seen.extend(batch)
        return tokenizer(batch)

    enc._tokenizer = counting
    per_batch, _ = embed_texts(enc, texts, None, batch_size=2)
    assert sorted(seen) == sorted(enc.spec.format_text(t) for t in texts)
    assert np.array_equal(per_batch, one_call)
    assert enc._token_memo == {}


def test_a_bf16_open_clip_tower_trims_too(open_clip_models: dict[str, Any]) -> None:
    """open_clip's bf16 converts the blocks' weights and leaves the positional embedding in
    fp32: the trimmed run is checked against the full width at bf16's rounding, not fp32's
    (else every bf16 batch would run the full 77-token context)."""
    arch = "lexsem-trim-argmax"
    spec = f"openclip:{arch}@{open_clip_models[arch].ckpt}?quick_gelu=false&dtype=bf16"
    enc = OpenClipEncoder(spec, device="cpu")
    got, shapes = _shapes(enc, TEXTS[:2], batch_size=2)
    model = enc._ensure_loaded()
    assert model.positional_embedding.dtype == torch.float32  # what open_clip's bf16 leaves
    assert enc.trims_padding
    tokens = open_clip_models[arch].tokenizer(TEXTS[:2])
    widths = ((tokens == 49407).int().argmax(1) + 1).tolist()
    assert [tuple(x) for x in shapes] == [(2, max(widths))]
    with torch.inference_mode():
        want = model.encode_text(tokens).float().numpy()  # open_clip's own, in bf16, 77 wide
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    np.testing.assert_allclose(unit(got), unit(want), rtol=0, atol=5e-2)


def test_pooled_index_is_the_end_of_text_token(open_clip_models: dict[str, Any]) -> None:
    m = open_clip_models["lexsem-trim-argmax"]
    tower = causal_text_tower(m.model)
    assert tower is not None
    tokens = m.tokenizer(["a cat", "", "a small red dog"])
    eot = [row.tolist().index(49407) for row in tokens]
    assert tower.pool_index(tokens).tolist() == eot == [3, 1, 5]


def test_bidirectional_open_clip_tower_keeps_the_full_width(
    open_clip_models: dict[str, Any],
) -> None:
    arch = "lexsem-trim-bidir"
    m = open_clip_models[arch]
    assert causal_text_tower(m.model) is None
    enc = _encoder(arch, open_clip_models)
    got, shapes = _shapes(enc, TEXTS, batch_size=2)
    assert not enc.trims_padding and [tuple(x) for x in shapes] == [(2, 77)] * 3
    want = _full_width(arch, open_clip_models, TEXTS)
    _assert_same(got, want)
    # trimming would change its embeddings: the tower attends to the padding too
    short = TEXTS[:2]
    tokens = m.tokenizer(short)
    width = int((tokens != 0).sum(1).max())
    with torch.no_grad():
        trimmed = m.model.encode_text(tokens[:, :width]).numpy()
    assert np.abs(trimmed - want[:2]).max() > 1e-3


def test_a_tower_that_is_not_causal_is_refused(open_clip_models: dict[str, Any]) -> None:
    """The structural check reads the mask itself, not only its presence."""
    model = open_clip_models["lexsem-trim-argmax"].model
    real = model.attn_mask
    try:
        model.attn_mask = torch.zeros_like(real)  # attends everywhere: not causal
        assert causal_text_tower(model) is None
    finally:
        model.attn_mask = real
    assert causal_text_tower(model) is not None


def test_the_probe_refuses_a_tower_that_trims_wrongly(
    open_clip_models: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tower the structural check accepts but whose trimmed run differs (here: pooled at the
    first padding token) is caught on the probe batch: the encoder runs the full width."""
    from dataclasses import replace

    from lexsem.models.backends.openclip import encoder

    real = encoder.causal_text_tower
    monkeypatch.setattr(
        encoder, "causal_text_tower", lambda m: replace(real(m), pool_type="eos", eos_id=0)
    )
    arch = "lexsem-trim-argmax"
    enc = _encoder(arch, open_clip_models)
    got, shapes = _shapes(enc, TEXTS, batch_size=2)
    assert not enc.trims_padding and [tuple(x) for x in shapes] == [(2, 77)] * 3
    _assert_same(got, _full_width(arch, open_clip_models, TEXTS))


# -- transformers: CLIP trims (pads to each batch's longest text), SigLIP does not ------------
@pytest.fixture(scope="module")
def hf_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("trim-hf")
    return {"clip": write_clip(root / "clip"), "siglip": write_siglip(root / "siglip")}


def _direct(family: str, folder: Path, texts: list[str], padding: Any) -> np.ndarray:
    """transformers' text features with the family's preprocessing and the given padding."""
    model_cls = T.CLIPModel if family == "clip" else T.SiglipModel
    model = model_cls.from_pretrained(str(folder)).eval()
    limit = len(direct_tokens(family, folder, [TEXTS[-1]])["input_ids"][0])
    tok = T.AutoTokenizer.from_pretrained(str(folder))
    tok.padding_side = "right"
    texts = [t.lower() for t in texts] if family == "siglip" else texts
    enc = tok(texts, padding=padding, truncation=True, max_length=limit, return_tensors="pt")
    inputs = {"input_ids": enc["input_ids"]}
    if family == "clip":
        inputs["attention_mask"] = enc["attention_mask"]
    with torch.no_grad():
        out = model.get_text_features(**inputs)
    return (out if isinstance(out, torch.Tensor) else out.pooler_output).numpy()


def test_clip_padding_to_the_longest_text_equals_the_full_width(
    hf_models: dict[str, Path],
) -> None:
    folder = hf_models["clip"]
    enc = load_text_encoder(f"clip:{folder}", device="cpu")
    got = enc.encode(TEXTS, batch_size=2)
    assert enc.family.padding == "longest"
    full = _direct("clip", folder, TEXTS, "max_length")
    _assert_same(got, full)
    # the batches the encoder ran were narrower than the full width
    order = enc.batch_order(TEXTS)
    widths = [
        enc.tokenize(enc.format_texts([TEXTS[i] for i in order[s : s + 2]]))["input_ids"].shape[1]
        for s in range(0, len(TEXTS), 2)
    ]
    assert widths[0] == enc.text_length and widths[-1] < enc.text_length


def test_siglip_would_differ_if_trimmed(hf_models: dict[str, Path]) -> None:
    folder = hf_models["siglip"]
    enc = load_text_encoder(f"clip:{folder}", device="cpu")
    got = enc.encode(TEXTS, batch_size=2)
    assert enc.family.padding == "max_length"
    _assert_same(got, _direct("siglip", folder, TEXTS, "max_length"))
    short = ["a cat", "the cat", "a red ball"]
    trimmed = _direct("siglip", folder, short, True)  # padded to the longest text only
    assert trimmed.shape == (3, got.shape[1])
    assert np.abs(trimmed - enc.encode(short)).max() > 1e-3
