"""Blind text scorers (`lm:`, `vera:`, `cola:`, AVG_LM) against direct computations on tiny
random models built in tmp folders (never downloaded)."""

from __future__ import annotations

import math
import pickle
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from builders.numeric import assert_close_to_reference
from builders.tiny_text_models import TEXTS
from builders.tiny_text_scorers import LM_VOCAB, write_tiny_cola, write_tiny_gpt2, write_tiny_vera
from lexsem.errors import ModelError
from lexsem.models.average import AverageScorer
from lexsem.models.backends.cola import GrammarScorer
from lexsem.models.backends.lm import PerplexityScorer
from lexsem.models.backends.vera import PlausibilityScorer
from lexsem.models.factory import load_text_scorer
from lexsem.models.protocols import TextScorer, fingerprint_key

pytestmark = [pytest.mark.numeric, pytest.mark.torch]

# different lengths, a one-token text and an empty one (no scored token: NaN)
LM_TEXTS = [*TEXTS, "dog", "", "the cat", "a red ball and a blue box on the table ."]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("scorers")
    return {
        "gpt2": write_tiny_gpt2(root / "gpt2", seed=0),
        "gpt2b": write_tiny_gpt2(root / "gpt2b", seed=1),
        "llama_bos": write_tiny_gpt2(root / "llama_bos", seed=2, prepend_bos=True),
        "vera": write_tiny_vera(root / "vera"),
        "cola": write_tiny_cola(root / "cola"),
    }


# -- direct computations -------------------------------------------------------------------------
def direct_pp(folder: Path, ids: list[int]) -> float:
    """Token by token: for i = 2..n run the model on x_<i and take −log P(x_i) at the end."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    if len(ids) < 2:
        return math.nan
    nll = []
    with torch.no_grad():
        for i in range(1, len(ids)):
            logits = model(input_ids=torch.tensor([ids[:i]])).logits[0, -1]
            nll.append(-float(torch.log_softmax(logits, dim=-1)[ids[i]]))
    return float(np.mean(nll))


def tokens(folder: Path, text: str, **kwargs) -> list[int]:
    from transformers import AutoTokenizer

    return list(AutoTokenizer.from_pretrained(folder)(text, **kwargs)["input_ids"])


def direct_vera(folder: Path, text: str, *, calibrate: bool = True) -> float:
    """Vera's reference inference (model card / SugarCrepe text_model_eval.py), one text."""
    from transformers import AutoTokenizer, T5EncoderModel

    tok = AutoTokenizer.from_pretrained(folder)
    model = T5EncoderModel.from_pretrained(folder).eval()
    linear = torch.nn.Linear(model.shared.embedding_dim, 1, dtype=model.dtype)
    linear.weight = torch.nn.Parameter(model.shared.weight[32099, :].unsqueeze(0))
    linear.bias = torch.nn.Parameter(model.shared.weight[32098, 0].unsqueeze(0))
    t = model.shared.weight[32097, 0].item()
    input_ids = tok([text], return_tensors="pt", truncation=True, max_length=128).input_ids
    with torch.no_grad():
        hidden = model(input_ids).last_hidden_state[0, -1, :]
        logit = linear(hidden).squeeze(-1)
    return float(torch.sigmoid(logit / t if calibrate else logit))


def direct_cola(folder: Path, text: str, index: int = 1) -> float:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    enc = tok([text], return_tensors="pt")
    with torch.no_grad():
        logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).logits
    return float(torch.softmax(logits, dim=-1)[0, index])


# -- perplexity ----------------------------------------------------------------------------------
def test_perplexity_matches_token_by_token(tiny: dict[str, Path]) -> None:
    scorer = PerplexityScorer(str(tiny["gpt2"]), device="cpu")
    assert isinstance(scorer, TextScorer) and scorer.lower_is_better
    got = scorer.score_texts(LM_TEXTS, batch_size=16)  # different lengths in one padded batch
    assert got.dtype == np.float64 and got.shape == (len(LM_TEXTS),)
    want = [direct_pp(tiny["gpt2"], tokens(tiny["gpt2"], t)) for t in LM_TEXTS]
    assert_close_to_reference(got, want)
    # GPT-2-style: no special tokens, so a one-word text has nothing to score; so has ""
    assert tokens(tiny["gpt2"], "dog") == [LM_VOCAB.index("dog")]
    short = np.array([len(tokens(tiny["gpt2"], t)) < 2 for t in LM_TEXTS])
    assert short.sum() == 3  # "Dogs", "dog" and ""
    assert np.isnan(got[short]).all() and np.isfinite(got[~short]).all()


