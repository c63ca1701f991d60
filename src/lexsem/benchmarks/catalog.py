"""The benchmark registry: name -> `Benchmark`. The built-in benchmarks are lazy entries
declared here, so registering a user's benchmark never hides them; selectors of benchmarks and
subsets are read by `lexsem.benchmarks.selectors`."""

from __future__ import annotations

from lexsem.benchmarks.base import Benchmark
from lexsem.registry import Registry

BENCHMARKS: Registry[Benchmark] = Registry(
    "benchmark",
    Benchmark,
    {
        "sugarcrepe": "lexsem.benchmarks.sugarcrepe:BENCHMARK",
        "sugarcrepe_pp": "lexsem.benchmarks.scpp:BENCHMARK",
        "visla_generic": "lexsem.benchmarks.visla:GENERIC",
        "visla_spatial": "lexsem.benchmarks.visla:SPATIAL",
        "synthetic": "lexsem.benchmarks.synthetic:TRIPLETS",
        "synthetic_bi": "lexsem.benchmarks.synthetic:QUADS",
        "bivlc": "lexsem.benchmarks.bivlc:BENCHMARK",
        "winoground": "lexsem.benchmarks.winoground:BENCHMARK",
        "aro_vg": "lexsem.benchmarks.aro:VG",
        "aro_order": "lexsem.benchmarks.aro:ORDER",
    },
)


def register(bench: Benchmark | str, name: str | None = None, *, replace: bool = False) -> None:
    """Register a benchmark object (or a lazy "module:attr") under its name."""
    key = name or (bench.name if isinstance(bench, Benchmark) else None)
    if key is None:
        raise ValueError("a lazy benchmark entry needs a name")
    BENCHMARKS.add(key, bench, replace=replace)


def names() -> list[str]:
    return BENCHMARKS.names()


def get(name: str) -> Benchmark:
    return BENCHMARKS.get(name)
