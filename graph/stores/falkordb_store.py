"""FalkorDB implementation of :class:`GraphStore` (the default, embedded backend).

Reads go through ``GRAPH.RO_QUERY`` so the database itself refuses writes (and ``run_cypher`` refuses LOAD CSV and
procedures outside an allow-list first: :mod:`harness_g.graph.stores.readonly`); loads use
``GRAPH.QUERY`` with batched ``UNWIND $rows`` MERGE statements from ``cypher/``. Query
parameters are sent by the client in FalkorDB's text parameter header, never spliced into Cypher.
"""
from __future__ import annotations

import re
import time
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import redis
from falkordb import FalkorDB
from falkordb.edge import Edge
from falkordb.exceptions import SchemaVersionMismatchException
from falkordb.node import Node
from falkordb.path import Path as GraphPath
from falkordb.query_result import QueryResult
from redis.backoff import NoBackoff
from redis.retry import Retry

from harness_g.errors import StoreError, one_line
from harness_g.graph.stores.base import CypherResult, GraphStore, LoadReport
from harness_g.graph.stores.falkordb_server import EmbeddedFalkorDB
from harness_g.graph.stores.queries import load_query
from harness_g.graph.stores.readonly import check_plan, check_text, falkordb_operators
from harness_g.graph.stores.schema import MISSING, RANGE_INDEXES, VECTOR_INDEX

DEFAULT_GRAPH = "harness_g"
#: HNSW candidates per search. FalkorDB's default 10 finds ~half the true top-10 on 10k 384-d vectors;
#: 400 finds >99.5% on clustered (sentence-like) data and ~91% on isotropic noise for ~1-2 ms more
EF_RUNTIME = 400
#: HNSW candidates while building: 100 builds 10k x 384 in half the time of FalkorDB's default 200
#: with the same recall@10 (0.996 on clustered data at EF_RUNTIME)
EF_CONSTRUCTION = 100
#: every named query this store runs besides the traversal queries callers pass to query()
NAMED_QUERIES: tuple[str, ...] = (
    "schema", "create_vector_index", "list_indexes", "vector_top_k", "meta_begin", "meta_complete", "meta_get",
    "count_nodes_by_label", "count_relationships_by_type", "count_lookupable_entities",
)
_GRAPH_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_EMPTY_GRAPH = "empty key"  # FalkorDB's error for a graph that was never written
_ALREADY_INDEXED = "already indexed"



@lru_cache(maxsize=8)
def _list_format(dim: int) -> str:
    return "[" + ",".join(["%.9g"] * dim) + "]"


class Float32List:
    """A float32 vector as a query parameter, printed as a Cypher list of numbers.

    The client sends parameters as text and prints values it does not know with ``str()``;
    formatting the whole vector with one ``%`` call (9 significant digits: exact for float32)
    is ~3x faster than the client's per-float printing, and the text is ~40% shorter than
    float64 reprs -- the sentences stage of a load is bound by this text. Only digits, signs,
    '.', 'e', ',' and brackets are ever produced (non-finite values are refused).
    """

    __slots__ = ("_text",)

    def __init__(self, vec: Any):
        v = np.asarray(vec, dtype=np.float32).ravel()
        if not np.isfinite(v).all():
            raise StoreError("an embedding contains NaN or infinity")
        self._text = _list_format(v.size) % tuple(v.tolist())

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Float32List({self._text[:40]}...)"


