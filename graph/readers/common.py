"""Shared plumbing for readers: opening files, streaming JSON / JSON Lines records,
typed field access with one-line :class:`InputError` messages, and paragraph dedup.

Error messages name the file and where inside it the problem is:

- JSON Lines: ``path:LINE: msg`` (LINE is the 1-based physical line);
- JSON arrays: ``path: record N: msg`` (N is the 0-based index in the array), and for
  syntax errors also the 1-based line and column of the JSON decoder.

Text rules, the same for every reader (checked while reading, before anything is built or
any old graph is touched):

- **Characters a graph store cannot hold are rejected, not stripped**: C0 control characters
  other than tab, newline and carriage return (U+0000-U+0008, U+000B, U+000C, U+000E-U+001F),
  lone surrogates (U+D800-U+DFFF, e.g. from a JSON ``"\ud800"`` escape) and the non-characters
  U+FFFE / U+FFFF. Any string field of a JSON record (:meth:`Record.check`, so ids, titles,
  texts, sentences, questions, answers) and the text of a folder file is checked; the error
  names the file, the line (record for JSON arrays), the field, the character and its position.
  Rejecting keeps the text, its ids and gold pointers exactly as given; fix the input instead.
- **A paragraph may hold at most** :data:`MAX_PARAGRAPH_CHARS` **characters after chunking**
  (chunking cuts at whitespace every ``chunk_tokens`` tokens, so only a run of text with too
  little whitespace can exceed it). spaCy refuses texts over 1,000,000 characters and needs
  about 1 GB per 100,000; such a paragraph is rejected naming file and line.

What is read is bounded: an input must be a regular file (``/dev/zero``, a FIFO or a socket is
refused before anything is read), a JSON Lines line or a JSON array record may hold at most
:data:`MAX_RECORD_BYTES` bytes (read at most that far, then refused naming file and line), and
JSON nested deeper than Python's decoder can follow is refused naming the file and line instead
of ending in ``RecursionError``.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness_g.errors import InputError
from harness_g.graph.readers.chunking import chunk_document
from harness_g.graph.types import Dataset, Paragraph, QAItem, paragraph_id

T = TypeVar("T")

# Human names for JSON value types in "must be X, got Y" messages.
_JSON_TYPE_NAMES: dict[type, str] = {
    dict: "object",
    list: "list",
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def json_type_name(value: Any) -> str:
    """JSON-ish name of ``value``'s type (``object``, ``list``, ``string``, ...)."""
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


# ---------------------------------------------------------------------------- text rules

#: characters no graph store takes: C0 controls but \t \n \r, lone surrogates, U+FFFE and U+FFFF
_UNSTORABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_CONTROL_NAMES = {0: "NUL", 7: "BEL", 8: "BACKSPACE", 0x0B: "VERTICAL TAB", 0x0C: "FORM FEED", 0x1B: "ESC"}

#: the most characters one paragraph (chunk) may hold; see the module docstring
MAX_PARAGRAPH_CHARS = 100_000

#: the most bytes one JSON Lines line (or characters one JSON array record) may hold: 32 MiB, far above any
#: dataset's record (an NQ line with 100 passages is ~70 KB); a longer one is refused unread past this
MAX_RECORD_BYTES = 32 * 2**20


def unstorable_char(text: str) -> tuple[int, str] | None:
    """``(position, description)`` of the first character of ``text`` a graph store cannot hold, else None."""
    m = _UNSTORABLE.search(text)
    if m is None:
        return None
    code = ord(m.group())
    if code < 0x20:
        kind = f"control character {_CONTROL_NAMES.get(code, 'U+%04X' % code)}"
        kind += f" (U+{code:04X})" if code in _CONTROL_NAMES else ""
    elif 0xD800 <= code <= 0xDFFF:
        kind = f"lone surrogate U+{code:04X}"
    else:
        kind = f"non-character U+{code:04X}"
    return m.start(), kind


