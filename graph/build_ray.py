"""The Ray Data build engine: ``harness-g build ... --engine ray [--ray-address ADDR]`` (extra ``harness-g[scale]``).

The same graph as :func:`harness_g.graph.build.build_graph` (same content hash, same tables row for row, sentence
vectors equal to :data:`EMBEDDING_TOLERANCE`), computed as Ray Data stages that spread over every node of a cluster.
The rules are graph/build.py's functions, called per batch or per group, never copies of them:

  read      the readers on the driver (``build.read_inputs``); paragraphs become a Dataset with their corpus index
  split     map_batches: ``build.split_paragraphs`` per batch of paragraphs
  ner       map_batches over an actor pool (:class:`_NerActor` holds spaCy, one CPU each)
  embed     map_batches over an actor pool (:class:`_EmbedActor` holds the encoder: one CPU each, one GPU with
            ``device=cuda``); NER and embedding stream concurrently
  mentions  groupby(document): ``build.build_entities`` per document (NER mentions, the title anchor, title mentions
            with the corpus-wide title index) gives every mention its canonical entity id
  entities  groupby(entity id): mention count and surfaces; then ``build.entity_row`` (invalid-target filter,
            display form) per entity, with the corpus's PERSON names broadcast
  link      the lookup-able entities' display names (id order) through an embedding actor pool (map_batches,
            :class:`_EmbedActor`, as the sentences; a second pool: the first is done by then); the exact top-k cosine candidates (``linking.embedding_candidates``, the rule
            the local build runs) as one Ray task per row range (:func:`link_ranges`) over the name matrix put in
            the object store once. On the driver: the entity table's id/name/label/surface columns, the rule edges
            (``linking.rule_edges``: title, canonical, abbreviation; O(entities) plus the pairs sharing a key) and
            the merge of the tasks' candidates in row order (O(entities x link_top_k) dict inserts), so the synonyms
            equal ``link_entities``'s. The tasks' work is O(m^2 x dim) for m lookup-able entities
  write     shards in corpus order: ``GRAPH_DIR/shards/<table>/part-NNNNN.parquet`` and
            ``shards/sentence_embeddings/part-NNNNN.npy`` (row i of a sentence shard <-> row i of its embedding
            shard), each with its rows, bytes and sha256 under the manifest's ``shards`` key (:func:`verify_shards`)
  compact   the standard artifact files (graph/artifact.py) from the shards, through ``build._write_artifact``: every
            loader (``harness-g load``, GraphView, FalkorDB, Neo4j) reads a Ray-built GRAPH_DIR as it is

GRAPH_DIR is written by the driver (a shared filesystem is not needed). Limits: ``person_alias_merge`` (document-local
rules that read corpus-wide state) is refused on this engine; the compaction holds the tables in the driver's memory,
the link stage the name matrix (m x dim float32) and every rule edge.
"""
from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from harness_g.errors import ConfigError, HarnessError, InputError, os_error_reason
from harness_g.graph import artifact as art
from harness_g.graph import build as local
from harness_g.graph.config import BuildConfig
from harness_g.graph.types import Dataset, Mention, Paragraph

log = logging.getLogger(__name__)

#: the Ray release the ``scale`` extra pins (pyproject.toml)
RAY_VERSION = "2.60.0"
#: how far a Ray-built sentence vector may be from the local build's (max absolute difference per component): the
#: encoder sees other batches (other padding) on the actors; measured on the 2Wiki dev slice well below this
EMBEDDING_TOLERANCE = 1e-5
#: mention kinds in the order the local build appends them (its mentions table: NER, then title anchors, then title
#: mentions), the first key of the mentions sort
_KIND_ORDER = {"ner": 0, "title": 1, "title_mention": 2}
#: rows per shard at most (a Ray block larger than this is written as several shards)
SHARD_ROWS = 100_000
#: fewest name-matrix rows per top-k task of the link stage (smaller tasks cost more in scheduling than they save)
LINK_MIN_ROWS = 64


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide the Ray build runs."""

    #: a running cluster (``HOST:PORT`` of its head, or ``auto``); None starts a local Ray for this build only
    address: str | None = None
    #: rows per Ray Data batch in the split stage (paragraphs)
    split_batch: int = 256
    #: rows per shard at most; None = :data:`SHARD_ROWS`
    shard_rows: int | None = None


@dataclass(frozen=True)
class _Job:
    """One Ray build's request and what the read stage found, as the artifact's manifest records them: the inputs,
    their merged dataset, the config, the content hash, the corpus's whitespace-token count and ``--limit``."""

    inputs: Sequence[local.CorpusSpec]
    dataset: Dataset
    config: BuildConfig
    chash: str
    corpus_tokens: int
    limit: int | None


