"""The data card of a frozen benchmark for people: the facts of ``data_card.json`` as Markdown
(``DATA_CARD.md``), written by the stages `freeze` and `baseline_scores`."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["card_markdown"]


def card_markdown(card: dict[str, Any]) -> str:
    """The data card for people: the same facts as data_card.json."""
    build = card["build"] or {}
    recipe = build.get("recipe") or {}
    out = [f"# Data card: {card['title'] or recipe.get('name') or 'built benchmark'}", ""]
    out += [f"Format `{card['format']}` (run it: `lexsem eval -b build:DIR`); "
            f"lexsem {card['lexsem_version']}; seed {card['seed']}.", ""]  # fmt: skip
    out += ["## Files", "", "| subset | file | items | sha256 |", "|---|---|---|---|"]
    out += [
        f"| {f['subset']} | {f['file']} | {f['items']} | `{f['sha256']}` |" for f in card["files"]
    ]
    rows = card["rows"]
    out += ["", "## Rows", "", f"{rows['in']} rows in, {rows['frozen']} frozen, "
            f"{sum(rows['left_out'].values())} left out (rejected)."]  # fmt: skip
    out += [f"- {why}: {k}" for why, k in rows["left_out"].items()]
    out += ["", "## Sources", "", "| source | items | licence |", "|---|---|---|"]
    out += [f"| {s['source']} | {s['items']} | {s['licence'] or 'not given'} |"
            for s in card["sources"]]  # fmt: skip
    out += ["", "## Build", ""]
    if not build:
        out += ["No build record (build.json) was found."]
    else:
        inp = build.get("input") or {}
        model = build.get("model") or {}
        imager = build.get("image_model") or {}
        out += [f"- recipe: {recipe.get('name')} (sha256 `{recipe.get('sha256')}`)",
                f"- input: {inp.get('described')} ({inp.get('rows')} rows, sha256 "
                f"`{inp.get('sha256')}`)",
                f"- generator: {model.get('spec') or 'none'}",
                f"- image generator: {imager.get('spec') or 'none'}"]  # fmt: skip
        if model.get("fingerprint"):
            out.append(f"- generator fingerprint: `{json.dumps(model['fingerprint'])}`")
        out += ["", "| stage | uses | rows | accepted | rejected (per reason) | settings |",
                "|---|---|---|---|---|---|"]  # fmt: skip
        for s in build.get("stages") or []:
            why = ", ".join(f"{k}: {v}" for k, v in (s.get("rejected") or {}).items()) or "-"
            settings = json.dumps(s.get("settings") or {}, ensure_ascii=False)
            out.append(f"| {s.get('name')} | {s.get('use')} | {s.get('rows')} | "
                       f"{s.get('accepted')} | {why} | `{settings}` |")  # fmt: skip
    human = card.get("human") or []
    if human:
        out += ["", "## Human steps", "", "| stage | uses | counts |", "|---|---|---|"]
        out += [f"| {h['stage']} | {h['use']} | "
                f"{', '.join(f'{k}: {v}' for k, v in h['counts'].items()) or '-'} |"
                for h in human]  # fmt: skip
    out += _baselines_markdown(card.get("baselines") or [])
    for section, body in card["notes"].items():
        out += ["", f"## {section}", "", "```json", json.dumps(body, indent=2, default=str), "```"]
    return "\n".join(out) + "\n"


def _baselines_markdown(baselines: list[dict[str, Any]]) -> list[str]:
    """The `baselines` of the card (stage `baseline_scores`) as a table, micro rows only."""
    rows = [b for b in baselines if b.get("subset") == "_micro"] or baselines
    if not rows:
        return []
    out = ["", "## Baselines", "", "| model | task | metric | subset | n | accuracy | CI |",
           "|---|---|---|---|---|---|---|"]  # fmt: skip
    for b in rows:
        ci = (
            f"[{b['ci_low']:.2f}, {b['ci_high']:.2f}]"
            if b.get("ci_low") is not None and b.get("ci_high") is not None
            else "-"
        )
        out.append(f"| {b['model']} | {b['task']} | {b['metric']} | {b['subset']} | {b['n']} | "
                   f"{b['accuracy']:.2f} | {ci} |")  # fmt: skip
    return out
