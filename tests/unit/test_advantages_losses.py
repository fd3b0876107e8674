"""Advantage estimators, zero-advantage diagnostics and the clipped dual-clip loss on hand-computed values."""
import math

import pytest
import torch

from harness_g.training.advantages import combine_advantages, compute_advantages, zero_advantage_stats
from harness_g.training.losses import kl_k3, masked_mean, policy_loss


def test_grpo_group_normalisation():
    rewards = torch.tensor([1.0, 0.0, 0.5, 0.5, 0.2, 0.2])
    groups = torch.tensor([0, 0, 1, 1, 2, 2])
    adv = compute_advantages("grpo", rewards, groups)
    assert adv[0].item() == pytest.approx(1.0, abs=1e-4) and adv[1].item() == pytest.approx(-1.0, abs=1e-4)
    assert adv[2:].abs().max().item() == 0.0  # zero-variance groups get exactly 0


def test_reinforce_pp_uses_batch_std():
    rewards = torch.tensor([1.0, 0.0, 1.0, 1.0])
    groups = torch.tensor([0, 0, 1, 1])
    adv = compute_advantages("reinforce_pp", rewards, groups)
    centred = torch.tensor([0.5, -0.5, 0.0, 0.0])
    assert torch.allclose(adv, centred / centred.std(unbiased=False), atol=1e-4)


def test_zero_advantage_groups_split_by_outcome():
    rewards = torch.tensor([0.0, 0.0, 1.0, 1.0, 1.0, 0.0])
    stats = zero_advantage_stats(rewards, torch.tensor([0, 0, 1, 1, 2, 2]))
    assert stats.groups == 3 and stats.zero == pytest.approx(2 / 3)
    assert stats.all_wrong == pytest.approx(1 / 3) and stats.all_correct == pytest.approx(1 / 3)


def test_combine_puts_snc_on_action_tokens_only_and_masks_environment():
    outcome = torch.tensor([0.5])
    snc = torch.tensor([[2.0, 2.0, 0.0, 1.0]])
    action = torch.tensor([[1.0, 1.0, 0.0, 0.0]])
    loss_mask = torch.tensor([[1.0, 1.0, 0.0, 1.0]])  # token 2 is environment-injected
    adv = combine_advantages(outcome, snc, action, loss_mask, lam=0.2)
    assert adv[0].tolist() == pytest.approx([0.9, 0.9, 0.0, 0.5])


def test_clipped_surrogate_and_dual_clip_by_hand():
    old = torch.zeros(1, 4)
    logp = torch.log(torch.tensor([[1.5, 0.5, 10.0, 1.0]]))  # ratios 1.5, 0.5, 10, 1
    adv = torch.tensor([[1.0, 1.0, -1.0, -2.0]])
    mask = torch.ones(1, 4)
    out = policy_loss(logp, old, adv, mask, ref_logp=None, clip_eps=0.2, dual_clip=3.0, kl_coef=0.0)
    # token 0: max(-1.5, -1.2) = -1.2; token 1: max(-0.5, -0.8) = -0.5; token 2: max(10, 1.2)=10 capped by C·|A| = 3;
    # token 3: ratio 1 -> 2
    assert out.pg_loss.item() == pytest.approx((-1.2 - 0.5 + 3.0 + 2.0) / 4, abs=1e-5)
    assert out.dual_clip_frac.item() == pytest.approx(0.25)
    assert out.clip_frac.item() == pytest.approx(0.25)  # only token 0: for token 2 the unclipped term is the max


def test_k3_kl_is_nonnegative_and_zero_at_equality():
    a = torch.tensor([-1.0, -2.0, -0.1])
    assert torch.allclose(kl_k3(a, a), torch.zeros(3))
    b = torch.tensor([-1.5, -1.0, -0.3])
    k = kl_k3(a, b)
    assert (k >= 0).all()
    assert k[0].item() == pytest.approx(math.exp(-0.5) + 0.5 - 1)


def test_masked_mean_ignores_masked_tokens():
    x = torch.tensor([[1.0, 100.0, 3.0]])
    assert masked_mean(x, torch.tensor([[1.0, 0.0, 1.0]])).item() == 2.0
    assert masked_mean(x, torch.zeros(1, 3)).item() == 0.0


# -- DAPO (Yu et al. 2025, arXiv 2503.14476) is not GRPO under another name ----------------------------------------
DAPO = {"optim.estimator": "dapo", "optim.kl_coef": 0.0, "optim.clip_eps_high": 0.28,
        "optim.drop_zero_advantage_groups": True}


