"""Credentials in URLs are never written or shown: a key in a model spec's `base_url`
(`user:KEY@host`, `?api_key=KEY`) reaches the server but no file under the run folder or the
cache, no printed line, no error and no `lexsem report` output (`lexsem.credentials`)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from builders.chat_server import Server
from lexsem.cli import app
from lexsem.credentials import redact, redact_url, redacted

KEY = "Sk9TopSecret4242"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:K@h:8/v1", "http://***@h:8/v1"),
        ("https://K@h/v1", "https://***@h/v1"),
        ("https://h/v1?api_key=K&model=m", "https://h/v1?api_key=***&model=m"),
        ("https://h/v1?key=K", "https://h/v1?key=***"),
        ("https://h/v1?token=K;x=1", "https://h/v1?token=***;x=1"),
        ("https://h/v1?a=1&access_token=K", "https://h/v1?a=1&access_token=***"),
        ("https://h/b?sig=K&X-Amz-Signature=K", "https://h/b?sig=***&X-Amz-Signature=***"),
        ("https://h/v1#access_token=K", "https://h/v1#access_token=***"),
        # not credentials: left exactly as they are
        ("https://h/v1?key_env=OPENAI&monkey=1", "https://h/v1?key_env=OPENAI&monkey=1"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("https://h/v1?key=", "https://h/v1?key="),
        ("/home/ann/models/x", "/home/ann/models/x"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_finds_urls_in_text_and_in_percent_encoded_specs() -> None:
    raw = f"openai:m?base_url=http://u:{KEY}@h:1/v1?api_key={KEY}&max_tokens=5"
    assert redact(raw) == "openai:m?base_url=http://***@h:1/v1?api_key=***&max_tokens=5"
    canonical = f"openai:m?base_url=http%3A%2F%2Fu%3A{KEY}%40h%2Fv1&max_tokens=5"
    assert redact(canonical) == "openai:m?base_url=http%3A%2F%2F***%40h%2Fv1&max_tokens=5"
    message = f"ConnectError: cannot reach 'https://{KEY}@api.x.org/v1/chat/completions'"
    assert KEY not in redact(message) and "https://***@api.x.org/v1" in redact(message)
    plain = {"a": ["no url here", 3, None], "b": "https://h/v1"}
    assert redacted(plain) is plain  # nothing to hide: the same object, so the same key


def _ask(url: str, bench: dict[str, Any], *args: str) -> Any:
    common = ["-b", "fixture_pp", "--prompt", "scpp3", "--data-dir", str(bench["data"]),
              "--coco-val2017", str(bench["images"]),
              "--cache-dir", str(bench["cache"])]  # fmt: skip
    return CliRunner().invoke(app, ["ask", "-m", f"openai:tiny-vlm?base_url={url}", *common, *args])


def _files_holding(root: Path, secret: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_a_key_in_base_url_is_written_nowhere(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    state, url = server
    keyed = url.replace("http://", f"http://user:{KEY}@") + f"?api_key={KEY}"
    res = _ask(keyed, bench, "--run", str(tmp_path / "run"), "-o", str(tmp_path / "a.jsonl"))
    assert res.exit_code == 0, res.output
    assert state.posts == 15  # the server was asked (with the key)
    assert KEY not in res.output
    assert _files_holding(tmp_path, KEY) == []  # run folder, cache, answers file
    record = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
    assert record["model"]["spec"] == (
        f"openai:tiny-vlm?base_url={url.replace('http://', 'http://***@')}?api_key=***"
    )
    assert record["model"]["fingerprint"]["base_url"] == (
        url.replace("http://", "http://***@") + "?api_key=***"
    )
    report = CliRunner().invoke(app, ["report", str(tmp_path / "run")])
    assert report.exit_code == 0, report.output
    assert KEY not in report.output
    # another key to the same server is the same endpoint: every answer comes from the store
    other = url.replace("http://", "http://ann:another-key@") + "?api_key=another"
    again = _ask(other, bench)
    assert again.exit_code == 0, again.output
    assert "15 requests: 15 answered from the store, 0 sent" in again.stderr
    assert state.posts == 15


def test_errors_never_show_the_key(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    """An HTTP error (the server's URL in the message) and a refused connection (httpx's error
    text) are told without the key; nothing is written."""
    _, url = server
    keyed = url.replace("http://", f"http://{KEY}@")
    res = CliRunner().invoke(app, [
        "ask", "-m", f"openai:no-such-model?base_url={keyed}", "-b", "fixture_pp",
        "--prompt", "scpp3", "--data-dir", str(bench["data"]),
        "--coco-val2017", str(bench["images"]), "--cache-dir", str(bench["cache"]),
    ])  # fmt: skip
    assert res.exit_code == 2
    assert "HTTP 404 from http://***@127.0.0.1" in res.output and KEY not in res.output
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    closed = f"http://u:{KEY}@127.0.0.1:{port}/v1?token={KEY}&timeout=0.5"
    res = _ask(closed, bench, "--run", str(tmp_path / "run2"))
    assert res.exit_code == 2
    assert KEY not in res.output, res.output
    assert _files_holding(tmp_path, KEY) == []


def test_report_of_a_run_json_holding_a_key_does_not_show_it(
    server: tuple[Server, str], bench: dict[str, Any], tmp_path: Path
) -> None:
    """A run.json written by other means (an older lexsem, an edit by hand) with a key in its
    spec: `report` prints the run without it."""
    _, url = server
    res = _ask(url, bench, "--run", str(tmp_path / "run"))
    assert res.exit_code == 0, res.output
    file = tmp_path / "run" / "run.json"
    record = json.loads(file.read_text(encoding="utf-8"))
    record["model"]["spec"] = f"openai:tiny-vlm?base_url=https://u:{KEY}@h/v1"
    record["model"]["name"] = record["model"]["spec"]
    file.write_text(json.dumps(record), encoding="utf-8")
    page = tmp_path / "r.html"
    shown = CliRunner().invoke(app, ["report", str(tmp_path / "run"), "--html", str(page)])
    assert shown.exit_code == 0, shown.output
    assert "tiny-vlm" in shown.output and "***" in page.read_text(encoding="utf-8")
    assert KEY not in shown.output and KEY not in page.read_text(encoding="utf-8")
