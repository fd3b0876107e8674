"""``harness-g report``: one self-contained HTML page built from REAL eval runs (heuristic policy on the
HotpotQA test graph), parsed back with ``html.parser``; rendered with headless Chromium when it is installed.
"""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from helpers.store_kinds import STORE_KINDS

from harness_g.agent.eval.report import build_report, diagnose, load_run, parse_label
from harness_g.agent.eval.report.html import fmt_value, inline_bodies
from harness_g.agent.eval.run import EvalConfig, run_eval
from harness_g.agent.policies import make_policy
from harness_g.errors import InputError


class Page(HTMLParser):
    """Collects what the assertions need: summary cells, trajectory sections, steps, chips, svgs, resources."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[tuple[str, str], str] = {}
        self.details: list[dict[str, str]] = []
        self.steps: list[dict[str, Any]] = []  # {"run", "qid", "turn", "chosen", "chips": [(id, classes)], "rows": [...]}
        self.svgs = 0
        self.external: list[str] = []
        self.tags: list[str] = []
        self._cell: tuple[str, str] | None = None
        self._text: list[str] = []
        self._detail: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs_list: list[tuple[str, str | None]]) -> None:
        attrs = {k: v or "" for k, v in attrs_list}
        self.tags.append(tag)
        cls = attrs.get("class", "").split()
        for key in ("src", "href"):
            if attrs.get(key, "").startswith(("http:", "https:", "//")):
                self.external.append(attrs[key])
        if tag == "link":
            self.external.append(attrs.get("href", "link"))
        if tag == "svg":
            self.svgs += 1
        if tag == "td" and "data-key" in attrs and "data-run" in attrs:
            self._cell, self._text = (attrs["data-run"], attrs["data-key"]), []
        if tag == "details" and "traj" in cls:
            self._detail = {k: attrs.get(k, "") for k in ("data-run", "data-qid", "data-outcome", "data-reason")}
            self.details.append(self._detail)
        if tag == "div" and "step" in cls and "data-chosen" in attrs:
            d = self._detail or {}
            self.steps.append({"run": d.get("data-run"), "qid": d.get("data-qid"), "turn": int(attrs["data-turn"]),
                               "chosen": attrs["data-chosen"], "chips": [], "rows": []})
        if tag == "tr" and "row" in cls and self.steps:
            self.steps[-1]["rows"].append(cls)
        if tag == "span" and "chip" in cls and "data-action" in attrs and self.steps:
            self.steps[-1]["chips"].append((attrs["data-action"], cls))

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None:
            self.cells[self._cell] = "".join(self._text).strip()
            self._cell = None
        if tag == "details":
            self._detail = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text.append(data)


@pytest.fixture(scope="module", params=STORE_KINDS)
def report_store(request) -> str:
    """The store the report's evaluation runs use (module-scoped, so each store's runs are made once)."""
    return str(request.param)


@pytest.fixture(scope="module")
def runs(request, report_store, hotpot_questions, tmp_path_factory) -> list[Path]:
    hotpot_view = request.getfixturevalue(f"{report_store}_hotpot_view")
    hotpot_view.store.load(hotpot_view.artifact, progress=False)  # Neo4j: another test may have swapped the graph
    base = tmp_path_factory.mktemp("report-runs")
    policy = make_policy("heuristic")
    run_eval(hotpot_view, policy, hotpot_questions, base / "menu", config=EvalConfig(limit=2, reachability=True, reach_budget=30), progress=False)
    run_eval(hotpot_view, policy, hotpot_questions, base / "rag", config=EvalConfig(interface="rag", limit=2), progress=False)
    return [base / "menu", base / "rag"]


@pytest.fixture(scope="module")
def report(runs: list[Path], tmp_path_factory) -> tuple[Path, Page]:
    out = build_report(runs, tmp_path_factory.mktemp("report") / "report.html")
    page = Page()
    page.feed(inline_bodies(out.read_text(encoding="utf-8")))  # each trajectory as the browser shows it once opened
    return out, page


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "records.jsonl").read_text().splitlines() if x.strip()]


def test_summary_numbers_equal_summary_json(runs: list[Path], report: tuple[Path, Page]) -> None:
    _, page = report
    for i, run in enumerate(runs):
        summary = json.loads((run / "summary.json").read_text())
        keys = [k for (r, k) in page.cells if r == str(i)]
        assert {"em", "f1", "rs", "evidence_recall", "questions", "mean_turns"} <= set(keys)
        for key in keys:
            shown, value = page.cells[(str(i), key)], summary.get(key)
            if value is None:
                assert shown == "—", key
            elif isinstance(value, (int, float)):
                assert float(shown) == pytest.approx(value, abs=0), (key, shown, value)
            else:
                assert shown == fmt_value(value)
    menu_summary = json.loads((runs[0] / "summary.json").read_text())
    assert page.cells[("0", "reachable_rate")] == fmt_value(menu_summary["reachable_rate"])


def test_one_trajectory_section_per_question(runs: list[Path], report: tuple[Path, Page]) -> None:
    _, page = report
    for i, run in enumerate(runs):
        ids = [r["id"] for r in _records(run)]
        sections = [d["data-qid"] for d in page.details if d["data-run"] == str(i)]
        assert sections == ids
    for d in page.details:
        assert d["data-outcome"] in ("correct", "wrong") and d["data-reason"]


def test_each_step_highlights_the_chosen_action(runs: list[Path], report: tuple[Path, Page]) -> None:
    _, page = report
    menu_records = {r["id"]: r for r in _records(runs[0])}
    menu_steps = [s for s in page.steps if s["run"] == "0"]
    assert len(menu_steps) == sum(len(r["trajectory"]["steps"]) for r in menu_records.values()) > 0
    for s in menu_steps:
        rec_step = menu_records[s["qid"]]["trajectory"]["steps"][s["turn"]]
        assert s["chosen"] == (rec_step["chosen"] or "")
        offered = sorted(a["id"] for a in rec_step["menu"])
        assert sorted(a for a, _ in s["chips"]) == offered  # the whole menu is drawn
        for action_id, cls in s["chips"]:
            assert ("chosen" in cls) == (action_id == rec_step["chosen"]), (action_id, cls)
            assert ("rejected" in cls) == (action_id != rec_step["chosen"])
        if rec_step["chosen"]:
            assert sum("chosen" in row for row in s["rows"]) == 1  # exactly one highlighted menu row
            assert all(("chosen" in row) != ("rejected" in row) for row in s["rows"])
    assert not [s for s in page.steps if s["run"] == "1"]  # rag has no menu steps


def test_page_is_self_contained_with_svg_plots(report: tuple[Path, Page]) -> None:
    out, page = report
    html = out.read_text(encoding="utf-8")
    assert page.svgs >= 5  # F1, EM, turns, action mix, outcome, reachability
    assert page.external == [] and "<script src" not in html
    for cls in ("plot-f1", "plot-em", "plot-turns", "plot-actions", "plot-reasons", "plot-reach"):
        assert cls in html, cls
    assert "hotpotqa" in html and "<style>" in html and "<details" in html
    assert page.tags.count("details") == len(page.details)


def test_failure_reasons() -> None:
    gold = {"sentence_ids": ["p1:0", "p2:1"], "paragraph_ids": ["p1", "p2"]}

    def rec(em: float, committed: list[str], visible: list[str] = (), reach: str | None = None) -> dict[str, Any]:
        r: dict[str, Any] = {"id": "q", "metrics": {"em": em, "f1": em},
                             "trajectory": {"committed": committed, "initial_visible": list(visible), "steps": [],
                                            "terminated_by": "ANSWER"}}
        if reach:
            r["reachability"] = {"status": reach}
        return r

    assert diagnose(rec(1.0, []), gold) == "correct"
    assert diagnose(rec(0.0, ["p1:0"], reach="unreachable"), gold) == "gold not reachable"
    assert diagnose(rec(0.0, ["p1:0"], visible=["p2:1", "p3:0"]), gold) == "gold visible but not committed"
    assert diagnose(rec(0.0, ["p2:1", "p1:0", "p9:9"]), gold) == "wrong answer string"
    assert diagnose(rec(0.0, ["p1:0"], visible=["p3:0"]), gold) == "part of the gold never surfaced"
    assert diagnose(rec(0.0, [], visible=["p3:0"]), gold) == "gold never surfaced"
    assert diagnose(rec(0.0, []), gold, "naive") == "no retrieval (naive)"
    assert diagnose(rec(0.0, []), {"sentence_ids": [], "paragraph_ids": []}) == "no gold evidence annotated"
    # a gold sentence that appeared only on a later menu counts as visible
    r = rec(0.0, ["p1:0"])
    r["trajectory"]["steps"] = [{"menu": [{"id": "A0", "type": "SELECT", "targets": ["p2:1"], "label": "A0 = SELECT S0"}],
                                 "visible_after": []}]
    assert diagnose(r, gold) == "gold visible but not committed"


def test_labels_parse() -> None:
    assert parse_label("A6 = LOOKUP E3 | entity: Caroline Leaf") == {"type": "LOOKUP", "refs": "E3", "entity": "Caroline Leaf"}
    assert parse_label("A0 = SELECT S0")["refs"] == "S0" and parse_label("A9 = ANSWER")["type"] == "ANSWER"


def test_dataset_comes_from_the_graph_when_config_lacks_it(runs: list[Path], tmp_path: Path) -> None:
    run = tmp_path / "old-run"
    shutil.copytree(runs[0], run)
    cfg = json.loads((run / "config.json").read_text())
    cfg.pop("dataset")
    (run / "config.json").write_text(json.dumps(cfg))
    summary = json.loads((run / "summary.json").read_text())
    summary.pop("dataset")
    (run / "summary.json").write_text(json.dumps(summary))
    # older records without "gold"/"dataset": gold comes from the artifact's questions.jsonl
    recs = _records(run)
    (run / "records.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k not in ("gold", "dataset")}) + "\n"
                                               for r in recs))
    loaded = load_run(run)
    assert loaded.dataset == "hotpotqa"
    assert all(loaded.gold[r["id"]]["sentence_ids"] == r["gold"]["sentence_ids"] for r in recs)
    assert loaded.sentences  # texts come from the graph's sentences.parquet


def test_cli_report_command(runs: list[Path], tmp_path: Path, capsys) -> None:
    from harness_g.cli import main

    out = tmp_path / "cli.html"
    assert main(["report", str(runs[0]), str(runs[1]), "--out", str(out), "--expand"]) == 0
    assert out.exists() and "<details class=\"traj\" open" in out.read_text(encoding="utf-8")
    assert str(out) in capsys.readouterr().out
    with pytest.raises(InputError):
        build_report([tmp_path / "nope"], tmp_path / "x.html")


def test_cli_report_on_a_mix_of_eval_and_training_runs(runs: list[Path], tmp_path: Path, capsys) -> None:
    """`harness-g report runs/*` once runs/ also holds a training run: the eval runs share --out, the training run
    gets its curves page beside it."""
    import json

    from harness_g.cli import main

    train = tmp_path / "runs" / "tiny"
    train.mkdir(parents=True)
    (train / "config.yaml").write_text("seed: 0\n")
    (train / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "reward_f1": 0.1 * s, "loss": 0.5 - 0.2 * s}) + "\n"
                                                 for s in (1, 2, 3)))
    out = tmp_path / "report.html"
    assert main(["report", str(runs[0]), str(train), str(runs[1]), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    curves = tmp_path / "report-train-tiny.html"
    assert f"report: {out}" in printed and f"report: {curves}" in printed
    assert "<details class=\"traj\"" in out.read_text(encoding="utf-8") and "<polyline" in curves.read_text(encoding="utf-8")


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="chromium is not on PATH (apt-get install chromium) - headless rendering check skipped")
def test_report_renders_in_headless_chromium(report: tuple[Path, Page], tmp_path: Path) -> None:
    out, _ = report
    png = tmp_path / "report.png"
    proc = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--screenshot={png}", "--window-size=1280,2000", out.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert png.exists(), proc.stderr[-2000:]
    assert _png_size(png) == (1280, 2000)
    assert png.stat().st_size > 30_000  # a blank page compresses to a few KB; tables and charts do not
