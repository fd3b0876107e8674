"""Store-independent load plan: which named query loads which rows, in which order, in batches.

Both stores feed the same stages through their own ``write_batch(query_name, rows)``; a stage's rows
come straight from the artifact's Parquet tables, except NEXT pairs (derived from sentence
order), sentence embeddings (joined by row number with ``sentence_embeddings.npy``) and hub samples (derived from
the mentions: :mod:`harness_g.graph.stores.hub_sample`).
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
from harness_g.graph.stores.base import LoadReport, Rows
from harness_g.graph.stores.hub_sample import HUB_SAMPLE_SIZE, hub_samples, sample_rows

#: at most this many embedding floats per sentence batch (682 rows at dim 384): the text of a larger
#: batch is parsed more slowly per row (measured on FalkorDB: 500 rows ~1.5-2x the rows/s of 5000)
SENTENCE_FLOATS_PER_BATCH = 262_144
#: at most this many sentence ids per hub-sample batch (200 hubs at the default sample size of 1000)
SAMPLE_IDS_PER_BATCH = 200_000
#: turns one float32 embedding row into the parameter value a store sends (store-specific encoding)
VectorEncoder = Callable[[np.ndarray], Any]


@dataclass(frozen=True)
class Stage:
    """One load step: ``query`` (a ``load_*`` file) applied to rows of ``source``."""

    name: str
    query: str
    source: str  # artifact table the rows come from


#: nodes before the relationships that MATCH them; CONTAINS/NEXT after sentences, MENTIONS after entities;
#: hub samples (an Entity property derived from the mentions) last
STAGES: tuple[Stage, ...] = (
    Stage("paragraphs", "load_paragraphs", "paragraphs"),
    Stage("sentences", "load_sentences", "sentences"),
    Stage("entities", "load_entities", "entities"),
    Stage("contains", "load_contains", "sentences"),
    Stage("next", "load_next", "sentences"),
    Stage("mentions", "load_mentions", "mentions"),
    Stage("synonyms", "load_synonyms", "synonyms"),
    Stage("pool_samples", "load_pool_samples", "mentions"),
)


def utc_now() -> str:
    """ISO-8601 UTC timestamp, second precision (for GraphMeta.loaded_at)."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def check_embeddings(artifact: Artifact) -> np.ndarray:
    """The embedding matrix, checked against the sentences table and the manifest's dimension."""
    matrix = artifact.embeddings(mmap=True)
    n_sentences = artifact.table("sentences", columns=["id"]).num_rows
    where = str(artifact.file(EMBEDDINGS))
    if matrix.ndim != 2 or matrix.shape[0] != n_sentences:
        raise InputError(f"embeddings have shape {matrix.shape}, expected ({n_sentences}, dim); rebuild the graph", where)
    if matrix.shape[1] != artifact.embedding_dim:
        raise InputError(
            f"embedding dimension {matrix.shape[1]} differs from the manifest's {artifact.embedding_dim}; rebuild the graph",
            where,
        )
    # both databases' vector indexes silently leave out a NaN/inf vector: refuse the artifact instead
    finite = np.isfinite(matrix).all(axis=1) if matrix.size else np.ones(0, dtype=bool)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        sid = artifact.table("sentences", columns=["id"]).column("id")[row].as_py()
        raise InputError(f"row {row} (sentence {sid}) holds NaN or infinity, and {int((~finite).sum())} row(s) in all; "
                         "rebuild the graph", where)
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


def artifact_samples(artifact: Artifact, size: int = HUB_SAMPLE_SIZE) -> dict[str, list[str]]:
    """The artifact's hub samples of ``size`` (:func:`harness_g.graph.stores.hub_sample.hub_samples`)."""
    return hub_samples(artifact.table("mentions", columns=["sentence_id", "entity_id"]), size)


