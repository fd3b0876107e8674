"""The bounded LOOKUP (``EnvConfig.lookup_index_top_m``, issue 35 item 5) gives the paper's LOOKUP results, on the real
HotpotQA test graph and both stores.

With the switch, a LOOKUP ranks the pool sentences among the store vector index's top M by cosine to m_t and reads the
whole pool C(e) only when they cannot fill K_s (``menu.index_lookup_results``: exact whenever the index's top M is
exact; on this ~240-sentence graph the HNSW search at the stores' ef covers it). M = 40 here and every entity is
tried (``menu.INDEX_MENTIONS_PER_M`` = 0; by default only entities with at least M mentions are), so both branches
run: some LOOKUPs are decided by the index, others fall back to the whole pool.
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
from harness_g.agent.env.menu import index_lookup_results, lookup_pools, lookup_result, lookup_results_for, text_key
from harness_g.agent.eval.run import EvalConfig, run_eval
from harness_g.agent.policies import make_policy
from harness_g.errors import ConfigError

M = 40
PAPER = EnvConfig()
BOUNDED = EnvConfig(lookup_index_top_m=M)


@pytest.fixture
def every_entity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The index tries every entity, not only those with at least M mentions (none has 40 on this small graph)."""
    monkeypatch.setattr(menu, "INDEX_MENTIONS_PER_M", 0.0)



def test_every_menu_of_the_bounded_environment_is_the_papers(hotpot_view: GraphView, hotpot_questions,
                                                             every_entity: None) -> None:
    view = hotpot_view
    before = dict(view.calls)
    for item in hotpot_questions[:4]:
        for seed in range(2):
            assert seeded_walk(view, BOUNDED, item, seed) == seeded_walk(view, PAPER, item, seed), (item.id, seed)
    decided = view.calls["index_lookups"] - before["index_lookups"]
    fell_back = view.calls["index_fallbacks"] - before["index_fallbacks"]
    assert decided > 0 and fell_back > 0, (decided, fell_back)  # both branches ran


def test_each_index_decided_lookup_equals_the_whole_pools_ranking(hotpot_view: GraphView, hotpot_questions,
                                                                  every_entity: None) -> None:
    """Every lookup-able entity of the graph, from two states per question (C_t empty, C_t = the first gold
    sentence): where the index decides, the result is the paper's (ranking the whole C(e)); a smaller M decides
    fewer LOOKUPs, never another result."""
    view = hotpot_view
    entity_ids = sorted({e.id for ents in view.entities_of(view.sentence_ids).values() for e in ents})
    pools = lookup_pools(view, entity_ids, PAPER)
    decided_counts = []
    for item in hotpot_questions[:2]:
        for committed in ((), tuple(item.gold_sentence_ids[:1])):
            texts = [view.sentences(list(committed))[s].text for s in committed]
            m_vec = view.encode([" ".join([item.question, *texts])])[0]
            keys = {text_key(t) for t in texts}
            for m in (120, M):
                got = index_lookup_results(view, entity_ids, m_vec, set(committed), keys, replace(BOUNDED,
                                                                                                 lookup_index_top_m=m))
                decided_counts.append(len(got))
                for eid, result in got.items():
                    assert result == lookup_result(view, pools[eid], m_vec, set(committed), keys, PAPER), eid
            # what the reachability search reads: the index where it decides, the whole pool elsewhere
            both = lookup_results_for(view, entity_ids, m_vec, set(committed), keys, BOUNDED)
            assert both == {e: lookup_result(view, pools[e], m_vec, set(committed), keys, PAPER) for e in entity_ids}
    assert sum(decided_counts) > 0 and max(decided_counts) < len(entity_ids), decided_counts


def test_the_bounded_question_entity_channel_is_the_papers(hotpot_view: GraphView, hotpot_questions,
                                                           every_entity: None) -> None:
    """InitRetrieve's question-entity channel under the switch: every question's channel (k = 20 as the paper, and
    k = 3, which the index decides more often) equals the whole pools' ranking, and both branches run."""
    view = hotpot_view
    before = dict(view.calls)
    for item in hotpot_questions:
        q_vec = view.encode([item.question])[0]
        entity_ids = [e.id for e in view.question_entities(item.question, PAPER.question_ngram_max)]
        pools = view.lookup_pools(entity_ids, articles=False)
        for k in (PAPER.init_entity_k, 3):
            paper = [s for s, _ in view.rank(q_vec, [s for e in entity_ids for s in pools.get(e, ())])][:k]
            assert menu.question_entity_channel(view, entity_ids, q_vec, k, BOUNDED) == paper, (item.id, k)
            assert menu.question_entity_channel(view, entity_ids, q_vec, k, PAPER) == paper, (item.id, k)
    decided = view.calls["index_channels"] - before["index_channels"]
    fell_back = view.calls["index_channel_fallbacks"] - before["index_channel_fallbacks"]
    assert decided > 0 and fell_back > 0, (decided, fell_back)


def test_an_entity_with_fewer_than_m_mentions_reads_its_pool_without_the_index(hotpot_view: GraphView) -> None:
    view = hotpot_view
    small, big = entities_split_by_mentions(view, 4)
    assert small and big
    m_vec = view.encode(["Which film director was born first?"])[0]
    cfg = EnvConfig(lookup_index_top_m=4)
    before = dict(view.calls)
    assert index_lookup_results(view, small, m_vec, set(), set(), cfg) == {}
    assert view.calls == before  # no round trip, nothing tried
    index_lookup_results(view, big, m_vec, set(), set(), cfg)
    tried = sum(view.calls[k] - before[k] for k in ("index_lookups", "index_fallbacks"))
    assert tried == len(big)


def test_the_switch_is_recorded_and_a_resume_with_another_value_is_refused(hotpot_view: GraphView, hotpot_questions,
                                                                           tmp_path: Path, every_entity: None) -> None:
    out = tmp_path / "run"
    env = EnvConfig(max_turns=2, lookup_index_top_m=M)
    summary = run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, out, env_config=env,
                       config=EvalConfig(limit=1), progress=False)
    assert summary["questions"] == 1
    config = json.loads((out / "config.json").read_text())
    assert config["env"]["lookup_index_top_m"] == M
    with pytest.raises(ConfigError, match=r"env\.lookup_index_top_m: 40 -> 0"):
        run_eval(hotpot_view, make_policy("heuristic"), hotpot_questions, out, env_config=replace(env, lookup_index_top_m=0),
                 config=EvalConfig(limit=2), progress=False)
