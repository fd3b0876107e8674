"""Offline, LLM-free graph build: corpus -> paragraphs -> sentences -> mentions -> links -> artifact.

Stages (each timed; see ``BuildResult.seconds``):
  read      readers yield deduplicated paragraphs and QA items
  split     abbreviation-safe sentence splitting (preset sentences kept verbatim)
  ner       spaCy NER over sentences            } run concurrently: embedding runs in a worker thread (torch and
  embed     sentence embeddings                 } ONNX Runtime release the GIL); NER over ``BuildConfig.workers``
                                                  processes (default every core), the encoder on the cores left
  entities  canonicalise, group, title anchors (+ with ``title_mentions``: a title linked to every sentence naming
            it; + with ``person_alias_merge``: truncated person aliases merged into the name they abbreviate,
            document-local, see ``linking.person_aliases``), junk-filter
  link      SYNONYM edges (canonical / title (+ across spellings with ``spelling_links``) / alias / abbreviation /
            embedding >= 0.80)
  write     Parquet tables + embeddings + manifest (manifest last) into GRAPH_DIR/.staging-<pid>/,
            then published into GRAPH_DIR (see :mod:`harness_g.graph.artifact`)
  load      idempotent load into the graph store + wait for the vector index

Re-building the same inputs with the same config is a cache hit: the content hash in
``manifest.json`` matches, the files match the manifest's sha256s, and nothing is recomputed.
The whole build holds ``GRAPH_DIR/.lock`` (:mod:`harness_g.graph.locks`): a second build into
the same directory is refused at once, naming the first.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import resource
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, Mapping, Sequence

import numpy as np
import torch
from tqdm.auto import tqdm

from harness_g import __version__
from harness_g.config_loader import sources
from harness_g.errors import HarnessError, InputError, os_error_reason
from harness_g.graph import artifact as art
from harness_g.graph.config import BuildConfig
from harness_g.graph.embed import get_embedder
from harness_g.graph.locks import exclusive_lock
from harness_g.graph.readers import read_dataset
from harness_g.graph.text.canonical import canonicalize, display_form
from harness_g.graph.text.filters import lookup_rejection
from harness_g.graph.text.linking import (_TRAILING_PAREN, EntityRecord, link_entities, person_aliases, title_mention_index,
                                         title_mentions, title_name)
from harness_g.graph.text.split import split_text
from harness_g.graph.types import Dataset, Paragraph, QAItem, entity_id, sentence_id

log = logging.getLogger(__name__)

#: bump when the pipeline's output for the same inputs changes
PIPELINE_VERSION = "6"  # 4: title mentions (BuildConfig.title_mentions); 5: lower-case split fragments joined
# (readers/multihop.py); 6: titles linked across spellings (text/linking.spelling_key)
#: stages timed as busy seconds of the two concurrent NER / embedding workers: inside ``ner_embed_wall``, not added
BUSY_STAGES = ("ner", "embed")


def encode_lanes(threads: int) -> int:
    """Concurrent encoder calls for ``threads`` cores once the encoder has them to itself: 2 (each with half the
    threads) from 2 cores on. On 2 cores two 1-thread ONNX lanes encoded dev sentences 1.17x and entity names 1.24x
    faster than one 2-thread call, whose intra-op barriers wait on the other thread (benchmarks/results/encoders.md),
    with bitwise the same vectors; the HotpotQA dev build took 0.90x the wall time (build_lanes.md). Backends without
    concurrent calls (torch) ignore it."""
    return 2 if threads >= 2 else 1


def build_wall_seconds(seconds: Mapping[str, float]) -> float:
    """A build's wall time from its stage seconds (``BuildResult.seconds`` / the manifest's ``seconds``): every stage
    but the workers' busy seconds, which overlap inside ``ner_embed_wall``."""
    return sum(v for k, v in seconds.items() if k not in BUSY_STAGES)


#: embedding batches per chunk of the build's embed stage (the thread count can change between chunks)
EMBED_CHUNK_BATCHES = 8
TITLE_LABEL = "TITLE"


@dataclass(frozen=True)
class CorpusSpec:
    """One input: a reader format and a path. ``questions=False`` (``--corpus``) keeps only its paragraphs."""

    format: str
    path: Path
    questions: bool = True


