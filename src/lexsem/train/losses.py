"""The contrastive losses of hard-negative CLIP fine-tuning, as pure functions of L2-normalised
embeddings and a logit scale (exp already applied, as open_clip's `logit_scale.exp()`).

Every regime is one batch of B images against B positive captions (row i's caption is text i)
followed by E extra texts that are negatives only:

    image→text: CE(scale · images @ texts.T  (B×(B+E)), targets 0..B−1)
    text→image: CE(scale · texts[:B] @ images.T  (B×B),  targets 0..B−1)
    loss = ½ (image→text + text→image), each the mean over its B rows.

So a negative caption is an extra column for the images and never a query of its own. The logits
and targets come from open_clip's `ClipLoss.get_logits` / `get_ground_truth`; `ClipLoss.forward`
itself needs as many texts as images (its text→image cross-entropy gets B+E rows for B targets).

Regimes (BiVLC, §5 and App. E; NegCLIP in "When and why vision-language models behave like
bags-of-words, and what to do about it?", §4):

- `clip_coco` — `clip_loss`: N images, their N captions (E = 0).
- `trohn_text` — `text_negatives_loss`: N images, their N captions, k ≥ 1 generated hard
  negative captions per image (E = N·k; BiVLC uses k = 1: 200 images × 400 captions).
- `trohn_img` — `paired_negatives_loss`: N positive pairs and N negative pairs (a generated
  image and the negative caption it was made from): the plain symmetric loss over 2N × 2N.
- `negclip` — `negclip_loss`: images [I; I_hard] (2N: each image and a strong alternative image,
  a nearest neighbour, with its own caption) against texts [T; T_hard; T_neg; T_neg_of_hard]
  (4N: both images' captions, then the swap negatives of both); image→text over all 4N columns
  with row j's target column j, text→image for the 2N true captions over the 2N images.

Distributed training: no gathering across processes. Each process computes its loss on its own
batch and DDP averages the gradients, so the negatives a row competes with are those of its
process (open_clip's `gather_with_grad` / `local_loss` would put the gathered texts in process
order, which breaks the "first B texts are the positives" layout above).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import Tensor

from lexsem.errors import DataError

if TYPE_CHECKING:
    from open_clip.loss import ClipLoss

__all__ = [
    "IMAGE_FIELDS",
    "LOSSES",
    "REGIME_FIELDS",
    "Batch",
    "batch_loss",
    "clip_loss",
    "contrastive_layout",
    "loss_for",
    "negclip_loss",
    "paired_negatives_loss",
    "text_negatives_loss",
]

Scale = Tensor | float


# -- checks --------------------------------------------------------------------------------------
def _matrix(name: str, x: Tensor) -> Tensor:
    """`x` as a non-empty (rows, dim) tensor, or an error naming it."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows, dim), got shape {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)})")
    return x


def _same_rows(a_name: str, a: Tensor, b_name: str, b: Tensor) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{b_name} has {b.shape[0]} rows but {a_name} has {a.shape[0]}: "
            f"they must pair row by row"
        )


def _same_dim(named: Mapping[str, Tensor]) -> None:
    """All embeddings share one width (and one device)."""
    (first, ref), *rest = named.items()
    for name, x in rest:
        if x.shape[-1] != ref.shape[-1]:
            raise ValueError(
                f"{name} has embedding dim {x.shape[-1]} but {first} has {ref.shape[-1]}"
            )
        if x.device != ref.device:
            raise ValueError(f"{name} is on {x.device} but {first} is on {ref.device}")


def _check_scale(scale: Scale) -> None:
    if isinstance(scale, Tensor):
        if scale.numel() != 1:
            raise ValueError(
                f"scale must be a scalar (logit_scale.exp()), got shape {tuple(scale.shape)}"
            )
    elif not scale > 0:
        raise ValueError(f"scale must be > 0 (logit_scale.exp(), not its log), got {scale}")


def _negatives(neg_txt: Tensor, n: int) -> Tensor:
    """k ≥ 1 negatives per image as a (N·k, d) matrix; from (N·k, d) or (N, k, d)."""
    if not isinstance(neg_txt, Tensor):
        raise TypeError(f"neg_txt must be a torch.Tensor, got {type(neg_txt).__name__}")
    if neg_txt.ndim == 3:
        if neg_txt.shape[0] != n:
            raise ValueError(
                f"neg_txt of shape (N, k, d) = {tuple(neg_txt.shape)} has N = "
                f"{neg_txt.shape[0]} but img has {n} rows"
            )
        neg_txt = neg_txt.reshape(-1, neg_txt.shape[-1])
    neg_txt = _matrix("neg_txt", neg_txt)
    if neg_txt.shape[0] % n:
        raise ValueError(
            f"neg_txt has {neg_txt.shape[0]} rows, not a multiple of img's {n} "
            f"(k negatives per image: N·k rows)"
        )
    return neg_txt


