"""The menu environment on a REAL graph (tests/data/hotpotqa built with spaCy + MiniLM, embedded FalkorDB).

Checks the paper's §"The Menu Environment" and appendix "Environment Protocol": finiteness, the
observation format, every action type's transition, strict invalid handling, read-only preview,
the environment-built lookup query, the invalid-target filter, merged lookups, determinism and
provenance.
"""
from __future__ import annotations

import copy
import itertools
import math
import re
from pathlib import Path

import numpy as np
import pytest

from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env.menu import lookup_result, text_key
from harness_g.agent.env.menu_env import INIT_STEP, EpisodeOver, MenuEnv
from harness_g.agent.env.retrieval import lookup_query
from harness_g.agent.env.trajectory import Trajectory, load_jsonl, save_jsonl
from harness_g.agent.eval.runner import run_episode
from harness_g.agent.policies import make_policy
from harness_g.errors import ConfigError, HarnessError

ORDER = {ActionType.SELECT: 0, ActionType.LOOKUP: 1, ActionType.ANSWER_WITH: 2, ActionType.ANSWER: 3}


@pytest.fixture(scope="module")
def lookupable(hotpot_graph_dir) -> dict[str, bool]:
    from harness_g.graph.artifact import Artifact

    table = Artifact.open(hotpot_graph_dir).table("entities", columns=["id", "lookupable"]).to_pydict()
    return dict(zip(table["id"], table["lookupable"]))


def first_of(env: MenuEnv, kind: ActionType):
    return next(a for a in env.menu.actions if a.type is kind)


def action_for(env: MenuEnv, kind: ActionType, target: str):
    return next(a for a in env.menu.actions if a.type is kind and a.targets[0] == target)


def check_menu(env: MenuEnv, lookupable: dict[str, bool]) -> None:
    """Every invariant a menu must satisfy, on the env's current state and menu."""
    st, menu, cfg = env.state, env.menu, env.config
    visible = st.visible
    # finiteness: <= K_s visible sentences, <= K_e lookups, one ANSWER
    assert len(visible) <= cfg.visible_cap
    infos = env.view.sentences(visible + st.committed)
    keys = [text_key(infos[s].text) for s in visible]
    assert len(set(keys)) == len(keys), "duplicate visible texts"
    assert not set(keys) & {text_key(infos[s].text) for s in st.committed}, "a committed text is visible again"
    assert not set(visible) & set(st.committed)
    assert [s.id for s in menu.sentences] == visible
    types = [a.type for a in menu.actions]
    assert [a.id for a in menu.actions] == [f"A{i}" for i in range(len(menu.actions))]
    assert types == sorted(types, key=ORDER.__getitem__), "SELECT < LOOKUP < ANSWER_WITH < ANSWER"
    assert types.count(ActionType.ANSWER) == 1 and types[-1] is ActionType.ANSWER
    selects = [a.targets for a in menu.actions if a.type is ActionType.SELECT]
    answer_withs = [a.targets for a in menu.actions if a.type is ActionType.ANSWER_WITH]
    assert selects == [(s,) for s in visible]
    # ANSWER_WITH(s_1..s_k): every subset of U_t of size 1..answer_with_max, by size then visible order
    expected = [c for k in range(1, cfg.answer_with_max + 1) for c in itertools.combinations(visible, k)]
    assert answer_withs == (expected if cfg.answer_with else [])
    lookups = [a for a in menu.actions if a.type is ActionType.LOOKUP]
    assert len(lookups) <= cfg.lookup_cap
    assert [a.targets[0] for a in lookups] == [e.id for e in menu.entities]
    # invalid-target filter and lookup dedup
    for a in lookups:
        assert lookupable[a.targets[0]] is True, f"non-lookupable target {a.targets[0]}"
        assert a.targets[0] not in st.visited
    # merged lookups: distinct results, none equal to the current visible set, none empty
    results = [frozenset(env.preview(a).visible) for a in lookups]
    assert all(results)
    assert len(set(results)) == len(results)
    assert frozenset(visible) not in results
    for a in lookups:
        res = env.preview(a).visible
        assert len(res) <= cfg.visible_cap and not set(res) & set(st.committed)


def snapshot(env: MenuEnv) -> dict:
    st = env.state
    return {
        "committed": list(st.committed),
        "visible": list(st.visible),
        "visited": list(st.visited),
        "observed": list(st.observed),
        "producer": dict(st.producer),
        "turn": st.turn,
        "done": st.done,
        "terminated_by": st.terminated_by,
        "menu": env.menu.to_json(),
        "lookup_results": dict(env.menu.lookup_results),
    }


