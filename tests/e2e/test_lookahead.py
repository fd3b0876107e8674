"""The lookahead policy (agent/policies/lookahead.py): its scoring and choices on a hand-built observation (no graph),
then whole episodes on the real HotpotQA test graph (both stores)."""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import pytest

from harness_g.agent.env import MenuEnv, Preview
from harness_g.agent.env.actions import ActionType
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import EntityInfo
from harness_g.agent.env.observation import (CommittedSentence, MenuAction, MenuEntity, Observation, PolicyTools,
                                             VisibleSentence, next_episode_id)
from harness_g.agent.eval.run import score_trajectory
from harness_g.agent.eval.runner import run_episode
from harness_g.agent.policies import POLICIES, make_policy
from harness_g.agent.policies.base import Policy
from harness_g.agent.policies.lookahead import (BRIDGE, NAMED, NONE, LookaheadPolicy, article_leads,
                                                count_backward_hops, named_leads)
from harness_g.errors import ConfigError


# -- a hand-built observation: the Observation protocol is designed for testing a policy alone --------------------
def _unit(v: Sequence[float]) -> np.ndarray:
    return np.asarray(v, dtype=np.float32) / np.linalg.norm(v)


Q = "In what year did the plant ecologist who assisted Sorensen die?"
TEXTS = {"s_noise": "Plant ecologists study when plants die.", "s_sor": "Sorensen was assisted by Carsten Olsen.",
         "s_sor2": "He worked in Copenhagen.", "s_ols2": "He studied soil.", "s_olsen": "Carsten Olsen died in 1974.",
         "s_back": "Danish botany flourished with Carsten Olsen.", "s_dk": "Denmark has many plants.",
         "s_back2": "The Olsen Prize honours Carsten Olsen.", "s_junk": "Unrelated."}
M1 = f"{Q} {TEXTS['s_sor']}"  # m_t once s_sor is committed (the environment builds it; here by hand)


def _ent(eid: str, surface: str, label: str, lookupable: bool = True) -> EntityInfo:
    from harness_g.graph.text.canonical import canonicalize

    return EntityInfo(eid, canonicalize(surface), surface, label, lookupable, 1)


class Tools:
    """Hand-picked 3-d unit vectors per text and sentence, a mention table, and canned previews per action id.
    Encoding a sentence's text gives its sentence vector (committed sentences are encoded by their text)."""

    SENTENCES = {
        "s_noise": [0.8, 0.0, 0.6],  # closest to q, opens no article: what dense retrieval would take
        "s_sor": [0.75, 0.661, 0.0],  # opens the article "Sorensen", which the question names
        "s_sor2": [0.6, 0.3, 0.742],  # a later sentence of "Sorensen", whose article C_t already holds
        "s_ols2": [0.1, 0.9, 0.424],  # a later sentence of "Carsten Olsen (ecologist)", named once s_sor is committed
        "s_olsen": [0.3, 0.954, 0.0],  # opens "Carsten Olsen (ecologist)", named by s_sor once committed
        "s_back": [0.2, 0.5, 0.84],  # opens "Danish botany" and mentions Carsten Olsen: a backward hop
        "s_back2": [0.3, 0.4, 0.866],  # opens "Olsen Prize" and mentions Carsten Olsen: another backward hop
        "s_dk": [0.7, 0.7, 0.14],  # LOOKUP Denmark's best result: similar, but opens nothing named
        "s_junk": [0.0, 0.0, 1.0],
    }

    def __init__(self, previews: dict[str, Preview] | None = None, olsen_mentions_new: bool = False):
        self.vectors = {Q: _unit([1, 0, 0]), M1: _unit([0.8, 0.6, 0])}
        self.sentences = {s: _unit(v) for s, v in self.SENTENCES.items()}
        olsen = _ent("e_olsen", "Carsten Olsen", "PERSON")
        self.table = {
            "s_sor": [_ent("t_sor", "Sorensen", "TITLE"), olsen],
            "s_olsen": [_ent("t_olsen", "Carsten Olsen (ecologist)", "TITLE"), olsen, _ent("e_1974", "1974", "DATE", False)]
            + ([_ent("e_cph", "Copenhagen", "GPE")] if olsen_mentions_new else []),
            "s_back": [_ent("t_bot", "Danish botany", "TITLE"), olsen],
            "s_back2": [_ent("t_prize", "Olsen Prize", "TITLE"), olsen],
            "s_dk": [_ent("e_dk", "Denmark", "GPE")],
        }
        self.previews = previews or {}
        self.previewed: list[str] = []

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        by_text = {text: self.sentences[sid] for sid, text in TEXTS.items()}
        return np.stack([self.vectors[t] if t in self.vectors else by_text[t] for t in texts])

    def rank(self, vector: np.ndarray, sentence_ids: Sequence[str]) -> list[tuple[str, float]]:
        known = [s for s in sentence_ids if s in self.sentences]
        return sorted(((s, float(self.sentences[s] @ vector)) for s in known), key=lambda p: (-p[1], p[0]))

    def mentions(self, sentence_ids: Sequence[str]) -> dict[str, list[EntityInfo]]:
        return {s: self.table[s] for s in sentence_ids if s in self.table}

    def titles(self, sentence_ids: Sequence[str]) -> dict[str, str]:
        return {s: TITLES[s] for s in sentence_ids if s in TITLES}

    def preview(self, action_id: str) -> Preview:
        self.previewed.append(action_id)
        return self.previews[action_id]


