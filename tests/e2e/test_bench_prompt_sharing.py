"""benchmarks/bench_prompt_sharing.py end to end with the tiny random test model on the packaged 2Wiki slice
(embedded FalkorDB): both ways of prefilling play the same rollouts from the same seed, the shared way computes fewer
prompt positions, and the results go where ``--results`` says (never over the committed ones)."""
from __future__ import annotations

import json

from helpers.paths import load_script
from helpers.slice_graph import SLICE_2WIKI, build_2wiki_slice


def test_bench_plays_the_same_rollouts_both_ways_and_writes_where_asked(tmp_path, capsys):
    bench = load_script("benchmarks/bench_prompt_sharing.py")
    graph, results = tmp_path / "graph", tmp_path / "res" / "sharing.json"
    build_2wiki_slice(graph, None)
    assert bench.main(["--graph", str(graph), "--questions", str(SLICE_2WIKI), "--format", "2wiki", "--n-questions", "2",
                       "--model", "tiny-random", "--group-size", "3", "--free-action-tokens", "8",
                       "--set", "rollout.max_turns=2", "--set", "rollout.max_answer_tokens=4",
                       "--results", str(results)]) == 0
    data = json.loads(results.read_text())
    assert set(data["arms"]) == {"menu", "free-query"}
    for arm in data["arms"].values():
        assert arm["same_rollouts"] == len(arm["questions"]) == 2
        ratio = arm["computed_per_prompt_token"]
        assert ratio["shared"] < ratio["plain"]  # a group's first-turn prompts are one prompt, prefilled once
    assert "| menu | 2 |" in results.with_suffix(".md").read_text() and "| menu | 2 |" in capsys.readouterr().out


def test_bench_measures_the_prefix_cache_on_multi_turn_rollouts(tmp_path, capsys):
    """``--switch prefix_cache``: the same rollouts with and without kept caches (shared prefill in both), fewer
    positions computed with them at T = 3, and its own results file and title."""
    bench = load_script("benchmarks/bench_prompt_sharing.py")
    graph, results = tmp_path / "graph", tmp_path / "res" / "prefix.json"
    build_2wiki_slice(graph, None)
    assert bench.main(["--graph", str(graph), "--questions", str(SLICE_2WIKI), "--format", "2wiki", "--n-questions", "2",
                       "--model", "tiny-random", "--group-size", "3", "--free-action-tokens", "8",
                       "--set", "rollout.max_turns=3", "--set", "rollout.max_answer_tokens=4",
                       "--switch", "prefix_cache", "--results", str(results)]) == 0
    data = json.loads(results.read_text())
    assert data["switch"] == "prefix_cache"
    for arm in data["arms"].values():
        assert arm["same_rollouts"] == len(arm["questions"]) == 2
        ratio = arm["computed_per_prompt_token"]
        assert ratio["shared"] < ratio["plain"]  # turns 2-3 prefill only what turn 1 and 2 did not leave
    assert results.with_suffix(".md").read_text().startswith("# Cross-turn prefix cache")
    assert bench.main(["--switch", "kv", "--graph", str(graph)]) == 2
    assert "--switch 'kv': expected one of share_prompts, prefix_cache" in capsys.readouterr().err
