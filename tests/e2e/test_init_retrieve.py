"""InitRetrieve's question-entity slots (``EnvConfig.init_entity_reserve``) on the real HotpotQA test graph.

A comparison question names two entities; when the fused channels (harness-g.tex l.285) fill U_0 with the first
entity's articles and nothing links the two, no LOOKUP can reach the second (the ``no_entity_path`` cause of
agent/reachability.py). A reserved slot gives each uncovered question entity its best sentence.
"""
from __future__ import annotations

from harness_g.agent.config import EnvConfig
from harness_g.agent.env import init_retrieve

# comparison questions over two articles of the test corpus (their titles are entities of the graph)
COMPARISONS = [
    "Who was born first, Lorenzo Monaco or Colin Kolles?",
    "Are Aston Villa and Leeds United in the same city?",
    "Which is older, Lorenzo Monaco or Hugo Rodríguez Romero?",
    "Was Colin Kolles or S. P. L. Sørensen born in Denmark?",
]


def _maximal_entities(view, question: str, cfg: EnvConfig):
    ents = view.question_entities(question, cfg.question_ngram_max)
    names = {e.name for e in ents}
    return [e for e in ents if not any(n != e.name and f" {e.name} " in f" {n} " for n in names)]


def _uncovered(view, visible: list[str], ents) -> list[str]:
    pools = view.lookup_pools([e.id for e in ents])
    return [e.name for e in ents if pools.get(e.id) and not set(visible) & set(pools[e.id])]


def test_reserved_slots_cover_the_question_entities(hotpot_view, hotpot_questions) -> None:
    off, on = EnvConfig(init_entity_reserve=0), EnvConfig(init_entity_reserve=2)
    changed = 0
    for question in COMPARISONS + [q.question for q in hotpot_questions]:
        q_vec = hotpot_view.encode([question])[0]
        plain, reserved = init_retrieve(hotpot_view, question, q_vec, off), init_retrieve(hotpot_view, question, q_vec, on)
        ents = _maximal_entities(hotpot_view, question, on)
        missed = _uncovered(hotpot_view, plain, ents)
        assert len(reserved) == len(plain) <= on.visible_cap
        # the fused head is kept: at most init_entity_reserve of its last sentences are replaced
        kept = on.visible_cap - min(len(missed), on.init_entity_reserve)
        assert reserved[:kept] == plain[:kept], question
        if len(missed) <= on.init_entity_reserve:
            assert _uncovered(hotpot_view, reserved, ents) == [], question
        changed += reserved != plain
        if not missed:
            assert reserved == plain, question  # nothing to reserve: U_0 is the fused one
    assert changed >= 1  # the reservation does something on this corpus


def test_default_reserves_two_slots_and_zero_turns_it_off() -> None:
    assert EnvConfig().init_entity_reserve == 2 and EnvConfig(init_entity_reserve=0).init_entity_reserve == 0