TITLES = {"s_noise": "Botany", "s_sor": "Sorensen", "s_sor2": "Sorensen", "s_ols2": "Carsten Olsen (ecologist)",
          "s_olsen": "Carsten Olsen (ecologist)",
          "s_back": "Danish botany", "s_back2": "Olsen Prize", "s_dk": "Denmark", "s_junk": "Misc"}


def _observe(tools: Tools, *, committed=(), visible=(), lookups=(), turn=1, max_turns=6) -> Observation:
    """The observation the environment would build: SELECT per visible sentence, LOOKUP per entity, ANSWER_WITH per
    subset of 1..2 visible sentences, ANSWER; C_t, U_t with titles, m_t."""
    acts: list[tuple[ActionType, tuple[str, ...]]] = [(ActionType.SELECT, (s,)) for s in visible]
    acts += [(ActionType.LOOKUP, (e,)) for e, _ in lookups]
    acts += [(ActionType.ANSWER_WITH, (s,)) for s in visible]
    acts += [(ActionType.ANSWER_WITH, (a, b)) for i, a in enumerate(visible) for b in visible[i + 1:]]
    acts.append((ActionType.ANSWER, ()))
    menu = tuple(MenuAction(f"A{i}", t, tg, f"A{i} = {t.value} {' '.join(tg)}".strip()) for i, (t, tg) in enumerate(acts))
    return Observation(
        text="(rendered)", event="ok", error=None, episode=next_episode_id(), question_id="q", question=Q, turn=turn,
        max_turns=max_turns, committed=tuple(CommittedSentence(s, TITLES[s], TEXTS[s]) for s in committed),
        visible=tuple(VisibleSentence(s, f"S{i}", TITLES[s], TEXTS[s]) for i, s in enumerate(visible)),
        entities=tuple(MenuEntity(e, f"E{i}", name, name, "bridge") for i, (e, name) in enumerate(lookups)),
        menu=menu, lookup_query=M1 if committed else Q, search_available=bool(lookups), tools=tools)


def _lookup_preview(obs: Observation, entity: str, result: tuple[str, ...]) -> Preview:
    aid = next(a.id for a in obs.actions(ActionType.LOOKUP) if a.targets == (entity,))
    return Preview(aid, ActionType.LOOKUP, result, tuple(obs.committed_ids), result, False)


