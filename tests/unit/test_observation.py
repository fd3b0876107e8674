"""Policies receive an Observation, never the environment (issue 11 §1, second bullet).

These tests build observations by hand and use no graph at all: a policy is tested alone. That the environments'
``observe()`` reports what they render and execute is checked on the real graph in tests/e2e/test_observation_envs.py.
"""
from __future__ import annotations

import dataclasses
import io
from typing import Sequence

import numpy as np
import pytest

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.graph_view import EntityInfo
from harness_g.agent.env.observation import (CommittedSentence, MenuAction, MenuEntity, Observation, PolicyTools,
                                             VisibleSentence, next_episode_id)
from harness_g.agent.policies.heuristic import HeuristicPolicy
from harness_g.agent.policies.human import HumanPolicy
from harness_g.errors import HarnessError


# -- a policy without a graph ------------------------------------------------------------------------------
class FakeTools:
    """Stands in for the graph's encoder (and its sentence embeddings and entity mentions) so that the policy's own
    logic is tested alone: every text and sentence gets a hand-picked 3-d unit vector; ``mentions`` is a table."""

    def __init__(self, vectors: dict[str, Sequence[float]], sentences: dict[str, Sequence[float]],
                 mentions: dict[str, list[EntityInfo]] | None = None):
        unit = lambda v: np.asarray(v, dtype=np.float32) / np.linalg.norm(v)  # noqa: E731
        self.vectors = {t: unit(v) for t, v in vectors.items()}
        self.sentences = {s: unit(v) for s, v in sentences.items()}
        self.table = mentions or {}
        self.encoded: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded += list(texts)
        return np.stack([self.vectors[t] for t in texts])

    def rank(self, vector: np.ndarray, sentence_ids: Sequence[str]) -> list[tuple[str, float]]:
        known = [s for s in sentence_ids if s in self.sentences]
        return sorted(((s, float(self.sentences[s] @ vector)) for s in known), key=lambda p: (-p[1], p[0]))

    def mentions(self, sentence_ids: Sequence[str]) -> dict[str, list[EntityInfo]]:
        return {s: self.table[s] for s in sentence_ids if s in self.table}

    def titles(self, sentence_ids: Sequence[str]) -> dict[str, str]:
        return {}

    def preview(self, action_id: str):
        raise HarnessError("no environment behind these tools")  # the heuristic never previews


QUESTION = "In what year did the Danish plant ecologist who assisted Sorensen die?"


def _menu(visible: list[str], entities: list[str], answer_with: bool = True) -> tuple[MenuAction, ...]:
    """The menu the environment would build: SELECT per visible sentence, LOOKUP per entity, ANSWER_WITH, ANSWER."""
    acts: list[tuple[ActionType, tuple[str, ...]]] = [(ActionType.SELECT, (s,)) for s in visible]
    acts += [(ActionType.LOOKUP, (e,)) for e in entities]
    acts += [(ActionType.ANSWER_WITH, (s,)) for s in visible] if answer_with else []
    acts.append((ActionType.ANSWER, ()))
    return tuple(MenuAction(f"A{i}", t, tg, f"A{i} = {t.value} {' '.join(tg)}".strip()) for i, (t, tg) in enumerate(acts))


def _obs(tools: PolicyTools | None, *, committed=(), visible=(), entities=(), turn=0, max_turns=6, executed=(),
         lookup_query="", answer_with=True, done=False) -> Observation:
    vis = tuple(VisibleSentence(s, f"S{i}", "T", f"text of {s}") for i, s in enumerate(visible))
    ents = tuple(MenuEntity(e, f"E{i}", name, name.title(), "bridge") for i, (e, name) in enumerate(entities))
    menu = () if done else _menu(list(visible), [e for e, _ in entities], answer_with)
    return Observation(text="(rendered)", event="start" if turn == 0 else "ok", error=None, episode=next_episode_id(),
                       question_id="q1", question=QUESTION, turn=turn, max_turns=max_turns,
                       committed=tuple(CommittedSentence(s, "T", f"text of {s}") for s in committed), visible=vis,
                       entities=ents, menu=menu, executed=tuple(executed), lookup_query=lookup_query or QUESTION,
                       answer_with=answer_with, search_available=bool(entities), done=done, tools=tools)


M1 = QUESTION + " text of s_olsen"  # m_t after committing s_olsen


