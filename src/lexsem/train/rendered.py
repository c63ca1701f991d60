"""The synthetic scene renderer as a source of training data, disjoint from the evaluation.

`rendered_examples(n, seed, size=...)` yields fresh scenes of the renderer of the `synthetic` /
`synthetic_bi` benchmarks (`lexsem.benchmarks.sources.synthetic_text`, `.synthetic_images`), each
with

- its picture (PNG bytes, `scene_png`) and one true caption (a template of the benchmark);
- hard negative captions, one per kind of the benchmark's negatives that applies to the scene
  (``replace_att``, ``replace_obj``, ``replace_rel``, ``swap_att``, ``swap_obj``; the swaps only
  when the two objects differ in colour and size), each false of the scene;
- a hard negative image with its caption, as `synthetic_bi` builds its quads (BiVLC's
  negative image: BiVLC, §3.1): the scene that one of the negative captions describes
  (`negative_scene`), rendered; the true caption is false of it.

Disjointness from evaluation, by construction: the scene space is finite (10 nouns, 8 colours,
2 sizes, 2 layouts: 46,080 scenes), so a separate seed alone would still draw some evaluation
scenes. Instead the held-out set is computed: every scene of the evaluation generation (the
benchmarks' default seed and size: the scene of each triplet, and the negative scene of each
quad — `evaluation_scenes`) is removed from the pool before it is shuffled (with its own seed
space, ``"lexsem-train-rendered:<seed>"``), and a negative whose scene is held out is dropped.
A caption states both objects in full and their relation, so it is true of exactly one scene:
no training caption, positive or negative, can equal an evaluation caption, and no training
picture can be an evaluation picture (a picture is a function of its scene id); every example is
checked for the captions anyway. No scene is used twice.

`write_rendered` writes N examples as PNG files and a manifest (`lexsem.train.manifest`, images
as ``manifest:images/...``) for ``lexsem train``, with a ``rendered.json`` of provenance.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations, product
from pathlib import Path
from typing import Any

from lexsem.atomic import atomic_open
from lexsem.benchmarks.sources import synthetic_images
from lexsem.benchmarks.sources import synthetic_text as synthetic
from lexsem.benchmarks.sources.synthetic_images import (
    DEFAULT_IMAGE_SIZE,
    negative_scene,
    scene_png,
)
from lexsem.benchmarks.sources.synthetic_text import (
    COLOURS,
    NOUNS,
    OPPOSITE,
    SCENE_RELATIONS,
    SIZES,
    SUBSETS,
    TEMPLATES,
    Caption,
    Scene,
    SceneObject,
)
from lexsem.errors import LexsemError
from lexsem.train.manifest import MANIFEST_ROOT, Example, write_manifest

__all__ = [
    "MAX_IMAGE_SIZE",
    "MAX_RENDER_BYTES",
    "RENDERED_VERSION",
    "RenderedExample",
    "check_rendering",
    "evaluation_captions",
    "evaluation_scenes",
    "render_bytes",
    "rendered_examples",
    "scene_pool",
    "write_rendered",
]

# Bump when the examples for a seed change.
RENDERED_VERSION = 1
_SEED_SPACE = "lexsem-train-rendered"


@dataclass(frozen=True)
class RenderedExample:
    """One training scene: picture, caption, negatives, and a negative picture if any."""

    scene_id: str
    image: bytes
    caption: str
    negatives: tuple[str, ...]
    negative_kinds: tuple[str, ...]  # the benchmark subset each negative is made as
    negative_scene_id: str | None = None
    negative_image: bytes | None = None
    negative_image_caption: str | None = None


# --- the held-out evaluation ---------------------------------------------------------------


@lru_cache(maxsize=1)
def evaluation_scenes() -> frozenset[Scene]:
    """Every scene of the `synthetic` and `synthetic_bi` benchmarks (their default generation):
    each triplet's scene (image0 of the quads) and each negative scene (image1)."""
    gen = synthetic_images.generate_bidirectional_detailed(
        synthetic.DEFAULT_SEED, synthetic.DEFAULT_PER_SUBSET
    )
    return frozenset(s for b in gen for s in (b.scene0, b.scene1))


@lru_cache(maxsize=1)
def evaluation_captions() -> frozenset[str]:
    """Every text of the `synthetic` triplets and `synthetic_bi` quads."""
    gen = synthetic_images.generate_bidirectional_detailed(
        synthetic.DEFAULT_SEED, synthetic.DEFAULT_PER_SUBSET
    )
    triplets = synthetic.generate_detailed(synthetic.DEFAULT_SEED, synthetic.DEFAULT_PER_SUBSET)
    texts = {t for tr in triplets for t in tr.item.texts()}
    return frozenset(texts | {t for b in gen for t in b.quad.texts()})


def _all_scenes() -> Iterator[Scene]:
    for (noun_a, noun_b), col_a, col_b, size_a, size_b, rel in product(
        permutations(NOUNS, 2), COLOURS, COLOURS, SIZES, SIZES, SCENE_RELATIONS
    ):
        yield Scene(SceneObject(noun_a, col_a, size_a), rel, SceneObject(noun_b, col_b, size_b))


