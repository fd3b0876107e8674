"""The oracle policy (``--policy oracle``) and the shortest gold trajectory it plans with, on the real HotpotQA test
graph (both stores): the planned paths are real trajectories of ``MenuEnv``, and the oracle plays them."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.gold_search import GoldSearch, feasible_units, shortest_gold_trajectory
from harness_g.agent.env.menu import build_menu
from harness_g.agent.eval import metrics as M
from harness_g.agent.eval.reachability import menu_reachability
from harness_g.agent.eval.run import RECORDS, SUMMARY
from harness_g.agent.eval.runner import run_episode
from harness_g.agent.policies import make_policy
from harness_g.agent.policies.heuristic import HeuristicPolicy
from harness_g.agent.policies.oracle import NEEDS_GOLD, OraclePolicy
from harness_g.cli import main
from harness_g.errors import ConfigError

Q_ALL_VISIBLE = "5a7ce50f55429909bec76869"  # both gold sentences in U_0
Q_ONE_VISIBLE = "5a8268aa55429940e5e1a8aa"  # one of two gold sentences in U_0, the other one LOOKUP away
Q_HUB = "5a8b1a925542997f31a41c6e"  # with one ranked candidate per LOOKUP, reachable only through a detour
NO_LOOKUP = EnvConfig(answer_with=False)  # every commit a SELECT: an ANSWER turn closes the episode


def _by_id(questions, qid):
    return next(q for q in questions if q.id == qid)


def _units(item):
    return M.gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)


def _replay(env: MenuEnv, path) -> None:
    """Execute ``path`` step by step through ``MenuEnv.step``; each step must be offered by the current menu."""
    for kind, targets in path:
        assert not env.done
        offered = [a.id for a in env.menu.actions if a.type is kind and a.targets == tuple(targets)]
        assert len(offered) == 1, (kind, targets, [a.to_json() for a in env.menu.actions])
        assert env.step(offered[0]).valid


@pytest.mark.parametrize("cfg", [EnvConfig(), NO_LOOKUP], ids=["answer_with", "select_only"])
def test_reachable_paths_replay_in_the_environment(hotpot_view, hotpot_questions, cfg: EnvConfig) -> None:
    """(b) A 'reachable' verdict's path, replayed through MenuEnv.step, commits every gold unit and ends the episode
    exactly when the path ends: after min_turns turns, plus the closing ANSWER turn when ANSWER_WITH is off."""
    reachable = 0
    for item in hotpot_questions:
        r = menu_reachability(hotpot_view, item, cfg)
        if r.status != "reachable":
            assert r.path == ()
            continue
        reachable += 1
        env = MenuEnv(hotpot_view, cfg)
        env.reset(item)
        _replay(env, r.path)
        assert env.done and M.evidence_recall(_units(item), env.state.committed) == 1.0
        closing = int(not cfg.answer_with and r.min_turns < cfg.max_turns)
        assert env.state.turn == len(r.path) == r.min_turns + closing
        assert r.path[-1][0] is (ActionType.ANSWER_WITH if cfg.answer_with else ActionType.ANSWER)
    assert reachable >= 4  # the test graph has questions reachable with 0, 1 and more LOOKUPs


def test_oracle_commits_all_gold_in_min_turns(hotpot_view, hotpot_questions) -> None:
    """(a) On every reachable question the oracle, played by run_episode, commits every gold unit in exactly
    min_turns turns (its last commit is the episode-ending ANSWER_WITH), taking the planned path itself."""
    cfg = EnvConfig()
    policy = OraclePolicy(hotpot_view, cfg, hotpot_questions)
    env = MenuEnv(hotpot_view, cfg)
    played = 0
    for item in hotpot_questions:
        r = menu_reachability(hotpot_view, item, cfg)
        if r.status != "reachable":
            continue
        played += 1
        traj = run_episode(env, policy, item)
        assert M.evidence_recall(_units(item), traj.committed) == 1.0
        assert traj.turns == r.min_turns and traj.invalid_turns == 0 and traj.terminated_by == "ANSWER_WITH"
        assert [(ActionType(s.action_type), tuple(s.targets)) for s in traj.steps] == list(r.path)
        assert traj.meta["policy"] == "oracle" and traj.meta["oracle"]["status"] == "reachable"
        assert traj.meta["oracle"]["min_turns"] == r.min_turns
        # the answer is the heuristic's extractive answer from C_T
        assert traj.answer == HeuristicPolicy().answer(item.question, env.committed_texts(), env.observe())
    assert played >= 4


def test_oracle_takes_a_detour_when_no_gold_only_plan_exists(hotpot_view, hotpot_questions) -> None:
    """Where only a trajectory with a non-gold SELECT commits every gold unit (one ranked candidate per LOOKUP cuts the
    gold sentence unless a committed sentence changes m_t), the oracle plays such a trajectory: all gold committed,
    plus the detour's sentence."""
    item = _by_id(hotpot_questions, Q_HUB)
    cfg = EnvConfig(init_entity_reserve=0, lookup_pool_cap=1, article_pool=False, question_lookups=False)  # the paper's menu
    assert menu_reachability(hotpot_view, item, cfg, detours=0).status == "unreachable"
    traj = run_episode(MenuEnv(hotpot_view, cfg), OraclePolicy(hotpot_view, cfg, [item]), item)
    assert M.evidence_recall(_units(item), traj.committed) == 1.0 and traj.invalid_turns == 0
    extra = [s for s in traj.committed if not any(M.unit_satisfied(u, [s]) for u in _units(item))]
    assert len(extra) == 1


