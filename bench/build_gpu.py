"""Generation throughput of `lexsem build` on a GPU: text through the `chat:` backend, and images
through the `diffusers:` backend.

Text: a chat model (`--model`: a local folder; by default a random model of Qwen2.5-0.5B-
Instruct's shape — hidden 896, 24 layers, 14 heads, 2 key/value heads, 151,936 tokens — with a
word-level vocabulary and a chat template, built here, nothing downloaded: the speed of a real
0.5B model, not its answers) answers `--prompts` captions greedily, at most `--new-tokens`
tokens each:

- *one at a time*: transformers' `model.generate` on each prompt alone (the first
  `--loop-prompts` of them, to bound the time);
- *batched*: the backend's `send_batch` (left-padded batches of `--batch-size`), as a build
  sends them; its answers to the first `--loop-prompts` prompts must equal the loop's under
  bf16 within the share `--min-agree` (default 0.9: bf16 batched and unbatched kernels round
  differently, and a flipped greedy token changes the rest of the answer; fp32 would match).

Prints prompts/s and generated tokens/s of each, the ratio, and the peak GPU memory.

Images (`--image-model DIR`, a diffusers pipeline folder, `--image-options` added to its spec,
e.g. ``unet=DIR&guidance=5&steps=50&variant=fp16&dtype=fp16`` for BiVLC's SDXL-DPO): `--images`
captions with BiVLC's prompt suffix, `--image-k` images each, as `generate_images` asks them
(`lexsem.construct.images`: an `ImageRequest` per image, seeded by `image_seed`, saved at
`--image-size` px), through `DiffusersGenerator.generate` in batches of `--image-batch-size`
(what the build's image engine, `lexsem.engine.image_gen`, sends); images/s and peak memory.
Skipped, with the reason printed, when the folder is not given or the diffusers package is
missing. `--skip-text` measures images only.

    python bench/build_gpu.py                                   # the random 0.5B shape, bf16
    python bench/build_gpu.py --model /models/Qwen2.5-0.5B-Instruct --batch-size 128
    python bench/build_gpu.py --skip-text --image-model /models/sdxl --images 8 \
        --image-options "unet=/models/dpo-unet&guidance=5&steps=50&variant=fp16&dtype=fp16"
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from build_bench import SPECIALS, WORDS, captions, chat_tokenizer


def random_qwen(folder: Path) -> Path:
    """A random model of Qwen2.5-0.5B-Instruct's shape with a word-level chat tokenizer."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    vocab = [*SPECIALS, *WORDS]
    vocab += [f"w{i}" for i in range(151936 - len(vocab))]  # Qwen2.5's vocabulary size
    tok = chat_tokenizer(vocab)
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=len(vocab), hidden_size=896, intermediate_size=4864,
                      num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                      max_position_embeddings=4096, bos_token_id=1, eos_token_id=2,
                      tie_word_embeddings=True)  # fmt: skip
    Qwen2ForCausalLM(cfg).to(torch.bfloat16).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def text_throughput(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    import torch

    from lexsem.models.chat import ChatRequest
    from lexsem.models.factory import load_model

    spec = (f"chat:{folder}?dtype={args.dtype}&device={args.device}&batch_size={args.batch_size}"
            f"&max_new_tokens={args.new_tokens}")  # fmt: skip
    model = load_model(spec)
    prompts = captions(args.prompts)
    bodies = [model.request_body(ChatRequest.ask(p, None)) for p in prompts]
    model.send_batch(None, bodies[: args.batch_size])  # load and warm up
    hf, tok = model._model, model._tokenizer
    n_loop = min(args.loop_prompts, len(prompts))
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    loop, loop_tokens = [], 0
    with torch.inference_mode():
        for b in bodies[:n_loop]:
            ids = torch.tensor([model.prompt_ids(b["messages"])], device=model.device)
            new = hf.generate(
                ids, attention_mask=torch.ones_like(ids), do_sample=False,
                max_new_tokens=args.new_tokens,
            )[0, ids.shape[1] :].tolist()  # fmt: skip
            loop_tokens += len(new)
            if tok.eos_token_id in new:
                new = new[: new.index(tok.eos_token_id)]
            loop.append(tok.decode(new, skip_special_tokens=True).strip())
    torch.cuda.synchronize()
    loop_s = time.perf_counter() - start
    start = time.perf_counter()
    batched = [text for text, _ in model.send_batch(None, bodies)]
    torch.cuda.synchronize()
    batch_s = time.perf_counter() - start
    agree = sum(a == b for a, b in zip(batched[:n_loop], loop, strict=True)) / n_loop
    batch_tokens = sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in batched)
    return {
        "prompts": len(prompts), "loop_prompts": n_loop, "loop_s": loop_s, "batch_s": batch_s,
        "loop_prompts_per_s": n_loop / loop_s, "batch_prompts_per_s": len(prompts) / batch_s,
        "loop_tokens_per_s": loop_tokens / loop_s, "batch_answer_tokens_per_s": batch_tokens
        / batch_s, "agree": agree, "peak_gpu_mib": torch.cuda.max_memory_allocated() / 2**20,
    }  # fmt: skip


