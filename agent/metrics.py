"""Evaluation metrics exactly as the paper's appendix "Evaluation Details" (Graph-R1 suite).

All per-question metrics return values in [0, 1]; summaries report them ×100.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from typing import Iterable, Sequence

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """Lowercase, remove punctuation, remove articles (a/an/the), fold whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """1.0 if norm(prediction) equals norm(any alias), else 0.0 (0.0 when there is no alias)."""
    pred = normalize_answer(prediction or "")
    return float(any(pred == normalize_answer(a) for a in answers))


def _f1(pred_tokens: list[str], gold_tokens: list[str]) -> float:
    common = Counter(pred_tokens) & Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    return 2.0 * overlap / (len(pred_tokens) + len(gold_tokens))


def token_f1(prediction: str, answers: Sequence[str]) -> float:
    """max over aliases of 2|tok(pred) ∩ tok(gold)| / (|tok(pred)| + |tok(gold)|), multiset overlap."""
    pred = normalize_answer(prediction or "").split()
    if not answers:
        return 0.0
    return max(_f1(pred, normalize_answer(a).split()) for a in answers)


def retrieval_similarity(retrieved_vec: np.ndarray | None, gold_vec: np.ndarray | None) -> float | None:
    """cos(Enc(K), Enc(K*)) for L2-normalised encodings of the retrieved and gold evidence texts.

    None when either side is empty (no gold evidence or nothing retrieved counts as 0 by the caller's choice).
    """
    if retrieved_vec is None or gold_vec is None:
        return None
    return float(np.dot(retrieved_vec, gold_vec) / (np.linalg.norm(retrieved_vec) * np.linalg.norm(gold_vec) + 1e-12))


def gold_units(gold_sentence_ids: Sequence[str], gold_paragraph_ids: Sequence[str]) -> list[frozenset[str] | str]:
    """Evidence units: each gold sentence, or (when only paragraphs are annotated) each gold paragraph.

    A sentence unit is satisfied by committing that sentence; a paragraph unit by committing any of its sentences.
    """
    if gold_sentence_ids:
        return list(dict.fromkeys(gold_sentence_ids))
    return [frozenset([p]) for p in dict.fromkeys(gold_paragraph_ids)]


def unit_satisfied(unit: frozenset[str] | str, committed: Iterable[str]) -> bool:
    committed = list(committed)
    if isinstance(unit, str):
        return unit in committed
    return any(sid.rsplit(":", 1)[0] in unit for sid in committed)


def evidence_recall(units: Sequence[frozenset[str] | str], committed: Sequence[str]) -> float | None:
    """Fraction of gold units satisfied by C_T; None when the item has no gold evidence."""
    if not units:
        return None
    return sum(unit_satisfied(u, committed) for u in units) / len(units)


def evidence_precision(units: Sequence[frozenset[str] | str], committed: Sequence[str]) -> float | None:
    """Fraction of committed sentences that belong to some gold unit; None without gold or commits."""
    if not units or not committed:
        return None
    return sum(any(unit_satisfied(u, [sid]) for u in units) for sid in committed) / len(committed)


def answer_in_evidence(answers: Sequence[str], texts: Sequence[str]) -> bool:
    """Whether some normalised alias occurs (token-bounded) in the normalised committed text."""
    blob = f" {normalize_answer(' '.join(texts))} "
    return any(normalize_answer(a) and f" {normalize_answer(a)} " in blob for a in answers)


def mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(sum(vals) / len(vals)) if vals else None
