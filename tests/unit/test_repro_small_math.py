"""benchmarks/repro_small.py's arithmetic on hand-computed cases: AUC, bootstrap intervals, the gold-surfacing label,
N_eq / D_ret / D_query of a hand-built group, the verdict sentences, and the refusal of a resume with other settings."""
from __future__ import annotations

import json

import pytest
from helpers.hand_rollouts import step
from helpers.paths import load_script

from harness_g.agent.env.trajectory import Trajectory
from harness_g.errors import ConfigError


def _script():
    return load_script("benchmarks/repro_small.py")


rs = _script()


def test_auc_of_a_signal_equal_to_the_labels_is_one_and_reversed_zero_and_ties_half():
    labels = [True, False, False, True, False]
    assert rs.auc([float(y) for y in labels], labels) == 1.0
    assert rs.auc([-float(y) for y in labels], labels) == 0.0
    assert rs.auc([0.3] * 5, labels) == 0.5
    # positives 0.9, 0.2; negatives 0.5, 0.2, 0.1: pairs 0.9>all (3), 0.2<0.5 (0), 0.2=0.2 (1/2), 0.2>0.1 (1) -> 4.5/6
    assert rs.auc([0.9, 0.5, 0.2, 0.2, 0.1], labels) == pytest.approx(4.5 / 6)
    assert rs.auc([1.0, 2.0], [True, True]) is None  # no negative: undefined, not 1


def test_rank_auc_equals_the_pairwise_count_exactly_with_many_ties():
    import random

    rng = random.Random(3)
    for _ in range(200):
        n = rng.randrange(2, 40)
        scores = [rng.choice([0.0, 0.25, 0.5, -1.0, rng.random()]) for _ in range(n)]
        labels = [rng.random() < 0.3 for _ in range(n)]
        pos = [s for s, y in zip(scores, labels) if y]
        neg = [s for s, y in zip(scores, labels) if not y]
        want = None if not pos or not neg else \
            sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in pos for b in neg) / (len(pos) * len(neg))
        assert rs.auc(scores, labels) == want  # bit-for-bit: both count in halves


def test_bootstrap_intervals_contain_the_mean_and_collapse_on_constant_data():
    flat = rs.bootstrap_mean([2.0, 2.0, 2.0])
    assert flat == {"mean": 2.0, "lo": 2.0, "hi": 2.0, "n": 3}
    spread = rs.bootstrap_mean([1.0, 2.0, 3.0, 4.0])
    assert spread["mean"] == 2.5 and 1.0 <= spread["lo"] < 2.5 < spread["hi"] <= 4.0 and spread["n"] == 4
    assert rs.bootstrap_mean([1.0, 2.0, 3.0, 4.0]) == spread  # fixed seed: the same interval every time
    assert rs.bootstrap_mean([])["mean"] is None
    perfect = rs.bootstrap_auc([[(1.0, True), (0.0, False)], [(1.0, True), (0.0, False), (0.0, False)]])
    assert (perfect["auc"], perfect["lo"], perfect["hi"]) == (1.0, 1.0, 1.0)
    assert (perfect["n_questions"], perfect["n_steps"], perfect["n_positive"]) == (2, 5, 2)
    same = [[(1.0, True), (0.0, False)], [(0.5, True), (0.5, False)]]
    diff = rs.bootstrap_auc_difference(same, same)
    assert (diff["diff"], diff["lo"], diff["hi"]) == (0.0, 0.0, 0.0)


def test_a_step_surfaces_gold_only_with_a_gold_sentence_not_seen_before():
    new_gold = step(0, "LOOKUP", observed=["s1"], introduced=["g1", "s2"])
    seen_gold = step(1, "LOOKUP", observed=["g1"], introduced=["g1"])  # re-shown: surfaces nothing
    select = step(2, "SELECT", observed=["g1"], introduced=["g1"])
    assert rs.surfaced_gold(new_gold, {"g1"}, set()) is True
    assert rs.surfaced_gold(seen_gold, {"g1"}, set()) is False
    assert rs.surfaced_gold(select, {"g1"}, set()) is False
    # paragraph-level gold (MuSiQue): any sentence of a gold paragraph; sentence ids are "<paragraph id>:<k>"
    para = step(0, "LOOKUP", observed=[], introduced=["p7:2"])
    assert rs.surfaced_gold(para, set(), {"p7"}) is True
    assert rs.surfaced_gold(para, set(), {"p8"}) is False


