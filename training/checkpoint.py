"""What a training run saves and restores: the data order, the run state and the exported policy.

A run directory holds resume state in ``RUN_DIR/checkpoints/<tag>/`` (Accelerate's model, optimiser, scheduler and
RNG state, plus :data:`STATE_FILE` with the step, data position and skipped-batch count) and, per save, the policy
in ``RUN_DIR/checkpoint-N/``, loadable like a Hugging Face checkpoint (:mod:`harness_g.agent.llm.checkpoint`).
"""
from __future__ import annotations

import copy
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness_g.errors import ConfigError

STATE_FILE = "trainer_state.json"


class DataOrder:
    """Seeded epoch permutations of ``n`` training questions: epoch e visits them in the order of
    ``random.Random(seed * 100_003 + e)``'s shuffle, so the order depends only on (n, seed, epoch) and a run
    restored at ``position`` (epoch, index) draws exactly what the original run would have drawn next."""

    def __init__(self, n: int, seed: int, epoch: int = 0, index: int = 0):
        self.n, self.seed, self.epoch, self.index = n, seed, epoch, index

    @property
    def position(self) -> tuple[int, int]:
        """(epoch, index of the next question within that epoch's permutation): what checkpoints save."""
        return self.epoch, self.index

    def permutation(self) -> list[int]:
        """The current epoch's order of question indices 0..n-1."""
        order = list(range(self.n))
        random.Random(self.seed * 100_003 + self.epoch).shuffle(order)
        return order

    def take(self, k: int) -> list[int]:
        """The next ``k`` question indices, crossing into the next epoch's permutation when this one runs out."""
        out: list[int] = []
        while len(out) < k:
            perm = self.permutation()
            take = perm[self.index: self.index + (k - len(out))]
            out.extend(take)
            self.index += len(take)
            if self.index >= self.n:
                self.epoch, self.index = self.epoch + 1, 0
        return out


@dataclass(frozen=True)
class RunState:
    """The trainer's own resume state (everything Accelerate's ``save_state`` does not hold)."""

    step: int  # optimiser steps of the training loop completed (train steps, not updates)
    epoch: int  # DataOrder.epoch
    index: int  # DataOrder.index
    skipped_batches: int = 0  # updates rejected for a non-finite gradient norm, over the whole run


def write_run_state(path: Path, state: RunState) -> None:
    """Write :data:`STATE_FILE` into the checkpoint directory ``path`` (which must exist)."""
    (path / STATE_FILE).write_text(json.dumps(asdict(state)), encoding="utf-8")


def read_run_state(path: Path) -> RunState:
    """The :class:`RunState` of checkpoint directory ``path``; ConfigError when it is not a harness-g checkpoint."""
    file = path / STATE_FILE
    if not file.exists():
        raise ConfigError(f"{path}: not a harness-g checkpoint (no {STATE_FILE})")
    state = json.loads(file.read_text(encoding="utf-8"))
    return RunState(step=int(state["step"]), epoch=int(state["epoch"]), index=int(state["index"]),
                    skipped_batches=int(state.get("skipped_batches", 0)))


def policy_settings(config: Any, step: int, prompt_budget: int, env: dict[str, Any]) -> dict[str, Any]:
    """How a run plays its policy (``config``: a TrainConfig; ``env``: the resolved EnvConfig as a dict): what
    ``harness-g eval`` needs to run a checkpoint exactly as the trainer's own evaluation does
    (:mod:`harness_g.agent.llm.checkpoint`)."""
    r, m = config.rollout, config.model
    return {"step": step, "base_model": m.name, "gguf_file": m.gguf_file, "lora": m.lora, "dtype": m.compute_dtype,
            "policy": {"max_new_tokens": r.max_action_tokens, "max_answer_tokens": r.max_answer_tokens,
                       "constrain_actions": r.constrain_actions, "context": r.context, "max_context_tokens": prompt_budget},
            "interface": r.interface, "env": env, "graph_dir": str(config.data.graph_dir)}


def export_policy(model: Any, tokenizer: Any, run_dir: Path, settings: dict[str, Any], *, save_base: bool) -> Path:
    """Write ``run_dir/checkpoint-<settings['step']>`` (call on the main process only). ``model``: the unwrapped
    policy (a PEFT model saves its adapter). ``save_base``: a LoRA run over a base no hub id can reload (the offline
    tiny-random model): its frozen initial weights are saved once to ``run_dir/base-model`` and named as the base."""
    from harness_g.agent.llm.checkpoint import write_policy_checkpoint

    settings = dict(settings)
    if save_base:
        base_dir = run_dir / "base-model"
        if not (base_dir / "config.json").is_file():
            copy.deepcopy(model).unload().save_pretrained(base_dir)  # adapters removed, not merged: the initial weights
            tokenizer.save_pretrained(base_dir)
        settings["base_model"] = str(base_dir.resolve())
    return write_policy_checkpoint(model, tokenizer, run_dir / f"checkpoint-{settings['step']}", settings)
