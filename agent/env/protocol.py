"""The environment contract: what the episode loop (:func:`harness_g.agent.eval.runner.run_episode`) and the
training rollouts (:func:`harness_g.training.rollout.collect_rollouts`) use of an environment, and nothing more.

:class:`~harness_g.agent.env.menu_env.MenuEnv` (the menu arm) and
:class:`~harness_g.agent.env.free_query.FreeQueryEnv` (the transition-matched free-query arm over a MenuEnv)
implement it. :class:`~harness_g.agent.env.batch.BatchedMenuEnv` is not one environment but N of them stepped
together (``reset(items)``, ``step(replies)``, ``observe()`` take and return one entry per environment, ``None`` for
a finished one, so that one generation call serves every live episode); each of its ``envs`` is a MenuEnv, so an
Environment, and the rollouts wrap them in FreeQueryEnv for the free-query arm.

One episode: ``reset(question)``, then ``observe()`` -> the policy's reply -> ``step(reply)`` until ``done``, then
``finish(answer)`` with the answer written from ``committed_texts()`` (C_T).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.env.menu_env import Preview, StepResult
    from harness_g.agent.env.observation import Observation
    from harness_g.agent.env.trajectory import Trajectory
    from harness_g.graph.types import QAItem


@runtime_checkable
class Environment(Protocol):
    """One episode at a time; every method but ``reset`` needs a reset first (HarnessError otherwise)."""

    @property
    def done(self) -> bool:
        """Whether the current episode is over (ANSWER, ANSWER_WITH or the turn budget T)."""
        ...

    def reset(self, question: "QAItem | str") -> str:
        """Start an episode on ``question`` (a bare string is an ad-hoc question without gold); returns o_0's text."""
        ...

    def step(self, reply: str) -> "StepResult":
        """Execute the policy's raw ``reply`` (one turn, valid or not): the next observation's text ("" once over),
        ``done``, ``valid``, the error of an invalid reply and per-interface ``info``. EpisodeOver once done."""
        ...

    def observe(self) -> "Observation":
        """What the policy sees now (text, event, C_t, U_t, the menu where the interface shows one, read-only tools);
        once over: ``done``, text "", ``committed`` = C_T."""
        ...

    def observation(self, error: str | None = None) -> str:
        """The current observation's text as the policy reads it, with ``error`` (an invalid reply's reason) shown."""
        ...

    def preview(self, action: Any) -> "Preview":
        """What executing ``action`` (an action id of the current menu; for the free-query arm, a reply) would do:
        C_{t+1}, U_{t+1}, the sentences it introduces and whether it ends the episode. Changes nothing."""
        ...

    def committed_texts(self) -> list[tuple[str, str]]:
        """``[(title, text)]`` of C_t in commit order: all the answer may see."""
        ...

    def finish(self, answer: str, **meta: Any) -> "Trajectory":
        """Close the episode with the policy's ``answer``; ``meta`` goes into ``trajectory.meta``."""
        ...
