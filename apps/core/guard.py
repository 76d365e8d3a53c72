"""The one guard for text that comes from outside — form fields, JSON values, names, the values
inside uploaded files — before it reaches the database, and the one reader for uploaded JSON.

PostgreSQL text cannot hold NUL, and a lone surrogate (a JSON escape such as "\\ud800") is not
text at all: psycopg cannot encode it. Other control characters would be stored, but no person
types them; they are smuggled, so they are refused too. Every input path asks `text_problem` /
`clean_text`, so a refusal reads the same on a page, in the API and for a file's line.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePath

from apps.core.errors import ApplicationError

# C0 controls but the whitespace ones (tab, line feed, vertical tab, form feed — text pasted from
# a PDF holds them — carriage return); DEL and the C1 controls.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Also refused in a name (one line that people read in lists and the audit trail): line breaks,
# tabs, and the bidirectional embeddings, overrides and isolates that make a "…gnp.exe" display as "…exe.png".
_NOT_IN_A_NAME = re.compile("[\t\n\x0b\x0c\r\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

MAX_JSON_DEPTH = 32
MAX_FILENAME = 200
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_A_BRACKET = re.compile(r"[^\[\]{}]+")


def text_problem(value, *, max_length: int | None = None, one_line: bool = False) -> str | None:
    """What keeps `value` from being stored as text, phrased to follow a field's name
    ("holds a NUL character …"); None when it is fine."""
    if not isinstance(value, str):
        return f"must be text, not {kind_of(value)}."
    if found := _SURROGATE.search(value):
        return f"holds broken Unicode (a lone surrogate, U+{ord(found.group()):04X}); send UTF-8 text."
    if found := _CONTROL.search(value):
        if found.group() == "\x00":
            return "holds a NUL character (U+0000), which text cannot hold; send plain text."
        return f"holds a control character (U+{ord(found.group()):04X}); send plain text."
    if one_line and (found := _NOT_IN_A_NAME.search(value)):
        return f"holds a line break, tab or text-direction control (U+{ord(found.group()):04X}); a name is one line of plain text."
    if max_length is not None and len(value) > max_length:
        return f"is longer than {max_length} characters ({len(value)})."
    return None


def clean_text(value, *, field: str, label: str | None = None, max_length: int | None = None, one_line: bool = False) -> str:
    """`value` when it may be stored as text, else ApplicationError (400) naming `field`."""
    if problem := text_problem(value, max_length=max_length, one_line=one_line):
        raise ApplicationError(f"“{label or field}” {problem}", field=field)
    return value


def kind_of(value) -> str:
    """How a person would name the JSON type of `value`."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a file" if hasattr(value, "read") else f"a {type(value).__name__}"


def storable(text: str) -> str:
    """Text extracted from a file, with what the database cannot hold (NUL, lone surrogates)
    replaced by U+FFFD one for one, so that every offset into it still points where it did."""
    return _UNSTORABLE.sub("\ufffd", text)


def safe_filename(filename: str, *, field: str = "files") -> str:
    """The last path component, without control or invisible characters, so names like
    ../../etc/passwd stay inside the workspace's folder and a text-direction override cannot make
    "gnp.exe" show as "exe.png"."""
    name = PurePath((filename or "").replace("\\", "/")).name
    name = "".join(ch for ch in name if ch.isprintable()).strip().lstrip(".")
    if len(name) > MAX_FILENAME:  # shortened before its extension, which says what the file is
        suffix = PurePath(name).suffix if len(PurePath(name).suffix) <= 16 else ""
        name = name[: MAX_FILENAME - len(suffix)] + suffix
    if not name:
        raise ApplicationError("The file has no usable name.", code="bad_name", field=field)
    return name


def short(value: str, limit: int = 40) -> str:
    """A value quoted back in a message: printable, and short."""
    shown = "".join(ch if ch.isprintable() else "\ufffd" for ch in value[:limit])
    return shown + ("…" if len(value) > limit else "")


# --- JSON from outside ------------------------------------------------------------------------------


class JSONUnreadable(ValueError):
    """Uploaded or posted JSON that is not valid, nests too deeply, or holds NaN / Infinity."""


def read_json(text: str, *, max_depth: int = MAX_JSON_DEPTH):
    """Parse JSON from outside without ever exhausting the recursion limit: nesting deeper than
    `max_depth` is refused before parsing, and NaN / Infinity (not JSON) are refused too."""
    if nests_deeper_than(text, max_depth):
        raise JSONUnreadable(f"it nests more than {max_depth} levels deep")
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_object_with_text_keys)
    except RecursionError:  # cannot happen below max_depth; kept so it never becomes a 500
        raise JSONUnreadable(f"it nests more than {max_depth} levels deep") from None
    except ValueError as exc:
        raise JSONUnreadable(getattr(exc, "msg", str(exc))) from None


def _object_with_text_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object whose keys are all text a database can hold: a lone surrogate (a valid JSON
    escape, "\\udfff") or a control character in a key is refused as it is in a value."""
    for key, _ in pairs:
        if problem := text_problem(key):
            raise JSONUnreadable(f"a key {problem.rstrip('.')}")
    return dict(pairs)


def nests_deeper_than(text: str, limit: int) -> bool:
    """Whether the arrays and objects of JSON `text` nest more than `limit` deep (brackets
    inside strings do not count), found without parsing it."""
    if text.count("[") + text.count("{") <= limit:
        return False  # the usual case, at the cost of two counts
    depth = 0
    for bracket in _NOT_A_BRACKET.sub("", _JSON_STRING.sub('""', text)):
        depth += 1 if bracket in "[{" else -1
        if depth > limit:
            return True
    return False


def _no_constant(name: str):
    raise JSONUnreadable(f"{name} is not a JSON value")
