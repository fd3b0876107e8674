"""Retrieval-equivalence diagnostics (paper appendix "Additional Evaluation Protocols")."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


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


@dataclass(frozen=True)
class EquivalenceStats:
    d_ret: float  # fraction of groups with N_eq >= 2
    mean_n_eq: float
    d_query: float | None  # fraction of groups with >= 2 distinct query strings (free-query arm only)


def group_diagnostics(groups: Sequence[Sequence[frozenset[str]]], queries: Sequence[Sequence[str]] | None = None,
                      threshold: float = 0.8) -> EquivalenceStats:
    n_eq = [len(set(equivalence_classes(g, threshold))) for g in groups]
    n = max(len(groups), 1)
    d_query = None
    if queries is not None:
        d_query = sum(len(set(q)) >= 2 for q in queries) / max(len(queries), 1)
    return EquivalenceStats(sum(k >= 2 for k in n_eq) / n, sum(n_eq) / n, d_query)
