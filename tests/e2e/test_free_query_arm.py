"""The transition-matched free-query arm (paper appendix "Transition-matched interface comparison",
harness-g.tex l.1050-1057) on the REAL HotpotQA test graph, both stores.

The arm shares SELECT / ANSWER_WITH / ANSWER with the menu arm -- by sentence handle, executed exactly --
and reaches only the *retrieval target* (LOOKUP) through a free string and a frozen resolver. Its reply grammar
(no graph) is checked in tests/unit/test_free_query_reply.py.
"""
from __future__ import annotations

import re
from typing import Any

import pytest

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.actions import Action, ActionType
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.free_query import (NO_SEARCH_NOTE, SEARCH_PREFIX, FreeQueryEnv, NoRetrievalTarget, Resolver,
                                            free_query_instruction, target_text)
from harness_g.agent.env.graph_view import EntityInfo, GraphView
from harness_g.agent.env.menu import Menu
from harness_g.agent.eval.interfaces import make_interface
from harness_g.agent.eval.runner import run_episode
from harness_g.agent.llm.prompts import free_query_header
from harness_g.agent.policies import make_policy
from harness_g.agent.policies.free_query import HeuristicFreeQueryPolicy

# StepRecord fields that make up a transition (everything but timing, the reply and the previews)
TRANSITION = ("turn", "chosen", "action_type", "targets", "error", "introduced", "produced", "consumed", "producers",
              "committed_after", "visible_after", "observed_before", "menu")


def _transition(step: Any) -> dict[str, Any]:
    return {k: getattr(step, k) for k in TRANSITION}


def _pair(view: GraphView, item, cfg: EnvConfig | None = None) -> tuple[FreeQueryEnv, MenuEnv]:
    fenv, menv = FreeQueryEnv(MenuEnv(view, cfg)), MenuEnv(view, cfg)
    fenv.reset(item)
    menv.reset(item)
    return fenv, menv


class _NoResolution:
    """A resolver that fails the test if anything asks it to resolve text."""

    def resolve(self, query, menu):  # noqa: ANN001
        raise AssertionError(f"text resolution was used for {query!r}")


def _handle_move_states(fenv: FreeQueryEnv) -> dict[str, tuple[ActionType, tuple[str, ...]]]:
    """reply -> (type, sentence ids) for every SELECT / ANSWER_WITH by handle on the current state (and one pair)."""
    out = {}
    for i, s in enumerate(fenv.inner.menu.sentences):
        out[f"SELECT S{i}"] = (ActionType.SELECT, (s.id,))
        out[f"ANSWER_WITH S{i}"] = (ActionType.ANSWER_WITH, (s.id,))
    sentences = fenv.inner.menu.sentences
    if len(sentences) >= 2:  # a pair named in reverse order is the menu's ANSWER_WITH S0 S<last>
        out[f"ANSWER_WITH S{len(sentences) - 1} S0"] = (ActionType.ANSWER_WITH, (sentences[0].id, sentences[-1].id))
    return out


# -- observation -------------------------------------------------------------------------------------------
def test_observation_shows_handles_but_no_executable_ids(hotpot_view: GraphView, hotpot_questions) -> None:
    fenv, menv = _pair(hotpot_view, hotpot_questions[0])
    obs = fenv.observation()
    assert free_query_instruction() in obs and "Question:" in obs
    assert not re.search(r"\bA\d+\b", obs), "action ids leaked into the free-query observation"
    assert not re.search(r"^E\d+ \|", obs, re.M) and "LOOKUP" not in obs and "Actions:" not in obs
    assert not hasattr(fenv, "menu")
    # the visible sentences are listed with the menu arm's own handles, line for line
    menu_lines = [ln for ln in menv.observation().splitlines() if re.match(r"S\d+ \|", ln)]
    free_lines = [ln for ln in obs.splitlines() if re.match(r"S\d+ \|", ln)]
    assert free_lines == menu_lines and len(free_lines) == len(fenv.inner.state.visible) > 0
    assert fenv.search_available and NO_SEARCH_NOTE not in obs


