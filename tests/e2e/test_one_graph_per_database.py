"""One database holds one graph (issue 28 §5), on the stores graphs share: a real Neo4j 5.26 and a FalkorDB server
reached over TCP (``falkordb://``; the embedded store lives inside its GRAPH_DIR and holds only that graph).

Before, loading graph B into the database holding graph A replaced A silently, and any read command on A then
silently reloaded A over B (and the other way round); an eval running on A while another command loaded B finished
with wrong scores that a resume kept.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable, Iterator

import pytest
from helpers.cli_checks import assert_one_line_error, run
from helpers.ports import free_port
from helpers.tiny_artifact import build_tiny_artifact

from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.eval.run import RECORDS, EvalConfig, run_eval
from harness_g.agent.policies import make_policy
from harness_g.errors import HarnessError, StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.load import load_graph
from harness_g.graph.stores import connect_store
from harness_g.graph.stores.falkordb_server import EmbeddedFalkorDB

SHORT = EnvConfig(max_turns=2)
#: what each store's refusal says about giving each graph a database of its own
HINTS = {"neo4j": ("NEO4J_DATABASE=NAME", "a second Neo4j server"), "falkordb": ("?graph=NAME", "--store embedded")}


@pytest.fixture
def shared_spec(request: pytest.FixtureRequest, store_kind: str, tmp_path: Path) -> Iterator[str]:
    """``--store`` of a database graphs share, empty: the session's Neo4j (emptied before and after), or a FalkorDB
    server of this test's own on a TCP port."""
    if store_kind == "neo4j":
        store = request.getfixturevalue("neo4j_store")
        store.clear()
        yield request.getfixturevalue("neo4j_server").bolt_uri
        store.clear()
        return
    server = EmbeddedFalkorDB(tmp_path / "falkordb-server", port=free_port())
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("FALKORDB_PASSWORD", server.password)  # the server requires it, as a user's would
    try:
        yield f"falkordb://127.0.0.1:{server.port}"
    finally:
        server.stop()


def _holds(spec: str) -> str | None:
    with connect_store(spec, None) as store:
        return store.loaded_hash()


def test_a_second_graph_is_refused_and_reads_never_reload_over_it(shared_spec: str, store_kind: str, tmp_path: Path,
                                                                   capsys) -> None:
    graph_a = build_tiny_artifact(tmp_path / "A", content_hash="tiny-A").resolve()
    graph_b = build_tiny_artifact(tmp_path / "B", content_hash="tiny-B", paragraphs=("p_curie", "p_paris")).resolve()
    store, report = load_graph(graph_a, shared_spec, progress=False)  # what `build --out A --store SPEC` loads
    store.close()
    assert not report.skipped and _holds(shared_spec) == "tiny-A"

    # B into the database holding A: refused, naming the database, the graph it holds and the ways out
    with pytest.raises(StoreError) as info:
        load_graph(graph_b, shared_spec, progress=False)
    message = str(info.value)
    assert "\n" not in message and " holds another graph: " in message and str(graph_a) in message
    assert "(tiny, content hash tiny-A" in message or "(A, content hash tiny-A" in message
    assert f"refusing to load {graph_b} over it" in message and "--replace" in message
    assert all(hint in message for hint in HINTS[store_kind]), message
    assert _holds(shared_spec) == "tiny-A"  # the refused load touched nothing

    # replaced on purpose: B is loaded, and A's read commands are refused instead of reloading A over B
    store, report = load_graph(graph_b, shared_spec, progress=False, replace=True)
    store.close()
    assert not report.skipped and _holds(shared_spec) == "tiny-B"
    for argv in (("stats", graph_a), ("cypher", graph_a, "MATCH (p:Paragraph) RETURN count(p) AS n"),
                 ("ask", graph_a, "Where did Marie Curie teach?"), ("eval", graph_a, "--out", tmp_path / "run", "-q")):
        rc, _, err = run(capsys, *argv)  # A's store.json names the shared database
        assert_one_line_error(rc, err, f"holds another graph: {graph_b}", "content hash tiny-B", str(graph_a), "--replace")
        assert _holds(shared_spec) == "tiny-B", f"`harness-g {argv[0]}` on A changed the database"
    assert not (tmp_path / "run" / RECORDS).exists()

    # not another graph: a copy of B (same content, another path), and B rebuilt in place (same GRAPH_DIR)
    copy_b = Path(shutil.copytree(graph_b, tmp_path / "B-copy", ignore=shutil.ignore_patterns("store.json")))
    rc, out, err = run(capsys, "stats", copy_b, "--store", shared_spec, "--json")
    assert rc == 0 and json.loads(out)["store"]["content_hash"] == "tiny-B", err
    build_tiny_artifact(graph_b, content_hash="tiny-B2", paragraphs=("p_nobel",))
    store, report = load_graph(graph_b, shared_spec, progress=False)
    store.close()
    assert not report.skipped and _holds(shared_spec) == "tiny-B2"


