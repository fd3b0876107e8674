"""A LOOKUP's ranking costs its pool, not the corpus (issue 35 item 5), on the real HotpotQA test graph.

Before, every pool of >= 256 sentences took its cosines from one product over ALL sentences of the graph (one per m_t):
a step cost that grows with the corpus whatever the pool (benchmarks/results/scale.md). Now that product serves a pool
only while the graph has at most ``GraphView._ALL_SIMS_RATIO`` sentences per pool sentence; beyond, the pool's own
rows are gathered, with the same ranking.
"""
from __future__ import annotations

import numpy as np

from harness_g.agent.env.graph_view import GraphView


def test_a_small_pool_of_a_large_graph_is_ranked_without_the_all_sentence_product(hotpot_view: GraphView) -> None:
    view = hotpot_view
    n = len(view.sentence_ids)
    pool = tuple(view.sentence_ids[:120])
    assert n > len(pool), n
    m_vec = view.encode(["Which film director was born first?"])[0]
    expected = [sid for sid, _ in view.rank(m_vec, pool)][:50]
    view.__dict__.pop("_rank_lrus", None)  # empty ranking caches
    try:
        view._BIG_POOL = 100  # this test graph has ~240 sentences: "big" pools from 100 on here (256 by default)
        view._ALL_SIMS_RATIO = (n - 1) / len(pool)  # this graph is "more than ratio x the pool": the pool's rows only
        got = view.rank_top(m_vec, pool, 50)
        assert not view._rank_caches[1]._data, "the all-sentence product was computed for a pool of a larger graph"
        assert got == expected
        view._ALL_SIMS_RATIO = n / len(pool)  # at the ratio: the shared all-sentence product, the same ranking
        assert view.rank_top(m_vec, pool, 50) == expected
        assert len(view._rank_caches[1]._data) == 1
    finally:
        view.__dict__.pop("_ALL_SIMS_RATIO", None)  # back to the class defaults
        view.__dict__.pop("_BIG_POOL", None)
        view.__dict__.pop("_rank_lrus", None)
    assert np.isfinite(m_vec).all()