@dataclass
class BuildResult:
    graph_dir: Path
    cache_hit: bool
    counts: dict[str, int]
    seconds: dict[str, float] = field(default_factory=dict)
    corpus_tokens: int = 0
    peak_rss_mb: float = 0.0
    #: CPU seconds per stage (this process's threads plus its finished worker processes; same keys as ``seconds``):
    #: ``cpu_seconds[s] / seconds[s]`` is how many cores stage ``s`` kept busy. ``ner``: the NER loop's thread and its
    #: worker processes; ``embed``: the rest of ``ner_embed_wall`` (the encoder's threads)
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    #: NER worker processes the build ran (``BuildConfig.workers`` resolved); 0 on a cache hit
    workers: int = 0


@dataclass
class _SentenceRows:
    ids: list[str] = field(default_factory=list)
    paragraph_ids: list[str] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    titles: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_now() -> float:
    """CPU seconds so far of this process (every thread) and of its children that have exited (NER workers)."""
    return time.process_time() + _children_cpu()


def resolve_workers(config: BuildConfig) -> int:
    """NER processes for ``config``: ``workers``, or every core of this machine when it is unset."""
    return config.workers or os.cpu_count() or 1


def read_inputs(inputs: Sequence[CorpusSpec], config: BuildConfig, limit: int | None = None) -> Dataset:
    """Read every input and merge: paragraphs deduplicated by id (first kept), questions concatenated."""
    if not inputs:
        raise InputError("no input given (use --format FORMAT --input PATH)")
    paragraphs: dict[str, Paragraph] = {}
    questions: list[QAItem] = []
    names = []
    for spec in inputs:
        ds = read_dataset(spec.format, spec.path, limit=limit, chunk_tokens=config.chunk_tokens,
                          chunk_overlap=config.chunk_overlap, join_fragments=config.join_fragments)
        names.append(ds.name)
        for p in ds.paragraphs:
            paragraphs.setdefault(p.id, p)
        if spec.questions:
            questions.extend(ds.questions)
    if not paragraphs:
        fmts = ", ".join(f"{s.format}:{s.path}" for s in inputs)
        raise InputError(
            f"empty corpus: {fmts} yielded no paragraphs (question-only formats such as triviaqa need a corpus: add --corpus FORMAT:PATH)"
        )
    return Dataset(name="+".join(dict.fromkeys(names)), paragraphs=tuple(paragraphs.values()), questions=tuple(questions))


def content_hash(dataset: Dataset, config: BuildConfig) -> str:
    """sha256 over pipeline version, hashed config fields and every paragraph/question."""
    h = hashlib.sha256()
    h.update(f"harness-g/{PIPELINE_VERSION}/{art.FORMAT_VERSION}\n".encode())
    h.update(json.dumps(config.hashed_fields(), sort_keys=True).encode())
    for p in dataset.paragraphs:
        h.update(json.dumps([p.id, p.title, p.text, list(p.sentences) if p.sentences is not None else None]).encode())
    for q in dataset.questions:
        h.update(json.dumps(q.to_json(), sort_keys=True).encode())
    return h.hexdigest()


def split_paragraphs(paragraphs: Sequence[Paragraph], progress: bool = True) -> _SentenceRows:
    """Sentence rows for every paragraph. Preset sentences keep their dataset index as position."""
    rows = _SentenceRows()
    for p in tqdm(paragraphs, desc="split", unit="para", disable=not progress, leave=False):
        sentences = p.sentences if p.sentences is not None else split_text(p.text)
        for pos, text in enumerate(sentences):
            text = text.strip()
            if not text:  # keep positions stable (gold ids) but drop empty sentences
                continue
            rows.ids.append(sentence_id(p.id, pos))
            rows.paragraph_ids.append(p.id)
            rows.positions.append(pos)
            rows.titles.append(p.title)
            rows.texts.append(text)
    return rows


