"""Shared fixtures: a hand-built tiny artifact and real graph databases, FalkorDB and Neo4j.

Every fixture that hands out a store is parametrised over :data:`STORE_KINDS`, so each test that
touches a store runs once on the embedded FalkorDB and once on a real Neo4j 5.26 (its test id ends
in ``[falkordb]`` / ``[neo4j]``); the run ends with a line counting the tests per store.

- ``tiny_artifact``   the :mod:`helpers.tiny_artifact` graph (3 paragraphs, 10 sentences, 8 entities),
                      built once per session; read-only.
- ``falkordb_server`` an :class:`EmbeddedFalkorDB` started once per session (stopped at the end).
                      Give each test its own graph name (``FalkorDBStore.attach(server, graph=...)``)
                      instead of starting servers; tests that stop or kill a server start their own.
- ``neo4j_server``    a real Neo4j 5.26 (:class:`LocalNeo4j`: Neo4j's in-process harness, fetched from
                      Maven Central and cached) started on loopback once per session, on first use;
                      authentication on (user ``neo4j``, a generated password: ``neo4j_server.auth``; harness-g's
                      own commands find it through ``connect_store``, see local_neo4j.local_credentials).
- ``neo4j_store``     one :class:`Neo4jStore` on ``neo4j_server``, shared by the session. Neo4j community
                      has one user database, so the graph in it changes with the tests: fixtures that
                      need a graph (re)load it on use (a no-op when it is already loaded).
- ``tiny_store``      ``tiny_artifact`` loaded, per store kind (FalkorDB graph ``tiny``); reads only.
- ``scratch_store``   an empty graph per store kind, cleared before and after the test.
"""
from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest
from helpers import file_times
from helpers.store_kinds import STORE_KINDS
from helpers.tiny_artifact import build_tiny_artifact

from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.base import GraphStore
from harness_g.graph.stores.falkordb_server import EmbeddedFalkorDB
from harness_g.graph.stores.falkordb_store import FalkorDBStore
from harness_g.graph.stores.local_neo4j import JAVA_OPTIONS_ENV, LocalNeo4j
from harness_g.graph.stores.neo4j_store import Neo4jStore

_STORE_OUTCOMES: Counter[tuple[str, str]] = Counter()

#: every local Neo4j the suite starts (the session's, its subprocesses', the bulk importer's) runs the JIT's first
#: tier only: a test server lives minutes, and the full JIT spent about twice the CPU on start-up and first loads
#: (measured: 25 -> 15 CPU-s to start, 24 -> 12 CPU-s for a first eval). Set the variable to run with other options.
os.environ.setdefault(JAVA_OPTIONS_ENV, "-XX:TieredStopAtLevel=1")


#: fixture parameters whose value names the store a test runs on
STORE_PARAMS = ("store_kind", "report_store")


#: this folder (tests/); the first folder under it names a test's kind
TESTS_DIR = Path(__file__).resolve().parent
#: kind folders under tests/, each also the marker its tests get (``pytest -m unit`` / ``pytest -m e2e``)
KIND_FOLDERS = ("unit", "e2e")


