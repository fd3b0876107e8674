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