def text_problem(text: str, where: str | None = None) -> str | None:
    """One-line reason why ``text`` cannot be stored (see the module docstring), else None.
    ``where`` replaces the default ``at character N`` (0-based offset in ``text``)."""
    found = unstorable_char(text)
    if found is None:
        return None
    pos, kind = found
    return (f"holds {kind} {where or f'at character {pos}'}, which a graph store cannot hold "
            "(control characters other than tab/newline/CR, lone surrogates, U+FFFE/U+FFFF are refused); remove it")


def check_text_file(path: Path, text: str) -> str:
    """``text`` (a whole file) unchanged, or InputError at the line of its first unstorable character."""
    found = unstorable_char(text)
    if found is not None:
        pos = found[0]
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        raise InputError(text_problem(text, f"at column {col}") or "", str(path), text.count("\n", 0, pos) + 1)
    return text


def check_paragraph_length(title: str, text: str, error: Callable[[str], InputError] | None = None) -> None:
    """InputError (made by ``error``, which locates it) when a paragraph exceeds :data:`MAX_PARAGRAPH_CHARS`."""
    if len(text) <= MAX_PARAGRAPH_CHARS:
        return
    longest = max((len(t) for t in text.split()), default=0)
    name = title if len(title) <= 40 else title[:37] + "..."
    message = (f"paragraph {name!r} has {len(text)} characters after chunking (limit {MAX_PARAGRAPH_CHARS}; its longest "
               f"run without whitespace has {longest}): break the text up with whitespace or remove it")
    raise (error or InputError)(message)


# ---------------------------------------------------------------------------- paths


