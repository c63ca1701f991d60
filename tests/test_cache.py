"""The engine's requests through the store: keys, and embedding / scoring each unique text,
image and (image, text) pair once, resuming from what an interrupted run committed."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from builders.fakes import BagOfWordsEncoder, FakePairScorer, _noise
from builders.numeric import assert_close_to_reference
from builders.store_v1 import MODEL, write_v1_store
from lexsem.digests import canonical_json
from lexsem.engine.embed import embed_texts
from lexsem.engine.keys import (
    content_key,
    image_key,
    pair_key,
    request_key,
    text_score_key,
)
from lexsem.engine.pair_scores import pair_scores
from lexsem.engine.request_store import RequestStore
from lexsem.engine.text_scores import score_texts
from lexsem.errors import ModelError
from lexsem.images.image_store import ImageStore

TEXTS = [f"text number {i}" + " padded" * (i % 7) for i in range(23)]


class CountingScorer:
    """A blind scorer whose scores are not float32-representable; fails on call `fail_on`."""

    name = "counting"
    lower_is_better = False

    def __init__(self, fail_on: int | None = None) -> None:
        self.calls = 0
        self.scored: list[str] = []
        self.fail_on = fail_on

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-counting"}

    @staticmethod
    def direct(text: str) -> float:
        return len(text) + 0.1 + int(hashlib.md5(text.encode()).hexdigest()[:12], 16) / 2**52

    def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("interrupted")
        self.scored.extend(texts)
        return np.array([self.direct(t) for t in texts])


class FlakyEncoder(BagOfWordsEncoder):
    def __init__(self, fail_on: int) -> None:
        super().__init__()
        self.fail_on = fail_on

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        if self.calls + 1 == self.fail_on:
            self.calls += 1
            raise RuntimeError("interrupted")
        return super().encode(texts, batch_size=batch_size)


# --------------------------------------------------------------------- keys


def test_content_key() -> None:
    expected = hashlib.sha256(b"text\x00caf\xc3\xa9").hexdigest()
    assert content_key("text", "café") == expected
    assert content_key("text", "café".encode()) == expected
    assert content_key("image", b"caf\xc3\xa9") != expected
    assert content_key("text", "a") != content_key("text", "a ")
    with pytest.raises(ValueError, match="kind"):
        content_key("audio", "x")
    with pytest.raises(TypeError, match="str or bytes"):
        content_key("text", 3)  # type: ignore[arg-type]


def test_request_key_is_sha256_of_canonical_json() -> None:
    image = content_key("image", b"\x89PNG...")
    blob = '{"image":"' + image + '","kind":"pair_score","text":"café"}'
    assert canonical_json({"text": "café", "kind": "pair_score", "image": image}) == blob.encode()
    assert request_key("pair_score", image=image, text="café") == (
        hashlib.sha256(blob.encode()).hexdigest()
    )
    assert pair_key(image, "café") == request_key("pair_score", text="café", image=image)
    params = {"max_tokens": 16, "temperature": 0.0, "stop": ["\n"]}
    a = request_key("generate", prompt="Q", params=params)
    assert a == request_key("generate", params=dict(reversed(params.items())), prompt="Q")
    assert a != request_key("generate", prompt="Q", params={**params, "temperature": 0.7})
    assert a != request_key("generate", prompt="Q ", params=params)
    assert a != request_key("logprobs", prompt="Q", params=params)
    assert text_score_key("a") != content_key("text", "a") != request_key("text", text="a")
    with pytest.raises(TypeError, match="JSON"):
        request_key("x", image=b"raw bytes")
    with pytest.raises(ValueError):
        request_key("x", temperature=float("nan"))
    with pytest.raises(ValueError, match="kind"):
        request_key("")


# --------------------------------------------------------------------- texts


def test_embed_texts_resumes_from_committed_chunks(tmp_path: Path) -> None:
    with RequestStore(tmp_path, MODEL) as store:
        with pytest.raises(RuntimeError, match="interrupted"):
            embed_texts(FlakyEncoder(fail_on=2), TEXTS, store, chunk=5)
        assert store.count("vectors") == 5  # the first chunk was committed
        enc = BagOfWordsEncoder()
        emb, stats = embed_texts(enc, TEXTS, store, chunk=5)
        assert stats.n_cached == 5 and stats.n_encoded == len(TEXTS) - 5 == len(enc.encoded)
        assert emb.dtype == np.float32
        np.testing.assert_array_equal(emb, np.stack([enc.vector(t) for t in TEXTS]))
        again = BagOfWordsEncoder()
        emb2, stats2 = embed_texts(again, TEXTS, store)
        assert again.calls == 0 and stats2.n_cached == len(TEXTS)
        np.testing.assert_array_equal(emb2, emb)
        keys = [content_key("text", t) for t in TEXTS]
        assert set(store.get_vectors(keys)) == set(keys)


def test_schema1_cache_still_serves_embed_texts(tmp_path: Path) -> None:
    enc = BagOfWordsEncoder()
    vecs = np.stack([enc.vector(t) for t in TEXTS])
    write_v1_store(tmp_path, MODEL, [content_key("text", t) for t in TEXTS], vecs)
    for readonly in (True, False):  # as it is, and upgraded to the current schema
        with RequestStore(tmp_path, MODEL, readonly=readonly) as store:
            fresh = BagOfWordsEncoder()
            emb, stats = embed_texts(fresh, TEXTS, store)
            assert fresh.calls == 0 and stats.n_cached == len(TEXTS)
            np.testing.assert_array_equal(emb, vecs)


def test_score_texts_float64_cached_and_resumed(tmp_path: Path) -> None:
    want = np.array([CountingScorer.direct(t) for t in TEXTS])
    assert not np.array_equal(want.astype(np.float32).astype(np.float64), want)
    with RequestStore(tmp_path, MODEL) as store:
        with pytest.raises(RuntimeError, match="interrupted"):
            score_texts(CountingScorer(fail_on=2), TEXTS, store, chunk=5)
        assert store.count("scalars") == 5 and store.count() == 5  # no vectors
        scorer = CountingScorer()
        vals, stats = score_texts(scorer, TEXTS, store, chunk=5, batch_size=4)
        assert stats.n_cached == 5 and stats.n_encoded == len(TEXTS) - 5 == len(scorer.scored)
        assert scorer.scored[0] == max(scorer.scored, key=len)  # longest first
        assert vals.dtype == np.float64 and vals.tobytes() == want.tobytes()
        again = CountingScorer()
        vals2, stats2 = score_texts(again, TEXTS, store)
        assert again.calls == 0 and stats2.n_cached == len(TEXTS)
        assert vals2.tobytes() == want.tobytes()  # float64 from the store, not float32
        assert store.get_scalars([text_score_key(TEXTS[3])]) == {text_score_key(TEXTS[3]): want[3]}
    vals3, _ = score_texts(CountingScorer(), TEXTS, None)
    assert vals3.tobytes() == want.tobytes()
    empty, st = score_texts(CountingScorer(), [], None)
    assert empty.shape == (0,) and st.n_unique == 0


def test_score_texts_rejects_wrong_shapes() -> None:
    class Short(CountingScorer):
        def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
            return np.zeros(len(texts) - 1)

    class Wide(CountingScorer):
        def score_texts(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
            return np.zeros((2, len(texts)))

    for bad in (Short(), Wide()):
        with pytest.raises(ModelError, match="returned shape"):
            score_texts(bad, ["a", "b"], None)


# --------------------------------------------------------------------- pairs


def test_pair_scores_keyed_by_image_content_not_reference(tmp_path: Path) -> None:
    data = _noise(12, 10, 1, "PNG")
    (tmp_path / "val").mkdir()
    path = tmp_path / "val" / "img.png"
    path.write_bytes(data)
    images = ImageStore(coco_val2017=tmp_path / "val")
    one, two = images.register_bytes("one", data), images.register_bytes("two", data)
    pairs = [(one, "a cat"), (two, "a cat"), ("img.png", "a cat"), (one, "a dog on a mat")]
    with RequestStore(tmp_path / "cache", MODEL) as store:
        scorer = FakePairScorer()
        scores, stats, _ = pair_scores(scorer, pairs, images, store, num_workers=0)
        # three references, one image: each text scored once
        assert sorted(scorer.pairs) == ["a cat", "a dog on a mat"] and stats.n_scored == 2
        assert scores[0] == scores[1] == scores[2] != scores[3]
        key = pair_key(image_key(data), "a cat")
        assert store.get_scalars([key]) == {key: pytest.approx(scorer.direct(data, "a cat"))}
        assert store.count("scalars") == 2 and store.count("vectors") == 0

        # the same reference now names other bytes: scored afresh, never served the old score
        other = _noise(12, 10, 2, "PNG") + b"\x00"  # another size too
        path.write_bytes(other)
        again = FakePairScorer()
        new, stats2, _ = pair_scores(again, pairs[2:3], images, store, num_workers=0)
        assert again.pairs == ["a cat"] and stats2.n_cached == 0
        assert_close_to_reference(new[0], again.direct(other, "a cat"), scale=1.0)
        assert new[0] != scores[2]

        # a rerun of the original pairs asks the scorer nothing
        third = FakePairScorer()
        path.write_bytes(data)
        rerun, stats3, _ = pair_scores(third, pairs, images, store, num_workers=0)
        assert third.pairs == [] and stats3.n_cached == 2
        np.testing.assert_array_equal(rerun, scores)
