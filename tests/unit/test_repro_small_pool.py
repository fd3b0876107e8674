"""benchmarks/repro_small_pool.py (the small-pool check, ours) on hand-built training runs: the window change is
per question then averaged, its stratified bootstrap interval and the declared verdict, SNC minus outcome-only, and
the refusals (a step that logged only a sample of its rollouts, a pool that is not fixed, a bad window); a run short of
its steps gets no verdict."""
from __future__ import annotations

import json

import pytest
from helpers.paths import load_script

from harness_g.errors import ConfigError

sp = load_script("benchmarks/repro_small_pool.py")


def _run(path, rewards, *, steps=None, group=2, pool=2, arm=None, seed=0, lr=0.0002, offset=None, answers=None,
         interface="menu"):
    """A run dir (a pool of ``pool`` questions, ``group`` rollouts each; ``credit.scheme`` ``arm``, default the
    folder's name when it is outcome or snc) whose step s played the questions of ``rewards[s-1]`` with those
    rewards."""
    path.mkdir(parents=True)
    total = steps if steps is not None else len(rewards)
    arm = arm or (path.name if path.name in ("outcome", "snc") else None)
    (path / "config.yaml").write_text(f"rollout: {{group_size: {group}, questions_per_step: {pool}, "
                                      f"interface: {interface}}}\n"
                                      f"optim: {{steps: {total}, lr: {lr}}}\nseed: {seed}\n"
                                      + (f"credit: {{scheme: {arm}}}\n" if arm else "")
                                      + (f"data: {{train_questions: {pool}, train_offset: {offset}}}\n"
                                         if offset is not None else ""))
    rows = [{"step": s, "question": q, "answers": (answers or {}).get(q, ["a"]), "answer": "a", "reward": r, "actions": []}
            for s, per in enumerate(rewards, 1) for q in per for r in per[q]]
    (path / "rollouts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "zero_adv_frac": 0.5}) + "\n"
                                                for s in range(1, len(rewards) + 1)))
    (path / "eval.jsonl").write_text(json.dumps({"tag": "before", "step": 0, "split": "train", "questions": 2, "f1": 0.25,
                                                 "em": 0.0, "evidence_recall": None}) + "\n")
    return path


def test_a_run_whose_rewards_rise_learns_the_pool_and_the_change_is_per_question(tmp_path):
    # q1 rises 0 -> 1 in every rollout; q2 stays at 0.5; steps 3-4 are between the windows (window 2 of 6 steps)
    low, high = {"q1": [0.0, 0.0], "q2": [0.5, 0.5]}, {"q1": [1.0, 1.0], "q2": [0.5, 0.5]}
    run = _run(tmp_path / "outcome", [low, low, {"q1": [9.0, 9.0], "q2": [9.0, 9.0]}, low, high, high])
    data = sp.small_pool([run], window=2)
    rec = data["runs"]["outcome"]
    assert rec["change"]["mean"] == pytest.approx(0.5)  # (1 - 0) for q1 and 0 for q2, averaged
    assert rec["change"]["lo"] == pytest.approx(0.5) == rec["change"]["hi"]  # nothing varies within a window
    assert rec["change"]["rollouts_first"] == 8 and rec["change"]["questions"] == 2
    assert rec["first_steps"] == [1, 2] and rec["last_steps"] == [5, 6]
    assert rec["verdict"] == "learns the pool" and rec["per_question"]["q1"] == {"first": 0.0, "last": 1.0}
    assert rec["reward_f1_by_step"]["3"] == 9.0 and rec["evaluations"]["train"][0]["f1"] == 0.25
    assert data["snc_minus_outcome_by_seed"] == {}
    assert data["by_arm"] == {"outcome": {"verdicts": {"0": "learns the pool"}, "seeds": 1, "learns_the_pool": 1,
                                          "loses_on_the_pool": 0}}


