"""The named-query registry: every Cypher statement the stores run lives in ``cypher/``.

``load_query(name, dialect)`` returns ``cypher/<dialect>/<name>.cypher`` when that file
exists, else the shared ``cypher/<name>.cypher``. Query text is never assembled from data:
values travel only as ``$parameters``. Each file opens with a ``//`` comment block that
states what it does, its parameters with types, what it returns and its ordering.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from harness_g.errors import StoreError

if TYPE_CHECKING:
    from importlib.abc import Traversable

PACKAGE = "harness_g.cypher"
DIALECTS = ("falkordb", "neo4j")
SUFFIX = ".cypher"


def _names_in(folder: Traversable) -> set[str]:
    return {p.name[: -len(SUFFIX)] for p in folder.iterdir() if p.is_file() and p.name.endswith(SUFFIX)}


def _check_dialect(dialect: str) -> None:
    if dialect not in DIALECTS:
        raise StoreError(f"unknown Cypher dialect {dialect!r}; known: {', '.join(DIALECTS)}")


@lru_cache(maxsize=None)
def list_queries(dialect: str) -> tuple[str, ...]:
    """Every query name available to ``dialect`` (shared files plus its overrides), sorted."""
    _check_dialect(dialect)
    root = resources.files(PACKAGE)
    return tuple(sorted(_names_in(root) | _names_in(root / dialect)))


@lru_cache(maxsize=None)
def load_query(name: str, dialect: str) -> str:
    """Text of query ``name`` for ``dialect`` (the dialect's override wins over the shared file)."""
    _check_dialect(dialect)
    root = resources.files(PACKAGE)
    for candidate in (root / dialect / f"{name}{SUFFIX}", root / f"{name}{SUFFIX}"):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise StoreError(f"unknown query {name!r} for {dialect}; known: {', '.join(list_queries(dialect))}")


def query_source(name: str, dialect: str) -> str:
    """Which file ``load_query`` reads, relative to ``cypher/`` (for messages and tests)."""
    load_query(name, dialect)  # raises on unknown names
    if (resources.files(PACKAGE) / dialect / f"{name}{SUFFIX}").is_file():
        return f"{dialect}/{name}{SUFFIX}"
    return f"{name}{SUFFIX}"


def split_statements(text: str) -> list[str]:
    """Split a multi-statement file on ``;`` (schema files); whole-line ``//`` comments are dropped first
    because a comment may itself contain a semicolon."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    return [stmt.strip() for stmt in body.split(";") if stmt.strip()]
