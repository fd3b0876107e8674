"""Typed trajectory records, saved as JSONL (one episode per line)."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator


@dataclass
class StepRecord:
    """One turn. ``menu`` lists every offered action (id, type, targets, label); ``chosen`` is the
    executed action id or None for an invalid reply. ``produced``/``consumed`` are sentence and
    entity ids; ``producers`` are the earlier steps (−1 = InitRetrieve) whose output this step consumed."""

    turn: int
    menu: list[dict[str, Any]]
    reply: str
    chosen: str | None
    action_type: str | None
    targets: list[str] = field(default_factory=list)
    error: str | None = None
    introduced: list[str] = field(default_factory=list)  # sentences the action surfaced or committed
    produced: list[str] = field(default_factory=list)
    consumed: list[str] = field(default_factory=list)
    producers: list[int] = field(default_factory=list)
    committed_after: list[str] = field(default_factory=list)
    visible_after: list[str] = field(default_factory=list)
    observed_before: list[str] = field(default_factory=list)  # scorer context O_t (first-seen order)
    previews: dict[str, list[str]] | None = None  # action id -> introduced sentences, when asked
    seconds: float = 0.0

    @property
    def rejected(self) -> list[str]:
        return [a["id"] for a in self.menu if a["id"] != self.chosen]


@dataclass
class Trajectory:
    question_id: str
    question: str
    answers: list[str]
    graph_version: str
    env_config: dict[str, Any]
    initial_visible: list[str]
    steps: list[StepRecord] = field(default_factory=list)
    committed: list[str] = field(default_factory=list)
    answer: str | None = None
    terminated_by: str = ""  # "ANSWER", "ANSWER_WITH", "max_turns"
    seconds: dict[str, float] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def turns(self) -> int:
        return len(self.steps)

    @property
    def invalid_turns(self) -> int:
        return sum(1 for s in self.steps if s.chosen is None)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Trajectory":
        steps = [StepRecord(**s) for s in obj.get("steps", [])]
        data = {k: v for k, v in obj.items() if k != "steps"}
        return cls(**data, steps=steps)


def save_jsonl(path: str | Path, trajectories: Iterable[Trajectory], append: bool = False) -> None:
    with open(path, "a" if append else "w", encoding="utf-8") as fh:
        for t in trajectories:
            fh.write(json.dumps(t.to_json(), ensure_ascii=False) + "\n")


def load_jsonl(path: str | Path) -> Iterator[Trajectory]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield Trajectory.from_json(json.loads(line))
