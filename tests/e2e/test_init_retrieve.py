"""InitRetrieve's question-entity slots (``EnvConfig.init_entity_reserve``) on the real HotpotQA test graph.

A comparison question names two entities; when the fused channels (harness-g.tex l.285) fill U_0 with the first
entity's articles and nothing links the two, no LOOKUP can reach the second (the ``no_entity_path`` cause of
agent/env/gold_search.py). A reserved slot gives each uncovered question entity its best sentence.
"""
from __future__ import annotations

from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.menu_env import _named_in_question, init_retrieve

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


def _covered(view, visible: list[str], ents) -> set[str]:
    pools = view.lookup_pools([e.id for e in ents], articles=False)
    return {e.name for e in ents if set(visible) & set(pools.get(e.id, ()))}


def _named(view, question: str, ents) -> set[str]:
    pools = view.lookup_pools([e.id for e in ents], articles=False)
    return {e.name for e in ents if pools.get(e.id) and _named_in_question(question, e.name)}


def test_reserved_slots_cover_the_question_entities(hotpot_view, hotpot_questions) -> None:
    off, on = EnvConfig(init_entity_reserve=0), EnvConfig(init_entity_reserve=2)
    changed = 0
    for question in COMPARISONS + [q.question for q in hotpot_questions]:
        q_vec = hotpot_view.encode([question])[0]
        plain, reserved = init_retrieve(hotpot_view, question, q_vec, off), init_retrieve(hotpot_view, question, q_vec, on)
        ents = _maximal_entities(hotpot_view, question, on)
        before, after = _covered(hotpot_view, plain, ents), _covered(hotpot_view, reserved, ents)
        missed = _named(hotpot_view, question, ents) - before
        assert len(reserved) == len(plain) <= on.visible_cap
        # a reservation never uncovers a question entity U_0 already showed (it evicts only sentences nobody needs)
        assert before <= after, question
        # at most init_entity_reserve of the fused sentences are replaced
        assert len(set(plain) - set(reserved)) <= on.init_entity_reserve, question
        if len(missed) <= on.init_entity_reserve:
            assert missed <= after, question
        changed += reserved != plain
        if not missed:
            assert reserved == plain, question  # nothing to reserve: U_0 is the fused one
    assert changed >= 1  # the reservation does something on this corpus


def test_a_reservation_keeps_the_only_sentence_of_another_question_entity(hotpot_view) -> None:
    """Regression: the slot was taken from U_0's last sentence even when it was the only one showing another entity
    of the question. On this corpus the fused U_0 of these questions shows the academy only in its last sentence;
    the earlier code gave that slot to the other entity and the academy vanished from U_0 (on 2Wiki, "Who is younger,
    Kari Lindroos or Jean Dominique Compans?" lost Compans that way)."""
    cfg = EnvConfig(init_entity_reserve=2)
    for question in ("Which one was founded earlier, Aston Villa Under-23s and Academy or Earl Barrett?",
                     "Which one was founded earlier, Tom Hiddleston or Aston Villa Under-23s and Academy?"):
        q_vec = hotpot_view.encode([question])[0]
        ents = _maximal_entities(hotpot_view, question, cfg)
        plain = init_retrieve(hotpot_view, question, q_vec, EnvConfig(init_entity_reserve=0))
        reserved = init_retrieve(hotpot_view, question, q_vec, cfg)
        before, after = _covered(hotpot_view, plain, ents), _covered(hotpot_view, reserved, ents)
        assert "aston villa under 23s and academy" in before, question
        assert before <= after and after == _named(hotpot_view, question, ents), question


def test_lower_case_words_are_names_only_in_an_uncased_question() -> None:
    assert _named_in_question("Which film was released earlier, Fast Five or Heat?", "fast five")
    assert not _named_in_question("Which film was released earlier, Fast Five or Heat?", "film")
    assert _named_in_question("Who was born later, Emil Fackenheim or Jay'Ed?", "jay'ed")
    assert _named_in_question("who sang the song fast car", "fast car")  # NQ: all lower case, every name counts


def test_the_extended_preset_reserves_two_slots_and_the_paper_none() -> None:
    """The paper's U_0 is the rank fusion alone (the default); the extended preset reserves two slots; an explicit
    value beats either preset."""
    assert EnvConfig().init_entity_reserve == 0 and EnvConfig(preset="extended").init_entity_reserve == 2
    assert EnvConfig(preset="extended", init_entity_reserve=0).init_entity_reserve == 0
    assert EnvConfig(init_entity_reserve=2).init_entity_reserve == 2
