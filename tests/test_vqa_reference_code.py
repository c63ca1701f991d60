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
