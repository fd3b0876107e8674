"""Entity-entity synonym links by rule (abbreviations, titles, person aliases) and the blockwise embedding search on
hand-made vectors; no model. Embedding links with the real MiniLM model: tests/e2e/test_text_linking_embeddings.py."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.synonym_links import check_invariants, ent, pair, pairs

from harness_g.graph.text.linking import EntityRecord, abbreviation_key, initials, link_entities, spelling_key
from harness_g.graph.types import entity_id


# ---------------------------------------------------------------- rule links

def test_abbreviation_helpers() -> None:
    assert abbreviation_key("NASA") == "nasa"
    assert abbreviation_key("U.S.") == "us"
    assert abbreviation_key("U.S.A.") == "usa"
    assert abbreviation_key("Nasa") is None
    assert abbreviation_key("A") is None
    assert abbreviation_key("ABCDEFG") is None
    assert abbreviation_key("US Army") is None
    assert "nasa" in initials("national aeronautics and space administration")
    assert "dod" in initials("department of defense")
    assert initials("paris") == set()


def test_canonical_title_abbreviation_links() -> None:
    paris_gpe = ent("Paris", "GPE")
    paris_person = ent("Paris", "PERSON")  # same canonical, other label -> canonical edge
    title_film = EntityRecord(entity_id("TITLE", "paris film"), "paris film", "TITLE", "Paris (film)")
    title_nasa = EntityRecord(entity_id("TITLE", "nasa"), "nasa", "TITLE", "NASA")
    nasa_long = ent("National Aeronautics and Space Administration", "ORG")
    nasa_org = ent("NASA", "ORG")
    us = ent("U.S.", "GPE")
    us_long = ent("United States", "GPE")
    us_steel = ent("US Steel", "ORG")  # contains "us" as a token: not an expansion
    nyc = ent("New York", "GPE")
    ents = [paris_gpe, paris_person, title_film, title_nasa, nasa_long, nasa_org, us, us_long,
            us_steel, nyc]
    edges = link_entities(ents, title_ids={title_film.id, title_nasa.id})
    check_invariants(edges)
    kinds = {(e.src, e.dst): e.kind for e in edges}

    assert kinds[pair(paris_gpe, paris_person)] == "canonical"
    assert kinds[pair(title_film, paris_gpe)] == "title"  # trailing parenthetical removed
    assert kinds[pair(title_film, paris_person)] == "title"
    assert kinds[pair(title_nasa, nasa_org)] == "title"  # title beats canonical
    assert kinds[pair(nasa_org, nasa_long)] == "abbreviation"
    assert kinds[pair(title_nasa, nasa_long)] == "abbreviation"
    assert kinds[pair(us, us_long)] == "abbreviation"
    assert pair(us, us_steel) not in kinds
    assert not any(nyc.id in k for k in kinds)
    assert all(e.score == 1.0 for e in edges)


def test_alias_edges_from_the_person_alias_merge() -> None:
    """``alias_pairs`` (from the build's document-local person-alias merge) become ``alias`` edges: below title and
    canonical links in priority, above abbreviation and embedding ones; pairs with an unknown id are ignored."""
    schneider = ent("Schneider", "PERSON")
    helge = EntityRecord(entity_id("TITLE", "helge schneider"), "helge schneider", "TITLE", "Helge Schneider")
    helge_p = ent("Helge Schneider", "PERSON")
    ents = [schneider, helge, helge_p]
    edges = link_entities(ents, title_ids={helge.id}, alias_pairs=[(schneider.id, helge.id), (schneider.id, "e_unknown")])
    check_invariants(edges)
    kinds = {(e.src, e.dst): e.kind for e in edges}
    assert kinds[pair(schneider, helge)] == "alias"
    assert kinds[pair(helge, helge_p)] == "title"  # an alias pair never overrides a title link
    assert not any("e_unknown" in k for k in kinds)
    assert link_entities(ents, title_ids={helge.id}, alias_pairs=[(helge_p.id, helge.id)]) == \
        link_entities(ents, title_ids={helge.id})
    assert pair(schneider, helge) not in {(e.src, e.dst) for e in link_entities(ents, title_ids={helge.id})}


def test_a_title_links_the_spellings_of_its_name_that_differ_in_accents_spaces_or_hyphens() -> None:
    """The 2Wiki article "Andre DeToth" and the PERSON "André De Toth" a film article credits are one man: without
    the link, LOOKUP(André De Toth) never shows his article (a 2Wiki dev question was unreachable for it)."""
    assert spelling_key("andré de toth") == spelling_key("andre detoth") == "andredetoth"
    title = ent("Andre DeToth", "TITLE")
    credited = ent("André De Toth", "PERSON")
    hyphen = ent("Andre De-Toth", "PERSON")
    other = ent("Andre Toth", "PERSON")  # a different spelling of letters: not linked by this rule
    short_title, short = ent("Li Na", "TITLE"), ent("Lina", "PERSON")  # keys under 6 letters: too often other names
    everyone = [title, credited, hyphen, other, short_title, short]
    # BuildConfig.spelling_links (an extension): off, the paper's surface normalization links none of them
    assert link_entities(everyone, title_ids={title.id, short_title.id}) == []
    edges = link_entities(everyone, title_ids={title.id, short_title.id}, spelling_links=True)
    kinds = {(e.src, e.dst): e.kind for e in edges}
    assert kinds[pair(title, credited)] == "title"
    assert kinds[pair(title, hyphen)] == "title"
    assert pair(title, other) not in kinds
    assert pair(short_title, short) not in kinds
    # between two non-title spellings this rule adds nothing (the title is what names the article)
    assert pair(credited, hyphen) not in kinds


def test_titles_are_not_linked_through_parentheticals() -> None:
    """Two titles "Paris" and "Paris (film)" are different documents, not synonyms."""
    city = EntityRecord(entity_id("TITLE", "paris"), "paris", "TITLE", "Paris")
    film = EntityRecord(entity_id("TITLE", "paris film"), "paris film", "TITLE", "Paris (film)")
    assert link_entities([city, film], title_ids={city.id, film.id}) == []


def test_duplicate_ids_rejected() -> None:
    a = ent("Paris", "GPE")
    with pytest.raises(ValueError):
        link_entities([a, a], title_ids=set())


def test_blockwise_matches_bruteforce(monkeypatch) -> None:
    """Small blocks (forced) give exactly the one-shot result on random unit vectors."""
    import harness_g.graph.text.linking as linking

    rng = np.random.default_rng(0)
    n, d = 300, 16
    base = rng.normal(size=(30, d))
    x = base[rng.integers(0, 30, n)] + 0.3 * rng.normal(size=(n, d))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    ents = [EntityRecord(f"e{i:04d}", f"name {i}", "ORG", f"Name {i}") for i in range(n)]
    one_shot = link_entities(ents, title_ids=set(), embeddings=x, top_k=3, min_cosine=0.8)
    monkeypatch.setattr(linking, "_BLOCK_VALUES", 7 * n)  # 7-row blocks
    blocked = link_entities(ents, title_ids=set(), embeddings=x, top_k=3, min_cosine=0.8)
    assert [(e.src, e.dst, e.kind) for e in blocked] == [(e.src, e.dst, e.kind) for e in one_shot]
    assert one_shot
    # Brute force: union over rows of the top-3 (score desc, id asc) neighbours >= 0.8.
    sims = x @ x.T
    expected = set()
    for i in range(n):
        cand = sorted((j for j in range(n) if j != i and sims[i, j] >= 0.8),
                      key=lambda j: (-sims[i, j], j))[:3]
        expected |= {tuple(sorted((ents[i].id, ents[j].id))) for j in cand}
    assert pairs(one_shot) == expected


def _clustered_unit_vectors(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n // 10, d))
    x = base[rng.integers(0, n // 10, n)] + 0.3 * rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("block_values", [None, 7 * 300])  # the default one block, and 7-row similarity blocks
def test_embedding_candidates_over_any_split_of_rows_are_the_unsplit_ones(monkeypatch, block_values) -> None:
    """The Ray build's top-k tasks (issue 35 item 2): ``embedding_candidates`` over the row ranges of any split of
    [0, m), concatenated in range order, are exactly its candidates over [0, m) -- a range boundary (or a similarity
    block boundary inside a range) neither drops nor duplicates one -- and merged in that order they are the edges of
    ``link_entities``."""
    import harness_g.graph.text.linking as linking
    from harness_g.graph.build_ray import link_ranges

    if block_values:
        monkeypatch.setattr(linking, "_BLOCK_VALUES", block_values)
    n = 300
    x = _clustered_unit_vectors(n, 16, 0)
    ents = [EntityRecord(f"e{i:04d}", f"name {i % 40}", "ORG", f"Name {i}") for i in range(n)]  # canonical rule edges
    rules = linking.rule_edges(ents, title_ids=set())
    ids, emb = linking.embedding_rows(ents, x)
    excluded = linking.excluded_columns(ids, set(rules))
    assert rules and excluded
    whole = linking.embedding_candidates(emb, excluded, 0, n, 3, 0.8)
    assert whole[0].size > n  # most rows have candidates: every boundary below cuts between candidate rows

    rng = np.random.default_rng(1)
    splits = [[0, n], list(range(n + 1)), [0, 1, 2, 150, 151, n - 1, n], [0, 0, 7, 7, 14, n, n]]  # empty ranges too
    splits += [[0, *sorted(rng.choice(np.arange(1, n), size=k, replace=False).tolist()), n] for k in (3, 17, 60)]
    splits.append([0, *[r1 for _, r1 in link_ranges(n, 8, linking.embedding_block_rows(n))]])
    for cuts in splits:
        parts = [linking.embedding_candidates(emb, excluded, r0, r1, 3, 0.8) for r0, r1 in zip(cuts, cuts[1:])]
        joined = tuple(np.concatenate([p[i] for p in parts]) for i in range(3))
        assert np.array_equal(joined[0], whole[0]) and np.array_equal(joined[1], whole[1]), cuts[:8]
        assert np.allclose(joined[2], whole[2], rtol=0, atol=1e-6), cuts[:8]  # float32 products: ulps
        edges = dict(rules)
        for part in parts:
            linking.add_embedding_candidates(edges, ids, *part)
        merged = [edges[k] for k in sorted(edges)]
        expected = link_entities(ents, title_ids=set(), embeddings=x, top_k=3, min_cosine=0.8)
        assert [(e.src, e.dst, e.kind) for e in merged] == [(e.src, e.dst, e.kind) for e in expected], cuts[:8]
        # a product of other row counts may round the 6th decimal the other way (BLAS kernels per shape)
        assert max(abs(a.score - b.score) for a, b in zip(merged, expected)) <= 2e-6, cuts[:8]


@pytest.mark.parametrize("block_values", [None, 7 * 300])  # the default one block, and 7-row similarity blocks
def test_embedding_candidates_of_a_row_subset_are_those_rows_of_the_whole_ranking(monkeypatch, block_values) -> None:
    """The append's re-ranking (graph/append.py, issue 35 item 4): ``embedding_candidates_of`` over any increasing
    subset of rows gives exactly those rows' candidates of the whole ranking (columns still range over every row;
    rule-linked and self columns left out); over ``range(r0, r1)`` it is ``embedding_candidates``. Bad rows refused."""
    import harness_g.graph.text.linking as linking

    if block_values:
        monkeypatch.setattr(linking, "_BLOCK_VALUES", block_values)
    n = 300
    x = _clustered_unit_vectors(n, 16, 2)
    ents = [EntityRecord(f"e{i:04d}", f"name {i % 40}", "ORG", f"Name {i}") for i in range(n)]
    ids, emb = linking.embedding_rows(ents, x)
    excluded = linking.excluded_columns(ids, set(linking.rule_edges(ents, title_ids=set())))
    whole = linking.embedding_candidates(emb, excluded, 0, n, 3, 0.8)
    assert whole[0].size > n and excluded
    rng = np.random.default_rng(3)
    subsets = [[0], [n - 1], [5, 6, 7, 8], [0, 150, n - 1], list(range(n))]
    subsets += [sorted(rng.choice(n, size=k, replace=False).tolist()) for k in (2, 13, 40, 170)]
    for rows in subsets:
        got = linking.embedding_candidates_of(emb, excluded, rows, 3, 0.8)
        mask = np.isin(whole[0], rows)
        assert np.array_equal(got[0], whole[0][mask]) and np.array_equal(got[1], whole[1][mask]), rows[:8]
        assert np.allclose(got[2], whole[2][mask], rtol=0, atol=1e-6), rows[:8]  # float32 products: ulps
        assert not any(int(c) in excluded.get(int(r), ()) or r == c for r, c in zip(got[0], got[1]))
    for r0, r1 in [(0, n), (7, 19), (150, 151), (20, 20)]:
        ranged = linking.embedding_candidates(emb, excluded, r0, r1, 3, 0.8)
        of = linking.embedding_candidates_of(emb, excluded, range(r0, r1), 3, 0.8)
        assert all(np.array_equal(a, b) for a, b in zip(ranged, of)), (r0, r1)
    assert all(p.size == 0 for p in linking.embedding_candidates_of(emb, excluded, [], 3, 0.8))
    for bad in ([3, 3], [4, 2], [-1, 2], [0, n]):
        with pytest.raises(ValueError, match="strictly increasing indexes"):
            linking.embedding_candidates_of(emb, excluded, bad, 3, 0.8)


def test_the_ray_link_ranges_cover_every_row_once_in_whole_blocks() -> None:
    from harness_g.graph.build_ray import LINK_MIN_ROWS, link_ranges

    for m, tasks, block in [(1, 8, 4096), (400, 8, 4096), (10_000, 8, 335), (10_000, 1, 335), (5, 64, 1)]:
        ranges = link_ranges(m, tasks, block)
        assert ranges[0][0] == 0 and ranges[-1][1] == m
        assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:])) and all(r0 < r1 for r0, r1 in ranges)
        assert len(ranges) <= max(tasks, 1) and all(r1 - r0 >= min(m, LINK_MIN_ROWS) for r0, r1 in ranges[:-1])
        if m > block:  # several similarity blocks: each task starts on a block boundary
            assert all(r0 % block == 0 for r0, _ in ranges)
    assert len(link_ranges(400, 8, 4096)) >= 2 and link_ranges(0, 8, 4096) == []


def test_bad_embedding_shape() -> None:
    a, b = ent("Paris", "GPE"), ent("Rome", "GPE")
    with pytest.raises(ValueError):
        link_entities([a, b], title_ids=set(), embeddings=np.zeros((3, 4), np.float32))
