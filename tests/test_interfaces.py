"""The four knowledge interfaces (menu, free-query, rag, naive) on the REAL HotpotQA test graph.

The free-query arm follows the paper's "Transition-matched interface comparison": the policy sees the
evidence state without ids, writes text, a frozen resolver maps it onto the menu's feasible targets by
cosine under the shared encoder, and the same MenuEnv transition runs. Everything here uses the
LLM-free heuristic policy.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness_g.agent.actions import Action, ActionType
from harness_g.agent.env import MenuEnv
from harness_g.agent.evaluate import EvalConfig, run_eval
from harness_g.agent.free_query import (
    ANSWER_WITH_PREFIX,
    FreeQueryEnv,
    HeuristicFreeQueryPolicy,
    Resolver,
    free_query_instruction,
    free_query_policy,
    target_text,
)
from harness_g.agent.graph_view import EntityInfo, GraphView
from harness_g.agent.interfaces import INTERFACES, RagInterface, make_interface
from harness_g.agent.menu import Menu
from harness_g.agent.policies import make_policy
from harness_g.agent.runner import run_episode
from harness_g.errors import ConfigError, HarnessError


@pytest.fixture
def fq_env(hotpot_view: GraphView, hotpot_questions) -> FreeQueryEnv:
    env = FreeQueryEnv(MenuEnv(hotpot_view))
    env.reset(hotpot_questions[0])
    return env


# -- resolver ---------------------------------------------------------------------------------------
def test_free_observation_hides_every_executable_id(fq_env: FreeQueryEnv) -> None:
    obs = fq_env.observation()
    assert "Question:" in obs and "Visible sentences:" in obs and free_query_instruction() in obs
    assert not re.search(r"\bA\d+\b", obs), "action ids leaked into the free-query observation"
    assert not re.search(r"^\s*[SE]\d+ \|", obs, re.M), "sentence/entity labels leaked"
    assert "LOOKUP" not in obs and "SELECT" not in obs
    for _, text in fq_env.visible_texts():  # ...but the same evidence state is shown
        assert text in obs
    assert not hasattr(fq_env, "menu")


def test_resolver_is_deterministic(fq_env: FreeQueryEnv, hotpot_view: GraphView) -> None:
    menu = fq_env.inner.menu
    query = fq_env.state.question.question
    first = fq_env.resolve(query)
    again = fq_env.resolve(query)
    fresh = Resolver(hotpot_view).resolve(query, menu)
    assert first == again == fresh
    assert first.ranked[0] == (first.action_id, first.score)
    assert sorted(a for a, _ in first.ranked) == sorted(a.id for a in menu.actions)  # every feasible target is ranked
    scores = [s for _, s in first.ranked]
    assert scores == sorted(scores, reverse=True)


def test_query_equal_to_a_visible_sentence_resolves_to_select_of_it(fq_env: FreeQueryEnv) -> None:
    menu = fq_env.inner.menu
    assert menu.sentences
    for s in menu.sentences:
        res = fq_env.resolve(s.text)
        assert (res.type, res.targets) == ("SELECT", (s.id,)), s.text
        assert res.score == pytest.approx(1.0, abs=1e-5)
    # the "answer with: " form of the same text is ANSWER_WITH of that sentence
    s0 = menu.sentences[0]
    res = fq_env.resolve(ANSWER_WITH_PREFIX + s0.text)
    assert (res.type, res.targets) == ("ANSWER_WITH", (s0.id,))


@pytest.mark.parametrize("query", ["answer", "ANSWER", "  Answer "])
def test_answer_resolves_to_answer(fq_env: FreeQueryEnv, query: str) -> None:
    res = fq_env.resolve(query)
    assert res.type == "ANSWER" and res.targets == ()


def test_entity_name_resolves_to_its_lookup(fq_env: FreeQueryEnv) -> None:
    menu = fq_env.inner.menu
    assert menu.entities
    e = menu.entities[0]
    res = fq_env.resolve(e.surface)
    assert res.type == "LOOKUP" and res.targets == (e.id,)


def test_ties_are_broken_by_action_number(hotpot_view: GraphView) -> None:
    """Two targets with the same textual representation score the same: the lower action number wins."""
    a = EntityInfo("ent:a", "paris", "Paris", "GPE", True, 3)
    b = EntityInfo("ent:b", "paris", "Paris", "GPE", True, 1)
    actions = [Action("A0", ActionType.LOOKUP, (b.id,)), Action("A1", ActionType.LOOKUP, (a.id,)), Action("A2", ActionType.ANSWER)]
    menu = Menu([], [b, a], ["frontier", "frontier"], actions, {a.id: ("x",), b.id: ("y",)})
    assert [target_text(x, menu) for x in actions] == ["Paris", "Paris", "answer"]
    res = Resolver(hotpot_view).resolve("the city of Paris", menu)
    assert res.action_id == "A0" and res.ranked[0][1] == res.ranked[1][1]
    # swapping the ids swaps the winner: the tie rule is the action number, not the entity id
    actions2 = [Action("A0", ActionType.LOOKUP, (a.id,)), Action("A1", ActionType.LOOKUP, (b.id,)), Action("A2", ActionType.ANSWER)]
    menu2 = Menu([], [a, b], ["frontier", "frontier"], actions2, {a.id: ("x",), b.id: ("y",)})
    assert Resolver(hotpot_view).resolve("the city of Paris", menu2).targets == (a.id,)


# -- transitions ------------------------------------------------------------------------------------
def test_free_query_transitions_equal_the_menu_envs(hotpot_view: GraphView, hotpot_questions) -> None:
    """Replaying the resolved action ids on a plain MenuEnv reproduces every menu, C_t and U_t."""
    item = hotpot_questions[1]
    fenv = FreeQueryEnv(MenuEnv(hotpot_view))
    obs = fenv.reset(item)  # drive the arm with a script that exercises every action type
    queries = []
    while not fenv.done:
        menu = fenv.inner.menu
        turn = fenv.state.turn
        if turn == 0 and menu.sentences:
            q = menu.sentences[0].text  # SELECT
        elif turn == 1 and menu.entities:
            q = menu.entities[0].surface  # LOOKUP
        elif turn == 2 and menu.sentences:
            q = ANSWER_WITH_PREFIX + menu.sentences[0].text  # ANSWER_WITH
        else:
            q = "answer"
        queries.append(q)
        result = fenv.step(q)
        assert result.valid and "resolution" in result.info
        obs = result.observation
    assert obs == ""
    ftraj = fenv.finish("x")
    resolved = [s.chosen for s in ftraj.steps]
    assert [s.reply for s in ftraj.steps] == queries  # the free text is what the trajectory records
    assert [x["query"] for x in ftraj.meta["free_query"]] == queries == ftraj.meta["queries"]
    assert [x["resolved"] for x in ftraj.meta["free_query"]] == resolved
    assert {s.action_type for s in ftraj.steps} >= {"SELECT", "ANSWER_WITH"}

    menu_env = MenuEnv(hotpot_view)
    menu_env.reset(item)
    for step, action_id in zip(ftraj.steps, resolved):
        assert menu_env.menu.to_json() == step.menu  # the same feasible targets were offered
        menu_env.step(action_id)
        mstep = menu_env.trajectory.steps[-1]
        assert (mstep.chosen, mstep.action_type, mstep.targets) == (step.chosen, step.action_type, step.targets)
        assert mstep.committed_after == step.committed_after and mstep.visible_after == step.visible_after
        assert mstep.introduced == step.introduced
    assert menu_env.done and menu_env.state.committed == ftraj.committed
    assert menu_env.trajectory.terminated_by == ftraj.terminated_by


def test_heuristic_free_query_policy_runs_and_answers(hotpot_view: GraphView, hotpot_questions) -> None:
    policy = free_query_policy(make_policy("heuristic"))
    assert isinstance(policy, HeuristicFreeQueryPolicy)
    fenv = FreeQueryEnv(MenuEnv(hotpot_view))
    traj = run_episode(fenv, policy, hotpot_questions[2])  # type: ignore[arg-type]
    assert 1 <= traj.turns <= fenv.config.max_turns and traj.invalid_turns == 0
    assert traj.meta["interface"] == "free-query"
    assert traj.steps[0].reply == hotpot_questions[2].question  # turn 1 writes the question itself
    assert all(not re.fullmatch(r"A\d+", s.reply) for s in traj.steps)
    assert isinstance(traj.answer, str)
    assert [x["query"] for x in traj.meta["free_query"]] == [s.reply for s in traj.steps] == traj.meta["queries"]


def test_free_query_step_after_end_raises(fq_env: FreeQueryEnv) -> None:
    fq_env.step("ANSWER")
    assert fq_env.done
    with pytest.raises(HarnessError):
        fq_env.step("anything")


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


def test_cli_passes_llm_flags_to_llm_policies_only(monkeypatch) -> None:
    import argparse

    from harness_g.agent import cli as agent_cli
    from harness_g.agent.policies import POLICIES

    seen: dict[str, dict] = {}

    def fake_factory(name: str):
        def factory(**kwargs):
            seen[name] = kwargs
            return object()

        return factory

    for name in ("openai", "transformers", "heuristic"):
        monkeypatch.setitem(POLICIES, name, fake_factory(name))
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
    from harness_g.agent.free_query import FREE_QUERY_MAX_NEW_TOKENS, free_query_header
    from harness_g.agent.llm.backends import Generation
    from harness_g.agent.llm.policy import LLMPolicy
    from harness_g.agent.prompts import policy_instruction

    class Scripted:
        name = "scripted"

        def __init__(self) -> None:
            self.calls: list[tuple[list, int]] = []

        def generate(self, batch, *, max_new_tokens, temperature=0.0, top_p=1.0, seed=None, stop=None):
            self.calls.append((list(batch), max_new_tokens))
            return [Generation("ANSWER", 10, 1, 0.0) for _ in batch]

    backend = Scripted()
    menu_policy = LLMPolicy(backend)
    fq = free_query_policy(menu_policy)
    assert fq is not menu_policy and fq.backend is backend and menu_policy.header.startswith(policy_instruction())
    traj = make_interface("free-query", hotpot_view, menu_policy).run(hotpot_questions[0])
    act_prompt, act_tokens = backend.calls[0]
    first = act_prompt[0][0]["content"]
    assert first.startswith(free_query_header()) and policy_instruction() not in first
    assert not re.search(r"\bA\d+\b", first) and act_tokens >= FREE_QUERY_MAX_NEW_TOKENS
    assert traj.steps[0].reply == "ANSWER" and traj.steps[0].action_type == "ANSWER" and traj.turns == 1
