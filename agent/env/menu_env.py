"""The menu environment (paper §"The Menu Environment").

State z_t = (question, committed C_t, visible U_t, visited V_t, history H_t). ``reset`` runs
InitRetrieve; ``step`` takes the policy's raw reply, parses it strictly, executes the action
deterministically and returns the next observation; ``preview`` expands any menu action
read-only. Every graph access goes through :class:`GraphView` (named Cypher + caches).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from harness_g.agent.env.actions import Action, ActionType, parse_action
from harness_g.agent.env.config import EnvConfig, check_graph_preset
from harness_g.agent.env.graph_view import EntityInfo, GraphView, question_words
from harness_g.agent.env.menu import Menu, build_menu, dedup_by_text, question_entity_channel
from harness_g.agent.env.observation import (CommittedSentence, GraphTools, MenuAction, MenuEntity, Observation,
                                             VisibleSentence, next_episode_id)
from harness_g.agent.env.render import render_observation
from harness_g.agent.env.retrieval import lookup_query, rrf
from harness_g.agent.env.trajectory import StepRecord, Trajectory
from harness_g.agent.env.transition import MenuState, introduced, transition
from harness_g.errors import HarnessError
from harness_g.graph.text.canonical import canonicalize
from harness_g.graph.text.linking import title_name
from harness_g.graph.types import QAItem, paragraph_of

INIT_STEP = -1  # producer id of InitRetrieve's output (not a policy step)


class EpisodeOver(HarnessError):
    """``step`` was called after the episode ended."""


@dataclass(frozen=True)
class Preview:
    """What an action would do, computed without changing state.

    ``introduced``: sentences it would surface (LOOKUP) or commit (SELECT/ANSWER_WITH), in order.
    ``committed``: C_{t+1}; ``visible``: U_{t+1}; ``terminal``: whether the episode would end.
    """

    action_id: str
    type: ActionType
    introduced: tuple[str, ...]
    committed: tuple[str, ...]
    visible: tuple[str, ...]
    terminal: bool


@dataclass
class StepResult:
    observation: str
    done: bool
    valid: bool
    error: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class EnvState:
    question: QAItem
    question_vec: np.ndarray
    committed: list[str] = field(default_factory=list)
    visible: list[str] = field(default_factory=list)
    visited: list[str] = field(default_factory=list)
    observed: list[str] = field(default_factory=list)  # scorer-only context O_t, first-seen order
    producer: dict[str, int] = field(default_factory=dict)  # sentence/entity id -> latest producing step
    question_targets: list[EntityInfo] = field(default_factory=list)  # the question's LOOKUP targets (question_targets)
    turn: int = 0
    done: bool = False
    terminated_by: str = ""

    @property
    def z(self) -> MenuState:
        """(C_t, U_t, V_t, H_t) as the pure :class:`~harness_g.agent.env.transition.MenuState`."""
        return MenuState(tuple(self.committed), tuple(self.visible), tuple(self.visited), self.turn, self.terminated_by)

    def enter(self, z: MenuState) -> None:
        """Take (C, U, V, H) from ``z`` (what :func:`~harness_g.agent.env.transition.transition` returned)."""
        self.committed, self.visible, self.visited = list(z.committed), list(z.visible), list(z.visited)
        self.turn, self.done, self.terminated_by = z.turn, z.done, z.terminated_by


def committed_query(view: GraphView, question: str, committed: Sequence[str], max_words: int) -> tuple[str, list[str]]:
    """(m_t, C_t's texts in commit order): the environment-built lookup query m_t = concat(q, text(C_t))
    (Harness-G §3.3) for the committed sentence ids, as the menu, the batch prefetch and reachability build it."""
    infos = view.sentences(list(committed))
    texts = [infos[s].text for s in committed if s in infos]
    return lookup_query(question, texts, max_words), texts


def init_retrieve(view: GraphView, question: str, q_vec: np.ndarray, cfg: EnvConfig,
                  q_entities: list[EntityInfo] | None = None) -> list[str]:
    """U_0: RRF of the global-sentence, paragraph-local and entity-mention channels, text-deduped, top K_s.
    ``q_entities``: ``view.question_entities(question, cfg.question_ngram_max)`` when the caller has it."""
    global_hits = [sid for sid, _ in view.vector_top_k(question, q_vec, cfg.init_global_k)]
    paragraphs: list[str] = []
    for sid in global_hits:
        pid = paragraph_of(sid)
        if pid not in paragraphs:
            paragraphs.append(pid)
        if len(paragraphs) == cfg.init_paragraphs:
            break
    local = [sid for sid, _ in view.rank(q_vec, view.paragraph_sentences(paragraphs))]
    if q_entities is None:
        q_entities = view.question_entities(question, cfg.question_ngram_max)
    # the paper's C(e) even with EnvConfig.article_pool: ranking the question entities' whole articles here lost
    # 2Wiki questions (190 -> 188 reachable, benchmarks/results/quality.md)
    entity_channel = question_entity_channel(view, [e.id for e in q_entities], q_vec, cfg.init_entity_k, cfg)
    fused = [sid for sid, _ in rrf([global_hits, local, entity_channel], cfg.rrf_k)]
    head = fused[: cfg.visible_cap * 3]
    visible = dedup_by_text(head, view.sentences(head), set())[: cfg.visible_cap]
    if cfg.init_entity_reserve and q_entities:  # an extension (not the paper's): it reads the whole pools
        mention_pool = view.lookup_pools([e.id for e in q_entities], articles=False, hub_sample=cfg.lookup_hub_sample)
        visible = _reserve_entity_slots(view, visible, q_entities, mention_pool, q_vec, cfg, question)
    return visible


def _named_in_question(question: str, name: str) -> bool:
    """Whether the question writes ``name`` (a canonical entity name) as a name: some word of it is capitalised where
    the question uses it. A cased question's lower-case words ("film", "younger") are common words spaCy sometimes
    tags as entities; an all-lower-case question (NQ) gives no such signal, so every name counts there."""
    if question[1:] == question[1:].lower():
        return True
    cased = {canonicalize(w) for w in question_words(question) if w[:1].isupper() or w[:1].isdigit()}
    return any(w in cased for w in name.split())


def _maximal(q_entities: Sequence[EntityInfo]) -> list[EntityInfo]:
    """The question entities whose name no other question entity's name contains ("malibu express", not "malibu")."""
    names = {e.name for e in q_entities}
    return [e for e in q_entities if not any(n != e.name and f" {e.name} " in f" {n} " for n in names)]


def question_targets(view: GraphView, question: str, cfg: EnvConfig,
                     q_entities: list[EntityInfo] | None = None) -> list[EntityInfo]:
    """The entities the question names, as LOOKUP targets (``EnvConfig.question_lookups``; [] when off): the
    lookup-able question entities with a maximal name that the question writes as a name (the names InitRetrieve
    reserves U_0 slots for), ordered by id. ``q_entities``: ``view.question_entities(...)`` when the caller has it."""
    if not cfg.question_lookups:
        return []
    if q_entities is None:
        q_entities = view.question_entities(question, cfg.question_ngram_max)
    return [e for e in _maximal(q_entities) if _named_in_question(question, e.name)]


def _reserve_entity_slots(view: GraphView, visible: list[str], q_entities: list, pools: dict[str, tuple[str, ...]],
                          q_vec: np.ndarray, cfg: EnvConfig, question: str) -> list[str]:
    """Give each question entity that U_0 does not touch its best sentence, in place of U_0's lowest-ranked sentence
    that no other question entity needs.

    A comparison question ("... X or Y?") names two entities; the fused channels are often filled by X's articles,
    and when nothing links X to Y no LOOKUP ever reaches Y's. So up to ``init_entity_reserve`` names of the question
    (maximal names only: "malibu express", not also "malibu"; the TITLE and PERSON entities of one name count as one;
    names the question writes in lower case only, "film", do not count in a cased question) whose candidate pools
    C(e) have no sentence in U_0 get their best sentence by cosine to q (strongest first): from the article titled
    by that name when the pool has one, else from the whole pool. Each replaces the lowest-ranked sentence of U_0
    whose removal leaves every covered name covered: a reservation never evicts the only sentence of another question
    entity (before, a junk ORG "younger" pushed out the second person of "Who is younger, X or Y?").
    Still the paper's entity-mention channel (Harness-G §3.3), fused by slot reservation instead of RRF.
    """
    pool_of: dict[str, set[str]] = {}  # maximal name -> the union of its entities' pools
    for e in _maximal(q_entities):
        pool_of.setdefault(e.name, set()).update(pools.get(e.id, ()))
    out = list(visible)

    def covered(sentences: Sequence[str]) -> set[str]:
        shown = set(sentences)
        return {name for name, pool in pool_of.items() if pool & shown}

    best: list[tuple[float, str, str]] = []  # (-cosine, name, sentence id) of the uncovered names
    for name in sorted(set(pool_of) - covered(out)):
        if not _named_in_question(question, name):
            continue
        pool = sorted(pool_of[name])
        infos = view.sentences(pool)
        own = [sid for sid in pool if sid in infos and title_name(infos[sid].title) == name]
        ranked = view.rank(q_vec, own or pool)
        if ranked:
            best.append((-ranked[0][1], name, ranked[0][0]))
    reserved = 0
    for _, name, sid in sorted(best):
        now = covered(out)
        if reserved == cfg.init_entity_reserve or name in now:
            continue
        # the lowest-ranked sentence whose removal uncovers nothing (none: every slot is some entity's only one)
        free = next((j for j in range(len(out) - 1, -1, -1) if covered(out[:j] + out[j + 1:]) >= now), None)
        if len(out) >= cfg.visible_cap:
            if free is None:
                break
            del out[free]
        out.append(sid)
        reserved += 1
    return dedup_by_text(out, view.sentences(out), set())[: cfg.visible_cap]


class MenuEnv:
    """One episode at a time over a shared :class:`GraphView`: the menu arm's
    :class:`~harness_g.agent.env.protocol.Environment`.

    >>> env = MenuEnv(view)                     # doctest: +SKIP
    >>> obs = env.reset(item)                   # doctest: +SKIP
    >>> result = env.step("A0")                 # doctest: +SKIP
    """

    def __init__(self, view: GraphView, config: EnvConfig | None = None, *, record_previews: bool = False):
        """Refuses (ConfigError) a graph built under another preset than ``config.preset``
        (:func:`~harness_g.agent.env.config.check_graph_preset`)."""
        self.view = view
        self.config = config or EnvConfig()
        check_graph_preset(view.artifact.manifest, self.config, str(view.artifact.path))
        self.record_previews = record_previews
        self.state: EnvState | None = None
        self.menu: Menu | None = None
        self.trajectory: Trajectory | None = None
        self._m_vec: np.ndarray | None = None
        self._m_text: str | None = None
        self.episode = 0  # the current episode's id (observation.next_episode_id), taken at reset
        self._event: str = "start"  # what produced the current observation: start, ok or invalid (+ reason)
        self._error: str | None = None
        # the current observation, built once per reset/step: observe() is called by policies, runners and the
        # batch every turn, and rendering the text + building the tuples is not free in the RL inner loop
        self._text: str = ""
        self._observed: Observation | None = None

    def _observed_now(self, text: str) -> str:
        """Record ``text`` as the current observation text (what reset/step return) and drop the cached Observation."""
        self._text, self._observed = text, None
        return text

    # -- episode --------------------------------------------------------------------------
    def reset(self, question: QAItem | str) -> str:
        if isinstance(question, str):
            question = QAItem(id="adhoc", question=question, answers=(), dataset="")
        t0 = time.perf_counter()
        self.episode = next_episode_id()
        self._event, self._error = "start", None
        q_vec = self.view.encode([question.question])[0]
        state = EnvState(question=question, question_vec=q_vec)
        q_entities = self.view.question_entities(question.question, self.config.question_ngram_max)
        state.visible = init_retrieve(self.view, question.question, q_vec, self.config, q_entities)
        state.question_targets = question_targets(self.view, question.question, self.config, q_entities)
        self._produce(state, state.visible, INIT_STEP)
        state.observed = list(state.visible)
        self.state = state
        self._refresh_menu()
        self.trajectory = Trajectory(
            question_id=question.id,
            question=question.question,
            answers=list(question.answers),
            graph_version=self.view.version,
            env_config=self.config.to_dict(),
            initial_visible=list(state.visible),
        )
        self.trajectory.seconds["reset"] = time.perf_counter() - t0
        return self._observed_now(self.observation())

    def _produce(self, state: EnvState, sentence_ids: list[str], step: int) -> list[str]:
        """Mark sentences and their lookup-able entities as produced by ``step``; return the produced ids."""
        produced = list(sentence_ids)
        ents = self.view.entities_of(sentence_ids)
        for sid in sentence_ids:
            state.producer[sid] = step
            for e in ents.get(sid, ()):
                state.producer[e.id] = step
                produced.append(e.id)
        return list(dict.fromkeys(produced))

    def _refresh_menu(self) -> None:
        st = self._require_state()
        m_text, _ = committed_query(self.view, st.question.question, st.committed, self.config.query_max_words)
        self._m_vec = self.view.encode([m_text])[0]
        self._m_text = m_text
        self.menu = build_menu(
            self.view, question_vec=st.question_vec, m_vec=self._m_vec, committed=st.committed, visible=st.visible,
            visited=st.visited, cfg=self.config, m_text=m_text, question_targets=st.question_targets,
        )
        # the menu may merge duplicate-text sentences: visible is what the menu shows
        st.visible = [s.id for s in self.menu.sentences]

    def _require_state(self) -> EnvState:
        if self.state is None:
            raise HarnessError("call reset(question) before step/preview")
        return self.state

    @property
    def done(self) -> bool:
        return self.state is not None and self.state.done

    def observation(self, error: str | None = None) -> str:
        st = self._require_state()
        assert self.menu is not None
        infos = self.view.sentences(st.committed)
        committed = [(infos[s].title, infos[s].text) for s in st.committed if s in infos]
        return render_observation(st.turn, self.config.max_turns, st.question.question, committed, self.menu, error)

    def committed_texts(self) -> list[tuple[str, str]]:
        """``[(title, text)]`` of C_t in commit order: all the answerer may see."""
        st = self._require_state()
        infos = self.view.sentences(st.committed)
        return [(infos[s].title, infos[s].text) for s in st.committed if s in infos]

    @property
    def last_event(self) -> tuple[str, str | None]:
        """What produced the current observation: ("start", None) after reset, ("ok", None) after an executed
        reply, ("invalid", reason) after a rejected one."""
        return self._event, self._error

    def tools(self, *, preview: bool = True) -> GraphTools:
        """The read-only :class:`~harness_g.agent.env.observation.PolicyTools` policies get, with the question's
        and m_t's vectors pinned to the ones this environment used for its menu.

        ``preview`` (Harness-G §3.3, Previewability): the tools expand actions of *this* turn's menu with
        :meth:`preview`; once the episode moves on (a step, a reset) or is over they raise instead of silently
        describing a later menu (ids are re-bound every turn). ``preview=False``: no preview at all (the
        free-query arm hides the menu)."""
        st = self._require_state()
        pinned = {st.question.question: st.question_vec}
        if self._m_text is not None and self._m_vec is not None:
            pinned.setdefault(self._m_text, self._m_vec)
        if not preview or st.done:
            return GraphTools(self.view, pinned)
        episode, turn = self.episode, st.turn

        def bound_preview(action_id: str) -> Preview:
            now = self.state
            if self.episode != episode or now is None or now.turn != turn or now.done:
                raise HarnessError(f"stale tools: they preview the menu of turn {turn} of episode {episode}, which is "
                                   "gone; use the current observation's tools")
            return self.preview(action_id)

        return GraphTools(self.view, pinned, bound_preview)

    def observe(self) -> Observation:
        """The current :class:`~harness_g.agent.env.observation.Observation`: what a policy acts on (``text`` is
        exactly what ``reset``/``step`` returned). Once the episode is over: ``done``, no menu or entities,
        ``committed`` = C_T, ``text`` = "". Built once per reset/step and then returned as is."""
        if self._observed is not None:
            return self._observed
        st = self._require_state()
        infos = self.view.sentences(st.committed)
        committed = tuple(CommittedSentence(s, infos[s].title, infos[s].text) for s in st.committed if s in infos)
        menu = self.menu
        live = not st.done and menu is not None
        if live:
            assert menu is not None
            visible = tuple(VisibleSentence(s.id, f"S{i}", s.title, s.text) for i, s in enumerate(menu.sentences))
            entities = tuple(MenuEntity(e.id, f"E{i}", e.name, e.surface, role)
                             for i, (e, role) in enumerate(zip(menu.entities, menu.entity_roles)))
            actions = tuple(MenuAction(a.id, a.type, tuple(a.targets), menu.describe(a)) for a in menu.actions)
        else:
            vis = self.view.sentences(st.visible)
            shown = [vis[s] for s in st.visible if s in vis]
            visible = tuple(VisibleSentence(s.id, f"S{i}", s.title, s.text) for i, s in enumerate(shown))
            entities, actions = (), ()
        steps = self.trajectory.steps if self.trajectory is not None else []
        executed = tuple(ActionType(s.action_type) for s in steps if s.chosen is not None and s.action_type is not None)
        self._observed = Observation(
            text=self._text if live else "", event=self._event, error=self._error,
            episode=self.episode, question_id=st.question.id, question=st.question.question, turn=st.turn,
            max_turns=self.config.max_turns, committed=committed, visible=visible, entities=entities, menu=actions,
            executed=executed, visited=tuple(st.visited),
            # m_t of the current menu when live (computed by _refresh_menu); after the last step C_t may have changed
            lookup_query=self._m_text if live and self._m_text is not None else
            lookup_query(st.question.question, [c.text for c in committed], self.config.query_max_words),
            answer_with=self.config.answer_with, search_available=any(a.type is ActionType.LOOKUP for a in actions),
            done=st.done, interface="menu", tools=self.tools(),
        )
        return self._observed

    # -- preview --------------------------------------------------------------------------
    def preview(self, action: Action | str) -> Preview:
        """Read-only expansion of an action of the *current* menu (by Action or id). Never mutates state.

        Action ids are per-menu: every turn's menu binds ``A0``, ``A1``, ... afresh, so an id string
        means what it means on the current menu (a stale id that exists there names the current
        action). An :class:`Action` object must be the current menu's binding of its id (same type and
        targets). Anything else -- an id not on the menu, or an Action the current menu does not offer
        under its id (e.g. kept from an earlier turn) -- raises :class:`HarnessError` naming the id and
        the available ids.
        """
        st = self._require_state()
        assert self.menu is not None
        aid = action if isinstance(action, str) else action.id
        found = self.menu.by_id.get(aid)
        if found is None or (not isinstance(action, str) and found != action):
            why = ""
            if not isinstance(action, str):
                now = f"; {aid} is now {' '.join((found.type.value, *found.targets))}" if found else ""
                why = (f" ({' '.join((action.type.value, *action.targets))} is not offered by the current menu{now}; "
                       "action ids are re-bound every turn)")
            raise HarnessError(f"unknown action id {aid}{why}; available: {', '.join(self.menu.by_id)}")
        action = found
        before = replace(st.z, terminated_by="")  # what the action does, also asked once the episode is over
        result = self.menu.lookup_results[action.targets[0]] if action.type is ActionType.LOOKUP else None
        after = transition(before, action, result)  # no turn limit: a preview says what the action itself does
        return Preview(action.id, action.type, introduced(before, after, action.type), after.committed, after.visible,
                       after.done)

    def preview_all(self) -> dict[str, Preview]:
        assert self.menu is not None
        return {a.id: self.preview(a) for a in self.menu.actions}

    # -- step -----------------------------------------------------------------------------
    def step(self, reply: str) -> StepResult:
        """Parse ``reply`` strictly against the *current* menu and execute it. Action ids are per-menu
        (re-bound every turn): a stale id that exists on the current menu means what it means now."""
        st = self._require_state()
        if st.done:
            raise EpisodeOver("the episode is over; call reset() for a new question")
        assert self.menu is not None and self.trajectory is not None
        t0 = time.perf_counter()
        menu_json = self.menu.to_json()
        observed_before = list(st.observed)
        previews = {a: list(p.introduced) for a, p in self.preview_all().items()} if self.record_previews else None
        parsed = parse_action(reply, self.menu.by_id)
        record = StepRecord(turn=st.turn, menu=menu_json, reply=str(reply), chosen=None, action_type=None,
                            observed_before=observed_before, previews=previews)
        if parsed.action is None:
            record.error = parsed.error
            self._event, self._error = "invalid", parsed.error
            st.enter(transition(st.z, None, max_turns=self.config.max_turns))  # the turn is used, nothing else
        else:
            self._event, self._error = "ok", None
            self._execute(st, parsed.action, record)
            if not st.done:
                self._refresh_menu()
        record.committed_after, record.visible_after = list(st.committed), list(st.visible)
        record.seconds = time.perf_counter() - t0
        self.trajectory.steps.append(record)
        self._finish_if_done()
        text = self._observed_now(self.observation(parsed.error) if not st.done else "")
        return StepResult(text, st.done, parsed.action is not None, parsed.error)

    def _execute(self, st: EnvState, action: Action, record: StepRecord) -> None:
        """Apply ``action`` (of the current menu) to ``st`` by :func:`~harness_g.agent.env.transition.transition` and
        record what it introduced, consumed and produced (provenance for SNC) in ``record``."""
        assert self.menu is not None
        before = st.z
        lookup = action.type is ActionType.LOOKUP
        after = transition(before, action, self.menu.lookup_results[action.targets[0]] if lookup else None,
                           max_turns=self.config.max_turns)
        new = introduced(before, after, action.type)
        step_no = st.turn
        record.chosen, record.action_type, record.targets = action.id, action.type.value, list(action.targets)
        record.introduced = list(new)
        record.consumed = [action.targets[0]] if lookup else list(new)
        # provenance from the state *before* this step: a LOOKUP re-produces its own entity (it is
        # mentioned in the result sentences), which must not erase the step that exposed it
        record.producers = sorted({st.producer.get(x, INIT_STEP) for x in record.consumed} - {INIT_STEP, step_no})
        st.enter(after)
        if action.type in (ActionType.SELECT, ActionType.ANSWER_WITH):
            # committing a sentence makes its entities bridge targets: this step produced them
            record.produced = self._produce_entities(st, new, step_no)
        elif lookup:
            record.produced = self._produce(st, list(after.visible), step_no)
            for sid in after.visible:
                if sid not in st.observed:
                    st.observed.append(sid)

    def _produce_entities(self, st: EnvState, sentence_ids: tuple[str, ...], step: int) -> list[str]:
        ents = self.view.entities_of(list(sentence_ids))
        out = []
        for sid in sentence_ids:
            for e in ents.get(sid, ()):
                st.producer[e.id] = step
                out.append(e.id)
        return list(dict.fromkeys(out))

    def _finish_if_done(self) -> None:
        st = self.state
        if st is not None and st.done and self.trajectory is not None:
            self.trajectory.committed = list(st.committed)
            self.trajectory.terminated_by = st.terminated_by

    def finish(self, answer: str, **meta: Any) -> Trajectory:
        """Record the final answer (generated from C_T by the policy) and return the trajectory."""
        st = self._require_state()
        if not st.done:
            raise HarnessError("finish() before the episode ended (the policy must choose ANSWER or run out of turns)")
        assert self.trajectory is not None
        self.trajectory.answer = answer
        self.trajectory.meta.update(meta)
        return self.trajectory
