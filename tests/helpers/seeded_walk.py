"""What the tests of the LOOKUP execution switches (``EnvConfig.lookup_index_top_m``, ``lookup_store_rank_min``)
share: a seeded SELECT/LOOKUP walk through the menu environment, recorded step by step (compared with the paper's
walk), and the graph's entities split by mention count (the two sides of a switch's threshold)."""
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


def entities_split_by_mentions(view: GraphView, n: int) -> tuple[list[str], list[str]]:
    """The graph's entities with fewer than ``n`` mentions and those with at least ``n`` (each sorted, both non-empty
    on the test graphs for n = 4): the two sides of a switch's mention threshold."""
    counts = view.entity_mentions(sorted({e.id for es in view.entities_of(view.sentence_ids).values() for e in es}))
    return sorted(e for e, c in counts.items() if c < n), sorted(e for e, c in counts.items() if c >= n)
