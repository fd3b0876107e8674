"""A GRAPH_DIR remembers its store in ``store.json`` (embedded builds too), and a remembered server that is gone
(a stopped Neo4j) is a one-line error naming the store, the file and the ways out (issue 32 item 3)."""
from __future__ import annotations

import json

from graph_fixtures import HOTPOT_FILE
from helpers.cli_checks import assert_one_line_error, run
from helpers.ports import free_port

from harness_g.graph.load import STORE_FILE, remember_store


def _build(capsys, graph_dir, *extra):  # noqa: ANN001, ANN202 - pytest's capsys
    return run(capsys, "build", "--format", "hotpotqa", "--input", HOTPOT_FILE, "--out", graph_dir, "-q", *extra)


def test_an_embedded_build_writes_store_json(artifact_copy, capsys) -> None:
    graph_dir = artifact_copy("g")
    rc, stdout, err = _build(capsys, graph_dir)
    assert rc == 0 and stdout.startswith("cache hit"), err
    assert json.loads((graph_dir / STORE_FILE).read_text()) == {"store": "embedded"}


def test_a_stopped_neo4j_names_the_remembered_store_and_how_to_switch(artifact_copy, hotpot_questions, capsys) -> None:
    """The graph was built into a local Neo4j that has stopped (nothing listens on its port any more): every
    command says which store ``store.json`` remembers, how to start it, and how to use the embedded store instead;
    ``--store embedded`` works for one command, a build with it makes it the remembered store."""
    graph_dir = artifact_copy("g")
    uri = f"bolt://127.0.0.1:{free_port()}"
    remember_store(graph_dir, uri)
    for argv in (("stats", graph_dir), ("cypher", graph_dir, "MATCH (s:Sentence) RETURN count(s)"),
                 ("ask", graph_dir, hotpot_questions[0].question, "--max-turns", "1")):
        rc, _, err = run(capsys, *argv)
        assert_one_line_error(rc, err, f"cannot reach Neo4j at {uri}", f"{graph_dir} remembers the store {uri}",
                              str(graph_dir / STORE_FILE), f"`harness-g neo4j --bolt-port {uri.rsplit(':', 1)[1]}`",
                              "`--store embedded` on this command", f"--out {graph_dir} --store embedded` to remember it")
    rc, stdout, err = run(capsys, "stats", graph_dir, "--store", "embedded")
    assert rc == 0 and "Sentence" in stdout, err
    assert json.loads((graph_dir / STORE_FILE).read_text()) == {"store": uri}  # one command does not switch
    rc, _, err = _build(capsys, graph_dir, "--store", "embedded")
    assert rc == 0, err
    assert json.loads((graph_dir / STORE_FILE).read_text()) == {"store": "embedded"}
    rc, stdout, err = run(capsys, "stats", graph_dir)
    assert rc == 0 and "Sentence" in stdout, err


def test_a_remembered_neo4j_on_the_default_port_suggests_plain_harness_g_neo4j(tmp_path) -> None:
    from harness_g.graph.load import remembered_store_hint

    hint = remembered_store_hint(tmp_path, "bolt://127.0.0.1:7687")
    assert "`harness-g neo4j` (its database starts empty" in hint
    assert "harness-g neo4j" not in remembered_store_hint(tmp_path, "neo4j://db.example.org:7687")
