"""A seeded SELECT/LOOKUP walk through the menu environment, recorded step by step: what the tests of the LOOKUP
execution switches (``EnvConfig.lookup_index_top_m``, ``lookup_store_rank_min``) compare with the paper's walk."""
from __future__ import annotations

import random
from typing import Any

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env.menu_env import MenuEnv


def seeded_walk(view: GraphView, config: EnvConfig, question: Any, seed: int) -> list[dict]:
    """Per step: the observation, the menu's actions and every LOOKUP result; the action drawn by ``seed`` among the
    menu's SELECTs and LOOKUPs (the first action when there are none)."""
    env = MenuEnv(view, config)
    env.reset(question)
    rng = random.Random(seed)
    steps = []
    while not env.done:
        menu = env.menu
        steps.append({"observation": env.observation(), "actions": menu.to_json(),
                      "lookups": {e: list(r) for e, r in menu.lookup_results.items()}})
        options = [a.id for a in menu.actions if a.type in (ActionType.SELECT, ActionType.LOOKUP)] or ["A0"]
        env.step(rng.choice(options))
    return steps
