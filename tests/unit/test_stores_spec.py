"""Graph store code that needs no database: the named Cypher query files (documented, present in each dialect),
store specs, and the errors for a taken port or an address nothing listens on (no server is started here).
The stores themselves are tested on real databases in tests/e2e/test_stores.py."""
from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest
from helpers.ports import free_port
from helpers.paths import REPO_ROOT
from helpers.store_queries import PARAM, SAMPLE_PARAMS, TEST_CYPHER, every_query
from helpers.store_queries import header_and_body as _header_and_body

from harness_g.errors import StoreError
from harness_g.graph.stores import SPEC_FORMS, describe_store, connect_store, parse_store_spec
from harness_g.graph.stores import neo4j_store
from harness_g.graph.stores.falkordb_server import PID_FILE, EmbeddedFalkorDB
from harness_g.graph.stores.falkordb_store import NAMED_QUERIES as FALKORDB_QUERIES
from harness_g.graph.stores.loader import STAGES
from harness_g.graph.stores.queries import DIALECTS, list_queries, load_query, query_source, split_statements

TRAVERSALS = (
    "sentences_by_ids", "paragraph_sentences", "entities_by_names", "entities_by_ids", "entities_of_sentences",
    "lookup_candidates_multi", "pool_members", "lookup_ranked", "lookup_candidates_sampled", "pool_samples_get",
)
#: the queries only tests and benchmarks run (tests/cypher, through helpers.store_queries.run_test_query)
TEST_ONLY = ("lookup_candidates", "sentence_neighbours", "sentences_mentioning", "synonyms_of")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_query_file_documents_itself(dialect: str) -> None:
    for name, text, where in every_query(dialect):
        header, body = _header_and_body(text)
        assert header.startswith(f"// {name}"), f"{where}: header must start with its name"
        assert "Parameters" in header and "Returns" in header, name
        used = set(PARAM.findall(body))
        assert used <= set(PARAM.findall(header)), f"{name}: undocumented parameters {used - set(PARAM.findall(header))}"
        assert used <= set(SAMPLE_PARAMS), f"{name}: add sample values for {used - set(SAMPLE_PARAMS)}"
        if "Order:" not in header and "RETURN" in body and "count(" not in body and not name.startswith(("meta_", "load_")):
            pytest.fail(f"{name}: a query returning rows must state its order")


def test_registry_lookup_and_errors() -> None:
    assert query_source("vector_top_k", "falkordb") == "falkordb/vector_top_k.cypher"
    assert query_source("sentences_by_ids", "neo4j") == "sentences_by_ids.cypher"
    assert load_query("vector_top_k", "neo4j") != load_query("vector_top_k", "falkordb")
    with pytest.raises(StoreError, match=r"unknown query 'nope' for falkordb; known: .*lookup_candidates_multi"):
        load_query("nope", "falkordb")
    with pytest.raises(StoreError, match="unknown Cypher dialect"):
        load_query("lookup_candidates_multi", "sqlite")
    # a test-only query: resolved in tests/cypher (its Neo4j override wins there too), unknown to the package
    assert query_source("lookup_candidates", "neo4j", TEST_CYPHER) == "neo4j/lookup_candidates.cypher"
    assert query_source("lookup_candidates", "falkordb", TEST_CYPHER) == "lookup_candidates.cypher"
    with pytest.raises(StoreError, match=r"^unknown query 'lookup_candidates' for neo4j; known: "):
        load_query("lookup_candidates", "neo4j")
    with pytest.raises(StoreError, match=r"^unknown query 'nope' for neo4j in .*tests/cypher; known: lookup_candidates, "):
        load_query("nope", "neo4j", TEST_CYPHER)
    assert len(split_statements(load_query("schema", "falkordb"))) == 5
    assert len(split_statements(load_query("schema", "neo4j"))) == 5


