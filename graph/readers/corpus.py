"""Readers for plain corpora without questions: a JSON Lines file of documents and a folder
of ``.txt`` / ``.md`` files. Long texts are chunked (see :mod:`.chunking`)."""
from __future__ import annotations

import re
from pathlib import Path

from harness_g.errors import InputError
from harness_g.graph.readers.common import (
    ParagraphPool,
    add_document,
    file_stem,
    finish,
    iter_jsonl,
    read_text,
    require_dir,
    take,
)
from harness_g.graph.types import Dataset

FOLDER_SUFFIXES = (".txt", ".md")

_BLANK_LINES = re.compile(r"\n(?:[ \t]*\n)+")
_MD_TITLE = re.compile(r"#[ \t]+(?P<title>.+?)(?:[ \t]+#+)?[ \t]*")  # ATX level-1 heading


def read_jsonl_corpus(
    path: Path, *, limit: int | None = None, chunk_tokens: int = 1200, chunk_overlap: int = 100
) -> Dataset:
    """JSONL documents ``{id?, title?, text}`` → Dataset without questions.

    ``text`` is required. ``id`` (string or integer) defaults to ``<file stem>:<line>``;
    ``title`` defaults to the id. Each document is one paragraph, or several chunks
    (``source`` = ``<id>#chunk k``) when longer than ``chunk_tokens`` whitespace tokens.
    ``limit`` = first N documents. The dataset name is the file stem.
    """
    name = file_stem(path)
    pool = ParagraphPool()
    for rec in take(iter_jsonl(path), limit):
        text = rec.require("text", str)
        doc_id = str(rec.get("id", (str, int), f"{name}:{rec.line}"))
        title = rec.get("title", str, None) or doc_id
        add_document(pool, title, text, doc_id, chunk_tokens, chunk_overlap)
    return finish(name, path, pool, [], needs_paragraphs=True, needs_questions=False)


def read_folder(
    path: Path, *, limit: int | None = None, chunk_tokens: int = 1200, chunk_overlap: int = 100
) -> Dataset:
    """A directory of ``.txt`` / ``.md`` files (recursive; hidden files and folders skipped;
    sorted by relative path) → Dataset without questions.

    One document per file, split into paragraphs on blank lines; each paragraph longer than
    ``chunk_tokens`` whitespace tokens is chunked. Title = file stem, except that a ``.md``
    file whose first non-blank line is a level-1 ``# heading`` takes that heading as title
    (and the heading is not part of the text). ``source`` = path relative to the folder
    (``#chunk k`` appended for chunks). ``limit`` = first N files. Dataset name = folder name.
    """
    root = require_dir(path)
    files = list_folder(root)
    if not files:
        raise InputError(f"no paragraphs found (no {' or '.join(FOLDER_SUFFIXES)} files)", str(root))
    pool = ParagraphPool()
    for file in take(files, limit):
        title, body = split_title(file, read_text(file).replace("\r\n", "\n"))
        rel = file.relative_to(root).as_posix()
        for para in _BLANK_LINES.split(body):
            add_document(pool, title, para, rel, chunk_tokens, chunk_overlap)
    return finish(root.name or "folder", root, pool, [], needs_paragraphs=True, needs_questions=False)


def list_folder(root: Path) -> list[Path]:
    """The ``.txt`` / ``.md`` files under ``root`` (any depth), hidden ones skipped, sorted by relative path."""
    files = []
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if p.suffix.lower() in FOLDER_SUFFIXES and p.is_file():
            files.append(p)
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def split_title(file: Path, text: str) -> tuple[str, str]:
    """(title, body) of one file: a leading ``# heading`` of a ``.md`` file, else the file stem."""
    if file.suffix.lower() == ".md":
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if line.strip():
                m = _MD_TITLE.fullmatch(line.strip())
                if m:
                    return m.group("title"), "\n".join(lines[i + 1 :])
                break
    return file.stem, text
