"""The `st:` backend against `SentenceTransformer(folder).encode` on tiny random models, lazy
loading (a warm rerun from the cache never loads weights), and the real MiniLM alias."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest
import sentence_transformers
from sentence_transformers import SentenceTransformer

from builders.numeric import assert_close_to_reference
from builders.tiny_text_models import TEXTS, write_tiny_bert, write_tiny_st
from lexsem.engine.embed import embed_texts
from lexsem.engine.request_store import RequestStore
from lexsem.models.backends.st import SentenceTransformerEncoder
from lexsem.models.factory import describe, load_text_encoder
from lexsem.models.protocols import TextEncoder, fingerprint_key

pytestmark = [pytest.mark.numeric, pytest.mark.torch]


@pytest.fixture(scope="module")
def st_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("st")
    return write_tiny_st(root / "st", write_tiny_bert(root / "bert"))


@pytest.fixture(scope="module")
def reference(st_model: Path) -> SentenceTransformer:
    return SentenceTransformer(str(st_model), device="cpu")


def spec(folder: Path, **options: str) -> str:
    query = "&".join(f"{k}={quote(v, safe='')}" for k, v in options.items())
    return f"st:{folder}" + (f"?{query}" if query else "")


@pytest.mark.parametrize("batch_size", [2, 64])
def test_matches_sentence_transformers(
    st_model: Path, reference: SentenceTransformer, batch_size: int
) -> None:
    enc = load_text_encoder(spec(st_model), device="cpu")
    assert isinstance(enc, TextEncoder) and isinstance(enc, SentenceTransformerEncoder)
    got = enc.encode(TEXTS, batch_size=batch_size)
    assert got.dtype == np.float32 and got.flags.c_contiguous and got.shape == (len(TEXTS), 32)
    want = reference.encode(TEXTS, batch_size=batch_size)
    assert_close_to_reference(got, want)


def test_prefix_template_normalize(st_model: Path, reference: SentenceTransformer) -> None:
    enc = load_text_encoder(spec(st_model, prefix="query : "), device="cpu")
    want = reference.encode(["query : " + t for t in TEXTS])
    assert_close_to_reference(enc.encode(TEXTS), want)

    tmpl = "instruct : retrieve similar text .\nquery : {text}"
    enc = load_text_encoder(spec(st_model, template=tmpl), device="cpu")
    want = reference.encode([tmpl.replace("{text}", t) for t in TEXTS])
    assert_close_to_reference(enc.encode(TEXTS), want)

    enc = load_text_encoder(spec(st_model, normalize="true"), device="cpu")
    got = enc.encode(TEXTS)
    want = reference.encode(TEXTS, normalize_embeddings=True)
    assert_close_to_reference(got, want)
    assert_close_to_reference(np.linalg.norm(got, axis=1), np.ones(len(got)))
    raw = load_text_encoder(spec(st_model), device="cpu").encode(TEXTS)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)  # default: not normalised


def test_max_length(st_model: Path) -> None:
    ref = SentenceTransformer(str(st_model), device="cpu")
    ref.max_seq_length = 5
    enc = load_text_encoder(spec(st_model, max_length="5"), device="cpu")
    got = enc.encode(TEXTS)
    assert_close_to_reference(got, ref.encode(TEXTS))
    full = load_text_encoder(spec(st_model), device="cpu").encode(TEXTS)
    assert not np.allclose(got[1], full[1])  # the long text was cut


def test_fingerprint(st_model: Path, tmp_path: Path) -> None:
    def key(s: str, **kw: object) -> str:
        return fingerprint_key(load_text_encoder(s, **kw).fingerprint)  # type: ignore[arg-type]

    base = key(spec(st_model))
    assert key(spec(st_model)) == base
    assert key(spec(st_model, normalize="false", dtype="fp32")) == base  # the defaults
    changed = {
        key(spec(st_model, prefix="query : ")),
        key(spec(st_model, normalize="true")),
        key(spec(st_model, max_length="7")),
        key(spec(st_model), dtype="fp16"),
        key(spec(write_tiny_st(tmp_path / "cls", st_model.parent / "bert", pooling="cls"))),
    }
    assert base not in changed and len(changed) == 5
    fp = load_text_encoder(spec(st_model)).fingerprint
    assert fp["backend"] == "st" and fp["normalize"] is False and fp["dtype"] == "fp32"
    assert "pooling" not in fp  # an st model's pooling is in its files (the identity)


def test_lazy_and_warm_rerun_never_loads(
    st_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = load_text_encoder(spec(st_model), device="cpu")
    with RequestStore(tmp_path, fingerprint_key(cold.fingerprint)) as cache:
        first, _ = embed_texts(cold, TEXTS, cache)
    assert cold.loaded

    def refuse(self: SentenceTransformerEncoder) -> None:
        raise AssertionError("weights loaded")

    monkeypatch.setattr(SentenceTransformerEncoder, "_load", refuse)
    warm = load_text_encoder(spec(st_model), device="cpu")
    assert not warm.loaded and warm._model is None
    with RequestStore(tmp_path, fingerprint_key(warm.fingerprint)) as cache:
        again, stats = embed_texts(warm, TEXTS, cache)
    assert stats.n_encoded == 0 and not warm.loaded
    np.testing.assert_array_equal(first, again)
    with pytest.raises(AssertionError, match="weights loaded"):
        warm.encode(["a new text"])


def test_trust_remote_code_is_off_by_default(
    st_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[object] = []

    class Spy(SentenceTransformer):
        def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(kwargs.get("trust_remote_code"))
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Spy)
    load_text_encoder(spec(st_model), device="cpu").encode(["a cat"])
    load_text_encoder(spec(st_model, trust_remote_code="true"), device="cpu").encode(["a cat"])
    assert seen == [False, True]


def test_minilm_alias_is_the_offline_copy(minilm_path: Path) -> None:
    info = describe("minilm", device="cpu")
    assert info["source"]["kind"] == "packaged"
    assert info["source"]["path"] == str(minilm_path)
    assert info["alias"] == "minilm"
    assert info["fingerprint"]["model"]["id"] == "sentence-transformers/all-MiniLM-L6-v2"
    explicit = load_text_encoder("st:sentence-transformers/all-MiniLM-L6-v2")
    assert fingerprint_key(explicit.fingerprint) == fingerprint_key(info["fingerprint"])

    texts = ["A cat chases a dog.", "A dog is chased by a cat.", "A dog chases a cat."]
    got = load_text_encoder("minilm", device="cpu").encode(texts)
    want = SentenceTransformer(str(minilm_path), device="cpu").encode(texts)
    assert_close_to_reference(got, want)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the no-torch path is Linux's")
def test_fingerprint_does_not_import_torch(minilm_path: Path, tmp_path: Path) -> None:
    """A warm rerun never pays for torch: building the encoder + fingerprint stays torch-free."""
    import glob

    if glob.glob("/dev/nvidia[0-9]*") or os.path.exists("/dev/kfd"):
        pytest.skip("a GPU machine: device auto must ask torch")
    code = (
        "import sys\n"
        "from lexsem.models.factory import load_text_encoder\n"
        "enc = load_text_encoder('minilm')\n"
        "enc.fingerprint\n"
        "assert enc.device == 'cpu'\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path, timeout=120)


# Character order and token order disagree: an unknown 19-letter word is one [UNK] token, five
# one-letter words are five tokens.
BY_TOKENS = ["xylophonequartzmoon", "a a a a a", "Dogs", "a red ball", "cat"]


def test_batches_follow_token_counts(st_model: Path, reference: SentenceTransformer) -> None:
    enc = load_text_encoder(spec(st_model), device="cpu")
    assert isinstance(enc, SentenceTransformerEncoder)
    counts = [len(ids) for ids in reference.tokenizer(BY_TOKENS)["input_ids"]]
    assert counts == [3, 7, 4, 5, 3]
    assert enc.batch_order(BY_TOKENS).tolist() == [1, 3, 2, 0, 4]  # longest first, stable

    calls: list[list[str]] = []
    inner = enc._model.encode

    def spy(texts: list[str], **kw: object) -> np.ndarray:
        calls.append(list(texts))
        return inner(texts, **kw)

    enc._model.encode = spy  # type: ignore[method-assign]
    got = enc.encode(BY_TOKENS, batch_size=2)
    # one SentenceTransformer.encode call per batch (it would re-sort a longer list by chars)
    assert calls == [["a a a a a", "a red ball"], ["Dogs", "xylophonequartzmoon"], ["cat"]]
    # rows come back in the caller's order
    want = reference.encode(BY_TOKENS, batch_size=2)
    assert_close_to_reference(got, want)
    assert not np.allclose(got[0], got[4], atol=1e-3)


def test_batch_order_counts_prefix_and_truncation(st_model: Path) -> None:
    enc = load_text_encoder(spec(st_model, max_length="4"), device="cpu")
    # truncated to 4 tokens, "a a a a a" (7), "a red ball" (5) and "Dogs" (4) tie: input order
    assert enc.batch_order(BY_TOKENS).tolist() == [1, 2, 3, 0, 4]
    enc = load_text_encoder(spec(st_model, prefix="xylophonequartzmoon "), device="cpu")
    assert enc.batch_order(["cat"]).tolist() == [0] and enc.loaded
    assert enc._token_lengths(["cat"]) == [4]  # the prompt is counted
