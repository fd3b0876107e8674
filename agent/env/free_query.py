"""The matched free-query arm (paper appendix "Additional Evaluation Protocols", *Transition-matched
interface comparison*).

What the paper fixes, and how this module follows it:

- "At state z_t, the environment first constructs a latent feasible-target set A_t and deterministic
  transition T(z_t, a)": the wrapped :class:`MenuEnv` builds its menu exactly as for the
  menu arm; every move below is executed by the very same :meth:`MenuEnv.step`.
- "The matched free-query policy observes the same evidence state but not the executable ids":
  the observation shows the question, the committed evidence and the visible sentences U_t, but no action ids (A*), no
  entity list (E*) and no LOOKUP entries.
- "They also share initial retrieval, visible and committed evidence, Select/Answer/Answer_With
  semantics": visible sentences keep their handles ``S0``, ``S1``, ... (they are part of
  the evidence state, not executable ids), and the policy commits and answers by handle exactly as
  in the menu arm -- ``SELECT S2``, ``ANSWER_WITH S1``, ``ANSWER``. Such a move is executed exactly
  (it maps to the one menu action with that type and target); it never goes through text
  resolution. An unknown handle is an invalid turn, as an unknown id is in the menu arm.
- "it emits an arbitrary string u_t, and a frozen resolver ranks the textual representations of
  targets in A_t with the shared encoder and deterministically selects rho(z_t, u_t)" and
  "the intervention is whether a retrieval target is exposed for finite selection or reached
  through an open string-to-target mapping": any other reply is a free search string u_t.
  The frozen :class:`Resolver` ranks the *retrieval targets* of A_t (the menu's LOOKUP entities, by
  their surface form) by cosine to u_t under the graph's shared encoder and picks the best (ties:
  lowest action number); that LOOKUP runs. So a resolved query has exactly the menu arm's LOOKUP
  transition for its target. When A_t holds no retrieval target (every LOOKUP was filtered or
  merged away, as the menu arm would then offer none), the observation says so and a search is an
  invalid turn (turn used, state unchanged), like an id that is not on the menu.

Reply grammar (after trimming; at most :data:`MAX_REPLY_CHARS` characters are read):

=======================  ====================================================================
``SELECT S<i>``          commit visible sentence S<i>                    (exact, by handle)
``ANSWER_WITH S<i> ...`` commit S<i> (and up to answer_with_max - 1 more visible sentences, e.g.
                         ``ANSWER_WITH S1 S3``) and stop                 (exact, by handle)
``ANSWER``               stop and answer from C_t                        (exact)
``SEARCH: <text>``       free search string ``<text>`` -> resolver -> LOOKUP
anything else            the whole reply is the free search string u_t -> resolver -> LOOKUP
=======================  ====================================================================

Moves are case-insensitive and may carry light wrappers (``**SELECT S1**``, ``ANSWER.``); ``SEARCH``
also reads ``<search>text</search>``. A reply whose first word is one of the upper-case keywords
``SELECT``/``ANSWER_WITH``/``ANSWER`` but that is not a well-formed move (``SELECT the second one``)
is an invalid turn, never a search. An empty search string is an invalid turn.

Records: ``StepRecord.reply`` holds the policy's own words; ``trajectory.meta["queries"]`` lists every
free search string written (the D_query strings Qry(G), paper appendix "Retrieval-equivalence diagnostics"), and
``trajectory.meta["free_query"]`` one ``{turn, reply, query, resolved, type, targets, score, runner_up}``
per resolved search (moves by handle have none: nothing was resolved).

This module is the interface only (observation, reply grammar, resolver, :class:`FreeQueryEnv`). The arm's policies
come from ``Policy.for_interface("free-query")``: :mod:`harness_g.agent.policies.free_query` (the heuristic's) and
:meth:`harness_g.agent.policies.llm.LLMPolicy.for_interface` (its prompt: :func:`harness_g.agent.llm.prompts.free_query_header`).
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from harness_g.agent.env.actions import MAX_REPLY_CHARS, Action, ActionType
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env.menu_env import EpisodeOver, MenuEnv, Preview, StepResult
from harness_g.agent.env.observation import Observation
from harness_g.errors import HarnessError
from harness_g.graph.types import QAItem

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.env.menu import Menu
    from harness_g.agent.env.trajectory import Trajectory

ANSWER_TEXT = "answer"
#: what the policy may write before a free search string (optional)
SEARCH_PREFIX = "SEARCH: "
#: cosines closer than this count as a tie (broken by action number), so resolution does not
#: depend on last-bit BLAS noise
TIE_DECIMALS = 6
#: the observation line shown when A_t holds no retrieval target (the menu arm would show no LOOKUP)
NO_SEARCH_NOTE = "Search: no new sentences can be retrieved at this step (SELECT, ANSWER_WITH or ANSWER)."

_FREE_QUERY_INSTRUCTION = (
    "Reply with exactly one move: SELECT S<i> to keep a visible sentence as evidence, ANSWER_WITH S<i> (or "
    "ANSWER_WITH S<i> S<j>) to keep it (them) and stop, ANSWER when the committed evidence is enough, or SEARCH: <free text> to search for the evidence you "
    "need next (the search engine retrieves new sentences about the closest matching entity)."
)


def free_query_instruction() -> str:
    """The policy instruction for the free-query arm (the menu arm's counterpart is
    :data:`harness_g.agent.env.render.INSTRUCTION`)."""
    return _FREE_QUERY_INSTRUCTION


def render_free_observation(turn: int, max_turns: int, question: str, committed: Sequence[tuple[str, str]],
                            visible: Sequence[tuple[str, str]], error: str | None = None, *,
                            search_available: bool = True) -> str:
    """The menu observation (``render.render_observation``) minus every executable id: visible sentences
    keep their handles ``S<i>`` (the same labels as the menu arm), but there is no entity list, no
    action list and no ``A*`` id."""
    lines = [f"[Step {turn + 1}/{max_turns}]", f"Question: {question}", "Committed evidence:"]
    lines += [f"  {i + 1}. {t}: {s}" for i, (t, s) in enumerate(committed)] or ["  (none)"]
    lines.append("Visible sentences:")
    lines += [f"S{i} | {t}: {s}" for i, (t, s) in enumerate(visible)] or ["  (none)"]
    if not search_available:
        lines.append(NO_SEARCH_NOTE)
    if error:
        lines.append(f"Invalid reply: {error}")
    lines.append(free_query_instruction())
    return "\n".join(lines)


def target_text(action: Action, menu: "Menu") -> str:
    """The textual representation of one target: a LOOKUP target (what the resolver ranks) is its
    entity's surface form; for reference, SELECT/ANSWER_WITH give the sentence text, ANSWER "answer"."""
    if action.type is ActionType.ANSWER:
        return ANSWER_TEXT
    if action.type is ActionType.LOOKUP:
        return menu._entity[action.targets[0]].surface
    by_id = {s.id: s.text for s in menu.sentences}
    return " ".join(by_id.get(t, "") for t in action.targets)


