"""The IGPO arm (paper appendix "Factorial credit control", harness-g.tex l.1061; IGPO, arXiv:2510.14967):
policy-belief information gain, turn-level normalisation within the GRPO group, cumulative turn advantage and
reward scaling — on hand-computed numbers — and the belief contexts taken from trajectory records (no model, no
tokenizer). Beliefs from the live policy, the batch and a trainer step: tests/e2e/test_igpo_policy.py."""
import math

import pytest
from helpers.hand_rollouts import rollout as _rollout
from helpers.hand_rollouts import step as _step

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

S = 0.5 / (0.5 + 1e-6)  # |Â| when a group's pooled turn rewards are half 0, half 1: mean 0.5, std 0.5, ε = 1e-6


# -- maths on a hand-computed example -----------------------------------------------------------------------
def test_information_gain_is_igpos_probability_difference():
    """IGPO (arXiv 2510.14967): π_θ(a | q, o_≤t) = exp((1/L) Σ_j log π_θ(a_j | ...)) and r_t = π_t − π_{t−1}, a
    difference of probabilities (its code's default info_gain_type "prob_diff"). The beliefs come in as
    ℓ = log π: 0.1 -> 0.4 -> 0.4 -> 0.25 gains +0.3, 0, -0.15. The old rule took ℓ differences (+1.386, 0, -0.470),
    which make a rise from 1e-6 to 1e-3 (+6.9) outweigh one from 0.2 to 0.9 (+1.5)."""
    log = [math.log(p) for p in (0.1, 0.4, 0.4, 0.25)]
    assert information_gains(log) == pytest.approx([0.3, 0.0, -0.15])
    assert information_gains(log, "log_prob") == pytest.approx([math.log(4.0), 0.0, math.log(0.625)])
    tiny, big = information_gains([math.log(1e-6), math.log(1e-3)]), information_gains([math.log(0.2), math.log(0.9)])
    assert big[0] > tiny[0] and tiny[0] == pytest.approx(0.000999)
    assert information_gains([-1.0]) == []  # no information turn
    with pytest.raises(ValueError, match="IGPO gain 'nats' unknown; available: prob, log_prob"):
        information_gains(log, "nats")


def test_turn_rewards_end_with_the_scaled_outcome():
    # IGPO's reward scaling: w_ig on the information gains, w_out on the outcome (answer) turn
    log = [math.log(p) for p in (0.1, 0.4, 0.25)]
    assert igpo_turn_rewards(log, 0.8) == pytest.approx([0.3, -0.15, 0.8])
    assert igpo_turn_rewards(log, 0.8, ig_weight=0.5, outcome_weight=2.0) == pytest.approx([0.15, -0.075, 1.6])
    assert igpo_turn_rewards([-3.0, -2.0, -2.5], 0.8, gain="log_prob") == pytest.approx([1.0, -0.5, 0.8])
    assert igpo_turn_rewards([-1.0], 1.0) == [1.0]  # answered at once: only the answer turn


def test_the_trainer_config_names_the_gain_and_defaults_to_igpos():
    from harness_g.errors import ConfigError
    from harness_g.training.config import load_config

    assert load_config(None, {"data.graph_dir": "x", "credit.scheme": "igpo"}).credit.igpo_gain == "prob"
    with pytest.raises(ConfigError, match="credit.igpo_gain 'nats' unknown; available: prob, log_prob"):
        load_config(None, {"data.graph_dir": "x", "credit.igpo_gain": "nats"})


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
    adv = igpo_advantages(log_beliefs, outcomes, groups, gamma=0.5, gain="log_prob")  # gains written as ℓ differences
    assert adv[0] == pytest.approx([0.75 * S, -0.5 * S, 1.0 * S])
    assert adv[1] == pytest.approx([-0.75 * S, 0.5 * S, -1.0 * S])
    r2 = math.sqrt(0.5)
    assert adv[2] == pytest.approx([1.0 / (r2 + 1e-6), 0.0])
    assert adv[3] == pytest.approx([-1.0 / (r2 + 1e-6), 0.0])
    assert adv[4] == [0.0, 0.0]
    # γ = 1 (the default): plain cumulative sums of the normalised turn rewards
    adv1 = igpo_advantages(log_beliefs, outcomes, groups, gain="log_prob")
    assert adv1[0] == pytest.approx([1.0 * S, 0.0, 1.0 * S]) and adv1[1] == pytest.approx([-1.0 * S, 0.0, -1.0 * S])
    # the same group with IGPO's probability gains: beliefs 0.2 -> 0.6 (A) and 0.2 -> 0.2 -> 0.6 (B): the same
    # pooled rewards [0.4, 0, 1] / [0, 0.4, 0]: hand-normalised below
    probs = [[math.log(0.2), math.log(0.6), math.log(0.6)], [math.log(0.2), math.log(0.2), math.log(0.6)]]
    pooled = [0.4, 0.0, 1.0, 0.0, 0.4, 0.0]
    mean = sum(pooled) / 6
    std = math.sqrt(sum((v - mean) ** 2 for v in pooled) / 6)
    a, b = igpo_advantages(probs, [1.0, 0.0], [0, 0])
    norm = [(v - mean) / (std + 1e-6) for v in pooled]
    assert a == pytest.approx([sum(norm[0:3]), sum(norm[1:3]), norm[2]])
    assert b == pytest.approx([sum(norm[3:6]), sum(norm[4:6]), norm[5]])


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
