"""``benchmarks/bench_train_gpu.py``'s preflight: every case's config checked against the graph before a GPU lease
builds any model. On 2026-11-27 two SmolLM2 cases were refused on the device, minutes into the lease, because the
carried graph held 8 questions and a 16 x 8 step draws 16; the preflight finds that on the CPU in seconds.

A real graph (the packaged 2Wiki slice, 8 questions, paper preset) and the benchmark's real case table."""
from __future__ import annotations

import pytest
from helpers.paths import REPO_ROOT, load_script

SLICE = REPO_ROOT / "harness_g" / "examples" / "2wiki-dev-slice" / "dev.subset.json"


def _bench():
    return load_script("benchmarks/bench_train_gpu.py")


@pytest.fixture(scope="module")
def slice_graph(tmp_path_factory: pytest.TempPathFactory):
    from harness_g.training.config import load_config
    from harness_g.training.data import build_training_graph

    graph = tmp_path_factory.mktemp("bench-preflight") / "graph"
    build_training_graph(load_config(None, {"data.graph_dir": str(graph), "data.build_format": "2wiki",
                                            "data.build_input": str(SLICE), "model.name": "tiny-random"}))
    return graph


def test_preflight_refuses_a_step_larger_than_the_graph_and_passes_the_rest(slice_graph) -> None:
    bench = _bench()
    named = [(bench.CASES["smollm2real-full-16x8"], 4), (bench.CASES["qwen3b-full-gc-8x8"], 4),
             (bench.CASES["tiny-full-2x2"], 2)]
    problems = bench.preflight(named, slice_graph, None)
    assert len(problems) == 1, problems
    assert problems[0].startswith("smollm2real-full-16x8: ConfigError: rollout.questions_per_step (16)")
    # the 8 x 8 Qwen case passes only because the bench sets the graph's encoder over the recipe's bge-large
    assert bench.preflight([(bench.CASES["qwen3b-lora-gc-8x8"], 4)], slice_graph, None) == []


def test_preflight_refuses_a_graph_of_the_other_preset(tmp_path) -> None:
    from harness_g.training.config import load_config
    from harness_g.training.data import build_training_graph

    bench = _bench()
    graph = tmp_path / "graph"
    build_training_graph(load_config(None, {"preset": "extended", "data.graph_dir": str(graph),
                                            "data.build_format": "2wiki", "data.build_input": str(SLICE),
                                            "model.name": "tiny-random"}))
    problems = bench.preflight([(bench.CASES["tiny-full-2x2"], 2)], graph, None)
    assert len(problems) == 1 and "graph built under preset extended" in problems[0], problems