def _fake() -> FakeTools:
    return FakeTools(
        vectors={QUESTION: [1, 0, 0], M1: [0, 1, 0]},
        sentences={"s_olsen": [0.9, 0.1, 0], "s_ph": [0.5, 0.5, 0], "s_death": [0.1, 0.9, 0.1], "s_born": [0, 0.2, 1]},
        mentions={
            "s_olsen": [EntityInfo("e_olsen", "carsten olsen", "Carsten Olsen", "PERSON", True, 3),
                        EntityInfo("e_1898", "1898", "1898", "DATE", False, 1)],
            "s_death": [EntityInfo("e_olsen", "carsten olsen", "Carsten Olsen", "PERSON", True, 3),
                        EntityInfo("e_title", "carsten olsen", "Carsten Olsen", "TITLE", True, 1),
                        EntityInfo("e_denmark", "denmark", "Denmark", "GPE", True, 9),
                        EntityInfo("e_1974", "1974", "1974", "DATE", False, 1)],
        },
    )


def test_heuristic_policy_without_a_graph() -> None:
    """The heuristic's plan on hand-built observations: SELECT the visible sentence closest to the question, LOOKUP
    a bridge entity the question does not name, ANSWER_WITH the sentence closest to m_t, ANSWER when done."""
    policy = HeuristicPolicy(max_commits=2)
    tools = _fake()
    assert isinstance(tools, PolicyTools)
    # turn 0: nothing committed -> SELECT the sentence closest to the question (s_olsen, not s_ph)
    obs = _obs(tools, visible=["s_ph", "s_olsen"])
    assert obs.actions(ActionType.SELECT)[1].targets == ("s_olsen",)
    assert policy.act(obs) == "A1"
    # the last turn with nothing committed: ANSWER_WITH that sentence at once
    assert policy.act(_obs(tools, visible=["s_ph", "s_olsen"], turn=5)) == "A3"
    # ... and SELECT when ANSWER_WITH is not offered
    assert policy.act(_obs(tools, visible=["s_ph", "s_olsen"], turn=5, answer_with=False)) == "A1"
    # turn 1: one commit, no LOOKUP yet -> the first LOOKUP whose entity the question does not name (sorensen is named)
    obs = _obs(tools, committed=["s_olsen"], visible=["s_ph"], entities=[("e_sor", "sorensen"), ("e_olsen", "carsten olsen")],
               turn=1, executed=[ActionType.SELECT], lookup_query=M1)
    assert [a.id for a in obs.actions("LOOKUP")] == ["A1", "A2"] and obs.action_ids[-1] == "A4"
    assert policy.act(obs) == "A2"
    # turn 2: a LOOKUP was executed -> ANSWER_WITH the visible sentence closest to m_t (s_death, not s_born)
    obs = _obs(tools, committed=["s_olsen"], visible=["s_born", "s_death"], turn=2,
               executed=[ActionType.SELECT, ActionType.LOOKUP], lookup_query=M1)
    assert policy.act(obs) == "A3" and obs.action("A3").targets == ("s_death",)
    assert tools.encoded[-2:] == [QUESTION, M1]  # the question and the environment's m_t, nothing else
    # max_commits reached -> ANSWER
    obs = _obs(tools, committed=["s_olsen", "s_death"], visible=["s_born"], turn=3, lookup_query=M1)
    assert policy.act(obs) == "A2" and obs.action("A2").type is ActionType.ANSWER


def test_heuristic_extractive_answer_without_a_graph() -> None:
    policy = HeuristicPolicy()
    tools = _fake()
    final = _obs(tools, committed=["s_olsen", "s_death"], done=True)
    assert final.menu == () and final.committed_ids == ["s_olsen", "s_death"]
    evidence = final.committed_texts
    # "what year" -> a DATE; the later commit first; the question's own name and TITLE entities are skipped
    assert policy.answer(QUESTION, evidence, final) == "1974"
    # "who" -> a PERSON the question does not name
    assert policy.answer("Who assisted Sorensen?", evidence, final) == "Carsten Olsen"
    assert policy.answer("Was Carsten Olsen a Danish plant ecologist?", evidence, final) == "yes"
    assert policy.answer(QUESTION, [], _obs(tools, done=True)) == ""
    # nothing mentioned: the last evidence sentence's text
    bare = _obs(FakeTools({}, {}), committed=["s_x"], done=True)
    assert policy.answer(QUESTION, [("T", "the last one")], bare) == "the last one"


def test_an_observation_without_tools_says_so() -> None:
    with pytest.raises(HarnessError, match="no tools"):
        HeuristicPolicy().act(_obs(None, visible=["s_ph"]))
    with pytest.raises(HarnessError, match="event"):
        Observation(text="", event="done", error=None, episode=1, question_id="q", question="q", turn=0, max_turns=1)