def _plain(value: Any) -> Any:
    """Client objects -> JSON-friendly values, for free-form query display."""
    if isinstance(value, Node):
        return {"id": value.id, "labels": list(value.labels or []), "properties": _plain(value.properties)}
    if isinstance(value, Edge):
        return {"id": value.id, "type": value.relation, "src": _plain(value.src_node), "dst": _plain(value.dest_node),
                "properties": _plain(value.properties)}
    if isinstance(value, GraphPath):
        return {"nodes": [_plain(n) for n in value.nodes()], "edges": [_plain(e) for e in value.edges()]}
    if isinstance(value, (dict, OrderedDict)):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class FalkorDBStore(GraphStore):
    """A graph named ``graph`` on a FalkorDB server (embedded or remote)."""

    dialect = "falkordb"
    index_ready_state = "OPERATIONAL"
    index_failed_states = ()  # FalkorDB reports no failed state: an index is OPERATIONAL or UNDER CONSTRUCTION

    def __init__(
        self,
        db: FalkorDB,
        *,
        address: str,
        graph: str = DEFAULT_GRAPH,
        server: EmbeddedFalkorDB | None = None,
        owns_server: bool = False,
    ):
        if not _GRAPH_NAME.match(graph):
            raise StoreError(f"invalid FalkorDB graph name {graph!r} (letters, digits, '_', '.', '-')")
        self._db = db
        self._graph = db.select_graph(graph)
        self.graph_name = graph
        self.address = address
        self.server = server
        self._owns_server = owns_server

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def _open(cls, kwargs: dict[str, Any], address: str, **store_kwargs: Any) -> "FalkorDBStore":
        try:
            # one immediate retry covers a pooled connection gone stale; a dead server fails fast
            db = FalkorDB(**kwargs, socket_connect_timeout=5.0, retry=Retry(NoBackoff(), 1))
            db.connection.ping()
            db.list_graphs()
        except redis.exceptions.AuthenticationError as exc:
            raise StoreError(f"FalkorDB at {address} refused the password (a falkordb:// server reads it from "
                             f"FALKORDB_PASSWORD): {one_line(exc)}") from exc
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise StoreError(f"cannot reach FalkorDB at {address}: {one_line(exc)}") from exc
        except redis.exceptions.ResponseError as exc:
            raise StoreError(f"{address} does not look like a FalkorDB server: {one_line(exc)}") from exc
        return cls(db, address=address, **store_kwargs)

    @classmethod
    def from_embedded(cls, data_dir: str | Path, port: int | None = None, *, graph: str = DEFAULT_GRAPH) -> "FalkorDBStore":
        """Start (or reuse) the embedded server for ``data_dir`` and open ``graph`` on it.

        ``close()`` stops the server only if this call started it.
        """
        server = EmbeddedFalkorDB(data_dir, port=port)
        try:
            store = cls._open(server.client_kwargs(), server.address, graph=graph, server=server, owns_server=True)
            store.private = True  # the store of one GRAPH_DIR: what it holds is that graph's
            return store
        except BaseException:
            server.stop()
            raise

    @classmethod
    def attach(cls, server: EmbeddedFalkorDB, *, graph: str = DEFAULT_GRAPH) -> "FalkorDBStore":
        """Open ``graph`` on an already running embedded server; ``close()`` leaves the server alone."""
        return cls._open(server.client_kwargs(), server.address, graph=graph, server=server, owns_server=False)

    @classmethod
    def connect(cls, host: str, port: int, *, graph: str = DEFAULT_GRAPH, password: str | None = None) -> "FalkorDBStore":
        """Open ``graph`` on an existing FalkorDB server at ``host:port`` (``falkordb://host:port``); ``password``
        for a server that requires one (``connect_store`` passes ``FALKORDB_PASSWORD``)."""
        return cls._open({"host": host, "port": port, "password": password}, f"falkordb://{host}:{port}", graph=graph)

    # -- execution -------------------------------------------------------------------------------
    def _execute(self, text: str, params: Mapping[str, Any] | None, *, write: bool, what: str) -> QueryResult | None:
        """Run Cypher text; None for a read on a graph never written (FalkorDB's "empty key")."""
        run = self._graph.query if write else self._graph.ro_query
        try:
            try:
                return run(text, dict(params) if params else None)
            except SchemaVersionMismatchException:
                return run(text, dict(params) if params else None)  # the client refreshed its schema copy
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise StoreError(f"cannot reach FalkorDB at {self.address}: {one_line(exc)}") from exc
        except redis.exceptions.ResponseError as exc:
            if not write and _EMPTY_GRAPH in str(exc):
                return None
            raise StoreError(f"FalkorDB {what} failed on graph {self.graph_name!r}: {one_line(exc)}") from exc

    def _explain(self, text: str, params: Mapping[str, Any] | None) -> list[str] | None:
        """``GRAPH.EXPLAIN``'s operator lines for ``text``; None for a graph never written (FalkorDB's "empty key")."""
        try:
            plan = self._graph.explain(text, dict(params) if params else None)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise StoreError(f"cannot reach FalkorDB at {self.address}: {one_line(exc)}") from exc
        except redis.exceptions.ResponseError as exc:
            if _EMPTY_GRAPH in str(exc):
                return None
            raise StoreError(f"FalkorDB query failed on graph {self.graph_name!r}: {one_line(exc)}") from exc
        return [line.decode() if isinstance(line, bytes) else str(line) for line in plan.plan]

    @staticmethod
    def _columns(result: QueryResult | None) -> list[str]:
        return [str(col[1]) for col in result.header] if result is not None else []

    def _rows(self, result: QueryResult | None) -> list[dict[str, Any]]:
        if result is None:
            return []
        cols = self._columns(result)
        return [dict(zip(cols, (_plain(v) for v in row))) for row in result.result_set]

    def query_text(self, text: str, params: Mapping[str, Any] | None = None, *, what: str = "query"
                   ) -> list[dict[str, Any]]:
        return self._rows(self._execute(text, params, write=False, what=what))

    def write(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        return self._rows(self._execute(load_query(name, self.dialect), params, write=True, what=f"write {name!r}"))

    def run_cypher(self, text: str, params: Mapping[str, Any] | None = None) -> CypherResult:
        """Run a user's query with ``GRAPH.RO_QUERY``, after :mod:`~harness_g.graph.stores.readonly` checked its text and
        FalkorDB's ``GRAPH.EXPLAIN`` plan of it (no LOAD CSV, only allowed procedures)."""
        found = check_text(text, self.dialect)
        plan = self._explain(text, params)
        if plan is None:  # a graph never written: nothing to read (and nothing to plan against)
            return CypherResult(columns=[], rows=[])
        check_plan(found, falkordb_operators(plan), self.dialect)
        result = self._execute(text, params, write=False, what="query")
        rows = [[_plain(v) for v in row] for row in (result.result_set if result is not None else [])]
        return CypherResult(columns=self._columns(result), rows=rows)

    @property
    def where(self) -> str:
        return f"FalkorDB graph {self.graph_name!r} at {self.address}"

    def other_graph_hint(self) -> str:
        if self.address.startswith("falkordb://"):
            return f"give each graph a name of its own: --store {self.address}?graph=NAME, or use --store embedded"
        return super().other_graph_hint()

    # -- vectors and indexes ---------------------------------------------------------------------------------
    def index_state(self) -> dict[str, str]:
        """``paragraph_id``/``sentence_id``/``entity_id``/``entity_name``/``graphmeta_key``/``sentence_embedding``
        -> ``OPERATIONAL`` | ``UNDER CONSTRUCTION`` | ``MISSING``."""
        states = {name: MISSING for name in sorted([*RANGE_INDEXES.values(), VECTOR_INDEX])}
        for row in self.query("list_indexes"):
            label, status = str(row["label"]), str(row["status"])
            for prop, kinds in dict(row["types"]).items():
                for kind in kinds:
                    if kind == "VECTOR" and (label, prop) == ("Sentence", "embedding"):
                        states[VECTOR_INDEX] = status
                    elif kind == "RANGE":
                        states[RANGE_INDEXES.get((label, prop), f"{label.lower()}_{prop}")] = status
        return states

    def encode_vector(self, vector: np.ndarray) -> Float32List:
        return Float32List(vector)

    def ensure_vector_index(self, dim: int) -> None:
        # FalkorDB's indexes have no names, so no foreign-named index can shadow ours; a graph of another
        # dimension is never loaded over (load() clears another artifact's graph, indexes included)
        self.run_schema(load_query("create_vector_index", self.dialect),
                        {"dim": int(dim), "ef_construction": EF_CONSTRUCTION, "ef_runtime": EF_RUNTIME})

    def run_schema(self, text: str, params: Mapping[str, Any] | None = None) -> None:
        """Run an index statement; re-creating an existing index is fine (FalkorDB has no IF NOT EXISTS)."""
        try:
            self._execute(text, params, write=True, what="schema statement")
        except StoreError as exc:
            if _ALREADY_INDEXED not in str(exc):
                raise

    # -- load ------------------------------------------------------------------------------------
    def _after_load(self, report: LoadReport) -> None:
        if self.server is not None:
            t = time.perf_counter()
            self.server.save()  # snapshot now, so a crash after the load loses nothing
            report.seconds["save"] = time.perf_counter() - t

    def clear(self) -> None:
        """Delete the whole graph (nodes, edges, indexes)."""
        self._vector_index_seen = False
        try:
            self._graph.delete()
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise StoreError(f"cannot reach FalkorDB at {self.address}: {one_line(exc)}") from exc
        except redis.exceptions.ResponseError as exc:
            if _EMPTY_GRAPH not in str(exc):
                raise StoreError(f"cannot delete FalkorDB graph {self.graph_name!r}: {one_line(exc)}") from exc

    # -- inspection ------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        return {"backend": "falkordb", "address": self.address, "graph": self.graph_name}

    def close(self) -> None:
        try:
            self._db.connection.close()
        except Exception:  # noqa: BLE001 - closing a dead connection must not mask the caller's error
            pass
        if self._owns_server and self.server is not None:
            self._owns_server = False
            self.server.stop()

    def __repr__(self) -> str:
        return f"FalkorDBStore(graph={self.graph_name!r}, address={self.address!r})"
