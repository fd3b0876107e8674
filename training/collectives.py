"""Reductions across training processes (Accelerate); each is the identity when the run is single-process."""
from __future__ import annotations

from typing import Any

import torch


def sum_over_ranks(accelerator: Any, value: int) -> int:
    """Sum of an int over processes."""
    if accelerator.num_processes == 1:
        return value
    t = torch.tensor([value], dtype=torch.long, device=accelerator.device)
    return int(accelerator.gather(t).sum())


def max_over_ranks(accelerator: Any, values: list[int]) -> list[int]:
    """Element-wise max of an equal-length int list across processes."""
    if accelerator.num_processes == 1:
        return values
    t = torch.tensor(values, dtype=torch.long, device=accelerator.device)
    return accelerator.gather(t).view(accelerator.num_processes, -1).max(0).values.tolist()


def concat_over_ranks(values: list[float]) -> list[float]:
    """The concatenation of every process's ``values``, in rank order."""
    from accelerate.utils import gather_object

    return [v for part in gather_object([values]) for v in part]


#: metrics averaged over the ranks that report them: on a rank without one the value is undefined, not 0 (the
#: aliasing rate of a rank where no two rollouts of a group asked differently)
PRESENT_ONLY = frozenset({"aliasing"})


def average_metrics(per_rank: list[dict[str, Any]]) -> dict[str, Any]:
    """The mean of each key over ``per_rank`` (one metrics dict per process): a key missing on a rank counts as 0
    there (e.g. an action type no rollout of that rank took), except :data:`PRESENT_ONLY` keys, averaged over the
    ranks that have them."""
    out = {}
    for k in sorted({k for m in per_rank for k in m}):
        if k in PRESENT_ONLY:
            values = [float(m[k]) for m in per_rank if k in m]
            out[k] = sum(values) / len(values)
        else:
            out[k] = sum(float(m.get(k, 0.0)) for m in per_rank) / len(per_rank)
    return out


def mean_over_ranks(accelerator: Any, metrics: dict[str, Any]) -> dict[str, Any]:
    """Per-step metrics averaged over processes (:func:`average_metrics`)."""
    if accelerator.num_processes == 1:
        return metrics
    from accelerate.utils import gather_object

    return average_metrics(gather_object([metrics]))
