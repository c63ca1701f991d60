"""Images for the synthetic benchmark, and its bidirectional (BiVLC-style) variant.

`render_scene` draws a `synthetic.Scene` with PIL: the two objects as flat pictograms of their
nouns, filled with their colour (`synthetic.COLOUR_RGB`, drawn exactly: no antialiasing), a thin
dark outline, on a plain white background. Layout makes each caption exactly true or false:

* sizes: an object's pictogram fits a square box of side 25% ("small") or 44% ("large") of the
  canvas, and its fill spans at least 70% of it in its longer dimension;
* ``left_of``: the boxes side by side, `first` entirely left of `second` with a gap of at least
  6% of the canvas, their vertical centres within 6% of the canvas of each other; ``above``:
  the same with the axes exchanged;
* only details are drawn in other colours, and never in a colour of the palette: the outline
  ink (dark grey, also wheels, door, spars, kite tail) and white (windows, highlights);
* a little jitter of the positions, seeded by the scene id, so the same scene always gives the
  same picture, at any size (the layout is computed in fractions of the canvas).

`scene_png` encodes a rendering as PNG without metadata, so a scene gives identical bytes on
every call; `synthetic_image_bytes("synthetic:<scene id>")` is what an image store serves for
a synthetic item's image reference.

`generate_bidirectional` turns each generated triplet (same seed, same ids) into a `QuadItem`:
(image0, caption0) = (the scene, P1) and (image1, caption1) = (the *negative scene*, N), the
scene that N's facts describe. C1 is false of I0 and C0 false of I1 by construction (checked
for every item).
"""

from __future__ import annotations

import hashlib
import io
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lexsem.benchmarks.items import QuadItem
from lexsem.benchmarks.sources import synthetic_text as synthetic
from lexsem.benchmarks.sources.synthetic_text import (
    OPPOSITE,
    SCENE_RELATIONS,
    Caption,
    Scene,
    SceneObject,
)
from lexsem.digests import json_sha256
from lexsem.errors import LexsemError

if TYPE_CHECKING:
    from PIL import Image

__all__ = [
    "BACKGROUND_RGB",
    "BIDIRECTIONAL_VERSION",
    "DEFAULT_IMAGE_SIZE",
    "INK_RGB",
    "MIN_IMAGE_SIZE",
    "RENDERER_VERSION",
    "SIZE_FRACTION",
    "WHITE_RGB",
    "BidirectionalItem",
    "Box",
    "bidirectional_content_sha256",
    "check_image_size",
    "generate_bidirectional",
    "generate_bidirectional_detailed",
    "layout",
    "load_synthetic_bidirectional",
    "negative_scene",
    "render_scene",
    "rendered_pixels_sha256",
    "scene_png",
    "synthetic_image_bytes",
]

# Bump when the pictures for a scene change (drawing, layout, colours, jitter).
RENDERER_VERSION = 1
# Bump when the bidirectional items for a seed change (beyond changes of `synthetic`'s items).
BIDIRECTIONAL_VERSION = 1

DEFAULT_IMAGE_SIZE = 224
MIN_IMAGE_SIZE = 48

BACKGROUND_RGB: tuple[int, int, int] = (255, 255, 255)
INK_RGB: tuple[int, int, int] = (64, 64, 64)  # outlines and dark details; not a palette colour
WHITE_RGB: tuple[int, int, int] = (255, 255, 255)  # light details (windows, highlights)

# Side of an object's square box, as a fraction of the canvas side.
SIZE_FRACTION: dict[str, float] = {"small": 0.25, "large": 0.44}
_MARGIN = 0.025  # least distance from a box to the canvas edge
_GAP = 0.06  # least gap between the two boxes along the relation's axis
_CROSS_JITTER = 0.03  # each box's centre moves at most this much across the relation's axis

if set(SIZE_FRACTION) != set(synthetic.SIZES):  # pragma: no cover - import-time consistency
    raise AssertionError("SIZE_FRACTION must cover synthetic.SIZES")
if INK_RGB in synthetic.COLOUR_RGB.values() or WHITE_RGB in synthetic.COLOUR_RGB.values():
    raise AssertionError("detail colours must not be palette colours")  # pragma: no cover


# --- layout ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Box:
    """An object's square box in canvas fractions: top-left corner (x, y) and side."""

    x: float
    y: float
    side: float


