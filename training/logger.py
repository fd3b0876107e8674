"""Metrics sinks: JSONL always; TensorBoard and Weights & Biases when installed and enabled."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence


#: TensorBoard groups (first matching prefix wins); everything else is "train/"
TAG_GROUPS: tuple[tuple[str, str], ...] = (
    ("time_", "time"), ("snc_", "credit"), ("answerer_", "credit"), ("credit_", "credit"), ("action_frac_", "actions"),
    ("eval_", "eval"), ("zero_adv", "groups"), ("d_ret", "groups"), ("mean_n_eq", "groups"), ("aliasing", "groups"),
)


def tensorboard_tag(key: str) -> str:
    """``reward_f1`` -> ``train/reward_f1``, ``time_update_s`` -> ``time/time_update_s``, ``snc_scale`` -> ``credit/snc_scale``:
    related curves share a TensorBoard section. The JSONL keeps the bare keys."""
    for prefix, group in TAG_GROUPS:
        if key.startswith(prefix):
            return f"{group}/{key}"
    return f"train/{key}"


class MetricsLogger:
    """``out_dir/metrics.jsonl`` (one row per logged step), TensorBoard and W&B sinks. ``purge_step``: a resumed run's
    first step; TensorBoard hides the events of that step and later that the interrupted run wrote."""

    def __init__(self, out_dir: Path, *, tensorboard: bool = True, wandb: bool = False, config: dict[str, Any] | None = None,
                 enabled: bool = True, purge_step: int | None = None):
        self.enabled = enabled
        self.path = out_dir / "metrics.jsonl"
        self._tb = None
        self._wandb = None
        if not enabled:
            return
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter

                self._tb = SummaryWriter(str(out_dir / "tensorboard"), purge_step=purge_step)
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
                self._tb.add_scalar(tensorboard_tag(k), v, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log(scalars, step=step)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()

    @property
    def tensorboard_dir(self) -> Path | None:
        """Where TensorBoard events go (None when TensorBoard is off or not installed)."""
        return Path(self._tb.log_dir) if self._tb is not None else None


def append_rollouts(path: Path, step: int, rollouts: Sequence[Any]) -> None:
    """Append one JSON line per rollout to ``path`` (RUN_DIR/rollouts.jsonl): the training step it belongs to
    (1-based), question, gold answers, answer, reward, every turn's (reply, action type, error) and, on the
    free-query arm, the query strings. ``rollouts``: :class:`~harness_g.training.rollout.Rollout` objects."""
    if not rollouts:
        return
    with open(path, "a", encoding="utf-8") as fh:
        for r in rollouts:
            fh.write(json.dumps({"step": step, "question": r.item.question, "answers": list(r.item.answers),
                                 "answer": r.answer, "reward": r.reward,
                                 "actions": [(s.reply, s.action_type, s.error) for s in r.trajectory.steps],
                                 **({"queries": r.queries} if r.queries else {})}) + "\n")
