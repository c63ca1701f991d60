"""Tiny random generative VLMs of six more families, built offline from configs, for tests.

Each `write_tiny_*` factory saves a processor (a word-level `tokenizers` vocabulary wrapped in
PreTrainedTokenizerFast, the family's image processor) and a randomly initialised model
(`torch.manual_seed(0)`, hidden sizes of 16, one or two layers, 32x32 images, 4 to 16 image or
query tokens) with `save_pretrained`, so the folder loads through the normal code path:
`AutoProcessor.from_pretrained` and `AutoModelForImageTextToText.from_pretrained`.

The tokenizers copy what the real checkpoints' tokenizers add: Gemma's and Llama's a BOS in
front, OPT's `</s>` as BOS in front, T5's `</s>` EOS at the end; PaliGemma's processor turns the
tokenizer's own BOS/EOS off and writes `<image>...<bos>{prefix}\\n` itself. Gemma 3 gets the real
chat template (it starts with `{{ bos_token }}`); PaliGemma, BLIP-2 and InstructBLIP have none,
like the real checkpoints.

`reference_logprobs` is the direct computation with transformers, one pair at a time, that a
scorer's teacher-forced log-probabilities of a continuation should match.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from builders.backends import optional_import

torch = optional_import("torch")

# Words every vocabulary holds (the brief's list, and a few more for natural prompts).
WORDS = ["a", "dog", "cat", "runs", "sleeps", "on", "the", "bed", "red", "blue", "photo", "of",
         "Does", "this", "figure", "show", "Please", "answer", "yes", "or", "no", "Yes", "No",
         "Describe", "image", ".", "?", '"', "Question:", "Answer:", "en", "What", "is", "in",
         "user", "model", "\n", "\n\n", "\n\n\n"]  # fmt: skip

GEMMA3_CHAT_TEMPLATE = (  # google/gemma-3-*-it's template, as shipped
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    '    {%- set first_user_prefix = "" -%}\n'
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    '        {{ raise_exception("Conversation roles must alternate '
    'user/assistant/user/assistant/...") }}\n'
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    '        {%- set role = "model" -%}\n'
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    '        {{ raise_exception("Invalid content type") }}\n'
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\\n'}}\n"
    "{%- endif -%}\n"
)

IMAGE_SIZE = 32
BLIP_QUERY_TOKENS = 4
PALIGEMMA_PATCH = 8  # (32 / 8)^2 = 16 image tokens
GEMMA3_IMAGE_TOKENS = 4  # 16 SigLIP patches average-pooled to 2x2

VISION = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
          "num_attention_heads": 2, "image_size": IMAGE_SIZE}  # fmt: skip
QFORMER = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
           "num_attention_heads": 2, "max_position_embeddings": 64}  # fmt: skip


def _word_tokenizer(
    specials: list[str],
    *,
    lowercase: bool = False,
    template: tuple[str, str, list[str]] | None = None,
    **kwargs: Any,
):
    """A word-level fast tokenizer: `specials` first (ids 0, 1, ...), then WORDS.

    Text is split on spaces (dropped), runs of up to three newlines and `. ? "` (kept as
    tokens); special tokens are matched before splitting. `template` = (single, pair, special
    tokens) for a TemplateProcessing post-processor (BERT's `[CLS] $A [SEP]`); Gemma's, Llama's
    and OPT's BOS and T5's EOS come from `add_bos_token` / `add_eos_token` in `kwargs`."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    words = [w.lower() for w in WORDS] if lowercase else WORDS
    vocab: dict[str, int] = {}
    for w in [*specials, *words]:
        vocab.setdefault(w, len(vocab))
    tk = Tokenizer(models.WordLevel(vocab, unk_token=kwargs["unk_token"]))
    if lowercase:
        tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\n{1,3}"), behavior="isolated"),
        pre_tokenizers.Split(" ", behavior="removed"),
        pre_tokenizers.Split(Regex(r'[.?"]'), behavior="isolated"),
    ])  # fmt: skip
    if template is not None:
        single, pair, names = template
        tk.post_processor = processors.TemplateProcessing(
            single=single, pair=pair, special_tokens=[(n, vocab[n]) for n in names]
        )
    named = {k: v for k, v in kwargs.items() if k.endswith("_token")}
    extra = [t for t in specials if t not in named.values()]
    return PreTrainedTokenizerFast(tokenizer_object=tk, extra_special_tokens=extra, **kwargs)


def _save(folder: Path, model: Any, processor: Any) -> Path:
    folder = Path(folder)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


