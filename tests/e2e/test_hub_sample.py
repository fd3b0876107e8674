"""Hub samples (``EnvConfig.lookup_hub_sample``, issue 35 item 5): what the loaders store and what a sampled LOOKUP
reads, on the real HotpotQA test graph and both stores.

The test graph has no entity with 1000 sentences, so it is loaded here with hub samples of 3 sentences: every entity
mentioned in more than 3 sentences is a hub. Its pool C'(e) must be P(e) ∪ P(Syn(e)) ∪ N_SS(P(e)) with P(x) the
stored sample of a hub and S(x) otherwise, computed here from the artifact's tables; an entity whose pool touches no
hub keeps the paper's C(e). Seeded walks then run with the switch on.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from helpers.mentions import mentioned_sentences
from helpers.seeded_walk import seeded_walk

from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env import menu
from harness_g.agent.env.menu import index_lookup_results, lookup_pools, lookup_result, lookup_results_for
from harness_g.errors import ConfigError, StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.hub_sample import HUB_SAMPLE_SIZE
from harness_g.graph.stores.loader import artifact_samples, next_pairs

H = 3
SAMPLED = EnvConfig(lookup_hub_sample=H)


@pytest.fixture
def sampled_view(scratch_store: Any, hotpot_graph_dir: Path, falkordb_hotpot_view: GraphView) -> GraphView:
    artifact = Artifact.open(hotpot_graph_dir)
    report = scratch_store.load(artifact, progress=False, hub_sample=H)
    assert report.rows["pool_samples"] == len(artifact_samples(artifact, H)) > 5
    return GraphView(scratch_store, artifact, embedder=falkordb_hotpot_view.embedder)


def _expected_pools(artifact: Artifact,
                    samples: dict[str, list[str]]) -> tuple[dict[str, tuple[str, ...]], set[str]]:
    """C'(e) from the artifact's tables, in the query's order (channel, then id); the entities whose C'(e) reads a
    sample (e or a synonym is a hub)."""
    mentioned = mentioned_sentences(artifact)
    synonyms: dict[str, set[str]] = defaultdict(set)
    table = artifact.table("synonyms", columns=["src", "dst"])
    for a, b in zip(table.column("src").to_pylist(), table.column("dst").to_pylist()):
        synonyms[a].add(b)
        synonyms[b].add(a)
    neighbours: dict[str, set[str]] = defaultdict(set)
    for a, b in next_pairs(artifact):
        neighbours[a].add(b)
        neighbours[b].add(a)

    def read(x: str) -> set[str]:
        return set(samples[x]) if x in samples else mentioned[x]

    out, touched = {}, set()
    for eid in artifact.table("entities", columns=["id"]).column("id").to_pylist():
        if eid in samples or synonyms[eid] & set(samples):
            touched.add(eid)
        channel: dict[str, int] = {}
        for sid in read(eid):
            channel[sid] = 0
        for other in synonyms[eid]:
            for sid in read(other):
                channel.setdefault(sid, 1)
        for sid in read(eid):
            for n in neighbours[sid]:
                channel.setdefault(n, 2)
        out[eid] = tuple(sid for sid, _ in sorted(channel.items(), key=lambda kv: (kv[1], kv[0])))
    return out, touched


def test_the_store_holds_each_hubs_sample(sampled_view: GraphView) -> None:
    store, artifact = sampled_view.store, sampled_view.artifact
    stored = {r["id"]: list(r["sample"]) for r in store.query("pool_samples_get")}
    assert stored == artifact_samples(artifact, H)
    assert store.meta()["hub_sample"] == H and store.stats()["hub_sample"] == H
    assert all(len(ids) == H for ids in stored.values())


def test_every_sampled_pool_is_the_sampled_equation(sampled_view: GraphView) -> None:
    view = sampled_view
    samples = artifact_samples(view.artifact, H)
    expected, touched = _expected_pools(view.artifact, samples)
    ids = sorted(expected)
    got = lookup_pools(view, ids, SAMPLED)
    assert got == expected, [e for e in ids if got[e] != expected[e]][:5]
    paper = lookup_pools(view, ids, EnvConfig())
    hubs = set(samples)
    # an entity whose pool reads no sample keeps the paper's pool; a hub's pool is smaller than the paper's
    assert all(got[e] == paper[e] for e in ids if e not in touched) and len(touched) < len(ids) // 2
    assert all(set(got[e]) <= set(paper[e]) for e in ids)
    assert any(len(got[e]) < len(paper[e]) for e in hubs)
    assert max(len(got[e]) for e in hubs) < max(len(paper[e]) for e in hubs)


def test_walks_with_the_switch_read_only_sampled_pools(sampled_view: GraphView, hotpot_questions) -> None:
    view = sampled_view
    pools = {}
    lookups = 0
    for item in hotpot_questions[:3]:
        for seed in range(2):
            for step in seeded_walk(view, SAMPLED, item, seed):
                for entity, result in step["lookups"].items():
                    pools.setdefault(entity, set(lookup_pools(view, [entity], SAMPLED)[entity]))
                    assert set(result) <= pools[entity], entity
                    lookups += 1
    assert lookups > 10


def test_without_hubs_the_switch_is_the_paper(hotpot_view: GraphView, hotpot_questions) -> None:
    """The session graph is loaded with the default size: no entity of the test graph has 1000 sentences."""
    assert hotpot_view.store.meta()["hub_sample"] == HUB_SAMPLE_SIZE
    assert not artifact_samples(hotpot_view.artifact, HUB_SAMPLE_SIZE)
    switch = EnvConfig(lookup_hub_sample=HUB_SAMPLE_SIZE)
    for item in hotpot_questions[:2]:
        assert seeded_walk(hotpot_view, switch, item, 0) == seeded_walk(hotpot_view, EnvConfig(), item, 0)


def test_a_store_with_other_samples_or_none_is_refused(sampled_view: GraphView) -> None:
    view = sampled_view
    with pytest.raises(StoreError, match=r"lookup_hub_sample=4, but .* holds hub samples of 3 sentences; set "
                                         r"lookup_hub_sample=3$"):
        view.lookup_pools(["x"], articles=False, hub_sample=4)
    store, artifact = view.store, view.artifact
    meta = store.meta()
    store.write("meta_begin", {**{k: meta[k] for k in ("content_hash", "embedding_model", "embedding_dim",
                                                         "loaded_at", "graph_dir", "graph_host", "graph_name")},
                               "hub_sample": None})
    store.write("meta_complete", {"content_hash": meta["content_hash"], "loaded_at": meta["loaded_at"]})
    fresh = GraphView(store, artifact, embedder=view.embedder)
    with pytest.raises(StoreError, match=r"without hub samples .*harness-g build --out .* --force`\) or set "
                                         r"lookup_hub_sample=0$"):
        fresh.lookup_pools(["x"], articles=False, hub_sample=H)
    # a store holding the graph without recorded samples gets its samples written, the graph kept: no clear, no
    # stage but the samples; a load without a size then keeps the size the store holds
    assert not store.holds(artifact, H) and not store.holds(artifact)
    nodes = store.stats()["nodes"]
    report = store.load(artifact, progress=False, hub_sample=2)
    assert report.resampled and set(report.rows) == {"pool_samples"} and "clear" not in report.seconds
    assert _stored(store) == artifact_samples(artifact, 2) and store.meta()["hub_sample"] == 2
    assert store.meta()["complete"] is True and store.stats()["nodes"] == nodes
    assert store.load(artifact, progress=False).skipped and store.holds(artifact)
    assert store.load(artifact, progress=False, hub_sample=2).skipped


def _stored(store: Any) -> dict[str, list[str]]:
    return {r["id"]: list(r["sample"]) for r in store.query("pool_samples_get")}


def test_another_size_rewrites_only_the_samples_that_change(sampled_view: GraphView) -> None:
    """3 -> 6: fewer hubs; the entities that stop being hubs lose their sample (null), the others get the new one,
    exactly what a full load at 6 writes; the same rows on a store loaded at 6 from empty (the full-load path)."""
    store, artifact = sampled_view.store, sampled_view.artifact
    at3, at6 = artifact_samples(artifact, H), artifact_samples(artifact, 6)
    assert set(at6) < set(at3), "the test graph needs entities in 4-6 sentences"
    report = store.load(artifact, progress=False, hub_sample=6)
    assert report.rows["pool_samples"] == len(set(at3) - set(at6)) + sum(at3.get(e) != v for e, v in at6.items())
    assert _stored(store) == at6 and store.meta()["hub_sample"] == 6
    view = GraphView(store, artifact, embedder=sampled_view.embedder)
    assert view.lookup_pools(sorted(at6), articles=False, hub_sample=6)  # the view reads the new size
    store.clear()
    assert store.load(artifact, progress=False, hub_sample=6).rows["pool_samples"] == len(at6)
    assert _stored(store) == at6


def test_a_resample_cut_short_reloads_the_graph_whole(sampled_view: GraphView, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash while samples of another size are written leaves GraphMeta incomplete with no size: a
    view refuses it (an incomplete graph), and the next load clears the graph and loads it whole (never a mix of two
    sizes)."""
    from harness_g.graph.stores import loader

    store, artifact = sampled_view.store, sampled_view.artifact

    def crash(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(loader, "write_sample_rows", crash)
    with pytest.raises(KeyboardInterrupt):
        store.load(artifact, progress=False, hub_sample=2)
    meta = store.meta()
    assert meta["complete"] is False and meta["hub_sample"] is None
    with pytest.raises(StoreError, match="holds no complete graph"):
        GraphView(store, artifact, embedder=sampled_view.embedder).lookup_pools(["x"], articles=False, hub_sample=2)
    monkeypatch.undo()
    report = store.load(artifact, progress=False, hub_sample=2)
    assert "clear" in report.seconds and report.rows["sentences"] > 0 and not report.resampled
    assert _stored(store) == artifact_samples(artifact, 2) and store.meta()["complete"] is True


def test_with_the_index_a_lookup_is_the_papers_where_it_decides_and_sampled_elsewhere(
        sampled_view: GraphView, hotpot_questions, monkeypatch: pytest.MonkeyPatch) -> None:
    """``lookup_index_top_m`` with ``lookup_hub_sample``: the index's decided LOOKUPs are the paper's (exact when the
    index is), the others rank the sampled pool instead of the whole one. M = 40 and every entity tried, so both
    branches run."""
    monkeypatch.setattr(menu, "INDEX_MENTIONS_PER_M", 0.0)
    view = sampled_view
    both, paper = EnvConfig(lookup_hub_sample=H, lookup_index_top_m=40), EnvConfig()
    ids = sorted(artifact_samples(view.artifact, 1))  # entities mentioned in two or more sentences
    sampled, whole = lookup_pools(view, ids, SAMPLED), lookup_pools(view, ids, paper)
    decided_total = sampled_only = 0
    for item in hotpot_questions[:3]:
        m_vec = view.encode([item.question])[0]
        decided = index_lookup_results(view, ids, m_vec, set(), set(), both)
        got = lookup_results_for(view, ids, m_vec, set(), set(), both)
        for e in ids:
            exact = lookup_result(view, whole[e], m_vec, set(), set(), paper)
            if e in decided:
                assert got[e] == decided[e] == exact, e
            else:
                assert got[e] == lookup_result(view, sampled[e], m_vec, set(), set(), SAMPLED), e
                sampled_only += got[e] != exact
        decided_total += len(decided)
    assert decided_total > 0 and sampled_only > 0


@pytest.mark.parametrize("other", [{"article_pool": True}, {"anchor_slot": True}, {"lookup_store_rank_min": 10}])
def test_the_switch_refuses_what_it_does_not_sample(other: dict) -> None:
    name = next(iter(other))
    with pytest.raises(ConfigError, match=rf"^lookup_hub_sample=3 samples the paper's pool C\(e\) .* with {name}"):
        EnvConfig(lookup_hub_sample=3, **other)
