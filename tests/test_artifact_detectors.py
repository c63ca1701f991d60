"""Artifact detectors (BiVLC, §5.4, Table 5, App. E): the head's training against a hand-written
BCE/Adam loop, the reference's retrieval rule against a hand-computed table (ties included),
the `artifact:` pair score against the rule it expresses, and the whole path — `lexsem
train-detector` on a tiny random CLIP and generated images, `lexsem eval -m artifact:DIR` and
the reference evaluation on a small BiVLC-format benchmark."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from lexsem.cli.app import app
from lexsem.models.backends.artifact import pair_score
from lexsem.tasks.quad import quad_hits
from lexsem.train.artifact_eval import detection_accuracy, reference_pair_hits, reference_quad_hits

runner = CliRunner()


# -- the head's training: a hand-written loop on the same seed -------------------------------
def _hand_loop(nat: Any, gen: Any, vnat: Any, vgen: Any, *, epochs: int, batch: int, lr: float,
               seed: int) -> tuple[Any, Any, list[float], int]:  # fmt: skip
    """BiVLC's detector training written out: Linear init from a seeded generator, a row
    order per epoch, batches natural-then-generated, BCE by its formula, Adam by its update
    (betas 0.9/0.999, eps 1e-8), validation accuracy as the mean of per-batch accuracies."""
    import torch

    g = torch.Generator().manual_seed(seed)
    d = nat.shape[1]
    bound = 1 / math.sqrt(d)
    w = (torch.rand(1, d, generator=g) * 2 - 1) * bound
    b = (torch.rand(1, generator=g) * 2 - 1) * bound
    m = [torch.zeros_like(w), torch.zeros_like(b)]
    v = [torch.zeros_like(w), torch.zeros_like(b)]
    t = 0
    accs: list[float] = []
    best = (-1.0, -1, None, None)
    for _epoch in range(epochs):
        order = torch.randperm(len(nat), generator=g)
        for s in range(0, len(nat), batch):
            rows = order[s : s + batch]
            x = torch.cat([nat[rows], gen[rows]])
            y = torch.cat([torch.zeros(len(rows), 1), torch.ones(len(rows), 1)])
            wg, bg = w.clone().requires_grad_(), b.clone().requires_grad_()
            p = torch.sigmoid(x @ wg.T + bg)
            loss = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
            loss.backward()
            t += 1
            new = []
            for k, (param, grad) in enumerate(((w, wg.grad), (b, bg.grad))):
                m[k] = 0.9 * m[k] + 0.1 * grad
                v[k] = 0.999 * v[k] + 0.001 * grad * grad
                mhat, vhat = m[k] / (1 - 0.9**t), v[k] / (1 - 0.999**t)
                new.append(param - lr * mhat / (vhat.sqrt() + 1e-8))
            w, b = new
        batch_accs = []
        for s in range(0, len(vnat), batch):
            x = torch.cat([vnat[s : s + batch], vgen[s : s + batch]])
            n = len(vnat[s : s + batch])
            y = torch.cat([torch.zeros(n, 1), torch.ones(n, 1)])
            p = torch.sigmoid(x @ w.T + b)
            batch_accs.append(float((torch.round(p) == y).float().mean()))
        accs.append(sum(batch_accs) / len(batch_accs))
        if accs[-1] > best[0]:
            best = (accs[-1], _epoch, w.clone(), b.clone())
    return best[2], best[3], accs, best[1]


@pytest.mark.torch
def test_head_training_is_the_hand_written_bce_adam_loop() -> None:
    import torch

    from lexsem.train.artifact_head import train_head

    gen_ = torch.Generator().manual_seed(0)
    d = 6
    nat = torch.randn(23, d, generator=gen_) + 0.3
    gen = torch.randn(23, d, generator=gen_) - 0.3
    vnat = torch.randn(9, d, generator=gen_) + 0.3
    vgen = torch.randn(9, d, generator=gen_) - 0.3
    res = train_head(nat, gen, vnat, vgen, epochs=4, batch_size=5, lr=0.05, seed=7)
    w, b, accs, best = _hand_loop(nat, gen, vnat, vgen, epochs=4, batch=5, lr=0.05, seed=7)
    assert [e.val_accuracy for e in res.epochs] == pytest.approx(accs, abs=1e-12)
    assert res.best_epoch == best
    assert res.steps == 4 * 5  # ceil(23 / 5) batches an epoch
    torch.testing.assert_close(res.weight, w, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(res.bias, b, rtol=1e-5, atol=1e-6)
    # it learned: the selected head separates the validation rows better than chance
    assert max(accs) > 0.6


# -- the reference's retrieval rule: a table computed by hand --------------------------------
# (c0, c1, i0, i1) -> Ipos2T, Ineg2T, Tpos2I, Tneg2I as Detector_evaluation_BiVLC.py decides:
# Ipos2T = round(i0)==0 & c0<c1; Ineg2T = round(i1)==1 & c0<c1;
# Tpos2I = round(c0)==0 & i0<i1; Tneg2I = round(c1)==1 & i0<i1
RULE_TABLE = [
    ((0.1, 0.9, 0.2, 0.8), (1, 1, 1, 1)),  # everything right
    ((0.9, 0.1, 0.2, 0.8), (0, 0, 0, 0)),  # captions inverted (c0 > c1) and c0 generated
    ((0.3, 0.3, 0.2, 0.8), (0, 0, 1, 0)),  # caption tie: no I2T; c1 = 0.3 rounds to natural
    ((0.1, 0.9, 0.4, 0.4), (1, 0, 0, 0)),  # image tie: no T2I; i1 = 0.4 detected natural
    ((0.5, 0.7, 0.5, 0.6), (1, 1, 1, 1)),  # exact 0.5 rounds to 0 (natural)
    ((0.2, 0.4, 0.7, 0.9), (0, 1, 1, 0)),  # i0 misdetected: no Ipos2T; c1 detected natural
    ((0.6, 0.9, 0.1, 0.3), (1, 0, 0, 1)),  # c0 misdetected: no Tpos2I; i1 misdetected
    ((0.4, 0.2, 0.7, 0.9), (0, 0, 1, 0)),  # i0 misdetected and captions inverted
    ((0.6, 0.9, 0.3, 0.1), (1, 0, 0, 0)),  # c0 misdetected and images inverted
]


def test_reference_rule_matches_the_hand_table() -> None:
    probs = np.array([row for row, _ in RULE_TABLE], dtype=np.float32)
    hits = reference_quad_hits(probs[:, 0], probs[:, 1], probs[:, 2], probs[:, 3])
    want = np.array([w for _, w in RULE_TABLE], dtype=bool)
    got = np.stack([hits[k] for k in ("ipos2t", "ineg2t", "tpos2i", "tneg2i")], axis=1)
    assert got.tolist() == want.tolist()
    assert hits["i2t"].tolist() == [True, False, False, False, True, False, False, False, False]
    assert hits["t2i"].tolist() == [True, False, False, False, True, False, False, False, False]
    assert hits["group"].tolist() == hits["i2t"].tolist()
    assert reference_pair_hits(np.array([0.1, 0.5, 0.7]), np.array([0.2, 0.5, 0.3])).tolist() == [
        True, False, False]  # fmt: skip
    # 0.5 counts as natural: 3 of 4 right
    assert detection_accuracy(np.array([0.5, 0.7]), np.array([0.51, 0.9])) == 0.75


def _same_type_rule(c0: float, c1: float, i0: float, i1: float) -> tuple[bool, ...]:
    """BiVLC's rule as a retrieval system that never sees the labels: the query's detected
    type (round, 0.5 -> natural) picks the candidate rated most of that type; a tie picks
    none. Ipos2T, Ineg2T, Tpos2I, Tneg2I."""

    def pick(query: float, a: float, b: float) -> int | None:  # 0 = a, 1 = b
        if a == b:
            return None
        generated = round(query) == 1 and query != 0.5
        return int(b > a) if generated else int(b < a)

    return (pick(i0, c0, c1) == 0, pick(i1, c0, c1) == 1,
            pick(c0, i0, i1) == 0, pick(c1, i0, i1) == 1)  # fmt: skip


def test_pair_score_is_the_same_type_rule_and_differs_from_the_reference_only_as_documented() -> (
    None
):
    probs = np.array([row for row, _ in RULE_TABLE], dtype=np.float32)
    c0, c1, i0, i1 = probs.T
    # Winoground's comparisons on s(image, caption) = u_image * u_caption, stored as float32
    s = {(a, b): pair_score(cb, ia).astype(np.float32) for a, ia in ((0, i0), (1, i1))
         for b, cb in ((0, c0), (1, c1))}  # fmt: skip
    hits = quad_hits(s[0, 0], s[0, 1], s[1, 0], s[1, 1], "strict")
    got = np.stack([hits[k].hits for k in ("ipos2t", "ineg2t", "tpos2i", "tneg2i")], axis=1)
    want = np.array([_same_type_rule(*map(float, row)) for row in probs])
    assert got.tolist() == want.tolist()
    ref = reference_quad_hits(c0, c1, i0, i1)
    ref_parts = np.stack([ref[k] for k in ("ipos2t", "ineg2t", "tpos2i", "tneg2i")], axis=1)
    # the pair score solves everything the reference does, and more only where the query is
    # misdetected and the candidates are ranked the wrong way round
    assert (got | ref_parts).tolist() == got.tolist()
    extra = got & ~ref_parts
    assert extra[7].tolist() == [True, False, False, False]  # i0 read generated, c0 > c1
    assert extra[8].tolist() == [False, False, True, False]  # c0 read generated, i0 > i1
    assert not extra[:7].any()


# -- the whole path on a tiny random CLIP -----------------------------------------------------
N_ROWS = 40


def _images(folder: Path, k: int) -> tuple[str, str]:
    """A "natural" image (dark Gaussian noise) and a "generated" one (bright uniform noise)."""
    from PIL import Image

    rng = np.random.default_rng(k)
    nat = np.clip(rng.normal(60, 20, (32, 32, 3)), 0, 255).astype(np.uint8)
    gen = rng.integers(120, 256, (32, 32, 3)).astype(np.uint8)
    Image.fromarray(nat).save(folder / f"n{k}.png")
    Image.fromarray(gen).save(folder / f"g{k}.png")
    return f"n{k}.png", f"g{k}.png"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from builders.tiny_dual_models import write_tiny_openclip

    root = tmp_path_factory.mktemp("artifact")
    spec = write_tiny_openclip(root / "model", "tinyartifact")
    (root / "img").mkdir()
    rows = []
    for k in range(N_ROWS):
        nat, gen = _images(root / "img", k)
        rows.append({"image": f"manifest:img/{nat}", "caption": f"a photo of a dog number {k}",
                     "negative_image": f"manifest:img/{gen}",
                     "negative_image_caption": f"zq xv kk {k} pp",
                     "split": "dev" if k % 4 == 0 else "train"})  # fmt: skip
    manifest = root / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = root / "detector"
    res = runner.invoke(app, ["train-detector", str(manifest), "-o", str(out), "-m", spec,
                              "--lr", "0.1", "--text-epochs", "3", "--image-epochs", "2",
                              "--batch-size", "8", "--seed", "3", "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    return {"root": root, "spec": spec, "manifest": manifest, "out": out, "rows": rows,
            "output": res.output}  # fmt: skip


@pytest.mark.torch
def test_train_detector_writes_heads_and_records(trained: dict[str, Any]) -> None:
    import hashlib

    from lexsem.models.detector_heads import load_head

    out = trained["out"]
    assert sorted(p.name for p in out.iterdir()) == [
        "image.json", "image.safetensors", "text.json", "text.safetensors"]  # fmt: skip
    for kind, epochs in (("text", 3), ("image", 2)):
        head = load_head(out, kind)
        rec = head.record
        assert rec["base_model"]["spec"] == trained["spec"]
        assert rec["data"]["sha256"] == hashlib.sha256(trained["manifest"].read_bytes()).hexdigest()
        assert (rec["data"]["train_rows"], rec["data"]["validation_rows"]) == (30, 10)
        assert rec["settings"]["lr"] == 0.1 and rec["settings"]["batch_size"] == 8
        assert rec["seed"] == 3 and len(rec["validation_accuracy"]) == epochs
        best = rec["best_epoch"]
        assert rec["validation_accuracy"][best] == max(rec["validation_accuracy"])
        assert rec["validation_accuracy"].index(max(rec["validation_accuracy"])) == best
        assert rec["validation_accuracy"][best] >= 0.9  # the noise families are learnable
    assert "text: epoch" in trained["output"] and "image: epoch" in trained["output"]


@pytest.mark.torch
def test_text_head_equals_training_on_embeddings_computed_directly(trained: dict[str, Any]) -> None:
    """The saved text head is `train_head` on open_clip's own `encode_text` of the captions."""
    import open_clip
    import torch

    from lexsem.models.detector_heads import load_head
    from lexsem.train.artifact_head import train_head

    folder = trained["root"] / "model"
    model = open_clip.create_model("tinyartifact")
    model.load_state_dict(torch.load(folder / "init.pt", weights_only=True))
    model.eval()
    tok = open_clip.get_tokenizer("tinyartifact")

    def emb(texts: list[str]) -> Any:
        with torch.no_grad():
            return model.encode_text(tok(texts)).float()

    rows = trained["rows"]
    train = [r for r in rows if r["split"] == "train"]
    dev = [r for r in rows if r["split"] == "dev"]
    res = train_head(
        emb([r["caption"] for r in train]), emb([r["negative_image_caption"] for r in train]),
        emb([r["caption"] for r in dev]), emb([r["negative_image_caption"] for r in dev]),
        epochs=3, batch_size=8, lr=0.1, seed=3,
    )  # fmt: skip
    head = load_head(trained["out"], "text")
    torch.testing.assert_close(head.weight, res.weight, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(head.bias, res.bias, rtol=1e-4, atol=1e-5)


def _bench(trained: dict[str, Any]) -> Path:
    """A BiVLC-format parquet: natural/generated image and caption per item; items 6-7 have
    their captions exchanged (the natural caption reads as generated), item 8 its images."""
    from builders.hf_parquet import image_cell, write_parquet

    rows, img = trained["rows"], trained["root"] / "img"
    n = 10
    cap = [r["caption"] for r in rows[:n]]
    neg = [r["negative_image_caption"] for r in rows[:n]]
    nat = [img / f"n{k}.png" for k in range(n)]
    gen = [img / f"g{k}.png" for k in range(n)]
    for k in (6, 7):
        cap[k], neg[k] = neg[k], cap[k]
    nat[8], gen[8] = gen[8], nat[8]
    path = trained["root"] / "mini_bivlc.parquet"
    write_parquet(path, {
        "image": [image_cell(p.read_bytes()) for p in nat], "caption": cap,
        "negative_caption": neg, "negative_image": [image_cell(p.read_bytes()) for p in gen],
        "type": ["replace"] * n, "subtype": ["obj"] * n,
    })  # fmt: skip
    return path


@pytest.mark.torch
def test_eval_artifact_backend_end_to_end(trained: dict[str, Any]) -> None:
    """`Evaluator(config).run("artifact:DIR")` on a BiVLC-format file: its per-item hits are
    the same-type rule on the detectors' probabilities; `evaluate_detectors` gives the
    reference's numbers from the same probabilities."""
    import torch

    from lexsem.config import EvalConfig
    from lexsem.evaluator import Evaluator
    from lexsem.images.decode import decode_image
    from lexsem.models.factory import load_model
    from lexsem.train.artifact_eval import evaluate_detectors

    path = _bench(trained)
    sel = f"bivlc:{path}"
    spec = f"artifact:{trained['out']}"
    run = Evaluator(EvalConfig(benchmarks=[sel], n_boot=50, num_workers=0)).run(spec)
    table = run.items.to_pylist()
    by_metric: dict[str, dict[str, bool]] = {}
    for r in table:
        by_metric.setdefault(r["metric"], {})[r["item_id"]] = bool(r["hit"])

    scorer = load_model(spec)
    import pyarrow.parquet as pq

    data = pq.read_table(path).to_pylist()

    def img_p(cells: list[dict[str, Any]]) -> np.ndarray:
        px = [scorer.preprocess(decode_image(c["bytes"])) for c in cells]
        return scorer.image_probs(torch.stack(px))

    c0 = scorer.text_probs([d["caption"] for d in data])
    c1 = scorer.text_probs([d["negative_caption"] for d in data])
    i0 = img_p([d["image"] for d in data])
    i1 = img_p([d["negative_image"] for d in data])
    assert sorted(by_metric["i2t"], key=int) == [str(k) for k in range(10)]
    rule = [_same_type_rule(float(a), float(b), float(c), float(d))
            for a, b, c, d in zip(c0, c1, i0, i1, strict=True)]  # fmt: skip
    for k, r in enumerate(rule):
        assert by_metric["i2t"][str(k)] == (r[0] and r[1]), k
        assert by_metric["t2i"][str(k)] == (r[2] and r[3]), k
        assert by_metric["group"][str(k)] == all(r), k
    # the stored scores are the pair score of the probabilities
    s00 = {r["item_id"]: r["s_i0_c0"] for r in table if r["metric"] == "group"}
    want = pair_score(c0, i0).astype(np.float32)
    assert [s00[str(k)] for k in range(10)] == pytest.approx(want.tolist(), rel=1e-5)
    assert run.accuracy(run.record.benchmarks[0].name, "i2t") == pytest.approx(
        100 * np.mean([r[0] and r[1] for r in rule])
    )
    # the swapped items are not solved
    assert sum(by_metric["group"].values()) <= 7

    found = evaluate_detectors(trained["out"], sel, num_workers=0)
    ref = reference_quad_hits(c0, c1, i0, i1)
    assert found["items"] == 10
    for name in ("i2t", "t2i", "group", "ipos2t", "ineg2t", "tpos2i", "tneg2i"):
        assert found[name] == pytest.approx(round(100 * float(np.mean(ref[name])), 2))
    assert found["text_detection_accuracy"] == pytest.approx(
        round(100 * detection_accuracy(c0, c1), 2))  # fmt: skip
    assert found["image_detection_accuracy"] == pytest.approx(
        round(100 * detection_accuracy(i0, i1), 2))  # fmt: skip


@pytest.mark.torch
def test_artifact_backend_errors(tmp_path: Path, trained: dict[str, Any]) -> None:
    from lexsem.errors import ModelError
    from lexsem.models.factory import load_model

    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "x.txt").write_text("x")
    with pytest.raises(ModelError, match=r"text\.safetensors: no text detector here"):
        load_model(f"artifact:{tmp_path / 'empty'}")
    with pytest.raises(ModelError, match=r"images=.*expected detect or natural"):
        load_model(f"artifact:{trained['out']}?images=maybe")
    natural = load_model(f"artifact:{trained['out']}?images=natural")
    assert natural.fingerprint != load_model(f"artifact:{trained['out']}").fingerprint