# -- the shared computation ----------------------------------------------------------------------
@functools.cache
def _open_clip_loss() -> ClipLoss:
    """open_clip's single-process `ClipLoss`, used for its logits and targets only."""
    from lexsem.models.backends.openclip.install import import_open_clip

    import_open_clip()  # a ModelError saying how to install it
    from open_clip.loss import ClipLoss

    return ClipLoss()


def _contrastive(images: Tensor, texts: Tensor, scale: Scale) -> Tensor:
    """½[CE(images→texts, 0..B−1) + CE(texts[:B]→images, 0..B−1)], B = len(images); the texts
    after the first B are extra negative columns of the image→text direction."""
    helper = _open_clip_loss()
    per_image, per_text = helper.get_logits(images, texts, scale)
    labels = helper.get_ground_truth(images.device, images.shape[0])
    image_to_text = F.cross_entropy(per_image, labels)
    text_to_image = F.cross_entropy(per_text[: images.shape[0]], labels)
    return (image_to_text + text_to_image) / 2


# -- the losses ----------------------------------------------------------------------------------
def clip_loss(img: Tensor, txt: Tensor, scale: Scale) -> Tensor:
    """CLIP_COCO (BiVLC, App. E): in-batch symmetric contrastive loss over N images and their
    N captions, ½[CE(I→T, 0..N−1) + CE(T→I, 0..N−1)] — open_clip's `ClipLoss` in one process."""
    _matrix("img", img)
    _matrix("txt", txt)
    _same_rows("img", img, "txt", txt)
    _same_dim({"img": img, "txt": txt})
    _check_scale(scale)
    return _contrastive(img, txt, scale)


def text_negatives_loss(img: Tensor, txt: Tensor, neg_txt: Tensor, scale: Scale) -> Tensor:
    """CLIP_TROHN-Text (BiVLC, §5.1 and App. E; the text side of NegCLIP): image→text logits
    N×(N+N·k), the N captions then the negatives as extra columns, targets 0..N−1; text→image
    over the N captions only (N×N); the loss is ½ of the sum.

    `neg_txt` holds k ≥ 1 negatives per image, (N·k, d) or (N, k, d); which image a negative
    belongs to does not enter the loss (every negative is a wrong column for every image)."""
    _matrix("img", img)
    _matrix("txt", txt)
    _same_rows("img", img, "txt", txt)
    neg = _negatives(neg_txt, img.shape[0])
    _same_dim({"img": img, "txt": txt, "neg_txt": neg})
    _check_scale(scale)
    return _contrastive(img, torch.cat([txt, neg]), scale)


def paired_negatives_loss(
    img: Tensor, txt: Tensor, neg_img: Tensor, neg_txt: Tensor, scale: Scale
) -> Tensor:
    """CLIP_TROHN-Img (BiVLC, §5.2 and App. E): N positive pairs (img, txt) and N negative pairs
    (neg_img, the generated image, with neg_txt, the caption it was generated from) in one
    symmetric CLIP loss over [img; neg_img] × [txt; neg_txt], 2N × 2N."""
    for name, x in {"img": img, "txt": txt, "neg_img": neg_img, "neg_txt": neg_txt}.items():
        _matrix(name, x)
    _same_rows("img", img, "txt", txt)
    _same_rows("neg_img", neg_img, "neg_txt", neg_txt)
    _same_rows("img", img, "neg_img", neg_img)
    _same_dim({"img": img, "txt": txt, "neg_img": neg_img, "neg_txt": neg_txt})
    _check_scale(scale)
    return _contrastive(torch.cat([img, neg_img]), torch.cat([txt, neg_txt]), scale)


def negclip_loss(
    img: Tensor,
    txt: Tensor,
    neg_txt: Tensor,
    hard_img: Tensor,
    hard_txt: Tensor,
    hard_neg_txt: Tensor,
    scale: Scale,
) -> Tensor:
    """NegCLIP ("When and why vision-language models behave like bags-of-words, and what to do
    about it?", §4): each image I comes with its caption T, a swap negative T_neg of T, a strong
    alternative image I_hard (a nearest neighbour) with its caption T_hard and T_hard's swap
    negative T_neg_of_hard. Images [I; I_hard] (2N) against texts [T; T_hard; T_neg;
    T_neg_of_hard] (4N): image→text over all 4N columns with targets 0..2N−1 (row i → column
    i, row N+i → column N+i), text→image for the 2N true captions over the 2N images; ½ the sum.

    Reading: the paper adds the negative captions to the batch as extra texts and the alternative
    images with their captions as extra pairs; its public training code concatenates the four
    text groups in this order and applies the symmetric loss with the text→image logits cut to
    the first 2N rows — the same as here. So the swap negatives are never queries, and an
    alternative image is a negative for I (and I for it) in both directions."""
    named = {
        "img": img,
        "txt": txt,
        "neg_txt": neg_txt,
        "hard_img": hard_img,
        "hard_txt": hard_txt,
        "hard_neg_txt": hard_neg_txt,
    }
    for name, x in named.items():
        _matrix(name, x)
    for name in ("txt", "neg_txt", "hard_img", "hard_txt", "hard_neg_txt"):
        _same_rows("img", img, name, named[name])
    _same_dim(named)
    _check_scale(scale)
    images = torch.cat([img, hard_img])
    texts = torch.cat([txt, hard_txt, neg_txt, hard_neg_txt])
    return _contrastive(images, texts, scale)


