"""``benchmarks/bench_build_gpu.py`` (issue 35 item 7, run on a lent GPU machine by ``gpu_session.sh`` part 35),
rehearsed on the CPU as a lease would run it: the five dev-set slices under ``tests/data`` (the ``../shared/data``
layout) built end to end twice, ONNX then torch on the CPU with 2 NER processes, then the encoder rates on the built
artifact's sentences. Real spaCy, real MiniLM; the bge-large shape is left out here (``--shapes minilm``: a 335M
random BERT on 2 CPU cores is minutes, and its code path is the MiniLM loop's)."""
from __future__ import annotations

import json
import subprocess
import sys

from helpers.paths import REPO_ROOT


def test_builds_both_ways_to_the_same_graph_and_times_the_encoders(tmp_path) -> None:
    out, work = tmp_path / "out", tmp_path / "work"
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "bench_build_gpu.py"), "--graphs", str(tmp_path / "none"),
         "--data", str(REPO_ROOT / "tests" / "data"), "--out", str(out), "--work", str(work), "--device", "cpu",
         "--workers", "2", "--limit", "2", "--n-sentences", "64", "--shapes", "minilm"],
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads((out / "build_gpu.json").read_text())
    build = data["build"]
    assert [(b["backend"], b["device"]) for b in build["builds"]] == [("onnx", "cpu"), ("torch", "cpu")]
    assert build["same_content_hash"] is True  # the encoder backend does not change the artifact
    for b in build["builds"]:
        assert b["corpus_tokens"] > 1000 and b["counts"]["sentences"] > 50
        assert b["s_per_1k_tokens"] == b["wall_s"] / (b["corpus_tokens"] / 1000.0)
        assert set(b["seconds"]) >= {"ner", "embed", "link", "write"}
    enc = data["encode"]
    assert enc["sentences"] == 64  # the build's own sentences (the --graphs folder does not exist)
    cases = [r["case"] for r in enc["rows"]]
    assert cases == ["harness-g TorchEncoder MiniLM fp32 (cpu)", "plain loop MiniLM-L6 (real weights) fp32 (cpu)",
                     "plain loop MiniLM-L6 (real weights) bf16 (cpu)"]
    assert all("error" not in r and r["sentences_per_s"] > 0 and len(r["runs_s"]) == 3 for r in enc["rows"])
    assert enc["word_pieces"] > enc["whitespace_tokens"] > 0
    md = (out / "build_gpu.md").read_text()
    assert "Same content hash both ways: True" in md and "| torch on cpu |" in md


def test_an_unknown_shape_is_refused(tmp_path) -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "benchmarks" / "bench_build_gpu.py"), "--graphs", str(tmp_path),
         "--data", str(tmp_path), "--out", str(tmp_path / "o"), "--work", str(tmp_path / "w"), "--device", "cpu",
         "--parts", "encode", "--shapes", "minilm,gpt"],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "unknown shape(s) ['gpt']" in proc.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "o").exists()  # refused before anything was written


def test_an_unknown_part_and_a_folder_without_graphs_are_refused(tmp_path) -> None:
    def run(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(REPO_ROOT / "benchmarks" / "bench_build_gpu.py"), "--graphs", str(tmp_path / "g"),
             "--data", str(tmp_path), "--out", str(tmp_path / "o"), "--work", str(tmp_path / "w"), "--device", "cpu",
             *extra], capture_output=True, text=True, timeout=300)

    proc = run("--parts", "build,train")
    assert proc.returncode != 0
    assert "unknown part(s) ['train']" in proc.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "o").exists()  # refused before anything was written
    (tmp_path / "g").mkdir()
    proc = run("--parts", "encode", "--names", "2wiki")
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert "no built graph's sentences.parquet there" in last and "2wiki/sentences.parquet missing" in last
