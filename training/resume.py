"""Resuming a training run (``harness-g train --resume CHECKPOINT``): what is checked before anything loads, and the
run's logs cut back to the checkpoint.

* Settings: the resumed run's resolved config must equal the one the checkpoint was saved with
  (``CHECKPOINT/config.yaml``), except :data:`RESUMABLE`; every other difference is listed in one error, as
  ``harness-g eval`` refuses a resume with other settings (:func:`harness_g.config_diff.differences`).
* Files: :func:`~harness_g.training.checkpoint.verify_checkpoint` (the manifest's sizes and sha256).
* Logs: rows of ``metrics.jsonl``, ``rollouts.jsonl`` and ``eval.jsonl`` that a killed run wrote after the
  checkpoint are removed (:func:`truncate_logs`), so the resumed run leaves one row per step.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness_g.config_diff import differences
from harness_g.errors import ConfigError
from harness_g.training.checkpoint import CONFIG_FILE, RunState, verify_checkpoint, verify_listed

#: settings a resumed run may change: none of them changes a step already taken or the steps to come.
#: ``optim.steps`` (not below the checkpoint's step): the schedule is warm-up only, so no step depended on the total;
#: ``log.every``/``log.save_every``: which steps are logged and checkpointed; ``log.tensorboard``/``log.wandb``: extra
#: metric sinks; ``log.keep_trajectories``: how many rollouts per step are written to rollouts.jsonl. Everything else
#: (seed, model, data, rollout, credit, optim, ``log.eval_train_questions``, ``torch_threads``) is refused.
RESUMABLE = frozenset({"optim.steps", "log.every", "log.save_every", "log.tensorboard", "log.wandb",
                       "log.keep_trajectories"})

#: the run's JSONL logs that hold one row (or rows) per training step
STEP_LOGS = ("metrics.jsonl", "rollouts.jsonl", "eval.jsonl")


def recorded_config_file(checkpoint: Path) -> Path:
    """Where the settings of ``checkpoint`` are recorded: its own :data:`CONFIG_FILE`; a checkpoint saved before
    checkpoints held one falls back to its run's ``RUN_DIR/config.yaml`` (``RUN_DIR/checkpoints/<tag>``)."""
    if not checkpoint.is_dir():
        raise ConfigError(f"{checkpoint}: no such checkpoint directory")
    own = checkpoint / CONFIG_FILE
    if own.is_file():
        verify_listed(checkpoint, CONFIG_FILE)  # a damaged file is named as such, not read as other settings
        return own
    run = checkpoint.parent.parent / "config.yaml"
    if run.is_file():
        return run
    raise ConfigError(f"{checkpoint}: no {CONFIG_FILE} in the checkpoint or its run directory: the settings it was "
                      "made with are unknown, so a resume cannot be checked; start a new --out")


def check_settings(checkpoint: Path, config: Any) -> None:
    """Refuse to resume ``checkpoint`` with a ``config`` (a TrainConfig) that differs from the recorded one outside
    :data:`RESUMABLE`: one ConfigError listing every difference as ``key: old -> new``."""
    from harness_g.training.config import load_config

    recorded = load_config(recorded_config_file(checkpoint))
    diffs = differences(recorded.to_dict(), config.to_dict(), allowed=RESUMABLE, added=True)
    if diffs:
        raise ConfigError(f"{checkpoint} was saved by a run with other settings ({'; '.join(diffs)}); resume with the "
                          f"same settings (only {', '.join(sorted(RESUMABLE))} may change) or start a new --out")


def check_resume(checkpoint: Path, config: Any, *, processes: int) -> RunState:
    """Everything checked before a resume loads ``checkpoint``: the settings (:func:`check_settings`), the files
    (:func:`~harness_g.training.checkpoint.verify_checkpoint`) and that ``optim.steps`` is not below the checkpoint's
    step. Returns the checkpoint's :class:`RunState`."""
    check_settings(checkpoint, config)
    state = verify_checkpoint(checkpoint, processes=processes)
    if config.optim.steps < state.step:
        raise ConfigError(f"optim.steps ({config.optim.steps}) is below the step of {checkpoint} ({state.step}); "
                          "resume with at least that many steps")
    return state


def _keep(row: Any, step: int, until: int | None = None) -> bool:
    """Whether a log row belongs to the run up to ``step``: rows of later steps do not, nor an ``after`` evaluation
    row at ``step`` when the resumed run ends there again (``until`` None or ``<= step``: it writes its own). When the
    resumed run goes on past ``step`` (training continued in pieces), that evaluation of the step-``step`` weights
    stays: it is a point of the held-out curve no later row replaces."""
    if not isinstance(row, dict) or not isinstance(row.get("step"), int):
        return True  # not a step row: not ours to judge
    if row.get("tag") == "after" and row["step"] == step:
        return until is not None and until > step
    return row["step"] <= step


def truncate_log(path: Path, step: int, until: int | None = None) -> int:
    """Rewrite the JSONL file ``path`` (atomically) without the rows :func:`_keep` rejects and without a last line
    cut off mid-write by a kill; returns how many lines were removed (0: the file is left untouched)."""
    if not path.is_file():
        return 0
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = []
    for i, line in enumerate(lines):
        try:
            row = json.loads(line)
        except ValueError:
            if i == len(lines) - 1:  # a partial last line: the killed run's, after any checkpoint
                continue
            row = None
        if _keep(row, step, until):
            kept.append(line if line.endswith("\n") else line + "\n")
    removed = len(lines) - len(kept)
    if removed:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(kept), encoding="utf-8")
        os.replace(tmp, path)
    return removed


def truncate_logs(out: Path, step: int, until: int | None = None) -> dict[str, int]:
    """Cut :data:`STEP_LOGS` in run directory ``out`` back to ``step`` (the resumed checkpoint's; ``until``: the step
    the resumed run trains to, see :func:`_keep`): ``{file: lines removed}`` for the files that changed."""
    removed = {name: truncate_log(out / name, step, until) for name in STEP_LOGS}
    return {k: v for k, v in removed.items() if v}
