"""Downloads against a local HTTP server on 127.0.0.1: retries, resume, checksums, lookup."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from lexsem import digests
from lexsem import download as dl
from lexsem.digests import sha256_file
from lexsem.download import SourceFile, download, resolve_source
from lexsem.errors import DataError, DownloadError

BODY = os.urandom(300_000) + b"end of the benchmark file\n"
SHA = hashlib.sha256(BODY).hexdigest()
FAST = {"backoff": 0.01, "timeout": 5.0}


@dataclass
class Server:
    """A tiny file server whose behaviour per path is a queue of modes (the last one repeats).

    Modes: ok (Range -> 206), norange (ignores Range, always 200), drop (sends half of the
    requested body then closes), wrong (other bytes), 500, 404, slow (sleeps before answering),
    redirect (302 to /files/<rest>).
    """

    base: str = ""
    bodies: dict[str, bytes] = field(default_factory=dict)
    modes: dict[str, list[str]] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, path: str, body: bytes = BODY, modes: tuple[str, ...] = ("ok",)) -> SourceFile:
        self.bodies[path] = body
        self.modes[path] = list(modes)
        return SourceFile(name=f"bench/{path.rsplit('/', 1)[-1]}", url=self.base + path, sha256=SHA)

    def next_mode(self, path: str) -> str:
        with self.lock:
            queue = self.modes.get(path, ["404"])
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def hits(self, path: str) -> list[str | None]:
        """The Range header of every request for `path`, in order."""
        return [rng for p, rng in self.requests if p == path]


def _make_handler(state: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
            pass

        def do_GET(self) -> None:
            rng = self.headers.get("Range")
            with state.lock:
                state.requests.append((self.path, rng))
            mode = state.next_mode(self.path)
            body = state.bodies.get(self.path, b"")
            if mode == "404":
                self.send_error(404)
                return
            if mode == "500":
                self.send_error(500)
                return
            if mode == "redirect":
                self.send_response(302)
                self.send_header("Location", "/files/" + self.path.rsplit("/", 1)[-1])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if mode == "slow":
                time.sleep(0.5)
            if mode == "wrong":
                body = body[::-1]
            start = 0
            if rng and mode != "norange":
                start = int(rng.removeprefix("bytes=").split("-")[0])
                if start >= len(body):
                    self.send_error(416)
                    return
            self.send_response(206 if start else 200)
            self.send_header("Content-Length", str(len(body) - start))
            if start:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            payload = body[start:]
            if mode == "drop":
                payload = payload[: len(payload) // 2]
            try:
                self.wfile.write(payload)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            if mode == "drop":
                self.close_connection = True

    return Handler


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(state))
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Proxy settings in the environment must not reroute requests to 127.0.0.1."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


def _leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".part")]


def _unreachable(name: str = "bench/file.tsv", sha: str = SHA) -> SourceFile:
    """A source whose URL nothing listens on (port 9 on 127.0.0.1)."""
    return SourceFile(name=name, url="http://127.0.0.1:9/nothing", sha256=sha)


# --------------------------------------------------------------------------- sha256_file


def test_sha256_file_matches_hashlib_and_tracks_changes(tmp_path: Path) -> None:
    f = tmp_path / "x.bin"
    f.write_bytes(BODY)
    assert sha256_file(f) == SHA
    assert sha256_file(f) == SHA  # memoised
    f.write_bytes(b"changed")
    assert sha256_file(f) == hashlib.sha256(b"changed").hexdigest()
    big = tmp_path / "big.bin"
    data = os.urandom(3 * (1 << 20) + 17)  # spans several 1 MiB chunks
    big.write_bytes(data)
    assert sha256_file(big) == hashlib.sha256(data).hexdigest()


def test_sha256_file_is_memoised_for_unchanged_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = tmp_path / "x.bin"
    f.write_bytes(b"abc")
    calls: list[Path] = []
    real = digests.file_sha256

    def counting(path: Path) -> str:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(digests, "file_sha256", counting)
    first = sha256_file(f)
    assert sha256_file(f) == first
    assert len(calls) == 1
    os.utime(f, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))  # touched: hash again
    assert sha256_file(f) == first
    assert len(calls) == 2


# --------------------------------------------------------------------------- download


def test_download_ok(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/a.tsv")
    path = download(src, tmp_path, **FAST)
    assert path == tmp_path / "data" / "bench" / "a.tsv"
    assert path.read_bytes() == BODY
    assert server.hits("/files/a.tsv") == [None]
    assert _leftovers(tmp_path) == []


def test_download_existing_valid_file_is_not_fetched_again(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/a.tsv")
    download(src, tmp_path, **FAST)
    download(src, tmp_path, **FAST)
    assert len(server.hits("/files/a.tsv")) == 1


def test_download_follows_redirects(server: Server, tmp_path: Path) -> None:
    server.add("/files/r.tsv")
    src = server.add("/moved/r.tsv", modes=("redirect",))
    assert download(src, tmp_path, **FAST).read_bytes() == BODY
    assert len(server.hits("/files/r.tsv")) == 1


def test_checksum_mismatch_leaves_nothing(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/bad.tsv", modes=("wrong",))
    with pytest.raises(DownloadError) as exc:
        download(src, tmp_path, **FAST)
    msg = str(exc.value)
    assert src.url in msg
    assert SHA in msg
    assert hashlib.sha256(BODY[::-1]).hexdigest() in msg
    assert not (tmp_path / "data" / "bench" / "bad.tsv").exists()
    assert _leftovers(tmp_path) == []


def test_dropped_connection_is_resumed_with_range(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/d.tsv", modes=("drop", "drop", "ok"))
    path = download(src, tmp_path, retries=4, **FAST)
    assert path.read_bytes() == BODY
    ranges = server.hits("/files/d.tsv")
    assert len(ranges) == 3
    assert ranges[0] is None
    # each retry resumes where the previous attempt stopped
    half = (len(BODY)) // 2
    assert ranges[1] == f"bytes={half}-"
    assert ranges[2] == f"bytes={half + (len(BODY) - half) // 2}-"
    assert _leftovers(tmp_path) == []


def test_resume_falls_back_to_full_download_when_range_is_ignored(
    server: Server, tmp_path: Path
) -> None:
    src = server.add("/files/n.tsv", modes=("drop", "norange"))
    path = download(src, tmp_path, **FAST)
    assert path.read_bytes() == BODY
    ranges = server.hits("/files/n.tsv")
    assert len(ranges) == 2
    assert ranges[1] is not None  # asked for a range, got a 200 and restarted
    assert _leftovers(tmp_path) == []


def test_stale_partial_file_is_discarded_after_a_bad_resume(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/s.tsv")
    dest = tmp_path / "data" / "bench" / "s.tsv"
    dest.parent.mkdir(parents=True)
    part = dl.part_path(dest)
    part.write_bytes(b"x" * 1000)  # left by an interrupted download of another version
    assert download(src, tmp_path, **FAST).read_bytes() == BODY
    assert server.hits("/files/s.tsv") == ["bytes=1000-", None]
    assert _leftovers(tmp_path) == []


def test_always_dropping_fails_after_retries(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/x.tsv", modes=("drop",))
    with pytest.raises(DownloadError) as exc:
        download(src, tmp_path, retries=3, **FAST)
    msg = str(exc.value)
    assert src.url in msg
    assert "3 attempt" in msg
    assert "--data-dir" in msg and "LEXSEM_DATA_DIR" in msg and "bench/x.tsv" in msg
    assert len(server.hits("/files/x.tsv")) == 3
    assert not (tmp_path / "data" / "bench" / "x.tsv").exists()
    # what was received is kept for the next command (see the test below)
    assert _leftovers(tmp_path) == [dl.part_path(tmp_path / "data" / "bench" / "x.tsv")]


def test_partial_file_is_kept_after_the_last_attempt_and_the_next_call_resumes(
    server: Server, tmp_path: Path
) -> None:
    src = server.add("/files/p.tsv", modes=("drop",))
    dest = tmp_path / "data" / "bench" / "p.tsv"
    part = dl.part_path(dest)
    with pytest.raises(DownloadError) as exc:
        download(src, tmp_path, retries=2, **FAST)
    kept = part.stat().st_size
    assert kept == len(BODY) // 2 + (len(BODY) - len(BODY) // 2) // 2  # two half answers
    assert part.read_bytes() == BODY[:kept]
    msg = str(exc.value)
    assert f"{kept} bytes received are kept in {part}" in msg and "resumes" in msg
    assert msg.index("resumes") < msg.index("offline?")  # images/download strips the hint
    assert not dest.exists()

    server.modes["/files/p.tsv"] = ["ok"]  # the network is back: a new command
    assert download(src, tmp_path, **FAST).read_bytes() == BODY
    assert server.hits("/files/p.tsv")[2:] == [f"bytes={kept}-"]  # resumed, not restarted
    assert _leftovers(tmp_path) == []


def test_nothing_received_leaves_no_partial_file(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/z.tsv", modes=("500",))
    with pytest.raises(DownloadError) as exc:
        download(src, tmp_path, retries=2, **FAST)
    assert "kept" not in str(exc.value)
    assert _leftovers(tmp_path) == []


def test_server_error_then_ok(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/e.tsv", modes=("500", "ok"))
    assert download(src, tmp_path, **FAST).read_bytes() == BODY
    assert server.hits("/files/e.tsv") == [None, None]


def test_persistent_server_error_names_status(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/e5.tsv", modes=("500",))
    with pytest.raises(DownloadError, match="HTTP 500"):
        download(src, tmp_path, retries=2, **FAST)
    assert len(server.hits("/files/e5.tsv")) == 2


def test_not_found_is_not_retried(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/missing.tsv", modes=("404",))
    with pytest.raises(DownloadError, match="404"):
        download(src, tmp_path, retries=4, **FAST)
    assert len(server.hits("/files/missing.tsv")) == 1
    assert _leftovers(tmp_path) == []


def test_timeout_is_retried(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/t.tsv", modes=("slow", "ok"))
    path = download(src, tmp_path, retries=3, backoff=0.01, timeout=0.2)
    assert path.read_bytes() == BODY
    assert len(server.hits("/files/t.tsv")) == 2


def test_connection_refused_fails_with_hint(tmp_path: Path) -> None:
    src = _unreachable()
    with pytest.raises(DownloadError) as exc:
        download(src, tmp_path, retries=2, **FAST)
    msg = str(exc.value)
    assert src.url in msg and "--data-dir" in msg and "ConnectError" in msg


def test_concurrent_downloads_fetch_once(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/c.tsv", modes=("slow", "ok"))
    results: list[Path | BaseException] = []

    def worker() -> None:
        try:
            results.append(download(src, tmp_path, **FAST))
        except BaseException as exc:  # surfaced by the asserts below
            results.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert all(isinstance(r, Path) for r in results), results
    assert len(results) == 3
    assert (tmp_path / "data" / "bench" / "c.tsv").read_bytes() == BODY
    assert len(server.hits("/files/c.tsv")) == 1


# --------------------------------------------------------------------------- resolve_source


def test_resolve_uses_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "offline"
    (data / "bench").mkdir(parents=True)
    (data / "bench" / "file.tsv").write_bytes(BODY)
    src = _unreachable()
    path = resolve_source(src, data_dir=data, cache_root=tmp_path / "cache", offline=False)
    assert path == data / "bench" / "file.tsv"
    assert not (tmp_path / "cache").exists()


def test_resolve_uses_data_dir_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "offline"
    (data / "bench").mkdir(parents=True)
    (data / "bench" / "file.tsv").write_bytes(BODY)
    monkeypatch.setenv("LEXSEM_DATA_DIR", str(data))
    path = resolve_source(_unreachable(), cache_root=tmp_path / "cache", offline=False)
    assert path == data / "bench" / "file.tsv"


def test_resolve_data_dir_wrong_sha(tmp_path: Path) -> None:
    data = tmp_path / "offline"
    (data / "bench").mkdir(parents=True)
    (data / "bench" / "file.tsv").write_bytes(b"edited locally\n")
    with pytest.raises(DataError) as exc:
        resolve_source(_unreachable(), data_dir=data, cache_root=tmp_path / "c", offline=False)
    msg = str(exc.value)
    assert str(data / "bench" / "file.tsv") in msg
    assert SHA in msg
    assert hashlib.sha256(b"edited locally\n").hexdigest() in msg
    assert "pinned public version" in msg
    # verify=False accepts it as is
    path = resolve_source(
        _unreachable(), data_dir=data, cache_root=tmp_path / "c", offline=False, verify=False
    )
    assert path.read_bytes() == b"edited locally\n"


def test_resolve_data_dir_missing_file(tmp_path: Path) -> None:
    data = tmp_path / "offline"
    data.mkdir()
    cache = tmp_path / "cache"
    src = _unreachable()
    (cache / "data" / "bench").mkdir(parents=True)
    (cache / "data" / "bench" / "file.tsv").write_bytes(BODY)  # a data folder wins over cache
    with pytest.raises(DataError) as exc:
        resolve_source(src, data_dir=data, cache_root=cache, offline=False)
    msg = str(exc.value)
    assert "bench/file.tsv" in msg
    assert str(data) in msg
    assert "missing" in msg


def test_resolve_cache_hit_offline(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "data" / "bench").mkdir(parents=True)
    (cache / "data" / "bench" / "file.tsv").write_bytes(BODY)
    path = resolve_source(_unreachable(), cache_root=cache, offline=True)
    assert path == cache / "data" / "bench" / "file.tsv"


def test_resolve_cache_hit_uses_env_cache_and_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "envcache"
    (cache / "data" / "bench").mkdir(parents=True)
    (cache / "data" / "bench" / "file.tsv").write_bytes(BODY)
    monkeypatch.setenv("LEXSEM_CACHE_DIR", str(cache))
    monkeypatch.setenv("LEXSEM_OFFLINE", "1")
    assert resolve_source(_unreachable()) == cache / "data" / "bench" / "file.tsv"


def test_resolve_offline_with_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(DownloadError) as exc:
        resolve_source(_unreachable(), cache_root=cache, offline=True)
    msg = str(exc.value)
    assert "--data-dir" in msg
    assert "LEXSEM_DATA_DIR" in msg
    assert "lexsem download" in msg
    assert str(cache / "data") in msg
    assert "bench/file.tsv" in msg


def test_resolve_downloads_when_online(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/file.tsv")
    path = resolve_source(src, cache_root=tmp_path / "cache", offline=False)
    assert path.read_bytes() == BODY
    assert path == tmp_path / "cache" / "data" / "bench" / "file.tsv"
    # second call: cache hit, no request
    assert resolve_source(src, cache_root=tmp_path / "cache", offline=False) == path
    assert len(server.hits("/files/file.tsv")) == 1


def test_resolve_redownloads_corrupted_cache(server: Server, tmp_path: Path) -> None:
    src = server.add("/files/file.tsv")
    cached = tmp_path / "cache" / "data" / "bench" / "file.tsv"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(BODY[:1000])  # truncated copy
    path = resolve_source(src, cache_root=tmp_path / "cache", offline=False)
    assert path == cached
    assert path.read_bytes() == BODY
    assert server.hits("/files/file.tsv") == [None]


def test_resolve_corrupted_cache_offline_is_removed_and_reported(tmp_path: Path) -> None:
    cached = tmp_path / "cache" / "data" / "bench" / "file.tsv"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"garbage")
    with pytest.raises(DownloadError) as exc:
        resolve_source(_unreachable(), cache_root=tmp_path / "cache", offline=True)
    assert "sha256" in str(exc.value) and "--data-dir" in str(exc.value)
    assert not cached.exists()


# --------------------------------------------------------------------------- lexsem download --to
def _served_fixture(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, bytes]:
    """The fixture benchmark registered with its files served by `server`: name → bytes."""
    import dataclasses

    from builders.fakes import register_fixture_benchmark
    from lexsem.benchmarks import catalog

    data, spec = register_fixture_benchmark(tmp_path / "origin", monkeypatch)
    files, subsets = {}, []
    for sub in spec.subsets:
        assert sub.source is not None
        body = (data / sub.source.name).read_bytes()
        path = f"/{sub.source.name}"
        server.bodies[path], server.modes[path] = body, ["ok"]
        files[sub.source.name] = body
        subsets.append(
            dataclasses.replace(sub, source=dataclasses.replace(sub.source, url=server.base + path))
        )
    catalog.BENCHMARKS.add(
        spec.name, dataclasses.replace(spec, subsets=tuple(subsets)), replace=True
    )
    return files


def test_download_to_fills_a_data_folder_that_runs_offline(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from builders.fakes import BagOfWordsEncoder
    from lexsem import evaluate
    from lexsem.cli import app

    files = _served_fixture(server, tmp_path, monkeypatch)
    to, cache = tmp_path / "my data", tmp_path / "cache"
    args = ["download", "fixture_pp", "--to", str(to), "--cache-dir", str(cache)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert {p.relative_to(to).as_posix(): p.read_bytes() for p in to.rglob("*.json")} == files
    assert res.output.count("copied") == len(files)
    assert f"--data-dir {to}" in res.output
    # again: nothing fetched, nothing copied
    n = len(server.requests)
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and again.output.count("already there") == len(files)
    assert len(server.requests) == n
    # the folder is a data folder: an offline run reads it
    monkeypatch.setenv("LEXSEM_OFFLINE", "1")
    run = evaluate(BagOfWordsEncoder(), ["fixture_pp"], data_dir=to, n_boot=0, use_cache=False)
    assert {f"{s}.json" for s in run.record.benchmarks[0].subsets} == {Path(f).name for f in files}


def test_download_to_never_replaces_a_different_file(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from lexsem.cli import app

    files = _served_fixture(server, tmp_path, monkeypatch)
    to = tmp_path / "data"
    mine = to / next(iter(files))
    mine.parent.mkdir(parents=True)
    mine.write_text("[]")
    res = CliRunner().invoke(
        app, ["download", "fixture_pp", "--to", str(to), "--cache-dir", str(tmp_path / "c")]
    )
    assert res.exit_code == 2, res.output
    assert res.output.startswith(f"error: {mine}: already there with sha256")
    assert mine.read_text() == "[]"
    refused = CliRunner().invoke(app, ["download", "coco-val2017", "--to", str(to)])
    assert refused.exit_code == 2 and "COCO images (coco-val2017) go to the cache" in refused.output