def require_file(path: str | Path) -> Path:
    """``path`` as a Path, or InputError if it is missing or not a regular file (a device such as
    ``/dev/zero``, a FIFO or a socket would be read without end)."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such file", str(p))
    if p.is_dir():
        raise InputError("is a directory, expected a file", str(p))
    if not p.is_file():
        raise InputError(f"is not a regular file ({_file_kind(p)}); give a file on disk", str(p))
    return p


def _file_kind(p: Path) -> str:
    """A name for what non-regular file ``p`` is."""
    mode = p.stat().st_mode
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def require_dir(path: str | Path) -> Path:
    """``path`` as a Path, or InputError if it is missing or not a directory."""
    p = Path(path)
    if not p.exists():
        raise InputError("no such directory", str(p))
    if not p.is_dir():
        raise InputError("is a file, expected a directory", str(p))
    return p


def file_stem(path: Path) -> str:
    """File name without ``.gz`` / ``.jsonl`` / ``.json`` suffixes (a dataset name for generic formats)."""
    name = path.name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name or path.name


def read_text(path: Path) -> str:
    """Whole file as UTF-8 text (a BOM is tolerated; ``.gz`` files are decompressed);
    a bad byte becomes an InputError naming its line."""
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError) as e:  # e.g. unreadable, or a corrupt .gz
        raise InputError(f"cannot read: {e}", str(path)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError("not UTF-8 text", str(path), data.count(b"\n", 0, e.start) + 1) from None


# ---------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Record:
    """One JSON object from an input file plus where it came from, with checked field access.

    ``line`` is set for JSON Lines (1-based), ``index`` for JSON arrays (0-based);
    ``prefix`` names a nested object (``"paragraphs[3]."``) in error messages.
    """

    data: dict[str, Any]
    path: str
    line: int | None = None
    index: int | None = None
    prefix: str = ""

    # -- errors

    def error(self, message: str) -> InputError:
        """An InputError located at this record."""
        if self.line is not None:
            return InputError(message, self.path, self.line)
        if self.index is not None:
            return InputError(f"record {self.index}: {message}", self.path)
        return InputError(message, self.path)

    # -- typed field access

    def has(self, name: str) -> bool:
        return name in self.data and self.data[name] is not None

    def get(self, name: str, kind: type | tuple[type, ...], default: Any = None) -> Any:
        """Optional field ``name`` (missing or null → ``default``), type-checked against ``kind``."""
        if not self.has(name):
            return default
        return self.check(name, self.data[name], kind)

    def require(self, name: str, kind: type | tuple[type, ...]) -> Any:
        """Required field ``name``, type-checked against ``kind``."""
        if name not in self.data:
            raise self.error(f"missing field {self.prefix + name!r}")
        return self.check(name, self.data[name], kind)

    def check(self, label: str, value: Any, kind: type | tuple[type, ...]) -> Any:
        """``value`` if it is an instance of ``kind`` (bool is never accepted as int), else InputError."""
        kinds = kind if isinstance(kind, tuple) else (kind,)
        ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
        if not ok:
            want = " or ".join(_JSON_TYPE_NAMES.get(k, k.__name__) for k in kinds)
            raise self.error(f"field {self.prefix + label!r} must be {want}, got {json_type_name(value)}")
        if isinstance(value, str):
            self.check_text(label, value)
        return value

    def check_text(self, label: str, value: str) -> str:
        """``value`` unchanged, or InputError when it holds a character a graph store cannot hold."""
        problem = text_problem(value)
        if problem:
            raise self.error(f"field {self.prefix + label!r} {problem}")
        return value

    def objects(self, name: str, *, required: bool = True) -> list["Record"]:
        """Field ``name`` as a list of objects, each wrapped as a nested Record for error messages."""
        value = self.require(name, list) if required else self.get(name, list, [])
        out = []
        for k, item in enumerate(value):
            label = f"{name}[{k}]"
            self.check(label, item, dict)
            out.append(Record(item, self.path, self.line, self.index, f"{self.prefix}{label}."))
        return out

    def string_list(self, name: str, *, required: bool = True) -> list[str]:
        """Field ``name`` as a list of strings (missing → [] when not required)."""
        value = self.require(name, list) if required else self.get(name, list, [])
        for i, item in enumerate(value):
            self.check(f"{name}[{i}]", item, str)
        return value


def iter_jsonl(path: Path) -> Iterator[Record]:
    """Stream the objects of a JSON Lines file one line at a time (blank lines are skipped).

    A line over :data:`MAX_RECORD_BYTES` is refused after reading that much of it."""
    spath = str(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        # Binary lines decoded one by one, so a bad byte is reported at its own line.
        with opener(path, "rb") as fh:
            for lineno, raw in enumerate(iter(lambda: fh.readline(MAX_RECORD_BYTES + 1), b""), start=1):
                if len(raw) > MAX_RECORD_BYTES and not raw.endswith(b"\n"):
                    raise InputError(f"line is longer than {MAX_RECORD_BYTES} bytes, the limit for one record "
                                     "(is this a JSON Lines file?)", spath, lineno)
                try:
                    line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                except UnicodeDecodeError:
                    raise InputError("not UTF-8 text", spath, lineno) from None
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    raise InputError(_decode_message(e, line), spath, lineno) from None
                except RecursionError:
                    raise InputError(TOO_DEEP, spath, lineno) from None
                if not isinstance(obj, dict):
                    raise InputError(f"expected a JSON object, got {json_type_name(obj)}", spath, lineno)
                yield Record(obj, spath, line=lineno)
    except (OSError, EOFError) as e:  # e.g. a corrupt .gz
        raise InputError(f"cannot read: {e}", spath) from None


#: the message for JSON nested deeper than the decoder's recursion limit
TOO_DEEP = "malformed JSON: nested too deeply (thousands of levels of arrays/objects)"


def _json_error(text: str, spath: str, msg: str, pos: int, index: int | None) -> InputError:
    """The one-line error for malformed JSON at character ``pos`` of ``text`` (its line and column), in record
    ``index`` of the array (None: outside any record)."""
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    where = f"record {index}: " if index is not None else ""
    return InputError(f"{where}malformed JSON: {msg} (column {col})", spath, line)


def _check_array_start(text: str, i: int, decoder: json.JSONDecoder, spath: str) -> None:
    """Refuse a file whose first non-blank character (at ``i``) does not open a JSON array, naming what it holds."""
    if i == len(text):
        raise InputError("empty file, expected a JSON array", spath)
    if text[i] != "[":
        try:
            top = decoder.raw_decode(text, i)[0]
            got = json_type_name(top)
        except json.JSONDecodeError:
            got = "invalid JSON"
        except RecursionError:
            got = "JSON nested too deeply"
        raise InputError(f"expected a JSON array of records, got {got}", spath)


def iter_json_array(path: Path) -> Iterator[Record]:
    """Yield the objects of a file holding one JSON array, decoding one element at a time.

    The file text is read once; elements are decoded lazily so a ``limit`` stops early and a
    syntax error can be reported with the index of the record it occurs in.
    """
    spath = str(path)
    text = read_text(path)
    decoder = json.JSONDecoder()
    n = len(text)

    def skip_ws(i: int) -> int:
        while i < n and text[i] in " \t\r\n":
            i += 1
        return i

    def fail(msg: str, pos: int, index: int | None) -> InputError:
        return _json_error(text, spath, msg, pos, index)

    i = skip_ws(0)
    _check_array_start(text, i, decoder, spath)
    i = skip_ws(i + 1)
    index = 0
    if i < n and text[i] == "]":
        return
    while True:
        if i >= n:
            raise fail("unexpected end of file (truncated?)", n, index)
        start = i
        try:
            obj, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError as e:
            if _ran_out(e, text):
                raise fail("unexpected end of file (truncated?)", n, index) from None
            raise fail(e.msg, e.pos, index) from None
        except RecursionError:
            raise fail(TOO_DEEP.removeprefix("malformed JSON: "), start, index) from None
        if i - start > MAX_RECORD_BYTES:
            raise fail(f"record is {i - start} characters long, over the limit of {MAX_RECORD_BYTES} for one record",
                       start, index)
        if not isinstance(obj, dict):
            raise InputError(f"record {index}: expected a JSON object, got {json_type_name(obj)}", spath)
        yield Record(obj, spath, index=index)
        index += 1
        i = skip_ws(i)
        if i >= n:
            raise fail("unexpected end of file (truncated?)", n, index)
        if text[i] == "]":
            if skip_ws(i + 1) != n:
                raise fail("extra data after the array", skip_ws(i + 1), None)
            return
        if text[i] != ",":
            raise fail("expected ',' or ']' after a record", i, index - 1)
        i = skip_ws(i + 1)


def _decode_message(e: json.JSONDecodeError, line: str) -> str:
    end = len(line.rstrip("\r\n"))
    if _ran_out(e, line):
        return f"malformed JSON: unexpected end of line (truncated?) (column {end + 1})"
    return f"malformed JSON: {e.msg} (column {e.colno})"


def _ran_out(e: json.JSONDecodeError, doc: str) -> bool:
    """Whether decoding failed because the input ended (a truncated file), not on a bad token."""
    # An unterminated string always runs to the end of the input: JSON strings cannot hold raw newlines.
    return e.pos >= len(doc.rstrip()) or e.msg.startswith("Unterminated string")


def take(records: Iterable[T], limit: int | None) -> Iterator[T]:
    """The first ``limit`` items of ``records`` (all when ``limit`` is None), stopping early."""
    if limit is None:
        yield from records
        return
    for k, rec in enumerate(records):
        if k >= limit:
            return
        yield rec


# ---------------------------------------------------------------------------- building


def dedup_strings(values: Iterable[str]) -> tuple[str, ...]:
    """Strip, drop empties and exact duplicates, keep first-seen order (case variants are kept)."""
    seen: dict[str, None] = {}
    for v in values:
        v = v.strip()
        if v and v not in seen:
            seen[v] = None
    return tuple(seen)


def short_hash(text: str, n: int = 12) -> str:
    """First ``n`` hex digits of sha1(text) — for ids of records that carry none."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:n]


