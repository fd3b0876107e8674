"""R-S (paper appendix "Evaluation Details") with the real MiniLM encoder: evidence past the encoder's 256-piece
window still counts. The metrics themselves, computed by hand: tests/unit/test_metrics.py.
"""
from __future__ import annotations

import pytest

from harness_g.agent.eval import metrics as M


def test_rs_with_the_real_encoder_reads_evidence_past_its_window() -> None:
    """MiniLM reads 256 word pieces; 300+ words of distractors before the gold sentence hid it from the old R-S."""
    import numpy as np

    from harness_g.graph.embed import get_embedder

    emb = get_embedder()

    class View:  # what EvidenceEncoder.from_view reads
        embedder = emb

        @staticmethod
        def encode(texts):
            return emb.encode(texts)

    encoder = M.EvidenceEncoder.from_view(View())
    assert encoder.name == emb.name and encoder.max_tokens == emb.max_seq_length == 256
    gold = ["Kiss and Tell is a 1945 American comedy film starring Shirley Temple as Corliss Archer."]
    distractors = [f"The annual rainfall in district number {i} of the northern province was recorded by the local weather "
                   f"station over several decades." for i in range(16)]
    retrieved = distractors + gold
    assert encoder.count_tokens(" ".join(retrieved)) > 256
    old = M.retrieval_similarity(*emb.encode([" ".join(retrieved), " ".join(gold)]))  # truncated concatenation
    truncated_away = M.retrieval_similarity(*emb.encode([" ".join(distractors), " ".join(gold)]))
    assert old == pytest.approx(truncated_away, abs=1e-3)  # the old score never saw the gold sentence
    new = M.evidence_similarity(retrieved, gold, encoder)
    pieces = [M.normalize_answer(t) for t in retrieved]
    vecs = emb.encode(pieces)
    mean = vecs.mean(axis=0)
    g = emb.encode([M.normalize_answer(gold[0])])[0]
    assert new == pytest.approx(float(mean @ g / np.linalg.norm(mean)), abs=1e-5)
    assert new > old + 0.05
