"""No named query makes the real Neo4j 5.26 (``neo4j_server``) report a deprecated feature.

Neo4j 5.23 deprecated CALL subqueries without a variable scope clause (``CALL { ... }``, and the importing
``CALL { WITH x ... }``): the server then sends a deprecation notification with every call. FalkorDB rejects
the replacement ``CALL (x) { ... }``, so the shared files keep the old form and ``cypher/neo4j/`` overrides
them. Every query ``list_queries("neo4j")`` names runs here with valid parameters on the tiny graph, each
statement in its own transaction that is rolled back (writes leave nothing behind), and the server's
GQL status objects must hold no deprecation. The overrides must return exactly the shared files' rows. The
test-only queries of ``tests/cypher`` (``helpers.store_queries.every_query``) are run the same way.
"""
from __future__ import annotations

import re
from typing import Any, Iterator

import neo4j
import pytest
from helpers.store_checks import LOOKUP, check_counts, check_named_queries
from helpers.store_queries import every_query, query_root, shared_text

from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.local_neo4j import LocalNeo4j
from harness_g.graph.stores.neo4j_store import Neo4jStore
from harness_g.graph.stores.queries import load_query, query_source, split_statements

pytestmark = pytest.mark.neo4j

PARAM = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
#: a valid value for every parameter a Neo4j query takes (ids of the tiny graph; writes are rolled back)
PARAMS: dict[str, Any] = {
    "ids": ["p_curie:0", "p_paris:1", "e_curie"], "paragraph_ids": ["p_curie", "p_paris"], "names": ["curie", "paris"],
    "entity_ids": ["e_curie", "e_sorbonne"], "sentence_ids": ["p_curie:0", "p_paris:1"], "entity_id": "e_curie", "lookupable_only": True, "articles": True, "vector": [0.1] * 8, "exclude": [],
    "k": 3, "dim": 8, "limit": 1, "name": "no_such_index", "content_hash": "sample", "embedding_model": "m",
    "embedding_dim": 8, "loaded_at": "2024-01-01T00:00:00Z", "graph_dir": "/tmp/g", "graph_host": "h", "graph_name": "tiny",
    "hub_sample": 1000, "rows": [],  # load_*: UNWIND over no rows; the statement is still planned, so notifications still come
}
#: the queries whose shared text Neo4j reports as deprecated, overridden in cypher/neo4j/
OVERRIDDEN = ("count_nodes_by_label", "count_relationships_by_type", "lookup_candidates", "lookup_candidates_multi",
              "lookup_candidates_sampled")


@pytest.fixture(scope="module")
def store(neo4j_server: LocalNeo4j, tiny_artifact: Artifact) -> Iterator[Neo4jStore]:
    store = Neo4jStore(neo4j_server.bolt_uri, *neo4j_server.auth)
    store.load(tiny_artifact, progress=False)
    yield store
    store.close()


@pytest.fixture(scope="module")
def driver(neo4j_server: LocalNeo4j) -> Iterator[neo4j.Driver]:
    with neo4j.GraphDatabase.driver(neo4j_server.bolt_uri, auth=neo4j_server.auth) as drv:
        yield drv


@pytest.fixture
def tiny(store: Neo4jStore, tiny_artifact: Artifact) -> Neo4jStore:
    store.load(tiny_artifact, progress=False)  # a no-op unless another test swapped the graph
    return store


