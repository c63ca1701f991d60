"""The study web app (FastAPI, server-rendered Jinja2 pages, one tiny inline script for keyboard
shortcuts): `create_app(study)`; `lexsem annotate serve` runs it under uvicorn.

Routes: ``/join/{token}`` (a crowd link: consent, then a personal link), ``/a/{token}`` (an
annotator's current page: consent, instructions, the next question, the completion code),
``POST /a/{token}/consent|start|answer``, ``/a/{token}/feedback/{unit}`` (practice feedback),
``/a/{token}/img/{sha256}`` (the study's own images only), ``/admin/{token}`` (progress,
agreement, flagged annotators) and ``POST /admin/{token}/invite`` (new annotator links).
Trust (`lexsem.annotate.security`): tokens looked up by hash, a CSRF token on every form, a
rate limit per token, no-referrer (a link's token never leaks to another site) and a content
security policy that allows only the page's own script and the server's own files.
"""

from __future__ import annotations

import secrets
import threading
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from lexsem.annotate import assign, store
from lexsem.annotate.config import ServeConfig
from lexsem.annotate.images import SHA_RE
from lexsem.annotate.instructions import CONSENT, INSTRUCTIONS, QUESTIONS
from lexsem.annotate.security import RateLimiter, csrf_ok, csrf_token, hash_token
from lexsem.annotate.study import add_annotators, load_settings
from lexsem.annotate.study_progress import progress

__all__ = ["create_app"]

HERE = Path(__file__).parent
KEYS = {"none": "n", "both": "b", "accept": "a", "edit": "e", "reject": "r", "skip": "s"}
LABELS = {"none": "None", "both": "Both", "accept": "Accept", "edit": "Save edit",
          "reject": "Reject", "skip": "Skip"}  # fmt: skip


class _Study:
    """The study file, one SQLite connection per server thread, settings and secret."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        con = self.con()
        self.settings = load_settings(con)
        self.secret: str = store.get_meta(con, "secret")
        self.admin_hash: str = store.get_meta(con, "admin_hash")
        self.join_hash: str = store.get_meta(con, "join_hash")

    def con(self) -> store.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._local.con = store.connect(self.path)
        return con


class _Site:
    """What every page shares: the study, the rate limit, the templates, and the checks of a
    link's token and a form's CSRF token."""

    def __init__(self, st: _Study, limiter: RateLimiter, templates: Jinja2Templates) -> None:
        self.st = st
        self.limiter = limiter
        self.templates = templates

    def page(self, request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        ctx = {"study": self.st.settings.name, "nonce": request.state.nonce, **ctx}
        return self.templates.TemplateResponse(request, name, ctx, status_code=status)

    def limited(self, key: str) -> None:
        if not self.limiter.allow(key):
            raise HTTPException(429, "too many requests; wait a minute")

    def annotator(self, token: str) -> store.Annotator:
        """The annotator of a personal link (404 where there is none)."""
        th = hash_token(token)
        self.limited(th)
        who = store.annotator_by_token(self.st.con(), th)
        if who is None:
            raise HTTPException(404, "no such link")
        return who

    def shared_link(self, token: str, want_hash: str) -> str:
        """The hash of a study-wide link's token (the crowd link, the admin link) that must
        hash to `want_hash` (404 where it does not)."""
        th = hash_token(token)
        self.limited(th)
        if not secrets.compare_digest(th, want_hash):
            raise HTTPException(404, "no such link")
        return th

    def check_csrf(self, token_hash: str, given: str | None) -> None:
        if not csrf_ok(self.st.secret, token_hash, given):
            raise HTTPException(403, "the form is out of date or not from this study; reload")

    def instructions_text(self) -> list[str]:
        if self.st.settings.instructions:
            return [self.st.settings.instructions]
        return [INSTRUCTIONS[k] for k in self.st.settings.kinds]


def create_app(
    study: str | Path,
    *,
    rate_limit: int = ServeConfig.model_fields["rate_limit"].default,
    rate_window: float = 60.0,
) -> FastAPI:
    """The web app serving the study file `study` (`rate_limit` requests per token per
    `rate_window` seconds)."""
    site = _Site(
        _Study(Path(study)),
        RateLimiter(rate_limit, rate_window),
        Jinja2Templates(directory=str(HERE / "templates")),
    )
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    _add_headers(app)
    _add_error_page(app, site)
    _add_site_routes(app)
    _add_join_routes(app, site)
    _add_annotator_routes(app, site)
    _add_admin_routes(app, site)
    return app


def _add_headers(app: FastAPI) -> None:
    """Every response's security headers: the content security policy with the page's script
    nonce, no referrer, no sniffing, no framing, no caching unless a route says otherwise."""

    @app.middleware("http")
    async def headers(request: Request, call_next: Any) -> Response:
        request.state.nonce = secrets.token_urlsafe(16)
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = (
            f"default-src 'none'; img-src 'self'; style-src 'self'; "
            f"script-src 'nonce-{request.state.nonce}'; form-action 'self'; "
            "frame-ancestors 'none'; base-uri 'none'"
        )
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers.setdefault("Cache-Control", "no-store")
        return response


def _add_error_page(app: FastAPI, site: _Site) -> None:
    """Every HTTP error as the study's error page."""

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        if not hasattr(request.state, "nonce"):
            request.state.nonce = ""
        return site.page(request, "error.html", exc.status_code, message=exc.detail)


