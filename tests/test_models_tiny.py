"""Tiny randomly initialised models for the model tests (built in tmp folders, never downloaded),
and the tests of `lexsem.models.source` (model identity and digests) that use them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from builders.tiny_text_models import write_tiny_bert
from lexsem.errors import ModelError
from lexsem.models import source as S

pytestmark = pytest.mark.torch


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_bert(tmp_path_factory.mktemp("tiny") / "bert")


# -- folder and weight-files digests ------------------------------------------------------------
def test_folder_digest_is_content_addressed(bert: Path, tmp_path: Path) -> None:
    d = S.folder_digest(bert)
    assert d == S.folder_digest(bert)
    copy = shutil.copytree(bert, tmp_path / "elsewhere")
    assert S.folder_digest(copy) == d  # moving/copying keeps the identity
    (copy / ".hidden").write_text("x")
    (copy / ".git").mkdir()
    (copy / ".git" / "HEAD").write_text("ref")
    assert S.folder_digest(copy) == d  # hidden files and folders do not count
    (copy / "README.md").write_text("a note")
    assert S.folder_digest(copy) != d  # any other file does


def test_folder_digest_sees_changed_weights(tmp_path: Path) -> None:
    a = write_tiny_bert(tmp_path / "a", seed=0)
    b = write_tiny_bert(tmp_path / "b", seed=1)
    assert S.folder_digest(a) != S.folder_digest(b)
    assert S.weight_files_digest(a) != S.weight_files_digest(b)


def test_weight_files_digest_reads_weight_files_only(bert: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(bert, tmp_path / "copy")
    w = S.weight_files_digest(bert)
    (copy / "README.md").write_text("notes")
    (copy / "tf_model.h5").write_bytes(b"tf")
    (copy / "pytorch_model.bin").write_bytes(b"old format, shadowed by safetensors")
    (copy / "onnx").mkdir()
    (copy / "onnx" / "model.onnx").write_bytes(b"onnx")
    assert S.weight_files_digest(copy) == w
    (copy / "model.safetensors").write_bytes(b"different weights")
    assert S.weight_files_digest(copy) != w


def test_select_files() -> None:
    files = [
        "config.json",
        "model.safetensors",
        "pytorch_model.bin",
        "tf_model.h5",
        "onnx/model.onnx",
        "openvino/openvino_model.bin",
        "2_Dense/pytorch_model.bin",
        "2_Dense/config.json",
        "rust_model.ot",
        "tokenizer.json",
        "flax_model.msgpack",
    ]
    assert S.select_weight_files(files) == ["2_Dense/pytorch_model.bin", "model.safetensors"]
    assert S.select_repo_files(files) == [
        "config.json",
        "model.safetensors",
        "2_Dense/pytorch_model.bin",
        "2_Dense/config.json",
        "tokenizer.json",
    ]


def test_large_files_are_hashed_by_head_and_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(S, "WHOLE_FILE_LIMIT", 100)
    monkeypatch.setattr(S, "HEAD_TAIL", 10)
    f = tmp_path / "big.bin"
    data = bytearray(b"x" * 1000)
    f.write_bytes(bytes(data))
    d1 = S.file_digest(f)
    assert d1.startswith("head-tail-16MiB:")
    data[500] = ord("y")  # the middle: not seen (documented trade-off)
    f.write_bytes(bytes(data))
    assert S.file_digest(f) == d1
    data[995] = ord("y")  # the tail: seen
    f.write_bytes(bytes(data))
    assert S.file_digest(f) != d1
    small = tmp_path / "small.txt"
    small.write_bytes(b"abc")
    assert S.file_digest(small).startswith("sha256:")


def test_file_digest_is_memoised_per_path_size_mtime(tmp_path: Path) -> None:
    f = tmp_path / "w.bin"
    f.write_bytes(b"aaaa")
    st = f.stat()
    d1 = S.file_digest(f)
    f.write_bytes(b"bbbb")  # same size; restore the mtime: the memo answers
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert S.file_digest(f) == d1
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert S.file_digest(f) != d1


# -- resolving names ----------------------------------------------------------------------------
def test_local_folder_source(bert: Path) -> None:
    src = S.resolve_source(str(bert))
    assert src.kind == "local" and src.path == bert.resolve()
    assert src.identity() == {"source": "local", "files": S.folder_digest(bert)}
    with pytest.raises(ModelError, match="hub ids only"):
        S.resolve_source(str(bert), revision="main")
    with pytest.raises(ModelError, match="does not exist"):
        S.resolve_source(str(bert / "missing"))
    with pytest.raises(ModelError, match="neither a local folder nor"):
        S.resolve_source("not a/valid id!")


def _fake_hub_cache(cache: Path, repo_id: str, files: dict[str, Path], commit: str) -> Path:
    """The huggingface_hub cache layout: blobs, refs/main, snapshots/<commit>/<symlinks>."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / commit
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    for rel, target in files.items():
        dest = snap / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.symlink_to(target.resolve())
    return snap


