"""`make bench-peer`: lexsem against LAION's CLIP_benchmark on CLIP_benchmark's own SugarCrepe task.

What a researcher would otherwise run (`clip_benchmark eval --dataset sugar_crepe/<subset>`), side
by side with `lexsem eval -b sugarcrepe`, in one run, one process after the other:

- the same model: a random-weight open_clip ViT-B/32 checkpoint (GELU), built here;
- the same data: the public SugarCrepe JSONs ($LEXSEM_TEST_DATA/sugarcrepe) and generated JPEGs
  of COCO-like sizes named as the COCO val2017 files they reference (nothing downloaded);
- CPU, fp32 (CLIP_benchmark with `--no_amp`), batch 64, the same DataLoader worker count;
- CLIP_benchmark: every selected subset in one `clip_benchmark eval` process (it loads the model
  once per subset, as it does);
- lexsem cold (empty store, everything from loading the data to writing the run, 1000-resample
  bootstrap CIs included), then lexsem warm: a new `lexsem eval` process with every request in
  the store, which must import neither torch nor transformers.

Prints the per-subset accuracies side by side (they must be identical: the exit status is 1 when
they are not), the wall times, the ratios against the targets (lexsem cold >= 5x faster than
CLIP_benchmark, warm <= 3 s), each process's CPU seconds (user + system of its whole tree: on a
machine shared with other work the steadier comparison) and peak RSS (the largest process of
its tree, as `wait4` reports it). Beside the ratio, the machine's floor (`floor.py`, in a
process of its own: the CPU kind, the fp32 and bf16 matmul throughput, the FLOPs of one image
and of every unique caption at its own token count) and the share of the fp32 floor each tower
of the cold run reached (from its run.json timings: `encode_s` and `image_s`, which also hold
loading the model and reading and decoding the images; then each tower's forward alone and the
whole run's wall, from `timings.breakdown`, with each part's share of the wall). `--json OUT`
writes every figure.

    python bench/peer_bench.py                                 # all 7 subsets (~30 min, 2 cores)
    python bench/peer_bench.py --subsets swap_obj --limit 100  # a quick check

`--limit N` takes the first N items of each subset: both tools then read the same shortened
JSONs (lexsem as a user file folder, `sugarcrepe:FOLDER`; without `--limit`, lexsem reads the
pinned public files with their checksums). Needs clip-benchmark (`pip install clip-benchmark`,
which `make bench-peer` does into `.bench-peer/`, outside the venv the tests use, given here as
LEXSEM_PEER_SITE) and open_clip.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from floor import floor_line
from image_bench import make_jpeg

SUBSETS = (
    "add_att",
    "add_obj",
    "replace_att",
    "replace_obj",
    "replace_rel",
    "swap_att",
    "swap_obj",
)
ARCH = "ViT-B-32"
BATCH = 64
TARGET_RATIO = 5.0
TARGET_WARM_S = 3.0
HEAVY = ("torch", "transformers", "open_clip")
# runs the lexsem CLI in this interpreter, then reports which heavy packages it imported
_LEXSEM = f"""
import json, sys
from lexsem.cli import app
sys.argv = ["lexsem", *sys.argv[1:]]
code = 0
try:
    app()
except SystemExit as exc:
    code = exc.code
print("IMPORTED " + json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))
sys.exit(code)
"""


@dataclass
class Proc:
    """One timed process: wall and CPU seconds (user + system, its whole tree), peak RSS (MiB),
    exit code, log file."""

    name: str
    wall_s: float
    cpu_s: float
    peak_rss_mib: float
    returncode: int
    log: str
    extra: dict[str, Any] = field(default_factory=dict)


def run_timed(name: str, cmd: Sequence[str], log: Path, env: dict[str, str]) -> Proc:
    """Run `cmd`, output to `log`; its wall time and the peak RSS of its process tree."""
    with open(log, "w") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    result = Proc(name, wall, cpu, usage.ru_maxrss / 1024, proc.returncode, str(log))
    if result.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-30:])
        raise RuntimeError(f"{name} failed (exit {result.returncode}); {log}:\n{tail}")
    return result


# -- the data ----------------------------------------------------------------------------------
def write_subsets(source: Path, root: Path, subsets: Sequence[str], limit: int | None) -> dict:
    """Copy each subset's JSON into `root` (its first `limit` items); {subset: items}."""
    out = {}
    for name in subsets:
        data = json.loads((source / f"{name}.json").read_text())
        if limit is not None:
            data = dict(list(data.items())[:limit])
        (root / f"{name}.json").write_text(json.dumps(data))
        out[name] = data
    return out


