"""Gold evidence units: what "the gold evidence was committed" means, for the gold search, the metrics and the report.

A unit is a gold sentence id (``str``), or, when an item annotates only paragraphs, a ``frozenset`` holding one gold
paragraph id, satisfied by committing any sentence of that paragraph.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from harness_g.graph.types import paragraph_of

Unit = frozenset[str] | str


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
    return any(paragraph_of(sid) in unit for sid in committed)
