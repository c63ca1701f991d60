"""The study web app (FastAPI, server-rendered Jinja2 pages, one tiny inline script for keyboard
shortcuts): `create_app(study)`; `lexsem annotate serve` runs it under uvicorn.

Routes: ``/a/{token}`` (a personal link) checks its token, begins a browser session and
redirects (303) to ``/s``; ``/join/{token}`` (the crowd link) shows the consent page, and its
``POST`` makes a new annotator and begins their session the same way. A participant's pages
then carry no token (OWASP ASVS 4.0.3, V3.1.1: the session rides in a cookie,
`lexsem.annotate.session`): ``/s`` (the annotator's current page: consent, instructions, the
next question, the completion code), ``POST /s/consent|start|answer``, ``/s/feedback/{page}``
(practice feedback), ``/s/img/{sha256}`` (the images of the questions shown to that annotator
only). Opening the personal link again (another browser, another device) begins a new session
and ends the one before; a request to ``/s`` without a live session is a 403 page that says to
open the personal link again (403, not 401: there is no HTTP authentication scheme to name).
The old token-bearing addresses under ``/a/{token}/...`` are gone (a 404 page says so).
``/admin/{token}`` (the researcher's own secret address, kept in the URL: state,
participants, per-item progress, agreement, flagged annotators),
``POST /admin/{token}/invite`` (new annotator links), ``POST /admin/{token}/state`` (pause,
close, reopen) and ``/admin/{token}/export/answers.parquet|participants.csv``.

Nothing in a question page names a role: a choice posts its place in the annotator's seeded
order (`lexsem.annotate.order.posted_values`), and the form carries the page token the server
served that question with, not the unit; an answer is taken only for the annotator's current
question with its page token, and timed from when the server served it (with the start or
the answer before: `store.serve_next`). A participant
who has not started learns that the study is closed, paused or full before the consent page
(`lexsem.annotate.lifecycle`); a completion code is the participant's own, shown once earned
(`lexsem.annotate.codes`).
Trust (`lexsem.annotate.security`): tokens and session ids looked up by hash, a CSRF token on
every form (bound to a participant's session, or to the admin or join link's token), rate
limits per annotator (a personal link and its sessions), per admin link and per client address
(an unknown token or session stores nothing but a count against its address), no-referrer (a
link's token never leaks to another site) and a content security policy that allows only the
page's own script and the server's own files.

Faults are pages: a number out of range is a 400, a study file that cannot take a write (a full
disk, a read-only file, a lock held too long) a 503 page saying that nothing was saved; the
study file is checked before the app is made (`lexsem.annotate.study_check`).

Where requests run: the participants' routes (a personal link, the join link, the style sheet)
on the server's event loop, each from its first statement to its response with nothing awaited
in between, so they take turns and need no thread: each is a few SQLite statements and a page,
and a hop to a worker thread and back (the interpreter's lock changing hands twice) cost more
than that. The admin pages (progress over every answer, the exports) run in worker threads
(`THREADS`), so that a long one does not hold the participants up.
"""

from __future__ import annotations

import io
import secrets
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.types import Scope

from lexsem.annotate import assign, lifecycle, session, store
from lexsem.annotate.codes import earned, participant_code, participant_rows, participants_csv
from lexsem.annotate.config import ServeConfig
from lexsem.annotate.images import SHA_RE
from lexsem.annotate.instructions import (
    CONSENT,
    QUESTIONS,
    Paragraph,
    study_instructions,
    study_parts,
)
from lexsem.annotate.kinds import CHOICE_KEYS, CHOICE_LABELS, FIXED_CHOICES
from lexsem.annotate.order import option_of, posted_values
from lexsem.annotate.security import (
    RateLimiter,
    client_key,
    csrf_ok,
    csrf_token,
    hash_token,
    new_token,
    same_secret,
)
from lexsem.annotate.study import add_annotators, join_annotator, load_settings
from lexsem.annotate.study_check import check_study
from lexsem.annotate.study_progress import progress
from lexsem.web_headers import SecurityHeaders
from lexsem.web_server import HostCheck
from lexsem.web_templates import app_templates

