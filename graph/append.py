"""``harness-g build --append``: add documents (and their questions) to an existing GRAPH_DIR and its store.

The result is the graph a full build of the union would give (old inputs first, then the new ones): every table
equal after a canonical sort, embeddings equal up to the encoder's batching noise (``tests/e2e/test_append.py``).
What is computed for the new documents only, and what is re-derived for the union:

- **split, NER, sentence embeddings** (the expensive stages): the new paragraphs only. The old sentences, their
  vectors and their NER mentions are read back from the artifact (``sentences.parquet``, ``sentence_embeddings.npy``,
  the ``ner`` rows of ``mentions.parquet``); no old text is run through spaCy or the encoder again.
- **entities** (:func:`harness_g.graph.build.build_entities`) is re-run in memory over the union's mention list, the
  old one rebuilt from the artifact (:func:`_stored_ner_mentions`: a merged alias's pre-merge entity is
  ``entity_id(PERSON, canonicalize(surface))``, its surface being kept). It is linear in the graph's mentions (no
  model runs) and it has to be, because four of its rules are global, each of which a delta can change for *old*
  entities and sentences:
  title anchors (one per document key ``source or title`` across the corpus: a new paragraph whose key is already
  anchored gets none); title mentions (``title_mentions``: the index is built from every title, so a new title adds
  mentions to old sentences that name it, and a new title sharing an old title's name removes that name's mentions);
  the invalid-target filter (a one-word PERSON is rejected when a longer known person name ends in it: a new
  "Barack Obama" makes an old "Obama" not lookup-able); the person-alias merge (document-local, but a merged-away
  alias entity survives when a new document mentions it unmerged, and a PERSON made from a title gets its title
  surface only when no document names it). Entity rows (surface, mentions count, lookupable, reject reason) are
  then compared with the old ones: the *changed entities* are the new ids, the removed ids and the ids whose row
  differs.
- **entity name vectors**: encoded only for the entities that are lookup-able and have no stored vector for the
  same display name (new ids, a changed display form, newly lookup-able); the others are reused.
- **links** (:func:`link_delta`): the rule links (title, canonical, alias, abbreviation) are hash joins over the
  entity records, re-derived for the union in memory (linear). The embedding links (each lookup-able entity's
  top-``link_top_k`` neighbours at cosine >= ``link_min_cosine``, the quadratic part) are recomputed only for the
  *affected* entities: changed vectors (new, re-encoded, removed from the lookup-able set), entities whose rule links
  changed (a rule link excludes a pair from the embedding ranking), entities with a cosine >= ``link_min_cosine``
  to a new or changed vector, and the old embedding neighbours of all of these (an undirected edge may come from
  either end's list). Every other entity's neighbour list is provably unchanged, so its stored edges are kept.
- **hub samples** (:mod:`harness_g.graph.stores.hub_sample`, ``EnvConfig.lookup_hub_sample``): recomputed for the
  union at the store's own size (``GraphMeta.hub_sample``) and compared with the store's ``pool_sample`` properties
  (:func:`~harness_g.graph.stores.loader.sample_delta`): only entities whose sample changed are written. A store without hub samples (loaded by an
  older harness-g) gets a full load.

**Atomicity.** The artifact: the union is written into ``GRAPH_DIR/.staging-<pid>/`` and published with the build's
own atomic switch (:func:`harness_g.graph.artifact.publish`), under ``GRAPH_DIR/.lock``: a crash at any instant
leaves the old graph or the new one, each complete. The store (:func:`load_delta`) receives only the delta
(deletions first, then MERGE upserts), between a ``GraphMeta`` marked with a pending hash (``complete=false``) and the
new content hash marked complete. A store interrupted mid-delta is never taken for either graph: the next command
that opens it (every read goes through ``load_graph``) sees an incomplete load of another hash and reloads the
artifact whole. A store that does not hold the old graph completely (never loaded, another version) gets a full load.

**Content hash.** A build's hash is over its inputs in order, and the artifact does not keep what a reader gave
(the datasets' own sentence splits), so an appended graph's hash is chained: ``sha256("append", old hash, hash of
the delta's inputs under the same config)``. It differs from the hash of a fresh build of the union, whose tables it
equals; rebuilding the union into the directory is therefore a rebuild, not a cache hit.

**What the graph already holds.** Question sets that share context paragraphs (HotpotQA, 2Wiki) append to each
other: a paragraph of the inputs whose id (a hash of its title and text) is in the graph with the same title, text
and sentence split is reused as stored (split only for that check; not NER'd, embedded or sent to the store again;
its ``source`` stays the stored one, as a full build keeps a paragraph's first copy), and the new questions' gold
sentence and paragraph ids point at it; a question whose id is in the graph with the same content is skipped. Both
are counted in the summary and in the manifest's ``appends`` entry (:func:`new_inputs`). A question set over
documents the graph holds adds only its questions.

**Refused** (one line, nothing written): a GRAPH_DIR that is not a harness-g artifact, a build config whose hashed
fields differ from the graph's (naming the first), a paragraph id in the graph with another title, text or sentence
split, a question id in the graph with other content (naming the field), and inputs with nothing new.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from harness_g.config_loader import from_mapping
from harness_g.errors import ConfigError, HarnessError, InputError, os_error_reason
from harness_g.graph import artifact as art
from harness_g.graph.build import (BuildResult, CorpusSpec, _cpu_now, _EntityTables, _ner_and_embed, _NerEmbed,
                                   _peak_rss_mb, _SentenceRows, _write_artifact, build_entities, content_hash,
                                   encode_lanes, read_inputs, resolve_workers, split_paragraphs)
from harness_g.graph.config import BuildConfig
from harness_g.graph.embed import get_embedder
from harness_g.graph.locks import exclusive_lock
from harness_g.graph.stores.loader import sample_delta, write_sample_rows
from harness_g.graph.text.linking import (SynonymEdge, add_embedding_candidates, embedding_candidates_of,
                                          excluded_columns, link_entities)
from harness_g.graph.types import Dataset, Mention, Paragraph, QAItem

#: ``GraphMeta.content_hash`` while a delta is being applied: never an artifact's hash, so an interrupted delta
#: is reloaded whole by the next ``load_graph``
PENDING_SUFFIX = "+append-pending"
EMBEDDING_KIND = "embedding"


@dataclass
class StoreDelta:
    """What the store needs to go from the old artifact (``base_hash``) to the new one (``content_hash``).

    Row dicts are in the ``load_*`` queries' shapes; ``sentences`` rows carry ``embedding`` as float32 ``(dim,)``."""

    base_hash: str
    content_hash: str
    paragraphs: list[dict[str, Any]] = field(default_factory=list)
    sentences: list[dict[str, Any]] = field(default_factory=list)
    next_pairs: list[dict[str, str]] = field(default_factory=list)
    entities_upsert: list[dict[str, Any]] = field(default_factory=list)
    entities_delete: list[str] = field(default_factory=list)
    mentions_add: list[dict[str, Any]] = field(default_factory=list)
    mentions_delete: list[dict[str, Any]] = field(default_factory=list)
    synonyms_upsert: list[dict[str, Any]] = field(default_factory=list)
    synonyms_delete: list[dict[str, Any]] = field(default_factory=list)

    def sizes(self) -> dict[str, int]:
        """Rows per part, for the CLI and the report."""
        return {k: len(v) for k, v in vars(self).items() if isinstance(v, list)}


