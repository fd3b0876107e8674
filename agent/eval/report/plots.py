"""Hand-made inline SVG charts (no plotting library, no JavaScript): each function returns one
``<svg>`` element as a string, sized in CSS pixels, with escaped labels and a ``<title>`` per
mark so hovering shows the exact value.
"""
from __future__ import annotations

import math
from html import escape
from typing import Mapping, Sequence

PALETTE = ("#3b6fb6", "#e08a2c", "#4a9d5b", "#c4484e", "#8467b3", "#8c6d4f", "#d077b5", "#7a7a7a", "#b5b23a", "#3aaab5")
ACTION_COLORS = {"SELECT": "#3b6fb6", "LOOKUP": "#e08a2c", "ANSWER_WITH": "#4a9d5b", "ANSWER": "#8467b3", "INVALID": "#c4484e"}
FONT = "font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif"


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _fmt(v: float) -> str:
    if abs(v - round(v)) < 1e-9:
        return str(int(round(v)))
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    exp = 10 ** math.floor(math.log10(v))
    for m in (1, 2, 2.5, 5, 10):
        if m * exp >= v:
            return m * exp
    return 10 * exp


def nice_ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """Round tick values covering [lo, hi] with about ``n`` intervals: the step is 1, 2, 2.5 or 5 × 10^k and the ends
    are multiples of it (e.g. lo = -0.042, hi = 0.31 -> -0.1, 0, 0.1, 0.2, 0.3, 0.4)."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    exp = 10 ** math.floor(math.log10(raw))
    step = next(m * exp for m in (1, 2, 2.5, 5, 10) if m * exp >= raw - 1e-12)
    start, stop = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(k * step, 12) for k in range(start, stop + 1)]


def tick_label(v: float) -> str:
    """A tick value with a real minus sign and no float noise: ``-0.05``, ``0``, ``2.5``, ``1,000``."""
    if abs(v) < 1e-12:
        return "0"
    text = f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.6g}"
    return text.replace("-", "\u2212")


def svg_text(x: float, y: float, s: str, *, size: int = 11, anchor: str = "middle", fill: str = "#333",
             weight: str = "normal", rotate: float | None = None) -> str:
    """One ``<text>`` element at (``x``, ``y``) in the drawing's units (px), ``size`` in px, ``rotate`` in degrees
    about (x, y); ``s`` is escaped."""
    tr = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate is not None else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}" '
            f'font-weight="{weight}"{tr}>{escape(s)}</text>')


def svg_legend(items: Sequence[tuple[str, str]], x: float, y: float, width: float) -> tuple[str, float]:
    """Legend rows (label, colour) from (``x``, ``y``) wrapped to ``width`` px; returns (svg, height used in px)."""
    parts, cx, cy = [], x, y
    for label, col in items:
        w = 18 + 6.5 * len(label) + 14
        if cx + w > x + width and cx > x:
            cx, cy = x, cy + 16
        parts.append(f'<rect x="{cx:.1f}" y="{cy - 9:.1f}" width="11" height="11" rx="2" fill="{col}"/>')
        parts.append(svg_text(cx + 16, cy, label, anchor="start"))
        cx += w
    return "".join(parts), cy - y + 16


TITLE_CHAR_EM = 0.58  # average glyph width of the sans-serif title font, in ems (to fit a title to the chart)


def svg_frame(width: int, height: int, body: str, title: str, *, cls: str = "") -> str:
    """The ``<svg>`` element: scales with its container (viewBox; ``width`` x ``height`` is the drawing's own size), with
    the title's font shrunk (13 px down to 9 px) so a long title fits the width instead of being cut at the edges."""
    size = max(9, min(13, int((width - 16) / (TITLE_CHAR_EM * max(1, len(title))))))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {escape(cls)}" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" style="{FONT}">'
            f'<title>{escape(title)}</title>{svg_text(width / 2, 18, title, size=size, weight="600")}{body}</svg>')


