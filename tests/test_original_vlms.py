"""CLIP-FlanT5 and ShareGPT4V (checkpoints in the LLaVA code base's own format) through
`vqa:` and `vgpt:`, on tiny random checkpoints laid out as the hub repos
(`builders.tiny_original_vlms`) and loaded through the normal code path (a folder NAME).

The oracle is the VQAScore reference (linzhiqiu/t2v_metrics at 10d549b3, the last commit
with both models: ``clip_t5_model.py``, ``llava_model.py``, ``mm_utils.py``), re-implemented
here from its source: the prompt with the system message, the pieces around ``<image>``
tokenized on their own, the image padded to a square of the processor's mean colour, the
image features (layer -2, patch tokens, the MLP projector) put in by hand into the language
model the builder saved, CrossEntropy(mean) over the label tokens, exp(-loss). The
reference's own classes run on the same checkpoints in `tests/test_vqa_reference_code.py`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from builders import tiny_original_vlms as T
from builders.backends import optional_import

torch = optional_import("torch")

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

IMAGE_TOKEN_INDEX = -200  # t2v_metrics constants.py


@pytest.fixture(scope="module")
def clip_t5(tmp_path_factory: pytest.TempPathFactory) -> T.Tiny:
    return T.write_clip_t5(tmp_path_factory.mktemp("ct5") / "clip-flant5-xxl")


@pytest.fixture(scope="module")
def sharegpt4v(tmp_path_factory: pytest.TempPathFactory) -> T.Tiny:
    return T.write_sharegpt4v(tmp_path_factory.mktemp("s4v") / "ShareGPT4V-7B")


def pictures() -> list[Image.Image]:
    rng = np.random.default_rng(7)  # wide and tall: the square padding is exercised
    return [
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        for w, h in ((40, 24), (20, 36))
    ]


# -- the reference, re-implemented from its source ----------------------------------------------
def expand2square(image: Image.Image, color: tuple[int, ...]) -> Image.Image:
    w, h = image.size
    if w == h:
        return image
    side = max(w, h)
    out = Image.new(image.mode, (side, side), color)
    out.paste(image, (0, (w - h) // 2) if w > h else ((h - w) // 2, 0))
    return out


def reference_pixels(tower: Path, image: Image.Image) -> Any:
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    proc = CLIPImageProcessorPil.from_pretrained(str(tower))
    square = expand2square(image, tuple(int(x * 255) for x in proc.image_mean))
    return proc(images=[square], return_tensors="pt")["pixel_values"]


def features(tiny: T.Tiny, image: Image.Image) -> Any:
    with torch.no_grad():
        out = tiny.vision(reference_pixels(tiny.tower, image), output_hidden_states=True)
        return tiny.projector(out.hidden_states[-2][:, 1:])[0]


def t5_tokenizer_image_token(prompt: str, tok: Any) -> list[int]:
    chunks = [tok(c).input_ids for c in prompt.split("<image>")]
    out: list[int] = list(chunks[0])
    for c in chunks[1:]:
        out += [IMAGE_TOKEN_INDEX, *c]
    return out


def tokenizer_image_token(prompt: str, tok: Any) -> list[int]:
    chunks = [tok(c).input_ids for c in prompt.split("<image>")]
    offset = 1 if chunks[0] and chunks[0][0] == tok.bos_token_id else 0
    out = [chunks[0][0]] if offset else []
    seps = [c for x in chunks for c in (x, [IMAGE_TOKEN_INDEX] * (offset + 1))][:-1]
    for x in seps:
        out.extend(x[offset:])
    return out


def embed(ids: list[int], table: Any, image: Any) -> Any:
    k = ids.index(IMAGE_TOKEN_INDEX)
    with torch.no_grad():
        head, tail = table(torch.tensor(ids[:k])), table(torch.tensor(ids[k + 1 :]))
    return torch.cat([head, image, tail])[None]


def question(text: str) -> str:
    return T.QUESTION.format(text)


def clip_t5_reference(tiny: T.Tiny, tok: Any, image: Image.Image, text: str) -> tuple[Any, float]:
    """(logits, VQAScore) as t2v_metrics' CLIPT5Model.forward (conversation ``t5_chat``)."""
    prompt = T.SYSTEM + " USER: <image>\n" + question(text) + " ASSISTANT: "
    ids = t5_tokenizer_image_token(prompt, tok)
    labels = torch.tensor([tok("Yes").input_ids])  # the T5 tokenizer appends </s>
    with torch.no_grad():
        emb = embed(ids, tiny.lm.shared, features(tiny, image))
        logits = tiny.lm(inputs_embeds=emb, labels=labels).logits[0]
    loss = torch.nn.CrossEntropyLoss(reduction="mean")(logits, labels[0])
    return logits, float((-loss).exp())