def image_requests(args: argparse.Namespace) -> list[Any]:
    """The requests `generate_images` makes for `--images` captions, `--image-k` each, seeded
    as a build seeded 0 seeds them."""
    from lexsem.construct.images import BIVLC_SUFFIX, image_prompt
    from lexsem.models.image_gen import ImageRequest, image_seed

    prompts = [image_prompt(c, BIVLC_SUFFIX, True) for c in captions(args.images)]
    return [ImageRequest(p, k, image_seed(0, p, k), args.image_size)
            for p in prompts for k in range(args.image_k)]  # fmt: skip


def image_throughput(args: argparse.Namespace) -> dict[str, Any] | str:
    """Images/s through the `diffusers:` backend, or why it was skipped."""
    import importlib.util

    if args.image_model is None or not Path(args.image_model).is_dir():
        return "skipped: give --image-model DIR (a diffusers pipeline folder)"
    if importlib.util.find_spec("diffusers") is None:
        return "skipped: the diffusers package is not installed (pip install 'lexsem[images]')"
    import torch

    from lexsem.models.factory import load_model

    options = f"?{args.image_options.lstrip('&?')}" if args.image_options else ""
    model = load_model(f"diffusers:{args.image_model}{options}", device=args.device)
    requests = image_requests(args)
    model.generate(requests[:1])  # load and warm up
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    n = 0
    for i in range(0, len(requests), args.image_batch_size):
        n += len(model.generate(requests[i : i + args.image_batch_size]))
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return {"spec": model.name, "prompts": args.images, "images": n, "seconds": seconds,
            "images_per_s": n / seconds, "batch_size": args.image_batch_size,
            "size": args.image_size,
            "peak_gpu_mib": torch.cuda.max_memory_allocated() / 2**20}  # fmt: skip


def run_text(args: argparse.Namespace) -> dict[str, Any]:
    """The text measurement, printed."""
    with tempfile.TemporaryDirectory(prefix="lexsem-build-gpu-") as tmp:
        folder = args.model or random_qwen(Path(tmp) / "qwen-0.5b-shape")
        text = text_throughput(args, folder)
    print(f"text ({'random Qwen2.5-0.5B shape' if args.model is None else args.model}, "
          f"{args.dtype}, {args.new_tokens} new tokens, greedy):")  # fmt: skip
    print(
        f"  one at a time  {text['loop_prompts_per_s']:8.1f} prompts/s  "
        f"{text['loop_tokens_per_s']:9.0f} tokens/s ({text['loop_prompts']} prompts)"
    )
    print(
        f"  batched ({args.batch_size:>3})  {text['batch_prompts_per_s']:8.1f} prompts/s  "
        f"{text['batch_answer_tokens_per_s']:9.0f} answer tokens/s ({text['prompts']} prompts)"
    )
    ratio = text["batch_prompts_per_s"] / text["loop_prompts_per_s"]
    print(
        f"  ratio {ratio:.1f}x; answers equal to the loop's: {text['agree']:.0%}; peak GPU "
        f"memory {text['peak_gpu_mib']:.0f} MiB"
    )
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=None, help="a chat model folder")
    ap.add_argument("--prompts", type=int, default=1024)
    ap.add_argument("--loop-prompts", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--min-agree", type=float, default=0.9)
    ap.add_argument("--skip-text", action="store_true", help="images only")
    ap.add_argument("--image-model", type=Path, default=None, help="a diffusers pipeline folder")
    ap.add_argument("--image-options", default="", help="more of its spec: a=1&b=2")
    ap.add_argument("--images", type=int, default=16, help="captions")
    ap.add_argument("--image-k", type=int, default=4, help="images per caption (BiVLC: 4)")
    ap.add_argument("--image-batch-size", type=int, default=4)
    ap.add_argument("--image-size", type=int, default=512, help="saved size in px (BiVLC: 512)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        sys.exit("bench/build_gpu.py needs a CUDA GPU")
    print(f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}")
    text = None if args.skip_text else run_text(args)
    images = image_throughput(args)
    if isinstance(images, str):
        print(f"images: {images}")
    else:
        print(
            f"images ({images['spec']}, {images['size']} px, batches of "
            f"{images['batch_size']}): {images['images_per_s']:.2f} images/s "
            f"({images['images']} images, peak GPU memory {images['peak_gpu_mib']:.0f} MiB)"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"text": text, "images": images}, indent=2) + "\n")
    if text is not None and text["agree"] < args.min_agree:
        sys.exit(f"batched answers agree with the loop's on {text['agree']:.0%} only")


if __name__ == "__main__":
    main()
