"""lexsem's own benchmark: procedurally generated scenes and templated triplets.

A `Scene` is a small canvas with two objects (noun, colour, size) placed side by side or one
above the other. Captions are rendered from structured facts (`Caption`) by templates, so each
caption is exactly true or false of its scene:

* P1 is a true caption in one template;
* P2 is the same facts in a template of another family (relation inversion, fronting, "has ...
  to its left", "there is ... and ...", relative clauses), so a true paraphrase with a different
  surface form;
* N is P1's template rendered with facts changed in one way, so lexically close but false:

  - ``replace_att``: one object's colour replaced with a colour not in the scene;
  - ``replace_obj``: one object's noun replaced with a noun not in the scene;
  - ``replace_rel``: the relation replaced with its opposite (only the relation word changes);
  - ``swap_att``: the colours (or sizes) of the two objects exchanged;
  - ``swap_obj``: the nouns of the two objects exchanged, attributes left in place.

Generation uses one `random.Random(seed)` and nothing else, so a seed gives the same items on
every run and platform. Items refer to their scene as ``image = "synthetic:<scene id>"``; the
scene id spells the scene out, so `scene_for` needs no lookup table. Bump `GENERATOR_VERSION`
whenever the output for a seed changes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from lexsem.benchmarks.items import TripletItem
from lexsem.digests import json_sha256
from lexsem.errors import LexsemError

GENERATOR_VERSION = 1
DEFAULT_SEED = 0
DEFAULT_PER_SUBSET = 100
MAX_PER_SUBSET = 2000
IMAGE_PREFIX = "synthetic:"

SUBSETS: tuple[str, ...] = ("replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")

# Drawable nouns (simple shapes for the image renderer). All start with a consonant, so every
# article is "a" and swapping or replacing a noun changes no other word.
NOUNS: tuple[str, ...] = (
    "ball",
    "box",
    "car",
    "cup",
    "flower",
    "hat",
    "house",
    "kite",
    "star",
    "tree",
)
# Colour name -> RGB the renderer should draw it with (on a white background).
COLOUR_RGB: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "blue": (30, 70, 220),
    "green": (30, 160, 50),
    "yellow": (240, 210, 20),
    "orange": (245, 130, 20),
    "purple": (130, 40, 170),
    "pink": (245, 120, 180),
    "black": (20, 20, 20),
}
COLOURS: tuple[str, ...] = tuple(COLOUR_RGB)
SIZES: tuple[str, ...] = ("small", "large")

# Relations a caption can state ("subject RELATION reference") and their opposites: "A left_of B"
# is false whenever "A right_of B" is true, and equivalent to "B right_of A".
RELATIONS: tuple[str, ...] = ("left_of", "right_of", "above", "below")
OPPOSITE: dict[str, str] = {
    "left_of": "right_of",
    "right_of": "left_of",
    "above": "below",
    "below": "above",
}
# The relations a Scene is stored with: `first` is left of / above `second`.
SCENE_RELATIONS: tuple[str, ...] = ("left_of", "above")

_REL_PHRASE = {
    "left_of": "to the left of",
    "right_of": "to the right of",
    "above": "above",
    "below": "below",
}
# "B has A to its left" == "A left_of B".
_REL_PRONOUN = {
    "left_of": "to its left",
    "right_of": "to its right",
    "above": "above it",
    "below": "below it",
}


@dataclass(frozen=True)
class SceneObject:
    """One drawn object, or an object a caption describes."""

    noun: str
    colour: str
    size: str

    def __post_init__(self) -> None:
        if self.noun not in NOUNS:
            raise ValueError(f"unknown noun {self.noun!r}")
        if self.colour not in COLOUR_RGB:
            raise ValueError(f"unknown colour {self.colour!r}")
        if self.size not in SIZES:
            raise ValueError(f"unknown size {self.size!r}")

    @property
    def key(self) -> str:
        return f"{self.size}-{self.colour}-{self.noun}"


@dataclass(frozen=True)
class Scene:
    """Two objects with distinct nouns; `first` is left of (or above) `second`.

    For ``relation == "left_of"`` the objects sit side by side, `first` on the left; for
    ``"above"`` one above the other, `first` on top. Nothing else is in the picture.
    """

    first: SceneObject
    relation: str
    second: SceneObject

    def __post_init__(self) -> None:
        if self.relation not in SCENE_RELATIONS:
            raise ValueError(f"scene relation must be one of {SCENE_RELATIONS}: {self.relation!r}")
        if self.first.noun == self.second.noun:
            raise ValueError(f"scene objects need distinct nouns: {self.first.noun!r} twice")

    @property
    def id(self) -> str:
        """Stable and self-describing, e.g. ``small-red-ball.left_of.large-blue-box``."""
        return f"{self.first.key}.{self.relation}.{self.second.key}"

    @property
    def image_ref(self) -> str:
        return IMAGE_PREFIX + self.id

    @property
    def objects(self) -> tuple[SceneObject, SceneObject]:
        return (self.first, self.second)

    @classmethod
    def from_id(cls, scene_id: str) -> Scene:
        parts = scene_id.split(".")
        if len(parts) != 3:
            raise ValueError(f"not a synthetic scene id: {scene_id!r}")
        first, relation, second = parts
        return cls(_object_from_key(first), relation, _object_from_key(second))

    def holds(self, subject: str, relation: str, reference: str) -> bool:
        """Whether the object named `subject` stands in `relation` to the one named `reference`."""
        nouns = (self.first.noun, self.second.noun)
        if subject not in nouns or reference not in nouns or subject == reference:
            return False
        if relation in OPPOSITE and relation not in SCENE_RELATIONS:
            relation, subject, reference = OPPOSITE[relation], reference, subject
        return (relation, subject, reference) == (self.relation, *nouns)


def _object_from_key(key: str) -> SceneObject:
    parts = key.split("-")
    if len(parts) != 3:
        raise ValueError(f"not a synthetic object key: {key!r}")
    size, colour, noun = parts
    return SceneObject(noun=noun, colour=colour, size=size)


@dataclass(frozen=True)
class Caption:
    """A caption's text and the facts it states: `subject` `relation` `reference`."""

    text: str
    template: str
    subject: SceneObject
    relation: str
    reference: SceneObject

    def is_true_of(self, scene: Scene) -> bool:
        present = set(scene.objects)
        return (
            self.subject in present
            and self.reference in present
            and scene.holds(self.subject.noun, self.relation, self.reference.noun)
        )


