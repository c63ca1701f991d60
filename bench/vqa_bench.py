"""VQAScore speed: lexsem's `vqa:` pair scorer vs a per-pair loop like the VQAScore reference's.

A small random-weight LLaVA-1.5-shaped model (a CLIP vision tower at 224 px, patch 14: 256 image
tokens; a 4-layer Llama LM; a word-level vocabulary built from the captions; nothing
downloaded) scores every (image, caption) pair of the SugarCrepe++ items whose image is among
the first N images (all five subsets: P1, P2 and N of each item), on generated JPEGs of COCO
sizes. Measured, one process, the same pairs:

- *per-pair loop*, as the VQAScore reference's (t2v_metrics `llava_model.py`) `forward` does
  it: batches of pairs, each pair its own image (padded to a square with the image processor's
  mean colour) and its whole sequence (LLaVA's system message, ` USER: <image>\n{question}
  ASSISTANT: Yes</s>`) through the model, the score exp(-mean cross-entropy) of the answer's
  tokens and `</s>`;
- *lexsem cold*: `lexsem.engine.pair_scores.pair_scores` of `vqa:` (its default `score=vqa`:
  the reference's LLaVA-1.5 recipe) with a fresh request store: identical (image, caption)
  pairs once, an image decoded and padded once, its system message + image tokens + the
  question's opening words run once and their key/value cache reused for all its captions;
- *lexsem warm*: the same call again from the store (a new scorer: nothing loaded).

Scores must agree to 1e-4. Prints pairs/s, the ratio and the peak RSS; then the floor: the
FLOPs of each scheme's work (torch's FlopCounterMode, on a run of its own), its share of the
machine's fp32 matmul throughput (`floor.py`) and the CPU kind. `--json OUT` writes them.

    python bench/vqa_bench.py                 # 30 images (about 250 pairs), CPU
    python bench/vqa_bench.py --images 200
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor import count_flops, cpu_kind, floor_line, fraction, matmul_gflops  # bench/: on path
from public_data import public_data  # bench/ is not a package: its folder is on the path

QUESTION = 'Does this figure show "{text}"? Please answer yes or no.'
SYSTEM = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant "
    "gives helpful, detailed, and polite answers to the user's questions."
)
TEMPLATE = (
    "{% for m in messages %}{{ m['role'].upper() }}: {% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image>\n{% else %}{{ c['text'] }}{% endif %}{% endfor %} "
    "{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
SUBSETS = ("replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
COCO_SIZES = ((640, 480), (640, 427), (480, 640), (500, 375), (640, 360))


def load_pairs(data: Path, n_images: int) -> list[tuple[str, str]]:
    """(image file, caption) of every SugarCrepe++ item whose image is among the first
    `n_images` (sorted), P1, P2 and N, in item order."""
    items = []
    for subset in SUBSETS:
        raw = json.loads((data / "sugarcrepe_pp" / f"{subset}.json").read_text())
        items += list(raw.values()) if isinstance(raw, dict) else raw
    keep = set(sorted({it["filename"] for it in items})[:n_images])
    return [
        (it["filename"], it[k])
        for it in items
        if it["filename"] in keep
        for k in ("caption", "caption2", "negative_caption")
    ]


def words(texts: Sequence[str]) -> list[str]:
    from tokenizers import pre_tokenizers

    pre = pre_tokenizers.Whitespace()
    return sorted({w for t in texts for w, _ in pre.pre_tokenize_str(t)})


def build_model(folder: Path, texts: Sequence[str]) -> None:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    special = ["<unk>", "<pad>", "<s>", "</s>", "<image>"]
    extra = words([QUESTION, SYSTEM, "USER: ASSISTANT: Yes No yes no"])
    vocab = {w: i for i, w in enumerate(dict.fromkeys([*special, *extra, *words(texts)]))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>", bos_token="<s>",
        eos_token="</s>", additional_special_tokens=["<image>"],
    )  # fmt: skip
    proc = LlavaProcessor(
        image_processor=CLIPImageProcessor(
            size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224}
        ),
        tokenizer=tok, patch_size=14, vision_feature_select_strategy="default",
        chat_template=TEMPLATE, image_token="<image>", num_additional_image_tokens=1,
    )  # fmt: skip
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=128, intermediate_size=512, num_hidden_layers=2, num_attention_heads=4,
            image_size=224, patch_size=14,
        ),
        text_config=LlamaConfig(
            vocab_size=len(vocab), hidden_size=256, intermediate_size=1024, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=4,
        ),
        image_token_index=vocab["<image>"], vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )  # fmt: skip
    torch.manual_seed(0)
    LlavaForConditionalGeneration(config).save_pretrained(folder)
    proc.save_pretrained(folder)


def make_images(folder: Path, names: Sequence[str]) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    for i, name in enumerate(names):
        w, h = COCO_SIZES[i % len(COCO_SIZES)]
        small = rng.integers(0, 256, (h // 16, w // 16, 3), dtype=np.uint8)
        Image.fromarray(small).resize((w, h)).save(folder / name, quality=90)


def expand2square(image: Any, mean: Sequence[float]) -> Any:
    """The image in the middle of a square of its longer side, the rest the mean colour."""
    from PIL import Image

    w, h = image.size
    if w == h:
        return image
    side = max(w, h)
    out = Image.new(image.mode, (side, side), tuple(int(x * 255) for x in mean))
    out.paste(image, (0, (side - h) // 2) if w > h else ((side - w) // 2, 0))
    return out


def reference_loop(
    folder: Path, images: Path, pairs: Sequence[tuple[str, str]], batch: int
) -> np.ndarray:
    """The per-pair procedure: each pair's padded image and whole sequence through the model,
    the answer's tokens and `</s>` labelled, score = exp(-mean cross-entropy over them)."""
    import torch
    from PIL import Image
    from transformers import AutoModelForImageTextToText, AutoProcessor

    proc = AutoProcessor.from_pretrained(folder)
    proc.tokenizer.padding_side = "right"
    model = AutoModelForImageTextToText.from_pretrained(folder).eval()
    mean = proc.image_processor.image_mean
    out = []
    for start in range(0, len(pairs), batch):
        chunk = pairs[start : start + batch]
        ims = [expand2square(Image.open(images / f).convert("RGB"), mean) for f, _ in chunk]
        prompts = [
            f"{SYSTEM} USER: <image>\n{QUESTION.format(text=t)} ASSISTANT: " for _, t in chunk
        ]
        full = [p + "Yes</s>" for p in prompts]
        enc = proc(text=full, images=ims, return_tensors="pt", padding=True)
        tok = proc.tokenizer  # the label tokens' count, from the text alone
        n_answer = [
            len(tok(f)["input_ids"]) - len(tok(p)["input_ids"])
            for f, p in zip(full, prompts, strict=True)
        ]
        labels = torch.full_like(enc["input_ids"], -100)
        for i, k in enumerate(n_answer):
            end = int(enc["attention_mask"][i].sum())
            labels[i, end - k : end] = enc["input_ids"][i, end - k : end]
        with torch.inference_mode():
            logits = model(**enc).logits
        ce = torch.nn.functional.cross_entropy(
            logits[:, :-1].transpose(1, 2).float(), labels[:, 1:], reduction="none"
        )
        mask = (labels[:, 1:] != -100).float()
        out += torch.exp(-(ce * mask).sum(1) / mask.sum(1)).tolist()
    return np.array(out)


