"""Menu reachability: can every gold evidence unit be committed within T turns by *some* policy?
And when not, why not.

**The verdict** (``status``) comes from a bounded depth-first search over the real menus (the same
``build_menu`` the environment uses). Two reductions keep it small: (1) when a gold sentence is
visible, committing it is the only branch explored (committing gold is required anyway; it can
change later lookup rankings, so this is a heuristic -- a "reachable" verdict is exact, an
"unreachable" one is with respect to this search); (2) non-gold SELECTs are never explored, so only
LOOKUPs branch. Each commit costs one turn (the last one can be ANSWER_WITH, which commits up to
``answer_with_max`` visible sentences at once: 1 unless the caller passes the environment's cap), so
a state with fewer turns left than the commits it still needs is pruned. ``status`` is 'reachable',
'unreachable', 'unknown' (the search hit its expansion budget) or 'no_gold'.

**The cause** of every non-reachable verdict (``cause``; None when reachable or without gold) is
decided by cheap checks in this order, the first that applies wins:

``gold_absent``
    some gold unit is satisfied by no sentence of the graph (e.g. a gold id the corpus lacks). Exact.
``no_entity_path``
    the *relaxed closure* never reaches some gold unit. The relaxed closure starts from U_0 and
    repeatedly adds the full, uncapped candidate pool C(e) = S(e) ∪ S(Syn(e)) ∪ N_SS(S(e)) of every
    lookup-able entity mentioned by any sentence reached so far: no lookup_pool_cap, no K_s, no K_e,
    no turn limit, and visible sets accumulate instead of being replaced. Every real trajectory
    stays inside it, so this is a proof that no sequence of LOOKUPs, under any caps and any T, ever
    makes that unit a candidate (U_0 itself, InitRetrieve's output, is taken as given: a gold
    sentence that only InitRetrieve with other settings could surface counts here).
``turn_budget``
    reachable only with more than T turns: either (a) the relaxed closure reaches every unit, but
    the deepest unit needs d LOOKUPs and d + (the commit turns) > T -- a proof, even without
    caps (``detail='relaxed'``, ``needed_turns`` = that lower bound); or (b) the capped search finds
    a trajectory with T < turns <= T + ``extra_turns`` (``detail='capped'``, ``needed_turns`` = its
    length). A question that would need more than T + extra_turns under the caps is not found by
    (b) and ends up as ``pool_or_rank_cap``.
``search_budget``
    the capped search at T hit its expansion budget before deciding (status 'unknown') and neither
    proof above applies. Nothing is known beyond "not found within the budget".
``pool_or_rank_cap``
    the capped search at T is exhausted without success, the relaxed closure says T turns would do
    without caps, and the search with T + extra_turns does not succeed either. So what separates
    the question from its evidence is the caps (lookup_pool_cap, ranking into the top K_s of a
    LOOKUP, K_e, text de-duplication) together with LOOKUP *replacing* the visible set.
    ``detail`` says where, from the extended search's explored states: ``gold_cut`` -- a missing
    unit's sentence was in the uncapped pool of a LOOKUP candidate entity (offered, or cut by K_e or
    merged away) of some explored state but never became visible; ``upstream`` -- no explored state
    had it even in a pool (the bridge sentences that lead to it were cut); ``combination`` -- every
    unit was visible in some explored state but no trajectory collects them all.
    Limits: the search's reductions (gold-first commits, no non-gold SELECTs) and, when the extended
    search hits its budget, the partial exploration both mean this is "not found", not a proof.

Cost: the relaxed closure reads entity lists and candidate pools through the view's caches (the
whole graph at most once per process); the extended search runs only for 'unreachable' verdicts
that the static checks did not explain.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from harness_g.agent.config import EnvConfig
from harness_g.agent.env import init_retrieve
from harness_g.agent.graph_view import GraphView
from harness_g.agent.menu import build_menu
from harness_g.agent.metrics import gold_units, unit_satisfied
from harness_g.agent.retrieval import lookup_query
from harness_g.graph.types import QAItem

CAUSES: tuple[str, ...] = ("gold_absent", "no_entity_path", "pool_or_rank_cap", "turn_budget", "search_budget")
_CHUNK = 512  # ids per store round trip in the relaxed closure


@dataclass(frozen=True)
class Reachability:
    """``status``: 'reachable', 'unreachable', 'unknown' (node budget hit) or 'no_gold'.

    ``cause``: one of :data:`CAUSES` for 'unreachable'/'unknown', else None (see the module docstring);
    ``detail``: the sub-case of the cause ('' when none); ``needed_turns``: for ``turn_budget``, the
    turns the question needs (a lower bound for detail 'relaxed', a found trajectory's length for 'capped').
    """

    status: str
    min_turns: int | None
    expansions: int
    gold_units: int
    initially_visible: int  # gold units satisfied by some sentence of U_0
    cause: str | None = None
    detail: str = ""
    needed_turns: int | None = None

    @property
    def reachable(self) -> bool | None:
        return {"reachable": True, "unreachable": False}.get(self.status)


def _in_graph(view: GraphView, unit: frozenset[str] | str) -> bool:
    """Whether some sentence of the graph satisfies the unit."""
    if isinstance(unit, str):
        return unit in view.row_of
    return bool(view.paragraph_sentences(sorted(unit)))


def _satisfies(sid: str, unit: frozenset[str] | str) -> bool:
    return sid == unit if isinstance(unit, str) else sid.rsplit(":", 1)[0] in unit


def _commit_turns(n_units: int, answer_with_max: int = 1) -> int:
    """Fewest turns that commit ``n_units`` (>= 1) gold units: one SELECT per unit, except that the closing
    ANSWER_WITH commits up to ``answer_with_max`` visible sentences at once."""
    return max(1, n_units - answer_with_max + 1)


def relaxed_depths(view: GraphView, units: Sequence[frozenset[str] | str], start: Sequence[str]) -> list[int | None]:
    """Per gold unit, the fewest LOOKUP rounds after which the relaxed closure (module docstring) holds a
    sentence satisfying it: 0 when ``start`` (U_0) does, None when the closure never does."""
    depth: list[int | None] = [0 if any(_satisfies(s, u) for s in start) else None for u in units]
    reached = set(start)
    frontier = list(dict.fromkeys(start))
    seen_entities: set[str] = set()
    level = 0
    while frontier and any(d is None for d in depth):
        new_entities: list[str] = []
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
            pools = view.lookup_pools(new_entities[i : i + _CHUNK])
            for eid in new_entities[i : i + _CHUNK]:
                for sid in pools.get(eid, ()):
                    if sid not in reached:
                        reached.add(sid)
                        frontier.append(sid)
        for k, u in enumerate(units):
            if depth[k] is None and any(_satisfies(s, u) for s in frontier):
                depth[k] = level
    return depth


@dataclass
class _Search:
    best: int | None = None
    expansions: int = 0
    visible_units: set[int] | None = None  # diagnostic: units visible in some explored state
    pool_units: set[int] | None = None  # diagnostic: units in an uncapped candidate pool of an explored state


def _search(view: GraphView, item: QAItem, units: list, q_vec, visible0: Sequence[str], cfg: EnvConfig, max_turns: int,
            budget: int, diagnose: bool, answer_with_max: int = 1) -> _Search:
    st = _Search(visible_units=set() if diagnose else None, pool_units=set() if diagnose else None)
    seen: set = set()

    def note(visible: Sequence[str], committed: Sequence[str], visited: Sequence[str], missing_idx: list[int]) -> None:
        assert st.visible_units is not None and st.pool_units is not None
        for k in missing_idx:
            if any(_satisfies(s, units[k]) for s in visible):
                st.visible_units.add(k)
        todo = [k for k in missing_idx if k not in st.pool_units]
        if not todo:
            return
        visited_set = set(visited)
        ents = view.entities_of(list(committed) + list(visible))
        cand = list(dict.fromkeys(e.id for es in ents.values() for e in es if e.lookupable and e.id not in visited_set))
        if not cand:
            return
        pools = view.lookup_pools(cand)
        for k in todo:
            if any(_satisfies(s, units[k]) for e in cand for s in pools.get(e, ())):
                st.pool_units.add(k)

    def search(committed: tuple[str, ...], visible: tuple[str, ...], visited: tuple[str, ...], turns: int) -> None:
        missing_idx = [k for k, u in enumerate(units) if not unit_satisfied(u, committed)]
        if not missing_idx:
            st.best = turns if st.best is None else min(st.best, turns)
            return
        missing = [units[k] for k in missing_idx]
        left = max_turns - turns
        need = _commit_turns(len(missing), answer_with_max)
        if left < need or (st.best is not None and turns + need >= st.best) or st.expansions >= budget:
            return
        key = (frozenset(committed), frozenset(visited), visible)
        if key in seen:
            return
        seen.add(key)
        if diagnose:
            note(visible, committed, visited, missing_idx)
        gold_visible = [s for s in visible if any(unit_satisfied(u, [s]) for u in missing)]
        if 1 < len(missing) <= answer_with_max and all(unit_satisfied(u, gold_visible) for u in missing):
            st.best = turns + 1 if st.best is None else min(st.best, turns + 1)  # one ANSWER_WITH commits them all
            return
        if gold_visible:
            sid = gold_visible[0]
            search(committed + (sid,), tuple(s for s in visible if s != sid), visited, turns + 1)
            return
        if left - 1 < need:  # a lookup turn plus the commits must fit
            return
        st.expansions += 1
        infos = view.sentences(list(committed))
        m_text = lookup_query(item.question, [infos[s].text for s in committed if s in infos], cfg.query_max_words)
        menu = build_menu(view, question_vec=q_vec, m_vec=view.encode([m_text])[0], committed=committed, visible=visible,
                          visited=visited, cfg=cfg)
        for entity in menu.entities:
            search(committed, menu.lookup_results[entity.id], visited + (entity.id,), turns + 1)

    search((), tuple(visible0), (), 0)
    return st


def menu_reachability(view: GraphView, item: QAItem, cfg: EnvConfig | None = None, *, budget: int = 400,
                      extra_turns: int = 4, answer_with_max: int = 1) -> Reachability:
    """Reachability of ``item``'s gold units within ``cfg.max_turns`` and, when not reachable, its cause.

    ``budget``: menu expansions per search; ``extra_turns``: how far beyond T the diagnostic search
    looks before a capped miss is called ``pool_or_rank_cap`` rather than ``turn_budget``;
    ``answer_with_max``: how many visible sentences the closing ANSWER_WITH may commit at once (1: the
    single-sentence ANSWER_WITH; pass the environment's cap when it offers the paper's multi-sentence one).
    """
    cfg = cfg or EnvConfig()
    units = gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)
    if not units:
        return Reachability("no_gold", None, 0, 0, 0)
    q_vec = view.encode([item.question])[0]
    visible0 = init_retrieve(view, item.question, q_vec, cfg)
    init_hits = sum(any(unit_satisfied(u, [s]) for s in visible0) for u in units)
    n = len(units)
    if not all(_in_graph(view, u) for u in units):  # a gold unit absent from the graph: no menu reaches it
        return Reachability("unreachable", None, 0, n, init_hits, "gold_absent")
    depths = relaxed_depths(view, units, visible0) if init_hits < n else [0] * n
    if any(d is None for d in depths):
        return Reachability("unreachable", None, 0, n, init_hits, "no_entity_path")
    lower = max(d for d in depths if d is not None) + _commit_turns(n, answer_with_max)
    if lower > cfg.max_turns:
        return Reachability("unreachable", None, 0, n, init_hits, "turn_budget", "relaxed", lower)

    main = _search(view, item, units, q_vec, visible0, cfg, cfg.max_turns, budget, False, answer_with_max)
    if main.best is not None:
        return Reachability("reachable", main.best, main.expansions, n, init_hits)
    if main.expansions >= budget:
        return Reachability("unknown", None, main.expansions, n, init_hits, "search_budget")
    diag = _search(view, item, units, q_vec, visible0, cfg, cfg.max_turns + extra_turns, budget, True, answer_with_max)
    if diag.best is not None:
        return Reachability("unreachable", None, main.expansions, n, init_hits, "turn_budget", "capped", diag.best)
    assert diag.visible_units is not None and diag.pool_units is not None
    never_visible = [k for k in range(n) if k not in diag.visible_units]
    if not never_visible:
        detail = "combination"
    elif any(k in diag.pool_units for k in never_visible):
        detail = "gold_cut"
    else:
        detail = "upstream"
    return Reachability("unreachable", None, main.expansions, n, init_hits, "pool_or_rank_cap", detail)
