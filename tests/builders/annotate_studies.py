"""Small human studies made with the CLI (`lexsem annotate create`), their links read back from
the `--links` file; answer policies for scripted annotators."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from builders.backends import IN_CI
from lexsem.annotate import store
from lexsem.annotate.kinds import FIXED_CHOICES
from lexsem.annotate.order import posted_values
from lexsem.annotate.simulate import Page
from lexsem.annotate.store import Unit
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


#: Where a participant's pages are once their link is opened (`lexsem.annotate.app.HOME`).
HOME = "/s"


def open_link(client: Any, link: str) -> str:
    """Open a personal link (``/a/TOKEN``) or a join's end on `client` (an httpx client with a
    cookie jar, one participant at a time) as a browser does: the 303 that sets the session
    cookie, checked; the token-free address of the participant's pages it leads to."""
    res = client.get(link, follow_redirects=False)
    assert res.status_code == 303, (link, res.status_code)
    assert res.headers["location"] == HOME and "lexsem-session=" in res.headers["set-cookie"]
    return str(res.headers["location"])


def served(path: Path, page: Page) -> Unit:
    """The unit the server served with the page's token (read from the study, as only the
    server can: the page itself names no role)."""
    con = store.connect(path)
    try:
        unit = store.unit_for_page(con, page.page or "")
    finally:
        con.close()
    assert unit is not None, page
    return unit


def value_of(unit: Unit, option: str) -> str:
    """What the page posts for the option id (or fixed choice) `option`."""
    if option == "skip":
        return option
    return posted_values(unit.options, FIXED_CHOICES[unit.kind])[unit.options.index(option)]


def role_policy(path: Path, pick: Callable[[Unit], Any]):  # type: ignore[no-untyped-def]
    """Answer each page with `pick(unit)`: an option id, a fixed choice, or ("edit", TEXT)."""

    def policy(page: Page, rng: random.Random) -> Any:
        unit = served(path, page)
        chosen = pick(unit)
        if isinstance(chosen, tuple):
            return chosen
        return value_of(unit, chosen)

    return policy


def right_policy(path: Path):  # type: ignore[no-untyped-def]
    """Answer each unit with its right answer, or the first option where it has none."""
    return role_policy(path, lambda u: u.correct or u.options[0])


def wrong_policy(path: Path):  # type: ignore[no-untyped-def]
    """Answer each unit with an option that is not its right answer."""
    return role_policy(
        path, lambda u: next(o for o in u.options if o not in (u.correct, "skip", "edit"))
    )
