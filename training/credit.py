"""Step-credit schemes (paper §"SNC: Structured Non-Myopic Credit", appendix "SNC Computation per Trajectory").

Everything here is pure arithmetic on already-scored trajectories, so it is exact and testable
on the paper's worked examples. A scheme maps one trajectory's :class:`StepGains` to per-step
credits; new variants are one registered function (see ``CREDIT_SCHEMES``).

Definitions (per trajectory, steps t = 0..T-1):
- ``p[t]``: preview gain of the executed action, g(O_t ∪ Ũ(a_t)) − g(O_t), after the dead-zone;
- ``frontier[t]``: gains of the frontier alternatives F_t (empty for commit/terminal steps);
- ``producers[t]``: Pred(t), the earlier steps whose output step t consumed (provenance DAG edges (s, t), s < t);
- r_fr[t] = p[t] − mean(frontier[t]) for information-acquiring steps with a non-empty frontier, else 0;
- enablement, in reverse topological (= reverse step) order: R_u = p_u + γ·r_en_u and
  r_en_t = Σ_{u : t ∈ Pred(u)} R_u / |Pred(u)|;
- r_SNC[t] = r_fr[t] + r_en[t].

The ``igpo`` scheme (appendix "Factorial credit control") is group-level rather than per trajectory: see
:func:`igpo_advantages` at the end of this module.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

from harness_g.registry import Registry

DEAD_ZONE = 1e-4


def dead_zone(x: float, eps: float = DEAD_ZONE) -> float:
    """Zero out gains smaller than the scorer's noise: |x| < eps -> 0."""
    return 0.0 if abs(x) < eps else float(x)


@dataclass(frozen=True)
class StepGains:
    """Scored facts about one executed step (inputs to every credit scheme)."""

    gain: float  # p_t(a_t), already dead-zoned
    acquires_information: bool  # LOOKUP (True); SELECT / ANSWER_WITH / ANSWER / invalid (False)
    frontier: tuple[float, ...] = ()  # p_t(a) for a in F_t
    producers: tuple[int, ...] = ()  # Pred(t)


@dataclass(frozen=True)
class StepCredit:
    """Per-step credit with its parts (for logging and ablations)."""

    frontier: float
    enablement: float

    @property
    def total(self) -> float:
        return self.frontier + self.enablement


def frontier_relative(step: StepGains) -> float:
    """r_fr = p(a_t) − mean_{a∈F_t} p(a); 0 for non-information steps or an empty frontier."""
    if not step.acquires_information or not step.frontier:
        return 0.0
    return step.gain - sum(step.frontier) / len(step.frontier)


def enablement(steps: Sequence[StepGains], gamma: float = 1.0) -> list[float]:
    """Propagate R_u = p_u + γ r_en_u back to the direct producers, split evenly among them."""
    n = len(steps)
    r_en = [0.0] * n
    for u in range(n - 1, -1, -1):  # t < u for every edge (t, u): reverse step order is reverse topological
        preds = [t for t in dict.fromkeys(steps[u].producers) if 0 <= t < u]
        if not preds:
            continue
        share = (steps[u].gain + gamma * r_en[u]) / len(preds)
        for t in preds:
            r_en[t] += share
    return r_en


def snc(steps: Sequence[StepGains], gamma: float = 1.0, *, use_frontier: bool = True, use_enablement: bool = True) -> list[StepCredit]:
    r_en = enablement(steps, gamma) if use_enablement else [0.0] * len(steps)
    return [StepCredit(frontier_relative(s) if use_frontier else 0.0, e) for s, e in zip(steps, r_en)]


CreditScheme = Callable[[Sequence[StepGains], float], list[StepCredit]]
CREDIT_SCHEMES: Registry[CreditScheme] = Registry("credit scheme")  # ``credit.scheme`` names one


