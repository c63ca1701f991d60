"""The `vlm:` backend: a local generative VLM answering prompts in free form (greedy), checked
against transformers' own `generate` on tiny random models, and run as the answerer of the
multiple-choice task end to end (answers in the run, a rerun asks nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

import tiny_vlms_dynamic
import tiny_vlms_other
from fakes import scpp_user_files
from test_models_vqa import write_tiny_llava

FACTORIES = {
    "llava": write_tiny_llava,
    "qwen2_vl": tiny_vlms_dynamic.write_tiny_qwen2_vl,
    "paligemma": tiny_vlms_other.write_tiny_paligemma,
    "blip2_t5": tiny_vlms_other.write_tiny_blip2_t5,
}


@pytest.fixture(scope="module", params=sorted(FACTORIES))
def folder(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return FACTORIES[request.param](tmp_path_factory.mktemp(request.param) / "model")


def direct_answer(folder: Path, image: Image.Image, prompt: str, n: int) -> str:
    """Greedy decoding by hand: transformers' generate on the processor's inputs."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    proc = AutoProcessor.from_pretrained(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder).eval()
    enc = proc(text=[prompt], images=[image], return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=n, do_sample=False)
    if (
        not model.config.is_encoder_decoder
        and getattr(model.config, "use_decoder_only_language_model", True) is not False
    ):
        out = out[:, enc["input_ids"].shape[1] :]
    return proc.tokenizer.decode(out[0], skip_special_tokens=True).strip()


def test_answers_equal_transformers_greedy_generate(folder: Path) -> None:
    from lexsem.models.protocols import ImageRows
    from lexsem.models.registry import load_model

    model = load_model(f"vlm:{folder}?max_new_tokens=5", device="cpu")
    rng = np.random.default_rng(0)
    ims = [
        Image.fromarray(rng.integers(0, 256, (32 + 8 * i, 40, 3), dtype=np.uint8)) for i in range(2)
    ]
    prompts = ["Does this figure show a dog? Please answer yes or no.", "Describe the image."]
    got = model.answer(ImageRows(ims), prompts)
    want = [
        direct_answer(folder, im, model.user_turn(p), 5) for im, p in zip(ims, prompts, strict=True)
    ]
    assert got == want
    assert all(isinstance(a, str) for a in got)


def test_max_new_tokens_is_in_the_fingerprint(folder: Path) -> None:
    from lexsem.models.registry import load_model

    a = load_model(f"vlm:{folder}").fingerprint
    assert a != load_model(f"vlm:{folder}?max_new_tokens=8").fingerprint
    assert a == load_model(f"vlm:{folder}?max_new_tokens=32").fingerprint


def test_a_local_model_answers_the_multiple_choice_task_into_a_run(tmp_path: Path) -> None:
    import lexsem

    llava = write_tiny_llava(tmp_path / "llava")
    sel, images = scpp_user_files(tmp_path)
    kw: dict[str, Any] = dict(
        coco_val2017=images, n_boot=0, num_workers=0, cache_dir=tmp_path / "c"
    )
    run = lexsem.evaluate(f"vlm:{llava}?max_new_tokens=3", [sel], tasks=["choice_scpp_order"], **kw)
    metrics = {r.metric for r in run.record.results}
    assert metrics == {"NPP", "PNP", "PPN", "circular"}
    texts = run.items.column("text_answer_PNP").to_pylist()
    assert len(texts) == 5 * 4 and all(isinstance(t, str) for t in texts)
    again = lexsem.evaluate(
        f"vlm:{llava}?max_new_tokens=3", [sel], tasks=["choice_scpp_order"], **kw
    )
    assert again.record.timings.n_pairs_scored == 0  # every answer from the store
    assert again.items.equals(run.items)
    out = tmp_path / "run"
    run.save(out)
    assert (
        lexsem.Run.load(out).items.column("text_answer_NPP").to_pylist()
        == run.items.column("text_answer_NPP").to_pylist()
    )
