"""Image generators through the request store (`lexsem.engine.image_gen`): a tiny random
diffusers pipeline built from configs, loaded through `diffusers:` and compared with a direct
call of the pipeline; a fake OpenAI-compatible image server with faults; reruns, replay-only,
a killed run."""

from __future__ import annotations

import hashlib
import io
import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from builders.backends import require_module
from builders.image_server import prompt_png, serve_images
from builders.tiny_diffusers import write_tiny_pipeline, write_tiny_unet
from lexsem.engine.image_gen import FILES_DIR, ImageFiles, image_records
from lexsem.engine.request_store import RequestStore
from lexsem.errors import LexsemError, ModelError
from lexsem.models.factory import load_model
from lexsem.models.image_gen import ImageRequest, image_seed
from lexsem.models.protocols import fingerprint_key

PROMPTS = ["a red bus by a tree", "two cats on a sofa", "a man in a boat"]


def oracle_seed(seed: int, prompt: str, index: int) -> int:
    """The documented seed of an image: sha256("{seed}\\0{prompt}\\0{index}"), first 8 bytes,
    big-endian, below 2**63."""
    raw = hashlib.sha256(f"{seed}\x00{prompt}\x00{index}".encode()).digest()[:8]
    return int.from_bytes(raw, "big") % 2**63


def pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def _store(root: Path, model: Any, readonly: bool = False) -> RequestStore:
    return RequestStore(root, fingerprint_key(model.fingerprint), readonly=readonly)


def _requests(k: int = 2, size: int | None = None, seed: int = 0) -> list[ImageRequest]:
    return [ImageRequest(p, i, oracle_seed(seed, p, i), size) for p in PROMPTS for i in range(k)]


def test_image_seed_is_the_documented_formula() -> None:
    for p in PROMPTS:
        for i in range(3):
            assert image_seed(7, p, i) == oracle_seed(7, p, i)
    assert image_seed(7, PROMPTS[0], 0) != image_seed(8, PROMPTS[0], 0)


@pytest.fixture(scope="module")
def pipeline_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_module("diffusers")
    return write_tiny_pipeline(tmp_path_factory.mktemp("tiny-sd") / "pipe")


def _direct(folder: Path, requests: list[ImageRequest], unet: Path | None = None,
            **call: Any) -> list[np.ndarray]:  # fmt: skip
    """The pipeline called directly, one torch.Generator per image, resized as BiVLC did."""
    import torch
    from diffusers import StableDiffusionPipeline, UNet2DConditionModel

    pipe = StableDiffusionPipeline.from_pretrained(str(folder))
    if unet is not None:
        pipe.unet = UNet2DConditionModel.from_pretrained(str(unet), subfolder="unet")
    pipe.set_progress_bar_config(disable=True)
    out = []
    for r in requests:
        g = torch.Generator().manual_seed(r.seed)
        image = pipe(prompt=r.prompt, generator=g, **call).images[0]
        if r.size is not None:
            image = image.resize((r.size, r.size))
        out.append(np.asarray(image.convert("RGB")).astype(int))
    return out


def test_diffusers_images_equal_a_direct_pipeline_call(pipeline_dir: Path, tmp_path: Path) -> None:
    model = load_model(f"diffusers:{pipeline_dir}?steps=2&guidance=3")
    assert model.fingerprint["steps"] == 2 and model.fingerprint["guidance"] == 3.0
    requests = _requests(k=2, size=12)
    files = ImageFiles(tmp_path / FILES_DIR)
    with _store(tmp_path, model) as store:
        records, stats = image_records(model, requests, store, files, batch_size=4)
    assert stats.n_sent == 6 and stats.n_stored == 0
    made = [pixels(files.path(r["text"]).read_bytes()) for r in records]
    direct = _direct(pipeline_dir, requests, num_inference_steps=2, guidance_scale=3.0)
    for got, want in zip(made, direct, strict=True):
        assert got.shape == (12, 12, 3)
        assert np.abs(got - want).max() <= 2  # batched on any CPU vs one at a time
    assert np.abs(made[0] - made[1]).max() > 10  # two seeds, two images


def test_unet_option_replaces_the_unet(pipeline_dir: Path, tmp_path: Path) -> None:
    other = write_tiny_unet(tmp_path / "dpo-unet")
    plain = load_model(f"diffusers:{pipeline_dir}?steps=2")
    swapped = load_model(f"diffusers:{pipeline_dir}?steps=2&unet={other}")
    assert swapped.fingerprint["unet"]["source"] == "local"
    assert fingerprint_key(plain.fingerprint) != fingerprint_key(swapped.fingerprint)
    requests = _requests(k=1)[:1]
    got = pixels(swapped.generate(requests)[0])
    want = _direct(pipeline_dir, requests, unet=other, num_inference_steps=2)[0]
    assert np.abs(got - want).max() <= 2
    assert np.abs(got - pixels(plain.generate(requests)[0])).max() > 10


