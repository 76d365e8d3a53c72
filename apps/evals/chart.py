"""The threshold sweep as the geometry of a small SVG line chart, drawn by a template on the
server (no script, no library): answer rate, refusal rate and F1 against the gate threshold."""

from __future__ import annotations

WIDTH, HEIGHT = 640, 280
LEFT, RIGHT, TOP, BOTTOM = 48, 16, 16, 40
SERIES = (
    ("answer_rate", "Answer rate (answerable)", "series-answer"),
    ("refusal_rate", "Refusal rate (unanswerable)", "series-refusal"),
    ("f1", "Refusal F1", "series-f1"),
)


def _x(threshold: float) -> float:
    return round(LEFT + threshold * (WIDTH - LEFT - RIGHT), 1)


def _y(value: float) -> float:
    return round(TOP + (1 - value) * (HEIGHT - TOP - BOTTOM), 1)


def sweep_chart(rows: list[dict], *, current: float | None, recommended: float | None) -> dict:
    lines = [
        {"key": key, "label": label, "css": css, "points": " ".join(f"{_x(r['threshold'])},{_y(r[key])}" for r in rows)}
        for key, label, css in SERIES
    ]
    ticks = [i / 10 for i in range(11)]
    markers = [
        {"x": _x(value), "label": f"{label} {value:.2f}", "css": css}
        for value, label, css in ((current, "current", "marker-current"), (recommended, "recommended", "marker-recommended"))
        if value is not None
    ]
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "plot": {"left": LEFT, "right": WIDTH - RIGHT, "top": TOP, "bottom": HEIGHT - BOTTOM},
        "lines": lines,
        "x_ticks": [{"x": _x(t), "label": f"{t:.1f}"} for t in ticks],
        "y_ticks": [{"y": _y(t), "label": f"{t:.0%}"} for t in ticks[::2]],
        "markers": markers,
        "axis_label_y": HEIGHT - 6,
    }
