"""Split long texts into overlapping windows (the paper: 1,200-token chunks, 100-token overlap).

Unit: a *token* here is a maximal run of non-whitespace characters (``str.split()``), not
a model tokenizer's subword. That keeps the build independent of any tokenizer and makes
chunk boundaries reproducible; 1,200 whitespace tokens is roughly 1,500-1,600 subword
tokens of English Wikipedia text.

Chunks are slices of the original string (from the first character of their first token
to the last character of their last token), so newlines and spacing inside a chunk are kept.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from harness_g.errors import InputError

DEFAULT_CHUNK_TOKENS = 1200
DEFAULT_CHUNK_OVERLAP = 100

_TOKEN = re.compile(r"\S+")


def count_tokens(text: str) -> int:
    """Number of whitespace tokens in ``text``."""
    return sum(1 for _ in _TOKEN.finditer(text))


def check_chunk_params(max_tokens: int, overlap: int) -> None:
    """InputError unless ``1 <= max_tokens`` and ``0 <= overlap < max_tokens``."""
    if max_tokens < 1:
        raise InputError(f"chunk size must be at least 1 token, got {max_tokens}")
    if overlap < 0 or overlap >= max_tokens:
        raise InputError(f"chunk overlap must be in [0, {max_tokens - 1}] tokens, got {overlap}")


def chunk_text(
    text: str, max_tokens: int = DEFAULT_CHUNK_TOKENS, overlap: int = DEFAULT_CHUNK_OVERLAP
) -> list[str]:
    """Split ``text`` into windows of at most ``max_tokens`` whitespace tokens.

    Consecutive windows share exactly ``overlap`` tokens (the last ``overlap`` tokens of one
    are the first ``overlap`` of the next); the window start advances by
    ``max_tokens - overlap`` tokens and the last window ends at the last token, so no window
    lies wholly inside its predecessor. A text of at most ``max_tokens`` tokens is returned
    unchanged as the only element; an all-whitespace text yields ``[]``.
    """
    check_chunk_params(max_tokens, overlap)
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if not spans:
        return []
    if len(spans) <= max_tokens:
        return [text]
    step = max_tokens - overlap
    chunks: list[str] = []
    start = 0
    while True:
        end = min(start + max_tokens, len(spans))
        chunks.append(text[spans[start][0] : spans[end - 1][1]])
        if end == len(spans):
            return chunks
        start += step


@dataclass(frozen=True)
class Chunk:
    """One piece of a document: its text and provenance (``doc`` or ``doc#chunk k``, k 0-based)."""

    text: str
    source: str


def chunk_document(text: str, source: str, max_tokens: int, overlap: int) -> list[Chunk]:
    """Chunks of one document's (stripped) text; ``source`` gains ``#chunk k`` only when it was split."""
    pieces = chunk_text(text.strip(), max_tokens, overlap)
    if len(pieces) == 1:
        return [Chunk(pieces[0], source)]
    return [Chunk(piece, f"{source}#chunk {k}") for k, piece in enumerate(pieces)]