# -- reset ----------------------------------------------------------------------------------------
def test_reset_menus_satisfy_invariants(hotpot_view, hotpot_questions, lookupable) -> None:
    env = MenuEnv(hotpot_view)
    saw_lookup = False
    filtered: set[str] = set()  # non-lookupable entities mentioned by visible sentences (dates, NORP, ...)
    for item in hotpot_questions:
        env.reset(item)
        mentioned = hotpot_view.mentions_of(env.state.visible)
        filtered |= {e.id for ents in mentioned.values() for e in ents if not e.lookupable}
        assert all(lookupable[e] is False for e in filtered)
        assert 1 <= len(env.state.visible) <= 6
        assert env.state.committed == [] and env.state.visited == [] and env.state.turn == 0
        assert env.state.observed == env.state.visible
        assert all(env.state.producer[s] == INIT_STEP for s in env.state.visible)
        check_menu(env, lookupable)
        saw_lookup |= bool(env.menu.entities)
        assert env.trajectory.initial_visible == env.state.visible
    assert saw_lookup
    assert len(filtered) >= 5  # the invalid-target filter had real candidates to remove (check_menu: none offered)


def test_small_caps_are_respected(hotpot_view, hotpot_questions, lookupable) -> None:
    env = MenuEnv(hotpot_view, EnvConfig(visible_cap=2, lookup_cap=1, answer_with=False))
    env.reset(hotpot_questions[0])
    check_menu(env, lookupable)
    assert len(env.state.visible) == 2
    kinds = [a.type for a in env.menu.actions]
    assert kinds.count(ActionType.LOOKUP) == 1 and ActionType.ANSWER_WITH not in kinds
    assert kinds == [ActionType.SELECT, ActionType.SELECT, ActionType.LOOKUP, ActionType.ANSWER]


@pytest.mark.parametrize("k", [1, 2])  # 1: the paper preset's menu (the default); 2: the extended preset's k
def test_observation_format(hotpot_view, hotpot_questions, k) -> None:
    item = hotpot_questions[0]
    env = MenuEnv(hotpot_view, EnvConfig(answer_with_max=k) if k != EnvConfig().answer_with_max else None)
    assert env.config.answer_with_max == k
    obs = env.reset(item)
    lines = obs.splitlines()
    assert lines[0] == "[Step 1/6]"
    assert lines[1] == f"Question: {item.question}"
    assert lines[2:4] == ["Committed evidence:", "  (none)"]
    assert lines[4] == "Visible sentences:"
    infos = hotpot_view.sentences(env.state.visible)
    for i, sid in enumerate(env.state.visible):
        assert lines[5 + i] == f"S{i} | {infos[sid].title}: {infos[sid].text}"
    menu = env.menu
    assert "Actions:" in lines
    action_lines = lines[lines.index("Actions:") + 1 : -1]
    assert len(action_lines) == len(menu.actions)
    n_vis = len(env.state.visible)
    for i in range(n_vis):
        assert action_lines[i] == f"A{i} = SELECT S{i}"
    for j, e in enumerate(menu.entities):
        assert action_lines[n_vis + j] == f"A{n_vis + j} = LOOKUP E{j} | entity: {e.surface}"
        assert f"E{j} | {e.surface} [{menu.entity_roles[j]}]" in lines
    off = n_vis + len(menu.entities)
    for i in range(n_vis):
        assert action_lines[off + i] == f"A{off + i} = ANSWER_WITH S{i}"
    pairs = list(itertools.combinations(range(n_vis), 2)) if k == 2 else []  # k = 2: the pairs follow the singles
    for j, (a, b) in enumerate(pairs):
        assert action_lines[off + n_vis + j] == f"A{off + n_vis + j} = ANSWER_WITH S{a} S{b}"
    assert len(action_lines) == off + n_vis + len(pairs) + 1
    assert action_lines[-1] == f"A{len(menu.actions) - 1} = ANSWER"
    assert re.fullmatch(r"Reply with exactly one action id .*", lines[-1])
    assert "Invalid action" not in obs

    # after a SELECT: step 2, numbered committed evidence, and no S-line repeats it
    sid = env.state.visible[0]
    result = env.step("A0")
    lines = result.observation.splitlines()
    assert lines[0] == "[Step 2/6]"
    assert lines[2:4] == ["Committed evidence:", f"  1. {infos[sid].title}: {infos[sid].text}"]
    assert f"{infos[sid].title}: {infos[sid].text}" not in [ln.split(" | ", 1)[-1] for ln in lines if ln.startswith("S")]
    assert all(r in ("bridge", "frontier") for r in env.menu.entity_roles)
    assert "bridge" in env.menu.entity_roles  # the committed sentence's entities are bridge targets
    roles = env.menu.entity_roles
    assert roles == sorted(roles, key=lambda r: r != "bridge")


