"""A trainer checkpoint without a training run: the tiny random Llama (full or LoRA) with moved weights, saved."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch


def saved_tiny_checkpoint(tmp_path: Path, lora: bool) -> tuple[Any, Path]:
    """A tiny-random trainer (markov context, 5 action tokens) whose trainable weights were moved, saved at step 3:
    (trainer, RUN_DIR/checkpoint-3)."""
    from harness_g.training.checkpoint import DataOrder
    from harness_g.training.config import load_config
    from harness_g.training.trainer import Trainer

    cfg = load_config(None, {"model.name": "tiny-random", "model.lora": lora, "data.graph_dir": str(tmp_path / "unused"),
                             "rollout.max_action_tokens": 5, "rollout.context": "markov", "log.tensorboard": False})
    trainer = Trainer(cfg, tmp_path / "run", progress=False)
    with torch.no_grad():  # move the trainable weights so the checkpoint differs from the initial model
        for p in trainer.model.parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 0.05)
    trainer.order = DataOrder(4, 0)
    trainer.step = 3
    trainer.save()
    return trainer, tmp_path / "run" / "checkpoint-3"
