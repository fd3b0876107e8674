"""Neo4j-only store behaviour, against a real Neo4j 5.26 started by the test session (``neo4j_server``).

The checks both stores share (loads, named queries, vector top-k, read-only Cypher, crashes mid-load,
NaN embeddings) live in test_stores.py and run on Neo4j there; this file holds what only Neo4j has:
driver versions, bookmarks, named indexes, server versions and credentials.
"""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.store_checks import check_counts

from harness_g.errors import StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.stores import connect_store
from harness_g.graph.stores import neo4j_store as neo4j_store_module
from harness_g.graph.stores.local_neo4j import LocalNeo4j, cache_root
from harness_g.graph.stores.neo4j_store import MIN_SERVER_VERSION, Neo4jStore, parse_server_version
from harness_g.graph.stores.queries import load_query
from harness_g.graph.stores.schema import VECTOR_INDEX

pytestmark = pytest.mark.neo4j

#: the oldest driver pyproject.toml allows (neo4j>=5.20): the store must import and work with it
OLDEST_DRIVER = "5.20.0"


def test_unreachable_neo4j_names_the_uri() -> None:
    """Nothing listens on port 1."""
    with pytest.raises(StoreError, match=r"^cannot reach Neo4j at bolt://127\.0\.0\.1:1: "):
        Neo4jStore("bolt://127.0.0.1:1", "neo4j", "x", connect_timeout_s=2)
    with pytest.raises(StoreError, match="invalid Neo4j URI"):
        Neo4jStore("bolt://127.0.0.1:1?routing=x", "neo4j", "x")


# -- 1. driver 5.x ---------------------------------------------------------------------------------------
def test_store_imports_without_the_driver_6_only_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """ConnectionAcquisitionTimeoutError exists only from driver 6.0; the module used to reference it
    unconditionally, so with any 5.x driver it failed at import."""
    import neo4j.exceptions

    monkeypatch.delattr(neo4j.exceptions, "ConnectionAcquisitionTimeoutError", raising=False)
    module = importlib.reload(neo4j_store_module)
    try:
        assert neo4j.exceptions.ServiceUnavailable in module._UNREACHABLE
    finally:
        monkeypatch.undo()
        importlib.reload(neo4j_store_module)


def _oldest_driver_dir() -> Path:
    """neo4j==OLDEST_DRIVER installed once (from PyPI) into the cache, outside the venv."""
    target = cache_root() / f"neo4j-driver-{OLDEST_DRIVER}"
    if not (target / "neo4j" / "__init__.py").exists():
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target",
                               str(target), f"neo4j=={OLDEST_DRIVER}"], capture_output=True, text=True)
        assert proc.returncode == 0, f"could not install neo4j=={OLDEST_DRIVER} from PyPI: {proc.stderr[-500:]}"
    return target


def test_oldest_allowed_driver_loads_and_queries(neo4j_server: LocalNeo4j, tiny_artifact: Artifact) -> None:
    """The real 5.x driver (the floor of pyproject's range), in a subprocess: import, load, query, top-k."""
    script = f"""
import json, neo4j
from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.neo4j_store import Neo4jStore
store = Neo4jStore({neo4j_server.bolt_uri!r}, *{neo4j_server.auth!r})
store.clear()
report = store.load(Artifact.open({str(tiny_artifact.path)!r}), progress=False)
rows = store.query("lookup_candidates_multi", {{"entity_ids": ["e_curie"], "articles": False}})
print(json.dumps({{"driver": neo4j.__version__, "rows": report.rows, "lookup": [r["id"] for r in rows],
                  "top": store.vector_top_k([0.1] * 8, 2), "hash": store.loaded_hash()}}))
store.close()
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(_oldest_driver_dir()), *sys.path])}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["driver"] == OLDEST_DRIVER
    assert out["hash"] == tiny_artifact.content_hash and out["rows"]["sentences"] == 10
    assert out["lookup"] == ["p_curie:0", "p_nobel:2", "p_paris:2", "p_curie:1"]
    assert len(out["top"]) == 2


# -- 3. bookmarks -----------------------------------------------------------------------------------------
def test_every_session_shares_one_bookmark_manager(neo4j_store: Neo4jStore, tiny_artifact: Artifact,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Reads carry the bookmarks of earlier writes, so a cluster member that lags behind waits for them."""
    opened: list[dict] = []
    real_session = neo4j_store._driver.session

    def spy(**kwargs):  # noqa: ANN003, ANN202 - the driver's own signature
        opened.append(kwargs)
        return real_session(**kwargs)

    monkeypatch.setattr(neo4j_store._driver, "session", spy)
    neo4j_store.clear()
    neo4j_store.load(tiny_artifact, progress=False)
    assert neo4j_store.index_state()[VECTOR_INDEX] == "ONLINE"
    neo4j_store.query("sentences_by_ids", {"ids": ["p_curie:0"]})
    assert opened and all(kw.get("bookmark_manager") is neo4j_store._bookmarks for kw in opened)
    assert any(kw.get("default_access_mode") == "READ" for kw in opened)
    assert neo4j_store._bookmarks.get_bookmarks(), "writes left no bookmark for later reads to wait on"


