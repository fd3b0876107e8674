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


def test_bad_embedding_shape() -> None:
    a, b = ent("Paris", "GPE"), ent("Rome", "GPE")
    with pytest.raises(ValueError):
        link_entities([a, b], title_ids=set(), embeddings=np.zeros((3, 4), np.float32))