@dataclass(frozen=True)
class SyntheticTriplet:
    """One generated item with its scene and the structured captions behind its texts."""

    item: TripletItem
    scene: Scene
    p1: Caption
    p2: Caption
    n: Caption


# --- templates ------------------------------------------------------------------------------


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _indef(o: SceneObject) -> str:
    return f"{_article(o.size)} {o.size} {o.colour} {o.noun}"


def _def(o: SceneObject) -> str:
    return f"the {o.size} {o.colour} {o.noun}"


def _clause(o: SceneObject) -> str:
    return f"{_article(o.noun)} {o.noun} that is {o.size} and {o.colour}"


_Render = Callable[[SceneObject, str, SceneObject], str]


@dataclass(frozen=True)
class _Template:
    name: str
    family: str  # P2 always comes from a family other than P1's
    render: _Render


_TEMPLATES: tuple[_Template, ...] = (
    _Template("is", "plain", lambda a, r, b: f"{_indef(a)} is {_REL_PHRASE[r]} {_indef(b)}"),
    _Template("np", "plain", lambda a, r, b: f"{_indef(a)} {_REL_PHRASE[r]} {_indef(b)}"),
    _Template(
        "there_is", "plain", lambda a, r, b: f"there is {_indef(a)} {_REL_PHRASE[r]} {_indef(b)}"
    ),
    _Template(
        "inverse",
        "inverse",
        lambda a, r, b: f"{_indef(b)} is {_REL_PHRASE[OPPOSITE[r]]} {_indef(a)}",
    ),
    _Template("fronted", "fronted", lambda a, r, b: f"{_REL_PHRASE[r]} {_def(b)} is {_indef(a)}"),
    _Template("has", "has", lambda a, r, b: f"{_indef(b)} has {_indef(a)} {_REL_PRONOUN[r]}"),
    _Template("with", "has", lambda a, r, b: f"{_indef(b)} with {_indef(a)} {_REL_PRONOUN[r]}"),
    _Template(
        "conj",
        "conj",
        lambda a, r, b: (
            f"there is {_indef(a)} and {_indef(b)}, "
            f"and the {a.noun} is {_REL_PHRASE[r]} the {b.noun}"
        ),
    ),
    _Template("clause", "clause", lambda a, r, b: f"{_clause(a)} is {_REL_PHRASE[r]} {_clause(b)}"),
)
_BY_NAME = {t.name: t for t in _TEMPLATES}