__all__ = ["create_app"]

HERE = Path(__file__).parent
#: Where a participant's pages are, once their link's token has become a session.
HOME = "/s"
#: The rate-limit key of the request being served (`security.client_key` of its address).
_CLIENT: ContextVar[str] = ContextVar("lexsem_annotate_client", default="?")


class _Study:
    """The study file, one SQLite connection per server thread, settings and secret."""

    def __init__(self, path: Path, reservation_minutes: float | None = None) -> None:
        self.path = path
        self._local = threading.local()
        con = self.con()
        self.settings = load_settings(con)
        self.secret: str = store.get_meta(con, "secret")
        self.minutes = reservation_minutes or self.settings.reservation_minutes

    def link_hash(self, which: str) -> str | None:
        """The hash of the admin or join token now (read each time: `annotate rotate-admin`
        and `annotate revoke` change them while the server runs)."""
        found = store.get_meta(self.con(), f"{which}_hash")
        return found if isinstance(found, str) else None

    def code(self, aid: str) -> str:
        return participant_code(self.secret, self.settings.completion_code, aid)

    def con(self) -> store.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._local.con = store.connect(self.path)
        return con


class _Limits:
    """The server's rate limits (`security.RateLimiter`, each bounded in memory): per
    annotator (their link and their sessions) and per admin link token, per client address,
    the join link per client address, and the requests with an unknown token or session per
    client address (the only thing such a request leaves behind)."""

    def __init__(self, rate_limit: int, window: float, address_limit: int, miss_limit: int):
        self.token = RateLimiter(rate_limit, window)
        self.address = RateLimiter(address_limit, window)
        self.join = RateLimiter(rate_limit, window)
        self.miss = RateLimiter(miss_limit, window)

    def __len__(self) -> int:
        return len(self.token) + len(self.address) + len(self.join) + len(self.miss)