def _scene_rng(scene: Scene) -> random.Random:
    digest = hashlib.sha256(f"lexsem-synthetic-layout:{scene.id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def layout(scene: Scene) -> tuple[Box, Box]:
    """The boxes of `scene.first` and `scene.second`, in fractions of the canvas side.

    Along the relation's axis (x for ``left_of``, y for ``above``) `first` comes first, at least
    `_GAP` before `second`; across it both boxes are centred near the middle. The jitter is
    seeded by the scene id, so a scene always has the same layout.
    """
    rng = _scene_rng(scene)
    s1 = SIZE_FRACTION[scene.first.size]
    s2 = SIZE_FRACTION[scene.second.size]
    slack = 1.0 - 2 * _MARGIN - _GAP - s1 - s2
    if slack < 0:  # pragma: no cover - guarded by the constants
        raise AssertionError("objects do not fit the canvas")
    extra_gap = slack * rng.random() * 0.5
    lead = (slack - extra_gap) * rng.random()
    a1 = _MARGIN + lead
    a2 = a1 + s1 + _GAP + extra_gap
    c1 = 0.5 + rng.uniform(-_CROSS_JITTER, _CROSS_JITTER)
    c2 = 0.5 + rng.uniform(-_CROSS_JITTER, _CROSS_JITTER)
    if scene.relation == "left_of":
        return Box(a1, c1 - s1 / 2, s1), Box(a2, c2 - s2 / 2, s2)
    return Box(c1 - s1 / 2, a1, s1), Box(c2 - s2 / 2, a2, s2)


# --- pictograms -----------------------------------------------------------------------------

_RGB = tuple[int, int, int]
Shape = Literal["ellipse", "rect"]


class _Pen:
    """Draws in an object's box with unit coordinates: (0, 0) top left, (1, 1) bottom right."""

    def __init__(self, draw: Any, box: Box, canvas: int, fill: _RGB) -> None:
        self.draw = draw
        self.x0 = round(box.x * canvas)
        self.y0 = round(box.y * canvas)
        self.span = max(round(box.side * canvas) - 1, 1)  # u = 1 is the box's last pixel
        self.fill = fill
        self.lw = max(1, round(canvas / 112))

    def pt(self, u: float, v: float) -> tuple[int, int]:
        return (self.x0 + round(u * self.span), self.y0 + round(v * self.span))

    def _rect(self, u0: float, v0: float, u1: float, v1: float, grow: int = 0) -> list[int]:
        x0, y0 = self.pt(u0, v0)
        x1, y1 = self.pt(u1, v1)
        return [x0 - grow, y0 - grow, x1 + grow, y1 + grow]

    def shape(
        self,
        kind: Shape,
        u0: float,
        v0: float,
        u1: float,
        v1: float,
        fill: _RGB | None = None,
        *,
        ink: bool = True,
    ) -> None:
        """An ellipse or a rectangle in the unit box (u0, v0)-(u1, v1), outlined in ink."""
        self._draw(kind)(
            self._rect(u0, v0, u1, v1),
            fill=self.fill if fill is None else fill,
            outline=INK_RGB if ink else None,
            width=self.lw,
        )

    def circle(
        self, u: float, v: float, r: float, fill: _RGB | None = None, *, ink: bool = True
    ) -> None:
        self.shape("ellipse", u - r, v - r, u + r, v + r, fill, ink=ink)

    def _draw(self, kind: Shape) -> Callable[..., None]:
        return self.draw.ellipse if kind == "ellipse" else self.draw.rectangle

    def polygon(self, pts: Sequence[tuple[float, float]], fill: _RGB | None = None) -> None:
        self.draw.polygon(
            [self.pt(u, v) for u, v in pts],
            fill=self.fill if fill is None else fill,
            outline=INK_RGB,
            width=self.lw,
        )

    def line(self, pts: Sequence[tuple[float, float]], width: float | None = None) -> None:
        w = self.lw if width is None else max(self.lw, round(width * self.span))
        self.draw.line([self.pt(u, v) for u, v in pts], fill=INK_RGB, width=w, joint="curve")

    def merged(self, parts: Sequence[tuple[Shape, tuple[float, float, float, float]]]) -> None:
        """Ellipses / rectangles filled as one silhouette with one outline around the union."""
        for kind, coords in parts:  # outline pass: every part grown by the line width, in ink
            self._draw(kind)(self._rect(*coords, grow=self.lw), fill=INK_RGB)
        for kind, coords in parts:  # fill pass
            self._draw(kind)(self._rect(*coords), fill=self.fill)


def _ball(p: _Pen) -> None:
    p.circle(0.5, 0.5, 0.5)
    p.shape("ellipse", 0.2, 0.18, 0.4, 0.34, WHITE_RGB, ink=False)  # highlight


def _box(p: _Pen) -> None:  # a crate seen from the front-top-right: three faces
    p.polygon([(0.0, 0.25), (0.25, 0.0), (1.0, 0.0), (0.75, 0.25)])
    p.polygon([(0.75, 0.25), (1.0, 0.0), (1.0, 0.75), (0.75, 1.0)])
    p.shape("rect", 0.0, 0.25, 0.75, 1.0)


def _car(p: _Pen) -> None:
    p.polygon([(0.16, 0.46), (0.3, 0.16), (0.72, 0.16), (0.88, 0.46)])  # cabin
    p.draw.rounded_rectangle(
        p._rect(0.0, 0.42, 1.0, 0.78),
        radius=max(1, round(0.08 * p.span)),
        fill=p.fill,
        outline=INK_RGB,
        width=p.lw,
    )
    p.polygon([(0.27, 0.42), (0.35, 0.23), (0.49, 0.23), (0.49, 0.42)], WHITE_RGB)  # windows
    p.polygon([(0.55, 0.42), (0.55, 0.23), (0.68, 0.23), (0.78, 0.42)], WHITE_RGB)
    for u in (0.24, 0.76):  # wheels
        p.circle(u, 0.8, 0.12, INK_RGB)
        p.circle(u, 0.8, 0.045, WHITE_RGB, ink=False)


def _cup(p: _Pen) -> None:
    p.shape("ellipse", 0.56, 0.22, 0.98, 0.7)  # handle
    p.shape("ellipse", 0.68, 0.34, 0.86, 0.58, BACKGROUND_RGB)
    p.polygon([(0.02, 0.06), (0.8, 0.06), (0.69, 0.98), (0.13, 0.98)])  # body
    p.line([(0.06, 0.2), (0.76, 0.2)])  # rim


def _flower(p: _Pen) -> None:
    p.shape("ellipse", 0.5, 0.66, 0.86, 0.8)  # leaf
    p.shape("rect", 0.45, 0.55, 0.55, 1.0)  # stem
    cu, cv = 0.5, 0.38
    for k in range(5):  # petals
        a = math.radians(90 + 72 * k)
        p.circle(cu + 0.21 * math.cos(a), cv - 0.21 * math.sin(a), 0.17)
    p.circle(cu, cv, 0.11, WHITE_RGB)


def _hat(p: _Pen) -> None:  # a top hat
    p.shape("ellipse", 0.0, 0.76, 1.0, 0.98)  # brim
    p.polygon([(0.2, 0.04), (0.8, 0.04), (0.76, 0.86), (0.24, 0.86)])  # crown
    p.line([(0.23, 0.66), (0.77, 0.66)])  # band
    p.line([(0.23, 0.74), (0.77, 0.74)])


def _house(p: _Pen) -> None:
    p.shape("rect", 0.12, 0.46, 0.88, 1.0)  # walls
    p.polygon([(0.0, 0.5), (0.5, 0.02), (1.0, 0.5)])  # roof
    p.shape("rect", 0.42, 0.7, 0.6, 1.0, INK_RGB)  # door
    p.shape("rect", 0.2, 0.6, 0.34, 0.74, WHITE_RGB)  # window
    p.shape("rect", 0.68, 0.6, 0.82, 0.74, WHITE_RGB)


def _kite(p: _Pen) -> None:  # a diamond with cross spars, its tail trailing down-left
    p.polygon([(0.58, 0.0), (1.0, 0.36), (0.58, 0.86), (0.16, 0.36)])
    p.line([(0.58, 0.05), (0.58, 0.8)])  # spars
    p.line([(0.22, 0.36), (0.94, 0.36)])
    tail = [(0.58, 0.86), (0.45, 0.96), (0.32, 0.89), (0.18, 0.99), (0.04, 0.92)]
    p.line(tail)
    for u, v in tail[1:4]:  # bows
        du, dv = 0.04, 0.035
        p.polygon([(u - du, v - dv), (u + du, v + dv), (u + du, v - dv), (u - du, v + dv)], INK_RGB)


def _star(p: _Pen) -> None:
    outer, inner, cu, cv = 0.52, 0.21, 0.5, 0.52
    pts = []
    for k in range(10):
        r = outer if k % 2 == 0 else inner
        a = math.radians(90 + 36 * k)
        pts.append((cu + r * math.cos(a), cv - r * math.sin(a)))
    p.polygon(pts)


def _tree(p: _Pen) -> None:  # a round crown on a trunk, one silhouette
    p.merged(
        [
            ("rect", (0.42, 0.55, 0.58, 1.0)),
            ("ellipse", (0.0, 0.22, 0.5, 0.72)),
            ("ellipse", (0.5, 0.22, 1.0, 0.72)),
            ("ellipse", (0.18, 0.0, 0.82, 0.6)),
        ]
    )


_PICTOGRAMS: dict[str, Callable[[_Pen], None]] = {
    "ball": _ball,
    "box": _box,
    "car": _car,
    "cup": _cup,
    "flower": _flower,
    "hat": _hat,
    "house": _house,
    "kite": _kite,
    "star": _star,
    "tree": _tree,
}
if set(_PICTOGRAMS) != set(synthetic.NOUNS):  # pragma: no cover - import-time consistency
    raise AssertionError("every synthetic noun needs a pictogram")


# --- rendering ------------------------------------------------------------------------------


def check_image_size(size: int) -> None:
    """ValueError unless `size` is an int of at least `MIN_IMAGE_SIZE` pixels."""
    if not isinstance(size, int) or isinstance(size, bool) or size < MIN_IMAGE_SIZE:
        raise ValueError(f"image size must be an int >= {MIN_IMAGE_SIZE}: {size!r}")


def render_scene(scene: Scene, size: int = DEFAULT_IMAGE_SIZE) -> Image.Image:
    """`scene` drawn on a `size` x `size` RGB canvas (needs Pillow). Deterministic."""
    from PIL import Image, ImageDraw

    check_image_size(size)
    img = Image.new("RGB", (size, size), BACKGROUND_RGB)
    draw = ImageDraw.Draw(img)
    for obj, box in zip(scene.objects, layout(scene), strict=True):
        _PICTOGRAMS[obj.noun](_Pen(draw, box, size, synthetic.COLOUR_RGB[obj.colour]))
    return img


def scene_png(scene: Scene, size: int = DEFAULT_IMAGE_SIZE) -> bytes:
    """The rendering of `scene` as PNG bytes: no metadata, so the same scene gives the same
    bytes on every call (with one Pillow / zlib build)."""
    buf = io.BytesIO()
    render_scene(scene, size).save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


@lru_cache(maxsize=2048)
def synthetic_image_bytes(ref: str, size: int = DEFAULT_IMAGE_SIZE) -> bytes:
    """PNG bytes of the image reference ``synthetic:<scene id>`` (`LexsemError` if invalid)."""
    return scene_png(synthetic.scene_for(ref), size)


def rendered_pixels_sha256(
    seed: int = synthetic.DEFAULT_SEED,
    per_subset: int = synthetic.DEFAULT_PER_SUBSET,
    size: int = DEFAULT_IMAGE_SIZE,
) -> str:
    """sha256 of the raw RGB pixels of every image of the bidirectional generation (both
    images of each item, each distinct reference once, sorted). Unlike PNG bytes, this does not
    depend on the zlib build; it changes when the drawing does (bump `RENDERER_VERSION`)."""
    gen = _bi_generation(seed, per_subset)
    refs = sorted({b.quad.image0 for b in gen} | {b.quad.image1 for b in gen})
    h = hashlib.sha256(f"renderer:{RENDERER_VERSION}:size:{size}\n".encode())
    for ref in refs:
        h.update(ref.encode() + b"\n")
        h.update(render_scene(synthetic.scene_for(ref), size).tobytes())
    return h.hexdigest()


# --- bidirectional variant ------------------------------------------------------------------


def negative_scene(caption: Caption) -> Scene:
    """The scene that makes `caption` true: its two objects in its relation, nothing else.

    Raises `ValueError` if the facts are no valid scene (e.g. two objects with one noun).
    """
    rel = caption.relation
    if rel in SCENE_RELATIONS:
        return Scene(caption.subject, rel, caption.reference)
    return Scene(caption.reference, OPPOSITE[rel], caption.subject)


def _changed(a: Caption, b: Caption) -> str:
    """What differs between two captions' facts: colour, size, noun or relation."""
    if a.relation != b.relation:
        return "relation"
    for field in ("colour", "size", "noun"):
        objs_a: tuple[SceneObject, SceneObject] = (a.subject, a.reference)
        objs_b: tuple[SceneObject, SceneObject] = (b.subject, b.reference)
        if any(getattr(x, field) != getattr(y, field) for x, y in zip(objs_a, objs_b, strict=True)):
            return field
    raise AssertionError("captions state the same facts")  # pragma: no cover


@dataclass(frozen=True)
class BidirectionalItem:
    """One quad with its scenes and the structured captions behind its texts."""

    quad: QuadItem
    scene0: Scene  # image0: the triplet's scene; caption0 (P1) is true of it
    scene1: Scene  # image1: the negative scene; caption1 (N) is true of it
    caption0: Caption
    caption1: Caption


def generate_bidirectional_detailed(
    seed: int = synthetic.DEFAULT_SEED, per_subset: int = synthetic.DEFAULT_PER_SUBSET
) -> list[BidirectionalItem]:
    """One quad per triplet of ``synthetic.generate_detailed(seed, per_subset)``, same ids.

    caption0 = P1 of the triplet's scene (image0); caption1 = N, and image1 the scene N
    describes. Every item is checked: both pairs true, both crossed pairs false.
    """
    out: list[BidirectionalItem] = []
    for t in synthetic.generate_detailed(seed, per_subset):
        c0, c1 = t.p1, t.n
        s0 = t.scene
        try:
            s1 = negative_scene(c1)
        except ValueError as exc:  # pragma: no cover - the generator never produces one
            raise AssertionError(f"{t.item.id}: negative caption is no scene: {exc}") from None
        ok = (
            s0 != s1
            and c0.is_true_of(s0)
            and c1.is_true_of(s1)
            and not c1.is_true_of(s0)
            and not c0.is_true_of(s1)
        )
        if not ok:  # pragma: no cover - a generator bug, never data
            raise AssertionError(f"{t.item.id}: bidirectional item is not exactly true/false")
        kind, _, subtype = t.item.subset.partition("_")  # BiVLC's type / subtype labels
        quad = QuadItem(
            id=t.item.id,
            subset=t.item.subset,
            image0=s0.image_ref,
            caption0=c0.text,
            image1=s1.image_ref,
            caption1=c1.text,
            group=(
                ("type", kind),
                ("subtype", subtype),
                ("template", c0.template),
                ("changed", _changed(c0, c1)),
            ),
        )
        out.append(BidirectionalItem(quad, s0, s1, c0, c1))
    return out


def generate_bidirectional(
    seed: int = synthetic.DEFAULT_SEED, per_subset: int = synthetic.DEFAULT_PER_SUBSET
) -> list[QuadItem]:
    """The quads of `generate_bidirectional_detailed`; the same seed always gives the same list."""
    return [b.quad for b in generate_bidirectional_detailed(seed, per_subset)]


@lru_cache(maxsize=8)
def _bi_generation(seed: int, per_subset: int) -> tuple[BidirectionalItem, ...]:
    return tuple(generate_bidirectional_detailed(seed, per_subset))


def load_synthetic_bidirectional(
    path: Path | None, subset: str, *, strict: bool = True
) -> list[QuadItem]:
    """Registry loader: the default generation's quads of `subset` (`path` must be None)."""
    del strict  # generated texts are never empty
    if path is not None:
        raise LexsemError(
            f"the synthetic bidirectional benchmark is generated and reads no file (got {path})"
        )
    if subset not in synthetic.SUBSETS:
        raise LexsemError(
            f"synthetic_bi benchmark has no subset {subset!r} "
            f"(subsets: {', '.join(synthetic.SUBSETS)})"
        )
    gen = _bi_generation(synthetic.DEFAULT_SEED, synthetic.DEFAULT_PER_SUBSET)
    return [b.quad for b in gen if b.quad.subset == subset]


@lru_cache(maxsize=8)
def bidirectional_content_sha256(
    seed: int = synthetic.DEFAULT_SEED, per_subset: int = synthetic.DEFAULT_PER_SUBSET
) -> str:
    """sha256 of a canonical JSON form of a bidirectional generation (with both versions)."""
    payload = {
        "generator_version": synthetic.GENERATOR_VERSION,
        "bidirectional_version": BIDIRECTIONAL_VERSION,
        "seed": seed,
        "per_subset": per_subset,
        "items": [
            [q.id, q.subset, q.image0, q.caption0, q.image1, q.caption1, [list(g) for g in q.group]]
            for q in (b.quad for b in _bi_generation(seed, per_subset))
        ],
    }
    return json_sha256(payload)
