"""Retrieval-equivalence diagnostics (paper appendix "Additional Evaluation Protocols",
*Retrieval-equivalence diagnostics*).

E(tau_i) = union_{t=1}^{T_i} E_{i,t}: the deduplicated evidence returned at the
trajectory's *retrieval turns*. A retrieval turn is an executed LOOKUP (on the free-query arm: a free
search string resolved to a LOOKUP target); E_{i,t} is its result, the sentences it brought into view
(``StepRecord.introduced``). The union starts at t = 1, so InitRetrieve's U_0 -- the same for every
rollout of a question -- is not part of it, and it runs to T_i, so a LOOKUP at the last step counts.
SELECT / ANSWER_WITH / ANSWER retrieve nothing. See :func:`retrieval_evidence`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from harness_g.agent.env.trajectory import lookup_evidence, record_field


def retrieval_evidence(trajectory: Any) -> frozenset[str]:
    """E(tau): the union of the evidence returned at retrieval turns t >= 1 (every executed LOOKUP's
    result, the last step's included; not U_0, not commits). Accepts a Trajectory or its JSON dict."""
    return frozenset(lookup_evidence(trajectory))


def menu_requests(trajectory: Any) -> list[str]:
    """The menu arm's retrieval requests in order: ``"LOOKUP <targets>"`` per executed LOOKUP (the free-query arm's are
    the search strings it wrote, ``Rollout.queries``). Accepts a Trajectory or its JSON dict."""
    return ["LOOKUP " + ",".join(record_field(step, "targets") or [])
            for step in record_field(trajectory, "steps") or [] if record_field(step, "action_type") == "LOOKUP"]


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def equivalence_classes(evidence_sets: Sequence[frozenset[str]], threshold: float = 0.8) -> list[int]:
    """κ(E(τ_i)): greedy evidence-overlap clustering in rollout order — a trajectory joins the first
    class whose first member overlaps it with Jaccard ≥ threshold, else opens a new class."""
    reps: list[frozenset[str]] = []
    labels = []
    for e in evidence_sets:
        for k, rep in enumerate(reps):
            if jaccard(e, rep) >= threshold:
                labels.append(k)
                break
        else:
            reps.append(e)
            labels.append(len(reps) - 1)
    return labels


def aliasing_rate(evidence_sets: Sequence[frozenset[str]], requests: Sequence[Sequence[str]],
                  threshold: float = 0.8) -> float | None:
    """harness-g's diagnostic beside the paper's three (harness-g.tex defines no such number): among the pairs of a
    group's rollouts whose retrieval requests differ, the fraction whose evidence falls in one retrieval-equivalence
    class κ (:func:`equivalence_classes`). ``requests[i]``: rollout i's requests in order (its search strings, or
    its LOOKUP targets on the menu). It measures the mechanism of section "Retrieval-Equivalence Collapse"
    (surface-distinct requests reaching the same evidence) apart from how often a policy retrieves at all, which
    N_eq mixes in: two rollouts that both retrieve nothing have equal requests and do not count. None when no two
    rollouts' requests differ."""
    labels = equivalence_classes(evidence_sets, threshold)
    keys = [tuple(r) for r in requests]
    pairs = aliased = 0
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            if keys[i] != keys[j]:
                pairs += 1
                aliased += labels[i] == labels[j]
    return aliased / pairs if pairs else None


@dataclass(frozen=True)
class EquivalenceStats:
    d_ret: float  # fraction of groups with N_eq >= 2
    mean_n_eq: float
    d_query: float | None  # fraction of groups with >= 2 distinct query strings (free-query arm only)


def group_diagnostics(groups: Sequence[Sequence[frozenset[str]]], queries: Sequence[Sequence[str]] | None = None,
                      threshold: float = 0.8) -> EquivalenceStats:
    """D_ret, mean N_eq and D_query over rollout groups (that paragraph's definitions). ``groups``: per group,
    E(tau_i) of each rollout (:func:`retrieval_evidence`); ``queries``: per group, every query string its rollouts
    wrote."""
    n_eq = [len(set(equivalence_classes(g, threshold))) for g in groups]
    n = max(len(groups), 1)
    d_query = None
    if queries is not None:
        d_query = sum(len(set(q)) >= 2 for q in queries) / max(len(queries), 1)
    return EquivalenceStats(sum(k >= 2 for k in n_eq) / n, sum(n_eq) / n, d_query)


def trajectory_group_diagnostics(groups: Sequence[Sequence[Any]], queries: Sequence[Sequence[str]] | None = None,
                                 threshold: float = 0.8) -> EquivalenceStats:
    """:func:`group_diagnostics` over trajectories: E(tau) of each is :func:`retrieval_evidence`."""
    return group_diagnostics([[retrieval_evidence(t) for t in g] for g in groups], queries, threshold)
