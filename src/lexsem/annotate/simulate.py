"""A scripted annotator over HTTP: it follows a personal link through consent, instructions,
practice and questions the way a browser would (reading the pages' forms, posting them with
their CSRF token), answering with a given policy. The load benchmark
(`bench/annotate_bench.py`) runs many at once; the tests use it to answer studies."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

__all__ = ["Page", "ScriptedAnnotator", "parse_page"]

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

    client: httpx.Client
    link: str
    policy: Policy = random_policy
    seed: int = 0
    latencies: list[float] = field(default_factory=list)
    answered: list[tuple[str, str]] = field(default_factory=list)  # (page token, value)
    code: str | None = None

    def _timed(self, method: str, url: str, **kw: object) -> httpx.Response:
        t0 = time.perf_counter()
        res = self.client.request(method, url, **kw)  # type: ignore[arg-type]
        self.latencies.append(time.perf_counter() - t0)
        if res.status_code >= 400:
            raise RuntimeError(f"{method} {url}: HTTP {res.status_code}")
        return res

    def join(self) -> str:
        """Consent on the crowd join page at `link`; the new personal link it leads to."""
        page = parse_page(self._timed("GET", self.link).text)
        if page.action is None or page.csrf is None:
            raise RuntimeError(f"{self.link}: a join page without a form")
        res = self._timed("POST", page.action, data={"csrf": page.csrf}, follow_redirects=False)
        if res.status_code != 303:
            raise RuntimeError(f"{page.action}: HTTP {res.status_code}")
        return res.headers["location"]

    def run(self, max_steps: int = 10_000, deadline: float | None = None) -> bool:
        """Answer until the study says done (True) or the steps or time run out (False)."""
        rng = random.Random(self.seed)
        for _ in range(max_steps):
            if deadline is not None and time.monotonic() > deadline:
                return False
            page = parse_page(self._timed("GET", self.link).text)
            if page.done:
                self.code = page.code
                return True
            if page.action is None or page.csrf is None:
                raise RuntimeError(f"{self.link}: a page without a form")
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
