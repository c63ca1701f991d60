"""Artifact detectors: is a caption or an image natural or generated? (BiVLC, §5.4, Table 5 and
App. E: CLIP_Det and CLIP_TROHN-IMG/Det.)

A detector is a sigmoid neuron on the frozen text (EOT) or image (CLS) embedding of a CLIP
model — any dual encoder lexsem trains (`openclip:`, `clip:`; `lexsem.train.towers`) — trained
with BCE and Adam on natural vs generated items, and selected on validation accuracy
(`lexsem.train.artifact_head` holds the procedure). `DetectorConfig` has the paper's settings
as defaults: Adam at lr 1e-6 (betas 0.9/0.999, eps 1e-8, no weight decay), 400 rows a batch,
10 epochs for the text head and 1 for the image head, seed 42 (the reference scripts' default).

The training data is a training manifest (`lexsem.train.manifest`): the natural side of a row
is its ``image`` / ``caption``, the generated side its ``negative_image`` /
``negative_image_caption`` (TROHN-Img's negative image and negative caption:
`lexsem.train.trohn.trohn_img_manifest` writes them from the published dataset, a build's
``train_manifest`` stage from a build). A row without a negative image caption gives the text
head its first ``negatives`` caption (TROHN-Text rows); a row without the side a head needs is
left out and counted. The manifest's ``train`` rows train, its ``dev`` rows select, as the
reference trains on TROHN-Img's train split and selects on its validation split. A manifest
without ``dev`` rows (`lexsem train-data`'s default) has its validation rows drawn from its
``train`` rows: `val_fraction` of them (0.2), as `lexsem train --val-fraction` draws BiVLC's
(`lexsem.train.validation.held_out_split`: datasets' ``train_test_split(test_size, seed)``
with the detector's seed), the same rows for both heads; the record says which.

A detector head fits the base model it was trained on: a head whose size is not the base
model's embedding size (its files replaced, its record edited) is a `ModelError` naming both
sizes when it is first used (`lexsem.models.detector_heads.DetectorHead.probs`).

`train_detectors(config)` writes ``text.safetensors`` / ``image.safetensors`` and their JSON
records in `config.out` (`lexsem.models.detector_heads`), read back by the ``artifact:``
backend (`lexsem eval -m artifact:DIR`) and by `lexsem.train.artifact_eval`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from lexsem.errors import DataError
from lexsem.train.config import EvalPlaces

__all__ = ["DetectorConfig", "DetectorResult", "detector_pairs", "train_detectors"]

#: Training and validation split names of a manifest.
TRAIN_SPLIT, VAL_SPLIT = "train", "dev"


class DetectorConfig(EvalPlaces):
    """What `train_detectors` trains; every field has the CLI's default (BiVLC's, App. E)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str = Field(
        "openclip:ViT-B-32-quickgelu/openai",
        description="The frozen dual encoder: openclip:ARCH/TAG, openclip:ARCH@CKPT or "
        "clip:FOLDER.",
    )
    manifest: Path = Field(description="Training manifest (JSONL or Parquet) with a dev split.")
    out: Path = Field(description="The detector folder.")
    kinds: tuple[Literal["text", "image"], ...] = Field(
        ("text", "image"), min_length=1, description="Which heads to train: text, image."
    )
    text_epochs: int = Field(10, ge=1, description="Epochs of the text head.")
    image_epochs: int = Field(1, ge=1, description="Epochs of the image head.")
    batch_size: int = Field(400, ge=1, description="Rows a batch (each: a natural and a "
                            "generated item).")  # fmt: skip
    lr: float = Field(1e-6, gt=0, description="Adam learning rate.")
    betas: tuple[float, float] = Field((0.9, 0.999), description="Adam betas.")
    eps: float = Field(1e-8, gt=0, description="Adam epsilon.")
    seed: int = Field(42, ge=0, le=2**63 - 1, description="Seed of the head's init and order.")
    embed_batch: int = Field(256, ge=1, description="Items a batch when embedding.")
    val_fraction: float = Field(
        0.2,
        gt=0,
        lt=1,
        description="Share of the train rows held out to select on when the manifest has no "
        "dev rows (datasets' train_test_split with --seed).",
    )

    def epochs(self, kind: str) -> int:
        return self.text_epochs if kind == "text" else self.image_epochs


