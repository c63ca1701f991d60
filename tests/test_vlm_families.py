"""Every generative-VLM family through lexsem's backends, on tiny random models built in the
test and loaded through the normal code path (`AutoProcessor` + `AutoModelForImageTextToText`
from a folder): continuation log-probabilities equal a direct, unbatched transformers
computation with every input the family needs (`tiny_vlms_*.reference_logprobs`); an image's
shared prompt start computed once gives the numbers of whole sequences; a batch of pairs with
images of several sizes equals scoring one pair at a time."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from builders import tiny_vlms_dynamic
from builders.numeric import assert_close_to_reference

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

FAMILIES: dict[str, tuple[Callable[[Path], Any], Any]] = {
    name: (factory, tiny_vlms_dynamic) for name, factory in tiny_vlms_dynamic.FACTORIES.items()
}
try:
    from builders import tiny_vlms_other

    FAMILIES.update({name: (f, tiny_vlms_other) for name, f in tiny_vlms_other.FACTORIES.items()})
except ImportError:  # pragma: no cover - the module is part of the tests
    raise

# causal families whose sequences run whole: BLIP-2's model output carries no key/value cache
# (its language model's does), InstructBLIP's query tokens depend on the whole prompt
WHOLE = {"blip2_opt", "instructblip"}
QUESTION = 'Does this figure show "{text}"? Please answer yes or no.'
CAPTIONS = ["a dog runs on the bed", "a red cat sleeps", "a blue photo of a dog"]


def pictures() -> list[Image.Image]:
    rng = np.random.default_rng(3)
    return [
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        for w, h in ((32, 40), (64, 48))
    ]


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def family(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    name = request.param
    if name == "smolvlm":
        from builders.backends import require_module

        require_module("num2words")  # SmolVLM's processor imports it
    factory, module = FAMILIES[name]
    folder = factory(tmp_path_factory.mktemp(name) / name)
    return name, folder, module


def _rows(model: Any) -> list[tuple[str, str]]:
    turn = model.user_turn("Describe the image.")
    asks = [model.user_turn(QUESTION.format(text=c)) for c in CAPTIONS[:2]]
    return [(asks[0], "Yes"), (asks[0], "No"), (asks[1], "Yes"), *((turn, c) for c in CAPTIONS)]


def test_logprobs_equal_a_direct_unbatched_computation(family: Any, monkeypatch: Any) -> None:
    from lexsem.models.factory import load_model
    from lexsem.models.vlm import prefix

    name, folder, module = family
    shared: list[bool] = []
    real = prefix.shared_prefix_logits

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        shared.append(out is not None)
        return out

    monkeypatch.setattr(prefix, "shared_prefix_logits", spy)
    model = load_model(f"vgpt:{folder}", device="cpu")
    image = pictures()[0]
    rows = _rows(model)
    got = model.logprobs(image, rows)
    whole = load_model(f"vgpt:{folder}?reuse=false", device="cpu").logprobs(image, rows)
    for (prompt, cont), lp, lp_whole in zip(rows, got, whole, strict=True):
        sep = model.layout.separator(prompt)
        want = module.reference_logprobs(folder, image, prompt, sep + cont)
        # log-probs: a log-softmax of logits of size about 1
        assert_close_to_reference(lp, want, scale=1.0, err_msg=f"{name}: {cont!r}")
        assert_close_to_reference(lp_whole, want, scale=1.0, err_msg=f"{name}: {cont!r}")
        assert np.isfinite(lp).all() and (lp <= 0).all()
    if model.layout.kind == "causal" and name not in WHOLE:
        assert shared == [True], f"{name}: the prompt start was not shared"


def test_a_batch_of_pairs_equals_one_pair_at_a_time(family: Any) -> None:
    from lexsem.models.factory import load_model
    from lexsem.models.protocols import ImageRows

    name, folder, _ = family
    a, b = pictures()
    images, texts = ImageRows([a, a, b, b, a]), [*CAPTIONS[:2], *CAPTIONS[1:], CAPTIONS[2]]
    for spec in (f"vqa:{folder}?score=vqa_norm", f"vgpt:{folder}"):
        scorer = load_model(spec, device="cpu")
        batched = scorer.score(images, texts)
        single = [
            scorer.score(ImageRows([im]), [t])[0] for im, t in zip(images, texts, strict=True)
        ]
        assert_close_to_reference(batched, single, scale=1.0, err_msg=f"{name} {spec}")
        assert np.isfinite(batched).all()