def render(template: str, subject: SceneObject, relation: str, reference: SceneObject) -> Caption:
    """Render the facts `subject relation reference` with a named template."""
    t = _BY_NAME[template]
    s = t.render(subject, relation, reference)
    return Caption(s[0].upper() + s[1:] + ".", template, subject, relation, reference)


TEMPLATES: tuple[str, ...] = tuple(t.name for t in _TEMPLATES)


# --- generation -----------------------------------------------------------------------------


def _pick(rng: random.Random, seq: Sequence[str]) -> str:
    return seq[rng.randrange(len(seq))]


def _random_scene(rng: random.Random) -> Scene:
    noun_a = _pick(rng, NOUNS)
    noun_b = _pick(rng, [n for n in NOUNS if n != noun_a])
    a = SceneObject(noun_a, _pick(rng, COLOURS), _pick(rng, SIZES))
    b = SceneObject(noun_b, _pick(rng, COLOURS), _pick(rng, SIZES))
    return Scene(a, _pick(rng, SCENE_RELATIONS), b)


def usable(subset: str, scene: Scene) -> bool:
    """Whether `scene` can give a negative of kind `subset` (`negative_caption`)."""
    # Swaps need objects that differ in colour and in size: exchanging equal attributes would
    # leave the caption true, and with one attribute equal, swapping the other (or the nouns)
    # would be the same change as swapping the nouns (or the other attribute).
    if subset in ("swap_att", "swap_obj"):
        a, b = scene.objects
        return a.colour != b.colour and a.size != b.size
    return True


def negative_caption(subset: str, rng: random.Random, p1: Caption, scene: Scene) -> Caption:
    """A caption of kind `subset` (a SugarCrepe subset name) that `p1`'s change makes false of
    `scene`; `scene` must be `usable` for that kind."""
    a, rel, b = p1.subject, p1.relation, p1.reference
    if subset in ("replace_att", "replace_obj"):  # one object gets a value no object has
        kind, values = ("colour", COLOURS) if subset == "replace_att" else ("noun", NOUNS)
        used = {getattr(o, kind) for o in scene.objects}
        value = _pick(rng, [v for v in values if v not in used])
        if rng.randrange(2):
            a = replace(a, **{kind: value})
        else:
            b = replace(b, **{kind: value})
    elif subset == "replace_rel":
        rel = OPPOSITE[rel]
    elif subset == "swap_att":
        kind = _pick(rng, ("colour", "size"))
        a, b = replace(a, **{kind: getattr(b, kind)}), replace(b, **{kind: getattr(a, kind)})
    elif subset == "swap_obj":
        a, b = replace(a, noun=b.noun), replace(b, noun=a.noun)
    else:  # pragma: no cover - guarded by the caller
        raise AssertionError(subset)
    return render(p1.template, a, rel, b)


