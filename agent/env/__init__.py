"""The menu environment: state and transition, menus, actions, observations, the batched env, the graph view and the
free-query interface, all behind one contract (:class:`~harness_g.agent.env.protocol.Environment`).

Imports nothing of :mod:`harness_g.agent.policies`, :mod:`harness_g.agent.llm` or :mod:`harness_g.agent.eval`
(``tests/e2e/test_layering.py``). The names below are the package's public surface:
``from harness_g.agent.env import MenuEnv``.
"""
from __future__ import annotations

from harness_g.agent.env.batch import BatchedMenuEnv
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.free_query import FreeQueryEnv
from harness_g.agent.env.menu_env import (EnvState, EpisodeOver, MenuEnv, Preview, StepResult, committed_query,
                                          init_retrieve, question_targets)
from harness_g.agent.env.protocol import Environment

__all__ = ["BatchedMenuEnv", "EnvConfig", "EnvState", "Environment", "EpisodeOver", "FreeQueryEnv", "MenuEnv",
           "Preview", "StepResult", "committed_query", "init_retrieve", "question_targets"]
