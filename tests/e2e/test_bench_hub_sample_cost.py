"""``benchmarks/bench_hub_sample_cost.py`` (issue 35 item 7: what deriving the hub samples costs at load) on the real
HotpotQA test graph: each replica count is measured in a child process for both implementations, which find the same
hubs (counted here from the mentions table); the table grows R-fold; bad arguments are one-line usage errors."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from helpers.mentions import mentioned_sentences
from helpers.paths import load_script

from harness_g.graph.artifact import Artifact


def test_both_implementations_find_the_hubs_of_the_replicated_mentions(artifact_copy: Callable[[str], Path],
                                                                        tmp_path: Path, capsys) -> None:
    bench = load_script("benchmarks/bench_hub_sample_cost.py")
    graph = artifact_copy("hotpot")
    artifact = Artifact.open(graph)
    distinct = mentioned_sentences(artifact)
    out = tmp_path / "cost.json"
    assert bench.main(["--graph", str(graph), "--replicas", "1,3", "--size", "2", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    rows = {(r["replicas"], r["impl"]): r for r in data["rows"]}
    assert set(rows) == {(1, "vectorised"), (1, "reference"), (3, "vectorised"), (3, "reference")}
    hubs_at_1 = sum(1 for v in distinct.values() if len(v) > 2)
    assert hubs_at_1 > 0 and rows[(1, "vectorised")]["hubs"] == rows[(1, "reference")]["hubs"] == hubs_at_1
    # three copies of every mention with distinct sentence ids: every entity mentioned at least once is a hub at 2
    assert rows[(3, "vectorised")]["hubs"] == rows[(3, "reference")]["hubs"] == len(distinct)
    assert rows[(3, "vectorised")]["rows"] == 3 * artifact.table("mentions").num_rows == rows[(3, "reference")]["rows"]
    assert rows[(3, "reference")]["speedup_vs_reference"] == 1.0
    assert data["wiki18"]["mention_rows"] > 0 and out.with_suffix(".md").is_file()

    capsys.readouterr()
    for argv, message in ((["--replicas", "1,x"], "error: --replicas '1,x': expected comma-separated integers"),
                          (["--replicas", "0"], "error: --replicas and --size must be >= 1"),
                          (["--size", "0"], "error: --replicas and --size must be >= 1")):
        assert bench.main(["--graph", str(graph), *argv, "--out", str(out)]) == 2
        assert capsys.readouterr().err.strip() == message
    assert bench.main(["--graph", str(tmp_path / "none"), "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == f"error: --graph {tmp_path / 'none'}: no graph there (no manifest.json)"
