"""Session fixtures over a REAL graph: the 6 HotpotQA test questions built with the real pipeline
(abbreviation-safe splitting, spaCy NER, MiniLM embeddings, entity linking) and loaded into an
embedded FalkorDB. Built once per test run (~20-30 s on 2 idle cores): under pytest-xdist the first worker to
ask builds each graph into the run's shared temp dir (a file lock) and every worker copies its artifact, so the
workers never build the same graph twice. Every fixture here is read-only. Set ``HARNESS_G_TEST_GRAPH=DIR`` to keep
the graph between sessions while iterating.

- ``hotpot_graph_dir``  GRAPH_DIR built from ``tests/data/hotpotqa`` (its embedded server is started
                        by ``hotpot_view`` and reused by in-process and subprocess CLI calls).
- ``hotpot_view``       a :class:`GraphView` over the loaded graph, parametrised over both stores
                        (``[falkordb]``: the embedded store of ``hotpot_graph_dir``; ``[neo4j]``: the
                        session's Neo4j, the graph re-loaded first if another test replaced it). One
                        view per store is shared by the session (they share one encoder).
- ``hotpot_dir``        a GRAPH_DIR for CLI tests, parametrised over both stores: ``[falkordb]`` is
                        ``hotpot_graph_dir``; ``[neo4j]`` is a copy of its artifact whose ``store.json``
                        names the session's Neo4j (so every command on it talks to Neo4j).
- ``hotpot_questions``  the graph's QA items (6 questions with gold sentence ids).
- ``artifact_copy``     a function copying the artifact (not its store) to a fresh dir, for tests
                        that need a server of their own (killing it, taking its port).
- ``slice_graph``       a function: the packaged HotpotQA dev slice built under a build preset, once per
                        run for every module that asks, each worker reading its own copy
                        (``HARNESS_G_TEST_SLICE_GRAPHS=DIR`` keeps the builds between sessions); read-only.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, Iterator

import pytest
from filelock import FileLock
from helpers.menu_record import build_slice
from helpers.paths import TEST_DATA

from harness_g.agent.env.graph_view import GraphView
from harness_g.graph.artifact import Artifact
from harness_g.graph.build import CorpusSpec, build_graph
from harness_g.graph.load import STORE_FILE, load_graph, remember_store
from harness_g.graph.types import QAItem

DATA = TEST_DATA
HOTPOT_FILE = DATA / "hotpotqa" / "hotpot_dev_distractor_v1.subset.json"
MUSIQUE_FILE = DATA / "musique" / "musique_ans_v1.0_dev.subset.jsonl"
TRIVIAQA_FILE = DATA / "triviaqa" / "triviaqa_test.subset.jsonl"


@pytest.fixture(scope="session")
def hotpot_graph_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # HARNESS_G_TEST_GRAPH=DIR keeps the built graph across sessions (a rebuild is then a cache hit);
    # by default every test run builds from scratch, once for all its workers (_run_build).
    cached = os.environ.get("HARNESS_G_TEST_GRAPH")
    if cached:
        result = build_graph([CorpusSpec("hotpotqa", HOTPOT_FILE)], Path(cached), progress=False)
        assert result.counts["questions"] == 6
        return Path(cached)

    def build(graph_dir: Path) -> None:
        result = build_graph([CorpusSpec("hotpotqa", HOTPOT_FILE)], graph_dir, progress=False)
        assert result.counts["questions"] == 6 and not result.cache_hit

    return _run_build(tmp_path_factory, "hotpot", build)


@pytest.fixture(scope="session")
def falkordb_hotpot_view(hotpot_graph_dir: Path) -> Iterator[GraphView]:
    store, _ = load_graph(hotpot_graph_dir, progress=False)
    try:
        yield GraphView(store, Artifact.open(hotpot_graph_dir))
    finally:
        store.close()


@pytest.fixture(scope="session")
def neo4j_hotpot_view(neo4j_store, hotpot_graph_dir: Path, falkordb_hotpot_view: GraphView) -> GraphView:
    artifact = Artifact.open(hotpot_graph_dir)
    neo4j_store.load(artifact, progress=False)
    return GraphView(neo4j_store, artifact, embedder=falkordb_hotpot_view.embedder)


@pytest.fixture
def hotpot_view(request: pytest.FixtureRequest, store_kind: str) -> GraphView:
    view: GraphView = request.getfixturevalue(f"{store_kind}_hotpot_view")
    view.store.load(view.artifact, progress=False)  # no-op when loaded (Neo4j: another test may have swapped it)
    return view


@pytest.fixture(scope="session")
def neo4j_hotpot_dir(neo4j_server, hotpot_graph_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    graph_dir = _copy_artifact(hotpot_graph_dir, tmp_path_factory.mktemp("hotpot-neo4j") / "graph")
    remember_store(graph_dir, neo4j_server.bolt_uri)
    return graph_dir


@pytest.fixture
def hotpot_dir(request: pytest.FixtureRequest, store_kind: str) -> Path:
    view: GraphView = request.getfixturevalue(f"{store_kind}_hotpot_view")  # loaded, embedded server started
    view.store.load(view.artifact, progress=False)
    return request.getfixturevalue("hotpot_graph_dir" if store_kind == "falkordb" else "neo4j_hotpot_dir")


@pytest.fixture(scope="session")
def hotpot_questions(hotpot_graph_dir: Path) -> list[QAItem]:
    return Artifact.open(hotpot_graph_dir).questions()


def _run_build(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A GRAPH_DIR of this worker holding the artifact ``build(dir)`` writes, built once per test run.

    Without xdist the build writes straight into the session's temp dir. Under xdist the workers share the run's
    temp root (``getbasetemp().parent``): the first to take ``NAME.lock`` builds into ``NAME.built`` and marks it
    done; every worker then copies the artifact (never its store, which each worker starts for itself)."""
    own = tmp_path_factory.mktemp(name) / "graph"
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        build(own)
        return own
    root = tmp_path_factory.getbasetemp().parent
    shared, done = root / f"{name}.built", root / f"{name}.built.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(shared, ignore_errors=True)  # a worker that failed mid-build left a partial one
            build(shared)
            done.touch()
    return _copy_artifact(shared, own)


def _copy_artifact(src: Path, dst: Path) -> Path:
    """The artifact files of ``src`` (manifest, tables, embeddings, questions), not its store."""
    dst.mkdir(parents=True)
    for item in src.iterdir():
        if item.is_file() and item.name != STORE_FILE:
            shutil.copy2(item, dst / item.name)
    return dst


@pytest.fixture
def artifact_copy(hotpot_graph_dir: Path, tmp_path: Path) -> Callable[[str], Path]:
    return lambda name="graph": _copy_artifact(hotpot_graph_dir, tmp_path / name)


@pytest.fixture(scope="session")
def slice_graph(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``slice_graph(preset)``: GRAPH_DIR of the packaged slice built under the build preset ``preset``
    (:func:`helpers.menu_record.build_slice`), built once per run on the first call per preset (:func:`_run_build`)."""
    kept = os.environ.get("HARNESS_G_TEST_SLICE_GRAPHS")
    built: dict[str, Path] = {}

    def get(preset: str) -> Path:
        if preset not in built:
            if kept:
                built[preset] = build_slice(Path(kept) / preset, preset)
            else:
                built[preset] = _run_build(tmp_path_factory, f"slice-{preset}", lambda d: build_slice(d, preset))
        return built[preset]

    return get
