"""`lexsem.web_templates`: an app's own templates first, then the shared page skeleton."""

from __future__ import annotations

from pathlib import Path

from lexsem.web_templates import app_templates


def test_an_app_page_extends_the_shared_page(tmp_path: Path) -> None:
    (tmp_path / "base.html").write_text(
        '{% extends "page.html" %}{% block title %}T{% endblock %}'
        "{% block stylesheet %}/static/a.css{% endblock %}{% block body %}<p>B</p>{% endblock %}",
        encoding="utf-8",
    )
    html = app_templates(tmp_path).env.get_template("base.html").render()
    assert '<meta name="robots" content="noindex">' in html
    assert "<title>T</title>" in html
    assert '<link rel="stylesheet" href="/static/a.css">' in html
    assert "<body>\n<p>B</p>\n</body>" in html


def test_the_app_folder_is_looked_in_first(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text("the app's own page", encoding="utf-8")
    assert app_templates(tmp_path).env.get_template("page.html").render() == "the app's own page"


def test_values_are_escaped(tmp_path: Path) -> None:
    (tmp_path / "x.html").write_text("{{ v }}", encoding="utf-8")
    assert app_templates(tmp_path).env.get_template("x.html").render(v="<b>") == "&lt;b&gt;"
