"""One recipe for each digest (`lexsem.digests`): the keys it makes are pinned, because they
name caches, store files and job folders on disk; a change of recipe would orphan them."""

from __future__ import annotations

import datetime
import hashlib
import math
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lexsem.config import EvalConfig
from lexsem.construct.runner import _Run
from lexsem.digests import (
    canonical_json,
    file_sha256,
    json_sha256,
    memo_file,
    remember_file,
    sha256_file,
)
from lexsem.engine.keys import chat_request_key, request_key
from lexsem.models.protocols import fingerprint_key
from lexsem.models.source import file_digest
from lexsem.sweep.grid import job_id


def test_request_keys_are_pinned() -> None:
    assert request_key("pair_score", image="ab" * 32, text="a café") == (
        "d9022a97d4c602bf51170f623546ccbaeb95f9d2fccbba8ed145ba33afbde303"
    )
    body = {"messages": [{"role": "user", "content": "hé"}], "t": 0.0}
    assert chat_request_key({"url": "http://k:s@x/"}, body) == (
        "d5bd5c37dc4c9828024bf1d26686731906bf527126661da8e78e3a8d20a8df8c"
    )


def test_fingerprint_keys_are_pinned() -> None:
    assert fingerprint_key({"name": "minilm", "dim": 384, "normalize": True}) == (
        "9622748d3355b2517976467e163f4494dedf85aa489feeff402f6fbab47fdae1"
    )
    fp = {"url": "https://user:pw@host/v1", "model": "Modèl ü", "t": 0.5, "n": None}
    assert fingerprint_key(fp) == (
        "1fb1075846bbfeb3f36851fb2ab67bd740661e75f87ee2c5f0ed72e9350ac321"
    )


def test_job_ids_are_pinned() -> None:
    # the readable part names the subsets; the digest is the one job ids always had
    assert job_id("minilm", EvalConfig(benchmarks=["scpp/swap_obj"])) == (
        "minilm__scpp-swap-obj__904bf04de89d"
    )
    config = EvalConfig(benchmarks=["scpp", "visla/spatial"], name="café run", seed=3)
    assert job_id("hf:some/Modèl", config) == "caf-run__scpp+visla-spatial__0d4bca9f2900"


def _settings_digest(settings: dict[str, Any], seed: int) -> str:
    """A build stage's settings digest (`lexsem.construct.runner`), for a stage that asks no
    generator and reads no file."""
    run = _Run.__new__(_Run)
    run.asker = run.image_asker = None
    run.recipe = SimpleNamespace(seed=seed, send_seed=True)  # type: ignore[assignment]
    spec = SimpleNamespace(use="swap", settings=settings)
    stage = SimpleNamespace(generator=False, image_generator=False, files=None)
    return run.settings_digest(spec, stage)  # type: ignore[arg-type]


def test_build_settings_digests_are_pinned() -> None:
    """TOML gives dates and NaN too: a recipe with them keeps its digest (and its resume)."""
    settings = {"k": 2, "when": datetime.date(2024, 5, 1), "x": 1.5, "name": "é"}
    assert _settings_digest(settings, 0) == (
        "2375be9b1612909276cb4f55db419a211d3b1fe4254d045595b35d31e6655cb1"
    )
    assert _settings_digest({"x": math.nan, "inf": math.inf}, 1) == (
        "66d84c950fb0564adecf1e8a62981e2065774c0b9df266ab9002184d94b62c58"
    )


def test_canonical_json_layouts() -> None:
    value = {"b": [1, "é"], "a": None}
    assert canonical_json(value) == '{"a":null,"b":[1,"é"]}'.encode()
    assert canonical_json(value, layout="python") == b'{"a": null, "b": [1, "\\u00e9"]}'
    assert json_sha256(value) == hashlib.sha256(canonical_json(value)).hexdigest()
    with pytest.raises(ValueError):
        canonical_json({"x": math.nan})
    assert canonical_json({"x": math.nan}, nan=True) == b'{"x":NaN}'
    with pytest.raises(TypeError, match="not a JSON value"):
        canonical_json({"d": datetime.date(2024, 1, 2)})
    assert canonical_json({"d": datetime.date(2024, 1, 2)}, default=str) == b'{"d":"2024-01-02"}'


def test_file_sha256_reads_the_whole_file(tmp_path: Path) -> None:
    data = os.urandom(3 * (1 << 20) + 17)  # spans several blocks
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert file_sha256(path) == hashlib.sha256(data).hexdigest()
    assert file_sha256(str(path)) == hashlib.sha256(data).hexdigest()
    (tmp_path / "empty").write_bytes(b"")
    assert file_sha256(tmp_path / "empty") == hashlib.sha256(b"").hexdigest()
    with pytest.raises(OSError):
        file_sha256(tmp_path / "missing")


def test_model_file_digest_is_the_file_sha256(tmp_path: Path) -> None:
    path = tmp_path / "w.safetensors"
    path.write_bytes(b"weights")
    assert file_digest(path) == "sha256:" + hashlib.sha256(b"weights").hexdigest()


def test_synthetic_content_digests_are_pinned() -> None:
    """The synthetic benchmarks' content digests (recorded in every run of them)."""
    from lexsem.benchmarks.sources import synthetic_images, synthetic_text

    assert synthetic_text.content_sha256(3, 7) == (
        "1bb746357c6c3e0105dd06e53fdafb16bf8d1582808a002f66de01b7abd29c2b"
    )
    assert synthetic_images.bidirectional_content_sha256(2, 5) == (
        "8243e8165ede57da20004d73e72aadda5d947c28a99f68f24698701bbee7cc5d"
    )


def test_one_file_memo_keyed_by_recipe_and_file(tmp_path: Path) -> None:
    """`memo_file`: one memo of file digests; two recipes of one file are kept apart, a changed
    file is digested again; `sha256_file` is `file_sha256` memoised."""
    f = tmp_path / "x.bin"
    f.write_bytes(b"abc")
    calls: list[str] = []

    def recipe(name: str) -> Callable[[Path], str]:
        def compute(p: Path) -> str:
            calls.append(name)
            return f"{name}:{p.read_bytes().decode()}"

        return compute

    assert memo_file(f, "a", recipe("a")) == memo_file(f, "a", recipe("a")) == "a:abc"
    assert memo_file(f, "b", recipe("b")) == "b:abc"
    assert calls == ["a", "b"]
    f.write_bytes(b"abcd")
    assert memo_file(f, "a", recipe("a")) == "a:abcd" and calls == ["a", "b", "a"]
    assert sha256_file(f) == file_sha256(f)
    remember_file(f, "a", "told")
    assert memo_file(f, "a", recipe("a")) == "told"