def _kind_of(path: Path) -> str | None:
    """``unit`` / ``e2e`` for a test file under tests/unit or tests/e2e, else None."""
    path = path.resolve()
    if not path.is_relative_to(TESTS_DIR):
        return None
    parts = path.relative_to(TESTS_DIR).parts
    return parts[0] if len(parts) > 1 and parts[0] in KIND_FOLDERS else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its kind (its folder: ``unit`` or ``e2e``) and tag it with the store(s) it runs on: a
    store parameter, or the ``neo4j`` marker (Neo4j-only tests)."""
    for item in items:
        test_kind = _kind_of(item.path)
        if test_kind is not None:
            item.add_marker(test_kind)
        params = getattr(getattr(item, "callspec", None), "params", {})
        kinds = {params[name] for name in STORE_PARAMS if params.get(name) in STORE_KINDS}
        if item.get_closest_marker("neo4j") is not None:
            kinds.add("neo4j")
        for kind in sorted(kinds):
            item.user_properties.append(("store", kind))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get(file_times.FILE_TIMES_ENV):
        file_times.record(report)
    kinds = {value for key, value in report.user_properties if key == "store"}
    if not kinds:
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        for kind in kinds:
            _STORE_OUTCOMES[(kind, report.outcome)] += 1


def pytest_sessionfinish(session: pytest.Session) -> None:
    file_times.write(session.config)


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001 - pytest's TerminalReporter
    if not _STORE_OUTCOMES:
        return
    parts = []
    for kind in STORE_KINDS:
        counts = {outcome: n for (k, outcome), n in sorted(_STORE_OUTCOMES.items()) if k == kind}
        parts.append(f"{kind}: " + (", ".join(f"{n} {outcome}" for outcome, n in counts.items()) or "none"))
    terminalreporter.write_line("tests per graph store -- " + "; ".join(parts))


@pytest.fixture(scope="session")
def tiny_artifact(tmp_path_factory: pytest.TempPathFactory) -> Artifact:
    return Artifact.open(build_tiny_artifact(tmp_path_factory.mktemp("tiny") / "graph"))


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedFalkorDB]:
    server = EmbeddedFalkorDB(tmp_path_factory.mktemp("falkordb") / "store")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def neo4j_server() -> Iterator[LocalNeo4j]:
    server = LocalNeo4j().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def neo4j_store(neo4j_server: LocalNeo4j) -> Iterator[Neo4jStore]:
    store = Neo4jStore(neo4j_server.bolt_uri, *neo4j_server.auth)
    yield store
    store.close()


@pytest.fixture(scope="session")
def falkordb_tiny_store(falkordb_server: EmbeddedFalkorDB, tiny_artifact: Artifact) -> Iterator[FalkorDBStore]:
    store = FalkorDBStore.attach(falkordb_server, graph="tiny")
    store.load(tiny_artifact, progress=False)
    yield store
    store.close()


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    """The store a test runs on; every store fixture depends on it, so a test taking several of them
    (e.g. ``hotpot_view`` and ``hotpot_dir``) runs once per store, not once per combination."""
    return str(request.param)


@pytest.fixture
def store_spec(request: pytest.FixtureRequest, store_kind: str) -> str | None:
    """A run's ``--store``/``data.store``: None (embedded FalkorDB in the graph dir) or the session's Neo4j, emptied
    first (it holds one graph: a run is refused on a database holding another test's graph)."""
    if store_kind == "falkordb":
        return None
    request.getfixturevalue("neo4j_store").clear()
    return request.getfixturevalue("neo4j_server").bolt_uri


@pytest.fixture
def tiny_store(request: pytest.FixtureRequest, store_kind: str, tiny_artifact: Artifact) -> GraphStore:
    if store_kind == "falkordb":
        return request.getfixturevalue("falkordb_tiny_store")
    store: Neo4jStore = request.getfixturevalue("neo4j_store")
    store.load(tiny_artifact, progress=False)  # no-op unless another test left another graph
    return store


def graph_name_for(node_id: str) -> str:
    """A short graph name unique to one test (FalkorDB graph names are Redis keys)."""
    return "t_" + hashlib.sha1(node_id.encode("utf-8")).hexdigest()[:12]


@pytest.fixture
def scratch_store(request: pytest.FixtureRequest, store_kind: str) -> Iterator[GraphStore]:
    if store_kind == "falkordb":
        server = request.getfixturevalue("falkordb_server")
        store: GraphStore = FalkorDBStore.attach(server, graph=graph_name_for(request.node.nodeid))
        store.clear()
        yield store
        store.clear()
        store.close()
        return
    store = request.getfixturevalue("neo4j_store")
    store.clear()
    yield store
    store.clear()


# Session fixtures over a real graph built with the real pipeline (see tests/graph_fixtures.py).
from graph_fixtures import (  # noqa: E402,F401
    artifact_copy,
    falkordb_hotpot_view,
    hotpot_dir,
    hotpot_graph_dir,
    hotpot_questions,
    hotpot_view,
    neo4j_hotpot_dir,
    neo4j_hotpot_view,
    slice_graph,
)