# -- 4. server versions -----------------------------------------------------------------------------------
def test_server_version_floor() -> None:
    assert parse_server_version("Neo4j/5.26.30") == (5, 26)
    assert parse_server_version("Neo4j/2025.06.0") == (2025, 6)
    assert parse_server_version("Neo4j/5.22.0") < MIN_SERVER_VERSION <= parse_server_version("Neo4j/5.23.0")
    with pytest.raises(StoreError, match="cannot read the Neo4j server version"):
        parse_server_version("Neo4j/dev")
    # CREATE VECTOR INDEX is 5.15+ (not 5.13+, as the file used to say); the floor covers it
    assert "5.15+" in load_query("create_vector_index", "neo4j").splitlines()[0]
    assert MIN_SERVER_VERSION >= (5, 15)


def test_store_reports_the_server_it_talks_to(neo4j_store: Neo4jStore, neo4j_server: LocalNeo4j) -> None:
    assert neo4j_store.server_agent == f"Neo4j/{neo4j_server.version}"
    assert neo4j_store.stats()["server"].startswith("Neo4j/5.26.")


# -- 5. a vector index under another name -------------------------------------------------------------------
@pytest.mark.parametrize("name, dim", [("other_vectors", 8), (VECTOR_INDEX, 4)])
def test_foreign_vector_index_is_replaced(neo4j_store: Neo4jStore, tiny_artifact: Artifact, name: str, dim: int) -> None:
    """Another vector index on Sentence.embedding (another name, or ours with another dimension) made
    CREATE … IF NOT EXISTS a silent no-op: the store then reported its index missing, or queried one of
    the wrong dimension. The load now replaces it."""
    neo4j_store.clear()
    neo4j_store.run_schema(
        "CREATE VECTOR INDEX $name FOR (s:Sentence) ON (s.embedding) "
        "OPTIONS {indexConfig: {`vector.dimensions`: $dim, `vector.similarity_function`: 'euclidean'}}",
        {"name": name, "dim": dim})
    neo4j_store.load(tiny_artifact, progress=False)
    vector_indexes = [row for row in neo4j_store._indexes() if row["type"] == "VECTOR"]
    config = vector_indexes[0]["options"]["indexConfig"]
    assert [row["name"] for row in vector_indexes] == [VECTOR_INDEX]
    assert (config["vector.dimensions"], config["vector.similarity_function"], config["vector.quantization.enabled"]) == (8, "COSINE", False)
    check_counts(neo4j_store, tiny_artifact)
    assert neo4j_store.vector_top_k([0.1] * 8, 3)


# -- credentials ---------------------------------------------------------------------------------------------
def test_credentials_from_the_environment(neo4j_server: LocalNeo4j, monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    """NEO4J_USER / NEO4J_PASSWORD win over the credentials the local server stored for harness-g (a wrong one is
    refused, not silently replaced); without them see test_server_security.py."""
    uri = neo4j_server.bolt_uri
    monkeypatch.setenv("NEO4J_USER", "neo4j")
    monkeypatch.setenv("NEO4J_PASSWORD", "wrong")
    with pytest.raises(StoreError, match=rf"^Neo4j at {uri} refused the credentials \(set NEO4J_USER / NEO4J_PASSWORD\)"):
        connect_store(uri, tmp_path)
    monkeypatch.setenv("NEO4J_PASSWORD", neo4j_server.password)
    with connect_store(uri, tmp_path) as store:
        assert store.run_cypher("RETURN 1 AS one").rows == [[1]]
