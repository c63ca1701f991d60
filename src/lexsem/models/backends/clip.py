"""`clip:` backend: CLIP-like dual encoders from transformers — one object, text and image towers.

`clip:NAME` (NAME a hub id or a local folder) reads NAME's `config.json` and picks the family from
its `model_type` (an unsupported one is an error naming it and the supported list):

| family | model_type | transformers class | text preprocessing (as the family documents it) |
|---|---|---|---|
| clip | clip | CLIPModel | padding to the longest text, truncation at 77 (the positions) |
| siglip | siglip | SiglipModel | lowercased, padding="max_length" to 64, input_ids only |
| siglip2 | siglip2 | Siglip2Model (NaFlex) | as siglip |
| align | align | AlignModel | padding="max_length" to 64 (AlignProcessor's defaults) |
| altclip | altclip | AltCLIPModel | padding to the longest text, truncation at 512 |
| flava | flava | FlavaModel | padding="max_length" to 77 (the FLAVA docs' example) |
| blip | blip | BlipForImageTextRetrieval | padding="max_length" to 35 (BLIP's retrieval code) |
| blip2 | blip-2 | Blip2ForImageTextRetrieval | padding="max_length" to 32 (LAVIS `max_txt_len`) |

Text: the model's own tokenizer (`AutoTokenizer`), padding always on the right (CLIP reads the
EOS position, SigLIP the last position), truncation at the family's length above, capped at the
model's text positions; the `max_length` option replaces that length. SigLIP and SigLIP 2 were
trained (big_vision; open_clip replicates it) on lowercased text padded to 64 tokens with no
padding mask — the pooled token is the last position, a pad token for short texts — so their
texts are lowercased and only `input_ids` are passed (the SigLIP 1 tokenizer lowercases anyway;
the Hugging Face docs ask for `padding="max_length"`, and for SigLIP 2 `max_length=64` and
lowercased text). For every other family the attention mask is passed. The BLIP/LAVIS caption
cleaning (dropping punctuation, a word limit) is not applied: the text is given to the
tokenizer as it is, as the Hugging Face processors do.

The "longest" families pad each batch only to its longest text (texts are batched by token
count). For CLIP this gives the embeddings of padding to the full 77 tokens: its text tower is
causal and pools at the first EOS token (the highest id, for old configs), which comes before
any padding, and the padding is masked besides. SigLIP's would change (no padding mask, pooled
at the last position), so it keeps max_length padding; `tests/test_text_trim.py` checks both.

Embeddings (raw, not normalised; the engine normalises):
- clip, siglip, siglip2, align, altclip: `get_text_features` / `get_image_features`.
- flava: `get_text_features` / `get_image_features` project every token; the contrastive
  embedding is the projection of the CLS token (`[:, 0]`), as FLAVA's contrastive loss uses.
- blip (ITC, i.e. `use_itm_head=False`): `text_proj` of the text encoder's CLS state (text-only
  mode, no cross-attention) and `vision_proj` of the vision CLS state.
- blip2 (ITC): the text embedding is `text_projection` of the Q-Former's CLS state (text-only).
  An image is *32 query embeddings*, and the ITC similarity is the maximum over the queries of
  their cosine with the text, which no single image vector reproduces. So BLIP-2 is a
  `Blip2ITCScorer`: a `TextEncoder` plus a `PairScorer` whose `score(images, texts)` is exactly
  that ITC similarity (`encode_image_queries` gives the raw (n, queries, d) embeddings); it has
  no `encode_images`.

Images: `preprocess(image)` runs the model's image processor (`AutoImageProcessor`, always the
PIL/numpy backend — never torchvision — so CPU-only and picklable) on one RGB PIL image and
returns `pixel_values[0]`, a CPU float32 tensor; for SigLIP 2 (NaFlex) a dict of
`pixel_values`, `pixel_attention_mask` and `spatial_shapes` (one image's rows; the DataLoader's
default collate stacks them). `encode_images(batch)` takes the stacked batch. Pickling an
encoder (as DataLoader workers may) drops the loaded model and tokenizer: a worker only needs
the image processor.

Options: `revision`, `dtype`, `max_length` (text tokens), `trust_remote_code`, and `prefix` /
`template` for the text. Weights load lazily on the first encode, from the resolved local folder,
in the requested dtype; a checkpoint missing some of the family's weights (e.g. a BLIP captioning
checkpoint, which has no ITC projections) is an error, not a silently random projection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from lexsem.clock import span
from lexsem.errors import ModelError
from lexsem.models.device import torch_dtype
from lexsem.models.hf_config import read_config
from lexsem.models.lazy import builds
from lexsem.models.options import COMMON, TEXT_INPUT, Option
from lexsem.models.source import resolve_source
from lexsem.models.spec import ModelSpec, parse_model_spec
from lexsem.models.text_encoder import LazyTextEncoder
from lexsem.models.text_limit import text_limit

__all__ = [
    "FAMILIES",
    "Blip2ITCScorer",
    "DualFamily",
    "HFDualEncoder",
    "detect_family",
    "open_dual_encoder",
    "supported_model_types",
]


@dataclass(frozen=True)
class DualFamily:
    """How one model family is loaded, tokenised and read out."""

    name: str
    model_type: str  # config.json `model_type`
    model_class: str  # the transformers class loaded
    padding: str  # "longest" or "max_length"
    max_length: int | None  # default text length (capped at the positions); None: the positions
    lowercase: bool  # lowercase texts before tokenizing
    attention_mask: bool  # pass the attention mask to the text tower
    text_config: str = "text_config"  # the sub-config holding the text positions
    roberta_positions: bool = False  # positions start after the pad id (pad id + 1 unusable)
    image_keys: tuple[str, ...] = ("pixel_values",)
    architectures: tuple[str, ...] = ()  # checkpoint classes it loads from (empty: any)

    def text_settings(self) -> dict[str, Any]:
        """The text preprocessing, for the fingerprint (the max_length option is apart)."""
        return {
            "padding": self.padding,
            "padding_side": "right",
            "default_max_length": self.max_length,
            "roberta_positions": self.roberta_positions,
            "lowercase": self.lowercase,
            "attention_mask": self.attention_mask,
        }

    def image_settings(self) -> dict[str, Any]:
        """The image preprocessing, for the fingerprint (its parameters are in the model files)."""
        return {
            "processor": "AutoImageProcessor",
            "backend": "pil",
            "inputs": list(self.image_keys),
        }


FAMILIES: dict[str, DualFamily] = {
    f.model_type: f
    for f in (
        DualFamily("clip", "clip", "CLIPModel", "longest", None, False, True),
        DualFamily("siglip", "siglip", "SiglipModel", "max_length", 64, True, False),
        DualFamily(
            "siglip2",
            "siglip2",
            "Siglip2Model",
            "max_length",
            64,
            True,
            False,
            image_keys=("pixel_values", "pixel_attention_mask", "spatial_shapes"),
        ),
        DualFamily("align", "align", "AlignModel", "max_length", 64, False, True),
        DualFamily(
            "altclip",
            "altclip",
            "AltCLIPModel",
            "longest",
            None,
            False,
            True,
            roberta_positions=True,
        ),
        DualFamily("flava", "flava", "FlavaModel", "max_length", 77, False, True),
        DualFamily(
            "blip",
            "blip",
            "BlipForImageTextRetrieval",
            "max_length",
            35,
            False,
            True,
            architectures=("BlipForImageTextRetrieval",),
        ),
        DualFamily(
            "blip2",
            "blip-2",
            "Blip2ForImageTextRetrieval",
            "max_length",
            32,
            False,
            True,
            text_config="qformer_config",
            architectures=("Blip2ForImageTextRetrieval",),
        ),
    )
}


def supported_model_types() -> list[str]:
    """The `model_type` values the `clip:` backend loads."""
    return list(FAMILIES)


def detect_family(folder: Any, *, name: str | None = None) -> DualFamily:
    """The family of the model in `folder`, from its config.json (no weights, no transformers)."""
    label = name or str(folder)
    needed_for = (
        f"the clip: backend needs a transformers model folder (model_type one of: "
        f"{', '.join(FAMILIES)})"
    )
    config = read_config(folder, needed_for=needed_for)
    model_type = config.get("model_type")
    family = FAMILIES.get(model_type) if isinstance(model_type, str) else None
    if family is None:
        raise ModelError(
            f"model {label!r} has model_type {model_type!r}, which the clip: backend does not "
            f"support; supported model_type values: {', '.join(FAMILIES)} (text-only models "
            f"go through the hf: or st: backends)"
        )
    archs = config.get("architectures") or []
    if family.architectures and archs and not set(archs) & set(family.architectures):
        raise ModelError(
            f"model {label!r} is a {', '.join(archs)} checkpoint; the clip: backend reads "
            f"{family.name} image-text contrastive (ITC) embeddings, which only "
            f"{', '.join(family.architectures)} checkpoints have (e.g. "
            + (
                "Salesforce/blip-itm-base-coco)"
                if family.name == "blip"
                else "Salesforce/blip2-itm-vit-g)"
            )
        )
    return family


# -- small helpers over model outputs ---------------------------------------------------------
def _pooled(output: Any) -> Any:
    """A features tensor from `get_*_features` (a tensor in transformers 4, an output in 5)."""
    import torch

    if isinstance(output, torch.Tensor):
        return output
    pooled = getattr(output, "pooler_output", None)
    return pooled if pooled is not None else output[0]


def _hidden(output: Any) -> Any:
    hidden = getattr(output, "last_hidden_state", None)
    return hidden if hidden is not None else output[0]


def _load_image_processor(path: str, trust_remote_code: bool) -> Any:
    """The slow (PIL/numpy) image processor: no torchvision, CPU-only, picklable."""
    from transformers import AutoImageProcessor
    from transformers.models.auto import image_processing_auto

    # transformers ≥ 5 chooses a backend by name; older versions by use_fast
    kwargs: dict[str, Any] = (
        {"backend": "pil"}
        if hasattr(image_processing_auto, "_resolve_backend")
        else {"use_fast": False}
    )
    return AutoImageProcessor.from_pretrained(
        path, trust_remote_code=trust_remote_code, local_files_only=True, **kwargs
    )


class _DualBase(LazyTextEncoder):
    """What the dual encoder and the BLIP-2 scorer share: family, text tower, preprocessing."""

    backend = "clip"
    description = (
        "transformers dual encoders (CLIP, SigLIP, ALIGN, AltCLIP, FLAVA, BLIP/BLIP-2 ITC)"
    )
    options: ClassVar[Mapping[str, Option]] = {**COMMON, **TEXT_INPUT}
    _not_pickled = ("_model", "_tokenizer")  # DataLoader workers need only the image processor
    _families: tuple[str, ...] = ()  # the families this class serves

    def __init__(self, spec: Any, *, family: DualFamily | None = None, **kwargs: Any) -> None:
        """`family`: the model's family when already read from its config.json; the other
        keyword arguments as for `LazyModel`."""
        super().__init__(spec, **kwargs)
        self.family = family or detect_family(self.source.path, name=self.name)
        if self.family.name not in self._families:
            other = "Blip2ITCScorer" if self.family.name == "blip2" else "HFDualEncoder"
            raise ModelError(
                f"{type(self).__name__} does not serve {self.family.name} models "
                f"({self.name!r}); use {other} (or load_text_encoder, which picks it)"
            )
        self._tokenizer: Any = None
        self._limit: int | None = None
        self._image_processor: Any = None

    # -- fingerprint and metadata -------------------------------------------------------------
    def _fingerprint_options(self) -> dict[str, Any]:
        return {
            **super()._fingerprint_options(),
            "family": self.family.name,
            "model_class": self.family.model_class,
            "text": self.family.text_settings(),
            "image": self.family.image_settings(),
        }

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "family": self.family.name}

    # -- loading --------------------------------------------------------------------------------
    def torch_module(self) -> Any:
        """The transformers model, its weights loaded on first use: the module training
        updates in place (`text_features` / `image_features` run it)."""
        return self._ensure_loaded()

    def _load(self) -> Any:
        from transformers import AutoTokenizer

        model_cls = self._transformers_class(self.family.model_class, f"{self.family.name} models")
        tokenizer = self._from_pretrained(AutoTokenizer)
        model, info = self._from_pretrained(
            model_cls, dtype=torch_dtype(self.dtype), output_loading_info=True
        )
        # projections first: they are what a non-retrieval checkpoint of the family lacks
        self._check_weights(
            info,
            f"a {self.family.model_class} needs",
            f"they would be random. Is it a {self.family.name} image-text retrieval/contrastive "
            "checkpoint?",
            first="proj",
        )
        qformer = getattr(model.config, "qformer_config", None)
        if self.family.name == "blip2" and not getattr(qformer, "use_qformer_text_input", True):
            raise ModelError(
                f"{self.name}: its Q-Former has no text input (use_qformer_text_input is false), "
                f"so it has no ITC text embeddings; use an ITM/ITC checkpoint such as "
                f"Salesforce/blip2-itm-vit-g"
            )
        if tokenizer.pad_token is None:
            fallback = tokenizer.eos_token or tokenizer.unk_token
            if fallback is None:
                raise ModelError(f"{self.name}: the tokenizer has no pad, eos or unk token")
            tokenizer.pad_token = fallback
        tokenizer.padding_side = "right"  # our own instance; see the module doc
        tokenizer.truncation_side = "right"
        self._limit = self._text_limit(tokenizer, model.config)
        self._tokenizer = tokenizer
        model.to(self.device)
        model.eval()
        return model

    def _text_limit(self, tokenizer: Any, config: Any) -> int:
        sub = getattr(config, self.family.text_config, None)
        positions = getattr(sub, "max_position_embeddings", None)
        if positions is not None:
            positions = int(positions)
            if self.family.roberta_positions:  # position ids start after the padding index
                pad = getattr(sub, "pad_token_id", None)
                positions -= (1 if pad is None else int(pad)) + 1
        limit = text_limit(self.name, self.max_length, tokenizer, positions, self.family.max_length)
        if limit is None:
            raise ModelError(f"{self.name}: cannot tell the text length limit; set max_length")
        return limit

    @property
    def text_length(self) -> int | None:
        """The token length texts are truncated (and, for max_length padding, padded) to; known
        once the model is loaded."""
        return self._limit

    # -- text -----------------------------------------------------------------------------------
    def format_texts(self, texts: Sequence[str]) -> list[str]:
        """The texts as the tokenizer receives them (prefix/template, then lowercasing)."""
        out = [self.spec.format_text(t) for t in texts]
        return [t.lower() for t in out] if self.family.lowercase else out

    def tokenize(self, texts: Sequence[str]) -> dict[str, Any]:
        """Formatted texts → the text tower's inputs (torch tensors, on the CPU; model loaded)."""
        with span("tokenize"):
            enc = self._tokenizer(
                list(texts),
                padding="max_length" if self.family.padding == "max_length" else True,
                truncation=True,
                max_length=self._limit,
                return_tensors="pt",
            )
        inputs = {"input_ids": enc["input_ids"]}
        if self.family.attention_mask and "attention_mask" in enc:
            inputs["attention_mask"] = enc["attention_mask"]
        return inputs

    def _token_lengths(self, texts: list[str]) -> list[int] | None:
        if self.family.padding == "max_length":
            return None  # every batch is padded to the same width
        with span("tokenize"):
            enc = self._tokenizer(
                self.format_texts(texts),
                truncation=True,
                max_length=self._limit,
                return_attention_mask=False,
            )
        return [len(ids) for ids in enc["input_ids"]]

    def text_features(self, model: Any, inputs: dict[str, Any]) -> Any:
        """The (unnormalised) text embeddings of tokenized `inputs` from the loaded `model`
        (differentiable: training calls it outside inference mode)."""
        family = self.family.name
        if family == "blip":
            hidden = _hidden(
                model.text_encoder(
                    input_ids=inputs["input_ids"], attention_mask=inputs.get("attention_mask")
                )
            )
            return model.text_proj(hidden[:, 0, :])
        if family == "blip2":
            embeds = model.embeddings(input_ids=inputs["input_ids"])
            hidden = _hidden(
                model.qformer(
                    query_embeds=embeds,
                    query_length=0,
                    attention_mask=inputs.get("attention_mask"),
                )
            )
            hidden = hidden.to(dtype=model.text_projection.weight.dtype)
            return model.text_projection(hidden[:, 0, :])
        feats = _pooled(model.get_text_features(**inputs))
        if feats.ndim == 3:  # FLAVA projects every token: the CLS token's is the embedding
            feats = feats[:, 0, :]
        return feats

    def _encode_batches(self, texts: list[str], batch_size: int) -> np.ndarray:
        import torch

        model = self._model
        formatted = self.format_texts(texts)
        out: list[np.ndarray] = []
        with torch.inference_mode():
            for start in range(0, len(formatted), batch_size):
                inputs = self.tokenize(formatted[start : start + batch_size])
                inputs = {k: v.to(self.device) for k, v in inputs.items()}
                emb = self.text_features(model, inputs)
                out.append(emb.to(torch.float32).cpu().numpy())
        return np.concatenate(out, axis=0)

    # -- images ---------------------------------------------------------------------------------
    @property
    def image_processor(self) -> Any:
        """The model's image processor (PIL backend), loaded on first use (no weights)."""
        if self._image_processor is None:
            try:
                self._image_processor = _load_image_processor(
                    str(self.source.path), self.trust_remote_code
                )
            except (OSError, ValueError, KeyError, ImportError) as exc:
                raise ModelError(
                    f"could not load the image processor of {self.name!r} from "
                    f"{self.source.path}: {exc}"
                ) from exc
        return self._image_processor

    def preprocess(self, image: Any) -> Any:
        """One RGB PIL image → the model's input for it (CPU tensors; see the module doc)."""
        out = self.image_processor(images=image, return_tensors="pt")
        keys = self.family.image_keys
        missing = [k for k in keys if k not in out]
        if missing:
            raise ModelError(
                f"{self.name}: the image processor returned {sorted(out.keys())}, "
                f"without {', '.join(missing)}"
            )
        if len(keys) == 1:
            return out[keys[0]][0].contiguous()
        return {k: out[k][0].contiguous() for k in keys}

    def _image_inputs(self, batch: Any) -> dict[str, Any]:
        """A stacked batch (tensor, array or mapping) → the vision inputs on the model device."""
        import torch

        raw = dict(batch) if isinstance(batch, Mapping) else {"pixel_values": batch}
        missing = [k for k in self.family.image_keys if k not in raw]
        if missing:
            raise ModelError(f"{self.name}: the image batch lacks {', '.join(missing)}")
        dtype = torch_dtype(self.dtype)
        inputs: dict[str, Any] = {}
        for key in self.family.image_keys:
            value = raw[key]
            if isinstance(value, np.ndarray):
                value = torch.from_numpy(value)
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"image input {key!r} must be a tensor, got {type(value).__name__}")
            value = value.to(self.device)
            if value.is_floating_point():
                value = value.to(dtype)
            inputs[key] = value
        return inputs


