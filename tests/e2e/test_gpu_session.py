"""``benchmarks/device/gpu_session.sh`` part ``learn`` on CPU, as a lent GPU machine's last call runs it (issue 31
item 3): the script installs harness-g into its own site folder, trains from an unpacked carry folder (``DC``), and
returns what the device lets back -- ``results.tgz`` (the logs, learning.json) and the learning state in
``learn-state.tgz.part-NN`` pieces. The next lease carries the joined pieces as ``DC/learn-state.tgz``; a second run of
the script from a fresh work folder must then resume the learning runs where the first stopped, not start them over.

Real parts: the tiny random test model on the packaged slice's graph, embedded FalkorDB, the real pip install. No GPU
here, so ``nvidia-smi`` is missing and the script's bf16 setting runs on the CPU; what is checked is the script's own
work (install, resume from the carried state, archives), which is the same on both."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from graph_fixtures import _copy_artifact
from helpers.paths import REPO_ROOT, load_script

SCRIPT = Path("benchmarks/device/gpu_session.sh")
TINY = ("--arms free-query --free-action-tokens 6 --set model.name=tiny-random --set rollout.group_size=2 "
        "--set rollout.questions_per_step=1 --set optim.mini_batch_questions=1 --set rollout.max_turns=2 "
        "--set log.eval_train_questions=0")


def _source_copy(dest: Path) -> Path:
    """What a device call receives of the checkout (``carry.tree_files``), less the committed results: the script
    installs ``.`` with an in-tree build (``build/``), which must not race another test's wheel build of the
    checkout."""
    for name in load_script("benchmarks/device/carry.py").tree_files(REPO_ROOT):
        if not name.startswith("benchmarks/results/"):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, dest / name)
    return dest


def _session(tmp_path: Path, dc: Path, name: str, steps: int,
             round_steps: int) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / f"out-{name}"
    env = {**os.environ, "DC": str(dc), "OUT": str(out), "SITE": str(tmp_path / "site"),
           "LEARN_WORK": str(tmp_path / f"work-{name}"), "PARTS": "learn", "LSTEPS": str(steps),
           "LROUND": str(round_steps), "LEVAL": "2", "LEXTRA": TINY, "CALL_S": "900",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    repo = tmp_path / "repo"
    done = subprocess.run(["bash", str(repo / SCRIPT)], cwd=repo, env=env, capture_output=True, text=True, timeout=1200)
    return done, out


def _join_state(out: Path, dest: Path) -> Path:
    """What a user does with a lease's return: ``cat learn-state.tgz.part-* > learn-state.tgz``."""
    parts = sorted(out.glob("learn-state.tgz.part-*"))
    assert parts and all(p.stat().st_size <= 15 * 2**20 for p in parts)
    dest.write_bytes(b"".join(p.read_bytes() for p in parts))
    return dest


def _learning_json(out: Path, scratch: Path) -> dict:
    with tarfile.open(out / "results.tgz") as results:
        results.extractall(scratch, filter="data")
    with tarfile.open(scratch / "learn.tgz") as learn:
        names = learn.getnames()
        assert not [n for n in names if "checkpoint" in n], names  # the state travels apart, in the parts
        learn.extractall(scratch / "learn", filter="data")
    return json.loads((scratch / "learn" / "learning.json").read_text())


@pytest.mark.slow
def test_a_second_lease_resumes_the_learning_state_the_first_returned(slice_graph, tmp_path):
    _source_copy(tmp_path / "repo")
    dc = tmp_path / "dc"
    (dc / "whl").mkdir(parents=True)  # the wheels the device lacks: none needed here
    (dc / "site").mkdir()
    _copy_artifact(slice_graph("paper"), dc / "graphs" / "2wiki")

    first, out1 = _session(tmp_path, dc, "first", steps=1, round_steps=1)
    assert first.returncode == 0, (first.stdout[-3000:], first.stderr[-3000:])
    returned = sorted(p.name for p in out1.iterdir())
    assert returned[0] == "learn-state.tgz.part-00" and returned[-1] == "results.tgz", returned
    assert len(returned) <= 8  # the device returns at most 8 files
    data = _learning_json(out1, tmp_path / "back-first")
    assert data["compared_at_step"] == 1 and data["arms"]["free-query"]["steps"] == {"0": 1}
    state = _join_state(out1, dc / "learn-state.tgz")
    with tarfile.open(state) as tar:
        names = tar.getnames()
    assert any(n.startswith("learning/free-query-seed0/checkpoints/") for n in names), names

    # rounds of 2 steps: a run started over would train 0 -> 2 in one piece; resumed, it trains 1 -> 2
    second, out2 = _session(tmp_path, dc, "second", steps=2, round_steps=2)
    assert second.returncode == 0, (second.stdout[-3000:], second.stderr[-3000:])
    data = _learning_json(out2, tmp_path / "back-second")
    assert data["compared_at_step"] == 2 and data["arms"]["free-query"]["steps"] == {"0": 2}
    learning = tmp_path / "back-second" / "learn" / "learning"
    pieces = [json.loads(line) for line in (learning / "pieces.jsonl").read_text().splitlines()]
    # the first lease's piece came back with the state; the second lease trained one more step from its checkpoint
    assert [(p["from"], p["to"], p["rc"]) for p in pieces] == [(0, 1, 0), (1, 2, 0)]
    metrics = (learning / "free-query-seed0" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in metrics] == [1, 2]  # step 1 logged once, not trained again
