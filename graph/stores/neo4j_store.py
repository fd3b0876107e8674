"""Neo4j 5 implementation of :class:`GraphStore` (official driver, optional backend).

Traversal queries are the same files FalkorDB runs; ``cypher/neo4j/`` overrides schema,
vector index, ``vector_top_k``, ``load_sentences`` and ``list_indexes``. Named queries and
free-form ``run_cypher`` run in managed *read* transactions, so Neo4j itself refuses writes;
loads run batched ``UNWIND $rows`` MERGEs in write transactions.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from neo4j import READ_ACCESS, Driver, GraphDatabase, ManagedTransaction
from neo4j import exceptions as neo4j_errors
from neo4j.graph import Node, Path, Relationship

from harness_g.errors import StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.base import CypherResult, GraphStore, LoadReport
from harness_g.graph.stores.loader import Rows, graph_stats, load_protocol, utc_now
from harness_g.graph.stores.queries import load_query, split_statements
from harness_g.graph.stores.schema import (
    LOAD_INDEX_TIMEOUT_S,
    MISSING,
    RANGE_INDEXES,
    TIE_MARGIN,
    VECTOR_INDEX,
)

READY = "ONLINE"
CLEAR_BATCH = 10_000  # nodes per delete transaction

#: every named query this store runs (checked against the registry by the dialect test)
NAMED_QUERIES: tuple[str, ...] = (
    "schema", "create_vector_index", "drop_vector_index", "list_indexes", "vector_top_k",
    "meta_begin", "meta_complete", "meta_get", "clear_batch",
    "count_nodes_by_label", "count_relationships_by_type", "count_lookupable_entities",
)

_UNREACHABLE = (
    neo4j_errors.ServiceUnavailable,
    neo4j_errors.SessionExpired,
    neo4j_errors.ConnectionAcquisitionTimeoutError,
    OSError,
)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def f64_param(vec: np.ndarray) -> list[float]:
    """Embedding as Python floats (the driver packs them as 64-bit floats)."""
    return np.asarray(vec, dtype=np.float32).astype(np.float64).ravel().tolist()


def _plain(value: Any) -> Any:
    """Driver graph objects -> JSON-friendly values, for free-form query display."""
    if isinstance(value, Node):
        return {"id": value.element_id, "labels": sorted(value.labels), "properties": _plain(dict(value.items()))}
    if isinstance(value, Relationship):
        return {"id": value.element_id, "type": value.type,
                "src": value.start_node.element_id if value.start_node is not None else None,
                "dst": value.end_node.element_id if value.end_node is not None else None,
                "properties": _plain(dict(value.items()))}
    if isinstance(value, Path):
        return {"nodes": [_plain(n) for n in value.nodes], "edges": [_plain(r) for r in value.relationships]}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class Neo4jStore(GraphStore):
    """A graph in one Neo4j 5 database (``database`` None = the server's default database)."""

    dialect = "neo4j"

    def __init__(self, uri: str, user: str | None = None, password: str | None = None, database: str | None = None,
                 *, connect_timeout_s: float = 10.0):
        self.uri = uri
        self.database = database
        self._vector_index_seen = False
        auth = (user or "neo4j", password or "") if (user or password) else None
        try:
            self._driver: Driver = GraphDatabase.driver(uri, auth=auth, connection_timeout=connect_timeout_s)
        except (neo4j_errors.ConfigurationError, ValueError) as exc:
            raise StoreError(f"invalid Neo4j URI {uri}: {_one_line(exc)}") from exc
        try:
            self._driver.verify_connectivity()
        except neo4j_errors.AuthError as exc:
            self._driver.close()
            raise StoreError(f"Neo4j at {uri} refused the credentials (set NEO4J_USER / NEO4J_PASSWORD): {_one_line(exc)}") from exc
        except (*_UNREACHABLE, neo4j_errors.DriverError, neo4j_errors.Neo4jError) as exc:
            self._driver.close()
            raise StoreError(f"cannot reach Neo4j at {uri}: {_one_line(exc)}") from exc

    @property
    def address(self) -> str:
        return self.uri if self.database is None else f"{self.uri} (database {self.database})"

    # -- execution -------------------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` and translate driver errors into one-line StoreErrors."""
        try:
            return fn()
        except neo4j_errors.AuthError as exc:
            raise StoreError(f"Neo4j at {self.uri} refused the credentials: {_one_line(exc)}") from exc
        except _UNREACHABLE as exc:
            raise StoreError(f"cannot reach Neo4j at {self.uri}: {_one_line(exc)}") from exc
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
            raise StoreError(f"Neo4j {what} failed at {self.address}: {_one_line(exc)}") from exc

    def _read(self, text: str, params: Mapping[str, Any] | None, what: str, *, managed: bool = True
              ) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows of a read; ``managed=False`` runs it auto-commit (SHOW commands) in a READ session."""

        def work(tx: ManagedTransaction) -> tuple[list[str], list[list[Any]]]:
            result = tx.run(text, dict(params or {}))
            return list(result.keys()), [list(record.values()) for record in result]

        def run() -> tuple[list[str], list[list[Any]]]:
            with self._driver.session(database=self.database, default_access_mode=READ_ACCESS) as session:
                if managed:
                    return session.execute_read(work)
                result = session.run(text, dict(params or {}))
                return list(result.keys()), [list(record.values()) for record in result]

        return self._call(what, run)

    def _write(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        text = load_query(name, self.dialect)

        def work(tx: ManagedTransaction) -> list[dict[str, Any]]:
            return [record.data() for record in tx.run(text, dict(params or {}))]

        def run() -> list[dict[str, Any]]:
            with self._driver.session(database=self.database) as session:
                return session.execute_write(work)

        return self._call(f"write {name!r}", run)

    def _write_batch(self, name: str, rows: Rows) -> None:
        self._write(name, {"rows": rows})

    def _auto_commit(self, text: str, params: Mapping[str, Any] | None, what: str) -> None:
        """Schema commands run in their own auto-commit transaction (they cannot share one with writes)."""

        def run() -> None:
            with self._driver.session(database=self.database) as session:
                session.run(text, dict(params or {})).consume()

        self._call(what, run)

    def query(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        columns, rows = self._read(load_query(name, self.dialect), params, f"query {name!r}")
        return [dict(zip(columns, row)) for row in rows]

    def run_cypher(self, text: str, params: Mapping[str, Any] | None = None) -> CypherResult:
        columns, rows = self._read(text, params, "query")
        return CypherResult(columns=columns, rows=[[_plain(v) for v in row] for row in rows])

    # -- vectors ---------------------------------------------------------------------------------
    def vector_top_k(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        if not self._vector_index_seen:
            self._require_vector_index()
        try:
            rows = self.query("vector_top_k", {"vector": f64_param(np.asarray(vector)), "k": int(k) + TIE_MARGIN})
        except StoreError:
            self._vector_index_seen = False
            self._require_vector_index()
            raise
        ranked = sorted(((str(r["id"]), max(-1.0, min(1.0, float(r["similarity"])))) for r in rows),
                        key=lambda p: (-p[1], p[0]))
        return ranked[:k]

    def _require_vector_index(self) -> None:
        if self.index_state().get(VECTOR_INDEX, MISSING) == MISSING:
            raise StoreError(f"vector index {VECTOR_INDEX} is missing in Neo4j at {self.address}; load the graph first (harness-g build)")
        self._vector_index_seen = True

    # -- indexes ---------------------------------------------------------------------------------
    def index_state(self) -> dict[str, str]:
        """Our index names -> ``ONLINE`` | ``POPULATING`` | ``FAILED`` | ``MISSING`` (other indexes are ignored)."""
        states = {name: MISSING for name in sorted([*RANGE_INDEXES.values(), VECTOR_INDEX])}
        columns, rows = self._read(load_query("list_indexes", self.dialect), None, "list_indexes", managed=False)
        for row in (dict(zip(columns, values)) for values in rows):
            if row["name"] in states:
                states[str(row["name"])] = str(row["state"])
        return states

    def wait_for_indexes(self, timeout_s: float = 300.0) -> None:
        deadline = time.monotonic() + timeout_s
        delay = 0.05
        while True:
            states = self.index_state()
            if states[VECTOR_INDEX] == MISSING:
                self._require_vector_index()
            failed = sorted(name for name, state in states.items() if state == "FAILED")
            if failed:
                raise StoreError(f"Neo4j index population failed at {self.address}: {', '.join(failed)} (see SHOW INDEXES)")
            pending = sorted(name for name, state in states.items() if state not in (READY, MISSING))
            if not pending:
                self._vector_index_seen = True
                return
            if time.monotonic() >= deadline:
                raise StoreError(f"Neo4j indexes not ONLINE after {timeout_s:.0f} s: {', '.join(pending)}")
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def _ensure_schema(self) -> None:
        for statement in split_statements(load_query("schema", self.dialect)):
            self._auto_commit(statement, None, "schema statement")

    def _ensure_vector_index(self, dim: int) -> None:
        self._auto_commit(load_query("create_vector_index", self.dialect), {"dim": int(dim)}, "create_vector_index")

    # -- load ------------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any] | None:
        rows = self.query("meta_get")
        return rows[0] if rows else None

    def loaded_hash(self) -> str | None:
        meta = self.meta()
        return str(meta["content_hash"]) if meta and meta.get("complete") is True else None

    def load(self, artifact: Artifact, *, batch_size: int = 2000, progress: bool = True) -> LoadReport:
        return load_protocol(self, artifact, batch_size=batch_size, progress=progress, encode_vector=f64_param,
                             index_timeout_s=LOAD_INDEX_TIMEOUT_S, where=self.address)

    def clear(self) -> None:
        """Delete every node (in batches) and the vector index (the next artifact may have another dimension)."""
        self._vector_index_seen = False
        while True:
            rows = self._write("clear_batch", {"limit": CLEAR_BATCH})
            if not rows or int(rows[0]["deleted"]) == 0:
                break
        self._auto_commit(load_query("drop_vector_index", self.dialect), None, "drop_vector_index")

    # -- inspection ------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        return graph_stats(self, {"backend": "neo4j", "address": self.uri, "database": self.database})

    def close(self) -> None:
        self._driver.close()

    def __repr__(self) -> str:
        return f"Neo4jStore({self.address!r})"
