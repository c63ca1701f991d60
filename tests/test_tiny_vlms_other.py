"""The tiny PaliGemma, Gemma 3, BLIP-2 (OPT, Flan-T5) and InstructBLIP (Llama, Flan-T5) of
`tiny_vlms_other`: they load through the Auto classes, `reference_logprobs` gives finite
per-token log-probabilities, and the traps a scorer of these families must avoid, shown on them:
PaliGemma's prefix-LM attention (token_type_ids, the suffix), Gemma 3's bidirectional image
attention (token_type_ids) and its double BOS, InstructBLIP's Q-Former instruction, and
batched = unbatched with right and left padding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

from builders import tiny_vlms_other as V
from builders.numeric import FINE_RTOL, FP32_RTOL, assert_close_to_reference

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

Q = ['Does this figure show "a dog runs"?', 'Does this figure show "a red cat sleeps on the bed"?']
ANSWERS = ["a dog runs on the bed", "a red cat sleeps"]

CLASSES = {  # family: (processor, model, config.model_type)
    "paligemma": ("PaliGemmaProcessor", "PaliGemmaForConditionalGeneration", "paligemma"),
    "gemma3": ("Gemma3Processor", "Gemma3ForConditionalGeneration", "gemma3"),
    "blip2_opt": ("Blip2Processor", "Blip2ForConditionalGeneration", "blip-2"),
    "blip2_t5": ("Blip2Processor", "Blip2ForConditionalGeneration", "blip-2"),
    "instructblip": ("InstructBlipProcessor", "InstructBlipForConditionalGeneration",
                     "instructblip"),
    "instructblip_t5": ("InstructBlipProcessor", "InstructBlipForConditionalGeneration",
                        "instructblip"),
}  # fmt: skip
KEYS = {
    "paligemma": {"input_ids", "attention_mask", "token_type_ids", "pixel_values", "labels"},
    "gemma3": {"input_ids", "attention_mask", "token_type_ids", "pixel_values"},
    "blip2_opt": {"input_ids", "attention_mask", "pixel_values"},
    "blip2_t5": {"input_ids", "attention_mask", "pixel_values"},
    "instructblip": {"input_ids", "attention_mask", "pixel_values", "qformer_input_ids",
                     "qformer_attention_mask"},
    "instructblip_t5": {"input_ids", "attention_mask", "pixel_values", "qformer_input_ids",
                        "qformer_attention_mask"},
}  # fmt: skip
IMAGE_TOKENS = {"paligemma": ("<image>", 16), "gemma3": ("<image_soft_token>", 4),
                "blip2_opt": ("<image>", 4), "blip2_t5": ("<image>", 4),
                "instructblip": ("<image>", 4), "instructblip_t5": ("<image>", 4)}  # fmt: skip
DECODER_ONLY = ["gemma3", "blip2_opt", "instructblip"]


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    """Tiny models: thread start-up and contention cost more than the work (2x slower)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-vlms")
    return {name: make(root / name) for name, make in V.FACTORIES.items()}


def images() -> list[Image.Image]:
    rng = np.random.default_rng(3)
    return [Image.fromarray(rng.integers(0, 256, (30 + 9 * i, 40, 3), dtype=np.uint8))
            for i in range(2)]  # fmt: skip


def prompt_and_answer(family: str, proc: Any, i: int, answer: str = "yes") -> tuple[str, str]:
    """The natural prompt of each family for question i, and the continuation to score."""
    if family == "paligemma":
        return f"answer en {Q[i]}", answer  # the processor writes `<image><bos>{prefix}\n`
    if family == "gemma3":
        msgs = [{"role": "user",
                 "content": [{"type": "image"}, {"type": "text", "text": Q[i]}]}]  # fmt: skip
        # Gemma 3 answers "Yes" / "No" right after "model\n"
        return proc.apply_chat_template(msgs, add_generation_prompt=True), (
            answer.capitalize() if answer in ("yes", "no") else answer
        )
    return f"Question: {Q[i]} Answer:", " " + answer  # BLIP-2's documented VQA prompt


