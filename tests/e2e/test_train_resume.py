"""``harness-g train --resume`` with the tiny random Llama on the shipped 2Wiki slice (real rollouts against the
graph store, real Accelerate checkpoints): a resumed run continues bit for bit and leaves one log row per step; a
resume with other settings or a damaged checkpoint is refused with one line before anything loads."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from helpers.paths import TEST_DATA

from harness_g.training.config import load_config

SLICE = TEST_DATA / "2wikimultihopqa" / "dev.subset.json"
#: per-step metrics that measure the machine, not the run: wall-clock times, and the answerer's forward passes
#: since the process started (a resumed process starts from 0)
NOT_REPRODUCIBLE = ("snc_share", "answerer_calls")


def _config(graph: Path, store: str | None = None, **extra):
    """Two training questions (revisited every step, so the frozen answerer's score cache is hit across steps), one
    held out for the before/after evaluation, two rollouts of up to three turns each."""
    return load_config(None, {
        "model.name": "tiny-random", "data.graph_dir": str(graph), "data.store": store, "data.build_format": "2wiki",
        "data.build_input": str(SLICE), "data.limit": 3, "data.eval_questions": 1, "rollout.group_size": 2,
        "rollout.questions_per_step": 2, "rollout.max_turns": 3, "rollout.constrain_actions": True,
        "rollout.env": {"visible_cap": 3, "lookup_cap": 3}, "rollout.max_answer_tokens": 4, "credit.dead_zone": 0.0,
        "optim.lr": 1e-3, "optim.mini_batch_questions": 1, "log.tensorboard": False, **extra})


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _reproducible(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith("time_") and k not in NOT_REPRODUCIBLE}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_resumed_run_logs_each_step_once_and_matches_the_uninterrupted_run(tmp_path, store_spec):
    """An uninterrupted 3-step run (checkpoint at step 2) left exactly what a run killed after logging step 3 leaves,
    plus its final checkpoint and evaluation. Resumed from step 2 in the same directory, it must write step 3 once,
    with the same metrics, the same rollouts, the same final weights (byte for byte) and the same evaluation."""
    from harness_g.training.data import build_training_graph
    from harness_g.training.trainer import Trainer

    run = tmp_path / "run"
    config = _config(tmp_path / "graph", store_spec, **{"optim.steps": 3, "log.save_every": 2})
    build_training_graph(config)
    Trainer(config, run, progress=False).train()
    first = {name: _rows(run / name) for name in ("metrics.jsonl", "rollouts.jsonl", "eval.jsonl")}
    weights = _sha256(run / "checkpoints" / "final" / "model.safetensors")
    assert [r["step"] for r in first["metrics.jsonl"]] == [1, 2, 3]
    assert first["metrics.jsonl"][-1]["answerer_calls"] > 0  # the frozen answerer scored previews

    Trainer(config, run, resume=run / "checkpoints" / "step-000002", progress=False).train()
    metrics = _rows(run / "metrics.jsonl")
    assert [r["step"] for r in metrics] == [1, 2, 3]  # not [1, 2, 3, 3]
    assert [_reproducible(r) for r in metrics] == [_reproducible(r) for r in first["metrics.jsonl"]]
    assert _rows(run / "rollouts.jsonl") == first["rollouts.jsonl"]  # the same rollouts, once each
    assert _sha256(run / "checkpoints" / "final" / "model.safetensors") == weights  # bit-exact
    evals = _rows(run / "eval.jsonl")
    assert [(r["tag"], r["step"]) for r in evals] == [(r["tag"], r["step"]) for r in first["eval.jsonl"]]
    assert [_reproducible(r) for r in evals] == [_reproducible(r) for r in first["eval.jsonl"]]


@pytest.fixture(scope="module")
def saved_run(tmp_path_factory) -> tuple[Path, Path]:
    """(config file, run directory) of a 1-step run on the embedded FalkorDB (the checks below refuse before the
    store is touched, so they run once, not per store)."""
    from harness_g.training.data import build_training_graph
    from harness_g.training.trainer import Trainer

    root = tmp_path_factory.mktemp("resume")
    config = _config(root / "graph", **{"optim.steps": 1, "log.save_every": 1, "data.eval_questions": 0})
    build_training_graph(config)
    Trainer(config, root / "run", progress=False).train()
    config.save(root / "train.yaml")
    return root / "train.yaml", root / "run"


def _train_cli(capsys, config: Path, run: Path, checkpoint: Path, *sets: str) -> tuple[int, str]:
    from harness_g.cli import main

    args = ["train", "--config", str(config), "--out", str(run), "--resume", str(checkpoint), "-q"]
    for s in sets:
        args += ["--set", s]
    code = main(args)
    return code, capsys.readouterr().err.strip()


@pytest.mark.slow
def test_a_resume_with_other_settings_is_refused_listing_every_difference(saved_run, capsys):
    config, run = saved_run
    before = {name: (run / name).read_bytes() for name in ("config.yaml", "metrics.jsonl")}
    code, err = _train_cli(capsys, config, run, run / "checkpoints" / "step-000001", "optim.lr=1e-2",
                           "rollout.group_size=4", "rollout.max_turns=2", "seed=7", "optim.steps=5", "log.every=2")
    assert code == 2 and len(err.splitlines()) == 1, err
    for diff in ("optim.lr: 0.001 -> 0.01", "rollout.group_size: 2 -> 4", "rollout.max_turns: 3 -> 2", "seed: 0 -> 7"):
        assert diff in err, err
    listed = err.split("(only")[0]
    assert "optim.steps:" not in listed and "log.every:" not in listed  # a longer run, another log interval: allowed
    assert {name: (run / name).read_bytes() for name in before} == before  # nothing rewritten


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncate:model.safetensors", "truncate:optimizer.bin", "truncate:trainer_state.json",
                                    "truncate:random_states_0.pkl", "delete:scheduler.bin"])
def test_a_damaged_checkpoint_is_refused_naming_the_file(saved_run, tmp_path, capsys, damage):
    config, run = saved_run
    checkpoint = Path(shutil.copytree(run / "checkpoints" / "step-000001", tmp_path / "step-000001"))
    how, name = damage.split(":")
    file = checkpoint / name
    if how == "delete":
        file.unlink()
    else:
        file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    code, err = _train_cli(capsys, config, tmp_path / "resumed", checkpoint)
    assert code == 2, err
    assert len(err.splitlines()) == 1 and str(file) in err and ("truncated" in err or "missing" in err), err
    assert not (tmp_path / "resumed" / "metrics.jsonl").exists()  # refused before a step was taken


@pytest.mark.slow
def test_a_lora_run_keeps_only_its_adapters_and_resumes_bit_for_bit(tmp_path, monkeypatch):
    """A LoRA run's resume state holds the adapters (``adapter_state.safetensors``: LoRA tensors only), not the frozen
    base (Accelerate's ``model.safetensors`` held the whole model: ~270 MB for SmolLM2, over what a lent GPU machine
    returns per file); resumed from step 1, step 2's adapters are the uninterrupted run's, byte for byte. A
    checkpoint written before (a whole ``model.safetensors``, no adapter file) still resumes."""
    from safetensors import safe_open

    from harness_g.training import trainer as trainer_module
    from harness_g.training.checkpoint import ADAPTER_STATE
    from harness_g.training.data import build_training_graph
    from harness_g.training.trainer import Trainer

    config = _config(tmp_path / "graph", **{"model.lora": True, "optim.steps": 2, "log.save_every": 1,
                                            "data.eval_questions": 0})
    build_training_graph(config)
    run = tmp_path / "run"
    Trainer(config, run, progress=False).train()
    step1, final = run / "checkpoints" / "step-000001", run / "checkpoints" / "final"
    assert not (step1 / "model.safetensors").exists()
    with safe_open(str(step1 / ADAPTER_STATE), "pt") as f:
        keys = list(f.keys())
    assert keys and all("lora_" in k for k in keys), keys[:3]

    resumed = tmp_path / "resumed"
    shutil.copytree(run, resumed)
    shutil.rmtree(resumed / "checkpoints" / "final")
    Trainer(config, resumed, resume=resumed / "checkpoints" / "step-000001", progress=False).train()
    assert _sha256(resumed / "checkpoints" / "final" / ADAPTER_STATE) == _sha256(final / ADAPTER_STATE)

    # the format before: Accelerate's whole model.safetensors, no adapter file -- still loads
    old = tmp_path / "old"
    monkeypatch.setattr(trainer_module, "keep_adapters_only", lambda accelerator: None)
    Trainer(config, old, progress=False).train()
    assert (old / "checkpoints" / "step-000001" / "model.safetensors").exists()
    monkeypatch.undo()
    shutil.rmtree(old / "checkpoints" / "final")
    Trainer(config, old, resume=old / "checkpoints" / "step-000001", progress=False).train()
    assert _sha256(old / "checkpoints" / "final" / ADAPTER_STATE) == _sha256(final / ADAPTER_STATE)
