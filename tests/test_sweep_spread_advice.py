"""Spread encoding only where it pays: CPU actors that, with the driver, need more cores than
the Ray cluster has, or a job of under two batches per actor, get a warning saying why and
that one process is faster; GPU actors and big jobs on enough cores get none."""

from __future__ import annotations

from lexsem.sweep.spread import spread_advice


def _advice(n: int, workers: int, cpus: float = 1, gpus: float = 0, cores: float = 16) -> str:
    why = spread_advice(
        n, batch_size=32, workers=workers, cpus_per_actor=cpus, gpus_per_actor=gpus,
        cluster_cpus=cores,
    )  # fmt: skip
    return why or ""


def test_cpu_actors_beyond_the_cores_are_said_not_to_pay() -> None:
    assert "needs 3 cores with the driver; the Ray cluster has 2" in _advice(10_000, 2, cores=2)
    assert "needs 17 cores" in _advice(10_000, 4, cpus=4, cores=16)
    assert _advice(10_000, 3, cpus=4, cores=16) == ""  # 13 of 16 cores
    assert _advice(10_000, 8, gpus=1, cores=2) == ""  # GPU actors: the cores are not the limit


def test_a_small_job_is_said_not_to_pay() -> None:
    why = _advice(100, 4)  # 4 batches of 32 for 4 actors
    assert "only 100 to encode (4 batches of 32) over 4 actors" in why
    assert "faster below 256" in why
    assert _advice(256, 4) == ""  # two batches per actor
