"""`make bench`: `lexsem publish` of 50 synthetic model runs, each over every benchmark at its
public size — SugarCrepe++ (5 subsets, 4757 items; ITT and TOT), VISLA generic and spatial
(973 + 652; ITT and T2T), SugarCrepe (7 subsets, 7511; ITC), BiVLC (2933 items, 7 metrics),
Winoground (400, 3 metrics) and ARO VG-Relation and VG-Attribution (23,937 + 28,748): about
95,000 item rows a run, 4.7 million in all. The models' hits are correlated as real ones are
(a skill per model, a difficulty per item), so rank groups are neither all one nor all apart.

Measured: the first build (an empty site folder), a rebuild with nothing changed and one with
one run made again (the cache of the site reads only that run), each with its steps; then the
index page and a model page opened by headless Chromium from file:// (navigation start to the
load event, the best of `--repeat`), and a header click sorting the largest table. Prints the
figures and their targets (build < 30 s, page open < 1 s); asserts no timing."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from builders.run_records import record
from lexsem.publish import publish
from lexsem.results.run_folder import save_run
from lexsem.results.schema import BenchmarkInfo, FileInfo, MetricResult

# benchmark -> ({subset: items}, [(task, metric)])
BENCHMARKS: dict[str, tuple[dict[str, int], list[tuple[str, str]]]] = {
    "sugarcrepe_pp": ({"swap_obj": 245, "swap_att": 666, "replace_obj": 1652,
                       "replace_att": 788, "replace_rel": 1406},
                      [("itt", "itt"), ("tot", "tot")]),
    "visla_generic": ({"generic": 973}, [("itt", "itt"), ("t2t", "t2t")]),
    "visla_spatial": ({"spatial": 652}, [("itt", "itt"), ("t2t", "t2t")]),
    "sugarcrepe": ({"add_att": 692, "add_obj": 2062, "replace_att": 788, "replace_obj": 1652,
                    "replace_rel": 1406, "swap_att": 666, "swap_obj": 245}, [("itc", "itc")]),
    "bivlc": ({"replace_att": 600, "replace_obj": 700, "replace_rel": 700, "swap_att": 433,
               "swap_obj": 500},
              [("bivlc", m) for m in ("i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i",
                                      "tneg2i")]),
    "winoground": ({"all": 400}, [("winoground", m) for m in ("text", "image", "group")]),
    "aro_vg": ({"relation": 23937, "attribution": 28748}, [("aro", "aro")]),
}  # fmt: skip
BACKENDS = ("clip", "open_clip", "siglip", "blip", "hf")
DTYPES = ("float32", "bfloat16", "float16")


def _items(rng: np.random.Generator, skill: float) -> tuple[pa.Table, list[MetricResult]]:
    cols: dict[str, list] = {k: [] for k in ("benchmark", "subset", "item_id", "task",
                                             "metric", "hit")}  # fmt: skip
    results = []
    for bench, (subsets, tasks) in BENCHMARKS.items():
        for task, metric in tasks:
            hits_all = []
            for subset, n in subsets.items():
                # the items' difficulty is fixed (seeded by name); the model's draw is its own
                diff = np.random.default_rng(zlib.crc32(f"{bench}|{subset}".encode())).normal(
                    0, 1, n
                )
                hit = rng.random(n) < 1 / (1 + np.exp(-(skill - diff)))
                hits_all.append(hit)
                cols["benchmark"] += [bench] * n
                cols["subset"] += [subset] * n
                cols["item_id"] += [f"{subset}-{i}" for i in range(n)]
                cols["task"] += [task] * n
                cols["metric"] += [metric] * n
                cols["hit"] += hit.tolist()
                results.append(MetricResult(benchmark=bench, task=task, metric=metric,
                                            subset=subset, n=n, hits=int(hit.sum()), ties=0,
                                            accuracy=100 * hit.mean(), ci_low=None,
                                            ci_high=None))  # fmt: skip
            every = np.concatenate(hits_all)
            results.append(MetricResult(benchmark=bench, task=task, metric=metric,
                                        subset="_micro", n=len(every), hits=int(every.sum()),
                                        ties=0, accuracy=100 * every.mean(), ci_low=None,
                                        ci_high=None))  # fmt: skip
    n = len(cols["hit"])
    table = pa.table({**cols, "tie": np.zeros(n, bool)})
    return table, results


def write_runs(base: Path, n_models: int, seed: int = 0) -> list[Path]:
    """`n_models` run folders of every benchmark (module doc), as `lexsem eval` writes them."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n_models):
        out.append(write_run(base, k, rng))
    return out