def grouped_bars(title: str, groups: Sequence[str], series: Sequence[str], values: Mapping[tuple[str, str], float | None], *,
                 y_max: float | None = None, y_label: str = "", width: int = 560, height: int = 300, cls: str = "",
                 integer: bool = False) -> str:
    """Vertical bars: one cluster per group, one bar per series; ``None`` values are left out (marked n/a).
    ``integer``: counts, so the axis uses whole-number ticks."""
    legend, lh = svg_legend([(s, color(i)) for i, s in enumerate(series)], 50, 38, width - 60)
    top = 38 + lh + 4
    left, right, bottom = 50, 12, 46
    plot_h = height - top - bottom
    plot_w = width - left - right
    vals = [v for v in values.values() if v is not None]
    ymax = y_max if y_max is not None else _nice_max(max(vals) if vals else 1.0)
    if integer and y_max is None:
        ymax = 4.0 * max(1, math.ceil((max(vals) if vals else 1.0) / 4))
    parts = [legend]
    for k in range(5):  # y grid
        yv = ymax * k / 4
        y = top + plot_h - plot_h * k / 4
        parts.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        parts.append(svg_text(left - 6, y + 4, _fmt(yv), size=10, anchor="end", fill="#666"))
    if y_label:
        parts.append(svg_text(14, top + plot_h / 2, y_label, size=11, rotate=-90, fill="#555"))
    n_g = max(1, len(groups))
    gw = plot_w / n_g
    bw = min(42.0, gw * 0.8 / max(1, len(series)))
    for gi, g in enumerate(groups):
        cx = left + gw * gi + gw / 2
        x0 = cx - bw * len(series) / 2
        for si, s in enumerate(series):
            v = values.get((g, s))
            x = x0 + si * bw
            if v is None:
                parts.append(svg_text(x + bw / 2, top + plot_h - 4, "n/a", size=9, fill="#999"))
                continue
            h = 0 if ymax <= 0 else plot_h * min(v, ymax) / ymax
            y = top + plot_h - h
            parts.append(f'<rect class="bar" x="{x + 1:.1f}" y="{y:.1f}" width="{max(bw - 2, 1):.1f}" height="{h:.1f}" '
                         f'fill="{color(si)}" data-group="{escape(g)}" data-series="{escape(s)}" data-value="{v}">'
                         f'<title>{escape(g)} · {escape(s)}: {_fmt(v)}</title></rect>')
            if bw >= 16:
                parts.append(svg_text(x + bw / 2, y - 3, _fmt(v), size=9, fill="#333"))
        parts.append(svg_text(cx, top + plot_h + 16, g, size=11))
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{width - right}" y2="{top + plot_h}" stroke="#888"/>')
    return svg_frame(width, height, "".join(parts), title, cls=cls)


def stacked_shares(title: str, bars: Sequence[str], categories: Sequence[str], counts: Mapping[tuple[str, str], float], *,
                   colors: Mapping[str, str] | None = None, width: int = 560, row_h: int = 26, cls: str = "") -> str:
    """Horizontal 100% stacked bars (one per entry of ``bars``), segments labelled with their share."""
    cols = {c: (colors or {}).get(c, color(i)) for i, c in enumerate(categories)}
    legend, lh = svg_legend([(c, cols[c]) for c in categories], 12, 38, width - 24)
    top = 38 + lh + 4
    label_w = min(220, max(60, 6.6 * max((len(b) for b in bars), default=4)))
    left, right = 12 + label_w, 14
    plot_w = width - left - right
    height = int(top + row_h * max(1, len(bars)) + 14)
    parts = [legend]
    for bi, b in enumerate(bars):
        y = top + bi * row_h
        total = sum(counts.get((b, c), 0) for c in categories)
        parts.append(svg_text(left - 6, y + row_h / 2 + 4, b, anchor="end"))
        if total <= 0:
            parts.append(svg_text(left + 4, y + row_h / 2 + 4, "no steps", anchor="start", fill="#999"))
            continue
        x = float(left)
        for c in categories:
            n = counts.get((b, c), 0)
            if n <= 0:
                continue
            w = plot_w * n / total
            parts.append(f'<rect class="seg" x="{x:.1f}" y="{y + 3:.1f}" width="{w:.1f}" height="{row_h - 6}" fill="{cols[c]}" '
                         f'data-bar="{escape(b)}" data-category="{escape(c)}" data-count="{n}">'
                         f'<title>{escape(b)} · {escape(c)}: {_fmt(n)} ({100 * n / total:.0f}%)</title></rect>')
            if w > 30:
                parts.append(svg_text(x + w / 2, y + row_h / 2 + 4, f"{100 * n / total:.0f}%", size=10, fill="#fff"))
            x += w
    return svg_frame(width, height, "".join(parts), title, cls=cls)


