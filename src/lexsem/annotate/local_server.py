"""A study served by `lexsem annotate serve` in a child process on 127.0.0.1, for the restart
test and the load benchmark: started on a free port (more `serve` options in `extra`), ready
when its first page answers, killable (SIGKILL) like a crashed server, its stderr kept
(`log()`; it should stay small: the pipe is read when the server is killed)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

__all__ = ["LocalServer", "free_port"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalServer:
    """`with LocalServer(study) as srv:` a running server at `srv.url`."""

    def __init__(
        self,
        study: Path,
        *,
        rate_limit: int = 100_000,
        port: int | None = None,
        extra: list[str] | None = None,
    ) -> None:
        self.study, self.rate_limit, self.extra = study, rate_limit, extra or []
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = ""

    def start(self, timeout: float = 60.0) -> None:
        code = "import sys; from lexsem.cli import app; sys.exit(app())"
        cmd = [sys.executable, "-c", code, "annotate", "serve", str(self.study),
               "--port", str(self.port), "--rate-limit", str(self.rate_limit),
               *self.extra]  # fmt: skip
        self.proc = subprocess.Popen(
            cmd, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                raise RuntimeError(f"the study server exited ({self.proc.returncode}): {err}")
            try:
                httpx.get(f"{self.url}/static/style.css", timeout=1.0)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"the study server did not answer on {self.url} in {timeout} s")

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)
        if self.proc is not None and self.proc.stderr is not None:
            self._log += self.proc.stderr.read().decode(errors="replace")
            self.proc.stderr.close()

    def log(self) -> str:
        """What the server wrote to stderr (after it was killed)."""
        return self._log

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