def test_hub_id_offline_from_cache(bert: Path, tmp_path: Path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    files = {p.name: p for p in bert.iterdir()}
    snap = _fake_hub_cache(tmp_path / "hub", "org/tiny", files, commit)
    src = S.resolve_source("org/tiny", offline=True, cache_dir=tmp_path / "hub")
    assert src.kind == "hub" and src.commit == commit and src.path == snap
    assert src.identity() == {"source": "hub", "id": "org/tiny", "commit": commit}
    with pytest.raises(ModelError, match=r"not .*in the local Hugging Face cache") as err:
        S.resolve_source("org/absent", offline=True, cache_dir=tmp_path / "hub")
    assert "hf download org/absent" in str(err.value) and "LEXSEM_OFFLINE" in str(err.value)


@pytest.mark.parametrize(
    ("alias", "backend"), [("gpt2", "lm"), ("clip-b32", "clip"), ("bge-small", "hf")]
)
def test_an_alias_missing_offline_suggests_a_folder_of_its_own_backend(
    alias: str, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-m gpt2` offline suggested `hf:/path/to/folder`, which loads gpt2 as an embedder."""
    from huggingface_hub import constants

    from lexsem.models.factory import load_model

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ModelError, match=r"not .*in the local Hugging Face cache") as err:
        load_model(alias, offline=True)
    assert f"({backend}:/path/to/folder)" in str(err.value)
    if backend != "hf":
        assert "hf:/path/to/folder" not in str(err.value)


def test_packaged_copy_and_hub_snapshot_share_identity(
    minilm_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo_id = "sentence-transformers/all-MiniLM-L6-v2"
    packaged = S.resolve_source(repo_id)
    assert packaged.kind == "packaged" and packaged.path == minilm_path
    # the same model served from a hub snapshot (with the extra files the hub repo has)
    extra = tmp_path / "extra"
    extra.mkdir()
    for name in ("pytorch_model.bin", "tf_model.h5", "train_script.py", ".gitattributes"):
        (extra / name).write_bytes(b"not used")
    files = {str(p.relative_to(minilm_path)): p for p in minilm_path.rglob("*") if p.is_file()}
    files.update({p.name: p for p in extra.iterdir()})
    commit = "c9745ed1d9f207416be6d2e6f8de32d1f16199bf"
    _fake_hub_cache(tmp_path / "hub", repo_id, files, commit)
    monkeypatch.setattr(S, "offline_copy", lambda _repo: None)  # as if not installed
    hub = S.resolve_source(repo_id, offline=True, cache_dir=tmp_path / "hub")
    assert hub.kind == "hub" and hub.commit == commit
    assert hub.identity() == packaged.identity()
    assert set(packaged.identity()) == {"source", "id", "weights"}


def test_hub_unreachable_falls_back_to_cache(
    bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    def unreachable(self, repo_id, **kwargs):  # type: ignore[no-untyped-def]
        raise ConnectionError("no route to host")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", unreachable)
    commit = "89abcdef0123456789abcdef0123456789abcdef"
    snap = _fake_hub_cache(
        tmp_path / "hub", "org/tiny", {"config.json": bert / "config.json"}, commit
    )
    src = S.resolve_source("org/tiny", offline=False, cache_dir=tmp_path / "hub")
    assert src.path == snap and src.commit == commit
    with pytest.raises(ModelError, match=r"could not be reached.*no route to host"):
        S.resolve_source("org/other", offline=False, cache_dir=tmp_path / "hub")


def test_download_selects_files_and_uses_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub
    from huggingface_hub.hf_api import ModelInfo, RepoSibling

    commit = "fedcba9876543210fedcba9876543210fedcba98"
    names = ["config.json", "model.safetensors", "pytorch_model.bin", "onnx/model.onnx"]

    def model_info(self, repo_id, *, revision=None, **kwargs):  # type: ignore[no-untyped-def]
        assert (repo_id, revision) == ("org/m", "v2")
        info = ModelInfo(id=repo_id, sha=commit, siblings=[])
        info.siblings = [RepoSibling(rfilename=n) for n in names]
        return info

    calls: list[dict[str, object]] = []

    def snapshot_download(repo_id, **kwargs):  # type: ignore[no-untyped-def]
        calls.append({"repo_id": repo_id, **kwargs})
        folder = tmp_path / "snapshots" / kwargs["revision"]
        folder.mkdir(parents=True)
        return str(folder)

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", model_info)
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    src = S.resolve_source("org/m", revision="v2", offline=False, cache_dir=tmp_path / "hub")
    assert src.kind == "hub" and src.commit == commit and src.revision == "v2"
    assert calls == [
        {
            "repo_id": "org/m",
            "revision": commit,
            "cache_dir": tmp_path / "hub",
            "allow_patterns": ["config.json", "model.safetensors"],
        }
    ]
    assert src.identity() == {"source": "hub", "id": "org/m", "commit": commit}
