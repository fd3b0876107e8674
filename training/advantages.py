"""Outcome-advantage estimators (a registry, like verl's ``core_algos``): rewards -> per-sequence advantages.

Every estimator takes ``rewards`` (float [B]) and ``group_ids`` (int [B]; rollouts of the same
question share an id) and returns float [B]. The token-level advantage is then
A[i, k] = A_out[i] + λ · A_SNC[i, k] on action tokens (``combine_advantages``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from harness_g.registry import Registry

ZERO_STD = 1e-6  # a group whose reward std is below this has zero advantage (paper appendix)

Estimator = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
ESTIMATORS: Registry[Estimator] = Registry("advantage estimator")  # ``optim.estimator`` names one


def _group_stats(rewards: torch.Tensor, group_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-element group mean and (population) std."""
    mean = torch.zeros_like(rewards)
    std = torch.zeros_like(rewards)
    for g in torch.unique(group_ids):
        m = group_ids == g
        r = rewards[m]
        mean[m] = r.mean()
        std[m] = r.std(unbiased=False) if r.numel() > 1 else torch.zeros((), dtype=rewards.dtype)
    return mean, std


@ESTIMATORS.register("grpo")
def grpo(rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """(R_i − mean_group) / (std_group + eps); exactly 0 for zero-variance groups."""
    mean, std = _group_stats(rewards, group_ids)
    adv = (rewards - mean) / (std + eps)
    return torch.where(std < ZERO_STD, torch.zeros_like(adv), adv)


@ESTIMATORS.register("dapo")
def dapo(rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """DAPO (Yu et al. 2025, arXiv 2503.14476): its advantage is GRPO's group normalisation (as in verl's DAPO recipe,
    ``adv_estimator=grpo``); what makes a run DAPO are settings that ``optim.estimator: dapo`` requires
    (training/config.py ``_check_dapo``): clip-higher (``optim.clip_eps_high`` 0.28 over ``clip_eps`` 0.2), dynamic
    sampling (``optim.drop_zero_advantage_groups``: groups whose rewards are all equal leave the update; DAPO also
    re-samples to refill the batch, here the step trains on the groups left), no KL term (``optim.kl_coef`` 0) and
    the token-level loss (a token mean over each update: training/trainer.py ``_accumulate``, for every estimator).
    DAPO's overlong reward shaping has nothing to act on: it penalises responses near the generation budget, and no
    rollout here can reach ``rollout.max_response_tokens`` (max_turns x max_action_tokens + max_answer_tokens above
    it is refused at load)."""
    return grpo(rewards, group_ids)


@ESTIMATORS.register("reinforce_pp")
def reinforce_pp(rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """REINFORCE++ (baseline variant): subtract the group mean, normalise by the *batch* std."""
    mean, _ = _group_stats(rewards, group_ids)
    centred = rewards - mean
    std = centred.std(unbiased=False) if centred.numel() > 1 else torch.zeros(())
    return centred / (std + eps)


def compute_advantages(name: str, rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """Advantages float [B] of estimator ``name``; ConfigError listing the estimators if unknown."""
    return ESTIMATORS.get(name)(rewards.float(), group_ids)


@dataclass(frozen=True)
class ZeroAdvantageStats:
    """Fraction of groups with zero within-group reward variance, split by outcome."""

    groups: int
    zero: float
    all_wrong: float  # every R_i == 0
    all_correct: float  # every R_i > 0


def zero_advantage_stats(rewards: torch.Tensor, group_ids: torch.Tensor) -> ZeroAdvantageStats:
    groups = torch.unique(group_ids)
    zero = wrong = correct = 0
    for g in groups:
        r = rewards[group_ids == g]
        if r.numel() >= 2 and float(r.std(unbiased=False)) < ZERO_STD:
            zero += 1
            if bool((r == 0).all()):
                wrong += 1
            elif bool((r > 0).all()):
                correct += 1
    n = max(len(groups), 1)
    return ZeroAdvantageStats(len(groups), zero / n, wrong / n, correct / n)


def combine_advantages(outcome: torch.Tensor, snc_tokens: torch.Tensor, action_mask: torch.Tensor, loss_mask: torch.Tensor,
                       lam: float = 0.2) -> torch.Tensor:
    """Token advantages [B, L]: A_out[i] on every policy-generated token + λ·A_SNC on action tokens.

    ``outcome`` [B]; ``snc_tokens`` [B, L] (already normalised/clipped); ``action_mask`` [B, L] marks
    action-id tokens; ``loss_mask`` [B, L] marks model-generated tokens (environment tokens are 0).
    """
    adv = outcome[:, None].expand_as(snc_tokens) + lam * snc_tokens * action_mask
    return adv * loss_mask
