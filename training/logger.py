"""Metrics sinks: JSONL always; TensorBoard and Weights & Biases when installed and enabled."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


class MetricsLogger:
    def __init__(self, out_dir: Path, *, tensorboard: bool = True, wandb: bool = False, config: dict[str, Any] | None = None,
                 enabled: bool = True):
        self.enabled = enabled
        self.path = out_dir / "metrics.jsonl"
        self._tb = None
        self._wandb = None
        if not enabled:
            return
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(out_dir / "tensorboard"))
            except Exception:  # tensorboard not installed: JSONL is enough
                self._tb = None
        if wandb:
            try:
                import wandb as _wandb

                self._wandb = _wandb.init(project="harness-g", config=config or {}, dir=str(out_dir))
            except Exception:
                self._wandb = None

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        if not self.enabled:
            return
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"step": step, **metrics}, default=float) + "\n")
        scalars = {k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        if self._tb is not None:
            for k, v in scalars.items():
                self._tb.add_scalar(k, v, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log(scalars, step=step)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()
