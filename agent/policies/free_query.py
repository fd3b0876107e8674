"""Policies for the free-query arm (:mod:`harness_g.agent.env.free_query`): the heuristic's free-query counterpart.

A policy adapts to an interface through its own :meth:`~harness_g.agent.policies.base.Policy.for_interface`:
``HeuristicPolicy().for_interface("free-query")`` is a :class:`HeuristicFreeQueryPolicy`; an
:class:`~harness_g.agent.policies.llm.LLMPolicy` returns a copy whose chat opens with the free-query header; any
other policy acts on the free observation as it is (its text ends with the free-query instruction, its menu is
empty).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.free_query import SEARCH_PREFIX
from harness_g.agent.env.observation import Observation
from harness_g.agent.policies.base import Policy
from harness_g.agent.policies.heuristic import HeuristicPolicy


class HeuristicFreeQueryPolicy(Policy):
    """LLM-free free-query counterpart of :class:`HeuristicPolicy` (the same plan).

    Commits and answers by handle exactly as the menu heuristic does (SELECT the visible sentence
    closest to the question; ANSWER_WITH the one closest to concat(q, C_t); ANSWER once
    ``max_commits`` sentences are committed or on the last turn). Its one retrieval is written as a
    free search string, Search-R1 style: the name of the best entity mentioned in the committed
    evidence but not in the question (the bridge hop), which the frozen resolver maps to a LOOKUP
    target. The answer is the heuristic's extractive answer from C_T.
    """

    name = "heuristic"

    def __init__(self, max_commits: int = 2, base: Policy | None = None):
        self.base = base or HeuristicPolicy(max_commits=max_commits)
        self.max_commits = getattr(self.base, "max_commits", max_commits)

    @staticmethod
    def _bridge_entity(observation: Observation) -> str | None:
        from harness_g.graph.text.canonical import canonicalize

        obs = observation
        tools = obs.require_tools()
        q_canon = f" {canonicalize(obs.question)} "
        committed = obs.committed_ids
        ents = tools.mentions(committed)
        visited = set(obs.visited)
        seen: dict[str, Any] = {}
        for sid in committed:
            for e in ents.get(sid, ()):
                if e.lookupable and f" {e.name} " not in q_canon and e.id not in visited:
                    seen.setdefault(e.id, e)
        if not seen:
            return None
        cands = list(seen.values())
        sims = tools.encode([e.surface for e in cands]) @ tools.encode([obs.question])[0]
        best = sorted(range(len(cands)), key=lambda i: (-float(sims[i]), cands[i].id))[0]
        return cands[best].surface

    @staticmethod
    def _best_visible(observation: Observation, vec: np.ndarray) -> str | None:
        ranked = observation.require_tools().rank(vec, observation.visible_ids)
        return observation.handle_of(ranked[0][0]) if ranked else None

    def act(self, observation: Observation) -> str:
        obs = observation
        tools = obs.require_tools()
        last_turn = obs.last_turn
        answer_with = "ANSWER_WITH" if obs.answer_with else "SELECT"
        if not obs.committed:
            handle = self._best_visible(obs, tools.encode([obs.question])[0])
            if handle is not None:
                return f"{answer_with if last_turn else 'SELECT'} {handle}"
        elif len(obs.committed) < self.max_commits and not last_turn:
            looked_up = ActionType.LOOKUP in obs.executed
            if not looked_up and obs.search_available:
                entity = self._bridge_entity(obs)
                if entity:
                    return SEARCH_PREFIX + entity
            m_vec = tools.encode([obs.lookup_query])[0]  # m_t = concat(question, C_t), as the environment built it
            handle = self._best_visible(obs, m_vec)
            if handle is not None:
                return f"{answer_with} {handle}"
        return "ANSWER"

    def answer(self, question: str, evidence: list[tuple[str, str]], observation: Observation) -> str:
        return self.base.answer(question, evidence, observation)

    def trajectory_meta(self, observation: Observation) -> dict[str, Any]:
        return self.base.trajectory_meta(observation)

    def for_interface(self, name: str) -> Policy:
        """The menu arm gets the menu heuristic this policy was made from; any other interface, this policy."""
        return self.base if name == "menu" else self