def no_grad_logits(model: Any, enc: Any) -> torch.Tensor:
    with torch.no_grad():
        return model(**enc).logits


# --- every family ------------------------------------------------------------------------------


@pytest.mark.parametrize("family", list(V.FACTORIES))
def test_loads_through_the_auto_classes_and_is_tiny(folders: dict[str, Path], family: str) -> None:
    proc, model = V.load(folders[family])
    want_proc, want_model, model_type = CLASSES[family]
    assert type(proc).__name__ == want_proc and type(model).__name__ == want_model
    assert model.config.model_type == model_type
    assert sum(p.numel() for p in model.parameters()) < 200_000
    assert proc.tokenizer.pad_token is not None
    vocab = proc.tokenizer.get_vocab()
    assert all(w in vocab for w in V.WORDS)
    # only Gemma 3 ships a chat template, as the real checkpoints
    assert (getattr(proc, "chat_template", None) is not None) == (family == "gemma3")
    prompt, cont = prompt_and_answer(family, proc, 0)
    kw = {"suffix": [cont]} if family == "paligemma" else {}
    enc = proc(text=[prompt], images=[images()[0]], return_tensors="pt", **kw)
    assert set(enc) == KEYS[family]
    token, count = IMAGE_TOKENS[family]
    ids = enc["input_ids"][0].tolist()
    assert ids.count(proc.tokenizer.convert_tokens_to_ids(token)) == count
    assert proc.tokenizer.unk_token_id not in ids
    assert enc["pixel_values"].shape == (1, 3, 32, 32)


@pytest.mark.parametrize("family", list(V.FACTORIES))
def test_reference_logprobs_are_finite_per_token(folders: dict[str, Path], family: str) -> None:
    proc, _ = V.load(folders[family])
    prompt, _ = prompt_and_answer(family, proc, 1)
    _, cont = prompt_and_answer(family, proc, 1, ANSWERS[0])
    got = V.reference_logprobs(folders[family], images()[1], prompt, cont)
    assert got.dtype == np.float64 and got.shape == (len(ANSWERS[0].split()),)
    assert np.isfinite(got).all() and (got < 0).all()
    again = V.reference_logprobs(folders[family], images()[1], prompt, cont)
    np.testing.assert_array_equal(got, again)


def test_special_tokens_of_each_family(folders: dict[str, Path]) -> None:
    """What the tokenizers add, as the real ones: Gemma 3 `<bos>` (and its template one more),
    OPT `</s>` in front, Llama `<s>` in front, T5 `</s>` at the end; BLIP's query tokens go in
    front of all of them; PaliGemma's processor writes `<bos>`, `\\n` and the suffix `<eos>`."""
    im = images()[0]

    def tokens(family: str, text: str, **kw: Any) -> list[str]:
        proc, _ = V.load(folders[family])
        ids = proc(text=[text], images=[im], **kw)["input_ids"][0]
        return proc.tokenizer.convert_ids_to_tokens(ids)

    assert tokens("paligemma", "<image>answer en", suffix=["yes"])[16:] == [
        "<bos>", "answer", "en", "\n", "yes", "<eos>"]  # fmt: skip
    assert tokens("blip2_opt", "a dog") == ["<image>"] * 4 + ["</s>", "a", "dog"]
    assert tokens("instructblip", "a dog") == ["<image>"] * 4 + ["<s>", "a", "dog"]
    assert tokens("blip2_t5", "a dog") == ["<image>"] * 4 + ["a", "dog", "</s>"]
    assert tokens("instructblip_t5", "a dog") == ["<image>"] * 4 + ["a", "dog", "</s>"]
    proc, _ = V.load(folders["instructblip"])
    q = proc(text=["Does a dog"], images=[im])["qformer_input_ids"][0]
    assert proc.qformer_tokenizer.convert_ids_to_tokens(q) == ["[CLS]", "does", "a", "dog", "[SEP]"]
    gemma = tokens("gemma3", "<start_of_image>a dog")
    assert gemma[:3] == ["<bos>", "\n\n", "<start_of_image>"] and gemma[-2:] == ["a", "dog"]