def _add_site_routes(app: FastAPI) -> None:
    """The routes without a token: the root, the style sheet, the favicon."""
    css = (HERE / "static" / "style.css").read_bytes()

    @app.get("/", response_class=HTMLResponse)
    def root(request: Request) -> Response:
        raise HTTPException(404, "open your personal link")

    @app.get("/static/style.css")
    def style() -> Response:
        return Response(css, media_type="text/css", headers={"Cache-Control": "max-age=3600"})

    @app.get("/favicon.ico")
    def favicon() -> Response:
        return Response(status_code=204)


def _add_join_routes(app: FastAPI, site: _Site) -> None:
    """The crowd link: consent, then a new annotator's personal link."""
    st = site.st

    @app.get("/join/{token}", response_class=HTMLResponse)
    def join_page(request: Request, token: str) -> Response:
        th = site.shared_link(token, st.join_hash)
        consent = st.settings.consent or CONSENT
        return site.page(request, "consent.html", consent=consent,
                         csrf=csrf_token(st.secret, th), action=f"/join/{token}")  # fmt: skip

    @app.post("/join/{token}")
    def join(token: str, csrf: str | None = Form(None)) -> Response:
        th = site.shared_link(token, st.join_hash)
        site.check_csrf(th, csrf)
        ((_, personal),) = add_annotators(st.con(), 1, consented=True)
        return RedirectResponse(f"/a/{personal}", 303)


