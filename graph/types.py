"""Typed records that flow from readers through the graph build.

Ids are strings and stable across runs:
- paragraph id: ``p_<sha1(title \\n text)[:16]>`` (see :func:`paragraph_id`), so the same
  paragraph appearing in many questions' contexts becomes one node;
- sentence id: ``<paragraph id>:<position>`` where position is the 0-based index of the
  sentence inside its paragraph (for formats that ship sentences, the dataset's own index,
  so gold ``(title, sent_id)`` pairs stay valid);
- entity id: ``e_<sha1(label \\t canonical)[:16]>``.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from harness_g.errors import InputError  # noqa: F401  (re-exported for readers)


def _digest(text: str, n: int = 16) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:n]


def paragraph_id(title: str, text: str) -> str:
    """Content-addressed paragraph id: identical (title, text) pairs share one id."""
    return "p_" + _digest(f"{title}\n{text}")


def sentence_id(paragraph: str, position: int) -> str:
    """Sentence id from its paragraph id and 0-based position inside the paragraph."""
    return f"{paragraph}:{position}"


def paragraph_of(sentence: str) -> str:
    """The paragraph id of a :func:`sentence_id` (``"p_ab12:3"`` -> ``"p_ab12"``); the one place that parses them."""
    return sentence.rsplit(":", 1)[0]


def entity_id(label: str, canonical: str) -> str:
    """Entity id from NER label and canonical surface (one node per (label, canonical))."""
    return "e_" + _digest(f"{label}\t{canonical}")


@dataclass(frozen=True)
class Paragraph:
    """One corpus unit (a document paragraph or a chunk of a long document).

    ``sentences`` is set when the source format already splits text into sentences
    (HotpotQA, 2Wiki); the build then keeps them verbatim and never re-splits.
    ``text`` is always the full paragraph text (sentences joined when preset).
    """

    id: str
    title: str
    text: str
    sentences: tuple[str, ...] | None = None
    source: str = ""  # original document id / file name, for provenance


@dataclass(frozen=True)
class QAItem:
    """One question with every accepted answer string and whatever gold evidence the format has.

    ``answers``: gold answer first, then aliases (deduplicated, order kept); may be empty
    for question-only files. ``gold_sentence_ids`` use :func:`sentence_id`;
    ``gold_paragraph_ids`` use :func:`paragraph_id`.
    """

    id: str
    question: str
    answers: tuple[str, ...]
    dataset: str
    gold_sentence_ids: tuple[str, ...] = ()
    gold_paragraph_ids: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "answers": list(self.answers),
            "dataset": self.dataset,
            "gold_sentence_ids": list(self.gold_sentence_ids),
            "gold_paragraph_ids": list(self.gold_paragraph_ids),
            "meta": self.meta,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "QAItem":
        return cls(
            id=str(obj["id"]),
            question=str(obj["question"]),
            answers=tuple(obj.get("answers", ())),
            dataset=str(obj.get("dataset", "")),
            gold_sentence_ids=tuple(obj.get("gold_sentence_ids", ())),
            gold_paragraph_ids=tuple(obj.get("gold_paragraph_ids", ())),
            meta=dict(obj.get("meta", {})),
        )


@dataclass(frozen=True)
class Dataset:
    """What a reader yields: the deduplicated corpus and the QA items over it."""

    name: str
    paragraphs: tuple[Paragraph, ...]
    questions: tuple[QAItem, ...]


@dataclass(frozen=True)
class Mention:
    """An entity mention found by NER inside one sentence (character offsets into the sentence)."""

    surface: str
    label: str
    start: int
    end: int
