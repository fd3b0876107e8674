"""Policies receive an Observation, never the environment (issue 11 §1, second bullet): the environments'
``observe()`` reports what they render and execute, on the real graph. Policies on hand-built observations, with
no graph: tests/unit/test_observation.py.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.observation import GraphTools, Observation, PolicyTools
from harness_g.errors import HarnessError


# -- the environments' observations ------------------------------------------------------------------------
def test_menu_env_observe_matches_what_it_renders(hotpot_view, hotpot_questions) -> None:
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.config import EnvConfig

    env = MenuEnv(hotpot_view, EnvConfig(max_turns=3))
    text = env.reset(hotpot_questions[0])
    obs = env.observe()
    assert obs.text == text and (obs.event, obs.error) == ("start", None) and obs.turn == 0 and not obs.done
    assert obs.question_id == hotpot_questions[0].id and obs.max_turns == 3 and obs.interface == "menu"
    assert [a.label for a in obs.menu] == [ln for ln in text.splitlines() if re.match(r"A\d+ = ", ln)]
    assert [f"{v.handle} | {v.title}: {v.text}" for v in obs.visible] == [ln for ln in text.splitlines() if re.match(r"S\d+ \|", ln)]
    assert [f"{e.handle} | {e.surface} [{e.role}]" for e in obs.entities] == \
        [ln for ln in text.splitlines() if re.match(r"E\d+ \|", ln)]
    assert obs.search_available == bool(obs.actions(ActionType.LOOKUP))
    assert obs.action_ids == tuple(env.menu.by_id)
    # the tools are read-only: encode, rank, mentions, titles, preview and nothing else
    assert isinstance(obs.tools, GraphTools) and isinstance(obs.tools, PolicyTools)
    assert {n for n in dir(obs.tools) if not n.startswith("_")} == {"encode", "rank", "mentions", "titles", "preview"}
    assert obs.tools.titles([v.id for v in obs.visible]) == {v.id: v.title for v in obs.visible}  # what it shows
    q = obs.tools.encode([obs.question])
    assert q.shape == (1, hotpot_view.embedder.dim) and np.allclose(np.linalg.norm(q, axis=1), 1, atol=1e-4)
    assert obs.tools.rank(q[0], obs.visible_ids) == hotpot_view.rank(env.state.question_vec, obs.visible_ids)
    # an invalid reply: same episode, event invalid with the reason, the text is what step returned
    assert env.observe() is obs  # built once per reset/step, not re-rendered per call
    res = env.step("A999")
    obs2 = env.observe()
    assert obs2 is not obs and env.observe() is obs2
    assert obs2.text == res.observation and obs2.event == "invalid" and obs2.error == res.error and obs2.turn == 1
    assert obs2.episode == obs.episode and "Invalid action:" in obs2.text
    select = obs2.actions(ActionType.SELECT)[0]
    res = env.step(select.id)
    obs3 = env.observe()
    assert obs3.text == res.observation and (obs3.event, obs3.error) == ("ok", None)
    assert obs3.committed_ids == list(select.targets) and obs3.executed == (ActionType.SELECT,)
    assert obs3.committed_texts == env.committed_texts()
    env.step(obs3.actions(ActionType.ANSWER)[0].id)
    final = env.observe()
    assert final.done and final.menu == () and final.entities == () and final.text == ""
    assert final.committed_ids == env.trajectory.committed and final.executed == (ActionType.SELECT, ActionType.ANSWER)
    assert env.observe() is final
    env.reset(hotpot_questions[1])
    assert env.observe().episode != obs.episode


def test_free_query_and_batched_observe(hotpot_view, hotpot_questions) -> None:
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.batch import BatchedMenuEnv
    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.free_query import FreeQueryEnv

    fenv = FreeQueryEnv(MenuEnv(hotpot_view, EnvConfig(max_turns=2)))
    text = fenv.reset(hotpot_questions[0])
    obs = fenv.observe()
    assert obs.text == text and obs.menu == () and obs.entities == () and obs.interface == "free-query"
    assert [f"{v.handle} | {v.title}: {v.text}" for v in obs.visible] == [ln for ln in text.splitlines() if re.match(r"S\d+ \|", ln)]
    assert obs.search_available == fenv.search_available and obs.episode == fenv.inner.episode
    res = fenv.step("SELECT S99")
    obs = fenv.observe()
    assert obs.text == res.observation and obs.event == "invalid" and obs.error == res.error and "S99" in obs.error
    fenv.step("ANSWER")
    final = fenv.observe()
    assert final.done and final.text == "" and not final.search_available

    benv = BatchedMenuEnv(hotpot_view, 2, EnvConfig(max_turns=2))
    texts = benv.reset([hotpot_questions[0]] * 2)
    first = benv.observe()
    assert [o.text for o in first] == texts and first[0].episode != first[1].episode
    benv.step([first[0].actions(ActionType.ANSWER)[0].id, None])
    after = benv.observe()
    assert after[0] is None and after[1] is not None and after[1].turn == 0


def test_run_episode_gives_policies_observations_only(hotpot_view, hotpot_questions) -> None:
    """run_episode calls ``act(observation)`` and ``answer(question, evidence, final observation)``: no environment."""
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.eval.runner import run_episode
    from harness_g.agent.policies.base import Policy

    class Spy(Policy):
        name = "spy"

        def __init__(self) -> None:
            self.seen: list[Observation] = []

        def act(self, *args):
            assert len(args) == 1 and isinstance(args[0], Observation)
            self.seen.append(args[0])
            return args[0].actions(ActionType.SELECT)[0].id if args[0].turn == 0 else args[0].action_ids[-1]

        def answer(self, *args):
            assert len(args) == 3 and isinstance(args[2], Observation) and args[2].done
            self.seen.append(args[2])
            assert args[1] == args[2].committed_texts
            return "x"

    spy = Spy()
    traj = run_episode(MenuEnv(hotpot_view), spy, hotpot_questions[0])
    assert [o.event for o in spy.seen] == ["start", "ok", "ok"] and len({o.episode for o in spy.seen}) == 1
    assert spy.seen[-1].committed_ids == traj.committed and traj.answer == "x" and traj.meta["policy"] == "spy"


def test_tools_preview_is_env_preview_and_read_only(hotpot_view, hotpot_questions) -> None:
    """Previewability through the tools (harness-g.tex l.293): the same Preview as ``env.preview`` for every action
    of the current menu, no state touched; tools of an earlier turn, of a finished episode and of the free-query arm
    refuse."""
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.free_query import FreeQueryEnv

    env = MenuEnv(hotpot_view)
    env.reset(hotpot_questions[1])
    obs = env.observe()
    before = (list(env.state.committed), list(env.state.visible), list(env.state.visited), env.state.turn,
              list(env.state.observed), env.menu.to_json(), len(env.trajectory.steps))
    looked = [obs.tools.preview(a.id) for a in obs.menu]
    assert looked == [env.preview(a.id) for a in obs.menu]
    assert {p.type for p in looked} == set(ActionType)  # every kind was expanded
    lookup = next(p for p in looked if p.type is ActionType.LOOKUP)
    assert lookup.visible == lookup.introduced and not lookup.terminal and lookup.committed == ()
    after = (list(env.state.committed), list(env.state.visible), list(env.state.visited), env.state.turn,
             list(env.state.observed), env.menu.to_json(), len(env.trajectory.steps))
    assert after == before
    with pytest.raises(HarnessError, match="unknown action id A999"):
        obs.tools.preview("A999")
    env.step(obs.actions(ActionType.SELECT)[0].id)
    with pytest.raises(HarnessError, match="stale tools"):
        obs.tools.preview("A0")  # ids are re-bound every turn: the old tools must not describe the new menu
    assert env.observe().tools.preview("A0") == env.preview("A0")
    env.step(env.observe().actions(ActionType.ANSWER)[0].id)
    with pytest.raises(HarnessError, match="no live menu"):
        env.observe().tools.preview("A0")
    fenv = FreeQueryEnv(MenuEnv(hotpot_view))
    fenv.reset(hotpot_questions[1])
    with pytest.raises(HarnessError, match="no live menu"):
        fenv.observe().tools.preview("A0")
