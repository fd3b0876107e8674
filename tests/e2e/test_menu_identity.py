"""The menus are what they were: U_0, every rendered observation (sha256) and every LOOKUP result along the lookahead
policy's trajectories, and the reachability search's verdicts, on the packaged slice ``examples/hotpotqa-dev-slice``
under both env presets, equal the fixture recorded before the transition rules moved into ``agent/env/transition.py``
(issue 33; ``tests/data/menus/record_menus.py`` wrote it with the code before the change).

Each preset runs on the slice built under the same build preset, on both stores; the batched environment (whose
prefetch predicts the next states with the same transition) replays the episodes too. The slice is built once per
session (~1 min for both presets on 2 cores; ``slice_graph`` in tests/graph_fixtures.py, shared with
test_neo4j_bulk.py); ``HARNESS_G_TEST_SLICE_GRAPHS=DIR`` keeps the builds between sessions.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from helpers.menu_record import PRESETS, close_turn, fixture_path, record_menus, turn_record

from harness_g.agent.env.batch import BatchedMenuEnv
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.policies.lookahead import LookaheadPolicy
from harness_g.graph.artifact import Artifact
from harness_g.graph.load import load_graph


@pytest.fixture(scope="session")
def slice_graphs(slice_graph: Callable[[str], Path]) -> dict[str, Path]:
    return {preset: slice_graph(preset) for preset in PRESETS}


@pytest.fixture(scope="session")
def falkordb_slice_views(slice_graphs: dict[str, Path]) -> Iterator[dict[str, GraphView]]:
    views: dict[str, GraphView] = {}
    stores = []
    try:
        for preset, graph_dir in slice_graphs.items():
            store, _ = load_graph(graph_dir, progress=False, remember=False)
            stores.append(store)
            first = next(iter(views.values()), None)
            views[preset] = GraphView(store, Artifact.open(graph_dir), embedder=first.embedder if first else None)
        yield views
    finally:
        for store in stores:
            store.close()


@pytest.fixture(params=PRESETS)
def preset(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def slice_view(request: pytest.FixtureRequest, store_kind: str, preset: str,
               falkordb_slice_views: dict[str, GraphView]) -> GraphView:
    """The slice built under ``preset``, on ``store_kind`` (Neo4j: the session's one database, re-loaded with it)."""
    view = falkordb_slice_views[preset]
    if store_kind == "neo4j":
        store = request.getfixturevalue("neo4j_store")
        store.load(view.artifact, progress=False)
        view = GraphView(store, view.artifact, embedder=view.embedder)
    return view


def _expected(preset: str) -> dict[str, Any]:
    return json.loads(fixture_path(preset).read_text(encoding="utf-8"))


def _check_graph(view: GraphView, expected: dict[str, Any]) -> None:
    assert view.version == expected["graph_version"], (
        "the slice built into another graph than the fixture's (a build change): re-record the fixture with the code "
        "before the change (tests/data/menus/record_menus.py)")


def _first_difference(got: list[dict], want: list[dict]) -> str:
    for g, w in zip(got, want):
        if g != w:
            turn = next((i for i, (a, b) in enumerate(zip(g["turns"], w["turns"])) if a != b), None)
            return f"question {w['id']}: u0 {'equal' if g['u0'] == w['u0'] else 'differs'}, first differing turn {turn}"
    return f"{len(got)} episodes, {len(want)} expected"


def test_menus_lookup_results_and_reachability_are_the_recorded_ones(slice_view: GraphView, preset: str) -> None:
    expected = _expected(preset)
    _check_graph(slice_view, expected)
    got = record_menus(slice_view, slice_view.artifact.questions(), preset)
    lookups = sum(len(t["lookups"]) for e in expected["episodes"] for t in e["turns"])
    executed = sum(t["action"][0] == "LOOKUP" for e in expected["episodes"] for t in e["turns"])
    assert len(expected["episodes"]) == 30 and lookups > 500 and executed > 10  # the fixture exercises LOOKUPs
    assert got["episodes"] == expected["episodes"], _first_difference(got["episodes"], expected["episodes"])
    assert got["reachability"] == expected["reachability"]


def test_the_batched_env_replays_the_recorded_episodes(falkordb_slice_views: dict[str, GraphView], preset: str) -> None:
    view = falkordb_slice_views[preset]
    expected = _expected(preset)
    _check_graph(view, expected)
    items = view.artifact.questions()
    batch = BatchedMenuEnv(view, len(items), EnvConfig(preset=preset))
    texts: list[str | None] = list(batch.reset(items))
    policy = LookaheadPolicy()
    got = [{"id": item.id, "u0": list(env.state.visible), "turns": []} for item, env in zip(items, batch.envs)]
    while not batch.all_done:
        replies: list[str | None] = []
        for env, record, text in zip(batch.envs, got, texts):
            reply = None if env.done else policy.act(env.observe())
            if reply is not None:
                assert text is not None
                record["turns"].append(turn_record(env, text, reply))
            replies.append(reply)
        results = batch.step(replies)
        for env, record, result in zip(batch.envs, got, results):
            if result is not None:
                close_turn(env, record["turns"][-1])
        texts = [r.observation if r is not None else t for r, t in zip(results, texts)]
    for env, record in zip(batch.envs, got):
        record["committed"] = list(env.state.committed)
    assert got == expected["episodes"], _first_difference(got, expected["episodes"])
