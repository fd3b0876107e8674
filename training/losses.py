"""Policy loss: clipped surrogate with dual-clip and low-variance (k3) KL; fp32 log-probs; masked means."""
from __future__ import annotations

from dataclasses import dataclass

import torch


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-mean over masked positions (0 when the mask is empty)."""
    denom = mask.sum()
    return (x * mask).sum() / denom.clamp_min(1.0)


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Low-variance KL estimate (Schulman's k3): exp(ref − logp) − (ref − logp) − 1 ≥ 0."""
    log_ratio = (ref_logp - logp).clamp(-20.0, 20.0)
    return torch.exp(log_ratio) - log_ratio - 1.0


@dataclass
class LossOutput:
    loss: torch.Tensor
    pg_loss: torch.Tensor
    kl: torch.Tensor
    clip_frac: torch.Tensor  # fraction of tokens where the ε-clip was active
    dual_clip_frac: torch.Tensor  # fraction of negative-advantage tokens capped by C


def policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
                ref_logp: torch.Tensor | None = None, clip_eps: float = 0.2, clip_eps_high: float | None = None,
                dual_clip: float | None = 3.0, kl_coef: float = 0.001) -> LossOutput:
    """PPO/GRPO clipped surrogate over masked tokens [B, L].

    L_pg = max(−A·r, −A·clip(r, 1−ε, 1+ε_high)); for A < 0 additionally capped at −A·C (dual-clip).
    Total = mean_mask(L_pg) + β·mean_mask(k3 KL to the reference).
    """
    eps_high = clip_eps if clip_eps_high is None else clip_eps_high
    log_ratio = (logp - old_logp).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)
    loss1 = -advantages * ratio
    loss2 = -advantages * torch.clamp(ratio, 1.0 - clip_eps, 1.0 + eps_high)
    clipped = torch.maximum(loss1, loss2)
    clip_frac = masked_mean((loss2 > loss1).float(), mask)
    if dual_clip is not None:
        loss3 = -advantages * dual_clip
        capped = torch.minimum(loss3, clipped)
        pg = torch.where(advantages < 0, capped, clipped)
        dual_frac = masked_mean(((advantages < 0) & (loss3 < clipped)).float(), mask)
    else:
        pg = clipped
        dual_frac = torch.zeros(())
    pg_loss = masked_mean(pg, mask)
    kl = masked_mean(kl_k3(logp, ref_logp), mask) if ref_logp is not None else torch.zeros((), device=logp.device)
    return LossOutput(pg_loss + kl_coef * kl, pg_loss, kl, clip_frac, dual_frac)
