"""EnvConfig.question_lookups (an extension: off in the paper preset): the entities a question names stay LOOKUP
targets until looked up.

On both stores (``hotpot_view`` is parametrised by store kind), with the HotpotQA test graph and its questions: a
comparison question's second entity must stay reachable after a LOOKUP replaced U_t, in "question" role, ranked after
the bridges (entities of C_t) and before the frontier (entities of U_t); off, every target comes from C_t or U_t.
"""
from __future__ import annotations

from harness_g.agent.env import MenuEnv, question_targets
from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.config import EnvConfig

ROLE_ORDER = {"bridge": 0, "question": 1, "frontier": 2}


def _lookup_then_menus(view, questions, cfg):
    """(env, item) after one LOOKUP of a non-question entity, for every test question that offers one."""
    for item in questions:
        env = MenuEnv(view, cfg)
        env.reset(item)
        targets = {e.id for e in env.state.question_targets}
        lookup = next((a for a in env.menu.actions if a.type is ActionType.LOOKUP and a.targets[0] not in targets), None)
        if lookup is None:
            continue
        env.step(lookup.id)
        if not env.done:
            yield env, item


def test_question_targets_are_the_named_maximal_question_entities(hotpot_view, hotpot_questions) -> None:
    cfg = EnvConfig(question_lookups=True)
    found = 0
    for item in hotpot_questions:
        targets = question_targets(hotpot_view, item.question, cfg)
        names = [e.name for e in targets]
        found += bool(targets)
        assert all(e.lookupable for e in targets)
        # maximal: no target's name is a word-run inside another's ("malibu" beside "malibu express")
        assert not any(a != b and f" {a} " in f" {b} " for a in names for b in names), names
        assert question_targets(hotpot_view, item.question, EnvConfig(question_lookups=False)) == []
    assert found >= len(hotpot_questions) // 2


def test_a_question_entity_stays_a_lookup_target_after_a_lookup(hotpot_view, hotpot_questions) -> None:
    cfg = EnvConfig(question_lookups=True)
    kept_by_question = 0
    for env, item in _lookup_then_menus(hotpot_view, hotpot_questions, cfg):
        menu, st = env.menu, env.state
        roles = dict(zip((e.id for e in menu.entities), menu.entity_roles))
        # ranked by tier: bridges, then question entities, then the frontier
        tiers = [ROLE_ORDER[r] for r in menu.entity_roles]
        assert tiers == sorted(tiers), (item.id, menu.entity_roles)
        in_view = {e.id for ents in hotpot_view.entities_of(list(st.committed) + list(st.visible)).values() for e in ents}
        targets = {e.id for e in st.question_targets}
        for eid, role in roles.items():
            assert eid not in st.visited
            if role == "question":
                assert eid in targets and eid not in {e.id for s in st.committed
                                                      for e in hotpot_view.entities_of([s]).get(s, ())}
                kept_by_question += eid not in in_view  # offered only because the question names it
    assert kept_by_question >= 1, "no question entity was kept as a target after a LOOKUP on the test questions"


def test_off_every_target_comes_from_committed_or_visible_sentences(hotpot_view, hotpot_questions) -> None:
    cfg = EnvConfig(question_lookups=False)
    menus = 0
    for env, _ in _lookup_then_menus(hotpot_view, hotpot_questions, cfg):
        st = env.state
        in_view = {e.id for ents in hotpot_view.entities_of(list(st.committed) + list(st.visible)).values() for e in ents}
        assert set(env.menu.entity_roles) <= {"bridge", "frontier"}
        assert {e.id for e in env.menu.entities} <= in_view
        assert st.question_targets == []
        menus += 1
    assert menus >= 5


def test_a_looked_up_question_entity_is_not_offered_again(hotpot_view, hotpot_questions) -> None:
    looked = 0
    for item in hotpot_questions:
        env = MenuEnv(hotpot_view, EnvConfig(question_lookups=True))
        env.reset(item)
        targets = {e.id for e in env.state.question_targets}
        lookup = next((a for a in env.menu.actions if a.type is ActionType.LOOKUP and a.targets[0] in targets), None)
        if lookup is None:
            continue
        env.step(lookup.id)
        if env.done:
            continue
        looked += 1
        assert lookup.targets[0] not in {e.id for e in env.menu.entities}
    assert looked >= 3