def test_noise_without_a_trend_is_not_decided_and_a_fall_loses(tmp_path):
    mixed = {"q1": [0.0, 1.0], "q2": [0.0, 1.0]}
    flat = sp.small_pool([_run(tmp_path / "flat", [mixed] * 6)], window=3)["runs"]["flat"]
    assert flat["change"]["mean"] == 0.0 and flat["change"]["lo"] < 0 < flat["change"]["hi"]
    assert flat["verdict"] == "not decided"
    up, down = {"q1": [1.0, 1.0], "q2": [1.0, 1.0]}, {"q1": [0.0, 0.0], "q2": [0.0, 0.0]}
    fall = sp.small_pool([_run(tmp_path / "fall", [up, up, down, down])], window=2)["runs"]["fall"]
    assert fall["change"]["mean"] == -1.0 and fall["verdict"] == "loses on the pool"


def test_snc_minus_outcome_resamples_both_runs(tmp_path):
    low, high = {"q1": [0.0, 0.0], "q2": [0.0, 1.0]}, {"q1": [1.0, 1.0], "q2": [0.0, 1.0]}
    outcome = _run(tmp_path / "outcome", [low, low, low, low])
    snc = _run(tmp_path / "snc", [low, low, high, high])
    diff = sp.small_pool([outcome, snc], window=2)["snc_minus_outcome_by_seed"]["0"]
    assert diff["mean"] == pytest.approx(0.5) and diff["lo"] <= 0.5 <= diff["hi"] and diff["lo"] < diff["hi"]
    again = sp.small_pool([outcome, snc], window=2)["snc_minus_outcome_by_seed"]["0"]
    assert again == diff  # a fixed bootstrap seed


def test_runs_pair_by_seed_and_scheme_from_their_configs_not_their_names(tmp_path):
    low, high = {"q1": [0.0, 0.0], "q2": [0.0, 0.0]}, {"q1": [1.0, 1.0], "q2": [1.0, 1.0]}
    runs = [_run(tmp_path / "o1", [low, low, high, high], arm="outcome", seed=1),  # learns
            _run(tmp_path / "s1", [low, low, low, low], arm="snc", seed=1),  # flat
            _run(tmp_path / "o2", [high, high, low, low], arm="outcome", seed=2),  # loses
            _run(tmp_path / "s2", [low, low, low, high], arm="snc", seed=2, steps=10)]  # short of its steps
    data = sp.small_pool(runs, window=2, steps=4)
    assert (data["runs"]["o2"]["arm"], data["runs"]["o2"]["seed"]) == ("outcome", 2)
    # seed 1 pairs o1 with s1; seed 2's snc run ended the windows at step 4 too (--steps), so it pairs as well
    assert data["snc_minus_outcome_by_seed"]["1"]["mean"] == pytest.approx(-1.0)
    assert data["snc_minus_outcome_by_seed"]["2"]["mean"] == pytest.approx(1.5)  # +0.5 (steps 3-4: low, high) - (-1)
    assert data["by_arm"]["outcome"] == {"verdicts": {"1": "learns the pool", "2": "loses on the pool"}, "seeds": 2,
                                         "learns_the_pool": 1, "loses_on_the_pool": 1}
    # without --steps seed 2's snc run is short of its 10 steps: no verdict, no seed-2 difference
    data = sp.small_pool(runs, window=2)
    assert list(data["snc_minus_outcome_by_seed"]) == ["1"]
    assert data["by_arm"]["snc"]["verdicts"]["2"].startswith("not run to step 10") and data["by_arm"]["snc"]["seeds"] == 2
    # a second outcome run of seed 1 makes the pairing ambiguous: refused, naming both
    twin = _run(tmp_path / "o1-again", [low] * 4, arm="outcome", seed=1)
    with pytest.raises(ConfigError, match=r"o1-again: a second outcome run of seed 1 \(after .*o1\): pass one run per arm"):
        sp.small_pool([*runs, twin], window=2)


