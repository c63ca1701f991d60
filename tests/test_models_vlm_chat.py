"""The `vlm:` backend: a local generative VLM answering conversations in free form (greedy), a
`ChatModel` checked against transformers' own `generate` on tiny random models, and run on the
multiple-choice task end to end through the engine's chat path (answers in the run, a rerun asks
nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from builders import tiny_vlms_dynamic, tiny_vlms_other
from builders.fakes import scpp_user_files
from builders.tiny_llava import write_tiny_llava

pytestmark = pytest.mark.torch

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
    import io

    from lexsem.models.chat import ChatRequest
    from lexsem.models.factory import load_model

    model = load_model(f"vlm:{folder}?max_new_tokens=5", device="cpu")
    rng = np.random.default_rng(0)
    ims = [
        Image.fromarray(rng.integers(0, 256, (32 + 8 * i, 40, 3), dtype=np.uint8)) for i in range(2)
    ]
    prompts = ["Does this figure show a dog? Please answer yes or no.", "Describe the image."]

    def png(im: Image.Image) -> bytes:  # lossless: the model sees these very pixels
        buf = io.BytesIO()
        im.save(buf, format="PNG")
        return buf.getvalue()

    got = [
        model.send(None, model.request_body(ChatRequest.ask(p, png(im))))[0]
        for im, p in zip(ims, prompts, strict=True)
    ]
    want = [
        direct_answer(folder, im, model.user_turn(p), 5) for im, p in zip(ims, prompts, strict=True)
    ]
    assert got == want
    assert all(isinstance(a, str) for a in got)


def test_max_new_tokens_is_in_the_fingerprint(folder: Path) -> None:
    from lexsem.models.factory import load_model

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
    assert again.record.timings.n_requests_sent == 0  # every answer from the store
    assert again.items.equals(run.items)
    out = tmp_path / "run"
    run.save(out)
    assert (
        lexsem.Run.load(out).items.column("text_answer_NPP").to_pylist()
        == run.items.column("text_answer_NPP").to_pylist()
    )


def test_ask_with_a_local_model_k_shot_stored_and_as_a_run(tmp_path: Path) -> None:
    """`lexsem ask -m vlm:...`: a local model behind the chat interface — k-shot conversations
    with several images, answers stored (a rerun generates nothing), a run folder."""
    from typer.testing import CliRunner

    from lexsem.cli import app
    from lexsem.results.run import Run

    llava = write_tiny_llava(tmp_path / "llava")
    sel, images = scpp_user_files(tmp_path)
    common = ["-m", f"vlm:{llava}?max_new_tokens=2", "-b", sel, "--coco-val2017", str(images),
              "--cache-dir", str(tmp_path / "c"), "--prompt", "scpp3"]  # fmt: skip
    res = CliRunner().invoke(app, ["ask", *common, "--shots", "1", "--run", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert "15 requests: 0 answered from the store, 15 sent" in res.stderr
    run = Run.load(tmp_path / "r")
    assert (
        run.record.config.tasks == ["choice_scpp3"] and run.record.model.fingerprint["shots"] == 1
    )
    again = CliRunner().invoke(app, ["ask", *common, "--shots", "1", "--replay-only"])
    assert again.exit_code == 0 and "15 answered from the store, 0 sent" in again.stderr
    vqa = CliRunner().invoke(app, ["ask", *common[:-2], "--vqascore"])
    assert vqa.exit_code != 0 and "vqa:" in vqa.output


def test_a_conversation_with_two_images_equals_transformers_generate(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from lexsem.models.factory import load_model

    llava = write_tiny_llava(tmp_path / "llava")
    model = load_model(f"vlm:{llava}?max_new_tokens=4", device="cpu")
    rng = np.random.default_rng(5)
    ims = [Image.fromarray(rng.integers(0, 256, (32, 40, 3), dtype=np.uint8)) for _ in range(2)]
    turns = [
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "a dog runs"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Yes"}]},
        {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "a cat"}]},
    ]
    got = model.converse(turns, ims)
    proc = AutoProcessor.from_pretrained(llava)
    net = AutoModelForImageTextToText.from_pretrained(llava).eval()
    prompt = proc.apply_chat_template(turns, add_generation_prompt=True)
    enc = proc(text=[prompt], images=[ims], return_tensors="pt")
    assert int((enc["input_ids"] == net.config.image_token_index).sum()) == 2 * 4  # both images
    with torch.no_grad():
        out = net.generate(**enc, max_new_tokens=4, do_sample=False)
    want = proc.tokenizer.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    assert got == want.strip()


def test_a_local_chat_model_decodes_as_the_benchmarks_profile_says() -> None:
    """The engine names the benchmark's decode profile (and the run's EXIF choice) in each
    request; a local VLM decodes the images so, RGB first, as every local image model does."""
    from lexsem.models.backends.vlm_chat import decode_profile

    assert decode_profile({}).describe() == {"name": "default", "exif_transpose": False,
                                             "rgb": "first"}  # fmt: skip
    assert decode_profile({"decode": "hf_datasets"}).exif_transpose is True
    assert decode_profile({"decode": "open_clip_raw"}).rgb == "first"  # raw modes: not for VLMs
    forced = decode_profile({"decode": "hf_datasets", "exif_transpose": "false"})
    assert forced.exif_transpose is False


def test_answer_requests_name_the_decode_profile() -> None:
    from types import SimpleNamespace

    from lexsem.engine.conversations import answer_requests
    from lexsem.tasks.choice_task import choice_task

    item = SimpleNamespace(id="1", subset="s", image="a.png", n="n", p1="p1", p2="p2",
                           texts=lambda: ["p1", "p2", "n"])  # fmt: skip
    work = SimpleNamespace(benchmark="b", items=[item], tasks=[choice_task("scpp1")],
                           decode="hf_datasets")  # fmt: skip
    asked = answer_requests([work], lambda ref: b"bytes", exif_transpose=True)
    assert {r.about["decode"] for r in asked.requests} == {"hf_datasets"}
    assert {r.about["exif_transpose"] for r in asked.requests} == {"true"}
