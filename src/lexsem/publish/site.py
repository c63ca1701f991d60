"""The static site: `index.html` (the board: a section per benchmark family, a table per
benchmark, task and metric with a column per subset, the rank and group of its primary subset,
filters), `models/<id>.html` (a page per model: its spec, size, dtype, results, every run's
provenance and the command that runs it again, its hardest items), `leaderboard.json` (what the
board shows, for machines), the figures under `plots/` and `static/site.js` / `site.css`.

The pages hold their data (a `<script type="application/json">` block; browsers refuse
`fetch()` of local files over file://) and load no script but the site's own: the content
security policy is a `<meta>` tag (`script-src 'self'`, no inline script, nothing from
elsewhere). Every text a run gives (model names, specs, file names) is escaped by the templates
(Jinja autoescape; the JSON blocks by `tojson`, which writes `<`, `>` and `&` as escapes).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pyarrow as pa

from lexsem._version import __version__
from lexsem.digests import canonical_json
from lexsem.errors import LexsemError
from lexsem.models.activation import spec_activation
from lexsem.publish.board import BoardRow, BoardTable, family_order
from lexsem.publish.facts import (
    modality,
    model_family,
    model_id,
    parameters,
    rerun_command,
    size_class,
)
from lexsem.publish.merge import Entry
from lexsem.publish.published import PublishedRow
from lexsem.stats.bootstrap import MICRO
from lexsem.web_templates import static_templates

__all__ = ["CSP", "HARDEST_PER", "anchor", "write_site"]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'"
)
HARDEST_PER = 10  # hardest items per benchmark, task and metric on a model's page
PACKAGE = resources.files("lexsem") / "publish"


@dataclass
class _Section:
    """The tables of one benchmark, task and metric (a column per subset)."""

    family: str
    tables: list[BoardTable]

    @property
    def primary(self) -> BoardTable:
        """The table whose rank shows: `_micro`, else the only or first subset."""
        return next((t for t in self.tables if t.subset == MICRO), self.tables[0])


def anchor(text: str) -> str:
    """An id or file name for `text`: made safe, and 6 hex digits of its sha256 so that texts
    alike once made safe (SugarCrepe++ and SugarCrepe) stay apart."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "x"
    return f"{slug}-{hashlib.sha256(text.encode()).hexdigest()[:6]}"


def _params_text(n: int | None) -> str:
    if n is None:
        return ""
    for div, unit in ((10**9, "B"), (10**6, "M"), (10**3, "K")):
        if n >= div:
            return f"{n / div:.1f}{unit}"
    return str(n)


def _activation(spec: str) -> str:
    """The activation the spec's model runs (open_clip's, as trained), "—" where it says none
    or its backend is not installed here (a board of other people's runs)."""
    try:
        return spec_activation(spec) or "—"
    except LexsemError:
        return "—"


def _model_facts(row_or_entry: BoardRow | Entry) -> dict[str, Any]:
    entry = row_or_entry.entry if isinstance(row_or_entry, BoardRow) else row_or_entry
    rec = entry.run.record
    params = parameters(rec)
    return {
        "model": rec.model.name, "model_id": model_id(rec.model.name), "spec": rec.model.spec,
        "model_family": model_family(rec), "parameters": params,
        "params_text": _params_text(params), "size": size_class(params),
        "modality": modality(rec), "dtype": rec.model.dtype or "unknown",
        "activation": _activation(rec.model.spec),
    }  # fmt: skip


def _cell(table: BoardTable, row: BoardRow) -> dict[str, Any]:
    r = row.result
    title = f"n={r.n}"
    if row.rank is not None:
        title += f", rank {row.rank} (group {row.group})"
    return {
        "accuracy": r.accuracy, "n": r.n, "hits": r.hits,
        "ci_low": row.ci[0] if row.ci else None, "ci_high": row.ci[1] if row.ci else None,
        "ci_method": row.ci_method, "rank": row.rank, "group": row.group, "delta": None,
        "title": title, "run_id": row.entry.run.record.run_id,
    }  # fmt: skip


def _sections(tables: Sequence[BoardTable]) -> list[_Section]:
    by_key: dict[tuple[str, str, str], _Section] = {}
    for t in tables:
        section = by_key.setdefault((t.benchmark, t.task, t.metric), _Section(t.family, []))
        section.tables.append(t)
    return list(by_key.values())