def test_encoder_decoder_labels_are_shifted_behind_the_start_token(
    folders: dict[str, Path],
) -> None:
    """Flan-T5: labels = the continuation's tokens without `</s>`; the decoder reads
    [decoder_start_token_id (= <pad>), labels[:-1]]."""
    for family in ["blip2_t5", "instructblip_t5"]:
        proc, model = V.load(folders[family])
        prompt, cont = prompt_and_answer(family, proc, 0, "a dog runs")
        enc = proc(text=[prompt], images=[images()[0]], return_tensors="pt")
        labels = torch.tensor([proc.tokenizer(cont, add_special_tokens=False)["input_ids"]])
        assert proc.tokenizer.eos_token_id not in labels[0].tolist()
        start = model.config.text_config.decoder_start_token_id
        assert start == proc.tokenizer.pad_token_id == 0
        dec = torch.cat([torch.tensor([[start]]), labels[:, :-1]], dim=1)
        logits = no_grad_logits(model, {**enc, "decoder_input_ids": dec})[0]
        want = torch.log_softmax(logits.double(), -1).gather(1, labels[0][:, None])[:, 0].numpy()
        got = V.reference_logprobs(folders[family], images()[0], prompt, cont)
        np.testing.assert_allclose(got, want, rtol=1e-10)


# --- PaliGemma: a prefix-LM --------------------------------------------------------------------


def paligemma_suffix(folder: Path, cont: str, *, drop_token_types: bool = False, model: Any = None):
    proc, loaded = V.load(folder)
    model = model or loaded
    enc = proc(text=["<image>answer en " + Q[0]], images=[images()[0]], suffix=[cont],
               return_tensors="pt")  # fmt: skip
    enc.pop("labels")
    ids, types = enc["input_ids"][0], enc["token_type_ids"][0]
    if drop_token_types:
        enc.pop("token_type_ids")
    start = int((types == 1).nonzero()[0])
    return V._gather(no_grad_logits(model, enc)[0], ids, start, len(ids) - 1)  # without <eos>


def test_paligemma_scores_the_suffix_without_its_eos_and_causally(folders: dict[str, Path]) -> None:
    folder = folders["paligemma"]
    proc, _ = V.load(folder)
    with_tag = proc(text=["<image>answer en " + Q[0]], images=[images()[0]], suffix=["yes"])
    without = proc(text=["answer en " + Q[0]], images=[images()[0]], suffix=["yes"])
    assert with_tag["input_ids"] == without["input_ids"]  # the processor adds `<image>` itself
    types = with_tag["token_type_ids"][0]
    assert types[-2:] == [1, 1] and sum(types) == 2  # "yes", "<eos>"
    assert with_tag["input_ids"][0][-1] == proc.tokenizer.eos_token_id
    want = paligemma_suffix(folder, "a dog runs")
    np.testing.assert_allclose(V.reference_logprobs(folder, images()[0], "answer en " + Q[0],
                                                    "a dog runs"), want, rtol=1e-12)  # fmt: skip
    # the suffix is causal: its first words' scores do not see the last word
    other = paligemma_suffix(folder, "a dog sleeps")
    assert_close_to_reference(want[:2], other[:2], rtol=FINE_RTOL, scale=1.0)
    assert want[2] != other[2]