def test_oracle_without_answer_with_answers_after_its_last_select(hotpot_view, hotpot_questions) -> None:
    """With SELECT-only commits the episode takes one more turn than min_turns (the ANSWER), unless min_turns = T."""
    item = _by_id(hotpot_questions, Q_ONE_VISIBLE)
    r = menu_reachability(hotpot_view, item, NO_LOOKUP)
    assert r.status == "reachable" and r.min_turns < NO_LOOKUP.max_turns
    traj = run_episode(MenuEnv(hotpot_view, NO_LOOKUP), OraclePolicy(hotpot_view, NO_LOOKUP, [item]), item)
    assert traj.turns == r.min_turns + 1 and traj.terminated_by == "ANSWER"
    assert M.evidence_recall(_units(item), traj.committed) == 1.0
    tight = replace(NO_LOOKUP, max_turns=r.min_turns)  # the last SELECT reaches T: no ANSWER turn
    traj = run_episode(MenuEnv(hotpot_view, tight), OraclePolicy(hotpot_view, tight, [item]), item)
    assert traj.turns == r.min_turns and traj.terminated_by == "max_turns"
    assert M.evidence_recall(_units(item), traj.committed) == 1.0


def test_plan_from_a_later_state(hotpot_view, hotpot_questions) -> None:
    """Planning from the state after the first step of a shortest path needs exactly one turn less."""
    item = _by_id(hotpot_questions, Q_ONE_VISIBLE)
    cfg = EnvConfig()
    r = menu_reachability(hotpot_view, item, cfg)
    assert r.status == "reachable" and len(r.path) >= 2
    env = MenuEnv(hotpot_view, cfg)
    env.reset(item)
    _replay(env, r.path[:1])
    state = (tuple(env.state.committed), tuple(env.state.visible), tuple(env.state.visited), env.state.turn)
    committed, visible, visited, turn = state
    later = shortest_gold_trajectory(hotpot_view, item, cfg, committed=committed, visible=visible, visited=visited,
                                     turns=turn)
    assert later.status == "reachable" and later.min_turns == r.min_turns and later.turns == len(r.path) - 1
    _replay(env, later.path)
    assert env.done and M.evidence_recall(_units(item), env.state.committed) == 1.0
    # after the commit-first search's first step (SELECT the visible gold sentence) with one turn left: no full plan
    # (a LOOKUP and a commit remain), and the partial plan keeps what is committed and answers now
    first = menu_reachability(hotpot_view, item, cfg, defer=False)
    assert first.path[0][0] is ActionType.SELECT
    env = MenuEnv(hotpot_view, cfg)
    env.reset(item)
    _replay(env, first.path[:1])
    state = (tuple(env.state.committed), tuple(env.state.visible), tuple(env.state.visited), env.state.turn)
    partial = GoldSearch(hotpot_view, item, replace(cfg, max_turns=env.state.turn + 1)).plan(*state)
    assert partial.status == "unreachable" and partial.min_turns is None and partial.committed_units == 1
    assert partial.path == ((ActionType.ANSWER, ()),)  # nothing more fits: answer now


