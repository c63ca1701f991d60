"""`lexsem.train`: fine-tuning a tiny open_clip CLIP on rendered scenes, judged by lexsem's own
evaluation — each regime trains, a resumed run ends at the same weights as an uninterrupted
one, LoRA trains only its adapters, the leakage guard stops a run that trains on a judged
benchmark, checkpoints load in the evaluation backends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from builders.backends import require_module
from builders.tiny_dual_models import write_tiny_openclip
from lexsem.errors import DataError, ModelError

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A random tiny open_clip CLIP as a custom arch file and a checkpoint: its spec."""
    require_module("open_clip")
    return write_tiny_openclip(tmp_path_factory.mktemp("tiny-clip"), "tiny-train")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lexsem.train.rendered import write_rendered

    return write_rendered(tmp_path_factory.mktemp("rendered"), 24, seed=0, size=48)


def config(tiny: str, manifest: Path, out: Path, **kw: Any) -> Any:
    from lexsem.train.config import TrainConfig

    base = dict(model=tiny, manifest=manifest, out=out, epochs=2, batch_size=8, lr=1e-3,
                warmup=1, device="cpu", n_boot=0, cache_dir=out.parent / "cache")  # fmt: skip
    return TrainConfig(**{**base, **kw})


def weights(spec: str) -> dict[str, torch.Tensor]:
    from lexsem.models.factory import load_model

    return {
        k: v.clone()
        for k, v in load_model(spec, device="cpu")._ensure_loaded().state_dict().items()
    }


@pytest.mark.parametrize("regime", ["clip_coco", "trohn_text", "trohn_img"])
def test_each_regime_trains_and_its_checkpoint_loads(
    tiny: str, rendered: Path, tmp_path: Path, regime: str
) -> None:
    from lexsem.train.loop import Trainer

    res = Trainer(config(tiny, rendered, tmp_path / "run", regime=regime, epochs=1)).run()
    assert not res.stopped and res.steps == 3 and res.final is not None
    record = json.loads((tmp_path / "run" / "train.json").read_text())
    losses = [r["loss"] for r in record["progress"]["losses"]]
    assert len(losses) == 3 and all(np.isfinite(losses))
    before, after = weights(tiny), weights(res.final)
    assert any(not torch.equal(before[k], after[k]) for k in before)  # it trained


def test_a_resumed_run_ends_at_the_weights_of_an_uninterrupted_one(
    tiny: str, rendered: Path, tmp_path: Path
) -> None:
    from lexsem.train.loop import Trainer

    whole = Trainer(config(tiny, rendered, tmp_path / "whole")).run()
    cut = Trainer(config(tiny, rendered, tmp_path / "cut", max_steps=4)).run()  # mid epoch 2
    assert cut.stopped and cut.steps == 4
    with pytest.raises(DataError, match="holds a training run"):
        Trainer(config(tiny, rendered, tmp_path / "cut")).run()  # never overwritten
    resumed = Trainer(config(tiny, rendered, tmp_path / "cut")).run(resume=True)
    assert resumed.steps == whole.steps == 6
    a, b = weights(whole.final), weights(resumed.final)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_epochs_are_judged_by_the_evaluation_and_the_best_is_kept(
    tiny: str, rendered: Path, tmp_path: Path
) -> None:
    from lexsem.train.loop import Trainer

    cfg = config(
        tiny, rendered, tmp_path / "run", select_on=("synthetic",), judge_on=("synthetic",)
    )
    res = Trainer(cfg).run()
    record = json.loads((tmp_path / "run" / "train.json").read_text())
    labels = [e["label"] for e in record["progress"]["evaluations"]]
    assert labels == ["before", "epoch-1", "epoch-2"]
    accs = [e["accuracy"] for e in record["progress"]["evaluations"]]
    assert all(any(k.startswith("synthetic/") for k in a) for a in accs)
    assert res.best is not None and record["leakage"]["benchmarks"]  # the guard ran
    assert (tmp_path / "run" / "eval" / "epoch-2" / "run.json").is_file()
    # `lexsem report RUN` shows every evaluation as a row; McNemar against the base model
    from typer.testing import CliRunner

    from lexsem.cli import app

    html = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--html", str(html),
                                   "--n-boot", "0"])  # fmt: skip
    assert res.exit_code == 0, res.output
    for label in ("run before", "run epoch-1", "run epoch-2"):
        assert label in res.output
    assert "McNemar" in html.read_text()


