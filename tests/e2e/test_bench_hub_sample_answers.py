"""``benchmarks/bench_hub_sample_answers.py`` (issue 35 item 5: what the hub-sampled LOOKUP costs in answers), on the
real HotpotQA test graph in a fresh embedded FalkorDB: a sample size above every pool makes no hub, so every
question's reachability, lookahead and oracle results must equal the paper's exactly; a size of 2 makes hubs (counted
here from the mentions table), changes some oracle LOOKUP pools, and every paired difference rests on every question."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from helpers.mentions import mentioned_sentences
from helpers.paths import load_script

from harness_g.graph.artifact import Artifact


def test_no_hub_changes_nothing_and_a_small_sample_makes_the_hubs_of_the_mentions_table(
        artifact_copy: Callable[[str], Path]) -> None:
    bench = load_script("benchmarks/bench_hub_sample_answers.py")
    graph = artifact_copy("hotpot")
    distinct = mentioned_sentences(Artifact.open(graph))
    largest = max(len(v) for v in distinct.values())

    result = bench.graph_rows(graph, [2, largest], ("lookahead", "oracle"), None, 200)
    n = result["questions"]
    assert n == len(Artifact.open(graph).questions()) >= 5

    none = result["sizes"][str(largest)]
    assert none["profile"]["hubs"] == 0 and none["oracle_lookups_changed"] == 0
    for policy in ("lookahead", "oracle"):
        assert none[policy] == {**result["paper"][policy]}
        assert none["delta"][policy]["changed_questions"] == 0
        assert none["delta"][policy]["evidence_recall"]["mean"] == 0.0 and none["delta"][policy]["f1"]["n"] == n
    assert (none["reachable"], none["reach_decided"]) == (result["paper"]["reachable"], result["paper"]["reach_decided"])

    small = result["sizes"]["2"]
    assert small["profile"]["hubs"] == sum(1 for v in distinct.values() if len(v) > 2) > 0
    assert small["profile"]["sampled_share_min"] == round(2 / largest, 4)
    assert result["paper"]["oracle"]["lookups"] > 0
    assert 0 < small["oracle_lookups_changed"] <= small["oracle_lookups"] == result["paper"]["oracle"]["lookups"]
    assert small["delta"]["oracle"]["evidence_recall"]["n"] == n
    table = bench.markdown({"run_at": "t", "command": "c", "seconds": 1, "machine": {"cores": 2},
                            "loadavg_start": [], "loadavg_end": [], "policies": ["lookahead", "oracle"],
                            "graphs": [result]})
    assert table.count("| graph | S |") == 1 and f"| hotpot | 2 | {n} |" in table
    assert f"| hotpot | {largest} | {n} | 0 | - | 0 of " in table


def test_bad_arguments_are_one_line_usage_errors(tmp_path: Path, capsys) -> None:
    import pytest

    bench = load_script("benchmarks/bench_hub_sample_answers.py")
    for argv, says in ((["--graphs", str(tmp_path)], f"--graphs: {tmp_path} is not a GRAPH_DIR (no manifest.json)"),
                       (["--graphs", str(tmp_path), "--sizes", "0"], "--sizes must be >= 1 sentence, got 0"),
                       (["--graphs", str(tmp_path), "--sizes", "five"], "--sizes takes integers"),
                       (["--graphs", str(tmp_path), "--name", "../x"], "--name: '../x' is not a file stem")):
        with pytest.raises(SystemExit) as exc:
            bench.main(argv)
        assert exc.value.code == 2 and says in capsys.readouterr().err


def test_name_sets_the_result_files_and_the_title_names_the_graphs(artifact_copy: Callable[[str], Path],
                                                                    tmp_path: Path) -> None:
    import json

    bench = load_script("benchmarks/bench_hub_sample_answers.py")
    graph = artifact_copy("hotpot")
    out = tmp_path / "results"
    assert bench.main(["--graphs", str(graph), "--sizes", "1000", "--limit", "2", "--policies", "lookahead",
                       "--out", str(out), "--name", "open_run"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["open_run.json", "open_run.md"]
    data = json.loads((out / "open_run.json").read_text())
    assert data["command"].endswith("--name open_run") and data["graphs"][0]["questions"] == 2
    assert (out / "open_run.md").read_text().startswith(
        f"# What the hub-sampled LOOKUP costs in answers ({graph.name}; paper preset)")
