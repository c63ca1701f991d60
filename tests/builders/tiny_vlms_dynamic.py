"""Tiny random generative VLMs of the dynamic-resolution families, built offline from configs.

One factory per family writes a folder that loads through the normal code path
(`AutoProcessor` / `AutoModelForImageTextToText` with `local_files_only=True`): a word-level
`tokenizers` vocabulary wrapped in `PreTrainedTokenizerFast`, the family's own image processor
(and video processor, where the real checkpoint ships one), a chat template shaped like the real
checkpoint's, and a randomly initialised model from a tiny config (`torch.manual_seed(0)`).

The models are tiny (hidden sizes 16-32, one or two layers, 16-pixel vision tiles) but keep the
family's dynamic resolution: two images of different sizes give different numbers of image
tokens (Qwen: `min_pixels`/`max_pixels`; LLaVA-NeXT / OneVision: `image_grid_pinpoints` and
unpadding; Idefics3 / SmolVLM: image splitting into `max_image_size` tiles).

`reference_logprobs` is the direct, unbatched teacher-forced computation with transformers that
a scorer's batched code path can be checked against.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from builders.backends import optional_import

torch = optional_import("torch")

# The words every tiny vocabulary has (questions, captions, answers); the families add their
# template words and special tokens. The pre-tokenizer splits on whitespace and isolates
# punctuation, so '"a dog runs"?' is `"`, `a`, `dog`, `runs`, `"`, `?`; unknown words are <unk>.
WORDS = [
    "a", "dog", "cat", "runs", "sleeps", "on", "the", "bed", "red", "blue", "photo", "of",
    "Does", "this", "figure", "show", "Please", "answer", "yes", "or", "no", "Yes", "No",
    "Describe", "image", "is", "there", "in", "picture", "What", "shown", ".", "?", '"', ":",
    ",", "!", "'", "-", "(", ")", "\\", "/", "[", "]", "<", ">", "|", "_", "=",
]  # fmt: skip
QWEN_WORDS = ["system", "user", "assistant", "You", "are", "helpful", "Picture"]
QWEN_SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|image_pad|>", "<|video_pad|>",
]  # fmt: skip

# Qwen2-VL / Qwen2.5-VL Instruct: a default system turn, then `<|im_start|>user\n`, the image
# as `<|vision_start|><|image_pad|><|vision_end|>`, the text, `<|im_end|>\n`; the generation
# prompt is `<|im_start|>assistant\n` and the answer follows directly (no leading space).
QWEN2_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\n"
    "You are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Qwen3-VL Instruct: the same turns without the default system turn.
QWEN3_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# llava-hf/llava-v1.6-mistral-7b-hf: `[INST] <image>\nTEXT [/INST]`; there is no separate
# generation prompt (the user turn ends with ` [/INST]`), the answer follows with a space.
LLAVA_NEXT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] == 'system' %}"
    "{{ '<<SYS>>\\n' + message['content'][0]['text'] + '\\n<</SYS>>\\n\\n' }}"
    "{% elif message['role'] == 'user' %}{{ '[INST] ' }}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}"
    "{{ '<image>\\n' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ content['text'] }}{% endfor %}{{ ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'][0]['text'] + '</s> ' }}"
    "{% endif %}{% endfor %}"
)
# llava-hf/llava-onevision-qwen2-*-ov-hf: `<|im_start|>user <image>\nTEXT<|im_end|>\n`, the
# generation prompt `<|im_start|>assistant\n`, the answer follows directly.
LLAVA_ONEVISION_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + ' ' }}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}"
    "{{ '<image>' }}{% endfor %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ '\\n' + content['text'] }}{% endfor %}{{ '<|im_end|>\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
# HuggingFaceM4/Idefics3-8B-Llama3: `<|begin_of_text|>User:<image>TEXT<end_of_utterance>\n`,
# the generation prompt `Assistant:`; the answer follows with a leading space.
IDEFICS3_TEMPLATE = (
    "<|begin_of_text|>{% for message in messages %}{{ message['role'].capitalize() }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)
# HuggingFaceTB/SmolVLM-Instruct (transformers' DEFAULT_CHAT_TEMPLATE for SmolVLM, images only):
# `<|im_start|>User:<image>TEXT<end_of_utterance>\n`, then `Assistant:`; a leading space.
SMOLVLM_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'] is string %}{{ ': ' + message['content'] }}{% else %}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}{% endif %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)

# The weights' init std (0.02 in the real configs): larger, so that the logits depend visibly on
# the image and on the positions, and a wrong input shows in the log-probabilities.
INIT_STD = 0.2

# Idefics3 / SmolVLM: the tile markers the processor writes into the prompt.
ROW_COL = [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]


def make_tokenizer(
    words: list[str], specials: list[str], *, pad: str, eos: str, bos: str | None = None,
    add_bos: bool = False, **extra: Any,
):  # fmt: skip
    """A word-level tokenizer: `<unk>` first, then `specials` (added as special tokens, so the
    pre-tokenizer never splits them), then WORDS and `words`."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {}
    for w in ["<unk>", *specials, *WORDS, *words]:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation(behavior="isolated")]
    )
    if add_bos:
        assert bos is not None
        tk.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, vocab[bos])]
        )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, unk_token="<unk>", pad_token=pad, eos_token=eos, bos_token=bos,
        **extra,
    )  # fmt: skip
    named = {pad, eos, bos, "<unk>"}
    tok.add_special_tokens(
        {"additional_special_tokens": [s for s in specials if s not in named]},
        replace_extra_special_tokens=False,
    )
    assert len(tok) == len(vocab), "every special token must already be in the vocabulary"
    return tok


