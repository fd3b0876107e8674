"""Store-independent load plan: which named query loads which rows, in which order, in batches.

Both stores feed the same stages through their own ``write(query_name, rows)``; a stage's rows
come straight from the artifact's Parquet tables, except NEXT pairs (derived from sentence
order) and sentence embeddings (joined by row number with ``sentence_embeddings.npy``).
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pyarrow.compute as pc
from tqdm import tqdm

from harness_g.errors import InputError
from harness_g.graph.artifact import EMBEDDINGS, Artifact
from harness_g.graph.stores.base import LoadReport

Rows = list[dict[str, Any]]
#: at most this many embedding floats per sentence batch (682 rows at dim 384): the text of a larger
#: batch is parsed more slowly per row (measured on FalkorDB: 500 rows ~1.5-2x the rows/s of 5000)
SENTENCE_FLOATS_PER_BATCH = 262_144
#: turns one float32 embedding row into the parameter value a store sends (store-specific encoding)
VectorEncoder = Callable[[np.ndarray], Any]


@dataclass(frozen=True)
class Stage:
    """One load step: ``query`` (a ``load_*`` file) applied to rows of ``source``."""

    name: str
    query: str
    source: str  # artifact table the rows come from


#: nodes before the relationships that MATCH them; CONTAINS/NEXT after sentences, MENTIONS after entities
STAGES: tuple[Stage, ...] = (
    Stage("paragraphs", "load_paragraphs", "paragraphs"),
    Stage("sentences", "load_sentences", "sentences"),
    Stage("entities", "load_entities", "entities"),
    Stage("contains", "load_contains", "sentences"),
    Stage("next", "load_next", "sentences"),
    Stage("mentions", "load_mentions", "mentions"),
    Stage("synonyms", "load_synonyms", "synonyms"),
)


def utc_now() -> str:
    """ISO-8601 UTC timestamp, second precision (for GraphMeta.loaded_at)."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def check_embeddings(artifact: Artifact) -> np.ndarray:
    """The embedding matrix, checked against the sentences table and the manifest's dimension."""
    matrix = artifact.embeddings(mmap=True)
    n_sentences = artifact.table("sentences", columns=["id"]).num_rows
    where = str(artifact.path / EMBEDDINGS)
    if matrix.ndim != 2 or matrix.shape[0] != n_sentences:
        raise InputError(f"embeddings have shape {matrix.shape}, expected ({n_sentences}, dim); rebuild the graph", where)
    if matrix.shape[1] != artifact.embedding_dim:
        raise InputError(
            f"embedding dimension {matrix.shape[1]} differs from the manifest's {artifact.embedding_dim}; rebuild the graph",
            where,
        )
    return matrix


def next_pairs(artifact: Artifact) -> list[tuple[str, str]]:
    """(src, dst) for each sentence and the one after it in the same paragraph.

    Sentences are sorted by (paragraph_id, position); neighbours in that order are linked even
    when positions skip a number (a sentence the build dropped has no node to link through).
    """
    table = artifact.table("sentences", columns=["id", "paragraph_id", "position"])
    if table.num_rows < 2:
        return []
    table = table.sort_by([("paragraph_id", "ascending"), ("position", "ascending")])
    paragraphs = table.column("paragraph_id")
    same = pc.equal(paragraphs.slice(0, table.num_rows - 1), paragraphs.slice(1)).to_numpy(zero_copy_only=False)
    ids = table.column("id").to_pylist()
    return [(ids[i], ids[i + 1]) for i in np.flatnonzero(same)]


def stage_size(artifact: Artifact, stage: Stage, pairs: Sequence[tuple[str, str]] | None = None) -> int:
    """Number of rows a stage sends."""
    if stage.name == "next":
        return len(pairs if pairs is not None else next_pairs(artifact))
    return int(artifact.table(stage.source, columns=[_first_column(stage.source)]).num_rows)