def _record(steps, queries=(), reward=0.0):
    traj = Trajectory(question_id="q", question="?", answers=["a"], graph_version="v", env_config={},
                      initial_visible=["u0"], steps=steps)
    return {"trajectory": traj.to_json(), "reward": reward, "em": 0.0, "answer": "", "queries": list(queries)}


def test_n_eq_d_ret_d_query_of_a_hand_built_group():
    """Evidence sets {a,b}, {a,b,c}, {d}, {} (Jaccard 2/3 < 0.8 between the first two): four classes; at 0.6 the first
    two merge: three. A SELECT's sentences and U_0 are not retrieval evidence."""
    lookup = lambda ids, t=0: step(t, "LOOKUP", observed=["u0"], introduced=ids)  # noqa: E731
    group = [_record([lookup(["a", "b"])], ["x"]), _record([lookup(["a"]), lookup(["b", "c"], 1)], ["x"]),
             _record([lookup(["d"]), step(1, "SELECT", ["u0", "d"], ["u0"])], ["x"]),
             _record([step(0, "SELECT", ["u0"], ["u0"])], ["x"], reward=1.0)]
    free = rs.group_values(group, "free-query", 0.8)
    assert (free["n_eq"], free["d_ret"], free["d_query"]) == (4.0, 1.0, 0.0)  # one distinct query string: D_query 0
    assert rs.group_values(group, "free-query", 0.6)["n_eq"] == 3.0
    assert free["reward_f1"] == 0.25 and free["empty_evidence_frac"] == 0.25 and free["lookups"] == 1.0
    collapsed = rs.group_values([_record([lookup(["a"])])] * 3, "free-query", 0.8)
    assert (collapsed["n_eq"], collapsed["d_ret"]) == (1.0, 0.0)
    # the menu arm's queries are its LOOKUP targets: two different targets -> D_query 1
    s1, s2 = lookup(["a"]), lookup(["b"])
    s1.targets, s2.targets = ["e1"], ["e2"]
    menu = rs.group_values([_record([s1]), _record([s2])], "menu", 0.8)
    assert menu["d_query"] == 1.0 and menu["requests"] == 2 and menu["aliasing"] == 0.0  # {a} vs {b}: two classes
    # free-query: two strings reaching the same evidence alias; the same string twice is no pair
    aliased = rs.group_values([_record([lookup(["a"])], ["q1"]), _record([lookup(["a"])], ["q2"]),
                               _record([lookup(["a"])], ["q2"])], "free-query", 0.8)
    assert aliased["aliasing"] == 1.0 and aliased["requests"] == 2 and aliased["n_eq"] == 1.0
    assert free["aliasing"] is None  # every rollout of `group` wrote the same string


@pytest.mark.parametrize("interval, status", [
    ({"auc": 0.7, "lo": 0.6, "hi": 0.8}, "holds"),
    ({"auc": 0.3, "lo": 0.2, "hi": 0.4}, "does not hold"),
    ({"auc": 0.6, "lo": 0.4, "hi": 0.8}, "not shown"),
    ({"auc": None, "lo": None, "hi": None}, "not measured"),
])
def test_a_verdict_claims_only_what_the_interval_shows(interval, status):
    got, sentence = rs.verdict(interval, "auc", null=0.5, claim="AUC above chance", n=12)
    assert got == status
    assert "n=12" in sentence


def test_no_verdict_is_drawn_from_fewer_than_ten_questions():
    """One question's bootstrap interval has zero width: it must not read as a claim that holds."""
    got, sentence = rs.verdict({"auc": 0.9, "lo": 0.9, "hi": 0.9}, "auc", null=0.5, claim="AUC above chance", n=1)
    assert got == "not shown" and sentence.startswith("Not shown at n=1")