# -- transitions ----------------------------------------------------------------------------------
def test_select_commits_and_is_never_reoffered(hotpot_view, hotpot_questions, lookupable) -> None:
    env = MenuEnv(hotpot_view)
    env.reset(hotpot_questions[1])
    sid = env.state.visible[1]
    before_visible = list(env.state.visible)
    result = env.step(action_for(env, ActionType.SELECT, sid).id)
    assert result.valid and not result.done and result.error is None
    assert env.state.committed == [sid]
    assert env.state.visible == [s for s in before_visible if s != sid]
    assert env.state.turn == 1
    check_menu(env, lookupable)
    # a LOOKUP afterwards never brings sid (or its text) back
    for _ in range(2):
        if not env.menu.entities:
            break
        env.step(first_of(env, ActionType.LOOKUP).id)
        assert sid not in env.state.visible
        assert all(sid not in a.targets for a in env.menu.actions)
        check_menu(env, lookupable)
    rec = env.trajectory.steps[0]
    assert rec.action_type == "SELECT" and rec.targets == [sid] and rec.introduced == [sid] and rec.consumed == [sid]


def test_lookup_sets_visible_to_its_preview_and_marks_visited(hotpot_view, hotpot_questions, lookupable) -> None:
    env = MenuEnv(hotpot_view)
    env.reset(hotpot_questions[0])
    visited = []
    for _ in range(3):
        action = first_of(env, ActionType.LOOKUP)
        entity = action.targets[0]
        preview = env.preview(action)
        result = env.step(action.id)
        assert result.valid and not result.done
        assert tuple(env.state.visible) == preview.visible == preview.introduced
        assert env.state.committed == []
        visited.append(entity)
        assert env.state.visited == visited
        assert all(not set(visited) & set(a.targets) for a in env.menu.actions)
        for sid in preview.visible:
            assert sid in env.state.observed
        check_menu(env, lookupable)
    assert env.trajectory.steps[-1].consumed == [visited[-1]]


def test_answer_with_commits_and_ends(hotpot_view, hotpot_questions) -> None:
    env = MenuEnv(hotpot_view)
    env.reset(hotpot_questions[2])
    env.step("A0")
    committed0 = list(env.state.committed)
    target = env.state.visible[-1]
    result = env.step(action_for(env, ActionType.ANSWER_WITH, target).id)
    assert result.done and result.valid and result.observation == ""
    assert env.state.committed == committed0 + [target]
    assert env.state.terminated_by == "ANSWER_WITH" == env.trajectory.terminated_by
    assert env.trajectory.committed == env.state.committed
    with pytest.raises(EpisodeOver):
        env.step("A0")
    traj = env.finish("some answer")
    assert traj.answer == "some answer" and traj.turns == 2


def test_multi_sentence_answer_with_commits_all_and_ends(hotpot_view, hotpot_questions) -> None:
    """ANSWER_WITH(s_1, s_2) commits both visible sentences in one turn and ends (appendix 'Action inventory'); k = 2
    is the extended preset's ``answer_with_max``."""
    env = MenuEnv(hotpot_view, EnvConfig(answer_with_max=2))
    env.reset(hotpot_questions[2])
    env.step("A0")
    committed0, visible = list(env.state.committed), list(env.state.visible)
    pair = (visible[0], visible[-1])
    action = next(a for a in env.menu.actions if a.type is ActionType.ANSWER_WITH and a.targets == pair)
    assert env.menu.describe(action) == f"{action.id} = ANSWER_WITH S0 S{len(visible) - 1}"
    preview = env.preview(action)
    assert (preview.introduced, preview.terminal) == (pair, True)
    result = env.step(action.id)
    assert result.done and result.valid
    assert env.state.committed == committed0 + list(pair) == list(preview.committed)
    assert env.trajectory.turns == 2 and env.trajectory.terminated_by == "ANSWER_WITH"
    assert env.trajectory.steps[-1].introduced == list(pair)


