"""`vqa:FOLDER` (its default `score=vqa`, the recipe table `lexsem.models.vlm.reference`) equals
the VQAScore reference's own code per item for the checkpoints in the LLaVA code base's own
format: CLIP-FlanT5 and ShareGPT4V ("Evaluating Text-to-Visual Generation with Image-to-Text
Generation", §3; "ShareGPT4V: Improving Large Multi-Modal Models with Better Captions", §4).

The oracle is t2v_metrics 3.0's own classes (`builders.t2v_reference`: in CI their absence
fails, elsewhere it skips): `clip_t5_model.py`'s `CLIPT5Model` and `llava_model.py`'s
`LLaVAModel` (their model table, conversation, `load_images` with `mm_utils.expand2square`,
`t5_tokenizer_image_token` / `tokenizer_image_token`, padding of the batch, labels and
`forward`), on the model classes of `clip_t5/` and `llava/` (`CLIPT5ForConditionalGeneration`,
`LlavaLlamaForCausalLM`), run on the tiny checkpoints of `builders.tiny_original_vlms`.

Only `mm_utils.load_pretrained_model` is replaced, by its own steps on the tiny folder: the
reference's model table names hub ids, and transformers 5 refuses these classes' nested
`from_pretrained` (their vision tower loads inside it), so each class is built from the
folder's config and the checkpoint's tensors are loaded into it (the tower's keys under
transformers 5's `CLIPVisionModel` names; every key not loaded is checked to be one the
reference does not read either). Two more differences from that function, both outside the
computation compared: the model stays in fp32 (the reference casts to bf16 for CUDA), and the
tower's image processor is transformers' PIL `CLIPImageProcessor` (what the reference's pinned
transformers 4.49 loads; transformers 5's default class resizes with torchvision).

Its twin, which always runs, is that procedure re-implemented here from the reference's source
(`reference_procedure`) on the modules the builder saved (the language model, the CLIP tower,
the projector): the batch as `forward` builds it (each prompt's chunks around `<image>`
tokenized on their own, the rows padded with the tokenizer's pad token, LLaVA's being its
`<unk>`, the attention mask `ids != pad`, labels padded with -100), the image features spliced
in where the placeholder is (layer -2's patch tokens through the projector) with the mask
extended on the left, then CLIP-FlanT5's encoder-decoder on the labels `Yes</s>` or LLaVA's
causal model on the prompt and `Yes</s>` (the labels from the prompt's token count less one,
for its trailing space), and per row exp(-mean cross-entropy) over the labelled tokens.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from builders import tiny_original_vlms as T
from builders.backends import optional_import
from builders.numeric import FP32_RTOL, assert_close_to_reference
from builders.t2v_reference import reference_module, require_t2v_site

torch = optional_import("torch")

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

# family: (builder, the reference's module, its class, the model table's entry)
FAMILIES = {
    "clip_t5": (T.write_clip_t5, "clip_t5_model", "CLIPT5Model", "clip-flant5-xxl"),
    "sharegpt4v": (T.write_sharegpt4v, "llava_model", "LLaVAModel", "sharegpt4v-7b"),
}
# the keys of a checkpoint the reference's model does not read: the rotary buffers older
# transformers saved, and ShareGPT4V's copy of its tower (the reference builds the tower late,
# from `mm_vision_tower`)
NOT_READ = ("rotary_emb.inv_freq", "model.vision_tower.vision_tower.")
# the T5 embeddings' aliases of `shared` (tied: loading `shared` sets them)
TIED = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}


def pictures() -> list[Image.Image]:
    """A wide, a tall and a square image: the square padding is exercised."""
    rng = np.random.default_rng(11)
    sizes = ((40, 24), (20, 36), (28, 28))
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in sizes]


def fp32_loader(folder: Path) -> Any:
    """A stand-in for `mm_utils.load_pretrained_model` with its steps, on `folder` (the hub ids
    the reference's model table passes are not read), in fp32 (see the module doc)."""
    from transformers import AutoTokenizer
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    def load(model_cls: Any, model_args: Any, **kw: Any) -> tuple[Any, Any, Any]:
        assert kw.get("mmprojector_repo") is None  # the table's CLIP-FlanT5 / ShareGPT4V entries
        options = {k: kw.get(k) for k in ("model_max_length", "padding_side")}
        tokenizer = AutoTokenizer.from_pretrained(
            str(folder), use_fast=False, **{k: v for k, v in options.items() if v}
        )
        model = model_cls(model_cls.config_class.from_pretrained(str(folder)))
        state: dict[str, Any] = {}
        for f in sorted(glob.glob(str(folder / "pytorch_model-*.bin"))):
            state.update(torch.load(f, weights_only=True))
        renamed = {k.replace("vision_tower.vision_model.", "vision_tower."): v
                   for k, v in state.items()}  # fmt: skip
        missing, unread = model.load_state_dict(renamed, strict=False)
        assert set(missing) <= TIED, missing
        assert all(any(m in k for m in NOT_READ) for k in unread), unread
        model.resize_token_embeddings(len(tokenizer))
        tower = model.get_vision_tower()
        if not tower.is_loaded:
            tower.load_model()
        tower.image_processor = CLIPImageProcessorPil.from_pretrained(tower.vision_tower_name)
        model.to(device=kw.get("device", "cuda"))
        model.requires_grad_(False)
        model.config.image_aspect_ratio = kw.get("image_aspect_ratio", "pad")
        model.config.use_cache = False
        return tokenizer, model.eval(), tower.image_processor

    return load


@pytest.mark.parametrize("family", list(FAMILIES))
def test_vqa_equals_the_references_own_code_per_item(
    family: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = require_t2v_site()
    build, module, cls, entry = FAMILIES[family]
    tiny = build(tmp_path / entry)
    mod = reference_module(site, module, monkeypatch)
    monkeypatch.setattr(mod, "load_pretrained_model", fp32_loader(tiny.folder))
    ref = getattr(mod, cls)(entry, device="cpu", cache_dir=str(tmp_path / "cache"))
    ims = pictures()
    paths = []
    for k, im in enumerate(ims):
        paths.append(str(tmp_path / f"{k}.png"))
        im.save(paths[-1])
    pairs = [(k, t) for k in range(len(ims)) for t in T.CAPTIONS]
    want = ref.forward([paths[k] for k, _ in pairs], [t for _, t in pairs]).numpy()

    from lexsem.models.factory import load_model

    images, texts = [ims[k] for k, _ in pairs], [t for _, t in pairs]
    got = load_model(f"vqa:{tiny.folder}", device="cpu").score(images, texts)
    assert_close_to_reference(got, want, rtol=FP32_RTOL)
    assert len(set(np.round(want, 9))) == len(want)  # the scores tell the pairs apart
    # lexsem's own P(Yes) (no system message, no end token, no padding) is another number
    p_yes = load_model(f"vqa:{tiny.folder}?score=p_yes", device="cpu").score(images, texts)
    with pytest.raises(AssertionError):
        assert_close_to_reference(p_yes, want, rtol=FP32_RTOL)


# -- the twin: the reference's procedure, re-implemented from its source ----------------------

IMAGE_TOKEN_INDEX, IGNORE_INDEX = -200, -100  # t2v_metrics constants.py


def padded_square(image: Image.Image, mean: Any) -> Image.Image:
    """`mm_utils.expand2square` with the colour `load_images` gives it: the image centred on a
    square of the processor's mean colour."""
    w, h = image.size
    if w == h:
        return image
    side = max(w, h)
    out = Image.new(image.mode, (side, side), tuple(int(x * 255) for x in mean))
    out.paste(image, (0, (side - h) // 2) if w > h else ((side - w) // 2, 0))
    return out


def image_features(tiny: T.Tiny, images: list[Image.Image]) -> Any:
    """`load_images` (padding to a square, the tower's PIL CLIP processor), then the tower's
    layer -2 without its class token, through the projector: one row of features per image."""
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    proc = CLIPImageProcessorPil.from_pretrained(str(tiny.tower))
    squares = [padded_square(im.convert("RGB"), proc.image_mean) for im in images]
    pixels = torch.stack([proc(images=[sq], return_tensors="pt")["pixel_values"][0]
                          for sq in squares])  # fmt: skip
    with torch.no_grad():
        hidden = tiny.vision(pixels, output_hidden_states=True).hidden_states[-2][:, 1:]
        return tiny.projector(hidden)


def with_image_token(prompt: str, tok: Any, keep_bos: bool) -> list[int]:
    """`t5_tokenizer_image_token` (keep_bos False: every chunk's ids as they come) or
    `tokenizer_image_token` (keep_bos True: a leading begin-of-text token once, stripped from
    the later chunks): the chunks around `<image>` tokenized on their own, the placeholder
    between them."""
    chunks = [tok(c).input_ids for c in prompt.split("<image>")]
    bos = keep_bos and bool(chunks[0]) and chunks[0][0] == tok.bos_token_id
    ids: list[int] = [chunks[0][0]] if bos else []
    for k, chunk in enumerate(chunks):
        if k:
            ids.append(IMAGE_TOKEN_INDEX)
        ids.extend(chunk[1:] if bos else chunk)
    return ids


def batch(rows: list[list[int]], pad: int) -> Any:
    """`torch.nn.utils.rnn.pad_sequence(batch_first=True)` by hand: right-padded rows."""
    width = max(len(r) for r in rows)
    return torch.tensor([r + [pad] * (width - len(r)) for r in rows])


def spliced(ids: Any, mask: Any, table: Any, features: Any) -> tuple[Any, Any, Any]:
    """`prepare_inputs_labels_for_multimodal` for one image per row: each row's placeholder
    replaced by its image's features, the mask extended on the left by the rows' growth (the
    rows are padded before, so they stay one length); also where each row's image begins."""
    rows, starts = [], []
    with torch.no_grad():
        for row, feats in zip(ids, features, strict=True):
            k = int((row == IMAGE_TOKEN_INDEX).nonzero()[0, 0])
            starts.append(k)
            rows.append(torch.cat([table(row[:k]), feats, table(row[k + 1 :])]))
    embeds = torch.stack(rows)
    grown = embeds.shape[1] - ids.shape[1]
    return embeds, torch.cat([torch.ones(len(rows), grown, dtype=torch.bool), mask], 1), starts


def exp_minus_mean_ce(logits: Any, labels: Any) -> np.ndarray:
    """Per row, exp(-CrossEntropyLoss(reduction='mean')) over the labels that are not -100."""
    ce = torch.nn.CrossEntropyLoss(reduction="mean", ignore_index=IGNORE_INDEX)
    rows = zip(logits, labels, strict=True)
    return np.array([float((-ce(lg.float(), lb)).exp()) for lg, lb in rows])


def clip_t5_procedure(tiny: T.Tiny, tok: Any, images: list[Image.Image], texts: list[str]) -> Any:
    """`CLIPT5Model.forward` (conversation `t5_chat`): the question through the encoder, the
    answer `Yes` (the T5 tokenizer appends `</s>`) as the decoder's labels."""
    questions = [T.SYSTEM + " USER: <image>\n" + T.QUESTION.format(t) + " ASSISTANT: "
                 for t in texts]  # fmt: skip
    ids = batch([with_image_token(q, tok, keep_bos=False) for q in questions], tok.pad_token_id)
    labels = batch([tok("Yes").input_ids for _ in texts], IGNORE_INDEX)
    embeds, mask, _ = spliced(ids, ids != tok.pad_token_id, tiny.lm.shared,
                              image_features(tiny, images))  # fmt: skip
    with torch.no_grad():
        logits = tiny.lm(inputs_embeds=embeds, attention_mask=mask, labels=labels,
                         decoder_attention_mask=labels != IGNORE_INDEX).logits  # fmt: skip
    return exp_minus_mean_ce(logits, labels)


def llava_procedure(tiny: T.Tiny, tok: Any, images: list[Image.Image], texts: list[str]) -> Any:
    """`LLaVAModel.forward` (conversation `chat`): the prompt and `Yes</s>` through the causal
    model, the labels the tokens from the prompt's count less one on, padded with `<unk>`
    (the reference's pad token), the image's positions unlabelled, logits and labels shifted."""
    questions = [T.SYSTEM + " USER: <image>\n" + T.QUESTION.format(t) + " ASSISTANT: "
                 for t in texts]  # fmt: skip
    rows = [with_image_token(q + "Yes</s>", tok, keep_bos=True) for q in questions]
    marked = []
    for row, q in zip(rows, questions, strict=True):
        n = len(with_image_token(q, tok, keep_bos=True)) - (1 if q.endswith(" ") else 0)
        marked.append([IGNORE_INDEX] * n + row[n:])
    pad = tok.unk_token_id
    ids, labels = batch(rows, pad), batch(marked, IGNORE_INDEX)
    features = image_features(tiny, images)
    embeds, mask, starts = spliced(ids, ids != pad, tiny.lm.model.embed_tokens, features)
    wide = torch.stack([
        torch.cat([lb[:k], torch.full((features.shape[1],), IGNORE_INDEX), lb[k + 1 :]])
        for lb, k in zip(labels, starts, strict=True)
    ])  # fmt: skip
    with torch.no_grad():
        hidden = tiny.lm.model(inputs_embeds=embeds, attention_mask=mask)[0]
        logits = tiny.lm.lm_head(hidden)
    return exp_minus_mean_ce(logits[:, :-1], wide[:, 1:])


PROCEDURES = {"clip_t5": clip_t5_procedure, "sharegpt4v": llava_procedure}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_vqa_equals_the_references_procedure_per_item(family: str, tmp_path: Path) -> None:
    """The twin of `test_vqa_equals_the_references_own_code_per_item`: the same pairs scored
    by the reference's procedure re-implemented above, in one padded batch."""
    from transformers import PreTrainedTokenizerFast

    from lexsem.models.factory import load_model

    build, _, _, entry = FAMILIES[family]
    tiny = build(tmp_path / entry)
    tok = PreTrainedTokenizerFast.from_pretrained(str(tiny.folder))
    ims = pictures()
    images = [im for im in ims for _ in T.CAPTIONS]
    texts = [t for _ in ims for t in T.CAPTIONS]
    assert len({len(T.QUESTION.format(t).split()) for t in texts}) > 1  # the batch is padded
    want = PROCEDURES[family](tiny, tok, images, texts)
    got = load_model(f"vqa:{tiny.folder}", device="cpu").score(images, texts)
    assert_close_to_reference(got, want, rtol=FP32_RTOL)
    assert len(set(np.round(want, 9))) == len(want)  # the scores tell the pairs apart
    p_yes = load_model(f"vqa:{tiny.folder}?score=p_yes", device="cpu").score(images, texts)
    with pytest.raises(AssertionError):
        assert_close_to_reference(p_yes, want, rtol=FP32_RTOL)
