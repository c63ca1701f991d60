"""Reading what `lexsem report` writes: its HTML parsed into tags, PNG sizes."""

from __future__ import annotations

import io
from html.parser import HTMLParser

from PIL import Image

VOID = {"meta", "img", "br", "hr", "link", "input", "source", "col", "wbr", "area", "base"}


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class Collector(HTMLParser):
    """Checks nesting and collects ids, links, images, headings and table rows."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.starts: list[str] = []
        self.ids: set[str] = set()
        self.toc_links: list[str] = []
        self.hrefs: list[str] = []
        self.imgs: list[dict[str, str | None]] = []
        self.headings: list[str] = []
        self.tables: list[dict[str, list]] = []  # caption, rows of cell texts
        self._text: list[str] | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.starts.append(tag)
        if a.get("id"):
            assert a["id"] not in self.ids, f"duplicate id {a['id']}"
            self.ids.add(a["id"])  # type: ignore[arg-type]
        if tag == "img":
            self.imgs.append(a)
        if tag == "a":
            self.hrefs.append(a.get("href") or "")
            if "nav" in self.stack:
                self.toc_links.append(a.get("href") or "")
        if tag == "table":
            self.tables.append({"caption": [], "rows": []})
        if tag in {"h1", "h2", "h3", "h4", "h5", "h6", "caption"}:
            self._text = []
        if tag == "tr" and "tbody" in self.stack:
            self._row = []
        if tag in {"td", "th"} and self._row is not None:
            self._cell = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.errors.append(f"end tag for void <{tag}>")
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            return
        self.stack.pop()
        if tag in {"h1", "h2", "h3", "h4", "h5", "h6"} and self._text is not None:
            self.headings.append("".join(self._text).strip())
            self._text = None
        if tag == "caption" and self._text is not None:
            self.tables[-1]["caption"] = "".join(self._text).strip()
            self._text = None
        if tag in {"td", "th"} and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.tables[-1]["rows"].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse(page: str) -> Collector:
    p = Collector()
    p.feed(page)
    p.close()
    assert not p.errors, p.errors
    assert not p.stack, f"unclosed tags: {p.stack}"
    return p


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(PNG_MAGIC)
    with Image.open(io.BytesIO(data)) as im:
        im.verify()
    with Image.open(io.BytesIO(data)) as im:
        assert im.format == "PNG"
        im.load()
        return im.size