def _save(model: Any, processor: Any, folder: Path) -> Path:
    folder = Path(folder)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def write_tiny_llava_next(folder: Path) -> Path:
    """LLaVA-NeXT (v1.6, Mistral chat format, BOS added by the tokenizer): CLIP tower on 24x24
    tiles of 8x8 patches (9 features + CLS; the `default` strategy drops CLS), anyres over the
    real pinpoints' shapes in tiles (1x2, 2x1, 2x2, 3x1, 1x3): the base tile, the unpadded grid
    and a newline per row, 39 image tokens for a 32x40 (WxH) image, 37 for 64x48."""
    from transformers import (
        CLIPVisionConfig,
        LlavaNextConfig,
        LlavaNextForConditionalGeneration,
        LlavaNextImageProcessor,
        LlavaNextProcessor,
        MistralConfig,
    )

    specials = ["<s>", "</s>", "<pad>", "<image>", "[INST]", "[/INST]"]
    tok = make_tokenizer([], specials, pad="<pad>", eos="</s>", bos="<s>", add_bos=True)
    pinpoints = [[24, 48], [48, 24], [48, 48], [72, 24], [24, 72]]
    proc = LlavaNextProcessor(
        image_processor=LlavaNextImageProcessor(
            size={"shortest_edge": 24}, crop_size={"height": 24, "width": 24},
            image_grid_pinpoints=pinpoints,
        ),
        tokenizer=tok, patch_size=8, vision_feature_select_strategy="default",
        chat_template=LLAVA_NEXT_TEMPLATE, image_token="<image>", num_additional_image_tokens=1,
    )  # fmt: skip
    config = LlavaNextConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
            image_size=24, patch_size=8, projection_dim=16,
        ),
        text_config=MistralConfig(
            vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, head_dim=16,
            pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id, initializer_range=INIT_STD,
        ),
        image_token_index=tok.convert_tokens_to_ids("<image>"), image_grid_pinpoints=pinpoints,
        vision_feature_select_strategy="default", vision_feature_layer=-2, image_seq_length=9,
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(LlavaNextForConditionalGeneration(config), proc, folder)