def _add_annotator_routes(app: FastAPI, site: _Site) -> None:
    """An annotator's personal link: the current page, consent, start, answers, practice
    feedback and the study's images."""
    st = site.st

    @app.get("/a/{token}", response_class=HTMLResponse)
    def current(request: Request, token: str) -> Response:
        who = site.annotator(token)
        csrf = csrf_token(st.secret, who.token_hash)
        base = f"/a/{token}"
        if who.consented_at is None:
            return site.page(request, "consent.html", consent=st.settings.consent or CONSENT,
                             csrf=csrf, action=f"{base}/consent")  # fmt: skip
        if who.started_at is None:
            return site.page(request, "instructions.html", paragraphs=site.instructions_text(),
                             csrf=csrf, base=base, link=str(request.url))  # fmt: skip
        unit = store.next_unit(st.con(), who.id)
        if unit is None:
            _, count = store.answer_counts(st.con(), who.id)
            return site.page(request, "done.html", code=st.settings.completion_code,
                             full=count == 0)  # fmt: skip
        done, total = store.answer_counts(st.con(), who.id)
        return site.page(request, "task.html", unit=unit, base=base, csrf=csrf, done=done,
                         total=total, question=QUESTIONS[unit.kind],
                         choices=_choices(unit))  # fmt: skip

    @app.post("/a/{token}/consent")
    def consent(token: str, csrf: str | None = Form(None)) -> Response:
        who = site.annotator(token)
        site.check_csrf(who.token_hash, csrf)
        store.record_consent(st.con(), who.id)
        return RedirectResponse(f"/a/{token}", 303)

    @app.post("/a/{token}/start")
    def start(token: str, csrf: str | None = Form(None)) -> Response:
        who = site.annotator(token)
        site.check_csrf(who.token_hash, csrf)
        if who.consented_at is None:
            raise HTTPException(409, "consent first")
        assign.reserve(st.con(), who.id, st.settings)
        store.record_start(st.con(), who.id)
        return RedirectResponse(f"/a/{token}", 303)

    @app.post("/a/{token}/answer")
    def answer(
        token: str,
        unit: int = Form(...),
        answer: str = Form(...),
        csrf: str | None = Form(None),
        edit: str | None = Form(None),
    ) -> Response:
        who = site.annotator(token)
        site.check_csrf(who.token_hash, csrf)
        mine = store.annotator_unit(st.con(), who.id, unit)
        if mine is None:
            raise HTTPException(404, "no such question")
        if answer not in {*mine.options, "skip"}:
            raise HTTPException(422, f"{answer!r} is not an answer to this question")
        text = None
        if answer == "edit":
            text = (edit or "").strip()
            if not text:
                raise HTTPException(422, "an edit needs the edited text")
        store.record_answer(st.con(), who.id, unit, answer, text)
        if mine.practice:
            return RedirectResponse(f"/a/{token}/feedback/{unit}", 303)
        return RedirectResponse(f"/a/{token}", 303)

    @app.get("/a/{token}/feedback/{unit_id}", response_class=HTMLResponse)
    def feedback(request: Request, token: str, unit_id: int) -> Response:
        who = site.annotator(token)
        unit = store.annotator_unit(st.con(), who.id, unit_id)
        if unit is None or not unit.practice or unit.answer is None:
            raise HTTPException(404, "no such practice question")
        return site.page(request, "feedback.html", unit=unit, base=f"/a/{token}",
                         question=QUESTIONS[unit.kind], choices=_choices(unit))  # fmt: skip

    @app.get("/a/{token}/img/{name}")
    def image(token: str, name: str) -> Response:
        site.annotator(token)
        if not SHA_RE.fullmatch(name):
            raise HTTPException(404, "no such image")
        found = store.image(st.con(), name)
        if found is None:
            raise HTTPException(404, "no such image")
        mime, data = found
        return Response(data, media_type=mime,
                        headers={"Cache-Control": "private, max-age=86400"})  # fmt: skip


def _add_admin_routes(app: FastAPI, site: _Site) -> None:
    """The admin link: progress and agreement, new annotator links."""
    st = site.st

    @app.get("/admin/{token}", response_class=HTMLResponse)
    def admin(request: Request, token: str) -> Response:
        th = site.shared_link(token, st.admin_hash)
        return site.page(request, "admin.html", p=progress(st.con()), settings=st.settings,
                         csrf=csrf_token(st.secret, th), base=f"/admin/{token}")  # fmt: skip

    @app.post("/admin/{token}/invite", response_class=HTMLResponse)
    def invite(
        request: Request, token: str, n: int = Form(...), csrf: str | None = Form(None)
    ) -> Response:
        th = site.shared_link(token, st.admin_hash)
        site.check_csrf(th, csrf)
        if not 1 <= n <= 500:
            raise HTTPException(422, "invite between 1 and 500 annotators at a time")
        made = add_annotators(st.con(), n)
        root = str(request.base_url).rstrip("/")
        links = [(aid, f"{root}/a/{tok}") for aid, tok in made]
        return site.page(request, "invited.html", links=links, base=f"/admin/{token}")


def _choices(unit: store.Unit) -> list[dict[str, Any]]:
    """The unit's choices as shown: option id, key, label, text or image."""
    opts = {o["id"]: o for o in unit.payload["options"]}
    out = []
    for i, oid in enumerate(unit.options):
        if oid in opts:
            out.append({"id": oid, "key": str(i + 1), "letter": chr(65 + i), **opts[oid]})
        else:
            out.append({"id": oid, "key": KEYS[oid], "label": LABELS[oid], "fixed": True})
    return out
