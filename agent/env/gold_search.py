"""The gold search: a shortest trajectory that commits every gold evidence unit within T turns, if the menus allow
one -- the search behind menu reachability (:mod:`harness_g.agent.eval.reachability`: the verdict and its cause)
and the oracle policy. It applies the environment's own transition and menus, read-only.

**The search** (:class:`GoldSearch`) walks the real menus (the same ``build_menu`` the environment uses) from any
state z_t = (C_t, U_t, V_t, turns) (Harness-G §3.1) and returns the steps of a shortest trajectory it finds:
``(ActionType, targets)`` with SELECT ``(sid,)``, LOOKUP ``(entity_id,)``, ANSWER_WITH ``(sid, ...)`` and a final
ANSWER when the last commit was a SELECT. Turns are counted as the environment counts them: every action is one
turn, ANSWER_WITH and ANSWER end the episode, and so does reaching T (then a final SELECT needs no ANSWER).

- *Reductions* (they bound the search, so a found trajectory is exact but "not found" is relative to them): when
  a missing gold unit is visible, the search first commits it -- each visible sentence that satisfies a missing
  unit, in visible order, is a branch (C_t's commit order and which sentence of a gold paragraph is committed both
  change m_t) -- then tries the LOOKUPs *without* committing (see *Deferred commits*); when none is visible, the
  LOOKUPs branch. Non-gold SELECTs are explored only by the second search (see *Detours*). When every missing
  unit is visible the episode closes: SELECTs, then one ANSWER_WITH of up to ``answer_with_max`` sentences (the
  menu's k, Harness-G §3.3 and appendix "Action inventory"), so n missing units take max(1, n - k + 1) turns; a state
  with fewer turns left than that is pruned.
- *Deferred commits*: a LOOKUP while a gold sentence is visible replaces U_t, so that sentence is lost unless a
  later LOOKUP shows it again -- which it often does: a bridge sentence names the bridge entity, so it sits in
  C(bridge) and ranks high by m_t. Then LOOKUP(bridge) followed by ANSWER_WITH(bridge sentence, answer sentence)
  commits both units in 2 turns where "SELECT, LOOKUP, ANSWER_WITH" takes 3 (the closing ANSWER_WITH commits up
  to k visible sentences in one turn, appendix "Action inventory"). Committing later also keeps that sentence out of m_t
  for the LOOKUPs in between. ``plan(defer=False)`` is the commit-first search (the ablation).
- *Iterative deepening* on the total number of turns: bound = the state's lower bound, then +1 up to T. The
  first trajectory found is therefore a shortest one of the search space, and a 2-turn solution is found before
  the search dives into 5-turn subtrees (a plain depth-first search spent its budget there).
- *Caches* (kept by a :class:`GoldSearch` across its searches: deepening iterations, the diagnostic search, and
  the oracle policy's re-plan every turn): each state's menu, reduced to its LOOKUP results, is built once
  (the ``budget`` counts these builds, "expansions"); a state is keyed by (C_t in commit order, because m_t
  concatenates it; U_t in order; V_t as a set, as the menu uses it), and a state proven to have no completion
  within r more turns is never searched again with <= r turns left.
- *Ordering*: LOOKUP branches are tried by promise: first those whose result (the menu's exact U_{t+1}, a
  read-only preview) holds the most missing gold units, then those whose uncapped candidate pool C(e) does,
  then the menu's own order (bridge first, similarity, id).
- *Lookahead pruning*: LOOKUP(e)'s result depends on C_t only (it ranks C(e) by m_t = concat(q, text(C_t)) and
  drops C_t; the menu merely decides whether e is offered), so the search computes and caches it per (C_t, e)
  without building menus. When the bound leaves exactly one more LOOKUP, some candidate entity of C_t ∪ U_t or
  of the question's targets (every one, not only the K_e the menu keeps) must show every missing unit; when it
  leaves two, some candidate's result must, after the search commits what it shows (in visible order) or,
  deferring, commits nothing, leave the rest to one candidate of the next state. Otherwise the state is pruned
  before its menu is built. This loses no trajectory of the search space except those that, between their last
  two LOOKUPs, commit only part of what the first shows or commit it in another order (each such order would need
  its own m_t encoded; a reduction).
  (The exploration behind the causes' details below skips it: those are read from the explored states.)
- *Detours*: committing a sentence that is not gold changes m_t = concat(q, text(C_t)), and so the ranking of
  every later LOOKUP: a director's biography can rank into the top K_s only once a sentence about the director is
  committed. When the gold-only search finds no trajectory, a second search (``plan(detours=d)``) also branches
  on up to d non-gold SELECTs per trajectory: at a state where no missing unit is visible, after its LOOKUPs;
  at a state where some is, after committing it; each only while at least one LOOKUP still fits after it. Two
  detours in a row are tried in one order (ascending id). The lookahead pruning counts "a detour, then one
  LOOKUP" when two LOOKUP turns are left, so it stays exact. ``menu_reachability`` uses :data:`DETOURS`.
- *Partial plans*: while searching, the best trajectory prefix plus the closing commits of the gold units it
  makes visible (most units, then fewest turns, within T) is kept, for the oracle policy when no full plan is
  found.

Cost: the relaxed closure reads entity lists and candidate pools through the view's caches (the
whole graph at most once per process); the extended search and the exploration run only for
'unreachable' verdicts that the static checks did not explain, and reuse the main search's menus.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

import numpy as np

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.gold import Unit, gold_units
from harness_g.agent.env.graph_view import EntityInfo, GraphView
from harness_g.agent.env.menu import build_menu, lookup_pools, lookup_results_for, text_key
from harness_g.agent.env.menu_env import committed_query, init_retrieve, question_targets
from harness_g.agent.env.transition import MenuState, transition
from harness_g.graph.types import QAItem, paragraph_of

_CHUNK = 512  # ids per store round trip in the relaxed closure
#: non-gold SELECTs ("detours") a trajectory may use when the gold-only search finds none: 1 made 1 / 3 / 6 more
#: HotpotQA / 2Wiki / MuSiQue dev questions reachable; 2 and 3 found no more, at up to 2.8x the search time
DETOURS = 1

#: one trajectory step: (SELECT, (sid,)), (LOOKUP, (entity_id,)), (ANSWER_WITH, (sid, ...)) or (ANSWER, ())
Step = tuple[ActionType, tuple[str, ...]]


@dataclass(frozen=True)
class GoldPlan:
    """What :meth:`GoldSearch.plan` found from one state.

    ``status``: 'reachable' (``path`` commits every gold unit), 'unreachable' (none within T under the search's
    reductions), 'unknown' (budget hit first) or 'no_gold'. ``path``: the full plan when reachable, else the
    best partial plan found (it commits ``committed_units`` gold units; ``(ANSWER,)`` alone when it commits none);
    every path ends the episode (ANSWER_WITH, ANSWER, or turn T). ``min_turns``: the environment's turn count
    after the step that commits the last gold unit (reachable only). ``expansions``: menus built by this plan.
    ``visible_units`` / ``pool_units``: unit indices seen visible / in an uncapped candidate pool in some
    explored state (only with ``diagnose``).
    """

    status: str
    path: tuple[Step, ...]
    units: int
    committed_units: int
    min_turns: int | None
    expansions: int
    visible_units: frozenset[int] = frozenset()
    pool_units: frozenset[int] = frozenset()

    @property
    def turns(self) -> int:
        """Turns ``path`` takes."""
        return len(self.path)


def in_graph(view: GraphView, unit: Unit) -> bool:
    """Whether some sentence of the graph satisfies the unit."""
    if isinstance(unit, str):
        return unit in view.row_of
    return bool(view.paragraph_sentences(sorted(unit)))


def _satisfies(sid: str, unit: Unit) -> bool:
    return sid == unit if isinstance(unit, str) else paragraph_of(sid) in unit


def _commit_turns(n_units: int, answer_with_max: int = 1) -> int:
    """Fewest turns that commit ``n_units`` (>= 1) gold units: one SELECT per unit, except that the closing
    ANSWER_WITH commits up to ``answer_with_max`` visible sentences at once."""
    return max(1, n_units - answer_with_max + 1)


def relaxed_depths(view: GraphView, units: Sequence[Unit], start: Sequence[str], *,
                   cfg: EnvConfig, visited: Iterable[str] = (),
                   question_targets: Sequence[str] = ()) -> list[int | None]:
    """Per gold unit, the fewest LOOKUP rounds after which the relaxed closure (module docstring) holds a
    sentence satisfying it: 0 when ``start`` (U_0, or C_t ∪ U_t) does, None when the closure never does.
    ``visited``: entities never looked up again (V_t), so the closure from a later state stays an over-approximation.
    ``cfg``: the environment whose pools (``menu.lookup_pools``: with ``EnvConfig.article_pool``, titled articles
    too) the closure reads, as its menus do.
    ``question_targets``: the question's entities (``EnvConfig.question_lookups``), LOOKUP targets from the first
    round on."""
    depth: list[int | None] = [0 if any(_satisfies(s, u) for s in start) else None for u in units]
    reached = set(start)
    frontier = list(dict.fromkeys(start))
    seen_entities: set[str] = set(visited)
    level = 0
    first = [e for e in dict.fromkeys(question_targets) if e not in seen_entities]
    seen_entities.update(first)
    while (frontier or first) and any(d is None for d in depth):
        new_entities: list[str] = first
        first = []
        for i in range(0, len(frontier), _CHUNK):
            for ents in view.entities_of(frontier[i : i + _CHUNK]).values():
                for e in ents:
                    if e.lookupable and e.id not in seen_entities:
                        seen_entities.add(e.id)
                        new_entities.append(e.id)
        if not new_entities:
            break
        level += 1
        frontier = []
        for i in range(0, len(new_entities), _CHUNK):
            pools = lookup_pools(view, new_entities[i : i + _CHUNK], cfg)
            for eid in new_entities[i : i + _CHUNK]:
                for sid in pools.get(eid, ()):
                    if sid not in reached:
                        reached.add(sid)
                        frontier.append(sid)
        for k, u in enumerate(units):
            if depth[k] is None and any(_satisfies(s, u) for s in frontier):
                depth[k] = level
    return depth


def feasible_units(view: GraphView, units: Sequence[Unit], start: Sequence[str], *, cfg: EnvConfig,
                   question_targets: Sequence[str] = ()) -> list[Unit]:
    """The units some trajectory from ``start`` (U_0) could commit: in the graph and inside the relaxed closure;
    no trajectory ever commits the others (``gold_absent`` / ``no_entity_path``)."""
    present = [u for u in units if in_graph(view, u)]
    if not present:
        return []
    depths = relaxed_depths(view, present, start, cfg=cfg, question_targets=question_targets)
    return [u for u, d in zip(present, depths) if d is not None]


# -- the search ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _State(MenuState):
    """A search node: z_t without the question (harness-g.tex, section "Retrieval as Menu Navigation"), plus how many
    non-gold SELECTs led to it; its steps are :func:`~harness_g.agent.env.transition.transition`'s (the search bounds
    the turns itself, so it passes no T)."""

    detours: int = 0  # non-gold SELECTs on the path to this state (not part of the key: z_t does not hold it)
    last_detour: str = ""  # the sentence of the step into this state when that step was a non-gold SELECT

    @property
    def key(self) -> tuple:
        # C_t in commit order (m_t concatenates it), U_t in order, V_t as a set (the menu reads it as one)
        return (self.committed, self.visible, frozenset(self.visited))

    def select(self, sid: str) -> "_State":
        """SELECT(s): C_{t+1} = C_t ∪ {s}, s leaves U_t."""
        return replace(transition(self, (ActionType.SELECT, (sid,))), last_detour="")

    def detour(self, sid: str) -> "_State":
        """SELECT(s) of a sentence that satisfies no missing unit: it only changes m_t for the LOOKUPs after it."""
        return replace(self.select(sid), detours=self.detours + 1, last_detour=sid)

    def lookup(self, eid: str, result: tuple[str, ...]) -> "_State":
        """LOOKUP(e): U_{t+1} = the menu's result for e, e joins V_t."""
        return replace(transition(self, (ActionType.LOOKUP, (eid,)), result), last_detour="")


