"""Training speed: `lexsem.train.Trainer` vs a bare open_clip training loop, same model and data.

A small open_clip CLIP (custom arch: ViT, image 64 px, patch 16, width 128, 2 layers; text
width 128, 2 layers, context 32; random weights saved as a checkpoint, nothing downloaded) is
trained on N rendered scenes (`lexsem.train.rendered.write_rendered`, 96 px PNGs and a
manifest). Each phase runs in a fresh subprocess (`--phase bare|lexsem`, its figures passed
back as JSON on stdout), so its peak RSS is its own:

- *bare*: what open_clip's own training code does, without lexsem: the model and eval
  preprocess of `open_clip.create_model_and_transforms` (the same checkpoint), a plain torch
  `DataLoader` over the manifest's rows (PIL open + preprocess + tokenize in the dataset, as
  open_clip's `CsvDataset`), `open_clip.loss.ClipLoss`, torch AdamW with the same
  hyper-parameters and parameter groups (no decay on gains, biases and the logit scale), the
  same warm-up + cosine schedule, the logit scale clamped after each step; no evaluation;
- *lexsem*: `Trainer(TrainConfig(..., regime="clip_coco")).run()` with no `select_on` /
  `judge_on` (no evaluation during training), stopped by `max_steps`.

Both take the same batch size, `num_workers`, number of steps and batch order (the bare loop
draws lexsem's documented epoch order, `lexsem.train.batches.epoch_order`, so both read the
same first batch and the first-step losses must agree: 1e-4 relative in fp32, 5e-2 under
bf16). Each step is timed from the end of the warm-up step(s) to the end of the last step
(CUDA synchronised); a step's time is split into *waiting for the batch* and *the step
itself*. Neither pins memory. Prints images/s of each, the ratio lexsem/bare (target >= 0.9),
the first-step losses (and the largest difference over the whole loss curve), the peak RSS of
each phase (its DataLoader workers apart) and, on CUDA, the peak memory allocated. `--json OUT`
writes every figure.

Wall-clock rates on a shared machine: each phase also reports how many cores other processes
kept busy during its timed steps (from /proc/stat), and its images per CPU-second of its own
process; `--repeats K` alternates the phases K times and keeps the best run of each.
`--without-negative-images` trains both on the manifest without its hard negative images
(which clip_coco does not use: lexsem decodes them only for the regimes that train on them).

    python bench/train_bench.py                    # CPU, fp32: 2176 images, batch 64
    python bench/train_bench.py --device cuda      # the same on a GPU, amp_bf16 in both
    python bench/train_bench.py --repeats 2        # bare, lexsem, bare, lexsem: best of each

lexsem trains fp32 master weights (autocast gives the mixed precision); the parameter dtype
of each phase is printed.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ARCH = "bench-train-clip"
DEFAULT_STEPS = {"cpu": 32, "cuda": 64}  # timed steps, after the warm-up
DEFAULT_WORKERS = {"cpu": 0, "cuda": 4}
LOSS_RTOL = {"cpu": 1e-4, "cuda": 5e-2}
TARGET = 0.9
MARK = "TRAIN_BENCH_RESULT "


def arch_config(image_size: int, width: int, layers: int, context: int) -> dict[str, Any]:
    return {
        "embed_dim": width,
        "vision_cfg": {"image_size": image_size, "layers": layers, "width": width,
                       "head_width": 64, "patch_size": 16},
        "text_cfg": {"context_length": context, "vocab_size": 49408, "width": width,
                     "heads": max(1, width // 64), "layers": layers},
    }  # fmt: skip


def setup(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The arch file, a random-init checkpoint and the rendered data under `work`."""
    import open_clip
    import torch

    from lexsem.train.rendered import write_rendered

    model_dir = work / "model"
    model_dir.mkdir()
    arch = model_dir / f"{ARCH}.json"
    arch.write_text(json.dumps(arch_config(args.image_size, args.width, args.layers, 32)))
    open_clip.add_model_config(model_dir)
    torch.manual_seed(args.seed)
    logging.disable(logging.WARNING)  # "No pretrained weights loaded": none are wanted
    try:
        model = open_clip.create_model(ARCH)
    finally:
        logging.disable(logging.NOTSET)
    ckpt = model_dir / "init.pt"
    torch.save(model.state_dict(), ckpt)
    n_params = sum(p.numel() for p in model.parameters())
    t0 = time.perf_counter()
    manifest = write_rendered(work / "data", args.n, seed=args.seed, size=args.render_size)
    render_s = time.perf_counter() - t0
    if args.without_negative_images:  # the same rows, without their hard negative images
        rows = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
        for row in rows:
            row.pop("negative_image", None)
            row.pop("negative_image_caption", None)
        manifest = manifest.with_name("plain.jsonl")
        manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"arch": str(arch), "checkpoint": str(ckpt), "manifest": str(manifest),
            "parameters": n_params, "render_s": render_s}  # fmt: skip