def retrieval_targets(menu: "Menu") -> list[Action]:
    """The retrieval targets of A_t: the menu's LOOKUP actions, in menu order."""
    return [a for a in menu.actions if a.type is ActionType.LOOKUP]


def _action_number(action_id: str) -> int:
    m = re.fullmatch(r"A(\d+)", action_id)
    return int(m.group(1)) if m else 1 << 30


class NoRetrievalTarget(HarnessError):
    """A free search string was written at a state whose A_t holds no retrieval target."""


@dataclass(frozen=True)
class Resolution:
    """rho(z_t, u_t): the chosen retrieval target and how it won."""

    query: str
    action_id: str
    type: str
    targets: tuple[str, ...]
    score: float
    ranked: tuple[tuple[str, float], ...] = field(default=())  # every retrieval target, best first

    @property
    def runner_up(self) -> tuple[str, float] | None:
        return self.ranked[1] if len(self.ranked) > 1 else None


class Resolver:
    """Frozen string-to-retrieval-target resolver over the shared encoder (``view.encode``, cached per text).

    Only retrieval targets are ranked ("Transition-matched interface comparison": the intervention is how a *retrieval
    target* is reached); commits and answers are addressed by handle and never resolved."""

    def __init__(self, view: GraphView):
        self.view = view

    def resolve(self, query: str, menu: "Menu") -> Resolution:
        candidates = retrieval_targets(menu)
        if not candidates:
            raise NoRetrievalTarget("no retrieval target is available at this step (nothing new can be retrieved); "
                                    "reply SELECT S<i>, ANSWER_WITH S<i> or ANSWER")
        query = "" if query is None else str(query).strip()
        texts = [target_text(a, menu) for a in candidates]
        vecs = self.view.encode([query] + texts).astype(np.float64)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-12
        sims = vecs[1:] @ vecs[0]
        order = sorted(range(len(texts)), key=lambda i: (-round(float(sims[i]), TIE_DECIMALS), _action_number(candidates[i].id)))
        best = candidates[order[0]]
        ranked = tuple((candidates[i].id, round(float(sims[i]), TIE_DECIMALS)) for i in order)
        return Resolution(query, best.id, best.type.value, best.targets, ranked[0][1], ranked)


