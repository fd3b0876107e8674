"""The IGPO arm (paper appendix "Factorial credit control", harness-g.tex l.1061; IGPO, arXiv:2510.14967):
policy-belief information gain, turn-level normalisation within the GRPO group, cumulative turn advantage and
reward scaling — on hand-computed numbers — and its wiring: contexts from real trajectory records, beliefs from
the live policy, advantages on every policy token of a turn without SNC's batch-global scale."""
import json
import math
from pathlib import Path

import pytest
import torch

from harness_g.agent.trajectory import StepRecord, Trajectory
from harness_g.graph.types import QAItem
from harness_g.training.credit import (
    CREDIT_SCHEMES,
    GROUP_SCHEMES,
    StepGains,
    compute_credit,
    discounted_cumulative,
    igpo_advantages,
    igpo_group_normalise,
    igpo_step_advantage,
    igpo_turn_rewards,
    information_gains,
)
from harness_g.training.rollout import Rollout

ROOT = Path(__file__).resolve().parents[1]
SLICE = ROOT / "tests" / "data" / "2wikimultihopqa" / "dev.subset.json"
S = 0.5 / (0.5 + 1e-6)  # |Â| when a group's pooled turn rewards are half 0, half 1: mean 0.5, std 0.5, ε = 1e-6


# -- maths on a hand-computed example -----------------------------------------------------------------------
def test_information_gain_is_the_log_belief_difference():
    # ℓ = log p_θ(y* | q, O_t): -3 -> -2 -> -2 -> -2.5
    assert information_gains([-3.0, -2.0, -2.0, -2.5]) == pytest.approx([1.0, 0.0, -0.5])
    assert information_gains([-1.0]) == []  # no information turn


def test_turn_rewards_end_with_the_scaled_outcome():
    # IGPO's reward scaling: w_ig on the information gains, w_out on the outcome (answer) turn
    assert igpo_turn_rewards([-3.0, -2.0, -2.5], 0.8) == pytest.approx([1.0, -0.5, 0.8])
    assert igpo_turn_rewards([-3.0, -2.0, -2.5], 0.8, ig_weight=0.5, outcome_weight=2.0) == pytest.approx([0.5, -0.25, 1.6])
    assert igpo_turn_rewards([-1.0], 1.0) == [1.0]  # answered at once: only the answer turn


def test_hand_computed_group_normalisation_and_cumulative_advantage():
    """Group 0 (one question, two rollouts), γ = 0.5:
      A: ℓ = [-2, -1, -1] -> IG = [1, 0], R_out = 1 -> r = [1, 0, 1]
      B: ℓ = [-2, -2, -1] -> IG = [0, 1], R_out = 0 -> r = [0, 1, 0]
      pooled over all 6 turns: mean 0.5, std 0.5 -> Â_A = [+1, -1, +1]·S, Â_B = [-1, +1, -1]·S
      Ã_A = [1 + 0.5·(-1 + 0.5·1), -1 + 0.5·1, 1]·S = [0.75, -0.5, 1]·S;  Ã_B = [-0.75, 0.5, -1]·S
    Group 1 (outcome-only GRPO would give it zero advantage: both answers wrong):
      D: ℓ = [-2, -1] -> r = [1, 0];  E: ℓ = [-2, -3] -> r = [-1, 0]
      pooled: mean 0, std √0.5 -> Â_D = [√2, 0], Â_E = [-√2, 0] (·0.70710678/(0.70710678+1e-6))
      Ã_D = [√2 + 0.5·0, 0], Ã_E = [-√2, 0]
    Group 2: a single rollout with r = [0.5, 0.5]: zero std -> zero advantage."""
    log_beliefs = [[-2.0, -1.0, -1.0], [-2.0, -2.0, -1.0], [-2.0, -1.0], [-2.0, -3.0], [-1.0, -0.5]]
    outcomes = [1.0, 0.0, 0.0, 0.0, 0.5]
    groups = [0, 0, 1, 1, 2]
    adv = igpo_advantages(log_beliefs, outcomes, groups, gamma=0.5)
    assert adv[0] == pytest.approx([0.75 * S, -0.5 * S, 1.0 * S])
    assert adv[1] == pytest.approx([-0.75 * S, 0.5 * S, -1.0 * S])
    r2 = math.sqrt(0.5)
    assert adv[2] == pytest.approx([1.0 / (r2 + 1e-6), 0.0])
    assert adv[3] == pytest.approx([-1.0 / (r2 + 1e-6), 0.0])
    assert adv[4] == [0.0, 0.0]
    # γ = 1 (the default): plain cumulative sums of the normalised turn rewards
    adv1 = igpo_advantages(log_beliefs, outcomes, groups)
    assert adv1[0] == pytest.approx([1.0 * S, 0.0, 1.0 * S]) and adv1[1] == pytest.approx([-1.0 * S, 0.0, -1.0 * S])


