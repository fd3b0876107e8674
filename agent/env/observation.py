"""What a policy receives at each turn: an :class:`Observation`, never the environment itself.

The paper's policy is a_t ~ pi_theta(. | o_t, M_t) with o_t "the rendered textual observation (committed evidence,
visible sentences, executable menu)" (Harness-G §3.1 "Retrieval as Menu Navigation"; the format, appendix "Environment
Protocol and Prompts", "Observation format"), and "the policy never supplies retrieval text" (its "Deterministic query
construction"): m_t is built by the environment and handed over as ``lookup_query``.

An observation holds the rendered text exactly as the model sees it (``text``), the event that produced it
(the paper's event-conditioned environment response: ``start`` / ``ok`` / ``invalid`` with its reason,
harness-g.tex appendix "Environment Protocol and Prompts"), the executable menu M_t (ids, types, targets,
labels), and a read-only summary of the state z_t = (question, C_t, U_t, V_t, H_t) (harness-g.tex
§"The Menu Environment"). Policies that need vectors get them through :attr:`Observation.tools`, a small
read-only :class:`PolicyTools` protocol (encode, rank, mentions, preview) -- on a real graph a :class:`GraphTools`
over the shared :class:`~harness_g.agent.env.graph_view.GraphView`; in a test any stand-in. ``preview`` is the paper's
Previewability (Harness-G §3.3): any action of the current menu expanded read-only.

So a policy can be tested without a graph (hand-build an Observation and a fake ``tools``), and the trainer
and ``harness-g eval`` drive one policy object through one protocol (:class:`harness_g.agent.policies.base.Policy`).

Environments build observations: :meth:`harness_g.agent.env.MenuEnv.observe`,
:meth:`harness_g.agent.env.free_query.FreeQueryEnv.observe`, :meth:`harness_g.agent.env.batch.BatchedMenuEnv.observe`.
"""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.graph_view import EntityInfo
from harness_g.errors import HarnessError

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.env.graph_view import GraphView
    from harness_g.agent.env.menu_env import Preview

__all__ = ["CommittedSentence", "EntityInfo", "GraphTools", "MenuAction", "MenuEntity", "Observation", "PolicyTools",
           "VisibleSentence", "next_episode_id"]

#: what produced an observation (the environment response's event; ``invalid`` carries a reason)
EVENTS = ("start", "ok", "invalid")

_episodes = itertools.count(1)
_episodes_lock = threading.Lock()


def next_episode_id() -> int:
    """A process-wide id, unique per episode (environments take one at every ``reset``)."""
    with _episodes_lock:
        return next(_episodes)


# -- the read-only tools -------------------------------------------------------------------------------
@runtime_checkable
class PolicyTools(Protocol):
    """Read-only helpers a policy may use; nothing here can change an episode.

    - ``encode(texts)``: float32 array of shape [len(texts), d], one L2-normalised row per text (the graph's
      shared encoder, the one that built the sentence embeddings).
    - ``rank(vector, sentence_ids)``: ``[(sentence_id, cosine)]`` for the known ids among ``sentence_ids``,
      best first, ties broken by id (ascending); ``vector`` has shape [d].
    - ``mentions(sentence_ids)``: ``{sentence_id: [EntityInfo, ...]}`` -- every entity each sentence mentions
      (lookup-able or not: dates and nationalities are answer candidates), ordered by entity id; sentences
      mentioning nothing may be absent.
    - ``titles(sentence_ids)``: ``{sentence_id: title}`` -- the title of the article each known sentence belongs to
      (what the observation shows beside a visible sentence), for any sentence, e.g. one a preview would show.
    - ``preview(action_id)``: the read-only expansion of an action of the *current* menu
      (:class:`~harness_g.agent.env.Preview`: ``introduced`` sentence ids, C_{t+1} ``committed``, U_{t+1}
      ``visible``, ``terminal``; Harness-G §3.3); raises :class:`HarnessError` where there is no live
      menu to expand (free-query arm, a finished episode, tools of an earlier turn, tools built without an
      environment) or the id is not on the menu.
    """

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def rank(self, vector: np.ndarray, sentence_ids: Sequence[str]) -> list[tuple[str, float]]: ...

    def mentions(self, sentence_ids: Sequence[str]) -> Mapping[str, Sequence[EntityInfo]]: ...

    def titles(self, sentence_ids: Sequence[str]) -> Mapping[str, str]: ...

    def preview(self, action_id: str) -> "Preview": ...


