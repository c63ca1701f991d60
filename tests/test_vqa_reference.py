"""`vqa:` (score `vqa`) and `vgpt:...?score=t2v` against the VQAScore reference (t2v_metrics 3.0)
per item, on tiny random models of each family the reference covers.

Two kinds of oracle:

- the reference's own code (`t2v_metrics/models/vqascore_models/qwen2vl_model.py`'s
  `Qwen2VLModel.forward`, with `qwen_vl_utils`), run on the tiny model where it can be: the
  `t2v-metrics` wheel installed with `--no-deps` into a folder outside the venv
  (`builders.t2v_reference`); in CI its absence fails, elsewhere it skips
  (`tests/test_vqa_reference_code.py` runs the reference's own CLIP-FlanT5 and LLaVA code);
- the reference's formula re-implemented here from its source, for the families whose model
  classes load their own model code from hub ids (LLaVA-1.5 / 1.6 with LLaVA's repository code,
  InstructBLIP with LAVIS) or need packages the tests lack (LLaVA-OneVision: LLaVA-NeXT's
  repository; PaliGemma: decord), and for Qwen2-VL / Qwen2.5-VL as the twin of the own-code
  test, which runs without the reference: the reference's prompt string, its image step, the answer
  with its end token labelled, `CrossEntropyLoss(reduction='none')` averaged over the label
  tokens and exp(-loss); or greedy `generate(max_new_tokens=1, output_scores=True)` and
  softmax of its first scores.

The LLaVA label span is the answer's tokens and `</s>`: the reference finds it as the prompt's
token count less one (SentencePiece's token for the prompt's trailing space), which is that
span for LLaVA's Llama tokenizer; the tiny word-level tokenizers have no such token, so the
span is counted here from the texts.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from builders.numeric import assert_close_to_reference
from builders.t2v_reference import QWEN_VL_UTILS, T2V, reference_module, require_t2v_site
from builders.tiny_llava import write_tiny_llava
from builders.tiny_vlms_dynamic import (
    write_tiny_llava_next,
    write_tiny_llava_onevision,
    write_tiny_qwen2_5_vl,
    write_tiny_qwen2_vl,
)
from builders.tiny_vlms_other import write_tiny_instructblip_t5, write_tiny_paligemma

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

SYSTEM = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)
TEXTS = ["a dog runs", "a cat sleeps", "a dog sleeps"]
CAPTIONS = ["a dog runs on the bed", "a red cat sleeps"]


def images() -> list[Image.Image]:
    """Three images of different shapes (wide, tall, square)."""
    rng = np.random.default_rng(7)
    sizes = [(40, 28), (30, 44), (36, 36)]
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in sizes]


def lexsem_scores(spec: str, ims: list[Image.Image], texts: list[str]) -> np.ndarray:
    from lexsem.models.factory import load_model
    from lexsem.models.protocols import ImageRows

    rows = [(im, t) for im in ims for t in texts]  # every caption with every image
    return load_model(spec, device="cpu").score(ImageRows([r[0] for r in rows]),
                                                [r[1] for r in rows])  # fmt: skip


def load(folder: Path) -> tuple[Any, Any]:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    proc = AutoProcessor.from_pretrained(folder, local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(folder, local_files_only=True).eval()
    return model, proc


# -- the reference's steps, re-implemented from its source ------------------------------------


def expand2square(image: Image.Image, mean: Any) -> Image.Image:
    """t2v_metrics mm_utils.expand2square with `tuple(int(x*255) for x in image_mean)`."""
    w, h = image.size
    if w == h:
        return image
    side = max(w, h)
    out = Image.new(image.mode, (side, side), tuple(int(x * 255) for x in mean))
    out.paste(image, (0, (side - h) // 2) if w > h else ((side - w) // 2, 0))
    return out


def teacher_forced(model: Any, enc: Any, n_label: int) -> float:
    """exp(-mean cross-entropy) over the sequence's last `n_label` tokens (one row)."""
    with torch.no_grad():
        logits = model(**enc).logits[0].float()
    labels = enc["input_ids"][0].clone()
    labels[: len(labels) - n_label] = -100
    ce = torch.nn.CrossEntropyLoss(reduction="none")(logits[:-1], labels[1:])
    keep = labels[1:] != -100
    return float(torch.exp(-ce[keep].mean()))


def llava_reference(folder: Path, image: Image.Image, question: str, answer: str) -> float:
    """LLaVA-1.5 / 1.6 (llava_model.py, llava16_model.py): `SYSTEM_MSG USER: <image>\\n{q}
    ASSISTANT: ` + `{answer}</s>`, the image padded to a square, exp(-mean CE) over the answer
    and `</s>`."""
    model, proc = load(folder)
    prompt = SYSTEM + " USER: <image>\n" + question + " ASSISTANT: "
    full = prompt + answer + "</s>"
    tok = proc.tokenizer
    n_label = len(tok(full)["input_ids"]) - len(tok(prompt)["input_ids"])
    padded = expand2square(image, proc.image_processor.image_mean)
    enc = proc(text=full, images=padded, return_tensors="pt")
    return teacher_forced(model, enc, n_label)