@dataclass
class _NerEmbed:
    """What :func:`_ner_and_embed` returns: one mention list and one vector (row of ``embeddings``, float32
    ``(len(texts), dim)``) per text, the two workers' busy seconds and NER's CPU seconds (its thread + processes)."""

    mentions: list[list[Any]]
    embeddings: np.ndarray
    ner_s: float
    embed_s: float
    ner_cpu_s: float
    spacy_name: str
    dim: int


def _ner_and_embed(texts: list[str], config: BuildConfig, progress: bool, workers: int = 1) -> _NerEmbed:
    """NER in this thread (over ``workers`` processes when > 1), embeddings in a worker thread."""
    from harness_g.graph.text.ner import EntityRecognizer

    recognizer_labels = set(config.ner_labels)
    full = max(1, torch.get_num_threads())
    ner_done, stop = threading.Event(), threading.Event()

    def embed() -> tuple[np.ndarray, float, int]:
        t0 = time.perf_counter()
        # loaded here, so the encoder's start-up overlaps spaCy's model load in the calling thread
        embedder = get_embedder(config.embedding_model, config.device, config.embedding_backend)
        # longest texts last across the whole corpus (little padding), in chunks: once NER is done the remaining
        # chunks get every core (torch and the ONNX sessions read torch's thread count at each call), on ONNX as
        # two lanes (encode_lanes)
        order = np.argsort(np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts)), kind="stable")
        out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
        chunk = config.embed_batch_size * EMBED_CHUNK_BATCHES
        for start in tqdm(range(0, len(order), chunk), desc="embed", unit="chunk", disable=not progress, leave=False):
            if stop.is_set():  # NER failed: its error is raised, not this work's result
                break
            if ner_done.is_set() and torch.get_num_threads() != full:
                torch.set_num_threads(full)
            rows = order[start:start + chunk]
            out[rows] = embedder.encode([texts[i] for i in rows], batch_size=config.embed_batch_size,
                                        lanes=encode_lanes(full) if ner_done.is_set() else 1)
        return out, time.perf_counter() - t0, embedder.dim

    # spaCy takes `workers` cores; give the encoder the rest (at least one thread) until NER is done, so the two stages
    # do not oversubscribe the CPU (on a 2-core machine two encoder threads beside spaCy run embedding 3-4x slower)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) - workers))
    recognizer = None
    if workers > 1:  # fork the NER workers before the encoder thread exists (EntityRecognizer.start)
        recognizer = EntityRecognizer(config.spacy_model, batch_size=config.ner_batch_size, n_process=workers)
        recognizer.start()
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(embed)
            try:
                if recognizer is None:  # in-process NER: spaCy's load overlaps the encoder's in the other thread
                    recognizer = EntityRecognizer(config.spacy_model, batch_size=config.ner_batch_size)
                t0, cpu0 = time.perf_counter(), time.thread_time()
                children0 = _children_cpu()
                mentions = []
                for found in tqdm(recognizer.extract(texts), total=len(texts), desc="ner", unit="sent", disable=not progress, leave=False):
                    mentions.append([m for m in found if m.label in recognizer_labels])
                    if len(mentions) % 256 == 0 and future.done():
                        future.result()  # an encoder that failed to load is reported now, not after NER
                ner_s = time.perf_counter() - t0
                ner_cpu_s = time.thread_time() - cpu0 + _children_cpu() - children0  # workers exited: counted
            except BaseException:
                stop.set()
                raise
            ner_done.set()
            embeddings, embed_s, dim = future.result()
    finally:
        torch.set_num_threads(full)
    return _NerEmbed(mentions, embeddings, ner_s, embed_s, ner_cpu_s, recognizer.model_name, dim)


def _children_cpu() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


@dataclass
class _EntityTables:
    entities: dict[str, list[Any]]
    mentions: dict[str, list[Any]]
    records: list[EntityRecord]
    lookupable: np.ndarray
    title_ids: set[str]
    alias_pairs: list[tuple[str, str]] = field(default_factory=list)  # (alias id, full-name id), both kept


