"""Menu reachability: can every gold evidence unit be committed within T turns by *some* policy? How (the
trajectory), and when not, why not. The search itself is :class:`harness_g.agent.env.gold_search.GoldSearch` (its
module docstring: reductions, deferred commits, detours, pruning); this module turns it into a verdict and a cause.

**The verdict** of :func:`menu_reachability` (``status``) is that search from U_0: 'reachable' (``path`` is a
trajectory ``MenuEnv`` executes and ``min_turns`` the turn that commits the last unit), 'unreachable' (the search
space is exhausted without one), 'unknown' (the search hit its expansion budget) or 'no_gold'.

**The cause** of every non-reachable verdict (``cause``; None when reachable or without gold) is
decided by cheap checks in this order, the first that applies wins:

``gold_absent``
    some gold unit is satisfied by no sentence of the graph (e.g. a gold id the corpus lacks). Exact.
``no_entity_path``
    the *relaxed closure* never reaches some gold unit. The relaxed closure starts from U_0 and
    repeatedly adds the full, uncapped candidate pool C(e) = S(e) ∪ S(Syn(e)) ∪ N_SS(S(e)) (with
    ``EnvConfig.article_pool``, plus the sentences of the article e titles, as the menu's pools) of every
    lookup-able entity mentioned by any sentence reached so far (and, with ``EnvConfig.question_lookups``, of
    the entities the question names): no lookup_pool_cap, no K_s, no K_e,
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
    ``detail`` says where, from the states of an exhaustive exploration within T + extra_turns (no
    lookahead pruning, up to ``budget`` menus): ``gold_cut`` -- a missing
    unit's sentence was in the uncapped pool of a LOOKUP candidate entity (offered, or cut by K_e or
    merged away) of some explored state but never became visible; ``upstream`` -- no explored state
    had it even in a pool (the bridge sentences that lead to it were cut); ``combination`` -- every
    unit was visible in some explored state but no trajectory collects them all.
    Limits: the search's reductions (see *Reductions*; at most :data:`DETOURS` non-gold SELECTs; the
    longer and the diagnostic searches are gold-only) and, when the extended search hits its budget, the
    partial exploration both mean this is "not found", not a proof.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.gold import gold_units, unit_satisfied
from harness_g.agent.env.gold_search import DETOURS, GoldSearch, Step, in_graph, relaxed_depths
from harness_g.agent.env.graph_view import GraphView
from harness_g.graph.types import QAItem

CAUSES: tuple[str, ...] = ("gold_absent", "no_entity_path", "pool_or_rank_cap", "turn_budget", "search_budget")


@dataclass(frozen=True)
class Reachability:
    """``status``: 'reachable', 'unreachable', 'unknown' (node budget hit) or 'no_gold'.

    ``cause``: one of :data:`CAUSES` for 'unreachable'/'unknown', else None (see the module docstring);
    ``detail``: the sub-case of the cause ('' when none); ``needed_turns``: for ``turn_budget``, the
    turns the question needs (a lower bound for detail 'relaxed', a found trajectory's length for 'capped').
    ``path``: for 'reachable', the steps of a shortest trajectory found from U_0 (else ``()``); it takes
    ``min_turns`` turns, one more (its closing ANSWER) when ANSWER_WITH is off and min_turns < T.
    """

    status: str
    min_turns: int | None
    expansions: int
    gold_units: int
    initially_visible: int  # gold units satisfied by some sentence of U_0
    cause: str | None = None
    detail: str = ""
    needed_turns: int | None = None
    path: tuple[Step, ...] = ()

    @property
    def reachable(self) -> bool | None:
        return {"reachable": True, "unreachable": False}.get(self.status)


def menu_reachability(view: GraphView, item: QAItem, cfg: EnvConfig | None = None, *, budget: int = 400,
                      extra_turns: int = 4, answer_with_max: int | None = None, detours: int = DETOURS,
                      defer: bool = True) -> Reachability:
    """Reachability of ``item``'s gold units within ``cfg.max_turns`` and, when not reachable, its cause.

    ``budget``: menu expansions per search; ``extra_turns``: how far beyond T the diagnostic search
    looks before a capped miss is called ``pool_or_rank_cap`` rather than ``turn_budget``;
    ``answer_with_max``: how many visible sentences the closing ANSWER_WITH may commit at once (default: the
    environment's ``cfg.answer_with_max``, 0 when ANSWER_WITH is off; another value models
    ``GoldSearch.env_config``); ``detours``: the non-gold SELECTs a trajectory may use when the gold-only search
    finds none (module docstring, "Detours"; 0: gold-only); ``defer``: whether the searches may LOOKUP while a
    missing gold unit is visible and commit it when a later LOOKUP shows it again ("Deferred commits"; False: the
    commit-first search). A 'reachable' verdict's ``path`` is executed as is by ``MenuEnv``.
    """
    cfg = cfg or EnvConfig()
    units = gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)
    if not units:
        return Reachability("no_gold", None, 0, 0, 0)
    search = GoldSearch(view, item, cfg, answer_with_max=answer_with_max)
    visible0 = search.initial_visible()
    init_hits = sum(any(unit_satisfied(u, [s]) for s in visible0) for u in units)
    n = len(units)
    if not all(in_graph(view, u) for u in units):  # a gold unit absent from the graph: no menu reaches it
        return Reachability("unreachable", None, 0, n, init_hits, "gold_absent")
    depths = [0] * n if init_hits == n else relaxed_depths(view, units, visible0, cfg=cfg,
                                                           question_targets=search.question_target_ids)
    if any(d is None for d in depths):
        return Reachability("unreachable", None, 0, n, init_hits, "no_entity_path")
    lower = max(d for d in depths if d is not None) + search._need(n)
    if lower > cfg.max_turns:
        return Reachability("unreachable", None, 0, n, init_hits, "turn_budget", "relaxed", lower)

    main = search.plan(budget=budget, defer=defer)
    if main.status == "unreachable" and detours:
        wider = search.plan(budget=budget, detours=detours, defer=defer)
        main = replace(wider, expansions=main.expansions + wider.expansions)
    if main.status == "reachable":
        return Reachability("reachable", main.min_turns, main.expansions, n, init_hits, path=main.path)
    if main.status == "unknown":
        return Reachability("unknown", None, main.expansions, n, init_hits, "search_budget")
    longer = search.plan(budget=budget, max_turns=cfg.max_turns + extra_turns, defer=defer)
    if longer.status == "reachable":
        return Reachability("unreachable", None, main.expansions, n, init_hits, "turn_budget", "capped", longer.min_turns)
    diag = search.plan(budget=budget, max_turns=cfg.max_turns + extra_turns, diagnose=True, defer=defer)
    never_visible = [k for k in range(n) if k not in diag.visible_units]
    if not never_visible:
        detail = "combination"
    elif any(k in diag.pool_units for k in never_visible):
        detail = "gold_cut"
    else:
        detail = "upstream"
    return Reachability("unreachable", None, main.expansions, n, init_hits, "pool_or_rank_cap", detail)