def instructblip_reference(folder: Path, image: Image.Image, question: str, answer: str) -> float:
    """InstructBLIP-Flan-T5 (instructblip_model.py): the torchvision transform (Resize(size,
    BICUBIC), CenterCrop, ToTensor, Normalize with CLIP's mean / std), the question to the
    Q-Former and the encoder, the answer with T5's `</s>` as labels, exp(-mean CE)."""
    from torchvision import transforms

    model, proc = load(folder)
    size = proc.image_processor.size["height"]
    tf = transforms.Compose([
        transforms.Resize(size, interpolation=transforms.InterpolationMode.BICUBIC),
        transforms.CenterCrop((size, size)), transforms.ToTensor(),
        transforms.Normalize((0.48145466, 0.4578275, 0.40821073),
                             (0.26862954, 0.26130258, 0.27577711)),
    ])  # fmt: skip
    enc = proc(images=image, text=question, return_tensors="pt")
    enc["pixel_values"] = tf(image)[None]
    labels = proc.tokenizer(answer, return_tensors="pt")["input_ids"]  # `yes</s>`
    assert labels[0, -1].item() == proc.tokenizer.eos_token_id
    with torch.no_grad():
        logits = model(**enc, labels=labels).logits[0].float()
    ce = torch.nn.CrossEntropyLoss(reduction="none")(logits, labels[0])
    return float(torch.exp(-ce.mean()))


def first_token_reference(model: Any, proc: Any, enc: Any, answer: str) -> float:
    """Greedy `generate(max_new_tokens=1, output_scores=True)`: softmax(scores[0])[answer's
    first token]."""
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=1, do_sample=False, output_scores=True,
                             return_dict_in_generate=True)  # fmt: skip
    first = proc.tokenizer(answer, add_special_tokens=False)["input_ids"][0]
    return float(torch.softmax(out.scores[0].float(), dim=-1)[0, first])


def onevision_reference(folder: Path, image: Image.Image, question: str, answer: str) -> float:
    """LLaVA-OneVision (llavaov_model.py): LLaVA-NeXT's `qwen_1_5` conversation, the first
    generated token's probability."""
    model, proc = load(folder)
    prompt = ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
              f"<image>\n{question}<|im_end|>\n<|im_start|>assistant\n")  # fmt: skip
    enc = proc(text=prompt, images=image, return_tensors="pt")
    return first_token_reference(model, proc, enc, answer)


def paligemma_reference(folder: Path, image: Image.Image, question: str, answer: str) -> float:
    """PaliGemma (paligemma_model.py): the bare question through the processor, the first
    generated token's probability (of the answer's first own token: the reference's
    `encode(answer)[0]` is Gemma's `<bos>`, docs/fidelity.md)."""
    model, proc = load(folder)
    enc = proc(text=question, images=image, return_tensors="pt")
    return first_token_reference(model, proc, enc, answer)


def qwen_resized(image: Image.Image, factor: int = 28) -> Image.Image:
    """qwen_vl_utils 0.0.14 `fetch_image` (patch 14, merge 2): RGB, then resized by PIL's
    default filter to sides that are multiples of `factor`, rounded, with between 4 and 16384
    `factor`-square tokens (scaled up or down, keeping the aspect, when outside)."""
    w, h = image.size
    least, most = 4 * factor**2, 16384 * factor**2
    hb, wb = max(factor, round(h / factor) * factor), max(factor, round(w / factor) * factor)
    if hb * wb > most:
        beta = math.sqrt(h * w / most)
        hb, wb = math.floor(h / beta / factor) * factor, math.floor(w / beta / factor) * factor
    elif hb * wb < least:
        beta = math.sqrt(least / (h * w))
        hb, wb = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return image.convert("RGB").resize((wb, hb))


def qwen_reference(folder: Path, image: Image.Image, question: str, answer: str) -> float:
    """Qwen2-VL / Qwen2.5-VL (qwen2vl_model.py): one user turn [the image, the question]
    through the chat template with the generation prompt, the image as `qwen_resized`, greedy
    `generate(max_new_tokens=1, output_scores=True)` (its scores pass the checkpoint's
    generation config: Qwen2-VL-Instruct's repetition penalty), softmax of the first scores
    at `tokenizer.encode(answer)[0]`."""
    model, proc = load(folder)
    turn = [{"type": "image", "image": image}, {"type": "text", "text": question}]
    text = proc.apply_chat_template([{"role": "user", "content": turn}], tokenize=False,
                                    add_generation_prompt=True)  # fmt: skip
    enc = proc(text=[text], images=[qwen_resized(image)], padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=1, do_sample=False, output_scores=True,
                             return_dict_in_generate=True)  # fmt: skip
    first = proc.tokenizer.encode(answer)[0]
    return float(torch.softmax(out.scores[0].float(), dim=-1)[0, first])


