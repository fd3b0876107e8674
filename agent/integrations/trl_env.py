"""The menu environment as a TRL ``GRPOTrainer(environment_factory=...)`` class (TRL >= 1.16).

TRL builds one :class:`MenuToolEnv` per rollout from the factory, calls ``reset(**row)`` with the dataset row's columns
(its return is appended to the prompt's last user message), exposes every public method but ``reset`` and
``get_reward`` as a tool (schema from the signature and the Google-style docstring), feeds a tool's return, or the
message of the error it raised, back to the model, and scores the rollout with ``get_reward()``:

    from harness_g.agent.integrations.menu_service import open_service
    from harness_g.agent.integrations.trl_env import menu_tool_env_factory

    with open_service("graphs/hotpot") as service:                     # in-process, one graph view for all rollouts
        trainer = GRPOTrainer(model=..., train_dataset=ds, environment_factory=menu_tool_env_factory(service))
    # or through `harness-g serve-env`: menu_tool_env_factory(base_url="http://127.0.0.1:8000")

The dataset needs a ``question`` column (the question's text or the id of one of the graph's questions; the graph's
question is found by id or text, so its gold answers score the rollout) or ``question_id``; ``answers`` gives the
gold of a question that is not the graph's. Tools: ``select(sentence_id)``, ``lookup(entity_id)``,
``answer_with(sentence_ids)``, ``answer(text)``; targets are the handles the observation shows (S0, E0). Once
retrieval is over (ANSWER_WITH or the turn budget) only ``answer(text)`` is left. ``get_reward()``: the answer's
token F1 against the gold answers (0.0 when the rollout never answered; None for a question without gold, which TRL
ignores). TRL keeps one scalar per rollout: the step rewards and SNC credit of :mod:`.menu_service` are not used.
"""
from __future__ import annotations

from typing import Any, Callable

from harness_g.agent.integrations.menu_service import ActionSpec, Episode, MenuService
from harness_g.errors import HarnessError

__all__ = ["MenuToolEnv", "menu_tool_env_factory", "tool_text"]

CALLS = ("Call select(sentence_id) to commit a visible sentence (S0, S1, ...), lookup(entity_id) to retrieve sentences "
         "about an entity (E0, E1, ...), answer_with(sentence_ids) to commit sentences and stop, or answer(text) to stop "
         "and answer from the committed evidence.")


def tool_text(obs: dict[str, Any]) -> str:
    """What the model reads after a reset or a tool call: the question, the turn budget, C_t, U_t with handles, the
    LOOKUP targets and the tools to call (retrieval); the answer prompt over C_T (answer phase); a closing line."""
    if obs["phase"] == "over":
        return "Answer recorded; the episode is over."
    if obs["phase"] == "answer":
        return f"{obs['text']}\nRetrieval is over: call answer(text) with your final answer."
    lines = [f"Question: {obs['question']}", f"Step {obs['turn'] + 1} of {obs['max_turns']}.", "Committed evidence:"]
    lines += [f"  {i + 1}. {c['title']}: {c['text']}" for i, c in enumerate(obs["committed"])] or ["  (none)"]
    lines.append("Visible sentences:")
    lines += [f"{s['handle']} | {s['title']}: {s['text']}" for s in obs["visible"]] or ["  (none)"]
    if obs["entities"]:
        lines.append("Entities to look up (bridge = in committed evidence, question = named in the question, "
                     "frontier = in visible sentences):")
        lines += [f"{e['handle']} | {e['surface']} [{e['role']}]" for e in obs["entities"]]
    if obs.get("error"):
        lines.append(f"Rejected: {obs['error']}. The turn was used.")
    lines.append(CALLS)
    return "\n".join(lines)


class _LocalBackend:
    """Episodes of an in-process :class:`MenuService` (what :class:`~.openenv_server.MenuEnvironment` does per
    session), as observation dicts."""

    def __init__(self, service: MenuService):
        self._service = service
        self._episode: Episode | None = None

    def reset(self, **fields: Any) -> dict[str, Any]:
        self._episode = self._service.reset(**fields, replaces=self._episode)
        return self._service.observation(self._episode)

    def step(self, action: ActionSpec) -> dict[str, Any]:
        if self._episode is None:
            raise HarnessError("reset before calling a tool")
        self._service.step(self._episode, action)
        return self._service.observation(self._episode)