@dataclass(frozen=True)
class _Stages:
    """What the Ray stages computed, for the sharded writer (:func:`_write`, :func:`_write_shards`): the materialized
    Ray Datasets of the paragraph rows, the annotated sentence rows (corpus order, raw float32 ``embedding`` bytes),
    the mention rows and the entity rows (sorted by id); the SYNONYM table; the entity-name vectors (float32
    ``[n_entities, dim]``, entity-id order); the title entities' ids; the spaCy pipeline's name and the NER actors'
    maximum and the link stage's top-k tasks (recorded in the manifest)."""

    paragraphs: Any
    embedded: Any
    mention_rows: Any
    entities: Any
    synonyms: pa.Table
    name_vecs: np.ndarray
    title_ids: set[str]
    spacy_name: str
    workers: int
    link_tasks: int


def _ray():
    """The ``ray`` module, or a ConfigError saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError:
        raise ConfigError(f"--engine ray needs Ray: pip install 'harness-g[scale]' (ray[data]=={RAY_VERSION})") from None
    return ray


# ------------------------------------------------------------------------------------------------ stage functions
def _paragraph_items(paragraphs: Sequence[Paragraph]) -> list[dict[str, Any]]:
    """Dataset rows of the paragraphs, with their corpus index (``p_index``) and document key (``doc_key``: the
    title anchor is placed once per document, ``source`` or else ``title``, as in ``build.build_entities``)."""
    return [{"p_index": i, "id": p.id, "title": p.title, "text": p.text, "source": p.source,
             "sentences": json.dumps(list(p.sentences)) if p.sentences is not None else "",
             "doc_key": (p.source or p.title or p.id)} for i, p in enumerate(paragraphs)]


def _split_batch(batch: pa.Table) -> pa.Table:
    """Paragraph rows -> sentence rows (``build.split_paragraphs``), keyed by (p_index, position)."""
    rows = batch.to_pylist()
    paragraphs = [Paragraph(r["id"], r["title"], r["text"], tuple(json.loads(r["sentences"])) if r["sentences"] else None,
                            r["source"]) for r in rows]
    sent = local.split_paragraphs(paragraphs, progress=False)
    by_id = {r["id"]: r for r in rows}
    return pa.table({
        "p_index": pa.array([by_id[p]["p_index"] for p in sent.paragraph_ids], pa.int64()),
        "position": pa.array(sent.positions, pa.int32()),
        "id": pa.array(sent.ids, pa.string()),
        "paragraph_id": pa.array(sent.paragraph_ids, pa.string()),
        "title": pa.array(sent.titles, pa.string()),
        "text": pa.array(sent.texts, pa.string()),
        "doc_key": pa.array([by_id[p]["doc_key"] for p in sent.paragraph_ids], pa.string()),
        "source": pa.array([by_id[p]["source"] for p in sent.paragraph_ids], pa.string()),
    })


class _NerActor:
    """Holds one spaCy pipeline; adds ``ner``: the sentence's kept mentions as JSON ``[[surface, label, start, end],
    ...]`` (``BuildConfig.ner_labels``)."""

    def __init__(self, spacy_model: str | None, batch_size: int, labels: Sequence[str]):
        from harness_g.graph.text.ner import EntityRecognizer

        self.recognizer = EntityRecognizer(spacy_model, batch_size=batch_size)
        self.labels = frozenset(labels)

    def __call__(self, batch: pa.Table) -> pa.Table:
        found = self.recognizer.extract(batch.column("text").to_pylist())
        rows = [json.dumps([[m.surface, m.label, m.start, m.end] for m in ms if m.label in self.labels],
                           ensure_ascii=False) for ms in found]
        return batch.append_column("ner", pa.array(rows, pa.string()))


class _EmbedActor:
    """Holds one sentence encoder; adds ``embedding``: the sentence's float32 vector as raw bytes."""

    def __init__(self, model: str, device: str | None, backend: str, batch_size: int):
        from harness_g.graph.embed import get_embedder

        self.embedder = get_embedder(model, device, backend)
        self.batch_size = batch_size

    def __call__(self, batch: pa.Table) -> pa.Table:
        vecs = self.embedder.encode(batch.column("text").to_pylist(), batch_size=self.batch_size)
        return batch.append_column("embedding", pa.array([v.tobytes() for v in vecs], pa.binary()))