def write_tiny_llava_onevision(folder: Path) -> Path:
    """LLaVA-OneVision (Qwen2 chat format): SigLIP tower on 16x16 tiles of 8x8 patches (4
    features, `full` strategy), anyres over pinpoints up to 3x3 tiles, `anyres_max_9`: 34 image
    tokens for a 32x40 (WxH) image (2x3 tiles + base), 32 for 64x48 (3x3 + base)."""
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionForConditionalGeneration,
        LlavaOnevisionImageProcessor,
        LlavaOnevisionProcessor,
        LlavaOnevisionVideoProcessor,
        Qwen2Config,
        SiglipVisionConfig,
    )

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"]
    tok = make_tokenizer(QWEN_WORDS, specials, pad="<|endoftext|>", eos="<|im_end|>")
    pinpoints = [[16 * i, 16 * j] for i in range(1, 4) for j in range(1, 4)]
    proc = LlavaOnevisionProcessor(
        image_processor=LlavaOnevisionImageProcessor(
            size={"height": 16, "width": 16}, image_grid_pinpoints=pinpoints
        ),
        video_processor=LlavaOnevisionVideoProcessor(size={"height": 16, "width": 16}),
        tokenizer=tok, num_image_tokens=4, vision_feature_select_strategy="full",
        chat_template=LLAVA_ONEVISION_TEMPLATE, image_token="<image>", video_token="<video>",
        vision_aspect_ratio="anyres_max_9",
    )  # fmt: skip
    config = LlavaOnevisionConfig(
        vision_config=SiglipVisionConfig(
            hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            image_size=16, patch_size=8,
        ),
        text_config=Qwen2Config(
            vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id, initializer_range=INIT_STD,
        ),
        image_token_index=tok.convert_tokens_to_ids("<image>"),
        video_token_index=tok.convert_tokens_to_ids("<video>"), image_grid_pinpoints=pinpoints,
        vision_feature_select_strategy="full", vision_feature_layer=-1,
        vision_aspect_ratio="anyres_max_9",
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(LlavaOnevisionForConditionalGeneration(config), proc, folder)


def _qwen_tokenizer():
    return make_tokenizer(QWEN_WORDS, QWEN_SPECIALS, pad="<|endoftext|>", eos="<|im_end|>")


def _qwen_ids(tok) -> dict[str, int]:
    ids = tok.convert_tokens_to_ids
    return {
        "image_token_id": ids("<|image_pad|>"), "video_token_id": ids("<|video_pad|>"),
        "vision_start_token_id": ids("<|vision_start|>"),
        "vision_end_token_id": ids("<|vision_end|>"),
    }  # fmt: skip


# Qwen: 4-pixel patches merged 2x2, so one image token per 8x8 pixels; the image is resized
# keeping its aspect ratio, sides multiples of 8, to between min_pixels = 8*8*4 (4 tokens) and
# max_pixels = 8*8*20 (20 tokens): 32x40 (WxH) gives 20 tokens, 64x48 gives 3x5 = 15.
QWEN_PIXELS = {"shortest_edge": 8 * 8 * 4, "longest_edge": 8 * 8 * 20}


def write_tiny_qwen2_vl(folder: Path) -> Path:
    """Qwen2-VL: 4x4 patches, 2x2 merge, min/max pixels for 4-20 image tokens, M-RoPE."""
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    tok = _qwen_tokenizer()
    kw = {"patch_size": 4, "merge_size": 2, "temporal_patch_size": 2, "size": QWEN_PIXELS}
    proc = Qwen2VLProcessor(
        image_processor=Qwen2VLImageProcessor(**kw), video_processor=Qwen2VLVideoProcessor(**kw),
        tokenizer=tok, chat_template=QWEN2_TEMPLATE,
    )  # fmt: skip
    config = Qwen2VLConfig(
        vision_config={
            "depth": 1, "embed_dim": 16, "hidden_size": 32, "mlp_ratio": 2, "num_heads": 2,
            "patch_size": 4, "spatial_merge_size": 2, "temporal_patch_size": 2,
        },
        text_config={
            "vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                "mrope_section": [2, 3, 3]},
            "bos_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id, "initializer_range": INIT_STD,
        },
        **_qwen_ids(tok),
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(Qwen2VLForConditionalGeneration(config), proc, folder)


def write_tiny_qwen2_5_vl(folder: Path) -> Path:
    """Qwen2.5-VL: as Qwen2-VL, with the windowed-attention vision tower (one windowed block,
    one full-attention block)."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    tok = _qwen_tokenizer()
    kw = {"patch_size": 4, "merge_size": 2, "temporal_patch_size": 2, "size": QWEN_PIXELS}
    proc = Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(**kw), video_processor=Qwen2VLVideoProcessor(**kw),
        tokenizer=tok, chat_template=QWEN2_TEMPLATE,
    )  # fmt: skip
    config = Qwen2_5_VLConfig(
        vision_config={
            "depth": 2, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2,
            "patch_size": 4, "spatial_merge_size": 2, "temporal_patch_size": 2,
            "window_size": 16, "out_hidden_size": 32, "fullatt_block_indexes": [1],
        },
        text_config={
            "vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                "mrope_section": [2, 3, 3]},
            "bos_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id, "initializer_range": INIT_STD,
        },
        **_qwen_ids(tok),
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(Qwen2_5_VLForConditionalGeneration(config), proc, folder)


def write_tiny_qwen3_vl(folder: Path) -> Path:
    """Qwen3-VL: 4x4 patches, 2x2 merge (the real one: 16x16), mean/std 0.5 as the real one,
    interpolated position embeddings, one DeepStack layer, interleaved M-RoPE; no default
    system turn in the template."""
    from transformers import (
        Qwen2VLImageProcessor,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
        Qwen3VLProcessor,
        Qwen3VLVideoProcessor,
    )

    tok = _qwen_tokenizer()
    kw = {"patch_size": 4, "merge_size": 2, "temporal_patch_size": 2}
    proc = Qwen3VLProcessor(
        image_processor=Qwen2VLImageProcessor(
            **kw, size=QWEN_PIXELS, image_mean=[0.5] * 3, image_std=[0.5] * 3
        ),
        video_processor=Qwen3VLVideoProcessor(
            **kw, size={"shortest_edge": 8 * 8 * 4 * 2, "longest_edge": 8 * 8 * 20 * 4}
        ),
        tokenizer=tok, chat_template=QWEN3_TEMPLATE,
    )  # fmt: skip
    config = Qwen3VLConfig(
        vision_config={
            "depth": 2, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2,
            "patch_size": 4, "spatial_merge_size": 2, "temporal_patch_size": 2,
            "out_hidden_size": 32, "num_position_embeddings": 16,
            "deepstack_visual_indexes": [0],
        },
        text_config={
            "vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
            "head_dim": 16,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0,
                                "mrope_section": [4, 2, 2], "mrope_interleaved": True},
            "pad_token_id": tok.pad_token_id, "initializer_range": INIT_STD,
        },
        **_qwen_ids(tok),
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(Qwen3VLForConditionalGeneration(config), proc, folder)


def _idefics_like_tokenizer(bos: str):
    words = ["User", "Assistant"]
    specials = [bos, "<|end_of_text|>", "<pad>", "<fake_token_around_image>", "<image>",
                "<end_of_utterance>", "<global-img>", *ROW_COL]  # fmt: skip
    return make_tokenizer(words, specials, pad="<pad>", eos="<end_of_utterance>", bos=bos)


def write_tiny_idefics3(folder: Path) -> Path:
    """Idefics3: SigLIP-like tower on 16x16 tiles of 4x4 patches, pixel shuffle by 2, so 4
    image tokens a tile; images are resized to a longest edge of 64 (4 tiles, as the real 4*364)
    and split into 16x16 tiles plus a global tile: a 32x40 (WxH) image is 4x4 tiles + 1 = 68
    image tokens, 64x48 is 3x4 + 1 = 52."""
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
        LlamaConfig,
    )

    tok = _idefics_like_tokenizer("<|begin_of_text|>")
    proc = Idefics3Processor(
        image_processor=Idefics3ImageProcessor(
            size={"longest_edge": 64}, max_image_size={"longest_edge": 16},
            do_image_splitting=True,
        ),
        tokenizer=tok, image_seq_len=4, chat_template=IDEFICS3_TEMPLATE,
    )  # fmt: skip
    config = Idefics3Config(
        vision_config={
            "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
            "num_attention_heads": 2, "image_size": 16, "patch_size": 4,
        },
        text_config=LlamaConfig(
            vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
            initializer_range=INIT_STD,
        ),
        image_token_id=tok.convert_tokens_to_ids("<image>"), scale_factor=2,
        pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(Idefics3ForConditionalGeneration(config), proc, folder)


def write_tiny_smolvlm(folder: Path) -> Path:
    """SmolVLM: as Idefics3 (16x16 tiles, 4 tokens a tile, splitting from a longest edge of 64),
    with SmolVLM's processor, video processor and `<|im_start|>` chat format. The processor
    needs the `num2words` package."""
    from transformers import (
        LlamaConfig,
        SmolVLMConfig,
        SmolVLMForConditionalGeneration,
        SmolVLMImageProcessor,
        SmolVLMProcessor,
        SmolVLMVideoProcessor,
    )

    tok = _idefics_like_tokenizer("<|im_start|>")
    proc = SmolVLMProcessor(
        image_processor=SmolVLMImageProcessor(
            size={"longest_edge": 64}, max_image_size={"longest_edge": 16},
            do_image_splitting=True,
        ),
        video_processor=SmolVLMVideoProcessor(
            size={"longest_edge": 16}, max_image_size={"longest_edge": 16}
        ),
        tokenizer=tok, image_seq_len=4, chat_template=SMOLVLM_TEMPLATE,
    )  # fmt: skip
    config = SmolVLMConfig(
        vision_config={
            "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
            "num_attention_heads": 2, "image_size": 16, "patch_size": 4,
        },
        text_config=LlamaConfig(
            vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
            initializer_range=INIT_STD,
        ),
        image_token_id=tok.convert_tokens_to_ids("<image>"), scale_factor=2,
        pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(SmolVLMForConditionalGeneration(config), proc, folder)


FACTORIES: dict[str, Callable[[Path], Path]] = {
    "llava_next": write_tiny_llava_next,
    "llava_onevision": write_tiny_llava_onevision,
    "qwen2_vl": write_tiny_qwen2_vl,
    "qwen2_5_vl": write_tiny_qwen2_5_vl,
    "qwen3_vl": write_tiny_qwen3_vl,
    "idefics3": write_tiny_idefics3,
    "smolvlm": write_tiny_smolvlm,
}


def load(folder: Path) -> tuple[Any, Any]:
    """The processor and the model (eval mode), through the Auto classes, offline."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(folder, local_files_only=True).eval()
    return processor, model


def reference_logprobs(
    folder: Path, image: Any, prompt: str, continuation: str, *, drop: tuple[str, ...] = ()
) -> np.ndarray:
    """The per-token log-probabilities of `continuation` teacher-forced after `prompt` (a string
    that already holds the chat template with the image placeholder), one pair, unbatched:
    every key the processor returns goes to the model (less `drop`, to show what a key does)."""
    processor, model = load(folder)
    enc = processor(text=[prompt + continuation], images=[image], return_tensors="pt")
    n = len(processor(text=[prompt], images=[image])["input_ids"][0])
    ids = enc["input_ids"][0]
    head = processor(text=[prompt], images=[image], return_tensors="pt")["input_ids"][0]
    assert torch.equal(ids[:n], head), "the prompt's ids are not a prefix of the full ids"
    assert n < len(ids), "the continuation has no tokens"
    inputs = {k: v for k, v in enc.items() if k not in drop}
    with torch.no_grad():
        logp = torch.log_softmax(model(**inputs).logits[0].double(), dim=-1)
    return np.array([logp[t - 1, ids[t]].item() for t in range(n, len(ids))])
