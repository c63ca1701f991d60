"""The Evaluator as a reusable object, the benchmark registry, and users' own benchmark files."""

from __future__ import annotations

import json
import multiprocessing as mp
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from builders.fakes import TRIPLETS, BagOfWordsEncoder, register_fixture_benchmark
from builders.hf_parquet import bivlc_columns, write_parquet
from lexsem import evaluate
from lexsem.benchmarks import catalog as registry
from lexsem.benchmarks.base import Benchmark, LoadedSubset
from lexsem.benchmarks.selectors import parse_selector
from lexsem.config import EvalConfig, build_config
from lexsem.errors import DataError, LexsemError
from lexsem.evaluator import Evaluator

BUILTINS = {
    "aro_order",
    "aro_vg",
    "bivlc",
    "sugarcrepe",
    "sugarcrepe_pp",
    "synthetic",
    "synthetic_bi",
    "visla_generic",
    "visla_spatial",
    "winoground",
}


def test_registering_first_never_hides_the_builtins() -> None:
    """A user's benchmark registered before anything else is loaded (a fresh process)."""
    code = (
        "from lexsem.benchmarks import catalog as registry, synthetic\n"
        "import dataclasses\n"
        "registry.register(dataclasses.replace(synthetic.TRIPLETS, name='mine'))\n"
        "print(','.join(registry.names()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names = set(out.stdout.strip().split(","))
    assert names == BUILTINS | {"mine"}


def test_registry_lists_builtins_lazily() -> None:
    code = (
        "import sys\nfrom lexsem.benchmarks import catalog as registry\nnames = registry.names()\n"
        "print(len(names), 'lexsem.benchmarks.aro' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(len(BUILTINS)), "False"]


def test_unknown_names_suggest_the_closest() -> None:
    with pytest.raises(LexsemError, match=r"did you mean 'sugarcrepe_pp'"):
        registry.get("sugarcrepe_p")
    with pytest.raises(LexsemError, match=r"did you mean 'swap_obj'"):
        parse_selector("sugarcrepe_pp/swap_ob")


def test_config_errors_name_the_field() -> None:
    with pytest.raises(LexsemError, match=r"batch_size: .*greater than or equal to 1"):
        build_config(benchmarks=["synthetic"], batch_size=0)
    with pytest.raises(LexsemError, match=r"n_boot"):
        build_config(benchmarks=["synthetic"], n_boot=-1)
    with pytest.raises(LexsemError, match=r"given more than once"):
        build_config(benchmarks=["synthetic/swap_obj", "synthetic/swap_att"])


def _counting(bench: Benchmark, calls: list[str]) -> Benchmark:
    import dataclasses

    def load(b: Benchmark, sub: Any, ctx: Any) -> LoadedSubset:
        calls.append(sub.name)
        return bench.loader(b, sub, ctx)

    return dataclasses.replace(bench, loader=load)


def test_evaluator_keeps_benchmarks_loaded_across_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, spec = register_fixture_benchmark(tmp_path, monkeypatch)
    calls: list[str] = []
    registry.BENCHMARKS.add(spec.name, _counting(spec, calls), replace=True)
    ev = Evaluator(EvalConfig(benchmarks=[spec.name], data_dir=data, n_boot=0))
    first = ev.run(BagOfWordsEncoder())
    second = ev.run(BagOfWordsEncoder(dim=32))
    assert calls == list(TRIPLETS)  # each subset loaded once, for both runs
    assert first.record.model.fingerprint != second.record.model.fingerprint


class MutableEncoder(BagOfWordsEncoder):
    """A model whose weights change between runs (as in training); its fingerprint says so."""

    def __init__(self) -> None:
        super().__init__(dim=16)
        self.step = 0

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-mutable", "step": self.step}

    def vector(self, text: str) -> Any:
        return super().vector(text) + self.step


def test_a_model_whose_weights_changed_reads_no_stale_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, spec = register_fixture_benchmark(tmp_path, monkeypatch)
    ev = Evaluator(EvalConfig(benchmarks=[spec.name], data_dir=data, n_boot=0))
    model = MutableEncoder()
    before = ev.run(model).items.column("s_p1_n").to_pylist()
    model.step = 3
    model.calls = 0
    after = ev.run(model).items.column("s_p1_n").to_pylist()
    assert model.calls > 0  # encoded again, not read from the first state's entries
    assert before != after


def _run_in_child(blob: bytes, queue: Any) -> None:
    from builders.fakes import BagOfWordsEncoder as Bow

    evaluator = pickle.loads(blob)
    run = evaluator.run(Bow())
    queue.put([r.model_dump() for r in run.record.results])


def test_config_pickles_and_runs_in_another_process() -> None:
    config = EvalConfig(benchmarks=["synthetic/swap_att"], n_boot=50, seed=3)
    assert pickle.loads(pickle.dumps(config)) == config
    here = Evaluator(config)
    expected = [r.model_dump() for r in here.run(BagOfWordsEncoder()).record.results]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_run_in_child, args=(pickle.dumps(here), queue))
    child.start()
    got = queue.get(timeout=120)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert got == expected


# -- users' own files ------------------------------------------------------------------------


def _scpp_file(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    recs = [
        {"id": i, "filename": f"{i}.jpg", "caption": p1, "caption2": p2, "negative_caption": n}
        for i, (p1, p2, n) in enumerate(rows)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(recs), encoding="utf-8")
    return path


def test_user_file_gives_the_same_numbers_as_a_registered_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, spec = register_fixture_benchmark(tmp_path, monkeypatch)
    registered = evaluate(BagOfWordsEncoder(), [f"{spec.name}/swap_obj"], data_dir=data, n_boot=0)
    mine = _scpp_file(tmp_path / "mine" / "swap_obj.json", TRIPLETS["swap_obj"])
    user = evaluate(BagOfWordsEncoder(), [f"scpp:{mine}"], n_boot=0)
    info = user.record.benchmarks[0]
    assert info.name == "scpp:swap_obj" and info.origin == "user"
    assert info.files[0].file == str(mine)
    import hashlib

    assert info.files[0].sha256 == hashlib.sha256(mine.read_bytes()).hexdigest()
    cols = ["item_id", "hit", "tie", "s_p1_p2", "s_p1_n", "s_p2_n"]
    assert user.items.select(cols).to_pylist() == registered.items.select(cols).to_pylist()


def test_user_folder_gives_one_subset_per_file(tmp_path: Path) -> None:
    for sub, rows in TRIPLETS.items():
        _scpp_file(tmp_path / "mine" / f"{sub}.json", rows)
    run = evaluate(BagOfWordsEncoder(), [f"scpp:{tmp_path / 'mine'}"], n_boot=0)
    assert run.record.benchmarks[0].subsets == sorted(TRIPLETS)
    assert run.record.benchmarks[0].items == {k: len(v) for k, v in TRIPLETS.items()}


@pytest.mark.torch
def test_user_bivlc_parquet(tmp_path: Path) -> None:
    from builders.fakes import TinyDualEncoder

    path = tmp_path / "my_bivlc.parquet"
    write_parquet(path, bivlc_columns())
    run = evaluate(TinyDualEncoder(), [f"bivlc:{path}"], n_boot=0, num_workers=0)
    info = run.record.benchmarks[0]
    assert info.origin == "user" and info.name == "bivlc:my_bivlc"
    assert sum(info.items.values()) == 5
    assert {r.metric for r in run.record.results} >= {"group", "i2t", "t2i"}
    table = pq.read_table(path)
    assert table.num_rows == 5


def test_user_file_errors(tmp_path: Path) -> None:
    with pytest.raises(
        LexsemError, match=r"unknown benchmark file format 'scp'.*did you mean 'scpp'"
    ):
        evaluate(BagOfWordsEncoder(), [f"scp:{tmp_path}/x.json"])
    with pytest.raises(DataError, match=r"does not exist"):
        evaluate(BagOfWordsEncoder(), [f"scpp:{tmp_path}/missing.json"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"no \.json files"):
        evaluate(BagOfWordsEncoder(), [f"scpp:{tmp_path}/empty"])
    bad = tmp_path / "bad.json"
    bad.write_text('[{"id": 0, "filename": "a.jpg", "caption": "x"}]')
    with pytest.raises(DataError, match=r"bad\.json"):
        evaluate(BagOfWordsEncoder(), [f"scpp:{bad}"])


@pytest.mark.torch
def test_trained_lexsem_model_gets_a_new_fingerprint_and_no_stale_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real (tiny) transformers model changed in place between two runs of one Evaluator, as
    a training step would: the second run encodes again and its scores follow the new weights,
    a third run without change reads its entries;
    the same changed weights give the same key again."""
    import torch

    from builders.tiny_text_models import write_tiny_bert
    from lexsem.models.factory import load_model

    folder = write_tiny_bert(tmp_path / "bert")
    data, spec = register_fixture_benchmark(tmp_path, monkeypatch)
    ev = Evaluator(EvalConfig(benchmarks=[spec.name], data_dir=data, n_boot=0))
    model = load_model(f"hf:{folder}")
    first = ev.run(model)
    key0 = first.record.model.fingerprint_key
    weight = model._ensure_loaded().embeddings.word_embeddings.weight
    saved = weight.detach().clone()
    with torch.no_grad():
        weight.mul_(-2.0).add_(0.5)  # an optimizer step, in place
    second = ev.run(model)
    assert second.record.model.fingerprint_key != key0
    assert second.record.timings.n_texts_encoded == second.record.timings.n_texts_unique
    direct = model.encode(["A cat chases a dog."])
    assert second.items.column("s_p1_n").to_pylist() != first.items.column("s_p1_n").to_pylist()
    again = ev.run(model)  # unchanged since: its own entries, rightly
    assert again.record.model.fingerprint_key == second.record.model.fingerprint_key
    assert again.record.timings.n_texts_encoded == 0
    with torch.no_grad():
        weight.copy_(saved)
    third = ev.run(model)
    assert third.record.model.fingerprint_key not in {second.record.model.fingerprint_key}
    assert third.items.column("s_p1_n").to_pylist() == first.items.column("s_p1_n").to_pylist()
    assert direct.shape[0] == 1


# -- decoded images kept across runs ---------------------------------------------------------


class SteppedDual:
    """A tiny dual encoder whose weights change between runs (its fingerprint says so)."""

    def __new__(cls) -> Any:
        from builders.fakes import TinyDualEncoder

        class _Stepped(TinyDualEncoder):
            step = 0

            @property
            def fingerprint(self) -> dict[str, Any]:
                return {"backend": "test-stepped-dual", "step": self.step}

            def encode_images(self, batch: Any) -> Any:
                return super().encode_images(batch) + self.step

        return _Stepped()


def _counting_decode(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    import lexsem.engine.decoding as engine_decoding

    calls: list[str] = []
    real = engine_decoding.decode

    def counted(data: bytes, profile: Any, **kw: Any) -> Any:
        calls.append(kw.get("ref", ""))
        return real(data, profile, **kw)

    monkeypatch.setattr(engine_decoding, "decode", counted)
    return calls


def _bivlc_file(tmp_path: Path) -> str:
    """A user's BiVLC-style parquet file (images embedded), as a benchmark selector."""
    path = tmp_path / "my_bivlc.parquet"
    write_parquet(path, bivlc_columns())
    return f"bivlc:{path}"


def _image_cols(run: Any) -> list[Any]:
    return run.items.select(["item_id", "metric", "hit", "s_i0_c0", "s_i1_c1"]).to_pylist()


@pytest.mark.parametrize("workers", [0, 2])
def test_decoded_images_are_kept_across_runs_of_a_changed_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Every epoch of a training loop: new weights (no store hit), the same images. The second
    run decodes no image (they come from the Evaluator's memory, also from DataLoader workers),
    and scores exactly as a run that decodes every file."""
    bivlc = _bivlc_file(tmp_path)
    calls = _counting_decode(monkeypatch)
    cfg = EvalConfig(
        benchmarks=[bivlc],
        n_boot=0,
        num_workers=workers,
        batch_size=2,
        cache_dir=tmp_path / "cache",
    )
    ev = Evaluator(cfg)
    model = SteppedDual()
    first = ev.run(model)
    n = first.record.timings.n_images_unique
    assert n > 2 and first.record.timings.n_images_from_memory == 0
    assert len(ev.decoded) == n and ev.decoded.nbytes > 0
    if workers == 0:
        assert len(calls) == n
    model.step = 1
    calls.clear()
    import lexsem.engine.decoding as engine_decoding

    def no_decode(*args: Any, **kw: Any) -> Any:  # forked workers inherit this too
        raise RuntimeError("decoded again")

    monkeypatch.setattr(engine_decoding, "decode", no_decode)
    second = ev.run(model)  # would fail ("cannot be decoded") if any image were decoded
    t = second.record.timings
    assert calls == []
    assert t.n_images_encoded == n and t.n_images_from_memory == n
    monkeypatch.undo()  # decoding allowed again, for the reference run
    fresh = Evaluator(cfg.model_copy(update={"keep_decoded_mb": 0, "use_cache": False}))
    expected = fresh.run(model)
    assert expected.record.timings.n_images_from_memory == 0
    assert _image_cols(second) == _image_cols(expected)
    assert _image_cols(second) != _image_cols(first)  # the new weights were used


def test_keep_decoded_mb_0_keeps_nothing_and_the_budget_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bivlc = _bivlc_file(tmp_path)
    calls = _counting_decode(monkeypatch)
    cfg = EvalConfig(benchmarks=[bivlc], n_boot=0, num_workers=0, use_cache=False)
    ev = Evaluator(cfg.model_copy(update={"keep_decoded_mb": 0}))
    ev.run(SteppedDual())
    n = len(calls)
    ev.run(SteppedDual())
    assert len(ev.decoded) == 0 and len(calls) == 2 * n


def test_decoded_images_admit_within_the_budget_and_never_evict() -> None:
    from PIL import Image

    from lexsem.images.memory import DecodedImages, image_nbytes

    rgb = Image.new("RGB", (10, 10))
    assert image_nbytes(rgb) == 300 and image_nbytes(Image.new("I;16", (10, 10))) == 200
    mem = DecodedImages(700)
    assert mem.put("a", rgb) and mem.put("b", rgb)
    assert not mem.put("c", rgb)  # 900 > 700: not kept; a and b stay
    assert "a" in mem and "b" in mem and "c" not in mem and mem.nbytes == 600
    assert mem.put("a", rgb) and mem.nbytes == 600  # already kept
    mem.clear()
    assert len(mem) == 0 and mem.nbytes == 0
    with pytest.raises(ValueError):
        DecodedImages(-1)


def test_a_pair_scorer_decodes_each_image_once_across_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builders.fakes import ConstantPairScorer

    bivlc = _bivlc_file(tmp_path)
    calls = _counting_decode(monkeypatch)
    ev = Evaluator(EvalConfig(benchmarks=[bivlc], n_boot=0, num_workers=0, use_cache=False))
    first = ev.run(ConstantPairScorer())
    n = len(calls)
    assert n == first.record.timings.n_images_unique > 0
    second = ev.run(ConstantPairScorer())
    assert len(calls) == n and second.record.timings.n_images_from_memory == n
    assert _image_cols(second) == _image_cols(first)
