"""The named-query registry: every Cypher statement the stores run lives in ``cypher/``.

``load_query(name, dialect)`` returns ``cypher/<dialect>/<name>.cypher`` when that file
exists, else the shared ``cypher/<name>.cypher``. Query text is never assembled from data:
values travel only as ``$parameters``. Each file opens with a ``//`` comment block that
states what it does, its parameters with types, what it returns and its ordering.

The same three functions take ``root``: another folder laid out the same way (shared files, ``<dialect>/``
overrides), e.g. ``tests/cypher/``, the queries only tests and benchmarks run; a store runs such a text with
:meth:`~harness_g.graph.stores.base.GraphStore.query_text`. Without ``root``: the package's ``cypher/``, which
holds only what package code runs.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from harness_g.errors import StoreError

if TYPE_CHECKING:
    from importlib.abc import Traversable
    from pathlib import Path

PACKAGE = "harness_g.cypher"
DIALECTS = ("falkordb", "neo4j")
SUFFIX = ".cypher"


def _names_in(folder: Traversable) -> set[str]:
    if not folder.is_dir():  # a folder without overrides for a dialect
        return set()
    return {p.name[: -len(SUFFIX)] for p in folder.iterdir() if p.is_file() and p.name.endswith(SUFFIX)}


def _check_dialect(dialect: str) -> None:
    if dialect not in DIALECTS:
        raise StoreError(f"unknown Cypher dialect {dialect!r}; known: {', '.join(DIALECTS)}")


def _folder(root: Path | None) -> Traversable:
    """The query folder: ``root``, or the package's ``cypher/`` when None."""
    return resources.files(PACKAGE) if root is None else root


@lru_cache(maxsize=None)
def list_queries(dialect: str, root: Path | None = None) -> tuple[str, ...]:
    """Every query name available to ``dialect`` (shared files plus its overrides) in ``root`` (default: the
    package's ``cypher/``), sorted."""
    _check_dialect(dialect)
    folder = _folder(root)
    return tuple(sorted(_names_in(folder) | _names_in(folder / dialect)))


@lru_cache(maxsize=None)
def load_query(name: str, dialect: str, root: Path | None = None) -> str:
    """Text of query ``name`` for ``dialect`` in ``root`` (default: the package's ``cypher/``; the dialect's
    override wins over the shared file)."""
    _check_dialect(dialect)
    folder = _folder(root)
    for candidate in (folder / dialect / f"{name}{SUFFIX}", folder / f"{name}{SUFFIX}"):
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    where = "" if root is None else f" in {root}"
    raise StoreError(f"unknown query {name!r} for {dialect}{where}; known: {', '.join(list_queries(dialect, root))}")


def query_source(name: str, dialect: str, root: Path | None = None) -> str:
    """Which file ``load_query`` reads, relative to ``root`` (default: ``cypher/``; for messages and tests)."""
    load_query(name, dialect, root)  # raises on unknown names
    if (_folder(root) / dialect / f"{name}{SUFFIX}").is_file():
        return f"{dialect}/{name}{SUFFIX}"
    return f"{name}{SUFFIX}"


def split_statements(text: str) -> list[str]:
    """Split a multi-statement file on ``;`` (schema files); whole-line ``//`` comments are dropped first
    because a comment may itself contain a semicolon."""
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
    return [stmt.strip() for stmt in body.split(";") if stmt.strip()]