def scene_pool(seed: int) -> list[Scene]:
    """Every scene not held out for evaluation, in the order of `seed` (its own seed space)."""
    held_out = evaluation_scenes()
    pool = [s for s in _all_scenes() if s not in held_out]
    random.Random(f"{_SEED_SPACE}:{seed}").shuffle(pool)
    return pool


# --- examples ------------------------------------------------------------------------------


def _caption(rng: random.Random, scene: Scene) -> Caption:
    """A true caption of `scene`: either object as subject, a random template."""
    if rng.randrange(2):
        subject, relation, reference = scene.first, scene.relation, scene.second
    else:
        subject, relation, reference = scene.second, OPPOSITE[scene.relation], scene.first
    template = TEMPLATES[rng.randrange(len(TEMPLATES))]
    return synthetic.render(template, subject, relation, reference)


def _negatives(rng: random.Random, caption: Caption, scene: Scene) -> list[tuple[str, Caption]]:
    """(kind, caption) of each kind of the benchmark's negatives that applies, false of
    `scene`, describing a scene that is not held out; distinct texts."""
    held_out = evaluation_scenes()
    out: list[tuple[str, Caption]] = []
    texts = {caption.text}
    for kind in SUBSETS:
        if not synthetic.usable(kind, scene):
            continue
        neg = synthetic.negative_caption(kind, rng, caption, scene)
        if neg.text in texts or neg.is_true_of(scene):
            continue
        try:
            if negative_scene(neg) in held_out:
                continue
        except ValueError:  # facts that are no scene (two objects with one noun)
            continue
        texts.add(neg.text)
        out.append((kind, neg))
    return out


def _example(rng: random.Random, scene: Scene, size: int) -> RenderedExample:
    caption = _caption(rng, scene)
    negs = _negatives(rng, caption, scene)
    neg_scene = neg_caption = None
    if negs:
        neg_caption = negs[rng.randrange(len(negs))][1]
        neg_scene = negative_scene(neg_caption)
        if caption.is_true_of(neg_scene) or neg_scene == scene:  # pragma: no cover - a bug
            raise AssertionError(f"{scene.id}: the negative scene does not contradict it")
    ex = RenderedExample(
        scene_id=scene.id,
        image=scene_png(scene, size),
        caption=caption.text,
        negatives=tuple(c.text for _, c in negs),
        negative_kinds=tuple(k for k, _ in negs),
        negative_scene_id=None if neg_scene is None else neg_scene.id,
        negative_image=None if neg_scene is None else scene_png(neg_scene, size),
        negative_image_caption=None if neg_caption is None else neg_caption.text,
    )
    _check_held_out(ex)
    return ex


def _check_held_out(ex: RenderedExample) -> None:
    """No text of `ex` is an evaluation text (guaranteed by the held-out scenes)."""
    texts = {ex.caption, *ex.negatives}
    if (texts & evaluation_captions()) or ex.negative_image_caption in evaluation_captions():
        raise AssertionError(f"{ex.scene_id}: a caption of the evaluation was generated")


def rendered_examples(
    n: int, seed: int, *, size: int = DEFAULT_IMAGE_SIZE
) -> Iterator[RenderedExample]:
    """`n` examples of distinct scenes none of which is an evaluation scene (see the module
    doc); the same `seed` and `size` always give the same examples."""
    pool = scene_pool(seed)
    if not 0 <= n <= len(pool):
        raise ValueError(f"n must be in 0..{len(pool)} (the scenes not held out): {n}")
    synthetic_images.check_image_size(size)
    rng = random.Random(f"{_SEED_SPACE}:examples:{seed}")
    for scene in pool[:n]:
        yield _example(rng, scene, size)


# --- writing -------------------------------------------------------------------------------


#: The largest image side `write_rendered` draws (pixels): one RGB canvas of this side is
#: 12 MiB, and a rendering holds at most `RENDER_COPIES` such buffers at a time.
MAX_IMAGE_SIZE = 2048
#: Buffers of one canvas's size alive while an image is drawn and encoded (the canvas, the
#: PNG encoder's rows and its output, with margin).
RENDER_COPIES = 3
#: The memory `write_rendered` may use for the image it renders (bytes).
MAX_RENDER_BYTES = RENDER_COPIES * 3 * MAX_IMAGE_SIZE**2


def render_bytes(size: int) -> int:
    """An upper estimate of the memory (bytes) that rendering one `size` x `size` example
    image needs: `RENDER_COPIES` RGB buffers of its size (examples are rendered and written
    one at a time, so this does not grow with their number)."""
    return RENDER_COPIES * 3 * size * size