def count_grid(title: str, rows: Sequence[str], cols: Sequence[str], counts: Mapping[tuple[str, str], int], *,
               width: int = 360, cell_h: int = 34, cls: str = "", row_title: str = "", col_title: str = "") -> str:
    """A small contingency table as a shaded grid (darker = more questions)."""
    label_w = max(90, 7 * max((len(r) for r in rows), default=4))
    top, left = 52, 12 + label_w
    cell_w = (width - left - 12) / max(1, len(cols))
    height = int(top + cell_h * len(rows) + 12)
    peak = max(counts.values(), default=0) or 1
    parts = []
    if col_title:
        parts.append(svg_text(left + cell_w * len(cols) / 2, 34, col_title, size=10, fill="#666"))
    for ci, c in enumerate(cols):
        parts.append(svg_text(left + cell_w * ci + cell_w / 2, top - 4, c, size=11))
    for ri, r in enumerate(rows):
        y = top + ri * cell_h
        parts.append(svg_text(left - 6, y + cell_h / 2 + 4, r, anchor="end"))
        for ci, c in enumerate(cols):
            n = counts.get((r, c), 0)
            shade = 0.08 + 0.72 * n / peak if n else 0.03
            x = left + cell_w * ci
            parts.append(f'<rect class="cell" x="{x + 1:.1f}" y="{y + 1:.1f}" width="{cell_w - 2:.1f}" height="{cell_h - 2}" '
                         f'fill="#3b6fb6" fill-opacity="{shade:.2f}" data-row="{escape(r)}" data-col="{escape(c)}" data-count="{n}">'
                         f'<title>{escape(r)} × {escape(c)}: {n}</title></rect>')
            parts.append(svg_text(x + cell_w / 2, y + cell_h / 2 + 4, str(n), size=12, fill="#fff" if n / peak > 0.55 else "#222",
                               weight="600"))
    if row_title:
        parts.append(svg_text(12, top - 4, row_title, size=10, anchor="start", fill="#666"))
    return svg_frame(width, height, "".join(parts), title, cls=cls)


def _g3(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}"


def interval_chart(title: str, rows: Sequence[tuple[str, Mapping[str, float | None] | None]], *, key: str = "mean",
                   lo: float | None = None, hi: float | None = None, ref: float | None = None, width: int = 560) -> str:
    """Horizontal dot-and-whisker chart, one row per ``(label, {key: value, "lo": low end, "hi": high end})`` (an
    interval such as a 95% bootstrap interval; the row is marked n/a when the mapping or its ``key`` is None).

    The x axis spans ``lo``..``hi`` in the values' own units (default: 0 or the smallest value .. 1 or the largest),
    widened to round ticks (:func:`nice_ticks`); ``ref`` draws a dashed reference line at that value (e.g. AUC 0.5).
    ``width`` is in CSS pixels; the height follows from the rows (26 px each). Returns one ``<svg>`` element."""
    vals = [v for _, d in rows if d for v in (d.get(key), d.get("lo"), d.get("hi")) if v is not None]
    ticks = nice_ticks(lo if lo is not None else min([0.0, *vals]), hi if hi is not None else max([1.0, *vals]))
    left, right, top, row_h = 230, 20, 34, 26
    height = top + row_h * len(rows) + 30
    x0, x1 = ticks[0], ticks[-1]

    def x(v: float) -> float:
        return left + (width - left - right) * (v - x0) / ((x1 - x0) or 1.0)

    parts = []
    for t in ticks:
        parts.append(f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{height - 24}" stroke="#e4e4e4"/>')
        parts.append(svg_text(x(t), height - 10, tick_label(t), size=10, fill="#666"))
    if ref is not None:
        parts.append(f'<line x1="{x(ref):.1f}" y1="{top}" x2="{x(ref):.1f}" y2="{height - 24}" stroke="#999" '
                     'stroke-dasharray="4 3"/>')
    for i, (label, d) in enumerate(rows):
        y = top + row_h * i + row_h / 2
        parts.append(svg_text(left - 8, y + 4, label, size=11, anchor="end"))
        v = d.get(key) if d else None
        if d is None or v is None:
            parts.append(svg_text(left + 20, y + 4, "n/a", size=10, fill="#999"))
            continue
        low, high = d.get("lo"), d.get("hi")
        if low is not None and high is not None:
            parts.append(f'<line x1="{x(low):.1f}" y1="{y:.1f}" x2="{x(high):.1f}" y2="{y:.1f}" stroke="#3b6fb6" '
                         'stroke-width="2"/>')
        parts.append(f'<circle cx="{x(v):.1f}" cy="{y:.1f}" r="4.5" fill="#3b6fb6"><title>{escape(label)}: {v:.3g} '
                     f'[{_g3(low)}, {_g3(high)}]</title></circle>')
    return svg_frame(width, height, "".join(parts), title)
