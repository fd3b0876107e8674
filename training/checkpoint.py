"""What a training run saves and restores: the data order, the run state, the checkpoint manifest and the exported
policy.

A run directory holds resume state in ``RUN_DIR/checkpoints/<tag>/`` (Accelerate's model, optimiser, scheduler and
RNG state, plus :data:`STATE_FILE` with the step, data position and skipped-batch count, :data:`CONFIG_FILE` with
the settings that made it, and :data:`MANIFEST`, written last, with every file's size and sha256) and, per save, the
policy in ``RUN_DIR/checkpoint-N/``, loadable like a Hugging Face checkpoint (:mod:`harness_g.agent.llm.checkpoint`).
:func:`verify_checkpoint` checks a checkpoint against its manifest before Accelerate reads any of it.
"""
from __future__ import annotations

import copy
import json
import os
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness_g.errors import ConfigError, HarnessError

STATE_FILE = "trainer_state.json"
CONFIG_FILE = "config.yaml"  # the run's resolved TrainConfig when the checkpoint was saved
MANIFEST = "manifest.json"
#: checkpoint layout version, in STATE_FILE: 2 = with CONFIG_FILE and MANIFEST; absent = older (no manifest)
FORMAT = 2


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
    """Write :data:`STATE_FILE` into the checkpoint directory ``path`` (which must exist), marked :data:`FORMAT`."""
    (path / STATE_FILE).write_text(json.dumps({**asdict(state), "format": FORMAT}), encoding="utf-8")


def _state_json(path: Path) -> dict[str, Any]:
    """:data:`STATE_FILE` of checkpoint ``path`` as a mapping; ConfigError (one line, naming the file) when it is
    missing, unreadable or not a JSON object."""
    file = path / STATE_FILE
    if not file.exists():
        raise ConfigError(f"{path}: not a harness-g checkpoint (no {STATE_FILE})")
    try:
        state = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{file}: unreadable checkpoint state ({exc.__class__.__name__}: {exc}); resume from "
                          "another checkpoint") from None
    if not isinstance(state, dict):
        raise ConfigError(f"{file}: unreadable checkpoint state (expected a JSON object)")
    return state


