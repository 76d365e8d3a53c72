"""What every reader returns — the text, its units and where each sits — and the helpers they share."""

from __future__ import annotations

import bisect
import io
import zipfile
from dataclasses import dataclass

PAGE_SEPARATOR = "\n\n"
ZIP_MAGIC = b"PK\x03\x04"
# A legitimate Office part compresses perhaps 10–50×; deflate tops out near 1000×, which only zip bombs reach.
_MAX_RATIO = 200
_RATIO_CHECK_FROM_BYTES = 1024 * 1024


class ParseError(Exception):
    """The file cannot be turned into text; the message says why, and what to do, for a person."""


@dataclass(frozen=True)
class Location:
    """Where a unit of text sits in its file, as a person finds it again: a page (read by OCR or
    not), a spreadsheet row (with its sheet's name; none for a CSV) or a slide."""

    unit: str  # "page" | "row" | "slide"
    number: int  # the page's, row's or slide's number in the file, 1-based
    sheet: str = ""
    ocr: bool = False

    def as_dict(self) -> dict:
        return (
            {"unit": self.unit, "number": self.number} | ({"sheet": self.sheet} if self.sheet else {}) | ({"ocr": True} if self.ocr else {})
        )

    @classmethod
    def from_dict(cls, data: dict) -> Location:
        return cls(unit=data["unit"], number=int(data["number"]), sheet=data.get("sheet", ""), ocr=bool(data.get("ocr")))


def describe_span(first: Location, last: Location) -> str:
    """How a citation names a passage: "p. 3, OCR", "pp. 3–4", "Sales, row 5", "rows 2–9", "slide 2"."""
    if first.unit == "row":
        return _rows(first, last)
    ocr = ", OCR" if first.ocr or last.ocr else ""
    if first.unit == "slide":
        return f"slide {first.number}" if first == last else f"slides {first.number}–{last.number}"
    return f"p. {first.number}{ocr}" if first.number == last.number else f"pp. {first.number}–{last.number}{ocr}"


def _rows(first: Location, last: Location) -> str:
    sheet = f"{first.sheet}, " if first.sheet else ""
    if first.sheet != last.sheet:
        return f"{sheet}row {first.number} – {last.sheet}, row {last.number}"
    return f"{sheet}row {first.number}" if first.number == last.number else f"{sheet}rows {first.number}–{last.number}"


@dataclass(frozen=True)
class Page:
    """One unit of the text: a PDF page, a spreadsheet row, a slide; a whole Word, HTML or text file."""

    number: int  # 1-based
    start: int  # offset of the page's first character in Extracted.text
    end: int  # offset just past its last character
    location: Location | None = None  # None: the file has no units a person could look up


@dataclass(frozen=True)
class Extracted:
    kind: str  # "pdf" | "docx" | "text" | "html" | "xlsx" | "csv" | "pptx", from the content
    text: str  # pages joined with PAGE_SEPARATOR
    pages: tuple[Page, ...]
    encoding: str | None = None  # for text files, the encoding used

    @property
    def page_count(self) -> int:
        return len(self.pages)

    @property
    def ocr_page_count(self) -> int:
        return sum(1 for page in self.pages if page.location is not None and page.location.ocr)

    @property
    def locations(self) -> list[dict]:
        """Each page's location, in page order, for storing beside the text; empty when it has none."""
        return [page.location.as_dict() for page in self.pages] if any(page.location for page in self.pages) else []

    def page_of(self, offset: int) -> int:
        """The page holding this character; a separator between pages counts as the page before it."""
        if not 0 <= offset <= len(self.text):
            raise ValueError(f"offset {offset} is outside the text (0–{len(self.text)})")
        return bisect.bisect_right(self.pages, offset, key=lambda page: page.start)


def assemble(kind: str, texts: list[str], encoding: str | None = None, locations: list[Location] | None = None) -> Extracted:
    pages, start = [], 0
    for index, text in enumerate(texts):
        location = locations[index] if locations else None
        pages.append(Page(number=index + 1, start=start, end=start + len(text), location=location))
        start += len(text) + len(PAGE_SEPARATOR)
    return Extracted(kind=kind, text=PAGE_SEPARATOR.join(texts), pages=tuple(pages), encoding=encoding)


def normalise(text: str) -> str:
    """Newlines, NULs and trailing spaces only: anything more would move the offsets citations point at."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return "\n".join(line.rstrip() for line in text.split("\n"))


def one_line(text: str) -> str:
    """A cell's or a shape's text on one line, its runs of white space (newlines too) one space each."""
    return " ".join(str(text).split())


# --- ZIP-based Office files ------------------------------------------------------------------------


def zip_members(data: bytes) -> list[zipfile.ZipInfo] | None:
    """The archive's table of contents, or None when it cannot be read."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError):
        return None


def zip_names(data: bytes) -> set[str] | None:
    members = zip_members(data)
    return None if members is None else {member.filename for member in members}


def refuse_zip_bomb(filename: str, members: list[zipfile.ZipInfo], max_unzipped_bytes: int, what: str) -> None:
    # The declared sizes can be trusted as a cap: zipfile stops reading a member at its declared size.
    cap = f"{max_unzipped_bytes / 2**20:.0f} MB size cap"
    total = sum(member.file_size for member in members)
    if total > max_unzipped_bytes:
        raise ParseError(
            f"“{filename}” unpacks to {total / 2**20:.0f} MB, more than the {cap} for {what}. "
            "Split it into smaller documents (or compress its images) and upload those."
        )
    for member in members:
        if member.file_size > _RATIO_CHECK_FROM_BYTES and member.file_size > _MAX_RATIO * max(member.compress_size, 1):
            ratio = member.file_size // max(member.compress_size, 1)
            raise ParseError(
                f"“{filename}” contains a part that unpacks {ratio}× larger than it is stored, as zip bombs do, "
                f"so it is refused under the {cap}. If it is a genuine document, save it again and upload the new copy."
            )
