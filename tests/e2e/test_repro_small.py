"""benchmarks/repro_small.py end to end with the tiny random test model on the packaged 2Wiki slice, on both stores:
``equivalence`` and ``credit`` write their JSON with the issue's schema and numbers in range, a question whose cache
was lost is replayed to the same rollouts (an interrupted run continues as if it had not stopped), a resume with other
settings is refused, and ``page`` renders every claim with its interval and basis. The arithmetic on hand-computed
cases: tests/unit/test_repro_small_math.py."""
from __future__ import annotations

import json

import pytest
from helpers.paths import load_script
from helpers.slice_graph import SLICE_2WIKI as SLICE
from helpers.slice_graph import build_2wiki_slice as _build

N_Q, N_G = 2, 3


def _script():
    return load_script("benchmarks/repro_small.py")



def _args(command, graph, out, store, *extra):
    args = [command, "--graph", str(graph), "--questions", str(SLICE), "--format", "2wiki", "--n-questions", str(N_Q),
            "--out", str(out), "--model", "tiny-random", "--group-size", str(N_G), "--free-action-tokens", "8",
            "--set", "rollout.max_turns=3", "--set", "rollout.max_answer_tokens=4",
            "--set", "rollout.env={visible_cap: 3, lookup_cap: 3}", "--set", "credit.dead_zone=0", *extra]
    return args + (["--store", store] if store else [])


def _played(records):
    """What the rollouts did (every step record but its wall-clock seconds), and their answers and queries."""
    return [([{k: v for k, v in s.items() if k != "seconds"} for s in r["trajectory"]["steps"]], r["answer"], r["queries"])
            for r in records]


def _in_interval(d, lo, hi):
    assert set(d) == {"mean", "lo", "hi", "n"} and d["n"] == N_Q
    assert lo <= d["lo"] <= d["mean"] <= d["hi"] <= hi