# --- PaliGemma (SigLIP + Gemma, prefix-LM) -----------------------------------------------------


def write_tiny_paligemma(folder: Path) -> Path:
    """PaliGemma 1 shape: SigLIP tower, linear projector, Gemma; 16 image tokens; no chat
    template. The processor adds `<image>`, 1024 `<locNNNN>` and 128 `<segNNN>` tokens."""
    from transformers import (
        GemmaConfig,
        PaliGemmaConfig,
        PaliGemmaForConditionalGeneration,
        PaliGemmaProcessor,
        SiglipImageProcessor,
        SiglipVisionConfig,
    )  # fmt: skip

    tok = _word_tokenizer(["<pad>", "<eos>", "<bos>", "<unk>"], pad_token="<pad>",
                          eos_token="<eos>", bos_token="<bos>", unk_token="<unk>",
                          add_bos_token=True)  # fmt: skip
    image_processor = SiglipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    image_processor.image_seq_length = (IMAGE_SIZE // PALIGEMMA_PATCH) ** 2
    proc = PaliGemmaProcessor(image_processor=image_processor, tokenizer=tok)
    config = PaliGemmaConfig(
        vision_config=SiglipVisionConfig(**VISION, patch_size=PALIGEMMA_PATCH),
        text_config=GemmaConfig(
            vocab_size=len(proc.tokenizer), hidden_size=16, intermediate_size=32,
            num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
            pad_token_id=0, eos_token_id=1, bos_token_id=2,
        ),
        image_token_index=proc.image_token_id, vocab_size=len(proc.tokenizer),
        projection_dim=16, hidden_size=16,
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(folder, PaliGemmaForConditionalGeneration(config), proc)


# --- Gemma 3 (SigLIP + Gemma 3, chat template) -------------------------------------------------


def write_tiny_gemma3(folder: Path) -> Path:
    """Gemma 3 shape: SigLIP tower average-pooled to 4 soft tokens, Gemma 3 text model with one
    sliding and one full attention layer; the real chat template; BOS added by the tokenizer."""
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
        Gemma3Processor,
        Gemma3TextConfig,
        SiglipVisionConfig,
    )  # fmt: skip

    mm = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
          "image_token": "<image_soft_token>"}  # fmt: skip
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>",
                *mm.values()]  # fmt: skip
    tok = _word_tokenizer(specials, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
                          unk_token="<unk>", add_bos_token=True, **mm)  # fmt: skip
    proc = Gemma3Processor(
        image_processor=Gemma3ImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
        tokenizer=tok, chat_template=GEMMA3_CHAT_TEMPLATE, image_seq_length=GEMMA3_IMAGE_TOKENS,
    )  # fmt: skip
    ids = {k: tok.convert_tokens_to_ids(v) for k, v in mm.items()}
    config = Gemma3Config(
        text_config=Gemma3TextConfig(
            vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1, head_dim=8, query_pre_attn_scalar=8,
            sliding_window=512, layer_types=["sliding_attention", "full_attention"],
            pad_token_id=0, eos_token_id=1, bos_token_id=2,
        ),
        vision_config=SiglipVisionConfig(**VISION, patch_size=8),
        mm_tokens_per_image=GEMMA3_IMAGE_TOKENS, boi_token_index=ids["boi_token"],
        eoi_token_index=ids["eoi_token"], image_token_index=ids["image_token"],
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(folder, Gemma3ForConditionalGeneration(config), proc)


# --- BLIP-2 and InstructBLIP -------------------------------------------------------------------


def _opt_tokenizer():
    # OPT's GPT-2 BPE: <s>=0 <pad>=1 </s>=2 <unk>=3, `</s>` is both BOS (prepended) and EOS.
    return _word_tokenizer(["<s>", "<pad>", "</s>", "<unk>"], pad_token="<pad>",
                           bos_token="</s>", eos_token="</s>", unk_token="<unk>",
                           add_bos_token=True)  # fmt: skip


def _llama_tokenizer():
    # Vicuna's Llama SentencePiece: <unk>=0 <s>=1 </s>=2, `<s>` prepended; a <pad> here.
    return _word_tokenizer(["<unk>", "<s>", "</s>", "<pad>"], pad_token="<pad>", bos_token="<s>",
                           eos_token="</s>", unk_token="<unk>", add_bos_token=True)  # fmt: skip


def _t5_tokenizer():
    # Flan-T5's SentencePiece: <pad>=0 </s>=1 <unk>=2, no BOS, `</s>` appended.
    return _word_tokenizer(["<pad>", "</s>", "<unk>"], pad_token="<pad>", eos_token="</s>",
                           unk_token="<unk>", add_eos_token=True)  # fmt: skip


def _bert_tokenizer():
    # the Q-Former's bert-base-uncased: lower-cased, `[CLS] ... [SEP]`.
    return _word_tokenizer(
        ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], lowercase=True,
        template=("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1", ["[CLS]", "[SEP]"]),
        pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]",
    )  # fmt: skip


