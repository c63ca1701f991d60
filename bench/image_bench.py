"""Image-side speed: lexsem's batched image pipeline vs the benchmarks' one-image-at-a-time loop.

A ViT-B/32-size CLIP vision tower (transformers `CLIPVisionModelWithProjection`, random
weights, nothing downloaded) embeds N generated JPEGs of COCO-like sizes. Measured, one process:

- generation of the JPEGs (seeded, deterministic; timed apart from everything else);
- the *official-style loop* of the SugarCrepe / SugarCrepe++ scripts: for each image, PIL open,
  convert to RGB, preprocess, unsqueeze, encode on the device, `.cpu()` — no DataLoader;
- *decode only*: the pipeline's DataLoader (read, hash check, decode, preprocess, collate, pinned
  memory on CUDA) with the same batch size and workers, without the model;
- *model only*: the encoder on ready-made batches (no decoding);
- the lexsem pipeline, `lexsem.engine.image_embed.embed_images` with a fresh `RequestStore`;
- the same call again from the cache: files re-read and hashed (as in a new process), and once
  more in the same process (unchanged files are not re-read); the encoder must not be called.

For each phase: images/s, the time the model was busy over the wall time (CUDA events around
each encoder call on CUDA, `perf_counter` on CPU) and, on CUDA, the mean GPU utilisation sampled
by a background thread (NVML through `torch.cuda.utilization()`, else `nvidia-smi`). Then the
ratios and the peak RSS. `--json OUT` also writes every figure.

    python bench/image_bench.py                   # auto device; CPU: 300 images
    python bench/image_bench.py --device cuda     # 5000 images, batch 128, bf16
    python bench/image_bench.py --image-dir ~/.cache/lexsem/images/coco/val2017   # real COCO

Notes: the generated files are in the OS page cache when read (no disk I/O is measured); random
weights run at the same speed as trained ones. No torchvision: preprocessing is PIL + numpy.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MODEL_NAME = "bench-clip-vit-b32-random"
IMAGE_SIZE = 224
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

# (width, height) of COCO-like images and how often each appears (COCO val2017 is dominated by
# 640 x 480 / 640 x 427 landscape images, with portrait and smaller ones).
COCO_SIZES: tuple[tuple[tuple[int, int], float], ...] = (
    ((640, 480), 0.34),
    ((640, 427), 0.20),
    ((480, 640), 0.12),
    ((427, 640), 0.07),
    ((500, 375), 0.08),
    ((375, 500), 0.04),
    ((640, 426), 0.05),
    ((640, 360), 0.05),
    ((612, 612), 0.05),
)

DEFAULT_N = {"cuda": 5000, "cpu": 300}
DEFAULT_BATCH = {"cuda": 128, "cpu": 64}
# the one-at-a-time loop on CPU runs over a subset (it costs ~0.35 s per image on 2 cores)
DEFAULT_LOOP_N = {"cuda": None, "cpu": 100}


# ---------------------------------------------------------------------------- images


def make_jpeg(seed: int, index: int) -> tuple[bytes, tuple[int, int]]:
    """One smooth random RGB image of a COCO-like size as JPEG bytes (quality 90).

    Octaves of bicubically upsampled noise plus a little pixel noise: about 150 KB per
    640 x 480 image, close to COCO's average, so decoding costs what it costs on COCO.
    """
    from PIL import Image

    rng = np.random.default_rng([seed, index])
    sizes = [s for s, _ in COCO_SIZES]
    weights = np.array([w for _, w in COCO_SIZES])
    w, h = sizes[int(rng.choice(len(sizes), p=weights / weights.sum()))]
    acc = np.zeros((h, w, 3), np.float32)
    for grid, amp in ((4, 90.0), (16, 50.0), (64, 30.0), (max(w, h) // 3, 18.0)):
        gw, gh = max(2, grid * w // max(w, h)), max(2, grid * h // max(w, h))
        small = rng.standard_normal((gh, gw, 3)).astype(np.float32)
        for c in range(3):
            layer = Image.fromarray(small[..., c], mode="F")
            acc[..., c] += np.asarray(layer.resize((w, h), Image.Resampling.BICUBIC)) * amp
    acc += rng.standard_normal((h, w, 3)).astype(np.float32) * 20.0
    img = Image.fromarray((acc + 128.0).clip(0, 255).astype(np.uint8), "RGB")
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=90)
    return buf.getvalue(), (w, h)


def _write_one(job: tuple[str, int, int]) -> int:
    folder, seed, index = job
    data, _ = make_jpeg(seed, index)
    (Path(folder) / f"{index:012d}.jpg").write_bytes(data)
    return len(data)


def generate_images(folder: Path, n: int, seed: int, procs: int) -> list[int]:
    """Write `n` JPEGs ``000000000000.jpg ...`` into `folder`; returns their sizes in bytes."""
    jobs = [(str(folder), seed, i) for i in range(n)]
    if procs <= 1 or n < 32:
        return [_write_one(j) for j in jobs]
    with ProcessPoolExecutor(max_workers=procs) as pool:
        return list(pool.map(_write_one, jobs, chunksize=max(1, n // (procs * 8))))


# ---------------------------------------------------------------------------- model


class ClipPreprocess:
    """CLIP's image preprocessing with PIL + numpy: shorter side to 224 (bicubic), centre crop
    224, scale to [0, 1], normalise with CLIP's mean and std; a float32 (3, 224, 224) tensor.

    A small object of its own, so that what DataLoader workers receive (and, under `spawn`,
    pickle) holds no model.
    """

    def __init__(self, size: int = IMAGE_SIZE) -> None:
        self.size = size
        std = np.asarray(CLIP_STD, np.float32)
        self.scale = (1.0 / (255.0 * std)).astype(np.float32)
        self.shift = (-np.asarray(CLIP_MEAN, np.float32) / std).astype(np.float32)

    def __call__(self, image: Any) -> Any:
        import torch
        from PIL import Image

        if image.mode != "RGB":
            image = image.convert("RGB")
        s = self.size
        w, h = image.size
        if w <= h:
            nw, nh = s, max(s, round(h * s / w))
        else:
            nw, nh = max(s, round(w * s / h)), s
        image = image.resize((nw, nh), Image.Resampling.BICUBIC)
        left, top = (nw - s) // 2, (nh - s) // 2
        image = image.crop((left, top, left + s, top + s))
        arr = np.asarray(image, dtype=np.float32) * self.scale + self.shift  # (H, W, 3)
        return torch.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))


class BenchClipEncoder:
    """A `lexsem.models.protocols.ImageEncoder` around a transformers CLIP vision tower.

    Counts its calls and images and the time the model was busy (CUDA events on CUDA, wall
    clock on CPU), so the benchmark can check that a cache rerun calls it zero times.
    """

    name = MODEL_NAME

    def __init__(self, model: Any, device: Any, dtype: Any, seed: int) -> None:
        self.model = model
        self.device = device  # read by embed_images: pinned memory + more workers on CUDA
        self.dtype = dtype
        self.seed = seed
        self.preprocess = ClipPreprocess(IMAGE_SIZE)  # an attribute: the model stays out of it
        self.reset_counters()

    def reset_counters(self) -> None:
        self.calls = 0
        self.images = 0
        self.busy_s = 0.0

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {
            "bench": MODEL_NAME,
            "weights": f"random(seed={self.seed})",
            "dtype": str(self.dtype).replace("torch.", ""),
            "preprocess": f"pil-bicubic-shorter-{IMAGE_SIZE}-centercrop-clipnorm",
        }

    def encode_images(self, batch: Any) -> np.ndarray:
        import torch

        cuda = self.device.type == "cuda"
        with torch.inference_mode():
            if cuda:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
            else:
                t0 = time.perf_counter()
            x = batch.to(self.device, non_blocking=True).to(self.dtype)
            out = self.model(pixel_values=x).image_embeds
            if cuda:
                end.record()
            res = out.float().cpu().numpy()  # synchronises
        if cuda:
            end.synchronize()
            self.busy_s += start.elapsed_time(end) / 1000.0
        else:
            self.busy_s += time.perf_counter() - t0
        self.calls += 1
        self.images += int(res.shape[0])
        return res


def build_encoder(device: Any, dtype: Any, seed: int) -> BenchClipEncoder:
    import torch
    from transformers import CLIPVisionConfig, CLIPVisionModelWithProjection

    torch.manual_seed(seed)
    config = CLIPVisionConfig(
        image_size=IMAGE_SIZE,
        patch_size=32,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        projection_dim=512,
    )
    model = CLIPVisionModelWithProjection(config)
    model.eval().to(device=device, dtype=dtype)
    return BenchClipEncoder(model, device, dtype, seed)


# ---------------------------------------------------------------------------- measuring


class GpuUtilSampler:
    """Samples the GPU's utilisation (NVML: the percentage of the last sample period, 1/6 s to
    1 s, in which a kernel ran) in a background thread while a phase runs."""

    def __init__(self, device: Any, interval_s: float = 0.05) -> None:
        self.method: str | None = None
        self.interval_s = interval_s
        self._read: Callable[[], float] | None = None
        if device.type != "cuda":
            return
        import torch

        index = device.index if device.index is not None else torch.cuda.current_device()
        try:
            float(torch.cuda.utilization(index))
            self._read = lambda: float(torch.cuda.utilization(index))
            self.method = "NVML via torch.cuda.utilization()"
            return
        except Exception:
            pass
        target = str(index)
        try:
            uuid = str(torch.cuda.get_device_properties(index).uuid)
            if uuid:
                target = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        except Exception:
            pass
        cmd = [
            "nvidia-smi",
            "--query-gpu=utilization.gpu",
            "--format=csv,noheader,nounits",
            "-i",
            target,
        ]

        def read_smi() -> float:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=5, check=True)
            return float(out.stdout.split()[0])

        try:
            read_smi()
            self._read = read_smi
            self.method = "nvidia-smi --query-gpu=utilization.gpu"
            self.interval_s = max(interval_s, 0.1)
        except Exception:
            self._read = None

    def measure(self) -> _Sampling:
        return _Sampling(self)


class _Sampling:
    def __init__(self, sampler: GpuUtilSampler) -> None:
        self.sampler = sampler
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        read = self.sampler._read
        assert read is not None
        while not self._stop.wait(self.sampler.interval_s):
            try:
                self.samples.append(read())
            except Exception:
                return

    def __enter__(self) -> _Sampling:
        if self.sampler._read is not None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    @property
    def mean(self) -> float | None:
        return float(np.mean(self.samples)) / 100.0 if self.samples else None


@dataclass
class Phase:
    name: str
    images: int
    wall_s: float
    images_per_s: float
    encoder_calls: int
    encoder_images: int
    model_busy_s: float
    model_busy_fraction: float
    gpu_util_mean: float | None = None
    gpu_util_samples: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def run_phase(
    name: str,
    n_images: int,
    fn: Callable[[], Any],
    encoder: BenchClipEncoder,
    sampler: GpuUtilSampler,
) -> tuple[Phase, Any]:
    import torch

    encoder.reset_counters()
    cuda = encoder.device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(encoder.device)
    with sampler.measure() as sampling:
        t0 = time.perf_counter()
        result = fn()
        if cuda:
            torch.cuda.synchronize(encoder.device)
        wall = time.perf_counter() - t0
    phase = Phase(
        name=name,
        images=n_images,
        wall_s=wall,
        images_per_s=n_images / wall if wall > 0 else float("inf"),
        encoder_calls=encoder.calls,
        encoder_images=encoder.images,
        model_busy_s=encoder.busy_s,
        model_busy_fraction=encoder.busy_s / wall if wall > 0 else 0.0,
        gpu_util_mean=sampling.mean,
        gpu_util_samples=len(sampling.samples),
    )
    return phase, result


# ---------------------------------------------------------------------------- phases


def official_loop(encoder: BenchClipEncoder, paths: Sequence[Path]) -> tuple[np.ndarray, float]:
    """The benchmarks' scripts: one image at a time, no DataLoader. Returns the embeddings and
    the seconds spent opening, decoding and preprocessing."""
    from PIL import Image

    out = []
    prep_s = 0.0
    for path in paths:
        t0 = time.perf_counter()
        with Image.open(path) as im:
            image = im.convert("RGB")
        x = encoder.preprocess(image).unsqueeze(0)
        prep_s += time.perf_counter() - t0
        out.append(encoder.encode_images(x)[0])
    return np.stack(out), prep_s


def _decode_loader(
    store: Any, refs: Sequence[str], preprocess: Any, batch_size: int, workers: int, pin: bool
) -> Any:
    """The DataLoader `embed_images` decodes with (its dataset: read, hash check, decode,
    preprocess; its collate), over files hashed here beforehand."""
    from lexsem.engine.decoding import DecodeDataset, decode_loader
    from lexsem.engine.keys import image_key

    entries = []
    for ref in refs:
        res = store.resolve(ref)
        entries.append((image_key(res.read()), res))
    return decode_loader(DecodeDataset(entries, preprocess, True), batch_size, workers, pin)


def decode_only(loader: Any) -> int:
    n = 0
    for batch in loader:
        if batch.errors:
            raise RuntimeError(f"decode errors: {batch.errors[:3]}")
        n += len(batch.slots)
    return n


def model_only(encoder: BenchClipEncoder, batch_size: int, n_batches: int) -> int:
    import torch

    g = torch.Generator().manual_seed(1)
    batch = torch.randn(batch_size, 3, IMAGE_SIZE, IMAGE_SIZE, generator=g)
    if encoder.device.type == "cuda":
        batch = batch.pin_memory()
    for _ in range(n_batches):
        encoder.encode_images(batch)
    return batch_size * n_batches


# ---------------------------------------------------------------------------- report


def _peak_rss_mib() -> tuple[float, float]:
    """Peak RSS of this process and of its largest finished child (DataLoader workers)."""
    scale = 1024.0 if sys.platform != "darwin" else 1024.0**2  # KiB on Linux, bytes on macOS
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / scale
    return own, kids


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _fmt_frac(x: float | None) -> str:
    return "   n/a" if x is None else f"{100 * x:5.1f}%"


def print_phases(phases: Sequence[Phase], cuda: bool) -> None:
    head = f"{'phase':<34} {'images':>6} {'wall s':>8} {'img/s':>9} {'model busy':>10}"
    if cuda:
        head += f" {'GPU util':>9}"
    print(head)
    print("-" * len(head))
    for p in phases:
        line = (
            f"{p.name:<34} {p.images:>6} {p.wall_s:>8.2f} {p.images_per_s:>9.1f} "
            f"{_fmt_frac(p.model_busy_fraction):>10}"
        )
        if cuda:
            line += f" {_fmt_frac(p.gpu_util_mean):>9}"
        print(line)


# ---------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    ap.add_argument("--dtype", choices=["auto", "fp32", "fp16", "bf16"], default="auto")
    ap.add_argument("--n", type=int, default=None, help="images (default: 5000 CUDA, 300 CPU)")
    ap.add_argument(
        "--loop-n",
        type=int,
        default=None,
        help="images for the one-at-a-time loop (default: all N on CUDA, 100 on CPU)",
    )
    ap.add_argument("--batch-size", type=int, default=None, help="default: 128 on CUDA, 64 on CPU")
    ap.add_argument(
        "--workers",
        type=int,
        default=None,
        help="DataLoader workers (default: embed_images' own choice)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--image-dir",
        type=Path,
        default=None,
        help="use the first N *.jpg of this folder (e.g. COCO val2017) instead of generating",
    )
    ap.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write figures")
    args = ap.parse_args(argv)
    for name in ("n", "loop_n", "batch_size"):
        value = getattr(args, name)
        if value is not None and value < 1:
            ap.error(f"--{name.replace('_', '-')} must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: CUDA is not available", file=sys.stderr)
        return 2
    use_cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    kind = "cuda" if use_cuda else "cpu"
    device = torch.device(kind)
    cuda = kind == "cuda"
    if args.dtype == "auto":
        if cuda:
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        else:
            dtype = torch.float32
    else:
        dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[args.dtype]
    n = args.n or DEFAULT_N[kind]
    batch_size = args.batch_size or DEFAULT_BATCH[kind]

    from lexsem.engine import image_scan
    from lexsem.engine.decoding import default_num_workers
    from lexsem.engine.image_embed import embed_images
    from lexsem.engine.request_store import RequestStore
    from lexsem.images.image_store import ImageStore
    from lexsem.models.protocols import fingerprint_key

    workers = (
        args.workers if args.workers is not None else default_num_workers(n, batch_size, cuda=cuda)
    )
    machine: dict[str, Any] = {
        "cpu": _cpu_model(),
        "cpus": _cpus(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "device": kind,
        "dtype": str(dtype).replace("torch.", ""),
    }
    if cuda:
        machine["gpu"] = torch.cuda.get_device_name(device)
    print(
        f"device {kind} ({machine.get('gpu', machine['cpu'])}), {machine['cpus']} CPUs, "
        f"torch {torch.__version__} ({machine['torch_threads']} threads), {machine['dtype']}"
    )

    tmp = Path(tempfile.mkdtemp(prefix="lexsem-image-bench-"))
    try:
        # -------------------------------------------------------------- images
        t0 = time.perf_counter()
        if args.image_dir is not None:
            folder = args.image_dir.expanduser()
            names = sorted(p.name for p in folder.glob("*.jpg"))[:n]
            if len(names) < n:
                print(f"only {len(names)} *.jpg in {folder}; using them", file=sys.stderr)
                n = len(names)
            if n == 0:
                return 2
            sizes = [(folder / name).stat().st_size for name in names]
            gen_what = f"{n} JPEGs from {folder}"
        else:
            folder = tmp / "images"
            folder.mkdir()
            procs = min(_cpus(), 16)
            sizes = generate_images(folder, n, args.seed, procs)
            names = [f"{i:012d}.jpg" for i in range(n)]
            gen_what = f"generated {n} JPEGs ({procs} processes)"
        gen_s = time.perf_counter() - t0
        print(
            f"{gen_what} in {gen_s:.1f} s ({n / gen_s:.0f}/s), mean {np.mean(sizes) / 1024:.0f}"
            f" KiB, total {sum(sizes) / 1024**2:.0f} MiB"
        )
        paths = [folder / name for name in names]
        refs = [f"bench:{name}" for name in names]
        store = ImageStore(roots={"bench": folder}, default_root=None)
        loop_n = min(args.loop_n or DEFAULT_LOOP_N[kind] or n, n)

        # -------------------------------------------------------------- model
        t0 = time.perf_counter()
        encoder = build_encoder(device, dtype, args.seed)
        load_s = time.perf_counter() - t0
        n_params = sum(p.numel() for p in encoder.model.parameters())
        attn = getattr(encoder.model.config, "_attn_implementation", None)
        print(
            f"model: {n_params / 1e6:.1f} M parameters, attention {attn}, built in {load_s:.1f} s"
        )
        # warm-up: kernels, allocator, threads (batch shapes of every phase)
        warm = torch.zeros(batch_size, 3, IMAGE_SIZE, IMAGE_SIZE)
        for _ in range(3 if cuda else 1):
            encoder.encode_images(warm)
            encoder.encode_images(warm[:1])
        if n % batch_size:
            encoder.encode_images(warm[: n % batch_size])
        sampler = GpuUtilSampler(device)
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)

        phases: list[Phase] = []

        # -------------------------------------------------------------- official loop
        loop_phase, (loop_vecs, prep_s) = run_phase(
            "official loop (1 image at a time)",
            loop_n,
            lambda: official_loop(encoder, paths[:loop_n]),
            encoder,
            sampler,
        )
        loop_phase.extra = {
            "decode_preprocess_s": prep_s,
            "decode_preprocess_ms_per_image": 1000 * prep_s / loop_n,
            "model_ms_per_image": 1000 * loop_phase.model_busy_s / loop_n,
        }
        phases.append(loop_phase)

        # -------------------------------------------------------------- decode only
        loader = _decode_loader(store, refs, encoder.preprocess, batch_size, workers, cuda)
        dec_phase, n_dec = run_phase(
            f"decode only ({workers} workers)", n, lambda: decode_only(loader), encoder, sampler
        )
        assert n_dec == n, (n_dec, n)
        phases.append(dec_phase)

        # -------------------------------------------------------------- model only
        # on CPU two batches give the rate (a batch of 64 takes ~10 s on 2 cores)
        n_batches = max(3, min(50, math.ceil(n / batch_size))) if cuda else 2
        model_phase, _ = run_phase(
            f"model only (batch {batch_size})",
            batch_size * n_batches,
            lambda: model_only(encoder, batch_size, n_batches),
            encoder,
            sampler,
        )
        phases.append(model_phase)

        # -------------------------------------------------------------- lexsem pipeline
        cache_root = tmp / "cache"
        model_key = fingerprint_key(encoder.fingerprint)

        def pipeline() -> tuple[np.ndarray, Any]:
            with RequestStore(cache_root, model_key) as cache:
                vecs, stats, skipped = embed_images(
                    encoder, refs, store, cache, batch_size=batch_size, num_workers=workers
                )
            assert not skipped, skipped
            return vecs, stats

        cold_phase, (cold_vecs, cold_stats) = run_phase(
            f"lexsem embed_images (batch {batch_size})", n, pipeline, encoder, sampler
        )
        cold_phase.extra = {"stats": asdict(cold_stats)}
        phases.append(cold_phase)
        if cold_stats.n_encoded != len(set(refs)) or cold_phase.encoder_images != n:
            print(f"warning: cold run encoded {cold_stats.n_encoded} of {n}", file=sys.stderr)

        # -------------------------------------------------------------- cache reruns
        memo = getattr(image_scan, "_key_memo", None)
        if isinstance(memo, dict):
            memo.clear()  # as in a new process: every file is read and hashed again
        rerun_phase, (rerun_vecs, rerun_stats) = run_phase(
            "cache rerun (files re-read+hashed)", n, pipeline, encoder, sampler
        )
        rerun_phase.extra = {"stats": asdict(rerun_stats)}
        phases.append(rerun_phase)
        memo_phase, (memo_vecs, memo_stats) = run_phase(
            "cache rerun (same process)", n, pipeline, encoder, sampler
        )
        memo_phase.extra = {"stats": asdict(memo_stats)}
        phases.append(memo_phase)

        # -------------------------------------------------------------- checks
        checks: dict[str, Any] = {
            "rerun_encoder_calls": rerun_phase.encoder_calls + memo_phase.encoder_calls,
            "rerun_all_cached": rerun_stats.n_cached == rerun_stats.n_unique == len(set(refs))
            and memo_stats.n_cached == len(set(refs)),
            "rerun_equal_to_cold": bool(
                np.array_equal(rerun_vecs, cold_vecs) and np.array_equal(memo_vecs, cold_vecs)
            ),
        }
        a = loop_vecs / np.linalg.norm(loop_vecs, axis=1, keepdims=True)
        b = cold_vecs[:loop_n] / np.linalg.norm(cold_vecs[:loop_n], axis=1, keepdims=True)
        checks["loop_vs_pipeline_min_cosine"] = float(np.min(np.sum(a * b, axis=1)))
        diff = np.abs(loop_vecs - cold_vecs[:loop_n])
        checks["loop_vs_pipeline_max_abs_diff"] = float(np.max(diff))

        # -------------------------------------------------------------- report
        own_rss, child_rss = _peak_rss_mib()
        print()
        print_phases(phases, cuda)
        speedup = cold_phase.images_per_s / loop_phase.images_per_s
        ratios = {
            "speedup_pipeline_vs_loop": speedup,
            "decode_only_over_model_only": dec_phase.images_per_s / model_phase.images_per_s,
            "pipeline_over_model_only": cold_phase.images_per_s / model_phase.images_per_s,
            "cache_rerun_s": rerun_phase.wall_s,
            "cache_rerun_same_process_s": memo_phase.wall_s,
            "cache_rerun_over_cold": rerun_phase.wall_s / cold_phase.wall_s,
        }
        print()
        target = "  (target >= 20x on GPU)" if cuda else ""
        print(f"speed-up, lexsem pipeline vs official loop   {speedup:8.1f}x{target}")
        print(
            "decode-only img/s / model-only img/s        "
            f"{ratios['decode_only_over_model_only']:8.2f}"
            "   (> 1: decoding is not the bottleneck)"
        )
        print(
            f"pipeline img/s / model-only img/s           {ratios['pipeline_over_model_only']:8.2f}"
        )
        print(
            f"cache rerun: {rerun_phase.wall_s:.2f} s re-reading+hashing "
            f"({rerun_stats.read_s:.2f} s read+hash, {rerun_stats.cache_s:.2f} s cache), "
            f"{memo_phase.wall_s:.2f} s same process; {100 * ratios['cache_rerun_over_cold']:.1f}%"
            f" of the cold run; encoder calls {checks['rerun_encoder_calls']}"
        )
        print(
            f"cold run: read+hash {cold_stats.read_s:.2f} s, decode+encode "
            f"{cold_stats.encode_s:.2f} s, cache {cold_stats.cache_s:.2f} s, "
            f"{cold_stats.num_workers} workers"
        )
        print(
            f"official loop per image: decode+preprocess "
            f"{loop_phase.extra['decode_preprocess_ms_per_image']:.1f} ms, model "
            f"{loop_phase.extra['model_ms_per_image']:.1f} ms"
        )
        if cuda:
            print(f"GPU utilisation: {sampler.method or 'not available (no NVML, no nvidia-smi)'}")
            gpu_peak = torch.cuda.max_memory_allocated(device) / 1024**2
            print(f"peak GPU memory allocated {gpu_peak:.0f} MiB")
        else:
            gpu_peak = None
        print(f"peak RSS: this process {own_rss:.0f} MiB, largest child {child_rss:.0f} MiB")
        print(
            "checks: rerun called the encoder "
            f"{checks['rerun_encoder_calls']} times, all cached {checks['rerun_all_cached']}, "
            f"identical to the cold run {checks['rerun_equal_to_cold']}; loop vs pipeline min "
            f"cosine {checks['loop_vs_pipeline_min_cosine']:.6f}"
        )
        ok = checks["rerun_encoder_calls"] == 0 and checks["rerun_all_cached"]
        ok = ok and checks["rerun_equal_to_cold"]

        if args.json is not None:
            record = {
                "benchmark": "image_bench",
                "machine": machine,
                "config": {
                    "n": n,
                    "loop_n": loop_n,
                    "batch_size": batch_size,
                    "workers": workers,
                    "seed": args.seed,
                    "images": gen_what,
                    "mean_jpeg_bytes": float(np.mean(sizes)),
                    "model": MODEL_NAME,
                    "parameters": n_params,
                    "attention": attn,
                },
                "generation_s": gen_s,
                "model_build_s": load_s,
                "phases": [asdict(p) for p in phases],
                "ratios": ratios,
                "checks": checks,
                "gpu_util_method": sampler.method,
                "peak_rss_mib": {"self": own_rss, "largest_child": child_rss},
                "peak_gpu_mib": gpu_peak,
            }
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(record, indent=2) + "\n")
            print(f"wrote {args.json}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
