"""SNC credit of each step of an environment-server episode: the trainer-side :class:`StepCredit` hook of
:class:`harness_g.agent.integrations.menu_service.MenuService` (``harness-g serve-env --answerer MODEL``).

The same arithmetic as ``harness-g train``'s: the frozen answerer g scores the scorer contexts of the trajectory so
far (:func:`~harness_g.training.snc_scoring.score_rollouts`: p_t(a) = g(O_t ∪ Ũ(a)) − g(O_t), frontier of up to K_f
other LOOKUPs, dead-zone), and the credit scheme turns the gains into r_fr + r_en
(:func:`~harness_g.training.credit.compute_credit`). After each step the metadata holds that step's gain, its
frontier's gains and r_fr (known at once); enablement needs the steps after it, so the SNC credit of every step comes
with the final observation. Scores are cached by the answerer, so re-scoring the trajectory each step costs only
the new contexts.
"""
from __future__ import annotations

from typing import Any

from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env.trajectory import Trajectory
from harness_g.graph.types import QAItem
from harness_g.training.answerer import FrozenAnswerer
from harness_g.training.credit import DEAD_ZONE, StepGains, compute_credit, frontier_relative
from harness_g.training.rollout import Rollout, scorer_user_text
from harness_g.training.snc_scoring import score_rollouts


class AnswererCredit:
    """Step gains and SNC credit from a frozen answerer. ``frontier_size`` K_f, ``gamma`` γ, ``eps`` the dead-zone
    and ``scheme`` (snc, snc_no_enablement, snc_no_frontier, outcome) as in ``TrainConfig.credit``."""

    def __init__(self, view: GraphView, answerer: FrozenAnswerer, *, frontier_size: int = 4, gamma: float = 1.0,
                 eps: float = DEAD_ZONE, scheme: str = "snc"):
        self.view = view
        self.answerer = answerer
        self.frontier_size = frontier_size
        self.gamma = gamma
        self.eps = eps
        self.scheme = scheme

    def _gains(self, item: QAItem, trajectory: Trajectory) -> list[StepGains]:
        gains, _ = score_rollouts(self.view, self.answerer, [Rollout(item=item, group=0, trajectory=trajectory)],
                                  frontier_size=self.frontier_size, eps=self.eps)
        return gains[0]

    def step(self, item: QAItem, trajectory: Trajectory) -> dict[str, Any]:
        """``gain`` p_t(a_t), ``frontier_gains`` p_t(a) over F_t, ``frontier_relative`` r_fr of the last step."""
        last = self._gains(item, trajectory)[-1]
        return {"gain": last.gain, "frontier_gains": list(last.frontier), "frontier_relative": frontier_relative(last)}

    def episode(self, item: QAItem, trajectory: Trajectory) -> dict[str, Any]:
        """``snc``: per executed turn, its gain and credit (frontier, enablement, total) under ``scheme``."""
        gains = self._gains(item, trajectory)
        credits = compute_credit(self.scheme, gains, self.gamma)
        return {"snc": [{"turn": step.turn, "gain": g.gain, "frontier": c.frontier, "enablement": c.enablement,
                         "total": c.total} for step, g, c in zip(trajectory.steps, gains, credits)]}


def answerer_credit(view: GraphView, model: str, *, compute_dtype: str = "float32") -> AnswererCredit:
    """An :class:`AnswererCredit` whose answerer is ``model`` (hub id, local dir, 'smollm2' or 'tiny-random'), loaded
    frozen with its own tokenizer, scoring with the answer prompt (``scorer_user_text``) as training does."""
    from harness_g.training.config import ModelConfig
    from harness_g.training.modeling import load_policy, load_tokenizer

    spec = ModelConfig(name=model, compute_dtype=compute_dtype)
    tokenizer = load_tokenizer(spec)
    frozen = load_policy(spec, tokenizer, trainable=False).eval().requires_grad_(False)
    return AnswererCredit(view, FrozenAnswerer(frozen, tokenizer, scorer_user_text))
