"""Shared fixtures: a hand-built tiny artifact and one real embedded FalkorDB server per session.

- ``tiny_artifact``   the :mod:`helpers.tiny_artifact` graph (3 paragraphs, 10 sentences, 8 entities),
                      built once per session; read-only.
- ``falkordb_server`` an :class:`EmbeddedFalkorDB` started once per session (stopped at the end).
                      Give each test its own graph name (``FalkorDBStore.attach(server, graph=...)``)
                      instead of starting servers; tests that stop or kill a server start their own.
- ``tiny_store``      a FalkorDBStore on ``falkordb_server`` with ``tiny_artifact`` loaded (graph
                      ``tiny``), shared by the session: use it only for reads.
- ``scratch_store``   a FalkorDBStore on an empty graph of its own, deleted after the test.
"""
from __future__ import annotations

import hashlib
from typing import Iterator

import pytest
from helpers.tiny_artifact import build_tiny_artifact

from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.falkordb_server import EmbeddedFalkorDB
from harness_g.graph.stores.falkordb_store import FalkorDBStore


@pytest.fixture(scope="session")
def tiny_artifact(tmp_path_factory: pytest.TempPathFactory) -> Artifact:
    return Artifact.open(build_tiny_artifact(tmp_path_factory.mktemp("tiny") / "graph"))


@pytest.fixture(scope="session")
def falkordb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedFalkorDB]:
    server = EmbeddedFalkorDB(tmp_path_factory.mktemp("falkordb") / "store")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def tiny_store(falkordb_server: EmbeddedFalkorDB, tiny_artifact: Artifact) -> Iterator[FalkorDBStore]:
    store = FalkorDBStore.attach(falkordb_server, graph="tiny")
    store.load(tiny_artifact, progress=False)
    yield store
    store.close()


def graph_name_for(node_id: str) -> str:
    """A short graph name unique to one test (FalkorDB graph names are Redis keys)."""
    return "t_" + hashlib.sha1(node_id.encode("utf-8")).hexdigest()[:12]


@pytest.fixture
def scratch_store(falkordb_server: EmbeddedFalkorDB, request: pytest.FixtureRequest) -> Iterator[FalkorDBStore]:
    store = FalkorDBStore.attach(falkordb_server, graph=graph_name_for(request.node.nodeid))
    store.clear()
    yield store
    store.clear()
    store.close()



# Session fixtures over a real graph built with the real pipeline (see tests/graph_fixtures.py).
from graph_fixtures import artifact_copy, hotpot_graph_dir, hotpot_questions, hotpot_view  # noqa: E402,F401
