"""EnvConfig.article_pool: a LOOKUP of an entity that titles an article may show any sentence of that article;
EnvConfig.anchor_slot: such a LOOKUP always shows the article's title anchor. Two extensions, each its own switch
(both off in the paper preset, on in the extended one).

Runs on both stores (``hotpot_view`` is parametrised by store kind) against the HotpotQA test graph. The expected
article sentences are derived from the artifact's Parquet tables, independently of ``lookup_candidates_multi``'s
``article`` channel.
"""
from __future__ import annotations

from collections import defaultdict

import pytest

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.menu import lookup_result, text_key


def _expected_anchors(view) -> dict[str, frozenset[str]]:
    """entity id -> the title anchor sentences (mention kind 'title') of the articles it titles, itself or through a
    'title' synonym, from the artifact."""
    art = view.artifact
    m = art.table("mentions", columns=["sentence_id", "entity_id", "kind"]).to_pydict()
    own: dict[str, set[str]] = defaultdict(set)
    for sid, eid, kind in zip(m["sentence_id"], m["entity_id"], m["kind"]):
        if kind == "title":
            own[eid].add(sid)
    out: dict[str, set[str]] = defaultdict(set, {e: set(s) for e, s in own.items()})
    syn = art.table("synonyms", columns=["src", "dst", "kind"]).to_pydict()
    for a, b, kind in zip(syn["src"], syn["dst"], syn["kind"]):
        if kind == "title":
            out[a] |= own.get(b, set())
            out[b] |= own.get(a, set())
    return {e: frozenset(s) for e, s in out.items() if s}


def _expected_articles(view) -> dict[str, tuple[str, ...]]:
    """entity id -> sorted sentence ids of the article(s) it titles, from the artifact: the paragraphs of the title
    anchors it reaches (:func:`_expected_anchors`: its own, or a 'title' synonym's)."""
    sents = view.artifact.table("sentences", columns=["id", "paragraph_id"]).to_pydict()
    by_paragraph: dict[str, list[str]] = defaultdict(list)
    for sid, pid in zip(sents["id"], sents["paragraph_id"]):
        by_paragraph[pid].append(sid)
    paragraph_of = dict(zip(sents["id"], sents["paragraph_id"]))
    return {e: tuple(sorted(s for p in {paragraph_of[a] for a in anchors} for s in by_paragraph[p]))
            for e, anchors in _expected_anchors(view).items()}


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
            env = MenuEnv(hotpot_view, EnvConfig(article_pool=article_pool, anchor_slot=article_pool))
            env.reset(item)
            st = env.state
            committed_keys = {text_key(s.text) for s in hotpot_view.sentences(st.committed).values()}
            ids = [e.id for e in env.menu.entities]
            pools = hotpot_view.lookup_pools(ids, articles=article_pool)
            anchors = hotpot_view.title_anchors(ids) if article_pool else {}
            for e in env.menu.entities:
                assert env.menu.lookup_results[e.id] == lookup_result(
                    hotpot_view, pools[e.id], env._m_vec, set(st.committed), committed_keys, env.config,
                    anchors=anchors.get(e.id, frozenset()))
            menus[article_pool] = dict(env.menu.lookup_results)
        differs += menus[True] != menus[False]
    assert differs >= 1, "the article channel never changed a LOOKUP result on the test questions"


def test_the_anchor_flag_marks_the_first_sentence_of_each_article_an_entity_titles(hotpot_view) -> None:
    """``lookup_candidates_multi``'s ``anchor`` column (GraphView.title_anchors) against the artifact's title
    mentions, on both stores (Neo4j returns the anchor through its own branches: relationship uniqueness)."""
    expected = _expected_anchors(hotpot_view)
    ids = hotpot_view.artifact.table("entities", columns=["id"]).column("id").to_pylist()
    got = hotpot_view.title_anchors(ids)
    assert {e: a for e, a in got.items() if a} == expected
    assert len(expected) >= 10
    # anchors are first sentences, and in the entity's pool
    pools = hotpot_view.lookup_pools(sorted(expected), articles=True)
    for e, anchors in expected.items():
        assert all(sid.endswith(":0") for sid in anchors), (e, anchors)
        assert anchors <= set(pools[e]), e
    rows = hotpot_view.store.query("lookup_candidates_multi", {"entity_ids": sorted(expected)[:5], "articles": False})
    assert rows and not any(r["anchor"] for r in rows)  # the paper's pool marks nothing