def test_paligemma_without_token_type_ids_is_wrong(folders: dict[str, Path]) -> None:
    """Without token_type_ids the prefix-LM mask is not built. With SDPA (the default) the
    mask is None and PaliGemma's text model has is_causal=False (PaliGemmaConfig sets
    use_bidirectional_attention=True): every token attends to the whole sequence, so the
    continuation sees its own future. With eager attention it is plainly causal instead (the
    prefix loses its bidirectional attention). Both differ from the right scores."""
    folder = folders["paligemma"]
    right = paligemma_suffix(folder, "a dog runs")
    sdpa = paligemma_suffix(folder, "a dog runs", drop_token_types=True)
    assert not np.allclose(sdpa, right, rtol=0, atol=1e-6)
    sdpa_other = paligemma_suffix(folder, "a dog sleeps", drop_token_types=True)
    assert not np.allclose(sdpa[:2], sdpa_other[:2], rtol=0, atol=1e-6)  # sees the future
    from transformers import PaliGemmaForConditionalGeneration

    eager = PaliGemmaForConditionalGeneration.from_pretrained(
        folder, attn_implementation="eager", local_files_only=True
    ).eval()
    assert_close_to_reference(paligemma_suffix(folder, "a dog runs", model=eager), right,
                              scale=1.0)  # with token_type_ids eager = SDPA  # fmt: skip
    causal = paligemma_suffix(folder, "a dog runs", drop_token_types=True, model=eager)
    causal_other = paligemma_suffix(folder, "a dog sleeps", drop_token_types=True, model=eager)
    assert not np.allclose(causal, right, rtol=0, atol=1e-6)
    assert_close_to_reference(causal[:2], causal_other[:2], rtol=FINE_RTOL, scale=1.0)  # no future


def test_paligemma_continuation_in_the_prefix_sees_its_future(folders: dict[str, Path]) -> None:
    """processor(text=prompt + " " + continuation) without a suffix: all token_type_ids are 0,
    the continuation is part of the bidirectional prefix (and the `\\n` goes after it)."""
    folder = folders["paligemma"]
    proc, model = V.load(folder)
    n = len(proc(text=["<image>answer en " + Q[0]], images=[images()[0]])["input_ids"][0]) - 1

    def in_prefix(cont: str) -> np.ndarray:
        enc = proc(text=["<image>answer en " + Q[0] + " " + cont], images=[images()[0]],
                   return_tensors="pt")  # fmt: skip
        enc.pop("labels", None)
        assert not enc["token_type_ids"].any()
        ids = enc["input_ids"][0]
        assert proc.tokenizer.convert_ids_to_tokens(ids[-1:]) == ["\n"]
        return V._gather(no_grad_logits(model, enc)[0], ids, n, len(ids) - 1)

    right = paligemma_suffix(folder, "a dog runs")
    wrong, wrong_other = in_prefix("a dog runs"), in_prefix("a dog sleeps")
    assert wrong.shape == right.shape and not np.allclose(wrong, right, rtol=0, atol=1e-6)
    assert not np.allclose(wrong[:2], wrong_other[:2], rtol=0, atol=1e-6)  # sees the future


# --- Gemma 3 -----------------------------------------------------------------------------------


def test_gemma3_token_type_ids_make_image_tokens_bidirectional(folders: dict[str, Path]) -> None:
    """The processor returns token_type_ids (its mm_token_type_ids: 1 on the image soft tokens);
    with them the image tokens attend to each other bidirectionally. Omitted, the attention is
    causal everywhere: the logits up to the first image token are the same, the ones from there
    on (the continuation's included) differ."""
    folder = folders["gemma3"]
    proc, model = V.load(folder)
    prompt, cont = prompt_and_answer("gemma3", proc, 0, "yes")
    enc = proc(text=[prompt + cont], images=[images()[0]], add_special_tokens=False,
               return_tensors="pt")  # fmt: skip
    types = enc["token_type_ids"][0]
    image_id = proc.tokenizer.convert_tokens_to_ids("<image_soft_token>")
    assert torch.equal(types == 1, enc["input_ids"][0] == image_id) and int(types.sum()) == 4
    first = int((types == 1).nonzero()[0])
    with_types = no_grad_logits(model, enc)[0]
    without = no_grad_logits(model, {k: v for k, v in enc.items() if k != "token_type_ids"})[0]
    assert_close_to_reference(with_types[:first], without[:first], scale=1.0)
    gap = (with_types[first:] - without[first:]).abs().amax(-1)
    assert (gap[:3] > 1e-3).all() and (gap > 1e-5).all()  # every later position changes
    want = V.reference_logprobs(folder, images()[0], prompt, cont)
    ids = enc["input_ids"][0]
    np.testing.assert_allclose(V._gather(with_types, ids, len(ids) - 1, len(ids)), want, rtol=1e-12)
    assert abs(V._gather(without, ids, len(ids) - 1, len(ids))[0] - want[0]) > 1e-6


