"""Backend-independent store checks on the tiny graph, shared by the FalkorDB and Neo4j tests.

Every expected value is derived by hand from :mod:`helpers.tiny_artifact` (see its docstring).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers.store_queries import run_test_query

from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.base import GraphStore
from harness_g.graph.stores.loader import table_counts

EXPECTED_NODES = {"Paragraph": 3, "Sentence": 10, "Entity": 8, "GraphMeta": 1}
EXPECTED_RELS = {"CONTAINS": 10, "NEXT": 7, "MENTIONS": 14, "SYNONYM": 2}
EXPECTED_LOOKUPABLE = 7

#: entity -> [(sentence id, channel)] in the query's order (priority, then id)
LOOKUP = {
    # S = {curie:0}; Syn = {mcurie} -> {nobel:2, paris:2}; N(curie:0) = {curie:1}
    "e_curie": [("p_curie:0", "mention"), ("p_nobel:2", "synonym"), ("p_paris:2", "synonym"), ("p_curie:1", "neighbour")],
    # S = {nobel:2, paris:2}; Syn = {curie} -> {curie:0}; N = {nobel:1, paris:1}
    "e_mcurie": [("p_nobel:2", "mention"), ("p_paris:2", "mention"), ("p_curie:0", "synonym"),
                 ("p_nobel:1", "neighbour"), ("p_paris:1", "neighbour")],
    # paris:1/paris:2 are also neighbours of each other (mention wins); nobel:1 is both a synonym
    # sentence (via e_univ) and the neighbour of nobel:2 (synonym wins)
    "e_sorbonne": [("p_nobel:2", "mention"), ("p_paris:1", "mention"), ("p_paris:2", "mention"),
                   ("p_nobel:1", "synonym"), ("p_paris:0", "neighbour")],
    # nobel:2 is both a synonym sentence and a neighbour of nobel:1 (synonym wins)
    "e_univ": [("p_nobel:1", "mention"), ("p_nobel:2", "synonym"), ("p_paris:1", "synonym"), ("p_paris:2", "synonym"),
               ("p_nobel:0", "neighbour")],
    # two mentions in nobel:0 (title + ner) count once
    "e_nobel": [("p_curie:3", "mention"), ("p_nobel:0", "mention"), ("p_curie:2", "neighbour"), ("p_nobel:1", "neighbour")],
    "e_paris": [("p_curie:2", "mention"), ("p_paris:0", "mention"), ("p_curie:1", "neighbour"), ("p_curie:3", "neighbour"),
                ("p_paris:1", "neighbour")],
    "e_1903": [("p_curie:3", "mention"), ("p_curie:2", "neighbour")],
    "e_unknown": [],
}
PRIORITY = {"mention": 0, "synonym": 1, "neighbour": 2}


def check_counts(store: GraphStore, artifact: Artifact) -> dict[str, Any]:
    """Node/relationship counts equal the artifact's tables (and the hand count); returns stats()."""
    stats = store.stats()
    expected = table_counts(artifact)
    assert stats["nodes"] == EXPECTED_NODES
    assert stats["relationships"] == EXPECTED_RELS
    for key, value in expected.items():
        assert (stats["nodes"] | stats["relationships"])[key] == value, key
    assert stats["lookupable_entities"] == EXPECTED_LOOKUPABLE
    assert stats["content_hash"] == artifact.content_hash and stats["complete"] is True
    assert stats["embedding_dim"] == artifact.embedding_dim
    return stats


def counts_of(store: GraphStore) -> tuple[dict[str, int], dict[str, int], int]:
    stats = store.stats()
    return stats["nodes"], stats["relationships"], stats["lookupable_entities"]


