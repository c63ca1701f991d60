"""Cross-check of lexsem's CLIP-FlanT5 and ShareGPT4V loaders against the VQAScore reference's
own code: the t2v_metrics package's model classes (``CLIPT5ForConditionalGeneration``,
``LlavaLlamaForCausalLM``) and its ``mm_utils`` (``expand2square``, ``t5_tokenizer_image_token``,
``tokenizer_image_token``), on the tiny random checkpoints of the tests. Prints the reference's
VQAScore (exp(-mean CrossEntropy) of ``Yes`` + ``</s>``, system message, square padding) and
lexsem's ``vqa:FOLDER?answer=Yes</s>`` for three captions, and their largest difference.

t2v_metrics is no dependency of lexsem; install it beside the checkout, without its
dependencies (its package root imports many; only the two model folders are loaded):

    pip install --no-deps --target .t2v t2v-metrics==3.0
    PYTHONPATH=src:tests python scripts/crosscheck_original_vlms.py --t2v .t2v

Transformers 5 refuses the reference classes' nested ``from_pretrained`` (their vision tower
loads inside ``__init__``), so each is built from its config and the checkpoint's tensors are
loaded into it (the tower's keys renamed to transformers 5's ``CLIPVisionModel``), with the
missing and left-over keys printed.
"""

from __future__ import annotations

import argparse
import glob
import sys
import tempfile
import types
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np


def _import_reference(root: Path) -> dict[str, Any]:
    """t2v_metrics' model modules without its package root (which imports its every model)."""
    sys.modules.setdefault("cv2", types.ModuleType("cv2"))  # mm_utils' video helpers only
    base = root / "t2v_metrics"
    packages = {
        "t2v_metrics": base,
        "t2v_metrics.models": base / "models",
        "t2v_metrics.models.vqascore_models": base / "models" / "vqascore_models",
    }
    for name, path in packages.items():
        module = types.ModuleType(name)
        module.__path__ = [str(path)]
        sys.modules[name] = module
    import t2v_metrics.constants as constants
    from t2v_metrics.models.vqascore_models import mm_utils
    from t2v_metrics.models.vqascore_models.clip_t5.model import (
        CLIPT5Config,
        CLIPT5ForConditionalGeneration,
    )
    from t2v_metrics.models.vqascore_models.llava.model import LlavaLlamaForCausalLM

    return {"C": constants, "mm": mm_utils, "t5": (CLIPT5ForConditionalGeneration, CLIPT5Config),
            "llava": (LlavaLlamaForCausalLM, LlavaLlamaForCausalLM.config_class)}  # fmt: skip


def _construct(classes: tuple[Any, Any], folder: Path) -> Any:
    import torch

    cls, config_cls = classes
    model = cls(config_cls.from_pretrained(str(folder)))
    state: dict[str, Any] = {}
    for f in sorted(glob.glob(str(folder / "*.bin"))):
        state.update(torch.load(f, weights_only=True))
    state = {k.replace("vision_tower.vision_model.", "vision_tower."): v for k, v in state.items()}
    res = model.load_state_dict(state, strict=False)
    left = sorted({".".join(k.split(".")[:3]) for k in res.unexpected_keys})
    print(f"{cls.__name__}: missing {res.missing_keys}, left over (key prefixes) {left}")
    return model.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--t2v", type=Path, required=True, help="the --target folder of pip")
    args = parser.parse_args()
    ref = _import_reference(args.t2v)
    import torch
    from PIL import Image
    from transformers import PreTrainedTokenizerFast
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    from builders import tiny_original_vlms as T
    from lexsem.models.factory import load_model

    C, mm = ref["C"], ref["mm"]
    work = Path(tempfile.mkdtemp())
    rng = np.random.default_rng(0)
    image = Image.fromarray(rng.integers(0, 256, (24, 40, 3), dtype=np.uint8))

    def pixels(tower: Path) -> Any:
        proc = CLIPImageProcessorPil.from_pretrained(str(tower))
        square = mm.expand2square(image, tuple(int(x * 255) for x in proc.image_mean))
        return proc(images=[square], return_tensors="pt")["pixel_values"]

    def question(text: str) -> str:
        ask = T.QUESTION.format(text)
        return f"{C.SYSTEM_MSG} USER: {C.DEFAULT_IMAGE_TOKEN}\n{ask} ASSISTANT: "

    def clip_t5(tok: Any, model: Any, px: Any, text: str) -> float:
        ids = mm.t5_tokenizer_image_token(question(text), tok, return_tensors="pt")[None]
        labels = mm.t5_tokenizer_image_token("Yes", tok, return_tensors="pt")[None]
        out = model(input_ids=ids, attention_mask=ids.ne(tok.pad_token_id),
                    decoder_attention_mask=labels.ne(C.IGNORE_INDEX), labels=labels, images=px,
                    return_dict=True)  # fmt: skip
        return float((-torch.nn.CrossEntropyLoss()(out.logits[0], labels[0])).exp())

    def llava(tok: Any, model: Any, px: Any, text: str) -> float:
        qs = question(text)
        ids = mm.tokenizer_image_token(qs + "Yes</s>", tok, return_tensors="pt")
        labels = ids.clone()
        labels[: len(mm.tokenizer_image_token(qs, tok)) - 1] = C.IGNORE_INDEX
        _, mask, _, embeds, labels = model.prepare_inputs_labels_for_multimodal(
            ids[None], ids[None].ne(tok.pad_token_id), None, labels[None], px
        )
        hidden = model.model(input_ids=None, attention_mask=mask, inputs_embeds=embeds,
                             return_dict=False)[0]  # fmt: skip
        logits = model.lm_head(hidden)
        loss = torch.nn.CrossEntropyLoss()(logits[0, :-1], labels[0, 1:])
        return float((-loss).exp())

    cases = (("clip-flant5-xxl", T.write_clip_t5, "t5", clip_t5),
             ("ShareGPT4V-7B", T.write_sharegpt4v, "llava", llava))  # fmt: skip
    for name, write, key, score in cases:
        tiny = write(work / name)
        tok = PreTrainedTokenizerFast.from_pretrained(str(tiny.folder))
        if tok.pad_token is None:
            tok.pad_token = tok.unk_token  # as LLaVAModel.load_model
        model = _construct(ref[key], tiny.folder)
        tower = model.get_vision_tower()
        if not tower.is_loaded:
            tower.load_model()
        px = pixels(tiny.tower)
        with torch.no_grad():
            want = np.array([score(tok, model, px, t) for t in T.CAPTIONS])
        spec = f"vqa:{tiny.folder}?answer={quote('Yes</s>')}"
        got = load_model(spec, device="cpu").score([image] * len(T.CAPTIONS), T.CAPTIONS)
        print(f"{name}: reference {want.tolist()}\n{name}: lexsem    {got.tolist()}")
        print(f"{name}: largest difference {np.abs(want - got).max():.3g}")


if __name__ == "__main__":
    main()
