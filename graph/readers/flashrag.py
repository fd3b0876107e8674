"""FlashRAG / Search-R1 JSON Lines files (RUC-NLPIR/FlashRAG's README, "Datasets" and "Document Corpus"):

- a **question file** (one split of a FlashRAG dataset, e.g. ``hotpotqa/dev.jsonl``), one row per question:
  ``{"id": str, "question": str, "golden_answers": [str, ...], "metadata": {...}}``;
- a **corpus** (e.g. the wiki-18 passages Search-R1 retrieves from), one row per document:
  ``{"id": str, "contents": "\\"Title\\"\\ntext"}``. FlashRAG takes the first line of ``contents`` as the title
  and the rest as the text (``format_reference`` in ``flashrag/prompt/base_prompt.py``); Search-R1's wiki-18
  corpus writes the title in double quotes, which are removed here. Other keys are allowed (FlashRAG: "the corpus
  file can also contain other keys"); a chunked corpus's own ``title`` key, when present, is the title.

``read_flashrag`` reads either; the first row decides which (``question`` → questions, ``contents`` → corpus) and
every later row must have the same layout. A question row without ``golden_answers`` or a corpus row without
``contents`` is refused naming the fields it has; a repeated corpus id keeps the first document, with one warning
per file (as the ``jsonl`` corpus does).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from harness_g.graph.readers.common import (
    DocumentIds,
    ParagraphPool,
    QuestionIds,
    Record,
    add_document,
    dedup_strings,
    file_stem,
    finish,
    iter_jsonl,
    short_hash,
    take,
)
from harness_g.graph.types import Dataset, QAItem

log = logging.getLogger(__name__)

#: file stems that name a split, not a dataset (FlashRAG stores ``<dataset>/<split>.jsonl``)
SPLIT_NAMES = frozenset({"train", "dev", "test", "val", "valid", "validation"})


def read_flashrag(
    path: Path, *, limit: int | None = None, chunk_tokens: int = 1200, chunk_overlap: int = 100
) -> Dataset:
    """A FlashRAG question file or corpus (module docstring) → Dataset. ``limit``: the first N rows.

    Questions: ``id`` (string or integer; default ``q_`` + sha1(question)[:12]), ``question``, ``golden_answers``
    (strings; numbers are written as text), ``metadata`` → ``QAItem.meta``; the dataset name is the file stem, or
    ``<folder>-<split>`` for a split file such as ``hotpotqa/dev.jsonl``. Corpus: one paragraph per row (chunked
    above ``chunk_tokens`` whitespace tokens), ``source`` = its id (default ``<stem>:<line>``)."""
    name = dataset_name(path)
    pool = ParagraphPool()
    questions: list[QAItem] = []
    ids, docs = QuestionIds(), DocumentIds()
    layout: str | None = None
    for rec in take(iter_jsonl(path), limit):
        kind = _layout(rec)
        if layout is None:
            layout = kind
        elif kind != layout:
            raise rec.error(f"a FlashRAG {kind} row in a file of {layout} rows (line 1 decided); "
                            "give questions with --format flashrag and a corpus with --corpus flashrag:FILE")
        if kind == "questions":
            questions.append(_question(rec, name, ids))
        else:
            _document(rec, name, pool, docs, chunk_tokens, chunk_overlap)
    docs.warn(path, log)
    return finish(name, path, pool, questions, needs_paragraphs=layout == "corpus", needs_questions=layout != "corpus")


def dataset_name(path: Path) -> str:
    """``hotpotqa-dev`` for ``.../hotpotqa/dev.jsonl``, else the file stem."""
    stem = file_stem(path)
    parent = path.resolve().parent.name
    return f"{parent}-{stem}" if stem.lower() in SPLIT_NAMES and parent else stem


def _layout(rec: Record) -> str:
    """``questions`` or ``corpus`` by the row's keys; InputError naming the keys when it is neither."""
    if "question" in rec.data:
        return "questions"
    if "contents" in rec.data:
        return "corpus"
    raise rec.error(f"not a FlashRAG row: a question row has 'question' and 'golden_answers', a corpus row "
                    f"'contents'; this one has {_fields(rec)}")


def _fields(rec: Record) -> str:
    return ", ".join(repr(k) for k in sorted(rec.data)) or "no fields"


def _question(rec: Record, name: str, ids: QuestionIds) -> QAItem:
    question = rec.require("question", str)
    if "golden_answers" not in rec.data:
        raise rec.error(f"FlashRAG question row without 'golden_answers' (its fields: {_fields(rec)})")
    if rec.has("id"):
        qid = ids.explicit(rec.check_text("id", str(rec.require("id", (str, int)))), rec)
    else:
        qid = ids.derived("q_" + short_hash(question), rec)
    raw = rec.require("golden_answers", list)
    answers = [str(rec.check(f"golden_answers[{i}]", a, (str, int, float))) for i, a in enumerate(raw)]
    meta: dict[str, Any] = rec.get("metadata", dict, {})
    return QAItem(id=qid, question=question, answers=dedup_strings(answers), dataset=name, meta=dict(meta))


def split_contents(contents: str, title: str | None = None) -> tuple[str, str]:
    """``(title, text)`` of a FlashRAG ``contents``: the first line (one pair of surrounding double quotes removed)
    and the rest. With an explicit ``title`` (a chunked corpus's key), the first line is dropped only when it is
    that title; otherwise the whole ``contents`` is the text. No newline: no title, the whole is the text."""
    first, newline, rest = contents.partition("\n")
    head = first.strip()
    if len(head) >= 2 and head[0] == head[-1] == '"':
        head = head[1:-1].strip()
    if title is not None:
        return (title, rest) if newline and head == title.strip() else (title, contents)
    return (head, rest) if newline else ("", contents)


def _document(rec: Record, name: str, pool: ParagraphPool, docs: DocumentIds, chunk_tokens: int,
              chunk_overlap: int) -> None:
    contents = rec.require("contents", str)
    doc_id = rec.check_text("id", str(rec.get("id", (str, int), f"{name}:{rec.line}")))
    title, text = split_contents(contents, rec.get("title", str, None))
    title = title or doc_id
    if docs.first(doc_id, title, text, rec):
        add_document(pool, title, text, doc_id, chunk_tokens, chunk_overlap, rec.error)
