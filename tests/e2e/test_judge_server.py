"""G-E judge (paper appendix "Evaluation Details": seven 0–10 dimensions, G-E = 10/7 · Σ).

The judge talks to an OpenAI-compatible chat endpoint. A hosted judge model (GPT-4o-mini in the paper)
cannot be reached from this test environment, so every test here starts a tiny local HTTP server that
stands in for it and returns fixed replies: valid score JSON, fenced JSON, garbage text, a non-JSON body,
or nothing at all (a closed port). What is tested is our side: the request, the parsing, the G-E
arithmetic, and that failures are counted without losing any eval record. (Parsing and the G-E arithmetic
without a server: tests/unit/test_judge.py.)
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest
from helpers.judge_records import GE, SCORES, record
from helpers.ports import closed_port_url

from harness_g.agent.eval.judge import DIMENSIONS, Judge, needs_judging
from harness_g.agent.eval.run import EvalConfig, run_eval
from harness_g.agent.policies import make_policy


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