def test_perplexity_does_not_depend_on_the_batch(tiny: dict[str, Path]) -> None:
    scorer = PerplexityScorer(str(tiny["gpt2"]), device="cpu")
    full = scorer.score_texts(LM_TEXTS, batch_size=64)
    for bs in (1, 2, 3):
        assert_close_to_reference(scorer.score_texts(LM_TEXTS, batch_size=bs), full)
    perm = np.random.default_rng(0).permutation(len(LM_TEXTS))
    shuffled = scorer.score_texts([LM_TEXTS[i] for i in perm], batch_size=4)
    assert_close_to_reference(shuffled, full[perm])
    alone = scorer.score_texts(["the cat"], batch_size=1)[0]
    long_companion = "a man rides a horse and a small dog chases a red ball by the table " * 3
    with_long = scorer.score_texts(["the cat", long_companion], batch_size=2)[0]
    assert_close_to_reference(alone, with_long)
    assert scorer.score_texts([]).shape == (0,)
    with pytest.raises(TypeError):
        scorer.score_texts("a text")
    with pytest.raises(ValueError):
        scorer.score_texts(["a"], batch_size=0)


def test_bos_handling(tiny: dict[str, Path]) -> None:
    bos = LM_VOCAB.index("<s>")
    folder = tiny["llama_bos"]
    assert tokens(folder, "dog") == [bos, LM_VOCAB.index("dog")]  # Llama-style: BOS is x1
    default = PerplexityScorer(str(folder), device="cpu")
    got = default.score_texts(["dog", "the cat"])
    want = [direct_pp(folder, tokens(folder, t)) for t in ("dog", "the cat")]
    assert_close_to_reference(got, want)
    assert default.token_ids(["dog"]) == [[bos, LM_VOCAB.index("dog")]]
    no_bos = PerplexityScorer(f"lm:{folder}?add_bos=false", device="cpu")
    assert no_bos.token_ids(["the cat"]) == [[LM_VOCAB.index("the"), LM_VOCAB.index("cat")]]
    got = no_bos.score_texts(["dog", "the cat"])
    assert math.isnan(got[0])
    assert_close_to_reference(got[1], direct_pp(folder, no_bos.token_ids(["the cat"])[0]))
    # add_bos=true on a tokenizer that already prepends BOS changes nothing
    with_bos = PerplexityScorer(str(folder), add_bos=True, device="cpu")
    assert_close_to_reference(with_bos.score_texts(["dog", "the cat"]), want)
    # add_bos=true on a GPT-2-style tokenizer prepends it
    gpt2 = PerplexityScorer(str(tiny["gpt2"]), add_bos=True, device="cpu")
    ids = gpt2.token_ids(["dog"])[0]
    assert ids == [bos, LM_VOCAB.index("dog")]
    assert_close_to_reference(gpt2.score_texts(["dog"])[0], direct_pp(tiny["gpt2"], ids))


def test_perplexity_max_length(tiny: dict[str, Path]) -> None:
    text = "a man rides a horse and a small dog chases a red ball"
    scorer = PerplexityScorer(f"lm:{tiny['gpt2']}?max_length=4", device="cpu")
    ids = tokens(tiny["gpt2"], text)[:4]
    assert scorer.token_ids([text]) == [ids]
    assert_close_to_reference(scorer.score_texts([text])[0], direct_pp(tiny["gpt2"], ids))
    too_long = PerplexityScorer(str(tiny["gpt2"]), max_length=65, device="cpu")
    with pytest.raises(ModelError, match="exceeds"):
        too_long.score_texts([text])


def test_average_scorer(tiny: dict[str, Path]) -> None:
    a = PerplexityScorer(str(tiny["gpt2"]), device="cpu")
    b = PerplexityScorer(str(tiny["gpt2b"]), device="cpu")
    avg = AverageScorer([a, b])
    assert isinstance(avg, TextScorer) and avg.lower_is_better
    assert not avg.loaded
    got = avg.score_texts(LM_TEXTS, batch_size=3)
    want = (a.score_texts(LM_TEXTS, batch_size=3) + b.score_texts(LM_TEXTS, batch_size=3)) / 2
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.isnan(got[LM_TEXTS.index("dog")])
    assert avg.fingerprint == AverageScorer([b, a]).fingerprint  # order does not matter
    assert avg.fingerprint != AverageScorer([a]).fingerprint
    unloading = AverageScorer([a, b], keep_loaded=False)
    assert_close_to_reference(unloading.score_texts(LM_TEXTS), want)
    assert not a.loaded and not b.loaded
    vera = PlausibilityScorer(str(tiny["vera"]), device="cpu")
    with pytest.raises(ModelError, match="different ways"):
        AverageScorer([a, vera])
    with pytest.raises(ModelError, match="at least one"):
        AverageScorer([])


