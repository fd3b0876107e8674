"""Readers for single-hop open-domain formats that ship passages with each question:
NQ-open in the DPR/FiD ``ctxs`` layout, and PopQA in the HippoRAG-2 ``paragraphs`` layout.

Passages carry no sentence split and are chunked above ``chunk_tokens`` whitespace tokens
(every chunk of a gold passage is gold).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_g.graph.readers.common import (
    ParagraphPool,
    QuestionIds,
    Record,
    add_document,
    dedup_strings,
    finish,
    iter_json_array,
    iter_jsonl,
    short_hash,
    take,
)
from harness_g.graph.types import Dataset, QAItem


def read_nq(
    path: Path, *, limit: int | None = None, chunk_tokens: int = 1200, chunk_overlap: int = 100
) -> Dataset:
    """NQ-open JSONL with ``ctxs`` → Dataset.

    There is no id field: the id is ``nq_`` + sha1(question)[:12] (stable under reordering).
    Gold passages: ctxs with ``isgold`` true; when no ctx has an ``isgold`` key (plain DPR
    retrieval files), those with ``hasanswer`` / ``has_answer`` true instead. A ctx's
    ``title`` is optional (DPR files sometimes omit it). Meta: ``gold_title`` and
    ``short_answers`` from ``nq_annotated_gold`` when present.
    """
    pool = ParagraphPool()
    ids = QuestionIds()
    questions = [_nq_question(rec, pool, ids, chunk_tokens, chunk_overlap) for rec in take(iter_jsonl(path), limit)]
    return finish("nq", path, pool, questions, needs_paragraphs=False, needs_questions=True)


def _nq_question(rec: Record, pool: ParagraphPool, ids: QuestionIds, chunk_tokens: int, chunk_overlap: int) -> QAItem:
    question = rec.require("question", str)
    qid = ids.explicit(rec.check_text("id", str(rec.data["id"])), rec) if rec.has("id") else ids.derived("nq_" + short_hash(question), rec)
    answers = dedup_strings(rec.string_list("answers"))
    ctxs = rec.objects("ctxs", required=False)
    # isgold is the annotated passage; hasanswer is only a string match, so it decides
    # only for files without isgold.
    gold_key = "isgold" if any("isgold" in c.data for c in ctxs) else None
    gold: list[str] = []
    for ctx in ctxs:
        title = ctx.get("title", str, "")
        source = ctx.check_text("id", str(ctx.data["id"])) if ctx.has("id") else title
        pids = add_document(pool, title, ctx.require("text", str), source, chunk_tokens, chunk_overlap, ctx.error)
        if gold_key:
            is_gold = ctx.get(gold_key, bool, False)
        else:
            is_gold = ctx.get("hasanswer", bool, False) or ctx.get("has_answer", bool, False)
        if is_gold:
            gold.extend(p for p in pids if p not in gold)
    meta: dict[str, Any] = {}
    annotated = rec.get("nq_annotated_gold", dict)
    if annotated:
        meta["gold_title"] = annotated.get("title")
        meta["short_answers"] = annotated.get("short_answers")
    return QAItem(id=qid, question=question, answers=answers, dataset="nq", gold_paragraph_ids=tuple(gold), meta=meta)


_POPQA_META = ("subj", "prop", "obj", "subj_id", "prop_id", "obj_id", "s_wiki_title", "o_wiki_title", "s_pop", "o_pop")


def read_popqa(
    path: Path, *, limit: int | None = None, chunk_tokens: int = 1200, chunk_overlap: int = 100
) -> Dataset:
    """PopQA JSON array with ``paragraphs`` [{title, text, is_supporting}] → Dataset.

    Answers: ``obj`` (the canonical Wikidata object) first, then the JSON-decoded
    ``possible_answers`` (a JSON-encoded string in the HippoRAG-2 file; a plain list is also
    accepted). Gold paragraphs: ``is_supporting``. Meta: the triple and popularity columns.
    """
    pool = ParagraphPool()
    ids = QuestionIds()
    questions = [
        _popqa_question(rec, pool, ids, chunk_tokens, chunk_overlap) for rec in take(iter_json_array(path), limit)
    ]
    return finish("popqa", path, pool, questions, needs_paragraphs=False, needs_questions=True)


def _popqa_question(
    rec: Record, pool: ParagraphPool, ids: QuestionIds, chunk_tokens: int, chunk_overlap: int
) -> QAItem:
    qid = ids.explicit(str(rec.require("id", (str, int))), rec)
    question = rec.require("question", str)
    answers = dedup_strings([rec.get("obj", str, ""), *_possible_answers(rec)])
    gold: list[str] = []
    for para in rec.objects("paragraphs"):
        title = para.require("title", str)
        pids = add_document(pool, title, para.require("text", str), title, chunk_tokens, chunk_overlap, para.error)
        if para.get("is_supporting", bool, False):
            gold.extend(p for p in pids if p not in gold)
    meta = {f: rec.data[f] for f in _POPQA_META if f in rec.data}
    return QAItem(id=qid, question=question, answers=answers, dataset="popqa", gold_paragraph_ids=tuple(gold), meta=meta)


def _possible_answers(rec: Record) -> list[str]:
    raw = rec.require("possible_answers", (str, list))
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise rec.error(f"field 'possible_answers' is not a JSON-encoded list ({e.msg})") from None
        if not isinstance(raw, list):
            raise rec.error("field 'possible_answers' must encode a JSON list of strings")
    for k, a in enumerate(raw):
        rec.check(f"possible_answers[{k}]", a, str)
    return raw