def _first_column(table: str) -> str:
    return "sentence_id" if table == "mentions" else ("src" if table == "synonyms" else "id")


def stage_batches(
    artifact: Artifact,
    stage: Stage,
    batch_size: int,
    encode_vector: VectorEncoder,
    *,
    embeddings: np.ndarray | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> Iterator[Rows]:
    """Row dicts for ``stage`` in batches of at most ``batch_size`` (artifact file order)."""
    if stage.name == "next":
        pairs = next_pairs(artifact) if pairs is None else pairs
        for start in range(0, len(pairs), batch_size):
            yield [{"src": s, "dst": d} for s, d in pairs[start : start + batch_size]]
        return
    if stage.name == "contains":
        yield from artifact.iter_rows("sentences", batch_size, columns=["id", "paragraph_id", "position"])
        return
    if stage.name == "sentences":
        matrix = check_embeddings(artifact) if embeddings is None else embeddings
        offset = 0
        for rows in artifact.iter_rows("sentences", batch_size):
            block = np.asarray(matrix[offset : offset + len(rows)], dtype=np.float32)
            for row, vec in zip(rows, block):
                row["embedding"] = encode_vector(vec)
            offset += len(rows)
            yield rows
        return
    yield from artifact.iter_rows(stage.source, batch_size)


class _Failed:
    """Carries an exception from the prefetch thread to the consumer."""

    def __init__(self, exc: BaseException):
        self.exc = exc


def prefetch(batches: Iterator[Rows], depth: int = 2) -> Iterator[Rows]:
    """Produce up to ``depth`` batches ahead in a background thread while the caller writes the current one.

    Turning embeddings into parameter text costs about as much CPU as the database spends on
    the batch, and the writer mostly waits on a socket (GIL released), so the two overlap.
    """
    slots: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                slots.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for batch in batches:
                if not put(batch):
                    return
            put(done)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
            put(_Failed(exc))

    worker = threading.Thread(target=produce, name="harness-g-load-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            item = slots.get()
            if item is done:
                return
            if isinstance(item, _Failed):
                raise item.exc
            yield item
    finally:
        stop.set()  # the consumer stopped early (error, interrupt): let the producer exit
        worker.join(timeout=10)


def run_stages(
    artifact: Artifact,
    write: Callable[[str, Rows], None],
    report: LoadReport,
    *,
    batch_size: int,
    progress: bool,
    encode_vector: VectorEncoder,
) -> None:
    """Send every stage's batches through ``write``; rows and seconds per stage go into ``report``."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    embeddings = check_embeddings(artifact)
    pairs = next_pairs(artifact)
    for stage in STAGES:
        started = time.perf_counter()
        total = stage_size(artifact, stage, pairs)
        sent = 0
        with tqdm(total=total, desc=f"load {stage.name}", unit="row", disable=not progress, leave=False) as bar:
            size = batch_size
            if stage.name == "sentences":
                size = max(1, min(batch_size, SENTENCE_FLOATS_PER_BATCH // max(1, embeddings.shape[1])))
            batches = stage_batches(artifact, stage, size, encode_vector, embeddings=embeddings, pairs=pairs)
            for rows in prefetch(batches):
                write(stage.query, rows)
                sent += len(rows)
                bar.update(len(rows))
        report.rows[stage.name] = sent
        report.seconds[stage.name] = time.perf_counter() - started


def table_counts(artifact: Artifact) -> dict[str, int]:
    """Expected node/relationship counts after a load, keyed by label / relationship type.

    Exact when the build wrote unique rows: mentions unique on (sentence, entity, start, end, kind),
    synonyms on (src, dst, kind) -- the MERGE keys of ``load_mentions`` / ``load_synonyms``.
    """
    tables = ("paragraphs", "sentences", "entities", "mentions", "synonyms")
    n = {name: artifact.table(name, columns=[_first_column(name)]).num_rows for name in tables}
    return {
        "Paragraph": n["paragraphs"],
        "Sentence": n["sentences"],
        "Entity": n["entities"],
        "CONTAINS": n["sentences"],
        "NEXT": len(next_pairs(artifact)),
        "MENTIONS": n["mentions"],
        "SYNONYM": n["synonyms"],
    }


__all__ = ["STAGES", "Stage", "check_embeddings", "next_pairs", "run_stages", "stage_batches", "table_counts", "utc_now"]


def load_protocol(store: Any, artifact: Any, *, batch_size: int, progress: bool, encode_vector: Any,
                  index_timeout_s: float, where: str) -> Any:
    """The idempotent load both stores share (FalkorDB and Neo4j differ only in the primitives they pass in).

    skip when this artifact is completely loaded -> clear another artifact's graph -> schema (so every MERGE
    is an index seek) -> GraphMeta complete=false -> every table stage (MERGE) -> vector index, waited for ->
    GraphMeta complete=true. An unfinished load of the same artifact is simply resumed: MERGEs converge.
    ``store`` provides meta(), clear(), _ensure_schema(), _write(name, params), _write_batch,
    _ensure_vector_index(dim) and wait_for_indexes(timeout).
    """
    from harness_g.errors import StoreError
    from harness_g.graph.stores.base import LoadReport

    report = LoadReport()
    started = time.perf_counter()
    meta = store.meta()
    if meta and meta.get("complete") is True and meta.get("content_hash") == artifact.content_hash:
        report.skipped = True
        return report
    if meta and meta.get("content_hash") != artifact.content_hash:
        # a graph holds exactly one artifact: another artifact's nodes (complete or not) go first
        t = time.perf_counter()
        store.clear()
        report.seconds["clear"] = time.perf_counter() - t
    t = time.perf_counter()
    store._ensure_schema()
    report.seconds["schema"] = time.perf_counter() - t
    store._write("meta_begin", {
        "content_hash": artifact.content_hash,
        "embedding_model": artifact.embedding_model,
        "embedding_dim": artifact.embedding_dim,
        "loaded_at": utc_now(),
    })
    run_stages(artifact, store._write_batch, report, batch_size=batch_size, progress=progress, encode_vector=encode_vector)
    t = time.perf_counter()
    # created last: building HNSW over all vectors at once is no slower than inserting into it, and
    # it keeps the table stages' timings clean (an index building in the background slows every write)
    store._ensure_vector_index(artifact.embedding_dim)
    store.wait_for_indexes(index_timeout_s)
    report.seconds["indexes"] = time.perf_counter() - t
    if not store._write("meta_complete", {"content_hash": artifact.content_hash, "loaded_at": utc_now()}):
        raise StoreError(f"load of {artifact.content_hash} was superseded by another load of {where}")
    report.seconds["total"] = time.perf_counter() - started
    return report


def graph_stats(store: Any, identity: dict[str, Any]) -> dict[str, Any]:
    """Stats both stores report: ``identity`` (backend, address, ...) + node/relationship counts by type,
    lookup-able entities, index states and the loaded artifact's GraphMeta."""
    from harness_g.graph.stores.schema import LABELS, REL_TYPES

    nodes = dict.fromkeys(LABELS, 0)
    nodes.update({str(r["label"]): int(r["count"]) for r in store.query("count_nodes_by_label")})
    rels = dict.fromkeys(REL_TYPES, 0)
    rels.update({str(r["type"]): int(r["count"]) for r in store.query("count_relationships_by_type")})
    lookupable = store.query("count_lookupable_entities")
    meta = store.meta() or {}
    return {
        **identity,
        "nodes": nodes,
        "relationships": rels,
        "lookupable_entities": int(lookupable[0]["count"]) if lookupable else 0,
        "indexes": store.index_state(),
        "content_hash": meta.get("content_hash"),
        "complete": bool(meta.get("complete", False)),
        "embedding_model": meta.get("embedding_model"),
        "embedding_dim": meta.get("embedding_dim"),
        "loaded_at": meta.get("loaded_at"),
    }
