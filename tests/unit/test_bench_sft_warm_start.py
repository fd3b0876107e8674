"""``benchmarks/bench_sft_warm_start.py``'s gold-LOOKUP count on hand-built trajectories: a LOOKUP counts when it
surfaces a gold sentence not visible before (in U_0 or surfaced by an earlier step), and is kept when that sentence
ends in C_T."""
from __future__ import annotations

from helpers.paths import load_script

bench = load_script("benchmarks/bench_sft_warm_start.py")


def _traj(initial, steps, committed):
    return {"initial_visible": initial, "committed": committed,
            "steps": [{"action_type": kind, "introduced": intro} for kind, intro in steps]}


def test_a_gold_lookup_surfaces_a_gold_sentence_not_seen_before_and_is_kept_when_committed():
    gold = {"g1", "g2", "g3"}
    traj = _traj(["g1", "x"], [("LOOKUP", ["g1", "y"]),   # g1 was in U_0: not new
                               ("LOOKUP", ["g2", "z"]),   # new gold, later committed
                               ("SELECT", ["g2"]),
                               ("LOOKUP", ["g2", "g3"]),  # g2 seen; g3 new but never committed
                               ("LOOKUP", ["w"])], ["g2"])
    assert bench.gold_lookups(traj, gold) == (2, 1)
    assert bench.gold_lookups(traj, set()) == (0, 0)
    # a sentence first surfaced by a SELECT-less earlier LOOKUP is not new again
    again = _traj([], [("LOOKUP", ["g3"]), ("LOOKUP", ["g3"])], ["g3"])
    assert bench.gold_lookups(again, gold) == (1, 1)
