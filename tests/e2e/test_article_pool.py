"""EnvConfig.article_pool: a LOOKUP of an entity that titles an article may show any sentence of that article.

Runs on both stores (``hotpot_view`` is parametrised by store kind) against the HotpotQA test graph. The expected
article sentences are derived from the artifact's Parquet tables, independently of ``lookup_candidates_multi``'s
``article`` channel.
"""
from __future__ import annotations

from collections import defaultdict

from harness_g.agent.config import EnvConfig
from harness_g.agent.env import MenuEnv
from harness_g.agent.menu import lookup_result, text_key


def _expected_articles(view) -> dict[str, tuple[str, ...]]:
    """entity id -> sorted sentence ids of the article(s) it titles, from the artifact: a title anchor (mention kind
    'title') titles its sentence's paragraph; a 'title' synonym of that TITLE entity titles it too."""
    art = view.artifact
    sents = art.table("sentences", columns=["id", "paragraph_id"]).to_pydict()
    by_paragraph: dict[str, list[str]] = defaultdict(list)
    for sid, pid in zip(sents["id"], sents["paragraph_id"]):
        by_paragraph[pid].append(sid)
    paragraph_of = dict(zip(sents["id"], sents["paragraph_id"]))
    m = art.table("mentions", columns=["sentence_id", "entity_id", "kind"]).to_pydict()
    anchored: dict[str, set[str]] = defaultdict(set)  # TITLE entity -> the paragraphs its anchor sits in
    for sid, eid, kind in zip(m["sentence_id"], m["entity_id"], m["kind"]):
        if kind == "title":
            anchored[eid].add(paragraph_of[sid])
    titled: dict[str, set[str]] = defaultdict(set, {e: set(p) for e, p in anchored.items()})
    syn = art.table("synonyms", columns=["src", "dst", "kind"]).to_pydict()
    for a, b, kind in zip(syn["src"], syn["dst"], syn["kind"]):
        if kind == "title":  # one hop, either direction, to an anchored TITLE entity
            titled[a] |= anchored.get(b, set())
            titled[b] |= anchored.get(a, set())
    return {e: tuple(sorted(s for p in ps for s in by_paragraph[p])) for e, ps in titled.items() if ps}


def test_the_article_channel_adds_the_articles_an_entity_titles(hotpot_view) -> None:
    expected = _expected_articles(hotpot_view)
    assert len(expected) >= 10, "the test graph should title some articles"
    ids = hotpot_view.artifact.table("entities", columns=["id"]).column("id").to_pylist()
    paper = hotpot_view.lookup_pools(ids, articles=False)
    wider = hotpot_view.lookup_pools(ids, articles=True)
    grown = 0
    for e in ids:
        base, more = paper.get(e, ()), expected.get(e, ())
        # the paper's C(e) first, in its channel order; then the article's other sentences, by id
        assert wider.get(e, ())[: len(base)] == base, e
        assert wider.get(e, ())[len(base):] == tuple(sorted(set(more) - set(base))), e
        grown += len(wider.get(e, ())) > len(base)
    # non-vacuous: some article sentences are neither mentions, synonyms' mentions nor their neighbours
    assert grown >= 5
    rows = hotpot_view.store.query("lookup_candidates_multi", {"entity_ids": sorted(expected)[:3], "articles": True})
    assert {r["channel"] for r in rows} >= {"mention", "article"}
    assert all(r["priority"] == 3 for r in rows if r["channel"] == "article")
    # through a 'title' synonym: some non-anchor entity (a PERSON, say) gets its namesake article
    m = hotpot_view.artifact.table("mentions", columns=["entity_id", "kind"]).to_pydict()
    anchors = {e for e, k in zip(m["entity_id"], m["kind"]) if k == "title"}
    assert set(expected) - anchors, "no entity reached an article through a title synonym"


def test_the_menu_ranks_the_wider_pool_and_the_switch_restores_the_paper_pool(hotpot_view, hotpot_questions) -> None:
    differs = 0
    for item in hotpot_questions:
        menus = {}
        for article_pool in (True, False):
            env = MenuEnv(hotpot_view, EnvConfig(article_pool=article_pool))
            env.reset(item)
            st = env.state
            committed_keys = {text_key(s.text) for s in hotpot_view.sentences(st.committed).values()}
            pools = hotpot_view.lookup_pools([e.id for e in env.menu.entities], articles=article_pool)
            for e in env.menu.entities:
                assert env.menu.lookup_results[e.id] == lookup_result(
                    hotpot_view, pools[e.id], env._m_vec, set(st.committed), committed_keys, env.config)
            menus[article_pool] = dict(env.menu.lookup_results)
        differs += menus[True] != menus[False]
    assert differs >= 1, "the article channel never changed a LOOKUP result on the test questions"
