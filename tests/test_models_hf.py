"""The `hf:` backend against a direct transformers computation on tiny random models."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from builders.numeric import assert_close_to_reference
from builders.tiny_text_models import TEXTS, write_tiny_bert, write_tiny_llama
from lexsem.errors import ModelError
from lexsem.models.backends import hf as hf_backend
from lexsem.models.backends.hf import HFTextEncoder
from lexsem.models.factory import describe, load_text_encoder
from lexsem.models.protocols import TextEncoder, fingerprint_key

pytestmark = [pytest.mark.numeric, pytest.mark.torch]


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("hf") / "bert")


@pytest.fixture(scope="module")
def bert_eos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tokenizer with an EOS token it does not append itself (like Llama/Mistral's)."""
    return write_tiny_bert(tmp_path_factory.mktemp("hf") / "bert_eos", eos_token="</s>")


def direct(
    folder: Path,
    texts: list[str],
    pooling: str,
    *,
    padding_side: str = "right",
    max_length: int | None = None,
    append_eos: bool = False,
) -> np.ndarray:
    """Run the model by hand and pool by hand."""
    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModel.from_pretrained(str(folder), dtype=torch.float32).eval()
    enc = tok(texts, truncation=max_length is not None, max_length=max_length)
    ids = [list(x) for x in enc["input_ids"]]
    if append_eos:
        eos = tok.eos_token_id
        ids = [
            x
            if x[-1] == eos
            else (x if max_length is None or len(x) < max_length else x[: max_length - 1]) + [eos]
            for x in ids
        ]
    width = max(len(x) for x in ids)
    input_ids = torch.full((len(ids), width), tok.pad_token_id)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for i, x in enumerate(ids):
        sl = slice(width - len(x), width) if padding_side == "left" else slice(0, len(x))
        input_ids[i, sl] = torch.tensor(x)
        mask[i, sl] = 1
    with torch.no_grad():
        hidden = model(input_ids=input_ids, attention_mask=mask).last_hidden_state
    rows = []
    for i, x in enumerate(ids):
        lo = width - len(x) if padding_side == "left" else 0
        tokens = hidden[i, lo : lo + len(x)]
        rows.append({"mean": tokens.mean(0), "cls": tokens[0], "last": tokens[-1]}[pooling])
    return torch.stack(rows).numpy()


def spec(folder: Path, **options: str) -> str:
    query = "&".join(f"{k}={quote(v, safe='')}" for k, v in options.items())
    return f"hf:{folder}" + (f"?{query}" if query else "")


@pytest.mark.parametrize("pooling", ["mean", "cls", "last"])
@pytest.mark.parametrize("batch_size", [2, 64])
def test_pooling_matches_direct(bert: Path, pooling: str, batch_size: int) -> None:
    enc = load_text_encoder(spec(bert, pooling=pooling), device="cpu")
    assert isinstance(enc, TextEncoder)
    got = enc.encode(TEXTS, batch_size=batch_size)
    assert got.dtype == np.float32 and got.flags.c_contiguous and got.shape == (len(TEXTS), 32)
    assert_close_to_reference(got, direct(bert, TEXTS, pooling))


@pytest.mark.parametrize("pooling", ["mean", "cls", "last"])
def test_left_padding(bert: Path, pooling: str) -> None:
    enc = HFTextEncoder(spec(bert, pooling=pooling), device="cpu", padding_side="left")
    got = enc.encode(TEXTS)
    want = direct(bert, TEXTS, pooling, padding_side="left")
    assert_close_to_reference(got, want)
    assert enc.fingerprint["padding_side"] == "left"


def test_pool_finds_tokens_for_both_padding_sides() -> None:
    hidden = torch.arange(2 * 4 * 1, dtype=torch.float32).reshape(2, 4, 1)
    right = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    left = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    pool = hf_backend.pool
    assert pool(hidden, right, "last")[:, 0].tolist() == [1.0, 7.0]
    assert pool(hidden, left, "last")[:, 0].tolist() == [3.0, 7.0]
    assert pool(hidden, right, "cls")[:, 0].tolist() == [0.0, 4.0]
    assert pool(hidden, left, "cls")[:, 0].tolist() == [2.0, 4.0]
    assert pool(hidden, right, "mean")[:, 0].tolist() == [0.5, 5.5]
    assert pool(hidden, left, "mean")[:, 0].tolist() == [2.5, 5.5]


