"""The explorer's FastAPI app: the page of a slice (`/?...`, its URL is the slice), an item
(`/item/KEY`), its images (`/image/KEY/N`, thumbnails or full size), exports (`/export/KIND`)
and the page's style and script. Read-only over the runs and the benchmark files; an item is
named by an opaque key (its row in the joined table), never by a path, and only the images of
the runs' items are served; page sizes, searches and exports are bounded; every response
carries a strict content security policy (no script but the page's own file, nothing from
another site)."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from importlib import resources
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError

from lexsem.errors import LexsemError
from lexsem.explore.exports import MAX_EXPORT_ITEMS, benchmark_file, study_kinds, study_zip
from lexsem.explore.figure import MAX_FIGURE_ITEMS, FigureItem, item_grid
from lexsem.explore.item_source import FULL_PX, THUMB_PX, ItemSource, captions_of, image_refs
from lexsem.explore.runs_table import RunsTable
from lexsem.explore.slices import MAX_CI_ROWS, RunCount, Slice, choices, counts, select
from lexsem.explore.word_diff import marked, roles_against
from lexsem.images.refs import ImageError
from lexsem.web_headers import SecurityHeaders
from lexsem.web_server import HostCheck
from lexsem.web_templates import app_templates

__all__ = ["EXPORT_KINDS", "MAX_SELECTED", "create_app"]

EXPORT_KINDS = ("figure.png", "figure.pdf", "benchmark", "study")
MAX_SELECTED = 1000
_CSP = ("default-src 'none'; img-src 'self'; style-src 'self'; script-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")  # fmt: skip


@dataclass
class _State:
    table: RunsTable
    source: ItemSource
    n_boot: int
    _text: np.ndarray | None = field(default=None, repr=False)
    _counts: dict[str, list[RunCount]] = field(default_factory=dict, repr=False)

    def scorer(self, key: int) -> int:
        """A run that scored row `key` (whose files its items are read from)."""
        return int(np.flatnonzero(self.table.hit[key] >= 0)[0])

    def item(self, key: int) -> Any | None:
        t = self.table
        return self.source.item(
            t.column("view")[key], self.scorer(key), t.column("subset")[key],
            t.column("item_id")[key],
        )  # fmt: skip

    def counts(self, s: Slice, rows: np.ndarray) -> list[RunCount]:
        """Each run's count and interval over the slice, kept for its next pages and sorts."""
        key = s.model_copy(update={"page": 1, "size": 50, "sort": "item"}).query()
        if key not in self._counts:
            if len(self._counts) >= 64:
                self._counts.pop(next(iter(self._counts)))
            self._counts[key] = counts(self.table, rows, n_boot=self.n_boot)
        return self._counts[key]

    def images(self, key: int) -> tuple[list[str], str | None]:
        """Row `key`'s image references whose files are found, and why others are not."""
        it = self.item(key)
        return self.source.found(self.scorer(key), image_refs(it) if it is not None else [])

    def text(self) -> np.ndarray:
        """Each row's item id and captions, lower-cased (for the text search)."""
        if self._text is None:
            t = self.table
            views, subs, ids = t.column("view"), t.column("subset"), t.column("item_id")
            out = []
            for k in range(len(t)):
                it = self.source.item(views[k], self.scorer(k), subs[k], ids[k])
                caps = " ".join(captions_of(it).values()) if it is not None else ""
                out.append(f"{ids[k]} {caps}".lower())
            self._text = np.asarray(out, dtype=object)
        return self._text


def _slice(request: Request, drop: tuple[str, ...] = ()) -> Slice:
    params: dict[str, Any] = {}
    for k, v in request.query_params.multi_items():
        if k in drop or v == "":  # a form's empty field: no filter
            continue
        if k in params:
            raise HTTPException(400, f"{k}: given twice")
        params[k] = v
    try:
        return Slice(**params)
    except ValidationError as exc:
        raise _refused(exc.errors()[0]) from None


