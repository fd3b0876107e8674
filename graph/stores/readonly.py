"""What a user's query may do through ``GraphStore.run_cypher`` (``harness-g cypher``, ``harness-g browse``): read the
graph, and nothing else.

Both databases refuse writes in a read transaction (Neo4j) / ``GRAPH.RO_QUERY`` (FalkorDB), but neither refuses
``LOAD CSV``, which reads files on the database host and fetches URLs, nor procedures, which can do anything their
plugin does (APOC's ``apoc.load.*``, ``dbms.*``). So each query is checked twice before it runs:

1. its text, split into Cypher tokens (``//`` and ``/* */`` comments, string literals and backquoted names are
   understood; case and whitespace do not matter): ``LOAD CSV`` anywhere, and the name after each ``CALL`` that
   opens no subquery;
2. the database's own plan of it (Neo4j ``EXPLAIN``, FalkorDB ``GRAPH.EXPLAIN``): a ``LoadCSV`` / ``Load CSV``
   operator, and each ``ProcedureCall`` operator. Neo4j names the procedure in the operator's details; FalkorDB
   does not, so there the number of ``ProcedureCall`` operators must equal the number of calls the text scan found.

Every procedure must be in :data:`ALLOWED_PROCEDURES` (schema and index look-ups, compared case-insensitively).
A refused query raises :class:`QueryRefused`, one line naming what was refused.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from harness_g.errors import StoreError

#: read-only procedures a user's query may call, per dialect: schema, index look-ups, procedure listings
ALLOWED_PROCEDURES: dict[str, tuple[str, ...]] = {
    "neo4j": (
        "db.labels", "db.relationshipTypes", "db.propertyKeys", "db.indexes", "db.constraints",
        "db.schema.visualization", "db.schema.nodeTypeProperties", "db.schema.relTypeProperties",
        "db.index.vector.queryNodes", "db.index.fulltext.queryNodes", "db.index.fulltext.queryRelationships",
    ),
    "falkordb": (
        "db.labels", "db.relationshipTypes", "db.propertyKeys", "db.indexes", "db.constraints", "db.meta.stats",
        "db.idx.vector.queryNodes", "db.idx.fulltext.queryNodes", "db.idx.fulltext.queryRelationships",
        "dbms.procedures", "dbms.functions",
    ),
}
#: clause keywords that may follow a variable named ``call`` (``WITH 1 AS call RETURN call``): not procedure names
_CLAUSE_WORDS = frozenset({
    "RETURN", "WITH", "MATCH", "OPTIONAL", "WHERE", "ORDER", "SKIP", "LIMIT", "UNION", "UNWIND", "CALL", "AS",
    "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "FOREACH", "LOAD", "USE", "YIELD", "AND", "OR", "XOR",
    "NOT", "IN", "IS", "ON", "DESC", "ASC", "DESCENDING", "ASCENDING", "FINISH", "FILTER", "LET", "NEXT", "OFFSET",
})


class QueryRefused(StoreError):
    """A user's query asked for more than reading the graph (LOAD CSV, a procedure outside the allow-list)."""


@dataclass
class Token:
    """One Cypher token: ``kind`` is ``word`` (unquoted name or keyword), ``name`` (backquoted), ``string``,
    ``param``, ``number`` or ``punct``; ``text`` is the word, the name without backquotes, or the character."""

    kind: str
    text: str


@dataclass
class Scan:
    """What the text scan found: whether LOAD CSV appears, and the procedures called (dotted names, in order)."""

    load_csv: bool = False
    procedures: list[str] = field(default_factory=list)


_WORD = re.compile(r"[^\W\d]\w*", re.UNICODE)
_NUMBER = re.compile(r"\d[\w.]*")


def _skip_quoted(text: str, start: int, quote: str) -> tuple[str, int]:
    """The content of a quoted run that opens at ``start``, and the index after it (backslash escapes; a backquote
    is escaped by doubling). An unterminated run ends at the end of the text."""
    out, i = [], start + 1
    while i < len(text):
        ch = text[i]
        if quote != "`" and ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if ch == quote:
            if quote == "`" and text.startswith("``", i):
                out.append("`")
                i += 2
                continue
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    return "".join(out), i


def tokens(text: str) -> list[Token]:
    """Cypher ``text`` as tokens, without whitespace and comments."""
    found: list[Token] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
        elif ch in "'\"":
            value, i = _skip_quoted(text, i, ch)
            found.append(Token("string", value))
        elif ch == "`":
            value, i = _skip_quoted(text, i, ch)
            found.append(Token("name", value))
        elif ch == "$":
            match = _WORD.match(text, i + 1) or _NUMBER.match(text, i + 1)
            i = match.end() if match else i + 1
            found.append(Token("param", match.group(0) if match else ""))
        elif (match := _WORD.match(text, i)) is not None:
            found.append(Token("word", match.group(0)))
            i = match.end()
        elif (match := _NUMBER.match(text, i)) is not None:
            found.append(Token("number", match.group(0)))
            i = match.end()
        else:
            found.append(Token("punct", ch))
            i += 1
    return found


