"""The suite's local Neo4j runs with the extra JVM options of ``$HARNESS_G_NEO4J_JAVA_OPTIONS`` (tests/conftest.py
sets ``-XX:TieredStopAtLevel=1``): the session server's JVM was started with them and answers queries (a JVM refuses
to start on an option it does not know, so a running server took them)."""
from __future__ import annotations

import os
from pathlib import Path

from harness_g.graph.stores.local_neo4j import JAVA_OPTIONS_ENV, LocalNeo4j
from harness_g.graph.stores.neo4j_store import Neo4jStore


def test_the_session_server_runs_with_the_suite_s_java_options(neo4j_server: LocalNeo4j,
                                                               neo4j_store: Neo4jStore) -> None:
    options = os.environ[JAVA_OPTIONS_ENV].split()
    assert options and neo4j_server.config.java_options == tuple(options)
    assert neo4j_server._proc is not None
    argv = Path(f"/proc/{neo4j_server._proc.pid}/cmdline").read_bytes().split(b"\0")
    jvm_part = argv[:argv.index(b"-cp")]  # options before the classpath are the JVM's
    assert all(option.encode() in jvm_part for option in options)
    assert neo4j_store.run_cypher("RETURN 1 + 1 AS two").rows == [[2]]