# -- moves by handle: exact, no text resolution ------------------------------------------------------------
def test_moves_by_handle_execute_exactly_without_resolution(hotpot_view: GraphView, hotpot_questions) -> None:
    """SELECT S<i> / ANSWER_WITH S<i> / ANSWER are the menu arm's actions on that target, executed as such:
    the resolver is never asked, and the transition is the menu arm's for the same action (k = 2, so a pair is one
    of the moves)."""
    item = hotpot_questions[1]
    cfg = EnvConfig(answer_with_max=2)
    probe, _ = _pair(hotpot_view, item, cfg)
    moves = _handle_move_states(probe)
    moves["ANSWER"] = (ActionType.ANSWER, ())
    assert len(moves) >= 4
    for reply, (kind, targets) in moves.items():
        fenv, menv = _pair(hotpot_view, item, cfg)
        fenv.resolver = _NoResolution()  # type: ignore[assignment]
        action = next(a for a in menv.menu.actions if a.type is kind and a.targets == targets)
        result = fenv.step(reply)
        menv.step(action.id)
        assert result.valid and result.error is None, reply
        fstep, mstep = fenv.inner.trajectory.steps[-1], menv.trajectory.steps[-1]
        assert _transition(fstep) == _transition(mstep), reply
        assert (fstep.chosen, fstep.action_type, fstep.targets) == (action.id, kind.value, list(action.targets))
        assert fstep.reply == reply and fenv.inner.trajectory.meta["free_query"] == []  # nothing was resolved
        assert fenv.done == menv.done
        if not fenv.done:
            assert fenv.inner.menu.to_json() == menv.menu.to_json()
    fenv.finish("x")
    assert fenv.inner.trajectory.meta["queries"] == []  # moves are not query strings (D_query counts searches only)


def test_unknown_handle_is_an_invalid_turn(hotpot_view: GraphView, hotpot_questions) -> None:
    fenv, menv = _pair(hotpot_view, hotpot_questions[0])
    fenv.resolver = _NoResolution()  # type: ignore[assignment]
    before = (list(fenv.inner.state.committed), list(fenv.inner.state.visible))
    result = fenv.step("SELECT S99")
    assert not result.valid and "unknown sentence S99" in result.error and "Invalid reply: unknown sentence S99" in result.observation
    assert (fenv.inner.state.committed, fenv.inner.state.visible) == before and fenv.inner.state.turn == 1  # the turn is used
    menv.step("A999")  # the menu arm's invalid turn: the same state change
    assert _transition(fenv.inner.trajectory.steps[-1]) | {"error": None} == _transition(menv.trajectory.steps[-1]) | {"error": None}
    assert fenv.inner.trajectory.steps[-1].reply == "SELECT S99"
    assert not fenv.step("SELECT the best one").valid  # malformed: invalid, never a search
    assert fenv.queries == []


def test_answer_with_beyond_the_cap_or_repeated_is_an_invalid_turn(hotpot_view: GraphView, hotpot_questions) -> None:
    fenv, _ = _pair(hotpot_view, hotpot_questions[0], EnvConfig(answer_with_max=2))
    assert len(fenv.inner.state.visible) >= 3 and fenv.inner.config.answer_with_max == 2
    before = list(fenv.inner.state.committed)
    result = fenv.step("ANSWER_WITH S0 S1 S2")
    assert not result.valid and "at most 2 sentences per ANSWER_WITH" in result.error
    result = fenv.step("ANSWER_WITH S1 S1")
    assert not result.valid and "names a sentence twice" in result.error
    assert fenv.inner.state.committed == before and fenv.inner.state.turn == 2 and not fenv.done


# -- free strings: resolved to a retrieval target ----------------------------------------------------------
def test_free_string_resolves_to_a_retrieval_target(hotpot_view: GraphView, hotpot_questions) -> None:
    fenv, _ = _pair(hotpot_view, hotpot_questions[0])
    menu = fenv.inner.menu
    lookups = [a for a in menu.actions if a.type is ActionType.LOOKUP]
    assert lookups
    # a string naming an entity resolves to that entity's LOOKUP
    for a in lookups:
        res = fenv.resolve(target_text(a, menu))
        assert res.type == "LOOKUP" and res.score == pytest.approx(1.0, abs=1e-5)
        assert target_text(menu.by_id[res.action_id], menu) == target_text(a, menu)  # (equal surfaces tie -> lower id)
    # whatever the string, only retrieval targets are ranked: a visible sentence's own text or "answer"
    # still lands on a LOOKUP (commits and answers are reached by handle, never through text)
    for query in [s.text for s in menu.sentences] + ["answer", "ANSWER_WITH S0 please", fenv.inner.state.question.question]:
        res = fenv.resolve(query)
        assert res.type == "LOOKUP" and res.action_id in {a.id for a in lookups}, query
        assert sorted(a for a, _ in res.ranked) == sorted(a.id for a in lookups)
        scores = [s for _, s in res.ranked]
        assert scores == sorted(scores, reverse=True)
    # deterministic: the same resolution from the env, again, and from a fresh frozen resolver
    q = fenv.inner.state.question.question
    assert fenv.resolve(q) == fenv.resolve(q) == Resolver(hotpot_view).resolve(q, menu)