def _add_title_anchors(sentences: _SentenceRows, paragraphs: Sequence[Paragraph], m_cols: dict[str, list[Any]],
                       add: Callable[[str, str, str, int, int, str], None]) -> set[str]:
    """Add each document title as a mention (kind "title") at its document's first sentence, once per document
    (``p.source``, else the title); returns the title entities' ids."""
    # Title anchors: a document title is an entity anchored to its first sentence.
    first_sentence: dict[str, str] = {}
    for sid, pid in zip(sentences.ids, sentences.paragraph_ids):
        first_sentence.setdefault(pid, sid)
    anchored_titles: set[str] = set()
    title_ids: set[str] = set()
    for p in paragraphs:
        sid = first_sentence.get(p.id)
        if not p.title or sid is None:
            continue
        doc_key = p.source or p.title
        if doc_key in anchored_titles:  # a chunked document anchors its title once, at chunk 0
            continue
        anchored_titles.add(doc_key)
        before = len(m_cols["entity_id"])
        add(sid, TITLE_LABEL, p.title, -1, -1, "title")
        if len(m_cols["entity_id"]) > before:
            title_ids.add(m_cols["entity_id"][-1])
    return title_ids


def _entity_columns(meta: dict[str, tuple[str, str]], surfaces: dict[str, Counter[str]], m_cols: dict[str, list[Any]]
                    ) -> tuple[dict[str, list[Any]], list[EntityRecord], list[bool]]:
    """The entities table's columns (sorted by id, the invalid-target filter applied), each entity's record and
    whether it is lookupable."""
    # the truncated-alias rule compares a person's single name with longer known person names
    known = {c for c, label in meta.values() if label == "PERSON"}
    counts = Counter(m_cols["entity_id"])
    e_cols: dict[str, list[Any]] = {k: [] for k in ("id", "name", "surface", "label", "lookupable", "reject_reason", "mentions")}
    records: list[EntityRecord] = []
    lookupable: list[bool] = []
    for eid in sorted(meta):
        row = entity_row(eid, *meta[eid], surfaces[eid], counts[eid], known)
        for col, val in zip(e_cols, row):
            e_cols[col].append(val)
        records.append(EntityRecord(id=eid, canonical=row[1], label=row[3], surface=row[2]))
        lookupable.append(row[4])
    return e_cols, records, lookupable


def build_entities(
    sentences: _SentenceRows, mentions: list[list[Any]], paragraphs: Sequence[Paragraph], *, link_title_mentions: bool = False,
    merge_person_aliases: bool = False, title_index: Mapping[tuple[str, ...], str] | None = None,
) -> _EntityTables:
    """Group mentions into canonical entities, add title anchors (and, with ``link_title_mentions``, a mention of a
    title's entity wherever a sentence names it: :func:`_add_title_mentions`; with ``merge_person_aliases``, truncated
    person names re-pointed at the full name: :func:`_merge_person_aliases`), apply the invalid-target filter. The
    defaults are the paper's rules (``BuildConfig`` preset paper). ``title_index``: the corpus-wide
    ``title_mention_index`` when ``paragraphs`` is a part of the corpus (the Ray engine's per-document groups)."""
    surfaces: dict[str, Counter[str]] = defaultdict(Counter)
    meta: dict[str, tuple[str, str]] = {}  # id -> (canonical, label)
    m_cols: dict[str, list[Any]] = {k: [] for k in ("sentence_id", "entity_id", "surface", "start", "end", "kind")}
    seen_pairs: set[tuple[str, str, int]] = set()

    def add(sid: str, label: str, surface: str, start: int, end: int, kind: str) -> None:
        canonical = canonicalize(surface)
        if not canonical:
            return
        eid = entity_id(label, canonical)
        key = (sid, eid, start)
        if key in seen_pairs:
            return
        seen_pairs.add(key)
        meta[eid] = (canonical, label)
        surfaces[eid][surface] += 1
        for col, val in zip(m_cols, (sid, eid, surface, start, end, kind)):
            m_cols[col].append(val)

    for sid, found in zip(sentences.ids, mentions):
        for m in found:
            add(sid, m.label, m.surface, m.start, m.end, "ner")

    title_ids = _add_title_anchors(sentences, paragraphs, m_cols, add)
    if link_title_mentions:
        _add_title_mentions(sentences, paragraphs, m_cols, meta, add, title_index)

    alias_pairs = _merge_person_aliases(m_cols, meta, surfaces, sentences, paragraphs) if merge_person_aliases else []

    e_cols, records, lookupable = _entity_columns(meta, surfaces, m_cols)
    return _EntityTables(e_cols, m_cols, records, np.array(lookupable, dtype=bool), title_ids, alias_pairs)


