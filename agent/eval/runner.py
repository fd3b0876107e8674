"""Run one episode: policy <-> environment until ANSWER or the turn budget, then answer from C_T."""
from __future__ import annotations

import time
from typing import Callable

from harness_g.agent.env.protocol import Environment
from harness_g.agent.env.trajectory import Trajectory
from harness_g.agent.policies.base import Policy
from harness_g.graph.types import QAItem


def run_episode(env: Environment, policy: Policy, item: QAItem,
                on_turn: Callable[[int, int], None] | None = None) -> Trajectory:
    """Play ``item`` to the end with ``policy`` (already adapted to ``env``'s interface: ``Policy.for_interface``),
    which sees only :meth:`env.observe() <harness_g.agent.env.protocol.Environment.observe>` observations; the answer sees the question, C_T and the final observation. ``on_turn(turn, max_turns)`` (1-based)
    is called before each decision, e.g. to show progress within a slow LLM episode."""
    t0 = time.perf_counter()
    env.reset(item)
    policy_s = 0.0
    while not env.done:
        observation = env.observe()
        if on_turn is not None:
            on_turn(observation.turn + 1, observation.max_turns)
        t = time.perf_counter()
        reply = policy.act(observation)
        policy_s += time.perf_counter() - t
        env.step(reply)
    final = env.observe()
    t = time.perf_counter()
    answer = policy.answer(item.question, env.committed_texts(), final)
    meta = {**policy.trajectory_meta(final), "policy": policy.name}
    policy_s += time.perf_counter() - t
    trajectory = env.finish(answer, **meta)
    trajectory.seconds["policy"] = policy_s
    trajectory.seconds["total"] = time.perf_counter() - t0
    trajectory.seconds["env"] = trajectory.seconds["total"] - policy_s
    return trajectory