# -- regimes and batches -------------------------------------------------------------------------
LossFn = Callable[..., Tensor]

LOSSES: Mapping[str, LossFn] = MappingProxyType(
    {
        "clip_coco": clip_loss,
        "trohn_text": text_negatives_loss,
        "trohn_img": paired_negatives_loss,
        "negclip": negclip_loss,
    }
)

# the embeddings each regime's loss takes, by its parameter names
REGIME_FIELDS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "clip_coco": ("img", "txt"),
        "trohn_text": ("img", "txt", "neg_txt"),
        "trohn_img": ("img", "txt", "neg_img", "neg_txt"),
        "negclip": ("img", "txt", "neg_txt", "hard_img", "hard_txt", "hard_neg_txt"),
    }
)

# fields the image tower encodes; the others are captions for the text tower
IMAGE_FIELDS = frozenset({"img", "neg_img", "hard_img"})


def _regime_key(regime: str) -> str:
    key = regime.strip().lower().replace("-", "_")
    if key not in LOSSES:
        raise ValueError(f"unknown training regime {regime!r}; known: {', '.join(LOSSES)}")
    return key


def loss_for(regime: str) -> LossFn:
    """The loss of a regime ("clip_coco", "trohn_text", "trohn_img", "negclip"; case and `-`
    are forgiven); it takes the fields `REGIME_FIELDS[regime]` and `scale` as keywords."""
    return LOSSES[_regime_key(regime)]


@dataclass(frozen=True)
class Batch:
    """One training batch by role: images or their embeddings in `img`, `neg_img`, `hard_img`,
    captions (token ids or embeddings) in the others. A regime needs exactly the fields
    `REGIME_FIELDS[regime]`; the rest stay None."""

    img: Tensor
    txt: Tensor
    neg_txt: Tensor | None = None
    neg_img: Tensor | None = None
    hard_img: Tensor | None = None
    hard_txt: Tensor | None = None
    hard_neg_txt: Tensor | None = None

    def present(self) -> tuple[str, ...]:
        """The fields that are set, in declaration order."""
        return tuple(f.name for f in fields(self) if getattr(self, f.name) is not None)

    def check(self, regime: str) -> None:
        """DataError naming the fields the regime needs and the batch lacks, or has and the
        regime would ignore (a dataset built for another regime)."""
        key = _regime_key(regime)
        need, have = REGIME_FIELDS[key], self.present()
        missing = [name for name in need if name not in have]
        if missing:
            raise DataError(
                f"the {key} regime needs {', '.join(need)}; this batch lacks {', '.join(missing)}"
            )
        extra = [name for name in have if name not in need]
        if extra:
            raise DataError(
                f"this batch has {', '.join(extra)}, which the {key} regime does not use "
                f"(it takes {', '.join(need)}): a dataset built for another regime?"
            )

    def inputs(self, regime: str) -> dict[str, Tensor]:
        """The regime's fields by name (checked), as keywords for `loss_for(regime)`."""
        self.check(regime)
        return {name: getattr(self, name) for name in REGIME_FIELDS[_regime_key(regime)]}


def contrastive_layout(regime: str, batch: Batch) -> tuple[Tensor, Tensor]:
    """The (images, texts) of the regime's contrastive loss on `batch` (checked): the B
    images, then B positive texts (row i's is text i) and the extra negative columns, in the
    order its loss concatenates them."""
    f = batch.inputs(regime)
    key = _regime_key(regime)
    if key == "clip_coco":
        return f["img"], f["txt"]
    if key == "trohn_text":
        return f["img"], torch.cat([f["txt"], _negatives(f["neg_txt"], f["img"].shape[0])])
    if key == "trohn_img":
        return torch.cat([f["img"], f["neg_img"]]), torch.cat([f["txt"], f["neg_txt"]])
    images = torch.cat([f["img"], f["hard_img"]])
    texts = torch.cat([f["txt"], f["hard_txt"], f["neg_txt"], f["hard_neg_txt"]])
    return images, texts


def batch_loss(regime: str, batch: Batch, scale: Scale) -> Tensor:
    """The regime's loss on a batch of embeddings."""
    return loss_for(regime)(**batch.inputs(regime), scale=scale)
