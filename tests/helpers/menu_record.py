"""Record what the menu environment shows along the lookahead policy's trajectories, so that a refactoring of the
environment can be checked to leave every menu byte-identical (issue 33: "menus byte-identical on the dev sets").

A record (one per env preset) holds, per question of the packaged slice ``examples/hotpotqa-dev-slice``: U_0, and per
turn the rendered observation's sha256 (the menu as the policy reads it, byte for byte), the reply, and every LOOKUP
result the menu offers (entity id -> the exact U_{t+1}); and the reachability search's verdict and path per question
(the search applies the same transitions through its own states). ``tests/data/menus/record_menus.py`` writes the
fixture; ``tests/e2e/test_menu_identity.py`` replays it on both stores.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Sequence

from helpers.paths import REPO_ROOT, TEST_DATA

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.eval.reachability import menu_reachability
from harness_g.agent.policies.lookahead import LookaheadPolicy
from harness_g.graph.build import CorpusSpec, build_graph
from harness_g.graph.config import BuildConfig
from harness_g.graph.types import QAItem

#: the packaged 30-question HotpotQA dev slice the README's walk-through builds
SLICE = REPO_ROOT / "examples" / "hotpotqa-dev-slice" / "hotpot_dev_distractor_v1.slice.json"
#: the recorded menus, one file per env preset
FIXTURE_DIR = TEST_DATA / "menus"
PRESETS = ("paper", "extended")


def fixture_path(preset: str) -> Path:
    return FIXTURE_DIR / f"hotpotqa-dev-slice.{preset}.json"


def build_slice(graph_dir: Path, preset: str) -> Path:
    """The slice built under the build preset ``preset`` into ``graph_dir`` (a cache hit when already there)."""
    build_graph([CorpusSpec("hotpotqa", SLICE)], graph_dir, BuildConfig(preset=preset), progress=False)
    return graph_dir


def turn_record(env: MenuEnv, text: str, reply: str) -> dict[str, Any]:
    """What one turn showed before ``reply`` is executed: the observation ``text``'s sha256, the reply, and every
    LOOKUP result of the menu (entity id -> U_{t+1}); :func:`close_turn` adds what was executed."""
    assert env.menu is not None
    return {"obs_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "reply": reply,
            "lookups": {e: list(r) for e, r in env.menu.lookup_results.items()}}


def close_turn(env: MenuEnv, turn: dict[str, Any]) -> None:
    """Add to ``turn`` (:func:`turn_record`) the executed action's type and targets, once ``env`` stepped."""
    assert env.trajectory is not None
    done = env.trajectory.steps[-1]
    turn["action"] = [done.action_type, *done.targets]


def record_episode(env: MenuEnv, policy: LookaheadPolicy, item: QAItem) -> dict[str, Any]:
    """One lookahead episode: ``{"id", "u0", "turns": [{"obs_sha256", "reply", "action", "lookups": {entity:
    [U_{t+1}]}}], "committed"}`` (``action``: the executed action's type and targets)."""
    text = env.reset(item)
    assert env.state is not None
    out: dict[str, Any] = {"id": item.id, "u0": list(env.state.visible), "turns": []}
    while not env.done:
        reply = policy.act(env.observe())
        out["turns"].append(turn_record(env, text, reply))
        text = env.step(reply).observation
        close_turn(env, out["turns"][-1])
    out["committed"] = list(env.state.committed)
    return out


def record_reachability(view: GraphView, item: QAItem, cfg: EnvConfig) -> dict[str, Any]:
    """The reachability search's verdict for ``item`` (it walks the same menus through its own states):
    ``{"status", "cause", "detail", "min_turns", "needed_turns", "expansions", "path": [[type, *targets]]}``."""
    r = menu_reachability(view, item, cfg)
    return {"status": r.status, "cause": r.cause, "detail": r.detail, "min_turns": r.min_turns,
            "needed_turns": r.needed_turns, "expansions": r.expansions,
            "path": [[kind.value, *targets] for kind, targets in r.path]}


def record_menus(view: GraphView, items: Sequence[QAItem], preset: str) -> dict[str, Any]:
    """The record of every question of ``items`` under env preset ``preset`` (module docstring): the lookahead
    episodes and the reachability verdicts."""
    cfg = EnvConfig(preset=preset)
    env = MenuEnv(view, cfg)
    policy = LookaheadPolicy()
    return {"preset": preset, "graph_version": view.version,
            "episodes": [record_episode(env, policy, item) for item in items],
            "reachability": {item.id: record_reachability(view, item, cfg) for item in items}}
