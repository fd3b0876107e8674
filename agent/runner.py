"""Run one episode: policy <-> environment until ANSWER or the turn budget, then answer from C_T."""
from __future__ import annotations

import time

from harness_g.agent.env import MenuEnv
from harness_g.agent.policies.base import Policy
from harness_g.agent.trajectory import Trajectory
from harness_g.graph.types import QAItem


def run_episode(env: MenuEnv, policy: Policy, item: QAItem) -> Trajectory:
    """Play ``item`` to the end with ``policy``; the answer sees only the question and C_T."""
    t0 = time.perf_counter()
    observation = env.reset(item)
    policy_s = 0.0
    while not env.done:
        t = time.perf_counter()
        reply = policy.act(observation, env)
        policy_s += time.perf_counter() - t
        result = env.step(reply)
        observation = result.observation
    t = time.perf_counter()
    answer = policy.answer(item.question, env.committed_texts(), env)
    policy_s += time.perf_counter() - t
    trajectory = env.finish(answer, policy=policy.name)
    trajectory.seconds["policy"] = policy_s
    trajectory.seconds["total"] = time.perf_counter() - t0
    trajectory.seconds["env"] = trajectory.seconds["total"] - policy_s
    return trajectory