def _is_name(token: Token) -> bool:
    return token.kind in ("word", "name")


def _procedure_at(toks: Sequence[Token], start: int) -> str | None:
    """The dotted procedure name that starts at ``toks[start]`` (right after a CALL), or None when none does."""
    if start >= len(toks) or not _is_name(toks[start]):
        return None  # CALL { ... } / CALL (x) { ... }: a subquery
    first = toks[start]
    if first.kind == "word" and first.text.upper() in _CLAUSE_WORDS:
        return None  # `... AS call RETURN call`: a variable named call (the plan check still sees a real call)
    parts, i = [first.text], start + 1
    while i + 1 < len(toks) and toks[i].text == "." and toks[i].kind == "punct" and _is_name(toks[i + 1]):
        parts.append(toks[i + 1].text)
        i += 2
    return ".".join(parts)


def scan(text: str) -> Scan:
    """Find ``LOAD CSV`` and the procedure calls in Cypher ``text`` (see the module doc)."""
    toks = tokens(text)
    result = Scan()
    for i, tok in enumerate(toks):
        if tok.kind != "word":
            continue
        word = tok.text.upper()
        if word == "LOAD" and i + 1 < len(toks) and toks[i + 1].kind == "word" and toks[i + 1].text.upper() == "CSV":
            result.load_csv = True
        elif word == "CALL" and not (i > 0 and toks[i - 1].kind == "punct" and toks[i - 1].text in ".:"):
            name = _procedure_at(toks, i + 1)
            if name is not None:
                result.procedures.append(name)
    return result


def _allowed(dialect: str) -> dict[str, str]:
    return {name.lower(): name for name in ALLOWED_PROCEDURES[dialect]}


def _refuse_procedure(name: str, dialect: str) -> QueryRefused:
    return QueryRefused(f"read-only query refused: procedure {name!r} is not allowed (no file, network or admin "
                        f"access); allowed: {', '.join(ALLOWED_PROCEDURES[dialect])}")


LOAD_CSV_REFUSED = ("read-only query refused: LOAD CSV reads files and fetches URLs on the database host "
                    "(load data with `harness-g build`)")


def check_text(text: str, dialect: str) -> Scan:
    """Refuse ``LOAD CSV`` and procedures outside the allow-list by the text alone; returns the scan."""
    found = scan(text)
    if found.load_csv:
        raise QueryRefused(LOAD_CSV_REFUSED)
    allowed = _allowed(dialect)
    for name in found.procedures:
        if name.lower() not in allowed:
            raise _refuse_procedure(name, dialect)
    return found


def _operator(name: str) -> str:
    """``"LoadCSV@neo4j"`` / ``"Load CSV"`` -> ``"loadcsv"``."""
    return name.split("@", 1)[0].replace(" ", "").lower()


def check_plan(found: Scan, operators: Iterable[tuple[str, str | None]], dialect: str) -> None:
    """Refuse by the database's plan: ``operators`` are (operator name, its procedure name or None when the database
    does not say). A LOAD CSV operator is refused; named procedures must be allowed; unnamed ones must match the
    text scan in number (else the text hid a call, and the query is refused)."""
    allowed = _allowed(dialect)
    unnamed = 0
    for op, procedure in operators:
        kind = _operator(op)
        if kind == "loadcsv":
            raise QueryRefused(LOAD_CSV_REFUSED)
        if kind != "procedurecall":
            continue
        if procedure is None:
            unnamed += 1
        elif procedure.lower() not in allowed:
            raise _refuse_procedure(procedure, dialect)
    if unnamed > len(found.procedures):
        raise QueryRefused(f"read-only query refused: the database plans {unnamed} procedure call(s) but the text "
                           f"names {len(found.procedures)} ({', '.join(found.procedures) or 'none'}); write each "
                           "call as CALL name(...)")


def neo4j_operators(plan: dict | None) -> list[tuple[str, str | None]]:
    """A Neo4j plan tree (``ResultSummary.plan``) as (operator type, procedure name for a ProcedureCall) in tree order;
    the name is the text before ``(`` in the operator's ``Details`` (``"db.labels() :: (label :: STRING)"``)."""
    out: list[tuple[str, str | None]] = []
    stack = [plan] if plan else []
    while stack:
        node = stack.pop()
        op = str(node.get("operatorType", ""))
        procedure = None
        if _operator(op) == "procedurecall":
            details = str((node.get("args") or {}).get("Details", ""))
            procedure = details.split("(", 1)[0].replace("`", "").strip() or "?"
        out.append((op, procedure))
        stack.extend(reversed(list(node.get("children") or [])))
    return out


def falkordb_operators(lines: Sequence[str]) -> list[tuple[str, str | None]]:
    """A FalkorDB ``GRAPH.EXPLAIN`` reply (one indented line per operator, ``"Name | details"``) as (operator, None)."""
    return [(line.strip().split("|", 1)[0].strip(), None) for line in lines if line.strip()]
