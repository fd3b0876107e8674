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


def mean_over_ranks(accelerator: Any, metrics: dict[str, Any]) -> dict[str, Any]:
    """Per-step metrics averaged over processes (a key missing on a rank counts as 0 there, e.g. an action type no
    rollout of that rank took)."""
    if accelerator.num_processes == 1:
        return metrics
    from accelerate.utils import gather_object

    per_rank = gather_object([metrics])
    keys = sorted({k for m in per_rank for k in m})
    return {k: sum(float(m.get(k, 0.0)) for m in per_rank) / len(per_rank) for k in keys}