@pytest.mark.parametrize("article_pool", [False, True])
def test_a_lookup_shows_the_title_anchor_of_the_entity_s_article(hotpot_view, hotpot_questions, article_pool) -> None:
    """With anchor_slot, every menu LOOKUP result of an entity that titles an article holds one of its anchors
    (unless each is committed or its text already is), over the paper's pool C(e) as over the article pool."""
    checked = 0
    for item in hotpot_questions:
        env = MenuEnv(hotpot_view, EnvConfig(anchor_slot=True, article_pool=article_pool))
        env.reset(item)
        for _ in range(2):  # the first menu, and the menu after committing its first sentence
            st = env.state
            committed_keys = {text_key(s.text) for s in hotpot_view.sentences(st.committed).values()}
            anchors = hotpot_view.title_anchors([e.id for e in env.menu.entities])
            for e in env.menu.entities:
                own = anchors[e.id] - set(st.committed)
                own_texts = {text_key(s.text) for s in hotpot_view.sentences(sorted(own)).values()}
                if own and not own_texts <= committed_keys:
                    assert own & set(env.menu.lookup_results[e.id]), (item.id, e.name)
                    checked += 1
            selects = [a for a in env.menu.actions if a.type.value == "SELECT"]
            if not selects or env.done:
                break
            env.step(selects[0].id)
    assert checked >= (20 if article_pool else 15)  # the paper's pools reach fewer articles


def test_the_anchor_takes_the_last_slot_only_when_the_ranking_left_it_out(hotpot_view, hotpot_questions) -> None:
    """Ranked by other questions' vectors (an m_t about something else), a large pool often leaves the anchor out:
    then it replaces the last sentence and the other K_s - 1 are the plain ranking's; otherwise nothing changes."""
    cfg = EnvConfig()
    anchors = {e: a for e, a in _expected_anchors(hotpot_view).items()}
    pools = hotpot_view.lookup_pools(sorted(anchors), articles=True)
    large = [e for e in sorted(anchors) if len(pools[e]) > cfg.visible_cap][:15]
    assert large, "the test graph should have an article-titling entity with a pool larger than K_s"
    took = kept = 0
    for item in hotpot_questions[:8]:
        m_vec = hotpot_view.encode([item.question])[0]
        for e in large:
            plain = lookup_result(hotpot_view, pools[e], m_vec, set(), set(), cfg)
            shown = lookup_result(hotpot_view, pools[e], m_vec, set(), set(), cfg, anchors=anchors[e])
            if anchors[e] & set(plain):
                assert shown == plain
                kept += 1
            else:
                took += 1
                assert len(shown) == len(plain) == cfg.visible_cap
                assert shown[:-1] == plain[:-1] and shown[-1] in anchors[e]
                best = hotpot_view.rank_top(m_vec, sorted(anchors[e]), len(anchors[e]))[0]
                assert shown[-1] == best  # the best anchor by the same cosine
    assert took >= 1 and kept >= 1


def test_the_anchor_slot_is_its_own_switch(hotpot_view, hotpot_questions) -> None:
    """``anchor_slot`` alone decides whether a LOOKUP gets its title anchors (whatever ``article_pool`` says), and
    ``article_pool`` alone which pool it ranks; off (the paper preset) every menu LOOKUP result is the plain top K_s
    of its pool by m_t (that an anchor changes a result when given: the test above)."""
    from harness_g.agent.env.menu import candidate_pools

    ids = sorted(_expected_anchors(hotpot_view))
    for article_pool in (False, True):
        for anchor_slot in (False, True):
            pools, anchors = candidate_pools(hotpot_view, ids, EnvConfig(article_pool=article_pool, anchor_slot=anchor_slot))
            assert pools == hotpot_view.lookup_pools(ids, articles=article_pool)
            assert anchors == (hotpot_view.title_anchors(ids) if anchor_slot else {})
            assert not anchor_slot or any(anchors.values())
    for item in hotpot_questions:
        for article_pool in (False, True):
            env = MenuEnv(hotpot_view, EnvConfig(article_pool=article_pool, anchor_slot=False))
            env.reset(item)
            st = env.state
            committed_keys = {text_key(s.text) for s in hotpot_view.sentences(st.committed).values()}
            pools = hotpot_view.lookup_pools([e.id for e in env.menu.entities], articles=article_pool)
            for e in env.menu.entities:
                assert env.menu.lookup_results[e.id] == lookup_result(
                    hotpot_view, pools[e.id], env._m_vec, set(st.committed), committed_keys, env.config)