def test_two_visible_gold_units_close_with_one_answer_with(hotpot_view, hotpot_questions) -> None:
    """Two missing gold units visible together are committed by one ANSWER_WITH of both, in visible order (k = 2,
    the extended preset's ANSWER_WITH)."""
    item = _by_id(hotpot_questions, Q_ALL_VISIBLE)
    pair_cfg = EnvConfig(answer_with_max=2)
    traj = run_episode(MenuEnv(hotpot_view, pair_cfg), OraclePolicy(hotpot_view, pair_cfg, [item]), item)
    assert traj.turns == 1 and traj.steps[0].action_type == "ANSWER_WITH"
    assert sorted(traj.steps[0].targets) == sorted(item.gold_sentence_ids)
    # a constructed state: both gold sentences visible behind others, in reverse id order, three turns used
    gold = sorted(item.gold_sentence_ids)
    other = [s for s in hotpot_view.sentence_ids if s not in gold][:3]
    visible = (other[0], gold[1], other[1], gold[0], other[2])
    plan = shortest_gold_trajectory(hotpot_view, item, pair_cfg, committed=(), visible=visible, turns=3)
    assert plan.status == "reachable" and plan.min_turns == 4
    assert plan.path == ((ActionType.ANSWER_WITH, (gold[1], gold[0])),)
    q_vec = hotpot_view.encode([item.question])[0]  # the menu of that state offers exactly that action
    menu = build_menu(hotpot_view, question_vec=q_vec, m_vec=q_vec, committed=(), visible=visible, visited=(),
                      cfg=pair_cfg)
    assert any(a.type is ActionType.ANSWER_WITH and a.targets == (gold[1], gold[0]) for a in menu.actions)
    # with single-sentence ANSWER_WITH (the paper's, the default) it takes a SELECT first
    single = shortest_gold_trajectory(hotpot_view, item, EnvConfig(), visible=visible, turns=3)
    assert [k for k, _ in single.path] == [ActionType.SELECT, ActionType.ANSWER_WITH] and single.min_turns == 5


def test_unreachable_question_gets_valid_replies_and_commits_what_exists(hotpot_view, hotpot_questions) -> None:
    """(c) A gold unit absent from the graph: the oracle still replies only valid ids, commits the feasible unit
    and ends; with no search budget at all it still ends cleanly."""
    item = _by_id(hotpot_questions, Q_ONE_VISIBLE)
    ghost = replace(item, id="ghost", gold_sentence_ids=(*item.gold_sentence_ids, "p_doesnotexist0000:3"))
    assert menu_reachability(hotpot_view, ghost).cause == "gold_absent"
    for budget in (400, 0):
        policy = OraclePolicy(hotpot_view, EnvConfig(), [ghost], budget=budget)
        traj = run_episode(MenuEnv(hotpot_view), policy, ghost)
        assert traj.invalid_turns == 0 and traj.terminated_by in ("ANSWER", "ANSWER_WITH", "max_turns")
        assert traj.meta["oracle"]["units"] == 3 and traj.meta["oracle"]["feasible_units"] == 2
        recall = M.evidence_recall(_units(ghost), traj.committed)
        if budget:  # the two real units are reachable, so both are committed
            assert recall == pytest.approx(2 / 3) and traj.meta["oracle"]["status"] == "reachable"
        else:  # no menu may be built: it commits the gold unit visible in U_0 and stops
            assert recall == pytest.approx(1 / 3) and traj.meta["oracle"]["status"] == "unknown"