@dataclass
class _Run:
    """One :meth:`GoldSearch.plan` call's bookkeeping (the caches live on the GoldSearch)."""

    budget: int
    max_turns: int
    diagnose: bool
    detours: int = 0  # non-gold SELECTs a trajectory may use (0: the gold-only search)
    defer: bool = True  # LOOKUPs while a missing gold unit is visible (module docstring, "Deferred commits")
    spent: int = 0
    exhausted: bool = False
    stack: list[Step] = field(default_factory=list)  # steps from the plan's start to the current node
    partial: tuple[int, int] = (-1, 0)  # (gold units committed, -turns) of the best partial plan so far
    partial_path: tuple[Step, ...] = ()
    failed: dict[tuple, int] = field(default_factory=dict)  # the proven failures this run reads and extends
    visible_units: set[int] = field(default_factory=set)
    pool_units: set[int] = field(default_factory=set)
    noted: set = field(default_factory=set)


@dataclass
class _Shared:
    """The caches that do not depend on the goal units: one question's menus and LOOKUP results, shared by a
    :class:`GoldSearch` and the searches :meth:`GoldSearch.for_units` derives from it."""

    q_vec: np.ndarray
    visible0: tuple[str, ...] | None = None
    question_targets: tuple[EntityInfo, ...] | None = None  # the question's LOOKUP targets (env.question_targets)
    menus: dict[tuple, tuple[tuple[str, tuple[str, ...]], ...]] = field(default_factory=dict)  # state -> ((e, U'), ...)
    results: dict[tuple, tuple[str, ...]] = field(default_factory=dict)  # (C_t, entity) -> LOOKUP(entity)'s U_{t+1}
    queries: dict[tuple[str, ...], tuple[np.ndarray, set[str]]] = field(default_factory=dict)  # C_t -> (m_t, text keys)
    entities: dict[str, tuple[str, ...]] = field(default_factory=dict)  # sentence -> its lookup-able entities
    expansions: int = 0  # menus built