def test_human_policy_on_an_observation() -> None:
    out = io.StringIO()
    obs = _obs(None, visible=["s_ph"])
    assert HumanPolicy(stdin=io.StringIO("A0\n"), stdout=out).act(obs) == "A0"
    assert "(rendered)" in out.getvalue() and out.getvalue().endswith("action> ")
    # EOF: the menu's ANSWER (its last action); on the free-query arm (no menu) the ANSWER move
    assert HumanPolicy(stdin=io.StringIO(""), stdout=io.StringIO()).act(obs) == obs.menu[-1].id == "A2"
    free = _obs(None, visible=["s_ph"], done=True)
    assert HumanPolicy(stdin=io.StringIO(""), stdout=io.StringIO()).act(free) == "ANSWER"
    out = io.StringIO()
    assert HumanPolicy(stdin=io.StringIO("1974\n"), stdout=out).answer("q", [("T", "x")], free) == "1974"
    assert "1. T: x" in out.getvalue()


# -- the LLM policy on observations --------------------------------------------------------------------------
class Scripted:
    """A scripted chat backend: this test is about the policy's protocol and bookkeeping, not a model."""

    name = "scripted"

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.calls = list(replies), []

    def generate(self, batch, *, max_new_tokens, temperature=0.0, top_p=1.0, seed=None, stop=None, allowed=None):
        from harness_g.agent.llm.backends import Generation

        self.calls.append({"batch": [list(c) for c in batch], "seed": seed, "allowed": allowed})
        return [Generation(self.replies.pop(0) if self.replies else "A0", 10, 2, 0.5) for _ in batch]


def test_llm_policy_acts_on_observations() -> None:
    from harness_g.agent.llm.prompts import environment_response
    from harness_g.agent.policies.llm import LLMPolicy

    backend = Scripted(["A1", "A9", "A0", "Answer: 1974"])
    policy = LLMPolicy(backend, constrain_actions=True)
    a, b = _obs(None, visible=["s_ph", "s_olsen"]), _obs(None, visible=["s_ph"])
    assert a.episode != b.episode
    assert policy.act_batch([a, None, b]) == ["A1", None, "A9"]  # one call, None skipped
    call = backend.calls[-1]
    assert call["allowed"] == [list(a.action_ids), list(b.action_ids)]
    assert call["batch"][0][0]["content"].endswith(environment_response(a.text, "start"))
    # the next turn of episode b: rejected reply, the observation's own event and reason reach the chat
    b2 = Observation(text="(rendered again)", event="invalid", error="unknown action id A9; available: A0, A1, A2",
                     episode=b.episode, question_id="q1", question=QUESTION, turn=1, max_turns=6, menu=b.menu)
    assert policy.act(b2) == "A0"
    chat = policy.episode_context(b2)
    assert chat is policy.episode_context(b.episode) and [t.reply for t in chat.turns] == ["A9", "A0"]
    assert chat.responses[1].startswith("Rejected: unknown action id A9")
    assert policy.episode_context(a) is not chat and len(policy.episode_context(a).turns) == 1
    # a finished episode's observation is not acted on
    assert policy.act_batch([_obs(None, done=True)]) == [None]
    # answers: keyed by each episode's final observation; stats and the trajectory meta follow the episode
    final_b = dataclasses.replace(_obs(None, committed=["s_ph"], done=True), episode=b.episode)
    assert policy.trajectory_meta(final_b) == {}  # not answered yet
    assert policy.answer_batch(["q?"], [[("T", "x")]], [final_b]) == ["1974"]
    stats = policy.episode_stats(final_b)
    assert stats.act_calls == 2 and stats.answer_completion_tokens == 2
    assert policy.episode_answer(b.episode).reply == "Answer: 1974"
    assert policy.trajectory_meta(final_b)["llm"]["act_calls"] == 2
    assert policy.trajectory_meta(final_b)["llm"]["backend"] == "scripted"
    assert policy.stats["act_calls"] == 2


def test_llm_policy_starts_a_fresh_chat_per_episode() -> None:
    from harness_g.agent.policies.llm import LLMPolicy

    policy = LLMPolicy(Scripted(["A0"] * 10))
    first = _obs(None, visible=["s_ph"])
    policy.act(first)
    policy.answer("q?", [], dataclasses.replace(first, done=True, menu=()))
    second = _obs(None, visible=["s_ph"])
    policy.act(second)
    assert len(policy.episode_context(second).turns) == 1
    assert policy.episode_context(first) is None  # an answered episode's chat goes when a new episode starts
