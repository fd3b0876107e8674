"""Readers: one per input format, each turning a file (or folder) into a :class:`Dataset`.

Public API:

- :data:`FORMATS` — registry ``name → ReaderSpec`` (reader, one-line description, whether the
  format carries passages and/or questions); :func:`describe_formats` renders it for ``--help``.
- :func:`read_dataset` — read any format, with ``limit`` and chunking options.
- :func:`load_questions` — only the QA items of a question-bearing format.
- :func:`detect_format` — best-effort guess of a path's format.
- :func:`chunk_text` — the whitespace-token chunker used for long passages.

Every reader deduplicates paragraphs (identical title + text → one :class:`Paragraph`, id from
:func:`~harness_g.graph.types.paragraph_id`) and raises :class:`~harness_g.errors.InputError`
with a one-line message naming the file and line / record for bad input. Text no graph store can
hold (NUL and other C0 controls but tab/newline/CR, lone surrogates, U+FFFE/U+FFFF) and paragraphs
over ``MAX_PARAGRAPH_CHARS`` characters after chunking are rejected that way, by every reader
(the rules live in :mod:`.common`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness_g.errors import InputError
from harness_g.graph.readers.chunking import (
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_TOKENS,
    check_chunk_params,
    chunk_text,
    count_tokens,
)
from harness_g.graph.readers.common import iter_json_array, iter_jsonl, require_file
from harness_g.graph.readers.corpus import read_folder, read_jsonl_corpus
from harness_g.graph.readers.flashrag import read_flashrag
from harness_g.graph.readers.multihop import read_2wiki, read_hotpotqa
from harness_g.graph.readers.musique import read_musique
from harness_g.graph.readers.open_domain import read_nq, read_popqa
from harness_g.graph.readers.questions import read_questions, read_triviaqa
from harness_g.graph.types import Dataset, QAItem

__all__ = [
    "FORMATS",
    "ReaderSpec",
    "chunk_text",
    "count_tokens",
    "describe_formats",
    "detect_format",
    "load_questions",
    "read_dataset",
]


class Reader(Protocol):
    def __call__(self, path: Path, *, limit: int | None, chunk_tokens: int, chunk_overlap: int) -> Dataset: ...


@dataclass(frozen=True)
class ReaderSpec:
    """One registered input format."""

    name: str
    read: Reader
    description: str  # one line, for ``harness-g build --help``
    has_passages: bool
    has_questions: bool
    directory: bool = False  # input is a folder rather than a file
    split_repair: bool = False  # the reader takes ``join_fragments`` (the dataset ships its own sentence split)


_SPECS = (
    ReaderSpec("hotpotqa", read_hotpotqa, "HotpotQA distractor JSON array; sentence-level gold", True, True,
               split_repair=True),
    ReaderSpec("2wiki", read_2wiki, "2WikiMultiHopQA JSON array; sentence-level gold", True, True, split_repair=True),
    ReaderSpec("musique", read_musique, "MuSiQue JSONL with 20 paragraphs per question", True, True),
    ReaderSpec("nq", read_nq, "NQ-open JSONL with DPR-style ctxs passages", True, True),
    ReaderSpec("popqa", read_popqa, "PopQA JSON array with paragraphs (HippoRAG-2 layout)", True, True),
    ReaderSpec("triviaqa", read_triviaqa, "TriviaQA JSONL {id, question, answers}; questions only", False, True),
    ReaderSpec("questions", read_questions, "generic JSONL {id?, question, answers?|answer?}; questions only", False, True),
    ReaderSpec("flashrag", read_flashrag, "FlashRAG / Search-R1 JSONL: questions {id, question, golden_answers, "
               "metadata?} (--format) or corpus {id, contents: \"Title\"\\ntext} (--corpus flashrag:FILE)", True, True),
    ReaderSpec("jsonl", read_jsonl_corpus, "generic corpus JSONL {id?, title?, text}; no questions", True, False),
    ReaderSpec("folder", read_folder, "folder of .txt/.md files, paragraphs on blank lines; no questions", True, False, True),
)

FORMATS: dict[str, ReaderSpec] = {s.name: s for s in _SPECS}

# Other spellings accepted by read_dataset (e.g. the shared data folder name).
ALIASES: dict[str, str] = {"2wikimultihopqa": "2wiki", "hotpot": "hotpotqa"}


def describe_formats() -> str:
    """One line per format, for CLI help."""
    width = max(len(n) for n in FORMATS)
    return "\n".join(f"{n:<{width}}  {s.description}" for n, s in FORMATS.items())


def get_spec(fmt: str) -> ReaderSpec:
    """The spec of format ``fmt`` (or an alias), else InputError listing the known formats."""
    spec = FORMATS.get(ALIASES.get(fmt, fmt))
    if spec is None:
        raise InputError(f"unknown format {fmt!r} (known: {', '.join(sorted(FORMATS))})")
    return spec


def read_dataset(
    fmt: str,
    path: str | Path,
    *,
    limit: int | None = None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    join_fragments: bool = False,
) -> Dataset:
    """Read ``path`` in format ``fmt``.

    ``limit``: the first N questions (and only the paragraphs of their contexts) for
    question-bearing formats; the first N documents (JSONL lines / files) for corpus formats.
    ``chunk_tokens`` / ``chunk_overlap``: chunk size and overlap in whitespace tokens for
    passages without preset sentences (see :mod:`.chunking`). ``join_fragments``: for the formats that ship their
    own sentence split (HotpotQA, 2Wiki), join the fragments it leaves onto the sentence they continue
    (``BuildConfig.join_fragments``, :func:`.multihop.join_continuations`); ignored by the other formats.
    """
    spec = get_spec(fmt)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InputError(f"limit must be a positive integer, got {limit!r}")
    check_chunk_params(chunk_tokens, chunk_overlap)
    p = Path(path) if spec.directory else require_file(path)
    options = {"join_fragments": join_fragments} if spec.split_repair else {}
    return spec.read(p, limit=limit, chunk_tokens=chunk_tokens, chunk_overlap=chunk_overlap, **options)


def load_questions(fmt: str, path: str | Path, limit: int | None = None, *,
                   join_fragments: bool = False) -> tuple[QAItem, ...]:
    """The QA items of a question-bearing format (the first ``limit`` when given). ``join_fragments``: as the graph
    the questions are played on was built (its gold sentence ids point at joined sentences there)."""
    spec = get_spec(fmt)
    if not spec.has_questions:
        raise InputError(f"format {spec.name!r} has no questions", str(path))
    return read_dataset(fmt, path, limit=limit, join_fragments=join_fragments).questions


def detect_format(path: str | Path) -> str | None:
    """Best-effort format guess from the path and the keys of its first record; None if unsure.

    A directory is ``folder``. For a JSON array the whole file is read (not decoded), so
    this costs one file read.
    """
    p = Path(path)
    if p.is_dir():
        return "folder"
    if not p.is_file():
        return None
    name = p.name.lower()
    try:
        first = _first_record(p, name)
    except InputError:
        return None
    if first is None:
        return None
    keys = set(first)
    if {"context", "supporting_facts"} <= keys:
        # 2Wiki adds evidence triples and its own question types; HotpotQA has `level`.
        if "evidences" in keys or "2wiki" in name or first.get("type") in _2WIKI_TYPES:
            return "2wiki"
        return "hotpotqa"
    if "paragraphs" in keys and "possible_answers" in keys:
        return "popqa"
    if "paragraphs" in keys and "question" in keys:
        return "musique"
    if "ctxs" in keys and "question" in keys:
        return "nq"
    if "question" in keys and "golden_answers" in keys:
        return "flashrag"
    if "contents" in keys and "text" not in keys:
        return "flashrag"
    if "question" in keys:
        return "triviaqa" if "trivia" in name and "answers" in keys and "id" in keys else "questions"
    if "text" in keys:
        return "jsonl"
    return None


_2WIKI_TYPES = {"compositional", "inference", "bridge_comparison"}


def _first_record(p: Path, name: str) -> dict | None:
    """First object of ``p`` read as JSON Lines or as a JSON array (the likelier one first)."""
    readers = (iter_jsonl, iter_json_array)
    if name.endswith((".json", ".json.gz")):
        readers = (iter_json_array, iter_jsonl)
    for reader in readers:
        try:
            return next(reader(p)).data
        except StopIteration:
            return None
        except InputError:
            continue
    return None