def test_neo4j_store_queries_exist_in_its_dialect() -> None:
    used = set(neo4j_store.NAMED_QUERIES) | {stage.query for stage in STAGES} | set(TRAVERSALS)
    assert used <= set(list_queries("neo4j"))
    assert set(FALKORDB_QUERIES) | {stage.query for stage in STAGES} | set(TRAVERSALS) <= set(list_queries("falkordb"))
    source = Path(neo4j_store.__file__).read_text()
    literal = set(re.findall(r'(?:write|query|load_query)\("([a-z_]+)"', source))
    assert literal <= set(neo4j_store.NAMED_QUERIES), literal - set(neo4j_store.NAMED_QUERIES)
    # the Neo4j overrides are exactly the dialect-specific statements
    neo_only = {n for n in list_queries("neo4j") if query_source(n, "neo4j").startswith("neo4j/")}
    assert neo_only == {"schema", "create_vector_index", "drop_index", "vector_top_k", "load_sentences", "list_indexes",
                        # CALL (x) { ... } subqueries (FalkorDB parses only the importing-WITH form)
                        "count_nodes_by_label", "count_relationships_by_type", "lookup_candidates_multi",
                        "lookup_candidates_sampled",
                        # node identity: FalkorDB's id(n) integers, Neo4j's elementId(n) strings (harness-g browse)
                        "nodes_by_internal_ids",
                        # cosine in the store: FalkorDB's vec.cosineDistance, Neo4j's vector.similarity.cosine
                        "lookup_ranked"}
    assert {n for n in list_queries("neo4j", TEST_CYPHER)
            if query_source(n, "neo4j", TEST_CYPHER).startswith("neo4j/")} == {"lookup_candidates"}


def _package_strings() -> set[str]:
    """Every string constant in the package's Python source (the folders pyproject maps onto harness_g)."""
    import ast
    import tomllib

    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dirs = {"harness_g", *pyproject["tool"]["setuptools"]["package-dir"].values()}
    out = set()
    for folder in sorted(dirs):
        for path in (REPO_ROOT / folder).glob("*.py"):  # each package's own modules (subpackages are listed too)
            out |= {node.value for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    return out


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_packaged_queries_are_the_ones_package_code_runs(dialect: str) -> None:
    """Every packaged .cypher file is named by package code (a string constant equal to its name): a query only tests
    or benchmarks run lives in tests/cypher, and the test-only ones are not shipped."""
    strings = _package_strings()
    unused = sorted(n for n in list_queries(dialect) if n not in strings)
    assert not unused, f"packaged queries no package code runs (move them to tests/cypher): {unused}"
    assert set(list_queries(dialect, TEST_CYPHER)) == set(TEST_ONLY)
    assert not set(TEST_ONLY) & set(list_queries(dialect)) and not set(TEST_ONLY) & strings


def test_port_already_taken(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(StoreError, match=rf"^127\.0\.0\.1:{port} is already in use$"):
            EmbeddedFalkorDB(tmp_path / "store", port=port)
    assert not (tmp_path / "store" / PID_FILE).exists()


def test_connect_to_nothing() -> None:
    port = free_port()
    with pytest.raises(StoreError, match=rf"^cannot reach FalkorDB at falkordb://127\.0\.0\.1:{port}: "):
        connect_store(f"falkordb://127.0.0.1:{port}?graph=g1", None)


# -- store specs -----------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["sqlite:///x.db", "embedded:notaport", "embedded:0", "falkordb://localhost",
                                  "falkordb://:6379", "falkordb://h:6379?color=red", "localhost:6379", "http://x"])
def test_malformed_store_spec(spec: str) -> None:
    with pytest.raises(StoreError, match="malformed store spec") as info:
        parse_store_spec(spec)
    assert all(form in str(info.value) for form in SPEC_FORMS)


def test_store_spec_forms(tmp_path: Path) -> None:
    assert parse_store_spec(None).kind == parse_store_spec("embedded").kind == "embedded"
    assert parse_store_spec("embedded:7001").port == 7001
    spec = parse_store_spec("falkordb://db.local:6380?graph=hotpot")
    assert (spec.kind, spec.host, spec.port, spec.graph) == ("falkordb", "db.local", 6380, "hotpot")
    for uri in ("neo4j://h", "bolt://h:7687", "neo4j+s://x.databases.neo4j.io"):
        assert parse_store_spec(uri).kind == "neo4j"
    assert "Neo4j at bolt://h:7687" in describe_store("bolt://user:secret@h:7687")
    assert "secret" not in describe_store("bolt://user:secret@h:7687")
    assert describe_store(None).startswith("embedded FalkorDB")
    with pytest.raises(StoreError, match="needs a GRAPH_DIR"):
        connect_store(None, None)
    with pytest.raises(StoreError, match="cannot reach Neo4j at bolt://127.0.0.1:1"):
        connect_store("bolt://127.0.0.1:1", tmp_path)
