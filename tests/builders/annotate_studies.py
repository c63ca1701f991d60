"""Small human studies made with the CLI (`lexsem annotate create`), their links read back from
the `--links` file; answer policies for scripted annotators."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from builders.backends import IN_CI
from lexsem.annotate.simulate import Page
from lexsem.cli import app


def need_annotate_extra() -> None:
    """Skip a module locally, fail it in CI, when the `annotate` extra is not installed."""
    import importlib.util

    import pytest

    missing = [m for m in ("fastapi", "jinja2", "uvicorn", "multipart")
               if importlib.util.find_spec(m) is None]  # fmt: skip
    if missing and IN_CI:
        pytest.fail(f"the annotate extra is not installed ({', '.join(missing)}; required in CI)")
    if missing:
        pytest.skip(f"the annotate extra is not installed ({', '.join(missing)})",
                    allow_module_level=True)  # fmt: skip


@dataclass(frozen=True)
class MadeStudy:
    path: Path
    admin: str  # path part: /admin/TOKEN
    join: str
    annotators: dict[str, str]  # id -> /a/TOKEN


def make_study(folder: Path, *args: str, name: str = "study") -> MadeStudy:
    """`lexsem annotate create folder/NAME.sqlite ARGS...` (links as paths on any host)."""
    path, links = folder / f"{name}.sqlite", folder / f"{name}.links.json"
    res = CliRunner().invoke(
        app, ["annotate", "create", str(path), "--links", str(links), "--base-url", "", *args]
    )
    assert res.exit_code == 0, res.output
    urls = json.loads(links.read_text())
    return MadeStudy(path, urls["admin"], urls["join"], urls["annotators"])


def right_policy(correct: dict[int, str | None]):  # type: ignore[no-untyped-def]
    """Answer each unit with its right answer (`correct`: unit -> option id), or the first
    option where it has none."""

    def policy(page: Page, rng: random.Random) -> str:
        return correct.get(page.unit) or page.answers[0]  # type: ignore[arg-type]

    return policy


def wrong_policy(correct: dict[int, str | None]):  # type: ignore[no-untyped-def]
    def policy(page: Page, rng: random.Random) -> str:
        right = correct.get(page.unit)  # type: ignore[arg-type]
        return next(a for a in page.answers if a not in (right, "skip", "edit"))

    return policy
