"""The oracle policy (``--policy oracle``): PRIVILEGED -- it reads the gold evidence labels.

It is an upper reference for the menu, not a baseline a learned policy could match: at every turn it plans, from
the observation's state z_t = (C_t, U_t, V_t, turn) (Harness-G §3.1), a shortest trajectory that commits every
gold evidence unit (:class:`harness_g.agent.env.gold_search.GoldSearch`, the bounded search over the real menus), takes
its first step and replies with the id of the menu action of that type and targets. A plan may LOOKUP while a gold
sentence is visible when that LOOKUP shows it again, so the closing ANSWER_WITH commits it with the last one (a
deferred commit: LOOKUP, ANSWER_WITH in 2 turns instead of SELECT, LOOKUP, ANSWER_WITH). When no gold-only plan exists
it plans with up to :data:`~harness_g.agent.env.gold_search.DETOURS` non-gold SELECTs (a committed sentence changes
m_t, so the LOOKUPs after it rank differently), as ``menu_reachability`` does. It re-plans every turn (the
search's menu cache makes that cheap), so it stays correct when the state is not the planned one.

When no full plan exists or none is found within the budget, it follows the plan that commits the most gold
units it found (then ANSWER): the best partial plan of the search, or a full plan for the largest subset of the
missing units that has one (subsets by size, then in unit order; at most :data:`MAX_SUBSET_GOALS` per turn, all
within one more ``budget`` of new menus). Units that no trajectory can ever commit -- absent from the graph, or
outside the relaxed LOOKUP closure of U_0 -- are dropped from its goal first, so the search spends its budget on
the rest.
Its reply is always an id of the current menu (ANSWER when a planned step is, unexpectedly, not offered).

Its answer is the heuristic policy's extractive answer from C_T (composition, not a copy).
"""
from __future__ import annotations

from itertools import combinations
from typing import Any, Iterable, Mapping

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.gold import gold_units
from harness_g.agent.env.gold_search import DETOURS, GoldPlan, GoldSearch, Step, feasible_units
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env.observation import Observation
from harness_g.agent.policies.base import Policy
from harness_g.agent.policies.heuristic import HeuristicPolicy
from harness_g.errors import ConfigError
from harness_g.graph.types import QAItem

#: the one-line error where no gold labels can reach the policy (``harness-g ask``)
NEEDS_GOLD = "the oracle policy needs gold evidence labels: use `harness-g eval`"


def require_gold(questions: Iterable[QAItem]) -> None:
    """ConfigError unless every question carries gold evidence labels (sentence or paragraph ids): the oracle plans
    from them, so a question without any could only be recorded as an error (``harness-g eval`` checks first)."""
    items = list(questions)
    bare = [q.id for q in items if not (q.gold_sentence_ids or q.gold_paragraph_ids)]
    if bare:
        raise ConfigError(f"the oracle policy needs gold evidence labels, and {len(bare)} of the {len(items)} questions "
                          f"have none (e.g. {bare[0]!r}); use questions with gold evidence (hotpotqa, 2wiki, musique, "
                          "nq, popqa) or another --policy")


#: subset goals one turn tries at most when the full goal has no plan
MAX_SUBSET_GOALS = 8
#: a planning state: (C_t in commit order, U_t, V_t, turns used)
PlanState = tuple[list[str], list[str], tuple[str, ...], int]