def test_resolved_query_transition_equals_the_menu_lookup(hotpot_view: GraphView, hotpot_questions) -> None:
    """Same state, a free string resolved to target e, and the menu arm's LOOKUP e: identical transitions
    (and identical next menus) -- from the start and after a commit by handle."""
    item = hotpot_questions[2]
    for prefix in ([], ["SELECT S0"]):
        probe, _ = _pair(hotpot_view, item)
        for reply in prefix:
            probe.step(reply)
        targets = [a for a in probe.inner.menu.actions if a.type is ActionType.LOOKUP]
        assert targets
        for a in targets[:4]:
            fenv, menv = _pair(hotpot_view, item)
            for reply in prefix:
                fenv.step(reply)
                menv.step(next(x.id for x in menv.menu.actions if x.type is ActionType.SELECT))
            query = "more about " + target_text(a, fenv.inner.menu)
            res = fenv.resolve(query)
            result = fenv.step(SEARCH_PREFIX + query)
            assert result.valid and result.info["resolution"]["action_id"] == res.action_id
            menv.step(res.action_id)
            fstep, mstep = fenv.inner.trajectory.steps[-1], menv.trajectory.steps[-1]
            assert fstep.action_type == "LOOKUP" and _transition(fstep) == _transition(mstep)
            assert fstep.reply == SEARCH_PREFIX + query
            if not fenv.done:
                assert fenv.inner.menu.to_json() == menv.menu.to_json()
            log = fenv.inner.trajectory.meta["free_query"][-1]
            assert (log["query"], log["resolved"], log["type"]) == (query, res.action_id, "LOOKUP")
            assert fenv.queries == [query]


def test_search_without_a_retrieval_target_is_an_invalid_turn(hotpot_view: GraphView, hotpot_questions) -> None:
    fenv, _ = _pair(hotpot_view, hotpot_questions[0])
    menu = fenv.inner.menu
    kept = [a for a in menu.actions if a.type is not ActionType.LOOKUP]  # a state whose A_t has no retrieval target
    fenv.inner.menu = Menu(menu.sentences, [], [], kept, {})
    assert not fenv.search_available and NO_SEARCH_NOTE in fenv.observation()
    with pytest.raises(NoRetrievalTarget):
        fenv.resolve("anything")
    before = list(fenv.inner.state.visible)
    result = fenv.step("SEARCH: the director")
    assert not result.valid and "no retrieval target" in result.error and fenv.inner.state.visible == before
    assert fenv.queries == ["the director"]  # a query string was still written (D_query counts it)
    assert fenv.inner.trajectory.meta["free_query"] == []


def test_ties_are_broken_by_action_number(hotpot_view: GraphView) -> None:
    """Two targets with the same textual representation score the same: the lower action number wins."""
    a = EntityInfo("ent:a", "paris", "Paris", "GPE", True, 3)
    b = EntityInfo("ent:b", "paris", "Paris", "GPE", True, 1)
    actions = [Action("A0", ActionType.LOOKUP, (b.id,)), Action("A1", ActionType.LOOKUP, (a.id,)), Action("A2", ActionType.ANSWER)]
    menu = Menu([], [b, a], ["frontier", "frontier"], actions, {a.id: ("x",), b.id: ("y",)})
    res = Resolver(hotpot_view).resolve("the city of Paris", menu)
    assert res.action_id == "A0" and res.ranked[0][1] == res.ranked[1][1] and len(res.ranked) == 2  # ANSWER is not ranked
    actions2 = [Action("A0", ActionType.LOOKUP, (a.id,)), Action("A1", ActionType.LOOKUP, (b.id,)), Action("A2", ActionType.ANSWER)]
    menu2 = Menu([], [a, b], ["frontier", "frontier"], actions2, {a.id: ("x",), b.id: ("y",)})
    assert Resolver(hotpot_view).resolve("the city of Paris", menu2).targets == (a.id,)


# -- policies, eval, training ------------------------------------------------------------------------------
def test_heuristic_free_query_policy_commits_by_handle_and_searches_in_text(hotpot_view: GraphView, hotpot_questions) -> None:
    policy = make_policy("heuristic").for_interface("free-query")
    assert isinstance(policy, HeuristicFreeQueryPolicy)
    for item in hotpot_questions[:3]:
        fenv = FreeQueryEnv(MenuEnv(hotpot_view))
        traj = run_episode(fenv, policy, item)
        assert traj.meta["interface"] == "free-query" and traj.invalid_turns == 0 and isinstance(traj.answer, str)
        assert re.fullmatch(r"(SELECT|ANSWER_WITH) S\d+", traj.steps[0].reply)  # the first commit is by handle
        for s in traj.steps:
            if s.action_type == "LOOKUP":
                assert s.reply.startswith(SEARCH_PREFIX)
            else:
                assert re.fullmatch(r"(SELECT|ANSWER_WITH) S\d+|ANSWER", s.reply)
        searches = [s.reply[len(SEARCH_PREFIX):] for s in traj.steps if s.action_type == "LOOKUP"]
        assert traj.meta["queries"] == searches == [x["query"] for x in traj.meta["free_query"]]


