"""The menu environment's state transition: what z_{t+1} is after an action (harness-g.tex, section "The Menu
Environment": "Actions are discrete operators with explicit semantics and deterministic transitions").

The state is z_t = (q, C_t, U_t, V_t, H_t) (section "Retrieval as Menu Navigation"); :class:`MenuState` holds all of
it but q, which no action changes. Rules, one per action type (section "The Menu Environment"):

- ``SELECT(s)``, s in U_t: C_{t+1} = C_t ∪ {s} (appended: C_t is kept in commit order, because m_t = concat(q,
  text(C_t)) concatenates it), s leaves U_t ("committed sentences ... are merged away"); V_t unchanged.
- ``LOOKUP(e)``: U_{t+1} = the LOOKUP's result (the top K_s of C(e) under sim(m_t, ·), computed by the menu:
  ``menu.lookup_result``; this module only applies it), e joins V_t ("visited entities never reappear as LOOKUP
  targets"); C_t unchanged.
- ``ANSWER``: terminates retrieval; C_t, U_t, V_t unchanged.
- ``ANSWER_WITH(s_1..s_k)`` (the optional harvest variant): commits the visible s_i not yet in C_t, in the given
  order, they leave U_t, and the episode ends, "in one step".

Every action, and a reply that names no menu action (it is blocked from the feasible set, section "The Menu
Environment", Verifiability, but the turn is used: ``EnvConfig.max_turns``), takes one turn of the finite horizon T
(section "Retrieval as Menu Navigation": "at most T turns"); reaching T ends the episode. H_t enters the menu only
through C_t and V_t (Filter) and through the turn count; the full record of the steps is the environment's
:class:`~harness_g.agent.env.trajectory.Trajectory`, so H_t here is its length (``turn``) and how it ended.

Pure: no store, no encoder. ``MenuEnv.step`` and ``MenuEnv.preview``, the reachability search's states and
``BatchedMenuEnv``'s prefetch (which predicts the next states) all apply these rules through :func:`transition`.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence, TypeVar, Union

from harness_g.agent.env.actions import Action, ActionType

#: one step as the reachability search writes it: (type, targets)
Step = tuple[ActionType, tuple[str, ...]]
#: what ends an episode besides ANSWER / ANSWER_WITH (``terminated_by``)
MAX_TURNS = "max_turns"
#: the action types that end the episode
TERMINAL = (ActionType.ANSWER, ActionType.ANSWER_WITH)

S = TypeVar("S", bound="MenuState")


@dataclass(frozen=True)
class MenuState:
    """z_t without q: ``committed`` C_t (commit order), ``visible`` U_t (menu order), ``visited`` V_t (visit order),
    ``turn``: turns taken (|H_t|), ``terminated_by``: "" while the episode runs, else ``ANSWER``, ``ANSWER_WITH`` or
    ``max_turns``. Subclasses (the reachability search's states) keep their own fields through :func:`transition`."""

    committed: tuple[str, ...] = ()
    visible: tuple[str, ...] = ()
    visited: tuple[str, ...] = ()
    turn: int = 0
    terminated_by: str = ""

    @property
    def done(self) -> bool:
        return bool(self.terminated_by)


def _kind_targets(action: Union[Action, Step]) -> Step:
    if isinstance(action, Action):
        return action.type, tuple(action.targets)
    return action[0], tuple(action[1])


def _without(ids: Sequence[str], gone: Sequence[str]) -> tuple[str, ...]:
    drop = set(gone)
    return tuple(s for s in ids if s not in drop)


def transition(state: S, action: Union[Action, Step, None], result: Sequence[str] | None = None, *,
               max_turns: int | None = None) -> S:
    """z_{t+1} after ``action`` at ``state`` (module docstring; the same type as ``state``, its other fields kept).

    ``action``: a menu :class:`Action` or a ``(type, targets)`` step; None for a reply that named no menu action
    (only the turn passes). ``result``: for a LOOKUP, its U_{t+1} (the menu's ``lookup_results[e]``); ignored
    otherwise. ``max_turns``: T, after which the episode ends (None: no limit, e.g. for a preview or a search that
    bounds turns itself). Raises ValueError for a LOOKUP without a result or a transition from a finished state.
    """
    if state.done:
        raise ValueError(f"no transition from a finished episode (ended by {state.terminated_by})")
    turn = state.turn + 1
    out_of_turns = MAX_TURNS if max_turns is not None and turn >= max_turns else ""
    if action is None:
        return replace(state, turn=turn, terminated_by=out_of_turns)
    kind, targets = _kind_targets(action)
    if kind is ActionType.SELECT:
        return replace(state, committed=state.committed + targets[:1], visible=_without(state.visible, targets[:1]),
                       turn=turn, terminated_by=out_of_turns)
    if kind is ActionType.LOOKUP:
        if result is None:
            raise ValueError(f"LOOKUP {targets[0]} needs its result (U_{{t+1}}) to make a transition")
        return replace(state, visible=tuple(result), visited=state.visited + targets[:1], turn=turn,
                       terminated_by=out_of_turns)
    if kind is ActionType.ANSWER_WITH:
        new = tuple(s for s in targets if s not in state.committed)
        return replace(state, committed=state.committed + new, visible=_without(state.visible, new), turn=turn,
                       terminated_by=kind.value)
    return replace(state, turn=turn, terminated_by=kind.value)  # ANSWER


def introduced(before: MenuState, after: MenuState, kind: ActionType) -> tuple[str, ...]:
    """What an action of type ``kind`` that led from ``before`` to ``after`` introduced (section "The Menu
    Environment", Previewability: the sentences it "would introduce or commit"): a LOOKUP's U_{t+1}, the sentences a
    SELECT or ANSWER_WITH committed, nothing for ANSWER."""
    if kind is ActionType.LOOKUP:
        return after.visible
    return after.committed[len(before.committed):]