def test_scores_and_choices_on_a_hand_built_observation() -> None:
    policy = LookaheadPolicy()
    tools = Tools()
    assert isinstance(tools, PolicyTools)
    # turn 0: the question names the article s_sor opens (tier 2, + named_bonus) -> it beats the closer s_noise
    obs = _observe(tools, visible=["s_noise", "s_sor"], turn=0)
    scored = policy.scores(obs, obs.visible_ids)
    assert scored["s_noise"].score == pytest.approx(0.8, abs=1e-5) and scored["s_noise"].tier == NONE
    assert scored["s_sor"].score == pytest.approx(0.75 + 0.1, abs=1e-3) and scored["s_sor"].tier == NAMED
    assert obs.action(policy.act(obs)).targets == ("s_sor",) and obs.action(policy.act(obs)).type is ActionType.SELECT
    assert LookaheadPolicy(named_bonus=0.0).act(obs) == "A0"  # without the bonus, plain cosine: s_noise
    # the last turn of the budget with nothing committed: ANSWER_WITH that sentence at once
    last = _observe(tools, visible=["s_noise", "s_sor"], turn=5)
    assert last.action(policy.act(last)).type is ActionType.ANSWER_WITH

    # turn 1, s_sor committed: nothing visible is useful; LOOKUP Denmark (menu first) previews only s_dk, LOOKUP
    # Carsten Olsen previews s_olsen, the lead of an article s_sor names -> the second LOOKUP, chosen by its preview
    obs = _observe(tools, committed=["s_sor"], visible=["s_noise", "s_sor2"],
                   lookups=[("e_dk", "denmark"), ("e_olsen", "carsten olsen")])
    tools.previews = {p.action_id: p for p in (_lookup_preview(obs, "e_dk", ("s_dk", "s_noise")),
                                               _lookup_preview(obs, "e_olsen", ("s_junk", "s_olsen", "s_back")))}
    scored = policy.scores(obs, ["s_sor2", "s_dk", "s_olsen", "s_back", "s_junk"])
    assert scored["s_sor2"].tier == NONE  # its article "Sorensen" is named, but C_t already holds a sentence of it
    assert (scored["s_olsen"].tier, scored["s_back"].tier, scored["s_dk"].tier) == (NAMED, BRIDGE, NONE)
    values = policy.lookup_values(obs)
    assert [(v.action, v.sentence) for v in values] == [("A3", "s_olsen")]  # Denmark's preview shows nothing useful
    assert values[0].value == scored["s_olsen"]
    assert policy.act(obs) == "A3" and sorted(set(tools.previewed)) == ["A2", "A3"]

    # turn 2, after the LOOKUP: no LOOKUP left, two useful sentences, committing them exposes no new LOOKUP target
    # (they mention only Carsten Olsen, already in C_t) -> ANSWER_WITH both in one turn
    obs = _observe(tools, committed=["s_sor"], visible=["s_junk", "s_olsen", "s_back"], turn=2)
    chosen = obs.action(policy.act(obs))
    assert chosen.type is ActionType.ANSWER_WITH and chosen.targets == ("s_olsen", "s_back")
    # ... but when s_olsen would expose a new target (Copenhagen), it is committed alone first (best tier first)
    opens = Tools(olsen_mentions_new=True)
    obs = _observe(opens, committed=["s_sor"], visible=["s_junk", "s_olsen", "s_back"], turn=2)
    chosen = obs.action(policy.act(obs))
    assert chosen.type is ActionType.SELECT and chosen.targets == ("s_olsen",)
    # a later (non-lead) sentence of a named article C_t does not hold yet is named too, when visible (titles shown)
    obs = _observe(tools, committed=["s_sor"], visible=["s_noise", "s_ols2"], turn=2)
    assert policy.scores(obs, obs.visible_ids)["s_ols2"].tier == NAMED
    assert obs.action(policy.act(obs)).targets == ("s_ols2",)
    # the free-query arm shows no menu: a clear error, not a guess
    with pytest.raises(ConfigError, match="menu interface only"):
        policy.act(dataclasses.replace(obs, menu=(), interface="free-query"))
    # nothing useful visible and no LOOKUP: ANSWER
    obs = _observe(tools, committed=["s_sor"], visible=["s_noise", "s_junk"], turn=2)
    assert obs.action(policy.act(obs)).type is ActionType.ANSWER


