"""Trajectories and eval records stay writable whatever a reply holds (regression: lone surrogates).

``printf 'A0\\n\\xff\\nA0\\n' | harness-g menu GRAPH_DIR QUESTION --save t.jsonl`` read the invalid byte as the
surrogate escape '\\udcff'; writing the trajectory raised UnicodeEncodeError and the episode was lost, and
``harness-g eval`` (records.jsonl) shared the code. Now a step's ``reply`` is written with U+FFFD for each lone
surrogate plus ``reply_escaped`` (exact, only for such replies), other strings get ``\\uXXXX`` escapes, the
file is valid UTF-8 JSONL and loading gives back the exact replies.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.trajectory import StepRecord, Trajectory, decode_reply, json_line, load_jsonl, save_jsonl
from harness_g.agent.eval.run import RECORDS, EvalConfig, read_records, run_eval
from harness_g.agent.policies.base import Policy

BAD_REPLIES = ["A0\udcff", "\udcff", "\ud800", "x\udfff y", "\ud83d\ude00", "\udced\udca0\udc80", "é\\u00e9\udc80\n"]


def _trajectory(replies: list[str], **extra) -> Trajectory:
    traj = Trajectory(question_id="q", question=extra.get("question", "Who?"), answers=["a"], graph_version="v",
                      env_config={}, initial_visible=["p:0"], answer=extra.get("answer", "a"), terminated_by="ANSWER")
    for i, reply in enumerate(replies):
        traj.steps.append(StepRecord(turn=i, menu=[{"id": "A0", "type": "ANSWER", "targets": [], "label": "A0 = ANSWER"}],
                                     reply=reply, chosen=None, action_type=None, error="no action id found"))
    return traj


def _valid_utf8_jsonl(path: Path) -> list[dict]:
    raw = path.read_bytes()
    text = raw.decode("utf-8")  # strict: raises on anything that is not UTF-8
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_save_and_load_trajectory_with_lone_surrogates(tmp_path: Path) -> None:
    replies = BAD_REPLIES + ["A3", "plain é 😀"]
    traj = _trajectory(replies, question="Who\udcfe?", answer="x\ud800y")
    path = tmp_path / "t.jsonl"
    save_jsonl(path, [traj])  # raised UnicodeEncodeError before the fix
    save_jsonl(path, [traj], append=True)
    [obj, _] = _valid_utf8_jsonl(path)
    for step, reply in zip(obj["steps"], replies):
        step_reply = step["reply"]
        assert step_reply.encode("utf-8")  # clean text for any reader
        if any(0xD800 <= ord(c) <= 0xDFFF for c in reply):  # held lone surrogates
            assert "\ufffd" in step_reply and step_reply.count("\ufffd") == sum(0xD800 <= ord(c) <= 0xDFFF for c in reply)
            assert step["reply_escaped"].isascii() and decode_reply(step) == reply
        else:
            assert step_reply == reply and "reply_escaped" not in step
    loaded = list(load_jsonl(path))
    assert len(loaded) == 2
    for t in loaded:
        assert [s.reply for s in t.steps] == replies  # exact, surrogates included
        assert t.question == "Who\udcfe?" and t.answer == "x\ud800y"
        assert t.to_json() == traj.to_json()
    # the bytes piped into `harness-g menu` come back from the recovered reply
    assert loaded[0].steps[0].reply.encode("utf-8", "surrogateescape") == b"A0\xff"


def test_json_line_keeps_clean_text_readable() -> None:
    assert json_line({"a": "é 😀"}) == '{"a": "é 😀"}'
    line = json_line({"a\udcff": ["\udcff", "é"]})
    assert line == '{"a\\udcff": ["\\udcff", "é"]}' and line.encode("utf-8")
    assert json.loads(line) == {"a\udcff": ["\udcff", "é"]}


class SurrogatePolicy(Policy):
    """Replies with lone surrogates (as a model server's JSON or a raw terminal can), then answers with one."""

    name = "surrogates"

    def act(self, observation) -> str:
        return BAD_REPLIES[observation.turn % len(BAD_REPLIES)]

    def answer(self, question, evidence, observation) -> str:
        return "Paris\udcff"


def test_eval_records_with_lone_surrogates(falkordb_hotpot_view, hotpot_questions, tmp_path: Path) -> None:
    out = tmp_path / "run"
    cfg = EnvConfig(max_turns=3)
    summary = run_eval(falkordb_hotpot_view, SurrogatePolicy(), hotpot_questions, out, env_config=cfg,
                       config=EvalConfig(limit=1), progress=False)
    assert summary["questions"] == 1 and summary["errors"] == 0
    [rec] = _valid_utf8_jsonl(out / RECORDS)
    assert rec["prediction"] == "Paris\udcff"
    steps = rec["trajectory"]["steps"]
    assert [decode_reply(s) for s in steps] == BAD_REPLIES[:3]
    assert all("\ufffd" in s["reply"] and s["reply"].encode("utf-8") for s in steps)
    assert [s.reply for s in Trajectory.from_json(rec["trajectory"]).steps] == BAD_REPLIES[:3]
    # resuming rewrites the finished records (json.loads gave back their surrogates) and adds one
    summary = run_eval(falkordb_hotpot_view, SurrogatePolicy(), hotpot_questions, out, env_config=cfg,
                       config=EvalConfig(limit=2), progress=False)
    assert summary["questions"] == 2 and summary["errors"] == 0
    records = _valid_utf8_jsonl(out / RECORDS)
    assert [r["id"] for r in records] == [q.id for q in hotpot_questions[:2]]
    assert read_records(out / RECORDS)[hotpot_questions[0].id]["prediction"] == "Paris\udcff"


@pytest.mark.parametrize("locale_env", [{"LC_ALL": "C", "LANG": "C"}, {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"},
                                        {"PYTHONIOENCODING": "utf-8"}], ids=["C", "C.UTF-8", "strict-utf8"])
def test_menu_cli_saves_a_reply_with_an_invalid_byte(hotpot_graph_dir, falkordb_hotpot_view, hotpot_questions,
                                                     tmp_path: Path, locale_env: dict) -> None:
    """The attack as given: ``printf 'A0\\n\\xff\\nquit\\nParis\\xff\\n' | harness-g menu GRAPH_DIR QUESTION --save t.jsonl``.

    A person's line that is not an action id (here one undecodable byte) is explained and asked again without
    spending a turn (agent/policies/human.py), so the byte reaches the saved trajectory through the free-text answer,
    which is kept exactly and saved recoverably."""
    save = tmp_path / "t.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LANG", "LC_CTYPE", "PYTHONIOENCODING", "PYTHONUTF8")}
    env.update(locale_env)
    proc = subprocess.run([sys.executable, "-m", "harness_g", "menu", str(hotpot_graph_dir), hotpot_questions[0].question,
                           "--max-turns", "4", "--save", str(save)],
                          input=b"A0\n\xff\nquit\nParis\xff\n", capture_output=True, timeout=300, env=env)
    stderr = proc.stderr.decode("utf-8", "replace")
    stdout = proc.stdout.decode("utf-8", "replace")
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert f"trajectory appended to {save}" in stdout and "Not an action" in stdout  # the byte line was explained
    [obj] = _valid_utf8_jsonl(save)
    [traj] = list(load_jsonl(save))
    assert [s.reply for s in traj.steps][0] == "A0" and traj.steps[0].chosen == "A0"
    assert traj.turns == 2 and traj.invalid_turns == 0 and traj.terminated_by == "ANSWER"  # the byte line cost no turn
    assert traj.answer == "Paris\udcff" and traj.answer.encode("utf-8", "surrogateescape") == b"Paris\xff"