class _Site:
    """What every page shares: the study, the rate limits, the templates, and the checks of a
    link's token, a session's cookie and a form's CSRF token."""

    def __init__(
        self, st: _Study, limits: _Limits, templates: Jinja2Templates, secure: bool
    ) -> None:
        self.st = st
        self.limits = limits
        self.templates = templates
        self.secure = secure  # the session cookie is Secure (`session.set_cookie`)

    def page(self, request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        ctx = {"study": self.st.settings.name, "nonce": request.state.nonce, **ctx}
        return self.templates.TemplateResponse(request, name, ctx, status_code=status)

    @staticmethod
    def limited(limiter: RateLimiter, key: str) -> None:
        if not limiter.allow(key):
            raise HTTPException(429, "too many requests; wait a minute",
                                headers={"Retry-After": "60"})  # fmt: skip

    def _unknown(self) -> HTTPException:
        """A request with a token that is no link: counted against its address only (a 429
        beyond `miss_limit`; a known link from the same address is not held back by it)."""
        self.limited(self.limits.miss, _CLIENT.get())
        return HTTPException(404, "no such link")

    def annotator(self, token: str) -> store.Annotator:
        """The annotator of a personal link (404 where there is none, 410 where it was
        revoked or expired before its participant started, 429 over a limit)."""
        who = store.annotator_by_token(self.st.con(), hash_token(token))
        if who is None:
            raise self._unknown()
        return self._admitted(who)

    def visitor(self, request: Request) -> tuple[store.Annotator, str]:
        """The annotator of the request's session and the hash of its id (the key of their
        forms' CSRF token): 403 where the request has no live session (no cookie, a forged
        or ended one), counted as an unknown token; else as `annotator`."""
        sid = session.cookie_value(request)
        sh = hash_token(sid) if sid else None
        since = store.clock() - session.LIFETIME
        who = None if sh is None else store.annotator_by_session(self.st.con(), sh, since)
        if who is None or sh is None:
            self.limited(self.limits.miss, _CLIENT.get())
            raise HTTPException(403, NO_SESSION)
        return self._admitted(who), sh

    def _admitted(self, who: store.Annotator) -> store.Annotator:
        self.limited(self.limits.address, _CLIENT.get())
        self.limited(self.limits.token, who.id)
        if who.revoked_at is not None:
            raise HTTPException(410, "This link was revoked.")
        if who.started_at is None and who.expires_at is not None and who.expires_at < store.clock():
            raise HTTPException(410, "This link has expired.")
        return who

    def begin_session(self, request: Request, aid: str) -> Response:
        """A new session for the annotator (ending theirs before, `store.new_session`): its
        cookie, and a redirect to their pages, which carry no token."""
        sid = session.new_session_id()
        store.new_session(self.st.con(), aid, hash_token(sid))
        res = RedirectResponse(HOME, 303, headers={"Cache-Control": "no-store"})
        session.set_cookie(res, sid, secure=self.secure or request.url.scheme == "https")
        return res

    def shared_link(self, token: str, which: str) -> str:
        """The hash of a study-wide link's token (`which`: the "join" link, the "admin" link)
        (404 where it is not that link's). The crowd link is limited per client address, so
        that one client cannot use it up for everyone; the admin link per token."""
        address = _CLIENT.get()
        th = hash_token(token)
        want = self.st.link_hash(which)
        if want is None or not same_secret(want, th):
            raise self._unknown()
        self.limited(self.limits.address, address)
        if which == "join":
            self.limited(self.limits.join, address)
        else:
            self.limited(self.limits.token, th)
        return th

    def why_not(self, *, joining: bool = False) -> str | None:
        """Why a participant who has not started cannot come in now, or None."""
        st = self.st
        return lifecycle.why_not_admitted(st.con(), st.settings, st.minutes, joining=joining)

    def not_admitted(self, request: Request, message: str) -> HTMLResponse:
        return self.page(request, "closed.html", message=message)

    def check_csrf(self, token_hash: str, given: str | None) -> None:
        if not csrf_ok(self.st.secret, token_hash, given):
            raise HTTPException(403, "the form is out of date or not from this study; reload")

    def instructions(self) -> list[Paragraph]:
        """The study's instructions page: its own text or the kinds', with the keys of its
        question pages and its own parts (`instructions.study_instructions`)."""
        settings = self.st.settings
        parts = study_parts(store.units(self.st.con()), settings.kinds, settings.quota,
                            per_annotator=True)  # fmt: skip
        return study_instructions(parts, settings.instructions)


def create_app(
    study: str | Path,
    *,
    rate_limit: int = ServeConfig.model_fields["rate_limit"].default,
    rate_window: float = 60.0,
    reservation_minutes: float | None = None,
    address_limit: int | None = None,
    miss_limit: int = 60,
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "testserver"),
    any_address: bool = False,
    secure_cookies: bool = False,
) -> FastAPI:
    """The web app serving the study file `study`, checked first (`study_check.check_study`:
    a `LexsemError` where it cannot be served). `rate_limit` requests per link per
    `rate_window` seconds (the crowd link: per client address), `address_limit` per client
    address (default 20 × `rate_limit`: a lab behind one address), `miss_limit` requests with
    an unknown token per client address; `reservation_minutes` replaces the study's idle
    time. `allowed_hosts`, `any_address`: the Host headers answered
    (`lexsem.web_server.HostCheck`; `serve` gives `host_names(--host)` and the host of
    `--base-url`, and any address for a wildcard `--host`). `secure_cookies`: the session
    cookie is Secure (``serve`` with an https `--base-url`; a request that came over https
    gets one anyway)."""
    check_study(Path(study), writable=True)
    limits = _Limits(rate_limit, rate_window, address_limit or 20 * rate_limit, miss_limit)
    site = _Site(
        _Study(Path(study), reservation_minutes),
        limits,
        app_templates(HERE / "templates"),
        secure_cookies,
    )
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, lifespan=_threads)
    app.state.limits = limits
    app.add_middleware(HostCheck, names=allowed_hosts, any_address=any_address)
    app.add_middleware(SecurityHeaders, policy=_policy)
    _add_error_page(app, site)
    _add_site_routes(app)
    _add_join_routes(app, site)
    _add_annotator_routes(app, site)
    _add_admin_routes(app, site)
    return app


