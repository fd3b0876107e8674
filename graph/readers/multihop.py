"""Readers for formats with sentence-split contexts and sentence-level gold:
HotpotQA (distractor setting) and 2WikiMultiHopQA.

Both ship ``context`` as ``[[title, [sentence, ...]], ...]`` and ``supporting_facts`` as
``[[title, sent_id], ...]`` with ``sent_id`` a 0-based index into that title's sentences.

Paragraph text convention: each sentence is stripped (HotpotQA keeps the original leading
space on every sentence but the first; 2Wiki has none), ``sentences`` is the tuple of
stripped sentences *at their original positions* (an empty sentence stays as ``""`` so
dataset indices remain valid), and ``text`` is the non-empty stripped sentences joined by
one space. The same rule for both formats means the same paragraph gets the same id
however its sentences were spaced. These paragraphs are never chunked: the gold ids point
at sentence positions.

Split repair (:func:`join_continuations`): both datasets' splitters break after a "!" or "?"
inside a title ("Hello Caesar!" / "is a 1927 German silent comedy film directed by ..."), after
an abbreviation ("Mid." / "ii."), inside parentheses ("A Day of Roses in August (German: Ein Tag
der" / "Rosen" / "im August) is a 1927 German silent film ...") or after a colon in a lead
("Thought Crimes:" / "The Case of the Cannibal Cop is a 2015 ..."): breaks that the paper's
"abbreviation- and initial-safe rules" (appendix "Graph construction") would not make. With
``join_fragments`` (``BuildConfig.join_fragments``, an extension; off in the paper preset) such a fragment
(:func:`continues`) is joined onto the sentence before it (its own position becomes ``""``) and
a gold index on it points at the joined sentence: the unit is the whole statement, whose title
and predicate would otherwise be two sentences neither of which states the fact alone. The
paragraph's ``text`` (and so its id) is unchanged.
"""
from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any

from harness_g.graph.readers.common import (
    ParagraphPool,
    QuestionIds,
    Record,
    dedup_strings,
    finish,
    iter_json_array,
    take,
)
from harness_g.graph.types import Dataset, QAItem, sentence_id


def read_hotpotqa(
    path: Path, *, limit: int | None = None, chunk_tokens: int = 1200, chunk_overlap: int = 100,
    join_fragments: bool = False,
) -> Dataset:
    """HotpotQA distractor JSON (one array). Meta: ``type``, ``level``, ``skipped_supporting_facts``.

    ``chunk_tokens`` / ``chunk_overlap`` are accepted for a uniform reader signature and
    ignored: preset sentences are never re-split. ``join_fragments``: :func:`join_continuations`.
    """
    return _read_multihop(path, "hotpotqa", limit, ("type", "level"), join_fragments)


def read_2wiki(
    path: Path, *, limit: int | None = None, chunk_tokens: int = 1200, chunk_overlap: int = 100,
    join_fragments: bool = False,
) -> Dataset:
    """2WikiMultiHopQA JSON (one array). Meta: ``type``, ``evidences``, ``entity_ids``,
    ``evidences_id``, ``answer_id``, ``skipped_supporting_facts``. Chunk options are ignored;
    ``join_fragments``: :func:`join_continuations`."""
    return _read_multihop(
        path, "2wiki", limit, ("type", "evidences", "entity_ids", "evidences_id", "answer_id"), join_fragments
    )


def _read_multihop(path: Path, name: str, limit: int | None, meta_fields: tuple[str, ...],
                   join_fragments: bool) -> Dataset:
    pool = ParagraphPool()
    ids = QuestionIds()
    questions: list[QAItem] = []
    for rec in take(iter_json_array(path), limit):
        questions.append(_question(rec, name, pool, ids, meta_fields, join_fragments))
    return finish(name, path, pool, questions, needs_paragraphs=False, needs_questions=True)