def check_named_queries(store: GraphStore) -> None:
    """Each traversal query's rows on the tiny graph, order included."""
    rows = store.query("sentences_by_ids", {"ids": ["p_paris:2", "p_curie:2", "nope", "p_curie:2"]})
    assert rows == [
        {"id": "p_curie:2", "paragraph_id": "p_curie", "position": 2, "title": "Marie Curie",
         "text": 'She moved to Paris ("la Ville Lumière").'},
        {"id": "p_paris:2", "paragraph_id": "p_paris", "position": 2, "title": "Paris", "text": "Curie taught at the Sorbonne."},
    ]

    rows = store.query("paragraph_sentences", {"paragraph_ids": ["p_paris", "p_curie", "p_none"]})
    assert [(r["paragraph_id"], r["id"], r["position"]) for r in rows] == [
        ("p_curie", "p_curie:0", 0), ("p_curie", "p_curie:1", 1), ("p_curie", "p_curie:2", 2), ("p_curie", "p_curie:3", 3),
        ("p_paris", "p_paris:0", 0), ("p_paris", "p_paris:1", 1), ("p_paris", "p_paris:2", 2),
    ]
    assert rows[0]["title"] == "Marie Curie" and rows[0]["text"] == "Marie Curie was a physicist."

    rows = run_test_query(store, "sentence_neighbours", {"ids": ["p_paris:1", "p_curie:0", "p_nobel:2"]})
    assert [(r["source_id"], r["id"], r["direction"]) for r in rows] == [
        ("p_curie:0", "p_curie:1", "next"),
        ("p_nobel:2", "p_nobel:1", "previous"),
        ("p_paris:1", "p_paris:0", "previous"), ("p_paris:1", "p_paris:2", "next"),
    ]

    rows = store.query("entities_by_names", {"names": ["paris", "curie", "no such name"]})
    assert rows == [
        {"id": "e_mcurie", "name": "curie", "surface": "Curie", "label": "PERSON", "lookupable": True, "mentions": 2},
        {"id": "e_paris", "name": "paris", "surface": "Paris", "label": "GPE", "lookupable": True, "mentions": 2},
    ]

    rows = store.query("entities_by_ids", {"ids": ["e_1903", "e_paris"]})
    assert [(r["id"], r["lookupable"], r["reject_reason"]) for r in rows] == [("e_1903", False, "label:DATE"), ("e_paris", True, None)]

    ids = ["p_paris:2", "p_curie:3", "p_nobel:0", "p_curie:1"]
    rows = store.query("entities_of_sentences", {"ids": ids, "lookupable_only": False})
    assert [(r["sentence_id"], r["entity_id"]) for r in rows] == [
        ("p_curie:3", "e_1903"), ("p_curie:3", "e_nobel"), ("p_nobel:0", "e_nobel"),  # two mentions, one row
        ("p_paris:2", "e_mcurie"), ("p_paris:2", "e_sorbonne"),
    ]
    assert rows[0] == {"sentence_id": "p_curie:3", "entity_id": "e_1903", "name": "1903", "surface": "1903", "label": "DATE",
                       "lookupable": False, "mentions": 1}
    rows = store.query("entities_of_sentences", {"ids": ids, "lookupable_only": True})
    assert [(r["sentence_id"], r["entity_id"]) for r in rows] == [
        ("p_curie:3", "e_nobel"), ("p_nobel:0", "e_nobel"), ("p_paris:2", "e_mcurie"), ("p_paris:2", "e_sorbonne"),
    ]

    rows = run_test_query(store, "sentences_mentioning", {"entity_ids": ["e_sorbonne", "e_nobel", "e_none"]})
    assert [(r["entity_id"], r["sentence_id"]) for r in rows] == [
        ("e_nobel", "p_curie:3"), ("e_nobel", "p_nobel:0"),
        ("e_sorbonne", "p_nobel:2"), ("e_sorbonne", "p_paris:1"), ("e_sorbonne", "p_paris:2"),
    ]

    for entity, expected in LOOKUP.items():
        rows = run_test_query(store, "lookup_candidates", {"entity_id": entity})
        assert [(r["id"], r["channel"]) for r in rows] == expected, entity
        assert [r["priority"] for r in rows] == [PRIORITY[c] for _, c in expected], entity

    rows = store.query("lookup_candidates_multi", {"entity_ids": ["e_univ", "e_curie", "e_curie", "e_unknown"],
                                                    "articles": False})
    assert [(r["entity_id"], r["id"], r["channel"]) for r in rows] == (
        [("e_curie", s, c) for s, c in LOOKUP["e_curie"]] + [("e_univ", s, c) for s, c in LOOKUP["e_univ"]]
    )

    rows = run_test_query(store, "synonyms_of", {"entity_id": "e_curie"})
    assert [(r["id"], r["name"], r["kind"]) for r in rows] == [("e_mcurie", "curie", "abbreviation")]
    assert rows[0]["score"] == pytest.approx(0.9, abs=1e-6)
    rows = run_test_query(store, "synonyms_of", {"entity_id": "e_mcurie"})  # stored mcurie -> curie, read undirected
    assert [(r["id"], r["kind"]) for r in rows] == [("e_curie", "abbreviation")]
    assert run_test_query(store, "synonyms_of", {"entity_id": "e_paris"}) == []


def brute_force_top_k(artifact: Artifact, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """Exact cosine top-k over the artifact's embeddings, ties by id."""
    ids = artifact.table("sentences", columns=["id"]).column("id").to_pylist()
    matrix = np.asarray(artifact.embeddings(mmap=False), dtype=np.float64)
    v = np.asarray(vector, dtype=np.float64)
    sims = matrix @ v / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(v))
    order = sorted(range(len(ids)), key=lambda i: (-round(float(sims[i]), 6), ids[i]))
    return [(ids[i], float(sims[i])) for i in order[:k]]


def check_vector_top_k(store: GraphStore, artifact: Artifact) -> None:
    """vector_top_k agrees with numpy brute force (same ids, cosine within 1e-4), ties broken by id."""
    matrix = artifact.embeddings(mmap=False)
    rng = np.random.default_rng(11)
    queries = [matrix[i] for i in range(len(matrix))] + [rng.normal(size=matrix.shape[1]) for _ in range(5)]
    for q in queries:
        for k in (1, 4, 10):
            got = store.vector_top_k(list(map(float, q)), k)
            want = brute_force_top_k(artifact, q, k)
            assert [i for i, _ in got] == [i for i, _ in want]
            for (_, s_got), (_, s_want) in zip(got, want):
                assert s_got == pytest.approx(s_want, abs=1e-4)
                assert -1.0 <= s_got <= 1.0
    # p_nobel:1 and p_paris:1 share one vector: an exact tie at the top, broken by id
    tie = matrix[[r for r, sid in enumerate(artifact.table("sentences", columns=["id"]).column("id").to_pylist())
                  if sid == "p_paris:1"][0]]
    got = store.vector_top_k(tie.tolist(), 2)
    assert [i for i, _ in got] == ["p_nobel:1", "p_paris:1"]
    assert got[0][1] == got[1][1] == pytest.approx(1.0, abs=1e-6)
    assert store.vector_top_k(tie.tolist(), 0) == []
