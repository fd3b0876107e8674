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
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

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


def information_gain(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    """IGPO-style: each turn's own belief gain, accumulated over the future turns (cumulative turn advantage)."""
    out = [0.0] * len(steps)
    running = 0.0
    for t in range(len(steps) - 1, -1, -1):
        running = steps[t].gain + gamma * running
        out[t] = running
    return [StepCredit(v, 0.0) for v in out]


CreditScheme = Callable[[Sequence[StepGains], float], list[StepCredit]]
CREDIT_SCHEMES: dict[str, CreditScheme] = {}


def register_credit(name: str) -> Callable[[CreditScheme], CreditScheme]:
    def deco(fn: CreditScheme) -> CreditScheme:
        CREDIT_SCHEMES[name] = fn
        return fn

    return deco


@register_credit("outcome")
def _outcome(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    """Outcome-only GRPO (λ = 0 row of the ablation): no step credit."""
    return [StepCredit(0.0, 0.0) for _ in steps]


@register_credit("snc")
def _snc(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    return snc(steps, gamma)


@register_credit("snc_no_enablement")
def _snc_no_en(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    return snc(steps, gamma, use_enablement=False)


@register_credit("snc_no_frontier")
def _snc_no_fr(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    return snc(steps, gamma, use_frontier=False)


@register_credit("igpo")
def _igpo(steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    return information_gain(steps, gamma)


def compute_credit(name: str, steps: Sequence[StepGains], gamma: float = 1.0) -> list[StepCredit]:
    if name not in CREDIT_SCHEMES:
        from harness_g.errors import ConfigError

        raise ConfigError(f"unknown credit scheme {name!r}; available: {', '.join(sorted(CREDIT_SCHEMES))}")
    return CREDIT_SCHEMES[name](steps, gamma)


@dataclass
class TokenCredit:
    """SNC credits placed on action tokens and normalised batch-globally."""

    values: list[list[float]] = field(default_factory=list)  # per sequence, per response token
    scale: float = 1.0


def place_on_tokens(step_credits: Sequence[float], step_spans: Sequence[tuple[int, int]], length: int) -> list[float]:
    """Each step's credit on every token of its action span [start, end) (uniform placement); 0 elsewhere."""
    out = [0.0] * length
    for credit, (start, end) in zip(step_credits, step_spans):
        for k in range(max(0, start), min(end, length)):
            out[k] = credit
    return out


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
