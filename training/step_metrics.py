"""The metrics row of one training step, computed from its rollouts, credits, batch and timings (pure functions).

Every function returns a flat ``{name: float}`` dict; the trainer merges them into the row it logs
(metrics.jsonl, TensorBoard groups by name prefix: training/logger.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from harness_g.training.diagnostics import aliasing_rate, group_diagnostics, menu_requests, retrieval_evidence
from harness_g.training.rollout import Rollout


def total_steps(rollouts: Sequence[Rollout]) -> int:
    """Executed decision turns over all rollouts (at least 1: a denominator)."""
    return max(1, sum(len(r.trajectory.steps) for r in rollouts))


def outcome_metrics(rollouts: Sequence[Rollout]) -> dict[str, float]:
    """``reward_f1`` (mean outcome reward) and ``em`` (mean exact match) over the rollouts."""
    rewards = torch.tensor([r.reward for r in rollouts], dtype=torch.float32)
    return {"reward_f1": float(rewards.mean()), "em": float(sum(r.em for r in rollouts) / len(rollouts))}


def action_metrics(rollouts: Sequence[Rollout]) -> dict[str, float]:
    """``turns`` (mean executed turns per rollout), ``invalid_action_frac`` (invalid turns / executed turns) and
    ``action_frac_<TYPE>`` for every action type taken (INVALID for a turn that executed no action)."""
    steps = [len(r.trajectory.steps) for r in rollouts]
    counts: dict[str, int] = {}
    for r in rollouts:
        for s in r.trajectory.steps:
            kind = s.action_type or "INVALID"
            counts[kind] = counts.get(kind, 0) + 1
    total = total_steps(rollouts)
    return {"turns": sum(steps) / len(steps), "invalid_action_frac": sum(r.trajectory.invalid_turns for r in rollouts) / total,
            **{f"action_frac_{k}": v / total for k, v in sorted(counts.items())}}


def equivalence_metrics(rollouts: Sequence[Rollout], threshold: float, free_query: bool) -> dict[str, float]:
    """Retrieval-equivalence diagnostics over the step's groups (training/diagnostics.py): ``d_ret``, ``mean_n_eq``
    and, on the free-query arm, ``d_query``. E(tau) is the union of LOOKUP results over retrieval turns t >= 1.
    ``aliasing`` (harness-g's, not the paper's: :func:`~harness_g.training.diagnostics.aliasing_rate`): its mean over
    the groups where two rollouts' requests differ; absent when no group has such a pair."""
    group_ids = sorted({int(r.group) for r in rollouts})
    members = [[r for r in rollouts if r.group == g] for g in group_ids]
    queries = [[q for r in m for q in r.queries] for m in members] if free_query else None
    evidence = [[retrieval_evidence(r.trajectory) for r in m] for m in members]
    equiv = group_diagnostics(evidence, queries, threshold)
    rates = [aliasing_rate(e, [r.queries if free_query else menu_requests(r.trajectory) for r in m], threshold)
             for e, m in zip(evidence, members)]
    defined = [x for x in rates if x is not None]
    return {"d_ret": equiv.d_ret, "mean_n_eq": equiv.mean_n_eq, **({"d_query": equiv.d_query} if free_query else {}),
            **({"aliasing": sum(defined) / len(defined)} if defined else {})}


def credit_metrics(credits: Sequence[Sequence[float]], steps: int) -> dict[str, float]:
    """``snc_credit_mean`` (mean of the non-zero step credits) and ``snc_credit_nonzero_frac`` (non-zero credits /
    ``steps`` executed turns). ``credits``: per rollout, one credit per executed turn."""
    nonzero = [c for cs in credits for c in cs if c != 0.0]
    return {"snc_credit_mean": sum(nonzero) / len(nonzero) if nonzero else 0.0, "snc_credit_nonzero_frac": len(nonzero) / steps}


def zero_advantage_metrics(stats: Any) -> dict[str, float]:
    """A :class:`~harness_g.training.advantages.ZeroAdvantageStats` as ``zero_adv_*`` fractions of groups."""
    return {"zero_adv_frac": stats.zero, "zero_adv_all_wrong": stats.all_wrong, "zero_adv_all_correct": stats.all_correct}


def batch_metrics(loss_mask: Any, kept: Sequence[Rollout], all_rollouts: Sequence[Rollout]) -> dict[str, float]:
    """``response_tokens`` (policy tokens per trained rollout; ``loss_mask`` [N, L]) and ``dropped_groups`` (groups
    dropped as zero-advantage)."""
    return {"response_tokens": float(loss_mask.sum()) / max(1, len(kept)),
            "dropped_groups": float(len({r.group for r in all_rollouts}) - len({r.group for r in kept}))}


@dataclass(frozen=True)
class StepTimes:
    """Wall-clock seconds of one step's phases."""

    rollout: float  # collect_rollouts (generation + environment)
    snc: float  # credit scoring (frozen answerer or IGPO beliefs)
    update: float  # the policy update
    sync: float  # the generator's weight sync
    total: float  # the whole step


def time_metrics(times: StepTimes, rollout_stats: dict[str, float]) -> dict[str, float]:
    """``time_*`` seconds, ``snc_share`` (scoring / total) and the rollout's observation-size stats when measured.
    ``rollout_stats``: collect_rollouts' stats (``generate_s``, ``env_s``, optional ``observation_tokens_max``,
    ``observations_over_budget``, ``generate_pad_ratio``: prompt positions of the padded batches per real prompt
    token, ``generate_prefill_ratio``: positions actually computed per real prompt token, lower where a group's
    identical prompts were prefilled once)."""
    return {"time_rollout_s": times.rollout, "time_generate_s": rollout_stats["generate_s"], "time_env_s": rollout_stats["env_s"],
            **{k: rollout_stats[k] for k in ("observation_tokens_max", "observations_over_budget", "generate_pad_ratio",
                                         "generate_prefill_ratio")
               if k in rollout_stats},
            "time_snc_s": times.snc, "time_update_s": times.update, "time_sync_s": times.sync, "time_total_s": times.total,
            "snc_share": times.snc / times.total if times.total else 0.0}


class PhaseClock:
    """Seconds per named phase of the update: :meth:`lap` charges the time since the previous lap to a phase. On
    CUDA it synchronises first, so a phase is charged for the kernels it queued, not the next phase (a few
    synchronisations per step)."""

    def __init__(self, device: torch.device):
        import time

        self._now = time.perf_counter
        self._cuda = device.type == "cuda"
        self._last = self._now()
        self.seconds: dict[str, float] = {}

    def lap(self, phase: str) -> None:
        if self._cuda:
            torch.cuda.synchronize()
        now = self._now()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - self._last
        self._last = now

    def metrics(self, prefix: str) -> dict[str, float]:
        """``{prefix}{phase}_s`` for every phase lapped."""
        return {f"{prefix}{k}_s": v for k, v in self.seconds.items()}