def sample_batch_size(batch_size: int, longest: int) -> int:
    """Rows per ``load_pool_samples`` batch when a sample holds at most ``longest`` ids: ``batch_size``, capped so a
    batch carries at most :data:`SAMPLE_IDS_PER_BATCH` ids (every load path batches samples by this rule)."""
    return max(1, min(batch_size, SAMPLE_IDS_PER_BATCH // max(1, longest)))


def sample_delta(store: Any, artifact: Artifact, size: int) -> list[dict[str, Any]]:
    """``load_pool_samples`` rows that bring ``store``'s hub samples to ``artifact``'s of ``size``: each entity whose
    sample differs from the one the store holds, and ``sample: null`` (the property removed) for an entity the store
    holds a sample of that is no hub at ``size`` (a larger size, or title mentions removed by ``build --append``).
    Compared with the store's own ``pool_sample`` properties, so the result is what a full load would write."""
    new = artifact_samples(artifact, size)
    old = {r["id"]: list(r["sample"]) for r in store.query("pool_samples_get")}
    present = set(artifact.table("entities", columns=["id"]).column("id").to_pylist())
    rows = [{"id": eid, "sample": ids} for eid, ids in sorted(new.items()) if old.get(eid) != ids]
    rows += [{"id": eid, "sample": None} for eid in sorted(set(old) - set(new)) if eid in present]
    return rows


def write_sample_rows(write_batch: Callable[[str, Rows], Any], rows: list[dict[str, Any]], size: int,
                      batch_size: int = 2000) -> None:
    """Send ``load_pool_samples`` rows (samples of at most ``size`` ids, or null) in :func:`sample_batch_size`
    batches."""
    step = sample_batch_size(batch_size, size)
    for start in range(0, len(rows), step):
        write_batch("load_pool_samples", rows[start:start + step])


def stage_size(artifact: Artifact, stage: Stage, pairs: Sequence[tuple[str, str]] | None = None,
               samples: dict[str, list[str]] | None = None) -> int:
    """Number of rows a stage sends (``samples``: the hub samples, computed at the default size when None)."""
    if stage.name == "pool_samples":
        return len(artifact_samples(artifact) if samples is None else samples)
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
    samples: dict[str, list[str]] | None = None,
) -> Iterator[Rows]:
    """Row dicts for ``stage`` in batches of at most ``batch_size`` (artifact file order; hub samples by entity id,
    at most :data:`SAMPLE_IDS_PER_BATCH` ids a batch)."""
    if stage.name == "pool_samples":
        samples = artifact_samples(artifact) if samples is None else samples
        longest = max((len(ids) for ids in samples.values()), default=1)
        yield from sample_rows(samples, sample_batch_size(batch_size, longest))
        return
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
    embeddings: np.ndarray | None = None,
    hub_sample: int = HUB_SAMPLE_SIZE,
) -> None:
    """Send every stage's batches through ``write``; rows and seconds per stage go into ``report``.

    ``embeddings`` is the checked ``(n_sentences, dim)`` float32 matrix (read and checked here when None);
    ``hub_sample``: the hub sample size (GraphMeta.hub_sample, the caller records it).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    embeddings = check_embeddings(artifact) if embeddings is None else embeddings
    pairs = next_pairs(artifact)
    samples = artifact_samples(artifact, hub_sample)
    for stage in STAGES:
        started = time.perf_counter()
        total = stage_size(artifact, stage, pairs, samples)
        sent = 0
        with tqdm(total=total, desc=f"load {stage.name}", unit="row", disable=not progress, leave=False) as bar:
            size = batch_size
            if stage.name == "sentences":
                size = max(1, min(batch_size, SENTENCE_FLOATS_PER_BATCH // max(1, embeddings.shape[1])))
            batches = stage_batches(artifact, stage, size, encode_vector, embeddings=embeddings, pairs=pairs,
                                    samples=samples)
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


__all__ = ["STAGES", "Stage", "artifact_samples", "check_embeddings", "next_pairs", "run_stages", "stage_batches", "table_counts", "utc_now"]