def test_a_title_mention_of_another_article_is_not_a_lead() -> None:
    """The build links "Politician" to every sentence naming it; such a sentence names that article, it does not open
    one. Before, any TITLE mention made a lead: every politician's biography became a tier-2 sentence once
    "politician" was in q + C_t."""
    tools = Tools()
    tools.table["s_noise"] = [_ent("t_pol", "Politician", "TITLE")]  # "Botany" sentence naming the article Politician
    tools.table["s_sor2"] = [_ent("t_sor", "Sorensen", "TITLE")]  # a later sentence naming its own article
    assert article_leads(tools, ["s_noise", "s_sor", "s_sor2", "s_dk"]) == {"s_sor": "sorensen", "s_sor2": "sorensen"}
    assert named_leads(tools, "Was Sorensen a politician?", (), ["s_noise", "s_sor"]) == {"s_sor"}


def test_backward_hops_are_capped_and_read_from_the_observation() -> None:
    tools = Tools()
    committed = [CommittedSentence(s, TITLES[s], TEXTS[s]) for s in ("s_sor", "s_back")]
    assert count_backward_hops(tools, Q, committed[:1]) == 0
    assert count_backward_hops(tools, Q, committed) == 1  # s_back was a bridge lead, not named, given s_sor
    obs = _observe(tools, committed=["s_sor", "s_back"], visible=["s_junk", "s_olsen"], turn=3)
    # s_olsen stays named; a second backward hop is not allowed (backward_hops = 1), more are with a larger cap
    scored = LookaheadPolicy().scores(obs, ["s_olsen", "s_back2"])
    assert (scored["s_olsen"].tier, scored["s_back2"].tier) == (NAMED, NONE)
    assert LookaheadPolicy(backward_hops=2).scores(obs, ["s_back2"])["s_back2"].tier == BRIDGE
    again = _observe(tools, committed=["s_sor", "s_noise"], visible=["s_junk", "s_back"], turn=3)
    assert LookaheadPolicy().scores(again, ["s_back"])["s_back"].tier == BRIDGE
    assert LookaheadPolicy(backward_hops=0).scores(again, ["s_back"])["s_back"].tier == NONE


def test_last_turn_harvests_the_two_best_useful_sentences() -> None:
    tools = Tools()
    obs = _observe(tools, committed=["s_sor"], visible=["s_junk", "s_back", "s_olsen"], turn=5,
                   lookups=[("e_dk", "denmark")])
    chosen = obs.action(LookaheadPolicy().act(obs))
    assert chosen.type is ActionType.ANSWER_WITH and chosen.targets == ("s_back", "s_olsen")  # visible order
    assert tools.previewed == []  # the last turn needs no lookahead
    assert obs.action(LookaheadPolicy(max_commits=2).act(obs)).targets == ("s_olsen",)  # one commit of room: the best


# -- whole episodes on the real graph ----------------------------------------------------------------------------
class Recorder(Policy):
    """Wraps a policy and records every (observation, reply) pair; answers through it."""

    def __init__(self, inner: Policy):
        self.inner, self.name, self.seen = inner, inner.name, []

    def act(self, observation: Observation) -> str:
        reply = self.inner.act(observation)
        self.seen.append((observation, reply))
        return reply

    def answer(self, question, evidence, observation) -> str:
        return self.inner.answer(question, evidence, observation)


def test_registered_and_listed_by_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from harness_g.cli import main

    assert isinstance(make_policy("lookahead"), LookaheadPolicy) and "lookahead" in POLICIES
    with pytest.raises(SystemExit) as done:
        main(["eval", "--help"])
    assert done.value.code == 0
    policy_help = " ".join(capsys.readouterr().out.split("--policy POLICY")[-1].split())
    assert policy_help.startswith("policy (") and "lookahead" in policy_help.split(")")[0]


