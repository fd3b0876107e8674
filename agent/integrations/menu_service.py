"""Episodes of the menu environment for callers outside harness-g: one :class:`MenuService` per graph.

The shared core of the OpenEnv server (:mod:`.openenv_server`) and the TRL environment class (:mod:`.trl_env`); it
imports no third-party library. Every episode is a :class:`~harness_g.agent.env.MenuEnv` over the service's one
:class:`GraphView`; the service adds what a remote trainer needs and harness-g's own loop keeps elsewhere:

- **Actions** (:class:`ActionSpec`) name a menu id (``A3``) or a policy's raw reply, parsed by the environment
  exactly as harness-g parses replies (an invalid reply uses its turn: the paper's protocol), or a kind and its
  arguments (``SELECT S2``, ``LOOKUP E0`` or their graph ids, ``ANSWER_WITH [S0, S3]``, ``ANSWER``), resolved
  against the current menu; a kind + argument the menu does not offer is refused (:class:`ActionRefused`) and
  uses no turn (the paper's Verifiability: invalid actions are blocked, Harness-G §3.3).
- **Phases**: ``retrieve`` (the menu), ``answer`` (retrieval ended by ANSWER, ANSWER_WITH or the turn budget and
  no answer text came with it: the final answer from C_T is still owed, as harness-g's policies give it after the
  episode, :meth:`MenuEnv.finish`) and ``over`` (answered). Answer text comes with the action that ends
  retrieval or alone in the answer phase.
- **Reward**: 0.0 on every step before the end; at the end the answer's token F1 against the question's gold
  answers (max over aliases, :func:`~harness_g.agent.eval.metrics.token_f1`); None at the end of a question without
  gold answers (an ad-hoc question with no ``answers``).
- **Metadata** of a step (:meth:`MenuService.observation`'s ``info``): C_t's ids, the executed action, its preview
  (the sentences it surfaced or committed, and which of them are new to the scorer context O_t: re-surfaced text
  gains nothing, Harness-G §3.4 "Frontier-relative advantage"), and with a :class:`StepCredit` hook (an answerer) the
  step's preview gain p_t(a_t), its frontier and r_fr; at the end the answer's F1/EM, the trajectory and (hook) the
  SNC credit of every step.

Concurrency: every reset and step runs under one lock (a graph store serves one thread at a time,
:class:`~harness_g.graph.stores.base.GraphStore`). Live episodes are capped (:class:`ServiceLimits`); an episode
is forgotten once over (its holder keeps its last observation); when a reset needs room, released episodes (their
WebSocket session closed, or HTTP episodes) go first, then idle ones.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

from harness_g.agent.env import EpisodeOver, MenuEnv
from harness_g.agent.env.actions import ActionType, parse_action
from harness_g.agent.env.config import EnvConfig, check_graph_preset
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env.observation import Observation
from harness_g.agent.env.trajectory import Trajectory
from harness_g.agent.eval.metrics import exact_match, normalize_answer, token_f1
from harness_g.agent.llm.prompts import answer_prompt
from harness_g.errors import HarnessError
from harness_g.graph.types import QAItem

__all__ = ["ActionRefused", "ActionSpec", "Episode", "EpisodeOver", "MenuService", "PHASES", "ServiceFull",
           "ServiceLimits", "StepCredit", "UnknownEpisode", "open_service"]

PHASES = ("retrieve", "answer", "over")
KINDS = tuple(t.value for t in ActionType)
ADHOC_ID = "adhoc"  # the question id of a question that is not in the graph's set
FINISHED_MEMORY = 65_536  # ids of answered episodes remembered, so a step after the end says so (not "unknown")


class UnknownEpisode(HarnessError):
    """A step named an episode id that no live episode has."""


class ActionRefused(HarnessError):
    """An action that cannot be taken in the episode's current state; nothing changed and no turn was used."""


class ServiceFull(HarnessError):
    """A reset found ``max_sessions`` live episodes, none idle long enough to drop."""