def test_the_leakage_guard_stops_training_on_a_judged_benchmark(
    tiny: str, rendered: Path, tmp_path: Path
) -> None:
    from lexsem.benchmarks.load import load_benchmark
    from lexsem.train.leakage import LeakageError
    from lexsem.train.loop import Trainer

    item = load_benchmark("synthetic").items[0]
    rows = [json.loads(line) for line in rendered.read_text().splitlines()]
    rows[0]["caption"] = item.p1  # a judged caption in the training data
    leaky = rendered.parent / "leaky.jsonl"
    leaky.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(LeakageError, match="synthetic"):
        Trainer(config(tiny, leaky, tmp_path / "run", judge_on=("synthetic",))).run()
    assert not (tmp_path / "run" / "state.pt").exists()
    ok = Trainer(config(tiny, leaky, tmp_path / "ok", judge_on=("synthetic",), epochs=1,
                        allow_leakage=True)).run()  # fmt: skip
    record = json.loads((tmp_path / "ok" / "train.json").read_text())
    assert ok.final and record["leakage"]["allowed"] is True


def test_lora_trains_only_its_adapters_and_its_merged_checkpoint_loads(
    tiny: str, rendered: Path, tmp_path: Path
) -> None:
    from lexsem.models.factory import load_model
    from lexsem.train.config import LoraConfig
    from lexsem.train.loop import Trainer

    with pytest.raises(ModelError, match="LoRA targets"):
        Trainer(
            config(tiny, rendered, tmp_path / "none", lora=LoraConfig(targets=("nothing",)))
        ).run()
    res = Trainer(config(tiny, rendered, tmp_path / "run", epochs=1,
                         lora=LoraConfig(targets=("c_fc",), r=2))).run()  # fmt: skip
    before, after = weights(tiny), weights(res.final)
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all("c_fc" in k for k in changed)  # only the adapted layers moved
    enc = load_model(res.final, device="cpu")
    assert np.isfinite(enc.encode(["a red cube"])).all()


def test_a_regime_without_its_fields_is_refused_before_training(tiny: str, tmp_path: Path) -> None:
    from lexsem.train.loop import Trainer
    from lexsem.train.rendered import write_rendered

    manifest = write_rendered(tmp_path / "data", 16, seed=1, size=48)
    rows = [json.loads(line) for line in manifest.read_text().splitlines()]
    for r in rows:
        r.pop("negatives", None)
    bare = manifest.parent / "bare.jsonl"
    bare.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(DataError, match="needs a negative caption"):
        Trainer(config(tiny, bare, tmp_path / "run", regime="trohn_text")).run()
    with pytest.raises(DataError, match="hard image"):
        Trainer(config(tiny, manifest, tmp_path / "neg", regime="negclip")).run()


def test_negclip_trains_with_hard_images_that_are_examples(
    tiny: str, rendered: Path, tmp_path: Path
) -> None:
    """NegCLIP's hard image is another training example (its caption and its own negatives)."""
    from lexsem.train.loop import Trainer

    rows = [json.loads(line) for line in rendered.read_text().splitlines()]
    for i, r in enumerate(rows):
        other = rows[(i + 1) % len(rows)]
        r["negative_image"], r["negative_image_caption"] = other["image"], other["caption"]
    path = rendered.parent / "negclip.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    res = Trainer(config(tiny, path, tmp_path / "run", regime="negclip", epochs=1)).run()
    record = json.loads((tmp_path / "run" / "train.json").read_text())
    assert res.steps == 3 and all(np.isfinite(r["loss"]) for r in record["progress"]["losses"])


