"""Test doubles and fixture builders shared by tests."""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from builders.backends import optional_import
from lexsem.benchmarks import catalog as registry
from lexsem.benchmarks import formats as loaders
from lexsem.benchmarks.base import Benchmark, SubsetSpec
from lexsem.benchmarks.sources.files import file_loader
from lexsem.download import SourceFile
from lexsem.images.decode import decode_image

torch = optional_import("torch")


class BagOfWordsEncoder:
    """Deterministic text encoder: hashed bag of lower-cased words. Counts what it encodes."""

    def __init__(self, dim: int = 64, name: str = "bow") -> None:
        self.dim = dim
        self.name = name
        self.calls = 0
        self.encoded: list[str] = []

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-bow", "dim": self.dim}

    def vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in re.findall(r"[a-z]+", text.lower()):
            v[int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        return v

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        self.calls += 1
        self.encoded.extend(texts)
        return np.stack([self.vector(t) for t in texts]) if texts else np.zeros((0, self.dim))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


TRIPLETS = {
    "swap_obj": [
        ("A cat chases a dog.", "A dog is chased by a cat.", "A dog chases a cat."),
        ("A man rides a horse.", "A horse carries a man.", "A horse rides a man."),
        ("A red ball and a blue box.", "A blue box and a red ball.", "A blue ball and a red box."),
    ],
    "replace_att": [
        ("A small dog sleeps.", "A tiny dog is sleeping.", "A large dog sleeps."),
        ("Green apples on a table.", "On a table lie green apples.", "Red apples on a table."),
    ],
}


def register_fixture_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str = "fixture_pp"
) -> tuple[Path, Benchmark]:
    """Write SugarCrepe++-format files for TRIPLETS and register them as benchmark `name`."""
    data = tmp_path / "data"
    (data / name).mkdir(parents=True)
    subsets = []
    for sub, rows in TRIPLETS.items():
        recs = [
            {"id": i, "filename": f"{i}.jpg", "caption": p1, "caption2": p2, "negative_caption": n}
            for i, (p1, p2, n) in enumerate(rows)
        ]
        path = data / name / f"{sub}.json"
        path.write_text(json.dumps(recs), encoding="utf-8")
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        subsets.append(
            SubsetSpec(
                sub,
                SourceFile(f"{name}/{sub}.json", "http://127.0.0.1:9/x", sha),
                expected_items=len(rows),
            )
        )
    spec = Benchmark(
        name=name,
        description="test fixture",
        item_kind="triplet",
        subsets=tuple(subsets),
        loader=file_loader(loaders.load_scpp_json),
        text_tasks=("tot",),
        image_tasks=("itt",),
    )
    monkeypatch.setattr(registry.BENCHMARKS, "_entries", dict(registry.BENCHMARKS._entries))
    registry.BENCHMARKS.add(name, spec, replace=True)
    return data, spec


def register_fixture_benchmark_with_images(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path]:
    """`register_fixture_benchmark` (fixture_pp: swap_obj, 3 items, images 0-2.jpg; replace_att,
    2 items, 0-1.jpg) and its COCO-style image folder `tmp_path/val2017`: 0.jpg 50×40 pixels
    (2000), 1.jpg 50×47 (2350), 2.jpg 50×54 (2700), random, seeded. (data folder, images)."""
    data, _ = register_fixture_benchmark(tmp_path, monkeypatch)
    images = tmp_path / "val2017"
    images.mkdir()
    rng = np.random.default_rng(1)
    for i in range(3):
        arr = rng.integers(0, 255, (40 + 7 * i, 50, 3), dtype=np.uint8)
        Image.fromarray(arr).save(images / f"{i}.jpg", quality=90)
    return data, images


def _pixels_key(image: Any) -> bytes:
    import hashlib as _h

    return _h.sha256(image.convert("RGB").resize((16, 16)).tobytes()).digest()


def tiny_preprocess(image: Any) -> Any:
    """Module-level (picklable) preprocess: 4x4 RGB thumbnail as a float tensor."""
    import torch

    arr = np.asarray(image.convert("RGB").resize((4, 4)), dtype=np.float32) / 255.0
    return torch.from_numpy(arr.reshape(-1).copy())


class TinyDualEncoder(BagOfWordsEncoder):
    """Bag-of-words texts and 4x4-thumbnail images projected into the same 64-d space."""

    def __init__(self) -> None:
        super().__init__(dim=64, name="tiny-dual")
        self.proj = np.random.default_rng(0).standard_normal((48, 64)).astype(np.float32)
        self.image_calls = 0
        self.images_encoded = 0

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-dual", "dim": 64}

    def preprocess(self, image: Any) -> Any:
        return tiny_preprocess(image)

    def encode_images(self, batch: Any) -> np.ndarray:
        self.image_calls += 1
        x = np.asarray(batch, dtype=np.float32)
        self.images_encoded += len(x)
        return x @ self.proj


