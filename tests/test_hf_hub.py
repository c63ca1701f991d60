"""An unreachable Hugging Face Hub: detected in seconds by one HEAD request (never a long
`datasets` retry loop), said as such — before any word about tokens, Winoground included — with
the offline snapshot folder where lexsem looks. No real network: endpoints are local ports on
127.0.0.1, or the Hub call is replaced by one raising the errors huggingface_hub, datasets,
httpx and requests raise."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from builders.backends import require_module
from lexsem.benchmarks import bivlc, winoground
from lexsem.benchmarks.sources import hf_hub, hf_load
from lexsem.errors import LexsemError

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A local port bound but not listening: a connection to it is refused at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not offline, no token, no proxy: lexsem would go to the Hub."""
    for var in ("LEXSEM_OFFLINE", "HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv(var.lower(), raising=False)
    monkeypatch.setattr(hf_load, "stored_token", lambda: None)


@pytest.fixture
def dead_hub(online: None, refused_port: int, monkeypatch: pytest.MonkeyPatch) -> str:
    """The Hub endpoint is a refused local port, and `datasets.load_dataset` must not be
    reached (it would retry for 26 s before giving up)."""
    datasets = require_module("datasets")
    url = f"http://127.0.0.1:{refused_port}"
    monkeypatch.setattr(hf_hub, "endpoint", lambda: url)

    def never(*a: Any, **k: Any) -> Any:
        raise AssertionError("datasets.load_dataset was called on an unreachable Hub")

    monkeypatch.setattr(datasets, "load_dataset", never)
    return url


# ---------------------------------------------------------------------------- the probe


class _Answer(BaseHTTPRequestHandler):
    status = 200

    def do_HEAD(self) -> None:
        self.send_response(self.status)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class _Refuse(_Answer):
    status = 401


@pytest.mark.parametrize("handler", [_Answer, _Refuse], ids=["200", "401"])
def test_any_http_answer_is_reachable(online: None, handler: type[_Answer]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert hf_hub.unreachable(f"http://127.0.0.1:{server.server_address[1]}") is None
    finally:
        server.shutdown()
        server.server_close()


def test_a_refused_port_is_unreachable(online: None, refused_port: int) -> None:
    why = hf_hub.unreachable(f"http://127.0.0.1:{refused_port}")
    assert why is not None and why.startswith(f"127.0.0.1:{refused_port}: ")
    assert "refused" in why.lower()


def test_a_silent_server_is_unreachable(online: None) -> None:
    """It accepts the connection and never answers: the probe stops waiting at its timeout."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        why = hf_hub.unreachable(f"http://127.0.0.1:{port}", timeout=0.2)
    assert why == f"127.0.0.1:{port}: no answer within 0.2 s"


def test_the_probe_timeout_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert hf_hub.probe_timeout() == hf_hub.PROBE_TIMEOUT_S
    monkeypatch.setenv(hf_hub.PROBE_TIMEOUT_ENV, "1.5")
    assert hf_hub.probe_timeout() == 1.5
    monkeypatch.setenv(hf_hub.PROBE_TIMEOUT_ENV, "0")  # no probe: nothing is asked

    def ask(url: str, timeout: float) -> str | None:
        raise AssertionError("probed")

    monkeypatch.setattr(hf_hub, "_ask", ask)
    assert hf_hub.unreachable("http://127.0.0.1:9") is None


def test_the_probe_gives_up_when_nothing_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A black-holed host (or a hanging name lookup): the probe returns after its timeout,
    while the connection attempt is still blocked."""
    release = threading.Event()

    def hang(url: str, timeout: float) -> str | None:
        release.wait()
        return None

    monkeypatch.setattr(hf_hub, "_ask", hang)
    try:
        why = hf_hub.unreachable("https://hub.example", timeout=0.01)
    finally:
        release.set()
    assert why == "hub.example:443: no answer within 0.01 s"


def test_the_probe_goes_through_the_proxy_of_the_environment(
    online: None, refused_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{refused_port}")
    host, port, note = hf_hub._target("https://huggingface.co")
    assert (host, port, note) == (
        "127.0.0.1",
        refused_port,
        " (the proxy for https://huggingface.co)",
    )
    why = hf_hub.unreachable("https://huggingface.co")  # the proxy refuses: nothing goes out
    assert why is not None
    assert why.startswith(f"127.0.0.1:{refused_port} (the proxy for https://huggingface.co): ")
    monkeypatch.setenv("NO_PROXY", "huggingface.co")
    assert hf_hub._target("https://huggingface.co") == ("huggingface.co", 443, "")


# ---------------------------------------------------------------------------- loading


def test_an_unreachable_hub_names_the_snapshot_folders(
    dead_hub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEXSEM_DATA_DIR", str(tmp_path / "env-data"))
    with pytest.raises(LexsemError) as err:
        bivlc.load(data_root=tmp_path / "data")
    msg = str(err.value)
    assert msg.startswith(f"bivlc: cannot reach the Hugging Face Hub at {dead_hub} (")
    assert "refused" in msg.lower()
    assert f"{tmp_path / 'data' / 'hf' / 'imirandam' / 'BiVLC'} (not there)" in msg
    assert f"{tmp_path / 'env-data' / 'hf' / 'imirandam' / 'BiVLC'} (not there)" in msg
    assert "--data-dir" in msg and "$LEXSEM_DATA_DIR" in msg
    assert "hf download --repo-type dataset imirandam/BiVLC" in msg
    assert "gated" not in msg


def test_winoground_offline_is_told_no_network_not_only_the_token(
    dead_hub: str, tmp_path: Path
) -> None:
    with pytest.raises(LexsemError) as err:
        winoground.load(data_root=tmp_path)  # no token either
    msg = str(err.value)
    assert msg.startswith("winoground: cannot reach the Hugging Face Hub")
    assert f"{tmp_path / 'hf' / 'facebook' / 'winoground'} (not there)" in msg
    assert "is a gated dataset" not in msg  # not the token message
    assert "also gated" in msg and "HF_TOKEN" in msg  # the token is mentioned second
    assert msg.index("cannot reach") < msg.index("gated")


def test_without_a_data_folder_the_message_says_how_to_set_one(dead_hub: str) -> None:
    with pytest.raises(LexsemError, match="no data folder is set") as err:
        bivlc.load()
    assert "--data-dir DIR or $LEXSEM_DATA_DIR" in str(err.value)


def test_a_snapshot_under_data_root_is_used_before_the_hub(dead_hub: str, tmp_path: Path) -> None:
    from builders.hf_parquet import write_bivlc

    write_bivlc(tmp_path / "data" / "hf" / "imirandam" / "BiVLC")
    res = bivlc.load(data_root=tmp_path / "data")
    assert len(res.items) == 5 and res.files


def _hub_errors() -> list[tuple[str, Callable[[], BaseException]]]:
    def datasets_style() -> BaseException:
        errors = require_module("huggingface_hub.errors")
        try:
            try:
                raise errors.LocalEntryNotFoundError("cannot find the requested files")
            except Exception as inner:
                raise ConnectionError(
                    "Couldn't reach 'facebook/winoground' on the Hub (LocalEntryNotFoundError)"
                ) from inner
        except ConnectionError as exc:
            return exc

    def httpx_connect() -> BaseException:
        return require_module("httpx").ConnectError("[Errno 111] Connection refused")

    def requests_connect() -> BaseException:
        return require_module("requests").exceptions.ConnectionError("Max retries exceeded")

    def hub_offline() -> BaseException:
        return require_module("huggingface_hub.errors").OfflineModeIsEnabled("offline")

    def wrapped_timeout() -> BaseException:
        try:
            try:
                raise TimeoutError("timed out")
            except TimeoutError as inner:
                raise RuntimeError("An error happened while loading") from inner
        except RuntimeError as exc:
            return exc

    return [
        ("datasets", datasets_style),
        ("httpx", httpx_connect),
        ("requests", requests_connect),
        ("hub-offline", hub_offline),
        ("timeout-cause", wrapped_timeout),
    ]


@pytest.mark.parametrize(("name", "make"), _hub_errors(), ids=[n for n, _ in _hub_errors()])
def test_connection_errors_of_the_hub_call_say_no_network(
    online: None, tmp_path: Path, name: str, make: Callable[[], BaseException]
) -> None:
    def load(repo: str, **kwargs: Any) -> Any:
        raise make()

    with pytest.raises(LexsemError) as err:
        winoground.load(load_dataset=load, token="hf_x", data_root=tmp_path)
    msg = str(err.value)
    assert msg.startswith("winoground: cannot reach the Hugging Face Hub"), msg
    assert "is a gated dataset" not in msg
    assert f"{tmp_path / 'hf' / 'facebook' / 'winoground'} (not there)" in msg


def test_no_network_on_the_parquet_export_retry_is_said_too(online: None) -> None:
    def load(repo: str, **kwargs: Any) -> Any:
        if "revision" not in kwargs:
            raise RuntimeError("Dataset scripts are no longer supported, but found winoground.py")
        raise ConnectionError("Couldn't reach 'facebook/winoground' on the Hub")

    with pytest.raises(LexsemError, match="winoground: cannot reach the Hugging Face Hub"):
        winoground.load(load_dataset=load, token="hf_x")


def test_a_refusal_by_the_hub_is_still_the_token_message(online: None, tmp_path: Path) -> None:
    """A 401 / 403 is an answer: the network works, the token is the problem."""

    def refuse(repo: str, **kwargs: Any) -> Any:
        raise RuntimeError(f"401 Client Error: Cannot access gated repo {repo}")

    with pytest.raises(LexsemError) as err:
        winoground.load(load_dataset=refuse, token="hf_x", data_root=tmp_path)
    msg = str(err.value)
    assert "is a gated dataset" in msg and "HF_TOKEN" in msg and "cannot reach" not in msg
    assert f"{tmp_path / 'hf' / 'facebook' / 'winoground'} (not there)" in msg


def test_offline_mode_names_the_snapshot_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEXSEM_OFFLINE", "1")
    with pytest.raises(LexsemError) as err:
        winoground.load(data_root=tmp_path)
    msg = str(err.value)
    assert "offline" in msg and f"{tmp_path / 'hf' / 'facebook' / 'winoground'}" in msg
    assert "is a gated dataset" not in msg


def test_network_errors_are_told_from_others() -> None:
    assert hf_hub.is_network_error(ConnectionRefusedError())
    assert hf_hub.is_network_error(socket.gaierror(-2, "Name or service not known"))
    assert not hf_hub.is_network_error(RuntimeError("Dataset scripts are no longer supported"))
    assert not hf_hub.is_network_error(FileNotFoundError("no such split"))
