"""`Trainer(config).run()`: one fine-tuning run, judged by lexsem's own evaluation.

Before any training: the manifest is read and checked, the training data is compared with
every benchmark the run is judged or selected on (`lexsem.train.leakage`: an overlap is an
error unless `allow_leakage`, and is recorded either way), and the regime's fields are checked
on every example. Then, per epoch: seeded batches (`lexsem.train.batches`), the regime's loss
(`lexsem.train.losses`) on L2-normalised embeddings, AdamW with a cosine schedule after
warm-up (`lexsem.train.optim`), gradient accumulation, the logit scale clamped, mixed precision
on a GPU; after each epoch the model is evaluated by an `Evaluator` that keeps its benchmarks
and decoded images between epochs (the model's fingerprint changes with its weights, so no
embedding of an earlier state is read), and the best epoch on the selection benchmark is kept
— or, with `select="val_in_batch_acc"`, the best epoch on in-batch accuracy over a validation
split, as BiVLC's script selects (`lexsem.train.validation`). The logit scale is clamped when
`clamp_logit_scale` says so; each caption's hard negative is drawn as `negative_draw` says
(`lexsem.train.batches`).

The run's folder: `state.pt` (resumable; `resume=True` continues to the same final weights),
`checkpoints/step-N.pt` (every `checkpoint_every` steps), `best.*` and `final.*` (loadable
by the evaluation backends: `openclip:ARCH@final.pt`, `clip:final`), `eval/` (a run folder
per evaluation), and `train.json` (config, the settings in effect, data sha256, leakage
report, loss curve, per-epoch evaluations and validations, the specs of the checkpoints).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lexsem.errors import DataError, LexsemError
from lexsem.jsonl import read_json
from lexsem.train.config import TrainConfig
from lexsem.train.state import Progress
from lexsem.train.train_progress import TrainProgress

__all__ = ["TrainResult", "Trainer", "TrainingInterrupted", "needs"]

NEEDS = {
    "clip_coco": set(),
    "trohn_text": {"negatives"},
    "trohn_img": {"negative_image"},
    "negclip": {"negatives", "negative_image"},
}


def needs(regime: str, examples: Sequence[Any], where: Any) -> None:
    """Every example has what the regime trains on; a `DataError` naming the first that lacks
    it (before any training). NegCLIP's hard image is itself a training example (a nearest
    neighbour image of COCO) with its caption (`negative_image_caption`), whose negative
    captions are those of that row (that image and that caption)."""
    with_negatives = {(ex.image, ex.caption) for ex in examples if ex.negatives}
    for ex in examples:
        if "negatives" in NEEDS[regime] and not ex.negatives:
            raise DataError(f"{where(ex)}: regime {regime!r} needs a negative caption per example")
        if "negative_image" in NEEDS[regime] and not ex.negative_image:
            raise DataError(f"{where(ex)}: regime {regime!r} needs a negative image per example")
        hard = (ex.negative_image, ex.negative_image_caption)
        if regime == "negclip" and hard not in with_negatives:
            raise DataError(
                f"{where(ex)}: NegCLIP's hard image {ex.negative_image!r} with its caption "
                f"{ex.negative_image_caption!r} must be a training example with negative "
                "captions of its own (the row of that image and caption gives them)"
            )


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C during training: where the run's `state.pt` lets `--resume` continue."""

    def __init__(self, folder: Path, step: int, saved: bool) -> None:
        super().__init__(str(folder))
        self.folder, self.step, self.saved = folder, step, saved

    def message(self) -> str:
        if not (self.folder / "state.pt").is_file():
            return (
                f"interrupted at step {self.step:,} before any state was saved in "
                f"{self.folder}: the same command without --resume starts over"
            )
        if self.saved:
            return (
                f"interrupted at step {self.step:,}: the state is saved in "
                f"{self.folder / 'state.pt'}; the same command with --resume continues from there"
            )
        return (
            f"interrupted at step {self.step:,} during an optimizer step; "
            f"{self.folder / 'state.pt'} holds the last saved state, the same command with "
            "--resume continues from it"
        )

    def after_image(self) -> str:
        """What to do after the run stopped on an image it could not read."""
        if not (self.folder / "state.pt").is_file():
            return "no state was saved yet: restore the image and start the run again"
        at = f"the state at step {self.step:,} is saved" if self.saved else "its last state stands"
        return f"{at}: restore the image and continue with --resume"


