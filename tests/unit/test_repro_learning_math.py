"""benchmarks/repro_learning.py's arithmetic on hand-computed runs (issue 31 item 3): per-question gains over each
arm's own step-0 evaluation, seeds averaged per question, paired differences between arms, the step they are compared
at, evidence recall over the questions with gold only; and the refusals of bad arguments."""
from __future__ import annotations

import json

import pytest
from helpers.paths import load_script

from harness_g.errors import ConfigError

rl = load_script("benchmarks/repro_learning.py")
IDS = ["q1", "q2", "q3"]


def _eval(step, f1s, recalls=(0.0, 1.0, None)):
    return {"tag": "after" if step else "before", "step": step, "split": "heldout", "questions": 3, "f1": sum(f1s) / 3,
            "em": 0.0, "evidence_recall": 0.5, "answers": [["?", "a", ["g"], q] for q in IDS],
            "scores": [[f, 0.0, r] for f, r in zip(f1s, recalls)]}


def _run(root, name, evals, steps):
    run = root / "learning" / name
    run.mkdir(parents=True)
    (run / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
    (run / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "reward_f1": 0.1 * s, "zero_adv_frac": 0.5})
                                               + "\n" for s in range(1, steps + 1)))
    (run / "config.yaml").write_text("model: {name: tiny-random, lora: true}\nrollout: {group_size: 2}\n")


def test_gains_are_paired_by_question_averaged_over_seeds_and_compared_at_the_common_step(tmp_path):
    (tmp_path / "learning").mkdir()
    (tmp_path / "learning" / "settings.json").write_text(json.dumps({"arms": ["outcome", "snc"], "seeds": [0, 1]}))
    base = [0.0, 0.5, 1.0]
    _run(tmp_path, "outcome-seed0", [_eval(0, base), _eval(2, [0.5, 0.5, 1.0])], 2)
    _run(tmp_path, "outcome-seed1", [_eval(0, base), _eval(2, [0.0, 1.0, 1.0])], 2)
    # snc seed 0 also has an evaluation at step 1 that no other run has, and went on to step 4 (no evaluation there)
    _run(tmp_path, "snc-seed0", [_eval(0, base), _eval(1, [9, 9, 9]), _eval(2, [1.0, 1.0, 1.0], (1.0, 1.0, None))], 4)
    _run(tmp_path, "snc-seed1", [_eval(0, base), _eval(2, [1.0, 0.5, 1.0])], 2)
    data = rl.aggregate(tmp_path)
    assert data["compared_at_step"] == 2
    # outcome: seed 0 gains (0.5, 0, 0), seed 1 (0, 0.5, 0) -> per question (0.25, 0.25, 0): mean 1/6
    assert data["arms"]["outcome"]["gain"]["f1"]["mean"] == pytest.approx(1 / 6)
    # snc: (1, 0.5, 0) and (1, 0, 0) -> (1, 0.25, 0): mean 5/12; minus outcome per question (0.75, 0, 0): 0.25
    assert data["arms"]["snc"]["gain"]["f1"]["mean"] == pytest.approx(5 / 12)
    diff = data["comparisons"]["snc_minus_outcome"]["f1"]
    assert diff["mean"] == pytest.approx(0.25) and diff["n"] == 3 and diff["lo"] <= 0.25 <= diff["hi"]
    # evidence recall: q3 has no gold (None) and is left out; snc seed 0 raised q1 from 0 to 1 -> (0.5, 0) vs (0, 0)
    recall = data["comparisons"]["snc_minus_outcome"]["evidence_recall"]
    assert recall["n"] == 2 and recall["mean"] == pytest.approx(0.25)
    assert data["arms"]["snc"]["steps"] == {"0": 4, "1": 2} and data["rests_on"]["heldout_questions"] == 3
    assert json.loads((tmp_path / "learning.json").read_text())["compared_at_step"] == 2


def test_nothing_to_compare_before_every_run_has_an_evaluation_after_step_0(tmp_path):
    (tmp_path / "learning").mkdir()
    (tmp_path / "learning" / "settings.json").write_text(json.dumps({"arms": ["outcome", "snc"], "seeds": [0]}))
    _run(tmp_path, "outcome-seed0", [_eval(0, [0, 0, 0]), _eval(3, [1, 0, 0])], 3)
    _run(tmp_path, "snc-seed0", [_eval(0, [0, 0, 0])], 1)  # cut before its first piece ended
    data = rl.aggregate(tmp_path)
    assert data["compared_at_step"] is None and data["comparisons"] == {} and data["arms"]["snc"]["gain"] is None
    assert "Not measured yet" in rl.learning_section(data, tmp_path)


def test_bad_arguments_are_refused_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match="--arms 'outcome,menu'"):
        rl.parse_arms("outcome,menu")
    with pytest.raises(ConfigError, match="--set credit.scheme: set by the script or by the arm"):
        rl.check_sets(["rollout.group_size=4", "credit.scheme=snc"])
    with pytest.raises(ConfigError, match="no learning runs there"):
        rl.aggregate(tmp_path)


def test_latest_checkpoint_is_the_highest_step(tmp_path):
    for name, step in (("step-000002", 2), ("step-000010", 10), ("final", 10), ("step-000009", 9)):
        (tmp_path / "checkpoints" / name).mkdir(parents=True)
        (tmp_path / "checkpoints" / name / "trainer_state.json").write_text(json.dumps({"step": step}))
    path, step = rl.latest_checkpoint(tmp_path)
    assert step == 10 and path.name in ("final", "step-000010")
    rl.prune_checkpoints(tmp_path)
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == [path.name]
    assert rl.latest_checkpoint(tmp_path / "nothing") == (None, 0)


