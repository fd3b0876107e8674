"""Knowledge interfaces compared in the paper, all producing the same trajectory record.

=============  ===============================================================================
``menu``       the menu environment: the policy picks one action id per step (Harness-G).
``free-query`` the transition-matched free-query arm (:mod:`harness_g.agent.env.free_query`): no action
               ids; SELECT / ANSWER_WITH / ANSWER by sentence handle as in the menu arm, and a free
               search string that a frozen resolver maps onto a LOOKUP target of the same menu.
``rag``        Standard RAG (appendix "Baseline Details"): the top-3 chunks by the shared
               encoder, then one answer call. Our chunks are the graph's paragraphs; a paragraph
               scores the **max** cosine of its sentences to the question (``pool="max"``; a long
               paragraph is relevant if any sentence is — the mean would penalise length; pass
               ``pool="mean"`` to compare). The retrieved sentences are the trajectory's committed
               set C_T, so evidence recall / precision and R-S are computed exactly as for the menu.
``naive``      Naive Generation: the answer from the question alone (C_T = ∅).
=============  ===============================================================================

Every runner returns a :class:`Trajectory` (rag/naive have no steps: 0 turns) with
``meta["interface"]`` set; ``run_eval`` stores them identically. :data:`INTERFACES` registers each runner class
under its ``name``; a runner's ``trainable`` says whether training can play it (its policy takes one decision per
turn), so training's subset is :func:`trainable_interfaces`, not a second list of names.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.free_query import FreeQueryEnv
from harness_g.agent.env.graph_view import GraphView, row_cosines
from harness_g.agent.env.menu_env import MenuEnv
from harness_g.agent.env.observation import CommittedSentence, GraphTools, Observation, next_episode_id
from harness_g.agent.env.trajectory import Trajectory
from harness_g.agent.policies.base import Policy
from harness_g.errors import ConfigError
from harness_g.graph.types import QAItem, paragraph_of
from harness_g.registry import Registry

RAG_TOP_K = 3


class InterfaceRunner(Protocol):
    """``run(item)`` plays one question. ``on_turn(turn, max_turns)``, when set, is called before each decision of a
    stepped interface (menu, free-query); rag and naive take no decisions and never call it."""

    name: str
    trainable: bool  # training can play it: a stepped interface whose turns are the policy's decisions
    policy: Policy
    on_turn: Callable[[int, int], None] | None

    def run(self, item: QAItem) -> Trajectory: ...


def _base_trajectory(view: GraphView, cfg: EnvConfig, item: QAItem) -> Trajectory:
    return Trajectory(question_id=item.id, question=item.question, answers=list(item.answers), graph_version=view.version,
                      env_config=cfg.to_dict(), initial_visible=[])


def final_observation(view: GraphView, cfg: EnvConfig, item: QAItem, committed: Sequence[str], interface: str) -> Observation:
    """The final :class:`Observation` whose C_T is ``committed`` (in that order): what ``Policy.answer`` gets when
    no episode was played (rag / naive). Over (``done``), no menu, no visible sentences, 0 turns."""
    infos = view.sentences(list(committed))
    return Observation(
        text="", event="start", error=None, episode=next_episode_id(), question_id=item.id, question=item.question,
        turn=0, max_turns=cfg.max_turns,
        committed=tuple(CommittedSentence(s, infos[s].title, infos[s].text) for s in committed if s in infos),
        answer_with=cfg.answer_with, done=True, interface=interface, tools=GraphTools(view),
    )


class MenuInterface:
    name = "menu"
    trainable = True
    on_turn: Callable[[int, int], None] | None = None

    def __init__(self, view: GraphView, policy: Policy, env_config: EnvConfig | None = None):
        self.view, self.policy = view, policy.for_interface(self.name)
        self.env = MenuEnv(view, env_config or EnvConfig())

    def run(self, item: QAItem) -> Trajectory:
        from harness_g.agent.eval.runner import run_episode

        traj = run_episode(self.env, self.policy, item, self.on_turn)
        traj.meta["interface"] = self.name
        return traj


class FreeQueryInterface:
    name = "free-query"
    trainable = True
    on_turn: Callable[[int, int], None] | None = None

    def __init__(self, view: GraphView, policy: Policy, env_config: EnvConfig | None = None):
        self.view = view
        self.policy = policy.for_interface(self.name)
        self.env = FreeQueryEnv(MenuEnv(view, env_config or EnvConfig()))

    def run(self, item: QAItem) -> Trajectory:
        from harness_g.agent.eval.runner import run_episode

        traj = run_episode(self.env, self.policy, item, self.on_turn)
        traj.meta["interface"] = self.name
        return traj


class RagInterface:
    """Standard RAG over the graph's paragraphs (see the module docstring for the scoring)."""

    name = "rag"
    trainable = False  # no decisions to train
    on_turn: Callable[[int, int], None] | None = None  # no decisions: never called

    def __init__(self, view: GraphView, policy: Policy, env_config: EnvConfig | None = None, *, top_k: int = RAG_TOP_K,
                 pool: str = "max"):
        if pool not in ("max", "mean"):
            raise ConfigError(f"rag pool must be 'max' or 'mean' (got {pool!r})")
        if top_k < 1:
            raise ConfigError(f"rag top_k must be >= 1 (got {top_k})")
        self.view, self.policy, self.top_k, self.pool = view, policy, top_k, pool
        self.config = env_config or EnvConfig()
        pids = np.array([paragraph_of(sid) for sid in view.sentence_ids])
        self.paragraph_ids, self._inverse = np.unique(pids, return_inverse=True)
        self._counts = np.bincount(self._inverse, minlength=len(self.paragraph_ids)).astype(np.float64)

    def retrieve(self, question: str) -> list[dict[str, Any]]:
        """``[{paragraph_id, score, sentence_ids, title}]`` of the top-k paragraphs, best first (ties by id)."""
        q_vec = self.view.encode([question])[0]
        sims = row_cosines(self.view.embeddings, q_vec)  # identical sentences tie exactly (ties by id)
        n = len(self.paragraph_ids)
        if self.pool == "max":
            scores = np.full(n, -np.inf)
            np.maximum.at(scores, self._inverse, sims)
        else:
            scores = np.bincount(self._inverse, weights=sims, minlength=n) / np.maximum(self._counts, 1)
        k = min(self.top_k, n)
        # argsort on (-score, paragraph id) for determinism; paragraph_ids are sorted, so a stable sort on -score suffices
        order = np.argsort(-scores, kind="stable")[:k]
        chosen = [str(self.paragraph_ids[i]) for i in order]
        sids = self.view.paragraph_sentences(chosen)
        infos = self.view.sentences(sids)
        out = []
        for i, pid in zip(order, chosen):
            members = [s for s in sids if paragraph_of(s) == pid]
            title = next((infos[s].title for s in members if s in infos), "")
            out.append({"paragraph_id": pid, "score": round(float(scores[i]), 6), "sentence_ids": members, "title": title})
        return out

    def run(self, item: QAItem) -> Trajectory:
        t0 = time.perf_counter()
        chunks = self.retrieve(item.question)
        committed = [s for c in chunks for s in c["sentence_ids"]]
        infos = self.view.sentences(committed)
        evidence = [(infos[s].title, infos[s].text) for s in committed if s in infos]
        # the answer context lists sentences least- to most-similar, so answerers that read the last
        # evidence first (the heuristic's "answer hop comes last") start from the best match
        q_vec = self.view.encode([item.question])[0]
        by_relevance = [sid for sid, _ in reversed(self.view.rank(q_vec, committed))]
        final = final_observation(self.view, self.config, item, by_relevance, self.name)
        t = time.perf_counter()
        answer = self.policy.answer(item.question, evidence, final)
        policy_s = time.perf_counter() - t
        traj = _base_trajectory(self.view, self.config, item)
        traj.committed, traj.answer, traj.terminated_by = committed, answer, "rag"
        traj.meta.update({"interface": self.name, "policy": self.policy.name, "retrieved": chunks, "rag_pool": self.pool,
                          "rag_top_k": self.top_k})
        total = time.perf_counter() - t0
        traj.seconds.update({"policy": policy_s, "total": total, "env": total - policy_s})
        return traj