def entity_row(eid: str, canonical: str, label: str, surfaces: Mapping[str, int], mentions: int,
               known_persons: Collection[str]) -> tuple[str, str, str, str, bool, str, int]:
    """One ``entities`` row ``(id, name, surface, label, lookupable, reject_reason, mentions)``: the invalid-target
    filter (``known_persons``: the canonical names of every PERSON entity of the corpus) and the display form of
    ``surfaces`` (surface -> count; as the build has always called it, ``display_form`` sees each distinct surface
    once, so the shortest surface wins, then the lexicographically first)."""
    reason = lookup_rejection(canonical, label, known_canonicals=known_persons)
    return eid, canonical, display_form(surfaces), label, reason is None, reason or "", mentions


def _add_title_mentions(sentences: _SentenceRows, paragraphs: Sequence[Paragraph], m_cols: dict[str, list[Any]],
                        meta: dict[str, tuple[str, str]], add: Callable[..., None],
                        index: Mapping[tuple[str, ...], str] | None = None) -> None:
    """Record a mention of a document's TITLE entity in every sentence whose text names it (``title_mentions``).

    NER tags names, not common nouns: "was a Canadian politician" mentions no entity, so nothing links a person to
    the article "Politician" (PopQA's occupation questions put their second gold paragraph there). A title anchor
    (paper appendix "Graph construction") ties a title to its first sentence only; this ties it to the sentences that
    use its name, so the article becomes a LOOKUP target from them. Names that NER already found in the sentence are
    skipped (the title rule links that entity to the title), as are names shared by several titles.
    """
    if index is None:
        index = title_mention_index([p.title for p in paragraphs if p.title])
    if not index:
        return
    longest = max(len(k) for k in index)
    named: dict[str, set[str]] = defaultdict(set)  # sentence id -> canonical names mentioned so far
    for sid, eid in zip(m_cols["sentence_id"], m_cols["entity_id"]):
        named[sid].add(meta[eid][0])
    for sid, text in zip(sentences.ids, sentences.texts):
        for title in title_mentions(text, index, longest):
            if title_name(title) not in named[sid]:
                add(sid, TITLE_LABEL, title, -1, -1, "title_mention")


def _merge_person_aliases(m_cols: dict[str, list[Any]], meta: dict[str, tuple[str, str]], surfaces: dict[str, Counter[str]],
                          sentences: _SentenceRows, paragraphs: Sequence[Paragraph]) -> list[tuple[str, str]]:
    """Re-point each paragraph's truncated person aliases at the entity they name (``person_aliases``), in place.

    A mention of ``Obama`` in a paragraph that also names ``Barack Obama`` (and no other Obama) becomes a mention of
    the ``barack obama`` entity (its surface is kept); ``Peder Lauritz Sørensen`` in the article titled
    ``S. P. L. Sørensen`` becomes a mention of the PERSON entity ``s p l sørensen`` (created if the corpus has no such
    mention; the title rule links it to the article's TITLE entity), so a PERSON mention keeps its label. The target's
    display form is computed from its own
    surfaces only. An alias entity left with no mention disappears; one still mentioned elsewhere is returned as an
    ``(alias id, full-name id)`` pair, linked as an ``alias`` synonym, so the identity the shared surname gave the
    other articles' mentions (a film's "directed by Schneider") survives.
    """
    par_of = dict(zip(sentences.ids, sentences.paragraph_ids))
    rows_of: dict[str, list[int]] = defaultdict(list)
    persons: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for i, (sid, eid) in enumerate(zip(m_cols["sentence_id"], m_cols["entity_id"])):
        canonical, label = meta[eid]
        if label == "PERSON":
            pid = par_of[sid]
            rows_of[pid].append(i)
            persons[pid].add((eid, canonical))
    title_of = {p.id: p.title for p in paragraphs}
    pairs: set[tuple[str, str]] = set()
    touched: set[str] = set()
    for pid in sorted(persons):
        title = None
        if title_of.get(pid):
            tid = entity_id(TITLE_LABEL, canonicalize(title_of[pid]))
            if tid in meta:
                title = (tid, title_name(title_of[pid]))
        aliases = person_aliases(sorted(persons[pid]), title)
        if title is not None and title[0] in aliases.values():
            # a PERSON mention stays a PERSON mention (answer typing reads mention labels): an alias of the article's
            # title becomes a mention of the PERSON entity named like the title (linked to the TITLE by the title rule)
            person = entity_id("PERSON", title[1])
            if person not in meta:
                meta[person] = (title[1], "PERSON")
                surfaces[person][_TRAILING_PAREN.sub("", title_of[pid]).strip()] += 1
            aliases = {a: (person if t == title[0] else t) for a, t in aliases.items() if a != person}
        for i in rows_of[pid] if aliases else ():
            target = aliases.get(m_cols["entity_id"][i])
            if target is not None:
                touched.add(m_cols["entity_id"][i])
                pairs.add((m_cols["entity_id"][i], target))
                m_cols["entity_id"][i] = target
    if touched:
        left: dict[str, Counter[str]] = defaultdict(Counter)
        for eid, surface in zip(m_cols["entity_id"], m_cols["surface"]):
            if eid in touched:
                left[eid][surface] += 1
        for eid in touched:
            if left.get(eid):
                surfaces[eid] = left[eid]
            else:
                del meta[eid], surfaces[eid]
    return sorted((a, b) for a, b in pairs if a in meta and b in meta)