def test_rerun_makes_nothing_and_replay_only(pipeline_dir: Path, tmp_path: Path) -> None:
    model = load_model(f"diffusers:{pipeline_dir}?steps=1")
    requests = _requests(k=1)
    files = ImageFiles(tmp_path / FILES_DIR)
    with _store(tmp_path, model) as store:
        first, _ = image_records(model, requests, store, files, batch_size=2)

    def refuse(batch: Any) -> Any:
        raise AssertionError("generated again")

    model.generate = refuse  # type: ignore[method-assign]
    with _store(tmp_path, model) as store:
        again, stats = image_records(model, requests, store, files)
    assert stats.n_sent == 0 and stats.n_stored == 3 and again == first
    with _store(tmp_path, model, readonly=True) as store:
        assert image_records(model, requests, store, files, replay_only=True)[0] == first
        with pytest.raises(LexsemError, match=r"replay only: 1 image requests"):
            image_records(model, [*requests, ImageRequest("new", 0, 1)], store, files,
                          replay_only=True)  # fmt: skip
    with _store(tmp_path, model) as store, pytest.raises(LexsemError, match="--max-requests 1"):
        image_records(model, _requests(k=3), store, files, max_requests=1)


def test_a_lost_image_file_is_made_again(pipeline_dir: Path, tmp_path: Path) -> None:
    model = load_model(f"diffusers:{pipeline_dir}?steps=1")
    requests = _requests(k=1)
    files = ImageFiles(tmp_path / FILES_DIR)
    with _store(tmp_path, model) as store:
        first, _ = image_records(model, requests, store, files)
        files.path(first[1]["text"]).unlink()
        again, stats = image_records(model, requests, store, files)
    assert stats.n_sent == 1 and files.path(again[1]["text"]).is_file()


def test_a_killed_run_keeps_the_batches_made(pipeline_dir: Path, tmp_path: Path) -> None:
    model = load_model(f"diffusers:{pipeline_dir}?steps=1")
    real = model.generate
    calls: list[int] = []

    def killed_on_second(batch: Any) -> Any:
        calls.append(len(batch))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(batch)

    model.generate = killed_on_second  # type: ignore[method-assign]
    requests = _requests(k=2)
    files = ImageFiles(tmp_path / FILES_DIR)
    with _store(tmp_path, model) as store, pytest.raises(KeyboardInterrupt):
        image_records(model, requests, store, files, batch_size=2)
    model.generate = real  # type: ignore[method-assign]
    with _store(tmp_path, model) as store:
        _, stats = image_records(model, requests, store, files, batch_size=2)
    assert stats.n_stored == 2 and stats.n_sent == 4


# -- an OpenAI-compatible image API -------------------------------------------------------------
def _api(url: str, extra: str = "") -> Any:
    return load_model(
        f"openai-image:tiny-image?base_url={url}&key_env=LEXSEM_TEST_IMAGE_KEY{extra}"
    )


def test_api_images_stored_and_never_sent_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEXSEM_TEST_IMAGE_KEY", "sk-secret-image-key")
    requests = _requests(k=2, size=8)
    files = ImageFiles(tmp_path / FILES_DIR)
    with serve_images() as (server, url):
        model = _api(url, "&size=256x256")
        with _store(tmp_path, model) as store:
            records, stats = image_records(model, requests, store, files)
            assert stats.n_sent == 6 and len(server.bodies) == 6
            again, stats = image_records(model, requests, store, files)
        assert stats.n_sent == 0 and len(server.bodies) == 6 and again == records
    body = server.bodies[0]
    assert body == {"model": "tiny-image", "prompt": body["prompt"], "n": 1,
                    "size": "256x256", "response_format": "b64_json"}  # fmt: skip
    assert server.auth == {"Bearer sk-secret-image-key"}
    first = Image.open(files.path(records[0]["text"]))
    assert first.size == (8, 8)  # resized to the request's size
    want = Image.open(io.BytesIO(prompt_png(PROMPTS[0]))).resize((8, 8), Image.Resampling.BICUBIC)
    assert np.array_equal(np.asarray(first.convert("RGB")), np.asarray(want.convert("RGB")))
    assert "b64_json" not in str(records[0]["response"])
    assert records[0]["response"]["data"][0]["revised_prompt"] == PROMPTS[0]
    for path in tmp_path.rglob("*"):  # the key is written nowhere
        if path.is_file():
            assert b"sk-secret-image-key" not in path.read_bytes()


def test_api_faults_retried_failed_not_stored(tmp_path: Path) -> None:
    requests = _requests(k=1)
    files = ImageFiles(tmp_path / FILES_DIR)
    with serve_images() as (server, url):
        model = _api(url)
        server.faults = ["500", "429", "json", "drop"]
        server.fail = PROMPTS[2]
        with _store(tmp_path, model) as store:
            with pytest.raises(ModelError, match=r"1 of 3 image requests failed.*HTTP 400"):
                image_records(model, requests, store, files, backoff=0.01)
            assert sorted(server.answered) == sorted(PROMPTS[:2])  # each once, after retries
            server.fail = None
            server.answered.clear()
            records, stats = image_records(model, requests, store, files, backoff=0.01)
        assert stats.n_stored == 2 and stats.n_sent == 1 and server.answered == [PROMPTS[2]]
    assert all(files.path(r["text"]).is_file() for r in records)


def test_api_server_down_stops_at_once(tmp_path: Path) -> None:
    with serve_images() as (_, url):
        pass  # closed: nothing listens there now
    model = _api(url)
    with _store(tmp_path, model) as store, pytest.raises(ModelError, match="cannot connect"):
        image_records(model, _requests(k=1), store, ImageFiles(tmp_path / FILES_DIR))
    db = next(tmp_path.rglob("*.sqlite"))
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM records").fetchone() == (0,)
    assert not (tmp_path / FILES_DIR).exists() or not any(os.scandir(tmp_path / FILES_DIR))