# ---------------------------------------------------------------------------- shared


def schedule_factor(step: int, warmup: int, total: int) -> float:
    """The lr factor of `step`: linear warm-up, then a cosine to 0 at `total` (open_clip's
    `cosine_lr`; the same as lexsem's `cosine_with_warmup`)."""
    if step < warmup:
        return (step + 1) / warmup
    span = max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, (step - warmup) / span)))


def plan(args: argparse.Namespace) -> dict[str, int]:
    """Steps in all (warm-up + timed), batches per epoch, epochs (the schedule's length)."""
    per_epoch = args.n // args.batch
    total = args.warmup_steps + args.steps
    return {"total": total, "per_epoch": per_epoch, "epochs": math.ceil(total / per_epoch)}


def machine_busy_s() -> float:
    """CPU seconds the machine has been busy, all processes (Linux /proc/stat; NaN elsewhere)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return math.nan
    ticks = [int(x) for x in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class Clock:
    """(enter, exit) of every step, CUDA synchronised at the exit."""

    def __init__(self, cuda: bool) -> None:
        self.cuda = cuda
        self.marks: list[tuple[float, float]] = []
        self.cpu: list[float] = []  # this process's CPU time at each exit (threads included)
        self.busy: list[float] = []  # the whole machine's busy CPU time at each exit
        self.t_start = time.perf_counter()

    def enter(self) -> float:
        return time.perf_counter()

    def exit(self, entered: float) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()
        self.marks.append((entered, time.perf_counter()))
        self.cpu.append(time.process_time())
        self.busy.append(machine_busy_s())

    def figures(self, warmup: int, batch: int) -> dict[str, Any]:
        marks = self.marks
        timed = marks[warmup:]
        wall = marks[-1][1] - marks[warmup - 1][1]
        wait = [marks[i][0] - marks[i - 1][1] for i in range(warmup, len(marks))]
        step = [b - a for a, b in timed]
        cpu = self.cpu[-1] - self.cpu[warmup - 1]
        others = self.busy[-1] - self.busy[warmup - 1] - cpu
        return {
            "timed_steps": len(timed),
            "wall_s": wall,
            "images_per_s": batch * len(timed) / wall,
            "cpu_s": cpu,
            "images_per_cpu_s": batch * len(timed) / cpu,
            "other_cores": others / wall if not math.isnan(others) else None,
            "wait_ms_per_step": 1000 * float(np.mean(wait)),
            "step_ms_per_step": 1000 * float(np.mean(step)),
            "max_wait_ms": 1000 * float(np.max(wait)),
            "setup_s": marks[0][0] - self.t_start,
            "warmup_step_s": marks[warmup - 1][1] - marks[0][0],
        }


def memory(cuda: bool, workers: int) -> dict[str, Any]:
    """Peak RSS of this process; of its largest child when there are DataLoader workers (the
    figure is at least that of the `ldconfig` child torch's import forks, about 430 MiB: a
    forked child counts its parent's pages until it execs); CUDA's peak allocated."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    out: dict[str, Any] = {"peak_rss_mib": own}
    if workers:
        kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        out["workers_peak_rss_mib"] = kids
    if cuda:
        import torch

        out["cuda_max_allocated_mib"] = torch.cuda.max_memory_allocated() / 1024**2
    return out


# ---------------------------------------------------------------------------- bare open_clip


class RowDataset:
    """The manifest's rows as open_clip's `CsvDataset` reads a CSV: PIL open, the eval
    preprocess, the caption tokenized."""

    def __init__(self, rows: list[dict[str, Any]], folder: Path, preprocess: Any, tokenizer: Any):
        self.rows, self.folder = rows, folder
        self.preprocess, self.tokenizer = preprocess, tokenizer

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        from PIL import Image

        row = self.rows[i]
        image = self.preprocess(Image.open(self.folder / row["image"].split(":", 1)[1]))
        return image, self.tokenizer([str(row["caption"])])[0]


def phase_bare(work: Path, setup_: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    clock = Clock(args.device == "cuda")
    import contextlib

    import open_clip
    import torch
    from open_clip.loss import ClipLoss
    from torch.utils.data import DataLoader

    device = torch.device(args.device)
    cuda = device.type == "cuda"
    open_clip.add_model_config(Path(setup_["arch"]).parent)
    model, _, preprocess = open_clip.create_model_and_transforms(
        ARCH, pretrained=setup_["checkpoint"], device=device
    )
    tokenizer = open_clip.get_tokenizer(ARCH)
    manifest = Path(setup_["manifest"])
    rows = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("split", "train") == "train"]
    data = RowDataset(rows, manifest.parent, preprocess, tokenizer)

    decay, plain = [], []
    for name, p in model.named_parameters():
        no_decay = p.ndim < 2 or "bn" in name or "ln" in name or "bias" in name
        (plain if no_decay or "logit_scale" in name else decay).append(p)
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": args.weight_decay},
         {"params": plain, "weight_decay": 0.0}],
        lr=args.lr, betas=(0.9, 0.98), eps=1e-6,
    )  # fmt: skip
    loss_fn = ClipLoss()

    def autocast() -> Any:
        if cuda:
            return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    p = plan(args)
    total = p["epochs"] * p["per_epoch"]  # the schedule's length, as lexsem's
    losses: list[dict[str, float]] = []
    model.train()
    step = 0
    for epoch in range(p["epochs"]):
        # lexsem's epoch order (lexsem.train.batches.epoch_order), the last batch dropped
        order = np.random.default_rng([args.seed, epoch]).permutation(len(data))
        index = [order[b * args.batch : (b + 1) * args.batch].tolist()
                 for b in range(p["per_epoch"])]  # fmt: skip
        loader = DataLoader(data, batch_sampler=index, num_workers=args.num_workers)  # type: ignore[arg-type]
        for images, texts in loader:
            t = clock.enter()
            images = images.to(device, non_blocking=True)
            texts = texts.to(device, non_blocking=True)
            lr = args.lr * schedule_factor(step, args.sched_warmup, total)
            for group in optimizer.param_groups:
                group["lr"] = lr
            optimizer.zero_grad(set_to_none=True)
            with autocast():
                image_features, text_features, scale = model(images, texts)
                loss = loss_fn(image_features, text_features, scale)
            loss.backward()
            optimizer.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, math.log(100))
            # the rate after the step, as lexsem records it (the next step's)
            next_lr = args.lr * schedule_factor(step + 1, args.sched_warmup, total)
            losses.append({"step": step + 1, "loss": loss.item(), "lr": next_lr})
            clock.exit(t)
            step += 1
            if step >= p["total"]:
                break
        if step >= p["total"]:
            break
    return {
        **clock.figures(args.warmup_steps, args.batch),
        **memory(cuda, args.num_workers),
        "param_dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
        "losses": losses,
    }


