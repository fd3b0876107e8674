"""Hand-built trajectory records and rollouts (no environment, no model) for the credit and IGPO tests."""
from __future__ import annotations

from collections.abc import Iterable

from harness_g.agent.env.trajectory import StepRecord, Trajectory
from harness_g.graph.types import QAItem
from harness_g.training.rollout import Rollout


def step(turn: int, kind: str | None, observed: Iterable[str], introduced: Iterable[str],
         chosen: str | None = "A1") -> StepRecord:
    """One step record: ``kind`` is the action type (None with ``chosen=None``: an invalid reply), ``observed`` the
    sentence ids visible before it, ``introduced`` the ids it surfaced."""
    return StepRecord(turn=turn, menu=[], reply=chosen or "??", chosen=chosen, action_type=kind if chosen else None,
                      introduced=list(introduced), observed_before=list(observed))


def rollout(steps: list[StepRecord], group: int = 0, qid: str = "q1", answers: Iterable[str] = ("Paris",),
            reward: float = 0.0, initial: Iterable[str] = ("s1",)) -> Rollout:
    """A rollout of question ``qid`` ("What is the capital of France?") in GRPO group ``group`` with ``steps``."""
    item = QAItem(id=qid, question="What is the capital of France?", answers=tuple(answers), dataset="t")
    traj = Trajectory(question_id=qid, question=item.question, answers=list(answers), graph_version="v", env_config={},
                      initial_visible=list(initial), steps=steps)
    return Rollout(item=item, group=group, trajectory=traj, reward=reward)