def test_normalisation_is_per_group_not_batch_global():
    """The old igpo went through SNC's batch-global scale: another group's numbers changed this group's credit.
    IGPO normalises within the GRPO group only."""
    base = igpo_advantages([[-2.0, -1.0, -1.0], [-2.0, -2.0, -1.0]], [1.0, 0.0], [0, 0])
    crowded = igpo_advantages([[-2.0, -1.0, -1.0], [-2.0, -2.0, -1.0], [-30.0, 0.0], [0.0, -30.0]], [1.0, 0.0, 1.0, 0.0],
                              [0, 0, 7, 7])
    assert crowded[:2] == base


def test_building_blocks():
    assert igpo_group_normalise([[1.0, 0.0], [0.0, 1.0]]) == [pytest.approx([S, -S]), pytest.approx([-S, S])]
    assert igpo_group_normalise([[0.3], [0.3, 0.3]]) == [[0.0], [0.0, 0.0]]
    assert discounted_cumulative([1.0, 2.0, 4.0], 0.5) == pytest.approx([1.0 + 0.5 * (2.0 + 0.5 * 4.0), 4.0, 4.0])
    # step -> turn: information turns by index; a terminal ANSWER step (index n) and the answer sequence -> answer turn
    turns = [0.1, 0.2, 0.3]
    assert [igpo_step_advantage(turns, t) for t in (0, 1, 2, None)] == [0.1, 0.2, 0.3, 0.3]
    assert igpo_step_advantage([], None) == 0.0


def test_igpo_no_longer_accumulates_frozen_preview_gains():
    """Old behaviour: compute_credit('igpo', StepGains) = cumulative sums of frozen-reference preview gains. The
    scheme is still a valid config name but is group-level now."""
    assert "igpo" in CREDIT_SCHEMES and "igpo" in GROUP_SCHEMES
    with pytest.raises(ValueError, match="group-level"):
        compute_credit("igpo", [StepGains(0.1, True), StepGains(0.3, True)])


# -- contexts and beliefs from trajectory records -------------------------------------------------------------
class _Info:
    def __init__(self, sid: str):
        self.title, self.text = f"T{sid}", f"Sentence {sid} says Paris is the capital of France."


class _View:
    def sentences(self, ids):
        return {s: _Info(s) for s in ids}


def _step(turn, kind, observed, introduced, chosen="A1"):
    return StepRecord(turn=turn, menu=[], reply=chosen or "??", chosen=chosen, action_type=kind if chosen else None,
                      introduced=list(introduced), observed_before=list(observed))


def _rollout(steps, group=0, qid="q1", answers=("Paris",), reward=0.0, initial=("s1",)):
    item = QAItem(id=qid, question="What is the capital of France?", answers=tuple(answers), dataset="t")
    traj = Trajectory(question_id=qid, question=item.question, answers=list(answers), graph_version="v", env_config={},
                      initial_visible=list(initial), steps=steps)
    return Rollout(item=item, group=group, trajectory=traj, reward=reward)