class ParagraphPool:
    """Collects paragraphs in first-seen order, merging identical (title, text) pairs into one.

    The first occurrence wins for ``sentences`` and ``source`` (duplicates share the id, so
    gold ids that point at either copy stay valid).
    """

    def __init__(self) -> None:
        self._by_id: dict[str, Paragraph] = {}

    def add(self, title: str, text: str, *, sentences: tuple[str, ...] | None = None, source: str = "",
            error: Callable[[str], InputError] | None = None) -> str:
        """Add one paragraph (``error`` locates an InputError for a paragraph over :data:`MAX_PARAGRAPH_CHARS`)."""
        check_paragraph_length(title, text, error)
        pid = paragraph_id(title, text)
        if pid not in self._by_id:
            self._by_id[pid] = Paragraph(id=pid, title=title, text=text, sentences=sentences, source=source)
        return pid

    def __len__(self) -> int:
        return len(self._by_id)

    def paragraphs(self) -> tuple[Paragraph, ...]:
        return tuple(self._by_id.values())


def add_document(
    pool: ParagraphPool, title: str, text: str, source: str, chunk_tokens: int, chunk_overlap: int,
    error: Callable[[str], InputError] | None = None,
) -> list[str]:
    """Add one passage without preset sentences, chunked when longer than ``chunk_tokens``
    whitespace tokens; returns the paragraph ids (one per chunk, none for blank text).
    ``error`` (e.g. ``rec.error``) locates the InputError for a chunk over :data:`MAX_PARAGRAPH_CHARS`."""
    return [pool.add(title, c.text, source=c.source, error=error)
            for c in chunk_document(text, source, chunk_tokens, chunk_overlap)]


