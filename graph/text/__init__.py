"""Text processing for the graph build: sentence splitting, NER, canonical forms, the
invalid-target filter and entity-entity synonym linking.

``EntityRecognizer`` is imported lazily (importing spaCy takes seconds).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_g.graph.text.canonical import canonicalize, display_form
from harness_g.graph.text.filters import REJECTED_LABELS, LookupFilter, is_lookupable, lookup_rejection
from harness_g.graph.text.linking import EntityRecord, SynonymEdge, link_entities
from harness_g.graph.text.split import split_sentences, split_text

if TYPE_CHECKING:
    from harness_g.graph.text.ner import EntityRecognizer

__all__ = [
    "EntityRecognizer",
    "EntityRecord",
    "LookupFilter",
    "REJECTED_LABELS",
    "SynonymEdge",
    "canonicalize",
    "display_form",
    "is_lookupable",
    "link_entities",
    "lookup_rejection",
    "split_sentences",
    "split_text",
]


def __getattr__(name: str) -> Any:
    if name == "EntityRecognizer":
        from harness_g.graph.text.ner import EntityRecognizer

        return EntityRecognizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