# ---------------------------------------------------------------------------- lexsem


def phase_lexsem(work: Path, setup_: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    clock = Clock(args.device == "cuda")
    import lexsem.train.loop as loop_mod
    from lexsem.train.config import TrainConfig

    cuda = args.device == "cuda"
    seen: dict[str, Any] = {"epoch_end_s": []}
    micro_step = loop_mod._Loop._micro_step
    end_epoch = loop_mod._Loop._end_epoch

    def timed_step(self: Any, batch: Any) -> None:
        t = clock.enter()
        micro_step(self, batch)
        clock.exit(t)
        if "param_dtype" not in seen:
            seen["param_dtype"] = str(next(self.towers.module.parameters()).dtype)

    def timed_end(self: Any) -> None:
        t = time.perf_counter()
        end_epoch(self)
        seen["epoch_end_s"].append(time.perf_counter() - t)

    loop_mod._Loop._micro_step = timed_step  # type: ignore[method-assign]
    loop_mod._Loop._end_epoch = timed_end  # type: ignore[method-assign]
    query = "quick_gelu=false" + ("&dtype=fp32" if args.lexsem_fp32 else "")
    p = plan(args)
    out = work / f"run-lexsem-{os.getpid()}"
    config = TrainConfig(
        model=f"openclip:{setup_['arch']}@{setup_['checkpoint']}?{query}",
        manifest=Path(setup_["manifest"]), out=out, regime="clip_coco",
        epochs=p["epochs"], batch_size=args.batch, lr=args.lr, weight_decay=args.weight_decay,
        betas=(0.9, 0.98), eps=1e-6, warmup=args.sched_warmup, max_steps=p["total"],
        precision="amp_bf16" if cuda else "fp32", seed=args.seed, device=args.device,
        num_workers=args.num_workers, n_boot=0, cache_dir=work / "cache",
    )  # fmt: skip
    result = loop_mod.Trainer(config).run()
    assert result.steps == p["total"], (result.steps, p["total"])
    record = json.loads((out / "train.json").read_text(encoding="utf-8"))
    losses = [{"step": r["step"], "loss": r["loss"], "lr": r["lr"]}
              for r in record["progress"]["losses"]]  # fmt: skip
    return {
        **clock.figures(args.warmup_steps, args.batch),
        **memory(cuda, args.num_workers),
        "param_dtype": seen["param_dtype"].replace("torch.", ""),
        "epoch_end_s": seen["epoch_end_s"],
        "losses": losses,
    }


PHASES = {"bare": phase_bare, "lexsem": phase_lexsem}


# ---------------------------------------------------------------------------- driver


def run_phase(name: str, work: Path, argv: Sequence[str]) -> dict[str, Any]:
    """`--phase name` in a fresh interpreter; its figures from the marked line of its stdout."""
    env = {**os.environ, "LEXSEM_CACHE_DIR": str(work / "cache"), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, __file__, *argv, "--phase", name, "--workdir", str(work)]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode or not lines:
        sys.stdout.write(proc.stdout)
        raise SystemExit(f"phase {name} failed (exit {proc.returncode})")
    return json.loads(lines[-1][len(MARK) :])


def parse(argv: Sequence[str] | None) -> tuple[argparse.Namespace, list[str]]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--n", type=int, default=2176, help="rendered training images (2176)")
    ap.add_argument("--render-size", type=int, default=96, help="rendered PNG size (96)")
    ap.add_argument("--image-size", type=int, default=64, help="the model's input size (64)")
    ap.add_argument("--width", type=int, default=128, help="both towers' width (128)")
    ap.add_argument("--layers", type=int, default=2, help="both towers' layers (2)")
    ap.add_argument("--batch", type=int, default=64, help="batch size (64)")
    ap.add_argument("--steps", type=int, help="timed steps (CPU 32, CUDA 64)")
    ap.add_argument("--warmup-steps", type=int, default=1, help="untimed first steps (1)")
    ap.add_argument("--num-workers", type=int, help="DataLoader workers (CPU 0, CUDA 4)")
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--sched-warmup", type=int, default=2, help="lr warm-up steps (2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--lexsem-fp32", action="store_true", help="also dtype=fp32 in lexsem's spec (its default)"
    )
    ap.add_argument(
        "--without-negative-images",
        action="store_true",
        help="drop the rows' hard negative images (clip_coco does not use them)",
    )
    ap.add_argument("--repeats", type=int, default=2, help="runs of each phase, alternating (2)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    ap.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.steps = args.steps or DEFAULT_STEPS[args.device]
    args.num_workers = (
        DEFAULT_WORKERS[args.device] if args.num_workers is None else args.num_workers
    )
    if args.warmup_steps < 1 or args.steps < 1 or args.n // args.batch < 1:
        ap.error("needs --warmup-steps >= 1, --steps >= 1 and --n >= --batch")
    passed = list(argv if argv is not None else sys.argv[1:])
    return args, passed


def main(argv: Sequence[str] | None = None) -> int:
    args, passed = parse(argv)
    if args.phase is not None:
        import torch

        torch.set_num_threads(max(1, os.cpu_count() or 1))
        work = args.workdir
        setup_ = json.loads((work / "setup.json").read_text())
        figures = PHASES[args.phase](work, setup_, args)
        print(MARK + json.dumps(figures), flush=True)
        return 0
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("--device cuda: no CUDA device", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="lexsem-train-bench-") as tmp:
        work = Path(tmp)
        setup_ = setup(work, args)
        (work / "setup.json").write_text(json.dumps(setup_))
        import torch

        p = plan(args)
        print(f"{setup_['parameters'] / 1e6:.2f} M parameters (image {args.image_size} px, width "
              f"{args.width}, {args.layers} layers); {args.n} rendered images of "
              f"{args.render_size} px in {setup_['render_s']:.1f} s; batch {args.batch}, "
              f"{args.warmup_steps} warm-up + {args.steps} timed steps ({p['epochs']} epochs of "
              f"{p['per_epoch']}), {args.num_workers} workers, {args.device}, torch "
              f"{torch.__version__}, {os.cpu_count()} CPUs, "
              f"{torch.get_num_threads()} threads")  # fmt: skip
        runs: dict[str, list[dict[str, Any]]] = {"bare": [], "lexsem": []}
        for _ in range(args.repeats):
            for name in ("bare", "lexsem"):
                runs[name].append(run_phase(name, work, passed))
                r = runs[name][-1]
                others = "?" if r["other_cores"] is None else f"{r['other_cores']:.2f}"
                print(f"  {name:6s} {r['images_per_s']:8.1f} images/s "
                      f"(wait {r['wait_ms_per_step']:.1f} ms + step "
                      f"{r['step_ms_per_step']:.1f} ms per step; other processes "
                      f"used {others} cores *)")  # fmt: skip
    best = {k: max(v, key=lambda r: r["images_per_s"]) for k, v in runs.items()}
    bare, lex = best["bare"], best["lexsem"]
    ratio = lex["images_per_s"] / bare["images_per_s"]
    first = (bare["losses"][0]["loss"], lex["losses"][0]["loss"])
    first_rel = abs(first[1] - first[0]) / abs(first[0])
    curve = [abs(a["loss"] - b["loss"]) / abs(a["loss"])
             for a, b in zip(bare["losses"], lex["losses"], strict=True)]  # fmt: skip
    lr_same = all(math.isclose(a["lr"], b["lr"], rel_tol=1e-9)
                  for a, b in zip(bare["losses"], lex["losses"], strict=True))  # fmt: skip
    print()
    print(f"{'':24s}{'bare open_clip':>16s}{'lexsem Trainer':>16s}")
    rows = [
        ("images/s", "images_per_s", "{:16.1f}"),
        ("timed wall s", "wall_s", "{:16.2f}"),
        ("images/CPU-s (process)", "images_per_cpu_s", "{:16.1f}"),
        ("cores used by others *", "other_cores", "{:16.2f}"),
        ("wait for batch ms/step", "wait_ms_per_step", "{:16.1f}"),
        ("step itself ms/step", "step_ms_per_step", "{:16.1f}"),
        ("setup s (to 1st step)", "setup_s", "{:16.2f}"),
        ("warm-up step s", "warmup_step_s", "{:16.2f}"),
        ("peak RSS MiB", "peak_rss_mib", "{:16.0f}"),
        ("workers' peak RSS MiB", "workers_peak_rss_mib", "{:16.0f}"),
        ("CUDA max alloc MiB", "cuda_max_allocated_mib", "{:16.0f}"),
        ("parameter dtype", "param_dtype", "{:>16s}"),
    ]
    for label, key, fmt in rows:
        if bare.get(key) is not None and lex.get(key) is not None:
            print(f"{label:24s}{fmt.format(bare[key])}{fmt.format(lex[key])}")
    # lexsem's epoch ends within the timed steps (those after the warm-up step's epoch)
    print("* during the timed steps, by the machine's other processes and DataLoader workers")
    ends = lex["epoch_end_s"][(args.warmup_steps - 1) // p["per_epoch"] :]
    images = lex["timed_steps"] * args.batch
    no_saves = images / (lex["wall_s"] - sum(ends)) / bare["images_per_s"]
    print(f"ratio lexsem/bare images/s: {ratio:.3f}  (target >= {TARGET})")
    if ends:
        print(f"  lexsem's {len(ends)} epoch ends in the timed steps (state.pt + train.json, every "
              f"{p['per_epoch']} steps here) took {1000 * float(np.mean(ends)):.0f} ms each; "
              f"without them the ratio is {no_saves:.3f}")  # fmt: skip
    print(f"first-step loss: bare {first[0]:.6f}, lexsem {first[1]:.6f} (relative difference "
          f"{first_rel:.1e}); loss curves: max relative difference {max(curve):.1e} over "
          f"{len(curve)} steps; lr schedules identical: {lr_same}")  # fmt: skip
    if args.device == "cuda" and lex["param_dtype"] != bare["param_dtype"]:
        print(f"note: lexsem trained {lex['param_dtype']} parameters, the bare loop "
              f"{bare['param_dtype']}")  # fmt: skip
    ok = first_rel <= LOSS_RTOL[args.device]
    if args.json is not None:
        record = {
            "benchmark": "train_bench",
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                        "python": platform.python_version()},
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                       if k not in ("phase", "workdir", "json")},
            "setup": {k: setup_[k] for k in ("parameters", "render_s")},
            "runs": runs,
            "ratio_lexsem_over_bare": ratio,
            "ratio_without_lexsem_epoch_end_saves": no_saves,
            "first_step_loss": {"bare": first[0], "lexsem": first[1], "rel_diff": first_rel},
            "loss_curve_max_rel_diff": max(curve),
            "lr_schedules_identical": lr_same,
        }  # fmt: skip
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {args.json}")
    if not ok:
        print(f"FAIL: the first-step losses differ by more than {LOSS_RTOL[args.device]:g} "
              "(relative)", file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