class OraclePolicy(Policy):
    """Privileged menu policy over gold labels (module docstring).

    ``view``: the graph the environment plays on; ``env_config``: the environment's configuration (T, K_s, K_e,
    ANSWER_WITH's k: the plans must be the environment's own); ``questions``: the QA items with gold labels, a
    mapping question id -> QAItem or an iterable of QAItems; ``budget``: new menus one turn's search may build.
    """

    name = "oracle"

    def __init__(self, view: GraphView | None = None, env_config: EnvConfig | None = None,
                 questions: Mapping[str, QAItem] | Iterable[QAItem] | None = None, *, budget: int = 400):
        if view is None or questions is None:
            raise ConfigError(NEEDS_GOLD)
        self.view = view
        self.cfg = env_config or EnvConfig()
        self.items: dict[str, QAItem] = dict(questions) if isinstance(questions, Mapping) else {q.id: q for q in questions}
        self.budget = budget
        self._answerer = HeuristicPolicy()
        self._search: GoldSearch | None = None
        self._subsearches: dict[tuple[int, ...], GoldSearch] = {}  # subset goal (unit indices) -> its search
        self._episode: int | None = None
        self._first: tuple[GoldPlan, int] | None = None  # the first turn's plan and the units its choice commits
        self._rest: tuple[Step, ...] = ()  # the remaining steps of the last plan, after the step just taken
        self._rest_units = -1
        self._last_turn = -1

    # -- planning ------------------------------------------------------------------------------------------
    def _item(self, observation: Observation) -> QAItem:
        item = self.items.get(observation.question_id)
        if item is None or not (item.gold_sentence_ids or item.gold_paragraph_ids):
            raise ConfigError(f"the oracle policy has no gold evidence labels for question {observation.question_id!r}")
        if item.question != observation.question:
            raise ConfigError(f"the oracle's gold labels for question {item.id!r} belong to another question text")
        return item

    def _search_for(self, item: QAItem) -> GoldSearch:
        """One :class:`GoldSearch` per question (its caches serve every turn's re-plan), goal = the feasible units."""
        if self._search is None or self._search.item is not item:
            search = GoldSearch(self.view, item, self.cfg)
            units = feasible_units(self.view, search.units, search.initial_visible(), cfg=self.cfg,
                                   question_targets=search.question_target_ids)
            if units != search.units:  # drop the units no trajectory commits, so the budget goes to the rest
                search = search.for_units(units)
            self._search, self._subsearches = search, {}
        return self._search

    def _subset_plan(self, search: GoldSearch, state: PlanState, path: tuple[Step, ...],
                     units: int) -> tuple[tuple[Step, ...], int]:
        """A full plan for the largest subset of the missing units that has one, when it commits more than ``units``
        (the current plan's count): ``(its path, the units it commits)``; else ``(path, units)``."""
        missing = sorted(search.missing(state[0]))
        done = len(search.units) - len(missing)
        budget, tried = self.budget, 0
        for size in range(len(missing) - 1, units - done, -1):
            for subset in combinations(missing, size):
                if tried == MAX_SUBSET_GOALS or budget <= 0:
                    return path, units
                tried += 1
                sub = self._subsearches.get(subset)
                if sub is None:
                    sub = self._subsearches[subset] = search.for_units([search.units[k] for k in subset])
                plan = sub.plan(*state, budget=budget)
                budget -= plan.expansions
                if plan.status == "reachable":
                    return plan.path, done + size
        return path, units

    def _choose(self, observation: Observation, plan: GoldPlan) -> tuple[tuple[Step, ...], int]:
        """The new plan, or the rest of the previous one when the state is the planned one and that rest commits
        more gold units (or as many in fewer turns): a re-plan's search may not revisit what the last one proved."""
        on_plan = (observation.episode == self._episode and observation.event == "ok"
                   and observation.turn == self._last_turn + 1 and bool(self._rest))
        if plan.status == "reachable" or not on_plan:
            return plan.path, plan.committed_units
        if (self._rest_units, -len(self._rest)) > (plan.committed_units, -len(plan.path)):
            return self._rest, self._rest_units
        return plan.path, plan.committed_units

    def act(self, observation: Observation) -> str:
        if observation.interface != "menu":
            raise ConfigError("the oracle policy plays the menu interface only (--interface menu)")
        search = self._search_for(self._item(observation))
        state: PlanState = (observation.committed_ids, observation.visible_ids, observation.visited, observation.turn)
        plan = search.plan(*state, budget=self.budget)
        if plan.status == "unreachable":  # no gold-only plan: one that also commits a non-gold sentence (a detour)
            wider = search.plan(*state, budget=self.budget, detours=DETOURS)
            if wider.status == "reachable":
                plan = wider
        path, units = self._choose(observation, plan)
        if plan.status != "reachable":
            path, units = self._subset_plan(search, state, path, units)
        if observation.episode != self._episode or self._first is None:
            self._first = (plan, units)
        self._episode, self._last_turn = observation.episode, observation.turn
        self._rest, self._rest_units = path[1:], units
        return _menu_id(observation, path[0] if path else (ActionType.ANSWER, ()))

    # -- answering -----------------------------------------------------------------------------------------
    def answer(self, question: str, evidence: list[tuple[str, str]], observation: Observation) -> str:
        """The heuristic policy's extractive answer from C_T."""
        return self._answerer.answer(question, evidence, observation)

    def trajectory_meta(self, observation: Observation) -> dict[str, Any]:
        """``{"oracle": {...}}``: the episode's first plan (from U_0) -- its ``status`` and ``min_turns`` for the goal of
        ``feasible_units`` of the item's ``units``, the gold units the first turn's choice plans to commit
        (``planned_units``) -- and the menus its searches built so far for this question."""
        if self._first is None or self._search is None or observation.episode != self._episode:
            return {}
        (first, planned), search = self._first, self._search
        all_units = len(gold_units(search.item.gold_sentence_ids, search.item.gold_paragraph_ids))
        return {"oracle": {"status": first.status, "units": all_units, "feasible_units": len(search.units),
                           "planned_units": planned, "min_turns": first.min_turns, "expansions": search.expansions}}


def _menu_id(observation: Observation, step: Step) -> str:
    """The id of the menu action with the step's type and targets; ANSWER when the menu does not offer it."""
    kind, targets = step
    for action in observation.menu:
        if action.type is kind and tuple(action.targets) == tuple(targets):
            return action.id
    return next(a.id for a in observation.menu if a.type is ActionType.ANSWER)
