"""A scripted annotator over HTTP: it follows a personal link through consent, instructions,
practice and questions the way a browser would (opening the link, which sets the session
cookie and redirects to the participant's pages, then reading the pages' forms and posting
them with their CSRF token), answering with a given policy. The load benchmark
(`bench/annotate_bench.py`) runs many at once; the tests use it to answer studies.

The annotator talks through any client with httpx's ``request(method, url, data=...,
follow_redirects=...)`` and a cookie jar (an ``httpx.Client``, FastAPI's test client: one
annotator at a time per client, as one browser holds one session) or through
`KeptAliveClient`: one kept-alive connection, as a browser keeps, on the standard library's
``http.client``, a fraction of httpx's processor time per request; many annotators in one
process (the benchmark's 50 threads, beside the server on the same cores) measure the server,
not their own client.
"""

from __future__ import annotations

import http.client
import http.cookies
import random
import re
import select
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Client", "KeptAliveClient", "Page", "Reply", "ScriptedAnnotator", "parse_page"]


class Reply(Protocol):
    """What the annotator reads of a response."""

    @property
    def status_code(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def headers(self) -> Mapping[str, str]: ...


class Client(Protocol):
    """What the annotator sends requests through (an ``httpx.Client`` is one)."""

    def request(self, method: str, url: str, **kw: Any) -> Any: ...


@dataclass(frozen=True)
class _Response:
    status_code: int
    text: str
    headers: Mapping[str, str]


class KeptAliveClient:
    """An HTTP client over one kept-alive connection to `base_url` (``http://host:port``):
    ``request(method, path, data=FORM)`` sends a form (url-encoded) or nothing and reads the
    whole response; redirects are returned, not followed; cookies the server sets are kept and
    sent back (by name, for the one server: enough for the study's session). A connection the
    server closed while idle is opened again before the request is sent (so a request is never
    sent twice); a response that says ``Connection: close`` closes it."""

    def __init__(self, base_url: str, timeout: float = 60.0) -> None:
        url = urllib.parse.urlsplit(base_url)
        if url.scheme != "http" or url.hostname is None:
            raise ValueError(f"{base_url!r}: KeptAliveClient needs an http://host:port URL")
        self._conn = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=timeout)
        self.cookies: dict[str, str] = {}

    def request(
        self, method: str, url: str, *, data: Mapping[str, str] | None = None,
        follow_redirects: bool = False,
    ) -> _Response:  # fmt: skip
        if follow_redirects:
            raise ValueError("KeptAliveClient does not follow redirects")
        sock = self._conn.sock
        if sock is not None and select.select([sock], [], [], 0)[0]:
            self._conn.close()  # closed by the server (or it sent what was not asked for)
        body, headers = None, {}
        if data is not None:
            body = urllib.parse.urlencode(data)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self._conn.request(method, url, body=body, headers=headers)
        res = self._conn.getresponse()
        text = res.read().decode("utf-8", errors="replace")
        for line in res.headers.get_all("Set-Cookie") or []:
            self._keep(line)
        return _Response(res.status, text, {k.lower(): v for k, v in res.getheaders()})

    def _keep(self, set_cookie: str) -> None:
        """Keep (or, where it expires now, drop) the cookie a ``Set-Cookie`` line sets."""
        jar = http.cookies.SimpleCookie()
        jar.load(set_cookie)
        for name, morsel in jar.items():
            if morsel.value and morsel["max-age"] not in ("0", 0):
                self.cookies[name] = morsel.value
            else:
                self.cookies.pop(name, None)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> KeptAliveClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_CSRF = re.compile(r'name="csrf" value="([^"]+)"')
_PAGE = re.compile(r'name="page" value="([^"]+)"')
_ACTION = re.compile(r'<form method="post" action="([^"]+)"')
_ANSWER = re.compile(r'<button type="submit" name="answer" value="([^"]+)"')


@dataclass(frozen=True)
class Page:
    """What a page asks for: its form's action, CSRF token, and for a question its page token
    and the answers it posts (in the order shown: places "1", "2", ..., fixed choices,
    "skip"); `done` where the study ended for this link (a code, or a page saying why not)."""

    action: str | None
    csrf: str | None
    page: str | None
    answers: list[str]
    done: bool
    code: str | None


def parse_page(html: str) -> Page:
    action = _ACTION.search(html)
    csrf = _CSRF.search(html)
    page = _PAGE.search(html)
    code = re.search(r'<code class="code">([^<]+)</code>', html)
    return Page(
        action.group(1) if action else None,
        csrf.group(1) if csrf else None,
        page.group(1) if page else None,
        _ANSWER.findall(html),
        'class="end"' in html,
        code.group(1) if code else None,
    )


Policy = Callable[[Page, random.Random], str | tuple[str, str]]
"""The answer to a question page: a value it posts, or ``("edit", TEXT)`` for a validation
edit."""


def random_policy(page: Page, rng: random.Random) -> str:
    return rng.choice([a for a in page.answers if a not in ("skip", "edit")])


@dataclass
class ScriptedAnnotator:
    """Follows `link` (a path on `client`'s base URL) until done or `max_steps` requests."""

    client: Client
    link: str
    policy: Policy = random_policy
    seed: int = 0
    latencies: list[float] = field(default_factory=list)
    answered: list[tuple[str, str]] = field(default_factory=list)  # (page token, value)
    code: str | None = None

    def _timed(self, method: str, url: str, **kw: Any) -> Reply:
        t0 = time.perf_counter()
        res: Reply = self.client.request(method, url, **kw)
        self.latencies.append(time.perf_counter() - t0)
        if res.status_code >= 400:
            raise RuntimeError(f"{method} {url}: HTTP {res.status_code}")
        return res

    def join(self) -> str:
        """Consent on the crowd join page at `link`; the address of the new participant's
        pages it leads to (the session's cookie kept by the client)."""
        page = parse_page(self._timed("GET", self.link).text)
        if page.action is None or page.csrf is None:
            raise RuntimeError(f"{self.link}: a join page without a form")
        res = self._timed("POST", page.action, data={"csrf": page.csrf}, follow_redirects=False)
        if res.status_code != 303:
            raise RuntimeError(f"{page.action}: HTTP {res.status_code}")
        return res.headers["location"]

    def enter(self) -> str:
        """Open `link`: a personal link sets the session cookie and redirects to the
        participant's pages, whose address this is (`link` itself where it is that already,
        as after `join`)."""
        res = self._timed("GET", self.link, follow_redirects=False)
        if res.status_code in (302, 303, 307):
            return res.headers["location"]
        return self.link

    def run(self, max_steps: int = 10_000, deadline: float | None = None) -> bool:
        """Open the link (`enter`), then answer until the study says done (True) or the steps
        or time run out (False)."""
        rng = random.Random(self.seed)
        here = self.enter()
        for _ in range(max_steps):
            if deadline is not None and time.monotonic() > deadline:
                return False
            page = parse_page(self._timed("GET", here).text)
            if page.done:
                self.code = page.code
                return True
            if page.action is None or page.csrf is None:
                raise RuntimeError(f"{here}: a page without a form")
            data = {"csrf": page.csrf}
            if page.page is not None:
                chosen = self.policy(page, rng)
                answer, edit = chosen if isinstance(chosen, tuple) else (chosen, None)
                data |= {"page": page.page, "answer": answer}
                if edit is not None:
                    data["edit"] = edit
                self.answered.append((page.page, answer))
            res = self._timed("POST", page.action, data=data, follow_redirects=False)
            if res.status_code != 303:
                raise RuntimeError(f"{page.action}: HTTP {res.status_code}")
        return False