def build_graph(
    inputs: Sequence[CorpusSpec],
    graph_dir: str | Path,
    config: BuildConfig | None = None,
    *,
    limit: int | None = None,
    force: bool = False,
    progress: bool = True,
    on_stage: Callable[[str], None] | None = None,
) -> BuildResult:
    """Build (or reuse) the artifact in ``graph_dir``. Loading into a store is separate (see ``load_graph``).

    Holds ``graph_dir/.lock`` throughout (BusyError when another process holds it)."""
    graph_dir = Path(graph_dir)
    # a failed build into a new directory leaves nothing behind (the lock removes the directory it created)
    with exclusive_lock(graph_dir, "--out directory"):
        return _build_locked(inputs, graph_dir, config, limit=limit, force=force, progress=progress, on_stage=on_stage)


def _cached_counts(graph_dir: Path, chash: str) -> dict[str, int] | None:
    """The counts of the artifact already in ``graph_dir`` when it is this build's (same content hash and format,
    files matching their digests), else None (no manifest, another build's, or damaged: rebuilt)."""
    manifest_path = graph_dir / art.MANIFEST
    if not manifest_path.exists():
        return None
    try:
        old = json.loads(manifest_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        old = {}
    if old.get("content_hash") != chash or old.get("format_version") != art.FORMAT_VERSION:
        return None
    try:  # a cache hit only on files that are the ones the manifest describes
        art.Artifact.open(graph_dir, verify=True)
    except InputError as exc:
        log.warning("%s -- rebuilding", exc)
        return None
    return dict(old.get("counts", {}))


def _link_stage(ent: _EntityTables, dim: int, config: BuildConfig) -> tuple[np.ndarray, list[Any]]:
    """Embed the lookupable entities' names (others keep a zero row: [n_entities, dim] float32) and link them into
    synonym edges; returns (name vectors, edges)."""
    names = [r.surface for r, ok in zip(ent.records, ent.lookupable) if ok]
    name_vecs = np.zeros((len(ent.records), dim), dtype=np.float32)
    if names:
        name_vecs[ent.lookupable] = get_embedder(config.embedding_model, config.device, config.embedding_backend).encode(
            names, batch_size=config.embed_batch_size, lanes=encode_lanes(torch.get_num_threads()))
    edges = link_entities(
        ent.records,
        title_ids=ent.title_ids,
        embeddings=name_vecs,
        lookupable=ent.lookupable,
        top_k=config.link_top_k,
        min_cosine=config.link_min_cosine,
        alias_pairs=ent.alias_pairs,
        spelling_links=config.spelling_links,
    )
    return name_vecs, edges


@contextmanager
def _publishing(staging: Path, graph_dir: Path) -> Iterator[None]:
    """Publish ``staging`` as ``graph_dir``'s artifact once the block has written it; on any failure discard it,
    an OSError (full disk, quota, read-only mount) raised as one HarnessError line with the old artifact untouched."""
    try:
        yield
        art.publish(staging, graph_dir)
    except BaseException as exc:
        reason = os_error_reason(exc, staging) if isinstance(exc, OSError) else ""  # before the space is freed
        art.discard_staging(staging, graph_dir)  # kept when the publish failed after its commit: it is the artifact
        if isinstance(exc, OSError):  # a full disk, a quota, a read-only mount: one line, the old artifact untouched
            kept = f"{graph_dir} keeps its previous graph" if (graph_dir / art.MANIFEST).exists() else "nothing was published"
            raise HarnessError(f"cannot write the graph artifact in {staging}: {reason}; {kept}") from exc
        raise


def _build_locked(
    inputs: Sequence[CorpusSpec],
    graph_dir: Path,
    config: BuildConfig | None,
    *,
    limit: int | None,
    force: bool,
    progress: bool,
    on_stage: Callable[[str], None] | None,
) -> BuildResult:
    config = config or BuildConfig()
    art.remove_staging(graph_dir)  # left by a build that died; we hold the lock, so no build is using it
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}  # BuildResult.cpu_seconds
    stage = on_stage or (lambda name: None)
    workers = resolve_workers(config)

    t0, c = time.perf_counter(), _cpu_now()
    stage("read")
    dataset = read_inputs(inputs, config, limit)
    chash = content_hash(dataset, config)
    corpus_tokens = sum(len(p.text.split()) for p in dataset.paragraphs)
    seconds["read"], cpu["read"] = time.perf_counter() - t0, _cpu_now() - c

    cached = None if force else _cached_counts(graph_dir, chash)
    if cached is not None:
        return BuildResult(graph_dir, True, cached, seconds, corpus_tokens, _peak_rss_mb())

    t, c = time.perf_counter(), _cpu_now()
    stage("split")
    sentences = split_paragraphs(dataset.paragraphs, progress)
    seconds["split"], cpu["split"] = time.perf_counter() - t, _cpu_now() - c

    t, c = time.perf_counter(), _cpu_now()
    stage("ner+embed")
    ne = _ner_and_embed(sentences.texts, config, progress, workers)
    mentions, embeddings, spacy_name, dim = ne.mentions, ne.embeddings, ne.spacy_name, ne.dim
    seconds["ner"], seconds["embed"] = ne.ner_s, ne.embed_s
    seconds["ner_embed_wall"], cpu["ner_embed_wall"] = time.perf_counter() - t, _cpu_now() - c
    cpu["ner"], cpu["embed"] = ne.ner_cpu_s, cpu["ner_embed_wall"] - ne.ner_cpu_s

    t, c = time.perf_counter(), _cpu_now()
    stage("entities")
    ent = build_entities(sentences, mentions, dataset.paragraphs, link_title_mentions=config.title_mentions,
                         merge_person_aliases=config.person_alias_merge)
    seconds["entities"], cpu["entities"] = time.perf_counter() - t, _cpu_now() - c

    t, c = time.perf_counter(), _cpu_now()
    stage("link")
    name_vecs, edges = _link_stage(ent, dim, config)
    seconds["link"], cpu["link"] = time.perf_counter() - t, _cpu_now() - c

    t, c = time.perf_counter(), _cpu_now()
    stage("write")
    staging = art.staging_dir(graph_dir)  # the old artifact stays whole until publish() below
    with _publishing(staging, graph_dir):
        counts, manifest = _write_artifact(staging, inputs, dataset, sentences, ent, edges, embeddings, name_vecs, config, chash,
                                           limit, corpus_tokens, spacy_name, dim, seconds, t, workers=workers)
    cpu["write"] = _cpu_now() - c
    return BuildResult(graph_dir, False, counts, seconds, corpus_tokens, _peak_rss_mb(), cpu, workers)