def _question(
    rec: Record, name: str, pool: ParagraphPool, ids: QuestionIds, meta_fields: tuple[str, ...], join_fragments: bool
) -> QAItem:
    qid = ids.explicit(str(rec.require("_id", (str, int))), rec)
    question = rec.require("question", str)
    answer = rec.require("answer", str)

    # title -> (paragraph id, sentence count); the first paragraph of a title wins
    # (2Wiki repeats a few titles inside one context, always with identical text).
    by_title: dict[str, tuple[str, tuple[int, ...]]] = {}
    for k, item in enumerate(rec.require("context", list)):
        title, sentences = _context_item(rec, k, item)
        stripped = tuple(s.strip() for s in sentences)
        owner = tuple(range(len(stripped)))
        if join_fragments:
            stripped, owner = join_continuations(stripped)
        text = " ".join(s for s in stripped if s)
        if not text:  # nothing to index; a supporting fact on it is counted as skipped
            continue
        pid = pool.add(title, text, sentences=stripped, source=title, error=rec.error)
        by_title.setdefault(title, (pid, owner))

    gold_sents: list[str] = []
    gold_paras: list[str] = []
    skipped = 0
    for k, fact in enumerate(rec.require("supporting_facts", list)):
        title, sent = _fact(rec, k, fact)
        if title not in by_title:
            skipped += 1
            continue
        pid, owner = by_title[title]
        if pid not in gold_paras:
            gold_paras.append(pid)
        if not 0 <= sent < len(owner):
            skipped += 1  # the paragraph is still gold; the sentence index is not usable
            continue
        sid = sentence_id(pid, owner[sent])
        if sid not in gold_sents:
            gold_sents.append(sid)

    meta = {f: rec.data[f] for f in meta_fields if f in rec.data}
    meta["skipped_supporting_facts"] = skipped
    return QAItem(
        id=qid,
        question=question,
        answers=dedup_strings([answer]),
        dataset=name,
        gold_sentence_ids=tuple(gold_sents),
        gold_paragraph_ids=tuple(gold_paras),
        meta=meta,
    )


#: how many following sentences may close a parenthesis a sentence leaves open; a paren the dataset never closes
#: ('Adventure" (1964, the sequel to ...') must not glue the rest of the paragraph into one sentence
PAREN_LOOKAHEAD = 2


def continues(sentences: tuple[str, ...], head: int, i: int, joined_head: str) -> bool:
    """True when the splitter should not have ended sentence ``head`` (now ``joined_head``) before sentence ``i``.

    ``sentences`` are stripped; ``sentences[i]`` is non-empty and ``head`` is the last non-empty position before
    it. A continuation starts in lower case ("is a 1927 German silent film ...") or with "(" (a lead's dates after
    the name), follows a paragraph's first sentence that ends with ":" (a title "Thought Crimes:"), or lies inside
    a parenthesis ``joined_head`` left open that closes within :data:`PAREN_LOOKAHEAD` non-empty sentences ("A Day of Roses
    in August (German: Ein Tag der" / "Rosen" / "im August) is a 1927 German silent film ...").
    """
    s = sentences[i]
    if s[0].islower() or s[0] == "(" or (head == 0 and joined_head.endswith(":")):
        return True
    depth = joined_head.count("(") - joined_head.count(")")  # parentheses the head leaves open
    if depth <= 0:
        return False
    for later in islice((t for t in sentences[i:] if t), PAREN_LOOKAHEAD):
        depth += later.count("(") - later.count(")")
        if depth <= 0:
            return True
    return False


def join_continuations(sentences: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Join each sentence that :func:`continues` the non-empty sentence before it onto that sentence.

    ``sentences`` are stripped. Returns ``(joined, owner)``, both of ``len(sentences)``: ``joined[i]``
    is ``""`` where sentence ``i`` was joined onto an earlier one, and ``owner[i]`` is the position
    whose sentence now holds sentence ``i``'s text (``i`` itself when it was not joined). Joining with
    one space keeps ``" ".join(non-empty)`` identical, so the paragraph text does not change.
    """
    joined = list(sentences)
    owner = list(range(len(sentences)))
    head = -1  # position of the last non-empty sentence
    for i, s in enumerate(sentences):
        if not s:
            continue
        if head >= 0 and continues(sentences, head, i, joined[head]):
            joined[head] = f"{joined[head]} {s}"
            joined[i] = ""
            owner[i] = head
        else:
            head = i
    return tuple(joined), tuple(owner)


def _context_item(rec: Record, k: int, item: Any) -> tuple[str, list[str]]:
    label = f"context[{k}]"
    if not (isinstance(item, list) and len(item) == 2):
        raise rec.error(f"field {label!r} must be [title, [sentence, ...]], got {_short(item)}")
    title = rec.check(f"{label}[0]", item[0], str)
    sentences = rec.check(f"{label}[1]", item[1], list)
    for j, s in enumerate(sentences):
        rec.check(f"{label}[1][{j}]", s, str)
    return title, sentences


def _fact(rec: Record, k: int, fact: Any) -> tuple[str, int]:
    label = f"supporting_facts[{k}]"
    if not (isinstance(fact, list) and len(fact) == 2):
        raise rec.error(f"field {label!r} must be [title, sent_id], got {_short(fact)}")
    return rec.check(f"{label}[0]", fact[0], str), rec.check(f"{label}[1]", fact[1], int)


def _short(value: Any, n: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."
