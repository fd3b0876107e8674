"""Menu reachability: can every gold evidence unit be committed within T turns by *some* policy?

Bounded depth-first search over the real menus (the same ``build_menu`` the environment uses).
Two reductions keep it small: (1) when a gold sentence is visible, committing it is the only
branch explored (committing gold is required anyway; it can change later lookup rankings, so this
is a heuristic — a "reachable" verdict is exact, an "unreachable" one is with respect to this
search); (2) non-gold SELECTs are never explored, so only LOOKUPs branch. Each commit costs one
turn (the last one can be ANSWER_WITH), so a state with fewer turns left than missing units is pruned.
A gold unit that no sentence of the graph satisfies (e.g. a gold id the corpus lacks) is 'unreachable'
without searching.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness_g.agent.config import EnvConfig
from harness_g.agent.env import init_retrieve
from harness_g.agent.graph_view import GraphView
from harness_g.agent.menu import build_menu
from harness_g.agent.metrics import gold_units, unit_satisfied
from harness_g.agent.retrieval import lookup_query
from harness_g.graph.types import QAItem


@dataclass(frozen=True)
class Reachability:
    """``status``: 'reachable', 'unreachable', 'unknown' (node budget hit) or 'no_gold'."""

    status: str
    min_turns: int | None
    expansions: int
    gold_units: int
    initially_visible: int  # gold units satisfied by some sentence of U_0

    @property
    def reachable(self) -> bool | None:
        return {"reachable": True, "unreachable": False}.get(self.status)


def _in_graph(view: GraphView, unit: frozenset[str] | str) -> bool:
    """Whether some sentence of the graph satisfies the unit."""
    if isinstance(unit, str):
        return unit in view.row_of
    return bool(view.paragraph_sentences(sorted(unit)))


def menu_reachability(view: GraphView, item: QAItem, cfg: EnvConfig | None = None, *, budget: int = 400) -> Reachability:
    cfg = cfg or EnvConfig()
    units = gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)
    if not units:
        return Reachability("no_gold", None, 0, 0, 0)
    q_vec = view.encode([item.question])[0]
    visible0 = init_retrieve(view, item.question, q_vec, cfg)
    init_hits = sum(any(unit_satisfied(u, [s]) for s in visible0) for u in units)
    if not all(_in_graph(view, u) for u in units):  # a gold unit absent from the graph: no menu reaches it
        return Reachability("unreachable", None, 0, len(units), init_hits)
    expansions = 0
    best: int | None = None
    seen: set = set()

    def search(committed: tuple[str, ...], visible: tuple[str, ...], visited: tuple[str, ...], turns: int) -> None:
        nonlocal expansions, best
        missing = [u for u in units if not unit_satisfied(u, committed)]
        if not missing:
            best = turns if best is None else min(best, turns)
            return
        left = cfg.max_turns - turns
        if left < len(missing) or (best is not None and turns + len(missing) >= best) or expansions >= budget:
            return
        key = (frozenset(committed), frozenset(visited), visible)
        if key in seen:
            return
        seen.add(key)
        gold_visible = [s for s in visible if any(unit_satisfied(u, [s]) for u in missing)]
        if gold_visible:
            sid = gold_visible[0]
            search(committed + (sid,), tuple(s for s in visible if s != sid), visited, turns + 1)
            return
        if left - 1 < len(missing):  # a lookup turn plus one commit per missing unit must fit
            return
        expansions += 1
        infos = view.sentences(list(committed))
        m_text = lookup_query(item.question, [infos[s].text for s in committed if s in infos], cfg.query_max_words)
        menu = build_menu(view, question_vec=q_vec, m_vec=view.encode([m_text])[0], committed=committed, visible=visible,
                          visited=visited, cfg=cfg)
        for entity in menu.entities:
            search(committed, menu.lookup_results[entity.id], visited + (entity.id,), turns + 1)

    search((), tuple(visible0), (), 0)
    if best is not None:
        return Reachability("reachable", best, expansions, len(units), init_hits)
    status = "unknown" if expansions >= budget else "unreachable"
    return Reachability(status, None, expansions, len(units), init_hits)