def _write_tables(graph_dir: Path, dataset: Dataset, sentences: _SentenceRows, ent: _EntityTables,
                  edges: list[Any]) -> dict[str, int]:
    """The paragraph, sentence, entity, mention and synonym tables into ``graph_dir``; returns the artifact's counts
    (rows per table, lookupable entities, questions, NEXT edges)."""
    counts = {
        "paragraphs": art.write_table(
            graph_dir,
            "paragraphs",
            {
                "id": [p.id for p in dataset.paragraphs],
                "title": [p.title for p in dataset.paragraphs],
                "text": [p.text for p in dataset.paragraphs],
                "source": [p.source for p in dataset.paragraphs],
            },
        ),
        "sentences": art.write_table(
            graph_dir,
            "sentences",
            {
                "id": sentences.ids,
                "paragraph_id": sentences.paragraph_ids,
                "position": sentences.positions,
                "title": sentences.titles,
                "text": sentences.texts,
            },
        ),
        "entities": art.write_table(graph_dir, "entities", ent.entities),
        "mentions": art.write_table(graph_dir, "mentions", ent.mentions),
        "synonyms": art.write_table(
            graph_dir,
            "synonyms",
            {
                "src": [e.src for e in edges],
                "dst": [e.dst for e in edges],
                "kind": [e.kind for e in edges],
                "score": [float(e.score) for e in edges],
            },
        ),
    }
    counts["lookupable_entities"] = int(ent.lookupable.sum())
    counts["questions"] = len(dataset.questions)
    counts["next_edges"] = sum(
        1 for a, b in zip(sentences.paragraph_ids, sentences.paragraph_ids[1:]) if a == b
    )
    return counts


