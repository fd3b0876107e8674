"""The environment integrations' core, :class:`MenuService` (no third-party library), on the real test graph and
both stores: actions by menu id and by kind + handle give the in-process trajectory, refused actions use no turn,
the answer phase, the outcome reward, question lookup, capacity, and the SNC credit hook (tiny random answerer)
giving the trainer's numbers."""
from __future__ import annotations

import pytest
from helpers.menu_scripts import SCRIPTS, actions, play, served_snapshot, strip_timings

from harness_g.agent.env import EpisodeOver, MenuEnv
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.eval.metrics import token_f1
from harness_g.agent.integrations.menu_service import (ADHOC_ID, ActionRefused, ActionSpec, MenuService, ServiceFull,
                                                       ServiceLimits, UnknownEpisode)
from harness_g.errors import HarnessError
from harness_g.graph.types import QAItem


def _spec(wire: dict) -> ActionSpec:
    return ActionSpec(wire.get("action_id"), wire.get("kind"), tuple(wire.get("targets", ())), wire.get("answer"))


@pytest.mark.parametrize("script", range(len(SCRIPTS)))
def test_ids_and_kinds_replay_the_in_process_episode(hotpot_view, hotpot_questions, script):
    item = hotpot_questions[script]
    played = play(MenuEnv(hotpot_view), item, SCRIPTS[script])
    service = MenuService(hotpot_view, hotpot_questions)
    for form in (0, 1):  # menu ids, then kind + handles
        episode = service.reset(question=item.question)
        first = service.observation(episode)
        assert first["phase"] == "retrieve" and first["reward"] == 0.0 and first["info"]["gold"] is True
        assert served_snapshot(first) == played.first
        wire = actions(played, form)
        for step, action in zip(played.steps, wire):
            service.step(episode, _spec(action))
            obs = service.observation(episode)
            assert served_snapshot(obs) == step.snapshot
            assert obs["info"]["committed"] == step.snapshot["committed"]
            if obs["phase"] == "retrieve":
                assert obs["reward"] == 0.0 and not obs["done"]
        if played.answer_alone:
            assert service.observation(episode)["phase"] == "answer"
            service.step(episode, _spec(wire[-1]))
        obs = service.observation(episode)
        assert obs["phase"] == "over" and obs["done"] and obs["answer"] == played.answer
        assert obs["reward"] == token_f1(played.answer, item.answers) == obs["info"]["f1"]
        assert strip_timings(obs["info"]["trajectory"]) == strip_timings(played.trajectory)
        with pytest.raises(EpisodeOver, match="is over"):
            service.step(episode, ActionSpec(kind="ANSWER", answer="again"))


def test_refused_actions_use_no_turn_and_change_nothing(hotpot_view, hotpot_questions):
    service = MenuService(hotpot_view, hotpot_questions)
    episode = service.reset(question_id=hotpot_questions[0].id)
    before = service.observation(episode)
    refused = [
        (ActionSpec(kind="SELECT", targets=("S99",)), "SELECT S99: not a visible sentence (visible: S0..S"),
        (ActionSpec(kind="SELECT", targets=("S0", "S1")), "SELECT takes exactly one target"),
        (ActionSpec(kind="LOOKUP", targets=("E99",)), "not a LOOKUP target of the current menu"),
        (ActionSpec(kind="ANSWER", targets=("S0",)), "ANSWER takes no targets"),
        (ActionSpec(kind="ANSWER_WITH", targets=("S0", "S1")), "ANSWER_WITH takes 1 visible sentence (env.answer_with_max 1)"),
        (ActionSpec(kind="ANSWER_WITH", targets=("S0", "S0")), "names a sentence twice"),
        (ActionSpec(kind="JUMP"), "unknown action kind 'JUMP'"),
        (ActionSpec(action_id="A0", kind="SELECT"), "got both"),
        (ActionSpec(action_id="A0", targets=("S0",)), "targets go with kind"),
        (ActionSpec(kind="SELECT", targets=("S0",), answer="x"), "answer text comes with an action that ends retrieval"),
        (ActionSpec(answer="x"), "got neither"),
    ]
    for action, reason in refused:
        with pytest.raises(ActionRefused, match=reason.replace("(", r"\(").replace(")", r"\)")):
            service.step(episode, action)
    assert service.observation(episode) == before  # same turn, menu, evidence
    # a raw reply the menu does not offer is the paper's invalid turn: it uses the turn and says why
    service.step(episode, ActionSpec(action_id="A999"))
    after = service.observation(episode)
    assert after["turn"] == 1 and after["event"] == "invalid" and "unknown action id A999" in after["error"]
    assert after["info"]["valid"] is False and after["info"]["action"] is None