class GoldSearch:
    """Shortest gold-committing trajectories for one question (module docstring: "The search").

    Reusable: menus, candidate pools and proven failures are cached across :meth:`plan` calls, so re-planning
    from a state on (or near) an earlier plan costs no new menu. ``units``: the gold units to commit (default:
    the item's); ``answer_with_max``: the closing ANSWER_WITH's k (default: the config's; 0 when ANSWER_WITH is
    off). :attr:`env_config` is the configuration under which the paths are executed by ``MenuEnv``.
    """

    def __init__(self, view: GraphView, item: QAItem, cfg: EnvConfig | None = None, *,
                 answer_with_max: int | None = None, units: Sequence[Unit] | None = None, _shared: _Shared | None = None):
        self.view, self.item = view, item
        self.cfg = cfg or EnvConfig()
        if answer_with_max is None:  # the environment's own cap (appendix "Action inventory"); 0: ANSWER_WITH off
            answer_with_max = self.cfg.answer_with_max if self.cfg.answer_with else 0
        self.awm = answer_with_max
        # LOOKUP results do not depend on the ANSWER_WITH entries, so an explicit k models this environment
        self.env_config = self.cfg if (self.cfg.answer_with_max if self.cfg.answer_with else 0) == self.awm else \
            replace(self.cfg, answer_with=self.awm > 0, answer_with_max=max(self.awm, 1))
        if units is None:
            units = gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)
        self.units: list[Unit] = list(units)
        self._shared = _shared or _Shared(view.encode([item.question])[0])
        self.q_vec = self._shared.q_vec
        # (state key, non-gold SELECTs still allowed, last detour) -> most turns left proven not to suffice
        self._failed: dict[tuple, int] = {}
        self._pool_hits: dict[str, frozenset[int]] = {}  # entity -> units its uncapped pool C(e) satisfies
        self._result_hits: dict[tuple, frozenset[int]] = {}  # (C_t, entity) -> the units LOOKUP(entity) shows
        self._sentence_hits: dict[str, frozenset[int]] = {}  # sentence -> the units it satisfies

    def for_units(self, units: Sequence[Unit]) -> "GoldSearch":
        """A search for another goal (e.g. a subset of the units) on this question, sharing the menus built so far."""
        return GoldSearch(self.view, self.item, self.cfg, answer_with_max=self.awm, units=units, _shared=self._shared)

    @property
    def expansions(self) -> int:
        """Menus built for this question, over all plans of this search and of those sharing its menus."""
        return self._shared.expansions

    # -- unit bookkeeping ------------------------------------------------------------------------------------
    @property
    def question_targets(self) -> tuple[EntityInfo, ...]:
        """The question's entities that stay LOOKUP targets (``EnvConfig.question_lookups``), as ``MenuEnv.reset``
        computes them."""
        if self._shared.question_targets is None:
            self._shared.question_targets = tuple(question_targets(self.view, self.item.question, self.cfg))
        return self._shared.question_targets

    @property
    def question_target_ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.question_targets)

    def initial_visible(self) -> tuple[str, ...]:
        """U_0 = InitRetrieve(q; G), exactly as ``MenuEnv.reset`` computes it."""
        if self._shared.visible0 is None:
            self._shared.visible0 = tuple(init_retrieve(self.view, self.item.question, self.q_vec, self.cfg))
        return self._shared.visible0

    def hits(self, sentence_ids: Iterable[str]) -> frozenset[int]:
        """Indices of the units some of ``sentence_ids`` satisfies (per-sentence answers cached)."""
        out: frozenset[int] = frozenset()
        for sid in sentence_ids:
            found = self._sentence_hits.get(sid)
            if found is None:
                found = self._sentence_hits[sid] = frozenset(k for k, u in enumerate(self.units) if _satisfies(sid, u))
            if found:
                out |= found
        return out

    def missing(self, committed: Sequence[str]) -> frozenset[int]:
        """Indices of the units ``committed`` (C_t) does not satisfy."""
        return frozenset(range(len(self.units))) - self.hits(committed)

    def _need(self, n_missing: int) -> int:
        return _commit_turns(n_missing, max(self.awm, 1))

    def commit_steps(self, visible: Sequence[str], missing: frozenset[int], left: int) -> tuple[list[Step], int]:
        """The fewest steps that commit the most ``missing`` units ``visible`` satisfies within ``left`` turns, and
        how many units they commit: SELECTs, then one ANSWER_WITH of up to k sentences in visible order (the
        menu lists every such subset in that order, Harness-G §3.3); with ANSWER_WITH off, SELECTs only."""
        picks = list(self._visible_picks(visible, missing))
        if left <= 0 or not picks:
            return [], 0
        if self.awm == 0:
            picks = picks[:left]
            return [(ActionType.SELECT, (s,)) for s in picks], len(picks)
        picks = picks[: left - 1 + self.awm]
        closing = min(len(picks), self.awm)
        steps: list[Step] = [(ActionType.SELECT, (s,)) for s in picks[: len(picks) - closing]]
        steps.append((ActionType.ANSWER_WITH, tuple(picks[len(picks) - closing:])))
        return steps, len(picks)

    def _consider_partial(self, run: _Run, st: _State, missing: frozenset[int]) -> None:
        """Keep the plan "reach ``st``, then commit what is visible" when it commits the most units so far."""
        steps, gained = self.commit_steps(st.visible, missing, run.max_turns - st.turn)
        score = (len(self.units) - len(missing) + gained, -(st.turn + len(steps)))
        if score > run.partial:  # ties: the first found (deepening order) stays
            run.partial, run.partial_path = score, (*run.stack, *steps)

    def _dfs(self, run: _Run, st: _State, bound: int) -> list[Step] | None:
        """Steps from ``st`` that commit every gold unit by turn ``bound``, or None (none found, or budget hit)."""
        missing = self.missing(st.committed)
        if not missing:
            return []
        self._consider_partial(run, st, missing)
        left = bound - st.turn
        # what the subtree may still do depends on the detours left, the last detour and whether commits may wait
        key = (st.key, run.detours - st.detours, st.last_detour, run.defer)
        if left < self._need(len(missing)) or run.failed.get(key, -1) >= left:
            return None
        if run.spent >= run.budget:
            run.exhausted = True
            return None
        if run.diagnose and st.key not in run.noted:
            run.noted.add(st.key)
            self._note(run, st, missing)
        found = self._expand(run, st, missing, bound)
        if found is None and not run.exhausted:  # a complete failure: never search this state again with <= left turns
            run.failed[key] = max(run.failed.get(key, -1), left)
        return found

    def _expand(self, run: _Run, st: _State, missing: frozenset[int], bound: int) -> list[Step] | None:
        """The branches of ``st``: close (all missing units visible); commit a visible sentence of a missing unit
        (each, in visible order); each offered LOOKUP by promise (while a missing unit is visible only when the run
        defers commits), when the lookahead does not rule them out; then, when the run allows them, each detour (a
        non-gold SELECT)."""
        need = self._need(len(missing))
        visible_hits = self.hits(st.visible) & missing
        if visible_hits == missing:  # everything visible: the closing commits take exactly `need` turns
            return self.commit_steps(st.visible, missing, bound - st.turn)[0]
        lookups_left = bound - st.turn - need
        for sid in [s for s in st.visible if self.hits([s]) & missing]:  # empty when no missing unit is visible
            found = self._child(run, st.select(sid), (ActionType.SELECT, (sid,)), bound)
            if found is not None or run.exhausted:
                return found
        if not visible_hits or run.defer:
            # the diagnostic exploration visits every state within its bound: the causes are read from explored states
            feasible = lookups_left >= 1 and (run.diagnose or self._lookups_can_finish(run, st, missing, lookups_left))
            if not feasible and not visible_hits:
                return None  # no detour can help either: it needs a LOOKUP after it
            for eid, result in self._lookup_order(run, st, missing) if feasible else ():
                found = self._child(run, st.lookup(eid, result), (ActionType.LOOKUP, (eid,)), bound)
                if found is not None or run.exhausted:
                    return found
        # a detour takes a turn, and a missing unit is not visible: at least one LOOKUP must follow it
        if lookups_left >= 2:
            for sid in self._detours(run, st, missing):
                found = self._child(run, st.detour(sid), (ActionType.SELECT, (sid,)), bound)
                if found is not None or run.exhausted:
                    return found
        return None

    def _detours(self, run: _Run, st: _State, missing: frozenset[int]) -> list[str]:
        """The non-gold SELECTs the search tries at ``st``: every visible sentence that satisfies no missing unit, in
        visible order, while the run allows another detour; right after a detour only sentences with a greater id,
        so two detours in a row are tried in one order (a reduction: the other order concatenates m_t differently)."""
        if st.detours >= run.detours:
            return []
        return [sid for sid in st.visible if sid > st.last_detour and not self.hits([sid]) & missing]

    def _child(self, run: _Run, child: _State, step: Step, bound: int) -> list[Step] | None:
        run.stack.append(step)
        try:
            rest = self._dfs(run, child, bound)
        finally:
            run.stack.pop()
        return None if rest is None else [step, *rest]

    # -- menus and pools -------------------------------------------------------------------------------------
    def _candidates(self, st: _State) -> list[str]:
        """Every lookup-able entity of C_t ∪ U_t and of the question's targets not in V_t: a superset of the menu's
        LOOKUP targets (before K_e)."""
        return self._candidates_of(st.committed, st.visible, st.visited)

    def _candidates_of(self, committed: Sequence[str], visible: Sequence[str], visited: Iterable[str]) -> list[str]:
        sids = [*committed, *visible]
        known = self._shared.entities
        todo = [s for s in sids if s not in known]
        if todo:
            fetched = self.view.entities_of(todo)
            for sid in todo:
                known[sid] = tuple(e.id for e in fetched.get(sid, ()) if e.lookupable)
        seen = set(visited)
        out: list[str] = []
        for eid in itertools.chain((e for sid in sids for e in known[sid]), self.question_target_ids):
            if eid not in seen:
                seen.add(eid)
                out.append(eid)
        return out

    def _pool_hits_of(self, entity_ids: Sequence[str]) -> dict[str, frozenset[int]]:
        """Per entity, the units its uncapped candidate pool C(e) satisfies (cached)."""
        todo = [e for e in entity_ids if e not in self._pool_hits]
        if todo:
            pools = lookup_pools(self.view, todo, self.cfg)
            for e in todo:
                self._pool_hits[e] = self.hits(pools.get(e, ()))
        return {e: self._pool_hits[e] for e in entity_ids}

    def _lookups_can_finish(self, run: _Run, st: _State, missing: frozenset[int], lookups_left: int) -> bool:
        """Whether ``lookups_left`` (1 or 2; more: not checked) LOOKUPs could make every missing unit visible (one
        visible now included: the first LOOKUP replaces U_t, so a deferred unit must be shown again), counting every
        candidate entity of C_t ∪ U_t as offered (the menu keeps at most K_e of them). With 2 turns for LOOKUPs and a
        detour allowed, a detour and one LOOKUP may also do it."""
        if lookups_left > 2 or self._can_finish(st.committed, st.visible, st.visited, missing, lookups_left, run.defer):
            return True
        return lookups_left == 2 and any(
            self._can_finish(st.committed + (sid,), tuple(s for s in st.visible if s != sid), st.visited, missing, 1,
                             run.defer)
            for sid in self._detours(run, st, missing))

    def _can_finish(self, committed: tuple[str, ...], visible: tuple[str, ...], visited: tuple[str, ...],
                    missing: frozenset[int], lookups_left: int, defer: bool) -> bool:
        """Some candidate's exact result (which depends on C_t only: :meth:`_result`) shows every missing unit, or
        shows some, which the search commits (gold-first, visible order) -- or, with ``defer``, leaves visible --
        and ``lookups_left - 1`` more do the rest."""
        candidates = self._candidates_of(committed, visible, visited)
        if lookups_left == 1:  # the result is part of the pool C(e): a pool without every missing unit cannot do it,
            # and skipping it skips encoding this C_t's m_t (each detour's state has a new one)
            pool_hits = self._pool_hits_of(candidates)
            candidates = [e for e in candidates if missing <= pool_hits[e]]
        for eid in candidates:
            result, result_hits = self._result(committed, eid)
            got = result_hits & missing
            if got == missing:
                return True
            if lookups_left > 1:
                picks = self._visible_picks(result, got)
                rest = tuple(s for s in result if s not in picks)
                if self._can_finish(committed + picks, rest, visited + (eid,), missing - got, lookups_left - 1, defer):
                    return True
                if defer and got and self._can_finish(committed, result, visited + (eid,), missing, lookups_left - 1,
                                                      defer):
                    return True
        return False

    def _visible_picks(self, visible: Sequence[str], units: frozenset[int]) -> tuple[str, ...]:
        """The first visible sentence of each of ``units``, in visible order (what gold-first SELECTs commit; a
        sentence satisfies at most one unit: units are distinct sentences or distinct paragraphs)."""
        picks: list[str] = []
        done: set[int] = set()
        for sid in visible:
            new = (self.hits([sid]) & units) - done
            if new:
                picks.append(sid)
                done |= new
        return tuple(picks)

    def _result(self, committed: tuple[str, ...], entity_id: str) -> tuple[tuple[str, ...], frozenset[int]]:
        """LOOKUP(e)'s exact U_{t+1} given C_t and the units it shows (cached): the menu's result for e whenever the
        menu offers e, since it ranks C(e) by m_t = concat(q, text(C_t)) and removes C_t (menu.lookup_result)."""
        key = (committed, entity_id)
        result = self._shared.results.get(key)
        if result is None:
            m_vec, keys = self._query(committed)
            result = self._shared.results[key] = lookup_results_for(self.view, [entity_id], m_vec, set(committed),
                                                                    keys, self.cfg)[entity_id]
        found = self._result_hits.get(key)
        if found is None:
            found = self._result_hits[key] = self.hits(result)
        return result, found

    def _query(self, committed: tuple[str, ...]) -> tuple[np.ndarray, set[str]]:
        """m_t's vector and C_t's text keys (cached per C_t in commit order)."""
        found = self._shared.queries.get(committed)
        if found is None:
            m_text, texts = committed_query(self.view, self.item.question, committed, self.cfg.query_max_words)
            found = (self.view.encode([m_text])[0], {text_key(t) for t in texts})
            self._shared.queries[committed] = found
        return found

    def _menu(self, run: _Run, st: _State) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """The LOOKUPs of the real menu at ``st``, in menu order, with their exact U_{t+1} (one expansion, cached)."""
        key = st.key
        found = self._shared.menus.get(key)
        if found is None:
            run.spent += 1
            self._shared.expansions += 1
            menu = build_menu(self.view, question_vec=self.q_vec, m_vec=self._query(st.committed)[0],
                              committed=st.committed, visible=st.visible, visited=st.visited, cfg=self.cfg,
                              question_targets=self.question_targets)
            found = tuple((e.id, menu.lookup_results[e.id]) for e in menu.entities)
            self._shared.menus[key] = found
        return found

    def _lookup_order(self, run: _Run, st: _State, missing: frozenset[int]) -> list[tuple[str, tuple[str, ...]]]:
        """The menu's LOOKUPs by promise: most missing units in the result, then in the uncapped pool, then menu order."""
        entries = self._menu(run, st)
        pool_hits = self._pool_hits_of([e for e, _ in entries])

        def promise(i: int) -> tuple[int, int, int]:
            eid, result = entries[i]
            return (-len(self.hits(result) & missing), -len(pool_hits[eid] & missing), i)

        return [entries[i] for i in sorted(range(len(entries)), key=promise)]

    def _note(self, run: _Run, st: _State, missing: frozenset[int]) -> None:
        """Diagnostics: missing units visible here, and missing units in a candidate's uncapped pool here."""
        run.visible_units |= self.hits(st.visible) & missing
        if missing - run.pool_units:
            for hit in self._pool_hits_of(self._candidates(st)).values():
                run.pool_units |= hit & missing

    # -- the entry point -------------------------------------------------------------------------------------
    def plan(self, committed: Sequence[str] = (), visible: Sequence[str] | None = None, visited: Sequence[str] = (),
             turns: int = 0, *, budget: int = 400, max_turns: int | None = None, diagnose: bool = False,
             detours: int = 0, defer: bool = True) -> GoldPlan:
        """A shortest trajectory from the state (C_t = ``committed`` in commit order, U_t = ``visible``, default U_0;
        V_t = ``visited``; ``turns`` used) that commits every unit by turn ``max_turns`` (default T), by iterative
        deepening on the turn bound. ``budget``: new menus this call may build. ``diagnose``: instead, explore every
        state within ``max_turns`` (no lookahead pruning, none of the failures earlier plans proved, no deepening)
        and report the units seen visible / in an uncapped candidate pool (the causes' details). ``detours``: non-gold
        SELECTs a trajectory may use; ``defer``: LOOKUPs while a missing gold unit is visible (module docstring)."""
        run = _Run(budget, self.cfg.max_turns if max_turns is None else max_turns, diagnose, 0 if diagnose else detours,
                   defer)
        if not diagnose:
            run.failed = self._failed  # shared by every plan of this search
        st = _State(tuple(committed), tuple(self.initial_visible() if visible is None else visible), tuple(visited), turns)
        if not self.units:
            return GoldPlan("no_gold", self._finish((), turns, run.max_turns), 0, 0, None, 0)
        missing = self.missing(st.committed)
        found: list[Step] | None = [] if not missing else None
        if missing:
            self._consider_partial(run, st, missing)  # even when no bound fits: commit what is visible
            hidden = int(not missing <= self.hits(st.visible))  # at least one LOOKUP before the last commit
            first = run.max_turns if diagnose else turns + self._need(len(missing)) + hidden
            for bound in range(first, run.max_turns + 1):
                found = self._dfs(run, st, bound)
                if found is not None or run.exhausted:
                    break
        diag = (frozenset(run.visible_units), frozenset(run.pool_units))
        if found is not None:
            path = self._finish(tuple(found), turns, run.max_turns)
            return GoldPlan("reachable", path, len(self.units), len(self.units), turns + len(found), run.spent, *diag)
        status = "unknown" if run.exhausted else "unreachable"
        units_done = max(run.partial[0], len(self.units) - len(missing))
        path = self._finish(run.partial_path, turns, run.max_turns)
        return GoldPlan(status, path, len(self.units), units_done, None, run.spent, *diag)

    @staticmethod
    def _finish(steps: tuple[Step, ...], turns: int, max_turns: int) -> tuple[Step, ...]:
        """Close the episode: an ANSWER after a SELECT/LOOKUP (or alone), unless the last step reaches turn T."""
        ends = bool(steps) and steps[-1][0] in (ActionType.ANSWER_WITH, ActionType.ANSWER)
        if ends or turns + len(steps) >= max_turns:
            return steps
        return (*steps, (ActionType.ANSWER, ()))


def shortest_gold_trajectory(view: GraphView, item: QAItem, cfg: EnvConfig | None = None, *, committed: Sequence[str] = (),
                             visible: Sequence[str] | None = None, visited: Sequence[str] = (), turns: int = 0,
                             budget: int = 400) -> GoldPlan:
    """A shortest trajectory committing ``item``'s gold units from the given state (default: the episode start,
    U_0 = InitRetrieve) within ``cfg.max_turns``; see :class:`GoldPlan`. For repeated calls on one question keep
    a :class:`GoldSearch` (its caches make re-planning cheap)."""
    return GoldSearch(view, item, cfg).plan(committed, visible, visited, turns, budget=budget)