def _document_mentions(batch: pa.Table, *, title_mentions: bool, title_index: dict) -> pa.Table:
    """Every sentence of one document (a ``doc_key`` group) -> its mention rows: ``build.build_entities`` over the
    document with the corpus-wide title index. Sort keys: mention kind (the local order), the sentence's
    (p_index, position), the row's place in the document's table."""
    rows = sorted(batch.to_pylist(), key=lambda r: (r["p_index"], r["position"]))
    sentences = local._SentenceRows([r["id"] for r in rows], [r["paragraph_id"] for r in rows],
                                    [r["position"] for r in rows], [r["title"] for r in rows], [r["text"] for r in rows])
    mentions = [[Mention(*m) for m in json.loads(r["ner"])] for r in rows]
    paragraphs = list({r["paragraph_id"]: Paragraph(r["paragraph_id"], r["title"], "", None, r["source"])
                       for r in rows}.values())
    ent = local.build_entities(sentences, mentions, paragraphs, link_title_mentions=title_mentions,
                               title_index=title_index)
    where = {r["id"]: (r["p_index"], r["position"]) for r in rows}
    meta = dict(zip(ent.entities["id"], zip(ent.entities["name"], ent.entities["label"])))
    m = ent.mentions
    return pa.table({
        "kind_order": pa.array([_KIND_ORDER[k] for k in m["kind"]], pa.int8()),
        "p_index": pa.array([where[s][0] for s in m["sentence_id"]], pa.int64()),
        "position": pa.array([where[s][1] for s in m["sentence_id"]], pa.int32()),
        "row": pa.array(range(len(m["kind"])), pa.int64()),
        **{col: pa.array(m[col], art.SCHEMAS["mentions"].field(col).type) for col in art.SCHEMAS["mentions"].names},
        "canonical": pa.array([meta[e][0] for e in m["entity_id"]], pa.string()),
        "label": pa.array([meta[e][1] for e in m["entity_id"]], pa.string()),
    }, schema=_MENTION_ROWS)


_MENTION_ROWS = pa.schema([("kind_order", pa.int8()), ("p_index", pa.int64()), ("position", pa.int32()),
                           ("row", pa.int64()), *art.SCHEMAS["mentions"], ("canonical", pa.string()),
                           ("label", pa.string())])


def _entity_group(batch: pa.Table) -> pa.Table:
    """Every mention row of one entity -> one row: id, canonical, label, mention count, surfaces (JSON counts),
    ``title``: whether it is a document title's entity (it has a title-anchor mention)."""
    surfaces: dict[str, int] = {}
    for s in batch.column("surface").to_pylist():
        surfaces[s] = surfaces.get(s, 0) + 1
    first = batch.slice(0, 1).to_pylist()[0]
    return pa.table({"id": [first["entity_id"]], "canonical": [first["canonical"]], "label": [first["label"]],
                     "mentions": pa.array([batch.num_rows], pa.int32()), "surfaces": [json.dumps(surfaces)],
                     "title": ["title" in batch.column("kind").to_pylist()]})


def _entity_rows(batch: pa.Table, *, known_persons: frozenset[str]) -> pa.Table:
    """Aggregated entities -> ``entities`` table rows (``build.entity_row``)."""
    rows = [local.entity_row(r["id"], r["canonical"], r["label"], json.loads(r["surfaces"]), r["mentions"], known_persons)
            for r in batch.to_pylist()]
    schema = art.SCHEMAS["entities"]
    return pa.table([pa.array([row[i] for row in rows], f.type) for i, f in enumerate(schema)], schema=schema)


def _name_rows(batch: pa.Table) -> pa.Table:
    """Entity rows -> the lookup-able ones' ``id`` and display name as ``text`` (the input of :class:`_EmbedActor`)."""
    kept = batch.filter(batch.column("lookupable"))
    return pa.table({"id": kept.column("id"), "text": kept.column("surface")})


