"""Scripted episodes for the environment integrations' tests: the same actions played in-process
(:class:`MenuEnv`) and through :class:`MenuService` / the OpenEnv server, compared step by step.

A script is a list of intents resolved against the in-process observation of each turn (the first LOOKUP, the first
SELECT, the first ANSWER_WITH of n sentences, ANSWER, or a raw reply), then an answer. Each resolved step is sent
either as the menu id (``action_id``) or as kind + handles (S2, E0), so both forms are checked against the same
in-process trajectory.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.observation import Observation
from harness_g.graph.types import QAItem

WRONG = "Paris"
#: (intents, answer) -- an intent is a kind ("LOOKUP", "SELECT", "ANSWER"), ("ANSWER_WITH", n) or ("RAW", text);
#: answer "gold" means the question's first gold answer
SCRIPTS: list[tuple[list[Any], str]] = [
    (["LOOKUP", "SELECT", "ANSWER"], "gold"),  # answer sent with ANSWER
    (["SELECT", ("RAW", "A999"), "LOOKUP", ("ANSWER_WITH", 1)], WRONG),  # an invalid raw reply uses its turn
    (["LOOKUP", "LOOKUP", ("RAW", "hello there"), "LOOKUP", "SELECT", "LOOKUP"], "gold"),  # turn budget, then answer
]


@dataclass
class Step:
    """One resolved step: the menu id (what the in-process env got), the kind form, and the snapshot after it."""

    action_id: str
    kind: str | None
    targets: list[str]
    snapshot: dict[str, Any] = field(default_factory=dict)


@dataclass
class Played:
    """An in-process episode: the first observation's snapshot, its steps, the answer, when the answer was sent (with the last step or alone), the
    final reward and the trajectory record."""

    item: QAItem
    first: dict[str, Any]
    steps: list[Step]
    answer: str
    answer_alone: bool
    trajectory: dict[str, Any]


def snapshot(obs: Observation) -> dict[str, Any]:
    """What must match between in-process and served episodes after a step (while retrieving)."""
    return {"text": obs.text, "turn": obs.turn, "event": obs.event, "error": obs.error, "done": obs.done,
            "committed": obs.committed_ids, "visible": obs.visible_ids,
            "menu": [(a.id, a.type.value, list(a.targets), a.label) for a in obs.menu]}


def served_snapshot(obs: dict[str, Any]) -> dict[str, Any]:
    """:func:`snapshot` of a served observation (``MenuService.observation`` / ``MenuObservation`` as a dict)."""
    retrieving = obs["phase"] == "retrieve"
    return {"text": obs["text"] if retrieving else "", "turn": obs["turn"], "event": obs["event"],
            "error": obs["error"], "done": not retrieving,
            "committed": [c["id"] for c in obs["committed"]], "visible": [s["id"] for s in obs["visible"]],
            "menu": [(m["id"], m["kind"], list(m["targets"]), m["label"]) for m in obs["menu"]]}


def strip_timings(trajectory: dict[str, Any]) -> dict[str, Any]:
    """A trajectory record without its wall-clock fields (``seconds``)."""
    out = {k: v for k, v in trajectory.items() if k != "seconds"}
    out["steps"] = [{k: v for k, v in s.items() if k != "seconds"} for s in trajectory["steps"]]
    return out


def _resolve(obs: Observation, intent: Any) -> tuple[str, str | None, list[str]]:
    if isinstance(intent, tuple) and intent[0] == "RAW":
        return intent[1], None, []
    kind, size = (intent, 1) if isinstance(intent, str) else intent
    found = next((a for a in obs.menu if a.type.value == kind and (kind != "ANSWER_WITH" or len(a.targets) == size)),
                 None) or next(a for a in obs.menu if a.type is ActionType.ANSWER)
    if found.type is ActionType.LOOKUP:
        handles = [obs.entity(found.targets[0]).handle]
    else:
        handles = [obs.handle_of(t) for t in found.targets]
    return found.id, found.type.value, handles


def play(env: MenuEnv, item: QAItem, script: tuple[list[Any], str]) -> Played:
    """Play ``script`` on ``env`` in-process; the answer goes with the step that ends retrieval when that step is
    ANSWER / ANSWER_WITH, else alone afterwards."""
    intents, answer = script
    env.reset(item)
    first = snapshot(env.observe())
    steps: list[Step] = []
    for intent in intents:
        action_id, kind, targets = _resolve(env.observe(), intent)
        env.step(action_id)
        steps.append(Step(action_id, kind, targets, snapshot(env.observe())))
        if env.done:
            break
    assert env.done, "a script must end retrieval"
    text = item.answers[0] if answer == "gold" else answer
    alone = env.state.terminated_by == "max_turns"
    trajectory = env.finish(text).to_json()
    return Played(item, first, steps, text, alone, trajectory)


def actions(played: Played, index: int) -> list[dict[str, Any]]:
    """The wire actions of ``played`` (``index`` even: menu ids; odd: kind + handles; raw replies always as ids),
    the answer attached to the last step or appended alone."""
    out: list[dict[str, Any]] = []
    for step in played.steps:
        if index % 2 == 0 or step.kind is None:
            out.append({"action_id": step.action_id})
        else:
            out.append({"kind": step.kind, "targets": list(step.targets)})
    if played.answer_alone:
        out.append({"answer": played.answer})
    else:
        out[-1]["answer"] = played.answer
    return out
