"""Resume checks of ``harness-g train`` on real Accelerate checkpoints of a small torch model (no database, no
language model): the manifest (sizes + sha256) refuses damaged files with one line naming the file, a checkpoint
saved before manifests gets the checks that can be made without one, changed settings are listed in one error,
and the run's JSONL logs are cut back to the checkpoint's step."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from harness_g.config_diff import differences
from harness_g.errors import ConfigError, HarnessError
from harness_g.training.checkpoint import (MANIFEST, STATE_FILE, RunState, finish_checkpoint, verify_checkpoint,
                                           write_manifest)
from harness_g.training.config import load_config


def _config(**overrides):
    return load_config(None, {"data.graph_dir": "/graphs/g", **overrides})


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """A checkpoint as the trainer writes it: Accelerate's save_state (model.safetensors, optimizer.bin,
    scheduler.bin, random_states_0.pkl) of a Linear model after one AdamW step, then the run state, config and
    manifest."""
    from accelerate import Accelerator

    torch.manual_seed(0)
    model = torch.nn.Linear(16, 16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    acc = Accelerator(cpu=True)
    model, opt, sched = acc.prepare(model, opt, sched)
    model(torch.randn(4, 16)).sum().backward()
    opt.step()
    sched.step()
    path = tmp_path_factory.mktemp("ckpt") / "step-000001"
    acc.save_state(str(path))
    finish_checkpoint(path, RunState(step=1, epoch=0, index=2), _config(), processes=1)
    return path


@pytest.fixture
def ckpt(saved: Path, tmp_path: Path) -> Path:
    """A fresh copy of the saved checkpoint, free to damage."""
    return Path(shutil.copytree(saved, tmp_path / "step-000001"))


def _one_line_naming(exc: pytest.ExceptionInfo, file: Path) -> None:
    msg = str(exc.value)
    assert "\n" not in msg and str(file) in msg, msg


def test_an_intact_checkpoint_verifies_and_loads(ckpt: Path) -> None:
    manifest = json.loads((ckpt / MANIFEST).read_text())
    assert {"model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl", STATE_FILE,
            "config.yaml"} <= set(manifest["files"])
    assert manifest["processes"] == 1
    assert verify_checkpoint(ckpt, processes=1) == RunState(step=1, epoch=0, index=2)


@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl",
                                  STATE_FILE, "config.yaml"])
def test_a_truncated_file_is_refused_naming_it(ckpt: Path, name: str) -> None:
    file = ckpt / name
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    with pytest.raises(HarnessError, match="truncated") as exc:
        verify_checkpoint(ckpt, processes=1)
    _one_line_naming(exc, file)


@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl"])
def test_a_missing_file_is_refused_naming_it(ckpt: Path, name: str) -> None:
    (ckpt / name).unlink()
    with pytest.raises(HarnessError, match="missing") as exc:
        verify_checkpoint(ckpt, processes=1)
    _one_line_naming(exc, ckpt / name)


def test_a_changed_byte_is_refused_by_its_hash(ckpt: Path) -> None:
    file = ckpt / "optimizer.bin"
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    file.write_bytes(bytes(data))
    with pytest.raises(HarnessError, match="sha256") as exc:
        verify_checkpoint(ckpt, processes=1)
    _one_line_naming(exc, file)


def test_a_save_cut_off_before_its_manifest_is_refused(ckpt: Path) -> None:
    (ckpt / MANIFEST).unlink()
    with pytest.raises(HarnessError, match="incomplete checkpoint"):
        verify_checkpoint(ckpt, processes=1)


def test_another_process_count_is_refused(ckpt: Path) -> None:
    with pytest.raises(ConfigError, match=r"saved by 1 process\(es\), resumed with 2"):
        verify_checkpoint(ckpt, processes=2)


def test_another_torch_thread_count_warns_that_steps_match_only_to_rounding(ckpt: Path) -> None:
    manifest = json.loads((ckpt / MANIFEST).read_text())
    assert manifest["torch_threads"] == torch.get_num_threads()
    (ckpt / MANIFEST).write_text(json.dumps({**manifest, "torch_threads": torch.get_num_threads() + 1}))
    with pytest.warns(UserWarning, match="torch CPU thread"):
        verify_checkpoint(ckpt, processes=1)


def _legacy(ckpt: Path) -> Path:
    """The checkpoint as harness-g wrote it before manifests: no manifest, no config, no format in the state."""
    (ckpt / MANIFEST).unlink()
    (ckpt / "config.yaml").unlink()
    state = json.loads((ckpt / STATE_FILE).read_text())
    state.pop("format")
    (ckpt / STATE_FILE).write_text(json.dumps(state))
    return ckpt


def test_a_legacy_checkpoint_is_accepted_when_every_file_loads(ckpt: Path) -> None:
    assert verify_checkpoint(_legacy(ckpt), processes=1).step == 1


@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.bin", "scheduler.bin", "random_states_0.pkl"])
def test_a_legacy_checkpoint_with_a_truncated_file_is_refused(ckpt: Path, name: str) -> None:
    file = _legacy(ckpt) / name
    file.write_bytes(file.read_bytes()[: file.stat().st_size - 1])
    with pytest.raises(HarnessError, match="unreadable") as exc:
        verify_checkpoint(ckpt, processes=1)
    _one_line_naming(exc, file)


def test_a_legacy_checkpoint_missing_a_file_or_with_a_cut_state_is_refused(ckpt: Path) -> None:
    (_legacy(ckpt) / "scheduler.bin").unlink()
    with pytest.raises(HarnessError, match="scheduler.bin: missing"):
        verify_checkpoint(ckpt, processes=1)
    (ckpt / STATE_FILE).write_text('{"step": 1, "epo')
    with pytest.raises(ConfigError, match="unreadable checkpoint state") as exc:
        verify_checkpoint(ckpt, processes=1)
    _one_line_naming(exc, ckpt / STATE_FILE)


# -- settings ------------------------------------------------------------------------------------------------------
def test_differences_are_listed_by_dotted_key_except_the_allowed() -> None:
    old = {"optim": {"lr": 1e-4, "steps": 4}, "rollout": {"env": {"visible_cap": 3}}, "seed": 0}
    new = {"optim": {"lr": 1e-3, "steps": 8}, "rollout": {"env": {"visible_cap": 3, "lookup_cap": 2}}, "seed": 7}
    assert differences(old, new, allowed={"optim.steps"}) == ["optim.lr: 0.0001 -> 0.001", "seed: 0 -> 7"]
    assert differences(old, new, allowed={"optim.steps"}, added=True) == [
        "optim.lr: 0.0001 -> 0.001", "rollout.env.lookup_cap: None -> 2", "seed: 0 -> 7"]


def test_a_resume_with_other_settings_lists_every_difference(ckpt: Path) -> None:
    from harness_g.training.resume import check_settings

    check_settings(ckpt, _config(**{"optim.steps": 50, "log.every": 2, "log.save_every": 5, "log.tensorboard": False,
                                    "log.keep_trajectories": 0}))  # output options and a longer run: accepted
    changed = _config(**{"optim.lr": 1e-3, "rollout.group_size": 2, "rollout.max_turns": 2, "seed": 7,
                         "log.eval_train_questions": 3, "rollout.env": {"visible_cap": 3}})
    with pytest.raises(ConfigError) as exc:
        check_settings(ckpt, changed)
    msg = str(exc.value)
    assert "\n" not in msg and str(ckpt) in msg
    for diff in ("optim.lr: 5e-07 -> 0.001", "rollout.group_size: 8 -> 2", "rollout.max_turns: 6 -> 2", "seed: 0 -> 7",
                 "log.eval_train_questions: 0 -> 3", "rollout.env.visible_cap: 6 -> 3"):
        assert diff in msg, msg


def test_a_damaged_recorded_config_is_named_not_read_as_other_settings(ckpt: Path) -> None:
    from harness_g.training.resume import check_settings

    file = ckpt / "config.yaml"
    file.write_text(file.read_text()[:200])
    with pytest.raises(HarnessError, match="truncated") as exc:
        check_settings(ckpt, _config())
    _one_line_naming(exc, file)
    with pytest.raises(ConfigError, match="no such checkpoint directory"):
        check_settings(ckpt.parent / "step-000009", _config())


def test_a_shorter_run_than_the_checkpoint_is_refused(ckpt: Path) -> None:
    from harness_g.training.resume import check_resume

    assert check_resume(ckpt, _config(**{"optim.steps": 1}), processes=1).step == 1
    (ckpt / STATE_FILE).write_text(json.dumps({**json.loads((ckpt / STATE_FILE).read_text()), "step": 5}))
    write_manifest(ckpt, processes=1)
    with pytest.raises(ConfigError, match=r"optim.steps \(4\) is below the step of .* \(5\)"):
        check_resume(ckpt, _config(**{"optim.steps": 4}), processes=1)


def test_a_legacy_checkpoint_is_compared_with_its_run_config(ckpt: Path, tmp_path: Path) -> None:
    from harness_g.training.resume import check_settings

    run = tmp_path / "run"
    legacy = Path(shutil.copytree(_legacy(ckpt), run / "checkpoints" / "step-000001"))
    with pytest.raises(ConfigError, match="settings it was made with are unknown"):
        check_settings(legacy, _config())
    _config(**{"optim.lr": 1e-4}).save(run / "config.yaml")
    check_settings(legacy, _config(**{"optim.lr": 1e-4}))
    with pytest.raises(ConfigError, match=r"optim.lr: 0.0001 -> 0.001"):
        check_settings(legacy, _config(**{"optim.lr": 1e-3}))


# -- logs ----------------------------------------------------------------------------------------------------------
def _write_jsonl(path: Path, rows: list[dict], tail: str = "") -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)


def _steps(path: Path) -> list[tuple]:
    return [(r["step"], r.get("tag")) for r in map(json.loads, path.read_text().splitlines())]


def test_logs_are_cut_back_to_the_checkpoint_step(tmp_path: Path) -> None:
    """A run killed after logging step 5 and resumed from step 4: the killed run's step-5 rows go (metrics,
    rollouts, a cut last line), so the resumed run leaves one row per step; evaluation rows before the checkpoint
    stay, an ``after`` evaluation at the checkpoint's step goes (the resumed run writes its own)."""
    from harness_g.training.resume import truncate_logs

    _write_jsonl(tmp_path / "metrics.jsonl", [{"step": s, "loss": 0.1 * s} for s in range(1, 6)])
    _write_jsonl(tmp_path / "rollouts.jsonl", [{"step": s, "reward": 0} for s in (1, 1, 4, 4, 5, 5)], tail='{"step": 5, "rew')
    _write_jsonl(tmp_path / "eval.jsonl", [{"tag": "before", "step": 0, "split": "heldout"},
                                           {"tag": "after", "step": 4, "split": "heldout"}])
    assert truncate_logs(tmp_path, 4) == {"metrics.jsonl": 1, "rollouts.jsonl": 3, "eval.jsonl": 1}
    assert _steps(tmp_path / "metrics.jsonl") == [(1, None), (2, None), (3, None), (4, None)]
    assert _steps(tmp_path / "rollouts.jsonl") == [(1, None), (1, None), (4, None), (4, None)]
    assert _steps(tmp_path / "eval.jsonl") == [(0, "before")]
    before = (tmp_path / "metrics.jsonl").read_bytes()
    assert truncate_logs(tmp_path, 4) == {} and (tmp_path / "metrics.jsonl").read_bytes() == before
    # training continued in pieces: resumed from step 4 to train on to step 8, the evaluation at step 4 is a point of
    # the held-out curve and stays; a later one (a killed run's) still goes
    _write_jsonl(tmp_path / "eval.jsonl", [{"tag": "before", "step": 0}, {"tag": "after", "step": 4},
                                           {"tag": "after", "step": 5}])
    assert truncate_logs(tmp_path, 4, 8) == {"eval.jsonl": 1}
    assert _steps(tmp_path / "eval.jsonl") == [(0, "before"), (4, "after")]
    assert truncate_logs(tmp_path, 4, 4) == {"eval.jsonl": 1}  # ends at step 4 again: it writes its own