def test_train_detector_refuses_a_folder_holding_files_and_the_manifest(tmp_path: Path) -> None:
    """Before any work: an --out that holds files needs --force; the manifest is never --out."""
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text('{"image": "a.png", "caption": "x", "split": "train"}\n')
    out = tmp_path / "detector"
    out.mkdir()
    (out / "text.safetensors").write_bytes(b"mine")
    res = runner.invoke(app, ["train-detector", str(manifest), "-o", str(out), "-m", "x:y"])
    assert res.exit_code == 2 and "already holds files" in res.output, res.output
    assert (out / "text.safetensors").read_bytes() == b"mine"
    res = runner.invoke(app, ["train-detector", str(manifest), "-o", str(tmp_path), "-m", "x:y"])
    assert res.exit_code == 2 and "an input of this command" in res.output, res.output


@pytest.mark.torch
def test_a_head_that_does_not_fit_its_base_model_is_one_error_naming_both_sizes(
    tmp_path: Path, trained: dict[str, Any]
) -> None:
    """A text head of another size than the base model's embeddings: one `error:` line naming
    both sizes (not torch's `mat1 and mat2 shapes`), whether its record says the other size
    (refused when the folder is read) or agrees with the wrong weights (when first used)."""
    import shutil

    import torch
    from safetensors.torch import save_file

    folder = tmp_path / "det"
    shutil.copytree(trained["out"], folder)
    record = json.loads((folder / "text.json").read_text())
    d = record["embedding_dim"]
    save_file({"weight": torch.zeros(1, d + 3), "bias": torch.zeros(1)},
              str(folder / "text.safetensors"))  # fmt: skip
    bench = _bench(trained)
    args = ["eval", "-m", f"artifact:{folder}", "-b", f"bivlc:{bench}", "--n-boot", "0",
            "--num-workers", "0", "-o", str(tmp_path / "run")]  # fmt: skip
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert f"takes {d + 3}-dimensional embeddings but" in res.output
    assert f"trained on {d}-dimensional ones" in res.output
    assert len(res.output.strip().splitlines()) == 1 and "mat1" not in res.output
    (folder / "text.json").write_text(json.dumps({**record, "embedding_dim": d + 3}))
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert f"the text detector head takes {d + 3}-dimensional embeddings" in res.output
    assert f"gives {d}-dimensional ones" in res.output and trained["spec"] in res.output
    # after the progress line of the first batch, whose scoring stops there
    assert res.output.strip().splitlines()[-1].startswith("error: the text detector head")
    assert "Traceback" not in res.output and "mat1" not in res.output
    assert not (tmp_path / "run").exists()