#: Admin requests served at once, each in a worker thread (more wait their turn, in order).
THREADS = 8


@asynccontextmanager
async def _threads(app: FastAPI) -> AsyncIterator[None]:
    anyio.to_thread.current_default_thread_limiter().total_tokens = THREADS
    yield


def _policy(scope: Scope) -> str:
    """The content security policy of a request, with its page's script nonce (noted in
    ``request.state.nonce``); and the client's rate-limit key for the request (`_CLIENT`, which
    the routes see: a worker thread gets a copy of the context)."""
    nonce = secrets.token_urlsafe(16)
    scope.setdefault("state", {})["nonce"] = nonce
    client = scope.get("client")
    _CLIENT.set(client_key(client[0] if client else None))
    return (
        f"default-src 'none'; img-src 'self'; style-src 'self'; "
        f"script-src 'nonce-{nonce}'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    )


#: The page of a request to a participant's page without a live session.
NO_SESSION = (
    "Your session has ended, or this browser has none: open your personal link again "
    "(the address you were given to take part)."
)


def _add_error_page(app: FastAPI, site: _Site) -> None:
    """Every HTTP error as the study's error page; a number out of range (an id beyond
    SQLite's integers) a 400; a write the study file cannot take now a 503 that says nothing
    was saved."""

    def error(request: Request, status: int, message: str, **headers: str) -> Response:
        if not hasattr(request.state, "nonce"):
            request.state.nonce = ""
        res = site.page(request, "error.html", status, message=message)
        res.headers.update(headers)
        return res

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        return error(request, exc.status_code, exc.detail, **(exc.headers or {}))

    @app.exception_handler(OverflowError)
    async def out_of_range(request: Request, exc: OverflowError) -> Response:
        return error(request, 400, "a number in the request is out of range")

    @app.exception_handler(store.StudyFileError)
    async def cannot_write(request: Request, exc: Exception) -> Response:
        why = store.write_failure(exc)
        if why is None:
            raise exc
        said = "your answer was not saved" if request.method == "POST" else "nothing was saved"
        return error(request, 503, f"{why}: {said}; try again in a few minutes",
                     **{"Retry-After": "120"})  # fmt: skip


def _add_site_routes(app: FastAPI) -> None:
    """The routes without a token: the root, the style sheet, the favicon."""
    css = (HERE / "static" / "style.css").read_bytes()

    @app.get("/", response_class=HTMLResponse)
    async def root(request: Request) -> Response:
        raise HTTPException(404, "open your personal link")

    @app.get("/static/style.css")
    async def style() -> Response:
        return Response(css, media_type="text/css", headers={"Cache-Control": "max-age=3600"})

    @app.get("/favicon.ico")
    async def favicon() -> Response:
        return Response(status_code=204)


def _add_join_routes(app: FastAPI, site: _Site) -> None:
    """The crowd link: consent, then a new annotator's personal link (while the study is open,
    not full, and the join link is under its participant cap)."""
    st = site.st

    @app.get("/join/{token}", response_class=HTMLResponse)
    async def join_page(request: Request, token: str) -> Response:
        th = site.shared_link(token, "join")
        why = site.why_not(joining=True)
        if why is not None:
            return site.not_admitted(request, why)
        consent = st.settings.consent or CONSENT
        return site.page(request, "consent.html", consent=consent,
                         csrf=csrf_token(st.secret, th), action=f"/join/{token}")  # fmt: skip

    @app.post("/join/{token}")
    async def join(request: Request, token: str, csrf: str | None = Form(None)) -> Response:
        th = site.shared_link(token, "join")
        site.check_csrf(th, csrf)
        why = site.why_not(joining=True)
        if why is not None:
            return site.not_admitted(request, why)
        made = join_annotator(st.con())
        if made is None:
            return site.not_admitted(request, lifecycle.CAPPED)
        return site.begin_session(request, made[0])


def _add_annotator_routes(app: FastAPI, site: _Site) -> None:
    """An annotator's personal link, exchanged for a session; the session's pages: the
    current page, consent and start; answers, practice feedback and the images of their
    questions."""

    @app.get("/a/{token}")
    async def exchange(request: Request, token: str) -> Response:
        return site.begin_session(request, site.annotator(token).id)

    @app.api_route("/a/{token}/{rest:path}", methods=["GET", "POST"])
    async def gone(token: str, rest: str) -> Response:
        site.limited(site.limits.miss, _CLIENT.get())
        raise HTTPException(404, "This address is no longer used: open your personal link again.")

    _add_page_routes(app, site)
    _add_answer_routes(app, site)


def _add_page_routes(app: FastAPI, site: _Site) -> None:
    """The current page of a personal link (consent, instructions, the next question or the
    end), and the consent and start forms."""
    st = site.st

    def finished(request: Request, who: store.Annotator) -> HTMLResponse:
        got = earned(st.con(), st.settings, who)
        if got.ok:
            return site.page(request, "done.html", code=st.code(who.id))
        return site.page(request, "done.html", code=None, reason=got.reason)

    @app.get(HOME, response_class=HTMLResponse)
    async def current(request: Request) -> Response:
        who, key = site.visitor(request)
        con = st.con()
        csrf = csrf_token(st.secret, key)
        base = HOME
        if not who.reserved:
            why = site.why_not() or (lifecycle.FULL if who.started_at is not None else None)
            if why is not None:
                return site.not_admitted(request, why)
            if who.consented_at is None:
                return site.page(request, "consent.html", consent=st.settings.consent or CONSENT,
                                 csrf=csrf, action=f"{base}/consent")  # fmt: skip
            return site.page(request, "instructions.html", paragraphs=site.instructions(),
                             csrf=csrf, base=base, joined=who.source == "join",
                             hours=session.LIFETIME // 3600)  # fmt: skip
        state = lifecycle.state(con)
        if state == "open" and who.released_at is not None:
            assign.reserve(con, who.id, st.settings, st.minutes)
        unit = store.next_unit(con, who.id, new_token) if state == "open" else None
        if unit is None:
            w = store.work(con, who.id)
            if state != "open" and w.unanswered:
                return site.not_admitted(request, lifecycle.NOT_OPEN[state])
            return finished(request, who)
        done, total = store.answer_counts(con, who.id)
        return site.page(request, "task.html", unit=unit, base=base, csrf=csrf, done=done,
                         total=total, question=QUESTIONS[unit.kind],
                         choices=_choices(unit))  # fmt: skip

    @app.post(f"{HOME}/consent")
    async def consent(request: Request, csrf: str | None = Form(None)) -> Response:
        who, key = site.visitor(request)
        site.check_csrf(key, csrf)
        why = None if who.reserved else site.why_not()
        if why is not None:
            return site.not_admitted(request, why)
        store.record_consent(st.con(), who.id)
        return RedirectResponse(HOME, 303)

    @app.post(f"{HOME}/start")
    async def start(request: Request, csrf: str | None = Form(None)) -> Response:
        who, key = site.visitor(request)
        site.check_csrf(key, csrf)
        if who.consented_at is None:
            raise HTTPException(409, "consent first")
        why = None if who.reserved else site.why_not()
        if why is not None:
            return site.not_admitted(request, why)
        con = st.con()
        with store.write(con):  # the reservation, the start and the first question: one commit
            full = not who.reserved and assign.reserve(con, who.id, st.settings, st.minutes) == 0
            if not full:
                store.record_start(con, who.id)
                store.serve_next(con, who.id, new_token)
        if full:
            return site.not_admitted(request, lifecycle.FULL)
        return RedirectResponse(HOME, 303)


def _add_answer_routes(app: FastAPI, site: _Site) -> None:
    """An answer to the question served, practice feedback, and the images of the questions
    shown."""
    st = site.st

    @app.post(f"{HOME}/answer")
    async def answer(
        request: Request,
        page: str = Form(..., max_length=100),
        answer: str = Form(..., max_length=20),
        csrf: str | None = Form(None),
        edit: str | None = Form(None),
    ) -> Response:
        who, key = site.visitor(request)
        site.check_csrf(key, csrf)
        con = st.con()
        state = lifecycle.state(con)
        if state != "open":
            raise HTTPException(409, f"{lifecycle.NOT_OPEN[state]} Your answer was not saved.")
        mine = store.served_unit(con, who.id, page)
        if mine is None:
            raise HTTPException(404, "no such question: open your link again")
        if mine.answer is not None:
            raise HTTPException(409, "This question was answered already: open your link again.")
        chosen, text = _posted_answer(mine, answer, edit)
        with store.write(con):  # the answer, a join participant's next batch, its first question
            done = store.record_answer(con, who.id, page, chosen, text, new_token)
            more = done is not None and who.source == "join"  # the batch may be done
            if more and assign.reserve(con, who.id, st.settings, st.minutes) > 0:
                store.serve_next(con, who.id, new_token)
        if done is None:
            raise HTTPException(409, "This is not your current question: open your link again.")
        if mine.practice:
            return RedirectResponse(f"{HOME}/feedback/{page}", 303)
        return RedirectResponse(HOME, 303)

    @app.get(f"{HOME}/feedback/{{page}}", response_class=HTMLResponse)
    async def feedback(request: Request, page: str) -> Response:
        who, _ = site.visitor(request)
        unit = store.served_unit(st.con(), who.id, page)
        if unit is None or not unit.practice or unit.answer is None:
            raise HTTPException(404, "no such practice question")
        return site.page(request, "feedback.html", unit=unit, base=HOME,
                         question=QUESTIONS[unit.kind], choices=_choices(unit))  # fmt: skip

    @app.get(f"{HOME}/img/{{name}}")
    async def image(request: Request, name: str) -> Response:
        who, _ = site.visitor(request)
        if not SHA_RE.fullmatch(name) or name not in _shown_images(st.con(), who.id):
            raise HTTPException(404, "no such image")
        found = store.image(st.con(), name)
        if found is None:
            raise HTTPException(404, "no such image")
        mime, data = found
        return Response(data, media_type=mime,
                        headers={"Cache-Control": "private, max-age=86400"})  # fmt: skip


def _posted_answer(unit: store.Unit, answer: str, edit: str | None) -> tuple[str, str | None]:
    """The option a posted value names on `unit` (its position in the annotator's order, or a
    fixed choice) and the edited text of an `edit`; 422 for anything else."""
    chosen = option_of(unit.options, FIXED_CHOICES[unit.kind], answer)
    if chosen is None:
        raise HTTPException(422, f"{answer!r} is not an answer to this question")
    if chosen != "edit":
        return chosen, None
    text = (edit or "").strip()
    if not text:
        raise HTTPException(422, "an edit needs the edited text")
    return chosen, text


def _shown_images(con: store.Connection, aid: str) -> set[str]:
    """The images of the questions the server has shown the annotator."""
    out: set[str] = set()
    for u in store.annotator_units(con, aid):
        if u.page is not None:
            out.update(o["image"] for o in u.payload["options"] if o.get("image"))
            if u.payload.get("base_image"):
                out.add(u.payload["base_image"])
    return out


def _add_admin_routes(app: FastAPI, site: _Site) -> None:
    """The admin link: state, participants, per-item progress and agreement; new annotator
    links; pause, close, reopen; the answers and participants tables."""
    st = site.st

    @app.get("/admin/{token}", response_class=HTMLResponse)
    def admin(request: Request, token: str) -> Response:
        th = site.shared_link(token, "admin")
        con = st.con()
        return site.page(request, "admin.html", p=progress(con), settings=st.settings,
                         state=lifecycle.state(con), minutes=st.minutes,
                         free=lifecycle.free_items(con, st.settings, st.minutes),
                         joined=store.join_count(con),
                         people=participant_rows(con, st.settings, st.secret),
                         items=lifecycle.item_progress(con, st.settings, st.minutes),
                         csrf=csrf_token(st.secret, th), base=f"/admin/{token}")  # fmt: skip

    @app.post("/admin/{token}/invite", response_class=HTMLResponse)
    def invite(
        request: Request, token: str, n: int = Form(...), csrf: str | None = Form(None)
    ) -> Response:
        th = site.shared_link(token, "admin")
        site.check_csrf(th, csrf)
        if not 1 <= n <= 500:
            raise HTTPException(422, "invite between 1 and 500 annotators at a time")
        made = add_annotators(st.con(), n)
        root = str(request.base_url).rstrip("/")
        links = [(aid, f"{root}/a/{tok}") for aid, tok in made]
        return site.page(request, "invited.html", links=links, base=f"/admin/{token}")

    @app.post("/admin/{token}/state")
    def set_state(token: str, state: str = Form(...), csrf: str | None = Form(None)) -> Response:
        th = site.shared_link(token, "admin")
        site.check_csrf(th, csrf)
        if state not in lifecycle.STATES:
            raise HTTPException(422, f"state: one of {', '.join(lifecycle.STATES)}")
        lifecycle.set_state(st.con(), state)
        return RedirectResponse(f"/admin/{token}", 303)

    @app.get("/admin/{token}/export/{name}")
    def export(token: str, name: str) -> Response:
        site.shared_link(token, "admin")
        if name == "answers.parquet":
            import pyarrow.parquet as pq

            from lexsem.annotate.answers import answers_table

            buf = io.BytesIO()
            pq.write_table(answers_table(st.con()), buf)
            data, mime = buf.getvalue(), "application/vnd.apache.parquet"
        elif name == "participants.csv":
            data = participants_csv(participant_rows(st.con(), st.settings, st.secret))
            mime = "text/csv; charset=utf-8"
        else:
            raise HTTPException(404, "no such export")
        disposition = f'attachment; filename="{name}"'
        return Response(data, media_type=mime, headers={"Content-Disposition": disposition})


def _choices(unit: store.Unit) -> list[dict[str, Any]]:
    """The unit's choices as shown: the value it posts (a place, or a fixed choice's name:
    never an option's id), key, label, text or image; `given` and `right` mark the answer and
    the right answer (shown by the practice feedback only)."""
    opts = {o["id"]: o for o in unit.payload["options"]}
    values = posted_values(unit.options, FIXED_CHOICES[unit.kind])
    out = []
    for i, (oid, value) in enumerate(zip(unit.options, values, strict=True)):
        marks = {"given": oid == unit.answer, "right": oid == unit.correct}
        if oid in opts:
            shown = {k: v for k, v in opts[oid].items() if k in ("text", "image")}
            out.append({"value": value, "key": value, "letter": chr(65 + i), **shown, **marks})
        else:
            out.append({"value": value, "key": CHOICE_KEYS[oid], "label": CHOICE_LABELS[oid],
                        "fixed": True, **marks})  # fmt: skip
    return out
