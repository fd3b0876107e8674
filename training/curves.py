"""Training-run report: one self-contained HTML page with the curves of ``metrics.jsonl`` (inline SVG),
the before/after evaluation of ``eval.jsonl`` and the resolved config. Used by ``harness-g report RUN_DIR``
when RUN_DIR is a training run."""
from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any, Sequence

from harness_g.agent.eval.report.plots import color, nice_ticks, svg_frame, svg_legend, svg_text, tick_label

PANELS: list[tuple[str, list[str]]] = [
    ("Outcome reward (token F1) and EM", ["reward_f1", "em"]),
    ("Loss", ["loss", "pg_loss"]),
    ("KL to the reference (k3)", ["kl"]),
    ("Gradient norm", ["grad_norm"]),
    ("Zero-advantage groups", ["zero_adv_frac", "zero_adv_all_wrong", "zero_adv_all_correct"]),
    ("Retrieval-equivalence: D_query (free-query arm), D_ret, mean N_eq", ["d_query", "d_ret", "mean_n_eq"]),
    ("Aliasing (harness-g's diagnostic): differing requests, one class", ["aliasing"]),
    ("Clip fractions", ["clip_frac", "dual_clip_frac"]),
    ("SNC credit: nonzero step fraction, mean", ["snc_credit_nonzero_frac", "snc_credit_mean"]),
    ("Turns and invalid-action fraction", ["turns", "invalid_action_frac"]),
    ("Response tokens per rollout", ["response_tokens"]),
    ("Time per step (s)", ["time_generate_s", "time_env_s", "time_snc_s", "time_update_s", "time_sync_s", "time_total_s"]),
    ("SNC share of step time", ["snc_share"]),
]


def line_chart(title: str, steps: Sequence[int], series: dict[str, Sequence[float | None]], *, width: int = 460,
               height: int = 250) -> str:
    """One panel: a line per series over ``steps``; y ticks are round numbers (:func:`nice_ticks`) spanning the data and 0,
    labelled with a real minus sign, and the left margin grows with the longest label so none is cut."""
    values = [v for vs in series.values() for v in vs if v is not None]
    ticks = nice_ticks(min(0.0, min(values)) if values else 0.0, max(0.0, max(values)) if values else 1.0)
    labels = [tick_label(t) for t in ticks]
    left = max(40, 12 + int(6.2 * max(len(t) for t in labels)))
    legend, lh = svg_legend([(name, color(i)) for i, name in enumerate(series)], left, 38, width - left - 8)
    top, right, bottom = 38 + lh + 4, 12, 34
    lo, hi = ticks[0], ticks[-1]
    x0, x1 = (min(steps), max(steps)) if steps else (0, 1)
    span_x = max(x1 - x0, 1)
    pw, ph = width - left - right, height - top - bottom

    def px(s: float) -> float:
        return left + (s - x0) / span_x * pw

    def py(v: float) -> float:
        return top + ph - (v - lo) / ((hi - lo) or 1.0) * ph

    body = [legend, f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#999"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#999"/>']
    for v, label in zip(ticks, labels):
        body.append(f'<line x1="{left}" y1="{py(v):.1f}" x2="{left + pw}" y2="{py(v):.1f}" stroke="{"#bbb" if v == 0 else "#eee"}"/>')
        body.append(svg_text(left - 4, py(v) + 4, label, anchor="end", size=10))
    x_ticks = [int(t) for t in nice_ticks(x0, x1) if x0 <= t <= x1 and float(t).is_integer()] if x1 > x0 else [x0]
    for s in x_ticks:
        body.append(svg_text(px(s), top + ph + 14, f"{s:,}", size=10))
    body.append(svg_text(left + pw / 2, height - 4, "step", size=10))
    for i, (name, vs) in enumerate(series.items()):
        pts = [(px(s), py(v)) for s, v in zip(steps, vs) if v is not None]
        if len(pts) > 1:
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            body.append(f'<polyline fill="none" stroke="{color(i)}" stroke-width="2" points="{d}"/>')
        for (x, y), (s, v) in zip(pts, [(s, v) for s, v in zip(steps, vs) if v is not None]):
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color(i)}"><title>{escape(name)} step {s}: {v:.4g}</title></circle>')
    return svg_frame(width, height, "".join(body), title)


def is_training_run(run_dir: str | Path) -> bool:
    p = Path(run_dir)
    return (p / "metrics.jsonl").exists() and (p / "config.yaml").exists() and not (p / "records.jsonl").exists()


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def render_training_report(run_dir: str | Path, out: str | Path, title: str | None = None) -> Path:
    run = Path(run_dir)
    by_step = {int(r["step"]): r for r in _rows(run / "metrics.jsonl")}  # a resumed run re-logs steps: keep the latest
    rows = [by_step[k] for k in sorted(by_step)]
    evals = _rows(run / "eval.jsonl")
    steps = [int(r["step"]) for r in rows]
    charts = []
    for name, keys in PANELS:
        series = {k: [r.get(k) for r in rows] for k in keys if any(k in r for r in rows)}
        if series:
            charts.append(line_chart(name, steps, series))
    eval_html = ""
    if evals:
        head = "<tr><th>when</th><th>step</th><th>split</th><th>questions</th><th>F1</th><th>EM</th><th>turns</th><th>invalid</th></tr>"
        body = "".join(
            f"<tr><td>{escape(e['tag'])}</td><td>{e['step']}</td><td>{escape(e['split'])}</td><td>{e['questions']}</td>"
            f"<td>{100 * e['f1']:.2f}</td><td>{100 * e['em']:.2f}</td><td>{e['turns']:.2f}</td><td>{e['invalid_action_frac']:.2f}</td></tr>"
            for e in evals)
        eval_html = f"<h2>Greedy evaluation before / after training</h2><table>{head}{body}</table>"
    config = escape((run / "config.yaml").read_text(encoding="utf-8"))
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{escape(title or str(run))}</title>
<style>body{{font-family:system-ui,Helvetica,Arial,sans-serif;margin:24px;color:#222}} .grid{{display:flex;flex-wrap:wrap;gap:12px}}
.grid svg{{flex:1 1 420px;max-width:calc(50% - 6px);height:auto}} @media (max-width:900px){{.grid svg{{max-width:100%}}}}
table{{border-collapse:collapse}} td,th{{border:1px solid #ddd;padding:4px 8px;text-align:right}} pre{{background:#f6f6f6;padding:8px}}</style>
</head><body><h1>{escape(title or 'harness-g training run')}</h1><p>{escape(str(run))}: {len(rows)} logged steps</p>
{eval_html}<h2>Curves</h2><div class="grid">{''.join(charts)}</div><h2>Config</h2><pre>{config}</pre></body></html>"""
    out = Path(out)
    out.write_text(page, encoding="utf-8")
    return out