@pytest.mark.slow
def test_equivalence_credit_and_page_on_the_2wiki_slice(tmp_path, store_spec, capsys):
    rs = _script()
    graph, out = tmp_path / "graph", tmp_path / "out"
    _build(graph, store_spec)
    assert rs.main(_args("equivalence", graph, out, store_spec)) == 0
    eq = json.loads((out / "equivalence.json").read_text())
    for arm in ("menu", "free-query"):
        _in_interval(eq["arms"][arm]["n_eq"], 1.0, N_G)
        _in_interval(eq["arms"][arm]["d_ret"], 0.0, 1.0)
        _in_interval(eq["arms"][arm]["d_query"], 0.0, 1.0)
        alias = eq["arms"][arm]["aliasing"]  # over the questions where two rollouts' requests differ
        assert alias["n"] == sum(q["aliasing"] is not None for q in eq["per_question"][arm]) <= N_Q
        if alias["n"]:
            assert 0.0 <= alias["lo"] <= alias["mean"] <= alias["hi"] <= 1.0
        assert len(list((out / "cache" / "rollouts" / arm).glob("*.json.gz"))) == N_Q
    assert eq["rests_on"]["questions"] == N_Q and eq["rests_on"]["rollouts_per_arm"] == N_Q * N_G
    assert eq["rests_on"]["device"].startswith("CPU (")
    # the menu arm decoded constrained to menu ids: no invalid turn
    assert eq["arms"]["menu"]["describe"]["invalid_frac"]["mean"] == 0.0

    # a question whose cache was lost (a run killed before writing it) is replayed to exactly the same rollouts
    lost = sorted((out / "cache" / "rollouts" / "free-query").glob("*.json.gz"))[-1]
    kept = rs.read_json_gz(lost)["rollouts"]
    lost.unlink()
    assert rs.main(_args("equivalence", graph, out, store_spec)) == 0
    assert _played(rs.read_json_gz(lost)["rollouts"]) == _played(kept)
    assert json.loads((out / "equivalence.json").read_text())["per_question"] == eq["per_question"]

    # credit over the same menu rollouts (not replayed: the cache serves them)
    menu_cache = {p.name: p.stat().st_mtime_ns for p in (out / "cache" / "rollouts" / "menu").glob("*.json.gz")}
    assert rs.main(_args("credit", graph, out, store_spec)) == 0
    assert {p.name: p.stat().st_mtime_ns for p in (out / "cache" / "rollouts" / "menu").glob("*.json.gz")} == menu_cache
    cr = json.loads((out / "credit.json").read_text())
    total_steps = sum(len(r["trajectory"]["steps"]) for p in (out / "cache" / "rollouts" / "menu").glob("*.json.gz")
                      for r in rs.read_json_gz(p)["rollouts"])
    assert set(cr["signals"]) == {"snc", "snc_no_enablement", "snc_no_frontier", "outcome", "igpo", "is_lookup"}
    for v in cr["signals"].values():
        assert v["n_steps"] == total_steps == cr["rests_on"]["steps"] and v["n_questions"] == N_Q
        # a percentile interval need not contain the pooled AUC itself (it is not a resample mean)
        assert v["auc"] is None or (0.0 <= v["auc"] <= 1.0 and 0.0 <= v["lo"] <= v["hi"] <= 1.0)
    steps = [s for p in (out / "cache" / "credit").glob("*.json.gz") for s in rs.read_json_gz(p)["steps"]]
    assert sum(s["label"] for s in steps) == cr["rests_on"]["positive_steps"]
    assert all(s["label"] is False for s in steps if s["action_type"] != "LOOKUP")  # only a LOOKUP surfaces text
    if 0 < cr["rests_on"]["positive_steps"] < total_steps:  # the action-type reference ranks every positive first
        assert cr["signals"]["is_lookup"]["auc"] >= 0.5
    # the same AUCs over LOOKUP steps only (no reference there: every step is a LOOKUP)
    within = cr["within_lookups"]
    assert set(within["signals"]) == {"snc", "snc_no_enablement", "snc_no_frontier", "outcome", "igpo"}
    n_lookups = sum(s["action_type"] == "LOOKUP" for s in steps)
    assert all(v["n_steps"] == n_lookups and v["n_positive"] == cr["rests_on"]["positive_steps"]
               for v in within["signals"].values())
    assert set(within["snc_versus"]) == {f"snc_minus_{k}" for k in within["signals"] if k != "snc"}
    # outcome-only credit is the rollout's A_out: one value over all steps of a rollout
    by_rollout = {}
    for p in (out / "cache" / "credit").glob("*.json.gz"):
        for s in rs.read_json_gz(p)["steps"]:
            by_rollout.setdefault((p.name, s["rollout"]), set()).add(s["outcome"])
    assert all(len(v) == 1 for v in by_rollout.values())

    # a resume with another setting is refused in one line, nothing recomputed
    capsys.readouterr()
    assert rs.main(_args("credit", graph, out, store_spec, "--seed", "1")) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "(seed: 0 -> 1)" in err
    # a setting added by a newer harness-g (absent from the recorded settings) is not a change: the run resumes
    recorded = json.loads((out / "settings.json").read_text())
    for arm in recorded["arms"].values():
        del arm["env"]["lookup_store_rank_min"]
    (out / "settings.json").write_text(json.dumps(recorded))
    assert rs.main(_args("credit", graph, out, store_spec)) == 0

    assert rs.main(["page", "--out", str(out)]) == 0
    html = (out / "index.html").read_text()
    assert "Claim (a)" in html and "Claim (b)" in html and "Claim (c)" in html and "Not measured here" in html
    assert f"{N_Q} questions of 2wiki (paper preset), N_g = {N_G}" in html
    assert f"n={N_Q}" in html  # every verdict names the scale it rests on
    # the summary table: this set's row with claim (a)'s and claim (b)'s numbers as equivalence/credit.json give them
    summary = html[html.index("<h2>Summary</h2>"): html.index("</table>", html.index("<h2>Summary</h2>"))]
    eq = json.loads((out / "equivalence.json").read_text())
    assert f"<td>{N_Q}</td>" in summary and "2wiki (paper, seed 0, T = 3, multi-turn, K_s = 3, K_e = 3" in summary
    assert f"{rs.fmt_num(eq['menu_minus_free_query']['n_eq']['mean'])} [" in summary and summary.count("<tr>") == 2
    assert {p.name for p in (out / "plots").glob("*.svg")} == {"main_n_eq.svg", "main_d_ret.svg", "main_auc.svg"}

    # --skip-questions K: the N questions after the first K, into another folder (a replication block): the second
    # question alone, played to the same rollouts as in the first run (a question's seed is its id's), and said so
    block = out / "q2"
    args = _args("credit", graph, block, store_spec, "--skip-questions", "1")
    args[args.index("--n-questions") + 1] = "1"
    assert rs.main(args) == 0
    [played] = list((block / "cache" / "rollouts" / "menu").glob("*.json.gz"))
    record = rs.read_json_gz(played)
    first_run = {rs.read_json_gz(p)["question_id"]: p for p in (out / "cache" / "rollouts" / "menu").glob("*.json.gz")}
    assert _played(record["rollouts"]) == _played(rs.read_json_gz(first_run[record["question_id"]])["rollouts"])
    cr_block = json.loads((block / "credit.json").read_text())
    assert (cr_block["rests_on"]["questions"], cr_block["rests_on"]["first_question"]) == (1, 2)
    assert json.loads((block / "settings.json").read_text())["skip_questions"] == 1
    # the first run's questions are in list order, so the block's question is the list's second
    eq_ids = [q["question_id"] for q in json.loads((out / "equivalence.json").read_text())["per_question"]["menu"]]
    assert record["question_id"] == eq_ids[1]
    # the block's claim (a) too: its question's record is the first run's second one
    assert rs.main(["equivalence", *args[1:]]) == 0
    [block_menu] = json.loads((block / "equivalence.json").read_text())["per_question"]["menu"]
    assert block_menu == json.loads((out / "equivalence.json").read_text())["per_question"]["menu"][1]
    assert rs.main(["page", "--out", str(out)]) == 0
    html = (out / "index.html").read_text()
    assert "1 question (questions 2-2 of the list, a later block) of 2wiki" in html
    assert "<td>2wiki q2-2 (paper, seed 0, T = 3" in html and "<h2>2wiki q2-2, paper preset" in html  # its own row, section
    assert "<code>q2/</code></td>" in html and "<h2>2wiki q2-2, paper preset, seed 0 (CPU (" in html
    assert "<code>q2/</code></h2>" in html  # the section names its folder too
    # the block's question is one the first run holds, with the same records: no pooled row counts it twice
    assert " pooled (" not in html[html.index("<h2>Summary</h2>"): html.index("</table>", html.index("<h2>Summary</h2>"))]
    capsys.readouterr()
    assert rs.main(_args("credit", graph, block, store_spec, "--skip-questions", "-1")) == 2
    assert capsys.readouterr().err.strip() == "error: --skip-questions must be >= 0, got -1"
