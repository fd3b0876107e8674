"""G-E judge (paper appendix "Evaluation Details": seven 0–10 dimensions, G-E = 10/7 · Σ).

The judge talks to an OpenAI-compatible chat endpoint. A hosted judge model (GPT-4o-mini in the paper)
cannot be reached from this test environment, so every test here starts a tiny local HTTP server that
stands in for it and returns fixed replies: valid score JSON, fenced JSON, garbage text, a non-JSON body,
or nothing at all (a closed port). What is tested is our side: the request, the parsing, the G-E
arithmetic, and that failures are counted without losing any eval record.
"""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from harness_g.agent.evaluate import EvalConfig, run_eval, summarize
from harness_g.agent.judge import DIMENSIONS, Judge, JudgeError, generation_evaluation, make_judge, needs_judging, parse_scores
from harness_g.agent.policies import make_policy

SCORES = {"comprehensiveness": 7, "knowledgeability": 8, "correctness": 9, "relevance": 6, "diversity": 5,
          "logical_coherence": 10, "factuality": 7}  # Σ = 52 -> G-E = 10/7 · 52 = 74.2857…
GE = 10 / 7 * 52


class FakeJudge:
    """A local stand-in for a hosted judge: ``mode`` picks the reply; requests are kept for inspection."""

    def __init__(self) -> None:
        self.mode = "scores"
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                owner.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if owner.mode == "not-json":
                    payload = b"<html>bad gateway</html>"
                else:
                    content = {"scores": json.dumps(SCORES),
                               "fenced": "Here you go:\n```json\n" + json.dumps({k.replace("_", " "): v for k, v in SCORES.items()}) + "\n```",
                               "garbage": "The answer is quite good, I would say 8 out of 10 overall.",
                               "out-of-range": json.dumps(SCORES | {"diversity": 14}),
                               }[owner.mode]
                    payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content},
                                                       "finish_reason": "stop"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeJudge]:
    server = FakeJudge()
    yield server
    server.close()


@pytest.fixture
def judge(fake: FakeJudge) -> Judge:
    fake.mode = "scores"
    fake.requests.clear()
    return Judge(fake.base_url, model="judge-test", api_key="k-test", timeout_s=5, retries=0)


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # nothing listens here any more


def record(qid: str = "q1") -> dict[str, Any]:
    return {"id": qid, "question": "Who directed Jaws?", "answers": ["Steven Spielberg"], "prediction": "Spielberg",
            "metrics": {"em": 0.0, "f1": 0.67}, "trajectory": {"committed": [], "steps": []}}


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


# -- against the local stand-in server --------------------------------------------------------------
def test_judge_scores_a_record(judge: Judge, fake: FakeJudge) -> None:
    rec = judge.judge_record(record(), ["Jaws: Jaws is a 1975 film directed by Steven Spielberg."])
    assert rec["judge"]["scores"] == {k: float(v) for k, v in SCORES.items()}
    assert rec["judge"]["ge"] == pytest.approx(GE, abs=1e-3) and rec["judge"]["model"] == "judge-test"
    assert rec["metrics"]["ge"] == pytest.approx(52 / 70)  # stored in [0, 1] like every metric
    assert rec["metrics"]["f1"] == 0.67  # nothing else touched
    req = fake.requests[-1]
    assert req["path"] == "/v1/chat/completions" and req["body"]["model"] == "judge-test"
    assert req["auth"] == "Bearer k-test"
    prompt = req["body"]["messages"][-1]["content"]
    for text in ("Who directed Jaws?", "Steven Spielberg", "Spielberg", "directed by Steven Spielberg", *DIMENSIONS):
        assert text in prompt
    assert not needs_judging(rec)


def test_fenced_reply_with_spaced_keys(judge: Judge, fake: FakeJudge) -> None:
    fake.mode = "fenced"
    result = judge.score("q", "a", ["a"])
    assert result.ok and result.ge == pytest.approx(GE)


@pytest.mark.parametrize("mode", ["garbage", "not-json", "out-of-range"])
def test_bad_replies_are_counted_failures(judge: Judge, fake: FakeJudge, mode: str) -> None:
    fake.mode = mode
    rec = judge.judge_record(record())
    assert "error" in rec["judge"] and "scores" not in rec["judge"]
    assert rec["metrics"]["ge"] is None and rec["prediction"] == "Spielberg"  # the record itself survives
    assert judge.stats["failures"] == 1 and needs_judging(rec)


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


# -- inside run_eval --------------------------------------------------------------------------------
def test_run_eval_with_judge_never_loses_results(hotpot_view, hotpot_questions, fake: FakeJudge, tmp_path: Path) -> None:
    """Garbage judge -> every record kept, failures counted; resuming with a working judge re-judges them."""
    fake.mode = "garbage"
    out = tmp_path / "run"
    cfg = EvalConfig(interface="naive", limit=3)
    s = run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, out, config=cfg, progress=False,
                 judge=Judge(fake.base_url, model="judge-test", retries=0))
    assert s["scored"] == 3 and s["ge_failures"] == 3 and s["ge"] is None
    recs = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert len(recs) == 3 and all("error" in r["judge"] and "prediction" in r for r in recs)

    fake.mode = "scores"
    s = run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, out, config=cfg, progress=False,
                 judge=Judge(fake.base_url, model="judge-test", retries=0))
    assert s["ge_failures"] == 0 and s["ge"] == pytest.approx(round(GE, 2))
    recs = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert len(recs) == 3 and all(r["judge"]["scores"] == {k: float(v) for k, v in SCORES.items()} for r in recs)
    assert json.loads((out / "config.json").read_text())["judge_model"] == "judge-test"

    down = run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, tmp_path / "down", config=cfg, progress=False,
                    judge=Judge(closed_port_url(), retries=0, timeout_s=2))
    assert down["scored"] == 3 and down["ge_failures"] == 3


def test_parse_scores_is_linear_on_unbalanced_braces() -> None:
    """A judge reply of many '{' and no '}' made the old `\\{.*\\}` search quadratic (16k braces: 0.4 s)."""
    import time

    started = time.perf_counter()
    with pytest.raises(JudgeError):
        parse_scores("{" * 200_000)
    assert time.perf_counter() - started < 0.5
