"""Model spec strings, aliases, and device/dtype selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from lexsem.errors import ModelError
from lexsem.models.aliases import ALIASES, list_aliases
from lexsem.models.device import select_device, select_dtype, torch_dtype
from lexsem.models.spec import ModelSpec, parse_model_spec


def test_parse_backend_name_options() -> None:
    s = parse_model_spec("hf:BAAI/bge-small-en-v1.5?pooling=cls&normalize=true&max_length=128")
    assert (s.backend, s.name) == ("hf", "BAAI/bge-small-en-v1.5")
    assert s.options == {"pooling": "cls", "normalize": "true", "max_length": "128"}
    assert (s.pooling, s.normalize, s.max_length) == ("cls", True, 128)
    assert s.trust_remote_code is False and s.dtype is None and s.revision is None
    st = parse_model_spec("st:/models/my model")
    assert (st.backend, st.name, st.options) == ("st", "/models/my model", {})
    assert st.normalize is False and st.max_length is None


def test_defaults_and_typed_options() -> None:
    s = parse_model_spec("hf:org/m")
    assert s.pooling == "mean" and s.normalize is False and s.trust_remote_code is False
    s = parse_model_spec("HF:org/m?trust_remote_code=TRUE&dtype=bfloat16&revision=v1.0")
    assert s.backend == "hf" and s.trust_remote_code is True
    assert s.dtype == "bf16" and s.revision == "v1.0"


def test_values_are_url_decoded() -> None:
    s = parse_model_spec("hf:org/m?prefix=query:%20&pooling=mean")
    assert s.prefix == "query: "
    assert s.format_text("a cat") == "query: a cat"
    s = parse_model_spec("st:org/m?template=Q%26A+%3D+{text}%3F")
    assert s.template == "Q&A = {text}?"
    assert s.format_text("x") == "Q&A = x?"
    raw = parse_model_spec("hf:org/m?template=Instruct: find.\nQuery: {text}")
    assert raw.format_text("x") == "Instruct: find.\nQuery: x"


def test_canonical_string_round_trips() -> None:
    s = parse_model_spec("hf:org/m?prefix=a%26b%20&pooling=last&normalize=true")
    assert s.to_string() == "hf:org/m?normalize=true&pooling=last&prefix=a%26b%20"
    assert parse_model_spec(s.to_string()) == s
    assert str(parse_model_spec("st:org/m")) == "st:org/m"
    for alias in ALIASES:
        a = parse_model_spec(alias)
        assert parse_model_spec(a.to_string()) == a


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("xx:org/m", r"unknown model backend 'xx'.*hf \(transformers.*st \(sentence-"),
        ("nosuch:gpt", "unknown model backend"),
        ("hf:org/m?pool=mean", "unknown model option 'pool'.*pooling"),
        ("hf:org/m?pooling=max", "pooling='max'.*mean, cls, last"),
        ("hf:org/m?normalize=yes", "normalize='yes'.*true or false"),
        ("hf:org/m?trust_remote_code=1", "trust_remote_code='1'"),
        ("hf:org/m?max_length=0", "max_length='0'.*positive integer"),
        ("hf:org/m?max_length=-3", "max_length"),
        ("hf:org/m?max_length=abc", "max_length='abc'"),
        ("hf:org/m?dtype=fp8", "dtype='fp8'.*auto, fp32, fp16, bf16"),
        ("hf:org/m?template=no+placeholder", r"template.*\{text\}"),
        ("hf:org/m?prefix=a&template={text}", "either prefix or template"),
        ("hf:org/m?revision=", "revision='': empty"),
        ("hf:org/m?pooling=cls&pooling=mean", "given twice"),
        ("hf:org/m?pooling", "not key=value"),
        ("st:org/m?pooling=cls", "does not apply to backend 'st'"),
        ("hf:", "empty NAME"),
        ("hf:?pooling=cls", "empty NAME"),
        ("", "empty model spec"),
    ],
)
def test_bad_specs(text: str, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        parse_model_spec(text)


def test_unknown_alias_lists_aliases_and_syntax() -> None:
    with pytest.raises(ModelError) as err:
        parse_model_spec("no-such-model")
    msg = str(err.value)
    assert "minilm" in msg and "bge-small" in msg and "BACKEND:NAME" in msg


@pytest.mark.torch
def test_aliases() -> None:
    assert list_aliases()["minilm"] == "st:sentence-transformers/all-MiniLM-L6-v2"
    m = parse_model_spec("minilm")
    assert (m.backend, m.name, m.alias) == (
        "st",
        "sentence-transformers/all-MiniLM-L6-v2",
        "minilm",
    )
    assert m == parse_model_spec("st:sentence-transformers/all-MiniLM-L6-v2")
    b = parse_model_spec("bge-small")
    assert (b.backend, b.name, b.pooling, b.normalize) == (
        "hf",
        "BAAI/bge-small-en-v1.5",
        "cls",
        True,
    )
    g = parse_model_spec("gte-large")
    assert (g.name, g.pooling, g.normalize) == ("thenlper/gte-large", "mean", True)
    e = parse_model_spec("e5-mistral")
    assert e.pooling == "last" and e.normalize
    assert e.template == "Instruct: Retrieve semantically similar text.\nQuery: {text}"
    assert parse_model_spec("e5-base").format_text("a cat") == "query: a cat"
    for alias in list_aliases():  # every alias parses
        assert parse_model_spec(alias).alias == alias


def test_alias_options_override() -> None:
    m = parse_model_spec("MiniLM?max_length=128&normalize=true")
    assert m.max_length == 128 and m.normalize and m.alias == "minilm"
    e = parse_model_spec("e5-base?template=passage: {text}")
    assert e.template == "passage: {text}" and e.prefix is None
    with pytest.raises(ModelError, match="does not apply"):
        parse_model_spec("minilm?pooling=cls")


def test_model_spec_validates_when_built_directly() -> None:
    with pytest.raises(ModelError, match="unknown model backend"):
        ModelSpec("onnx", "x")
    with pytest.raises(ModelError, match="unknown model option"):
        ModelSpec("hf", "x", {"colour": "red"})
    assert ModelSpec("hf", "x", {"pooling": "cls"}).pooling == "cls"


def test_trust_remote_code_defaults_false_everywhere() -> None:
    for alias in list_aliases():
        assert parse_model_spec(alias).trust_remote_code is False
    assert parse_model_spec("hf:org/m").trust_remote_code is False


# -- device and dtype ---------------------------------------------------------------------------
@pytest.mark.torch
def test_select_device() -> None:
    import torch

    assert select_device("cpu") == "cpu"
    assert select_device("CPU") == "cpu"
    auto = select_device(None)
    assert auto == select_device("auto")
    if torch.cuda.is_available():
        assert auto == "cuda"
        assert select_device("cuda:0") == "cuda:0"
    else:
        assert auto in ("mps", "cpu")
        with pytest.raises(ModelError, match="CUDA is not available"):
            select_device("cuda")
        with pytest.raises(ModelError, match="CUDA is not available"):
            select_device("cuda:0")
    if not torch.backends.mps.is_available():
        with pytest.raises(ModelError, match="MPS is not available"):
            select_device("mps")
    with pytest.raises(ModelError, match=r"unknown device 'tpu'.*auto, cpu, cuda"):
        select_device("tpu")
    with pytest.raises(ModelError, match="cuda:N"):
        select_device("cuda:x")


@pytest.mark.torch
def test_select_dtype() -> None:
    import torch

    assert select_dtype(None, "cpu") == "fp32"
    assert select_dtype("auto", "mps") == "fp32"
    assert select_dtype("float16", "cpu") == "fp16"
    assert select_dtype("BF16", "cpu") == "bf16"
    if torch.cuda.is_available():
        want = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        assert select_dtype("auto", "cuda") == want
        assert select_dtype(None, "cuda") == want
    with pytest.raises(ModelError, match="unknown dtype 'fp8'"):
        select_dtype("fp8", "cpu")
    assert torch_dtype("bf16") is torch.bfloat16
    assert torch_dtype("fp32") is torch.float32


def test_encoder_dtype_and_device_arguments(tmp_path: Path) -> None:
    from lexsem.models.factory import load_text_encoder

    (tmp_path / "config.json").write_text("{}")
    enc = load_text_encoder(f"hf:{tmp_path}?dtype=fp16", device="cpu")
    assert enc.dtype == "fp16"
    assert load_text_encoder(f"hf:{tmp_path}?dtype=fp16", dtype="bf16").dtype == "bf16"
    assert load_text_encoder(f"hf:{tmp_path}").dtype in ("fp32", "bf16", "fp16")
    with pytest.raises(ModelError, match="unknown device"):
        _ = load_text_encoder(f"hf:{tmp_path}", device="quantum").device
    with pytest.raises(ModelError, match="max_length"):
        load_text_encoder(f"hf:{tmp_path}", max_length=0)


def _cpuinfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str) -> None:
    from lexsem.models import device

    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nmodel name\t: a CPU\nflags\t\t: {flags}\n\n")
    monkeypatch.setattr(device, "CPUINFO", info)


@pytest.mark.parametrize(
    ("flags", "want", "why"),
    [
        ("fpu sse avx2 avx512f amx_bf16 amx_tile", "bf16", "native bf16 (amx_bf16)"),
        ("fpu avx2 avx512f avx512_bf16", "bf16", "native bf16 (avx512_bf16)"),
        ("fpu sse avx2 avx512f avx512bw", "fp32", "no native bf16"),
    ],
)
def test_dtype_auto_picks_bf16_only_on_a_cpu_with_native_bf16(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: str, want: str, why: str
) -> None:
    from lexsem.models.device import dtype_choice

    _cpuinfo(tmp_path, monkeypatch, flags)
    choice = dtype_choice("auto", "cpu")
    assert choice.name == want
    assert choice.reason is not None and why in choice.reason
    # the default (no dtype given) and explicit choices stay what they are on every CPU
    assert dtype_choice(None, "cpu") == dtype_choice("fp32", "cpu")
    assert dtype_choice(None, "cpu").name == "fp32" and dtype_choice(None, "cpu").reason is None
    assert dtype_choice("fp16", "cpu").name == "fp16"


def test_dtype_auto_without_cpuinfo_is_fp32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lexsem.models import device

    monkeypatch.setattr(device, "CPUINFO", tmp_path / "missing")
    assert device.dtype_choice("auto", "cpu").name == "fp32"


def test_a_model_says_which_dtype_auto_picked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lexsem.models.factory import load_text_encoder

    _cpuinfo(tmp_path, monkeypatch, "avx2 amx_bf16")
    (tmp_path / "config.json").write_text("{}")
    auto = load_text_encoder(f"hf:{tmp_path}?dtype=auto", device="cpu")
    assert auto.dtype == "bf16" and auto.fingerprint["dtype"] == "bf16"
    assert auto.describe()["dtype_reason"] == "auto: bf16, this CPU has native bf16 (amx_bf16)"
    plain = load_text_encoder(f"hf:{tmp_path}", device="cpu")
    assert plain.dtype == "fp32" and plain.dtype_reason is None