@dataclass(frozen=True)
class ServiceLimits:
    """How many episodes a service keeps and for how long."""

    max_sessions: int = 64  # live (unfinished) episodes at once; a reset beyond them is refused (ServiceFull)
    idle_seconds: float = 600.0  # a live episode untouched this long (s) may be dropped to make room for a new one

    def __post_init__(self) -> None:
        if int(self.max_sessions) < 1:
            raise HarnessError(f"max_sessions must be >= 1 (got {self.max_sessions})")
        if not self.idle_seconds > 0:
            raise HarnessError(f"idle_seconds must be > 0 (got {self.idle_seconds})")


@dataclass(frozen=True)
class ActionSpec:
    """One step's action: exactly one of ``action_id`` and ``kind``, or ``answer`` alone in the answer phase.

    - ``action_id``: a menu id (``"A3"``) or a policy's raw reply, parsed strictly by the environment (an invalid
      reply uses its turn and the observation says why).
    - ``kind`` (SELECT, LOOKUP, ANSWER_WITH, ANSWER) and ``targets``: sentence handles (``S2``) or ids for SELECT
      (one) and ANSWER_WITH (1..``answer_with_max``), an entity handle (``E0``) or id for LOOKUP (one), none for
      ANSWER; resolved against the current menu, refused (no turn used) when the menu does not offer it.
    - ``answer``: the final answer text, with an action that ends retrieval (ANSWER, ANSWER_WITH, any action on
      the last turn) or alone once retrieval is over.
    """

    action_id: str | None = None
    kind: str | None = None
    targets: tuple[str, ...] = ()
    answer: str | None = None


class StepCredit(Protocol):
    """What a trainer-side scorer adds to the metadata (:class:`harness_g.training.env_credit.AnswererCredit`).

    ``step``: after each executed step, from the trajectory so far (its last step is the new one; recorded with
    previews): e.g. ``{"gain": p_t(a_t), "frontier_gains": [...], "frontier_relative": r_fr}``.
    ``episode``: once the answer is in, e.g. ``{"snc": [{"turn", "frontier", "enablement", "total"}, ...]}``.
    Called under the service's lock."""

    def step(self, item: QAItem, trajectory: Trajectory) -> dict[str, Any]: ...

    def episode(self, item: QAItem, trajectory: Trajectory) -> dict[str, Any]: ...


@dataclass
class Episode:
    """One question's episode: its environment, the final answer once given, the reward and the last step's
    metadata. ``reward``: 0.0 until over, then F1 (None without gold answers)."""

    id: str
    item: QAItem
    env: MenuEnv
    answer: str | None = None
    reward: float | None = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    touched: float = field(default_factory=time.monotonic)
    held: bool = True  # False once its holder (a WebSocket session) closed: the first to drop when room is needed

    @property
    def gold(self) -> bool:
        return bool(self.item.answers)

    @property
    def phase(self) -> str:
        if not self.env.done:
            return "retrieve"
        return "answer" if self.answer is None else "over"

    @property
    def done(self) -> bool:
        return self.phase == "over"


def _text_key(text: str) -> str:
    return " ".join(str(text).split())


