"""Web pages (HTML): the text a reader sees — headings as Markdown heading lines, paragraphs as
blocks, tables as rows read with their header row — and nothing of scripts, styles, navigation or
the page head. When the page marks its main content with <main>, only that is kept.
The standard library's tolerant parser reads it: no network, nothing fetched."""

from __future__ import annotations

import codecs
import re
from html.parser import HTMLParser

from apps.pipeline.parsing.base import PAGE_SEPARATOR, Extracted, ParseError, assemble, normalise, one_line
from apps.pipeline.parsing.plain import decode_text

# Elements whose content is not text a reader sees (or not the page's own text: menus, sidebars).
_HIDDEN = {"script", "style", "noscript", "template", "svg", "math", "title", "iframe", "object", "nav", "aside", "select", "datalist"}
_BLOCKS = {
    "p", "div", "section", "article", "main", "header", "footer", "li", "ul", "ol", "dl", "dt", "dd", "blockquote", "figure",
    "figcaption", "address", "form", "fieldset", "legend", "hr", "caption", "details", "summary", "body", "center",
}  # fmt: skip
_LINE_BREAK = "\x1e"  # a <br>, until the block's white space is collapsed
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_DECLARED_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def extract_html(filename: str, data: bytes) -> Extracted:
    text, encoding = _decode(filename, data)
    reader = _PageReader()
    reader.feed(text)
    reader.close()
    body = normalise(PAGE_SEPARATOR.join(reader.blocks()))
    if not body.strip():
        raise ParseError(
            f"“{filename}” contains no text a reader would see (only markup, scripts or styles). Upload the page's text instead."
        )
    return assemble("html", [body], encoding)


def _decode(filename: str, data: bytes) -> tuple[str, str]:
    """As any text file, except that a page which is not UTF-8 is read in the charset it declares."""
    declared = _DECLARED_CHARSET.search(data[:4096])
    if declared and not _is_utf8(data):
        try:
            name = codecs.lookup(declared[1].decode("ascii")).name
            return data.decode(name).replace("\r\n", "\n").replace("\r", "\n"), name
        except (LookupError, UnicodeDecodeError):
            pass  # a wrong declaration: detect it like any text
    return decode_text(filename, data, "html")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class _PageReader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.hidden: list[str] = []  # the hidden elements open around the current position
        self.depth_in_main = 0
        self.found: list[tuple[bool, str]] = []  # (inside the main content, block)
        self.words: list[str] = []
        self.heading: int | None = None
        self.pre = 0
        self.tables: list[_Table] = []

    def blocks(self) -> list[str]:
        self._flush()
        while self.tables:
            self._end_table()
        main = [block for inside, block in self.found if inside]
        return main or [block for _, block in self.found]

    def handle_starttag(self, tag, attrs):
        if self.hidden or tag in _HIDDEN:
            if tag in _HIDDEN:
                self.hidden.append(tag)
            return
        self._start(tag)
        self.depth_in_main += 1 if tag == "main" else 0

    def handle_endtag(self, tag):
        if self.hidden:
            if tag in self.hidden:
                del self.hidden[len(self.hidden) - 1 - self.hidden[::-1].index(tag) :]
            return
        self._end(tag)

    def handle_startendtag(self, tag, attrs):
        if not self.hidden and tag in ("br", "hr"):
            self._break(tag)

    def handle_data(self, data):
        if self.hidden:
            return
        if self.tables and self.tables[-1].in_cell:
            self.tables[-1].cell.append(data)
        else:
            self.words.append(data)

    def _start(self, tag):
        if tag in ("br", "hr"):
            self._break(tag)
        elif tag in _HEADINGS:
            self._flush()
            self.heading = _HEADINGS[tag]
        elif tag == "pre":
            self._flush()
            self.pre += 1
        elif tag == "table":
            self._flush()
            self.tables.append(_Table())
        elif self.tables and tag in ("tr", "td", "th", "thead", "tbody", "tfoot"):
            self.tables[-1].start(tag)
        elif tag in _BLOCKS:
            self._flush()

    def _end(self, tag):
        if tag in _HEADINGS or tag in _BLOCKS or tag == "pre":
            self._flush()
            self.pre = max(0, self.pre - 1) if tag == "pre" else self.pre
            self.depth_in_main -= 1 if tag == "main" and self.depth_in_main else 0
        elif tag == "table" and self.tables:
            self._end_table()
        elif self.tables and tag in ("tr", "td", "th", "thead"):
            self.tables[-1].end(tag)

    def _break(self, tag):
        if self.tables and self.tables[-1].in_cell:
            self.tables[-1].cell.append(" ")
        elif tag == "hr":
            self._flush()
        else:
            self.words.append(_LINE_BREAK)

    def _flush(self):
        raw = "".join(self.words)
        self.words = []
        if self.pre:
            text = raw.replace(_LINE_BREAK, "\n").strip("\n")
        else:  # the source's own line breaks are spaces; only <br> breaks a line
            text = "\n".join(one_line(line) for line in raw.split(_LINE_BREAK) if line.strip())
        if text.strip():
            self._emit(f"{'#' * self.heading} {one_line(text)}" if self.heading else text)
        self.heading = None

    def _emit(self, block: str):
        self.found.append((self.depth_in_main > 0, block))

    def _end_table(self):
        table = self.tables.pop()
        rows = table.lines()
        if self.tables and self.tables[-1].in_cell:
            # A table inside a cell stays inside it, with its own separators so its cells are not the outer row's.
            self.tables[-1].cell.append(" " + "; ".join(row.replace(" | ", ", ") for row in table.plain_rows()) + " ")
        elif rows:
            self._flush()
            self._emit("\n".join(rows))


class _Table:
    """One table's rows as they are read; its first row is its header when it is all <th> or in <thead>."""

    def __init__(self):
        self.rows: list[tuple[bool, list[str]]] = []  # (a header row, cells)
        self.row: list[str] | None = None
        self.row_is_header = True
        self.cell: list[str] = []
        self.in_cell = False
        self.in_head = False

    def start(self, tag):
        if tag == "thead":
            self.in_head = True
        elif tag in ("tbody", "tfoot"):
            self.in_head = False
        elif tag == "tr":
            self._end_row()
            self.row, self.row_is_header = [], True
        else:  # td, th
            self._end_cell()
            if self.row is None:
                self.row, self.row_is_header = [], True
            self.in_cell = True
            self.row_is_header = self.row_is_header and (tag == "th" or self.in_head)

    def end(self, tag):
        if tag == "thead":
            self.in_head = False
        elif tag == "tr":
            self._end_row()
        else:
            self._end_cell()

    def _end_cell(self):
        if self.in_cell and self.row is not None:
            self.row.append(one_line("".join(self.cell)))
        self.cell, self.in_cell = [], False

    def _end_row(self):
        self._end_cell()
        if self.row is not None and any(self.row):
            self.rows.append((self.row_is_header, self.row))
        self.row = None

    def plain_rows(self) -> list[str]:
        self._end_row()
        return [" | ".join(cells) for _, cells in self.rows]

    def lines(self) -> list[str]:
        self._end_row()
        if not self.rows or not self.rows[0][0] or len(self.rows) == 1:
            return [" | ".join(cells) for _, cells in self.rows]
        header = self.rows[0][1]
        return [" | ".join(header)] + [_with_header(header, cells) for _, cells in self.rows[1:]]


def _with_header(header: list[str], cells: list[str]) -> str:
    named = [(header[i] if i < len(header) and header[i] else f"column {i + 1}", cell) for i, cell in enumerate(cells)]
    return "; ".join(f"{name}: {cell}" for name, cell in named if cell)
