"""Why a question is not reachable (``menu_reachability(...).cause``), and the LOOKUP pool ranked before any cap,
on the real HotpotQA test graph (both stores)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from helpers.presets import extended_env

from harness_g.agent.env import MenuEnv, committed_query, init_retrieve, question_targets
from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.gold_search import relaxed_depths
from harness_g.agent.env.menu import build_menu, dedup_by_text, lookup_result, text_key
from harness_g.agent.eval.metrics import gold_units, unit_satisfied
from harness_g.agent.eval.reachability import CAUSES, menu_reachability

Q_ALL_VISIBLE = "5a7ce50f55429909bec76869"  # both gold sentences in U_0
Q_ONE_VISIBLE = "5a8268aa55429940e5e1a8aa"  # one of two gold sentences in U_0, the other one LOOKUP away
Q_HUB = "5a8b1a925542997f31a41c6e"  # reachable by default; its gold hides behind rankings when candidates are capped


def _by_id(questions, qid):
    return next(q for q in questions if q.id == qid)


def _execute(view, cfg: EnvConfig, item, path) -> MenuEnv:
    """Run a search's trajectory step by step in MenuEnv; each step must be offered exactly once and be valid."""
    env = MenuEnv(view, cfg)
    env.reset(item)
    for kind, targets in path:
        offered = [a.id for a in env.menu.actions if a.type is kind and a.targets == tuple(targets)]
        assert len(offered) == 1 and env.step(offered[0]).valid
    return env


def test_reachable_and_no_gold_have_no_cause(hotpot_view, hotpot_questions) -> None:
    r = menu_reachability(hotpot_view, _by_id(hotpot_questions, Q_ALL_VISIBLE))
    assert r.status == "reachable" and r.cause is None and r.detail == "" and r.needed_turns is None
    none = menu_reachability(hotpot_view, replace(hotpot_questions[0], gold_sentence_ids=(), gold_paragraph_ids=()))
    assert none.status == "no_gold" and none.cause is None


def test_gold_absent(hotpot_view, hotpot_questions) -> None:
    item = _by_id(hotpot_questions, Q_ONE_VISIBLE)
    mixed = replace(item, gold_sentence_ids=(item.gold_sentence_ids[0], "p_doesnotexist0000:3"))
    r = menu_reachability(hotpot_view, mixed)
    assert (r.status, r.cause, r.expansions) == ("unreachable", "gold_absent", 0)
    par = menu_reachability(hotpot_view, replace(item, gold_sentence_ids=(), gold_paragraph_ids=("p_doesnotexist0000",)))
    assert par.cause == "gold_absent"


def test_no_entity_path_for_a_sentence_no_pool_contains(hotpot_view, hotpot_questions) -> None:
    """A sentence that neither mentions a lookup-able entity nor neighbours one that does is in no candidate pool of
    the paper's C(e) (``article_pool=False``): outside U_0 nothing reaches it, under any caps. With the article
    channel (an extension) the same sentence is in its article's pool (every test-graph sentence is in some pool
    then)."""
    view = hotpot_view
    paper = EnvConfig(article_pool=False)
    ents = view.entities_of(view.sentence_ids)

    def neighbours(sid: str) -> list[str]:
        pid, pos = sid.rsplit(":", 1)
        return [n for n in (f"{pid}:{int(pos) - 1}", f"{pid}:{int(pos) + 1}") if n in view.row_of]

    isolated = sorted(s for s in view.sentence_ids if not ents.get(s) and not any(ents.get(n) for n in neighbours(s)))
    assert isolated, "the test graph has sentences without lookup-able entities around them"
    all_entities = sorted({e.id for es in ents.values() for e in es})
    pooled = {s for pool in view.lookup_pools(all_entities, articles=False).values() for s in pool}
    item = _by_id(hotpot_questions, Q_ONE_VISIBLE)
    u0 = init_retrieve(view, item.question, view.encode([item.question])[0], paper)
    target = next(s for s in isolated if s not in u0)
    assert target not in pooled  # the premise, checked on the raw pools
    ghost = replace(item, gold_sentence_ids=(item.gold_sentence_ids[0], target))
    r = menu_reachability(view, ghost, paper)
    assert (r.status, r.cause, r.expansions) == ("unreachable", "no_entity_path", 0)
    # with large caps and many turns it stays unreachable: the cause is not the caps
    wide = replace(paper, max_turns=12, visible_cap=30, lookup_cap=40)
    assert menu_reachability(view, ghost, wide).cause == "no_entity_path"
    # the article channel pools it (its article's title is a lookup-able entity), so the proof no longer applies
    assert not EnvConfig().article_pool  # the paper's pool is the default
    assert target in {s for pool in view.lookup_pools(all_entities, articles=True).values() for s in pool}
    assert menu_reachability(view, ghost, EnvConfig(article_pool=True)).cause != "no_entity_path"


