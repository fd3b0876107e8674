"""Readers for question-only JSON Lines files (no passages; the corpus comes from elsewhere):
TriviaQA (``{id, question, answers}``) and a generic ``{id?, question, answers? | answer?}``.
"""
from __future__ import annotations

from pathlib import Path

from harness_g.errors import InputError
from harness_g.graph.readers.common import (
    ParagraphPool,
    QuestionIds,
    Record,
    dedup_strings,
    file_stem,
    finish,
    iter_jsonl,
    short_hash,
    take,
)
from harness_g.graph.types import Dataset, QAItem


def read_triviaqa(
    path: Path, *, limit: int | None = None, chunk_tokens: int = 1200, chunk_overlap: int = 100
) -> Dataset:
    """TriviaQA JSONL (``id``, ``question``, ``answers`` list; ``question_id`` → meta).
    Yields zero paragraphs; chunk options are ignored."""
    ids = QuestionIds()
    questions: list[QAItem] = []
    for rec in take(iter_jsonl(path), limit):
        qid = ids.explicit(str(rec.require("id", (str, int))), rec)
        meta = {"question_id": rec.data["question_id"]} if "question_id" in rec.data else {}
        questions.append(
            QAItem(
                id=qid,
                question=rec.require("question", str),
                answers=dedup_strings(rec.string_list("answers")),
                dataset="triviaqa",
                meta=meta,
            )
        )
    return finish("triviaqa", path, ParagraphPool(), questions, needs_paragraphs=False, needs_questions=True)


def read_questions(
    path: Path, *, limit: int | None = None, chunk_tokens: int = 1200, chunk_overlap: int = 100
) -> Dataset:
    """Generic question JSONL: ``question`` (required), ``id`` (optional; default ``q_`` +
    sha1(question)[:12]), ``answers`` list and/or ``answer`` string (optional; ``answer``
    first). The dataset name is the file stem. Yields zero paragraphs.

    A file in which no row has ``answers`` or ``answer`` is refused naming the fields its rows have (a FlashRAG
    file's ``golden_answers`` would otherwise be lost and every score be None): give ``"answers": []`` to mean
    "no answers" on purpose, or read FlashRAG files with ``--format flashrag``."""
    name = file_stem(path)
    ids = QuestionIds()
    seen: set[str] = set()
    questions = []
    for rec in take(iter_jsonl(path), limit):
        seen.update(rec.data)
        questions.append(_generic_question(rec, name, ids))
    if questions and not seen & set(ANSWER_FIELDS):
        raise InputError(f"no row has an answer field ({' or '.join(ANSWER_FIELDS)}); the rows' fields are "
                         f"{', '.join(sorted(seen))}{_hint(seen)}", str(path))
    return finish(name, path, ParagraphPool(), questions, needs_paragraphs=False, needs_questions=True)


#: the fields the generic ``questions`` format reads answers from
ANSWER_FIELDS = ("answers", "answer")


def _hint(fields: set[str]) -> str:
    """What to use instead, for answer fields of known layouts."""
    if "golden_answers" in fields:
        return " (a FlashRAG / Search-R1 file: use --format flashrag)"
    if "possible_answers" in fields:
        return " (a PopQA file: use --format popqa)"
    return ""


def _generic_question(rec: Record, name: str, ids: QuestionIds) -> QAItem:
    question = rec.require("question", str)
    if rec.has("id"):
        qid = ids.explicit(str(rec.require("id", (str, int))), rec)
    else:
        qid = ids.derived("q_" + short_hash(question), rec)
    answers = dedup_strings([rec.get("answer", str, ""), *rec.string_list("answers", required=False)])
    return QAItem(id=qid, question=question, answers=answers, dataset=name)
