"""``MenuEnv.preview`` refuses every action that is not on the current menu (regression).

Action ids are per-menu: each turn's menu binds A0, A1, ... afresh. ``preview`` used to raise ``KeyError`` for
a LOOKUP kept from an earlier menu and to expand any other foreign Action object as if it were valid (a stale
SELECT previewed as committing a sentence the menu no longer offers). Now an Action object must be the current
menu's binding of its id, and a foreign one -- or an id string not on the menu -- raises one clear one-line
HarnessError naming the id and the available ids. A stale id *string* that exists on the new menu names the
action bound to it now (that is what ids mean).
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.actions import Action, ActionType
from harness_g.errors import HarnessError


def _state(env: MenuEnv) -> tuple:
    st = env.state
    return (list(st.committed), list(st.visible), list(st.visited), list(st.observed), dict(st.producer), st.turn,
            st.done, st.terminated_by, env.menu.to_json(), dict(env.menu.lookup_results), len(env.trajectory.steps),
            copy.deepcopy(env.trajectory.to_json()))


def _assert_refused(env: MenuEnv, action: Action | str) -> str:
    aid = action if isinstance(action, str) else action.id
    with pytest.raises(HarnessError) as info:
        env.preview(action)
    message = str(info.value)
    available = ", ".join(a.id for a in env.menu.actions)
    assert message.startswith(f"unknown action id {aid}") and message.endswith(f"; available: {available}")
    assert "\n" not in message
    return message


def test_preview_refuses_actions_of_an_earlier_menu(hotpot_view, hotpot_questions) -> None:
    env = MenuEnv(hotpot_view)
    for item in hotpot_questions:  # a first menu with a LOOKUP (the KeyError case)
        env.reset(item)
        lookups = [a for a in env.menu.actions if a.type is ActionType.LOOKUP]
        if lookups:
            break
    else:
        pytest.fail("no first menu offers a LOOKUP")
    first_menu = list(env.menu.actions)
    q_vec = env.state.question_vec.copy()
    env.step(lookups[0].id)  # turn 1 -> turn 2: ids re-bound, the looked-up entity is visited
    assert not env.done
    before = _state(env)
    current = {a.id: a for a in env.menu.actions}

    refused = kept = 0
    for stale in first_menu:
        if current.get(stale.id) == stale:  # the same binding on both menus: a current action, previewed as such
            assert env.preview(stale) == env.preview(stale.id)
            kept += 1
            continue
        message = _assert_refused(env, stale)
        assert " ".join((stale.type.value, *stale.targets)) in message and "re-bound every turn" in message
        if stale.id in current:
            assert f"{stale.id} is now {current[stale.id].type.value}" in message
        refused += 1
    assert refused  # at least the looked-up LOOKUP is foreign now
    stale_lookup = lookups[0]
    assert stale_lookup.targets[0] not in env.menu.lookup_results  # old code: KeyError here
    _assert_refused(env, stale_lookup)

    # hand-made foreign actions: a known id bound to something else, an id beyond the menu
    n = len(env.menu.actions)
    visible = env.state.visible
    _assert_refused(env, Action("A0", ActionType.LOOKUP, ("no-such-entity",)))
    _assert_refused(env, Action(f"A{n + 5}", ActionType.SELECT, (visible[0],)))  # old code: previewed as valid
    _assert_refused(env, Action(env.menu.actions[-1].id, ActionType.SELECT, (visible[0],)))
    # id strings: not on the menu -> refused; on the menu -> the current binding
    _assert_refused(env, f"A{n + 5}")
    _assert_refused(env, "B1")
    if stale_lookup.id in current:
        assert env.preview(stale_lookup.id).type is current[stale_lookup.id].type

    # current actions still preview, by object and by id, and nothing above changed the state
    previews = {a.id: env.preview(a) for a in env.menu.actions}
    assert previews == {a.id: env.preview(a.id) for a in env.menu.actions} == env.preview_all()
    assert _state(env) == before and np.array_equal(env.state.question_vec, q_vec)

    # and a preview still matches the step it predicts
    action = env.menu.actions[0]
    preview = env.preview(action)
    env.step(action.id)
    assert tuple(env.state.committed) == preview.committed
    assert tuple(env.trajectory.steps[-1].introduced) == preview.introduced