def test_turn_budget(hotpot_view, hotpot_questions) -> None:
    item = _by_id(hotpot_questions, Q_ONE_VISIBLE)
    r = menu_reachability(hotpot_view, item)
    assert r.status == "reachable" and r.min_turns is not None
    short = menu_reachability(hotpot_view, item, EnvConfig(max_turns=r.min_turns - 1))
    assert short.status == "unreachable" and short.cause == "turn_budget"
    assert short.detail in ("relaxed", "capped") and short.needed_turns is not None
    assert r.min_turns - 1 < short.needed_turns <= r.min_turns
    if short.detail == "capped":  # a found trajectory: exactly the shortest one
        assert short.needed_turns == r.min_turns


def test_multi_sentence_answer_with(hotpot_view, hotpot_questions) -> None:
    """With a closing ANSWER_WITH that commits several visible sentences, two visible gold units take one turn."""
    item = _by_id(hotpot_questions, Q_ALL_VISIBLE)
    one = EnvConfig(max_turns=1, answer_with_max=1)
    r = menu_reachability(hotpot_view, item, one)
    assert (r.status, r.cause, r.detail, r.needed_turns) == ("unreachable", "turn_budget", "relaxed", 2)
    multi = menu_reachability(hotpot_view, item, one, answer_with_max=2)
    assert multi.status == "reachable" and multi.min_turns == 1
    assert menu_reachability(hotpot_view, item, EnvConfig(max_turns=1, answer_with_max=2)).min_turns == 1
    assert menu_reachability(hotpot_view, item, EnvConfig(max_turns=1)) == r  # the paper's k = 1 is the default


def test_a_deferred_commit_closes_two_units_in_one_answer_with(hotpot_view, hotpot_questions) -> None:
    """U_0 shows the bridge sentence, the other gold sentence is one LOOKUP away, and that LOOKUP shows the bridge
    sentence again: LOOKUP, then ANSWER_WITH(both) takes 2 turns where the commit-first search needs 3 (SELECT,
    LOOKUP, ANSWER_WITH). With k = 1 the deferral saves nothing. The extended preset's menu (k = 2)."""
    item = _by_id(hotpot_questions, Q_ONE_VISIBLE)
    units = gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)
    cfg = extended_env()
    r = menu_reachability(hotpot_view, item, cfg)
    assert r.status == "reachable" and r.min_turns == 2
    assert [kind for kind, _ in r.path] == [ActionType.LOOKUP, ActionType.ANSWER_WITH] and len(r.path[1][1]) == 2
    visible0 = init_retrieve(hotpot_view, item.question, hotpot_view.encode([item.question])[0], cfg)
    assert any(s in visible0 for s in r.path[1][1])  # the deferred one: visible at U_0, shown again by the LOOKUP
    env = _execute(hotpot_view, cfg, item, r.path)
    assert env.done and env.state.turn == 2 and all(unit_satisfied(u, env.state.committed) for u in units)
    first = menu_reachability(hotpot_view, item, cfg, defer=False)
    assert first.status == "reachable" and first.min_turns == 3 and first.path[0][0] is ActionType.SELECT
    single = menu_reachability(hotpot_view, item, extended_env(answer_with_max=1))
    assert single.min_turns == 3


def _lookup_results(view, question: str, committed: tuple[str, ...], visible, cfg: EnvConfig) -> dict[str, tuple[str, ...]]:
    """LOOKUP(e)'s U_{t+1} for every lookup-able entity of C_t ∪ U_t (V_t empty), from the environment's own parts."""
    m_text, texts = committed_query(view, question, committed, cfg.query_max_words)
    m_vec = view.encode([m_text])[0]
    keys = {text_key(t) for t in texts}
    sids = [*committed, *visible]
    entities = sorted({e.id for es in view.entities_of(sids).values() for e in es if e.lookupable})
    pools = view.lookup_pools(entities, articles=cfg.article_pool)
    return {e: lookup_result(view, pools.get(e, ()), m_vec, set(committed), keys, cfg) for e in entities}


