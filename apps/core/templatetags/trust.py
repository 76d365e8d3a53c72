"""Small formatting filters shared by the answer and audit pages."""

from __future__ import annotations

from django import template

register = template.Library()


# Words whose plain reading would mislead: a claim whose document is gone was not found wanting.
_LABELS = {"source_deleted": "source deleted — cannot be checked", "unsure": "not checked by the local judge — read the quote"}


@register.filter
def label(value) -> str:
    """A machine word as people read it: "hallucinated_quote" → "hallucinated quote"."""
    return _LABELS.get(str(value), str(value or "").replace("_", " "))


@register.filter
def pages(source: dict) -> str:
    """Where a passage sits: its `location` when the answer recorded one ("p. 3, OCR", "Sales, row 5",
    "slide 2"), else "p. 3" or "pp. 3–4" for a passage of a PDF; nothing for documents without units."""
    if source.get("location"):
        return source["location"]
    first, last = source.get("first_page"), source.get("last_page")
    if not first:
        return ""
    return f"p. {first}" if first == last or not last else f"pp. {first}–{last}"


@register.filter
def percent(value) -> str:
    """0.8234 → "82%" (an empty string for no value)."""
    return "" if value is None or value == "" else f"{float(value):.0%}"


@register.filter
def change_lines(data: dict, prefix: str = "") -> list[str]:
    """An admin event's data as lines a person reads, "from → to" for each change:
    {"changes": {"gate_threshold": {"from": 0.5, "to": 0.6}}} → ["gate threshold: 0.5 → 0.6"]."""
    lines = []
    for key, value in (data or {}).items():
        if key == "reindex_needed":
            lines += ["documents need a re-index"] if value else []
            continue
        name = f"{prefix}{key}".replace("changes.", "").replace("_", " ")
        if isinstance(value, dict) and set(value) == {"from", "to"}:
            lines.append(f"{name}: {_shown(value['from'])} → {_shown(value['to'])}")
        elif isinstance(value, dict):
            lines += change_lines(value, f"{prefix}{key}.")
        else:
            lines.append(f"{name}: {_shown(value)}")
    return lines


def _shown(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ", ".join(_shown(v) for v in value) or "none"
    return "—" if value in (None, "") else str(value)