class HFDualEncoder(_DualBase):
    """TextEncoder + ImageEncoder over a transformers dual encoder (CLIP, SigLIP, SigLIP 2,
    ALIGN, AltCLIP, FLAVA, BLIP ITC), lazy; see the module doc."""

    _families = ("clip", "siglip", "siglip2", "align", "altclip", "flava", "blip")

    def image_features(self, model: Any, inputs: dict[str, Any]) -> Any:
        """The (unnormalised) image embeddings of the vision `inputs` from the loaded `model`
        (differentiable: training calls it outside inference mode)."""
        if self.family.name == "blip":
            hidden = _hidden(model.vision_model(pixel_values=inputs["pixel_values"]))
            return model.vision_proj(hidden[:, 0, :])
        feats = _pooled(model.get_image_features(**inputs))
        if feats.ndim == 3:  # FLAVA: the CLS token's projection
            feats = feats[:, 0, :]
        return feats

    def encode_images(self, batch: Any) -> np.ndarray:
        """float32 (n, d) raw image embeddings of a stacked batch of `preprocess` outputs."""
        import torch

        model = self._ensure_loaded()
        inputs = self._image_inputs(batch)
        n = int(inputs["pixel_values"].shape[0])
        if n == 0:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        with torch.inference_mode():
            emb = self.image_features(model, inputs)
        out = np.ascontiguousarray(emb.to(torch.float32).cpu().numpy(), dtype=np.float32)
        if out.ndim != 2 or out.shape[0] != n:
            raise ModelError(f"{self.name}: got image embeddings of shape {out.shape} for {n}")
        self._dim = out.shape[1]
        return out