@dataclass(frozen=True)
class DetectorPairs:
    """One head's (natural, generated) item pairs per split, and the rows left out."""

    train: list[tuple[str, str]]
    validation: list[tuple[str, str]]
    left_out: int


@dataclass(frozen=True)
class DetectorResult:
    folder: Path
    records: dict[str, dict[str, Any]]  # kind -> its record


def detector_pairs(examples: Sequence[Any], kind: str) -> DetectorPairs:
    """The (natural, generated) captions (`kind` text) or image references (image) of the
    manifest `examples`, by split (see the module doc)."""
    out: dict[str, list[tuple[str, str]]] = {TRAIN_SPLIT: [], VAL_SPLIT: []}
    left_out = 0
    for ex in examples:
        if kind == "text":
            generated = ex.negative_image_caption or (ex.negatives[0] if ex.negatives else None)
            natural = ex.caption
        else:
            generated, natural = ex.negative_image, ex.image
        if generated is None:
            left_out += 1
            continue
        out[ex.split].append((natural, generated))
    return DetectorPairs(out[TRAIN_SPLIT], out[VAL_SPLIT], left_out)


def with_validation_rows(
    examples: Sequence[Any], config: DetectorConfig
) -> tuple[list[Any], dict[str, Any]]:
    """`examples` with validation rows, and how they were chosen (module doc): the manifest's
    own dev rows, else `config.val_fraction` of its train rows drawn with `config.seed`."""
    from lexsem.train.validation import held_out_split

    if any(ex.split == VAL_SPLIT for ex in examples):
        return list(examples), {"from": "the manifest's dev rows"}
    train = [k for k, ex in enumerate(examples) if ex.split == TRAIN_SPLIT]
    try:
        _, held = held_out_split(len(train), config.val_fraction, config.seed)
    except ValueError as exc:
        raise DataError(f"{config.manifest}: no dev rows, and {exc}") from None
    dev = {train[k] for k in held}
    out = [replace(ex, split=VAL_SPLIT) if k in dev else ex for k, ex in enumerate(examples)]
    return out, {"from": "train rows held out (no dev rows)", "fraction": config.val_fraction,
                 "seed": config.seed, "rows": len(dev)}  # fmt: skip


def _to(tokens: Any, device: Any) -> Any:
    if isinstance(tokens, dict):
        return {k: v.to(device) for k, v in tokens.items()}
    return tokens.to(device)


def embed_unique(
    values: Sequence[str], embed: Callable[[list[str]], Any], batch: int
) -> dict[str, Any]:
    """value -> its embedding (a float32 CPU tensor row), each distinct value embedded once."""
    import torch

    unique = list(dict.fromkeys(values))
    out: dict[str, Any] = {}
    with torch.inference_mode():
        for start in range(0, len(unique), batch):
            chunk = unique[start : start + batch]
            feats = embed(chunk).float().cpu()
            out.update(zip(chunk, feats, strict=True))
    return out


def text_embedder(towers: Any) -> Callable[[list[str]], Any]:
    device = towers.encoder.device
    return lambda texts: towers.text_features(_to(towers.tokens(texts), device))


def image_embedder(towers: Any, images: Any) -> Callable[[list[str]], Any]:
    import torch

    from lexsem.images.decode import decode_image

    device = towers.encoder.device

    def embed(refs: list[str]) -> Any:
        pixels = []
        for ref in refs:
            try:
                image = decode_image(images.read(ref), max_pixels=images.max_pixels, ref=ref)
            except Exception as exc:  # any failure to read or decode: named
                raise DataError(f"image {ref!r}: cannot be read ({exc})") from None
            pixels.append(towers.preprocess(image))
        return towers.image_features(torch.stack(pixels).to(device))

    return embed


