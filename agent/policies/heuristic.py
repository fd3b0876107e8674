"""LLM-free heuristic policy: embedding-scored menu choices and an extractive answer from C_T.

Pattern (the paper's canonical bridge trajectory): SELECT the visible sentence closest to the
question; LOOKUP the best bridge entity that the question does not already name; ANSWER_WITH
the visible sentence closest to concat(question, C_t). It stops early when nothing is left.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from harness_g.agent.actions import ActionType
from harness_g.agent.policies.base import Policy
from harness_g.agent.retrieval import lookup_query
from harness_g.graph.text.canonical import canonicalize

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.env import MenuEnv

_YES_NO = re.compile(r"^\s*(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b", re.I)
# wh-cue -> preferred mention labels for the extractive answer
_CUES: list[tuple[re.Pattern[str], tuple[str, ...]]] = [
    (re.compile(r"\b(when|what year|which year|what date|born on|date of)\b", re.I), ("DATE",)),
    (re.compile(r"\b(who|whom|whose)\b", re.I), ("PERSON",)),
    (re.compile(r"\b(where|which country|what country|which city|what city|nationality)\b", re.I), ("GPE", "LOC", "FAC", "NORP")),
    (re.compile(r"\b(which company|what company|organization|team|band)\b", re.I), ("ORG",)),
]


class HeuristicPolicy(Policy):
    name = "heuristic"

    def __init__(self, max_commits: int = 2):
        self.max_commits = max_commits

    def _best_visible(self, env: "MenuEnv", vec: np.ndarray) -> str | None:
        menu = env.menu
        assert menu is not None
        ranked = env.view.rank(vec, [s.id for s in menu.sentences])
        return ranked[0][0] if ranked else None

    def act(self, observation: str, env: "MenuEnv") -> str:
        st, menu = env.state, env.menu
        assert st is not None and menu is not None
        by_type: dict[ActionType, list] = {}
        for a in menu.actions:
            by_type.setdefault(a.type, []).append(a)
        committed_texts = [t for _, t in env.committed_texts()]
        m_vec = env.view.encode([lookup_query(st.question.question, committed_texts, env.config.query_max_words)])[0]
        last_turn = st.turn >= env.config.max_turns - 1
        if not st.committed:
            sid = self._best_visible(env, st.question_vec)
            if sid is not None:
                # ANSWER_WITH on the last turn when offered; otherwise SELECT (the turn budget then ends it)
                kind = ActionType.ANSWER_WITH if last_turn and ActionType.ANSWER_WITH in by_type else ActionType.SELECT
                return next(a.id for a in by_type.get(kind, []) if a.targets == (sid,))
        elif len(st.committed) < self.max_commits and not last_turn:
            q_canon = f" {canonicalize(st.question.question)} "
            looked = {a.type for a in _executed(env)}
            lookups = [a for a in by_type.get(ActionType.LOOKUP, [])]
            if ActionType.LOOKUP not in looked:
                fresh = [a for a in lookups if f" {menu._entity[a.targets[0]].name} " not in q_canon]
                if fresh or lookups:
                    return (fresh or lookups)[0].id
            sid = self._best_visible(env, m_vec)
            if sid is not None:
                return next(a.id for a in by_type.get(ActionType.ANSWER_WITH, by_type.get(ActionType.SELECT, [])) if a.targets == (sid,))
        return by_type[ActionType.ANSWER][0].id

    def answer(self, question: str, evidence: list[tuple[str, str]], env: "MenuEnv") -> str:
        """Extractive: a mention from C_T whose label fits the question's wh-cue and that the question does not name."""
        if _YES_NO.match(question) and not re.search(r"\bor\b", question):
            return "yes"
        st = env.state
        assert st is not None
        if not st.committed:
            return ""
        preferred: tuple[str, ...] = ()
        for pattern, labels in _CUES:
            if pattern.search(question):
                preferred = labels
                break
        q_canon = f" {canonicalize(question)} "
        mentions = env.view.mentions_of(st.committed)
        candidates = []
        for order, sid in enumerate(reversed(st.committed)):  # later commits first: the answer hop comes last
            for e in mentions.get(sid, ()):
                if e.label == "TITLE" or f" {e.name} " in q_canon:
                    continue
                candidates.append((e.label not in preferred if preferred else False, order, e.surface))
        if candidates:
            return sorted(candidates)[0][2]
        return evidence[-1][1] if evidence else ""


def _executed(env: "MenuEnv"):
    from harness_g.agent.actions import Action

    assert env.trajectory is not None
    for s in env.trajectory.steps:
        if s.chosen is not None and s.action_type is not None:
            yield Action(s.chosen, ActionType(s.action_type), tuple(s.targets))