def _opt_config(vocab_size: int):
    from transformers import OPTConfig

    return OPTConfig(vocab_size=vocab_size, hidden_size=16, ffn_dim=32, num_hidden_layers=2,
                     num_attention_heads=2, word_embed_proj_dim=16, max_position_embeddings=64,
                     pad_token_id=1, bos_token_id=2, eos_token_id=2)  # fmt: skip


def _llama_config(vocab_size: int):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=vocab_size, hidden_size=16, intermediate_size=32,
                       num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                       max_position_embeddings=64, pad_token_id=3, bos_token_id=1,
                       eos_token_id=2)  # fmt: skip


def _t5_config(vocab_size: int):
    from transformers import T5Config

    return T5Config(vocab_size=vocab_size, d_model=16, d_kv=8, d_ff=32, num_layers=1,
                    num_decoder_layers=1, num_heads=2, feed_forward_proj="gated-gelu",
                    tie_word_embeddings=False, pad_token_id=0, eos_token_id=1,
                    decoder_start_token_id=0)  # fmt: skip


def _blip2(folder: Path, tok: Any, text_config: Callable[[int], Any]) -> Path:
    from transformers import (
        Blip2Config,
        Blip2ForConditionalGeneration,
        Blip2Processor,
        BlipImageProcessor,
    )  # fmt: skip

    proc = Blip2Processor(
        image_processor=BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
        tokenizer=tok, num_query_tokens=BLIP_QUERY_TOKENS,
    )  # fmt: skip
    config = Blip2Config(
        vision_config={**VISION, "patch_size": 16}, qformer_config=QFORMER,
        text_config=text_config(len(tok)), num_query_tokens=BLIP_QUERY_TOKENS,
        image_token_index=tok.convert_tokens_to_ids("<image>"), image_text_hidden_size=16,
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(folder, Blip2ForConditionalGeneration(config), proc)


def _instructblip(folder: Path, tok: Any, text_config: Callable[[int], Any]) -> Path:
    from transformers import (
        BlipImageProcessor,
        InstructBlipConfig,
        InstructBlipForConditionalGeneration,
        InstructBlipProcessor,
    )  # fmt: skip

    qtok = _bert_tokenizer()
    proc = InstructBlipProcessor(
        image_processor=BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}),
        tokenizer=tok, qformer_tokenizer=qtok, num_query_tokens=BLIP_QUERY_TOKENS,
    )  # fmt: skip
    config = InstructBlipConfig(
        vision_config={**VISION, "patch_size": 16},
        qformer_config={**QFORMER, "vocab_size": len(qtok), "pad_token_id": 0},
        text_config=text_config(len(tok)), num_query_tokens=BLIP_QUERY_TOKENS,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
    )  # fmt: skip
    torch.manual_seed(0)
    return _save(folder, InstructBlipForConditionalGeneration(config), proc)


def write_tiny_blip2_opt(folder: Path) -> Path:
    """BLIP-2 with OPT: ViT, Q-Former with 4 queries, OPT; `</s>` BOS; no chat template."""
    return _blip2(folder, _opt_tokenizer(), _opt_config)


def write_tiny_blip2_t5(folder: Path) -> Path:
    """BLIP-2 with Flan-T5: the prompt to the encoder, `</s>` appended; no chat template."""
    return _blip2(folder, _t5_tokenizer(), _t5_config)


def write_tiny_instructblip(folder: Path) -> Path:
    """InstructBLIP with a Llama (Vicuna) LM, and a lower-casing BERT tokenizer for the
    Q-Former's instruction; `<s>` BOS; no chat template."""
    return _instructblip(folder, _llama_tokenizer(), _llama_config)


def write_tiny_instructblip_t5(folder: Path) -> Path:
    """InstructBLIP with Flan-T5: instruction to the Q-Former and the encoder."""
    return _instructblip(folder, _t5_tokenizer(), _t5_config)