def test_free_query_interface_runs_the_arm(hotpot_view: GraphView, hotpot_questions) -> None:
    runner = make_interface("free-query", hotpot_view, make_policy("heuristic"))
    traj = runner.run(hotpot_questions[0])
    assert isinstance(runner.env, FreeQueryEnv) and traj.meta["interface"] == "free-query"
    assert traj.steps and traj.steps[0].action_type in ("SELECT", "ANSWER_WITH")


def test_llm_policy_gets_handles_and_free_search(hotpot_view: GraphView, hotpot_questions) -> None:
    from harness_g.agent.llm.backends import Generation
    from harness_g.agent.policies.llm import LLMPolicy

    class Scripted:
        name = "scripted"

        def __init__(self, replies: list[str]) -> None:
            self.replies, self.prompts = list(replies), []

        def generate(self, batch, *, max_new_tokens, temperature=0.0, top_p=1.0, seed=None, stop=None, allowed=None):
            self.prompts.append(batch[0][-1]["content"])
            return [Generation(self.replies.pop(0) if self.replies else "ANSWER", 10, 1, 0.0) for _ in batch]

    backend = Scripted(["SELECT S0", "SEARCH: where was it filmed", "ANSWER"])
    menu_policy = LLMPolicy(backend, constrain_actions=True)
    fq = menu_policy.for_interface("free-query")
    assert fq.header == free_query_header() and fq.constrain_actions is False and menu_policy.constrain_actions is True
    traj = make_interface("free-query", hotpot_view, menu_policy).run(hotpot_questions[0])
    assert [s.reply for s in traj.steps] == ["SELECT S0", "SEARCH: where was it filmed", "ANSWER"]
    assert [s.action_type for s in traj.steps] == ["SELECT", "LOOKUP", "ANSWER"]
    assert traj.meta["queries"] == ["where was it filmed"]
    first = backend.prompts[0]
    assert "S0 |" in first and not re.search(r"\bA\d+\b", first)


def test_training_rollouts_use_the_arm(hotpot_view: GraphView, hotpot_questions) -> None:
    """training/rollout.py's free-query path: the same replies become the same moves, D_query strings are logged."""
    torch = pytest.importorskip("torch")  # noqa: F841 - rollout imports torch
    from harness_g.agent.env.config import EnvConfig
    from harness_g.training.diagnostics import trajectory_group_diagnostics
    from harness_g.training.rollout import collect_rollouts

    from harness_g.agent.llm.backends import Generation

    class Gen:  # a scripted stand-in for the policy model: this test is about the arm's plumbing, not a model
        seconds, tokens, temperature, top_p, max_prompt_tokens = 0.0, 0, 1.0, 1.0, None

        def __init__(self) -> None:
            self.calls = 0

        def generate(self, chats, *, max_new_tokens, temperature=0.0, top_p=1.0, seed=None, stop=None):  # noqa: ANN001
            self.calls += 1
            if "Answer the question using only the evidence" in chats[0][-1]["content"]:
                return [Generation("x", 0, 1, 0.0)] * len(chats)
            script = {1: "SELECT S0", 2: None, 3: "ANSWER"}
            out = []
            for i, chat in enumerate(chats):
                assert free_query_header() in chat[0]["content"]
                assert not any(re.search(r"\bA\d+\b", m["content"]) for m in chat)
                out.append(Generation(script.get(self.calls) or f"SEARCH: topic number {i % 2}", 0, 1, 0.0))
            return out

    rollouts, _ = collect_rollouts(hotpot_view, Gen(), hotpot_questions[:1], 4, EnvConfig(max_turns=3), max_action_tokens=16,
                                   max_answer_tokens=8, interface="free-query")
    assert len(rollouts) == 4
    for ro in rollouts:
        types = [s.action_type for s in ro.trajectory.steps]
        assert types[0] == "SELECT" and ro.trajectory.steps[0].reply == "SELECT S0"
        assert ro.queries == [ro.trajectory.steps[1].reply[len(SEARCH_PREFIX):]] and types[1] == "LOOKUP"
    stats = trajectory_group_diagnostics([[r.trajectory for r in rollouts]], queries=[[q for r in rollouts for q in r.queries]])
    assert stats.d_query == 1.0  # two distinct strings in the group
