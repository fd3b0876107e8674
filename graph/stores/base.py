"""The store contract: the only way code above ``graph/`` touches a graph database.

Callers run *named* queries (files in ``cypher/``) with parameters and get plain row dicts back;
they never see a driver object. :class:`GraphStore` is a base class that owns everything both
databases share -- the idempotent load protocol, index waiting, GraphMeta bookkeeping, stats,
vector top-k post-processing -- on top of a short list of **primitives** each backend implements.

A backend implements exactly these (and nothing above ``graph/stores`` calls anything else):

==========================  =====================================================================
``dialect``                 ``cypher/<dialect>/`` overrides to use (``"falkordb"``, ``"neo4j"``)
``address``, ``where``      where the database is, for messages (never credentials)
``index_ready_state``       the state a usable index reports (``"OPERATIONAL"``, ``"ONLINE"``)
``query_text(text, params)`` run read-only Cypher the code owns (the database refuses writes);
                            ``query(name, params)`` runs a named file of ``cypher/`` through it
``run_cypher(text, params)`` run user Cypher read-only, for ``harness-g cypher``
``write(name, params)``     run a named write query in one transaction; rows as dicts
``run_schema(text, params)`` run one schema statement (index/constraint); re-creating is a no-op
``ensure_vector_index(dim)`` create the cosine vector index on ``Sentence.embedding`` named
                            :data:`VECTOR_INDEX` with dimension ``dim``, replacing one of another
                            name or dimension
``index_state()``           our index names -> state (``MISSING`` when absent)
``encode_vector(vec)``      float32 row -> the parameter value this database's driver sends
``clear()``                 delete the whole graph and the vector index
``identity()``              backend name and address, the head of :meth:`stats`
``close()``                 release connections (and an embedded server this store started)
==========================  =====================================================================

A third backend subclasses :class:`GraphStore`, implements that list and adds its dialect's query
overrides under ``cypher/<dialect>/``; ``tests/e2e/test_stores.py`` then runs every store check on it.
"""
from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from harness_g.errors import StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.stores.queries import load_query, split_statements
from harness_g.graph.stores.schema import LABELS, MISSING, REL_TYPES, TIE_MARGIN, VECTOR_INDEX

Rows = list[dict[str, Any]]


def resolve_hub_sample(meta: dict[str, Any] | None, artifact: Artifact, requested: int | None) -> int:
    """The hub sample size a load of ``artifact`` writes: ``requested``; when None, the size the store records for
    this artifact (GraphMeta ``meta`` with its content hash and a ``hub_sample``), so reading a graph never resamples
    it; else :data:`~harness_g.graph.stores.hub_sample.HUB_SAMPLE_SIZE`."""
    from harness_g.graph.stores.hub_sample import HUB_SAMPLE_SIZE, check_hub_sample

    if requested is not None:
        return check_hub_sample(requested)
    if meta and meta.get("content_hash") == artifact.content_hash and meta.get("hub_sample") is not None:
        return int(meta["hub_sample"])
    return HUB_SAMPLE_SIZE


def _holds(meta: dict[str, Any] | None, artifact: Artifact, hub_sample: int) -> bool:
    """Whether GraphMeta row ``meta`` records ``artifact`` completely loaded with hub samples of ``hub_sample``."""
    return bool(meta and meta.get("complete") is True and meta.get("content_hash") == artifact.content_hash
                and meta.get("hub_sample") == hub_sample)


def meta_params(artifact: Artifact, hub_sample: int | None, content_hash: str | None = None) -> dict[str, Any]:
    """``meta_begin``'s parameters for a load of ``artifact`` now: its content hash (or ``content_hash``, e.g. an
    append's pending one), embedding model and dimension, the hub sample size and which graph it is."""
    from harness_g.graph.stores.loader import utc_now

    return {"content_hash": artifact.content_hash if content_hash is None else content_hash,
            "embedding_model": artifact.embedding_model, "embedding_dim": artifact.embedding_dim,
            "loaded_at": utc_now(), "hub_sample": hub_sample, **graph_identity(artifact)}


def graph_identity(artifact: Artifact) -> dict[str, str]:
    """Which graph an artifact is, as GraphMeta records it: ``graph_dir`` (absolute path), ``graph_host`` (the
    machine's host name: paths are per machine) and ``graph_name`` (the dataset name, for messages)."""
    import socket

    return {"graph_dir": str(artifact.path.resolve()), "graph_host": socket.gethostname(),
            "graph_name": str(artifact.manifest.get("dataset") or artifact.path.name)}


