"""Pure retrieval helpers: reciprocal rank fusion and the environment-built lookup query."""
from __future__ import annotations

from typing import Sequence


def rrf(rankings: Sequence[Sequence[str]], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion: score(d) = sum over rankings of 1 / (k + rank), rank 1-based.

    Returns ``[(id, score)]`` best first; ties broken by id so fusion is deterministic.
    """
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(dict.fromkeys(ranking), start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def lookup_query(question: str, committed_texts: Sequence[str], max_words: int = 64) -> str:
    """m_t = concat(question, text(C_t)) capped at ``max_words`` whitespace words.

    Built by the environment, never by the policy; the question always comes first so a
    long evidence set truncates evidence, not the question.
    """
    words = question.split()
    for text in committed_texts:
        if len(words) >= max_words:
            break
        words.extend(text.split())
    return " ".join(words[:max_words])