def test_dapo_requires_its_settings_and_names_every_contradiction_in_one_line():
    """The old `estimator: dapo` ran GRPO's update unchanged (KL on, symmetric clip, every group kept)."""
    from harness_g.errors import ConfigError
    from harness_g.training.config import load_config

    with pytest.raises(ConfigError) as info:
        load_config(None, {"data.graph_dir": "x", "optim.estimator": "dapo"})
    message = str(info.value)
    assert "\n" not in message and message.startswith("optim.estimator dapo (arXiv 2503.14476) needs ")
    for part in ("optim.kl_coef=0 (no KL term; got 0.001)", "optim.clip_eps_high > optim.clip_eps",
                 "optim.drop_zero_advantage_groups=true (dynamic sampling)"):
        assert part in message
    for key, value, named in (("optim.kl_coef", 0.001, "optim.kl_coef=0"), ("optim.clip_eps_high", 0.2, "clip_eps_high"),
                              ("optim.clip_eps_high", None, "clip_eps_high"),
                              ("optim.drop_zero_advantage_groups", False, "dynamic sampling")):
        with pytest.raises(ConfigError, match=named):
            load_config(None, {"data.graph_dir": "x", **DAPO, key: value})
    dapo = load_config(None, {"data.graph_dir": "x", **DAPO}).optim
    grpo = load_config(None, {"data.graph_dir": "x"}).optim
    differ = {k for k in vars(grpo) if getattr(grpo, k) != getattr(dapo, k)}
    assert differ == {"estimator", "kl_coef", "clip_eps_high", "drop_zero_advantage_groups"}
    # the paper's GRPO recipe is untouched: GRPO may still take a KL term and a symmetric clip
    assert grpo.kl_coef == 0.001 and grpo.clip_eps_high is None


def test_what_dapo_changes_in_the_update_against_grpo():
    """Same batch, the two configs' loss settings: clip-higher lets a positive-advantage token's ratio rise to 1.28
    (GRPO stops at 1.2), the KL term is gone, and dynamic sampling drops the groups with equal rewards."""
    from harness_g.training.batch import zero_advantage_groups
    from harness_g.training.config import load_config

    def loss(optim):
        return policy_loss(logp, old, adv, mask, ref_logp=ref, clip_eps=optim.clip_eps, clip_eps_high=optim.clip_eps_high,
                           dual_clip=optim.dual_clip, kl_coef=optim.kl_coef)

    old = torch.zeros(1, 3)
    logp = torch.log(torch.tensor([[1.25, 1.25, 0.9]]))  # ratios 1.25, 1.25, 0.9
    adv = torch.tensor([[1.0, -1.0, 0.5]])
    ref = torch.log(torch.tensor([[0.5, 0.5, 0.5]]))
    mask = torch.ones(1, 3)
    grpo = loss(load_config(None, {"data.graph_dir": "x"}).optim)
    dapo = loss(load_config(None, {"data.graph_dir": "x", **DAPO}).optim)
    # token 0 (A = +1, ratio 1.25): GRPO max(-1.25, -1.2) = -1.2 (clipped); DAPO max(-1.25, -1.25) = -1.25
    # token 1 (A = -1): 1.25 either way; token 2 (A = 0.5, ratio 0.9): -0.45 either way
    assert grpo.pg_loss.item() == pytest.approx((-1.2 + 1.25 - 0.45) / 3, abs=1e-5)
    assert dapo.pg_loss.item() == pytest.approx((-1.25 + 1.25 - 0.45) / 3, abs=1e-5)
    assert grpo.clip_frac.item() == pytest.approx(1 / 3) and dapo.clip_frac.item() == 0.0
    assert grpo.kl.item() > 0 and grpo.loss.item() == pytest.approx(grpo.pg_loss.item() + 0.001 * grpo.kl.item())
    assert dapo.loss.item() == pytest.approx(dapo.pg_loss.item())  # no KL term
    # dynamic sampling: groups 1 (all correct) and 2 (all wrong) leave DAPO's update; GRPO keeps every rollout
    assert zero_advantage_groups([1.0, 0.0, 1.0, 1.0, 0.0, 0.0], [0, 0, 1, 1, 2, 2]) == {1, 2}
    # the advantage itself is GRPO's group normalisation (verl's DAPO recipe: adv_estimator=grpo)
    rewards, groups = torch.tensor([1.0, 0.0, 0.3, 0.6]), torch.tensor([0, 0, 1, 1])
    assert torch.equal(compute_advantages("dapo", rewards, groups), compute_advantages("grpo", rewards, groups))


def test_token_mean_over_all_processes_not_a_mean_of_per_process_means():
    """DAPO's token-level loss (and verl's token-mean): every policy token of an update weighs 1 / (its tokens over
    all processes). DDP averages the ranks' gradients; the old weights (a pass's share of its own rank's tokens) made
    the update a mean of per-rank token means, so a token of a rank holding few tokens weighed more."""
    from harness_g.training.update_plan import pass_weights

    # rank 0: two passes of 3 and 1 policy tokens; rank 1: one pass of 12. Per-token losses:
    losses = {0: [[1.0, 2.0, 3.0], [10.0]], 1: [[0.5] * 12]}
    counts = {r: [len(p) for p in passes] for r, passes in losses.items()}
    total = sum(sum(c) for c in counts.values())
    weights = {r: pass_weights(c, total, processes=2) for r, c in counts.items()}
    # what DDP computes: the mean over ranks of each rank's sum of weight x (its pass's token-mean loss)
    ddp = sum(sum(w * sum(p) / len(p) for w, p in zip(weights[r], losses[r])) for r in losses) / 2
    every_token = [v for passes in losses.values() for p in passes for v in p]
    assert ddp == pytest.approx(sum(every_token) / len(every_token))  # (1 + 2 + 3 + 10 + 6) / 16
    old = sum(sum(len(p) / sum(counts[r]) * sum(p) / len(p) for p in losses[r]) for r in losses) / 2
    assert old == pytest.approx((16 / 4 + 0.5) / 2) and old != pytest.approx(ddp)
    assert pass_weights([3, 1], 4) == [0.75, 0.25] and pass_weights([0], 0) == [0.0]  # single process: token shares
