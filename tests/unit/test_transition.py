"""agent/env/transition.py: the pure state transition of the menu environment (harness-g.tex, section "The Menu
Environment"), one rule per action type, checked without a store."""
from __future__ import annotations

from dataclasses import dataclass

import pytest

from harness_g.agent.env.actions import Action, ActionType
from harness_g.agent.env.transition import MAX_TURNS, MenuState, introduced, transition

Z = MenuState(committed=("c1",), visible=("s1", "s2", "s3"), visited=("e0",), turn=2)


def test_select_commits_the_sentence_and_takes_it_out_of_the_visible_set() -> None:
    after = transition(Z, Action("A1", ActionType.SELECT, ("s2",)))
    assert after == MenuState(("c1", "s2"), ("s1", "s3"), ("e0",), 3)
    assert not after.done and introduced(Z, after, ActionType.SELECT) == ("s2",)
    assert Z.committed == ("c1",)  # pure: the state it started from is unchanged


def test_lookup_replaces_the_visible_set_with_its_result_and_visits_the_entity() -> None:
    after = transition(Z, (ActionType.LOOKUP, ("e7",)), ("s9", "s1"))
    assert after == MenuState(("c1",), ("s9", "s1"), ("e0", "e7"), 3)
    assert introduced(Z, after, ActionType.LOOKUP) == ("s9", "s1")
    with pytest.raises(ValueError, match="LOOKUP e7 needs its result"):
        transition(Z, (ActionType.LOOKUP, ("e7",)))


def test_answer_with_commits_the_new_sentences_in_order_and_ends_the_episode() -> None:
    after = transition(Z, (ActionType.ANSWER_WITH, ("s3", "c1", "s1")))
    assert after.committed == ("c1", "s3", "s1") and after.visible == ("s2",) and after.visited == ("e0",)
    assert after.done and after.terminated_by == "ANSWER_WITH" and after.turn == 3
    assert introduced(Z, after, ActionType.ANSWER_WITH) == ("s3", "s1")


def test_answer_ends_the_episode_and_changes_nothing_else() -> None:
    after = transition(Z, (ActionType.ANSWER, ()))
    assert (after.committed, after.visible, after.visited) == (Z.committed, Z.visible, Z.visited)
    assert after.terminated_by == "ANSWER" and introduced(Z, after, ActionType.ANSWER) == ()


def test_every_turn_counts_toward_t_and_reaching_t_ends_the_episode() -> None:
    invalid = transition(Z, None, max_turns=6)  # a reply that names no menu action: only the turn passes
    assert invalid == MenuState(Z.committed, Z.visible, Z.visited, 3)
    last = transition(Z, (ActionType.SELECT, ("s1",)), max_turns=3)
    assert last.terminated_by == MAX_TURNS and last.committed == ("c1", "s1")
    assert transition(Z, None, max_turns=3).terminated_by == MAX_TURNS
    # a terminal action ends the episode by its own name even on the last turn
    assert transition(Z, (ActionType.ANSWER, ()), max_turns=3).terminated_by == "ANSWER"
    assert not transition(Z, (ActionType.SELECT, ("s1",))).done  # no T given: no limit
    with pytest.raises(ValueError, match="finished episode"):
        transition(last, (ActionType.ANSWER, ()))


def test_a_subclass_keeps_its_own_fields_through_a_transition() -> None:
    @dataclass(frozen=True)
    class Node(MenuState):
        tag: str = ""

    after = transition(Node(visible=("s1",), tag="x"), (ActionType.SELECT, ("s1",)))
    assert isinstance(after, Node) and after.tag == "x" and after.committed == ("s1",) and after.visible == ()
