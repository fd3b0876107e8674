"""The four knowledge interfaces (menu, free-query, rag, naive) on the REAL HotpotQA test graph.

The free-query arm follows the paper's "Transition-matched interface comparison": the policy sees the
evidence state without executable ids, commits and answers by sentence handle as the menu arm does, and
writes free text for retrieval, which a frozen resolver maps onto the menu's LOOKUP targets by cosine
under the shared encoder; the same MenuEnv transition runs (tests/e2e/test_free_query_arm.py). Everything
here uses the LLM-free heuristic policy.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.eval.interfaces import INTERFACES, RagInterface, make_interface
from harness_g.agent.eval.run import EvalConfig, run_eval
from harness_g.agent.policies import make_policy
from harness_g.errors import ConfigError, HarnessError


# The free-query arm's own tests (resolver, moves by handle, transitions, policies, rollouts) are in
# tests/e2e/test_free_query_arm.py.


# -- rag / naive ------------------------------------------------------------------------------------
def test_rag_retrieves_three_chunks(hotpot_view: GraphView, hotpot_questions) -> None:
    rag = RagInterface(hotpot_view, make_policy("heuristic"))
    item = hotpot_questions[0]
    chunks = rag.retrieve(item.question)
    assert len(chunks) == 3
    assert len({c["paragraph_id"] for c in chunks}) == 3
    assert [c["score"] for c in chunks] == sorted((c["score"] for c in chunks), reverse=True)
    for c in chunks:  # a paragraph scores the max cosine of its sentences
        assert c["sentence_ids"] and all(s.rsplit(":", 1)[0] == c["paragraph_id"] for s in c["sentence_ids"])
        best = hotpot_view.rank(hotpot_view.encode([item.question])[0], c["sentence_ids"])[0][1]
        assert c["score"] == pytest.approx(best, abs=1e-5)
    assert rag.retrieve(item.question) == chunks  # deterministic
    traj = rag.run(item)
    assert traj.committed == [s for c in chunks for s in c["sentence_ids"]]  # retrieved evidence is C_T
    assert traj.steps == [] and traj.turns == 0 and traj.terminated_by == "rag"
    assert traj.meta["retrieved"] == chunks and traj.meta["interface"] == "rag"
    mean = RagInterface(hotpot_view, make_policy("heuristic"), pool="mean").retrieve(item.question)
    assert len(mean) == 3
    with pytest.raises(ConfigError):
        RagInterface(hotpot_view, make_policy("heuristic"), pool="median")


def test_naive_has_no_evidence(hotpot_view: GraphView, hotpot_questions) -> None:
    traj = make_interface("naive", hotpot_view, make_policy("heuristic")).run(hotpot_questions[0])
    assert traj.committed == [] and traj.steps == [] and traj.turns == 0
    assert traj.meta["interface"] == "naive" and isinstance(traj.answer, str)


def test_unknown_interface_is_a_config_error(hotpot_view: GraphView) -> None:
    with pytest.raises(ConfigError, match="free-query"):
        make_interface("search-r1", hotpot_view, make_policy("heuristic"))


# -- run_eval ---------------------------------------------------------------------------------------
RECORD_KEYS = {"id", "question", "answers", "prediction", "metrics", "trajectory", "dataset", "interface", "gold", "seconds"}
METRIC_KEYS = {"em", "f1", "rs", "evidence_recall", "evidence_precision", "answer_in_evidence", "turns", "invalid_turns", "seconds"}


@pytest.mark.parametrize("interface", INTERFACES)
def test_every_interface_runs_through_run_eval(hotpot_view: GraphView, hotpot_questions, tmp_path: Path, interface: str) -> None:
    out = tmp_path / interface
    n = 1 if interface in ("menu", "free-query") else 2  # episodes cost encoder calls; keep the suite fast
    summary = run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, out,
                       config=EvalConfig(interface=interface, limit=n), progress=False)
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines() if line.strip()]
    assert len(records) == n and summary["questions"] == n and summary["errors"] == 0
    assert summary["interface"] == interface and summary["dataset"] == "hotpotqa"
    assert json.loads((out / "summary.json").read_text())["interface"] == interface
    assert json.loads((out / "config.json").read_text())["eval"]["interface"] == interface
    for rec in records:
        assert set(rec) == RECORD_KEYS  # the same record shape for every interface
        assert set(rec["metrics"]) == METRIC_KEYS
        assert rec["interface"] == interface and rec["trajectory"]["meta"]["interface"] == interface
        assert rec["gold"]["sentence_ids"]
        committed = rec["trajectory"]["committed"]
        if interface == "naive":
            assert committed == [] and rec["metrics"]["evidence_recall"] == 0.0
        elif interface == "rag":
            assert len(rec["trajectory"]["meta"]["retrieved"]) == 3 and committed
            assert rec["metrics"]["evidence_recall"] is not None and rec["metrics"]["rs"] is not None
        else:
            assert rec["trajectory"]["steps"] and rec["metrics"]["turns"] >= 1
    # a run directory belongs to one interface
    other = "naive" if interface != "naive" else "rag"
    with pytest.raises(HarnessError, match="use another --out"):
        run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, out, config=EvalConfig(interface=other, limit=n),
                 progress=False)


# -- CLI --------------------------------------------------------------------------------------------
def test_cli_eval_and_ask_take_an_interface(hotpot_view: GraphView, hotpot_graph_dir: Path, hotpot_questions, tmp_path: Path,
                                            capsys) -> None:
    from harness_g.cli import main

    out = tmp_path / "cli-naive"
    assert main(["eval", str(hotpot_graph_dir), "--interface", "naive", "--limit", "1", "--out", str(out), "-q"]) == 0
    assert json.loads((out / "summary.json").read_text())["interface"] == "naive"
    capsys.readouterr()
    assert main(["ask", str(hotpot_graph_dir), hotpot_questions[0].question, "--interface", "rag", "--json"]) == 0
    traj = json.loads(capsys.readouterr().out)
    assert traj["meta"]["interface"] == "rag" and len(traj["meta"]["retrieved"]) == 3


def test_cli_passes_llm_flags_to_llm_policies_only(request) -> None:
    import argparse

    from harness_g.agent import cli as agent_cli
    from harness_g.agent.policies import POLICIES, is_llm_policy

    seen: dict[str, dict] = {}

    def fake_factory(name: str):
        def factory(**kwargs):
            seen[name] = kwargs
            return object()

        factory.llm = is_llm_policy(POLICIES.get(name))  # a stand-in keeps what it stands for: an LLM policy or not
        return factory

    for name in ("openai", "transformers", "heuristic"):
        previous = POLICIES.replace(name, fake_factory(name))
        request.addfinalizer(lambda name=name, previous=previous: POLICIES.replace(name, previous))
    ns = dict(model="smollm2", base_url=None, temperature=0.7, seed=3, max_new_tokens=None)
    agent_cli._make_policy(argparse.Namespace(policy="transformers", **ns))
    assert seen["transformers"] == {"model": "smollm2", "temperature": 0.7, "seed": 3}
    agent_cli._make_policy(argparse.Namespace(policy="openai", **(ns | {"base_url": "http://127.0.0.1:8000/v1"})))
    assert seen["openai"]["base_url"] == "http://127.0.0.1:8000/v1" and seen["openai"]["model"] == "smollm2"
    agent_cli._make_policy(argparse.Namespace(policy="heuristic", **ns))
    assert seen["heuristic"] == {}  # the heuristic takes no LLM flags
    with pytest.raises(ConfigError, match="--base-url"):
        agent_cli._make_policy(argparse.Namespace(policy="transformers", **(ns | {"base_url": "http://x/v1"})))


def test_llm_policy_gets_the_free_query_prompt(hotpot_view: GraphView, hotpot_questions) -> None:
    """An LLMPolicy in the free-query arm: same backend, free-query instruction instead of the menu's ids."""
    from harness_g.agent.llm.backends import Generation
    from harness_g.agent.llm.prompts import free_query_header
    from harness_g.agent.llm.prompts import policy_instruction
    from harness_g.agent.policies.llm import FREE_QUERY_MAX_NEW_TOKENS
    from harness_g.agent.policies.llm import LLMPolicy

    class Scripted:
        name = "scripted"

        def __init__(self) -> None:
            self.calls: list[tuple[list, int]] = []

        def generate(self, batch, *, max_new_tokens, temperature=0.0, top_p=1.0, seed=None, stop=None):
            self.calls.append((list(batch), max_new_tokens))
            return [Generation("ANSWER", 10, 1, 0.0) for _ in batch]

    backend = Scripted()
    menu_policy = LLMPolicy(backend)
    fq = menu_policy.for_interface("free-query")
    assert fq is not menu_policy and fq.backend is backend and menu_policy.header.startswith(policy_instruction())
    traj = make_interface("free-query", hotpot_view, menu_policy).run(hotpot_questions[0])
    act_prompt, act_tokens = backend.calls[0]
    first = act_prompt[0][0]["content"]
    assert first.startswith(free_query_header()) and policy_instruction() not in first
    assert not re.search(r"\bA\d+\b", first) and act_tokens >= FREE_QUERY_MAX_NEW_TOKENS
    assert traj.steps[0].reply == "ANSWER" and traj.steps[0].action_type == "ANSWER" and traj.turns == 1
