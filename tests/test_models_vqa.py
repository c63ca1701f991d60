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

from builders.numeric import BF16_RTOL, assert_close_to_reference
from builders.tiny_llava import write_tiny_llava

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

TEXTS = ["a dog runs", "a cat sleeps", "a dog sleeps", "a cat runs"]


@pytest.fixture(scope="module")
def llava(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_llava(tmp_path_factory.mktemp("llava") / "tiny-llava")


def images() -> list[Image.Image]:
    rng = np.random.default_rng(1)
    return [
        Image.fromarray(rng.integers(0, 256, (30 + 9 * i, 40, 3), dtype=np.uint8)) for i in range(4)
    ]


def direct_p_yes(
    folder: Path,
    image: Image.Image,
    text: str,
    answer: str = "Yes",
    *,
    mean: bool = True,
    prompt: str | None = None,
) -> float:
    """VQAScore by hand: the processor on the real image, one pair, exp(mean log P(answer))
    (exp(sum) with `mean=False`: the answer's probability)."""
    from transformers import AutoProcessor, LlavaForConditionalGeneration

    proc = AutoProcessor.from_pretrained(folder)
    model = LlavaForConditionalGeneration.from_pretrained(folder).eval()
    question = f'Does this figure show "{text}"? Please answer yes or no.'
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
    prompt = prompt or proc.apply_chat_template(msgs, add_generation_prompt=True)
    n = len(proc(text=prompt, images=image, return_tensors="pt")["input_ids"][0])
    enc = proc(text=f"{prompt} {answer}", images=image, return_tensors="pt")
    with torch.no_grad():
        logp = torch.log_softmax(model(**enc).logits[0].double(), dim=-1)
    ids = enc["input_ids"][0]
    lps = [logp[t - 1, ids[t]].item() for t in range(n, len(ids))]
    return float(np.exp(np.mean(lps) if mean else np.sum(lps)))


def rows(ims: list[Image.Image]) -> Any:
    from lexsem.models.protocols import ImageRows

    return ImageRows(ims)


def test_vqascore_matches_a_direct_computation_and_batches(llava: Path) -> None:
    from lexsem.models.factory import load_model

    scorer = load_model(f"vqa:{llava}?score=p_yes", device="cpu")
    batched = scorer.score(rows(images()), TEXTS)
    one_by_one = np.array(
        [scorer.score(rows([im]), [t])[0] for im, t in zip(images(), TEXTS, strict=True)]
    )
    want = np.array([direct_p_yes(llava, im, t) for im, t in zip(images(), TEXTS, strict=True)])
    assert_close_to_reference(batched, want)
    assert_close_to_reference(batched, one_by_one)
    assert batched.dtype == np.float32 and (batched > 0).all() and (batched < 1).all()


def test_one_image_with_many_captions_shares_its_prefix_and_equals_whole_sequences(
    llava: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every caption of one image (the same decoded object in the batch) is scored on one
    computed prompt start; the numbers equal running each sequence whole (`reuse=false`)."""
    from lexsem.models.factory import load_model
    from lexsem.models.vlm import prefix

    shared_starts: list[int] = []
    real = prefix.shared_prefix_logits

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        shared_starts.append(0 if out is None else len(args[4]))
        return out

    monkeypatch.setattr(prefix, "shared_prefix_logits", spy)
    im = images()[1]
    shared = load_model(f"vqa:{llava}?score=p_yes").score(rows([im] * 4), TEXTS)
    whole = load_model(f"vqa:{llava}?score=p_yes&reuse=false").score(rows([im] * 4), TEXTS)
    want = [direct_p_yes(llava, im, t) for t in TEXTS]
    assert_close_to_reference(shared, want)
    assert_close_to_reference(whole, want)
    assert shared_starts == [4]  # one start for the image's four captions (none when off)
    fp = load_model(f"vqa:{llava}?score=p_yes").fingerprint
    assert fp == load_model(f"vqa:{llava}?score=p_yes&reuse=false").fingerprint  # the same numbers


def direct_p(folder: Path, image: Image.Image, text: str, word: str) -> float:
    """P(word) summed over its case / space variants with distinct tokens, by hand."""
    from transformers import AutoProcessor

    tok = AutoProcessor.from_pretrained(folder).tokenizer
    forms = {w: None for w in (word, word.lower(), word.capitalize(), word.upper())}
    seen: dict[tuple[int, ...], str] = {}
    for form in [*forms, *(f" {f}" for f in forms)]:
        seen.setdefault(tuple(tok(" " + form.strip())["input_ids"]), form)
    return sum(direct_p_yes(folder, image, text, f.strip(), mean=False) for f in seen.values())


def test_normalised_and_difference_scores(llava: Path) -> None:
    from lexsem.models.factory import load_model

    ims = images()[:2]
    norm = load_model(f"vqa:{llava}?score=vqa_norm").score(rows(ims), TEXTS[:2])
    diff = load_model(f"vqa:{llava}?score=vqa_diff").score(rows(ims), TEXTS[:2])
    yes = np.array([direct_p(llava, im, t, "Yes") for im, t in zip(ims, TEXTS[:2], strict=True)])
    no = np.array([direct_p(llava, im, t, "No") for im, t in zip(ims, TEXTS[:2], strict=True)])
    assert_close_to_reference(norm, yes / (yes + no))
    assert_close_to_reference(diff, yes - no, scale=1.0)  # a difference of probabilities


def test_options_are_in_the_fingerprint(llava: Path) -> None:
    from lexsem.errors import ModelError
    from lexsem.models.factory import load_model

    a = load_model(f"vqa:{llava}").fingerprint
    b = load_model(f"vqa:{llava}?answer=yes").fingerprint
    c = load_model(f"vqa:{llava}?score=vqa_norm").fingerprint
    d = load_model(f"vqa:{llava}?format=USER: <image> {{text}} ASSISTANT:").fingerprint
    assert len({str(a), str(b), str(c), str(d)}) == 4
    with pytest.raises(ModelError, match="placeholder"):
        load_model(f"vqa:{llava}?question=Is it true?")
    with pytest.raises(ModelError, match="placeholder"):
        load_model(f"vqa:{llava}?format=USER: <image>")


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
    folder: Path, image: Image.Image, caption: str, noise_seed: int | None = None
) -> float:
    """Σ log P(caption tokens | "Describe the image." turn, image) by hand; with `noise_seed`,
    the processor's pixel_values replaced by torch.randn of their shape from a generator
    seeded with it."""
    from transformers import AutoProcessor, LlavaForConditionalGeneration

    proc = AutoProcessor.from_pretrained(folder)
    model = LlavaForConditionalGeneration.from_pretrained(folder).eval()
    turn = [{"type": "image"}, {"type": "text", "text": "Describe the image."}]
    msgs = [{"role": "user", "content": turn}]
    prompt = proc.apply_chat_template(msgs, add_generation_prompt=True)
    n = len(proc(text=prompt, images=image, return_tensors="pt")["input_ids"][0])
    enc = proc(text=f"{prompt} {caption}", images=image, return_tensors="pt")
    if noise_seed is not None:
        gen = torch.Generator().manual_seed(noise_seed)
        enc["pixel_values"] = torch.randn(enc["pixel_values"].shape, generator=gen)
    with torch.no_grad():
        logp = torch.log_softmax(model(**enc).logits[0].double(), dim=-1)
    ids = enc["input_ids"][0]
    return float(sum(logp[t - 1, ids[t]].item() for t in range(n, len(ids))))


def noise(size: tuple[int, int], j: int) -> Image.Image:
    """Noise image j as the docs define it: a standard normal draw (seed j) in the CLIP image
    processor's normalised space, back to 8-bit pixels."""
    mean = np.array([0.48145466, 0.4578275, 0.40821073])
    std = np.array([0.26862954, 0.26130258, 0.27577711])
    z = np.random.default_rng(j).standard_normal((size[1], size[0], 3))
    return Image.fromarray(np.clip(np.rint((mean + std * z) * 255), 0, 255).astype(np.uint8))


CAPTIONS = ['"a dog runs', 'a cat sleeps"?']  # words of the tiny vocabulary


def test_vgptscore_sum_mean_blind_and_debiased_match_a_direct_computation(llava: Path) -> None:
    from lexsem.models.factory import load_model

    ims = images()[:2]
    got = {s: load_model(f"vgpt:{llava}?score={s}&alpha=0.5&noise=pixels").score(rows(ims),
                                                                                 CAPTIONS)
           for s in ("sum", "mean", "blind", "debiased")}  # fmt: skip
    want_sum = np.array(
        [direct_caption_logp(llava, im, c) for im, c in zip(ims, CAPTIONS, strict=True)]
    )
    assert_close_to_reference(got["sum"], want_sum)
    n_tokens = np.array([len(c.split()) for c in CAPTIONS])
    assert_close_to_reference(got["mean"], want_sum / n_tokens)
    tokens = load_model(f"vgpt:{llava}?score=tokens").score(rows(ims), CAPTIONS)
    np.testing.assert_array_equal(tokens, n_tokens)
    blind = []  # 3 noise images seeded 0, 1, 2, averaged in probability space
    for im, c in zip(ims, CAPTIONS, strict=True):
        lps = np.array([direct_caption_logp(llava, noise(im.size, j), c) for j in range(3)])
        blind.append(np.log(np.mean(np.exp(lps))))
    assert_close_to_reference(got["blind"], blind)
    assert_close_to_reference(got["debiased"], want_sum - 0.5 * np.array(blind))
    single = [
        load_model(f"vgpt:{llava}").score(rows([im]), [c])[0]
        for im, c in zip(ims, CAPTIONS, strict=True)
    ]
    assert_close_to_reference(got["sum"], single)


def test_the_blind_score_draws_its_noise_in_the_models_input_space(llava: Path) -> None:
    """`noise=input` (the default): the image's pixel_values replaced by a standard normal draw
    of their shape, seeded 0, 1, 2, averaged in probability space; `debiased` subtracts it."""
    from lexsem.models.factory import load_model

    ims = images()[:2]
    got = {s: load_model(f"vgpt:{llava}?score={s}&alpha=0.5").score(rows(ims), CAPTIONS)
           for s in ("sum", "blind", "debiased")}  # fmt: skip
    blind = []
    for im, c in zip(ims, CAPTIONS, strict=True):
        lps = np.array([direct_caption_logp(llava, im, c, noise_seed=j) for j in range(3)])
        blind.append(np.log(np.mean(np.exp(lps))))
    assert_close_to_reference(got["blind"], blind)
    assert_close_to_reference(got["debiased"], got["sum"] - 0.5 * np.array(blind))


def test_a_user_format_replaces_the_chat_template(llava: Path) -> None:
    from lexsem.models.factory import load_model

    fmt = "USER: <image> {text} ASSISTANT:"
    scorer = load_model(f"vqa:{llava}?score=p_yes&format={fmt}")
    question = 'Does this figure show "a dog runs"? Please answer yes or no.'
    assert scorer.prompt("a dog runs") == fmt.replace("{text}", question)
    got = scorer.score(rows(images()[:1]), ["a dog runs"])[0]
    assert_close_to_reference(
        got, direct_p_yes(llava, images()[0], "a dog runs", prompt=scorer.prompt("a dog runs"))
    )


def test_bf16_weights_get_bf16_pixels(llava: Path) -> None:
    """The processor's float32 pixels are cast to the model's dtype (a bf16 tower refuses them)."""
    from lexsem.models.factory import load_model

    fp32 = load_model(f"vqa:{llava}", device="cpu")
    bf16 = load_model(f"vqa:{llava}?dtype=bf16", device="cpu")
    a, b = fp32.score(rows(images()[:2]), TEXTS[:2]), bf16.score(rows(images()[:2]), TEXTS[:2])
    assert np.isfinite(b).all()
    assert_close_to_reference(b, a, rtol=BF16_RTOL)


def test_the_table_17_prompt_presets_are_the_papers_verbatim(llava: Path) -> None:
    from lexsem.models.factory import load_model
    from lexsem.models.vqascore import QUESTIONS

    assert QUESTIONS["t17_3"].format(text="<caption>") == (
        "Do the image and the following caption match: <caption>? Provide 'yes' or 'no' as response"
    )
    assert QUESTIONS["t17_5"].endswith("as response.")  # the paper's final period, kept
    scorer = load_model(f"vqa:{llava}?question=t17_2&answer=yes&negative=no")
    assert scorer.question == QUESTIONS["t17_2"]
    assert scorer.fingerprint != load_model(f"vqa:{llava}?question=t17_1").fingerprint


def test_each_generative_backend_has_the_capability_it_should(llava: Path) -> None:
    """A VQAScore scorer is a pair scorer, never an answerer (its `answer` option is a word);
    `vlm:` answers; neither loads its weights to be told apart."""
    from lexsem.engine.runner import CHAT, PAIR, capabilities
    from lexsem.models.factory import load_model

    assert capabilities(load_model(f"vqa:{llava}")) == {PAIR}
    assert capabilities(load_model(f"vgpt:{llava}")) == {PAIR}
    assert capabilities(load_model(f"vlm:{llava}")) == {CHAT}
