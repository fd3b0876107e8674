"""LLM-free heuristic policy: embedding-scored menu choices and an extractive answer from C_T.

Pattern (the paper's canonical bridge trajectory): SELECT the visible sentence closest to the
question; LOOKUP the best bridge entity that the question does not already name; ANSWER_WITH
the visible sentence closest to concat(question, C_t). It stops early when nothing is left.
"""
from __future__ import annotations

import re

import numpy as np

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.observation import MenuAction, Observation
from harness_g.agent.policies.base import Policy
from harness_g.graph.text.canonical import canonicalize

_YES_NO = re.compile(r"^\s*(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.I)
# wh-cue -> preferred mention labels for the extractive answer
_CUES: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"\b(when|what year|which year|what date|born on|date of)\b", re.I), ("DATE",)),
    (re.compile(r"\b(who|whom|whose)\b", re.I), ("PERSON",)),
    (re.compile(r"\b(where|which country|what country|which city|what city|nationality)\b", re.I), ("GPE", "LOC", "FAC", "NORP")),
    (re.compile(r"\b(which company|what company|organization|team|band)\b", re.I), ("ORG",)),
]


class HeuristicPolicy(Policy):
    """Reads only the :class:`~harness_g.agent.env.observation.Observation`: the menu, C_t, U_t, the executed action
    types, m_t, and ``observation.tools`` (encode / rank / mentions) for vectors and answer candidates."""

    name = "heuristic"

    def __init__(self, max_commits: int = 2):
        self.max_commits = max_commits

    def settings(self) -> dict:
        return {"max_commits": self.max_commits}

    def for_interface(self, name: str) -> Policy:
        """The free-query arm: :class:`~harness_g.agent.policies.free_query.HeuristicFreeQueryPolicy` over this
        policy (the same plan, its LOOKUP written as a search string); any other interface: ``self``."""
        if name != "free-query":
            return self
        from harness_g.agent.policies.free_query import HeuristicFreeQueryPolicy

        return HeuristicFreeQueryPolicy(base=self)

    @staticmethod
    def _best_visible(observation: Observation, vec: np.ndarray) -> str | None:
        ranked = observation.require_tools().rank(vec, observation.visible_ids)
        return ranked[0][0] if ranked else None

    def act(self, observation: Observation) -> str:
        obs = observation
        tools = obs.require_tools()
        by_type: dict[ActionType, list[MenuAction]] = {}
        for a in obs.menu:
            by_type.setdefault(a.type, []).append(a)
        q_vec = tools.encode([obs.question])[0]
        m_vec = tools.encode([obs.lookup_query])[0]  # m_t = concat(question, C_t), as the environment built it
        last_turn = obs.last_turn
        if not obs.committed:
            sid = self._best_visible(obs, q_vec)
            if sid is not None:
                # ANSWER_WITH on the last turn when offered; otherwise SELECT (the turn budget then ends it)
                kind = ActionType.ANSWER_WITH if last_turn and ActionType.ANSWER_WITH in by_type else ActionType.SELECT
                return next(a.id for a in by_type.get(kind, []) if a.targets == (sid,))
        elif len(obs.committed) < self.max_commits and not last_turn:
            q_canon = f" {canonicalize(obs.question)} "
            lookups = by_type.get(ActionType.LOOKUP, [])
            if ActionType.LOOKUP not in obs.executed:
                names = {e.id: e.name for e in obs.entities}
                fresh = [a for a in lookups if f" {names[a.targets[0]]} " not in q_canon]
                if fresh or lookups:
                    return (fresh or lookups)[0].id
            sid = self._best_visible(obs, m_vec)
            if sid is not None:
                return next(a.id for a in by_type.get(ActionType.ANSWER_WITH, by_type.get(ActionType.SELECT, [])) if a.targets == (sid,))
        return by_type[ActionType.ANSWER][0].id

    def answer(self, question: str, evidence: list[tuple[str, str]], observation: Observation) -> str:
        """Extractive: a mention from C_T whose label fits the question's wh-cue and that the question does not name."""
        if _YES_NO.match(question) and not re.search(r"\bor\b", question):
            return "yes"
        committed = observation.committed_ids
        if not committed:
            return ""
        preferred: tuple[str, ...] = ()
        for pattern, labels in _CUES:
            if pattern.search(question):
                preferred = labels
                break
        q_canon = f" {canonicalize(question)} "
        mentions = observation.require_tools().mentions(committed)
        candidates = []
        for order, sid in enumerate(reversed(committed)):  # later commits first: the answer hop comes last
            for e in mentions.get(sid, ()):
                if e.label == "TITLE" or f" {e.name} " in q_canon:
                    continue
                candidates.append((e.label not in preferred if preferred else False, order, e.surface))
        if candidates:
            return sorted(candidates)[0][2]
        return evidence[-1][1] if evidence else ""