@CREDIT_SCHEMES.register("outcome")
def _outcome(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    """Outcome-only GRPO (λ = 0 row of the ablation): no step credit."""
    return [StepCredit(0.0, 0.0) for _ in steps]


@CREDIT_SCHEMES.register("snc")
def _snc(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    return snc(steps, gamma)


@CREDIT_SCHEMES.register("snc_no_enablement")
def _snc_no_en(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    return snc(steps, gamma, use_enablement=False)


@CREDIT_SCHEMES.register("snc_no_frontier")
def _snc_no_fr(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    return snc(steps, gamma, use_frontier=False)


@CREDIT_SCHEMES.register("igpo")
def _igpo(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    """IGPO is not a per-trajectory step credit: its turn rewards are the *current policy's* belief gains,
    normalised over the whole GRPO group together with the outcome (see :func:`igpo_advantages`). The name
    stays registered so ``credit.scheme: igpo`` validates; the trainer routes it to ``igpo_advantages``."""
    raise ValueError("credit scheme 'igpo' is group-level: score policy beliefs and call igpo_advantages(...) "
                     "instead of compute_credit")


# Schemes whose advantages replace GRPO's A_out + λ·A_SNC (computed per group, not per trajectory).
GROUP_SCHEMES = frozenset({"igpo"})
# Schemes built on the frontier of same-state menu alternatives (SNC and its ablations): the paper evaluates SNC only
# on the action menu (appendix "Factorial credit control"), so ``rollout.interface: free-query`` refuses them
# (training/config.py).
MENU_ONLY_SCHEMES = frozenset({"snc", "snc_no_enablement", "snc_no_frontier"})


def compute_credit(name: str, steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    """Per-step credits of scheme ``name``; ConfigError listing the schemes if unknown."""
    return CREDIT_SCHEMES.get(name)(steps, gamma)


@dataclass
class TokenCredit:
    """SNC credits placed on action tokens and normalised batch-globally."""

    values: list[list[float]] = field(default_factory=list)  # per sequence, per response token
    scale: float = 1.0


def normalise_token_credits(sequences: Sequence[Sequence[float]], s_min: float = 5e-4, clip: float = 5.0,
                            pool: Sequence[float] | None = None) -> TokenCredit:
    """Divide by the std of the nonzero token credits of the whole batch (floored at s_min; no mean
    subtraction, so signs survive) and clip to [-clip, clip]. ``pool``: the nonzero credits the std is taken
    over when the batch is larger than ``sequences`` (multi-process: every rank's credits)."""
    nonzero = list(pool) if pool is not None else [v for seq in sequences for v in seq if v != 0.0]
    if len(nonzero) >= 2:
        mean = sum(nonzero) / len(nonzero)
        std = (sum((v - mean) ** 2 for v in nonzero) / len(nonzero)) ** 0.5
    else:
        std = 0.0
    scale = max(std, s_min)
    values = [[max(-clip, min(clip, v / scale)) for v in seq] for seq in sequences]
    return TokenCredit(values, scale)


# -- IGPO (appendix "Factorial credit control"; Wang et al. 2025, arXiv:2510.14967) --------------------------------
# "The two IGPO arms use the same implementation, including policy-belief information gain, turn-level
# normalization, cumulative turn advantage, and reward scaling" (that paragraph). Per rollout i with
# information turns t = 0..n_i-1 followed by the answer turn T_i = n_i:
#   ℓ_{i,t}  = log p_θ(y* | q, O_t): the *current* policy's length-normalised teacher-forced gold log-likelihood
#              (max over normalised aliases) given the evidence surfaced before turn t; ℓ_{i,n_i} is after the last;
#   π_{i,t}  = exp(ℓ_{i,t}): IGPO's belief π_θ(a | q, o_≤t) = exp((1/L) Σ_j log π_θ(a_j | q, o_≤t, a_<j));
#   r_{i,t}  = w_ig · (π_{i,t+1} − π_{i,t})            (t < T_i; IGPO's information gain, a *probability*
#              difference: IGPO paper eq. for r_{i,t}, and "prob_diff", the default info_gain_type of its reference
#              code; credit.igpo_gain: log_prob gives the reference code's "log_prob_diff" option, ℓ_{t+1} − ℓ_t)
#   r_{i,T}  = w_out · R_i^out                        (answer turn: the outcome reward, answer F1)
#   Â_{i,t}  = (r_{i,t} − mean(R_g)) / (std(R_g) + ε)  R_g = every turn reward of every rollout in the group
#                                                     (population std; 0 when std < ZERO_STD, like GRPO here)
#   Ã_{i,t}  = Σ_{k=t}^{T_i} γ^{k−t} Â_{i,k}         (cumulative turn advantage)
# Ã_{i,t} lands on every policy token of turn t and *replaces* A_out + λ·A_SNC: the outcome enters through the
# joint normalisation, and nothing here goes through SNC's batch-global scale or clip.

IGPO_EPS = 1e-6
IGPO_ZERO_STD = 1e-6  # same threshold as GRPO's zero-advantage rule (training/advantages.py)


#: ``credit.igpo_gain`` values: prob = IGPO's information gain (a difference of probabilities), log_prob = the
#: difference of log-probabilities (the reference code's log_prob_diff option)
IGPO_GAINS = ("prob", "log_prob")


def information_gains(log_beliefs: Sequence[float], gain: str = "prob") -> list[float]:
    """IGPO's information gain of each information turn from consecutive policy log-beliefs ℓ_0..ℓ_n (n+1 values ->
    n gains). ``gain`` "prob" (IGPO, arXiv 2510.14967): IG_t = exp(ℓ_{t+1}) − exp(ℓ_t), the rise of the policy's
    length-normalised probability of the gold answer, in [-1, 1]; "log_prob": ℓ_{t+1} − ℓ_t (unbounded below, so a
    turn lifting a near-zero belief from 1e-6 to 1e-3 would outweigh one lifting it from 0.2 to 0.9)."""
    if gain == "prob":
        return [math.exp(float(b)) - math.exp(float(a)) for a, b in zip(log_beliefs[:-1], log_beliefs[1:])]
    if gain == "log_prob":
        return [float(b) - float(a) for a, b in zip(log_beliefs[:-1], log_beliefs[1:])]
    raise ValueError(f"IGPO gain {gain!r} unknown; available: {', '.join(IGPO_GAINS)}")


def igpo_turn_rewards(log_beliefs: Sequence[float], outcome: float, *, ig_weight: float = 1.0,
                      outcome_weight: float = 1.0, gain: str = "prob") -> list[float]:
    """One rollout's dense reward trajectory [w_ig·IG_0, ..., w_ig·IG_{n-1}, w_out·R_out] (IGPO's reward scaling:
    weights on the information-gain and outcome streams before the joint normalisation; 1.0 / 1.0 by default;
    ``gain``: see :func:`information_gains`)."""
    return [ig_weight * g for g in information_gains(log_beliefs, gain)] + [outcome_weight * float(outcome)]


def igpo_group_normalise(group: Sequence[Sequence[float]], eps: float = IGPO_EPS) -> list[list[float]]:
    """Turn-level normalisation within one GRPO group: mean/std over *all* turn rewards of all its rollouts."""
    pooled = [float(v) for rewards in group for v in rewards]
    if not pooled:
        return [[] for _ in group]
    mean = sum(pooled) / len(pooled)
    std = (sum((v - mean) ** 2 for v in pooled) / len(pooled)) ** 0.5
    if std < IGPO_ZERO_STD:
        return [[0.0] * len(rewards) for rewards in group]
    return [[(float(v) - mean) / (std + eps) for v in rewards] for rewards in group]


def discounted_cumulative(values: Sequence[float], gamma: float = 1.0) -> list[float]:
    """Ã_t = Σ_{k≥t} γ^{k−t} v_k (reverse accumulation)."""
    out = [0.0] * len(values)
    running = 0.0
    for t in range(len(values) - 1, -1, -1):
        running = float(values[t]) + gamma * running
        out[t] = running
    return out


def igpo_advantages(log_beliefs: Sequence[Sequence[float]], outcomes: Sequence[float], groups: Sequence[int], *,
                    gamma: float = 1.0, ig_weight: float = 1.0, outcome_weight: float = 1.0,
                    eps: float = IGPO_EPS, gain: str = "prob") -> list[list[float]]:
    """IGPO turn advantages for a batch of rollouts.

    ``log_beliefs[i]``: ℓ_0..ℓ_{n_i} of rollout i (n_i information turns; a rollout without any has just [ℓ_0]);
    ``outcomes[i]``: its outcome reward; ``groups[i]``: its GRPO group id; ``gain``: how a turn's information gain
    is taken from two beliefs (:func:`information_gains`; "prob" is IGPO's). Returns, per rollout, n_i + 1
    advantages: one per information turn, then the answer turn's (see :func:`igpo_step_advantage`)."""
    if not (len(log_beliefs) == len(outcomes) == len(groups)):
        raise ValueError("log_beliefs, outcomes and groups must have one entry per rollout")
    rewards = [igpo_turn_rewards(lb, r, ig_weight=ig_weight, outcome_weight=outcome_weight, gain=gain)
               for lb, r in zip(log_beliefs, outcomes)]
    out: list[list[float]] = [[] for _ in rewards]
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(int(g), []).append(i)
    for idx in members.values():
        normed = igpo_group_normalise([rewards[i] for i in idx], eps)
        for i, values in zip(idx, normed):
            out[i] = discounted_cumulative(values, gamma)
    return out


def igpo_step_advantage(turn_advantages: Sequence[float], step: int | None) -> float:
    """The advantage of one policy generation: step t < n_i -> its information turn; the answer sequence
    (``step`` None) and a terminal ANSWER / ANSWER_WITH step (index n_i, the last) -> the answer turn."""
    if not turn_advantages:
        return 0.0
    if step is None:
        return float(turn_advantages[-1])
    return float(turn_advantages[min(step, len(turn_advantages) - 1)])