def test_belief_contexts_follow_the_scorer_context_and_merge_the_terminal_step():
    from harness_g.training.snc_scoring import belief_contexts

    ro = _rollout([_step(0, "LOOKUP", ["s1"], ["s2", "s3"]),
                   _step(1, "SELECT", ["s1", "s2", "s3"], ["s2"]),
                   _step(2, None, ["s1", "s2", "s3"], [], chosen=None),  # invalid reply: nothing surfaced
                   _step(3, "LOOKUP", ["s1", "s2", "s3"], ["s3", "s4"]),
                   _step(4, "ANSWER", ["s1", "s2", "s3", "s4"], [])])
    assert belief_contexts(ro) == [("s1",), ("s1", "s2", "s3"), ("s1", "s2", "s3"), ("s1", "s2", "s3"),
                                   ("s1", "s2", "s3", "s4")]  # 4 information turns; ANSWER joins the answer turn
    out_of_turns = _rollout([_step(0, "LOOKUP", ["s1"], ["s2"])])
    assert belief_contexts(out_of_turns) == [("s1",), ("s1", "s2")]
    answered_at_once = _rollout([_step(0, "ANSWER_WITH", ["s1", "s5"], ["s5"])])
    assert belief_contexts(answered_at_once) == [("s1", "s5")]


def test_score_beliefs_uses_the_given_policy_and_unchanged_contexts_gain_exactly_zero():
    from harness_g.training.answerer import PolicyBelief
    from harness_g.training.config import ModelConfig
    from harness_g.training.modeling import load_policy, load_tokenizer
    from harness_g.training.rollout import scorer_user_text
    from harness_g.training.snc_scoring import score_beliefs

    tok = load_tokenizer(ModelConfig(name="tiny-random"))
    policy = load_policy(ModelConfig(name="tiny-random"), tok, seed=0)
    rollouts = [_rollout([_step(0, "LOOKUP", ["s1"], ["s2"]), _step(1, "SELECT", ["s1", "s2"], ["s2"]),
                          _step(2, "ANSWER", ["s1", "s2"], [])]),
                _rollout([_step(0, "LOOKUP", ["s1"], ["s3"])], qid="q2", answers=("Lyon",), group=1)]
    beliefs, stats = score_beliefs(_View(), PolicyBelief(policy, tok, scorer_user_text), rollouts)
    assert [len(b) for b in beliefs] == [3, 2] and stats["igpo_turns"] == 3.0
    assert information_gains(beliefs[0])[1] == 0.0  # SELECT surfaces nothing new
    assert beliefs[0][0] != beliefs[1][0]  # same text and context, different question/answers: not shared
    with torch.no_grad():
        for p in policy.parameters():
            p.mul_(1.5)
    moved, _ = score_beliefs(_View(), PolicyBelief(policy, tok, scorer_user_text), rollouts)
    assert moved[0][0] != pytest.approx(beliefs[0][0], rel=1e-4)  # the live weights, not a frozen copy


def test_build_batch_puts_each_turn_advantage_on_its_tokens_without_snc_scale():
    from harness_g.training.config import CreditConfig, ModelConfig
    from harness_g.training.modeling import load_tokenizer
    from harness_g.training.batch import build_batch

    tok = load_tokenizer(ModelConfig(name="tiny-random"))
    from harness_g.agent.context import Turn

    ro = _rollout([])
    ro.turns = [Turn([{"role": "user", "content": "turn 0 prompt"}], "A3"), Turn([{"role": "user", "content": "turn 1 prompt"}], "A0")]
    ro.answer_turn, ro.answer = Turn([{"role": "user", "content": "answer prompt"}], "Paris"), "Paris"
    # [LOOKUP, ANSWER]: one information turn; the terminal step and the answer sequence form the answer turn
    # [LOOKUP, LOOKUP] (out of turns): two information turns, then the answer sequence
    for turn_adv, wants in (([0.75, 2.0], [0.75, 2.0, 2.0]), ([0.75, -0.5, 2.0], [0.75, -0.5, 2.0])):
        batch, stats = build_batch([ro], tok, torch.tensor([9.0]), [[0.3, 0.0]], 0.2, CreditConfig(), turn_advantages=[turn_adv])
        mask = batch["loss_mask"]
        for row, want in enumerate(wants):
            assert torch.allclose(batch["advantages"][row][mask[row] > 0], torch.tensor(want))  # every policy token
            assert (batch["advantages"][row][mask[row] == 0] == 0).all()  # environment tokens: nothing
        assert stats["snc_scale"] == 1.0  # A_out (9.0), λ and the SNC scale play no part


