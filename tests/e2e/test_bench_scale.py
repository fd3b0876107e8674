"""``benchmarks/bench_scale.py``'s replicated graphs (issue 35 item 5), on which (c)'s step-cost curve rests: the
R-times graph is a valid artifact (every file's sha256 in its manifest), R times every paragraph, sentence and
mention with distinct texts and distinct vectors near the originals, the entities shared (so each entity's mentions,
and its LOOKUP pool's mention channel, are R times the original's), and replica 0 the original itself, so the
questions' gold ids stay valid. A real graph: the HotpotQA test slice built by the session fixture."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
from helpers.paths import load_script

from harness_g.graph.artifact import Artifact

R = 3


def test_a_replicated_graph_is_r_times_the_original_with_distinct_texts_and_vectors(hotpot_graph_dir: Path,
                                                                                     tmp_path: Path) -> None:
    bench = load_script("benchmarks/bench_scale.py")
    rep = bench.replicate_artifact(hotpot_graph_dir, R, tmp_path / "x3")
    src, out = Artifact.open(hotpot_graph_dir), Artifact.open(tmp_path / "x3", verify=True)
    assert out.content_hash != src.content_hash
    for table in ("paragraphs", "sentences", "mentions"):
        assert out.table(table).num_rows == R * src.table(table).num_rows == rep["counts"][table], table
    assert out.table("entities").num_rows == src.table("entities").num_rows
    texts = out.table("sentences", columns=["text"]).column("text").to_pylist()
    assert len(set(texts)) > (R - 0.5) * len(set(src.table("sentences", columns=["text"]).column("text").to_pylist()))
    # each entity's mentions, counted in the mention table and in the entity table, R times the original's
    count = lambda a: Counter(a.table("mentions", columns=["entity_id"]).column("entity_id").to_pylist())  # noqa: E731
    assert count(out) == Counter({e: R * n for e, n in count(src).items()})
    ents = lambda a: dict(zip(*(a.table("entities").column(c).to_pylist() for c in ("id", "mentions"))))  # noqa: E731
    assert ents(out) == {e: R * n for e, n in ents(src).items()}
    # replica 0 is the original (gold ids valid); replicas' vectors are unit, distinct, near their original
    base, emb = np.asarray(src.embeddings(mmap=False)), np.asarray(out.embeddings(mmap=False))
    n = base.shape[0]
    assert np.array_equal(emb[:n], base) and out.questions() == src.questions()
    for r in range(1, R):
        block = emb[r * n:(r + 1) * n]
        assert np.allclose(np.linalg.norm(block, axis=1), 1.0, atol=1e-5)
        cos = np.sum(block * base, axis=1)
        assert 0.9 < cos.min() and cos.max() < 0.999
    assert len({row.tobytes() for row in emb}) == emb.shape[0]