@dataclass
class LoadReport:
    """What a load did: rows sent per table, seconds per stage, whether it was a no-op, whether it only rewrote the
    hub samples of a graph the store held (:meth:`GraphStore._resample`)."""

    skipped: bool = False
    resampled: bool = False
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
    #: where the database is, for messages (set by the backend's constructor)
    address: str = ""
    #: the state :meth:`index_state` reports for an index that answers queries
    index_ready_state: str = ""
    #: index states that will never become ready (population failed)
    index_failed_states: tuple[str, ...] = ("FAILED",)
    #: seconds between index-state polls grow from this to ``_POLL_MAX_S``
    _POLL_START_S = 0.02
    _POLL_MAX_S = 0.5

    _vector_index_seen: bool = False  # cached: checking the index on every vector query would double its cost
    #: True when the store belongs to one GRAPH_DIR (the embedded FalkorDB in GRAPH_DIR/store), so whatever it
    #: holds is that graph's; False for a database graphs share (Neo4j, a FalkorDB server), where loading or
    #: reading one graph over another is refused (see graph/load.py)
    private: bool = False

    # -- primitives every backend implements ------------------------------------------------------
    @abstractmethod
    def query_text(self, text: str, params: Mapping[str, Any] | None = None, *, what: str = "query"
                   ) -> list[dict[str, Any]]:
        """Run read-only Cypher ``text`` that the code owns (a query file's text; a user's query goes through
        :meth:`run_cypher`, which checks it first); rows as dicts keyed by RETURN alias. ``what`` names it in errors."""

    @abstractmethod
    def run_cypher(self, text: str, params: Mapping[str, Any] | None = None) -> CypherResult:
        """Run a user-supplied query read-only, for ``harness-g cypher`` / ``browse``: writes are refused by the database,
        LOAD CSV and procedures outside the allow-list by :mod:`harness_g.graph.stores.readonly` (``QueryRefused``)."""

    @abstractmethod
    def write(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run the named write query in one transaction; rows as dicts (``meta_complete`` returns one)."""

    @abstractmethod
    def run_schema(self, text: str, params: Mapping[str, Any] | None = None) -> None:
        """Run one schema statement (CREATE INDEX/CONSTRAINT); an index that already exists is not an error."""

    @abstractmethod
    def ensure_vector_index(self, dim: int) -> None:
        """Create the cosine vector index :data:`VECTOR_INDEX` on ``Sentence.embedding`` of dimension ``dim``.

        An existing vector index on that property under another name or of another dimension is
        dropped first, so the store never mistakes a foreign index for its own.
        """

    @abstractmethod
    def index_state(self) -> dict[str, str]:
        """Index name -> state (e.g. ``"ONLINE"``/``"OPERATIONAL"``, ``"POPULATING"``, ``"MISSING"``)."""

    @abstractmethod
    def encode_vector(self, vector: np.ndarray) -> Any:
        """One float32 embedding (shape ``(dim,)``) as the parameter value this database's client sends.

        Raises StoreError on NaN or infinity (a vector index would silently leave such rows out).
        """

    @abstractmethod
    def clear(self) -> None:
        """Delete every node and relationship of the graph and its vector index."""

    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """``{"backend": ..., "address": ..., ...}``: the first fields of :meth:`stats`."""

    @abstractmethod
    def close(self) -> None:
        """Release connections (and stop the embedded server if this process started it)."""

    # -- shared: named queries, schema, meta, indexes -----------------------------------------------
    def query(self, name: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run the named read query ``cypher/[<dialect>/]<name>.cypher``; rows as dicts keyed by RETURN alias."""
        return self.query_text(load_query(name, self.dialect), params, what=f"query {name!r}")

    def ensure_schema(self) -> None:
        """Create the id constraints/indexes of ``cypher/[<dialect>/]schema.cypher`` (idempotent)."""
        for statement in split_statements(load_query("schema", self.dialect)):
            self.run_schema(statement)

    def write_batch(self, name: str, rows: Rows) -> None:
        """Send one batch of load rows through the ``load_*`` query ``name`` (``UNWIND $rows``)."""
        self.write(name, {"rows": rows})

    def other_graph_hint(self) -> str:
        """How to give a graph a database of its own here, for the one-line error refusing to load it over another."""
        return "use --store embedded (a store inside GRAPH_DIR)"

    def meta(self) -> dict[str, Any] | None:
        """The GraphMeta row (content_hash, embedding_model, embedding_dim, complete, loaded_at, and which graph it
        is: graph_dir, graph_host, graph_name) or None."""
        rows = self.query("meta_get")
        return rows[0] if rows else None

    def loaded_hash(self) -> str | None:
        """Content hash of the completely loaded artifact, or None if empty / partially loaded."""
        meta = self.meta()
        return str(meta["content_hash"]) if meta and meta.get("complete") is True else None

    def holds(self, artifact: Artifact, hub_sample: int | None = None) -> bool:
        """Whether the store holds ``artifact`` completely with hub samples of size ``hub_sample`` (None: of any
        size, :func:`resolve_hub_sample`): what makes :meth:`load` a no-op. A store loaded before hub samples existed
        (GraphMeta.hub_sample null) does not, so its samples are written once."""
        meta = self.meta()
        return _holds(meta, artifact, resolve_hub_sample(meta, artifact, hub_sample))

    def wait_for_indexes(self, timeout_s: float = 300.0) -> None:
        """Block until every index of ours that exists is ready and the vector index exists.

        Raises StoreError when the vector index is missing, an index failed, or ``timeout_s`` passes.
        """
        deadline = time.monotonic() + timeout_s
        delay = self._POLL_START_S
        while True:
            states = self.index_state()
            if states.get(VECTOR_INDEX, MISSING) == MISSING:
                self._require_vector_index()
            failed = sorted(name for name, state in states.items() if state in self.index_failed_states)
            if failed:
                raise StoreError(f"index population failed in {self.where}: {', '.join(failed)}")
            pending = sorted(name for name, state in states.items() if state not in (self.index_ready_state, MISSING))
            if not pending:
                self._vector_index_seen = True
                return
            if time.monotonic() >= deadline:
                raise StoreError(f"indexes not ready in {self.where} after {timeout_s:.0f} s: {', '.join(pending)}")
            time.sleep(delay)
            delay = min(delay * 2, self._POLL_MAX_S)

    @property
    def where(self) -> str:
        """The database and graph, for messages (e.g. ``Neo4j at bolt://127.0.0.1:7687``)."""
        return self.address

    def _require_vector_index(self) -> None:
        if self.index_state().get(VECTOR_INDEX, MISSING) == MISSING:
            raise StoreError(f"vector index {VECTOR_INDEX} on :Sentence(embedding) is missing in {self.where}; "
                             "load the graph first (harness-g build)")
        self._vector_index_seen = True

    # -- shared: vectors ----------------------------------------------------------------------------
    def vector_candidates(self, k: int) -> int:
        """How many neighbours to ask the index for when ``k`` are wanted: ``TIE_MARGIN`` extra, so ties at the
        k-th place are broken by id, not by index order. A backend whose index search cannot be widened
        otherwise asks for more (see Neo4jStore)."""
        return int(k) + TIE_MARGIN

    def vector_top_k(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """Top-k sentences by cosine similarity to ``vector`` (dim = graph's embedding dim).

        Returns ``[(sentence_id, cosine)]`` best first, cosine in [-1, 1], ties by id. ``TIE_MARGIN``
        extra neighbours are fetched so ties at the k-th place are broken by id, not by index order.
        """
        if k <= 0:
            return []
        if not self._vector_index_seen:
            self._require_vector_index()
        try:
            rows = self.query("vector_top_k", {"vector": self.encode_vector(np.asarray(vector)), "k": self.vector_candidates(k)})
        except StoreError:
            self._vector_index_seen = False
            self._require_vector_index()  # a dropped index explains itself; anything else re-raises below
            raise
        # float32 rounding can put an identical vector a hair above 1: clamp to the cosine range
        ranked = sorted(((str(r["id"]), max(-1.0, min(1.0, float(r["similarity"])))) for r in rows),
                        key=lambda p: (-p[1], p[0]))
        return ranked[:k]

    # -- shared: load ---------------------------------------------------------------------------------
    def load(self, artifact: Artifact, *, batch_size: int = 2000, progress: bool = True,
             index_timeout_s: float | None = None, force: bool = False, hub_sample: int | None = None) -> LoadReport:
        """Load an artifact idempotently (MERGE on ids); a no-op when the same content hash is loaded and complete.

        skip when this artifact is completely loaded -> clear another artifact's graph -> schema (so every
        MERGE is an index seek) -> GraphMeta complete=false -> every table stage -> vector index, waited
        for -> GraphMeta complete=true. An unfinished load of the same artifact is resumed: MERGEs converge.
        The embeddings are checked (shape, finite values) before anything is written.
        ``force`` (``build --force``): clear and load even when this content hash is loaded and complete, so the
        store holds exactly the artifact's files again (a graph edited by hand in the store, or rebuilt by a code
        change that kept the hash, is not kept by a skipped load).
        ``hub_sample``: the hub sample size written and recorded in GraphMeta (:mod:`~harness_g.graph.stores.hub_sample`;
        None: the size the store holds this artifact with, else ``HUB_SAMPLE_SIZE``: :func:`resolve_hub_sample`;
        tests give a small graph hubs with a small one). A store holding the artifact completely with another size
        (or none: loaded by an older harness-g) gets only its samples rewritten (:meth:`_resample`).
        """
        from harness_g.graph.stores.loader import check_embeddings, run_stages, utc_now
        from harness_g.graph.stores.schema import LOAD_INDEX_TIMEOUT_S

        report = LoadReport()
        started = time.perf_counter()
        meta = self.meta()
        hub_sample = resolve_hub_sample(meta, artifact, hub_sample)
        if not force and _holds(meta, artifact, hub_sample):  # the GraphMeta just read, not a second query
            report.skipped = True
            return report
        if (not force and meta and meta.get("complete") is True
                and meta.get("content_hash") == artifact.content_hash):  # the graph is here; its samples are not
            self._resample(artifact, hub_sample, report, batch_size)
            report.seconds["total"] = time.perf_counter() - started
            return report
        embeddings = check_embeddings(artifact)  # bad input fails here, before the old graph is touched
        if meta and (force or meta.get("content_hash") != artifact.content_hash or meta.get("hub_sample") != hub_sample):
            # a graph holds exactly one artifact: another artifact's nodes (complete or not) go first
            t = time.perf_counter()
            self.clear()
            report.seconds["clear"] = time.perf_counter() - t
        t = time.perf_counter()
        self.ensure_schema()
        report.seconds["schema"] = time.perf_counter() - t
        self.write("meta_begin", meta_params(artifact, hub_sample))
        run_stages(artifact, self.write_batch, report, batch_size=batch_size, progress=progress,
                   encode_vector=self.encode_vector, embeddings=embeddings, hub_sample=hub_sample)
        t = time.perf_counter()
        # created last: building HNSW over all vectors at once is no slower than inserting into it, and
        # it keeps the table stages' timings clean (an index building in the background slows every write)
        self.ensure_vector_index(artifact.embedding_dim)
        self.wait_for_indexes(LOAD_INDEX_TIMEOUT_S if index_timeout_s is None else index_timeout_s)
        report.seconds["indexes"] = time.perf_counter() - t
        if not self.write("meta_complete", {"content_hash": artifact.content_hash, "loaded_at": utc_now()}):
            raise StoreError(f"load of {artifact.content_hash} was superseded by another load of {self.where}")
        self._after_load(report)
        report.seconds["total"] = time.perf_counter() - started
        return report

    def _resample(self, artifact: Artifact, hub_sample: int, report: LoadReport, batch_size: int) -> None:
        """Bring the hub samples of a store that holds ``artifact`` completely to size ``hub_sample``, writing only the
        entities whose sample differs (:func:`~harness_g.graph.stores.loader.sample_delta`). GraphMeta says
        ``complete=false, hub_sample=null`` meanwhile, so a crash leaves a graph that a GraphView refuses (incomplete, one
        line) and the next load reloads whole: never a mix of two sizes."""
        from harness_g.graph.stores.loader import sample_delta, write_sample_rows

        t = time.perf_counter()
        begin = meta_params(artifact, None)
        self.write("meta_begin", begin)
        rows = sample_delta(self, artifact, hub_sample)
        write_sample_rows(self.write_batch, rows, hub_sample, batch_size)
        self.write("meta_begin", {**begin, "hub_sample": hub_sample})
        if not self.write("meta_complete", {"content_hash": artifact.content_hash, "loaded_at": begin["loaded_at"]}):
            raise StoreError(f"resampling {artifact.content_hash} was superseded by another load of {self.where}")
        report.rows["pool_samples"] = len(rows)
        report.seconds["pool_samples"] = time.perf_counter() - t
        report.resampled = True
        self._after_load(report)

    def _after_load(self, report: LoadReport) -> None:
        """Hook for backend work after a completed (not skipped) load, e.g. a snapshot to disk."""

    # -- shared: inspection -------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """:meth:`identity` + node/relationship counts by type, lookup-able entities, index states and
        the loaded artifact's GraphMeta (content_hash, complete, embedding model/dim, loaded_at)."""
        nodes = dict.fromkeys(LABELS, 0)
        nodes.update({str(r["label"]): int(r["count"]) for r in self.query("count_nodes_by_label")})
        rels = dict.fromkeys(REL_TYPES, 0)
        rels.update({str(r["type"]): int(r["count"]) for r in self.query("count_relationships_by_type")})
        lookupable = self.query("count_lookupable_entities")
        meta = self.meta() or {}
        return {
            **self.identity(),
            "nodes": nodes,
            "relationships": rels,
            "lookupable_entities": int(lookupable[0]["count"]) if lookupable else 0,
            "indexes": self.index_state(),
            "content_hash": meta.get("content_hash"),
            "complete": bool(meta.get("complete", False)),
            "embedding_model": meta.get("embedding_model"),
            "embedding_dim": meta.get("embedding_dim"),
            "loaded_at": meta.get("loaded_at"),
            "graph_dir": meta.get("graph_dir"),
            "graph_name": meta.get("graph_name"),
            "hub_sample": meta.get("hub_sample"),
        }

    def __enter__(self) -> "GraphStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