def test_oracle_falls_back_to_the_largest_subset_with_a_plan(hotpot_view, hotpot_questions) -> None:
    """When the full goal has no plan and the search's partial plans commit nothing, the oracle plans for a subset:
    here gold {g, x} with T = 2, where g is one LOOKUP away and x is shown by no LOOKUP result from U_0."""
    item = _by_id(hotpot_questions, Q_ONE_VISIBLE)
    cfg = EnvConfig(max_turns=2)
    base = GoldSearch(hotpot_view, item, cfg)
    u0 = base.initial_visible()
    g = next(s for s in item.gold_sentence_ids if s not in u0)
    assert base.for_units([g]).plan().status == "reachable"  # premise: LOOKUP, ANSWER_WITH g
    feasible = set(feasible_units(hotpot_view, sorted(set(hotpot_view.sentence_ids) - set(u0)), u0, cfg=cfg))
    x = next(s for s in sorted(feasible) if s != g and base.for_units([g, s]).plan().committed_units == 0)
    both = replace(item, id="subset", gold_sentence_ids=(g, x))
    full = GoldSearch(hotpot_view, both, cfg).plan()
    assert full.status == "unreachable" and full.committed_units == 0 and full.path == ((ActionType.ANSWER, ()),)
    traj = run_episode(MenuEnv(hotpot_view, cfg), OraclePolicy(hotpot_view, cfg, [both]), both)
    assert traj.invalid_turns == 0 and traj.turns == 2 and traj.committed == [g]
    assert traj.meta["oracle"]["status"] == "unreachable" and traj.meta["oracle"]["planned_units"] == 1


def test_oracle_needs_gold_labels(hotpot_view, hotpot_questions) -> None:
    item = hotpot_questions[0]
    with pytest.raises(ConfigError, match="no gold evidence labels for question 'nope'"):
        run_episode(MenuEnv(hotpot_view), OraclePolicy(hotpot_view, EnvConfig(), [item]), replace(item, id="nope"))
    bare = replace(item, gold_sentence_ids=(), gold_paragraph_ids=())
    with pytest.raises(ConfigError, match="no gold evidence labels"):
        run_episode(MenuEnv(hotpot_view), OraclePolicy(hotpot_view, EnvConfig(), {item.id: bare}), bare)


def test_oracle_policy_without_gold_is_a_config_error() -> None:
    for build in (lambda: OraclePolicy(), lambda: make_policy("oracle")):
        with pytest.raises(ConfigError) as info:
            build()
        assert str(info.value) == NEEDS_GOLD


# -- CLI --------------------------------------------------------------------------------------------------------
def test_eval_cli_oracle(hotpot_dir, tmp_path: Path, capsys) -> None:
    """(d) `harness-g eval --policy oracle` plays the gold plans: every reachable question has evidence recall 1."""
    out = tmp_path / "run"
    rc = main(["eval", str(hotpot_dir), "--out", str(out), "--policy", "oracle", "--limit", "2", "--reachability", "-q"])
    assert rc == 0, capsys.readouterr().err
    records = [json.loads(line) for line in (out / RECORDS).read_text().splitlines() if line.strip()]
    assert len(records) == 2 and all("error" not in r for r in records)
    for r in records:
        assert r["trajectory"]["meta"]["policy"] == "oracle" and r["metrics"]["invalid_turns"] == 0
        if r["reachability"]["status"] == "reachable":
            assert r["metrics"]["evidence_recall"] == 1.0
            assert r["metrics"]["turns"] == r["reachability"]["min_turns"]
    summary = json.loads((out / SUMMARY).read_text())
    assert summary["policy"] == "oracle" and summary["questions"] == 2 and summary["evidence_recall"] is not None
    if all(r["reachability"]["status"] == "reachable" for r in records):
        assert summary["evidence_recall"] == 100.0


def test_ask_and_other_interfaces_refuse_the_oracle(hotpot_dir, tmp_path: Path, capsys) -> None:
    """(e) `ask` has no gold labels; the oracle plays the menu interface only. One-line errors, nothing written."""
    rc = main(["ask", str(hotpot_dir), "Who?", "--policy", "oracle"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and NEEDS_GOLD in err
    out = tmp_path / "run"
    rc = main(["eval", str(hotpot_dir), "--out", str(out), "--policy", "oracle", "--interface", "free-query", "-q"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "menu interface only" in err
    assert not (out / RECORDS).exists()
