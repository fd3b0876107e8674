"""The summary table of benchmarks/repro_small.py's page: its pooled claim-(a) row pools one seed's questions, each
question once, and names the seed and the folder of every row. Hand-built equivalence.json records (no model), so the
expected pooled values are known."""
from __future__ import annotations

import html
import re
from pathlib import Path

from helpers.paths import load_script

rs = load_script("benchmarks/repro_small.py")

SETTING = {"preset": "paper", "model": "smollm2", "group_size": 8, "device": "CPU (2-core)", "temperature": 1.0,
           "max_turns": 6, "context": "multi-turn", "env": {"visible_cap": 6, "lookup_cap": 8}, "overrides": []}


def _eq(dataset: str, first: int, seed: int, pairs: list[tuple[str, float, float]]) -> dict:
    """An equivalence.json with per-question (id, menu N_eq, free-query N_eq) records."""
    diffs = [m - f for _, m, f in pairs]
    mean = sum(diffs) / len(diffs)
    return {"rests_on": dict(SETTING, dataset=dataset, questions=len(pairs), first_question=first, seeds=[seed]),
            "menu_minus_free_query": {"n_eq": {"mean": mean, "lo": mean - 1, "hi": mean + 1, "n": len(pairs)}},
            "per_question": {"menu": [{"question_id": q, "n_eq": m} for q, m, _ in pairs],
                             "free-query": [{"question_id": q, "n_eq": f} for q, _, f in pairs]}}


def _pooled_rows(page: str) -> list[tuple[str, int, str]]:
    return [(html.unescape(m.group(1)), int(m.group(2)), html.unescape(m.group(3)))
            for m in re.finditer(r"<tr><td>([^<]*pooled[^<]*)</td><td>(\d+)</td><td[^>]*>([^<]*)</td>", page)]


def test_pool_counts_a_replayed_question_once_and_orders_by_dataset_then_position():
    entries = [("musique", 1, "m1", -1.0, "mu/"), ("2wiki", 2, "w2", 2.0, "a/"), ("2wiki", 1, "w1", 1.0, "a/"),
               ("2wiki", 2, "w2", 2.0, "replay/"), ("2wiki", 7, "w7", 0.0, "b/")]
    pool = rs.pool_claim_a(entries)
    assert pool.diffs == (1.0, 2.0, 0.0, -1.0)  # the replayed w2 once; 2wiki by position, then musique
    assert pool.label == "2wiki q1-2, q7, musique q1"
    assert pool.folders == 3 and pool.conflict is None  # replay/ added no question of its own


def test_pool_reports_one_question_with_two_records_instead_of_choosing_one():
    pool = rs.pool_claim_a([("2wiki", 1, "w1", 1.0, "a/"), ("2wiki", 1, "w1", -1.0, "b/")])
    assert pool.conflict == "question w1 of 2wiki has N_eq difference 1 in a/ and -1 in b/"


def test_summary_pools_each_seed_apart_and_names_seed_and_folder(tmp_path: Path):
    root = tmp_path
    s0 = [("w1", 6.0, 7.0), ("w2", 5.0, 8.0)]          # seed 0, 2Wiki q1-2: differences -1, -3
    s0_more = [("w3", 7.0, 7.0)]                        # seed 0, q3: 0
    s1 = [("w1", 8.0, 6.0), ("w2", 8.0, 7.0)]          # seed 1, the same questions: +2, +1
    h0 = [("h1", 4.0, 8.0)]                             # seed 0, HotpotQA q1: -4
    sets = [(root / "w-s0", _eq("2wiki", 1, 0, s0), {}),
            (root / "w-s0-q3", _eq("2wiki", 3, 0, s0_more), {}),
            (root / "w-s0-replay-q2", _eq("2wiki", 2, 0, s0[1:]), {}),   # a replayed window: counted once
            (root / "w-s1", _eq("2wiki", 1, 1, s1), {}),
            (root / "h-s0", _eq("hotpotqa", 1, 0, h0), {})]
    page = rs.summary_section(sets, root)
    rows = {label.split(" pooled (")[1]: (label.split(" pooled (")[0], n, cell) for label, n, cell in _pooled_rows(page)}
    key0 = "paper preset, seed 0, T = 6, multi-turn, K_s = 6, K_e = 8; claim (a) only)"
    assert set(rows) == {key0}  # seed 1 has one folder: no pooled row, and never mixed into seed 0's
    label, n, cell = rows[key0]
    assert (label, n) == ("2wiki q1-3, hotpotqa q1", 4)
    expected = rs.bootstrap_mean([-1.0, -3.0, 0.0, -4.0])
    assert cell.startswith(rs.fmt_interval(expected))
    # every per-set row says its seed and its folder
    assert "2wiki (paper, seed 1, T = 6, multi-turn, K_s = 6, K_e = 8, CPU (2-core)) <code>w-s1/</code>" in page
    assert "2wiki q2-2 (paper, seed 0, T = 6" in page and "<code>w-s0-replay-q2/</code>" in page

    # a second seed-1 folder makes seed 1's own row, which holds seed 1's numbers only
    sets.append((root / "w-s1-q3", _eq("2wiki", 3, 1, [("w3", 6.0, 7.0)]), {}))
    rows = {label.split(" pooled (")[1]: (label.split(" pooled (")[0], n, cell)
            for label, n, cell in _pooled_rows(rs.summary_section(sets, root))}
    label, n, cell = rows[key0.replace("seed 0", "seed 1")]
    assert (label, n) == ("2wiki q1-3", 3) and cell.startswith(rs.fmt_num(rs.bootstrap_mean([2.0, 1.0, -1.0])["mean"]))


def test_summary_says_a_conflict_instead_of_a_number(tmp_path: Path):
    sets = [(tmp_path / "a", _eq("2wiki", 1, 0, [("w1", 6.0, 7.0)]), {}),
            (tmp_path / "b", _eq("2wiki", 1, 0, [("w1", 7.0, 7.0)]), {}),
            (tmp_path / "c", _eq("2wiki", 2, 0, [("w2", 7.0, 7.0)]), {})]
    [(label, n, cell)] = _pooled_rows(rs.summary_section(sets, tmp_path))
    assert cell == "not pooled: question w1 of 2wiki has N_eq difference -1 in a/ and 0 in b/"


def test_summary_says_n_a_for_an_aliasing_no_question_defines(tmp_path: Path):
    eq = _eq("2wiki", 1, 0, [("w1", 1.0, 1.0)])
    eq["menu_minus_free_query"]["aliasing"] = {"mean": None, "lo": None, "hi": None, "n": 0}  # no two requests differed
    page = rs.summary_section([(tmp_path, eq, {})], tmp_path)
    assert "<td>n/a (no question defines it)</td>" in page and "<code>.</code>" in page
