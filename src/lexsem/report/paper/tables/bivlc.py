"""The columns of BiVLC's tables in a lexsem run record: SugarCrepe accuracy pooled over all
its items (BiVLC's `evaluation_SugarCrepe.py` concatenates the subsets) and BiVLC's metrics on
all 2,933 items ("BiVLC: Extending Vision-Language Compositionality Evaluation with Text-to-Image
Retrieval", §4 and §5.3)."""

from __future__ import annotations

from lexsem.report.paper.facts import Column

PAPER = "BiVLC: Extending Vision-Language Compositionality Evaluation with Text-to-Image Retrieval"
SUGARCREPE = Column(
    benchmark="sugarcrepe", task="pair", metric="acc", subset="_micro", header="SugarCrepe"
)
MAIN = tuple(
    Column(benchmark="bivlc", task="bivlc", metric=m, subset="_micro", header=h)
    for m, h in (("i2t", "I2T"), ("t2i", "T2I"), ("group", "Group"))
)
FINER = tuple(
    Column(benchmark="bivlc", task="bivlc", metric=m, subset="_micro", header=h)
    for m, h in (
        ("ipos2t", "Ipos2T"),
        ("ineg2t", "Ineg2T"),
        ("tpos2i", "Tpos2I"),
        ("tneg2i", "Tneg2I"),
    )
)


def checkpoint(repo: str) -> str:
    """What a BiVLC fine-tuned CLIP needs: its `.pt` file from the Hub, run as a local
    open_clip checkpoint."""
    return f"the .pt file of {repo} (Hugging Face Hub), run as openclip:ViT-B-32-quickgelu@PATH"