@pytest.mark.parametrize("k", [1, 3])
def test_answer_with_cap_bounds_the_menu(hotpot_view, hotpot_questions, k) -> None:
    env = MenuEnv(hotpot_view, EnvConfig(answer_with_max=k))
    env.reset(hotpot_questions[0])
    n = len(env.state.visible)
    sizes = [len(a.targets) for a in env.menu.actions if a.type is ActionType.ANSWER_WITH]
    assert max(sizes) == min(k, n)
    assert len(sizes) == sum(math.comb(n, i) for i in range(1, k + 1))
    with pytest.raises(ConfigError, match="answer_with_max"):
        EnvConfig(answer_with_max=0)


def test_answer_ends_without_committing(hotpot_view, hotpot_questions) -> None:
    env = MenuEnv(hotpot_view)
    env.reset(hotpot_questions[3])
    with pytest.raises(HarnessError):
        env.finish("too early")
    result = env.step(first_of(env, ActionType.ANSWER).id)
    assert result.done and env.state.committed == [] and env.state.terminated_by == "ANSWER"
    with pytest.raises(EpisodeOver):
        env.step("A0")


def test_turn_budget_ends_the_episode(hotpot_view, hotpot_questions) -> None:
    env = MenuEnv(hotpot_view, EnvConfig(max_turns=3))
    env.reset(hotpot_questions[0])
    assert env.step("A0").done is False
    assert env.step("nonsense").done is False  # invalid replies count toward T
    last = env.step("A0")
    assert last.done and env.state.terminated_by == "max_turns" == env.trajectory.terminated_by
    assert env.trajectory.turns == 3 and env.trajectory.invalid_turns == 1
    assert len(env.state.committed) == 2
    with pytest.raises(EpisodeOver):
        env.step("A0")


def test_invalid_replies_count_a_turn_and_change_nothing(hotpot_view, hotpot_questions) -> None:
    env = MenuEnv(hotpot_view)
    env.reset(hotpot_questions[0])
    env.step("A0")
    before = snapshot(env)
    n = len(env.menu.actions)
    for k, (reply, reason) in enumerate(
        [
            ("A1 || Danish chemist pH", "free-text riders are not allowed"),
            ("A0 A1", "several action ids given (A0, A1)"),
            (f"A{n + 5}", f"unknown action id A{n + 5}; available: A0, A1"),
            ("I choose A2", "free text around the action id"),
        ],
        start=1,
    ):
        result = env.step(reply)
        assert not result.valid and not result.done and reason in result.error
        lines = result.observation.splitlines()
        assert lines[0] == f"[Step {2 + k}/6]"  # one valid turn and k invalid ones used
        assert lines[-2] == f"Invalid action: {result.error}"
        after = snapshot(env)
        assert after.pop("turn") == before["turn"] + k
        assert after == {k2: v for k2, v in before.items() if k2 != "turn"}
        rec = env.trajectory.steps[-1]
        assert rec.chosen is None and rec.action_type is None and rec.error == result.error and rec.reply == reply
        assert rec.committed_after == env.state.committed and rec.visible_after == env.state.visible
    # the sixth turn: still invalid -> the budget ends the episode
    result = env.step("hello")
    assert not result.valid and "no action id found" in result.error
    assert result.done and env.state.terminated_by == "max_turns" and env.trajectory.invalid_turns == 5


# -- preview --------------------------------------------------------------------------------------
def test_preview_is_read_only_and_matches_step(hotpot_view, hotpot_questions) -> None:
    item = hotpot_questions[1]
    env = MenuEnv(hotpot_view)
    env.reset(item)
    env.step("A0")  # a state with committed evidence and bridge lookups
    state_copy, menu_copy = copy.deepcopy(env.state), copy.deepcopy(env.menu)
    before = snapshot(env)
    traj_steps = len(env.trajectory.steps)
    previews = {a.id: env.preview(a) for a in env.menu.actions}
    assert env.preview_all() == previews
    assert snapshot(env) == before and env.menu == menu_copy and len(env.trajectory.steps) == traj_steps
    for f in ("committed", "visible", "visited", "observed", "producer", "turn", "done"):
        assert getattr(env.state, f) == getattr(state_copy, f)
    assert np.array_equal(env.state.question_vec, state_copy.question_vec)
    with pytest.raises(HarnessError, match="unknown action id"):
        env.preview("A999")

    # preview then step: the same result, for one action of every type
    kinds = {}
    for a in env.menu.actions:
        kinds.setdefault(a.type, a)
    assert set(kinds) == set(ActionType)
    for kind, action in kinds.items():
        env.reset(item)
        env.step("A0")
        preview = env.preview(action.id)
        assert preview.type is kind and preview.action_id == action.id
        result = env.step(action.id)
        assert tuple(env.state.committed) == preview.committed
        assert result.done == preview.terminal
        if not result.done:
            assert tuple(env.state.visible) == preview.visible
        assert tuple(env.trajectory.steps[-1].introduced) == preview.introduced


