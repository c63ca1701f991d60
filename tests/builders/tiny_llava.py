"""A tiny random LLaVA written to a folder, for the VQAScore and VisualGPTScore backends."""

from __future__ import annotations

from pathlib import Path

from builders.backends import optional_import

torch = optional_import("torch")


WORDS = ["<unk>", "<pad>", "<s>", "</s>", "<image>", "USER:", "ASSISTANT:", "Does", "this",
         "figure", "show", '"a', "dog", "cat", "runs", 'sleeps"?', "Please", "answer", "yes",
         "or", "no.", "Yes", "No"]  # fmt: skip


TEMPLATE = (
    "{% for m in messages %}{{ m['role'].upper() }}: {% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image> {% else %}{{ c['text'] }}{% endif %}{% endfor %} "
    "{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


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