def _topk_task(emb: np.ndarray, excluded: dict[int, list[int]], r0: int, r1: int, top_k: int,
               min_cosine: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One Ray task of the link stage: ``linking.embedding_candidates`` over rows ``[r0, r1)`` of the name matrix
    (``emb``: the object-store copy, read in place)."""
    from harness_g.graph.text.linking import embedding_candidates

    return embedding_candidates(emb, excluded, r0, r1, top_k, min_cosine)


def link_ranges(m: int, tasks: int, block: int) -> list[tuple[int, int]]:
    """Row ranges ``[r0, r1)`` covering ``[0, m)`` in order, about ``tasks`` of them (at least
    :data:`LINK_MIN_ROWS` rows each): whole similarity blocks of ``block`` rows (``linking.embedding_block_rows``)
    when the matrix has several, so every block multiplies the rows the local build's does; one block is cut."""
    if m <= 0:
        return []
    per = max(LINK_MIN_ROWS, -(-m // max(1, tasks)))
    if per > block:
        per = -(-per // block) * block
    return [(r0, min(m, r0 + per)) for r0 in range(0, m, per)]


def _embed_names(ray, rd, entities, config: BuildConfig, workers: int, gpu: bool) -> tuple[list[str], np.ndarray]:
    """The lookup-able entities' display names encoded on the embedding actors (:func:`_embed`), in id order:
    (ids, float32 [m, dim])."""
    names = _embed(ray, rd, entities.map_batches(_name_rows, batch_format="pyarrow"), config, workers, gpu)
    ids: list[str] = []
    parts: list[np.ndarray] = []
    for block in _blocks(ray, names):
        if block.num_rows:
            ids.extend(block.column("id").to_pylist())
            parts.append(_vectors(block, None))
    return ids, (np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32))


def _entity_records(ray, entities) -> tuple[list[Any], np.ndarray]:
    """The entity table's ``linking.EntityRecord`` rows (id order) and lookup-able mask ([n] bool), on the driver."""
    from harness_g.graph.text.linking import EntityRecord

    columns = ["id", "name", "label", "surface", "lookupable"]
    blocks = [ray.get(ref) for ref in entities.select_columns(columns).to_arrow_refs()]
    table = pa.concat_tables(blocks) if blocks else art.SCHEMAS["entities"].empty_table().select(columns)
    records = [EntityRecord(*r) for r in zip(*(table.column(c).to_pylist() for c in columns[:4]))]
    return records, np.array(table.column("lookupable").to_pylist(), dtype=bool)


def _name_vectors(ray, rd, entities, records: list[Any], lookupable: np.ndarray, config: BuildConfig, workers: int,
                  gpu: bool, embedded) -> np.ndarray:
    """float32 [n_entities, dim]: the lookup-able entities' name vectors from the embedding actors, zero rows for
    the others (``embedded``: the sentence rows, read for the vector size only when no entity is lookup-able)."""
    if not lookupable.any():
        return np.zeros((len(records), _sentence_dim(ray, embedded) or _encoder_dim(config)), dtype=np.float32)
    ids, vecs = _embed_names(ray, rd, entities, config, workers, gpu)
    if ids != [r.id for r, ok in zip(records, lookupable) if ok]:
        raise HarnessError("the link stage's name vectors came back in another order than the entity table")
    name_vecs = np.zeros((len(records), vecs.shape[1]), dtype=np.float32)
    name_vecs[lookupable] = vecs
    return name_vecs


def _embedding_links(ray, edges: dict, records: list[Any], name_vecs: np.ndarray, lookupable: np.ndarray,
                     config: BuildConfig) -> int:
    """Add the embedding links to ``edges`` (the rule edges): ``linking.embedding_candidates`` as one Ray task per
    row range (:func:`link_ranges`) over the name matrix put once in the object store, merged on the driver in row
    order as ``link_entities`` merges its blocks. Returns the number of tasks."""
    from harness_g.graph.text import linking

    ids, emb = linking.embedding_rows(records, name_vecs, lookupable)
    if len(ids) < 2 or config.link_top_k <= 0:
        return 0
    excluded = linking.excluded_columns(ids, set(edges))
    ranges = link_ranges(len(ids), 4 * _cluster_cpus(ray), linking.embedding_block_rows(len(ids)))
    shared = ray.put(emb)
    task = ray.remote(num_cpus=1)(_topk_task)
    refs = [task.remote(shared, {r: excluded[r] for r in range(r0, r1) if r in excluded}, r0, r1,
                        config.link_top_k, config.link_min_cosine) for r0, r1 in ranges]
    for ref in refs:  # in row order: a pair's first candidate sets its score, as in link_entities
        linking.add_embedding_candidates(edges, ids, *ray.get(ref))
    return len(refs)


def _link(ray, rd, entities, title_ids: set[str], config: BuildConfig, workers: int, gpu: bool,
          embedded) -> tuple[pa.Table, np.ndarray, int]:
    """The local build's link stage (``build._link_stage``) spread over the cluster: name vectors on the embedding
    actors (:func:`_name_vectors`), the rule edges (``linking.rule_edges``) on the driver, the top-k candidates as
    tasks (:func:`_embedding_links`). Returns (synonyms table, name vectors float32 [n_entities, dim], top-k
    tasks)."""
    from harness_g.graph.text.linking import rule_edges

    t = time.perf_counter()
    records, lookupable = _entity_records(ray, entities)
    name_vecs = _name_vectors(ray, rd, entities, records, lookupable, config, workers, gpu, embedded)
    t_names = time.perf_counter()
    edges = rule_edges(records, title_ids=title_ids, alias_pairs=(), spelling_links=config.spelling_links)
    t_rules = time.perf_counter()
    tasks = _embedding_links(ray, edges, records, name_vecs, lookupable, config)
    log.info("link: %d name vectors on the embedding actors %.1f s, rule edges (driver) %.2f s, top-k in %d tasks "
             "and the merge (driver) %.1f s", int(lookupable.sum()), t_names - t, t_rules - t_names, tasks,
             time.perf_counter() - t_rules)
    rows = [edges[k] for k in sorted(edges)]
    synonyms = pa.table({"src": [e.src for e in rows], "dst": [e.dst for e in rows], "kind": [e.kind for e in rows],
                         "score": [float(e.score) for e in rows]}, schema=art.SCHEMAS["synonyms"])
    return synonyms, name_vecs, tasks


def _encoder_dim(config: BuildConfig) -> int:
    """The encoder's vector size, loaded on the driver (only for a corpus without sentences or lookup-able names)."""
    from harness_g.graph.embed import get_embedder

    return int(get_embedder(config.embedding_model, config.device, config.embedding_backend).dim)


# ------------------------------------------------------------------------------------------------ shards
def _shard_file(path: Path, root: Path, rows: int) -> dict[str, Any]:
    return {"file": str(path.relative_to(root)), "rows": rows, "bytes": path.stat().st_size,
            "sha256": art.file_sha256(path)}


def _write_table_shards(root: Path, name: str, blocks: Iterable[pa.Table]) -> tuple[list[dict[str, Any]], pa.Table]:
    """``root/<name>/part-NNNNN.parquet`` per non-empty block (in order, the table's columns only); returns the shard
    entries and the whole table (for the compaction)."""
    schema = art.SCHEMAS[name]
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    entries, parts = [], []
    for block in blocks:
        if block.num_rows == 0:
            continue
        table = block.select(schema.names).cast(schema)
        path = folder / f"part-{len(parts):05d}.parquet"
        pq.write_table(table, path, compression="zstd")
        entries.append(_shard_file(path, root, table.num_rows))
        parts.append(table)
    return entries, (pa.concat_tables(parts) if parts else schema.empty_table())


def _write_matrix_shard(root: Path, name: str, index: int, matrix: np.ndarray) -> dict[str, Any]:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"part-{index:05d}.npy"
    np.save(path, np.ascontiguousarray(matrix, dtype=np.float32))
    return _shard_file(path, root, int(matrix.shape[0]))


def _vectors(table: pa.Table, dim: int | None) -> np.ndarray:
    """The ``embedding`` column (raw float32 bytes per row) as float32 [rows, dim]."""
    raw = b"".join(table.column("embedding").to_pylist())
    out = np.frombuffer(raw, dtype=np.float32)
    return out.reshape(table.num_rows, -1 if table.num_rows else (dim or 0)).copy()


def verify_shards(graph_dir: str | Path) -> dict[str, Any]:
    """Check every shard the manifest of ``graph_dir`` lists (bytes and sha256) and that each sentence shard has its
    embedding shard with as many rows; returns the ``shards`` entry. InputError naming the first bad shard."""
    graph_dir = Path(graph_dir)
    manifest = art.Artifact.open(graph_dir).manifest
    shards = manifest.get(art.SHARDS)
    if not shards:
        raise InputError("no shards in the manifest (built with --engine local)", str(graph_dir))
    root = graph_dir / art.SHARDS
    for group, entries in sorted(shards["files"].items()):
        for entry in entries:
            path = root / entry["file"]
            if not path.is_file():
                raise InputError(f"shard {entry['file']} is missing; rebuild with --engine ray --force", str(root))
            if path.stat().st_size != entry["bytes"] or art.file_sha256(path) != entry["sha256"]:
                raise InputError(f"shard {entry['file']} does not match its sha256 in the manifest; rebuild with "
                                 "--engine ray --force", str(root))
    sent, emb = shards["files"]["sentences"], shards["files"]["sentence_embeddings"]
    if [e["rows"] for e in sent] != [e["rows"] for e in emb]:
        raise InputError("sentence shards and embedding shards do not pair row for row", str(root))
    return shards


# ------------------------------------------------------------------------------------------------ the build
def build_graph_ray(inputs: Sequence[local.CorpusSpec], graph_dir: str | Path, config: BuildConfig | None = None, *,
                    options: RayOptions | None = None, limit: int | None = None, force: bool = False,
                    progress: bool = True, on_stage: Callable[[str], None] | None = None) -> local.BuildResult:
    """Build (or reuse) the artifact in ``graph_dir`` on Ray (module docstring); the lock, staging and publish are
    the local build's. A cache hit needs the same content hash and intact shards."""
    from harness_g.graph.locks import exclusive_lock

    config = config or BuildConfig()
    if config.person_alias_merge:
        raise ConfigError("person_alias_merge is not supported by --engine ray yet (its rules read corpus-wide state "
                          "per document): use --engine local, or --set person_alias_merge=false")
    ray = _ray()
    graph_dir = Path(graph_dir)
    with exclusive_lock(graph_dir, "--out directory"):
        art.remove_staging(graph_dir)
        seconds: dict[str, float] = {}
        stage = on_stage or (lambda name: None)
        t0 = time.perf_counter()
        stage("read")
        dataset = local.read_inputs(inputs, config, limit)
        chash = local.content_hash(dataset, config)
        corpus_tokens = sum(len(p.text.split()) for p in dataset.paragraphs)
        seconds["read"] = time.perf_counter() - t0
        if not force and _cache_hit(graph_dir, chash):
            return local.BuildResult(graph_dir, True, art.Artifact.open(graph_dir).counts, seconds, corpus_tokens)
        started = not ray.is_initialized()
        if started:
            _init_ray(ray, options or RayOptions())
        try:
            job = _Job(inputs, dataset, config, chash, corpus_tokens, limit)
            return _build(ray, job, graph_dir, options or RayOptions(), seconds, progress, stage)
        except HarnessError:
            raise
        except Exception as exc:
            raise _one_line(exc) from exc
        finally:
            if started:
                ray.shutdown()


def _cache_hit(graph_dir: Path, chash: str) -> bool:
    """Whether ``graph_dir`` already holds this graph with its shards, every file matching its sha256."""
    try:
        found = art.Artifact.open(graph_dir, verify=True)
    except InputError:
        return False
    if found.content_hash != chash or not found.manifest.get(art.SHARDS):
        return False
    try:
        verify_shards(graph_dir)
    except InputError as exc:
        log.warning("%s -- rebuilding", exc)
        return False
    return True


def _init_ray(ray, options: RayOptions) -> None:
    """Join the cluster at ``options.address``, or start a local Ray (no dashboard) for this build."""
    kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.WARNING}
    try:
        if options.address:
            ray.init(address=options.address, **kwargs)
        else:
            ray.init(include_dashboard=False, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise HarnessError(f"cannot join the Ray cluster at {options.address or 'a new local Ray'}: "
                           f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from exc


def _one_line(exc: BaseException) -> HarnessError:
    """A failure inside Ray as one line: the HarnessError a worker raised (a bad spaCy or encoder model), else the
    exception's type and first line."""
    from ray.exceptions import RayError

    seen: BaseException | None = exc
    for _ in range(20):  # the chain: Ray Data's wrappers, RayTaskError (its str is a traceback), the worker's error
        if seen is None:
            break
        if isinstance(seen, HarnessError) and not isinstance(seen, RayError):
            return HarnessError(str(seen).strip().splitlines()[0] if str(seen).strip() else type(seen).__name__)
        cause = getattr(seen, "cause", None)
        seen = cause if isinstance(cause, BaseException) else seen.__cause__
    text = str(exc).strip().splitlines()
    last = text[-1] if text else ""
    ours = re.search(r"harness_g\.errors\.\w+: (.*)", last)  # an actor that died in its constructor: only its text
    return HarnessError(ours.group(1) if ours else f"the Ray build failed: {type(exc).__name__}: {last}")


def _configure(ctx, cpus: int, n_paragraphs: int, progress: bool) -> int:
    """Ray Data settings for this build; returns the partitions of every shuffle (about 20k paragraphs each, at
    least one per CPU: Ray's default of 200 costs minutes of scheduling on a small corpus)."""
    from ray.data.context import ShuffleStrategy

    partitions = max(cpus, -(-n_paragraphs // 20_000))
    ctx.enable_progress_bars = progress
    ctx.enable_operator_progress_bars = progress
    ctx.execution_options.preserve_order = True  # map stages keep corpus order: the sentence shards need no sort
    ctx.shuffle_strategy = ShuffleStrategy.SORT_SHUFFLE_PULL_BASED  # tasks: no aggregator actors to start
    ctx.default_hash_shuffle_parallelism = partitions
    ctx.max_hash_shuffle_aggregators = partitions
    ctx.min_parallelism = partitions
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    logging.getLogger("ray.data.exceptions").setLevel(logging.CRITICAL)  # its stack dumps: the build reports one line
    return partitions


def _persons_and_titles(ray, grouped) -> tuple[frozenset[str], set[str]]:
    """From the aggregated entities (their blocks, column-filtered, one at a time): the canonical names of the PERSON
    entities (the invalid-target filter's ``known_canonicals``) and the ids of the title entities (``link``)."""
    import pyarrow.compute as pc

    known: set[str] = set()
    titles: set[str] = set()
    for block in _blocks(ray, grouped):
        known.update(block.filter(pc.equal(block.column("label"), "PERSON")).column("canonical").to_pylist())
        titles.update(block.filter(block.column("title")).column("id").to_pylist())
    return frozenset(known), titles


def _sentence_dim(ray, embedded) -> int | None:
    """The vector size of the first embedded sentence (None for a corpus without sentences)."""
    for ref in embedded.to_arrow_refs():
        block = ray.get(ref)
        if block.num_rows:
            return len(block.column("embedding")[0].as_py()) // 4
    return None


def _cluster_cpus(ray) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _embed(ray, rd, rows, config: BuildConfig, workers: int, gpu: bool):
    """``embedding`` (float32 bytes) added to rows with a ``text`` column by a pool of :class:`_EmbedActor` (at most
    ``workers`` CPU actors, or one per GPU when ``gpu``), order kept; returns the dataset (lazy)."""
    return rows.map_batches(
        _EmbedActor, fn_constructor_kwargs={"model": config.embedding_model, "device": config.device,
                                            "backend": config.embedding_backend, "batch_size": config.embed_batch_size},
        batch_format="pyarrow", batch_size=config.embed_batch_size * local.EMBED_CHUNK_BATCHES,
        num_cpus=0 if gpu else 1, num_gpus=1 if gpu else 0,
        compute=rd.ActorPoolStrategy(min_size=1, max_size=max(1, int(ray.cluster_resources().get("GPU", 1)) if gpu
                                                               else workers)))


def _annotate(ray, rd, sentences, config: BuildConfig, workers: int, gpu: bool):
    """NER then embedding over the sentence rows, as two Ray actor pools (at most ``workers`` NER actors; the
    embedding pool of :func:`_embed`); returns the materialized annotated rows."""
    annotated = sentences.map_batches(
        _NerActor, fn_constructor_kwargs={"spacy_model": config.spacy_model, "batch_size": config.ner_batch_size,
                                          "labels": tuple(config.ner_labels)},
        batch_format="pyarrow", batch_size=config.ner_batch_size, num_cpus=1,
        compute=rd.ActorPoolStrategy(min_size=1, max_size=max(1, workers)))
    return _embed(ray, rd, annotated, config, workers, gpu).materialize()


def _entities(ray, embedded, dataset, config: BuildConfig, partitions: int):
    """Mentions per document, then entity rows grouped by entity id (sorted by id, PERSON aliases merged against the
    known persons); returns (mention rows, entity rows, title entity ids)."""
    title_index = local.title_mention_index([p.title for p in dataset.paragraphs if p.title]) if config.title_mentions else {}
    mention_rows = embedded.drop_columns(["embedding"]).groupby("doc_key", num_partitions=partitions).map_groups(
        _document_mentions, batch_format="pyarrow",
        fn_kwargs={"title_mentions": config.title_mentions, "title_index": title_index}).materialize()
    grouped = mention_rows.groupby("entity_id", num_partitions=partitions).map_groups(
        _entity_group, batch_format="pyarrow").materialize()
    known, title_ids = _persons_and_titles(ray, grouped)
    entities = grouped.map_batches(_entity_rows, batch_format="pyarrow", fn_kwargs={"known_persons": known}).sort("id")
    entities = entities.materialize()
    return mention_rows, entities, title_ids


def _write(ray, staging: Path, job: _Job, stages: _Stages, seconds: dict[str, float], t: float,
           shard_rows: int) -> dict[str, int]:
    """The shards (at most ``shard_rows`` rows each), then the artifact's tables and manifest through the local writer
    (the ``engine: ray`` manifest keys added), into ``staging``; ``t``: when the write stage began
    (``time.perf_counter``). Returns the artifact's counts."""
    shards, tables, embeddings = _write_shards(staging / art.SHARDS, stages, shard_rows)
    dim = int(stages.name_vecs.shape[1])
    ent = local._EntityTables(
        {c: tables["entities"].column(c).to_pylist() for c in art.SCHEMAS["entities"].names},
        {c: tables["mentions"].column(c).to_pylist() for c in art.SCHEMAS["mentions"].names},
        [], np.array(tables["entities"].column("lookupable").to_pylist(), dtype=bool), stages.title_ids)
    sent = local._SentenceRows(*(tables["sentences"].column(c).to_pylist()
                                 for c in ("id", "paragraph_id", "position", "title", "text")))
    edges = [local_edge(r) for r in tables["synonyms"].to_pylist()]
    nodes = [n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive")]
    extra = {"engine": "ray", art.SHARDS: shards,
             "ray": {"version": ray.__version__, "nodes": len(nodes), "cpus": _cluster_cpus(ray),
                     "ner_actors_max": stages.workers, "link_tasks": stages.link_tasks}}
    counts, _ = local._write_artifact(staging, job.inputs, job.dataset, sent, ent, edges, embeddings, stages.name_vecs,
                                      job.config, job.chash, job.limit, job.corpus_tokens, stages.spacy_name, dim,
                                      seconds, t, workers=stages.workers, extra=extra)
    return counts


def _build(ray, job: _Job, graph_dir: Path, options: RayOptions, seconds: dict[str, float], progress: bool,
           stage: Callable[[str], None]) -> local.BuildResult:
    import ray.data as rd

    config, dataset = job.config, job.dataset
    cpus = _cluster_cpus(ray)
    workers = config.workers or cpus
    gpu = bool(config.device and config.device.startswith("cuda"))
    partitions = _configure(rd.DataContext.get_current(), cpus, len(dataset.paragraphs), progress)

    t = time.perf_counter()
    stage("split")
    spacy_name = _spacy_name(config)  # a bad model fails here, on the driver, before any actor starts
    paragraphs = rd.from_items(_paragraph_items(dataset.paragraphs), override_num_blocks=partitions)
    sentences = paragraphs.map_batches(_split_batch, batch_format="pyarrow", batch_size=options.split_batch).materialize()
    seconds["split"] = time.perf_counter() - t

    t = time.perf_counter()
    stage("ner+embed")
    embedded = _annotate(ray, rd, sentences, config, workers, gpu)
    seconds["ner_embed_wall"] = time.perf_counter() - t

    t = time.perf_counter()
    stage("entities")
    mention_rows, entities, title_ids = _entities(ray, embedded, dataset, config, partitions)
    seconds["entities"] = time.perf_counter() - t

    t = time.perf_counter()
    stage("link")
    synonyms, name_vecs, link_tasks = _link(ray, rd, entities, title_ids, config, workers, gpu, embedded)
    seconds["link"] = time.perf_counter() - t

    t = time.perf_counter()
    stage("write")
    stages = _Stages(paragraphs, embedded, mention_rows, entities, synonyms, name_vecs, title_ids, spacy_name, workers,
                     link_tasks)
    staging = art.staging_dir(graph_dir)
    try:
        counts = _write(ray, staging, job, stages, seconds, t, options.shard_rows or SHARD_ROWS)
        art.publish(staging, graph_dir)
    except BaseException as exc:
        reason = os_error_reason(exc, staging) if isinstance(exc, OSError) else ""
        art.discard_staging(staging, graph_dir)
        if isinstance(exc, OSError):
            raise HarnessError(f"cannot write the graph artifact in {staging}: {reason}") from exc
        raise
    return local.BuildResult(graph_dir, False, counts, seconds, job.corpus_tokens, local._peak_rss_mb(), {}, workers)


def local_edge(row: dict[str, Any]):
    """A synonyms table row as the ``SynonymEdge`` the artifact writer takes."""
    from harness_g.graph.text.linking import SynonymEdge

    return SynonymEdge(row["src"], row["dst"], row["kind"], row["score"])


def _spacy_name(config: BuildConfig) -> str:
    """``<lang>_<name>-<version>`` of the spaCy pipeline the NER actors load (as the local build records it)."""
    from harness_g.graph.text.ner import EntityRecognizer

    return EntityRecognizer(config.spacy_model, batch_size=config.ner_batch_size).model_name


def _write_shards(root: Path, stages: _Stages, rows: int) -> tuple[dict[str, Any], dict[str, pa.Table], np.ndarray]:
    """Every table's shards (at most ``rows`` rows each) in corpus order under ``root``, sentence embeddings beside
    their sentences. Returns the manifest's ``shards`` entry, the whole tables and the sentence embeddings (float32
    [n_sentences, dim])."""
    ray = _ray()
    files: dict[str, list[dict[str, Any]]] = {}
    tables: dict[str, pa.Table] = {}
    files["paragraphs"], tables["paragraphs"] = _write_table_shards(root, "paragraphs",
                                                                    _blocks(ray, stages.paragraphs, rows))
    ordered = stages.embedded  # in corpus order (DataContext preserve_order, from_items in paragraph order)
    files["sentence_embeddings"], vec_parts, sent_blocks = [], [], []
    synonyms, name_vecs = stages.synonyms, stages.name_vecs
    dim = int(name_vecs.shape[1])
    for block in _blocks(ray, ordered, rows):
        if block.num_rows:
            vecs = _vectors(block, dim)
            files["sentence_embeddings"].append(_write_matrix_shard(root, "sentence_embeddings", len(vec_parts), vecs))
            vec_parts.append(vecs)
            sent_blocks.append(block)
    files["sentences"], tables["sentences"] = _write_table_shards(root, "sentences", sent_blocks)
    files["mentions"], tables["mentions"] = _write_table_shards(
        root, "mentions", _blocks(ray, stages.mention_rows.sort(["kind_order", "p_index", "position", "row"]), rows))
    files["entities"], tables["entities"] = _write_table_shards(root, "entities", _blocks(ray, stages.entities, rows))
    files["synonyms"], tables["synonyms"] = _write_table_shards(
        root, "synonyms", [synonyms.slice(i, rows) for i in range(0, max(1, synonyms.num_rows), rows)])
    files["entity_embeddings"] = [_write_matrix_shard(root, "entity_embeddings", 0, name_vecs)]
    embeddings = np.concatenate(vec_parts) if vec_parts else np.zeros((0, dim), dtype=np.float32)
    return {"dir": art.SHARDS, "files": files}, tables, embeddings


def _blocks(ray, ds, rows: int | None = None) -> Iterable[pa.Table]:
    """A dataset's blocks in order, fetched to the driver one at a time, cut into pieces of at most ``rows`` rows."""
    for ref in ds.to_arrow_refs():
        block = ray.get(ref)
        step = rows or max(1, block.num_rows)
        for start in range(0, max(1, block.num_rows), step):
            yield block.slice(start, step)
