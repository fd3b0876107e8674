"""SNC credit maths on the paper's worked examples and on properties that must hold."""
import pytest
from hypothesis import given, settings, strategies as st

from harness_g.training.credit import (
    CREDIT_SCHEMES,
    StepGains,
    compute_credit,
    dead_zone,
    enablement,
    frontier_relative,
    normalise_token_credits,
)


def bridge_trajectory():
    """Paper appendix: SELECT S1 exposes Caroline Leaf (p≈0); LOOKUP Caroline Leaf consumes it (p=+0.61)
    against a frontier of near-zero alternatives (mean 0.02 -> r_fr = +0.59); then ANSWER_WITH."""
    return [
        StepGains(gain=0.0, acquires_information=False, producers=()),
        StepGains(gain=0.61, acquires_information=True, frontier=(0.01, 0.03, 0.02, 0.02), producers=(0,)),
        StepGains(gain=0.0, acquires_information=False, producers=(1,)),
    ]


def test_paper_bridge_example_enablement_and_frontier():
    credits = compute_credit("snc", bridge_trajectory())
    assert credits[0].enablement == pytest.approx(0.61)  # r_en_1 = R_2 / |Pred(2)| = 0.61
    assert credits[0].frontier == 0.0  # commit step: no frontier term
    assert credits[0].total == pytest.approx(0.61)
    assert credits[1].frontier == pytest.approx(0.59)
    assert credits[1].total == pytest.approx(0.59)  # the final commit gained 0, so nothing flows back to step 2
    assert credits[2].total == 0.0


def test_ablation_variants_drop_their_term():
    steps = bridge_trajectory()
    no_en = compute_credit("snc_no_enablement", steps)
    no_fr = compute_credit("snc_no_frontier", steps)
    out = compute_credit("outcome", steps)
    assert [c.enablement for c in no_en] == [0.0, 0.0, 0.0] and no_en[1].frontier == pytest.approx(0.59)
    assert [c.frontier for c in no_fr] == [0.0, 0.0, 0.0] and no_fr[0].enablement == pytest.approx(0.61)
    assert all(c.total == 0.0 for c in out)
    assert {"outcome", "snc", "snc_no_enablement", "snc_no_frontier", "igpo"} <= set(CREDIT_SCHEMES)


def test_chain_passes_full_gain_back():
    # 0 -> 1 -> 2 -> 3 chain; only the last step gains
    steps = [StepGains(0.0, True, producers=())] + [StepGains(0.0, True, producers=(t,)) for t in range(2)]
    steps.append(StepGains(0.8, True, producers=(2,)))
    r_en = enablement(steps, gamma=1.0)
    assert r_en == pytest.approx([0.8, 0.8, 0.8, 0.0])
    assert enablement(steps, gamma=0.5) == pytest.approx([0.2, 0.4, 0.8, 0.0])


def test_credit_split_between_two_producers():
    steps = [StepGains(0.0, True), StepGains(0.0, True), StepGains(0.5, True, producers=(0, 1))]
    assert enablement(steps) == pytest.approx([0.25, 0.25, 0.0])


def test_frontier_zero_cases():
    assert frontier_relative(StepGains(0.4, True, frontier=())) == 0.0  # empty frontier
    assert frontier_relative(StepGains(0.4, False, frontier=(0.1,))) == 0.0  # commit step
    assert frontier_relative(StepGains(0.4, True, frontier=(0.4, 0.4))) == 0.0  # equivalent alternatives


def test_dead_zone():
    assert dead_zone(5e-5) == 0.0 and dead_zone(-5e-5) == 0.0 and dead_zone(2e-4) == 2e-4


def test_igpo_is_group_level_not_a_step_credit():
    """IGPO's turn rewards are policy beliefs normalised per GRPO group (tests/unit/test_igpo.py), so the per-trajectory
    registry no longer turns frozen preview gains into cumulative 'igpo' credit."""
    with pytest.raises(ValueError, match="group-level"):
        compute_credit("igpo", [StepGains(0.1, True), StepGains(0.0, False), StepGains(0.3, True)])


def test_unknown_scheme_is_a_clear_error():
    from harness_g.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown credit scheme 'nope'.*snc"):
        compute_credit("nope", [])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 1), st.lists(st.integers(0, 10), max_size=3)), min_size=1, max_size=8))
def test_steps_that_consume_nothing_get_no_enablement_from_them(spec):
    steps = [StepGains(g, True, producers=tuple(p for p in preds if p < i)) for i, (g, preds) in enumerate(spec)]
    r_en = enablement(steps)
    consumed_from = {p for s in steps for p in s.producers}
    for t, value in enumerate(r_en):
        if t not in consumed_from:  # nobody consumed step t's output -> no enablement credit
            assert value == 0.0
    # the last step can never be a producer
    assert r_en[-1] == 0.0


def test_token_credit_normalisation():
    # step credits already placed on their action tokens (the trainer does it by turn: training/batch.py build_batch)
    tokens = [0.0, 0.6, 0.6, 0.0, 0.0, -0.3, 0.0, 0.0]
    norm = normalise_token_credits([tokens, [0.0] * 8])
    nonzero = [0.6, 0.6, -0.3]
    mean = sum(nonzero) / 3
    std = (sum((v - mean) ** 2 for v in nonzero) / 3) ** 0.5
    assert norm.scale == pytest.approx(std)
    assert norm.values[0][1] == pytest.approx(0.6 / std) and norm.values[0][5] < 0  # signs preserved, no mean shift
    tiny = normalise_token_credits([[1e-5, -1e-5, 0.0]])
    assert tiny.scale == 5e-4 and max(abs(v) for v in tiny.values[0]) <= 5.0  # floor and clip
    big = normalise_token_credits([[100.0] + [1.0] * 30])  # 100 is ~5.5 std away -> clipped
    assert max(big.values[0]) == 5.0 and big.values[0][1] == pytest.approx(1.0 / big.scale)


def test_scale_can_come_from_the_whole_multi_process_batch():
    local = [[0.6, 0.0, -0.3]]
    pooled = normalise_token_credits(local, pool=[0.6, -0.3, 2.0, -2.0])  # other ranks' credits widen the std
    assert pooled.scale > normalise_token_credits(local).scale
    assert pooled.values[0][0] == pytest.approx(0.6 / pooled.scale)