def test_answer_phase_after_answer_with_and_after_the_turn_budget(hotpot_view, hotpot_questions):
    item = hotpot_questions[1]
    service = MenuService(hotpot_view, hotpot_questions, EnvConfig(max_turns=2))
    episode = service.reset(question=item.question)
    service.step(episode, ActionSpec(kind="ANSWER_WITH", targets=("S0",)))
    obs = service.observation(episode)
    assert obs["phase"] == "answer" and not obs["done"] and obs["reward"] == 0.0 and obs["menu"] == []
    assert obs["text"].startswith("Answer the question using only the evidence.") and obs["committed"]
    with pytest.raises(ActionRefused, match="retrieval is over \\(ended by ANSWER_WITH\\)"):
        service.step(episode, ActionSpec(kind="SELECT", targets=("S0",)))
    with pytest.raises(ActionRefused, match="send the final answer"):
        service.step(episode, ActionSpec(kind="ANSWER"))
    service.step(episode, ActionSpec(answer=item.answers[0]))
    assert service.observation(episode)["reward"] == 1.0
    # the turn budget ends retrieval the same way
    episode = service.reset(question=item.question)
    service.step(episode, ActionSpec(action_id="nonsense"))
    service.step(episode, ActionSpec(action_id="more nonsense"))
    obs = service.observation(episode)
    assert obs["phase"] == "answer" and obs["terminated_by"] == "max_turns"
    service.step(episode, ActionSpec(kind="ANSWER", answer="Paris"))
    assert service.observation(episode)["reward"] == token_f1("Paris", item.answers)


def test_questions_are_found_by_id_or_text_and_ad_hoc_ones_score_given_answers(hotpot_view, hotpot_questions):
    item = hotpot_questions[2]
    twin = QAItem(id="twin", question=item.question, answers=("other",), dataset="x")
    service = MenuService(hotpot_view, hotpot_questions)
    assert service.find_question(question=item.id) == item
    assert service.find_question(question="  " + item.question.replace(" ", "  ") + " ") == item
    assert service.find_question(question_id=item.id, question=item.question) == item
    with pytest.raises(HarnessError, match="question_id 'nope' is not in the graph's question set"):
        service.find_question(question_id="nope")
    with pytest.raises(HarnessError, match="not the text of question_id"):
        service.find_question(question_id=item.id, question="Who is Giotto?")
    with pytest.raises(HarnessError, match="are not gold answers of graph question"):
        service.find_question(question=item.id, answers=["certainly wrong"])
    with pytest.raises(HarnessError, match="matches 2 questions of the graph's set"):
        MenuService(hotpot_view, [*hotpot_questions, twin]).find_question(question=item.question)
    with pytest.raises(HarnessError, match="needs 'question'"):
        service.find_question()
    adhoc = service.reset(question="Who painted the Bartolini Salimbeni Annunciation?", answers="Lorenzo Monaco")
    assert adhoc.item.id == ADHOC_ID and adhoc.item.answers == ("Lorenzo Monaco",)
    service.step(adhoc, ActionSpec(kind="ANSWER", answer="Lorenzo Monaco"))
    assert service.observation(adhoc)["reward"] == 1.0
    nogold = service.reset(question="Who painted the Bartolini Salimbeni Annunciation?")
    service.step(nogold, ActionSpec(kind="ANSWER", answer="Lorenzo Monaco"))
    obs = service.observation(nogold)
    assert obs["done"] and obs["reward"] is None and obs["info"]["gold"] is False


