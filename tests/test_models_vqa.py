"""The `vqa:` backend (VQAScore of a generative VLM) on a tiny random LLaVA built here (a tiny CLIP
vision tower and Llama, a word-level tokenizer, a chat template), loaded through the normal
code path; its scores against a direct teacher-forced computation with transformers on the
same model, one pair at a time, and batched = unbatched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image

WORDS = ["<unk>", "<pad>", "<s>", "</s>", "<image>", "USER:", "ASSISTANT:", "Does", "this",
         "figure", "show", '"a', "dog", "cat", "runs", 'sleeps"?', "Please", "answer", "yes",
         "or", "no.", "Yes", "No"]  # fmt: skip
TEMPLATE = (
    "{% for m in messages %}{{ m['role'].upper() }}: {% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }}{% endif %}{% endfor %} "
    "{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
TEXTS = ["a dog runs", "a cat sleeps", "a dog sleeps", "a cat runs"]


def write_tiny_llava(folder: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )  # fmt: skip

    vocab = {w: i for i, w in enumerate(WORDS)}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="removed")
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>", bos_token="<s>",
        eos_token="</s>",
    )  # fmt: skip
    tok.add_special_tokens({"additional_special_tokens": ["<image>"]})
    proc = LlavaProcessor(
        image_processor=CLIPImageProcessor(
            size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
        ),
        tokenizer=tok, patch_size=16, vision_feature_select_strategy="default",
        chat_template=TEMPLATE, image_token="<image>", num_additional_image_tokens=1,
    )  # fmt: skip
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            image_size=32, patch_size=16,
        ),
        text_config=LlamaConfig(
            vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=2,
        ),
        image_token_index=vocab["<image>"], vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )  # fmt: skip
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    proc.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_llava(tmp_path_factory.mktemp("llava") / "tiny-llava")


def images() -> list[Image.Image]:
    rng = np.random.default_rng(1)
    return [
        Image.fromarray(rng.integers(0, 256, (30 + 9 * i, 40, 3), dtype=np.uint8)) for i in range(4)
    ]


def direct_p_yes(folder: Path, image: Image.Image, text: str, answer: str = "Yes") -> float:
    """VQAScore by hand: the processor on the real image, one pair, exp(mean log P(answer))."""
    from transformers import AutoProcessor, LlavaForConditionalGeneration

    proc = AutoProcessor.from_pretrained(folder)
    model = LlavaForConditionalGeneration.from_pretrained(folder).eval()
    question = f'Does this figure show "{text}"? Please answer yes or no.'
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
    prompt = proc.apply_chat_template(msgs, add_generation_prompt=True)
    n = len(proc(text=prompt, images=image, return_tensors="pt")["input_ids"][0])
    enc = proc(text=f"{prompt} {answer}", images=image, return_tensors="pt")
    with torch.no_grad():
        logp = torch.log_softmax(model(**enc).logits[0].double(), dim=-1)
    ids = enc["input_ids"][0]
    return float(np.exp(np.mean([logp[t - 1, ids[t]].item() for t in range(n, len(ids))])))


def test_vqascore_matches_a_direct_computation_and_batches(llava: Path) -> None:
    from lexsem.models.registry import load_model

    scorer = load_model(f"vqa:{llava}", device="cpu")
    pixels = torch.stack([scorer.preprocess(im) for im in images()])
    batched = scorer.score(pixels, TEXTS)
    one_by_one = np.array([scorer.score(pixels[i : i + 1], [t])[0] for i, t in enumerate(TEXTS)])
    want = np.array([direct_p_yes(llava, im, t) for im, t in zip(images(), TEXTS, strict=True)])
    np.testing.assert_allclose(batched, want, rtol=1e-5)
    np.testing.assert_allclose(batched, one_by_one, rtol=1e-5)
    assert batched.dtype == np.float32 and (batched > 0).all() and (batched < 1).all()


def test_normalised_and_difference_scores(llava: Path) -> None:
    from lexsem.models.registry import load_model

    pixels = torch.stack([load_model(f"vqa:{llava}").preprocess(im) for im in images()[:2]])
    norm = load_model(f"vqa:{llava}?score=vqa_norm").score(pixels, TEXTS[:2])
    diff = load_model(f"vqa:{llava}?score=vqa_diff").score(pixels, TEXTS[:2])
    yes = np.array(
        [direct_p_yes(llava, im, t) for im, t in zip(images()[:2], TEXTS[:2], strict=True)]
    )
    no = np.array(
        [direct_p_yes(llava, im, t, "No") for im, t in zip(images()[:2], TEXTS[:2], strict=True)]
    )
    np.testing.assert_allclose(norm, yes / (yes + no), rtol=1e-5)
    np.testing.assert_allclose(diff, yes - no, rtol=1e-4, atol=1e-7)


def test_options_are_in_the_fingerprint(llava: Path) -> None:
    from lexsem.errors import ModelError
    from lexsem.models.registry import load_model

    a = load_model(f"vqa:{llava}").fingerprint
    b = load_model(f"vqa:{llava}?answer=yes").fingerprint
    c = load_model(f"vqa:{llava}?score=vqa_norm").fingerprint
    assert len({str(a), str(b), str(c)}) == 3
    with pytest.raises(ModelError, match="placeholder"):
        load_model(f"vqa:{llava}?question=Is it true?")


def test_vqascore_runs_a_benchmark_end_to_end(llava: Path, tmp_path: Path) -> None:
    import lexsem

    run = lexsem.evaluate(f"vqa:{llava}", ["synthetic_bi/swap_att"], n_boot=0, num_workers=0,
                          cache_dir=tmp_path)  # fmt: skip
    assert {r.metric for r in run.record.results} >= {"i2t", "t2i", "group"}
    scores = run.items.column("s_i0_c0").to_numpy()
    assert np.isfinite(scores).all() and ((scores > 0) & (scores < 1)).all()
    again = lexsem.evaluate(f"vqa:{llava}", ["synthetic_bi/swap_att"], n_boot=0, num_workers=0,
                            cache_dir=tmp_path)  # fmt: skip
    assert again.record.timings.n_pairs_scored == 0  # every pair from the store


# -- VGPTScore -----------------------------------------------------------------------------------


def direct_caption_logp(
    folder: Path, image: Image.Image, caption: str, pixels: Any = None
) -> float:
    """Σ log P(caption tokens | "Describe the image." turn, image) by hand; `pixels` replaces
    the processed image (the blind variant's noise)."""
    from transformers import AutoProcessor, LlavaForConditionalGeneration

    proc = AutoProcessor.from_pretrained(folder)
    model = LlavaForConditionalGeneration.from_pretrained(folder).eval()
    turn = [{"type": "image"}, {"type": "text", "text": "Describe the image."}]
    msgs = [{"role": "user", "content": turn}]
    prompt = proc.apply_chat_template(msgs, add_generation_prompt=True)
    n = len(proc(text=prompt, images=image, return_tensors="pt")["input_ids"][0])
    enc = proc(text=f"{prompt} {caption}", images=image, return_tensors="pt")
    if pixels is not None:
        enc["pixel_values"] = pixels[None]
    with torch.no_grad():
        logp = torch.log_softmax(model(**enc).logits[0].double(), dim=-1)
    ids = enc["input_ids"][0]
    return float(sum(logp[t - 1, ids[t]].item() for t in range(n, len(ids))))


CAPTIONS = ['"a dog runs', 'a cat sleeps"?']  # words of the tiny vocabulary


def test_vgptscore_sum_mean_blind_and_debiased_match_a_direct_computation(llava: Path) -> None:
    from lexsem.models.registry import load_model

    ims = images()[:2]
    pixels = torch.stack([load_model(f"vgpt:{llava}").preprocess(im) for im in ims])
    got = {s: load_model(f"vgpt:{llava}?score={s}&alpha=0.5").score(pixels, CAPTIONS)
           for s in ("sum", "mean", "blind", "debiased")}  # fmt: skip
    want_sum = np.array(
        [direct_caption_logp(llava, im, c) for im, c in zip(ims, CAPTIONS, strict=True)]
    )
    np.testing.assert_allclose(got["sum"], want_sum, rtol=1e-5)
    n_tokens = np.array([len(c.split()) for c in CAPTIONS])
    np.testing.assert_allclose(got["mean"], want_sum / n_tokens, rtol=1e-5)
    # blind: 3 standard-normal pixel tensors seeded 0, 1, 2, averaged in probability space
    noise = [torch.randn(tuple(pixels[0].shape), generator=torch.Generator().manual_seed(j))
             for j in range(3)]  # fmt: skip
    blind = []
    for im, c in zip(ims, CAPTIONS, strict=True):
        lps = np.array([direct_caption_logp(llava, im, c, pixels=z) for z in noise])
        blind.append(np.log(np.mean(np.exp(lps))))
    np.testing.assert_allclose(got["blind"], blind, rtol=1e-5)
    np.testing.assert_allclose(got["debiased"], want_sum - 0.5 * np.array(blind), rtol=1e-5)
    batched = load_model(f"vgpt:{llava}").score(pixels, CAPTIONS)
    single = [
        load_model(f"vgpt:{llava}").score(pixels[i : i + 1], [c])[0] for i, c in enumerate(CAPTIONS)
    ]
    np.testing.assert_allclose(batched, single, rtol=1e-5)


def test_a_processor_without_a_chat_template_is_refused_clearly(
    llava: Path, tmp_path: Path
) -> None:
    import json
    import shutil

    from lexsem.errors import ModelError
    from lexsem.models.registry import load_model

    bare = tmp_path / "bare"
    shutil.copytree(llava, bare)
    for f in bare.glob("*"):
        if "chat_template" in f.name:
            f.unlink()
        elif f.suffix == ".json" and "chat_template" in f.read_text():
            data = json.loads(f.read_text())
            data.pop("chat_template", None)
            f.write_text(json.dumps(data))
    scorer = load_model(f"vqa:{bare}")
    pixels = torch.stack([scorer.preprocess(images()[0])])
    with pytest.raises(ModelError, match="has no chat template"):
        scorer.score(pixels, ["a dog runs"])


def test_bf16_weights_get_bf16_pixels(llava: Path) -> None:
    """The processor's float32 pixels are cast to the model's dtype (a bf16 tower refuses them)."""
    from lexsem.models.registry import load_model

    fp32 = load_model(f"vqa:{llava}", device="cpu")
    bf16 = load_model(f"vqa:{llava}?dtype=bf16", device="cpu")
    pixels = torch.stack([fp32.preprocess(im) for im in images()[:2]])
    a, b = fp32.score(pixels, TEXTS[:2]), bf16.score(pixels, TEXTS[:2])
    assert np.isfinite(b).all()
    np.testing.assert_allclose(a, b, rtol=0.1)  # bf16 keeps about 2-3 digits


def test_the_table_17_prompt_presets_are_the_papers_verbatim(llava: Path) -> None:
    from lexsem.models.backends.vqa import QUESTIONS
    from lexsem.models.registry import load_model

    assert QUESTIONS["t17_3"].format(text="<caption>") == (
        "Do the image and the following caption match: <caption>? Provide 'yes' or 'no' as response"
    )
    assert QUESTIONS["t17_5"].endswith("as response.")  # the paper's final period, kept
    scorer = load_model(f"vqa:{llava}?question=t17_2&answer=yes&negative=no")
    assert scorer.question == QUESTIONS["t17_2"]
    assert scorer.fingerprint != load_model(f"vqa:{llava}?question=t17_1").fingerprint
