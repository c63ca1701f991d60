"""Rendered synthetic scenes and the bidirectional variant.

The pixel checks use their own reading of the picture, not the renderer's layout: each object
is found by its exact fill colour (`synthetic.COLOUR_RGB`); when both objects share a colour,
the colour's pixels are split at the widest empty band of rows or columns. The relation and the
sizes read from those bounding boxes are compared with the scene's facts.
"""

from __future__ import annotations

import hashlib
import io
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image as PIL_Image

from lexsem.benchmarks.items import QuadItem
from lexsem.benchmarks.sources import synthetic_images as si
from lexsem.benchmarks.sources import synthetic_text as synthetic
from lexsem.benchmarks.sources.synthetic_text import Scene, SceneObject
from lexsem.errors import LexsemError

# Pinned: the default bidirectional generation must not change silently. If you change it on
# purpose, bump si.BIDIRECTIONAL_VERSION (or synthetic.GENERATOR_VERSION) and update this.
BI_SHA256 = "a79d97a9b842c3218757dcb7bf8fbc74430e2eb907f174644332fb9f49a28d68"

CHECK_SIZE = 96  # the all-scenes pixel check renders small to stay fast


@pytest.fixture(scope="module")
def triplets() -> list[synthetic.SyntheticTriplet]:
    return synthetic.generate_detailed()


@pytest.fixture(scope="module")
def quads() -> list[si.BidirectionalItem]:
    return si.generate_bidirectional_detailed()


# --- an independent reading of the picture -------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """An object's fill-colour bounding box (inclusive pixel coordinates)."""

    x0: int
    y0: int
    x1: int
    y1: int

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2

    @property
    def extent(self) -> int:
        return max(self.x1 - self.x0 + 1, self.y1 - self.y0 + 1)

    @property
    def area(self) -> int:
        return (self.x1 - self.x0 + 1) * (self.y1 - self.y0 + 1)


def _bbox(mask: np.ndarray) -> Seen:
    ys, xs = np.nonzero(mask)
    assert xs.size, "colour not found"
    return Seen(int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max()))


def _widest_gap(mask: np.ndarray, axis: int) -> tuple[int, int]:
    """(gap width, first index after the gap) of the occupied rows/columns of `mask`."""
    occupied = np.nonzero(mask.any(axis=axis))[0]
    if occupied.size < 2:
        return 0, 0
    gaps = np.diff(occupied) - 1
    k = int(gaps.argmax())
    return int(gaps[k]), int(occupied[k + 1])


def _split(mask: np.ndarray) -> tuple[Seen, Seen]:
    """Two same-coloured objects: cut at the widest empty band, in reading order."""
    col_gap, col_cut = _widest_gap(mask, 0)
    row_gap, row_cut = _widest_gap(mask, 1)
    assert max(col_gap, row_gap) >= 2, "two objects of one colour are not separated"
    a, b = mask.copy(), mask.copy()
    if col_gap >= row_gap:
        a[:, col_cut:] = False
        b[:, :col_cut] = False
    else:
        a[row_cut:, :] = False
        b[:row_cut, :] = False
    return _bbox(a), _bbox(b)


def observe(pixels: np.ndarray, scene: Scene) -> tuple[Seen, Seen]:
    """Boxes of `scene.first` and `scene.second`, found by colour; no other palette colour."""
    colours = {o.colour for o in scene.objects}
    for name, rgb in synthetic.COLOUR_RGB.items():
        present = bool((pixels == rgb).all(-1).any())
        assert present == (name in colours), f"{scene.id}: colour {name} present={present}"
    c1, c2 = scene.first.colour, scene.second.colour
    if c1 != c2:
        return (
            _bbox((pixels == synthetic.COLOUR_RGB[c1]).all(-1)),
            _bbox((pixels == synthetic.COLOUR_RGB[c2]).all(-1)),
        )
    # One colour: reading order (left to right, top to bottom) gives the first object, which
    # the size check then confirms whenever the sizes differ.
    return _split((pixels == synthetic.COLOUR_RGB[c1]).all(-1))


def check_picture(pixels: np.ndarray, scene: Scene) -> None:
    size = pixels.shape[0]
    a, b = observe(pixels, scene)
    if scene.relation == "left_of":  # entirely left, vertical centres close
        assert a.x1 + 2 < b.x0, scene.id
        assert abs(a.cy - b.cy) <= 0.12 * size, scene.id
    else:  # entirely above, horizontal centres close
        assert a.y1 + 2 < b.y0, scene.id
        assert abs(a.cx - b.cx) <= 0.12 * size, scene.id
    for obj, seen in ((scene.first, a), (scene.second, b)):
        assert min(seen.x0, seen.y0) > 0 and max(seen.x1, seen.y1) < size - 1, scene.id
        if obj.size == "small":
            assert seen.extent <= 0.26 * size, (scene.id, obj, seen)
        else:
            assert seen.extent >= 0.30 * size, (scene.id, obj, seen)
    if scene.first.size != scene.second.size:
        small, large = (a, b) if scene.first.size == "small" else (b, a)
        assert large.area > 1.3 * small.area, scene.id


