"""`make bench`: how close lexsem's heavy paths come to the machine's floor.

Measures, in one process with torch's threads:

- the floor: the CPU kind (its model, torch's CPU capability and whether it has avx512_bf16 /
  amx_bf16, so that rows from machines of different kinds are never compared) and torch's fp32
  and bf16 throughput on a 2048x2048 matmul (smaller where that would take long: `floor.py`);
- the towers of a random-weight open_clip ViT-B/32 (the model of `make bench-peer`), in fp32
  and, on a CPU with native bf16 (or with `--bf16`), in bf16: N generated images through
  `encode_images` (one batch) and N SugarCrepe captions through `encode` (the engine's text
  path: texts by token count, each batch run only up to its longest text, its blocks on the
  texts' own tokens), each timed after a warm-up, the tokenizer's calls apart (as a run's
  `timings.breakdown` counts them); their FLOPs counted with torch's `FlopCounterMode` (one
  image; each caption at its own token count; oneDNN's fused linear layers included).
  Printed: GFLOP, seconds, GFLOP/s and the share of that dtype's floor, and bf16's speed-up
  over fp32 per tower;
- a cold run per dtype of the towers: `lexsem eval --profile` of that random ViT-B/32 (in a
  process of its own, empty store) on the first N items of each SugarCrepe subset with
  generated JPEGs of COCO-like sizes (`--run-items 3000`: all 7,511, as `make bench-peer`):
  where its wall went (run.json `timings.breakdown`: each part's seconds and share), the
  towers' forward time over the whole run, the whole run's FLOPs (each image once, each unique
  caption at its own token count) over its wall as a share of the dtype's floor, beside the
  towers alone and the towers inside the run; with both dtypes, the bf16 run's wall over the
  fp32 run's beside the matmul floors' ratio, and the items whose hit differs between the two
  runs per subset (`lexsem compare`);
- a training step: lexsem's CLIP loss (`lexsem.train.losses`) on the small CLIP of
  `train_bench.py` (64-px ViT and text tower of width 128, 2 layers each), batch 64, fp32,
  forward + backward + AdamW, FLOPs counted on one step (the optimizer's element-wise work is
  not counted), timed over a few steps.

FlopCounterMode counts matrix multiplications, convolutions and attention (2 FLOPs per
multiply-add), not element-wise work: a path's share of the floor is what its matrix work
reaches. `make bench-peer` prints the same shares for the full SugarCrepe run beside its
CLIP_benchmark ratio, `vqa_bench.py` for VQAScore's prefix-shared scoring. Needs
$LEXSEM_TEST_DATA (the SugarCrepe captions).

    python bench/floor_bench.py                  # 32 images, 256 captions, fp32 and bf16
    python bench/floor_bench.py --images 64 --texts 1024 --json floor.json
    python bench/floor_bench.py --run-items 0      # no cold run
    python bench/floor_bench.py --run-items 3000 --texts 1024 --images 64   # all of SugarCrepe
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from floor import (  # bench/ is not a package: its folder is on the path
    count_flops,
    cpu_kind,
    floor_line,
    fraction,
    image_flops,
    matmul_gflops,
    text_flops,
)
from public_data import public_data  # bench/ is not a package: its folder is on the path

BATCH = 64

ARCH = "ViT-B-32"
SUBSETS = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att",
           "swap_obj")  # fmt: skip


def captions(data: Path, n: int) -> list[str]:
    """The first `n` unique SugarCrepe captions (positive and negative, subset by subset)."""
    out: dict[str, None] = {}
    for subset in SUBSETS:
        for rec in json.loads((data / "sugarcrepe" / f"{subset}.json").read_text()).values():
            out.update(dict.fromkeys((rec["caption"], rec["negative_caption"])))
            if len(out) >= n:
                return list(out)[:n]
    return list(out)


def best_time(fn: Callable[[], Any], repeats: int = 2) -> tuple[float, float]:
    """The best of `repeats` runs of `fn` (after the caller's warm-up), less the time its
    tokenizer's calls took (`lexsem.clock`'s `tokenize` part: a run counts tokenizing apart from
    the text tower, `timings.breakdown`), and that tokenizing time: (seconds, tokenize seconds)."""
    from lexsem import clock

    best = (float("inf"), 0.0)
    for _ in range(repeats):
        with clock.running() as spent:
            t0 = time.perf_counter()
            fn()
            took = time.perf_counter() - t0
        tokenize = spent.spent["tokenize"]
        best = min(best, (took - tokenize, tokenize))
    return best


def towers(
    ckpt: Path, texts: list[str], n_images: int, floors: dict[str, float], dtypes: list[str]
) -> dict:
    """Per dtype: each tower's FLOPs, best time and share of that dtype's floor."""
    import torch

    from lexsem.models.factory import load_model

    out: dict[str, Any] = {}
    for dtype in dtypes:
        enc = load_model(f"openclip:{ARCH}@{ckpt}?quick_gelu=false&dtype={dtype}", device="cpu")
        side = enc.image_config["size"]
        side = side if isinstance(side, int) else side[-1]
        pixels = torch.randn(n_images, 3, side, side, generator=torch.Generator().manual_seed(0))
        enc.encode_images(pixels[:2])  # warm-up: loads the weights
        enc.encode(texts[:8])
        img_flops = n_images * image_flops(enc)
        txt_flops = text_flops(enc, texts)
        img_s = best_time(lambda enc=enc, pixels=pixels: enc.encode_images(pixels))[0]
        txt_s, tokenize_s = best_time(lambda enc=enc: enc.encode(texts, batch_size=64))
        out[dtype] = {
            "image_flops": img_flops, "image_s": img_s,
            "image_floor_share": fraction(img_flops, img_s, floors[dtype]),
            "text_flops": txt_flops, "text_s": txt_s, "tokenize_s": tokenize_s,
            "text_floor_share": fraction(txt_flops, txt_s, floors[dtype]),
            "text_trimmed": enc.trims_padding,
        }  # fmt: skip
        print(floor_line(f"  {dtype} image tower, {n_images} images", img_flops, img_s,
                         floors[dtype], dtype))  # fmt: skip
        print(floor_line(f"  {dtype} text tower, {len(texts)} captions"
                         f"{' (trimmed)' if enc.trims_padding else ' (full context)'}",
                         txt_flops, txt_s, floors[dtype], dtype)
              + f"; tokenizing apart: {tokenize_s:.2f} s")  # fmt: skip
        enc.unload()
    for tower in ("image", "text") if "bf16" in out else ():
        speed = out["fp32"][f"{tower}_s"] / out["bf16"][f"{tower}_s"]
        out[f"{tower}_bf16_speedup"] = speed
        print(f"  bf16 {tower} tower: {speed:.2f}x the speed of fp32")
    return out


def run_flops(ckpt: Path, texts: list[str], n_images: int) -> tuple[int, int]:
    """(FLOPs of the run's images, of its unique texts) through the fp32 towers."""
    from lexsem.models.factory import load_model

    enc = load_model(f"openclip:{ARCH}@{ckpt}?quick_gelu=false&dtype=fp32", device="cpu")
    try:
        return n_images * image_flops(enc), text_flops(enc, texts)
    finally:
        enc.unload()


def run_data(data: Path, tmp: Path, per_subset: int) -> tuple[Path, dict, list[str]]:
    """The first `per_subset` items of each SugarCrepe subset as a user folder with generated
    JPEGs of COCO-like sizes: (the folder, its items, its unique captions)."""
    from peer_bench import write_images, write_subsets

    root = tmp / "root"
    root.mkdir()
    items = write_subsets(data / "sugarcrepe", root, SUBSETS, per_subset)
    names = sorted({rec["filename"] for d in items.values() for rec in d.values()})
    write_images(root / "val2017", names, 0, os.cpu_count() or 1)
    texts = sorted({c for d in items.values() for rec in d.values()
                    for c in (rec["caption"], rec["negative_caption"])})  # fmt: skip
    return root, items, texts


def cold_run(
    ckpt: Path, tmp: Path, prepared: tuple[Path, dict, list[str]], floors: dict[str, float],
    alone: dict, dtype: str,
) -> dict[str, Any]:  # fmt: skip
    """A cold `lexsem eval --profile` (`dtype`, batch 64, empty store, a process of its own) on
    the prepared SugarCrepe folder: its breakdown and shares of that dtype's floor."""
    root, items, texts = prepared
    out = tmp / f"run-{dtype}"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1",
           "LEXSEM_OFFLINE": "1", "LEXSEM_CACHE_DIR": str(tmp / f"store-{dtype}")}  # fmt: skip
    cmd = [sys.executable, "-c", "from lexsem.cli import app; app()", "eval",
           "-m", f"openclip:{ARCH}@{ckpt}?quick_gelu=false", "-b", f"sugarcrepe:{root}",
           "--coco-val2017", str(root / "val2017"), "--out", str(out), "--force",
           "--device", "cpu", "--dtype", dtype, "--batch-size", str(BATCH),
           "--offline", "-q", "--profile"]  # fmt: skip
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    process_s = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"lexsem eval failed ({done.returncode}):\n{done.stderr[-3000:]}")
    t = json.loads((out / "run.json").read_text())["timings"]
    b = t["breakdown"]
    img_flops, txt_flops = run_flops(ckpt, texts, t["n_images_encoded"])
    floor = floors[dtype]
    wall, towers_s = b["wall_s"], b["text_tower_s"] + b["image_tower_s"]
    figures = {
        "dtype": dtype, "run": str(out),
        "items": sum(len(d) for d in items.values()), "images": t["n_images_encoded"],
        "texts": t["n_texts_encoded"], "process_s": process_s, "breakdown": b,
        "image_flops": img_flops, "text_flops": txt_flops,
        "towers_share_of_wall": towers_s / wall if wall > 0 else 0.0,
        "run_floor_share": fraction(img_flops + txt_flops, wall, floor),
        "text_tower_in_run_floor_share": fraction(txt_flops, b["text_tower_s"], floor),
        "image_tower_in_run_floor_share": fraction(img_flops, b["image_tower_s"], floor),
        "text_tower_alone_floor_share": alone.get("text_floor_share", 0.0),
        "image_tower_alone_floor_share": alone.get("image_floor_share", 0.0),
    }  # fmt: skip
    print(f"cold run: lexsem eval --profile, {figures['items']} items, {figures['images']} "
          f"images, {figures['texts']} texts, {dtype}, batch {BATCH} "
          f"({process_s:.1f} s as a process)")  # fmt: skip
    for line in done.stderr.splitlines():
        if line and not line.startswith(("warning", "note", "dtype")):
            print(f"  {line}")
    print(f"  towers' forward time / whole run: {100 * figures['towers_share_of_wall']:.0f}%")
    print(floor_line("  whole run", img_flops + txt_flops, wall, floor, dtype))
    print(
        f"  share of the {dtype} floor: whole run {100 * figures['run_floor_share']:.0f}%; "
        f"towers in the run: text {100 * figures['text_tower_in_run_floor_share']:.0f}%, "
        f"image {100 * figures['image_tower_in_run_floor_share']:.0f}%; towers alone (above): "
        f"text {100 * figures['text_tower_alone_floor_share']:.0f}%, "
        f"image {100 * figures['image_tower_alone_floor_share']:.0f}%"
    )
    return figures