def test_a_later_visible_gold_sentence_may_be_committed_first(hotpot_view, hotpot_questions) -> None:
    """m_t concatenates C_t in commit order, so which visible gold sentence is committed first changes every later
    LOOKUP. Gold {a, b, g} with T = 3: a and b visible in U_0 (a first), g shown only by a LOOKUP. Committing a
    first leaves no LOOKUP that shows both b and g, and no LOOKUP from U_0 shows all three, so the search must
    commit b first: SELECT b, LOOKUP, ANSWER_WITH(a, g). The scenario is built on the paper's C(e) (the article
    channel's wider pools change which LOOKUP shows what, so ``article_pool=False``), with the extended preset's
    other menu rules (k = 2)."""
    item = _by_id(hotpot_questions, Q_ALL_VISIBLE)
    cfg = extended_env(max_turns=3, article_pool=False, anchor_slot=False)
    a, b, g = "p_83a04ee7359eb91a:0", "p_e6d66dff4e73eed0:0", "p_e6d66dff4e73eed0:3"
    u0 = tuple(init_retrieve(hotpot_view, item.question, hotpot_view.encode([item.question])[0], cfg))
    assert u0.index(a) < u0.index(b) and g not in u0
    # the premises: the only 3-turn shapes are SELECT x, LOOKUP, ANSWER_WITH(y, g) and LOOKUP, SELECT, ANSWER_WITH
    after_a = _lookup_results(hotpot_view, item.question, (a,), [s for s in u0 if s != a], cfg)
    assert not any({b, g} <= set(res) for res in after_a.values())
    assert not any({a, b, g} <= set(res) for res in _lookup_results(hotpot_view, item.question, (), u0, cfg).values())
    gold = replace(item, id="order", gold_sentence_ids=(a, b, g), gold_paragraph_ids=())
    r = menu_reachability(hotpot_view, gold, cfg)
    assert r.status == "reachable" and r.min_turns == 3
    assert r.path[0] == (ActionType.SELECT, (b,)) and r.path[1][0] is ActionType.LOOKUP
    assert r.path[2][0] is ActionType.ANSWER_WITH and set(r.path[2][1]) == {a, g}
    env = _execute(hotpot_view, cfg, gold, r.path)
    assert env.done and set(env.state.committed) == {a, b, g}

def test_search_budget(hotpot_view, hotpot_questions) -> None:
    item = _by_id(hotpot_questions, Q_ONE_VISIBLE)
    r = menu_reachability(hotpot_view, item, budget=1)
    assert (r.status, r.cause, r.expansions) == ("unknown", "search_budget", 1)
    assert menu_reachability(hotpot_view, item, budget=400).status == "reachable"


def test_pool_or_rank_cap(hotpot_view, hotpot_questions) -> None:
    """With one ranked candidate per LOOKUP the gold sentence is cut although it sits in a candidate's pool; with the
    default caps the same question is reachable, so the cause is the cap."""
    item = _by_id(hotpot_questions, Q_HUB)
    # U_0 without question-entity slots (they show both gold sentences here); the paper's LOOKUP (article_pool shows
    # the title anchor whatever the cap) and no question targets (one of them reaches the gold sentence another way)
    base = EnvConfig(init_entity_reserve=0, article_pool=False, question_lookups=False)
    assert menu_reachability(hotpot_view, item, base).status == "reachable"
    # gold-only search: with a detour this question is reachable again (test_a_detour_reaches_a_cut_gold_sentence)
    r = menu_reachability(hotpot_view, item, replace(base, lookup_pool_cap=1), detours=0)
    assert r.status == "unreachable" and r.cause == "pool_or_rank_cap" and r.detail == "gold_cut"


def test_a_detour_reaches_a_cut_gold_sentence(hotpot_view, hotpot_questions) -> None:
    """Committing a non-gold sentence changes m_t and so the next LOOKUP's ranking: where the gold-only search finds
    nothing (the gold sentence is cut by the one-candidate cap), the search with a detour finds a trajectory that
    commits a sentence satisfying no gold unit, and MenuEnv, executing it, commits every gold unit."""
    item = _by_id(hotpot_questions, Q_HUB)
    cfg = EnvConfig(init_entity_reserve=0, lookup_pool_cap=1, article_pool=False, question_lookups=False)
    r = menu_reachability(hotpot_view, item, cfg)
    assert r.status == "reachable" and r.cause is None
    units = gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)
    selects = [t[0] for kind, t in r.path if kind is ActionType.SELECT]
    detours = [s for s in selects if not any(unit_satisfied(u, [s]) for u in units)]
    assert len(detours) == 1  # DETOURS = 1
    env = _execute(hotpot_view, cfg, item, r.path)
    assert env.done and all(unit_satisfied(u, env.state.committed) for u in units)
    assert env.state.turn == r.min_turns <= cfg.max_turns