def _published_rows(
    section: _Section, published: Sequence[PublishedRow], measured: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The published rows of `section` (one per source and model), each cell with Δ =
    measured − published where a run of the same spec has that cell."""
    first = section.tables[0]
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for p in published:
        if (p.benchmark, p.task, p.metric) != (first.benchmark, first.task, first.metric):
            continue
        row = rows.setdefault((p.source, p.model), {
            "published": True, "source": p.source, "model": p.model, "model_id": "",
            "spec": p.spec, "model_family": "", "parameters": None, "params_text": "",
            "size": "", "modality": "", "dtype": "", "rank": None, "group": "", "cells": {},
        })  # fmt: skip
        mine = measured.get(p.spec, {}).get(p.subset)
        row["cells"][p.subset] = {
            "accuracy": p.accuracy, "ci_low": None, "ci_high": None, "rank": None, "group": "",
            "delta": None if mine is None else mine["accuracy"] - p.accuracy,
            "attainable": p.attainable, "title": f"published in {p.source}",
        }  # fmt: skip
    return list(rows.values())


def _section_data(
    section: _Section, published: Sequence[PublishedRow], plot: str | None
) -> dict[str, Any]:
    first, primary = section.tables[0], section.primary
    rows: dict[str, dict[str, Any]] = {}
    for t in section.tables:
        for row in t.rows:
            out = rows.setdefault(row.model, {**_model_facts(row), "published": False,
                                             "rank": None, "group": "", "cells": {}})  # fmt: skip
            out["cells"][t.subset] = _cell(t, row)
            if t is primary:
                out["rank"], out["group"] = row.rank, row.group
    measured = {r["spec"]: r["cells"] for r in rows.values()}
    ordered = sorted(rows.values(), key=lambda r: (r["rank"] is None, r["rank"] or 0,
                     -(r["cells"].get(primary.subset) or {"accuracy": -1})["accuracy"],
                     r["model"]))  # fmt: skip
    key = f"{first.benchmark}|{first.task}|{first.metric}"
    return {
        "key": key, "anchor": anchor(key), "family": section.family, "title": first.title,
        "benchmark": first.benchmark, "task": first.task, "metric": first.metric,
        "primary": primary.subset, "primary_label": primary.subset_label, "plot": plot,
        "columns": [{"subset": t.subset, "label": t.subset_label, "sha256": t.sha256,
                     "paired_n": t.groups.n if t.groups else None} for t in section.tables],
        "rows": ordered + _published_rows(section, published, measured),
    }  # fmt: skip


def _svg_size(svg: bytes) -> list[int] | None:
    """The figure's size in CSS pixels (its `<svg width=... height=...>` in pt), for the
    page's `<img width height>`: the page keeps the figure's room before it loads (figures
    load lazily, as they scroll near)."""
    m = re.search(rb'<svg[^>]*?width="([0-9.]+)pt"[^>]*?height="([0-9.]+)pt"', svg[:2000])
    return [round(float(v) * 4 / 3) for v in m.groups()] if m else None


def _hardest(details: pa.Table) -> dict[str, list[dict[str, Any]]]:
    """model -> the items it got wrong that most other models got right (`HARDEST_PER` per
    benchmark, task and metric), as compact rows."""
    if details.num_rows == 0:
        return {}
    df = details.select(["model", "benchmark", "task", "metric", "subset", "item_id", "hit"])
    frame = df.to_pandas()
    keys = ["benchmark", "task", "metric", "subset", "item_id"]
    frame["hit"] = frame["hit"].fillna(False).astype(bool)
    totals = frame.groupby(keys, sort=False)["hit"].agg(["sum", "count"]).reset_index()
    missed = frame[~frame["hit"]].merge(totals, on=keys)
    missed = missed[missed["count"] > 1]
    order = ["model", "benchmark", "task", "metric", "sum", "subset", "item_id"]
    missed = missed.sort_values(order, ascending=[True] * 4 + [False, True, True])
    top = missed.groupby(["model", "benchmark", "task", "metric"], sort=False).head(HARDEST_PER)
    out: dict[str, list[dict[str, Any]]] = {}
    for rec in top.itertuples(index=False):
        out.setdefault(rec.model, []).append({
            "b": rec.benchmark, "t": rec.task, "m": rec.metric, "s": rec.subset,
            "id": rec.item_id, "right": int(rec.sum), "others": int(rec.count) - 1,
        })  # fmt: skip
    return out


def _compact(value: Any) -> str:
    """A recorded value as one line of canonical JSON (keys sorted)."""
    return canonical_json(value).decode()


def _run_data(entry_run: Any) -> dict[str, Any]:
    rec = entry_run.record
    evaluation = {k: v for k, v in rec.config.evaluation.items()
                  if k not in ("cache_dir", "data_dir", "image_root", "coco_val2017",
                               "coco_train2017")}  # fmt: skip
    return {
        "run_id": rec.run_id, "created_at": rec.created_at, "lexsem_version": rec.lexsem_version,
        "lock_sha256": rec.environment.get("lock_sha256"), "digest": entry_run.digest,
        "fingerprint": _compact(rec.model.fingerprint),
        "settings": _compact({**evaluation, "tasks": rec.config.tasks,
                              "tie_policy": rec.config.tie_policy}),
        "environment": _compact(rec.environment), "command": rerun_command(rec),
        "files": [{"benchmark": b.name, "subset": f.subset, "file": f.file, "sha256": f.sha256}
                  for b in rec.benchmarks for f in b.files],
    }  # fmt: skip


def write_site(
    folder: Path,
    tables: Sequence[BoardTable],
    entries: Sequence[Entry],
    details: pa.Table,
    published: Sequence[PublishedRow],
    plots: dict[str, bytes],
    *,
    explore_url: str | None = None,
) -> dict[str, Any]:
    """Write the site's pages into the (new, empty) `folder`; the board's data (what
    leaderboard.json and the index page hold). `plots`: section key → SVG bytes."""
    env = static_templates(PACKAGE / "templates")
    (folder / "static").mkdir(parents=True, exist_ok=True)
    for name in ("site.js", "site.css"):
        (folder / "static" / name).write_bytes((PACKAGE / "static" / name).read_bytes())
    plot_files: dict[str, tuple[str, list[int] | None]] = {}
    if plots:
        (folder / "plots").mkdir(exist_ok=True)
    for key, svg in plots.items():
        name = f"plots/{anchor(key)}.svg"
        (folder / name).write_bytes(svg)
        plot_files[key] = (name, _svg_size(svg))
    sections = []
    for s in _sections(tables):
        first = s.tables[0]
        plot, size = plot_files.get(f"{first.benchmark}|{first.task}|{first.metric}", (None, None))
        sections.append({**_section_data(s, published, plot), "plot_size": size})
    models = {e.run.name: _model_facts(e) for e in entries}
    runs = {e.run.digest for e in entries}
    data = {"generator": "lexsem", "version": __version__, "sections": sections,
            "models": sorted(models.values(), key=lambda m: m["model"])}  # fmt: skip
    common = {"csp": CSP, "version": __version__, "n_models": len(models), "n_runs": len(runs)}
    families = []
    for fam in family_order([s["family"] for s in sections]):
        families.append({"name": fam, "anchor": "family-" + anchor(fam),
                         "sections": [s for s in sections if s["family"] == fam]})  # fmt: skip
    filters = [
        {"key": key, "label": label, "options": sorted({m[field] for m in models.values()})}
        for key, label, field in (("family", "Model family", "model_family"),
                                  ("size", "Size", "size"), ("modality", "Modality", "modality"),
                                  ("dtype", "dtype", "dtype"))
    ]  # fmt: skip
    (folder / "index.html").write_text(
        env.get_template("index.html").render(
            root="", families=families, filters=filters, data=data, **common
        ),
        encoding="utf-8",
    )
    (folder / "leaderboard.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    _write_models(folder, env, entries, sections, details, common, explore_url)
    return data


def _write_models(
    folder: Path,
    env: Any,
    entries: Sequence[Entry],
    sections: Sequence[dict[str, Any]],
    details: pa.Table,
    common: dict[str, Any],
    explore_url: str | None = None,
) -> None:
    hardest = _hardest(details)
    if explore_url:
        for items in hardest.values():
            for h in items:
                query = urlencode({"bench": h["b"], "subset": h["s"], "metric": h["m"],
                                   "item": h["id"]})  # fmt: skip
                h["url"] = f"{explore_url.rstrip('/')}/?{query}"
    (folder / "models").mkdir(exist_ok=True)
    template = env.get_template("model.html")
    by_model: dict[str, list[Entry]] = {}
    for e in entries:
        by_model.setdefault(e.run.name, []).append(e)
    for name, mine in by_model.items():
        facts = _model_facts(mine[0])
        results = [
            {"benchmark": s["benchmark"], "task": s["task"], "metric": s["metric"],
             "subset": subset, **cell}
            for s in sections for r in s["rows"] if not r["published"] and r["model"] == name
            for subset, cell in r["cells"].items()
        ]  # fmt: skip
        runs = [_run_data(run) for run in {e.run.digest: e.run for e in mine}.values()]
        items = hardest.get(name, [])
        page = template.render(
            root="../", model={**facts, "name": name, "family": facts["model_family"]},
            results=results, runs=runs, hardest=items, hardest_per=HARDEST_PER,
            data={"model": name, "spec": facts["spec"], "hardest": items}, **common,
        )  # fmt: skip
        (folder / "models" / f"{facts['model_id']}.html").write_text(page, encoding="utf-8")