class GraphTools:
    """:class:`PolicyTools` over a :class:`GraphView`; exposes those five calls and nothing else.

    ``pinned`` maps texts to the vectors the environment already computed for them (the question's and m_t's),
    so a policy ranks with exactly the vectors the environment used for its menu. ``preview`` is the bound,
    read-only expansion of the environment that built these tools (:meth:`harness_g.agent.env.MenuEnv.tools`);
    None where there is none (then :meth:`preview` raises).
    """

    __slots__ = ("_view", "_pinned", "_preview")

    def __init__(self, view: "GraphView", pinned: Mapping[str, np.ndarray] | None = None,
                 preview: Callable[[str], "Preview"] | None = None):
        self._view = view
        self._pinned = dict(pinned or {})
        self._preview = preview

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 [len(texts), d], unit rows (cached by the view)."""
        texts = list(texts)
        if self._pinned and texts and all(t in self._pinned for t in texts):
            return np.stack([self._pinned[t] for t in texts]).astype(np.float32, copy=False)
        out = self._view.encode(texts)
        for i, t in enumerate(texts):
            if t in self._pinned:
                out[i] = self._pinned[t]
        return out

    def rank(self, vector: np.ndarray, sentence_ids: Sequence[str]) -> list[tuple[str, float]]:
        """``[(id, cosine)]`` best first, ties by id; unknown ids are dropped. ``vector``: [d]."""
        return self._view.rank(vector, sentence_ids)

    def mentions(self, sentence_ids: Sequence[str]) -> dict[str, tuple[EntityInfo, ...]]:
        """``{sentence_id: (EntityInfo, ...)}``: every entity each sentence mentions, ordered by entity id."""
        return self._view.mentions_of(list(sentence_ids))

    def titles(self, sentence_ids: Sequence[str]) -> dict[str, str]:
        """``{sentence_id: article title}`` for the known ids (sentence records, cached by the view)."""
        infos = self._view.sentences(list(sentence_ids))
        return {sid: info.title for sid, info in infos.items()}

    def preview(self, action_id: str) -> "Preview":
        """The read-only expansion of ``action_id`` on the current menu (mutates nothing)."""
        if self._preview is None:
            raise HarnessError("these tools have no live menu to preview (free-query arm, a finished episode, or tools "
                               "built without a menu environment): preview needs MenuEnv.observe()'s tools")
        return self._preview(action_id)


# -- the records ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CommittedSentence:
    """One sentence of C_t (commit order)."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class VisibleSentence:
    """One sentence of U_t as the observation shows it: ``handle`` is its label ``S<i>``."""

    id: str
    handle: str
    title: str
    text: str


@dataclass(frozen=True)
class MenuEntity:
    """One LOOKUP entity of the menu: ``handle`` ``E<i>``, canonical ``name``, display ``surface``,
    ``role`` "bridge" (in committed evidence), "question" (named in the question, ``EnvConfig.question_lookups``) or
    "frontier" (in visible sentences)."""

    id: str
    handle: str
    name: str
    surface: str
    role: str


@dataclass(frozen=True)
class MenuAction:
    """One executable action of M_t: ``id`` (``A<i>``, what the policy replies), ``type``, ``targets``
    (sentence or entity ids) and ``label`` as the observation renders it (``A1 = LOOKUP E0 | entity: ...``)."""

    id: str
    type: ActionType
    targets: tuple[str, ...]
    label: str