@dataclass
class TrainResult:
    folder: Path
    steps: int
    final: str | None  # the model spec of the final weights (None: stopped before the end)
    best: str | None
    stopped: bool


class Trainer:
    """One training run of `config` (see the module doc)."""

    def __init__(self, config: TrainConfig, *, progress: bool = False) -> None:
        self.config = config
        self.out = Path(config.out)
        self.progress = progress  # show loss, learning rate and evaluations as they come

    # -- setup -----------------------------------------------------------------------------
    def _images(self) -> Any:
        from lexsem.evaluator import attach_embedded_images
        from lexsem.images.image_store import ImageStore
        from lexsem.paths import cache_dir

        c = self.config
        store = ImageStore(coco_val2017=c.coco_val2017, coco_train2017=c.coco_train2017,
                           image_root=c.image_root, cache_root=cache_dir(c.cache_dir))  # fmt: skip
        attach_embedded_images(store)
        return store

    def _dev_benchmark(self, manifest: Any) -> str:
        """The manifest's dev split as a SugarCrepe-format pair benchmark (image, caption, its
        first hard negative caption) written into the run's folder; its selector."""
        import json as _json

        from lexsem.atomic import atomic_open

        rows = [ex for ex in manifest.split("dev") if ex.negatives]
        if not rows:
            raise DataError(
                f"{manifest.path}: --select-on dev needs dev rows with a negative caption "
                "(split: dev)"
            )
        items = {
            str(i): {
                "filename": ex.image,
                "caption": ex.caption,
                "negative_caption": ex.negatives[0],
            }
            for i, ex in enumerate(rows)
        }
        path = self.out / "dev" / "dev.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path, "w", encoding="utf-8") as fh:
            _json.dump(items, fh)
        return f"sugarcrepe:{path}"

    def _benchmarks(self, manifest: Any) -> tuple[list[str], set[str]]:
        """The selectors evaluated every epoch (selection first), and those of the manifest's
        own dev split (`dev`: never compared by the leakage guard, it is training data)."""
        c = self.config
        dev = {self._dev_benchmark(manifest)} if "dev" in c.select_on else set()
        select = [next(iter(dev)) if b == "dev" else b for b in c.select_on]
        return list(dict.fromkeys([*select, *c.judge_on])), dev

    def _evaluator(self, benchmarks: Sequence[str], images: Any = None) -> Any:
        from lexsem.config import EvalConfig
        from lexsem.evaluator import Evaluator

        c = self.config
        cfg = EvalConfig(benchmarks=tuple(benchmarks), data_dir=c.data_dir, cache_dir=c.cache_dir,
                         coco_val2017=c.coco_val2017, coco_train2017=c.coco_train2017,
                         image_root=c.image_root, n_boot=c.n_boot, device=c.device,
                         seed=c.seed, num_workers=0)  # fmt: skip
        return Evaluator(cfg, images=images)

    def _check_out(self, resume: bool) -> None:
        record = self.out / "train.json"
        if resume:
            _resumable(self.out)
            return
        if record.exists() or (self.out / "state.pt").exists():
            raise DataError(
                f"{self.out} holds a training run; resume it (resume=True / --resume) or give "
                "another --out (nothing is overwritten)"
            )

    def _leakage(self, manifest: Any, evaluator: Any, images: Any, dev: set[str]) -> dict[str, Any]:
        from lexsem.train.leakage import check_leakage, raise_on_overlap

        if evaluator is None:
            return {"checked": [], "note": "no benchmark to judge on: nothing compared"}
        judged = [b for b, sel in zip(evaluator.benchmarks(), evaluator.config.benchmarks,
                                      strict=True) if sel not in dev]  # fmt: skip
        report = check_leakage(manifest, judged, images)
        return raise_on_overlap(report, self.config.allow_leakage).to_dict()

    def _validation_split(self, manifest: Any, train: list[Any]) -> tuple[list[Any], list[Any]]:
        """(training rows, validation rows) of a `val_in_batch_acc` run: `val_fraction` of
        the training rows held out as BiVLC's split draws them (the rest kept in file order),
        else the manifest's dev rows; no validation rows for a run selected otherwise."""
        from lexsem.train.validation import held_out_split

        c = self.config
        if c.select != "val_in_batch_acc":
            return train, []
        if c.val_fraction is None:
            val = manifest.split("dev")
            if not val:
                raise DataError(
                    f"{manifest.path}: select val_in_batch_acc needs a validation split: dev "
                    "rows (split: dev) or val_fraction"
                )
            return train, val
        try:
            kept, held = held_out_split(len(train), c.val_fraction, c.seed)
        except ValueError as exc:
            raise DataError(f"{manifest.path}: {exc}") from None
        return [train[i] for i in sorted(kept)], [train[i] for i in held]

    # -- the run ---------------------------------------------------------------------------
    def run(self, *, resume: bool = False) -> TrainResult:
        import torch

        from lexsem.models.factory import load_model
        from lexsem.train.distributed import world_from_env
        from lexsem.train.manifest import read_manifest
        from lexsem.train.optim import adamw, cosine_with_warmup
        from lexsem.train.state import read_state
        from lexsem.train.towers import towers_of

        c = self.config
        self._check_out(resume)
        # a resumed run's record and state are read (and a damaged or unsafe one refused)
        # before anything is loaded
        saved = (_read_record(self.out), read_state(self.out / "state.pt")) if resume else None
        if saved is not None:  # a changed setting or manifest is refused before any work
            _same_settings(saved[0]["config"], json.loads(c.model_dump_json()), self.out)
            _same_manifest(saved[0], c.manifest, None, self.out)
        images = self._images()
        manifest = read_manifest(c.manifest, images)
        if saved is not None:
            _same_manifest(saved[0], c.manifest, manifest.images_sha256, self.out)
        train, val = self._validation_split(manifest, manifest.split("train"))
        if len(train) < c.batch_size:
            raise DataError(
                f"{c.manifest}: {len(train)} training examples, fewer than one batch of "
                f"{c.batch_size}"
            )
        steps_per_epoch = len(train) // c.batch_size // c.accumulate
        if steps_per_epoch == 0:
            raise DataError(
                f"{c.manifest}: {len(train)} training examples make no optimizer step of "
                f"{c.accumulate} batches of {c.batch_size}"
            )
        needs(c.regime, train, manifest.where)
        if val:
            needs(c.regime, val, manifest.where)
        benches, dev = self._benchmarks(manifest)
        evaluator = self._evaluator(benches, images) if benches else None
        leakage = self._leakage(manifest, evaluator, images, dev)
        torch.manual_seed(c.seed)
        encoder = load_model(c.model, device=c.device, dtype="fp32")  # fp32 master weights
        towers = towers_of(encoder)
        world = world_from_env(str(encoder.device))
        if c.lora is not None:
            from lexsem.train.lora import add_lora

            add_lora(towers.module, c.lora)
        optimizer = adamw(towers.module, lr=c.lr, weight_decay=c.weight_decay, betas=c.betas,
                          eps=c.eps)  # fmt: skip
        if c.batch_size % world.size:
            raise LexsemError(f"batch {c.batch_size} does not split over {world.size} processes")
        schedule = cosine_with_warmup(optimizer, c.warmup, c.epochs * steps_per_epoch)
        loop = _Loop(self, towers, optimizer, schedule, world, images, train, evaluator, val,
                     manifest.where)  # fmt: skip
        total = c.epochs * steps_per_epoch
        loop.show = TrainProgress(
            total_steps=min(total, c.max_steps or total), epochs=c.epochs,
            steps_per_epoch=steps_per_epoch, enabled=self.progress and world.main,
        )  # fmt: skip
        if saved is not None:
            loop.resume(*saved)
        else:
            self.out.mkdir(parents=True, exist_ok=True)
            loop.start(manifest, leakage)
        return loop.run()


