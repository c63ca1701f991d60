"""The Jinja templates of every lexsem web app (the study server, `lexsem explore`): the app's
own templates folder, then the shared one (``lexsem/templates``: ``page.html``, the page that
each app's ``base.html`` extends: the head every page has, a `title`, a `stylesheet`, a `head`
block for what a page adds to its head, and a `body` block). `static_templates`: the same
folders for a static site written to files (`lexsem publish`), with no server."""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import jinja2
    from fastapi.templating import Jinja2Templates

__all__ = ["app_templates", "static_templates"]


def app_templates(folder: Path | Traversable) -> Jinja2Templates:
    """The templates of an app whose own are in `folder`; a name is looked up there first, then
    in the shared folder. Autoescaped, and each compiled once: the files are the package's and
    do not change while the server runs."""
    from fastapi.templating import Jinja2Templates

    shared = resources.files("lexsem") / "templates"
    templates = Jinja2Templates(directory=[str(folder), str(shared)])
    templates.env.auto_reload = False
    return templates


def static_templates(folder: Path | Traversable) -> jinja2.Environment:
    """The templates of a static site whose own are in `folder`, then the shared folder, as
    `app_templates` has them: autoescaped, each compiled once; an undefined name is an error
    (a page is written once, not served again after a fix)."""
    import jinja2

    shared = resources.files("lexsem") / "templates"
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(folder), str(shared)]),
        autoescape=True,
        auto_reload=False,
        undefined=jinja2.StrictUndefined,
    )
