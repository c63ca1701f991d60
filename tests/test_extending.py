"""The worked examples of docs/extending.md run, and the doc shows exactly their code."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from builders.fakes import ConstantPairScorer, OraclePairScorer, image_key_of
from lexsem import evaluate
from lexsem.benchmarks import catalog as registry
from lexsem.errors import ModelError
from lexsem.images.image_store import ImageStore
from lexsem.models import backend_registry

DOCS = Path(__file__).resolve().parents[1] / "docs"
EXAMPLES = DOCS / "examples"


@pytest.fixture
def examples_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    for mod in ("color_foils", "wordvec", "register_wordvec"):
        sys.modules.pop(mod, None)


@pytest.mark.parametrize("name", ["color_foils.py", "wordvec.py", "register_wordvec.py"])
def test_the_doc_shows_the_example_files(name: str) -> None:
    assert (EXAMPLES / name).read_text() in (DOCS / "extending.md").read_text()


def test_new_benchmark_in_one_file(
    examples_on_path: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import color_foils

    monkeypatch.setattr(registry.BENCHMARKS, "_entries", dict(registry.BENCHMARKS._entries))
    registry.register(color_foils.BENCHMARK)
    images = tmp_path / "val2017"
    images.mkdir()
    rows = (EXAMPLES / "data" / "color_foils" / "colors.csv").read_text().splitlines()[1:]
    for k, row in enumerate(rows):
        arr = np.random.default_rng(k).integers(0, 255, (20, 30, 3), dtype=np.uint8)
        Image.fromarray(arr).save(images / row.split(",")[1], quality=95)
    settings = {
        "data_dir": EXAMPLES / "data",
        "coco_val2017": images,
        "n_boot": 0,
        "num_workers": 0,
    }
    store = ImageStore(coco_val2017=images)
    truth: dict[bytes, set[str]] = {}
    for row in rows:
        _, image, caption, _ = row.split(",")
        truth.setdefault(image_key_of(store.read(image)), set()).add(caption)
    good = evaluate(OraclePairScorer(truth), ["color_foils"], **settings)
    assert [(r.subset, r.n, r.accuracy) for r in good.record.results] == [("colors", 3, 100.0)]
    assert (
        good.record.benchmarks[0].files[0].sha256 == color_foils.BENCHMARK.subsets[0].source.sha256
    )
    bad = evaluate(ConstantPairScorer(), ["color_foils"], **settings)
    assert bad.record.results[0].accuracy == 0.0 and bad.record.results[0].ties == 3


def _write_vectors(folder: Path) -> dict[str, np.ndarray]:
    words = "a cat chases dog is chased by the man rides horse carries red ball and blue box"
    rng = np.random.default_rng(0)
    vectors = {w: rng.standard_normal(6).astype(np.float32) for w in sorted(set(words.split()))}
    folder.mkdir()
    lines = [f"{w} " + " ".join(f"{x:.6f}" for x in v) for w, v in vectors.items()]
    (folder / "vectors.txt").write_text("\n".join(lines) + "\n")
    return {w: np.asarray([float(f"{x:.6f}") for x in v], np.float32) for w, v in vectors.items()}


def test_new_backend_in_one_file(
    examples_on_path: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from builders.fakes import TRIPLETS, register_fixture_benchmark

    monkeypatch.setattr(
        backend_registry.BACKENDS, "_entries", dict(backend_registry.BACKENDS._entries)
    )
    import register_wordvec  # noqa: F401  (registers the backend)

    vectors = _write_vectors(tmp_path / "glove")
    data, spec = register_fixture_benchmark(tmp_path, monkeypatch)
    run = evaluate(
        f"wordvec:{tmp_path / 'glove'}", [f"{spec.name}/swap_obj"], data_dir=data, n_boot=0
    )

    def embed(text: str) -> np.ndarray:
        import re

        found = [vectors[w] for w in re.findall(r"[\w']+", text.lower()) if w in vectors]
        return np.mean(found, axis=0)

    def cos(a: str, b: str) -> float:
        u, v = embed(a), embed(b)
        return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))

    rows = run.items.to_pylist()
    assert len(rows) == len(TRIPLETS["swap_obj"])
    for row, (p1, p2, n) in zip(rows, TRIPLETS["swap_obj"], strict=True):
        assert row["s_p1_p2"] == pytest.approx(cos(p1, p2), abs=1e-5)
        assert row["s_p1_n"] == pytest.approx(cos(p1, n), abs=1e-5)
    # word order is invisible to a bag of words: a swap negative ties with its positive
    assert rows[0]["s_p1_n"] == pytest.approx(1.0, abs=1e-6)
    assert run.record.model.fingerprint["backend"] == "wordvec"
    with pytest.raises(ModelError, match=r"lowercase"):
        evaluate(
            f"wordvec:{tmp_path / 'glove'}?colour=red", [f"{spec.name}/swap_obj"], data_dir=data
        )