def dtype_comparison(runs: dict[str, dict[str, Any]], floors: dict[str, float]) -> dict:
    """The bf16 run's wall over the fp32 run's beside the matmul floors' ratio, and the items
    whose hit differs between the two (`lexsem compare`, per subset)."""
    fp32, bf16 = runs["fp32"], runs["bf16"]
    ratio = bf16["breakdown"]["wall_s"] / fp32["breakdown"]["wall_s"]
    matmul = floors["fp32"] / floors["bf16"]
    cmd = [sys.executable, "-c", "from lexsem.cli import app; app()", "compare",
           fp32["run"], bf16["run"]]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    lines = [x.strip() for x in done.stdout.splitlines() if "hits differ" in x]
    print(f"bf16 run / fp32 run: {ratio:.2f} of the wall (matmul floors: {matmul:.2f}; "
          f"{ratio / matmul:.2f}x the floors' ratio)")  # fmt: skip
    for line in lines or [f"lexsem compare: {done.stderr.strip()[-300:]}"]:
        print(f"  {line}")
    return {"wall_ratio": ratio, "matmul_ratio": matmul, "over_matmul": ratio / matmul,
            "hits_differ": lines}  # fmt: skip


def train_step(floors: dict[str, float], steps: int) -> dict[str, Any]:
    """FLOPs and time of a CLIP training step (fp32) on train_bench's small CLIP."""
    import torch
    from open_clip.model import CLIP

    from lexsem.train.losses import clip_loss

    torch.manual_seed(0)
    width, batch = 128, 64
    model = CLIP(
        embed_dim=width,
        vision_cfg={"image_size": 64, "layers": 2, "width": width, "head_width": 64,
                    "patch_size": 16},
        text_cfg={"context_length": 32, "vocab_size": 49408, "width": width,
                  "heads": max(1, width // 64), "layers": 2},
    )  # fmt: skip
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    images = torch.randn(batch, 3, 64, 64)
    texts = torch.randint(1, 49407, (batch, 32))

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        img, txt = model.encode_image(images, normalize=True), model.encode_text(texts, True)
        clip_loss(img, txt, model.logit_scale.exp()).backward()
        opt.step()

    step()  # warm-up (and the optimizer's state)
    flops = count_flops(step)[0]
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    took = (time.perf_counter() - t0) / steps
    print(floor_line(f"  training step, batch {batch} (fp32)", flops, took, floors["fp32"],
                     "fp32"))  # fmt: skip
    return {"flops": flops, "step_s": took, "floor_share": fraction(flops, took, floors["fp32"])}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=32, help="images per tower run (default 32)")
    ap.add_argument("--texts", type=int, default=256, help="captions per run (default 256)")
    ap.add_argument("--steps", type=int, default=5, help="timed training steps (default 5)")
    ap.add_argument(
        "--bf16",
        action="store_true",
        help="run the bf16 towers on a CPU without native bf16 too (slow)",
    )
    ap.add_argument(
        "--run-items",
        type=int,
        default=30,
        help="items per SugarCrepe subset in the cold run (default 30; 0: no cold run)",
    )
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    data = public_data("sugarcrepe")
    if data is None:
        return 2
    import open_clip
    import torch

    from lexsem.models.backends.openclip.checkpoints import quiet_random_init

    kind = cpu_kind()
    print(kind.line())
    measured = {dtype: matmul_gflops(dtype) for dtype in ("fp32", "bf16")}
    floors = {dtype: gflops for dtype, (gflops, _) in measured.items()}
    print("floor: " + ", ".join(f"matmul {n}x{n} {d} {g:.1f} GFLOP/s"
                                for d, (g, n) in measured.items())
          + f" (torch {torch.__version__})")  # fmt: skip
    dtypes = ["fp32", "bf16"] if kind.flags or args.bf16 else ["fp32"]
    if "bf16" not in dtypes:
        print("bf16 towers: not run, this CPU has no native bf16 (--bf16 runs them anyway)")
    texts = captions(data, args.texts)
    with tempfile.TemporaryDirectory(prefix="lexsem-floor-bench-") as tmp:
        ckpt = Path(tmp) / "vit-b-32-random.pt"
        torch.manual_seed(0)
        with quiet_random_init(True):  # "no pretrained weights": random, on purpose
            torch.save(open_clip.create_model(ARCH).state_dict(), ckpt)
        print(f"random {ARCH}, CPU:")
        tower_figures = towers(ckpt, texts, args.images, floors, dtypes)
        runs: dict[str, Any] = {}
        compared = None
        if args.run_items > 0:
            prepared = run_data(data, Path(tmp), args.run_items)
            for dtype in dtypes:
                runs[dtype] = cold_run(ckpt, Path(tmp), prepared, floors, tower_figures[dtype],
                                       dtype)  # fmt: skip
            if len(runs) == 2:
                compared = dtype_comparison(runs, floors)
    train = train_step(floors, args.steps)
    if args.json:
        args.json.write_text(json.dumps({
            "cpu": kind.line(), "bf16_flags": list(kind.flags), "threads": kind.threads,
            "matmul_gflops": floors, "towers": tower_figures, "cold_runs": runs,
            "bf16_against_fp32": compared,
            "train_step": train,
        }, indent=2))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
