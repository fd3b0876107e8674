"""Bulk loading into Neo4j (``neo4j-admin database import full``, graph/stores/neo4j_bulk.py) gives the graph the
Bolt loader gives: on the packaged HotpotQA dev slice, the same nodes and relationships with the same properties
(every one, embeddings included), the same vector search and the same menus (U_0 and every LOOKUP result along the
lookahead policy's episodes); and awkward strings (quotes, a backslash, line breaks, commas, semicolons, an empty
string, a missing value) written into three of the slice's paragraphs keep their values; ``harness-g neo4j --bulk-load
--hub-sample N`` run as a process writes samples of N. One bulk load serves every
test that compares graphs (the slice's copy with the awkward paragraphs): it runs the real importer and starts a real
local Neo4j 5.26 on what it wrote; the Bolt side is the session's Neo4j (``neo4j_store``).

Refusals, one line each, losing nothing: a database that already exists (the importer never overwrites one), a
missing import directory or Neo4j home, a relationship to a node the artifact lacks (the Bolt loader's MATCH would
skip it; the importer is told to fail instead), and ``harness-g neo4j --bulk-load`` of a directory that is no graph.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from helpers.menu_record import record_episode
from helpers.neo4j_process import wait_until_ready
from helpers.tiny_artifact import build_tiny_artifact

from harness_g.agent.config import EnvConfig
from harness_g.agent.env import MenuEnv
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.policies.lookahead import LookaheadPolicy
from harness_g.errors import InputError, StoreError
from harness_g.graph.artifact import (ARTIFACT_FILES, MANIFEST, Artifact, file_digests, write_manifest,
                                      write_table)
from harness_g.graph.stores.loader import STAGES, artifact_samples, stage_size, table_counts
from harness_g.graph.stores.local_neo4j import build_launcher
from harness_g.graph.stores.neo4j_bulk import (admin_tool_command, bulk_load_local, csv_field, database_dir,
                                               import_database, write_import_csvs)
from harness_g.graph.stores.neo4j_store import Neo4jStore

pytestmark = pytest.mark.neo4j

#: questions of the slice whose lookahead episodes are compared (every LOOKUP result of every menu on the way)
EPISODES = 6

#: hub sample size of both loads: the slice has no entity in 1,000 sentences, so a small size gives it hubs and the
#: bulk path's samples (written over Bolt after the importer) are compared with the Bolt loader's
HUB_SAMPLE = 3

#: paragraph texts of the bulk-loaded copy of the slice, by row of its paragraphs table: quotes, separators, a
#: backslash, line breaks (LF, CRLF); an empty string
AWKWARD_TEXTS = {
    0: 'He said "non", then: a, b; c.\nA second line\\ with a backslash\r\nand a CRLF.',
    1: "",
}
#: paragraph sources of that copy, by row: missing (None: no property) beside an empty string and a plain value
AWKWARD_SOURCES = {0: None, 1: "", 2: "docs/nobel.txt"}


@pytest.fixture(scope="module")
def slice_dir(slice_graph: Callable[[str], Path]) -> Path:
    """The slice built under the paper preset (the session's build, shared with test_menu_identity.py)."""
    return slice_graph("paper")


@pytest.fixture(scope="module")
def bulk_dir(slice_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The slice's copy with awkward paragraph texts and sources (:func:`_awkward_copy`): the graph bulk-loaded."""
    return _awkward_copy(slice_dir, tmp_path_factory.mktemp("bulk-awkward") / "graph")


@pytest.fixture(scope="module")
def bulk_slice(bulk_dir: Path) -> Iterator[tuple[Neo4jStore, Any]]:
    server, store, report = bulk_load_local(bulk_dir, hub_sample=HUB_SAMPLE)
    try:
        yield store, report
    finally:
        store.close()
        server.stop()


def _awkward_copy(graph_dir: Path, out: Path) -> Path:
    """A copy of the artifact in ``graph_dir`` at ``out`` whose first paragraphs hold :data:`AWKWARD_TEXTS` and
    :data:`AWKWARD_SOURCES`; its manifest lists the new file digests and another content hash (so a store holding
    the original graph reloads it)."""
    out.mkdir(parents=True)
    for name in (*ARTIFACT_FILES, MANIFEST):
        if (graph_dir / name).exists():
            shutil.copy2(graph_dir / name, out / name)
    table = Artifact.open(out).table("paragraphs").to_pydict()
    for row, text in AWKWARD_TEXTS.items():
        table["text"][row] = text
    for row, source in AWKWARD_SOURCES.items():
        table["source"][row] = source
    write_table(out, "paragraphs", table)
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    manifest["files"] = file_digests(out)
    manifest["content_hash"] = f"{manifest['content_hash']}-awkward"
    write_manifest(out, manifest)
    return out


def graph_dump(store: Neo4jStore) -> dict[str, Any]:
    """Every node (labels, properties) and relationship (type, end ids, properties) but GraphMeta, sorted; the
    GraphMeta fields that say which graph it is and whether its load completed."""
    nodes = store.run_cypher("MATCH (n) WHERE NOT n:GraphMeta RETURN labels(n) AS labels, properties(n) AS props")
    rels = store.run_cypher("MATCH (a)-[r]->(b) RETURN type(r) AS type, a.id AS src, b.id AS dst, "
                            "properties(r) AS props")
    meta = store.meta() or {}
    return {
        "nodes": sorted((repr(r[0]), repr(sorted(r[1].items()))) for r in nodes.rows),
        "relationships": sorted((r[0], r[1], r[2], repr(sorted(r[3].items()))) for r in rels.rows),
        "meta": {k: meta.get(k) for k in ("content_hash", "complete", "graph_dir", "graph_name", "embedding_dim",
                                          "hub_sample")},
    }


def _assert_same_graph(bulk: Neo4jStore, bolt: Neo4jStore, artifact: Artifact) -> None:
    expected = table_counts(artifact)
    for store in (bulk, bolt):
        stats = store.stats()
        assert {**stats["nodes"], **stats["relationships"]} == {**expected, "GraphMeta": 1}
        assert set(stats["indexes"].values()) == {"ONLINE"} and stats["complete"] is True
    got, want = graph_dump(bulk), graph_dump(bolt)
    assert got["meta"] == want["meta"]
    assert len(got["nodes"]) == len(want["nodes"]) and len(got["relationships"]) == len(want["relationships"])
    assert got["nodes"] == want["nodes"]
    assert got["relationships"] == want["relationships"]


def test_bulk_loaded_slice_is_the_bolt_loaded_graph(bulk_slice: tuple[Neo4jStore, Any], neo4j_store: Neo4jStore,
                                                    bulk_dir: Path) -> None:
    bulk, report = bulk_slice
    artifact = Artifact.open(bulk_dir)
    neo4j_store.load(artifact, progress=False, hub_sample=HUB_SAMPLE)
    _assert_same_graph(bulk, neo4j_store, artifact)
    samples = artifact_samples(artifact, HUB_SAMPLE)
    assert len(samples) > 5 and bulk.meta()["hub_sample"] == HUB_SAMPLE
    assert {r["id"]: list(r["sample"]) for r in bulk.query("pool_samples_get")} == samples
    assert report.rows == {stage.name: stage_size(artifact, stage, samples=samples)  # what the Bolt loader sends
                           for stage in STAGES}
    assert report.rows_per_s > 0 and {"csv", "import", "start", "schema", "indexes", "total"} <= set(report.seconds)


def test_bulk_loaded_slice_serves_the_same_search_and_menus(bulk_slice: tuple[Neo4jStore, Any],
                                                           neo4j_store: Neo4jStore, bulk_dir: Path) -> None:
    artifact = Artifact.open(bulk_dir)
    neo4j_store.load(artifact, progress=False, hub_sample=HUB_SAMPLE)
    bolt_view = GraphView(neo4j_store, artifact)
    bulk_view = GraphView(bulk_slice[0], artifact, embedder=bolt_view.embedder)
    items = artifact.questions()[:EPISODES]
    for item in items:
        vector = bolt_view.embedder.encode([item.question])[0]
        assert bulk_slice[0].vector_top_k(vector, 20) == neo4j_store.vector_top_k(vector, 20)
    for cfg in (EnvConfig(preset="paper"), EnvConfig(preset="paper", lookup_hub_sample=HUB_SAMPLE)):
        episodes = {}
        for name, view in (("bolt", bolt_view), ("bulk", bulk_view)):
            env, policy = MenuEnv(view, cfg), LookaheadPolicy()
            episodes[name] = [record_episode(env, policy, item) for item in items]
        lookups = sum(len(t["lookups"]) for e in episodes["bolt"] for t in e["turns"])
        assert lookups > 20  # the episodes exercise LOOKUP menus (with hub samples: sampled pools)
        assert episodes["bulk"] == episodes["bolt"]


def test_awkward_strings_survive_the_csv_files(bulk_slice: tuple[Neo4jStore, Any], neo4j_store: Neo4jStore,
                                               bulk_dir: Path) -> None:
    artifact = Artifact.open(bulk_dir)
    rows = artifact.table("paragraphs", ["id"]).column("id").to_pylist()
    neo4j_store.load(artifact, progress=False, hub_sample=HUB_SAMPLE)
    bulk = bulk_slice[0]
    _assert_same_graph(bulk, neo4j_store, artifact)
    texts = dict(bulk.run_cypher("MATCH (p:Paragraph) RETURN p.id, p.text").rows)
    assert texts[rows[0]] == AWKWARD_TEXTS[0] and texts[rows[1]] == ""
    sources = dict(bulk.run_cypher("MATCH (p:Paragraph) RETURN p.id, p.source").rows)
    assert sources[rows[0]] is None and sources[rows[1]] == "" and sources[rows[2]] == "docs/nobel.txt"


def test_csv_fields_in_the_importer_dialect() -> None:
    import numpy as np

    assert csv_field(None) == "" and csv_field("") == '""' and csv_field('a "b"') == '"a ""b"""'
    assert csv_field(True) == "true" and csv_field(3) == "3"
    value = float(np.float32(0.1))  # what the Bolt loader sends: the float32 widened to float64
    assert float(csv_field(value)) == value and float(csv_field(np.array([0.1], np.float32))) == value


def test_an_existing_database_is_refused_and_kept(tmp_path: Path, tiny_artifact: Artifact) -> None:
    _, classpath = build_launcher()
    (tmp_path / "csv").mkdir()
    files = write_import_csvs(tiny_artifact, tmp_path / "csv")
    home = tmp_path / "home"
    home.mkdir()
    import_database(files, home, admin_tool_command(classpath))
    target = database_dir(home)
    before = sorted((str(p.relative_to(target)), p.stat().st_size, p.stat().st_mtime_ns) for p in target.rglob("*"))
    assert before  # the first import wrote a store
    with pytest.raises(StoreError, match=r"^database 'neo4j' in .* is not empty \(.*\); the bulk import writes only "
                                         r"into a new database and never overwrites one$"):
        import_database(files, home, admin_tool_command(classpath))
    after = sorted((str(p.relative_to(target)), p.stat().st_size, p.stat().st_mtime_ns) for p in target.rglob("*"))
    assert after == before


def test_missing_import_directory_and_home_are_refused(tmp_path: Path, tiny_artifact: Artifact) -> None:
    with pytest.raises(InputError, match=r"nope: the import directory does not exist; create it or name another$"):
        write_import_csvs(tiny_artifact, tmp_path / "nope")
    assert not (tmp_path / "nope").exists()
    (tmp_path / "csv").mkdir()
    files = write_import_csvs(tiny_artifact, tmp_path / "csv")
    assert files.rows == {"paragraphs": 3, "sentences": 10, "entities": 8, "contains": 10, "next": 7,
                          "mentions": 14, "synonyms": 2}
    with pytest.raises(StoreError, match=r"^the Neo4j home .*nohome for the bulk import does not exist$"):
        import_database(files, tmp_path / "nohome", ["java"])
    assert not (tmp_path / "nohome").exists()


def test_a_relationship_to_a_missing_node_fails_the_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    graph_dir = build_tiny_artifact(tmp_path / "broken", content_hash="tiny-broken")
    mentions = Artifact.open(graph_dir).table("mentions").to_pydict()
    mentions["entity_id"][0] = "e_missing"
    write_table(graph_dir, "mentions", mentions)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where LocalNeo4j makes its work directory
    (tmp_path / "tmp").mkdir()
    with pytest.raises(StoreError, match=r"^neo4j-admin database import failed \(exit \d+\): bad input row: p_curie:0 "
                                         r"\(Sentence\)-\[MENTIONS\]->e_missing \(Entity\) referring to missing node "
                                         r"e_missing$") as caught:
        bulk_load_local(graph_dir)
    assert "\n" not in str(caught.value)
    assert list((tmp_path / "tmp").iterdir()) == []  # no server started, its work directory removed


def test_cli_bulk_load_of_no_graph_is_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "harness_g", "neo4j", "--bolt-port", "0", "--http-port", "0",
                           "--bulk-load", str(tmp_path / "nothing")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness-g: error: ") and "nothing" in lines[0], proc.stderr


def test_cli_bulk_load_writes_the_hub_sample_size_asked_for(slice_dir: Path, tmp_path: Path) -> None:
    """``harness-g neo4j --bulk-load COPY --hub-sample 3`` as a user runs it (a real process, stopped by SIGTERM):
    the server it starts holds the graph with samples of 3, and COPY's store.json names it, so ``stats`` finds it."""
    from harness_g.graph.load import open_store

    graph = tmp_path / "graph"
    graph.mkdir()
    for name in (*ARTIFACT_FILES, MANIFEST):
        if (slice_dir / name).exists():
            shutil.copy2(slice_dir / name, graph / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEO4J_")}
    server = subprocess.Popen([sys.executable, "-m", "harness_g", "neo4j", "--bolt-port", "0", "--http-port", "0",
                               "--bulk-load", str(graph), "--hub-sample", str(HUB_SAMPLE)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        printed = wait_until_ready(server, timeout_s=300)
        assert f"neo4j: bulk-loaded {graph}" in printed, printed
        with open_store(graph) as store:  # the remembered store, with the credentials the server stored
            assert store.meta()["hub_sample"] == HUB_SAMPLE and store.meta()["complete"] is True
            stored = {r["id"]: list(r["sample"]) for r in store.query("pool_samples_get")}
        assert stored == artifact_samples(Artifact.open(graph), HUB_SAMPLE) and stored
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