def llava_reference(tiny: T.Tiny, tok: Any, image: Image.Image, text: str) -> tuple[Any, float]:
    """(logits, VQAScore) as t2v_metrics' LLaVAModel.forward (conversation ``chat``)."""
    qs = T.SYSTEM + " USER: <image>\n" + question(text) + " ASSISTANT: "
    ids = tokenizer_image_token(qs + "Yes</s>", tok)
    n = len(tokenizer_image_token(qs, tok)) - 1  # the trailing space's token
    labels = [-100] * n + ids[n:]
    feats = features(tiny, image)
    k = ids.index(IMAGE_TOKEN_INDEX)
    wide = labels[:k] + [-100] * feats.shape[0] + labels[k + 1 :]
    with torch.no_grad():
        logits = tiny.lm(inputs_embeds=embed(ids, tiny.lm.model.embed_tokens, feats)).logits[0]
    loss = torch.nn.CrossEntropyLoss(reduction="mean")(logits[:-1], torch.tensor(wide[1:]))
    return logits, float((-loss).exp())


def tokenizer(tiny: T.Tiny) -> Any:
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(str(tiny.folder))


# -- the tests ----------------------------------------------------------------------------------
def load(spec: str) -> Any:
    from lexsem.models.factory import load_model

    return load_model(spec, device="cpu")


def table_recipe(model: Any) -> Any:
    """The `vqa:` recipe table's entry for the model's family (`lexsem.models.vlm.reference`)."""
    from lexsem.models.vlm.reference import recipe_for

    return recipe_for(model.layout.model_type, model.layout.kind)


def test_the_loader_picks_each_family_from_config_json(
    clip_t5: T.Tiny, sharegpt4v: T.Tiny, tmp_path: Path
) -> None:
    from builders.tiny_llava import write_tiny_llava
    from lexsem.models.vlm.loading import family_of

    assert family_of(clip_t5.folder).name == "clip_t5"
    assert family_of(sharegpt4v.folder).name == "llava_original"
    assert family_of(write_tiny_llava(tmp_path / "hf")).name == "transformers"


def test_the_conversation_lexsem_renders_is_the_references_prompt(
    clip_t5: T.Tiny, sharegpt4v: T.Tiny
) -> None:
    """The user turn `vqa:` renders and the recipe table's prompt are the reference's
    `format_question(.., 't5_chat' / 'chat')` string; a causal prompt's trailing space goes
    before the answer."""
    want = T.SYSTEM + " USER: <image>\n" + question("a dog") + " ASSISTANT: "
    for tiny, gap in ((clip_t5, ""), (sharegpt4v, " ")):
        model = load(f"vqa:{tiny.folder}")
        assert model.prompt("a dog") + gap == want
        recipe = table_recipe(model)
        assert recipe.prompt.format(text=recipe.question.format(text="a dog")) + gap == want