FACTORIES: dict[str, Callable[[Path], Path]] = {
    "paligemma": write_tiny_paligemma,
    "gemma3": write_tiny_gemma3,
    "blip2_opt": write_tiny_blip2_opt,
    "blip2_t5": write_tiny_blip2_t5,
    "instructblip": write_tiny_instructblip,
    "instructblip_t5": write_tiny_instructblip_t5,
}


# --- the direct computation --------------------------------------------------------------------


def load(folder: Path) -> tuple[Any, Any]:
    """The processor and the model in eval mode, through the Auto classes. Cached per folder
    (and its config.json's mtime): the same objects come back, so do not modify them."""
    path = Path(folder).resolve()
    return _load(str(path), (path / "config.json").stat().st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _load(folder: str, mtime_ns: int) -> tuple[Any, Any]:
    from transformers import AutoModelForImageTextToText, AutoProcessor

    proc = AutoProcessor.from_pretrained(folder, local_files_only=True)
    model = AutoModelForImageTextToText.from_pretrained(folder, local_files_only=True).eval()
    return proc, model


def _gather(logits: torch.Tensor, ids: torch.Tensor, start: int, stop: int) -> np.ndarray:
    """log P(ids[t] | ids[:t]) for start <= t < stop, from next-token logits (float64)."""
    logp = torch.log_softmax(logits.double(), dim=-1)
    return np.array([logp[t - 1, ids[t]].item() for t in range(start, stop)], dtype=np.float64)


def reference_logprobs(folder: Path, image: Any, prompt: str, continuation: str) -> np.ndarray:
    """Per-token log-probabilities of `continuation` teacher-forced after `prompt` and `image`,
    one pair, computed directly with transformers the way each family is meant to be used.

    - PaliGemma (prefix-LM): `prompt` is the prefix, `continuation` the processor's `suffix`
      (token_type_ids 1, attended causally); the suffix's tokens without the `<eos>` the
      processor appends to it.
    - Gemma 3, BLIP-2 OPT, InstructBLIP Llama (decoder-only): the processor on
      `prompt + continuation`; the tokens after the prompt's own. Gemma 3's `prompt` is a
      chat-templated string that starts with `<bos>`, so the tokenizer must not add a second
      one (`add_special_tokens=False`, what `processor.apply_chat_template(tokenize=True)` does).
    - BLIP-2 / InstructBLIP Flan-T5 (encoder-decoder): `prompt` to the encoder, the
      continuation's tokens (no `</s>`) as decoder labels.
    InstructBLIP's Q-Former reads the instruction, i.e. the prompt alone, never the answer."""
    proc, model = load(folder)
    kind = model.config.model_type
    tok = proc.tokenizer
    with torch.no_grad():
        if kind == "paligemma":
            if "<image>" not in prompt:
                prompt = "<image>" + prompt
            enc = proc(text=[prompt], images=[image], suffix=[continuation], return_tensors="pt")
            enc.pop("labels")
            ids = enc["input_ids"][0]
            suffix = (enc["token_type_ids"][0] == 1).nonzero()[:, 0]
            start, stop = int(suffix[0]), int(suffix[-1]) + 1
            assert ids[stop - 1] == tok.eos_token_id, "the processor appends <eos> to a suffix"
            logits = model(**enc).logits[0]
            return _gather(logits, ids, start, stop - 1)  # without the appended <eos>
        if model.config.text_config.is_encoder_decoder:
            enc = proc(text=[prompt], images=[image], return_tensors="pt")
            labels = torch.tensor([tok(continuation, add_special_tokens=False)["input_ids"]])
            logits = model(**enc, labels=labels).logits[0]
            logp = torch.log_softmax(logits.double(), dim=-1)
            return logp.gather(1, labels[0][:, None])[:, 0].numpy()
        kw = {}
        if tok.bos_token is not None and prompt.startswith(tok.bos_token):
            kw["add_special_tokens"] = False
        head = proc(text=[prompt], images=[image], return_tensors="pt", **kw)
        enc = proc(text=[prompt + continuation], images=[image], return_tensors="pt", **kw)
        n = head["input_ids"].shape[1]
        ids = enc["input_ids"][0]
        assert torch.equal(ids[:n], head["input_ids"][0]), "the prompt's tokens are not a prefix"
        if kind == "instructblip":
            enc["qformer_input_ids"] = head["qformer_input_ids"]
            enc["qformer_attention_mask"] = head["qformer_attention_mask"]
        logits = model(**enc).logits[0]
        return _gather(logits, ids, n, len(ids))
