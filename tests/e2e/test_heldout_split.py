"""The paper's protocol (harness-g.tex appendix "Splits and corpus preprocessing"): train on one part of a dataset's
questions, report the final checkpoint on the held-out part. A real run of the tiny random model on the shipped 2Wiki
slice records its split (RUN_DIR/split.json, RUN_DIR/heldout_ids.txt), and ``harness-g eval --question-ids
RUN_DIR/heldout_ids.txt --model RUN_DIR/checkpoint-N`` (no GRAPH_DIR: the checkpoint names its graph) evaluates exactly
those questions and reproduces the trainer's own final held-out answers. A resume with another split is refused."""
from __future__ import annotations

import json

import pytest
from helpers.cli_checks import assert_one_line_error, run
from helpers.paths import TEST_DATA

SLICE = TEST_DATA / "2wikimultihopqa" / "dev.subset.json"



@pytest.mark.slow
def test_the_held_out_questions_are_recorded_and_eval_reports_the_final_checkpoint_on_them(tmp_path, capsys, store_spec):
    from harness_g.training.config import load_config

    cfg = tmp_path / "run.yaml"
    load_config(None, {"model.name": "tiny-random", "data.graph_dir": str(tmp_path / "graph"), "data.store": store_spec,
                       "data.build_format": "2wiki", "data.build_input": str(SLICE), "data.limit": 6,
                       "data.eval_questions": 2, "rollout.group_size": 2, "rollout.questions_per_step": 1,
                       "rollout.max_turns": 2, "rollout.constrain_actions": True, "rollout.max_answer_tokens": 4,
                       "rollout.env": {"visible_cap": 3, "lookup_cap": 3}, "optim.steps": 1, "log.save_every": 0,
                       "log.tensorboard": False}).save(cfg)
    out = tmp_path / "run"
    rc, _, err = run(capsys, "train", "--config", cfg, "--out", out, "-q")
    assert rc == 0, err
    split = json.loads((out / "split.json").read_text())
    assert len(split["heldout"]) == 2 and len(split["train"]) == 4 and not set(split["heldout"]) & set(split["train"])
    assert (out / "heldout_ids.txt").read_text().split() == split["heldout"]
    (after,) = [r for r in map(json.loads, (out / "eval.jsonl").read_text().splitlines())
                if r["tag"] == "after" and r["split"] == "heldout"]

    ev = tmp_path / "eval"
    rc, _, err = run(capsys, "eval", "--policy", "transformers", "--model", out / "checkpoint-1",
                     "--question-ids", out / "heldout_ids.txt", "--out", ev, "-q")
    assert rc == 0, err
    records = [json.loads(line) for line in (ev / "records.jsonl").read_text().splitlines()]
    assert [r["id"] for r in records] == split["heldout"]  # exactly the held-out questions, in the recorded order
    assert {r["id"]: r["prediction"] for r in records} == {qid: answer for _, answer, _, qid in after["answers"]}

    # resuming the run with another split (one more question held out) is refused before anything trains: the
    # checkpoint's config diff names the changed field first (the split-file check behind it, for a question file
    # edited in place, is tests/unit/test_training_data.py)
    rc, _, err = run(capsys, "train", "--config", cfg, "--out", out, "--resume", out / "checkpoints" / "final",
                     "--set", "data.eval_questions=3", "--set", "optim.steps=2", "-q")
    assert_one_line_error(rc, err, "was saved by a run with other settings", "data.eval_questions: 2 -> 3")
    assert json.loads((out / "split.json").read_text()) == split  # the recorded split is untouched