def _manifest(graph_dir: Path, inputs: Sequence[CorpusSpec], dataset: Dataset, edges: list[Any], config: BuildConfig,
              chash: str, limit: int | None, corpus_tokens: int, spacy_name: str, dim: int, counts: dict[str, int],
              seconds: dict[str, float], workers: int, extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """The artifact's manifest: what was built from what, how, and the digests of the files already in ``graph_dir``."""
    return {
        "format_version": art.FORMAT_VERSION,
        "harness_g_version": __version__,
        "pipeline_version": PIPELINE_VERSION,
        "content_hash": chash,
        "dataset": dataset.name,
        "inputs": [{"format": s.format, "path": str(s.path)} for s in inputs],
        "limit": limit,
        "config": config.to_dict(),
        "config_sources": sources(config),
        "models": {"spacy": spacy_name, "embedding": config.embedding_model, "embedding_dim": dim,
                   "embedding_backend": config.embedding_backend},
        "counts": counts,
        "corpus_tokens": corpus_tokens,
        "synonym_kinds": dict(Counter(e.kind for e in edges)),
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "workers": workers,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **(extra or {}),
        "files": art.file_digests(graph_dir),
    }


def _write_artifact(graph_dir: Path, inputs: Sequence[CorpusSpec], dataset: Dataset, sentences: _SentenceRows,
                    ent: _EntityTables, edges: list[Any], embeddings: np.ndarray, name_vecs: np.ndarray,
                    config: BuildConfig, chash: str, limit: int | None, corpus_tokens: int, spacy_name: str, dim: int,
                    seconds: dict[str, float], t: float, *, workers: int = 1,
                    extra: Mapping[str, Any] | None = None) -> tuple[dict[str, int], dict[str, Any]]:
    """Every artifact file into ``graph_dir`` (a staging directory), the manifest with their digests last
    (``workers``: the NER processes that ran, recorded beside ``seconds``; ``extra``: more manifest keys, e.g. the
    Ray engine's ``engine`` and ``shards``)."""
    counts = _write_tables(graph_dir, dataset, sentences, ent, edges)
    art.write_embeddings(graph_dir, embeddings)
    art.write_embeddings(graph_dir, name_vecs, art.ENTITY_EMBEDDINGS)  # the menu ranks LOOKUP targets with these
    art.write_questions(graph_dir, dataset.questions)
    seconds["write"] = time.perf_counter() - t
    manifest = _manifest(graph_dir, inputs, dataset, edges, config, chash, limit, corpus_tokens, spacy_name, dim,
                         counts, seconds, workers, extra)
    art.write_manifest(graph_dir, manifest)
    return counts, manifest