def _write_jpeg(job: tuple[str, str, int]) -> int:
    folder, filename, seed = job
    data, _ = make_jpeg(seed, int(Path(filename).stem))  # a file's image depends on its name
    (Path(folder) / filename).write_bytes(data)
    return len(data)


def write_images(folder: Path, filenames: Sequence[str], seed: int, procs: int) -> int:
    """One generated JPEG per COCO file name; returns the bytes written."""
    folder.mkdir(parents=True, exist_ok=True)
    jobs = [(str(folder), name, seed) for name in filenames]
    with ProcessPoolExecutor(max_workers=max(1, procs)) as pool:
        return sum(pool.map(_write_jpeg, jobs, chunksize=16))


def build_checkpoint(path: Path, seed: int) -> None:
    """A random-weight open_clip ViT-B/32 (GELU) state dict, in a child process (so that this
    process never imports torch and its RSS stays its own)."""
    code = (
        "import sys, warnings, torch, open_clip\n"
        f"torch.manual_seed({seed})\n"
        "warnings.simplefilter('ignore')\n"
        f"model, _, _ = open_clip.create_model_and_transforms({ARCH!r})\n"
        "torch.save(model.state_dict(), sys.argv[1])\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, capture_output=True)


# -- the three runs ----------------------------------------------------------------------------
def clip_benchmark_cmd(root: Path, ckpt: Path, subsets: Sequence[str], out: Path, workers: int):
    return [
        sys.executable, "-m", "clip_benchmark.cli", "eval",
        "--dataset", *[f"sugar_crepe/{s}" for s in subsets],
        "--dataset_root", str(root),
        "--model", ARCH, "--pretrained", str(ckpt),
        "--task", "image_caption_selection",
        "--no_amp", "--batch_size", str(BATCH), "--num_workers", str(workers),
        "--output", str(out / "{dataset}.json"),
    ]  # fmt: skip


def lexsem_cmd(args: argparse.Namespace, tmp: Path, ckpt: Path, out: Path) -> list[str]:
    if args.limit is None:
        bench = ["-b", f"sugarcrepe/{','.join(args.subsets)}", "--data-dir", str(args.data)]
    else:
        bench = ["-b", f"sugarcrepe:{tmp / 'root'}"]
    return [
        sys.executable, "-c", _LEXSEM, "eval",
        "-m", f"openclip:{ARCH}@{ckpt}?quick_gelu=false", *bench,
        "--coco-val2017", str(tmp / "root" / "val2017"),
        "--cache-dir", str(tmp / "store"), "--out", str(out), "--force",
        "--device", "cpu", "--dtype", "fp32", "--batch-size", str(BATCH),
        "--num-workers", str(args.workers), "--offline", "-q",
    ]  # fmt: skip


def peer_accuracies(out: Path, subsets: Sequence[str]) -> dict[str, float]:
    """CLIP_benchmark's `acc` per subset, in percent (one image: the text accuracy)."""
    return {
        s: 100 * json.loads((out / f"sugar_crepe_{s}.json").read_text())["metrics"]["acc"]
        for s in subsets
    }


def lexsem_results(run_dir: Path) -> dict[str, dict[str, Any]]:
    """lexsem's per-subset results (accuracy, hits, ties, n) of the pair task."""
    record = json.loads((run_dir / "run.json").read_text())
    return {
        r["subset"]: r
        for r in record["results"]
        if r["task"] == "pair" and r.get("subset") and not r.get("label")
    }


def imported(log: str) -> dict[str, bool]:
    lines = [ln for ln in Path(log).read_text().splitlines() if ln.startswith("IMPORTED ")]
    return json.loads(lines[-1].removeprefix("IMPORTED ")) if lines else {}


# -- the report --------------------------------------------------------------------------------
def compare(
    items: dict[str, dict], peer: dict[str, float], cold: dict, warm: dict
) -> list[dict[str, Any]]:
    """One row per subset; `same`: CLIP_benchmark's hits equal lexsem's, cold and warm."""
    rows = []
    for name, data in items.items():
        n = len(data)
        peer_hits = round(peer[name] * n / 100)
        c, w = cold[name], warm[name]
        same = c["n"] == w["n"] == n and peer_hits == c["hits"] == w["hits"]
        rows.append(
            {
                "subset": name,
                "n": n,
                "clip_benchmark": peer[name],
                "lexsem_cold": c["accuracy"],
                "lexsem_warm": w["accuracy"],
                "lexsem_ties": c["ties"],
                "identical": bool(same),
            }
        )
    return rows


def print_report(rows: list[dict], procs: dict[str, Proc], figures: dict[str, Any]) -> None:
    print(f"\n{'subset':<12} {'n':>5} {'CLIP_benchmark':>15} {'lexsem cold':>12} "
          f"{'lexsem warm':>12}  identical")  # fmt: skip
    for r in rows:
        print(
            f"{r['subset']:<12} {r['n']:>5} {r['clip_benchmark']:>15.2f} {r['lexsem_cold']:>12.2f}"
            f" {r['lexsem_warm']:>12.2f}  {'yes' if r['identical'] else 'NO'}"
        )
    print(f"\n{'process':<16} {'wall s':>9} {'CPU s':>9} {'peak RSS MiB':>13}")
    for p in procs.values():
        print(f"{p.name:<16} {p.wall_s:>9.1f} {p.cpu_s:>9.1f} {p.peak_rss_mib:>13.0f}")
    ratio, warm = figures["ratio_cold"], procs["lexsem warm"].wall_s
    heavy = [m for m, v in figures["warm_imported"].items() if v]
    print(
        f"\nlexsem cold is {ratio:.2f}x faster than CLIP_benchmark in wall time "
        f"(target >= {TARGET_RATIO:g}x: {'met' if ratio >= TARGET_RATIO else 'NOT met'}), "
        f"{figures['ratio_cold_cpu']:.2f}x in CPU time"
    )
    print(
        f"lexsem warm rerun {warm:.2f} s (target <= {TARGET_WARM_S:g} s: "
        f"{'met' if warm <= TARGET_WARM_S else 'NOT met'}); it imported "
        f"{', '.join(heavy) if heavy else 'none of ' + ', '.join(HEAVY)}"
    )
    for line in floor_lines(figures):
        print(line)
    print(
        f"lexsem cold: {figures['lexsem_texts']} unique texts, {figures['lexsem_images']} unique "
        f"images (CLIP_benchmark encodes {2 * figures['items']} texts and {figures['items']} "
        f"images)"
    )


def measure_floor(tmp: Path, ckpt: Path, items: dict, env: dict[str, str]) -> dict[str, Any]:
    """The machine's matmul floors and the FLOPs of the cold run's work (one image; each unique
    caption at its own token count), by `floor.py` in a process of its own (this one never
    imports torch)."""
    texts = sorted({c for data in items.values() for rec in data.values()
                    for c in (rec["caption"], rec["negative_caption"])})  # fmt: skip
    (tmp / "texts.json").write_text(json.dumps(texts))
    out = tmp / "floor.json"
    script = str(Path(__file__).resolve().parent / "floor.py")
    cmd = [sys.executable, script, "--checkpoint", str(ckpt), "--arch", ARCH,
           "--texts", str(tmp / "texts.json"), "--json", str(out)]  # fmt: skip
    subprocess.run(cmd, env=env, check=True, capture_output=True)
    return json.loads(out.read_text())


def floor_lines(figures: dict[str, Any]) -> list[str]:
    """Each tower's share of the fp32 floor in the cold run (run.json: text encode_s; image_s,
    which also holds reading and decoding the images)."""
    floor, t = figures["floor"], figures["lexsem_cold_timings"]
    gflops = floor["matmul_gflops"]["fp32"]
    txt = floor["text_flops"] / t["encode_s"] / 1e9 if t.get("encode_s") else 0.0
    img_flops = floor["image_flops"] * t.get("n_images_encoded", 0)
    img = img_flops / t["image_s"] / 1e9 if t.get("image_s") else 0.0
    lines = [
        floor["cpu"],
        f"floor: matmul fp32 {gflops:.1f} GFLOP/s, bf16 {floor['matmul_gflops']['bf16']:.1f} "
        "GFLOP/s",
        f"lexsem cold text tower: {floor['text_flops'] / 1e9:.0f} GFLOP in {t['encode_s']:.1f} s"
        f" = {txt:.1f} GFLOP/s, {100 * txt / gflops:.0f}% of the fp32 floor",
        f"lexsem cold images (read, decode, encode): {img_flops / 1e9:.0f} GFLOP in "
        f"{t['image_s']:.1f} s = {img:.1f} GFLOP/s, {100 * img / gflops:.0f}% of the fp32 floor",
    ]
    b = t.get("breakdown")
    if b:  # the towers' forward alone, and the whole run's wall (run.json timings.breakdown)
        for name, flops in (("text", floor["text_flops"]), ("image", img_flops)):
            lines.append(floor_line(f"lexsem cold {name} tower (forward only)", flops,
                                    b[f"{name}_tower_s"], gflops, "fp32"))  # fmt: skip
        total = floor["text_flops"] + img_flops
        lines.append(floor_line("lexsem cold whole run (wall)", total, b["wall_s"], gflops, "fp32"))
        towers = b["text_tower_s"] + b["image_tower_s"]
        lines.append(f"towers' forward / whole run: {100 * towers / b['wall_s']:.0f}%; "
                     + ", ".join(f"{k} {100 * v / b['wall_s']:.0f}%"
                                 for k, v in _parts(b).items()))  # fmt: skip
    return lines


def _parts(b: dict[str, Any]) -> dict[str, float]:
    """The parts of a run's wall (run.json timings.breakdown), by name."""
    names = ("start_up", "model_load", "data", "image_read", "image_decode", "tokenize",
             "text_tower", "image_tower", "store", "scoring", "rest")  # fmt: skip
    return {n: b.get(f"{n}_s", 0.0) for n in names}


# -- main --------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--subsets", default=",".join(SUBSETS), help="comma-separated subsets")
    p.add_argument("--limit", type=int, default=None, help="first N items of each subset")
    p.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", type=Path, default=None, help="default: $LEXSEM_TEST_DATA")
    p.add_argument("--json", type=Path, default=None, help="write every figure here")
    p.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    args = p.parse_args(argv)
    args.subsets = [s.strip() for s in args.subsets.split(",") if s.strip()]
    unknown = sorted(set(args.subsets) - set(SUBSETS))
    if unknown or not args.subsets:
        p.error(f"unknown subsets {unknown}; choose from {', '.join(SUBSETS)}")
    if args.limit is not None and args.limit <= 0:
        p.error("--limit must be positive")
    data = args.data or os.environ.get("LEXSEM_TEST_DATA")
    if not data:
        p.error("set LEXSEM_TEST_DATA (or --data) to the folder of public benchmark files")
    args.data = Path(data).expanduser().resolve()
    return args


def _peer_site() -> str | None:
    """The folder `make bench-peer` installs CLIP_benchmark into (`--target`, outside the venv
    the tests use); on the PYTHONPATH of the CLIP_benchmark process only."""
    return os.environ.get("LEXSEM_PEER_SITE") or None


def _check_tools() -> None:
    import importlib.util

    site = _peer_site()
    if site:
        sys.path.insert(0, site)
    try:
        for module, install in (
            ("clip_benchmark", "clip-benchmark"),
            ("open_clip", "open_clip_torch"),
        ):
            if importlib.util.find_spec(module) is None:
                raise SystemExit(f"{module} is not installed: {install} (make bench-peer)")
    finally:
        if site:
            sys.path.remove(site)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    _check_tools()
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="lexsem-peer-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        return _run(args, tmp.resolve())
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


def _run(args: argparse.Namespace, tmp: Path) -> int:
    root = tmp / "root"
    root.mkdir(exist_ok=True)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1", "LEXSEM_OFFLINE": "1"}
    env["LEXSEM_CACHE_DIR"] = str(tmp / "store")  # everything lexsem keeps starts empty
    items = write_subsets(args.data / "sugarcrepe", root, args.subsets, args.limit)
    names = sorted({rec["filename"] for data in items.values() for rec in data.values()})
    n_items = sum(len(d) for d in items.values())
    t0 = time.perf_counter()
    size = write_images(root / "val2017", names, args.seed, os.cpu_count() or 1)
    gen_s = time.perf_counter() - t0
    print(f"{n_items} items in {len(items)} subsets; {len(names)} JPEGs generated in {gen_s:.1f} s"
          f" ({size / 2**20:.0f} MiB)")  # fmt: skip
    ckpt = tmp / "vit-b-32-random.pt"
    t0 = time.perf_counter()
    build_checkpoint(ckpt, args.seed)
    print(f"random {ARCH} checkpoint built in {time.perf_counter() - t0:.1f} s")

    peer_out, cold_out, warm_out = tmp / "clip_benchmark", tmp / "lexsem-cold", tmp / "lexsem-warm"
    peer_out.mkdir(exist_ok=True)
    procs: dict[str, Proc] = {}
    peer_env = dict(env)
    if _peer_site():
        peer_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_peer_site(), env.get("PYTHONPATH")) if p
        )
    steps = [
        ("CLIP_benchmark", clip_benchmark_cmd(root, ckpt, args.subsets, peer_out, args.workers)),
        ("lexsem cold", lexsem_cmd(args, tmp, ckpt, cold_out)),
        ("lexsem warm", lexsem_cmd(args, tmp, ckpt, warm_out)),
    ]
    for name, cmd in steps:
        print(f"running {name} ...", flush=True)
        step_env = peer_env if name == "CLIP_benchmark" else env
        procs[name] = run_timed(name, cmd, tmp / f"{name.replace(' ', '-')}.log", step_env)
        print(f"  {procs[name].wall_s:.1f} s", flush=True)

    peer = peer_accuracies(peer_out, args.subsets)
    cold, warm = lexsem_results(cold_out), lexsem_results(warm_out)
    rows = compare(items, peer, cold, warm)
    timings = json.loads((cold_out / "run.json").read_text())["timings"]
    floor = measure_floor(tmp, ckpt, items, env)
    figures = {
        "items": n_items,
        "ratio_cold": procs["CLIP_benchmark"].wall_s / procs["lexsem cold"].wall_s,
        "ratio_cold_cpu": procs["CLIP_benchmark"].cpu_s / procs["lexsem cold"].cpu_s,
        "warm_imported": imported(procs["lexsem warm"].log),
        "lexsem_texts": timings.get("n_texts_unique"),
        "lexsem_images": timings.get("n_images_unique"),
        "lexsem_cold_timings": timings,
        "floor": floor,
    }
    print_report(rows, procs, figures)
    if args.json is not None:
        record = {
            "benchmark": "peer_bench",
            "config": {
                "subsets": args.subsets,
                "limit": args.limit,
                "workers": args.workers,
                "seed": args.seed,
                "batch_size": BATCH,
                "model": f"open_clip {ARCH}, random weights (seed {args.seed}), CPU fp32",
            },
            "images": {"count": len(names), "bytes": size, "generation_s": gen_s},
            "subsets": rows,
            "processes": {k: asdict(v) for k, v in procs.items()},
            "figures": figures,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