def test_the_recipe_table_holds_these_families_recipes(clip_t5: T.Tiny, sharegpt4v: T.Tiny) -> None:
    """The `vqa:` recipe table has each family's reference recipe (CLIP-FlanT5 under
    ``clip_t5``; ShareGPT4V loads as transformers' ``llava``): the label ``Yes</s>``, square
    padding, exp(-mean CE)."""
    for tiny, family in ((clip_t5, "clip_t5"), (sharegpt4v, "llava")):
        model = load(f"vqa:{tiny.folder}")
        assert model.layout.model_type == family
        recipe = table_recipe(model)
        assert recipe is not None, f"no recipe for {family}"
        assert recipe.question.replace("{text}", "{}") == T.QUESTION
        eos = model._processor.tokenizer.eos_token
        assert recipe.answer + (eos if recipe.end else "") == "Yes</s>"
        assert (recipe.image, recipe.read) == ("pad", "mean")


@pytest.mark.parametrize("which", ["clip_t5", "sharegpt4v"])
def test_vqa_equals_the_reference_formula_per_item(
    which: str, request: pytest.FixtureRequest
) -> None:
    tiny: T.Tiny = request.getfixturevalue(which)
    oracle = clip_t5_reference if which == "clip_t5" else llava_reference
    tok = tokenizer(tiny)
    ims = pictures()
    images = [ims[0], ims[0], ims[1], ims[1]]
    texts = [T.CAPTIONS[0], T.CAPTIONS[1], T.CAPTIONS[2], T.CAPTIONS[0]]
    want = np.array([oracle(tiny, tok, im, t)[1] for im, t in zip(images, texts, strict=True)])
    for reuse in ("true", "false"):
        model = load(f"vqa:{tiny.folder}?reuse={reuse}")
        got = model.score(images, texts)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        first = model.logprobs(images[0], [(model.user_turn(question(texts[0])), "Yes</s>")])
        assert float(np.exp(first[0].mean())) == pytest.approx(want[0], rel=1e-5)  # primitive
    assert len(set(np.round(want, 9))) == len(want)  # the scores tell the pairs apart


def test_clip_t5_forward_logits_equal_t5_fed_the_projected_clip_features(clip_t5: T.Tiny) -> None:
    model = load(f"vqa:{clip_t5.folder}")
    net = model._ensure_loaded()
    image, text = pictures()[0], T.CAPTIONS[1]
    want, _ = clip_t5_reference(clip_t5, tokenizer(clip_t5), image, text)
    enc = model._processor(text=[model.prompt(text)], images=[image], return_tensors="pt")
    labels = torch.tensor([tokenizer(clip_t5)("Yes").input_ids])
    with torch.no_grad():
        got = net(**enc, labels=labels).logits[0]
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_sharegpt4v_forward_logits_equal_llama_fed_the_projected_clip_features(
    sharegpt4v: T.Tiny,
) -> None:
    model = load(f"vqa:{sharegpt4v.folder}")
    net = model._ensure_loaded()
    image, text = pictures()[1], T.CAPTIONS[0]
    want, _ = llava_reference(sharegpt4v, tokenizer(sharegpt4v), image, text)
    full = model.prompt(text) + " Yes</s>"
    enc = model._processor(text=[full], images=[image], return_tensors="pt")
    with torch.no_grad():
        got = net(**enc).logits[0]
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("which", ["clip_t5", "sharegpt4v"])
def test_vgptscore_is_the_captions_log_probability_after_the_user_turn(
    which: str, request: pytest.FixtureRequest
) -> None:
    tiny: T.Tiny = request.getfixturevalue(which)
    tok = tokenizer(tiny)
    image = pictures()[0]
    model = load(f"vgpt:{tiny.folder}")
    got = model.score([image, image], T.CAPTIONS[:2])
    turn = T.SYSTEM + " USER: <image>\nDescribe the image. ASSISTANT: "
    feats = features(tiny, image)
    for caption, value in zip(T.CAPTIONS[:2], got, strict=True):
        if which == "clip_t5":  # the caption's own tokens are the decoder's labels
            ids = t5_tokenizer_image_token(turn, tok)
            labels = torch.tensor([tok(caption, add_special_tokens=False).input_ids])
            with torch.no_grad():
                emb = embed(ids, tiny.lm.shared, feats)
                logits = tiny.lm(inputs_embeds=emb, labels=labels).logits[0]
            logp = torch.log_softmax(logits.double(), -1)[torch.arange(labels.shape[1]), labels[0]]
        else:  # the tokens after ``… ASSISTANT:``, read one position earlier
            ids = tokenizer_image_token(turn + caption, tok)
            n = len(tokenizer_image_token(turn, tok)) - 1
            with torch.no_grad():
                emb = embed(ids, tiny.lm.model.embed_tokens, feats)
                logits = tiny.lm(inputs_embeds=emb).logits[0]
            wide = feats.shape[0] - 1  # the image's positions beyond its placeholder
            target = torch.tensor(ids[n:])
            rows = torch.arange(n - 1, len(ids) - 1) + wide
            logp = torch.log_softmax(logits.double(), -1)[rows, target]
        assert value == pytest.approx(float(logp.sum()), abs=1e-4)