def _ddp_worker(rank: int, world: int, cfg_json: str, port: int) -> None:
    import os

    import torch.distributed as dist

    from lexsem.train.config import TrainConfig
    from lexsem.train.loop import Trainer

    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                       "WORLD_SIZE": str(world), "LOCAL_RANK": str(rank)})  # fmt: skip
    torch.set_num_threads(1)
    Trainer(TrainConfig.model_validate_json(cfg_json)).run()
    dist.destroy_process_group()


def test_two_gloo_processes_train_like_one_on_the_same_global_batch(
    tiny: str, rendered: Path, tmp_path: Path
) -> None:
    """DDP on the CPU (gloo): each process embeds half of every global batch, the embeddings
    are gathered and the gradients averaged — the weights after training equal one process's
    on the same global batches (up to float summation order)."""
    import socket

    import torch.multiprocessing as mp

    from lexsem.train.loop import Trainer

    one = Trainer(config(tiny, rendered, tmp_path / "one", epochs=1)).run()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = config(tiny, rendered, tmp_path / "two", epochs=1)
    mp.spawn(_ddp_worker, args=(2, cfg.model_dump_json(), port), nprocs=2, join=True)
    record = json.loads((tmp_path / "two" / "train.json").read_text())
    one_losses = json.loads((tmp_path / "one" / "train.json").read_text())["progress"]["losses"]
    assert [r["loss"] for r in record["progress"]["losses"]] == pytest.approx(
        [r["loss"] for r in one_losses], rel=1e-5
    )
    # the weights agree to float summation order; attention's key bias has no gradient at all
    # (softmax ignores a constant added to every key), so Adam's g / sqrt(v) turns float noise
    # into its update: it is only bounded by lr x steps
    a, b = weights(one.final), weights(record["final"])
    for k in a:
        tol = (
            {"rtol": 0.0, "atol": 3e-3}
            if k.endswith("in_proj_bias")
            else {"rtol": 1e-3, "atol": 2e-5}
        )
        torch.testing.assert_close(a[k], b[k], **tol, msg=lambda m, k=k: f"{k}: {m}")


def test_the_cli_trains_renders_data_and_resumes(tiny: str, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from lexsem.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["train-data", str(tmp_path / "data"), "-n", "16", "--size", "48"])
    assert res.exit_code == 0, res.output
    manifest = tmp_path / "data" / "manifest.jsonl"
    common = ["train", "--manifest", str(manifest), "-o", str(tmp_path / "run"), "-m", tiny,
              "--batch-size", "8", "--epochs", "2", "--lr", "1e-3", "--warmup", "1",
              "--device", "cpu", "--cache-dir", str(tmp_path / "c")]  # fmt: skip
    first = runner.invoke(app, [*common, "--max-steps", "1"])
    assert first.exit_code == 0 and "stopped (resume with --resume): 1 steps" in first.output
    again = runner.invoke(app, common)
    assert again.exit_code == 2 and "holds a training run" in again.output
    other = runner.invoke(app, [*common, "--resume", "--seed", "3"])
    assert other.exit_code == 2 and "other settings (seed" in other.output
    done = runner.invoke(app, [*common, "--resume"])
    assert (
        done.exit_code == 0 and "done: 4 steps" in done.output and "final: openclip:" in done.output
    )
    bad = runner.invoke(app, ["train", "--manifest", str(manifest), "-o", str(tmp_path / "x"),
                              "--preset", "nope"])  # fmt: skip
    assert bad.exit_code == 2 and "unknown preset" in bad.output


def test_a_transformers_clip_trains_and_its_folder_loads(rendered: Path, tmp_path: Path) -> None:
    """`clip:` models train too: the final checkpoint is a model folder (weights, tokenizer and
    processor files) that the `clip:` backend loads, with the trained weights."""
    from builders.tiny_dual_models import write_clip
    from lexsem.models.factory import load_model
    from lexsem.train.loop import Trainer

    folder = write_clip(tmp_path / "clip")
    res = Trainer(config(f"clip:{folder}", rendered, tmp_path / "run", epochs=1)).run()
    assert res.final == f"clip:{tmp_path / 'run' / 'final'}"
    before = load_model(f"clip:{folder}", device="cpu")._ensure_loaded().state_dict()
    after = load_model(res.final, device="cpu")._ensure_loaded().state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    enc = load_model(res.final, device="cpu")
    assert np.isfinite(enc.encode(["a red cube"])).all()