@dataclass
class AppendResult(BuildResult):
    """A build result plus what changed: ``delta`` for the store, ``affected`` counts (changed entities, entities
    whose embedding links were recomputed, name vectors encoded), the questions added and what was ``reused``."""

    delta: StoreDelta | None = None
    affected: dict[str, int] = field(default_factory=dict)
    #: questions added (the inputs' questions the graph did not hold)
    added_questions: int = 0
    #: the inputs' ``paragraphs`` and ``questions`` the graph already held, identical: reused, not added again
    reused: dict[str, int] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ checks
def open_base(graph_dir: Path) -> art.Artifact:
    """The GRAPH_DIR's artifact, sha256-verified; HarnessError (one line) when it is not a harness-g graph."""
    art.remove_staging(graph_dir)  # finish or drop what a crashed build left (we hold the lock)
    try:
        base = art.Artifact.open(graph_dir, verify=True)
    except InputError as exc:
        raise InputError(f"cannot append: not a harness-g graph ({exc})") from None
    if not isinstance(base.manifest.get("config"), dict) or not base.manifest.get("content_hash"):
        raise InputError("cannot append: manifest.json records no build config (not made by `harness-g build`)",
                         str(graph_dir))
    return base


def check_config(manifest: dict[str, Any], config: BuildConfig) -> None:
    """ConfigError naming the first hashed build field (one that changes the graph) that differs from the graph's."""
    try:
        built = from_mapping(BuildConfig, dict(manifest["config"])).hashed_fields()
    except ConfigError as exc:
        raise ConfigError(f"cannot append: the graph's recorded build config does not load ({exc}); rebuild it") from None
    wanted = config.hashed_fields()
    for key in sorted(set(built) | set(wanted)):
        if built.get(key) != wanted.get(key):
            raise ConfigError(
                f"cannot append: build config field {key} is {json.dumps(wanted.get(key))}, the graph was built with "
                f"{json.dumps(built.get(key))} (an append must use the graph's config: --preset "
                f"{manifest['config'].get('preset', 'paper')} and the same --set values)")


@dataclass(frozen=True)
class NewInputs:
    """What an append adds: ``dataset`` holds the inputs' paragraphs and questions that the graph does not hold yet
    (input order), ``sentences`` the split of those paragraphs; ``reused_paragraphs`` and ``reused_questions`` count
    the inputs' paragraphs and questions the graph already holds with identical content (kept as stored)."""

    dataset: Dataset
    sentences: _SentenceRows
    reused_paragraphs: int
    reused_questions: int