@pytest.mark.slow
def test_trainer_igpo_step_scores_the_current_policy_and_uses_igpo_advantages(tmp_path, monkeypatch):
    """One real step of the IGPO arm on the menu and on the free-query interface: beliefs come from the trainer's
    own (unwrapped, current) policy, the frozen answerer is never called, and the optimised token advantages are
    exactly igpo_advantages of those beliefs and the outcome rewards."""
    from harness_g.training import trainer as trainer_mod
    from harness_g.training.config import load_config

    for interface in ("menu", "free-query"):
        seen: dict = {}
        real_score = trainer_mod.score_beliefs

        def spy(view, belief, rollouts):
            beliefs, stats = real_score(view, belief, rollouts)
            seen.update(policy=belief.policy, beliefs=beliefs, rollouts=rollouts)
            return beliefs, stats

        def capture(self, batch):
            seen["batch"] = batch
            return {"loss": 0.0, "pg_loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "dual_clip_frac": 0.0, "grad_norm": 0.0,
                    "skipped_batches": 0.0, "optimizer_steps": 0.0}

        monkeypatch.setattr(trainer_mod, "score_beliefs", spy)
        monkeypatch.setattr(trainer_mod.Trainer, "_update", capture)
        cfg = load_config(None, {
            "model.name": "tiny-random", "data.graph_dir": str(tmp_path / "graph"), "data.build_format": "2wiki",
            "data.build_input": str(SLICE), "data.limit": 4, "rollout.group_size": 3, "rollout.questions_per_step": 1,
            "rollout.max_turns": 3, "rollout.constrain_actions": interface == "menu", "rollout.interface": interface,
            "rollout.env": {"visible_cap": 3, "lookup_cap": 3}, "rollout.max_answer_tokens": 4, "rollout.max_action_tokens": 8,
            "credit.scheme": "igpo", "optim.steps": 1, "log.save_every": 0, "log.tensorboard": False})
        run = tmp_path / f"run-{interface}"
        from harness_g.training.data import build_training_graph

        build_training_graph(cfg)  # `harness-g train` builds before training; Python callers do it themselves
        tr = trainer_mod.Trainer(cfg, run, progress=False)
        tr.train()
        assert seen["policy"] is tr.accelerator.unwrap_model(tr.model)
        row = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
        assert row["answerer_calls"] == 0.0  # no frozen-reference scoring in the IGPO arm
        rollouts = seen["rollouts"]
        assert any(len(b) > 1 for b in seen["beliefs"])  # some information turns were scored
        want = igpo_advantages(seen["beliefs"], [r.reward for r in rollouts], [r.group for r in rollouts])
        rows = []  # per training row: the IGPO advantage of every policy token, turn by turn (answer: None)
        for r_i, ro in enumerate(rollouts):
            rows += [[igpo_step_advantage(want[r_i], t if t >= 0 else None) for t, m in zip(seq.turn_of, seq.loss_mask) if m]
                     for seq in ro.sequences(tr.tokenizer)]
        adv, mask = seen["batch"]["advantages"], seen["batch"]["loss_mask"]
        assert adv.shape[0] == len(rows)
        for row_i, values in enumerate(rows):
            assert torch.allclose(adv[row_i][mask[row_i] > 0], torch.tensor(values, dtype=adv.dtype), atol=1e-6)
        monkeypatch.undo()
