"""Evaluation metrics exactly as the paper's appendix "Evaluation Details" (Graph-R1 suite).

All per-question metrics return values in [0, 1]; summaries report them ×100.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from harness_g.agent.env.gold import (gold_units, unit_satisfied)  # noqa: F401  (metrics.gold_units: the report's and runs' name)
from harness_g.agent.env.trajectory import lookup_evidence, record_field

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
    """cos(Enc(K), Enc(K*)) of two encodings (see :func:`evidence_similarity` for Enc).

    None when either side is missing.
    """
    if retrieved_vec is None or gold_vec is None:
        return None
    return float(np.dot(retrieved_vec, gold_vec) / (np.linalg.norm(retrieved_vec) * np.linalg.norm(gold_vec) + 1e-12))


# -- R-S (appendix "Evaluation Details", "Retrieval Similarity (R-S)") ------------------------------------
#: The metric encoder Graph-R1 uses for R-S (its evaluation/eval_r.py: SimCSE, CLS pooling, a 128-token
#: window, both texts passed through ``normalize_answer`` first). It needs a model hub; without one
#: (this project's default, offline) R-S uses the graph's shared sentence encoder -- the one that built
#: the graph's sentence vectors -- and ``run_eval`` names the encoder it used in the summary (``rs_encoder``).
GRAPH_R1_RS_ENCODER = "princeton-nlp/sup-simcse-roberta-large"
#: Which evidence K_i is: the *retrieved* evidence, as Graph-R1 scores the knowledge its retrieval
#: calls returned (all turns), not the answer alone. Here that is every sentence the retrieval
#: channels put in front of the policy: InitRetrieve's U_0, each LOOKUP's result, and C_T (a subset of
#: those for the menu arms; the retrieved chunks themselves for Standard RAG). See :func:`retrieved_evidence`.
RS_EVIDENCE = "retrieved"


def retrieved_evidence(trajectory: Any) -> list[str]:
    """K_i for R-S: sentence ids retrieved during an episode, first-seen order, deduplicated --
    U_0 (``initial_visible``), every executed LOOKUP's result (``introduced``; a final-step LOOKUP
    included) and C_T (``committed``). Accepts a :class:`Trajectory` or its JSON dict."""
    ids = [*(record_field(trajectory, "initial_visible") or []), *lookup_evidence(trajectory),
           *(record_field(trajectory, "committed") or [])]
    return list(dict.fromkeys(ids))


class EvidenceEncoder:
    """Enc(·) of R-S for a *set* of evidence texts, without truncating anything to the encoder's window.

    Encoding ``" ".join(texts)`` in one call silently keeps only the first ``max_seq_length`` tokens
    (256 word pieces for MiniLM, 128 for Graph-R1's SimCSE): a long retrieved set is then scored on its
    head alone, and evidence that comes later -- often the second hop -- never counts. Instead every
    text (a sentence) is normalised as Graph-R1 does (:func:`normalize_answer`), split into pieces that
    fit the window (only a text longer than the window is split), each piece is encoded on its own,
    and Enc(K) is the mean of the pieces' unit vectors. R-S is the cosine of the two means.

    ``encode(texts) -> float [n, dim]`` unit vectors; ``count_tokens(text)`` the encoder's token count of
    a text *with* its special tokens and ``max_tokens`` its window (both None: whitespace words, no limit).
    """

    def __init__(self, encode: Callable[[Sequence[str]], np.ndarray], *, name: str = "",
                 count_tokens: Callable[[str], int] | None = None, max_tokens: int | None = None):
        self.encode = encode
        self.name = name
        self.count_tokens = count_tokens or (lambda text: len(text.split()))
        self.max_tokens = max_tokens
        self._overhead = self.count_tokens("") if count_tokens is not None else 0

    @classmethod
    def from_view(cls, view: Any) -> "EvidenceEncoder":
        """The graph's shared encoder (``view.encode``, cached), with its tokenizer and window when it has them."""
        embedder = getattr(view, "embedder", None)  # graph.embed.Embedder: public tokenizer and max_seq_length
        tokenizer = getattr(embedder, "tokenizer", None)
        window = getattr(embedder, "max_seq_length", None)
        count = None
        if tokenizer is not None and window:
            def count(text: str) -> int:
                return len(tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"])
        return cls(view.encode, name=str(getattr(embedder, "name", "")), count_tokens=count,
                   max_tokens=int(window) if count is not None else None)

    def pieces(self, texts: Sequence[str]) -> list[str]:
        """Normalised texts, each split into consecutive word runs that fit the window (order kept, empties dropped)."""
        out: list[str] = []
        for text in texts:
            norm = normalize_answer(text or "")
            if not norm:
                continue
            if self.max_tokens is None or self.count_tokens(norm) <= self.max_tokens:
                out.append(norm)
                continue
            budget = max(1, self.max_tokens - self._overhead)
            run: list[str] = []
            used = 0
            for word in norm.split():
                cost = max(1, self.count_tokens(word) - self._overhead)
                if run and used + cost > budget:
                    out.append(" ".join(run))
                    run, used = [], 0
                run.append(word)
                used += cost
            if run:
                out.append(" ".join(run))
        return out

    def encode_set(self, texts: Sequence[str]) -> np.ndarray | None:
        """Enc(K): the mean unit vector of K's pieces; None when K has no text."""
        pieces = self.pieces(texts)
        if not pieces:
            return None
        vecs = np.asarray(self.encode(pieces), dtype=np.float64)
        vecs = vecs / (np.linalg.norm(vecs, axis=1, keepdims=True) + 1e-12)
        return vecs.mean(axis=0)


def evidence_similarity(retrieved_texts: Sequence[str], gold_texts: Sequence[str], encoder: EvidenceEncoder) -> float | None:
    """Per-question R-S in [-1, 1]: cos(Enc(K_i), Enc(K_i*)) with Enc of :class:`EvidenceEncoder`.

    None without gold evidence (the question is not scored); 0.0 when nothing was retrieved (as Graph-R1
    scores an empty knowledge string).
    """
    gold = encoder.encode_set(gold_texts)
    if gold is None:
        return None
    retrieved = encoder.encode_set(retrieved_texts)
    if retrieved is None:
        return 0.0
    return retrieval_similarity(retrieved, gold)


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