def test_right_padding_is_batch_invariant(bert: Path) -> None:
    enc = load_text_encoder(spec(bert, pooling="mean"), device="cpu")
    together = enc.encode(TEXTS, batch_size=64)
    alone = np.concatenate([enc.encode([t]) for t in TEXTS])
    assert_close_to_reference(together, alone)


def test_last_pooling_appends_eos_if_missing(bert_eos: Path) -> None:
    enc = load_text_encoder(spec(bert_eos, pooling="last"), device="cpu")
    got = enc.encode(TEXTS)
    assert_close_to_reference(got, direct(bert_eos, TEXTS, "last", append_eos=True))
    batch = enc.tokenize(["a cat", "the dog chases a cat"])
    eos = enc._tokenizer.eos_token_id
    for ids, mask in zip(
        batch["input_ids"].tolist(), batch["attention_mask"].tolist(), strict=True
    ):
        assert ids[sum(mask) - 1] == eos
    # truncated at max_length: EOS replaces the last token, the length stays max_length
    enc6 = load_text_encoder(spec(bert_eos, pooling="last"), device="cpu", max_length=6)
    got6 = enc6.encode(TEXTS)
    assert_close_to_reference(got6, direct(bert_eos, TEXTS, "last", max_length=6, append_eos=True))
    assert enc6.tokenize([TEXTS[1]])["input_ids"].shape[1] == 6
    # other poolings add nothing (tokenizers without an EOS token: test_pooling_matches_direct)
    mean = load_text_encoder(spec(bert_eos, pooling="mean"), device="cpu")
    mean.encode(["a"])
    assert mean.tokenize(["a cat"])["input_ids"][0, -1].item() != eos


def test_decoder_last_token_without_pad_token(tmp_path: Path) -> None:
    """A causal model whose tokenizer has no pad token and appends no EOS (e5-mistral style):
    each text's embedding is the state of its appended EOS, whatever its batch."""
    folder = write_tiny_llama(tmp_path / "llama")
    enc = load_text_encoder(spec(folder, pooling="last"), device="cpu")
    got = enc.encode(TEXTS, batch_size=64)
    tok = AutoTokenizer.from_pretrained(str(folder))
    assert tok.pad_token is None
    model = AutoModel.from_pretrained(str(folder), dtype=torch.float32).eval()
    rows = []
    for text in TEXTS:
        ids = [*tok(text)["input_ids"], tok.eos_token_id]
        with torch.no_grad():
            rows.append(model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1].numpy())
    assert_close_to_reference(got, np.stack(rows))


def test_prefix_and_template(bert: Path) -> None:
    enc = load_text_encoder(spec(bert, pooling="mean", prefix="query : "), device="cpu")
    want = direct(bert, ["query : " + t for t in TEXTS], "mean")
    assert_close_to_reference(enc.encode(TEXTS), want)
    tmpl = "instruct : retrieve similar text .\nquery : {text}"
    enc = load_text_encoder(spec(bert, pooling="cls", template=tmpl), device="cpu")
    want = direct(bert, [tmpl.replace("{text}", t) for t in TEXTS], "cls")
    assert_close_to_reference(enc.encode(TEXTS), want)


def test_normalize(bert: Path) -> None:
    enc = load_text_encoder(spec(bert, pooling="mean", normalize="true"), device="cpu")
    got = enc.encode(TEXTS)
    want = direct(bert, TEXTS, "mean")
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    assert_close_to_reference(got, want)
    assert_close_to_reference(np.linalg.norm(got, axis=1), np.ones(len(got)))


def test_max_length_truncates(bert: Path) -> None:
    enc = load_text_encoder(spec(bert, pooling="mean", max_length="5"), device="cpu")
    got = enc.encode(TEXTS)
    assert_close_to_reference(got, direct(bert, TEXTS, "mean", max_length=5))
    full = direct(bert, TEXTS, "mean")
    assert not np.allclose(got[1], full[1])  # the long text was cut
    # the keyword argument overrides the spec option
    enc3 = load_text_encoder(spec(bert, pooling="mean", max_length="5"), max_length=3)
    assert enc3.max_length == 3