class _Loop:
    """The state of one run while it trains."""

    def __init__(self, trainer: Trainer, towers: Any, optimizer: Any, schedule: Any, world: Any,
                 images: Any, train: list[Any], evaluator: Any,
                 val: list[Any] | None = None, where: Any = None) -> None:  # fmt: skip
        from lexsem.train.batches import Examples

        self.t, self.c, self.out = trainer, trainer.config, trainer.out
        self.towers, self.optimizer, self.schedule, self.world = towers, optimizer, schedule, world
        self.evaluator = evaluator
        uses_images = trainer.config.regime in ("trohn_img", "negclip")
        rows = [*train, *(val or [])]  # NegCLIP's hard images: rows of either split
        self.data = Examples(train, images, towers.preprocess, images.max_pixels,
                             negative_images=uses_images, rows=rows, where=where)  # fmt: skip
        self.val_data = (
            Examples(val, images, towers.preprocess, images.max_pixels,
                     negative_images=uses_images, rows=rows, where=where)
            if val else None
        )  # fmt: skip
        self.scaler = _scaler(trainer.config.precision, towers.encoder.device)
        self.progress = Progress()
        self.record: dict[str, Any] = {}
        self.show = TrainProgress(total_steps=0, epochs=0, steps_per_epoch=0, enabled=False)
        self._clean = True  # the objects are at a point a saved state resumes from exactly

    # -- bookkeeping -------------------------------------------------------------------------
    def start(self, manifest: Any, leakage: dict[str, Any]) -> None:
        self.record = {
            "config": json.loads(self.c.model_dump_json()),
            "data": {
                "manifest": manifest.describe(),
                "sha256": manifest.sha256,
                "images_sha256": manifest.images_sha256,
            },
            "leakage": leakage,
            "settings": self._settings(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        self._write_record()
        if self.c.judge_on and self.world.main:
            self.progress.evaluations.append(self._evaluate("before"))
            self.show.evaluation(self.progress.evaluations[-1])

    def _settings(self) -> dict[str, Any]:
        """The settings in effect that the config leaves to the regime, and how they are
        drawn."""
        from lexsem.train.batches import NEGATIVE_GENERATOR

        c = self.c
        return {
            "negative_draw": c.draw,
            "negative_generator": NEGATIVE_GENERATOR if c.draw == "per_epoch" else None,
            "clamp_logit_scale": c.clamp_logit_scale,
            "select": c.select,
            "validation_rows": len(self.val_data) if self.val_data is not None else 0,
        }

    def resume(self, record: dict[str, Any], state: dict[str, Any]) -> None:
        """Continue from `train.json`'s `record` and `state.pt`'s `state` (`read_state`)."""
        from lexsem.train.state import restore_state

        self.record = record
        try:
            self.progress = restore_state(state, self.towers.module, self.optimizer,
                                          self.schedule, self.scaler)  # fmt: skip
        except (RuntimeError, ValueError, KeyError, TypeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise DataError(
                f"{self.out / 'state.pt'}: does not fit this run's model and optimizer ({first})"
            ) from None

    def _write_record(self) -> None:
        from lexsem.atomic import atomic_open

        if not self.world.main:
            return
        self.record["progress"] = asdict(self.progress)
        with atomic_open(self.out / "train.json", "w", encoding="utf-8") as fh:
            json.dump(self.record, fh, indent=2, default=str)

    def _save_state(self) -> None:
        from lexsem.train.state import save_state

        if self.world.main:
            save_state(self.out / "state.pt", self.towers.module, self.optimizer, self.schedule,
                       self.progress, self.scaler)  # fmt: skip
            self._write_record()
        self.world.barrier()

    def _weights(self, name: str) -> str | None:
        """Save the current weights as a checkpoint the evaluation backends load; its spec."""
        if not self.world.main:
            return None
        state = self._export_state()
        path = self.out / (f"{name}.pt" if _is_openclip(self.towers) else name)
        path.parent.mkdir(parents=True, exist_ok=True)
        return self.towers.save(path, state)

    def _export_state(self) -> dict[str, Any]:
        if self.c.lora is not None:
            from lexsem.train.lora import merged_state

            return merged_state(self.towers.module)
        return self.towers.module.state_dict()  # written as it is: no copy of the weights

    # -- evaluation ----------------------------------------------------------------------------
    def _evaluate(self, label: str) -> dict[str, Any]:
        module = self.towers.module
        module.eval()
        try:
            run = self.evaluator.run(self.towers.encoder)
        finally:
            module.train()
        name = f"{self.out.name} {label}"  # each evaluation its own row in `lexsem report`
        run.record = run.record.model_copy(
            update={"model": run.record.model.model_copy(update={"name": name})}
        )
        run.save(self.out / "eval" / label, force=True)
        scores: dict[str, float] = {}
        for r in run.record.results:  # the pooled row; a one-subset benchmark has only its own
            key = f"{r.benchmark}/{r.metric}"
            if r.subset == "_micro" or key not in scores:
                scores[key] = r.accuracy
        return {"label": label, "step": self.progress.step, "accuracy": scores,
                "run": str(self.out / "eval" / label)}  # fmt: skip

    def _validate(self, label: str) -> dict[str, Any]:
        """In-batch accuracy and loss on the validation split (`lexsem.train.validation`)."""
        import numpy as np
        import torch

        from lexsem.train.batches import held_out_batches
        from lexsem.train.losses import Batch, batch_loss, contrastive_layout
        from lexsem.train.validation import in_batch_accuracy

        assert self.val_data is not None
        module, device = self.towers.module, self.towers.encoder.device
        accs, losses = [], []
        module.eval()
        try:
            with torch.inference_mode(), self._autocast(device):
                for batch in held_out_batches(self.val_data, self.c.batch_size,
                                              num_workers=self.c.num_workers):  # fmt: skip
                    fields = {k: v.float() for k, v in self._embed(batch, device, False).items()}
                    b = Batch(**fields)
                    accs.append(in_batch_accuracy(*contrastive_layout(self.c.regime, b)))
                    scale = self.towers.logit_scale().float()
                    losses.append(float(batch_loss(self.c.regime, b, scale)))
        finally:
            module.train()
        return {"label": label, "step": self.progress.step, "in_batch_acc": float(np.mean(accs)),
                "loss": float(np.mean(losses)), "batches": len(accs)}  # fmt: skip

    def _select_on_validation(self, validation: dict[str, Any]) -> None:
        best, acc = self.progress.best, validation["in_batch_acc"]
        if best is None or acc > best["accuracy"]:  # BiVLC: a later epoch must be better
            self.progress.best = {"label": validation["label"], "key": "val/in_batch_acc",
                                  "accuracy": acc, "spec": self._weights("best")}  # fmt: skip

    def _select(self, evaluation: dict[str, Any]) -> None:
        if not self.c.select_on:
            return
        acc = evaluation["accuracy"]
        key = self._selection_key(acc)
        best = self.progress.best
        if best is None or acc[key] > best["accuracy"]:
            self.progress.best = {"label": evaluation["label"], "key": key, "accuracy": acc[key],
                                  "spec": self._weights("best")}  # fmt: skip

    def _selection_key(self, acc: dict[str, float]) -> str:
        bench = self.evaluator.benchmarks()[0].spec.name  # the selection benchmark is first
        if self.c.select_metric is not None:
            key = f"{bench}/{self.c.select_metric}"
            if key not in acc:
                raise LexsemError(f"select_metric {key!r} is not among {sorted(acc)}")
            return key
        return next(k for k in acc if k.startswith(f"{bench}/"))

    # -- training ------------------------------------------------------------------------------
    def run(self) -> TrainResult:
        """Train to the end (or `max_steps`); a Ctrl-C saves the state when the run is at a
        point it resumes from exactly, and says where `--resume` continues
        (`TrainingInterrupted`); so does an image that cannot be read mid-run
        (`BatchImageError`, naming it and its manifest line)."""
        from lexsem.train.batches import BatchImageError

        self.show.begin(self.progress.step, self.progress.epoch)
        try:
            return self._train()
        except KeyboardInterrupt:
            raise self._interrupted() from None
        except BatchImageError as exc:
            raise BatchImageError(f"{exc}; {self._interrupted().after_image()}") from None
        finally:
            self.show.close()

    def _train(self) -> TrainResult:
        from lexsem.train.batches import epoch_batches

        c, p = self.c, self.progress
        self.towers.module.train()
        while p.epoch < c.epochs:
            batches = epoch_batches(self.data, c.batch_size, c.seed, p.epoch, skip=p.batch,
                                    num_workers=c.num_workers, draw=c.draw,
                                    multiple=c.accumulate)  # fmt: skip
            for batch in batches:
                self._micro_step(batch)
                if c.max_steps is not None and p.step >= c.max_steps:
                    return self._stop()
            self._end_epoch()
        return self._finish()

    def _interrupted(self) -> TrainingInterrupted:
        """Save the state if the objects are between two optimizer steps (a micro-batch of
        an accumulation or a step cut half-way is not: the state of the last save stands)."""
        saved = False
        if self._clean and self.world.size == 1 and (self.out / "train.json").is_file():
            self._save_state()
            saved = True
        return TrainingInterrupted(self.out, self.progress.step, saved)

    def _micro_step(self, batch: Any) -> None:
        c, p = self.c, self.progress
        self._clean = False
        loss = self._loss(batch) / c.accumulate
        (self.scaler.scale(loss) if self.scaler else loss).backward()
        p.batch += 1
        if p.batch % c.accumulate:
            return  # gradients of this accumulation are in the module only: not resumable
        from lexsem.train.optim import clamp_logit_scale

        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        self.world.average_gradients(self.towers.module)
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.schedule.step()
        self.optimizer.zero_grad(set_to_none=True)
        if c.clamp_logit_scale:
            clamp_logit_scale(self.towers.module)
        p.step += 1
        value = float(loss.detach()) * c.accumulate
        lr = float(self.schedule.get_last_lr()[0])
        p.losses.append({"step": p.step, "epoch": p.epoch, "loss": value, "lr": lr})
        if c.checkpoint_every and p.step % c.checkpoint_every == 0:
            self._weights(f"checkpoints/step-{p.step}")
            self._save_state()
        self._clean = True
        self.show.step(p.losses[-1])

    def _autocast(self, device: Any) -> Any:
        import contextlib

        import torch

        amp = {"amp_bf16": torch.bfloat16, "amp_fp16": torch.float16}.get(self.c.precision)
        return (torch.autocast(device_type=str(device).split(":")[0], dtype=amp) if amp
                else contextlib.nullcontext())  # fmt: skip

    def _loss(self, batch: Any) -> Any:
        from lexsem.train.losses import Batch, batch_loss

        device = self.towers.encoder.device
        with self._autocast(device):
            fields = self._embed(batch, device)
            return batch_loss(self.c.regime, Batch(**fields), self.towers.logit_scale())

    def _embed(self, batch: Any, device: Any, shared: bool = True) -> dict[str, Any]:
        """The regime's embeddings of `batch`: with `shared`, this process's slice of it,
        gathered from all; else the whole batch in this process (validation)."""
        w, t, regime = self.world, self.towers, self.c.regime
        mine = w.local(len(batch.captions)) if shared else slice(None)
        gather = w.gather if shared else (lambda x: x)

        def images(px: Any) -> Any:
            return gather(t.embed_images(px[mine].to(device)))

        def texts(xs: list[str]) -> Any:
            return gather(t.embed_texts(_to(t.tokens(xs[mine]), device)))

        out = {"img": images(batch.pixels), "txt": texts(batch.captions)}
        if regime in ("trohn_text", "negclip"):
            out["neg_txt"] = texts(batch.negatives)
        if regime == "trohn_img":
            out["neg_img"], out["neg_txt"] = images(batch.neg_pixels), texts(batch.neg_captions)
        if regime == "negclip":
            out["hard_img"], out["hard_txt"] = images(batch.neg_pixels), texts(batch.neg_captions)
            out["hard_neg_txt"] = texts(batch.hard_negatives)
        return out

    def _end_epoch(self) -> None:
        p = self.progress
        if self.world.main and self.evaluator is not None:
            evaluation = self._evaluate(f"epoch-{p.epoch + 1}")
            self._clean = False  # the evaluation and the best weights go together
            p.evaluations.append(evaluation)
            self._select(evaluation)
            self._clean = True
            self.show.evaluation(evaluation)
        if self.world.main and self.val_data is not None:
            validation = self._validate(f"epoch-{p.epoch + 1}")
            self._clean = False
            p.validations.append(validation)
            self._select_on_validation(validation)
            self._clean = True
            self.show.validation(validation)
        self._clean = False
        p.epoch += 1
        p.batch = 0
        self._save_state()
        self._clean = True

    def _stop(self) -> TrainResult:
        self._save_state()
        return TrainResult(self.out, self.progress.step, None, None, stopped=True)

    def _finish(self) -> TrainResult:
        final = self._weights("final")
        self.record["final"] = final
        self.record["best"] = self.progress.best
        self.record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self._save_state()
        best = (self.progress.best or {}).get("spec")
        return TrainResult(self.out, self.progress.step, final, best, stopped=False)


def _read_record(out: Path) -> dict[str, Any]:
    """The `train.json` of the run in `out` that is resumed; a `DataError` naming it when it
    is missing or damaged."""
    path = out / "train.json"
    if not path.exists():
        raise DataError(f"nothing to resume in {out}: no train.json")
    record = read_json(path, what="a readable training record")
    if not isinstance(record, dict) or not isinstance(record.get("config"), dict):
        raise DataError(f"{path}: not a training record (no config)")
    return record


def _resumable(out: Path) -> None:
    """`out` is a training run's folder with a saved state; else a `DataError` saying what it
    is."""
    if not out.exists():
        raise DataError(f"nothing to resume: {out} does not exist")
    if not out.is_dir():
        raise DataError(f"nothing to resume: {out} is a file, not a training run's folder")
    if (out / "state.pt").is_file():
        return
    if (out / "run.json").is_file():
        raise DataError(
            f"nothing to resume in {out}: it is an evaluation run's folder (run.json), not a "
            "training run's"
        )
    if (out / "train.json").is_file():
        raise DataError(f"nothing to resume in {out}: no state.pt (the run never saved one)")
    raise DataError(
        f"nothing to resume in {out}: not a training run's folder (no train.json nor state.pt)"
    )


def _same_manifest(
    record: dict[str, Any], manifest: str | Path, images_sha256: str | None, out: Path
) -> None:
    """The manifest (and, given `images_sha256`, its images) is the one the run started with;
    else a one-line `LexsemError` with both digests. A record without a digest is not
    compared."""
    from lexsem.train.manifest import manifest_sha256

    data = record.get("data")
    data = data if isinstance(data, dict) else {}
    if images_sha256 is None:
        then, now, what = data.get("sha256"), manifest_sha256(manifest), "the manifest"
    else:
        then, now, what = data.get("images_sha256"), images_sha256, "an image of the manifest"
    if not isinstance(then, str) or then == now:
        return
    raise LexsemError(
        f"{manifest}: {what} changed since the run in {out} started (sha256 {then[:12]} then, "
        f"{now[:12]} now); resume with the data it started with, or start a new run in another "
        "--out"
    )


RESUME_MAY_CHANGE = {"max_steps", "num_workers", "checkpoint_every"}


def _same_settings(before: dict[str, Any], now: dict[str, Any], out: Path) -> None:
    """A run resumes with the settings it started with (but where it stops and how it
    loads): anything else would end at other weights than the run it continues."""
    changed = sorted(k for k in before if k not in RESUME_MAY_CHANGE and before[k] != now.get(k))
    if changed:
        raise LexsemError(
            f"{out} was started with other settings ({', '.join(changed)}: "
            f"{', '.join(f'{before[k]!r} then, {now.get(k)!r} now' for k in changed)}); resume "
            "with the same settings, or start a new run in another --out"
        )


def _scaler(precision: str, device: Any) -> Any:
    """A gradient scaler for fp16 autocast on a GPU (bf16 and fp32 need none)."""
    if precision != "amp_fp16" or not str(device).startswith("cuda"):
        return None
    import torch

    return torch.amp.GradScaler("cuda")


def _to(tokens: Any, device: Any) -> Any:
    if isinstance(tokens, dict):
        return {k: v.to(device) for k, v in tokens.items()}
    return tokens.to(device)


def _is_openclip(towers: Any) -> bool:
    from lexsem.train.towers import OpenClipTowers

    return isinstance(towers, OpenClipTowers)