def pixels_of(scene: Scene, size: int) -> np.ndarray:
    return np.asarray(si.render_scene(scene, size))


# --- rendering ------------------------------------------------------------------------------

SCENE = Scene(SceneObject("ball", "red", "small"), "left_of", SceneObject("box", "blue", "large"))


def test_render_basics() -> None:
    img = si.render_scene(SCENE)
    assert img.mode == "RGB" and img.size == (si.DEFAULT_IMAGE_SIZE,) * 2
    assert si.render_scene(SCENE, 128).size == (128, 128)
    corners = np.asarray(img)[[0, 0, -1, -1], [0, -1, 0, -1]]
    assert (corners == si.BACKGROUND_RGB).all()
    for bad in (0, si.MIN_IMAGE_SIZE - 1, 100.0, True):
        with pytest.raises(ValueError):
            si.render_scene(SCENE, bad)  # type: ignore[arg-type]


def test_png_deterministic_and_bare() -> None:
    a, b = si.scene_png(SCENE), si.scene_png(SCENE)
    assert a == b
    assert si.synthetic_image_bytes(SCENE.image_ref) == a
    img = PIL_Image.open(io.BytesIO(a))
    assert img.format == "PNG" and img.size == (224, 224)
    # Only the image chunks: no time stamp, text or other metadata.
    chunks, pos = [], 8
    while pos < len(a):
        (length,) = struct.unpack(">I", a[pos : pos + 4])
        chunks.append(a[pos + 4 : pos + 8].decode("ascii"))
        pos += 12 + length
    assert set(chunks) == {"IHDR", "IDAT", "IEND"}, chunks


def test_png_same_in_another_process() -> None:
    refs = [SCENE.image_ref, "synthetic:large-yellow-star.above.small-black-kite"]
    code = (
        "import hashlib, sys\n"
        "from lexsem.benchmarks.sources.synthetic_images import synthetic_image_bytes\n"
        "for r in sys.argv[1:]: print(hashlib.sha256(synthetic_image_bytes(r)).hexdigest())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *refs],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
        cwd=Path(__file__).parent,
    ).stdout.split()
    assert out == [hashlib.sha256(si.synthetic_image_bytes(r)).hexdigest() for r in refs]


def test_different_scenes_different_images(triplets: list[synthetic.SyntheticTriplet]) -> None:
    scenes = [t.scene for t in triplets]
    digests = {hashlib.sha256(pixels_of(s, CHECK_SIZE).tobytes()).hexdigest() for s in scenes}
    assert len(digests) == len(scenes)
    pngs = {si.scene_png(s) for s in scenes[:40]}
    assert len(pngs) == 40


def test_layout_seeded_by_scene() -> None:
    assert si.layout(SCENE) == si.layout(SCENE)
    other = Scene(
        SceneObject("ball", "red", "small"), "left_of", SceneObject("car", "blue", "large")
    )
    assert si.layout(other) != si.layout(SCENE)  # jitter differs between scenes


def test_every_default_scene_is_drawn_true(triplets: list[synthetic.SyntheticTriplet]) -> None:
    assert len(triplets) == 500
    for t in triplets:
        check_picture(pixels_of(t.scene, CHECK_SIZE), t.scene)


def test_scenes_true_at_full_size(triplets: list[synthetic.SyntheticTriplet]) -> None:
    for t in triplets[::10]:
        check_picture(pixels_of(t.scene, si.DEFAULT_IMAGE_SIZE), t.scene)


def test_every_noun_colour_size_pair() -> None:
    # Same colour in both objects, every noun pair, both relations and size combinations.
    for colour in synthetic.COLOURS:
        for i, n1 in enumerate(synthetic.NOUNS):
            n2 = synthetic.NOUNS[(i + 1 + len(colour)) % len(synthetic.NOUNS)]
            for rel in synthetic.SCENE_RELATIONS:
                for s1, s2 in (("small", "large"), ("large", "small"), ("large", "large")):
                    scene = Scene(SceneObject(n1, colour, s1), rel, SceneObject(n2, colour, s2))
                    check_picture(pixels_of(scene, CHECK_SIZE), scene)


def test_checker_catches_a_wrong_scene() -> None:
    # The checker is not vacuous: a picture does not pass for its swapped or flipped scene.
    flipped = Scene(SCENE.second, "left_of", SCENE.first)
    resized = Scene(SCENE.first, "left_of", SceneObject("box", "blue", "small"))
    above = Scene(SCENE.first, "above", SCENE.second)
    pixels = pixels_of(SCENE, CHECK_SIZE)
    for wrong in (flipped, resized, above):
        with pytest.raises(AssertionError):
            check_picture(pixels, wrong)