@pytest.mark.parametrize("extra, message", [
    (["--seeds", "0,x"], "error: --seeds '0,x': expected comma-separated integers"),
    (["--seeds", ","], "error: --seeds: give at least one seed"),
    (["--steps", "0"], "error: --steps must be >= 1, got 0"),
    (["--round-steps", "-1"], "error: --round-steps must be >= 1, got -1"),
    (["--arms", "snc,bogus"], "error: --arms 'snc,bogus': expected a comma-separated subset of outcome, snc, free-query"),
    (["--set", "seed=3"], "error: --set seed: set by the script or by the arm"),
])
def test_learn_refuses_bad_arguments_in_one_line_before_touching_the_output(tmp_path, capsys, extra, message):
    rs = load_script("benchmarks/repro_small.py")
    out = tmp_path / "out"
    assert rs.main(["learn", "--graph", str(tmp_path / "no-graph"), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "\n" not in err
    assert not out.exists()  # refused before anything was written


def test_seeds_may_be_added_to_a_comparison_but_not_dropped(tmp_path):
    from harness_g.graph.artifact import MANIFEST

    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / MANIFEST).write_text(json.dumps({"content_hash": "abc"}))

    def run(seeds, sets=("rollout.group_size=4",)):
        return rl.Learn(graph=graph, out=tmp_path / "out", arms=("outcome", "snc"), seeds=seeds, steps=2,
                        round_steps=1, eval_questions=3, free_action_tokens=32, sets=sets, budget_s=None)

    settings = tmp_path / "out" / "learning" / "settings.json"
    rl.check_settings(run((0,)))
    rl.check_settings(run((1, 0)))  # a seed added: the record keeps the earlier seeds first
    assert json.loads(settings.read_text())["seeds"] == [0, 1]
    rl.check_settings(run((0, 1)))
    with pytest.raises(ConfigError, match=r"seeds=\[0, 1\], now seeds=\[1\]"):
        rl.check_settings(run((1,)))  # dropping seed 0 would leave its runs out of the summary
    with pytest.raises(ConfigError, match="sets="):
        rl.check_settings(run((0, 1, 2), sets=("rollout.group_size=8",)))  # a new seed does not excuse another change
    assert json.loads(settings.read_text())["seeds"] == [0, 1]  # nothing refused was recorded


def _comparison_of_24_questions(root, seeds):
    """Two arms x ``seeds`` over 24 held-out questions with varied per-question gains (enough ids for set order to
    differ between hash seeds)."""
    ids = [f"q{i}" for i in range(24)]
    (root / "learning").mkdir(parents=True)
    (root / "learning" / "settings.json").write_text(json.dumps({"arms": ["outcome", "snc"], "seeds": list(seeds)}))
    for arm_i, arm in enumerate(("outcome", "snc")):
        for seed in seeds:
            evals = [{"step": step, "split": "heldout", "questions": 24, "f1": 0.0, "em": 0.0, "evidence_recall": 0.0,
                      "answers": [["?", "a", ["g"], q] for q in ids],
                      "scores": [[((i * 7 + seed * 5 + arm_i * 3) % 11) / 10 * (step > 0), 0.0, (i % 3) / 2 * (step > 0)]
                                 for i in range(24)]} for step in (0, 2)]
            run = root / "learning" / f"{arm}-seed{seed}"
            run.mkdir()
            (run / "eval.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evals))
            (run / "metrics.jsonl").write_text("".join(json.dumps({"step": s}) + "\n" for s in (1, 2)))
    with open(root / "learning" / "pieces.jsonl", "w") as fh:
        for seed in seeds:
            fh.write(json.dumps({"arm": "snc", "seed": seed, "device": "CPU", "seconds": 10.0 + seed}) + "\n")


def test_the_intervals_are_the_same_under_any_hash_seed(tmp_path):
    import os
    import subprocess
    import sys

    from helpers.paths import REPO_ROOT

    _comparison_of_24_questions(tmp_path, (0, 1))
    outs = []
    for hash_seed in ("1", "2", "3"):
        proc = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / "repro_small.py"), "learn-summary",
                               "--out", str(tmp_path), "--seeds", "0,1"], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout)
    assert outs[0] == outs[1] == outs[2]  # set order once decided the bootstrap's resampled values
    assert json.loads(outs[0])["comparisons"]["snc_minus_outcome"]["f1"]["n"] == 24


def test_learn_summary_reads_some_seeds_as_if_alone_and_writes_nothing(tmp_path, capsys):
    rs = load_script("benchmarks/repro_small.py")
    _comparison_of_24_questions(tmp_path / "all", (0, 1, 2))
    _comparison_of_24_questions(tmp_path / "alone", (1, 2))
    assert rs.main(["learn-summary", "--out", str(tmp_path / "all"), "--seeds", "1,2"]) == 0
    subset = json.loads(capsys.readouterr().out)
    alone = rl.summarise(tmp_path / "alone")
    assert subset["comparisons"] == alone["comparisons"] and subset["gain"]["snc"] == alone["arms"]["snc"]["gain"]
    assert subset["rests_on"]["seeds"] == [1, 2] and subset["rests_on"]["pieces"] == 2
    assert rl.summarise(tmp_path / "all")["comparisons"] != alone["comparisons"]  # seed 0 does change the numbers
    assert not (tmp_path / "all" / "learning.json").exists()
    assert rs.main(["learn-summary", "--out", str(tmp_path / "all"), "--seeds", "1,7"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --seeds 1,7: the comparison in ") and err.endswith("has seeds 0,1,2")
    assert "\n" not in err
