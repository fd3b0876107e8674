"""Reader for MuSiQue (JSON Lines; one record per question with 20 candidate paragraphs).

Record: ``{id, question, answer, answer_aliases, answerable, question_decomposition,
paragraphs: [{idx, title, paragraph_text, is_supporting}]}``. Paragraphs carry no sentence
split; a paragraph longer than ``chunk_tokens`` whitespace tokens is chunked (none in the
official dev set is: the longest has about 300), and every chunk of a supporting paragraph
is gold.
"""
from __future__ import annotations

from pathlib import Path

from harness_g.graph.readers.common import (
    ParagraphPool,
    QuestionIds,
    Record,
    add_document,
    dedup_strings,
    finish,
    iter_jsonl,
    take,
)
from harness_g.graph.types import Dataset, QAItem


def read_musique(
    path: Path, *, limit: int | None = None, chunk_tokens: int = 1200, chunk_overlap: int = 100
) -> Dataset:
    """MuSiQue JSONL → Dataset. Answers: ``answer`` then ``answer_aliases``.
    Meta: ``hops`` (id prefix, e.g. ``2hop``), ``answerable``, ``question_decomposition``."""
    pool = ParagraphPool()
    ids = QuestionIds()
    questions = [_question(rec, pool, ids, chunk_tokens, chunk_overlap) for rec in take(iter_jsonl(path), limit)]
    return finish("musique", path, pool, questions, needs_paragraphs=False, needs_questions=True)


def _question(rec: Record, pool: ParagraphPool, ids: QuestionIds, chunk_tokens: int, chunk_overlap: int) -> QAItem:
    qid = ids.explicit(str(rec.require("id", (str, int))), rec)
    question = rec.require("question", str)
    answers = dedup_strings([rec.require("answer", str), *rec.string_list("answer_aliases", required=False)])
    gold: list[str] = []
    for para in rec.objects("paragraphs"):
        title = para.require("title", str)
        pids = add_document(pool, title, para.require("paragraph_text", str), title, chunk_tokens, chunk_overlap, para.error)
        if para.get("is_supporting", bool, False):
            gold.extend(p for p in pids if p not in gold)
    meta: dict[str, object] = {"hops": qid.split("__", 1)[0] if "__" in qid else ""}
    for f in ("answerable", "question_decomposition"):
        if f in rec.data:
            meta[f] = rec.data[f]
    return QAItem(id=qid, question=question, answers=answers, dataset="musique", gold_paragraph_ids=tuple(gold), meta=meta)
