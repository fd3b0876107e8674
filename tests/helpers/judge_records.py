"""Fixed G-E judge scores and a minimal eval record (shared by the judge's parsing tests and its server tests)."""
from __future__ import annotations

from typing import Any

#: one judge reply's scores on the seven 0-10 dimensions
SCORES = {"comprehensiveness": 7, "knowledgeability": 8, "correctness": 9, "relevance": 6, "diversity": 5,
          "logical_coherence": 10, "factuality": 7}  # Σ = 52 -> G-E = 10/7 · 52 = 74.2857…
#: the G-E of :data:`SCORES` (0-100)
GE = 10 / 7 * 52


def record(qid: str = "q1") -> dict[str, Any]:
    """An eval record (records.jsonl line) of question ``qid``, not judged yet."""
    return {"id": qid, "question": "Who directed Jaws?", "answers": ["Steven Spielberg"], "prediction": "Spielberg",
            "metrics": {"em": 0.0, "f1": 0.67}, "trajectory": {"committed": [], "steps": []}}