@pytest.mark.parametrize("which", ["clip_t5", "sharegpt4v"])
def test_generate_is_the_greedy_continuation(which: str, request: pytest.FixtureRequest) -> None:
    tiny: T.Tiny = request.getfixturevalue(which)
    model = load(f"vlm:{tiny.folder}")
    image = pictures()[0]
    prompt = model.user_turn("Describe the image.")
    net = model._ensure_loaded()
    tok = model._processor.tokenizer
    enc = model._processor(text=[prompt], images=[image], return_tensors="pt")
    ids: list[int] = []
    with torch.no_grad():  # greedy by hand, three tokens
        for _ in range(3):
            if which == "clip_t5":
                dec = torch.tensor([[0, *ids]])
                nxt = int(net(**enc, decoder_input_ids=dec).logits[0, -1].argmax())
            else:
                more = torch.tensor([ids], dtype=torch.long).reshape(1, -1)
                inputs = {**enc, "input_ids": torch.cat([enc["input_ids"], more], 1),
                          "attention_mask": torch.ones(1, enc["input_ids"].shape[1] + len(ids),
                                                       dtype=torch.long)}  # fmt: skip
                nxt = int(net(**inputs).logits[0, -1].argmax())
            ids.append(nxt)
            if nxt == tok.eos_token_id:
                break
    want = tok.decode(ids, skip_special_tokens=True).strip()
    assert model.generate(image, prompt, max_new_tokens=3) == want


def test_sharegpt4v_reads_its_tower_folder_not_the_checkpoint_copy(sharegpt4v: T.Tiny) -> None:
    net = load(f"vqa:{sharegpt4v.folder}")._ensure_loaded()
    mine = net.model.vision_tower.state_dict()
    for key, value in sharegpt4v.vision.state_dict().items():
        torch.testing.assert_close(mine[key], value)


def test_clip_t5_without_the_tower_in_the_checkpoint_reads_the_tower_folder(
    tmp_path: Path,
) -> None:
    tiny = T.write_clip_t5(tmp_path / "clip-flant5-xl", tower_in_checkpoint=False)
    image, text = pictures()[1], T.CAPTIONS[2]
    _, want = clip_t5_reference(tiny, tokenizer(tiny), image, text)
    got = load(f"vqa:{tiny.folder}").score([image], [text])
    assert float(got[0]) == pytest.approx(want, rel=1e-5)


def test_clip_t5_without_a_tokenizer_reads_the_flan_t5_tokenizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lexsem.models.vlm import clip_t5 as ct5

    tiny = T.write_clip_t5(tmp_path / "bare", tokenizer=False)
    flan = tmp_path / "flan-t5-xxl"
    tok = T.t5_tokenizer()
    tok.save_pretrained(flan)
    monkeypatch.setattr(ct5, "TOKENIZER", str(flan))
    model = load(f"vqa:{tiny.folder}")
    assert model.fingerprint["companions"]["tokenizer"]["source"] == "local"
    image, text = pictures()[0], T.CAPTIONS[0]
    _, want = clip_t5_reference(tiny, tok, image, text)
    model = load(f"vqa:{tiny.folder}")
    assert float(model.score([image], [text])[0]) == pytest.approx(want, rel=1e-5)