def _matrices(pairs: list[tuple[str, str]], table: dict[str, Any]) -> tuple[Any, Any]:
    import torch

    if not pairs:
        return torch.zeros(0, 1), torch.zeros(0, 1)
    return (torch.stack([table[a] for a, _ in pairs]), torch.stack([table[b] for _, b in pairs]))


def _settings(c: DetectorConfig, kind: str) -> dict[str, Any]:
    return {"epochs": c.epochs(kind), "batch_size": c.batch_size, "optimizer": "Adam",
            "lr": c.lr, "betas": list(c.betas), "eps": c.eps, "weight_decay": 0.0,
            "loss": "BCELoss", "selection": "first epoch of highest validation accuracy",
            "embed_batch": c.embed_batch}  # fmt: skip


def _image_store(c: DetectorConfig) -> Any:
    from lexsem.evaluator import attach_embedded_images
    from lexsem.images.image_store import ImageStore
    from lexsem.paths import cache_dir

    store = ImageStore(coco_val2017=c.coco_val2017, coco_train2017=c.coco_train2017,
                       image_root=c.image_root, cache_root=cache_dir(c.cache_dir))  # fmt: skip
    attach_embedded_images(store)
    return store


def train_detectors(
    config: DetectorConfig, *, echo: Callable[[str], None] | None = None
) -> DetectorResult:
    """Train the heads `config.kinds` and write them to `config.out` (module doc)."""
    from lexsem._version import __version__
    from lexsem.models.detector_heads import save_head
    from lexsem.models.factory import load_model
    from lexsem.train.artifact_head import train_head
    from lexsem.train.manifest import read_manifest
    from lexsem.train.towers import towers_of

    say = echo or (lambda _text: None)
    c = config
    images = _image_store(c)
    manifest = read_manifest(c.manifest, images, check_images="image" in c.kinds)
    examples, validation = with_validation_rows(manifest.examples, c)
    pairs = {kind: detector_pairs(examples, kind) for kind in c.kinds}
    for kind, p in pairs.items():
        if not p.train or not p.validation:
            raise DataError(
                f"{c.manifest}: the {kind} detector needs rows with a generated {kind} in both "
                f"the train and the dev split (found {len(p.train)} train, "
                f"{len(p.validation)} dev; {p.left_out} rows have none)"
            )
    encoder = load_model(c.model, device=c.device, dtype="fp32")
    towers = towers_of(encoder)
    towers.module.eval()
    for param in towers.module.parameters():
        param.requires_grad_(False)
    records: dict[str, dict[str, Any]] = {}
    for kind in c.kinds:
        p = pairs[kind]
        embed = text_embedder(towers) if kind == "text" else image_embedder(towers, images)
        values = [v for pair in (*p.train, *p.validation) for v in pair]
        say(f"{kind}: embedding {len(dict.fromkeys(values))} items")
        table = embed_unique(values, embed, c.embed_batch)
        (nat, gen), (vnat, vgen) = _matrices(p.train, table), _matrices(p.validation, table)
        res = train_head(nat, gen, vnat, vgen, epochs=c.epochs(kind), batch_size=c.batch_size,
                         lr=c.lr, betas=c.betas, eps=c.eps, seed=c.seed)  # fmt: skip
        for e in res.epochs:
            say(f"{kind} epoch {e.epoch}: train acc {e.train_accuracy:.4f}, validation acc "
                f"{e.val_accuracy:.4f}")  # fmt: skip
        record = {
            "lexsem_version": __version__,
            "kind": kind,
            "base_model": {"spec": c.model, "fingerprint": encoder.fingerprint},
            "data": {
                "manifest": str(c.manifest),
                "sha256": manifest.sha256,
                "images_sha256": manifest.images_sha256,
                "train_rows": len(p.train),
                "validation_rows": len(p.validation),
                "left_out_rows": p.left_out,
                "validation": validation,
            },
            "settings": _settings(c, kind),
            "seed": c.seed,
            "embedding_dim": int(nat.shape[1]),
            "validation_accuracy": [e.val_accuracy for e in res.epochs],
            **res.as_record(),
        }
        save_head(c.out, kind, res.weight, res.bias, record)
        records[kind] = record
    return DetectorResult(c.out, records)