# -- reply parsing ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class FreeReply:
    """A parsed free-query reply: ``kind`` is "move" (``move`` = (type, handles or None): the handle ``"S1"``, or
    several space-separated ones ``"S1 S3"`` for a multi-sentence ANSWER_WITH), "search"
    (``query`` = u_t) or "invalid" (``error``)."""

    kind: str
    move: tuple[ActionType, str | None] | None = None
    query: str = ""
    error: str | None = None


# light wrappers around a move: **SELECT S1**, `ANSWER`, "ANSWER_WITH S0", ANSWER.  Wrappers are removed
# with str.strip (one pass); the patterns are anchored and their parts cannot match the same
# characters, so classifying a reply is linear in its length (no backtracking blow-up).
_OPENERS = "*`\"'[("
_CLOSERS = "*`\"')]."
# ANSWER_WITH takes one or more handles ("ANSWER_WITH S1 S3", commas allowed); the separator class and "S\d+" share
# no character, so the repetition cannot backtrack
_MOVE = re.compile(r"(SELECT)[ \t]+S(\d+)|(ANSWER_WITH)((?:[ \t,]+S\d+)+)|(ANSWER)", re.I)
_HANDLE = re.compile(r"S(\d+)", re.I)
_KEYWORD = re.compile(r"(SELECT|ANSWER_WITH|ANSWER)(?![A-Za-z0-9_])")  # upper case only: a move was meant
_SEARCH_KEY = re.compile(r"(?:SEARCH(?![A-Za-z0-9_])[ \t]*:?|search[ \t]*:)[ \t]*", re.I)


def _unwrap(text: str) -> str:
    return text.lstrip(_OPENERS).rstrip(_CLOSERS).strip()


def _search_tag(text: str) -> str | None:
    """The text inside the first ``<search>...</search>`` (case-insensitive), else None."""
    low = text.lower()
    start = low.find("<search>")
    if start < 0:
        return None
    end = low.find("</search>", start + 8)
    return text[start + 8 : end] if end >= 0 else None


def parse_free_reply(text: str) -> FreeReply:
    """Classify a reply (see the module docstring's grammar). Linear in ``len(text)``."""
    text = "" if text is None else str(text).strip()
    if len(text) > MAX_REPLY_CHARS:
        return FreeReply("invalid", error=f"reply too long ({len(text)} characters; at most {MAX_REPLY_CHARS} are read)")
    core = _unwrap(text)
    m = _MOVE.fullmatch(core)
    if m:
        if m.group(5):
            return FreeReply("move", (ActionType.ANSWER, None))
        if m.group(1):
            return FreeReply("move", (ActionType.SELECT, f"S{int(m.group(2))}"))
        handles = " ".join(f"S{int(h)}" for h in _HANDLE.findall(m.group(4)))
        return FreeReply("move", (ActionType.ANSWER_WITH, handles))
    if _KEYWORD.match(core):
        return FreeReply("invalid", error=f"malformed move {core[:60]!r}; reply SELECT S<i>, ANSWER_WITH S<i>, ANSWER "
                                          "or SEARCH: <text>")
    tag = _search_tag(text)
    if tag is not None:
        query = tag
    else:
        key = _SEARCH_KEY.match(text)
        query = text[key.end():] if key else text
    query = " ".join(query.split())
    if not query:
        return FreeReply("invalid", error="empty search string; write what to search for, or SELECT/ANSWER_WITH/ANSWER")
    return FreeReply("search", query=query)