# -- Vera ----------------------------------------------------------------------------------------
def test_vera_matches_reference_inference(tiny: dict[str, Path]) -> None:
    scorer = PlausibilityScorer(str(tiny["vera"]), device="cpu")
    assert isinstance(scorer, TextScorer) and not scorer.lower_is_better
    got = scorer.score_texts(TEXTS, batch_size=8)
    want = [direct_vera(tiny["vera"], t) for t in TEXTS]
    assert_close_to_reference(got, want)
    assert len(set(np.round(got, 6))) > 1  # not a constant
    assert_close_to_reference(scorer.score_texts(TEXTS, batch_size=1), got)
    raw = PlausibilityScorer(f"vera:{tiny['vera']}?calibrate=false", device="cpu")
    want_raw = [direct_vera(tiny["vera"], t, calibrate=False) for t in TEXTS]
    assert_close_to_reference(raw.score_texts(TEXTS, batch_size=2), want_raw)
    # calibrated = sigmoid(logit / t), t = 0.5
    logits = scorer.logits(TEXTS)
    np.testing.assert_allclose(1 / (1 + np.exp(-logits / 0.5)), got, rtol=1e-9)
    assert scorer.max_length == 128


def test_vera_refuses_a_checkpoint_without_the_head(tmp_path: Path) -> None:
    folder = write_tiny_vera(tmp_path / "small", vocab_size=100)
    scorer = PlausibilityScorer(str(folder), device="cpu")
    with pytest.raises(ModelError, match="Vera"):
        scorer.score_texts(["a cat"])


# -- CoLA ----------------------------------------------------------------------------------------
def test_cola_matches_softmax(tiny: dict[str, Path]) -> None:
    scorer = GrammarScorer(str(tiny["cola"]), device="cpu")
    assert isinstance(scorer, TextScorer) and not scorer.lower_is_better
    assert scorer.label_index == 1 and scorer.label_name == "LABEL_1"
    got = scorer.score_texts(TEXTS, batch_size=8)  # token_type_ids are dropped for DistilBERT
    want = [direct_cola(tiny["cola"], t) for t in TEXTS]
    assert_close_to_reference(got, want)
    assert_close_to_reference(scorer.score_texts(TEXTS, batch_size=1), got)
    zero = GrammarScorer(str(tiny["cola"]), label=0, device="cpu")
    assert_close_to_reference(zero.score_texts(TEXTS), 1 - got, scale=1.0)  # probabilities


def test_cola_label_resolution(tmp_path: Path) -> None:
    named = write_tiny_cola(tmp_path / "named", id2label={0: "acceptable", 1: "unacceptable"})
    scorer = GrammarScorer(str(named), device="cpu")
    assert scorer.label_index == 0 and scorer.label_name == "acceptable"
    assert_close_to_reference(
        scorer.score_texts(TEXTS[:2]), [direct_cola(named, t, 0) for t in TEXTS[:2]]
    )
    assert GrammarScorer(f"cola:{named}?label=unacceptable", device="cpu").label_index == 1
    with pytest.raises(ModelError, match="no such label"):
        GrammarScorer(str(named), label="grammatical")
    with pytest.raises(ModelError, match="expected 0 or 1"):
        GrammarScorer(str(named), label=2)
    three = write_tiny_cola(tmp_path / "three", num_labels=3)
    with pytest.raises(ModelError, match="2 labels"):
        GrammarScorer(str(three))