def test_bad_references() -> None:
    for ref in (
        "synthetic:nope",
        "coco2017:x.jpg",
        "synthetic:small-red-ball.left_of.small-red-ball",
    ):
        with pytest.raises(LexsemError):
            si.synthetic_image_bytes(ref)


# --- bidirectional variant ------------------------------------------------------------------


def test_bidirectional_matches_triplets(
    triplets: list[synthetic.SyntheticTriplet], quads: list[si.BidirectionalItem]
) -> None:
    assert len(quads) == len(triplets) == 500
    for t, b in zip(triplets, quads, strict=True):
        q = b.quad
        assert isinstance(q, QuadItem)
        assert (q.id, q.subset, q.image0, q.caption0, q.caption1) == (
            t.item.id,
            t.item.subset,
            t.item.image,
            t.item.p1,
            t.item.n,
        )
        assert q.image1 == b.scene1.image_ref != q.image0
        groups = dict(q.group)
        assert f"{groups['type']}_{groups['subtype']}" == q.subset
        assert groups["template"] == b.caption0.template == b.caption1.template
        expected = {
            "replace_att": {"colour"},
            "replace_obj": {"noun"},
            "replace_rel": {"relation"},
            "swap_att": {"colour", "size"},
            "swap_obj": {"noun"},
        }[q.subset]
        assert groups["changed"] in expected
    subsets = [b.quad.subset for b in quads]
    assert {s: subsets.count(s) for s in synthetic.SUBSETS} == dict.fromkeys(synthetic.SUBSETS, 100)


def test_bidirectional_truth(quads: list[si.BidirectionalItem]) -> None:
    for b in quads:
        q = b.quad
        # Scenes from the references, not the stored objects: what an image store serves.
        i0, i1 = synthetic.scene_for(q.image0), synthetic.scene_for(q.image1)
        assert (i0, i1) == (b.scene0, b.scene1)
        assert (b.caption0.text, b.caption1.text) == (q.caption0, q.caption1)
        assert b.caption0.is_true_of(i0) and b.caption1.is_true_of(i1), q.id
        assert not b.caption1.is_true_of(i0) and not b.caption0.is_true_of(i1), q.id


def test_negative_images_are_drawn_true(quads: list[si.BidirectionalItem]) -> None:
    for b in quads:
        p0, p1 = pixels_of(b.scene0, CHECK_SIZE), pixels_of(b.scene1, CHECK_SIZE)
        check_picture(p1, b.scene1)
        assert not np.array_equal(p0, p1), b.quad.id


def test_bidirectional_refs_decode(quads: list[si.BidirectionalItem]) -> None:
    for b in quads[::25]:
        for ref in (b.quad.image0, b.quad.image1):
            data = si.synthetic_image_bytes(ref)
            assert data.startswith(b"\x89PNG\r\n\x1a\n")
            img = PIL_Image.open(io.BytesIO(data))
            img.load()
            assert img.mode == "RGB" and img.size == (224, 224)


def test_bidirectional_deterministic_and_seeded() -> None:
    a = si.generate_bidirectional(seed=3, per_subset=10)
    assert a == si.generate_bidirectional(seed=3, per_subset=10)
    assert a != si.generate_bidirectional(seed=4, per_subset=10)
    assert len(a) == 50
    assert si.bidirectional_content_sha256(3, 10) != si.bidirectional_content_sha256(4, 10)
    assert si.generate_bidirectional(per_subset=0) == []


def test_bidirectional_pinned() -> None:
    assert si.bidirectional_content_sha256() == BI_SHA256


def test_loader() -> None:
    all_items = si.generate_bidirectional()
    for subset in synthetic.SUBSETS:
        items = si.load_synthetic_bidirectional(None, subset)
        assert items == [q for q in all_items if q.subset == subset]
        assert len(items) == synthetic.DEFAULT_PER_SUBSET
    with pytest.raises(LexsemError, match="no subset"):
        si.load_synthetic_bidirectional(None, "add_att")
    with pytest.raises(LexsemError, match="reads no file"):
        si.load_synthetic_bidirectional(Path("x.json"), "swap_att")


def test_negative_scene_rejects_invalid_facts() -> None:
    red, blue = SceneObject("ball", "red", "small"), SceneObject("ball", "blue", "large")
    same = synthetic.render("is", red, "below", blue)
    with pytest.raises(ValueError):
        si.negative_scene(same)
    ok = synthetic.render("is", SCENE.second, "right_of", SCENE.first)
    assert si.negative_scene(ok) == SCENE
