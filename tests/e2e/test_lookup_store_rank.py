"""The store-ranked LOOKUP (``EnvConfig.lookup_store_rank_min``, issue 35 item 5) gives the paper's LOOKUP results, on
the real HotpotQA test graph and both stores.

With the switch, an entity with at least that many mentions has its pool C(e) ranked by cosine to m_t inside the store
(``cypher/<dialect>/lookup_ranked.cypher``: FalkorDB's ``vec.cosineDistance``, Neo4j's ``vector.similarity.cosine``),
which returns only the first ``lookup_pool_cap``; the client never reads the pool. The threshold is 1 here, so every
LOOKUP of the walks takes the store's path and is compared with the paper's client-side ranking of the whole pool.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.seeded_walk import entities_split_by_mentions, seeded_walk

from harness_g.agent.env import menu
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env.menu import lookup_pools, lookup_result, lookup_results_for, store_ranked_results, text_key
from harness_g.agent.eval.run import EvalConfig, run_eval
from harness_g.agent.policies import make_policy
from harness_g.errors import ConfigError

PAPER = EnvConfig()
IN_STORE = EnvConfig(lookup_store_rank_min=1)



def test_every_menu_of_the_store_ranked_environment_is_the_papers(hotpot_view: GraphView, hotpot_questions) -> None:
    view = hotpot_view
    before = view.calls["store_ranked"]
    for item in hotpot_questions[:3]:
        for seed in range(2):
            assert seeded_walk(view, IN_STORE, item, seed) == seeded_walk(view, PAPER, item, seed), (item.id, seed)
    assert view.calls["store_ranked"] - before > 20  # the store ranked the pools (InitRetrieve's channel and LOOKUPs)


def test_each_store_ranked_lookup_equals_the_whole_pools_ranking(hotpot_view: GraphView, hotpot_questions) -> None:
    """Every lookup-able entity of the graph, from two states of a question (C_t empty, C_t = the first gold
    sentence, which the store must leave out), and with a pool cap of 3 (the store returns 3 rows)."""
    view = hotpot_view
    entity_ids = sorted({e.id for ents in view.entities_of(view.sentence_ids).values() for e in ents})
    pools = lookup_pools(view, entity_ids, PAPER)
    assert max(len(p) for p in pools.values()) > 10
    for item in hotpot_questions[:1]:
        for committed in ((), tuple(item.gold_sentence_ids[:1])):
            texts = [view.sentences(list(committed))[s].text for s in committed]
            m_vec = view.encode([" ".join([item.question, *texts])])[0]
            keys = {text_key(t) for t in texts}
            for cap in (PAPER.lookup_pool_cap, 3):
                paper = {e: lookup_result(view, pools[e], m_vec, set(committed), keys, replace(PAPER, lookup_pool_cap=cap))
                         for e in entity_ids}
                got = store_ranked_results(view, entity_ids, m_vec, set(committed), keys,
                                           replace(IN_STORE, lookup_pool_cap=cap))
                assert got == paper, [e for e in entity_ids if got.get(e) != paper[e]][:5]
            for e in entity_ids[:40]:  # the ranking itself: C_t left out, the client's order
                assert view.store_ranked_pool(e, m_vec, 400, exclude=committed) == \
                    view.rank_top(m_vec, pools[e], 400, exclude=set(committed)), e
            both = lookup_results_for(view, entity_ids, m_vec, set(committed), keys, replace(IN_STORE, lookup_store_rank_min=3))
            assert both == {e: lookup_result(view, pools[e], m_vec, set(committed), keys, PAPER) for e in entity_ids}


def test_the_store_ranked_question_entity_channel_is_the_papers(hotpot_view: GraphView, hotpot_questions) -> None:
    view = hotpot_view
    for item in hotpot_questions:
        q_vec = view.encode([item.question])[0]
        entity_ids = [e.id for e in view.question_entities(item.question, PAPER.question_ngram_max)]
        pools = view.lookup_pools(entity_ids, articles=False)
        for k in (PAPER.init_entity_k, 3):
            paper = [s for s, _ in view.rank(q_vec, [s for e in entity_ids for s in pools.get(e, ())])][:k]
            assert menu.question_entity_channel(view, entity_ids, q_vec, k, IN_STORE) == paper, (item.id, k)


def test_only_entities_with_enough_mentions_are_ranked_in_the_store(hotpot_view: GraphView) -> None:
    view = hotpot_view
    small, big = entities_split_by_mentions(view, 4)
    assert small and big
    m_vec = view.encode(["Which film director was born first?"])[0]
    cfg = EnvConfig(lookup_store_rank_min=4)
    before = dict(view.calls)
    assert store_ranked_results(view, small, m_vec, set(), set(), cfg) == {}
    assert view.calls == before  # no round trip
    assert set(store_ranked_results(view, big, m_vec, set(), set(), cfg)) == set(big)
    assert view.calls["store_ranked"] - before["store_ranked"] == len(big)


def test_the_switch_refuses_the_extensions_is_recorded_and_a_resume_with_another_value_is_refused(
        hotpot_view: GraphView, hotpot_questions, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="lookup_store_rank_min=5 ranks the paper's pool C\\(e\\) only, not article_pool"):
        EnvConfig(lookup_store_rank_min=5, article_pool=True)
    with pytest.raises(ConfigError, match="lookup_store_rank_min"):
        EnvConfig(lookup_store_rank_min=-1)
    out = tmp_path / "run"
    env = EnvConfig(max_turns=2, lookup_store_rank_min=2)
    summary = run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, out, env_config=env,
                       config=EvalConfig(limit=1), progress=False)
    assert summary["questions"] == 1
    assert json.loads((out / "config.json").read_text())["env"]["lookup_store_rank_min"] == 2
    with pytest.raises(ConfigError, match=r"env\.lookup_store_rank_min: 2 -> 0"):
        run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, out,
                 env_config=replace(env, lookup_store_rank_min=0), config=EvalConfig(limit=2), progress=False)
