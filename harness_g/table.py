"""Plain-text tables for the CLI (no dependency)."""
from __future__ import annotations

from typing import Any, Sequence


def _cell(value: Any, max_width: int) -> str:
    if isinstance(value, float):
        text = f"{value:.4g}"
    elif isinstance(value, (list, tuple)) and len(value) > 8:
        text = f"[{', '.join(map(str, value[:8]))}, … ({len(value)} items)]"
    else:
        text = str(value)
    text = text.replace("\n", " ")
    return text if max_width <= 0 or len(text) <= max_width else text[: max_width - 1] + "…"


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], max_width: int = 80) -> str:
    """Render rows under column headers, columns padded to their widest cell; a cell longer than ``max_width``
    characters is cut with "…" (``max_width`` <= 0: never cut)."""
    cells = [[_cell(v, max_width) for v in row] for row in rows]
    widths = [len(c) for c in columns]
    for row in cells:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))
    line = lambda vals: "  ".join(v.ljust(w) for v, w in zip(vals, widths)).rstrip()  # noqa: E731
    out = [line(list(columns)), line(["-" * w for w in widths])]
    out.extend(line(r) for r in cells)
    return "\n".join(out)