def lexsem_scores(
    folder: Path, images: Path, pairs: Sequence[tuple[str, str]], cache: Path, batch: int
) -> tuple[np.ndarray, Any]:
    from lexsem.engine.pair_scores import pair_scores
    from lexsem.engine.request_store import RequestStore
    from lexsem.images.image_store import ImageStore
    from lexsem.models.factory import load_model
    from lexsem.models.protocols import fingerprint_key

    scorer = load_model(f"vqa:{folder}", device="cpu")
    store = ImageStore(roots={"bench": images}, default_root=None)
    refs = [(f"bench:{f}", t) for f, t in pairs]
    with RequestStore(cache, fingerprint_key(scorer.fingerprint)) as rs:
        vals, stats, skipped = pair_scores(scorer, refs, store, rs, batch_size=batch, num_workers=0)
    assert not skipped, skipped
    return vals, stats


def timed(fn: Any, *args: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=30, help="SugarCrepe++ images (default 30)")
    ap.add_argument("--batch", type=int, default=16, help="pairs per forward (default 16)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    data = public_data("sugarcrepe_pp")
    if data is None:
        return 2
    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    pairs = load_pairs(data, args.images)
    with tempfile.TemporaryDirectory(prefix="lexsem-vqa-bench-") as tmp:
        tmpd = Path(tmp)
        model, images = tmpd / "model", tmpd / "images"
        images.mkdir()
        build_model(model, [t for _, t in pairs])
        make_images(images, sorted({f for f, _ in pairs}))
        n_unique = len(set(pairs))
        print(f"{len(pairs)} pairs ({n_unique} unique) on {args.images} images, "
              f"torch {torch.__version__}, {torch.get_num_threads()} threads")  # fmt: skip
        ref, ref_s = timed(reference_loop, model, images, pairs, args.batch)
        (cold, stats), cold_s = timed(lexsem_scores, model, images, pairs, tmpd / "c", args.batch)
        (warm, wstats), warm_s = timed(lexsem_scores, model, images, pairs, tmpd / "c", args.batch)
        # the floor: FLOPs of each scheme's work (counted on a run of its own: a fresh store
        # for lexsem) and the machine's fp32 matmul throughput
        ref_flops = count_flops(reference_loop, model, images, pairs, args.batch)[0]
        cold_flops = count_flops(lexsem_scores, model, images, pairs, tmpd / "f", args.batch)[0]
        floor = matmul_gflops("fp32")[0]
    diff = float(np.max(np.abs(cold - ref)))
    assert np.array_equal(cold, warm), "the warm rerun changed a score"
    assert wstats.n_scored == 0, "the warm rerun scored pairs again"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    figures = {
        "pairs": len(pairs), "unique_pairs": n_unique, "images": args.images,
        "reference_s": ref_s, "lexsem_cold_s": cold_s, "lexsem_warm_s": warm_s,
        "ratio_cold": ref_s / cold_s, "max_abs_diff": diff, "peak_rss_gb": rss,
        "cpu": cpu_kind().line(), "fp32_floor_gflops": floor, "reference_flops": ref_flops,
        "lexsem_cold_flops": cold_flops,
        "reference_floor_share": fraction(ref_flops, ref_s, floor),
        "lexsem_cold_floor_share": fraction(cold_flops, cold_s, floor),
    }  # fmt: skip
    print(f"per-pair loop (reference procedure): {ref_s:7.2f} s  {len(pairs) / ref_s:7.1f} pairs/s")
    print(f"lexsem vqa: cold                   : {cold_s:7.2f} s  "
          f"{len(pairs) / cold_s:7.1f} pairs/s  ({stats.n_scored} scored, "
          f"{stats.n_images} images decoded)")  # fmt: skip
    print(f"lexsem vqa: warm (from the store)  : {warm_s:7.2f} s")
    print(f"ratio, cold: {ref_s / cold_s:.2f}x; max |score difference| {diff:.2e}; "
          f"peak RSS {rss:.2f} GB")  # fmt: skip
    print(cpu_kind().line())
    print(floor_line("per-pair loop", ref_flops, ref_s, floor, "fp32"))
    print(floor_line("lexsem vqa: cold", cold_flops, cold_s, floor, "fp32")
          + f"; the loop does {ref_flops / max(cold_flops, 1):.2f}x its FLOPs")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    if diff > 1e-4:
        print("FAIL: scores differ by more than 1e-4", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