def test_every_cause_is_named_and_relaxed_depths_bound_min_turns(hotpot_view, hotpot_questions) -> None:
    cfg = EnvConfig()
    for item in hotpot_questions:
        r = menu_reachability(hotpot_view, item, cfg)
        assert (r.cause is None) == (r.status == "reachable")
        assert r.cause is None or r.cause in CAUSES
        units = gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)
        q_vec = hotpot_view.encode([item.question])[0]
        depths = relaxed_depths(hotpot_view, units, init_retrieve(hotpot_view, item.question, q_vec, cfg), cfg=cfg,
                                question_targets=[e.id for e in question_targets(hotpot_view, item.question, cfg)])
        if r.status == "reachable":  # the relaxation is a lower bound of every real trajectory
            assert all(d is not None for d in depths)
            commits = max(1, len(units) - cfg.answer_with_max + 1)  # the closing ANSWER_WITH commits up to k at once
            assert max(depths) + commits <= r.min_turns
        if r.initially_visible == len(units):
            assert depths == [0] * len(units)


# ---------------------------------------------------------------- the LOOKUP pool is ranked before any cap

def test_rank_top_matches_rank(hotpot_view) -> None:
    view = hotpot_view
    rng = np.random.default_rng(0)
    vec = view.encode(["a film directed by an American director"])[0]
    ids = list(view.sentence_ids)
    for n, k in ((5, 3), (50, 6), (len(ids), 10), (len(ids), len(ids)), (20, 50)):
        pool = [ids[i] for i in rng.choice(len(ids), size=n, replace=False)] + ["p_unknown:0"]
        assert view.rank_top(vec, pool, k) == [s for s, _ in view.rank(vec, pool)][:k]
    # ties (identical vectors) are broken by id, as in rank()
    dup_rows = {}
    for i, row in enumerate(view.embeddings):
        dup_rows.setdefault(row.tobytes(), []).append(ids[i])
    tied = next((v for v in dup_rows.values() if len(v) > 1), None)
    if tied is not None:
        assert view.rank_top(vec, list(reversed(tied)), 1) == [min(tied)]


def test_lookup_ranks_the_whole_pool_before_the_cap(hotpot_view, hotpot_questions) -> None:
    """The LOOKUP result is the best of the WHOLE pool, not of its first lookup_pool_cap sentences in storage
    (channel, id) order: a sentence beyond the cap in storage order makes it to U_{t+1} when it ranks high."""
    view = hotpot_view
    cap = 5
    cfg = EnvConfig(lookup_pool_cap=cap)
    ents = view.entities_of(view.sentence_ids)
    entity_ids = sorted({e.id for es in ents.values() for e in es})
    pools = view.lookup_pools(entity_ids, articles=cfg.article_pool)
    big = [e for e in entity_ids if len(pools.get(e, ())) > cap]
    assert big
    beyond = 0
    for item in hotpot_questions:
        m_vec = view.encode([item.question])[0]
        for eid in big:
            pool = pools[eid]
            res = lookup_result(view, pool, m_vec, set(), set(), cfg)
            ranked = [s for s, _ in view.rank(m_vec, pool)][:cap]
            assert list(res) == dedup_by_text(ranked, view.sentences(ranked), set())[: cfg.visible_cap]
            beyond += any(s not in pool[:cap] for s in res)
    assert beyond > 0


def test_menu_offers_one_lookup_per_name(hotpot_view, hotpot_questions) -> None:
    """Same-name targets (an article's TITLE entity and the PERSON/WORK_OF_ART entity of its first sentence) are one
    LOOKUP, and a name already visited is not offered again under another label."""
    view = hotpot_view
    cfg = EnvConfig()
    seen_dup_candidates = 0
    for item in hotpot_questions:
        q_vec = view.encode([item.question])[0]
        visible = init_retrieve(view, item.question, q_vec, cfg)
        menu = build_menu(view, question_vec=q_vec, m_vec=q_vec, committed=(), visible=visible, visited=(), cfg=cfg)
        names = [e.name for e in menu.entities]
        assert len(names) == len(set(names)), names
        cands = [e for es in view.entities_of(visible).values() for e in es if e.lookupable]
        by_name: dict[str, set[str]] = {}
        for e in cands:
            by_name.setdefault(e.name, set()).add(e.id)
        seen_dup_candidates += sum(len(v) > 1 for v in by_name.values())
        for e in menu.entities[:1]:  # after visiting a name, none of its same-name entities comes back
            nxt = build_menu(view, question_vec=q_vec, m_vec=q_vec, committed=(), visible=menu.lookup_results[e.id],
                             visited=(e.id,), cfg=cfg)
            assert e.name not in {x.name for x in nxt.entities}
    assert seen_dup_candidates > 0  # the filter had same-name candidates to merge
