"""`itm:` backend: the image-text matching heads of FLAVA, BLIP, BLIP-2 and ViLT as `PairScorer`s.

The family is read from the model's `config.json` (`model_type`), without loading weights:

- `flava` → `FlavaForPreTraining`: its `itm_head` on the multimodal encoder of the unmasked
  pair (2 logits);
- `blip` → `BlipForImageTextRetrieval` (`use_itm_head=True`): `itm_score` (2 logits);
- `blip-2` → `Blip2ForImageTextRetrieval` (`use_image_text_matching_head=True`):
  `logits_per_image` (2 logits, the mean over the query tokens);
- `vilt` → `ViltForImageAndTextRetrieval`: `logits[:, 0]` (one rank logit).

Any other `model_type` is refused with a ModelError naming it.

**prob or logit** (option `score`). The three two-class heads (index 1 = "match", as in their
training labels) score by default the match *probability* `softmax(logits)[:, 1]`, as the BLIP and
SugarCrepe-style evaluation code does. `score=logit` gives instead the log-odds
`logits[:, 1] - logits[:, 0]`, i.e. `logit(prob)`: it ranks every pair exactly as the probability
does but does not saturate — in float32 two confident matches can both round to probability 1.0
and tie under a strict `>`, while their log-odds still differ. ViLT's retrieval head has a single
logit trained with a softmax over one positive and many negative captions, so it is no match
probability: ViLT scores `logit` (the default for it) and refuses `score=prob`.

**Inputs.** Texts go through the model's own tokenizer as its processor would send them (right
padding with an attention mask, so a score does not depend on the other texts of its batch;
truncated to `max_length`, by default the tokenizer's limit capped by the text position
embeddings). BLIP-2 checkpoints whose processor prepends `<image>` tokens are handled: the
Q-Former sees the query tokens followed by the text either way. Images are preprocessed by the
model's slow (PIL) image processor — torchvision is never needed — one image at a time in
`preprocess` (picklable, CPU only, run in DataLoader workers). ViLT resizes keeping the aspect
ratio, so its `preprocess` pads each image to the largest size its processor can produce and
returns `{"pixel_values", "pixel_mask"}`; ViLT ignores masked patches, so this equals the
processor's padding to the largest image of a batch (up to float rounding: ViLT shuffles its
patches). A ViLT config with `max_image_length > 0` samples patches at random when an image has
more, as transformers does (its default, -1, keeps all patches).

**Notes.** BLIP follows transformers, whose ITM reads the `[CLS]` position; the original BLIP/LAVIS
code overwrites the first token with `[ENC]` (transformers GitHub issues 22732 and 25629), so scores
can differ slightly from LAVIS. For BLIP and BLIP-2 the vision tower runs once per distinct image of
a batch (consecutive identical images — the engine sends each image with all its texts — are encoded
once); the computation is otherwise the transformers forward pass, which the tests check to rtol
1e-5. FLAVA runs `FlavaModel` + `itm_head`, which is the ITM path of `FlavaForPreTraining.forward`
without its masked-modeling and contrastive heads.

Options: `score` (prob|logit), `revision`, `dtype` (auto|fp32|fp16|bf16), `trust_remote_code`
(passed to the tokenizer and image processor loaders; the model classes are fixed per family),
`max_length`. Weights are loaded on the first `score` call (`fingerprint` and `preprocess` never
load them), in the requested dtype, `eval()`, under `torch.inference_mode()`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from lexsem.errors import ModelError
from lexsem.models.device import torch_dtype
from lexsem.models.hf_config import read_model_type
from lexsem.models.lazy import LazyModel
from lexsem.models.options import COMMON, Option, choice
from lexsem.models.text_limit import padded_batch, text_limit

__all__ = ["FAMILIES", "SCORE_MODES", "HFITMScorer"]

SCORE_MODES = ("prob", "logit")
# ViLT's processor: shorter edge -> `shortest_edge`, longer edge capped at 1333/800 of it
_VILT_LONGER_RATIO = 1333 / 800


@dataclass(frozen=True)
class Family:
    """One supported model family."""

    model_type: str
    model_class: str  # in `transformers`
    two_class: bool  # a 2-logit ITM head (else one rank logit)
    needed: tuple[str, ...]  # weight-name prefixes the score uses: missing ones are an error
    text_positions: tuple[str, ...]  # config path to the text position-embedding count

    @property
    def default_score(self) -> str:
        return "prob" if self.two_class else "logit"


FAMILIES: dict[str, Family] = {
    "flava": Family(
        "flava",
        "FlavaForPreTraining",
        True,
        (
            "flava.image_model.",
            "flava.text_model.",
            "flava.multimodal_model.",
            "flava.image_to_mm_projection.",
            "flava.text_to_mm_projection.",
            "itm_head.",
        ),
        ("text_config", "max_position_embeddings"),
    ),
    "blip": Family(
        "blip",
        "BlipForImageTextRetrieval",
        True,
        ("vision_model.", "text_encoder.", "itm_head."),
        ("text_config", "max_position_embeddings"),
    ),
    "blip-2": Family(
        "blip-2",
        "Blip2ForImageTextRetrieval",
        True,
        ("vision_model.", "query_tokens", "embeddings.", "qformer.", "itm_head."),
        ("qformer_config", "max_position_embeddings"),
    ),
    "vilt": Family(
        "vilt",
        "ViltForImageAndTextRetrieval",
        False,
        ("vilt.", "rank_output."),
        ("max_position_embeddings",),
    ),
}


def _family_of(model_type: str, name: str) -> Family:
    family = FAMILIES.get(model_type)
    if family is None:
        known = ", ".join(f"{k} ({f.model_class})" for k, f in FAMILIES.items())
        raise ModelError(
            f"model {name!r} has model_type {model_type!r}, which has no supported "
            f"image-text matching head; supported model_types: {known}"
        )
    return family


class _ITMPreprocessor:
    """One RGB PIL image → the model's CPU input (picklable; the image processor loads lazily
    from the model folder — no weights — in whichever process first needs it)."""

    def __init__(self, path: str, family: str, trust_remote_code: bool) -> None:
        self.path = path
        self.family = family
        self.trust_remote_code = trust_remote_code
        self._processor: Any = None
        self._canvas: int | None = None

    def _load(self) -> Any:
        if self._processor is None:
            from transformers import AutoImageProcessor

            try:
                proc = AutoImageProcessor.from_pretrained(
                    self.path,
                    backend="pil",
                    trust_remote_code=self.trust_remote_code,
                    local_files_only=True,
                )
            except (OSError, ValueError, KeyError, ImportError) as exc:
                raise ModelError(
                    f"could not load the image processor of {self.path}: {exc}"
                ) from exc
            if self.family == "vilt":
                self._canvas = _vilt_canvas(proc, self.path)
            self._processor = proc
        return self._processor

    def __call__(self, image: Any) -> Any:
        proc = self._load()
        out = proc(images=[image], return_tensors="pt")
        pixels = out["pixel_values"][0].to(dtype=_float32()).contiguous()
        if self.family != "vilt":
            return pixels
        return _pad_to_canvas(pixels, self._canvas or 0, self.path)

    def __repr__(self) -> str:
        return f"_ITMPreprocessor({self.path!r}, {self.family!r})"


def _float32() -> Any:
    import torch

    return torch.float32


def _vilt_canvas(proc: Any, path: str) -> int:
    """The largest height or width ViLT's processor can produce (its resize keeps the aspect
    ratio: shorter edge `shortest_edge`, longer edge at most 1333/800 of it, both rounded down to
    `size_divisor`)."""
    size = getattr(proc, "size", None)
    shortest = size.get("shortest_edge") if isinstance(size, Mapping) else None
    shortest = shortest if shortest is not None else getattr(size, "shortest_edge", None)
    divisor = int(getattr(proc, "size_divisor", None) or 32)
    if not getattr(proc, "do_resize", True) or not shortest:
        raise ModelError(
            f"the ViLT image processor of {path} does not resize by shortest_edge, so images "
            f"cannot be padded to one size; set do_resize and size.shortest_edge"
        )
    longer = int(_VILT_LONGER_RATIO * int(shortest))
    return longer // divisor * divisor


def _pad_to_canvas(pixels: Any, canvas: int, path: str) -> dict[str, Any]:
    import torch

    _, h, w = pixels.shape
    if h > canvas or w > canvas:
        raise ModelError(
            f"ViLT image of {h}x{w} pixels after preprocessing exceeds the {canvas}x{canvas} "
            f"canvas expected from the image processor of {path}"
        )
    padded = torch.zeros((pixels.shape[0], canvas, canvas), dtype=pixels.dtype)
    padded[:, :h, :w] = pixels
    mask = torch.zeros((canvas, canvas), dtype=torch.long)
    mask[:h, :w] = 1
    return {"pixel_values": padded, "pixel_mask": mask}


class HFITMScorer(LazyModel):
    """A lazy `PairScorer` over a transformers image-text matching head (FLAVA, BLIP, BLIP-2,
    ViLT; see the module doc).

    `spec`: a model NAME (hub id or local folder), an `itm:NAME?options` spec string, or a parsed
    spec (anything with `backend == "itm"`, `name` and an `options` dict). Keyword options override
    the spec's. Building it resolves the files and reads config.json; no weights are loaded.
    """

    backend: ClassVar[str] = "itm"
    description = "transformers image-text matching heads (FLAVA, BLIP, BLIP-2, ViLT): pair scorers"
    options: ClassVar[Mapping[str, Option]] = {**COMMON, "score": choice(*SCORE_MODES)}
    _not_pickled = ("_model", "_tokenizer", "_limit")  # workers need only the preprocessor

    def __init__(self, spec: Any, **kwargs: Any) -> None:
        super().__init__(spec, **kwargs)
        self.model_type = read_model_type(self.source.path)
        self.family = _family_of(self.model_type, self.spec.name)
        self.score_mode = self._score_mode(self.spec.get("score"))
        self._preprocessor = _ITMPreprocessor(
            str(self.source.path), self.family.model_type, self.trust_remote_code
        )
        self._tokenizer: Any = None
        self._limit: int | None = None

    def _score_mode(self, requested: str | None) -> str:
        if requested == "prob" and not self.family.two_class:
            raise ModelError(
                f"score=prob does not apply to {self.family.model_type} "
                f"({self.family.model_class}): its retrieval head gives one rank logit, not a "
                f"match probability; use score=logit (its default)"
            )
        return requested or self.family.default_score

    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            "family": self.family.model_type,
            "head": self.family.model_class,
            "score": self.score_mode,
        }

    def describe(self) -> dict[str, Any]:
        """Run metadata: spec, family, resolved source and identity, dtype, device."""
        return {
            **super().describe(),
            "family": self.family.model_type,
            "model_class": self.family.model_class,
            "score": self.score_mode,
        }

    # -- the PairScorer protocol ----------------------------------------------------------------
    @property
    def preprocess(self) -> _ITMPreprocessor:
        """One decoded RGB PIL image → a CPU tensor (ViLT: a dict with `pixel_values` and
        `pixel_mask`). A small picklable callable: workers never receive the model."""
        return self._preprocessor

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        """float32 scores, shape (len(texts),), of the pairs (images[i], texts[i])."""
        if isinstance(texts, str):
            raise TypeError("score takes a sequence of texts, not one string")
        texts = list(texts)
        n_images = _batch_len(images)
        if n_images != len(texts):
            raise ModelError(f"{self.name}: {n_images} images for {len(texts)} texts")
        if not texts:
            return np.zeros((0,), dtype=np.float32)
        self._ensure_loaded()
        import torch

        with torch.inference_mode():
            logits = self._forward(images, texts).to(torch.float32)
            if not self.family.two_class:
                out = logits[:, 0]
            elif self.score_mode == "prob":
                out = torch.softmax(logits, dim=-1)[:, 1]
            else:
                out = logits[:, 1] - logits[:, 0]
            result = np.ascontiguousarray(out.cpu().numpy(), dtype=np.float32)
        if result.shape != (len(texts),):
            raise ModelError(f"{self.name}: got {result.shape} scores for {len(texts)} pairs")
        return result

    # -- loading ------------------------------------------------------------------------------
    def _load(self) -> Any:
        from transformers import AutoTokenizer

        cls = self._transformers_class(
            self.family.model_class, f"model_type {self.family.model_type!r}"
        )
        tokenizer = self._from_pretrained(AutoTokenizer)
        model, info = self._from_pretrained(
            cls, remote_code=False, dtype=torch_dtype(self.dtype), output_loading_info=True
        )
        self._check_weights(
            info,
            f"the {self.family.model_class} image-text matching score needs",
            "is it an ITM/retrieval checkpoint?",
            prefixes=self.family.needed,
        )
        qformer = getattr(model.config, "qformer_config", None)
        if self.family.model_type == "blip-2" and not getattr(
            qformer, "use_qformer_text_input", False
        ):
            raise ModelError(
                f"{self.name}: this BLIP-2 checkpoint's Q-Former takes no text input "
                f"(qformer_config.use_qformer_text_input is false), so it has no image-text "
                f"matching head; use an ITM checkpoint such as Salesforce/blip2-itm-vit-g"
            )
        if tokenizer.pad_token is None:
            raise ModelError(f"{self.name}: the tokenizer has no pad token")
        tokenizer.padding_side = "right"  # our own instance
        self._limit = self._text_limit(tokenizer, model.config)
        self._tokenizer = tokenizer
        model.to(self.device)
        model.eval()
        return model

    def _text_limit(self, tokenizer: Any, config: Any) -> int | None:
        positions: Any = config
        for attr in self.family.text_positions:
            positions = getattr(positions, attr, None)
        return text_limit(self.name, self.max_length, tokenizer, positions)

    # -- scoring ------------------------------------------------------------------------------
    def _tokenize(self, texts: list[str]) -> dict[str, Any]:
        enc = padded_batch(self._tokenizer, texts, self._limit)
        return {k: v.to(self.device) for k, v in enc.items()}

    def _pixels(self, images: Any) -> tuple[Any, Any]:
        """(pixel_values on the device in the model's dtype, pixel_mask or None)."""
        import torch

        if isinstance(images, Mapping):
            values, mask = images["pixel_values"], images.get("pixel_mask")
        else:
            values, mask = images, None
        values = torch.as_tensor(values).to(self.device, dtype=torch_dtype(self.dtype))
        if mask is not None:
            mask = torch.as_tensor(mask).to(self.device)
        return values, mask

    def _forward(self, images: Any, texts: list[str]) -> Any:
        """The head's logits, shape (n, 2) for the two-class heads, (n, 1) for ViLT."""
        import torch

        model = self._model
        enc = self._tokenize(texts)
        pixels, pixel_mask = self._pixels(images)
        family = self.family.model_type
        # the text and the pixels, as the FLAVA and ViLT models both take them
        joint = {
            "input_ids": enc["input_ids"],
            "attention_mask": enc["attention_mask"],
            "token_type_ids": enc.get("token_type_ids"),
            "pixel_values": pixels,
        }
        if family == "flava":
            out = model.flava(**joint, skip_multimodal_encoder=False, return_dict=True)
            return model.itm_head(out.multimodal_embeddings)
        if family == "vilt":
            if pixel_mask is None:
                pixel_mask = torch.ones(
                    (pixels.shape[0], *pixels.shape[2:]), dtype=torch.long, device=pixels.device
                )
            return model(**joint, pixel_mask=pixel_mask, return_dict=True).logits
        unique, inverse = _consecutive_unique(pixels)
        image_embeds = model.vision_model(pixel_values=unique)[0].index_select(0, inverse)
        image_atts = torch.ones(
            image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device
        )
        if family == "blip":  # BlipForImageTextRetrieval.forward(use_itm_head=True)
            text = model.text_encoder(
                input_ids=enc["input_ids"],
                attention_mask=enc["attention_mask"],
                encoder_hidden_states=image_embeds,
                encoder_attention_mask=image_atts,
            )
            return model.itm_head(text[0][:, 0, :])
        # blip-2: Blip2ForImageTextRetrieval.forward(use_image_text_matching_head=True)
        query_tokens = model.query_tokens.expand(image_embeds.shape[0], -1, -1)
        n_query = query_tokens.shape[1]
        query_mask = torch.ones(
            query_tokens.shape[:-1], dtype=enc["attention_mask"].dtype, device=self.device
        )
        attention_mask = torch.cat([query_mask, enc["attention_mask"]], dim=1)
        query_embeds = model.embeddings(input_ids=enc["input_ids"], query_embeds=query_tokens)
        text = model.qformer(
            query_embeds=query_embeds,
            query_length=n_query,
            attention_mask=attention_mask,
            encoder_hidden_states=image_embeds,
            encoder_attention_mask=image_atts,
            return_dict=True,
        )
        hidden = text.last_hidden_state.to(dtype=model.itm_head.weight.dtype)
        return model.itm_head(hidden[:, :n_query, :]).mean(dim=1)


def _batch_len(images: Any) -> int:
    if isinstance(images, Mapping):
        images = images["pixel_values"]
    return len(images)


def _consecutive_unique(pixels: Any) -> tuple[Any, Any]:
    """Rows of `pixels` with consecutive duplicates merged, and the index of each row's copy."""
    import torch

    keep = [0]
    inverse = [0]
    for i in range(1, pixels.shape[0]):
        if not torch.equal(pixels[i], pixels[keep[-1]]):
            keep.append(i)
        inverse.append(len(keep) - 1)
    index = torch.as_tensor(inverse, dtype=torch.long, device=pixels.device)
    if len(keep) == pixels.shape[0]:
        return pixels, index
    return pixels[torch.as_tensor(keep, dtype=torch.long, device=pixels.device)], index