class QuestionIds:
    """Hands out unique question ids: a repeated explicit id is an error, a repeated
    derived id (hash of the question text) gets ``-2``, ``-3``, ... appended."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def explicit(self, qid: str, rec: Record) -> str:
        if qid in self._seen:
            raise rec.error(f"duplicate question id {qid!r} (first seen at {self._seen[qid]})")
        self._seen[qid] = _where(rec)
        return qid

    def derived(self, base: str, rec: Record) -> str:
        qid, k = base, 1
        while qid in self._seen:
            k += 1
            qid = f"{base}-{k}"
        self._seen[qid] = _where(rec)
        return qid


class DocumentIds:
    """First-wins bookkeeping of corpus document ids: :meth:`first` says whether a document is the first with its
    id; :meth:`warn` then logs one line for the file counting the later ones, which are skipped (and how many of
    them had a different title or text), so a repeated id is never dropped without a word."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[int | None, str, str]] = {}  # doc id -> (line, title, text) of the kept document
        self._repeats: list[tuple[str, int | None, int | None, bool]] = []  # (id, kept line, skipped line, differs)

    def first(self, doc_id: str, title: str, text: str, rec: Record) -> bool:
        """True for the first document with ``doc_id``; False (recorded for :meth:`warn`) for a later one."""
        kept = self._kept.get(doc_id)
        if kept is None:
            self._kept[doc_id] = (rec.line, title, text)
            return True
        self._repeats.append((doc_id, kept[0], rec.line, kept[1:] != (title, text)))
        return False

    def warn(self, path: Path, logger: Any) -> None:
        """One warning line on ``logger`` for ``path`` when any id repeated (nothing when none did)."""
        if not self._repeats:
            return
        differing = [d for d in self._repeats if d[3]]
        example = (differing or self._repeats)[0]
        logger.warning(
            "%s: %d document(s) repeat an earlier id (%d distinct id(s)), %d of them with a different title or text; "
            "the first document with each id is kept, the later ones are skipped (e.g. id %r: line %s kept, line %s skipped)",
            path, len(self._repeats), len({d[0] for d in self._repeats}), len(differing), example[0], example[1], example[2],
        )


def _where(rec: Record) -> str:
    return f"line {rec.line}" if rec.line is not None else f"record {rec.index}"


def finish(
    name: str, path: Path, pool: ParagraphPool, questions: list[QAItem], *, needs_paragraphs: bool, needs_questions: bool
) -> Dataset:
    """Assemble the Dataset, refusing empty inputs with a one-line error."""
    if needs_questions and not questions:
        raise InputError("no questions found", str(path))
    if needs_paragraphs and len(pool) == 0:
        raise InputError("no paragraphs found", str(path))
    return Dataset(name=name, paragraphs=pool.paragraphs(), questions=tuple(questions))