def test_record_previews_match_preview_all(hotpot_view, hotpot_questions) -> None:
    env = MenuEnv(hotpot_view, record_previews=True)
    env.reset(hotpot_questions[0])
    expected = {a: list(p.introduced) for a, p in env.preview_all().items()}
    env.step("A0")
    assert env.trajectory.steps[0].previews == expected


# -- the environment-built query ------------------------------------------------------------------
def test_lookup_query_is_question_plus_committed_only(hotpot_view, hotpot_questions, monkeypatch) -> None:
    item = hotpot_questions[0]
    env = MenuEnv(hotpot_view)
    env.reset(item)
    encoded: list[str] = []
    real_encode = hotpot_view.encode

    def recording_encode(texts):
        encoded.extend(texts)
        return real_encode(texts)

    monkeypatch.setattr(hotpot_view, "encode", recording_encode)
    env.step("<action>A0</action>")
    env.step("A1 || Carsten Olsen death year Copenhagen")  # rejected: the rider never reaches a query
    committed_texts = [t for _, t in env.committed_texts()]
    m_text = lookup_query(item.question, committed_texts, env.config.query_max_words)
    surfaces = {e.surface for sid, ents in hotpot_view.entities_of(env.state.committed + env.state.visible).items() for e in ents}
    assert m_text in encoded
    assert set(encoded) <= {m_text} | surfaces, set(encoded) - {m_text} - surfaces
    assert not any("Copenhagen death" in t or "||" in t or "<action>" in t for t in encoded)
    monkeypatch.undo()

    m_vec = hotpot_view.encode([m_text])[0]
    q_vec = hotpot_view.encode([lookup_query(item.question, [])])[0]
    committed = set(env.state.committed)
    committed_keys = {text_key(t) for t in committed_texts}
    pools = hotpot_view.lookup_pools([e.id for e in env.menu.entities], articles=env.config.article_pool)
    changed = 0
    for e in env.menu.entities:
        # the menu's lookup result is exactly the pool ranked by m_t = concat(q, C_t)
        assert env.menu.lookup_results[e.id] == lookup_result(hotpot_view, pools[e.id], m_vec, committed, committed_keys, env.config)
        with_q_only = lookup_result(hotpot_view, pools[e.id], q_vec, committed, committed_keys, env.config)
        changed += with_q_only != env.menu.lookup_results[e.id]
    assert changed >= 1, "committing evidence never changed a lookup ranking"


# -- determinism ----------------------------------------------------------------------------------
def _without_timings(traj: Trajectory) -> dict:
    data = traj.to_json()
    data.pop("seconds")
    for s in data["steps"]:
        s.pop("seconds")
    return data


def test_determinism_fresh_envs_and_fresh_caches(hotpot_view, hotpot_questions) -> None:
    item = hotpot_questions[5]
    policy = make_policy("heuristic")
    first = run_episode(MenuEnv(hotpot_view), policy, item)
    second = run_episode(MenuEnv(hotpot_view), policy, item)
    # a second GraphView with cold caches on the same store and artifact
    cold = GraphView(hotpot_view.store, hotpot_view.artifact, embedder=hotpot_view.embedder)
    third = run_episode(MenuEnv(cold), policy, item)
    assert _without_timings(first) == _without_timings(second) == _without_timings(third)
    obs = [MenuEnv(v).reset(item) for v in (hotpot_view, cold)]
    assert obs[0] == obs[1]