def test_gemma3_chat_prompt_must_not_get_a_second_bos(folders: dict[str, Path]) -> None:
    """The chat template starts with `<bos>` and the tokenizer adds one too: the prompt string
    goes to the processor with add_special_tokens=False, as apply_chat_template(tokenize=True)
    does. Two `<bos>` change the scores."""
    folder = folders["gemma3"]
    proc, model = V.load(folder)
    prompt, cont = prompt_and_answer("gemma3", proc, 0, "yes")
    assert prompt.startswith("<bos><start_of_turn>user\n<start_of_image>")
    assert prompt.endswith("<end_of_turn>\n<start_of_turn>model\n") and cont == "Yes"
    msgs = [{"role": "user", "content": [{"type": "image", "image": images()[0]},
                                         {"type": "text", "text": Q[0]}]}]  # fmt: skip
    by_template = proc.apply_chat_template(msgs, add_generation_prompt=True, tokenize=True,
                                           return_dict=True, return_tensors="pt")  # fmt: skip
    once = proc(text=[prompt], images=[images()[0]], add_special_tokens=False, return_tensors="pt")
    twice = proc(text=[prompt + cont], images=[images()[0]], return_tensors="pt")
    assert torch.equal(by_template["input_ids"], once["input_ids"])
    bos = proc.tokenizer.bos_token_id
    assert once["input_ids"][0, :2].tolist() != [bos, bos]
    assert twice["input_ids"][0, :2].tolist() == [bos, bos]
    ids = twice["input_ids"][0]
    doubled = V._gather(no_grad_logits(model, twice)[0], ids, len(ids) - 1, len(ids))
    assert abs(doubled[0] - V.reference_logprobs(folder, images()[0], prompt, cont)[0]) > 1e-6


# --- InstructBLIP: the Q-Former reads the instruction ------------------------------------------


def test_instructblip_qformer_reads_the_prompt_not_the_answer(folders: dict[str, Path]) -> None:
    """processor(text=prompt + continuation) also gives the Q-Former the continuation; the
    Q-Former's queries attend to its text, so the scores change. The reference gives it the
    prompt alone (InstructBLIP's instruction)."""
    folder = folders["instructblip"]
    proc, model = V.load(folder)
    prompt, cont = prompt_and_answer("instructblip", proc, 0, "yes")
    enc = proc(text=[prompt + cont], images=[images()[0]], return_tensors="pt")
    ids = enc["input_ids"][0]
    n = len(proc(text=[prompt], images=[images()[0]])["input_ids"][0])
    leaky = V._gather(no_grad_logits(model, enc)[0], ids, n, len(ids))
    want = V.reference_logprobs(folder, images()[0], prompt, cont)
    assert leaky.shape == want.shape and not np.allclose(leaky, want, rtol=0, atol=1e-6)


# --- batched = unbatched -----------------------------------------------------------------------