class _ClientBackend:
    """Episodes on a ``harness-g serve-env`` server through OpenEnv's client (one WebSocket session per instance)."""

    def __init__(self, base_url: str):
        from harness_g.agent.integrations.openenv_server import MenuEnvClient

        self._client = MenuEnvClient(base_url=base_url).sync()

    def reset(self, **fields: Any) -> dict[str, Any]:
        return self._dump(self._client.reset(**{k: v for k, v in fields.items() if v is not None}))

    def step(self, action: ActionSpec) -> dict[str, Any]:
        from harness_g.agent.integrations.openenv_server import MenuAction

        return self._dump(self._client.step(MenuAction(action_id=action.action_id, kind=action.kind,
                                                       targets=list(action.targets), answer=action.answer)))

    @staticmethod
    def _dump(result: Any) -> dict[str, Any]:
        return result.observation.model_dump(exclude={"metadata"})


class MenuToolEnv:
    """One rollout's menu episode for TRL (see the module docstring). Every public method but ``reset`` and
    ``get_reward`` is a TRL tool (add no other public method); each tool returns the next observation
    (:func:`tool_text`) and raises, with the reason, on an action the menu does not offer (no turn is used)."""

    def __init__(self, backend: _LocalBackend | _ClientBackend):
        self._backend = backend
        self._obs: dict[str, Any] | None = None

    def reset(self, **columns: Any) -> str:
        """Start the episode of the row's ``question`` (text or graph question id) or ``question_id`` (``answers``:
        gold of an ad-hoc question); returns the first observation. Other columns (``prompt``, ...) are TRL's."""
        if columns.get("question") is None and columns.get("question_id") is None:
            raise HarnessError(f"the dataset row has no 'question' or 'question_id' column (columns: "
                               f"{', '.join(sorted(columns)) or 'none'})")
        self._obs = self._backend.reset(question=columns.get("question"), question_id=columns.get("question_id"),
                                        answers=columns.get("answers"))
        return tool_text(self._obs)

    def _step(self, action: ActionSpec) -> str:
        if self._obs is None:
            raise HarnessError("reset before calling a tool")
        if self._obs["phase"] == "over":
            raise HarnessError("the episode is over: the answer is already recorded")
        self._obs = self._backend.step(action)
        return tool_text(self._obs)

    def select(self, sentence_id: str) -> str:
        """Commit a visible sentence as evidence (the answer sees committed evidence only).

        Args:
            sentence_id: The sentence's handle, e.g. "S0".
        """
        return self._step(ActionSpec(kind="SELECT", targets=(sentence_id,)))

    def lookup(self, entity_id: str) -> str:
        """Retrieve new sentences about an entity.

        Args:
            entity_id: The entity's handle, e.g. "E0".
        """
        return self._step(ActionSpec(kind="LOOKUP", targets=(entity_id,)))

    def answer_with(self, sentence_ids: list[str]) -> str:
        """Commit visible sentences and stop retrieving; then call answer.

        Args:
            sentence_ids: The sentences' handles, e.g. ["S0", "S2"].
        """
        return self._step(ActionSpec(kind="ANSWER_WITH", targets=tuple(sentence_ids)))

    def answer(self, text: str) -> str:
        """Stop retrieving and give the final answer.

        Args:
            text: A short answer: a name, date, number, or yes/no.
        """
        return self._step(ActionSpec(kind="ANSWER", answer=str(text)))

    def get_reward(self) -> float | None:
        """The rollout's outcome: the answer's token F1 against the gold answers (0.0 if it never answered; None
        for a question without gold answers)."""
        if self._obs is None or self._obs["phase"] != "over":
            return 0.0
        return self._obs["reward"]


def menu_tool_env_factory(service: MenuService | None = None, *, base_url: str | None = None
                          ) -> Callable[[], MenuToolEnv]:
    """TRL's ``environment_factory``: :class:`MenuToolEnv` instances over the in-process ``service`` (its graph view
    shared by every rollout) or on the ``harness-g serve-env`` server at ``base_url`` (one WebSocket session each;
    needs ``openenv-core``). Exactly one of the two."""
    if (service is None) == (base_url is None):
        raise HarnessError("menu_tool_env_factory takes a MenuService or base_url (a serve-env server), exactly one")
    if service is not None:
        return lambda: MenuToolEnv(_LocalBackend(service))
    assert base_url is not None
    return lambda: MenuToolEnv(_ClientBackend(base_url))