@dataclass(frozen=True)
class Observation:
    """One turn's observation (see the module docstring).

    - ``text``: the rendered observation, exactly what ``reset``/``step`` return ("" once the episode is over).
    - ``event``: "start" (first turn), "ok" (the last reply was executed) or "invalid" (it was rejected;
      ``error`` is the reason, else None).
    - ``episode``: an id unique per episode in this process (:func:`next_episode_id`).
    - ``question_id``, ``question``; ``turn`` (0-based, invalid turns count) of ``max_turns``.
    - ``committed``: C_t in commit order; ``visible``: U_t with the handles the text shows;
      ``entities``: the menu's LOOKUP entities; ``menu``: the executable actions (empty on the free-query arm
      and once the episode is over); ``executed``: the types of the actions executed so far, in order;
      ``visited``: V_t, the entity ids already looked up.
    - ``lookup_query``: m_t = concat(question, text(C_t)) as the environment built it (capped in words).
    - ``answer_with``: whether ANSWER_WITH is offered by this environment; ``search_available``: whether a
      retrieval target exists (the menu offers a LOOKUP / a free search string can be resolved).
    - ``done``: the episode is over (``menu`` is empty, ``committed`` is C_T).
    - ``interface``: "menu", "free-query", or the runner that built a final observation ("rag", "naive").
    - ``tools``: read-only :class:`PolicyTools`, or None where none is given.
    """

    text: str
    event: str
    error: str | None
    episode: int
    question_id: str
    question: str
    turn: int
    max_turns: int
    committed: tuple[CommittedSentence, ...] = ()
    visible: tuple[VisibleSentence, ...] = ()
    entities: tuple[MenuEntity, ...] = ()
    menu: tuple[MenuAction, ...] = ()
    executed: tuple[ActionType, ...] = ()
    visited: tuple[str, ...] = ()
    lookup_query: str = ""
    answer_with: bool = True
    search_available: bool = False
    done: bool = False
    interface: str = "menu"
    tools: PolicyTools | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.event not in EVENTS:
            raise HarnessError(f"observation event must be one of {', '.join(EVENTS)} (got {self.event!r})")

    # -- helpers --------------------------------------------------------------------------------------
    @property
    def action_ids(self) -> tuple[str, ...]:
        """The ids a reply may name, in menu order."""
        return tuple(a.id for a in self.menu)

    def actions(self, type: ActionType | str | None = None) -> list[MenuAction]:
        """The menu's actions of ``type`` (all when None), in menu order."""
        if type is None:
            return list(self.menu)
        kind = ActionType(type)
        return [a for a in self.menu if a.type is kind]

    def action(self, action_id: str) -> MenuAction | None:
        return next((a for a in self.menu if a.id == action_id), None)

    @property
    def committed_ids(self) -> list[str]:
        return [s.id for s in self.committed]

    @property
    def committed_texts(self) -> list[tuple[str, str]]:
        """``[(title, text)]`` of C_t in commit order (what the answerer sees)."""
        return [(s.title, s.text) for s in self.committed]

    @property
    def visible_ids(self) -> list[str]:
        return [s.id for s in self.visible]

    def handle_of(self, sentence_id: str) -> str | None:
        """The handle (``S<i>``) of a visible sentence, None when it is not visible."""
        return next((s.handle for s in self.visible if s.id == sentence_id), None)

    def entity(self, entity_id: str) -> MenuEntity | None:
        return next((e for e in self.entities if e.id == entity_id), None)

    @property
    def last_turn(self) -> bool:
        """Whether this is the last decision turn of the budget."""
        return self.turn >= self.max_turns - 1

    def require_tools(self) -> PolicyTools:
        if self.tools is None:
            raise HarnessError("this observation carries no tools (encode/rank/mentions); build it with tools=...")
        return self.tools