def with_repetition_penalty(build: Any) -> Any:
    """`build`, then the generation config of Qwen2-VL-Instruct's checkpoints: repetition
    penalty 1.05 (which the reference's `generate` applies to the scores it reads)."""

    def write(folder: Path) -> Path:
        from transformers import GenerationConfig

        folder = build(folder)
        config = GenerationConfig.from_pretrained(folder)
        config.repetition_penalty = 1.05
        config.save_pretrained(folder)
        return folder

    return write


FIGURE = 'Does this figure show "{}"? Please answer yes or no.'
FAMILIES = {
    # family: (builder, reference, question template, answer)
    "llava": (write_tiny_llava, llava_reference, FIGURE, "Yes"),
    "llava_next": (write_tiny_llava_next, llava_reference, FIGURE, "Yes"),
    "instructblip_t5": (write_tiny_instructblip_t5, instructblip_reference,
                        "Question: " + FIGURE, "yes"),
    "llava_onevision": (write_tiny_llava_onevision, onevision_reference,
                        'Does this image show "{}"? Answer the question with Yes or No', "Yes"),
    "paligemma": (write_tiny_paligemma, paligemma_reference, FIGURE, "Yes"),
    "qwen2_vl": (with_repetition_penalty(write_tiny_qwen2_vl), qwen_reference,
                 'Does this image show "{}"?', "Yes"),
    "qwen2_5_vl": (with_repetition_penalty(write_tiny_qwen2_5_vl), qwen_reference,
                   'Does this image show "{}"?', "Yes"),
}  # fmt: skip


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("vqaref")
    return {name: build(root / name) for name, (build, *_) in FAMILIES.items()}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_vqa_equals_the_reference_formula_per_item(family: str, folders: dict[str, Path]) -> None:
    _, reference, question, answer = FAMILIES[family]
    folder, ims = folders[family], images()
    got = lexsem_scores(f"vqa:{folder}", ims, TEXTS)
    want = [reference(folder, im, question.format(t), answer) for im in ims for t in TEXTS]
    assert_close_to_reference(got, want, rtol=1e-4)
    # lexsem's P(yes) alone is another number (the reference's prompt / end token differ)
    p_yes = lexsem_scores(f"vqa:{folder}?score=p_yes", ims, TEXTS)
    with pytest.raises(AssertionError):
        assert_close_to_reference(p_yes, want, rtol=1e-4)


@pytest.mark.parametrize("family", ["llava", "llava_next", "instructblip_t5"])
def test_vgpt_t2v_equals_the_reference_formula_per_item(
    family: str, folders: dict[str, Path]
) -> None:
    """VGPTScore as t2v_metrics' README computes it (`question_template=""`,
    `answer_template="{}"`): the reference returns exp(-mean CE), lexsem its log."""
    _, reference, _, _ = FAMILIES[family]
    folder, ims = folders[family], images()[:2]
    got = lexsem_scores(f"vgpt:{folder}?score=t2v", ims, CAPTIONS)
    want = [np.log(reference(folder, im, "", c)) for im in ims for c in CAPTIONS]
    assert_close_to_reference(got, want, rtol=1e-4)


def test_vgpt_t2v_refuses_a_family_without_a_teacher_forced_recipe(
    folders: dict[str, Path],
) -> None:
    from lexsem.errors import ModelError

    with pytest.raises(ModelError, match="score=t2v"):
        lexsem_scores(f"vgpt:{folders['paligemma']}?score=t2v", images()[:1], CAPTIONS[:1])


# -- the reference's own code (Qwen2-VL / Qwen2.5-VL) -------------------------------------------


@pytest.mark.parametrize("builder", [write_tiny_qwen2_vl, write_tiny_qwen2_5_vl])
def test_qwen_vqa_equals_the_references_own_code_per_item(
    builder: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Qwen2VLModel.forward` of t2v_metrics on the tiny model (its `load_model` reads hub ids:
    the tiny model and processor are given to it), with a generation config that has Qwen2-VL-
    Instruct's repetition penalty 1.05, against `vqa:`."""
    site = require_t2v_site(T2V, QWEN_VL_UTILS)
    folder = with_repetition_penalty(builder)(tmp_path / "qwen")
    mod = reference_module(site, "qwen2vl_model", monkeypatch)
    ref = object.__new__(mod.Qwen2VLModel)
    ref.model, ref.processor = load(folder)
    ref.device, ref.model_info = "cpu", {"fps": 8.0}
    assert ref.model.generation_config.repetition_penalty == 1.05
    ims = images()
    paths = []
    for k, im in enumerate(ims):
        paths.append(str(tmp_path / f"{k}.png"))
        im.save(paths[-1])
    got = lexsem_scores(f"vqa:{folder}", ims, TEXTS)
    want = ref.forward([p for p in paths for _ in TEXTS], [t for _ in paths for t in TEXTS])
    assert_close_to_reference(got, want.numpy(), rtol=1e-4)
    shutil.rmtree(folder)