def test_live_episodes_are_capped_idle_ones_dropped_and_finished_ones_remembered(hotpot_view, hotpot_questions):
    now = [0.0]  # a manual clock: a slow machine's resets must not age `first` past idle_seconds by themselves
    service = MenuService(hotpot_view, hotpot_questions, limits=ServiceLimits(max_sessions=2, idle_seconds=0.2),
                          clock=lambda: now[0])
    first = service.reset(question_id=hotpot_questions[0].id, episode_id="first")
    second = service.reset(question_id=hotpot_questions[1].id)
    with pytest.raises(ServiceFull, match="2 live episodes, the most this server keeps"):
        service.reset(question_id=hotpot_questions[2].id)
    with pytest.raises(HarnessError, match="episode_id 'first' is taken"):
        service.reset(question_id=hotpot_questions[2].id, episode_id="first")
    now[0] += 0.3
    service.step(second, ActionSpec(kind="LOOKUP", targets=("E0",)))  # touched: only `first` is idle now
    third = service.reset(question_id=hotpot_questions[2].id)
    assert service.episode(second.id) is second and service.episode(third.id) is third
    with pytest.raises(UnknownEpisode, match="unknown episode_id 'first'"):
        service.episode("first")
    service.step(third, ActionSpec(kind="ANSWER", answer="x"))
    with pytest.raises(EpisodeOver, match=f"episode {third.id} is over"):
        service.episode(third.id)
    assert service.live_episodes == 1


def test_a_released_episode_is_dropped_first_when_room_is_needed(hotpot_view, hotpot_questions):
    """A closed WebSocket session releases its unfinished episode: it goes before any held one, idle or not."""
    service = MenuService(hotpot_view, hotpot_questions, limits=ServiceLimits(max_sessions=2, idle_seconds=600))
    held = service.reset(question_id=hotpot_questions[0].id)
    released = service.reset(question_id=hotpot_questions[1].id)
    with pytest.raises(ServiceFull, match="finish or close one"):
        service.reset(question_id=hotpot_questions[2].id)
    service.release(released)
    service.step(released, ActionSpec(kind="LOOKUP", targets=("E0",)))  # still playable by its holder-less id
    newest = service.reset(question_id=hotpot_questions[2].id)
    assert service.episode(held.id) is held and service.episode(newest.id) is newest
    with pytest.raises(UnknownEpisode):
        service.episode(released.id)


def test_a_graph_of_the_other_preset_is_refused_before_any_episode(hotpot_view, hotpot_questions):
    from harness_g.errors import ConfigError

    with pytest.raises(ConfigError, match="graph built under preset paper .*rebuild the graph with --preset extended"):
        MenuService(hotpot_view, hotpot_questions, EnvConfig(preset="extended"))


def test_snc_credit_hook_gives_the_trainers_gains_and_credit(hotpot_view, hotpot_questions):
    from harness_g.training.answerer import FrozenAnswerer
    from harness_g.training.config import ModelConfig
    from harness_g.training.credit import compute_credit, frontier_relative
    from harness_g.training.env_credit import AnswererCredit
    from harness_g.training.modeling import load_policy, load_tokenizer
    from harness_g.training.rollout import Rollout, scorer_user_text
    from harness_g.training.snc_scoring import score_rollouts

    spec = ModelConfig(name="tiny-random")
    tok = load_tokenizer(spec)
    answerer = FrozenAnswerer(load_policy(spec, tok, trainable=False), tok, scorer_user_text)
    item = hotpot_questions[4]
    service = MenuService(hotpot_view, hotpot_questions, credit=AnswererCredit(hotpot_view, answerer))
    episode = service.reset(question=item.question)
    infos = []
    for action in (ActionSpec(kind="LOOKUP", targets=("E0",)), ActionSpec(kind="SELECT", targets=("S0",)),
                   ActionSpec(kind="LOOKUP", targets=("E1",)), ActionSpec(kind="ANSWER", answer=item.answers[0])):
        service.step(episode, action)
        infos.append(service.observation(episode)["info"])
    trajectory = episode.env.trajectory
    assert all(step.previews for step in trajectory.steps)  # the hook makes the env record its menus' previews
    gains, _ = score_rollouts(hotpot_view, answerer, [Rollout(item=item, group=0, trajectory=trajectory)])
    expected = compute_credit("snc", gains[0], 1.0)
    for info, gain in zip(infos, gains[0]):
        assert info["gain"] == gain.gain and info["frontier_gains"] == list(gain.frontier)
        assert info["frontier_relative"] == frontier_relative(gain)
    assert any(g.frontier for g in gains[0])  # a LOOKUP step had a frontier to compare against
    assert [(c["frontier"], c["enablement"], c["total"]) for c in infos[-1]["snc"]] == \
        [(c.frontier, c.enablement, c.total) for c in expected]