class NaiveInterface:
    """Naive Generation: no retrieval, the answerer sees only the question."""

    name = "naive"
    trainable = False  # no decisions to train
    on_turn: Callable[[int, int], None] | None = None  # no decisions: never called

    def __init__(self, view: GraphView, policy: Policy, env_config: EnvConfig | None = None):
        self.view, self.policy = view, policy
        self.config = env_config or EnvConfig()

    def run(self, item: QAItem) -> Trajectory:
        t0 = time.perf_counter()
        final = final_observation(self.view, self.config, item, [], self.name)
        answer = self.policy.answer(item.question, [], final)
        traj = _base_trajectory(self.view, self.config, item)
        traj.answer, traj.terminated_by = answer, "naive"
        traj.meta.update({"interface": self.name, "policy": self.policy.name})
        total = time.perf_counter() - t0
        traj.seconds.update({"policy": total, "total": total, "env": 0.0})
        return traj


INTERFACES: Registry[type[InterfaceRunner]] = Registry("interface")
for _runner in (MenuInterface, FreeQueryInterface, RagInterface, NaiveInterface):
    INTERFACES.add(_runner.name, _runner)


def trainable_interfaces() -> list[str]:
    """The interfaces training can play (``rollout.interface``), sorted: derived from each runner's ``trainable``."""
    return INTERFACES.names(lambda runner: runner.trainable)


def interface_runner(name: str) -> type[InterfaceRunner]:
    """The runner registered as ``name`` in :data:`INTERFACES` (``free_query`` is accepted for ``free-query``);
    an unknown name is the registry's one-line ConfigError listing the interfaces."""
    key = name.replace("_", "-")
    return INTERFACES.get(key if key in INTERFACES else name)


def make_interface(name: str, view: GraphView, policy: Policy, env_config: EnvConfig | None = None, **kwargs: Any) -> InterfaceRunner:
    """Build the runner :func:`interface_runner` names."""
    return interface_runner(name)(view, policy, env_config, **kwargs)