def test_build_replace_flag_is_documented(capsys) -> None:
    with pytest.raises(SystemExit):
        run(capsys, "build", "--help")
    assert "--replace" in capsys.readouterr().out


# -- an eval whose graph changes under it --------------------------------------------------------------
@pytest.fixture
def fresh_view(request: pytest.FixtureRequest, store_kind: str, artifact_copy) -> Iterator[Callable[[], GraphView]]:
    """New GraphViews (their caches die with the test) over the real HotpotQA test graph, on a store this test may
    change: the session's Neo4j (the next test's fixtures reload it) or an embedded FalkorDB of its own."""
    embedder = request.getfixturevalue("falkordb_hotpot_view").embedder
    if store_kind == "neo4j":
        store = request.getfixturevalue("neo4j_store")
        artifact = request.getfixturevalue("neo4j_hotpot_view").artifact
        store.load(artifact, progress=False)
        yield lambda: GraphView(store, artifact, embedder=embedder)
        return
    graph_dir = artifact_copy("graph")
    store, _ = load_graph(graph_dir, progress=False)
    try:
        yield lambda: GraphView(store, Artifact.open(graph_dir), embedder=embedder)
    finally:
        store.close()


def test_an_eval_stops_when_another_graph_is_loaded_into_its_store(fresh_view, hotpot_questions, tiny_artifact: Artifact,
                                                                     tmp_path: Path) -> None:
    out = tmp_path / "run"
    view = fresh_view()
    seen: list[dict] = []

    def another_command_loads_another_graph(record: dict) -> None:  # e.g. `harness-g build --out B --store SAME --replace`
        seen.append(record)
        if len(seen) == 1:
            view.store.load(tiny_artifact, progress=False)

    with pytest.raises(HarnessError) as info:
        run_eval(view, make_policy("heuristic"), hotpot_questions, out, env_config=SHORT, progress=False,
                 on_record=another_command_loads_another_graph)
    message = str(info.value)
    assert "\n" not in message and "the graph changed during the eval" in message, message
    assert f"{view.store.where} was evaluating {view.artifact.path}" in message
    assert f"it now holds {tiny_artifact.path.resolve()}" in message and "content hash tiny-0001" in message
    assert f"1 finished questions are kept in {out / RECORDS}" in message and "re-run the same command" in message
    records = [json.loads(line) for line in (out / RECORDS).read_text().splitlines()]
    assert [r["id"] for r in records] == [hotpot_questions[0].id] and records[0] == json.loads(json.dumps(seen[0]))

    # the graph is back: the re-run (a new process: a new view) resumes where it stopped
    view.store.load(view.artifact, progress=False)
    summary = run_eval(fresh_view(), make_policy("heuristic"), hotpot_questions, out, env_config=SHORT,
                       config=EvalConfig(limit=3), progress=False)
    assert summary["questions"] == 3 and summary["errors"] == 0
    # ... and an eval whose store no longer holds its graph is refused before any question
    view = fresh_view()
    view.store.load(tiny_artifact, progress=False)
    with pytest.raises(HarnessError, match="no longer holds"):
        run_eval(view, make_policy("heuristic"), hotpot_questions, tmp_path / "other", env_config=SHORT, progress=False)
    assert not (tmp_path / "other" / RECORDS).exists()
    view.store.load(view.artifact, progress=False)