@pytest.mark.parametrize("max_turns", [1, 2, 6])
def test_offered_ids_only_within_the_turn_budget(hotpot_view, hotpot_questions, max_turns: int) -> None:
    env = MenuEnv(hotpot_view, EnvConfig(max_turns=max_turns))
    for item in hotpot_questions:
        rec = Recorder(LookaheadPolicy())
        traj = run_episode(env, rec, item)
        assert all(reply in obs.action_ids for obs, reply in rec.seen)
        assert len(traj.steps) <= max_turns and all(s.chosen is not None for s in traj.steps)
        assert traj.committed and traj.terminated_by in ("ANSWER", "ANSWER_WITH", "max_turns")
        if max_turns == 1:  # one turn: the first commit must be an ANSWER_WITH
            assert [s.action_type for s in traj.steps] == ["ANSWER_WITH"]


def test_lookup_choice_is_the_best_previewed_one(hotpot_view, hotpot_questions) -> None:
    """Every LOOKUP it takes is the one whose preview (recomputed here with env.preview) newly shows the best
    (tier, score) useful sentence; on the Cartagena question that sentence is the gold one, committed next turn."""
    env = MenuEnv(hotpot_view)
    policy = LookaheadPolicy()
    lookups = not_first = 0
    for item in hotpot_questions:
        env.reset(item)
        while not env.done:
            obs = env.observe()
            reply = policy.act(obs)
            if obs.action(reply).type is ActionType.LOOKUP:
                shown = set(obs.visible_ids) | set(obs.committed_ids)
                best = {}
                for a in obs.actions(ActionType.LOOKUP):
                    fresh = [s for s in env.preview(a.id).visible if s not in shown]
                    useful = [v.rank_key for v in policy.scores(obs, fresh).values() if v.tier > NONE]
                    if useful:
                        best[a.id] = max(useful)
                top = max(best.values())
                assert reply == next(aid for aid, key in best.items() if key == top)  # ties: menu order
                lookups += 1
                not_first += reply != obs.actions(ActionType.LOOKUP)[0].id
                expected = policy.lookup_values(obs)[0].sentence
                env.step(reply)
                if item.id == "5a8268aa55429940e5e1a8aa":  # Hugo Rodriguez Romero -> FC Cartagena (Murcia)
                    assert expected == "p_4decac806d805aa6:0" and expected in item.gold_sentence_ids
                    nxt = env.observe()
                    assert expected in nxt.action(policy.act(nxt)).targets
                continue
            env.step(reply)
    assert lookups >= 3 and not_first >= 1  # previews changed a choice a first-LOOKUP script would make


def test_recall_beats_the_fixed_script_and_is_deterministic(hotpot_view, hotpot_questions) -> None:
    env = MenuEnv(hotpot_view)
    ours, script = [], []
    for item in hotpot_questions:
        a = run_episode(env, make_policy("lookahead"), item)
        b = run_episode(env, make_policy("lookahead"), item)
        assert [s.reply for s in a.steps] == [s.reply for s in b.steps]
        assert a.committed == b.committed and a.answer == b.answer
        ours.append(score_trajectory(hotpot_view, item, a)["evidence_recall"])
        fixed = run_episode(env, make_policy("heuristic"), item)
        script.append(score_trajectory(hotpot_view, item, fixed)["evidence_recall"])
    assert sum(ours) >= sum(script)
    # "The actor known for his role as Freddie in The Deep Blue Sea": the film's lead names Tom Hiddleston, whose
    # article's Olivier-award sentence (gold) it commits; the fixed script misses it
    i = next(i for i, q in enumerate(hotpot_questions) if q.id == "5a8b1a925542997f31a41c6e")
    assert ours[i] > script[i] == 0.0