def test_the_vision_tower_is_in_the_fingerprint(sharegpt4v: T.Tiny, tmp_path: Path) -> None:
    before = load(f"vqa:{sharegpt4v.folder}").fingerprint
    assert before["companions"]["vision_tower"]["source"] == "local"
    copy = tmp_path / "copy"
    shutil.copytree(sharegpt4v.folder, copy)
    other = T.write_tower(tmp_path / "other-tower", whole_clip=False, seed=11)
    assert other is not None
    config = json.loads((copy / "config.json").read_text())
    config["mm_vision_tower"] = str(tmp_path / "other-tower")
    (copy / "config.json").write_text(json.dumps(config))
    after = load(f"vqa:{copy}").fingerprint
    assert after["companions"] != before["companions"]


def test_bad_checkpoints_are_one_line_errors(sharegpt4v: T.Tiny, tmp_path: Path) -> None:
    from lexsem.errors import ModelError

    copy = tmp_path / "bad"
    shutil.copytree(sharegpt4v.folder, copy)
    config = json.loads((copy / "config.json").read_text())
    config["mm_projector_type"] = "mlp3x_gelu"
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match="mm_projector_type 'mlp3x_gelu'"):
        load(f"vqa:{copy}")._ensure_loaded()
    config["mm_projector_type"] = "mlp2x_gelu"
    config["mm_vision_tower"] = str(tmp_path / "no-such-tower")
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError, match=r"vision tower .*no-such-tower"):
        load(f"vqa:{copy}")._ensure_loaded()


@pytest.mark.parametrize("which", ["clip_t5", "sharegpt4v"])
def test_bf16_loads_every_part_in_bf16(which: str, request: pytest.FixtureRequest) -> None:
    """The tower, the projector, the language model and the placeholder's embedding row all
    take the spec's dtype; the scores stay near fp32's."""
    from builders.numeric import BF16_RTOL, assert_close_to_reference

    tiny: T.Tiny = request.getfixturevalue(which)
    images, texts = pictures(), T.CAPTIONS[:2]
    fp32 = load(f"vqa:{tiny.folder}").score(images, texts)
    model = load(f"vqa:{tiny.folder}?dtype=bf16")
    bf16 = model.score(images, texts)
    assert {p.dtype for p in model._ensure_loaded().parameters()} == {torch.bfloat16}
    assert np.isfinite(bf16).all()
    assert_close_to_reference(bf16, fp32, rtol=BF16_RTOL)


@pytest.mark.parametrize("which", ["clip_t5", "sharegpt4v"])
def test_a_conversation_with_two_images_renders_as_the_code_base_and_answers(
    which: str, request: pytest.FixtureRequest
) -> None:
    tiny: T.Tiny = request.getfixturevalue(which)
    model = load(f"vlm:{tiny.folder}")
    turn = [{"type": "image"}, {"type": "text", "text": "Describe the image."}]
    prompt = model.conversation([
        {"role": "user", "content": turn},
        {"role": "assistant", "content": [{"type": "text", "text": "a dog"}]},
        {"role": "user", "content": turn},
    ])  # fmt: skip
    end = "ASSISTANT: " if which == "clip_t5" else "ASSISTANT:"
    ask = "USER: <image>\nDescribe the image."
    assert prompt == f"{T.SYSTEM} {ask} ASSISTANT: a dog</s>{ask} {end}"  # LLaVA's vicuna_v1
    ims = pictures()
    enc = model._processor(text=[prompt], images=[ims], return_tensors="pt")
    placeholder = model._processor.tokenizer.placeholder
    assert int((enc["input_ids"] == placeholder).sum()) == 2 * model._processor.image_tokens
    assert enc["pixel_values"].shape[0] == 2
    assert isinstance(model.generate(ims, prompt, max_new_tokens=2), str)
    from lexsem.errors import ModelError

    with pytest.raises(ModelError, match="1 <image> comes with 2 images"):
        model._processor(text=[model.user_turn("hi")], images=[ims], return_tensors="pt")
