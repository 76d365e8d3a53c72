"""PowerPoint (PPTX): one unit per slide — its title as a heading line, the text of its shapes
(grouped shapes and tables too) and its speaker notes — located as "slide N"."""

from __future__ import annotations

import io

import pptx
from pptx.enum.shapes import MSO_SHAPE_TYPE

from apps.pipeline.parsing.base import Extracted, Location, ParseError, assemble, normalise, one_line
from apps.pipeline.parsing.word import check_office_archive, damaged_office


def extract_pptx(filename: str, data: bytes, max_unzipped_bytes: int) -> Extracted:
    check_office_archive(filename, data, "pptx", max_unzipped_bytes)
    try:
        presentation = pptx.Presentation(io.BytesIO(data))
        texts = [normalise(_slide_text(slide)) for slide in presentation.slides]
    except Exception as exc:  # python-pptx and lxml raise KeyError, ValueError, XMLSyntaxError… on broken parts
        raise damaged_office(filename, "pptx") from exc
    if not any(text.strip() for text in texts):
        what = f"its {len(texts)} slide(s) hold" if texts else "it has no slides, so it holds"
        raise ParseError(f"“{filename}” contains no text: {what} no titles, text boxes, tables or notes. Upload a deck with text in it.")
    return assemble("pptx", texts, locations=[Location("slide", number) for number in range(1, len(texts) + 1)])


def _slide_text(slide) -> str:
    title_shape = slide.shapes.title
    title = one_line(title_shape.text_frame.text) if title_shape is not None and title_shape.has_text_frame else ""
    lines = [f"# {title}"] if title else []
    for shape in slide.shapes:
        if title_shape is None or shape.shape_id != title_shape.shape_id:
            lines += _shape_lines(shape)
    notes = _notes(slide)
    return "\n".join(lines + ([f"Notes: {notes}"] if notes else []))


def _shape_lines(shape) -> list[str]:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        return [line for inner in shape.shapes for line in _shape_lines(inner)]
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[one_line(cell.text) for cell in row.cells] for row in shape.table.rows]
        return [" | ".join(cells) for cells in rows if any(cells)]
    if shape.has_text_frame:
        return _paragraphs(shape.text_frame.text)
    return []


def _notes(slide) -> str:
    if not slide.has_notes_slide or slide.notes_slide.notes_text_frame is None:
        return ""
    return " ".join(_paragraphs(slide.notes_slide.notes_text_frame.text))


def _paragraphs(text: str) -> list[str]:
    # A line break inside a paragraph ("\v" in python-pptx's text) reads as a space.
    return [line for line in (one_line(part) for part in text.replace("\v", " ").split("\n")) if line]