def test_a_resume_with_other_settings_is_refused_naming_the_setting(tmp_path):
    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / "manifest.json").write_text(json.dumps({"content_hash": "h1"}))

    def run(**changes):
        base = dict(graph=graph, questions=None, fmt=None, n_questions=2, out=tmp_path / "out", preset="paper",
                    model="tiny-random", group_size=3, seed=0, device="cpu", batch_questions=1, free_action_tokens=8,
                    sets=(), store=None, threads=None)
        return rs.Run(**{**base, **changes})

    rs.check_settings(run())
    rs.check_settings(run(n_questions=5))  # more questions: the same run, grown
    with pytest.raises(ConfigError, match=r"\(seed: 0 -> 1\)"):
        rs.check_settings(run(seed=1))
    (graph / "manifest.json").write_text(json.dumps({"content_hash": "h2"}))
    with pytest.raises(ConfigError, match=r"content_hash: 'h1' -> 'h2'"):
        rs.check_settings(run())


def test_each_arm_gets_its_own_reply_length_whatever_set_says(tmp_path):
    """``--set rollout.max_action_tokens`` is the menu arm's; the free-query arm writes ``--free-action-tokens``
    (a search string), and the resume record holds both, so changing either is refused."""
    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / "manifest.json").write_text(json.dumps({"content_hash": "h1"}))
    run = rs.Run(graph=graph, questions=None, fmt=None, n_questions=2, out=tmp_path / "out", preset="paper",
                 model="tiny-random", group_size=3, seed=0, device="cpu", batch_questions=1, free_action_tokens=32,
                 sets=("rollout.max_action_tokens=4",), store=None, threads=None)
    menu, free = rs.arm_config(run, "menu"), rs.arm_config(run, "free-query")
    assert (menu.rollout.max_action_tokens, free.rollout.max_action_tokens) == (4, 32)
    assert (menu.rollout.constrain_actions, free.rollout.constrain_actions) == (True, False)
    assert (menu.credit.scheme, free.credit.scheme) == ("snc", "outcome")
    record = rs.settings_record(run)
    assert record["arms"]["free-query"]["max_action_tokens"] == 32 and record["arms"]["menu"]["max_action_tokens"] == 4


def test_the_warm_start_arms_are_compared_on_the_questions_both_played(tmp_path):
    """The page's menu-minus-free-query rows pair per question id (a question one arm lacks is left out) and say
    nothing below ten questions."""
    def write(folder, rows):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "per_question.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def row(qid, base_f1, sft_f1):
        return {"id": qid, "base": {"f1": base_f1, "em": 0.0, "evidence_recall": 0.0},
                "sft": {"f1": sft_f1, "em": 1.0 if sft_f1 == 1.0 else 0.0, "evidence_recall": sft_f1}}

    write("sft_warm_start", [row(f"q{i}", 0.5, 1.0) for i in range(12)] + [row("menu-only", 0.0, 0.0)])
    write("sft_warm_start_free_query", [row("free-only", 1.0, 1.0)] + [row(f"q{i}", 0.5, 0.25) for i in range(12)])
    html = rs._warm_start_arms(tmp_path)
    assert "<td>untrained</td><td>12</td><td>+0.000 [+0.000, +0.000]</td>" in html
    assert "<td>after SFT</td><td>12</td><td>+0.750 [+0.750, +0.750]</td><td>+1.000 [+1.000, +1.000]</td>" in html
    assert html.count("not shown") == 1 and html.count("holds") == 1  # untrained: interval is 0; after SFT: above 0
    write_less = tmp_path / "few"
    write_less.mkdir()
    for folder, rows in (("sft_warm_start", [row("a", 0.0, 1.0)]), ("sft_warm_start_free_query", [row("a", 0.0, 0.0)])):
        (write_less / folder).mkdir()
        (write_less / folder / "per_question.jsonl").write_text(json.dumps(rows[0]) + "\n")
    assert rs._warm_start_arms(write_less).count("not shown") == 2  # one question: no verdict either way
