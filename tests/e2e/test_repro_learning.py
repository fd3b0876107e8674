"""``benchmarks/repro_small.py learn`` end to end (issue 31 item 3) with the tiny random test model on the packaged
slice, embedded FalkorDB: a call trains the arm to ``--steps`` 2 in two pieces (the second a fresh ``harness-g train``
resuming the first's checkpoint: one metrics row per step) and writes learning.json with the held-out evaluation (F1,
EM, evidence recall per question) at steps 0, 1 and 2; a later call with other settings is refused in one line and
loses nothing; a spent ``--budget-s`` starts no piece; ``page`` renders claim (c). One arm keeps it short: every arm is the same ``harness-g train``
path with its packaged config (tests/e2e/test_trainer.py trains the menu and free-query arms), and the arithmetic of
the comparisons between arms is checked on hand-computed runs in tests/unit/test_repro_learning_math.py."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from graph_fixtures import _copy_artifact
from helpers.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "benchmarks" / "repro_small.py"
TINY = ["--set", "model.name=tiny-random", "--set", "rollout.group_size=2", "--set", "rollout.questions_per_step=1",
        "--set", "optim.mini_batch_questions=1", "--set", "rollout.max_turns=2", "--set", "log.eval_train_questions=0"]


def _learn(graph, out, *extra):
    return subprocess.run([sys.executable, str(SCRIPT), "learn", "--graph", str(graph), "--out", str(out),
                           "--arms", "free-query", "--eval-questions", "2", "--free-action-tokens", "6", *TINY, *extra],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_learn_trains_in_resumable_pieces_and_reports_claim_c(slice_graph, tmp_path):
    graph = _copy_artifact(slice_graph("paper"), tmp_path / "graph")
    out = tmp_path / "out"
    spent = _learn(graph, out, "--steps", "2", "--budget-s", "0")  # the budget is spent before the first piece
    assert spent.returncode == 0, spent.stderr[-3000:]
    assert "budget of 0 s spent: stopping before free-query seed 0 step 0 -> 2" in spent.stderr
    assert json.loads((out / "learning.json").read_text())["compared_at_step"] is None
    assert not (out / "learning" / "pieces.jsonl").exists()
    first = _learn(graph, out, "--steps", "2", "--round-steps", "1")  # two pieces: the second resumes the first
    assert first.returncode == 0, first.stderr[-3000:]
    pieces = [json.loads(line) for line in (out / "learning" / "pieces.jsonl").read_text().splitlines()]
    assert [(p["from"], p["to"], p["device"], p["rc"]) for p in pieces] == [(0, 1, "CPU", 0), (1, 2, "CPU", 0)]
    run = out / "learning" / "free-query-seed0"
    assert [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()] == [1, 2]
    assert len(list((run / "checkpoints").iterdir())) == 1  # only the latest resume checkpoint is kept
    config = (run / "config.yaml").read_text()
    assert "max_action_tokens: 6" in config and "interface: free-query" in config and "eval_questions: 2" in config
    split = json.loads((run / "split.json").read_text())
    assert len(split["heldout"]) == 2 and not set(split["heldout"]) & set(split["train"])  # never trained on

    data = json.loads((out / "learning.json").read_text())
    arm = data["arms"]["free-query"]
    assert data["compared_at_step"] == 2 and arm["steps"] == {"0": 2}
    evals = arm["heldout"]["0"]  # step 0, and after each piece: the resumed piece kept the step-1 evaluation
    assert set(evals) == {"0", "1", "2"} and all(e["questions"] == 2 for e in evals.values())
    assert all(0.0 <= e["evidence_recall"] <= 1.0 for e in evals.values())  # the slice's questions have gold facts
    assert arm["gain"]["f1"]["n"] == 2 and data["comparisons"] == {}  # one arm: nothing to compare it with

    before = (out / "learning.json").read_text()
    refused = _learn(graph, out, "--steps", "3", "--round-steps", "1", "--set", "optim.lr=1e-3")
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0, refused.stderr
    assert "sets=" in refused.stderr and "choose another --out" in refused.stderr
    assert (out / "learning.json").read_text() == before
    assert len((out / "learning" / "pieces.jsonl").read_text().splitlines()) == 2

    page = subprocess.run([sys.executable, str(SCRIPT), "page", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert page.returncode == 0, page.stderr
    html = (out / "index.html").read_text()
    assert "Claim (c)" in html and "Compared at step 2" in html and "2 held-out questions" in html
    assert (out / "plots" / "learning_reward_f1.svg").is_file()


@pytest.mark.slow
def test_learn_with_a_warm_start_makes_one_sft_per_interface_and_starts_every_arm_from_it(slice_graph, tmp_path):
    graph = _copy_artifact(slice_graph("paper"), tmp_path / "graph")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(SCRIPT), "learn", "--graph", str(graph), "--out", str(out),
                           "--arms", "outcome", "--eval-questions", "2", "--steps", "1", "--sft-questions", "3",
                           "--sft-epochs", "1", *TINY], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    sft = json.loads((out / "learning" / "sft-menu-seed0" / "sft.json").read_text())
    assert len(sft["demonstrated_ids"]) == 3 and sft["sft"]["epochs"] == 1
    split = json.loads((out / "learning" / "outcome-seed0" / "split.json").read_text())
    assert sft["heldout_ids"] == split["heldout"]  # the warm start never saw the arms' held-out questions
    assert set(sft["demonstrated_ids"]) <= set(split["train"])
    config = (out / "learning" / "outcome-seed0" / "config.yaml").read_text()
    assert f"init_adapter: {out / 'learning' / 'sft-menu-seed0' / 'policy'}" in config
    pieces = [json.loads(line) for line in (out / "learning" / "pieces.jsonl").read_text().splitlines()]
    assert [p.get("sft") or p.get("arm") for p in pieces] == ["sft-menu-seed0", "outcome"]
    data = json.loads((out / "learning.json").read_text())
    assert data["rests_on"]["sft"] == {"questions": 3, "epochs": 1} and data["rests_on"]["pieces"] == 1
    assert data["warm_starts"]["sft-menu-seed0"]["demonstrations"]["questions"] == 3
    # going on without the warm start would compare other runs: refused in one line
    refused = subprocess.run([sys.executable, str(SCRIPT), "learn", "--graph", str(graph), "--out", str(out),
                              "--arms", "outcome", "--eval-questions", "2", "--steps", "2", *TINY],
                             capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2 and "sft=" in refused.stderr and refused.stderr.strip().count("\n") == 0
    page = subprocess.run([sys.executable, str(SCRIPT), "page", "--out", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert page.returncode == 0, page.stderr
    assert "warm-started from an SFT on oracle demonstrations" in (out / "index.html").read_text()