def _answers(value: Any) -> tuple[str, ...]:
    """A dataset's answers column: one string or a list of strings."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable) and all(isinstance(a, str) for a in value):
        return tuple(value)
    raise HarnessError(f"answers must be a string or a list of strings (got {type(value).__name__})")


def _handle_index(target: str, prefix: str) -> int | None:
    """``3`` for ``"S3"`` (prefix "S"), else None."""
    t = target.strip()
    if len(t) > 1 and t[0].upper() == prefix and t[1:].isdigit():
        return int(t[1:])
    return None


class MenuService:
    """Episodes over one graph view. ``questions``: the graph's question set (``reset`` finds a question by id or
    text in it; other text is an ad-hoc question). ``credit``: optional :class:`StepCredit` (then every step records
    its menu's previews, which SNC's frontier needs). Refuses (ConfigError) a graph built under another preset than
    ``config.preset`` before any episode (:func:`~harness_g.agent.env.config.check_graph_preset`). ``clock``: seconds
    for idle ages (default ``time.monotonic``; tests pass a manual one so a slow machine cannot age an episode)."""

    def __init__(self, view: GraphView, questions: Sequence[QAItem] = (), config: EnvConfig | None = None, *,
                 credit: StepCredit | None = None, limits: ServiceLimits | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.view = view
        self._clock = clock
        self.config = config or EnvConfig()
        check_graph_preset(view.artifact.manifest, self.config, str(view.artifact.path))
        self.credit = credit
        self.limits = limits or ServiceLimits()
        self._lock = threading.RLock()
        self._episodes: dict[str, Episode] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()  # answered episode ids, newest last
        self._by_id = {q.id: q for q in questions}
        self._by_text: dict[str, list[QAItem]] = {}
        for q in questions:
            self._by_text.setdefault(_text_key(q.question), []).append(q)

    # -- questions ------------------------------------------------------------------------------------------
    def find_question(self, question: str | None = None, question_id: str | None = None,
                      answers: Any = None) -> QAItem:
        """The graph's question with id ``question_id``, else the one whose id or text (whitespace-normalised) is
        ``question``, else an ad-hoc question (gold: ``answers``, if given). Refuses an unknown id, a text shared by
        several graph questions without an id, and ``answers`` that are not among a graph question's gold answers."""
        if question_id is not None:
            item = self._by_id.get(str(question_id))
            if item is None:
                raise HarnessError(f"question_id {question_id!r} is not in the graph's question set "
                                   f"({len(self._by_id)} questions)")
            if question is not None and str(question) != item.id and _text_key(question) != _text_key(item.question):
                raise HarnessError(f"question {str(question)[:80]!r} is not the text of question_id {item.id!r} "
                                   f"({item.question[:80]!r})")
        elif question is not None:
            text = str(question)
            matches = [self._by_id[text]] if text in self._by_id else self._by_text.get(_text_key(text), [])
            if len(matches) > 1:
                raise HarnessError(f"question text matches {len(matches)} questions of the graph's set "
                                   f"({', '.join(q.id for q in matches)}); pass question_id")
            item = matches[0] if matches else QAItem(id=ADHOC_ID, question=text, answers=(), dataset="")
        else:
            raise HarnessError("reset needs 'question' (its text, or the id of a graph question) or 'question_id'")
        if not _text_key(item.question):
            raise HarnessError("the question is empty")
        if answers is None:
            return item
        given = _answers(answers)
        if item.id == ADHOC_ID:
            return replace(item, answers=given)
        gold = {normalize_answer(a) for a in item.answers}
        foreign = [a for a in given if normalize_answer(a) not in gold]
        if foreign:
            raise HarnessError(f"answers {foreign!r} are not gold answers of graph question {item.id!r} "
                               f"({list(item.answers)!r}); the graph's gold is what is scored")
        return item

    # -- episodes -------------------------------------------------------------------------------------------
    def reset(self, *, question: str | None = None, question_id: str | None = None, answers: Any = None,
              episode_id: str | None = None, replaces: Episode | None = None) -> Episode:
        """Start an episode (InitRetrieve) and return it. ``episode_id``: the caller's id for it (default: a fresh
        random one); ``replaces``: the caller's previous episode, dropped first."""
        item = self.find_question(question, question_id, answers)
        with self._lock:
            if replaces is not None and self._episodes.get(replaces.id) is replaces:
                del self._episodes[replaces.id]
            if episode_id is None:
                episode_id = uuid.uuid4().hex
            elif str(episode_id) in self._episodes or str(episode_id) in self._finished:
                raise HarnessError(f"episode_id {episode_id!r} is taken by another episode; choose another or leave it out")
            self._make_room()
            env = MenuEnv(self.view, self.config, record_previews=self.credit is not None)
            env.reset(item)
            episode = Episode(str(episode_id), item, env, touched=self._clock())
            episode.info = {"question_id": item.id, "gold": episode.gold, "committed": []}
            self._episodes[episode.id] = episode
            return episode

    def release(self, episode: Episode) -> None:
        """Its holder is gone (a closed WebSocket session; an HTTP episode has no holder after its reset): the
        episode stays playable by its id but is the first dropped when a reset needs room."""
        with self._lock:
            episode.held = False

    def _make_room(self) -> None:
        """While the service is full, drop released episodes, then idle ones (least recently touched first); refuse
        when neither is left."""
        now = self._clock()
        droppable = sorted((e for e in self._episodes.values()
                            if not e.held or now - e.touched > self.limits.idle_seconds),
                           key=lambda e: (e.held, e.touched))
        while len(self._episodes) >= self.limits.max_sessions and droppable:
            del self._episodes[droppable.pop(0).id]
        if len(self._episodes) >= self.limits.max_sessions:
            raise ServiceFull(f"{len(self._episodes)} live episodes, the most this server keeps (--max-sessions "
                              f"{self.limits.max_sessions}); finish or close one, or wait: an episode idle for "
                              f"{self.limits.idle_seconds:.0f} s is dropped to make room")

    def episode(self, episode_id: str) -> Episode:
        """The live episode ``episode_id``."""
        with self._lock:
            episode = self._episodes.get(str(episode_id))
            over = str(episode_id) in self._finished
        if over:
            raise EpisodeOver(f"episode {str(episode_id)[:80]} is over (answered); reset for a new question")
        if episode is None:
            raise UnknownEpisode(f"unknown episode_id {str(episode_id)[:80]!r}: no live episode has it (an episode is "
                                 f"forgotten once answered, or after {self.limits.idle_seconds:.0f} s idle when room "
                                 "is needed)")
        return episode

    @property
    def live_episodes(self) -> int:
        with self._lock:
            return len(self._episodes)

    def step(self, episode: Episode, action: ActionSpec) -> Episode:
        """Take ``action`` in ``episode`` (see :class:`ActionSpec`); raises :class:`EpisodeOver` once it is over,
        :class:`ActionRefused` for an action its state cannot take (nothing changes)."""
        with self._lock:
            episode.touched = self._clock()
            if episode.done:
                raise EpisodeOver(f"episode {episode.id} is over (answered {episode.answer!r}); reset for a new question")
            if episode.phase == "answer":
                self._answer_phase(episode, action)
            else:
                self._retrieve(episode, action)
            if episode.done:
                self._episodes.pop(episode.id, None)
                self._finished[episode.id] = None
                while len(self._finished) > FINISHED_MEMORY:
                    self._finished.popitem(last=False)
            return episode

    def _retrieve(self, episode: Episode, action: ActionSpec) -> None:
        env = episode.env
        if (action.action_id is None) == (action.kind is None):
            raise ActionRefused("an action names either action_id (a menu id such as A3, or a raw reply) or kind "
                                "(SELECT, LOOKUP, ANSWER_WITH, ANSWER) with its targets; got "
                                + ("both" if action.action_id is not None else "neither"))
        if action.action_id is not None and action.targets:
            raise ActionRefused("targets go with kind, not with action_id (the menu id already names them)")
        reply = action.action_id if action.action_id is not None else self._resolve(env, action.kind, action.targets)
        if action.answer is not None and not self._ends_retrieval(env, reply):
            turn = env.state.turn + 1 if env.state is not None else 0
            raise ActionRefused(f"answer text comes with an action that ends retrieval (ANSWER, ANSWER_WITH, or any "
                                f"action on the last turn); this one does not (turn {turn} of {self.config.max_turns})")
        result = env.step(reply)
        assert env.trajectory is not None and env.state is not None
        record = env.trajectory.steps[-1]
        seen = set(record.observed_before)
        info: dict[str, Any] = {
            "question_id": episode.item.id, "gold": episode.gold, "committed": list(env.state.committed),
            "valid": result.valid, "error": result.error,
            "action": None if record.chosen is None else
            {"id": record.chosen, "kind": record.action_type, "targets": list(record.targets)},
            "preview": {"introduced": list(record.introduced),
                        "new": [s for s in record.introduced if s not in seen] if record.action_type == "LOOKUP" else []},
        }
        if self.credit is not None:
            info.update(self.credit.step(episode.item, env.trajectory))
        episode.info = info
        if env.done and action.answer is not None:
            self._finish(episode, action.answer)

    def _ends_retrieval(self, env: MenuEnv, reply: str) -> bool:
        """Whether stepping ``reply`` ends retrieval: the last turn, or an ANSWER / ANSWER_WITH on the menu."""
        st, menu = env.state, env.menu
        assert st is not None and menu is not None
        if st.turn + 1 >= self.config.max_turns:
            return True
        parsed = parse_action(reply, menu.by_id).action
        return parsed is not None and parsed.type in (ActionType.ANSWER, ActionType.ANSWER_WITH)

    def _answer_phase(self, episode: Episode, action: ActionSpec) -> None:
        ended = episode.env.state.terminated_by if episode.env.state is not None else ""
        if action.action_id is not None or action.targets or (action.kind is not None and str(action.kind).upper() != "ANSWER"):
            raise ActionRefused(f"retrieval is over (ended by {ended}); the one action left is the final answer: "
                                "kind ANSWER with answer text")
        if action.answer is None:
            raise ActionRefused(f"retrieval is over (ended by {ended}); send the final answer as answer text")
        episode.info = {"question_id": episode.item.id, "gold": episode.gold,
                        "committed": list(episode.env.state.committed) if episode.env.state is not None else []}
        self._finish(episode, action.answer)

    def _finish(self, episode: Episode, answer: str) -> None:
        trajectory = episode.env.finish(str(answer))
        episode.answer = str(answer)
        gold = list(episode.item.answers)
        episode.reward = token_f1(episode.answer, gold) if gold else None
        episode.info.update({
            "answer": episode.answer, "terminated_by": trajectory.terminated_by,
            "f1": episode.reward, "em": exact_match(episode.answer, gold) if gold else None,
            "trajectory": trajectory.to_json(),
        })
        if self.credit is not None:
            episode.info.update(self.credit.episode(episode.item, trajectory))

    def _resolve(self, env: MenuEnv, kind: str | None, targets: Sequence[str]) -> str:
        """The current menu's id for ``kind`` + ``targets`` (handles or graph ids); ActionRefused when not offered."""
        try:
            action_type = ActionType(str(kind).strip().upper())
        except ValueError:
            raise ActionRefused(f"unknown action kind {str(kind)[:40]!r}; one of {', '.join(KINDS)}") from None
        obs = env.observe()
        targets = [str(t) for t in targets]
        menu = [a for a in obs.menu if a.type is action_type]
        if action_type is ActionType.ANSWER:
            if targets:
                raise ActionRefused("ANSWER takes no targets")
            return menu[0].id
        if action_type is ActionType.LOOKUP:
            ids = [self._entity(obs, t) for t in self._one(action_type, targets)]
        else:
            if action_type is ActionType.SELECT:
                self._one(action_type, targets)
            elif not targets:
                raise ActionRefused("ANSWER_WITH takes at least one visible sentence")
            ids = [self._sentence(obs, action_type, t) for t in targets]
            if len(set(ids)) != len(ids):
                raise ActionRefused(f"{action_type.value} names a sentence twice: {' '.join(targets)}")
        wanted = set(ids)
        found = next((a for a in menu if set(a.targets) == wanted and len(a.targets) == len(ids)), None)
        if found is None:
            if action_type is ActionType.ANSWER_WITH:
                k = self.config.answer_with_max
                offered = (("1 visible sentence" if k == 1 else f"1 to {k} visible sentences")
                           if self.config.answer_with else "nothing: env.answer_with is off")
                raise ActionRefused(f"ANSWER_WITH {' '.join(targets)}: this menu's ANSWER_WITH takes {offered} "
                                    f"(env.answer_with_max {k})")
            raise ActionRefused(f"{action_type.value} {' '.join(targets)} is not on the current menu")
        return found.id

    @staticmethod
    def _one(action_type: ActionType, targets: Sequence[str]) -> Sequence[str]:
        if len(targets) != 1:
            raise ActionRefused(f"{action_type.value} takes exactly one target (got {len(targets)})")
        return targets

    @staticmethod
    def _sentence(obs: Observation, action_type: ActionType, target: str) -> str:
        index = _handle_index(target, "S")
        if index is not None and index < len(obs.visible):
            return obs.visible[index].id
        if target in obs.visible_ids:
            return target
        shown = f"S0..S{len(obs.visible) - 1}" if obs.visible else "none"
        raise ActionRefused(f"{action_type.value} {target[:80]}: not a visible sentence (visible: {shown})")

    @staticmethod
    def _entity(obs: Observation, target: str) -> str:
        index = _handle_index(target, "E")
        if index is not None and index < len(obs.entities):
            return obs.entities[index].id
        if any(e.id == target for e in obs.entities):
            return target
        shown = f"E0..E{len(obs.entities) - 1}" if obs.entities else "none"
        raise ActionRefused(f"LOOKUP {target[:80]}: not a LOOKUP target of the current menu (targets: {shown})")

    # -- what a client sees ---------------------------------------------------------------------------------
    def observation(self, episode: Episode) -> dict[str, Any]:
        """The episode now, as plain JSON-able data: ``text`` (the rendered observation while retrieving, the answer
        prompt over C_T in the answer phase, "" when over), the structured menu (``committed``, ``visible`` and
        ``entities`` with their handles, ``menu`` with ids, kinds, targets and labels), ``phase``, ``done``,
        ``reward`` and ``info`` (the last step's metadata, see the module docstring)."""
        with self._lock:
            env = episode.env
            obs = env.observe()
            phase = episode.phase
            if phase == "retrieve":
                text = obs.text
            elif phase == "answer":
                text = answer_prompt(obs.question, obs.committed_texts)[0]["content"]
            else:
                text = ""
            st = env.state
            return {
                "episode_id": episode.id, "question_id": episode.item.id, "question": episode.item.question,
                "phase": phase, "turn": obs.turn, "max_turns": obs.max_turns, "event": obs.event, "error": obs.error,
                "text": text,
                "committed": [{"id": c.id, "title": c.title, "text": c.text} for c in obs.committed],
                "visible": [{"id": s.id, "handle": s.handle, "title": s.title, "text": s.text} for s in obs.visible],
                "entities": [{"id": e.id, "handle": e.handle, "name": e.name, "surface": e.surface, "role": e.role}
                             for e in obs.entities],
                "menu": [{"id": a.id, "kind": a.type.value, "targets": list(a.targets), "label": a.label}
                         for a in obs.menu],
                "terminated_by": (st.terminated_by or None) if st is not None else None,
                "answer": episode.answer, "info": dict(episode.info),
                "done": episode.done, "reward": episode.reward if episode.done else 0.0,
            }


@contextmanager
def open_service(graph_dir: str | Path, store: str | None = None, config: EnvConfig | None = None, *,
                 credit: StepCredit | None = None, limits: ServiceLimits | None = None) -> Iterator[MenuService]:
    """A :class:`MenuService` over GRAPH_DIR (loaded into its store first if needed) with the graph's question set;
    the store is closed on exit (:func:`~harness_g.agent.env.session.open_view`)."""
    from harness_g.agent.env.session import open_view

    with open_view(graph_dir, store) as view:
        yield MenuService(view, view.artifact.questions(), config, credit=credit, limits=limits)