def test_cached_lookup_results_give_the_uncached_menus(hotpot_view, hotpot_questions) -> None:
    """The view caches each LOOKUP result under (m_t, C_t, caps, entity); a fresh view's menus, built without the
    cache (no m_text), must be the same at every state of real episodes, and a revisited state must hit the cache."""
    from harness_g.agent.env.menu import build_menu

    policy = make_policy("heuristic")
    cold = GraphView(hotpot_view.store, hotpot_view.artifact, embedder=hotpot_view.embedder)
    checked = 0
    for item in hotpot_questions[:4]:
        env = MenuEnv(cold)
        env.reset(item)
        while not env.done:
            st = env.state
            plain = build_menu(cold, question_vec=st.question_vec, m_vec=env._m_vec, committed=st.committed,
                               visible=[s.id for s in env.menu.sentences], visited=st.visited, cfg=env.config,
                               question_targets=st.question_targets)
            assert plain.to_json() == env.menu.to_json() and plain.lookup_results == env.menu.lookup_results
            checked += 1
            env.step(policy.act(env.observe()))
    assert checked >= 8
    cache = cold.lookup_result_cache
    hits = cache.hits
    again = MenuEnv(cold)
    again.reset(hotpot_questions[0])  # the same U_0 and C_0: every LOOKUP result comes from the cache
    assert cache.hits > hits and again.menu.lookup_results


# -- provenance ------------------------------------------------------------------------------------
def test_provenance_select_after_lookup(hotpot_view, hotpot_questions) -> None:
    env = MenuEnv(hotpot_view)
    env.reset(hotpot_questions[0])
    init_sid = env.state.visible[0]
    env.step("A0")  # step 0: SELECT an InitRetrieve sentence -> no policy producer
    assert env.trajectory.steps[0].producers == []
    env.step(first_of(env, ActionType.LOOKUP).id)  # step 1 surfaces new sentences
    surfaced = env.trajectory.steps[1].introduced
    assert surfaced and env.state.visible == surfaced
    assert set(surfaced) <= set(env.trajectory.steps[1].produced)
    env.step(action_for(env, ActionType.SELECT, surfaced[0]).id)  # step 2
    rec = env.trajectory.steps[2]
    assert rec.consumed == [surfaced[0]] and rec.producers == [1]
    assert init_sid in env.state.committed


def test_provenance_lookup_of_bridge_entity(hotpot_view, hotpot_questions) -> None:
    """LOOKUP of an entity from a sentence committed at step 0 has producers == [0] — also when the
    entity is mentioned in its own lookup result (the usual case), which re-produces it at step 1."""
    env = MenuEnv(hotpot_view)
    checked, self_mentioning = 0, 0
    for item in hotpot_questions[:3]:
        env.reset(item)
        sid = env.state.visible[0]
        env.step("A0")  # step 0 commits sid
        ents = {e.id for e in hotpot_view.entities_of([sid]).get(sid, ())}
        assert set(env.trajectory.steps[0].produced) == ents
        bridge = [e.id for e, role in zip(env.menu.entities, env.menu.entity_roles) if role == "bridge"]
        assert set(bridge) <= ents
        for entity in bridge:
            env.reset(item)
            env.step("A0")
            env.step(action_for(env, ActionType.LOOKUP, entity).id)  # step 1
            rec = env.trajectory.steps[1]
            assert rec.consumed == [entity] and rec.producers == [0], (item.id, entity)
            mentioned = hotpot_view.entities_of(rec.introduced)
            self_mentioning += any(entity in {e.id for e in mentioned.get(s, ())} for s in rec.introduced)
            assert env.state.producer[entity] == (1 if entity in rec.produced else 0)
            checked += 1
    assert checked >= 3 and self_mentioning >= 1


# -- trajectory records ----------------------------------------------------------------------------
def test_trajectory_jsonl_round_trip(hotpot_view, hotpot_questions, tmp_path: Path) -> None:
    env = MenuEnv(hotpot_view, record_previews=True)
    env.reset(hotpot_questions[4])
    for reply in ("A0", "bad reply", first_of(env, ActionType.LOOKUP).id):
        env.step(reply)
    env.step(first_of(env, ActionType.ANSWER).id)
    traj = env.finish("Giotto", note="x")
    path = tmp_path / "t.jsonl"
    save_jsonl(path, [traj])
    save_jsonl(path, [traj], append=True)
    loaded = list(load_jsonl(path))
    assert len(loaded) == 2
    assert loaded[0].to_json() == traj.to_json() == loaded[1].to_json()
    assert loaded[0].turns == 4 and loaded[0].invalid_turns == 1 and loaded[0].meta == {"note": "x"}
    assert loaded[0].steps[2].rejected == [a["id"] for a in traj.steps[2].menu if a["id"] != traj.steps[2].chosen]
    assert loaded[0].graph_version == hotpot_view.version and loaded[0].env_config == EnvConfig().to_dict()