def test_fingerprint(bert: Path, tmp_path: Path) -> None:
    def key(s: str, **kw: object) -> str:
        return fingerprint_key(load_text_encoder(s, **kw).fingerprint)  # type: ignore[arg-type]

    base = key(spec(bert, pooling="mean"))
    assert key(spec(bert, pooling="mean")) == base
    assert key(f"hf:{bert}") == base  # mean is the default pooling
    assert key(spec(bert, pooling="mean"), device="cpu") == base  # the device is not in it
    copy = shutil.copytree(bert, tmp_path / "moved")
    assert key(spec(copy, pooling="mean")) == base  # content-addressed
    assert key(spec(bert, pooling="mean", normalize="false", max_length="64")) != base
    changed = {
        key(spec(bert, pooling="cls")),
        key(spec(bert, pooling="mean", prefix="query : ")),
        key(spec(bert, pooling="mean", template="query : {text}")),
        key(spec(bert, pooling="mean", normalize="true")),
        key(spec(bert, pooling="mean", max_length="8")),
        key(spec(bert, pooling="mean"), dtype="bf16"),
        key(spec(write_tiny_bert(tmp_path / "other", seed=1), pooling="mean")),
    }
    assert base not in changed and len(changed) == 7
    fp = load_text_encoder(spec(bert, pooling="last", normalize="true")).fingerprint
    assert fp["backend"] == "hf" and fp["pooling"] == "last" and fp["normalize"] is True
    assert fp["dtype"] == "fp32" and fp["model"]["source"] == "local"


def test_lazy_loading(bert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: HFTextEncoder) -> None:
        raise AssertionError("weights loaded")

    monkeypatch.setattr(HFTextEncoder, "_load", refuse)
    enc = load_text_encoder(spec(bert, pooling="cls"), device="cpu")
    assert enc.fingerprint["model"]["files"]
    info = describe(spec(bert, pooling="cls"), device="cpu")
    assert info["backend"] == "hf" and info["source"]["path"] == str(bert.resolve())
    assert info["dtype"] == "fp32" and info["device"] == "cpu"
    assert not enc.loaded and enc._model is None
    with pytest.raises(AssertionError, match="weights loaded"):
        enc.encode(["a cat"])


def test_trust_remote_code_is_off_by_default(bert: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[object] = []
    real_model, real_tok = AutoModel.from_pretrained, AutoTokenizer.from_pretrained

    def spy(real):  # type: ignore[no-untyped-def]
        def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(kwargs.get("trust_remote_code"))
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(AutoModel, "from_pretrained", spy(real_model))
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", spy(real_tok))
    load_text_encoder(spec(bert), device="cpu").encode(["a cat"])
    assert seen == [False, False]
    seen.clear()
    load_text_encoder(spec(bert, trust_remote_code="true"), device="cpu").encode(["a cat"])
    assert seen == [True, True]


def test_load_errors_are_model_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    enc = load_text_encoder(f"hf:{broken}", device="cpu")
    with pytest.raises(ModelError, match="could not load model"):
        enc.encode(["a cat"])


def test_batches_follow_token_counts(bert: Path) -> None:
    # an unknown 19-letter word is one [UNK] token; five one-letter words are five tokens
    texts = ["xylophonequartzmoon", "a a a a a", "Dogs", "a red ball", "cat"]
    enc = load_text_encoder(spec(bert, pooling="mean"), device="cpu")
    assert enc.batch_order(texts).tolist() == [1, 3, 2, 0, 4]
    batches: list[list[str]] = []
    inner = enc._encode_batches

    def spy(ordered: list[str], batch_size: int) -> np.ndarray:
        batches.append(ordered)
        return inner(ordered, batch_size)

    enc._encode_batches = spy  # type: ignore[method-assign]
    got = enc.encode(texts, batch_size=2)
    assert batches == [["a a a a a", "a red ball", "Dogs", "xylophonequartzmoon", "cat"]]
    assert_close_to_reference(got, direct(bert, texts, "mean"))
    # a template counts: the templated text is what gets tokenised
    tmpl = load_text_encoder(spec(bert, template="xylophonequartzmoon {text}"), device="cpu")
    assert tmpl.batch_order(["cat"]).tolist() == [0] and tmpl.loaded
    assert tmpl._token_lengths(["cat"]) == [4]


def test_pickled_copy_carries_no_weights(bert: Path) -> None:
    import pickle

    enc = load_text_encoder(spec(bert, pooling="cls"), device="cpu")
    want = enc.encode(TEXTS)
    blob = pickle.dumps(enc)
    clone = pickle.loads(blob)
    assert enc.loaded and not clone.loaded and clone._tokenizer is None
    assert len(blob) < 20_000  # the tiny BERT's weights alone are ~77 kB
    assert_close_to_reference(clone.encode(TEXTS), want)
    assert clone.fingerprint == enc.fingerprint
    enc.unload()
    assert not enc.loaded and enc._tokenizer is None