class Blip2ITCScorer(_DualBase):
    """BLIP-2 image-text contrastive (ITC) model: a TextEncoder (the text's ITC embedding) and a
    PairScorer (`score` = the ITC similarity, max over the image's query embeddings of their
    cosine with the text); see the module doc."""

    _families = ("blip2",)

    def encode_image_queries(self, batch: Any) -> np.ndarray:
        """float32 (n, queries, d): the raw projected query embeddings of each image."""
        import torch

        model = self._ensure_loaded()
        inputs = self._image_inputs(batch)
        with torch.inference_mode():
            out = self._image_queries(model, inputs["pixel_values"])
        return np.ascontiguousarray(out.to(torch.float32).cpu().numpy(), dtype=np.float32)

    def _image_queries(self, model: Any, pixel_values: Any) -> Any:
        import torch

        image_embeds = _hidden(model.vision_model(pixel_values=pixel_values))
        mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
        query_tokens = model.query_tokens.expand(image_embeds.shape[0], -1, -1)
        hidden = _hidden(
            model.qformer(
                query_embeds=query_tokens,
                encoder_hidden_states=image_embeds,
                encoder_attention_mask=mask,
            )
        )
        hidden = hidden.to(dtype=model.vision_projection.weight.dtype)
        return model.vision_projection(hidden)

    def score(self, images: Any, texts: Sequence[str]) -> np.ndarray:
        """ITC similarity of each pair (images[i], texts[i]): float32 (n,)."""
        import torch

        if isinstance(texts, str):
            raise TypeError("score takes a sequence of texts, not one string")
        model = self._ensure_loaded()
        inputs = self._image_inputs(images)
        n = int(inputs["pixel_values"].shape[0])
        if n != len(texts):
            raise ModelError(f"{self.name}: {n} images for {len(texts)} texts")
        if n == 0:
            return np.zeros(0, dtype=np.float32)
        with torch.inference_mode():
            queries = self._image_queries(model, inputs["pixel_values"]).to(torch.float32)
            tokens = {
                k: v.to(self.device) for k, v in self.tokenize(self.format_texts(texts)).items()
            }
            text = self.text_features(model, tokens).to(torch.float32)
            queries = torch.nn.functional.normalize(queries, dim=-1)
            text = torch.nn.functional.normalize(text, dim=-1)
            sims = torch.einsum("nqd,nd->nq", queries, text).max(dim=1).values
        return np.ascontiguousarray(sims.cpu().numpy(), dtype=np.float32)


@builds(_DualBase)
def open_dual_encoder(spec: str | ModelSpec, **kwargs: Any) -> HFDualEncoder | Blip2ITCScorer:
    """The `clip:` encoder for `spec`: an `HFDualEncoder`, or a `Blip2ITCScorer` for BLIP-2.

    Reads config.json to pick the family; loads no weights. Keyword arguments as for
    `LazyModel`."""
    parsed = parse_model_spec(spec, backend="clip") if isinstance(spec, str) else spec
    if parsed.backend != "clip":
        raise ModelError(f"{parsed.to_string()!r} is not a clip: spec")
    offline = kwargs.get("offline")
    source = kwargs.pop("source", None)
    source = source or resolve_source(
        parsed.name, revision=parsed.revision, offline=offline, backend="clip"
    )
    family = detect_family(source.path, name=kwargs.get("name") or parsed.to_string())
    cls: type[_DualBase] = Blip2ITCScorer if family.name == "blip2" else HFDualEncoder
    return cls(spec, source=source, family=family, **kwargs)  # type: ignore[return-value]