def check_rendering(n: int, size: int, dev_fraction: float, seed: int = 0) -> None:
    """A `LexsemError` naming the value and what is allowed unless `n` examples of side `size`
    with a `dev_fraction` dev split can be rendered (before anything is drawn or written)."""
    from lexsem.benchmarks.sources.synthetic_images import MIN_IMAGE_SIZE

    if isinstance(size, bool) or not isinstance(size, int):
        raise LexsemError(f"--size {size!r}: must be a whole number of pixels")
    if size < MIN_IMAGE_SIZE:
        raise LexsemError(f"--size {size}: must be {MIN_IMAGE_SIZE} to {MAX_IMAGE_SIZE} pixels")
    if size > MAX_IMAGE_SIZE:
        raise LexsemError(
            f"--size {size}: must be {MIN_IMAGE_SIZE} to {MAX_IMAGE_SIZE} pixels (an image of "
            f"side {size} needs about {render_bytes(size) / 2**20:,.0f} MiB to render, more than "
            f"the {MAX_RENDER_BYTES / 2**20:,.0f} MiB allowed)"
        )
    if render_bytes(size) > MAX_RENDER_BYTES:  # pragma: no cover - the bound above implies it
        raise LexsemError(f"--size {size}: rendering needs more than {MAX_RENDER_BYTES} bytes")
    if not (0.0 <= dev_fraction < 1.0):  # NaN fails both comparisons
        raise LexsemError(
            f"--dev-fraction {dev_fraction}: must be at least 0 and less than 1 (the share of "
            "examples in the dev split)"
        )
    most = len(scene_pool(seed))
    if not 1 <= n <= most:
        raise LexsemError(
            f"-n {n}: must be 1 to {most:,} (the scenes that are not held out for evaluation)"
        )


def write_rendered(
    out_dir: str | Path,
    n: int,
    seed: int,
    *,
    size: int = DEFAULT_IMAGE_SIZE,
    dev_fraction: float = 0.0,
    manifest_name: str = "manifest.jsonl",
) -> Path:
    """Write `n` rendered examples under `out_dir` (``images/NNNNNN.png`` and
    ``images/NNNNNN-neg.png``), the manifest `manifest_name` (``.jsonl`` / ``.parquet``;
    the last ``round(n * dev_fraction)`` examples in the ``dev`` split) and ``rendered.json``
    (seed, versions, the evaluation held out). The values are checked first
    (`check_rendering`: `size` at most `MAX_IMAGE_SIZE`); each example's images are written
    (atomically) as soon as they are rendered, so memory does not grow with `n`; the manifest
    is written last, so a folder without it is an unfinished one. Refuses a folder that already
    has that manifest, and an `out_dir` that is a file. Returns the manifest's path."""
    check_rendering(n, size, dev_fraction, seed)
    out = Path(out_dir)
    manifest = out / manifest_name
    for parent in (out, *out.parents):
        if parent.exists() and not parent.is_dir():
            raise LexsemError(f"{parent} is a file, not a folder: give a folder to write to")
    if manifest.exists():
        raise LexsemError(f"{manifest} exists already; write the examples to a new folder")
    (out / "images").mkdir(parents=True, exist_ok=True)
    n_dev = round(n * dev_fraction)
    rows = (
        _write_example(out, i, ex, "dev" if i >= n - n_dev else "train")
        for i, ex in enumerate(rendered_examples(n, seed, size=size))
    )
    with atomic_open(out / "rendered.json", "w", encoding="utf-8") as fh:
        json.dump(_provenance(n, seed, size, n_dev), fh, indent=2)
    return write_manifest(manifest, rows)  # renders and writes the examples one at a time


def _write_example(out: Path, i: int, ex: RenderedExample, split: str) -> Example:
    name = f"images/{i:06d}.png"
    _write_png(out / name, ex.image)
    neg_ref = None
    if ex.negative_image is not None:
        neg_name = f"images/{i:06d}-neg.png"
        _write_png(out / neg_name, ex.negative_image)
        neg_ref = f"{MANIFEST_ROOT}:{neg_name}"
    return Example(
        image=f"{MANIFEST_ROOT}:{name}",
        caption=ex.caption,
        negatives=ex.negatives,
        negative_image=neg_ref,
        negative_image_caption=ex.negative_image_caption,
        split=split,
    )


def _write_png(path: Path, png: bytes) -> None:
    """Write `png` under a temporary name, then rename it: an interrupted run leaves no
    half-written image under an image's name (the manifest, written last, is fsynced)."""
    tmp = path.with_name(f".{path.name}.part")
    try:
        tmp.write_bytes(png)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _provenance(n: int, seed: int, size: int, n_dev: int) -> dict[str, Any]:
    return {
        "source": "lexsem rendered scenes (lexsem.train.rendered)",
        "rendered_version": RENDERED_VERSION,
        "generator_version": synthetic.GENERATOR_VERSION,
        "renderer_version": synthetic_images.RENDERER_VERSION,
        "seed": seed,
        "examples": n,
        "dev_examples": n_dev,
        "size": size,
        "held_out": {
            "benchmarks": ["synthetic", "synthetic_bi"],
            "scenes": len(evaluation_scenes()),
            "synthetic_sha256": synthetic.content_sha256(),
            "synthetic_bi_sha256": synthetic_images.bidirectional_content_sha256(),
        },
    }