def test_a_killed_run_resumes_to_the_weights_of_an_uninterrupted_one(
    tiny: str, rendered: Path, tmp_path: Path
) -> None:
    """SIGKILL while training (after its first saved state), then `--resume`: the final
    weights equal an uninterrupted run's."""
    import subprocess
    import sys
    import time

    from lexsem.train.loop import Trainer

    whole = Trainer(config(tiny, rendered, tmp_path / "whole")).run()
    args = [sys.executable, "-c", "from lexsem.cli import app; app()", "train",
            "--manifest", str(rendered), "-o", str(tmp_path / "killed"), "-m", tiny,
            "--batch-size", "8", "--epochs", "2", "--lr", "1e-3", "--warmup", "1",
            "--device", "cpu", "--cache-dir", str(tmp_path / "cache"), "--n-boot", "0",
            "--checkpoint-every", "1"]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = tmp_path / "killed" / "state.pt"
    deadline = time.monotonic() + 120
    while not state.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    assert state.exists(), "the run saved no state before it was killed"
    killed = json.loads((tmp_path / "killed" / "train.json").read_text())
    assert "finished" not in killed and killed["progress"]["step"] < whole.steps  # mid-run
    res = subprocess.run([*args, "--resume"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    killed_final = res.stdout.split("final: ")[1].strip()
    a, b = weights(whole.final), weights(killed_final)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_the_manifests_dev_split_selects_the_model(tiny: str, tmp_path: Path) -> None:
    """`--select-on dev`: the manifest's dev rows become a pair benchmark (image, caption, its
    hard negative) evaluated every epoch; the best epoch on it is kept."""
    from lexsem.train.loop import Trainer
    from lexsem.train.rendered import write_rendered

    manifest = write_rendered(tmp_path / "data", 32, seed=2, size=48, dev_fraction=0.25)
    res = Trainer(config(tiny, manifest, tmp_path / "run", select_on=("dev",))).run()
    record = json.loads((tmp_path / "run" / "train.json").read_text())
    evals = record["progress"]["evaluations"]
    assert [e["label"] for e in evals] == ["epoch-1", "epoch-2"]
    best = record["progress"]["best"]
    assert best["key"] == "sugarcrepe:dev/acc" and best["accuracy"] == max(
        e["accuracy"][best["key"]] for e in evals
    )
    assert res.best is not None and (tmp_path / "run" / "best.pt").is_file()
    dev = json.loads((tmp_path / "run" / "dev" / "dev.json").read_text())
    assert len(dev) == sum(1 for line in manifest.read_text().splitlines() if '"dev"' in line)


def test_gradient_accumulation_and_bf16_autocast(tiny: str, rendered: Path, tmp_path: Path) -> None:
    """`accumulate=2`: one optimizer step per two micro-batches (3 batches an epoch: 1 step,
    the odd batch dropped as an incomplete batch is); `amp_bf16` trains under autocast (on
    the CPU here; a GPU's is the same code)."""
    from lexsem.train.loop import Trainer

    acc = Trainer(config(tiny, rendered, tmp_path / "acc", accumulate=2)).run()
    assert acc.steps == 2  # 2 epochs x 1 step of 2 micro-batches
    amp = Trainer(config(tiny, rendered, tmp_path / "amp", epochs=1, precision="amp_bf16")).run()
    record = json.loads((tmp_path / "amp" / "train.json").read_text())
    assert amp.steps == 3 and all(np.isfinite(r["loss"]) for r in record["progress"]["losses"])
    a, b = weights(tiny), weights(amp.final)
    assert any(not torch.equal(a[k], b[k]) for k in a)


def test_val_in_batch_acc_selects_as_bivlcs_script(
    tiny: str, rendered: Path, tmp_path: Path
) -> None:
    """`select="val_in_batch_acc"`, `val_fraction=0.25`: the rows `datasets`'
    `train_test_split(test_size=0.25, seed)` holds out are the validation split (BiVLC's
    CLIP_COCO split); each epoch's accuracy is ½(I→T + T→I) in-batch accuracy of the weights
    after it, computed here from the saved final weights with the evaluation backend; the best
    epoch is kept."""
    datasets = pytest.importorskip("datasets")
    from PIL import Image

    from lexsem.models.factory import load_model
    from lexsem.train.loop import Trainer

    cfg = config(tiny, rendered, tmp_path / "run", select="val_in_batch_acc", val_fraction=0.25,
                 seed=3)  # fmt: skip
    res = Trainer(cfg).run()
    record = json.loads((tmp_path / "run" / "train.json").read_text())
    vals = record["progress"]["validations"]
    assert [v["label"] for v in vals] == ["epoch-1", "epoch-2"] and res.steps == 4  # 18 rows
    assert record["settings"]["validation_rows"] == 6
    rows = [json.loads(line) for line in rendered.read_text().splitlines()]
    split = datasets.Dataset.from_dict({"i": list(range(len(rows)))}).train_test_split(
        test_size=0.25, seed=3
    )
    held = [rows[i] for i in split["test"]["i"]]
    enc = load_model(res.final, device="cpu")
    pixels = torch.stack(
        [enc.preprocess(Image.open(rendered.parent / r["image"].split(":", 1)[1]).convert("RGB"))
         for r in held]
    )  # fmt: skip
    img = enc.encode_images(pixels)
    txt = enc.encode([r["caption"] for r in held])
    img /= np.linalg.norm(img, axis=1, keepdims=True)
    txt /= np.linalg.norm(txt, axis=1, keepdims=True)
    sim = img @ txt.T  # one batch: 6 rows < batch 8
    want = ((sim.argmax(1) == np.arange(6)).mean() + (sim.T.argmax(1) == np.arange(6)).mean()) / 2
    assert vals[-1]["in_batch_acc"] == pytest.approx(want)
    best = record["progress"]["best"]
    accs = [v["in_batch_acc"] for v in vals]
    assert (
        best["key"] == "val/in_batch_acc" and best["label"] == vals[accs.index(max(accs))]["label"]
    )
    assert res.best is not None and (tmp_path / "run" / "best.pt").is_file()
    with pytest.raises(DataError, match="needs a validation split"):
        Trainer(config(tiny, rendered, tmp_path / "nodev", select="val_in_batch_acc")).run()


@pytest.mark.parametrize("clamp", [True, False])
def test_the_logit_scale_is_clamped_only_when_the_setting_says(
    tiny: str, rendered: Path, tmp_path: Path, clamp: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """open_clip / NegCLIP clamp after every step, BiVLC's script never: the setting decides,
    the presets say which, and the record states it."""
    import lexsem.train.optim as optim
    from lexsem.train.config import PRESETS
    from lexsem.train.loop import Trainer

    calls: list[int] = []
    real = optim.clamp_logit_scale
    monkeypatch.setattr(optim, "clamp_logit_scale", lambda m: (calls.append(1), real(m)))
    res = Trainer(config(tiny, rendered, tmp_path / "run", epochs=1,
                         clamp_logit_scale=clamp)).run()  # fmt: skip
    assert len(calls) == (res.steps if clamp else 0)
    record = json.loads((tmp_path / "run" / "train.json").read_text())
    assert record["settings"]["clamp_logit_scale"] is clamp
    assert [PRESETS[p]["clamp_logit_scale"] for p in PRESETS] == [False, False, False, True]


def test_the_cli_shows_loss_lr_and_evaluations_and_the_report_draws_them(
    tiny: str, rendered: Path, tmp_path: Path
) -> None:
    """`lexsem train` (not a terminal) prints a line per optimizer step interval and epoch
    with loss and learning rate, and each evaluation; `--quiet` prints the result only;
    `lexsem report RUN --html` has the training section (curves, evaluation table)."""
    from typer.testing import CliRunner

    from lexsem.cli import app

    common = ["train", "--manifest", str(rendered), "-m", tiny, "--batch-size", "8",
              "--epochs", "2", "--lr", "1e-3", "--warmup", "1", "--device", "cpu",
              "--cache-dir", str(tmp_path / "c"), "--n-boot", "0"]  # fmt: skip
    res = CliRunner().invoke(app, [*common, "-o", str(tmp_path / "run"), "--judge-on", "synthetic"])
    assert res.exit_code == 0, res.output
    record = json.loads((tmp_path / "run" / "train.json").read_text())
    for r in record["progress"]["losses"]:
        if r["step"] % 3 == 0:  # the end of each epoch of 3 steps
            line = f"step {r['step']}/6 (epoch {r['epoch'] + 1}/2): loss {r['loss']:.4f}, "
            assert line + f"lr {r['lr']:.2e}" in res.output
    for e in record["progress"]["evaluations"]:
        tot = e["accuracy"]["synthetic/tot"]
        assert f"{e['label']} evaluation: synthetic/tot {tot:.1f}%" in res.output
    quiet = CliRunner().invoke(app, [*common, "-o", str(tmp_path / "quiet"), "-q"])
    assert quiet.exit_code == 0 and "step " not in quiet.output and "done: 6 steps" in quiet.output
    html = tmp_path / "r.html"
    rep = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--html", str(html),
                                   "--n-boot", "0"])  # fmt: skip
    assert rep.exit_code == 0, rep.output
    page = html.read_text()
    assert "Training: run" in page and "training loss (left) and learning rate" in page
    assert "Accuracy (%) of each evaluation" in page and "accuracy (%) of each evaluation" in page
    alone = tmp_path / "q.html"  # no evaluation: the curves alone
    rep = CliRunner().invoke(app, ["report", str(tmp_path / "quiet"), "--html", str(alone)])
    assert rep.exit_code == 0 and "Training: quiet" in alone.read_text(), rep.output


def test_ctrl_c_mid_epoch_saves_the_state_and_resumes_to_the_same_weights(
    tiny: str, rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A KeyboardInterrupt between two optimizer steps of epoch 1 saves the state there; the
    message says so; `--resume` ends at the weights of an uninterrupted run."""
    from lexsem.train import batches
    from lexsem.train.loop import Trainer, TrainingInterrupted

    whole = Trainer(config(tiny, rendered, tmp_path / "whole")).run()
    real = batches.epoch_batches

    def interrupted(*args: Any, **kw: Any) -> Any:
        for k, batch in enumerate(real(*args, **kw)):
            if k == 2:
                raise KeyboardInterrupt
            yield batch

    monkeypatch.setattr(batches, "epoch_batches", interrupted)
    with pytest.raises(TrainingInterrupted) as err:
        Trainer(config(tiny, rendered, tmp_path / "cut")).run()
    assert err.value.step == 2 and err.value.saved and "--resume continues" in err.value.message()
    monkeypatch.setattr(batches, "epoch_batches", real)
    resumed = Trainer(config(tiny, rendered, tmp_path / "cut")).run(resume=True)
    assert resumed.steps == whole.steps
    a, b = weights(whole.final), weights(resumed.final)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_saved_checkpoint_spec_says_the_activation_it_trained_with(
    tiny: str, tmp_path: Path
) -> None:
    """An open_clip checkpoint alone does not say its activation: the saved spec carries the
    `quick_gelu` the model ran, so it reloads with that activation and no warning, whether
    the training spec gave it (QuickGELU on an arch that builds GELU) or not."""
    import warnings

    from lexsem.models.backends.openclip.quickgelu import QuickGeluWarning
    from lexsem.models.factory import load_model
    from lexsem.train.towers import towers_of

    bare = tiny.partition("?")[0]
    for spec, want in ((bare + "?quick_gelu=true", True), (bare, False)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", QuickGeluWarning)  # the bare checkpoint's: unknown
            encoder = load_model(spec, device="cpu")
            towers = towers_of(encoder)
        assert encoder.quick_gelu is want
        saved = towers.save(tmp_path / f"{want}.pt", towers.module.state_dict())
        assert saved.endswith(f"?quick_gelu={str(want).lower()}"), saved
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again = load_model(saved, device="cpu")
        assert again.quick_gelu is want and again.fingerprint["activation"] == (
            "QuickGELU" if want else "GELU"
        )
