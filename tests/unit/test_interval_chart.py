"""``plots.interval_chart`` (agent/eval/report/plots.py), the public dot-and-whisker chart that
benchmarks/repro_small.py's page draws its intervals with: a well-formed ``<svg>``, each row's value and interval at
the right x, n/a rows, the dashed reference line, escaped labels."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from harness_g.agent.eval.report.plots import interval_chart

SVG = "{http://www.w3.org/2000/svg}"


def _x(width: int, v: float, lo: float, hi: float) -> float:
    """Where the chart puts ``v`` on an axis from ``lo`` to ``hi`` (its plot spans x = 230 .. width - 20)."""
    return 230 + (width - 250) * (v - lo) / (hi - lo)


def test_interval_chart_places_values_intervals_and_reference() -> None:
    rows = [("snc <&>", {"auc": 0.75, "lo": 0.5, "hi": 1.0}), ("outcome", {"auc": None}), ("igpo", None),
            ("point only", {"auc": 0.25})]
    svg = interval_chart("AUC per signal", rows, key="auc", lo=0.0, hi=1.0, ref=0.5, width=650)
    root = ET.fromstring(svg)  # well-formed: labels escaped
    assert root.tag == f"{SVG}svg" and root.get("width") == "650" and root.get("height") == str(34 + 26 * 4 + 30)
    circles = root.findall(f"{SVG}circle")
    assert [float(c.get("cx")) for c in circles] == [round(_x(650, 0.75, 0, 1), 1), round(_x(650, 0.25, 0, 1), 1)]
    assert circles[0].find(f"{SVG}title").text == "snc <&>: 0.75 [0.5, 1]"
    assert circles[1].find(f"{SVG}title").text == "point only: 0.25 [n/a, n/a]"
    whiskers = [line for line in root.findall(f"{SVG}line") if line.get("stroke-width") == "2"]
    assert [(float(w.get("x1")), float(w.get("x2"))) for w in whiskers] == [(round(_x(650, 0.5, 0, 1), 1), round(_x(650, 1.0, 0, 1), 1))]
    dashed = [line for line in root.findall(f"{SVG}line") if line.get("stroke-dasharray")]
    assert [float(d.get("x1")) for d in dashed] == [round(_x(650, 0.5, 0, 1), 1)]
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert texts.count("n/a") == 2 and "snc <&>" in texts and "AUC per signal" in texts


def test_interval_chart_axis_spans_the_data_with_round_ticks() -> None:
    svg = interval_chart("N_eq", [("menu", {"mean": 2.6, "lo": 1.3, "hi": 3.9})], lo=1.0, hi=None)
    ticks = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text") if re.fullmatch(r"[\d.]+", t.text or "")]
    assert ticks[0] == "1" and float(ticks[-1]) >= 3.9 and len(ticks) >= 3