def test_a_run_short_of_its_steps_gets_no_verdict(tmp_path):
    step = {"q1": [0.0, 1.0], "q2": [0.0, 0.0]}
    run = _run(tmp_path / "snc", [step] * 4, steps=10)
    rec = sp.small_pool([run, _run(tmp_path / "outcome", [step] * 10)], window=3)
    assert rec["runs"]["snc"]["change"] is None and rec["runs"]["snc"]["verdict"].startswith("not run to step 10 (reached 4)")
    assert rec["snc_minus_outcome_by_seed"] == {}


def test_refusals(tmp_path):
    step = {"q1": [0.0, 1.0], "q2": [0.0, 0.0]}
    sampled = _run(tmp_path / "sampled", [step] * 6)
    (sampled / "config.yaml").write_text("rollout: {group_size: 4, questions_per_step: 2}\noptim: {steps: 6}\n")
    with pytest.raises(ConfigError, match=r"step 1 logged 4 rollouts of 8 played \(set log.keep_trajectories >= 8\)"):
        sp.small_pool([sampled])
    # a pool that changes: steps 4-6 play q3 instead of q1
    moving = _run(tmp_path / "moving", [step] * 3 + [{"q3": [0.0, 0.0], "q2": [0.0, 0.0]}] * 3)
    with pytest.raises(ConfigError, match="question 'q1' is not in both windows: not a fixed pool"):
        sp.small_pool([moving])
    with pytest.raises(ConfigError, match="--window 4: needs 1 <= window and two windows within 6 steps"):
        sp.small_pool([_run(tmp_path / "six", [step] * 6)], window=4)
    with pytest.raises(ConfigError, match="missing"):
        sp.small_pool([tmp_path / "nothing"])