class FreeQueryEnv:
    """A :class:`MenuEnv` seen through the free-query arm: an :class:`~harness_g.agent.env.protocol.Environment`, so
    :func:`harness_g.agent.eval.runner.run_episode` and ``training.rollout`` drive it as they drive a MenuEnv.

    Deliberately exposes no ``menu``: policies get :meth:`observe` -- the free observation text (no action ids),
    C_t, U_t with the handles ``S<i>`` it renders, no menu and no entity list, :attr:`search_available`, and the
    read-only tools. ``inner`` is the wrapped MenuEnv, for the harness and tests only.
    """

    interface = "free-query"

    def __init__(self, env: MenuEnv | GraphView, config: EnvConfig | None = None, *, resolver: Resolver | None = None):
        self.inner = env if isinstance(env, MenuEnv) else MenuEnv(env, config)
        self.resolver = resolver or Resolver(self.inner.view)
        self.resolutions: list[Resolution] = []
        self.queries: list[str] = []
        self._event: str = "start"  # what produced the current observation (start, ok, invalid + reason)
        self._error: str | None = None

    # -- what policies may read -----------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.inner.done

    @property
    def search_available(self) -> bool:
        """Whether A_t holds a retrieval target (a free search string can be resolved)."""
        menu = self.inner.menu
        return menu is not None and bool(retrieval_targets(menu))

    def committed_texts(self) -> list[tuple[str, str]]:
        return self.inner.committed_texts()

    def visible_texts(self) -> list[tuple[str, str]]:
        """``[(title, text)]`` of U_t as the menu shows it (text-deduplicated, committed removed); item i is ``S<i>``."""
        menu = self.inner.menu
        return [] if menu is None else [(s.title, s.text) for s in menu.sentences]

    def handle_of(self, sentence_id: str) -> str | None:
        """The handle (``S<i>``) of a visible sentence, None when it is not visible."""
        menu = self.inner.menu
        if menu is None:
            return None
        return next((f"S{i}" for i, s in enumerate(menu.sentences) if s.id == sentence_id), None)

    def observation(self, error: str | None = None) -> str:
        st = self.inner._require_state()
        return render_free_observation(st.turn, self.inner.config.max_turns, st.question.question, self.committed_texts(),
                                       self.visible_texts(), error, search_available=self.search_available)

    @property
    def last_event(self) -> tuple[str, str | None]:
        """What produced the current observation: ("start", None), ("ok", None) or ("invalid", this arm's reason)."""
        return self._event, self._error

    def observe(self) -> Observation:
        """The free-query arm's :class:`~harness_g.agent.env.observation.Observation`: ``text`` is the free observation
        (exactly what ``reset``/``step`` return), ``visible`` carries the handles it renders, ``menu`` and ``entities``
        are empty (no executable ids, no LOOKUP entities), ``search_available`` says whether a search string can
        be resolved. Once the episode is over: ``done``, ``text`` = "", ``committed`` = C_T."""
        obs = self.inner.observe()
        done = self.inner.done
        return dataclasses.replace(obs, text="" if done else self.observation(self._error), event=self._event,
                                   error=self._error, entities=(), menu=(),
                                   search_available=not done and self.search_available, interface=self.interface,
                                   tools=self.inner.tools(preview=False))  # no menu here, so nothing to preview

    # -- episode --------------------------------------------------------------------------
    def reset(self, question: QAItem | str) -> str:
        self.inner.reset(question)
        self.resolutions = []
        self.queries = []
        self._event, self._error = "start", None
        assert self.inner.trajectory is not None
        self.inner.trajectory.meta["interface"] = self.interface
        self.inner.trajectory.meta["free_query"] = []
        return self.observation()

    def resolve(self, query: str) -> Resolution:
        """rho(z_t, u_t) for the current state, without executing it (raises :class:`NoRetrievalTarget`)."""
        self.inner._require_state()
        assert self.inner.menu is not None
        return self.resolver.resolve(query, self.inner.menu)

    def move_action(self, kind: ActionType, handle: str | None) -> Action:
        """The menu action a move by handle(s) names, exactly (no text resolution); HarnessError when it is not
        offered (unknown handle, a handle named twice, more sentences than ``answer_with_max``, ANSWER_WITH disabled)."""
        self.inner._require_state()
        menu = self.inner.menu
        assert menu is not None
        if kind is ActionType.ANSWER:
            return next(a for a in menu.actions if a.type is ActionType.ANSWER)
        handles = {f"S{i}": s.id for i, s in enumerate(menu.sentences)}
        named = (handle or "").split()
        for h in named:
            if h not in handles:
                shown = ", ".join(handles) if handles else "none"
                raise HarnessError(f"unknown sentence {h}; visible: {shown}")
        if len(set(named)) != len(named):
            raise HarnessError(f"{kind.value} names a sentence twice ({handle})")
        # the menu lists a multi-sentence ANSWER_WITH's targets in visible order
        order = list(handles)
        targets = tuple(handles[h] for h in sorted(named, key=order.index))
        action = next((a for a in menu.actions if a.type is kind and a.targets == targets), None)
        if action is None:
            cap = self.inner.config.answer_with_max
            why = (f" (at most {cap} sentences per ANSWER_WITH)" if kind is ActionType.ANSWER_WITH and len(targets) > cap
                   and self.inner.config.answer_with else "")
            raise HarnessError(f"{kind.value} {handle} is not available at this step{why}")
        return action

    def reply_action(self, reply: str) -> Action:
        """The menu action ``reply`` names at this step: a move by handle exactly, a free search string through the
        resolver (its LOOKUP); HarnessError (NoRetrievalTarget for a search with nothing to retrieve) for a reply
        that would be an invalid turn. Changes nothing."""
        parsed = parse_free_reply("" if reply is None else str(reply))
        if parsed.kind == "move":
            assert parsed.move is not None
            return self.move_action(*parsed.move)
        if parsed.kind == "search":
            res = self.resolve(parsed.query)
            assert self.inner.menu is not None
            return self.inner.menu.by_id[res.action_id]
        raise HarnessError(parsed.error or "invalid reply")

    def preview(self, reply: str) -> Preview:
        """What ``reply`` would do (:meth:`MenuEnv.preview` of the action :meth:`reply_action` names), read-only.
        For the harness and tests: a free-query policy's tools have no preview (the arm shows no menu)."""
        return self.inner.preview(self.reply_action(reply).id)

    def step(self, reply: str) -> StepResult:
        """Execute a move by handle exactly, or resolve a free search string to a LOOKUP target and run it;
        either way through ``MenuEnv.step``. Anything else is an invalid turn (used, state unchanged)."""
        st = self.inner._require_state()
        if st.done:
            raise EpisodeOver("the episode is over; call reset() for a new question")
        turn = st.turn
        raw = "" if reply is None else str(reply)
        parsed = parse_free_reply(raw)
        error: str | None = parsed.error
        res: Resolution | None = None
        action: Action | None = None
        if parsed.kind == "move":
            assert parsed.move is not None
            try:
                action = self.move_action(*parsed.move)
            except HarnessError as exc:
                error = str(exc)
        elif parsed.kind == "search":
            self.queries.append(parsed.query)
            try:
                res = self.resolve(parsed.query)
            except NoRetrievalTarget as exc:
                error = str(exc)
            else:
                assert self.inner.menu is not None
                action = self.inner.menu.by_id[res.action_id]
        if action is None:
            # the menu arm's invalid turn: an empty reply never parses, so MenuEnv counts the turn and
            # keeps the state; the record then gets this arm's reply and reason
            self.inner.step("")
        else:
            self.inner.step(action.id)
        traj = self.inner.trajectory
        assert traj is not None
        record = traj.steps[-1]
        record.reply = raw  # the policy's own words, not the executed id
        if action is None:
            record.error = error
        info: dict[str, Any] = {"kind": parsed.kind if action is not None else "invalid"}
        if res is not None:
            self.resolutions.append(res)
            runner = res.runner_up
            traj.meta["free_query"].append({
                "turn": turn, "reply": raw, "query": res.query, "resolved": res.action_id, "type": res.type,
                "targets": list(res.targets), "score": res.score, "runner_up": list(runner) if runner else None,
            })
            info["resolution"] = asdict(res) | {"ranked": [list(r) for r in res.ranked[:5]]}
        done = self.inner.done
        self._event, self._error = ("ok", None) if action is not None else ("invalid", error)
        return StepResult(self.observation(error) if not done else "", done, action is not None, error, info)

    def finish(self, answer: str, **meta: Any) -> "Trajectory":
        traj = self.inner.finish(answer, **meta)
        traj.meta["queries"] = list(self.queries)
        return traj
