"""Neo4j store tests: the same core checks as the FalkorDB tests, against a real Neo4j 5.

They run only when ``NEO4J_URI`` is set (see docker/README.md), with ``NEO4J_USER`` /
``NEO4J_PASSWORD`` / ``NEO4J_DATABASE``. The database must be empty or hold a harness-g graph:
the tests replace its contents.
"""
from __future__ import annotations

import os
from typing import Iterator

import pytest
from helpers.store_checks import check_counts, check_named_queries, check_vector_top_k, counts_of

from harness_g.errors import StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.neo4j_store import Neo4jStore
from harness_g.graph.stores.queries import load_query

NEEDS_NEO4J = pytest.mark.skipif(
    not os.environ.get("NEO4J_URI"), reason="set NEO4J_URI to run the Neo4j store tests (no Neo4j server on this machine)"
)


def test_unreachable_neo4j_names_the_uri() -> None:
    """Runs everywhere: nothing listens on port 1."""
    with pytest.raises(StoreError, match=r"^cannot reach Neo4j at bolt://127\.0\.0\.1:1: "):
        Neo4jStore("bolt://127.0.0.1:1", "neo4j", "x", connect_timeout_s=2)
    with pytest.raises(StoreError, match="invalid Neo4j URI"):
        Neo4jStore("bolt://127.0.0.1:1?routing=x", "neo4j", "x")


@pytest.fixture(scope="module")
def neo4j_store(tiny_artifact: Artifact) -> Iterator[Neo4jStore]:
    store = Neo4jStore(
        os.environ["NEO4J_URI"],
        os.environ.get("NEO4J_USER") or os.environ.get("NEO4J_USERNAME"),
        os.environ.get("NEO4J_PASSWORD"),
        os.environ.get("NEO4J_DATABASE") or None,
    )
    if store.meta() is None and store.run_cypher("MATCH (n) RETURN count(n) AS n").rows[0][0] > 0:
        store.close()
        pytest.skip("the NEO4J_URI database holds other data; the Neo4j tests need an empty database")
    store.clear()
    store.load(tiny_artifact, progress=False, batch_size=4)
    yield store
    store.close()


@NEEDS_NEO4J
@pytest.mark.neo4j
class TestNeo4jStore:
    def test_load_counts_match_tables(self, neo4j_store: Neo4jStore, tiny_artifact: Artifact) -> None:
        stats = check_counts(neo4j_store, tiny_artifact)
        assert set(stats["indexes"].values()) == {"ONLINE"}

    def test_second_load_is_a_noop(self, neo4j_store: Neo4jStore, tiny_artifact: Artifact) -> None:
        before = counts_of(neo4j_store)
        assert neo4j_store.load(tiny_artifact, progress=False).skipped
        assert counts_of(neo4j_store) == before

    def test_forced_reload_merges_without_duplicates(self, neo4j_store: Neo4jStore, tiny_artifact: Artifact) -> None:
        neo4j_store._write("meta_begin", {"content_hash": tiny_artifact.content_hash, "embedding_model": "m",
                                          "embedding_dim": 8, "loaded_at": "x"})
        assert neo4j_store.loaded_hash() is None
        assert not neo4j_store.load(tiny_artifact, progress=False, batch_size=3).skipped
        check_counts(neo4j_store, tiny_artifact)

    def test_crash_mid_load_converges(self, neo4j_store: Neo4jStore, tiny_artifact: Artifact,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
        clean = counts_of(neo4j_store)
        neo4j_store.clear()
        real_write = neo4j_store._write_batch

        def crash_at_next(name: str, rows: list[dict]) -> None:
            if name == "load_next":
                raise KeyboardInterrupt
            real_write(name, rows)

        monkeypatch.setattr(neo4j_store, "_write_batch", crash_at_next)
        with pytest.raises(KeyboardInterrupt):
            neo4j_store.load(tiny_artifact, progress=False, batch_size=2)
        assert neo4j_store.loaded_hash() is None
        monkeypatch.undo()
        neo4j_store.load(tiny_artifact, progress=False)
        assert counts_of(neo4j_store) == clean

    def test_named_queries(self, neo4j_store: Neo4jStore) -> None:
        check_named_queries(neo4j_store)

    def test_vector_top_k_matches_brute_force(self, neo4j_store: Neo4jStore, tiny_artifact: Artifact) -> None:
        check_vector_top_k(neo4j_store, tiny_artifact)

    def test_run_cypher_is_read_only(self, neo4j_store: Neo4jStore) -> None:
        result = neo4j_store.run_cypher("MATCH (s:Sentence {id: $id}) RETURN s.id AS sid", {"id": "p_paris:0"})
        assert result.columns == ["sid"] and result.rows == [["p_paris:0"]]
        with pytest.raises(StoreError, match="Neo4j query failed"):
            neo4j_store.run_cypher("CREATE (:Sentence {id: 'intruder'})")
        assert neo4j_store.query("sentences_by_ids", {"ids": ["intruder"]}) == []

    def test_missing_vector_index(self, neo4j_store: Neo4jStore, tiny_artifact: Artifact) -> None:
        neo4j_store._auto_commit(load_query("drop_vector_index", "neo4j"), None, "test")
        neo4j_store._vector_index_seen = False
        try:
            with pytest.raises(StoreError, match="vector index sentence_embedding is missing"):
                neo4j_store.vector_top_k([0.1] * 8, 3)
        finally:
            neo4j_store._ensure_vector_index(tiny_artifact.embedding_dim)
            neo4j_store.wait_for_indexes(60)
        assert neo4j_store.vector_top_k([0.1] * 8, 1)
