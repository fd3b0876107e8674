"""Readers for plain corpora without questions: a JSON Lines file of documents and a folder
of ``.txt`` / ``.md`` files. Long texts are chunked (see :mod:`.chunking`).

Text rules (see :mod:`.common`): a character a graph store cannot hold (NUL and other C0
controls but tab/newline/CR, lone surrogates, U+FFFE/U+FFFF) is rejected with an error naming
file and line, and so is a paragraph over ``MAX_PARAGRAPH_CHARS`` characters after chunking.
A document id repeated in a JSONL corpus keeps its first document; later ones are skipped,
with one warning line per file counting them (and how many had a different title or text).
"""
from __future__ import annotations

import logging
import re
from pathlib import Path

from harness_g.errors import InputError
from harness_g.graph.readers.common import (
    DocumentIds,
    ParagraphPool,
    add_document,
    check_text_file,
    file_stem,
    finish,
    iter_jsonl,
    read_text,
    require_dir,
    take,
)
from harness_g.graph.types import Dataset

log = logging.getLogger(__name__)

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
    ``limit`` = first N documents. The dataset name is the file stem. A repeated ``id`` keeps
    the first document with it (later ones are skipped; one warning for the file counts them).
    """
    name = file_stem(path)
    pool = ParagraphPool()
    ids = DocumentIds()
    for rec in take(iter_jsonl(path), limit):
        text = rec.require("text", str)
        doc_id = str(rec.get("id", (str, int), f"{name}:{rec.line}"))
        title = rec.get("title", str, None) or doc_id
        if ids.first(doc_id, title, text, rec):
            add_document(pool, title, text, doc_id, chunk_tokens, chunk_overlap, rec.error)
    ids.warn(path, log)
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
        text = check_text_file(file, read_text(file).replace("\r\n", "\n"))
        title, body = split_title(file, text)
        rel = file.relative_to(root).as_posix()
        first_line = text.count("\n", 0, len(text) - len(body)) + 1  # file line of the body's first line
        start = 0
        for sep in [*_BLANK_LINES.finditer(body), None]:
            end = sep.start() if sep else len(body)
            para = body[start:end]
            line = first_line + body.count("\n", 0, start + len(para) - len(para.lstrip()))  # its first non-blank line
            add_document(pool, title, para, rel, chunk_tokens, chunk_overlap,
                         lambda msg, line=line: InputError(msg, str(file), line))
            start = sep.end() if sep else start
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