def run_rolled_back(driver: neo4j.Driver, text: str, params: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows and deprecation notifications ('GQLSTATUS: description') of one statement, in a transaction
    that is rolled back."""
    with driver.session() as session:
        tx = session.begin_transaction()
        try:
            result = tx.run(text, params)
            rows = [record.data() for record in result]
            summary = result.consume()
        finally:
            tx.rollback()
    deprecations = [f"{s.gql_status}: {s.status_description}" for s in summary.gql_status_objects
                    if s.is_notification and (s.raw_classification == "DEPRECATION" or s.gql_status.startswith("01N0"))]
    return rows, deprecations


def statements_of(text: str) -> list[str]:
    """What the store sends: the file as it is, or each statement of a multi-statement file (schema)."""
    statements = split_statements(text)
    return [text] if len(statements) == 1 else statements


def params_for(text: str) -> dict[str, Any]:
    used = set(PARAM.findall("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))))
    assert used <= set(PARAMS), f"add sample values for {sorted(used - set(PARAMS))}"
    return {p: PARAMS[p] for p in used}


def test_no_named_query_is_reported_deprecated(tiny: Neo4jStore, driver: neo4j.Driver) -> None:
    found, rows_of = [], {}
    for name, text, where in every_query("neo4j"):
        for i, statement in enumerate(statements_of(text), 1):
            rows, deprecations = run_rolled_back(driver, statement, params_for(statement))
            rows_of[name] = rows
            found += [f"{where} (statement {i}): {d}" for d in deprecations]
    assert not found, "Neo4j reports deprecated features:\n" + "\n".join(found)
    # the parameters were valid: the reads found the tiny graph's data
    for name in ("sentences_by_ids", "paragraph_sentences", "entities_by_names", "entities_of_sentences",
                 "sentences_mentioning", "synonyms_of", "lookup_candidates", "lookup_candidates_multi",
                 "count_nodes_by_label", "count_relationships_by_type", "meta_get", "vector_top_k", "list_indexes"):
        assert rows_of[name], f"{name} returned no rows with the sample parameters"
    assert rows_of["meta_complete"] == [] and rows_of["clear_batch"] == [{"deleted": 1}]  # (rolled back)


def test_the_shared_call_subqueries_are_reported_deprecated(tiny: Neo4jStore, driver: neo4j.Driver) -> None:
    """The regression guard for the test above: the shared texts, which Neo4j must not get, are reported."""
    for name in OVERRIDDEN:
        assert query_source(name, "neo4j", query_root(name, "neo4j")) == f"neo4j/{name}.cypher"
        _, deprecations = run_rolled_back(driver, shared_text(name), params_for(shared_text(name)))
        assert deprecations and all("variable scope clause" in d for d in deprecations), (name, deprecations)
    _, deprecations = run_rolled_back(driver, "UNWIND [1, 2] AS x CALL { WITH x RETURN x * 2 AS y } RETURN x, y", {})
    assert deprecations and "CALL (x) { ... }" in deprecations[0]


@pytest.mark.parametrize("name", OVERRIDDEN)
def test_overrides_return_the_shared_rows(tiny: Neo4jStore, driver: neo4j.Driver, name: str) -> None:
    """Same rows in the same order as the shared (FalkorDB-compatible) text, on the same Neo4j graph."""
    if name == "lookup_candidates":
        cases = [{"entity_id": e} for e in LOOKUP]
    elif name == "lookup_candidates_multi":
        lists = (list(LOOKUP), ["e_univ", "e_curie", "e_curie", "e_unknown"], ["e_1903"], [])
        cases = [{"entity_ids": ids, "articles": articles} for ids in lists for articles in (False, True)]
    elif name == "lookup_candidates_sampled":
        cases = [{"entity_ids": ids} for ids in (list(LOOKUP), ["e_univ", "e_curie", "e_curie", "e_unknown"], [])]
    else:
        cases = [{}]
    for params in cases:
        new, _ = run_rolled_back(driver, load_query(name, "neo4j", query_root(name, "neo4j")), params)
        old, _ = run_rolled_back(driver, shared_text(name), params)
        assert new == old, (name, params)
        assert new or params == {"entity_id": "e_unknown"} or params.get("entity_ids") == [], (name, params)


def test_store_queries_return_the_expected_rows(tiny: Neo4jStore, tiny_artifact: Artifact) -> None:
    """The hand-derived results the FalkorDB store is held to (count_* through stats(), lookup_candidates*)."""
    check_counts(tiny, tiny_artifact)
    check_named_queries(tiny)