@pytest.mark.torch
def test_a_manifest_without_dev_rows_selects_on_held_out_train_rows(
    tmp_path: Path, trained: dict[str, Any]
) -> None:
    """`train-data`'s default (every row `train`): 0.2 of the rows held out as BiVLC's split
    draws them with the seed, the same rows for both heads, said in the record; another
    --val-fraction holds out another share."""
    from lexsem.models.detector_heads import load_head
    from lexsem.train.validation import held_out_split

    root = trained["root"]
    rows = [{**r, "split": "train"} for r in trained["rows"]]
    manifest = root / "all_train.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for fraction, out in ((None, tmp_path / "a"), (0.5, tmp_path / "b")):
        extra = [] if fraction is None else ["--val-fraction", str(fraction)]
        res = runner.invoke(app, ["train-detector", str(manifest), "-o", str(out), "-m",
                                  trained["spec"], "--lr", "0.1", "--text-epochs", "1",
                                  "--image-epochs", "1", "--batch-size", "8", "--seed", "3",
                                  "-q", *extra])  # fmt: skip
        assert res.exit_code == 0, res.output
        held = len(held_out_split(N_ROWS, fraction or 0.2, 3)[1])
        for kind in ("text", "image"):
            data = load_head(out, kind).record["data"]
            assert (data["train_rows"], data["validation_rows"]) == (N_ROWS - held, held)
            want = {"from": "train rows held out (no dev rows)", "fraction": fraction or 0.2,
                    "seed": 3, "rows": held}  # fmt: skip
            assert data["validation"] == want
    assert load_head(trained["out"], "text").record["data"]["validation"] == {
        "from": "the manifest's dev rows"
    }
    res = runner.invoke(app, ["train-detector", str(manifest), "-o", str(tmp_path / "c"), "-m",
                              trained["spec"], "--val-fraction", "1"])  # fmt: skip
    assert res.exit_code == 2 and "--val-fraction" in res.output, res.output
