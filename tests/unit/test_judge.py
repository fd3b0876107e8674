"""G-E judge (paper appendix "Evaluation Details": seven 0–10 dimensions, G-E = 10/7 · Σ), with no judge server:
the G-E arithmetic, parsing the judge's replies (linear time on hostile input), a closed port counted as a failure,
and the summary over judged records. The judge talking to a local stand-in server, and inside run_eval:
tests/e2e/test_judge_server.py.
"""
from __future__ import annotations

import json

import pytest
from helpers.judge_records import GE, SCORES, record
from helpers.ports import closed_port_url

from harness_g.agent.eval.judge import DIMENSIONS, Judge, JudgeError, generation_evaluation, make_judge, parse_scores
from harness_g.agent.eval.run import summarize


# -- arithmetic and parsing -------------------------------------------------------------------------
def test_ge_is_ten_sevenths_of_the_sum() -> None:
    assert generation_evaluation(SCORES) == pytest.approx(GE)
    assert generation_evaluation({d: 10 for d in DIMENSIONS}) == pytest.approx(100.0)
    assert generation_evaluation({d: 0 for d in DIMENSIONS}) == 0.0


def test_parse_scores_accepts_common_reply_shapes() -> None:
    assert parse_scores(json.dumps(SCORES)) == {k: float(v) for k, v in SCORES.items()}
    spaced = {k.replace("_", " ").title(): str(v) for k, v in SCORES.items()}  # "Logical Coherence": "10"
    assert parse_scores("```json\n" + json.dumps(spaced) + "\n```") == parse_scores(json.dumps(SCORES))
    assert parse_scores(json.dumps({"scores": {k: {"score": v, "reason": "ok"} for k, v in SCORES.items()}}))["diversity"] == 5.0
    assert parse_scores("Scores: " + json.dumps(SCORES) + " Thanks!")["factuality"] == 7.0


@pytest.mark.parametrize("reply", ["", "great answer, 9/10", json.dumps(SCORES | {"diversity": 11}),
                                   json.dumps({k: v for k, v in SCORES.items() if k != "factuality"}),
                                   json.dumps(SCORES | {"relevance": "high"}), json.dumps([1, 2, 3])])
def test_parse_scores_rejects_garbage(reply: str) -> None:
    with pytest.raises(JudgeError):
        parse_scores(reply)


def test_server_down_is_a_counted_failure() -> None:
    judge = Judge(closed_port_url(), timeout_s=2, retries=1)
    result = judge.score("q", "a", ["a"])
    assert not result.ok and result.ge is None and "judge" in (result.error or "")
    assert judge.stats == {"calls": 2, "failures": 1}  # one retry, then a counted failure


def test_summary_averages_judged_records_and_counts_failures() -> None:
    ok1, ok2, bad = record("a"), record("b"), record("c")
    ok1["metrics"]["ge"], ok1["judge"] = 52 / 70, {"scores": SCORES}
    ok2["metrics"]["ge"], ok2["judge"] = 1.0, {"scores": {d: 10 for d in DIMENSIONS}}
    bad["metrics"]["ge"], bad["judge"] = None, {"error": "judge unreachable"}
    s = summarize([ok1, ok2, bad])
    assert s["ge"] == round((GE + 100.0) / 2, 2) and s["ge_failures"] == 1
    assert "ge" not in summarize([record("z")])  # no judge configured: no G-E column


def test_make_judge_is_optional() -> None:
    assert make_judge(None) is None and make_judge("") is None
    j = make_judge("http://127.0.0.1:9/v1/chat/completions", "m")
    assert j is not None and j.url == "http://127.0.0.1:9/v1/chat/completions" and j.model == "m"


def test_parse_scores_is_linear_on_unbalanced_braces() -> None:
    """A judge reply of many '{' and no '}' made the old `\\{.*\\}` search quadratic (16k braces: 0.4 s)."""
    import time

    started = time.perf_counter()
    with pytest.raises(JudgeError):
        parse_scores("{" * 200_000)
    assert time.perf_counter() - started < 0.5