def write_run(base: Path, k: int, rng: np.random.Generator) -> Path:
    skill = float(rng.normal(0.8, 0.6))
    items, results = _items(rng, skill)
    name = f"model-{k:02d}"
    rec = record(name, results)
    params = int(10 ** rng.uniform(7.5, 10.5))
    model = rec.model.model_copy(update={
        "spec": f"{BACKENDS[k % 5]}:org/{name}", "dtype": DTYPES[k % 3],
        "fingerprint": {"backend": BACKENDS[k % 5], "parameters": params},
        "fingerprint_key": f"{k:064d}",
    })  # fmt: skip
    rec = rec.model_copy(update={
        "model": model, "run_id": f"bench-{k:02d}-{rng.integers(1 << 30)}",
        "config": rec.config.model_copy(update={"tasks": sorted({t for _, ts in
                                                                 BENCHMARKS.values()
                                                                 for t, _ in ts})}),
        "benchmarks": [BenchmarkInfo(name=b, subsets=list(subs), items=dict(subs),
                                     files=[FileInfo(subset=s, file=f"{b}/{s}.json",
                                                     sha256=f"{i:064x}")
                                            for i, s in enumerate(subs)])
                       for b, (subs, _) in BENCHMARKS.items()],
    })  # fmt: skip
    return save_run(base / "runs" / name, rec, items, force=True)


def _build(runs: list[Path], site: Path) -> tuple[float, object]:
    t0 = time.perf_counter()
    done = publish(runs, site)
    return time.perf_counter() - t0, done


def _steps(done: object) -> str:
    return ", ".join(f"{k} {v:.1f} s" for k, v in done.seconds.items())  # type: ignore[attr-defined]


def _open_times(site: Path, repeat: int) -> None:
    try:
        from playwright.sync_api import sync_playwright

        from builders.browser import chromium

        exe = chromium()
    except BaseException as err:
        print(f"publish: page open not measured ({err})")
        return
    nav = """() => { const e = performance.getEntriesByType('navigation')[0];
        return {load: e.loadEventEnd, dcl: e.domContentLoadedEventEnd,
                rows: document.querySelectorAll('tbody tr').length,
                tables: document.querySelectorAll('table').length}; }"""
    model = sorted((site / "models").glob("*.html"))[0]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        for label, path in (("index.html", site / "index.html"), ("a model page", model)):
            best = None
            for _ in range(repeat):
                page.goto("about:blank")
                page.goto(path.as_uri())
                page.wait_for_load_state("load")
                got = page.evaluate(nav)
                best = got if best is None or got["load"] < best["load"] else best
            assert best is not None
            mb = path.stat().st_size / 1e6
            print(f"publish: open {label} ({mb:.1f} MB, {best['tables']} tables, "
                  f"{best['rows']} rows) from file://: DOMContentLoaded {best['dcl']:.0f} ms, "
                  f"load {best['load']:.0f} ms (target < 1000 ms)")  # fmt: skip
        page.goto((site / "index.html").as_uri())
        sort_ms = page.evaluate("""() => {
            let big = null;
            for (const t of document.querySelectorAll('table.board'))
              if (!big || t.tBodies[0].rows.length * t.rows[0].cells.length >
                          big.tBodies[0].rows.length * big.rows[0].cells.length) big = t;
            const th = big.tHead.rows[0].cells[big.tHead.rows[0].cells.length - 1];
            const t0 = performance.now(); th.click(); return performance.now() - t0; }""")
        filter_ms = page.evaluate("""() => {
            const s = document.querySelector('select[data-filter=family]');
            s.value = s.options[1].value;
            const t0 = performance.now(); s.dispatchEvent(new Event('change'));
            return performance.now() - t0; }""")
        print(f"publish: sort the largest table by a click {sort_ms:.1f} ms; filter every "
              f"table by model family {filter_ms:.1f} ms")  # fmt: skip
        browser.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--models", type=int, default=50)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        t0 = time.perf_counter()
        runs = write_runs(base, args.models)
        rows = sum(len(ts) * sum(s.values()) for s, ts in BENCHMARKS.values())
        print(f"publish: {args.models} runs x {rows} item rows written in "
              f"{time.perf_counter() - t0:.1f} s")  # fmt: skip
        site = base / "site"
        first, done = _build(runs, site)
        print(f"publish: first build, {done.models} models, {done.tables} tables: {first:.1f} s "
              f"(target < 30 s; {_steps(done)})")  # fmt: skip
        same, done = _build(runs, site)
        print(f"publish: rebuild, nothing changed ({done.read} runs read): {same:.1f} s "
              f"({_steps(done)}); {first / same:.1f}x faster than the first")  # fmt: skip
        write_run(base, 0, np.random.default_rng(99))  # model-00 made again
        one, done = _build(runs, site)
        print(f"publish: rebuild, one run made again ({done.read} read): {one:.1f} s "
              f"({_steps(done)})")  # fmt: skip
        _open_times(site, args.repeat)


if __name__ == "__main__":
    main()
