"""Numbers that do not mislead (issue 32 item 6), on REAL eval runs of the heuristic policy on the HotpotQA test
graph (embedded FalkorDB: what is measured is the run's bookkeeping, not the store):

- ``mean_seconds`` covers everything a run did per question (the episode, scoring, the reachability search), and
  the episode and the reachability search are shown apart (``mean_episode_seconds``, ``mean_reachability_seconds``);
- the HTML report of 600 questions stays a few MB: trajectory bodies are stored compressed and decoded when a
  question is opened, in headless Chromium exactly the HTML ``--expand`` writes;
- the README's account of how the LLM-free policies answer is the code's.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.paths import REPO_ROOT

from harness_g.agent.eval.report import build_report
from harness_g.agent.eval.report.html import inline_bodies
from harness_g.agent.eval.run import EvalConfig, run_eval
from harness_g.agent.policies import make_policy

#: the report of REPORT_RECORDS questions must stay under this many bytes
REPORT_RECORDS, REPORT_LIMIT = 600, 4_000_000


@pytest.fixture(scope="module")
def reach_run(falkordb_hotpot_view, hotpot_questions, tmp_path_factory) -> Path:
    """The 6 test questions played by the heuristic policy, with the reachability search."""
    out = tmp_path_factory.mktemp("eval-numbers") / "heuristic"
    run_eval(falkordb_hotpot_view, make_policy("heuristic"), hotpot_questions, out,
             config=EvalConfig(reachability=True, reach_budget=60), progress=False)
    return out


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "records.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def test_mean_seconds_covers_the_whole_question_and_shows_reachability_apart(reach_run: Path) -> None:
    records, summary = _records(reach_run), json.loads((reach_run / "summary.json").read_text())
    for r in records:
        parts = r["metrics"]["seconds"] + r["timing"]["reachability"]
        assert r["timing"]["reachability"] > 0 and r["seconds"] >= parts, r["id"]  # the wall time holds both
    mean = lambda values: round(sum(values) / len(values), 4)  # noqa: E731
    assert summary["mean_seconds"] == mean([r["seconds"] for r in records])
    assert summary["mean_episode_seconds"] == mean([r["metrics"]["seconds"] for r in records])
    assert summary["mean_reachability_seconds"] == mean([r["timing"]["reachability"] for r in records])
    assert summary["mean_seconds"] >= summary["mean_episode_seconds"] + summary["mean_reachability_seconds"] - 1e-3


def _copies(run: Path, out: Path, n: int) -> Path:
    """``run`` with its records repeated to ``n`` questions (ids and question texts made distinct)."""
    out.mkdir()
    for name in ("config.json", "summary.json"):
        shutil.copy(run / name, out / name)
    base = _records(run)
    with open(out / "records.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            r = dict(base[i % len(base)], id=f"{base[i % len(base)]['id']}-{i}")
            r["question"] = f"{r['question']} (copy {i})"
            fh.write(json.dumps(r) + "\n")
    return out


def test_a_report_of_600_questions_stays_a_few_mb(reach_run: Path, tmp_path: Path) -> None:
    run = _copies(reach_run, tmp_path / "run600", REPORT_RECORDS)
    page = build_report([run], tmp_path / "report.html").read_text(encoding="utf-8")
    assert len(page.encode("utf-8")) < REPORT_LIMIT, len(page)
    assert page.count('<details class="traj"') == REPORT_RECORDS
    assert page.count('class="tbody" data-z="') == REPORT_RECORDS and 'class="step"' not in page  # bodies on demand
    expanded = build_report([run], tmp_path / "expanded.html", expand=True).read_text(encoding="utf-8")
    steps = sum(len(r["trajectory"]["steps"]) for r in _records(run))
    assert inline_bodies(page).count('<div class="step"') == expanded.count('<div class="step"') == steps
    assert _bodies(inline_bodies(page)) == _bodies(expanded)  # decoded, the same HTML --expand writes


def _bodies(page: str) -> list[str]:
    return re.findall(r'<div class="tbody"[^>]*>(.*?)</div></details>', page, flags=re.S)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not on PATH (apt-get install chromium)")
def test_chromium_decodes_a_trajectory_when_it_is_opened(reach_run: Path, tmp_path: Path) -> None:
    """The page's own script in headless Chromium: ``#expand`` opens every question; each body is decoded into the
    HTML that ``--expand`` writes."""
    out = build_report([reach_run], tmp_path / "report.html")
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                          "--dump-dom", out.resolve().as_uri() + "#expand"], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('data-state="loaded"') == len(_records(reach_run)), dom.stdout[-2000:]
    expanded = build_report([reach_run], tmp_path / "expanded.html", expand=True).read_text(encoding="utf-8")
    opened = re.findall(r'<div class="tbody" data-state="loaded">(.*?)</div></details>', dom.stdout, flags=re.S)
    assert [b.count('<div class="step"') for b in opened] == [b.count('<div class="step"') for b in _bodies(expanded)]
    assert sum(b.count('class="chip') for b in opened) == sum(b.count('class="chip') for b in _bodies(expanded)) > 0


def test_the_readme_says_how_the_llm_free_policies_answer(falkordb_hotpot_view, hotpot_questions) -> None:
    """heuristic, lookahead and oracle all answer with the heuristic's extractive answerer, whose wh-cues the README
    lists; the README names the oracle's EM and recall under the paper preset (the default) from
    benchmarks/results/quality-paper/quality.md."""
    from harness_g.agent.policies import heuristic

    for policy in (make_policy("lookahead"), make_policy("oracle", view=falkordb_hotpot_view, questions=hotpot_questions)):
        assert type(policy._answerer) is heuristic.HeuristicPolicy, policy.name  # noqa: SLF001 - the shared answerer
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("**How the LLM-free policies answer.**"):]
    section = section[:section.index("\n\n")]
    for pattern, labels in heuristic._CUES:  # noqa: SLF001
        cue = pattern.pattern.split("(")[1].split("|")[0]
        assert f"{cue} → {'/'.join(labels)}" in section, (cue, labels)
    quality = (REPO_ROOT / "benchmarks" / "results" / "quality-paper" / "quality.md").read_text(encoding="utf-8")
    row = next(line for line in quality.splitlines() if line.startswith("| 2wiki | oracle |")).split("|")
    recall, em, aie = row[4].strip(), row[6].strip(), row[8].strip()
    assert f"recall {recall}" in section and f"EM {em}" in section and f"{aie}%" in section
