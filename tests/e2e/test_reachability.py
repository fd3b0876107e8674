"""Menu reachability of the gold evidence on the real HotpotQA test graph."""
from __future__ import annotations

from dataclasses import replace

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.eval.reachability import menu_reachability

Q_ALL_VISIBLE = "5a7ce50f55429909bec76869"  # both gold sentences are in U_0 (checked below)
Q_ONE_VISIBLE = "5a8268aa55429940e5e1a8aa"  # one of two gold sentences in U_0


def _by_id(questions, qid):
    return next(q for q in questions if q.id == qid)


def test_initially_visible_gold_is_reachable_in_one_turn_per_unit(hotpot_view, hotpot_questions) -> None:
    item = _by_id(hotpot_questions, Q_ALL_VISIBLE)
    env = MenuEnv(hotpot_view)
    env.reset(item)
    assert set(item.gold_sentence_ids) <= set(env.state.visible)
    r = menu_reachability(hotpot_view, item)  # the paper's single-sentence ANSWER_WITH (the default)
    assert menu_reachability(hotpot_view, item, EnvConfig(answer_with_max=1)) == r
    assert r.status == "reachable" and r.reachable is True
    assert r.gold_units == len(item.gold_sentence_ids) == 2
    assert r.min_turns == 2 and r.initially_visible == 2 and r.expansions == 0
    # the extended preset's two-sentence ANSWER_WITH commits both in one turn
    pair = menu_reachability(hotpot_view, item, EnvConfig(answer_with_max=2))
    assert (pair.status, pair.min_turns, pair.expansions) == ("reachable", 1, 0)
    assert [(a.value, len(t)) for a, t in pair.path] == [("ANSWER_WITH", 2)]
    # the verdict is real: SELECT + ANSWER_WITH of the two gold sentences commits both in 2 turns
    env.step(next(a.id for a in env.menu.actions if a.type.value == "SELECT" and a.targets == (item.gold_sentence_ids[0],)))
    env.step(next(a.id for a in env.menu.actions if a.type.value == "ANSWER_WITH" and a.targets == (item.gold_sentence_ids[1],)))
    assert env.done and set(env.state.committed) == set(item.gold_sentence_ids)

    # paragraph-level gold (MuSiQue style): the same two paragraphs, any sentence satisfies each
    paragraphs = tuple(dict.fromkeys(s.rsplit(":", 1)[0] for s in item.gold_sentence_ids))
    by_par = replace(item, gold_sentence_ids=(), gold_paragraph_ids=paragraphs)
    r = menu_reachability(hotpot_view, by_par)
    assert r.status == "reachable" and r.min_turns == 2 and r.gold_units == 2
    assert menu_reachability(hotpot_view, by_par, EnvConfig(answer_with_max=2)).min_turns == 1


def test_min_turns_bounded_by_budget(hotpot_view, hotpot_questions) -> None:
    item = _by_id(hotpot_questions, Q_ONE_VISIBLE)
    r = menu_reachability(hotpot_view, item)
    assert r.status == "reachable" and r.initially_visible == 1
    # >= 1 LOOKUP, then a closing commit (the visible gold sentence may wait for it: a deferred commit)
    assert r.min_turns is not None and r.min_turns >= 2
    exact = menu_reachability(hotpot_view, item, EnvConfig(max_turns=r.min_turns))
    assert exact.status == "reachable" and exact.min_turns == r.min_turns
    short = menu_reachability(hotpot_view, item, EnvConfig(max_turns=r.min_turns - 1))
    assert short.status == "unreachable" and short.reachable is False and short.min_turns is None


def test_missing_gold_sentence_is_unreachable(hotpot_view, hotpot_questions) -> None:
    item = hotpot_questions[0]
    ghost = replace(item, id="ghost", gold_sentence_ids=("p_doesnotexist0000:0",))
    r = menu_reachability(hotpot_view, ghost)
    assert r.status == "unreachable" and r.reachable is False and r.min_turns is None and r.gold_units == 1
    # one real gold sentence plus a missing one: still unreachable
    mixed = replace(item, gold_sentence_ids=(item.gold_sentence_ids[0], "p_doesnotexist0000:3"))
    assert menu_reachability(hotpot_view, mixed).status == "unreachable"
    ghost_par = replace(item, gold_sentence_ids=(), gold_paragraph_ids=("p_doesnotexist0000",))
    assert menu_reachability(hotpot_view, ghost_par).status == "unreachable"


def test_no_gold(hotpot_view, hotpot_questions) -> None:
    item = replace(hotpot_questions[0], gold_sentence_ids=(), gold_paragraph_ids=())
    r = menu_reachability(hotpot_view, item)
    assert r.status == "no_gold" and r.reachable is None and r.gold_units == 0 and r.min_turns is None