# -- laziness, fingerprints, specs ---------------------------------------------------------------
def test_lazy_loading(tiny: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers

    def boom(*args, **kwargs):
        raise AssertionError("weights loaded")

    for cls in ("AutoModelForCausalLM", "T5EncoderModel", "AutoModelForSequenceClassification"):
        monkeypatch.setattr(getattr(transformers, cls), "from_pretrained", boom)
    scorers = [
        PerplexityScorer(str(tiny["gpt2"]), device="cpu"),
        PlausibilityScorer(str(tiny["vera"]), device="cpu"),
        GrammarScorer(str(tiny["cola"]), device="cpu"),
    ]
    for s in scorers:
        assert not s.loaded
        fingerprint_key(s.fingerprint)
        assert s.describe()["fingerprint"] == s.fingerprint
        assert "not loaded" in repr(s)
        assert s.score_texts([]).shape == (0,)  # nothing to score: nothing loaded
        assert not s.loaded
    monkeypatch.undo()
    lm = scorers[0]
    lm.score_texts(["the cat"])
    assert lm.loaded
    clone = pickle.loads(pickle.dumps(lm))  # carries no weights
    assert not clone.loaded
    np.testing.assert_allclose(clone.score_texts(["the cat"]), lm.score_texts(["the cat"]))
    lm.unload()
    assert not lm.loaded


def test_fingerprints(tiny: dict[str, Path], tmp_path: Path) -> None:
    gpt2 = str(tiny["gpt2"])
    fp = PerplexityScorer(gpt2, device="cpu").fingerprint
    assert fp["backend"] == "lm" and fp["model"]["source"] == "local"
    assert fp["add_bos"] == "tokenizer-default" and fp["dtype"] == "fp32"
    assert fp["score"] == "mean-nll-tokens-2..n"
    copy = shutil.copytree(tiny["gpt2"], tmp_path / "copy")
    assert PerplexityScorer(str(copy), device="cpu").fingerprint == fp  # content-addressed
    assert PerplexityScorer(f"lm:{gpt2}", device="cpu").fingerprint == fp
    variants = [
        PerplexityScorer(gpt2, add_bos=True, device="cpu"),
        PerplexityScorer(gpt2, add_bos=False, device="cpu"),
        PerplexityScorer(gpt2, max_length=8, device="cpu"),
        PerplexityScorer(gpt2, dtype="bf16", device="cpu"),
        PerplexityScorer(str(tiny["gpt2b"]), device="cpu"),
    ]
    keys = {fingerprint_key(fp), *(fingerprint_key(v.fingerprint) for v in variants)}
    assert len(keys) == 1 + len(variants)
    vera = PlausibilityScorer(str(tiny["vera"]), device="cpu").fingerprint
    assert vera["backend"] == "vera" and vera["calibrate"] is True and vera["max_length"] == 128
    vera_raw = PlausibilityScorer(str(tiny["vera"]), calibrate="false", device="cpu")
    assert vera_raw.fingerprint != vera
    cola = GrammarScorer(str(tiny["cola"]), device="cpu").fingerprint
    assert cola["backend"] == "cola" and cola["label"] == 1
    assert GrammarScorer(str(tiny["cola"]), label=0, device="cpu").fingerprint != cola


def test_spec_strings_and_options(tiny: dict[str, Path]) -> None:
    gpt2 = str(tiny["gpt2"])
    s = PerplexityScorer(f"lm:{gpt2}?max_length=16&add_bos=TRUE&dtype=float32", device="cpu")
    assert s.max_length == 16 and s.add_bos is True and s.dtype == "fp32"
    assert s.spec_string == f"lm:{gpt2}?add_bos=true&dtype=float32&max_length=16"
    assert s.name == f"lm:{gpt2}?max_length=16&add_bos=TRUE&dtype=float32"
    kw = PerplexityScorer(f"lm:{gpt2}?max_length=16", max_length=8, device="cpu")
    assert kw.max_length == 8  # keyword arguments win
    parsed = SimpleNamespace(backend="lm", name=gpt2, options={"add_bos": "false"})
    assert PerplexityScorer(parsed, device="cpu").add_bos is False
    with pytest.raises(ModelError, match="backend 'vera'"):
        PerplexityScorer(SimpleNamespace(backend="vera", name=gpt2, options={}))
    with pytest.raises(ModelError, match=r"'pooling' does not apply to backend 'lm'.*takes: "):
        PerplexityScorer(f"lm:{gpt2}?pooling=mean")
    with pytest.raises(ModelError, match="backend 'vera'"):
        PerplexityScorer(f"vera:{gpt2}")
    with pytest.raises(ModelError, match=r"'calibrate' does not apply .*\(only to: vera\)"):
        PerplexityScorer(gpt2, calibrate=True)  # keyword options are checked like the spec's
    with pytest.raises(ModelError, match="true or false"):
        PerplexityScorer(f"lm:{gpt2}?add_bos=maybe")
    with pytest.raises(ModelError, match="positive integer"):
        PerplexityScorer(gpt2, max_length=0)
    with pytest.raises(ModelError, match="given twice"):
        PerplexityScorer(f"lm:{gpt2}?max_length=4&max_length=5")
    with pytest.raises(ModelError, match="does not exist"):
        PerplexityScorer("lm:/no/such/folder")
    assert isinstance(load_text_scorer(f"lm:{gpt2}", device="cpu"), PerplexityScorer)
    assert isinstance(load_text_scorer(f"vera:{tiny['vera']}"), PlausibilityScorer)
    cola = load_text_scorer(f"cola:{tiny['cola']}?label=0", dtype="fp32")
    assert isinstance(cola, GrammarScorer) and cola.label_index == 0 and cola.dtype == "fp32"
    with pytest.raises(ModelError, match="not a text-scorer spec"):
        load_text_scorer(f"hf:{gpt2}")