def oracle_key(image: Any) -> Any:
    """Picklable preprocess for the oracle: the image's pixel hash as a uint8 tensor."""
    import torch

    return torch.tensor(list(_pixels_key(image)), dtype=torch.uint8)


class OraclePairScorer:
    """Knows which (image, text) pairs are true: scores 1 for those, 0 otherwise."""

    name = "oracle"

    def __init__(self, true_pairs: dict[bytes, set[str]]) -> None:
        self.true_pairs = true_pairs

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-oracle", "n": len(self.true_pairs)}

    def preprocess(self, image: Any) -> Any:
        return oracle_key(image)

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        keys = [bytes(np.asarray(im, dtype=np.uint8).tolist()) for im in images]
        return np.array(
            [float(t in self.true_pairs.get(k, ())) for k, t in zip(keys, texts, strict=True)]
        )


class ConstantPairScorer(OraclePairScorer):
    """Scores every pair `value` (0 by default; 0.5 is P(yes) = P(no) for the yes/no task)."""

    name = "constant"

    def __init__(self, value: float = 0.0) -> None:
        super().__init__({})
        self.value = value

    @property
    def fingerprint(self) -> dict[str, Any]:
        fp: dict[str, Any] = {"backend": "test-constant"}
        return fp if self.value == 0.0 else {**fp, "value": self.value}

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        return np.full(len(texts), self.value)


def image_key_of(data: bytes) -> bytes:
    import io

    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        return _pixels_key(im)


def scpp_user_files(tmp_path: Path) -> tuple[str, Path]:
    """`TRIPLETS` as user files in the SugarCrepe++ format (`scpp:DIR`), with generated
    images in a folder to pass as `coco_val2017`: (benchmark selector, image folder)."""
    import json

    from PIL import Image

    files = tmp_path / "triplets"
    files.mkdir()
    for sub, rows in TRIPLETS.items():
        recs = [
            {"id": i, "filename": f"{i}.jpg", "caption": p1, "caption2": p2, "negative_caption": n}
            for i, (p1, p2, n) in enumerate(rows)
        ]
        (files / f"{sub}.json").write_text(json.dumps(recs), encoding="utf-8")
    images = tmp_path / "val2017"
    images.mkdir()
    rng = np.random.default_rng(3)
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (20, 24, 3), dtype=np.uint8)).save(images / f"{i}.jpg")
    return f"scpp:{files}", images


class ScriptedChat:
    """A `ChatModel` answering the last user turn with `reply(prompt)`; counts what it was
    asked. `fingerprint` extras tell its answers apart in the store."""

    concurrency = 1

    def __init__(self, reply: Any, name: str = "scripted", **extra: Any) -> None:
        self.reply, self.name, self.extra, self.asked = reply, name, extra, 0

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-scripted", **self.extra}

    def request_body(self, request: Any, image_part: Any = None) -> dict[str, Any]:
        part = image_part or (lambda data: {"type": "image", "size": len(data)})
        turns = [[t.role, t.text, [part(i) for i in t.images]] for t in request.turns]
        return {"turns": turns}

    def send(self, client: Any, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.asked += 1
        return self.reply(body["turns"][-1][1]), {}


class OtherDual(TinyDualEncoder):
    """A second dual encoder (another projection), so that two models share two metrics."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = np.random.default_rng(1).standard_normal((48, 64)).astype(np.float32)

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-dual-2", "dim": 64}


def _to_tensor(image: Any) -> torch.Tensor:
    arr = np.asarray(image.resize((8, 8), Image.BILINEAR), dtype=np.float32) / 255.0
    return torch.from_numpy(arr).permute(2, 0, 1).contiguous()


class FakePairScorer:
    """score = mean pixel value + len(text) / 100."""

    name = "fake-pairs"

    def __init__(self) -> None:
        self.pairs: list[str] = []

    @property
    def fingerprint(self) -> dict[str, Any]:
        return {"backend": "test-pairs"}

    def preprocess(self, image: Any) -> torch.Tensor:
        return _to_tensor(image)

    def score(self, images: torch.Tensor, texts: Sequence[str]) -> np.ndarray:
        assert images.shape[0] == len(texts)
        self.pairs.extend(texts)
        means = images.reshape(images.shape[0], -1).mean(dim=1).numpy()
        return means + np.array([len(t) / 100 for t in texts], dtype=np.float32)

    def direct(self, data: bytes, text: str) -> float:
        return float(self.preprocess(decode_image(data)).mean()) + len(text) / 100


def _noise(w: int, h: int, seed: int, fmt: str, mode: str = "RGB", **save: Any) -> bytes:
    rng = np.random.default_rng(seed)
    channels = 3 if mode == "RGB" else 1
    arr = rng.integers(0, 256, size=(h, w, channels) if channels == 3 else (h, w), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(arr, mode).save(buf, format=fmt, **save)
    return buf.getvalue()