def _stored_splits(base: art.Artifact, ids: set[str]) -> dict[str, list[tuple[int, str]]]:
    """``{paragraph id: [(position, sentence text), ...]}`` of the stored sentences of the paragraphs ``ids``."""
    t = base.table("sentences", columns=["paragraph_id", "position", "text"])
    out: dict[str, list[tuple[int, str]]] = {}
    for pid, pos, text in zip(*(t.column(c).to_pylist() for c in ("paragraph_id", "position", "text"))):
        if pid in ids:
            out.setdefault(pid, []).append((pos, text))
    return out


def _check_same_paragraphs(base: art.Artifact, known: Sequence[Paragraph], progress: bool) -> None:
    """InputError (one line) naming the first paragraph of ``known`` (ids the graph holds) whose title, text or
    sentence split differs from the stored one: same id, other content. The ``source`` (provenance) may differ: the
    stored one is kept, as a full build keeps a paragraph's first copy."""
    if not known:
        return
    stored = {i: (ti, te) for i, ti, te in zip(*(base.table("paragraphs", columns=["id", "title", "text"]).column(c)
                                                   .to_pylist() for c in ("id", "title", "text")))}
    for p in known:
        if stored[p.id] != (p.title, p.text):
            raise InputError(f"cannot append: document {p.id} is in the graph with another title or text (titled "
                             f"{stored[p.id][0]!r}, the input's {p.title!r}); nothing was changed")
    splits = _stored_splits(base, {p.id for p in known})
    rows = split_paragraphs(known, progress)
    given: dict[str, list[tuple[int, str]]] = {}
    for pid, pos, text in zip(rows.paragraph_ids, rows.positions, rows.texts):
        given.setdefault(pid, []).append((pos, text))
    for p in known:
        old, new = splits.get(p.id, []), given.get(p.id, [])
        if old != new:
            at = next((k for k, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
            raise InputError(f"cannot append: document {p.id} titled {p.title!r} is in the graph split into {len(old)} "
                             f"sentence(s), the input splits it into {len(new)} (first difference at sentence {at}), so "
                             "its sentence ids would not match; nothing was changed")


def _first_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    return next((k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)), "content")


def _new_questions(base: art.Artifact, questions: Sequence[QAItem]) -> tuple[tuple[QAItem, ...], int]:
    """``(questions the graph does not hold, how many it holds identically)``; InputError (one line) when a question
    id is in the graph with other content (question, answers, gold ids or metadata), naming the first field."""
    old = {q.id: json.loads(json.dumps(q.to_json())) for q in base.questions()}
    fresh: list[QAItem] = []
    same, clash = 0, []
    for q in questions:
        was = old.get(q.id)
        if was is None:
            fresh.append(q)
        elif was == json.loads(json.dumps(q.to_json())):  # as stored: JSON lists, not tuples
            same += 1
        else:
            clash.append((q.id, _first_difference(was, json.loads(json.dumps(q.to_json())))))
    if clash:
        raise InputError(f"cannot append: {len(clash)} question id(s) already in the graph with other content, e.g. "
                         f"{clash[0][0]!r} (its {clash[0][1]} differs); nothing was changed")
    return tuple(fresh), same


def new_inputs(base: art.Artifact, read: Dataset, progress: bool = False) -> NewInputs:
    """Split the inputs ``read`` into what the graph lacks and what it holds already: a paragraph whose id (a hash of
    its title and text) is in the graph with the same title, text and sentence split is reused, a question whose id
    is in the graph with the same content is skipped. InputError (one line, nothing written) on a paragraph or question
    id in the graph with other content, and when nothing is new."""
    old_ids = set(base.table("paragraphs", columns=["id"]).column("id").to_pylist())
    known = [p for p in read.paragraphs if p.id in old_ids]
    _check_same_paragraphs(base, known, progress)
    questions, same_questions = _new_questions(base, read.questions)
    fresh = tuple(p for p in read.paragraphs if p.id not in old_ids)
    if not fresh and not questions:
        held = [f"{len(known)} document(s)"] + ([f"{same_questions} question(s)"] if same_questions else [])
        raise InputError(f"cannot append: nothing new: the inputs' {' and '.join(held)} are all already in the graph "
                         f"(same title and text, e.g. {known[0].id} titled {known[0].title!r}); nothing was changed")
    dataset = Dataset(name=read.name, paragraphs=fresh, questions=questions)
    return NewInputs(dataset, split_paragraphs(fresh, progress), len(known), same_questions)


# ------------------------------------------------------------------------------------------------ old state
def _stored_paragraphs(base: art.Artifact) -> list[Paragraph]:
    t = base.table("paragraphs")
    return [Paragraph(id=i, title=ti, text=te, source=s or "") for i, ti, te, s in
            zip(*(t.column(c).to_pylist() for c in ("id", "title", "text", "source")))]


def _stored_sentences(base: art.Artifact) -> _SentenceRows:
    t = base.table("sentences")
    return _SentenceRows(*(t.column(c).to_pylist() for c in ("id", "paragraph_id", "position", "title", "text")))


def _stored_ner_mentions(base: art.Artifact, sentence_ids: Sequence[str]) -> list[list[Mention]]:
    """Each old sentence's NER mentions as the recogniser gave them (after its label filter and the build's
    de-duplication), in order: the ``ner`` rows of ``mentions.parquet``. A mention the person-alias merge re-pointed
    keeps its surface, and aliases and their targets are PERSON, so its label is its entity's label."""
    label = dict(zip(*(base.table("entities", columns=["id", "label"]).column(c).to_pylist() for c in ("id", "label"))))
    t = base.table("mentions")
    by_sentence: dict[str, list[Mention]] = {}
    for sid, eid, surface, start, end, kind in zip(*(t.column(c).to_pylist() for c in
                                                     ("sentence_id", "entity_id", "surface", "start", "end", "kind"))):
        if kind == "ner":
            by_sentence.setdefault(sid, []).append(Mention(surface=surface, label=label[eid], start=start, end=end))
    return [by_sentence.get(sid, []) for sid in sentence_ids]


def _concat_rows(a: _SentenceRows, b: _SentenceRows) -> _SentenceRows:
    return _SentenceRows(*(getattr(a, f) + getattr(b, f) for f in ("ids", "paragraph_ids", "positions", "titles", "texts")))


def chained_hash(base_hash: str, delta_hash: str) -> str:
    """The appended graph's content hash (module docstring)."""
    return hashlib.sha256(f"harness-g/append\n{base_hash}\n{delta_hash}\n".encode()).hexdigest()


# ------------------------------------------------------------------------------------------------ entity vectors
def entity_vectors(ent: _EntityTables, base: art.Artifact, config: BuildConfig, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(name_vecs [n_entities, dim] float32, encoded mask [n_entities] bool)``: a lookup-able entity reuses its
    stored vector when it was lookup-able with the same display name; the rest are encoded here."""
    old = base.table("entities", columns=["id", "surface", "lookupable"])
    old_vecs = base.entity_embeddings()
    old_row = {eid: i for i, (eid, ok) in enumerate(zip(old.column("id").to_pylist(), old.column("lookupable").to_pylist())) if ok}
    old_surface = old.column("surface").to_pylist()
    vecs = np.zeros((len(ent.records), dim), dtype=np.float32)
    encode = np.zeros(len(ent.records), dtype=bool)
    for i, (rec, ok) in enumerate(zip(ent.records, ent.lookupable)):
        if not ok:
            continue
        j = old_row.get(rec.id)
        if j is not None and old_vecs is not None and old_surface[j] == rec.surface:
            vecs[i] = old_vecs[j]
        else:
            encode[i] = True
    if encode.any():
        names = [r.surface for r, e in zip(ent.records, encode) if e]
        vecs[encode] = get_embedder(config.embedding_model, config.device, config.embedding_backend).encode(
            names, batch_size=config.embed_batch_size, lanes=encode_lanes(torch.get_num_threads()))
    return vecs, encode


# ------------------------------------------------------------------------------------------------ links
def link_delta(ent: _EntityTables, name_vecs: np.ndarray, encoded: np.ndarray, base: art.Artifact,
               config: BuildConfig) -> tuple[list[SynonymEdge], int]:
    """The union's SYNONYM edges (what ``link_entities`` over all entities gives) and how many entities' embedding
    neighbour lists were recomputed (module docstring: which, and why the others are unchanged)."""
    rules = link_entities(ent.records, title_ids=ent.title_ids, embeddings=None, lookupable=ent.lookupable,
                          top_k=config.link_top_k, min_cosine=config.link_min_cosine, alias_pairs=ent.alias_pairs,
                          spelling_links=config.spelling_links)
    rule_pairs = {(e.src, e.dst) for e in rules}
    old = base.table("synonyms")
    old_rule_pairs: set[tuple[str, str]] = set()
    old_emb: dict[tuple[str, str], float] = {}
    for s, d, kind, score in zip(*(old.column(c).to_pylist() for c in ("src", "dst", "kind", "score"))):
        if kind == EMBEDDING_KIND:
            old_emb[(s, d)] = score
        else:
            old_rule_pairs.add((s, d))

    sel = sorted((r.id, i) for i, (r, ok) in enumerate(zip(ent.records, ent.lookupable)) if ok)
    ids = [eid for eid, _ in sel]
    pos = {eid: k for k, eid in enumerate(ids)}
    emb = np.ascontiguousarray(name_vecs[[i for _, i in sel]], dtype=np.float32) if sel else np.zeros((0, 0), np.float32)
    changed_rows = [pos[ent.records[i].id] for _, i in sel if encoded[i]]
    old_lookupable = {eid for eid, ok in zip(*(base.table("entities", columns=["id", "lookupable"]).column(c).to_pylist()
                                                for c in ("id", "lookupable"))) if ok}
    gone = (old_lookupable - set(ids)) | {ids[r] for r in changed_rows}  # old vectors no longer in the ranking

    neighbours: dict[str, set[str]] = {}
    for a, b in old_emb:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    affected: set[str] = {ids[r] for r in changed_rows}
    for eid in gone:
        affected |= neighbours.get(eid, set())
    for a, b in rule_pairs ^ old_rule_pairs:
        affected |= {a, b}
    if changed_rows and len(ids) > 1:
        close = (emb @ emb[changed_rows].T >= config.link_min_cosine).any(axis=1)
        affected |= {ids[k] for k in np.flatnonzero(close)}
    affected &= set(ids)
    recompute = set(affected)
    for eid in affected:
        recompute |= neighbours.get(eid, set()) & set(pos)

    edges: dict[tuple[str, str], SynonymEdge] = {(e.src, e.dst): e for e in rules}
    for (a, b), score in old_emb.items():  # both ends' lists unchanged: the edge stays
        if a not in affected and b not in affected and a in pos and b in pos and (a, b) not in edges:
            edges[(a, b)] = SynonymEdge(a, b, EMBEDDING_KIND, score)
    if len(ids) > 1 and config.link_top_k > 0:  # the full build's ranking (linking.embedding_candidates), these rows
        fresh = embedding_candidates_of(emb, excluded_columns(ids, rule_pairs), sorted(pos[e] for e in recompute),
                                        config.link_top_k, config.link_min_cosine)
        add_embedding_candidates(edges, ids, *fresh)  # a pair's first candidate sets its score; rule edges stay
    return [edges[k] for k in sorted(edges)], len(recompute)


# ------------------------------------------------------------------------------------------------ store delta
def _rows(table: Any, columns: Sequence[str]) -> list[dict[str, Any]]:
    return [dict(zip(columns, values)) for values in zip(*(table.column(c).to_pylist() for c in columns))]


def _entity_rows(ent: _EntityTables) -> list[dict[str, Any]]:
    cols = ent.entities
    return [dict(zip(cols, values)) for values in zip(*cols.values())]


def store_delta(base: art.Artifact, chash: str, new_paragraphs: Sequence[Paragraph], new_sentences: _SentenceRows,
                new_embeddings: np.ndarray, ent: _EntityTables, edges: list[SynonymEdge]) -> StoreDelta:
    """The rows the store must receive (new nodes and edges, changed entities and links) and delete."""
    delta = StoreDelta(base_hash=base.content_hash, content_hash=chash)
    delta.paragraphs = [{"id": p.id, "title": p.title, "text": p.text, "source": p.source} for p in new_paragraphs]
    delta.sentences = [{"id": i, "paragraph_id": p, "position": pos, "title": t, "text": x, "embedding": v}
                       for i, p, pos, t, x, v in zip(new_sentences.ids, new_sentences.paragraph_ids,
                                                     new_sentences.positions, new_sentences.titles, new_sentences.texts,
                                                     new_embeddings)]
    order = sorted(range(len(new_sentences.ids)), key=lambda i: (new_sentences.paragraph_ids[i], new_sentences.positions[i]))
    delta.next_pairs = [{"src": new_sentences.ids[a], "dst": new_sentences.ids[b]} for a, b in zip(order, order[1:])
                        if new_sentences.paragraph_ids[a] == new_sentences.paragraph_ids[b]]

    ecols = list(art.SCHEMAS["entities"].names)
    old_entities = {r["id"]: r for r in _rows(base.table("entities"), ecols)}
    new_entities = {r["id"]: r for r in _entity_rows(ent)}
    delta.entities_upsert = [r for eid, r in new_entities.items() if old_entities.get(eid) != r]
    delta.entities_delete = sorted(set(old_entities) - set(new_entities))

    mcols = list(art.SCHEMAS["mentions"].names)
    old_m = Counter(tuple(r.values()) for r in _rows(base.table("mentions"), mcols))
    new_m = Counter(zip(*(ent.mentions[c] for c in mcols)))
    delta.mentions_add = [dict(zip(mcols, k)) for k in sorted((new_m - old_m).elements())]
    delta.mentions_delete = [dict(zip(mcols, k)) for k in sorted((old_m - new_m).elements())]

    old_s = {(r["src"], r["dst"], r["kind"]): float(np.float32(r["score"]))
             for r in _rows(base.table("synonyms"), ["src", "dst", "kind", "score"])}
    new_s = {(e.src, e.dst, e.kind): float(np.float32(e.score)) for e in edges}
    delta.synonyms_upsert = [{"src": s, "dst": d, "kind": k, "score": v} for (s, d, k), v in sorted(new_s.items())
                             if old_s.get((s, d, k)) != v]
    delta.synonyms_delete = [{"src": s, "dst": d, "kind": k} for (s, d, k) in sorted(set(old_s) - set(new_s))]
    return delta


def _batches(rows: list[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


def apply_delta(store: Any, artifact: art.Artifact, delta: StoreDelta, *, batch_size: int = 2000) -> dict[str, float]:
    """Send ``delta`` to a store that holds ``delta.base_hash`` completely; seconds per part.

    GraphMeta carries a pending hash (complete=false) until every part is written, then ``artifact``'s hash,
    complete (module docstring). Deletions go first (a re-kinded SYNONYM pair is deleted, then created)."""
    from harness_g.graph.stores.base import meta_params
    from harness_g.graph.stores.loader import utc_now

    seconds: dict[str, float] = {}
    hub_sample = (store.meta() or {}).get("hub_sample")  # the size the store's samples have
    store.write("meta_begin", meta_params(artifact, hub_sample, delta.content_hash + PENDING_SUFFIX))
    sentence_batch = max(1, min(batch_size, 262_144 // max(1, artifact.embedding_dim)))
    parts = (
        ("synonyms_delete", "delta_delete_synonyms", delta.synonyms_delete, batch_size),
        ("mentions_delete", "delta_delete_mentions", delta.mentions_delete, batch_size),
        ("entities_delete", "delta_delete_entities", [{"id": i} for i in delta.entities_delete], batch_size),
        ("paragraphs", "load_paragraphs", delta.paragraphs, batch_size),
        ("sentences", "load_sentences", delta.sentences, sentence_batch),
        ("entities", "load_entities", delta.entities_upsert, batch_size),
        ("contains", "load_contains", [{"id": r["id"], "paragraph_id": r["paragraph_id"], "position": r["position"]}
                                       for r in delta.sentences], batch_size),
        ("next", "load_next", delta.next_pairs, batch_size),
        ("mentions", "load_mentions", delta.mentions_add, batch_size),
        ("synonyms", "load_synonyms", delta.synonyms_upsert, batch_size),
    )
    for name, query, rows, size in parts:
        t = time.perf_counter()
        for batch in _batches(rows, size):
            if query == "load_sentences":
                batch = [{**r, "embedding": store.encode_vector(np.asarray(r["embedding"], dtype=np.float32))} for r in batch]
            store.write_batch(query, batch)
        seconds[name] = time.perf_counter() - t
    t = time.perf_counter()
    if hub_sample is not None:  # a store without samples stays without (GraphMeta.hub_sample null): load_delta
        # loads such a store whole instead
        write_sample_rows(store.write_batch, sample_delta(store, artifact, int(hub_sample)), int(hub_sample),
                          batch_size)
    seconds["pool_samples"] = time.perf_counter() - t
    t = time.perf_counter()
    store.ensure_vector_index(artifact.embedding_dim)  # present already: a no-op
    store.wait_for_indexes(600.0)
    seconds["indexes"] = time.perf_counter() - t
    store.write("meta_begin", meta_params(artifact, hub_sample, delta.content_hash))
    if not store.write("meta_complete", {"content_hash": delta.content_hash, "loaded_at": utc_now()}):
        raise HarnessError(f"the append's store update was superseded by another load of {store.where}")
    return seconds


def load_delta(graph_dir: str | Path, spec: str | None, delta: StoreDelta | None, *, progress: bool = True) -> tuple[Any, str, dict[str, float]]:
    """Bring the GRAPH_DIR's store to its (appended) artifact: the delta when the store holds the base graph
    completely, else a full load. ``(store, "delta" | "full load" | "already loaded", seconds)``; the caller closes
    the store."""
    from harness_g.graph.load import LoadReport, load_graph, refuse_other_graph, remember_store, remembered_store, store_for_graph

    artifact = art.Artifact.open(graph_dir, verify=True)
    store = store_for_graph(graph_dir, spec)
    try:
        refuse_other_graph(store, artifact, "load")
        meta = store.meta() or {}
        holds_base = (delta is not None and meta.get("complete") is True and meta.get("content_hash") == delta.base_hash
                      and meta.get("hub_sample") is not None)  # a store without hub samples is loaded whole
    except BaseException:
        store.close()
        raise
    if not holds_base:
        store.close()
        store, report = load_graph(graph_dir, spec, progress=progress)
        assert isinstance(report, LoadReport)
        return store, ("already loaded" if report.skipped else "full load"), dict(report.seconds)
    try:
        t = time.perf_counter()
        seconds = apply_delta(store, artifact, delta)
        store._after_load(LoadReport())  # the embedded FalkorDB's snapshot, as after a load
        seconds["total"] = time.perf_counter() - t
    except BaseException:
        store.close()
        raise
    remember_store(graph_dir, spec or remembered_store(graph_dir))
    return store, "delta", seconds


# ------------------------------------------------------------------------------------------------ the append
def append_graph_dir(out: str | Path) -> Path:
    """``out`` when it holds a graph's manifest; else a one-line InputError (checked before the lock, which would
    create the directory)."""
    graph_dir = Path(out)
    if not (graph_dir / art.MANIFEST).is_file():
        raise InputError("cannot append: no manifest.json (not a harness-g graph; build it first with "
                         "`harness-g build ... --out GRAPH_DIR`)", str(graph_dir))
    return graph_dir


def append_graph(inputs: Sequence[CorpusSpec], graph_dir: str | Path, config: BuildConfig | None = None, *,
                 limit: int | None = None, progress: bool = True) -> AppendResult:
    """Add ``inputs`` (their paragraphs and questions) to the artifact in ``graph_dir``; publish the union atomically.

    Holds ``graph_dir/.lock``. Refusals (nothing written): see the module docstring. The store is not touched:
    :func:`load_delta` takes the returned ``delta``."""
    graph_dir = append_graph_dir(graph_dir)
    with exclusive_lock(graph_dir, "--out directory"):
        return _append_locked(inputs, graph_dir, config or BuildConfig(), limit=limit, progress=progress)


def _union_entities(base: art.Artifact, new_paragraphs: Sequence[Paragraph], new_sentences: _SentenceRows,
                    new_mentions: list[Mention], config: BuildConfig
                    ) -> tuple[_SentenceRows, tuple[Paragraph, ...], _EntityTables]:
    """The stored and the new sentences and paragraphs as one corpus (stored first), and its entity tables rebuilt
    from the stored NER mentions plus the new ones; returns (sentence rows, paragraphs, entity tables)."""
    old_sentences = _stored_sentences(base)
    sentences = _concat_rows(old_sentences, new_sentences)
    mentions = _stored_ner_mentions(base, old_sentences.ids) + new_mentions
    paragraphs = (*_stored_paragraphs(base), *new_paragraphs)
    ent = build_entities(sentences, mentions, paragraphs, link_title_mentions=config.title_mentions,
                         merge_person_aliases=config.person_alias_merge)
    return sentences, paragraphs, ent


def _union_dataset(base: art.Artifact, new: Dataset, paragraphs: Sequence[Paragraph]) -> Dataset:
    """The union's dataset: its name the base's and the new names joined by "+" (each once), the base's questions
    then the new ones."""
    names = [*str(base.manifest.get("dataset") or "").split("+"), *new.name.split("+")]
    return Dataset(name="+".join(dict.fromkeys(n for n in names if n)), paragraphs=paragraphs,
                   questions=(*base.questions(), *new.questions))


def _record_append(manifest: dict[str, Any], base: art.Artifact, inputs: Sequence[CorpusSpec], limit: int | None,
                   added: NewInputs, new_tokens: int, delta: StoreDelta, seconds: dict[str, float]) -> None:
    """Make the union's ``manifest`` (in place) list the base's inputs before the new ones, keep the base's limit,
    and add this append to its ``appends`` history (what it added and what it reused)."""
    new = added.dataset
    manifest["inputs"] = [*base.manifest.get("inputs", []), *manifest["inputs"]]
    manifest["limit"] = base.manifest.get("limit")
    manifest["appends"] = [*base.manifest.get("appends", []), {
        "base_content_hash": base.content_hash, "inputs": [{"format": s.format, "path": str(s.path)} for s in inputs],
        "limit": limit, "paragraphs": len(new.paragraphs), "sentences": len(added.sentences.ids),
        "questions": len(new.questions), "reused_paragraphs": added.reused_paragraphs,
        "reused_questions": added.reused_questions, "corpus_tokens": new_tokens, "store_delta": delta.sizes(),
        "seconds": {k: round(v, 3) for k, v in seconds.items()}, "created": manifest["created"]}]


def _annotate_new(base: art.Artifact, texts: list[str], config: BuildConfig, progress: bool, workers: int) -> _NerEmbed:
    """NER and sentence vectors of the new sentences ``texts``; when there are none (the inputs add only questions),
    nothing runs and no model is loaded (the graph's spaCy name and dimension are kept)."""
    if texts:
        return _ner_and_embed(texts, config, progress, workers)
    return _NerEmbed([], np.zeros((0, base.embedding_dim), dtype=np.float32), 0.0, 0.0, 0.0,
                     str(base.manifest["models"]["spacy"]), base.embedding_dim)


def _append_locked(inputs: Sequence[CorpusSpec], graph_dir: Path, config: BuildConfig, *, limit: int | None,
                   progress: bool) -> AppendResult:
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    workers = resolve_workers(config)
    t0, c = time.perf_counter(), _cpu_now()
    base = open_base(graph_dir)
    check_config(base.manifest, config)
    read = read_inputs(inputs, config, limit)
    seconds["read"], cpu["read"] = time.perf_counter() - t0, _cpu_now() - c

    t, c = time.perf_counter(), _cpu_now()
    added = new_inputs(base, read, progress)  # refuses conflicts and an append with nothing new
    new, new_sentences = added.dataset, added.sentences
    new_tokens = sum(len(p.text.split()) for p in new.paragraphs)
    chash = chained_hash(base.content_hash, content_hash(new, config))
    seconds["split"], cpu["split"] = time.perf_counter() - t, _cpu_now() - c

    t, c = time.perf_counter(), _cpu_now()
    ne = _annotate_new(base, new_sentences.texts, config, progress, workers)
    if ne.dim != base.embedding_dim:
        raise ConfigError(f"cannot append: the encoder gives {ne.dim}-d vectors, the graph's are {base.embedding_dim}-d")
    seconds["ner"], seconds["embed"] = ne.ner_s, ne.embed_s
    seconds["ner_embed_wall"], cpu["ner_embed_wall"] = time.perf_counter() - t, _cpu_now() - c
    cpu["ner"], cpu["embed"] = ne.ner_cpu_s, cpu["ner_embed_wall"] - ne.ner_cpu_s

    t, c = time.perf_counter(), _cpu_now()
    sentences, paragraphs, ent = _union_entities(base, new.paragraphs, new_sentences, ne.mentions, config)
    seconds["entities"], cpu["entities"] = time.perf_counter() - t, _cpu_now() - c

    t, c = time.perf_counter(), _cpu_now()
    name_vecs, encoded = entity_vectors(ent, base, config, ne.dim)
    edges, relinked = link_delta(ent, name_vecs, encoded, base, config)
    seconds["link"], cpu["link"] = time.perf_counter() - t, _cpu_now() - c

    t, c = time.perf_counter(), _cpu_now()
    embeddings = np.concatenate([np.asarray(base.embeddings(mmap=True), dtype=np.float32), ne.embeddings])
    union = _union_dataset(base, new, paragraphs)
    delta = store_delta(base, chash, new.paragraphs, new_sentences, ne.embeddings, ent, edges)
    corpus_tokens = int(base.manifest.get("corpus_tokens") or 0) + new_tokens
    staging = art.staging_dir(graph_dir)
    try:
        counts, manifest = _write_artifact(staging, inputs, union, sentences, ent, edges, embeddings, name_vecs, config,
                                           chash, limit, corpus_tokens, ne.spacy_name, ne.dim, seconds, t, workers=workers)
        _record_append(manifest, base, inputs, limit, added, new_tokens, delta, seconds)
        art.write_manifest(staging, manifest)
        art.publish(staging, graph_dir)
    except BaseException as exc:
        reason = os_error_reason(exc, staging) if isinstance(exc, OSError) else ""
        art.discard_staging(staging, graph_dir)
        if isinstance(exc, OSError):
            raise HarnessError(f"cannot write the appended graph in {staging}: {reason}; {graph_dir} keeps its "
                               "previous graph") from exc
        raise
    cpu["write"] = _cpu_now() - c
    affected = {"entities_changed": len(delta.entities_upsert) + len(delta.entities_delete),
                "entities_relinked": relinked, "names_encoded": int(encoded.sum())}
    reused = {"paragraphs": added.reused_paragraphs, "questions": added.reused_questions}
    return AppendResult(graph_dir, False, counts, seconds, new_tokens, _peak_rss_mb(), cpu, workers, delta=delta,
                        affected=affected, added_questions=len(new.questions), reused=reused)


# ------------------------------------------------------------------------------------------------ CLI
def append_and_load(args: Any, inputs: list[CorpusSpec], config: BuildConfig) -> int:
    """``harness-g build --append``: append, print what changed, then send the delta to the store (unless
    ``--no-load``). Called by ``graph/cli.py`` holding the GRAPH_DIR lock."""
    from harness_g.graph.build import build_wall_seconds

    if args.force or args.replace:
        raise ConfigError("--append adds to the graph as it is: it takes neither --force nor --replace")
    progress = not args.quiet
    result = append_graph(inputs, args.out, config, limit=args.limit, progress=progress)
    assert result.delta is not None
    c, d = result.counts, result.delta.sizes()
    print(f"appended: {result.graph_dir}")
    print(f"  now {c.get('paragraphs', 0)} paragraphs, {c.get('sentences', 0)} sentences, {c.get('entities', 0)} entities "
          f"({c.get('lookupable_entities', 0)} lookup-able), {c.get('mentions', 0)} mentions, {c.get('synonyms', 0)} "
          f"synonym links, {c.get('questions', 0)} questions")
    print(f"  added {d['paragraphs']} paragraphs, {d['sentences']} sentences, {result.added_questions} questions; "
          f"reused {result.reused['paragraphs']} paragraphs and {result.reused['questions']} questions the graph held "
          f"already; entities changed "
          f"{result.affected['entities_changed']}, embedding links recomputed for {result.affected['entities_relinked']}, "
          f"names encoded {result.affected['names_encoded']}")
    print(f"  append {build_wall_seconds(result.seconds):.1f}s for {result.corpus_tokens} new corpus tokens")
    if args.no_load:
        return 0
    store, how, seconds = load_delta(args.out, args.store, result.delta, progress=progress)
    with store:
        print(f"  store {store.where}: {how} in {seconds.get('total', 0.0):.1f}s; indexes: {store.index_state()}")
    return 0
