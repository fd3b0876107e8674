"""NER over several processes (issue 35 item 1): ``harness-g build --workers N`` / ``BuildConfig.workers``.

Real spaCy, real all-MiniLM-L6-v2, the real build pipeline on the packaged HotpotQA dev slice's first 20 questions
(818 sentences: four NER batches of the default 256, so each of two workers gets more than one). The workers change
how the build runs, never the graph: every artifact file is byte-identical and the content hash is the same, so a
rebuild with another worker count is a cache hit.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.cli_checks import assert_one_line_error, run

from harness_g.graph.artifact import Artifact
from harness_g.graph.config import BuildConfig
from harness_g.graph.text.ner import EntityRecognizer

SLICE = Path(__file__).resolve().parents[2] / "harness_g" / "examples" / "hotpotqa-dev-slice" / "hotpot_dev_distractor_v1.slice.json"
#: questions of the slice the builds read: enough sentences for more than one NER batch per worker (of two)
LIMIT = 20


def _build(capsys, out: Path, *extra: str) -> str:
    rc, stdout, err = run(capsys, "build", "--format", "hotpotqa", "--input", SLICE, "--limit", str(LIMIT),
                          "--out", out, "--no-load", "-q", *extra)
    assert rc == 0, err
    return stdout


@pytest.mark.slow
def test_one_and_two_workers_write_byte_identical_artifacts(tmp_path: Path, capsys) -> None:
    one, two = tmp_path / "w1", tmp_path / "w2"
    _build(capsys, one, "--workers", "1")
    _build(capsys, two, "--workers", "2")
    m1, m2 = (json.loads((d / "manifest.json").read_text(encoding="utf-8")) for d in (one, two))
    assert (m1["workers"], m2["workers"]) == (1, 2)  # what ran
    assert (m1["config"]["workers"], m2["config"]["workers"]) == (1, 2)
    assert m2["config_sources"]["workers"] == "set"
    # every table file and both embedding files: the manifest's sha256 of each, and the bytes themselves
    assert set(m1["files"]) >= {"sentences.parquet", "entities.parquet", "mentions.parquet", "synonyms.parquet",
                                "sentence_embeddings.npy", "entity_embeddings.npy"}, sorted(m1["files"])
    assert m1["files"] == m2["files"]
    for name in m1["files"]:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name
    assert m1["content_hash"] == m2["content_hash"]  # workers stays out of the content hash
    assert m1["counts"] == m2["counts"] and m1["counts"]["mentions"] > 1000, m1["counts"]
    assert m1["counts"]["sentences"] > 3 * BuildConfig().ner_batch_size, m1["counts"]  # > 1 NER batch per worker
    Artifact.open(two, verify=True)
    # the default (every core) is the same graph: a rebuild without --workers is a cache hit
    assert _build(capsys, two).startswith("cache hit")


def test_worker_processes_find_the_same_mentions_in_order() -> None:
    texts = [s for item in json.loads(SLICE.read_text(encoding="utf-8"))[:6] for _, sents in item["context"] for s in sents]
    one = list(EntityRecognizer(batch_size=16).extract(texts))
    two = list(EntityRecognizer(batch_size=16, n_process=2).extract(iter(texts)))  # any iterable, 15 batches
    assert len(two) == len(texts) > 200
    assert two == one and sum(map(len, one)) > 100
    # a caller that stops early shuts the pool down (no hang, no leftover batches)
    gen = EntityRecognizer(batch_size=16, n_process=2).extract(texts)
    assert next(gen) == one[0]
    gen.close()


def test_workers_flag_is_shown_and_checked(capsys) -> None:
    rc, out, err = run(capsys, "build", "--show-config", "--workers", "3")
    assert rc == 0, err
    assert "workers: 3  # [set] spaCy NER processes" in out
    rc, out, _ = run(capsys, "build", "--show-config")
    assert "workers: None  # [default]" in out and "every core" in out
    rc, _, err = run(capsys, "build", "--show-config", "--workers", "0")
    assert_one_line_error(rc, err, "workers", ">= 1")
