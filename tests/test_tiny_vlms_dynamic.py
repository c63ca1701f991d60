"""The tiny dynamic-resolution VLMs of tiny_vlms_dynamic.py: each folder loads through the Auto
classes as its real family, two images of different sizes give different numbers of image
tokens, the chat template ends where the answer starts, and the direct teacher-forced reference
gives finite log-probabilities. Then what each key the processor returns does in the forward
pass: the Qwen2.5-VL trap (leave out `mm_token_type_ids` and the log-probabilities silently
change) and its louder cousins."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from builders import tiny_vlms_dynamic as tv
from builders.backends import require_module
from builders.numeric import assert_close_to_reference

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

QUESTION = 'Does this figure show "a dog runs"? Please answer yes or no.'
REQUIRED_WORDS = [
    "a", "dog", "cat", "runs", "sleeps", "on", "the", "bed", "red", "blue", "photo", "of", "Does",
    "this", "figure", "show", "Please", "answer", "yes", "no", "Yes", "No", "Describe", "image",
    ".", "?", '"',
]  # fmt: skip

# family: (model class, processor class, image tokens for a 32x40 and a 64x48 image (W x H),
# the end of the generation prompt)
EXPECTED = {
    "llava_next": ("LlavaNextForConditionalGeneration", "LlavaNextProcessor", (39, 37), " [/INST]"),
    "llava_onevision": (
        "LlavaOnevisionForConditionalGeneration", "LlavaOnevisionProcessor", (34, 32),
        "<|im_start|>assistant\n",
    ),
    "qwen2_vl": (
        "Qwen2VLForConditionalGeneration", "Qwen2VLProcessor", (20, 15), "<|im_start|>assistant\n",
    ),
    "qwen2_5_vl": (
        "Qwen2_5_VLForConditionalGeneration", "Qwen2_5_VLProcessor", (20, 15),
        "<|im_start|>assistant\n",
    ),
    "qwen3_vl": (
        "Qwen3VLForConditionalGeneration", "Qwen3VLProcessor", (20, 15), "<|im_start|>assistant\n",
    ),
    "idefics3": (
        "Idefics3ForConditionalGeneration", "Idefics3Processor", (68, 52),
        "<end_of_utterance>\nAssistant:",
    ),
    "smolvlm": (
        "SmolVLMForConditionalGeneration", "SmolVLMProcessor", (68, 52),
        "<end_of_utterance>\nAssistant:",
    ),
}  # fmt: skip


def image(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def prompt_of(processor, question: str = QUESTION) -> str:
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
    return processor.apply_chat_template(msgs, add_generation_prompt=True)


@pytest.fixture(scope="module", params=list(tv.FACTORIES))
def family(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    name = request.param
    if name == "smolvlm":
        require_module("num2words")  # SmolVLMProcessor refuses to start without it
    folder = tv.FACTORIES[name](tmp_path_factory.mktemp(name) / f"tiny-{name}")
    return name, folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The families the trap tests need, built once."""
    root = tmp_path_factory.mktemp("traps")
    names = ["qwen2_vl", "qwen2_5_vl", "qwen3_vl", "llava_next", "llava_onevision", "idefics3"]
    return {n: tv.FACTORIES[n](root / n) for n in names}


def test_loads_as_the_real_family_and_is_tiny(family) -> None:
    name, folder = family
    processor, model = tv.load(folder)
    model_cls, proc_cls, _, _ = EXPECTED[name]
    assert type(model).__name__ == model_cls
    assert type(processor).__name__ == proc_cls
    assert sum(p.numel() for p in model.parameters()) < 200_000
    tok = processor.tokenizer
    assert tok.pad_token is not None and tok.pad_token_id is not None
    unknown = [w for w in REQUIRED_WORDS if tok.convert_tokens_to_ids(w) == tok.unk_token_id]
    assert not unknown


def test_dynamic_resolution_and_chat_template(family) -> None:
    name, folder = family
    processor, _ = tv.load(folder)
    prompt = prompt_of(processor)
    *_, expected_tokens, ending = EXPECTED[name]
    assert prompt.endswith(ending)
    assert prompt.count(processor.image_token) == 1
    counts = []
    for size in [(32, 40), (64, 48)]:
        enc = processor(text=[prompt], images=[image(*size)], return_tensors="pt")
        counts.append(int((enc["input_ids"] == processor.image_token_id).sum()))
    assert tuple(counts) == expected_tokens
    assert counts[0] != counts[1]


def test_reference_logprobs_are_finite_and_depend_on_the_image(family) -> None:
    _, folder = family
    processor, _ = tv.load(folder)
    prompt = prompt_of(processor)
    first = tv.reference_logprobs(folder, image(32, 40), prompt, "Yes")
    assert first.shape == (1,) and np.all(np.isfinite(first)) and np.all(first < 0)
    longer = tv.reference_logprobs(folder, image(64, 48), prompt, " a red cat sleeps on the bed .")
    assert longer.shape == (8,) and np.all(np.isfinite(longer))
    other = tv.reference_logprobs(folder, image(32, 40, seed=1), prompt, "Yes")
    assert abs(other[0] - first[0]) > 1e-4, "the image does not reach the logits"