def read_run_state(path: Path) -> RunState:
    """The :class:`RunState` of checkpoint directory ``path``; ConfigError when it is not a (readable) harness-g
    checkpoint."""
    state = _state_json(path)
    try:
        return RunState(step=int(state["step"]), epoch=int(state["epoch"]), index=int(state["index"]),
                        skipped_batches=int(state.get("skipped_batches", 0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{path / STATE_FILE}: unreadable checkpoint state (bad or missing {exc})") from None


def answerer_cache_file(path: Path, rank: int) -> Path:
    """Process ``rank``'s frozen-answerer score cache in checkpoint ``path`` (JSON; see
    :meth:`~harness_g.training.answerer.FrozenAnswerer.cache_state`)."""
    return path / f"answerer_cache_{rank}.json"


def write_answerer_cache(path: Path, rank: int, items: list[list[Any]]) -> None:
    """Write process ``rank``'s answerer cache into checkpoint ``path`` (before the manifest lists it)."""
    answerer_cache_file(path, rank).write_text(json.dumps(items), encoding="utf-8")


def read_answerer_cache(path: Path, rank: int) -> list[list[Any]] | None:
    """Process ``rank``'s answerer cache of checkpoint ``path`` (verified by its manifest before this runs), or None
    for a checkpoint saved without one."""
    file = answerer_cache_file(path, rank)
    return json.loads(file.read_text(encoding="utf-8")) if file.is_file() else None


# -- the manifest ------------------------------------------------------------------------------------------------
def _digests(path: Path) -> dict[str, dict[str, Any]]:
    """``{relative path: {"bytes", "sha256"}}`` of every file under checkpoint ``path`` except the manifest."""
    from harness_g.graph.artifact import file_sha256

    files = sorted(f for f in path.rglob("*") if f.is_file() and f.name != MANIFEST and not f.name.endswith(".tmp"))
    return {f.relative_to(path).as_posix(): {"bytes": f.stat().st_size, "sha256": file_sha256(f)} for f in files}


def write_manifest(path: Path, *, processes: int) -> None:
    """Write :data:`MANIFEST` (every file's size and sha256, the number of processes that saved it, torch's CPU
    thread count) into checkpoint ``path``, atomically and last: a checkpoint is complete exactly when its manifest
    exists and matches."""
    import torch

    manifest = {"format": FORMAT, "processes": processes, "torch_threads": torch.get_num_threads(),
                "files": _digests(path)}
    tmp = path / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path / MANIFEST)


def finish_checkpoint(path: Path, state: RunState, config: Any, *, processes: int) -> None:
    """Complete checkpoint ``path`` after Accelerate's ``save_state`` (every process's files written; call on the
    main process only): the run state, the settings (``config``, a TrainConfig, as :data:`CONFIG_FILE`), then the
    manifest over all of it."""
    write_run_state(path, state)
    config.save(path / CONFIG_FILE)
    write_manifest(path, processes=processes)


def _read_manifest(path: Path) -> dict[str, Any]:
    file = path / MANIFEST
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
        files, processes = manifest["files"], int(manifest["processes"])
        if not isinstance(files, dict):
            raise TypeError("files is not a mapping")
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise HarnessError(f"{file}: unreadable checkpoint manifest ({exc.__class__.__name__}: {exc}); resume from "
                           "another checkpoint") from None
    return {"files": files, "processes": processes, "torch_threads": manifest.get("torch_threads")}


def _check_file(path: Path, name: str, entry: dict[str, Any]) -> None:
    """One manifest entry against the file on disk: present, same size, same sha256 (the size is checked first:
    a truncated file is named as such without hashing it)."""
    from harness_g.graph.artifact import file_sha256

    file = path / name
    if not file.is_file():
        raise HarnessError(f"{file}: missing (the checkpoint's {MANIFEST} lists it); resume from another checkpoint")
    size = file.stat().st_size
    if size != entry.get("bytes"):
        raise HarnessError(f"{file}: {size} bytes, the checkpoint's {MANIFEST} says {entry.get('bytes')} (truncated or "
                           "overwritten); resume from another checkpoint")
    if file_sha256(file) != entry.get("sha256"):
        raise HarnessError(f"{file}: content differs from the checkpoint's {MANIFEST} (sha256 mismatch); resume from "
                           "another checkpoint")


def verify_listed(path: Path, name: str) -> None:
    """Check the file ``name`` of checkpoint ``path`` against the manifest, when there is one: for a file read
    before the whole checkpoint is verified (the settings it was saved with)."""
    if not (path / MANIFEST).exists():
        return
    entry = _read_manifest(path)["files"].get(name)
    if not isinstance(entry, dict):
        raise HarnessError(f"{path / name}: not in the checkpoint's {MANIFEST}; resume from another checkpoint")
    _check_file(path, name, entry)


def verify_checkpoint(path: Path, *, processes: int) -> RunState:
    """Check checkpoint directory ``path`` before anything loads it; returns its :class:`RunState`.

    A checkpoint with a manifest (:data:`FORMAT` 2) must match it file by file (size, then sha256) and have been
    saved by as many processes as the resuming run has (each restores its own RNG state). A checkpoint without one
    is either cut off while saving (its state says format 2: refused) or saved before manifests existed: then
    :func:`check_legacy_checkpoint` checks what can be checked without a manifest. Errors are one line naming the
    file."""
    if not path.is_dir():
        raise ConfigError(f"{path}: no such checkpoint directory")
    if not (path / MANIFEST).exists():
        if _state_json(path).get("format") is not None:
            raise HarnessError(f"{path}: incomplete checkpoint (no {MANIFEST}: the save was cut off); resume from "
                               "another checkpoint")
        check_legacy_checkpoint(path, processes=processes)
        return read_run_state(path)
    manifest = _read_manifest(path)
    if manifest["processes"] != processes:
        raise ConfigError(f"{path}: saved by {manifest['processes']} process(es), resumed with {processes}: each "
                          "process restores its own random state; launch as many processes as the run had")
    for name, entry in sorted(manifest["files"].items()):
        _check_file(path, name, entry if isinstance(entry, dict) else {})
    _warn_threads(path, manifest["torch_threads"])
    return read_run_state(path)


def _warn_threads(path: Path, saved: int | None) -> None:
    """A resume with another torch CPU thread count is allowed (another machine) but may not be bit-exact: say so."""
    import warnings

    import torch

    if saved is not None and saved != torch.get_num_threads():
        warnings.warn(f"{path} was saved with {saved} torch CPU thread(s), this run has {torch.get_num_threads()}: "
                      "resumed CPU steps may differ from the uninterrupted run's at rounding level (set torch_threads "
                      "to match for bit-exact steps)",
                      stacklevel=3)


def check_legacy_checkpoint(path: Path, *, processes: int) -> None:
    """What can be checked of a checkpoint saved before manifests: every file Accelerate reads exists and loads
    (catches a missing or truncated file, not one whose bytes changed in place). ``processes``: the resuming run's
    (one RNG state file each)."""
    import torch

    weights = [path / n for n in ("model.safetensors", "pytorch_model.bin") if (path / n).is_file()]
    if not weights:
        raise HarnessError(f"{path / 'model.safetensors'}: missing; resume from another checkpoint")
    needed = [path / "optimizer.bin", path / "scheduler.bin", *(path / f"random_states_{i}.pkl" for i in range(processes))]
    for file in [*weights, *needed]:
        if not file.is_file():
            raise HarnessError(f"{file}: missing; resume from another checkpoint")
        try:
            if file.suffix == ".safetensors":
                from safetensors import safe_open

                with safe_open(str(file), framework="pt") as fh:
                    fh.keys()
            else:
                torch.load(file, map_location="cpu", weights_only=False, mmap=True)
        except Exception as exc:  # noqa: BLE001 - any failure to parse is a damaged file; named, one line
            raise HarnessError(f"{file}: unreadable ({exc.__class__.__name__}: {' '.join(str(exc).split())[:200]}); "
                               "resume from another checkpoint") from None


def policy_settings(config: Any, step: int, prompt_budget: int, env: dict[str, Any]) -> dict[str, Any]:
    """How a run plays its policy (``config``: a TrainConfig; ``env``: the resolved EnvConfig as a dict): what
    ``harness-g eval`` needs to run a checkpoint exactly as the trainer's own evaluation does
    (:mod:`harness_g.agent.llm.checkpoint`)."""
    r, m = config.rollout, config.model
    return {"step": step, "base_model": m.name, "gguf_file": m.gguf_file, "lora": m.lora, "dtype": m.compute_dtype,
            "init_adapter": str(Path(m.init_adapter).resolve()) if m.init_adapter else None,
            "policy": {"max_new_tokens": r.max_action_tokens, "max_answer_tokens": r.max_answer_tokens,
                       "constrain_actions": r.constrain_actions, "context": r.context, "max_context_tokens": prompt_budget},
            "interface": r.interface, "env": env, "graph_dir": str(config.data.graph_dir),
            "questions": config.data.questions, "questions_format": config.data.questions_format}


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
        settings["base_source"] = settings["base_model"]  # the spec it was built from (merge_adapter's base check)
        settings["base_model"] = str(base_dir.resolve())
        settings["init_adapter"] = None  # the saved base is the model as loaded: a warm start is merged into it
    return write_policy_checkpoint(model, tokenizer, run_dir / f"checkpoint-{settings['step']}", settings)


#: a LoRA run's trainable weights in its resume state (PEFT's adapter state dict), instead of Accelerate's
#: ``model.safetensors``, which would hold the frozen base as well
ADAPTER_STATE = "adapter_state.safetensors"


def keep_adapters_only(accelerator: Any) -> None:
    """Make ``accelerator.save_state`` store a LoRA policy's adapters only, and ``load_state`` restore them.

    The frozen base is reloaded from its source at every start, so the resume state needs what training changes:
    for SmolLM2-135M with LoRA that is a few MB instead of ~270 MB (a lent GPU machine returns at most 16 MB per
    file). Applies to PEFT models in plain (DDP / single-process) runs; a checkpoint without :data:`ADAPTER_STATE`
    (written before this) still loads through Accelerate's own ``model.safetensors``."""
    from peft import PeftModel, get_peft_model_state_dict, set_peft_model_state_dict
    from safetensors.torch import load_file, save_file

    def peft_of(model: Any) -> Any:
        inner = accelerator.unwrap_model(model)
        return inner if isinstance(inner, PeftModel) else None

    def save_hook(models: list, weights: list, output_dir: str) -> None:
        if len(weights) != len(models):  # DeepSpeed / FSDP save models their own way
            return
        for i in reversed(range(len(models))):
            peft = peft_of(models[i])
            if peft is not None:
                if accelerator.is_main_process:
                    state = {k: v.detach().cpu().contiguous() for k, v in get_peft_model_state_dict(peft).items()}
                    save_file(state, str(Path(output_dir) / ADAPTER_STATE))
                weights.pop(i)  # Accelerate then writes no model.safetensors for it

    def load_hook(models: list, input_dir: str) -> None:
        if not (Path(input_dir) / ADAPTER_STATE).is_file():
            return
        for i in reversed(range(len(models))):
            peft = peft_of(models[i])
            if peft is not None:
                state = load_file(str(Path(input_dir) / ADAPTER_STATE), device=str(accelerator.device))
                result = set_peft_model_state_dict(peft, state)
                if getattr(result, "unexpected_keys", None):
                    raise HarnessError(f"{input_dir}/{ADAPTER_STATE}: adapter weights this model has no place for: "
                                       f"{sorted(result.unexpected_keys)[:3]}")
                models.pop(i)  # a copy of Accelerate's list: it loads the other models itself

    accelerator.register_save_state_pre_hook(save_hook)
    accelerator.register_load_state_pre_hook(load_hook)
