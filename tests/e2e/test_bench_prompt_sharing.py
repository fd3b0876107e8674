"""benchmarks/bench_prompt_sharing.py end to end with the tiny random test model on the packaged 2Wiki slice
(embedded FalkorDB): both ways of prefilling play the same rollouts from the same seed, the saving way computes fewer
prompt positions, and the results go where ``--results`` says (never over the committed ones). Two switches: shared
prompt prefill, and the cross-turn prefix cache."""
from __future__ import annotations

import json

from helpers.paths import load_script
from helpers.slice_graph import SLICE_2WIKI, build_2wiki_slice


def _bench_runs_the_same_rollouts_both_ways(tmp_path, turns: int, *extra: str) -> tuple[dict, object]:
    """Run the bench (2 questions, N_g = 3, ``turns`` turns, ``extra`` flags) into tmp_path/res: its JSON and the
    results path, after checking that every question played the same rollouts both ways and that the saving way
    computed fewer prompt positions per real prompt token on both arms."""
    bench = load_script("benchmarks/bench_prompt_sharing.py")
    graph, results = tmp_path / "graph", tmp_path / "res" / "bench.json"
    build_2wiki_slice(graph, None)
    assert bench.main(["--graph", str(graph), "--questions", str(SLICE_2WIKI), "--format", "2wiki", "--n-questions", "2",
                       "--model", "tiny-random", "--group-size", "3", "--free-action-tokens", "8",
                       "--set", f"rollout.max_turns={turns}", "--set", "rollout.max_answer_tokens=4",
                       "--results", str(results), *extra]) == 0
    data = json.loads(results.read_text())
    assert set(data["arms"]) == {"menu", "free-query"}
    for arm in data["arms"].values():
        assert arm["same_rollouts"] == len(arm["questions"]) == 2
        ratio = arm["computed_per_prompt_token"]
        assert ratio["shared"] < ratio["plain"]
    return data, results


def test_bench_plays_the_same_rollouts_both_ways_and_writes_where_asked(tmp_path, capsys):
    """Shared prefill (the default switch): a group's first-turn prompts are one prompt, prefilled once."""
    data, results = _bench_runs_the_same_rollouts_both_ways(tmp_path, 2)
    assert data["switch"] == "share_prompts"
    assert "| menu | 2 |" in results.with_suffix(".md").read_text() and "| menu | 2 |" in capsys.readouterr().out


def test_bench_measures_the_prefix_cache_on_multi_turn_rollouts(tmp_path, capsys):
    """``--switch prefix_cache``: turns 2-3 prefill only what the turn before did not leave (shared prefill in both),
    under its own title; an unknown switch is a one-line usage error."""
    data, results = _bench_runs_the_same_rollouts_both_ways(tmp_path, 3, "--switch", "prefix_cache")
    assert data["switch"] == "prefix_cache"
    assert results.with_suffix(".md").read_text().startswith("# Cross-turn prefix cache")
    bench = load_script("benchmarks/bench_prompt_sharing.py")
    assert bench.main(["--switch", "kv", "--graph", str(tmp_path / "graph")]) == 2
    assert "--switch 'kv': expected one of share_prompts, prefix_cache" in capsys.readouterr().err
