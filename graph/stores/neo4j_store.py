"""Neo4j 5 implementation of :class:`GraphStore` (official driver 5.x or 6.x; server 5.23 or newer).

Traversal queries are the same files FalkorDB runs; ``cypher/neo4j/`` overrides schema, vector index,
``vector_top_k``, ``load_sentences``, ``list_indexes`` and the queries whose subqueries need Neo4j's
variable-scope ``CALL (x) { … }`` (the importing ``WITH`` form is deprecated since 5.23, and FalkorDB
does not parse the new one). Named queries and free-form ``run_cypher`` run in managed *read*
transactions, so Neo4j itself refuses writes (and ``run_cypher`` refuses LOAD CSV and procedures outside an
allow-list first: :mod:`harness_g.graph.stores.readonly`); loads run batched ``UNWIND $rows`` MERGEs in write
transactions. Every session shares one bookmark manager, so on a ``neo4j://`` cluster a read always
sees this store's earlier writes (a freshly created index is never reported missing by a lagging member).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np
from neo4j import READ_ACCESS, Driver, GraphDatabase, ManagedTransaction
from neo4j import exceptions as neo4j_errors
from neo4j.graph import Node, Path, Relationship

from harness_g.errors import StoreError, one_line
from harness_g.graph.stores.base import CypherResult, GraphStore
from harness_g.graph.stores.queries import load_query
from harness_g.graph.stores.readonly import check_plan, check_text, neo4j_operators
from harness_g.graph.stores.schema import MISSING, RANGE_INDEXES, VECTOR_INDEX

CLEAR_BATCH = 10_000  # nodes per delete transaction
#: neighbours asked of Neo4j's HNSW index per vector query, at least. Neo4j 5 searches with as many
#: candidates as it returns (no ef parameter): asked for k+16 = 36 it missed the exact top-20 on 42/300
#: 2Wiki and 19/300 HotpotQA dev queries (recall@20 0.993 / 0.997); asked for 200 and cut to 20 it
#: matched brute force on 300/300 of both, at about twice the per-call time (benchmarks/results/queries.md).
#: FalkorDB gets the same effect from its ef_runtime = 400.
MIN_VECTOR_CANDIDATES = 200
#: oldest server this store runs on: ``CALL (x) { … }`` subqueries appeared in 5.23 (vector indexes in 5.15)
MIN_SERVER_VERSION = (5, 23)

#: every named query this store runs (checked against the registry by the dialect test)
NAMED_QUERIES: tuple[str, ...] = (
    "schema", "create_vector_index", "drop_index", "list_indexes", "vector_top_k",
    "meta_begin", "meta_complete", "meta_get", "clear_batch",
    "count_nodes_by_label", "count_relationships_by_type", "count_lookupable_entities",
)

#: errors meaning "no server to talk to". ConnectionAcquisitionTimeoutError exists only from driver 6.0,
#: so it is looked up by name: with a 5.x driver the same timeout arrives as a ClientError/DriverError
_UNREACHABLE: tuple[type[BaseException], ...] = tuple(
    getattr(neo4j_errors, name)
    for name in ("ServiceUnavailable", "SessionExpired", "ConnectionAcquisitionTimeoutError")
    if hasattr(neo4j_errors, name)
) + (OSError,)


#: server notifications the driver would log on every run but that mean nothing here: UNRECOGNIZED is
#: "label/property does not exist yet" (every query on an empty database, e.g. the first GraphMeta read),
#: SCHEMA is "index already exists" (each idempotent CREATE … IF NOT EXISTS). DEPRECATION and the rest stay
#: on, so a query Neo4j deprecates is seen (and failed by the tests) rather than hidden.
QUIET_NOTIFICATIONS = ("UNRECOGNIZED", "SCHEMA")


def _notification_filter() -> dict[str, Any]:
    """Driver option silencing :data:`QUIET_NOTIFICATIONS` (named "classifications" from driver 6.0, "categories" before)."""
    import neo4j

    if hasattr(neo4j, "NotificationDisabledClassification"):
        return {"notifications_disabled_classifications": list(QUIET_NOTIFICATIONS)}
    return {"notifications_disabled_categories": list(QUIET_NOTIFICATIONS)}



def f64_param(vec: np.ndarray) -> list[float]:
    """Embedding as Python floats (the driver packs them as 64-bit floats); NaN/inf refused, as on FalkorDB."""
    v = np.asarray(vec, dtype=np.float32).astype(np.float64).ravel()
    if not np.isfinite(v).all():
        raise StoreError("an embedding contains NaN or infinity")
    return v.tolist()


def parse_server_version(agent: str) -> tuple[int, int]:
    """``"Neo4j/5.26.30"`` -> ``(5, 26)``; calendar versions (``"Neo4j/2025.06.0"``) -> ``(2025, 6)``."""
    version = agent.split("/", 1)[-1]
    parts = [int(p) for p in version.split(".")[:2] if p.isdigit()]
    if len(parts) < 2:
        raise StoreError(f"cannot read the Neo4j server version from {agent!r}")
    return parts[0], parts[1]


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
    index_ready_state = "ONLINE"
    _POLL_START_S = 0.05
    _POLL_MAX_S = 1.0

    def __init__(self, uri: str, user: str | None = None, password: str | None = None, database: str | None = None,
                 *, connect_timeout_s: float = 10.0):
        self.uri = uri
        self.database = database
        self.address = uri if database is None else f"{uri} (database {database})"
        self._bookmarks = GraphDatabase.bookmark_manager()
        auth = (user or "neo4j", password or "") if (user or password) else None
        try:
            self._driver: Driver = GraphDatabase.driver(uri, auth=auth, connection_timeout=connect_timeout_s,
                                                        **_notification_filter())
        except (neo4j_errors.ConfigurationError, ValueError) as exc:
            raise StoreError(f"invalid Neo4j URI {uri}: {one_line(exc)}") from exc
        try:
            self._driver.verify_connectivity()
        except neo4j_errors.AuthError as exc:
            self._driver.close()
            raise StoreError(f"Neo4j at {uri} refused the credentials (set NEO4J_USER / NEO4J_PASSWORD): {one_line(exc)}") from exc
        except (*_UNREACHABLE, neo4j_errors.DriverError, neo4j_errors.Neo4jError) as exc:
            self._driver.close()
            raise StoreError(f"cannot reach Neo4j at {uri}: {one_line(exc)}") from exc
        self.server_agent = str(self._driver.get_server_info().agent)
        if parse_server_version(self.server_agent) < MIN_SERVER_VERSION:
            self._driver.close()
            raise StoreError(f"harness-g needs Neo4j {'.'.join(map(str, MIN_SERVER_VERSION))} or newer; "
                             f"{uri} runs {self.server_agent}")

    @property
    def where(self) -> str:
        return f"Neo4j at {self.address}"

    def other_graph_hint(self) -> str:
        return ("give each graph a database of its own: NEO4J_DATABASE=NAME (Neo4j Enterprise), a second Neo4j server "
                "(`harness-g neo4j`), or --store embedded")

    def _session(self, access_mode: str | None = None) -> Any:
        kwargs: dict[str, Any] = {"database": self.database, "bookmark_manager": self._bookmarks}
        if access_mode is not None:
            kwargs["default_access_mode"] = access_mode
        return self._driver.session(**kwargs)

    # -- execution -------------------------------------------------------------------------------
    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` and translate driver errors into one-line StoreErrors."""
        try:
            return fn()
        except neo4j_errors.AuthError as exc:
            raise StoreError(f"Neo4j at {self.uri} refused the credentials: {one_line(exc)}") from exc
        except _UNREACHABLE as exc:
            raise StoreError(f"cannot reach Neo4j at {self.uri}: {one_line(exc)}") from exc
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
            raise StoreError(f"Neo4j {what} failed at {self.address}: {one_line(exc)}") from exc

    def _read(self, text: str, params: Mapping[str, Any] | None, what: str, *, managed: bool = True
              ) -> tuple[list[str], list[list[Any]]]:
        """Columns and rows of a read; ``managed=False`` runs it auto-commit (SHOW commands) in a READ session."""

        def work(tx: ManagedTransaction) -> tuple[list[str], list[list[Any]]]:
            result = tx.run(text, dict(params or {}))
            return list(result.keys()), [list(record.values()) for record in result]

        def run() -> tuple[list[str], list[list[Any]]]:
            with self._session(READ_ACCESS) as session:
                if managed:
                    return session.execute_read(work)
                result = session.run(text, dict(params or {}))
                return list(result.keys()), [list(record.values()) for record in result]

        return self._call(what, run)

    def write(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        text = load_query(name, self.dialect)

        def work(tx: ManagedTransaction) -> list[dict[str, Any]]:
            return [record.data() for record in tx.run(text, dict(params or {}))]

        def run() -> list[dict[str, Any]]:
            with self._session() as session:
                return session.execute_write(work)

        return self._call(f"write {name!r}", run)

    def run_schema(self, text: str, params: Mapping[str, Any] | None = None) -> None:
        """Schema commands run in their own auto-commit transaction (they cannot share one with writes)."""

        def run() -> None:
            with self._session() as session:
                session.run(text, dict(params or {})).consume()

        self._call("schema statement", run)

    def query_text(self, text: str, params: Mapping[str, Any] | None = None, *, what: str = "query"
                   ) -> list[dict[str, Any]]:
        columns, rows = self._read(text, params, what)
        return [dict(zip(columns, row)) for row in rows]

    def run_cypher(self, text: str, params: Mapping[str, Any] | None = None) -> CypherResult:
        """Run a user's query in a read transaction, after :mod:`~harness_g.graph.stores.readonly` checked its text and
        Neo4j's ``EXPLAIN`` plan of it (no LOAD CSV, only allowed procedures) in the same transaction."""
        found = check_text(text, self.dialect)

        def work(tx: ManagedTransaction) -> tuple[list[str], list[list[Any]]]:
            plan = tx.run("EXPLAIN " + text, dict(params or {})).consume().plan
            check_plan(found, neo4j_operators(plan), self.dialect)
            result = tx.run(text, dict(params or {}))
            return list(result.keys()), [list(record.values()) for record in result]

        def run() -> tuple[list[str], list[list[Any]]]:
            with self._session(READ_ACCESS) as session:
                return session.execute_read(work)

        columns, rows = self._call("query", run)
        return CypherResult(columns=columns, rows=[[_plain(v) for v in row] for row in rows])

    # -- indexes ---------------------------------------------------------------------------------
    def _indexes(self) -> list[dict[str, Any]]:
        columns, rows = self._read(load_query("list_indexes", self.dialect), None, "list_indexes", managed=False)
        return [dict(zip(columns, values)) for values in rows]

    def index_state(self) -> dict[str, str]:
        """Our index names -> ``ONLINE`` | ``POPULATING`` | ``FAILED`` | ``MISSING`` (other indexes are ignored)."""
        states = {name: MISSING for name in sorted([*RANGE_INDEXES.values(), VECTOR_INDEX])}
        for row in self._indexes():
            if row["name"] in states:
                states[str(row["name"])] = str(row["state"])
        return states

    def vector_candidates(self, k: int) -> int:
        return max(super().vector_candidates(k), MIN_VECTOR_CANDIDATES)

    def encode_vector(self, vector: np.ndarray) -> list[float]:
        return f64_param(vector)

    def ensure_vector_index(self, dim: int) -> None:
        """Create ``sentence_embedding`` (cosine, ``dim``, not quantized); first drop any vector index on
        Sentence.embedding under another name or with other settings. With one of those in place ``CREATE … IF NOT EXISTS``
        is a silent no-op (Neo4j allows one vector index per label/property) and ours would never exist."""
        for row in self._indexes():
            if row["type"] != "VECTOR" or row["labels"] != ["Sentence"] or row["properties"] != ["embedding"]:
                continue
            config = dict((row.get("options") or {}).get("indexConfig") or {})
            ours = (row["name"] == VECTOR_INDEX and int(config.get("vector.dimensions", -1)) == int(dim)
                    and config.get("vector.quantization.enabled") is not True
                    and str(config.get("vector.similarity_function", "")).upper() == "COSINE")
            if not ours:
                self.run_schema(load_query("drop_index", self.dialect), {"name": row["name"]})
        self._vector_index_seen = False
        self.run_schema(load_query("create_vector_index", self.dialect), {"dim": int(dim)})

    # -- load ------------------------------------------------------------------------------------
    def clear(self) -> None:
        """Delete every node (in batches) and the vector index (the next artifact may have another dimension)."""
        self._vector_index_seen = False
        while True:
            rows = self.write("clear_batch", {"limit": CLEAR_BATCH})
            if not rows or int(rows[0]["deleted"]) == 0:
                break
        self.run_schema(load_query("drop_index", self.dialect), {"name": VECTOR_INDEX})

    # -- inspection ------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        return {"backend": "neo4j", "address": self.uri, "database": self.database, "server": self.server_agent}

    def close(self) -> None:
        self._driver.close()

    def __repr__(self) -> str:
        return f"Neo4jStore({self.address!r})"