def batched(
    folder: Path, family: str, side: str, *, qformer_side: str = "right", positions: bool = False
) -> list[np.ndarray]:
    """Two rows of different lengths in one forward pass, padded on `side`; each row's
    continuation log-probs. `positions`: pass position_ids = cumsum(attention_mask) - 1."""
    proc, model = V.load(folder)
    ims = images()
    pairs = [prompt_and_answer(family, proc, i, a) for i, a in enumerate(["yes", "no"])]
    pad = {"padding": True, "padding_side": side, "return_tensors": "pt"}
    if family == "paligemma":
        enc = proc(text=["<image>" + p for p, _ in pairs], images=ims,
                   suffix=[c for _, c in pairs], **pad)  # fmt: skip
        enc.pop("labels")
        logits = no_grad_logits(model, enc)
        out = []
        for i in range(2):
            where = (enc["token_type_ids"][i] == 1).nonzero()[:, 0]
            out.append(V._gather(logits[i], enc["input_ids"][i], int(where[0]), int(where[-1])))
        return out
    kw = {"add_special_tokens": False} if family == "gemma3" else {}
    enc = proc(text=[p + c for p, c in pairs],
               images=[[im] for im in ims] if family == "gemma3" else ims, **pad, **kw)  # fmt: skip
    if family == "instructblip":  # the Q-Former reads the prompts alone
        head = proc(text=[p for p, _ in pairs], images=ims, **{**pad, "padding_side": qformer_side})
        enc["qformer_input_ids"] = head["qformer_input_ids"]
        enc["qformer_attention_mask"] = head["qformer_attention_mask"]
    if positions:
        enc["position_ids"] = (enc["attention_mask"].cumsum(-1) - 1).clamp(min=0)
    logits = no_grad_logits(model, enc)
    out = []
    for i, (p, c) in enumerate(pairs):
        n = len(proc(text=[p], images=[ims[i]], **kw)["input_ids"][0])
        m = len(proc(text=[p + c], images=[ims[i]], **kw)["input_ids"][0])
        shift = int((enc["attention_mask"][i] == 0).sum()) if side == "left" else 0
        out.append(V._gather(logits[i], enc["input_ids"][i], shift + n, shift + m))
    return out


def one_by_one(folder: Path, family: str) -> list[np.ndarray]:
    proc, _ = V.load(folder)
    pairs = [prompt_and_answer(family, proc, i, a) for i, a in enumerate(["yes", "no"])]
    return [V.reference_logprobs(folder, im, p, c) for im, (p, c) in zip(images(), pairs,
                                                                          strict=True)]  # fmt: skip


def assert_rows_close(
    got: list[np.ndarray], want: list[np.ndarray], rtol: float = FP32_RTOL
) -> None:
    for g, w in zip(got, want, strict=True):
        assert_close_to_reference(g, w, rtol=rtol, scale=1.0)  # log-probs


@pytest.mark.parametrize("family", [*DECODER_ONLY, "paligemma"])
def test_batched_right_padding_equals_one_by_one(folders: dict[str, Path], family: str) -> None:
    want = one_by_one(folders[family], family)
    assert_rows_close(batched(folders[family], family, "right"), want)


@pytest.mark.parametrize("family", ["gemma3", "blip2_opt", "paligemma"])
def test_batched_left_padding_equals_one_by_one(folders: dict[str, Path], family: str) -> None:
    """Gemma 3 and PaliGemma: the pads come first and RoPE only sees relative positions. BLIP-2:
    the pads come between the query tokens and the text, OPT's learned positions come from
    cumsum(attention_mask), so the text keeps its positions."""
    want = one_by_one(folders[family], family)
    assert_rows_close(batched(folders[family], family, "left"), want)


def test_instructblip_left_padding_needs_position_ids_and_a_right_padded_qformer(
    folders: dict[str, Path],
) -> None:
    """InstructBLIP (Llama): the processor puts the query tokens in front of the padding, so
    left pads sit between the image and the text and shift the text's RoPE positions against
    the image (small errors); position_ids = cumsum(mask) - 1 fix it. The Q-Former (BERT,
    absolute positions) must get its instruction right-padded: left-padded it shifts them."""
    folder = folders["instructblip"]
    want = one_by_one(folder, "instructblip")
    # the shift moves a log-prob by about 6e-6 (1.6e-6 of its size): FINE_RTOL resolves it
    assert_rows_close(batched(folder, "instructblip", "left", positions=True), want, FINE_RTOL)
    shifted = batched(folder, "instructblip", "left")
    assert not np.allclose(shifted[0], want[0], rtol=0, atol=1e-7)
    wrong = batched(folder, "instructblip", "left", qformer_side="left", positions=True)
    assert not np.allclose(wrong[0], want[0], rtol=0, atol=1e-5)
    assert_rows_close(wrong[1:], want[1:], FINE_RTOL)  # the longer row has no padding