def test_the_cli_prints_and_writes_the_record_and_refuses_in_one_line(tmp_path, capsys):
    rs = load_script("benchmarks/repro_small.py")
    low, high = {"q1": [0.0, 0.0], "q2": [0.0, 0.0]}, {"q1": [1.0, 0.0], "q2": [0.0, 0.0]}
    run = _run(tmp_path / "outcome", [low, low, high, high])
    out = tmp_path / "res" / "small-pool" / "small_pool.json"
    assert sp.small_pool_section(tmp_path / "res") == ""
    assert rs.main(["small-pool", "--runs", str(run), "--window", "2", "--device", "CPU (test)", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text()) and printed["runs"]["outcome"]["change"]["mean"] == pytest.approx(0.25)
    assert printed["runs"]["outcome"]["rests_on"]["device"] == "CPU (test)"
    html = sp.small_pool_section(tmp_path / "res")
    assert "<td>outcome</td><td>0</td><td>4 of 4</td><td>0.00 0.00 0.25 0.25</td><td>+0.250 [" in html
    assert "seed(s) 0," in html and "outcome: learns the pool in 0 of 1 seed(s), loses on it in 0" in html
    # q1 scored 1 in one rollout of two: a resample can draw no 1, so the interval reaches 0 and nothing is decided
    assert "+0.250 [+0.000, +0.500]</td><td>not decided" in html and "CPU (test)" in html and "0.250 &rarr; 0.250" in html
    assert rs.main(["small-pool", "--runs", str(run), "--window", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --window 3: needs 1 <= window and two windows within 4 steps"


def test_steps_sets_where_the_last_window_ends_and_each_refusal_names_the_run(tmp_path, capsys):
    rs = load_script("benchmarks/repro_small.py")
    low, high = {"q1": [0.0, 0.0], "q2": [0.0, 0.0]}, {"q1": [1.0, 1.0], "q2": [1.0, 1.0]}
    run = _run(tmp_path / "outcome", [low, low, high, high, low, low])  # optim.steps 6: rises, then falls back
    assert sp.small_pool([run], window=2)["runs"]["outcome"]["change"]["mean"] == 0.0
    assert rs.main(["small-pool", "--runs", str(run), "--window", "2", "--steps", "4"]) == 0
    rec = json.loads(capsys.readouterr().out)["runs"]["outcome"]
    assert rec["last_steps"] == [3, 4] and rec["change"]["mean"] == 1.0 and rec["verdict"] == "learns the pool"
    # a second folder of the same name (another arm's copy) is refused, not merged
    twin = _run(tmp_path / "copy" / "outcome", [low] * 6)
    assert rs.main(["small-pool", "--runs", str(run), str(twin), "--window", "2"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {twin}: two runs named 'outcome'"
    # a window step whose rollouts are not in the log (a cut log) is named, not read as a changing pool
    cut = _run(tmp_path / "cut", [low] * 6)
    rows = [line for line in (cut / "rollouts.jsonl").read_text().splitlines() if json.loads(line)["step"] != 2]
    (cut / "rollouts.jsonl").write_text("\n".join(rows) + "\n")
    assert rs.main(["small-pool", "--runs", str(cut), "--window", "2"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {cut}: step 2 of the windows logged no rollouts (rollouts.jsonl)"


def test_the_page_lists_each_seeds_difference_and_says_which_settings_vary(tmp_path):
    low, high = {"q1": [0.0, 0.0], "q2": [0.0, 0.0]}, {"q1": [1.0, 1.0], "q2": [1.0, 1.0]}
    # the seed-1 runs used another lr: the page must not print seed 0's lr as if all runs shared it
    runs = [_run(tmp_path / f"{arm}-seed{seed}", [low, low, high if arm == "outcome" else low, high], arm=arm, seed=seed,
                 lr=0.001 if seed else 0.0002) for seed in (0, 1) for arm in ("outcome", "snc")]
    out = tmp_path / "res" / "small-pool" / "small_pool.json"
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps(sp.small_pool(runs, window=2)))
    html = sp.small_pool_section(tmp_path / "res")
    assert "seed(s) 0, 1," in html and "(lr varies by run)" in html and "lr 0.0002" not in html
    # outcome: steps 3-4 both high (change +1); snc: one of them (+0.5)
    assert "SNC minus outcome-only on the change, seed 0: -0.500 [" in html
    assert "SNC minus outcome-only on the change, seed 1: -0.500 [" in html
    assert "snc: learns the pool in 2 of 2 seed(s)" in html and "<td>snc-seed1</td><td>1</td><td>4 of 4</td>" in html


def test_another_pool_is_its_own_call_and_the_page_shows_one_table_per_pool(tmp_path):
    """A second pool (data.train_offset) of the same seed and scheme is refused in one call, not paired with the
    first pool's run, and each pool's record gets its own table on the page."""
    low, high = {"q1": [0.0, 0.0], "q2": [0.0, 0.0]}, {"q1": [1.0, 1.0], "q2": [1.0, 1.0]}
    nxt_low, nxt_high = {"q3": [0.0, 0.0], "q4": [0.0, 0.0]}, {"q3": [1.0, 0.0], "q4": [0.0, 0.0]}
    first = _run(tmp_path / "a" / "outcome", [low, low, high, high])  # an older run: no data.train_offset recorded
    other = _run(tmp_path / "b" / "outcome4", [nxt_low, nxt_low, nxt_high, nxt_high], arm="outcome", offset=2)
    with pytest.raises(ConfigError, match=r"outcome4: its rollouts play another pool than .*outcome's \(2 question\(s\), "
                                          r"2 not in it\): pass the runs of one pool per call"):
        sp.small_pool([first, other], window=2)
    res = tmp_path / "res" / "small-pool"
    (res / "offset2").mkdir(parents=True)
    (res / "small_pool.json").write_text(json.dumps(sp.small_pool([first], window=2)))
    rec = sp.small_pool([other], window=2)
    assert rec["runs"]["outcome4"]["pool"] == ["q3", "q4"] and rec["runs"]["outcome4"]["rests_on"]["pool_offset"] == 2
    (res / "offset2" / "small_pool.json").write_text(json.dumps(rec))
    html = sp.small_pool_section(tmp_path / "res")
    assert html.count("<table>") == 2 and html.count("<h2>") == 1
    assert html.index("small-pool/small_pool.json: a pool of 2 question(s): q1; q2") < html.index(
        "small-pool/offset2/small_pool.json: a pool of 2 question(s): q3; q4")
    assert "(training questions 3-4 of the split)" in html and "+0.250 [" in html and "+1.000 [" in html


def test_the_change_over_questions_that_do_not_offer_their_answer_leaves_the_comparison_questions_out(tmp_path):
    """A question whose gold answer (any alias, case-insensitive) is in its own text can be answered by choosing
    between the names it shows: the second change leaves it out, so a gain made only there reads as 0 there."""
    cmp_q, graph_q = "Which film came first, Xanadu or Yentl?", "Where was the director of Yentl born?"
    low = {cmp_q: [0.0, 0.0], graph_q: [0.5, 0.5]}
    high = {cmp_q: [1.0, 1.0], graph_q: [0.5, 0.5]}
    answers = {cmp_q: ["xanadu (film)", "XANADU"], graph_q: ["Brooklyn"]}
    rec = sp.small_pool([_run(tmp_path / "outcome", [low, low, high, high], answers=answers)], window=2)
    rec = rec["runs"]["outcome"]
    assert rec["offers_its_answer"] == [cmp_q] and rec["change"]["mean"] == pytest.approx(0.5)
    assert rec["change_not_offered"]["mean"] == 0.0 and rec["change_not_offered"]["questions"] == 1
    assert sp.offers_its_answer("Who is older, Ann or Bo?", ["  ", "bo"]) and not sp.offers_its_answer("Who?", [" "])
    out = tmp_path / "res" / "small-pool" / "small_pool.json"
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps(sp.small_pool([tmp_path / "outcome"], window=2)))
    html = sp.small_pool_section(tmp_path / "res")
    assert "1 of the 2 offer their answer" in html and "+0.500 [+0.500, +0.500]</td><td>learns the pool</td><td>+0.000 [+0.000, +0.000]" in html
    # every question offers its answer: nothing is left for the second change
    both = {cmp_q: [0.0, 0.0]}
    rec = sp.small_pool([_run(tmp_path / "snc", [both] * 4, pool=1, answers=answers)], window=2)["runs"]["snc"]
    assert rec["change_not_offered"] is None and rec["change"]["mean"] == 0.0


def test_the_free_query_arm_is_its_own_arm_and_pairs_with_the_menus_outcome_only_run(tmp_path):
    """The free-query arm trains with credit.scheme outcome too: told apart by rollout.interface, it is not refused as
    a second outcome run, and the record holds menu outcome-only minus it per seed."""
    low, high = {"q1": [0.0, 0.0], "q2": [0.0, 0.0]}, {"q1": [1.0, 1.0], "q2": [1.0, 1.0]}
    menu = _run(tmp_path / "outcome", [low, low, high, high])
    free = _run(tmp_path / "free", [low, low, low, high], arm="outcome", interface="free-query")
    data = sp.small_pool([menu, free], window=2)
    assert data["runs"]["free"]["arm"] == sp.FREE_QUERY == "free-query/outcome" and data["runs"]["outcome"]["arm"] == "outcome"
    assert data["menu_outcome_minus_free_query_by_seed"]["0"]["mean"] == pytest.approx(0.5)  # +1 minus +0.5
    assert data["snc_minus_outcome_by_seed"] == {} and set(data["by_arm"]) == {"outcome", "free-query/outcome"}
    out = tmp_path / "res" / "small-pool" / "small_pool.json"
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps(data))
    assert "menu outcome-only minus the free-query arm on the change, seed 0: +0.500 [" in sp.small_pool_section(
        tmp_path / "res")
    with pytest.raises(ConfigError, match="a second free-query/outcome run of seed 0"):
        sp.small_pool([menu, free, _run(tmp_path / "free2", [low] * 4, arm="outcome", interface="free-query")], window=2)