def _triplet(subset: str, rng: random.Random, scene: Scene) -> tuple[Caption, Caption, Caption]:
    # The caption's subject is either object; the relation follows from the scene.
    if rng.randrange(2):
        subject, relation, reference = scene.first, scene.relation, scene.second
    else:
        subject, relation, reference = scene.second, OPPOSITE[scene.relation], scene.first
    t1 = _pick(rng, TEMPLATES)
    family = _BY_NAME[t1].family
    t2 = _pick(rng, [t.name for t in _TEMPLATES if t.family != family])
    p1 = render(t1, subject, relation, reference)
    p2 = render(t2, subject, relation, reference)
    n = negative_caption(subset, rng, p1, scene)
    return p1, p2, n


def generate_detailed(
    seed: int = DEFAULT_SEED, per_subset: int = DEFAULT_PER_SUBSET
) -> list[SyntheticTriplet]:
    """`per_subset` items for each subset in `SUBSETS` order; no scene is used twice."""
    if not 0 <= per_subset <= MAX_PER_SUBSET:
        raise ValueError(f"per_subset must be in 0..{MAX_PER_SUBSET}: {per_subset}")
    rng = random.Random(seed)
    used: set[Scene] = set()
    out: list[SyntheticTriplet] = []
    for subset in SUBSETS:
        for index in range(per_subset):
            while True:
                scene = _random_scene(rng)
                if scene in used or not usable(subset, scene):
                    continue
                p1, p2, n = _triplet(subset, rng, scene)
                if len({p1.text, p2.text, n.text}) == 3:
                    break
            used.add(scene)
            item = TripletItem(
                id=f"{subset}-{index:04d}",
                subset=subset,
                image=scene.image_ref,
                p1=p1.text,
                p2=p2.text,
                n=n.text,
            )
            out.append(SyntheticTriplet(item, scene, p1, p2, n))
    return out


def generate(
    seed: int = DEFAULT_SEED, per_subset: int = DEFAULT_PER_SUBSET
) -> list[tuple[TripletItem, Scene]]:
    """The generated items with their scenes; the same seed always gives the same list."""
    return [(t.item, t.scene) for t in generate_detailed(seed, per_subset)]


@lru_cache(maxsize=8)
def _generation(seed: int, per_subset: int) -> tuple[SyntheticTriplet, ...]:
    return tuple(generate_detailed(seed, per_subset))


def _check_subset(subset: str) -> None:
    if subset not in SUBSETS:
        raise LexsemError(
            f"synthetic benchmark has no subset {subset!r} (subsets: {', '.join(SUBSETS)})"
        )


def load_synthetic(path: Path | None, subset: str, *, strict: bool = True) -> list[TripletItem]:
    """Registry loader: the default generation's items of `subset` (`path` must be None)."""
    del strict  # generated texts are never empty
    if path is not None:
        raise LexsemError(f"the synthetic benchmark is generated and reads no file (got {path})")
    _check_subset(subset)
    return [
        t.item for t in _generation(DEFAULT_SEED, DEFAULT_PER_SUBSET) if t.item.subset == subset
    ]


@lru_cache(maxsize=8)
def content_sha256(seed: int = DEFAULT_SEED, per_subset: int = DEFAULT_PER_SUBSET) -> str:
    """sha256 of a canonical JSON form of a generation (with `GENERATOR_VERSION`)."""
    payload = {
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "per_subset": per_subset,
        "items": [
            [t.item.id, t.item.subset, t.item.image, t.item.p1, t.item.p2, t.item.n]
            for t in _generation(seed, per_subset)
        ],
    }
    return json_sha256(payload)


def scene_for(image_ref: str) -> Scene:
    """The scene behind an item's ``image`` ("synthetic:<scene id>") for the image renderer.

    Scene ids spell out the scene, so this resolves items of any seed, not only the default one.
    """
    scene_id = image_ref[len(IMAGE_PREFIX) :] if image_ref.startswith(IMAGE_PREFIX) else None
    try:
        if scene_id is None:
            raise ValueError("missing the 'synthetic:' prefix")
        return Scene.from_id(scene_id)
    except ValueError as exc:
        raise LexsemError(f"not a synthetic image reference {image_ref!r}: {exc}") from None
