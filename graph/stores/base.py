"""The store protocol: the only way code above ``graph/`` touches a graph database.

Callers run *named* queries (files in ``cypher/``) with parameters and get plain row
dicts back; they never see a driver object. Two implementations share the traversal
queries verbatim: :mod:`falkordb_store` (embedded default) and :mod:`neo4j_store`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from harness_g.graph.artifact import Artifact


@dataclass
class LoadReport:
    """What a load did: rows sent per table, seconds per stage, whether it was a no-op."""

    skipped: bool = False
    rows: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class CypherResult:
    """A free-form query's result for display: column names and rows (lists of values)."""

    columns: list[str]
    rows: list[list[Any]]


class GraphStore(ABC):
    """A loaded graph database. Implementations must be safe to call from one thread at a time."""

    #: dialect name, selects ``cypher/<dialect>/`` overrides: ``"falkordb"`` or ``"neo4j"``
    dialect: str = ""

    @abstractmethod
    def query(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run the named read query ``cypher/[<dialect>/]<name>.cypher``; rows as dicts keyed by RETURN alias."""

    @abstractmethod
    def run_cypher(self, text: str, params: Mapping[str, Any] | None = None) -> CypherResult:
        """Run a user-supplied query read-only (writes are refused by the database); for ``harness-g cypher``."""

    @abstractmethod
    def vector_top_k(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """Top-k sentences by cosine similarity to ``vector`` (dim = graph's embedding dim).

        Returns ``[(sentence_id, cosine)]`` best first, cosine in [-1, 1], ties by id.
        """

    @abstractmethod
    def load(self, artifact: Artifact, *, batch_size: int = 2000, progress: bool = True) -> LoadReport:
        """Load an artifact idempotently (MERGE on ids); a no-op when the same content hash is loaded and complete."""

    @abstractmethod
    def loaded_hash(self) -> str | None:
        """Content hash of the completely loaded artifact, or None if empty / partially loaded."""

    @abstractmethod
    def stats(self) -> dict[str, Any]:
        """Counts of each node label and relationship type, lookup-able entities, and index state."""

    @abstractmethod
    def index_state(self) -> dict[str, str]:
        """Index name -> state (e.g. ``"ONLINE"``/``"OPERATIONAL"``, ``"POPULATING"``, ``"MISSING"``)."""

    @abstractmethod
    def wait_for_indexes(self, timeout_s: float = 300.0) -> None:
        """Block until the vector index is queryable; raise StoreError on timeout."""

    @abstractmethod
    def close(self) -> None:
        """Release connections (and stop the embedded server if this process started it)."""

    def __enter__(self) -> "GraphStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
