"""Mixed precision for the trainer: which Accelerate ``mixed_precision`` a run uses, and whether its updates move.

The policy's trainable weights and AdamW's state are fp32 master copies; ``model.compute_dtype`` is only the dtype
forward and backward passes run in (Accelerate's autocast). bf16 *parameters* would be the wrong thing: at the
paper's lr 5e-7 an AdamW step is below half a bf16 ulp for almost every weight and rounds away (measured on
Qwen2.5-3B: 0.89% of the elements changed after 8 steps; benchmarks/results/train_gpu.md).
:class:`UpdateProbe` measures what a step actually changed, so a run that does not move is visible
(``param_update_frac``) and warned about.
"""
from __future__ import annotations

import math
import os
import warnings
from typing import Any, Iterable

import torch

from harness_g.errors import ConfigError
from harness_g.training.modeling import MIXED_PRECISION

#: optimiser steps in a row under :data:`STALL_FRAC` before :class:`UpdateProbe` warns
STALL_STEPS = 3
#: fraction of sampled trainable elements below which an optimiser step counts as not moving the weights
STALL_FRAC = 0.01


def mixed_precision(compute_dtype: str, launcher: str | None = None) -> str:
    """Accelerate's ``mixed_precision`` for ``model.compute_dtype``. ``launcher``: what ``accelerate launch`` asked
    for (``ACCELERATE_MIXED_PRECISION``, read when None); "no" or unset leaves the choice to the run config, another
    value that disagrees with it is refused, so the compute dtype a run records is the one it ran."""
    want = MIXED_PRECISION[compute_dtype]
    launcher = os.environ.get("ACCELERATE_MIXED_PRECISION") if launcher is None else launcher
    if launcher and launcher != "no" and launcher != want:
        raise ConfigError(f"the Accelerate launch config sets mixed_precision {launcher!r} but model.compute_dtype is "
                          f"{compute_dtype!r} (mixed_precision {want!r}): set model.compute_dtype to match, or "
                          "mixed_precision: 'no' in the launch config (the run config then decides)")
    return want


def make_accelerator(compute_dtype: str) -> Any:
    """The run's ``Accelerator`` with :func:`mixed_precision`'s setting. Accelerate keeps one precision per process
    (``AcceleratorState`` is a singleton); a second Trainer of another compute dtype in the same single process (a
    notebook, a test session) would be refused by Accelerate, so that process's Accelerator state (not its
    process group) is reset first. A multi-process run keeps one precision for its whole life."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState, PartialState

    want = mixed_precision(compute_dtype)
    state = AcceleratorState._shared_state
    if state and state.get("_mixed_precision") != want and PartialState().num_processes == 1:
        AcceleratorState._reset_state()
    return Accelerator(mixed_precision=want)


class UpdateProbe:
    """Which fraction of the trainable elements an optimiser step changes (``param_update_frac``).

    A fixed strided sample of every trainable tensor, at most ``limit`` elements in all (every element when the
    model has fewer, so tiny models are measured exactly); :meth:`before` reads the sample before the step,
    :meth:`after` compares. Cost: two gathers of ``limit`` floats per step. Warns once when :data:`STALL_STEPS`
    steps in a row change under :data:`STALL_FRAC` of the sample."""

    def __init__(self, params: Iterable[torch.nn.Parameter], limit: int = 1 << 20):
        self.params = [p for p in params if p.requires_grad]
        total = sum(p.numel() for p in self.params)
        self.stride = max(1, math.ceil(total / limit))
        self._before: torch.Tensor | None = None
        self.stalled = 0
        self.warned = False

    def _sample(self) -> torch.Tensor:
        with torch.no_grad():
            return torch.cat([p.detach().reshape(-1)[:: self.stride].float() for p in self.params]) if self.params \
                else torch.zeros(0)

    def before(self) -> None:
        """Remember the sampled values (call right before ``optimizer.step()``)."""
        self._before = self._sample().clone()

    def after(self) -> float:
        """Fraction of the sample that the step changed (call right after ``optimizer.step()``)."""
        assert self._before is not None, "UpdateProbe.after without before"
        now = self._sample()
        frac = float((now != self._before).float().mean()) if now.numel() else float("nan")
        self._before = None
        self.stalled = self.stalled + 1 if frac < STALL_FRAC else 0
        if self.stalled >= STALL_STEPS and not self.warned:
            self.warned = True
            warnings.warn(f"optimiser steps change under {STALL_FRAC:.0%} of the trainable weights "
                          f"({frac:.2%} in the last one, {self.stalled} steps in a row): the learning rate may be too "
                          "small for the weights' precision, or the gradients are zero (see param_update_frac)",
                          stacklevel=2)
        return frac