def _refused(error: Any) -> HTTPException:
    """400 naming the parameter of a validation `error` (pydantic's: its `loc` and `msg`)."""
    where = ".".join(str(p) for p in error["loc"] if p not in ("query", "path")) or "query"
    return HTTPException(400, f"{where}: {error['msg']}")


def _rows(st: _State, s: Slice) -> np.ndarray:
    try:
        return select(st.table, s, st.text)
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from None


#: A row or image number as the page writes it: ASCII digits, no leading zero, at most 18 (`\d`
#: and `str.isdigit` also take '²', '①' and other scripts' digits, which `int` refuses or reads
#: as another number, and `int` refuses more than 4,300 digits).
_NUMBER = re.compile(r"0|[1-9][0-9]{0,17}")


def _number(text: str, count: int, what: str) -> int:
    """`text` as a number below `count` (`_NUMBER`), else 404 `no such WHAT`: the one parser of
    the numbers in the routes (`/item/KEY`, `/image/KEY/N`, `sel=KEY`)."""
    if _NUMBER.fullmatch(text) is None or int(text) >= count:
        raise HTTPException(404, f"no such {what}")
    return int(text)


def _key(st: _State, key: str) -> int:
    return _number(key, len(st.table), "item")


def _verdict(hit: int, tie: bool) -> str:
    return {1: "right", 0: "wrong", -1: "—"}[hit] + (" (tie)" if tie and hit >= 0 else "")


def _row_view(st: _State, key: int) -> dict[str, Any]:
    t = st.table
    it = st.item(key)
    caps = captions_of(it) if it is not None else {}
    against = roles_against(caps)
    return {
        "key": key,
        "view": t.column("view")[key],
        "subset": t.column("subset")[key],
        "item_id": t.column("item_id")[key],
        "metric": t.column("metric")[key],
        "captions": [
            (r, marked(c, caps[against[r]]) if r in against else [(c, False)])
            for r, c in caps.items()
        ],
        "images": len(st.images(key)[0]),
        "runs": [
            {
                "run": t.runs[k].label or f"run {k}",  # the number where a run has no name
                "hit": int(t.hit[key, k]),
                "tie": bool(t.tie[key, k]),
                "margin": None if np.isnan(t.margin[key, k]) else float(t.margin[key, k]),
                "verdict": _verdict(int(t.hit[key, k]), bool(t.tie[key, k])),
            }
            for k in range(len(t.runs))
        ],
    }


def _selected(st: _State, request: Request, s: Slice) -> list[int]:
    """The hand-picked rows (`sel`, repeated), else the slice's rows."""
    picked = request.query_params.getlist("sel")
    if len(picked) > MAX_SELECTED:
        raise HTTPException(400, f"sel: at most {MAX_SELECTED} items")
    if picked:
        return [_key(st, k) for k in picked]
    return [int(k) for k in _rows(st, s)]