def test_batching_two_rows_with_different_images_matches_the_reference(family) -> None:
    """One processor call on two rows of different image sizes (SmolVLM wants the images nested,
    one list per row; the others take a flat list), right or left padding: each row's
    continuation log-probs equal the unbatched reference."""
    name, folder = family
    processor, model = tv.load(folder)
    prompt = prompt_of(processor)
    images = [image(32, 40), image(64, 48)]
    conts = ["Yes", " a red cat sleeps on the bed ."]
    pairs = list(zip(images, conts, strict=True))
    refs = [tv.reference_logprobs(folder, im, prompt, c) for im, c in pairs]
    heads = [len(processor(text=[prompt], images=[im])["input_ids"][0]) for im in images]
    batch_images = [[im] for im in images] if name == "smolvlm" else images
    for side in ("right", "left"):
        processor.tokenizer.padding_side = side
        enc = processor(
            text=[prompt + c for c in conts], images=batch_images, padding=True,
            return_tensors="pt",
        )  # fmt: skip
        with torch.no_grad():
            logp = torch.log_softmax(model(**enc).logits.double(), dim=-1)
        width = enc["input_ids"].shape[1]
        for row, (n, ref) in enumerate(zip(heads, refs, strict=True)):
            length = int(enc["attention_mask"][row].sum())
            off = width - length if side == "left" else 0
            ids = enc["input_ids"][row]
            got = [logp[row, off + t - 1, ids[off + t]].item() for t in range(n, length)]
            assert_close_to_reference(got, ref, scale=1.0, err_msg=f"{side} padding")


# --- What each key the processor returns does in the forward pass (transformers 5.x) -----------


def _prompt(folder: Path) -> str:
    processor, _ = tv.load(folder)
    return prompt_of(processor)


def test_qwen2_5_vl_silently_changes_without_mm_token_type_ids(folders) -> None:
    """The trap: Qwen2.5-VL's model, given `image_grid_thw` but no `mm_token_type_ids`, does not
    complain; it cannot build the 3D M-RoPE positions (its `compute_3d_position_ids` needs the
    token types) and falls back to plain 1D positions, so the log-probs change silently.
    A scorer must pass every key the processor returns."""
    folder = folders["qwen2_5_vl"]
    prompt = _prompt(folder)
    full = tv.reference_logprobs(folder, image(32, 40), prompt, "Yes No")
    dropped = tv.reference_logprobs(
        folder, image(32, 40), prompt, "Yes No", drop=("mm_token_type_ids",)
    )
    assert np.all(np.isfinite(dropped))
    assert np.abs(full - dropped).max() > 1e-3


@pytest.mark.parametrize("name", ["qwen2_vl", "qwen3_vl"])
def test_qwen2_vl_and_qwen3_vl_refuse_to_run_without_mm_token_type_ids(folders, name) -> None:
    """Qwen2-VL and Qwen3-VL check it: multimodal input without `mm_token_type_ids` raises."""
    folder = folders[name]
    with pytest.raises(ValueError, match="mm_token_type_ids"):
        tv.reference_logprobs(
            folder, image(32, 40), _prompt(folder), "Yes", drop=("mm_token_type_ids",)
        )


@pytest.mark.parametrize("name", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_qwen_without_image_grid_thw_fails(folders, name) -> None:
    """Without `image_grid_thw` the vision tower cannot run: an error, never a silent change."""
    folder = folders[name]
    with pytest.raises(Exception):  # noqa: B017 (an AttributeError deep in the vision tower)
        tv.reference_logprobs(
            folder, image(32, 40), _prompt(folder), "Yes", drop=("image_grid_thw",)
        )


@pytest.mark.parametrize("name", ["llava_next", "llava_onevision"])
def test_llava_next_and_onevision_without_image_sizes_fail(folders, name) -> None:
    """LLaVA-NeXT / OneVision: without `image_sizes` the anyres unpadding cannot run and the
    forward pass raises (a TypeError); it is never computed from the pixels."""
    folder = folders[name]
    with pytest.raises(TypeError):
        tv.reference_logprobs(folder, image(32, 40), _prompt(folder), "Yes", drop=("image_sizes",))


@pytest.mark.parametrize(
    ("name", "key"), [("llava_onevision", "batch_num_images"), ("idefics3", "pixel_attention_mask")]
)
def test_keys_without_effect_on_a_single_image(folders, name, key) -> None:
    """OneVision's `batch_num_images` and Idefics3's `pixel_attention_mask` (its tiles are never
    padded inside, and padded tiles are all-zero pixels, which the model drops) do not change
    the log-probs; pass them anyway."""
    folder = folders[name]
    prompt = _prompt(folder)
    full = tv.reference_logprobs(folder, image(32, 40), prompt, "Yes No")
    dropped = tv.reference_logprobs(folder, image(32, 40), prompt, "Yes No", drop=(key,))
    np.testing.assert_array_equal(full, dropped)