def _unique_items(st: _State, keys: list[int]) -> list[tuple[int, Any]]:
    """(a row, its item) per item (an item has a row per metric), items without files left
    out."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    t = st.table
    for k in keys:
        ident = (t.column("view")[k], t.column("subset")[k], t.column("item_id")[k])
        if ident in seen:
            continue
        seen.add(ident)
        it = st.item(k)
        if it is None:
            raise HTTPException(
                409, f"{ident[0]}/{ident[1]} item {ident[2]}: its captions are not readable "
                "(see the page's notes), so it cannot be exported",
            )  # fmt: skip
        out.append((k, it))
    return out


def _figure(st: _State, rows: list[tuple[int, Any]], fmt: str, columns: int) -> bytes:
    from PIL import Image

    t = st.table
    cells = []
    for k, _ in rows[: MAX_FIGURE_ITEMS + 1]:
        view = _row_view(st, k)
        images = []
        for ref in st.images(k)[0][:2]:
            try:
                png = st.source.image_png(view["view"], st.scorer(k), ref, THUMB_PX)
                images.append(np.asarray(Image.open(io.BytesIO(png))))
            except LexsemError:
                continue
        verdicts = [(r.name, v["verdict"]) for r, v in zip(t.runs, view["runs"], strict=True)
                    if v["hit"] >= 0]  # fmt: skip
        cells.append(FigureItem(f"{view['subset']} #{view['item_id']} ({view['metric']})",
                                view["captions"], verdicts, images))  # fmt: skip
    try:
        return item_grid(cells, columns=1 if columns == 1 else 2, fmt=fmt)  # type: ignore[arg-type]
    except LexsemError as exc:
        raise HTTPException(400, str(exc)) from None


STATIC = ("explore.css", "explore.js")


def create_app(
    table: RunsTable, *, data_dir: Path | None = None, n_boot: int = 1000,
    image_folders: dict[str, Path | None] | None = None,
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "testserver"),
    any_address: bool = False,
) -> FastAPI:  # fmt: skip
    """The explorer over `table` (the runs, opened: `lexsem.explore.runs_table.open_runs`);
    `image_folders`: `coco_val2017`, `coco_train2017`, `image_root` over the runs' own;
    `allowed_hosts`, `any_address`: the Host headers answered (`lexsem.web_server.HostCheck`;
    the command gives `host_names(--host)`, and any address for a wildcard `--host`)."""
    st = _State(table, ItemSource(table.runs, data_dir, image_folders), n_boot)
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(HostCheck, names=allowed_hosts, any_address=any_address)
    app.add_middleware(SecurityHeaders, policy=lambda _scope: _CSP)
    here = resources.files("lexsem.explore")
    templates = app_templates(here / "templates")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        return templates.TemplateResponse(
            request, "error.html", {"status": exc.status_code, "message": exc.detail},
            status_code=exc.status_code,
        )  # fmt: skip

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request: Request, exc: RequestValidationError) -> Response:
        return await http_error(request, _refused(exc.errors()[0]))  # columns=x, full=x

    @app.get("/", response_class=HTMLResponse)
    def page(request: Request) -> Response:
        s = _slice(request)
        rows = _rows(st, s)
        pages = max(1, -(-len(rows) // s.size))
        if s.page > pages:
            raise HTTPException(400, f"page={s.page}: the slice has {pages} page(s)")
        shown = rows[(s.page - 1) * s.size : s.page * s.size]
        ctx = {
            "s": s, "n_rows": len(rows), "pages": pages, "runs": table.runs,
            "counts": _by_metric(st.counts(s, rows)), "max_ci": MAX_CI_ROWS,
            "rows": [_row_view(st, int(k)) for k in shown], "choices": choices(table),
            "notes": [*table.notes, *_caption_notes(st, shown)],
            "humans": any(r.human for r in table.runs), "kinds": EXPORT_KINDS,
            "query": s.query(), "prev": s.query(page=s.page - 1), "next": s.query(page=s.page + 1),
        }  # fmt: skip
        return templates.TemplateResponse(request, "explore.html", ctx)

    @app.get("/item/{key}", response_class=HTMLResponse)
    def item(request: Request, key: str) -> Response:
        k = _key(st, key)
        s = _slice(request)
        view = _row_view(st, k)
        r = [{"label": run.label, "scores": _scores(run, int(table.row[k, j])), **view["runs"][j]}
             for j, run in enumerate(table.runs)]  # fmt: skip
        return templates.TemplateResponse(
            request, "item.html", {"v": view, "runs": r, "query": s.query()}
        )

    @app.get("/image/{key}/{n}")
    def image(key: str, n: str, full: bool = False) -> Response:
        k = _key(st, key)
        refs = st.images(k)[0]
        ref = refs[_number(n, len(refs), "image")]
        try:
            png = st.source.image_png(table.column("view")[k], st.scorer(k), ref,
                                      FULL_PX if full else THUMB_PX)  # fmt: skip
        except ImageError as exc:  # gone since the page was made: 404; no image there: 422
            raise HTTPException(404 if exc.reason == "missing" else 422, str(exc)) from None
        return Response(png, media_type="image/png", headers={"Cache-Control": "max-age=3600"})

    @app.get("/export/{kind}")
    def export(request: Request, kind: str, columns: int = 2) -> Response:
        return _export(st, request, kind, columns)

    _add_asset_routes(app, {n: (here / "static" / n).read_bytes() for n in STATIC})
    return app


def _export(st: _State, request: Request, kind: str, columns: int) -> Response:
    """A slice or the picked rows as a download: a figure, a benchmark file or a study."""
    if kind not in EXPORT_KINDS:
        raise HTTPException(404, f"no export {kind!r}; one of {', '.join(EXPORT_KINDS)}")
    if columns not in (1, 2):
        raise HTTPException(400, "columns: 1 or 2")
    s = _slice(request, drop=("sel", "columns"))
    keys = _selected(st, request, s)
    limit = MAX_FIGURE_ITEMS if kind.startswith("figure") else MAX_EXPORT_ITEMS
    rows = _unique_items(st, keys[: limit * 8])
    if len(rows) > limit:
        raise HTTPException(400, f"{len(rows)}+ items: this export takes at most {limit}; "
                            "narrow the slice or pick items")  # fmt: skip
    if not rows:
        raise HTTPException(400, "no items in this slice")
    items = [it for _, it in rows]
    try:
        if kind.startswith("figure"):
            fmt = kind.split(".")[1]
            data = _figure(st, rows, fmt, columns)
            media, name = ("application/pdf" if fmt == "pdf" else "image/png"), f"items.{fmt}"
        elif kind == "benchmark":
            _, name, data = benchmark_file(items)
            media = "application/json"
        else:
            tasks = set(st.table.column("task")[np.asarray(keys[: limit * 8])].tolist())
            data = study_zip(items, study_kinds(items, tasks))
            name, media = "study.zip", "application/zip"
    except LexsemError as exc:
        raise HTTPException(400, str(exc)) from None
    disposition = f'attachment; filename="{name}"'
    return Response(data, media_type=media, headers={"Content-Disposition": disposition})


def _add_asset_routes(app: FastAPI, static: dict[str, bytes]) -> None:
    """The page's stylesheet and script, and no favicon."""

    @app.get("/favicon.ico")
    def favicon() -> Response:  # no icon: nothing (a browser asks for one on every page)
        return Response(status_code=204, headers={"Cache-Control": "max-age=86400"})

    @app.get("/static/{name}")
    def asset(name: str) -> Response:
        if name not in static:
            raise HTTPException(404, "no such file")
        media = "text/css" if name.endswith(".css") else "text/javascript"
        return Response(static[name], media_type=media, headers={"Cache-Control": "max-age=600"})


def _by_metric(found: list[RunCount]) -> list[tuple[tuple[str, str], list[RunCount]]]:
    """The runs' counts by (benchmark, metric), as `counts` orders them: a block of the page's
    table each."""
    return [(key, list(group)) for key, group in groupby(found, lambda c: (c.bench, c.metric))]


def _scores(run: Any, row: int) -> list[tuple[str, str]]:
    if row < 0:
        return []
    out = []
    for c in run.score_columns():
        v = run.items.column(c)[row].as_py()
        if v is not None and v == v:  # a column of another task's rows: none here
            out.append((c, f"{v:.4f}" if isinstance(v, float) else str(v)))
    return out


def _caption_notes(st: _State, shown: np.ndarray) -> list[str]:
    """Why captions or images of the rows shown are not shown (once each)."""
    views = {(st.table.column("view")[k], st.scorer(int(k))) for k in shown}
    notes = {w for v, r in views if (w := st.source.loaded(v, r).why)}
    missing = next((w for k in shown if (w := st.images(int(k))[1])), None)
    return sorted(notes) + ([missing] if missing else [])
