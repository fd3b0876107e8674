"""Read-only, cached access to one loaded graph for the menu environment.

Everything the environment needs from the graph goes through named Cypher queries on a
:class:`GraphStore`; results are cached in-process keyed by the graph's content hash and
the query parameters, because the graph never changes under a loaded content hash. Sentence
embeddings are read from the artifact into memory so ranking a candidate pool is one matrix
product instead of a round trip per sentence; entity-name vectors likewise (no encoder call per menu).

Shapes: embeddings are float32 [n_sentences, dim], L2-normalised; similarities are cosines.
"""
from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

import numpy as np

from harness_g.errors import ConfigError, StoreError
from harness_g.graph.artifact import Artifact
from harness_g.graph.embed import Embedder, get_embedder
from harness_g.graph.stores.base import GraphStore
from harness_g.graph.text.canonical import canonicalize


def row_cosines(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """``matrix @ vector`` (float32 [n]) with every row's dot product computed by the same kernel whatever its place
    in ``matrix`` (``np.einsum``), so identical rows (a sentence repeated in two paragraphs, two entities with one
    name) get identical cosines and the rankings' "ties broken by id" holds. BLAS gemv does not guarantee that: it
    rounds a row by its position in its block (13 identical rows gave 2 distinct float32 values on numpy 2.4's
    OpenBLAS, and a duplicate sentence then outranked its twin with the smaller id). Cost: ~1.2x gemv at 200K rows."""
    return np.einsum("ij,j->i", matrix, np.asarray(vector, dtype=matrix.dtype))


@dataclass(frozen=True)
class SentenceInfo:
    id: str
    paragraph_id: str
    position: int
    title: str
    text: str


@dataclass(frozen=True)
class EntityInfo:
    id: str
    name: str  # canonical
    surface: str  # display form
    label: str
    lookupable: bool
    mentions: int


class _LRU:
    """A small thread-safe LRU map (bounded so long runs do not grow without limit)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Any) -> Any:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
            self.misses += 1
            return None

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


_WORD = re.compile(r"\w+(?:[-']\w+)*")


def question_words(question: str) -> list[str]:
    """The question's words as written (letters/digits, inner hyphens and apostrophes kept: ``Jay'Ed``, ``Under-23s``)."""
    return _WORD.findall(question)


def question_grams(question: str, max_n: int = 6) -> list[str]:
    """The question's word n-grams (n <= ``max_n``), canonicalised, first occurrence order, no duplicates; single
    words of <= 3 characters are dropped. What :meth:`GraphView.question_entities` matches against entity names."""
    words = question_words(question)
    grams = []
    for n in range(1, max_n + 1):
        for i in range(len(words) - n + 1):
            c = canonicalize(" ".join(words[i : i + n]))
            if c and (n > 1 or len(c) > 3):
                grams.append(c)
    return list(dict.fromkeys(grams))


def _group_entities(rows: list[dict[str, Any]], group_key: str, id_key: str) -> dict[str, tuple[EntityInfo, ...]]:
    """Query rows -> EntityInfo tuples grouped by ``row[group_key]`` (row order kept)."""
    grouped: dict[str, list[EntityInfo]] = {}
    for r in rows:
        grouped.setdefault(r[group_key], []).append(
            EntityInfo(r[id_key], r["name"], r["surface"], r["label"], bool(r["lookupable"]), int(r["mentions"] or 0))
        )
    return {k: tuple(v) for k, v in grouped.items()}


class GraphView:
    """Cached graph access shared by every environment on one graph (one per process)."""

    def __init__(self, store: GraphStore, artifact: Artifact, *, embedder: Embedder | None = None, check_store: bool = True,
                 cache_size: int = 200_000):
        self.store = store
        self.artifact = artifact
        self.version = artifact.content_hash
        if check_store:
            loaded = store.loaded_hash()
            if loaded != self.version:
                raise StoreError(
                    f"the store holds {'no complete graph' if loaded is None else 'another graph (' + loaded[:12] + ')'}"
                    f", not {artifact.path} ({self.version[:12]}); run `harness-g build --out {artifact.path}` to load it"
                )
        if embedder is not None and embedder.name != artifact.embedding_model:
            raise ConfigError(
                f"graph {artifact.path} was built with embedding model {artifact.embedding_model!r}, not {embedder.name!r}; "
                "use the same model or rebuild the graph"
            )
        # queries are encoded by the backend the sentences were embedded with, unless the caller passes an embedder
        self.embedder = embedder or get_embedder(artifact.embedding_model, backend=artifact.embedding_backend)
        if self.embedder.dim != artifact.embedding_dim:
            raise ConfigError(f"embedding dim {self.embedder.dim} != graph's {artifact.embedding_dim}")
        ids = artifact.table("sentences", columns=["id"]).column("id").to_pylist()
        self.sentence_ids: list[str] = ids
        self.row_of: dict[str, int] = {sid: i for i, sid in enumerate(ids)}
        self.embeddings: np.ndarray = np.asarray(artifact.embeddings(mmap=False), dtype=np.float32)
        ent_vecs = artifact.entity_embeddings()
        self.entity_row: dict[str, int] = {}
        self.entity_embeddings: np.ndarray | None = None
        if ent_vecs is not None:
            ent_ids = artifact.table("entities", columns=["id"]).column("id").to_pylist()
            if len(ent_ids) == len(ent_vecs):
                self.entity_row = {eid: i for i, eid in enumerate(ent_ids)}
                self.entity_embeddings = np.asarray(ent_vecs, dtype=np.float32)
        self._sentences = _LRU(cache_size)
        self._entities_of = _LRU(cache_size)
        self._pools = _LRU(cache_size)
        self._article_pools = _LRU(cache_size)  # lookup_pools(articles=True)
        self._sampled_pools = _LRU(cache_size)  # lookup_pools(hub_sample=N): hubs' S(x) replaced by their samples
        self._hub_sample: int | None = None  # the store's GraphMeta.hub_sample, read on the first sampled pool
        self._names = _LRU(cache_size)
        self._question_grams = _LRU(10_000)  # (question, max_n) -> its canonical n-grams (every reset of a GRPO group)
        self._mentions_of = _LRU(cache_size)
        self._lookup_results = _LRU(cache_size)  # (C_t key, entity id) -> a LOOKUP's U_{t+1}; see lookup_result_cache
        self._vectors = _LRU(50_000)
        self._topk = _LRU(50_000)
        self._members = _LRU(50_000)  # (index top-M ids, entity id) -> the ids among them in C(e); see pool_members
        self._lock = threading.Lock()
        self.timings: dict[str, float] = {"store_s": 0.0, "encode_s": 0.0}
        #: round trips; LOOKUPs the index decided / left to the whole pool (EnvConfig.lookup_index_top_m)
        self.calls: dict[str, int] = {"store": 0, "encode": 0, "index_lookups": 0, "index_fallbacks": 0,
                                      "index_channels": 0, "index_channel_fallbacks": 0, "store_ranked": 0}

    # -- low level ------------------------------------------------------------------------
    def _query(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        t0 = time.perf_counter()
        rows = self.store.query(name, params)
        self.timings["store_s"] += time.perf_counter() - t0
        self.calls["store"] += 1
        return rows

    def _cached_many(self, cache: _LRU, keys: Iterable[str], fetch) -> dict[str, Any]:
        keys = list(dict.fromkeys(keys))
        out: dict[str, Any] = {}
        missing = []
        for k in keys:
            v = cache.get(k)
            if v is None:
                missing.append(k)
            else:
                out[k] = v
        if missing:
            fetched = fetch(missing)
            for k in missing:
                v = fetched.get(k)
                if v is None:
                    v = () if cache is not self._sentences else None
                if v is not None:
                    cache.put(k, v)
                    out[k] = v
        return out

    # -- sentences ------------------------------------------------------------------------
    def sentences(self, ids: Sequence[str]) -> dict[str, SentenceInfo]:
        """Sentence records by id (unknown ids are absent from the result)."""

        def fetch(missing: list[str]) -> dict[str, SentenceInfo]:
            rows = self._query("sentences_by_ids", {"ids": missing})
            return {
                r["id"]: SentenceInfo(r["id"], r["paragraph_id"], int(r["position"]), r["title"] or "", r["text"] or "")
                for r in rows
            }

        return self._cached_many(self._sentences, ids, fetch)

    def paragraph_sentences(self, paragraph_ids: Sequence[str]) -> list[str]:
        """Sentence ids of the given paragraphs, paragraph order kept, positions ascending."""
        if not paragraph_ids:
            return []
        key = ("paragraphs",) + tuple(paragraph_ids)
        hit = self._topk.get(key)
        if hit is not None:
            return list(hit)
        rows = self._query("paragraph_sentences", {"paragraph_ids": list(paragraph_ids)})
        by_par: dict[str, list[str]] = {}
        for r in rows:
            by_par.setdefault(r["paragraph_id"], []).append(r["id"])
        out = [sid for pid in paragraph_ids for sid in by_par.get(pid, [])]
        self._topk.put(key, tuple(out))
        return out

    # -- entities -------------------------------------------------------------------------
    def entities_of(self, sentence_ids: Sequence[str]) -> dict[str, tuple[EntityInfo, ...]]:
        """Lookup-able entities mentioned by each sentence (ordered by entity id)."""
        return self._entities_of_sentences(sentence_ids, lookupable_only=True)

    def mentions_of(self, sentence_ids: Sequence[str]) -> dict[str, tuple[EntityInfo, ...]]:
        """Every entity mentioned by each sentence, lookup-able or not (dates, nationalities: answer candidates)."""
        return self._entities_of_sentences(sentence_ids, lookupable_only=False)

    def _entities_of_sentences(self, sentence_ids: Sequence[str], *, lookupable_only: bool) -> dict[str, tuple[EntityInfo, ...]]:
        def fetch(missing: list[str]) -> dict[str, tuple[EntityInfo, ...]]:
            rows = self._query("entities_of_sentences", {"ids": missing, "lookupable_only": lookupable_only})
            return _group_entities(rows, "sentence_id", "entity_id")

        cache = self._entities_of if lookupable_only else self._mentions_of
        return self._cached_many(cache, sentence_ids, fetch)

    def entities_by_names(self, names: Sequence[str]) -> list[EntityInfo]:
        """Entities whose canonical name is one of ``names`` (any label), ordered by id."""
        found = self._cached_many(self._names, names, self._fetch_names)
        out = {e.id: e for name in names for e in found.get(name, ())}
        return [out[k] for k in sorted(out)]

    def _fetch_names(self, missing: list[str]) -> dict[str, tuple[EntityInfo, ...]]:
        return _group_entities(self._query("entities_by_names", {"names": missing}), "name", "id")

    def question_entities(self, question: str, max_n: int = 6) -> list[EntityInfo]:
        """Lookup-able entities named in the question, found by matching its word n-grams (n <= max_n)
        against canonical entity names. Works on lower-cased questions where NER fails (NQ)."""
        key = (question, max_n)
        grams = self._question_grams.get(key)
        if grams is None:
            grams = question_grams(question, max_n)
            self._question_grams.put(key, grams)
        return [e for e in self.entities_by_names(grams) if e.lookupable]

    @property
    def lookup_result_cache(self) -> _LRU:
        """LOOKUP results U_{t+1} keyed by ``(state key, entity id)``, where the state key is whatever determines them
        besides the entity (:func:`harness_g.agent.env.menu.build_menu`: m_t, C_t and the caps). Shared by every
        environment on this view: a GRPO group revisiting a state ranks each candidate pool once."""
        return self._lookup_results

    def lookup_pools(self, entity_ids: Sequence[str], *, articles: bool,
                     hub_sample: int = 0) -> dict[str, tuple[str, ...]]:
        """C(e) = S(e) ∪ S(Syn(e)) ∪ N_SS(S(e)) for each entity: sentence ids in channel-priority order.

        ``articles`` (``EnvConfig.article_pool``; no default, so every caller says which pool it ranks): then, by id,
        the sentences of the article(s) e titles that C(e) does not hold (the query's ``article`` channel; one round
        trip either way, each kind of pool cached apart).
        ``hub_sample`` (``EnvConfig.lookup_hub_sample``; 0 = the paper's pool): every hub's S(x) is its stored sample
        (``lookup_candidates_sampled``; :mod:`harness_g.graph.stores.hub_sample`); StoreError unless the store was
        loaded with hub samples of exactly that size. Not with ``articles``."""
        if hub_sample:
            if articles:
                raise ValueError("hub-sampled pools have no article channel (EnvConfig refuses article_pool with it)")
            self._check_hub_sample(hub_sample)

            def fetch(missing: list[str]) -> dict[str, tuple[str, ...]]:
                grouped: dict[str, list[str]] = {}
                for r in self._query("lookup_candidates_sampled", {"entity_ids": missing}):
                    grouped.setdefault(r["entity_id"], []).append(r["id"])
                return {k: tuple(grouped.get(k, ())) for k in missing}  # unknown: empty

            return self._cached_many(self._sampled_pools, entity_ids, fetch)
        return {e: pool for e, (pool, _) in self._pool_entries(entity_ids, articles).items()}

    def _check_hub_sample(self, size: int) -> None:
        """StoreError (one line) unless the store's GraphMeta records hub samples of ``size``."""
        if self._hub_sample is None:
            stored = (self.store.meta() or {}).get("hub_sample")
            if stored is None:
                raise StoreError(f"{self.store.where} holds {self.artifact.path} without hub samples (loaded by an "
                                 f"older harness-g); load it again (`harness-g build --out {self.artifact.path} "
                                 "--force`) or set lookup_hub_sample=0")
            self._hub_sample = int(stored)
        if self._hub_sample != size:
            raise StoreError(f"lookup_hub_sample={size}, but {self.store.where} holds hub samples of "
                             f"{self._hub_sample} sentences; set lookup_hub_sample={self._hub_sample}")

    def title_anchors(self, entity_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """Per entity, the title anchors (first sentences, paper appendix "Graph construction") of the article(s) it
        titles, directly or through a 'title' synonym (empty when it titles none): what ``EnvConfig.article_pool``'s
        LOOKUP always shows. Served from the same rows and cache as ``lookup_pools(..., articles=True)``."""
        return {e: anchors for e, (_, anchors) in self._pool_entries(entity_ids, True).items()}

    def _pool_entries(self, entity_ids: Sequence[str],
                      articles: bool) -> dict[str, tuple[tuple[str, ...], frozenset[str]]]:
        """Per entity, (its pool in channel order, its title anchors), from one cached ``lookup_candidates_multi``."""
        def fetch(missing: list[str]) -> dict[str, tuple[tuple[str, ...], frozenset[str]]]:
            rows = self._query("lookup_candidates_multi", {"entity_ids": missing, "articles": articles})
            grouped: dict[str, list[str]] = {}
            anchors: dict[str, set[str]] = {}
            for r in rows:
                grouped.setdefault(r["entity_id"], []).append(r["id"])
                if r["anchor"]:
                    anchors.setdefault(r["entity_id"], set()).add(r["id"])
            return {k: (tuple(grouped.get(k, ())), frozenset(anchors.get(k, ()))) for k in missing}  # unknown: empty

        return self._cached_many(self._article_pools if articles else self._pools, entity_ids, fetch)

    # -- vectors --------------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Cached query encodings, float32 [len(texts), dim]."""
        out = np.zeros((len(texts), self.embedder.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            v = self._vectors.get(t)
            if v is None:
                missing.setdefault(t, []).append(i)
            else:
                out[i] = v
        if missing:
            t0 = time.perf_counter()
            vecs = self.embedder.encode(list(missing))
            self.timings["encode_s"] += time.perf_counter() - t0
            self.calls["encode"] += 1
            for (text, rows), v in zip(missing.items(), vecs):
                self._vectors.put(text, v)
                out[rows] = v
        return out

    def entity_vectors(self, entities: Sequence[EntityInfo]) -> np.ndarray:
        """Name vectors float32 [len(entities), dim]: stored ones from the build, else encoded (and cached)."""
        out = np.zeros((len(entities), self.embedder.dim), dtype=np.float32)
        missing = []
        for i, e in enumerate(entities):
            row = self.entity_row.get(e.id)
            if row is not None and self.entity_embeddings is not None and self.entity_embeddings[row].any():
                out[i] = self.entity_embeddings[row]
            else:
                missing.append(i)
        if missing:
            out[missing] = self.encode([entities[i].surface for i in missing])
        return out

    def vector_top_k(self, text: str, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Global sentence channel through the store's vector index (cached by query text and k)."""
        key = ("vec", text, k)
        hit = self._topk.get(key)
        if hit is not None:
            return list(hit)
        t0 = time.perf_counter()
        res = self.store.vector_top_k(vector.tolist(), k)
        self.timings["store_s"] += time.perf_counter() - t0
        self.calls["store"] += 1
        self._topk.put(key, tuple(res))
        return res

    def index_top(self, vector: np.ndarray, m: int) -> tuple[tuple[str, ...], tuple[float, ...], bool]:
        """The store vector index's ``m`` nearest sentences to ``vector``: (ids, their cosines, best first; whether they
        are every sentence of the graph, nothing lying outside). One store round trip per (vector, m), cached."""
        key = ("index", vector.tobytes(), m)
        hit = self._topk.get(key)
        if hit is None:
            t0 = time.perf_counter()
            found = self.store.vector_top_k(vector.tolist(), m)
            self.timings["store_s"] += time.perf_counter() - t0
            self.calls["store"] += 1
            hit = (tuple(sid for sid, _ in found), tuple(sim for _, sim in found),
                   len(found) >= len(self.sentence_ids))
            self._topk.put(key, hit)
        return hit

    def pool_members(self, sentence_ids: tuple[str, ...], entity_ids: Sequence[str]) -> dict[str, frozenset[str]]:
        """Per entity, which of ``sentence_ids`` lie in its paper pool C(e) (``lookup_pools(articles=False)``): one
        ``pool_members`` round trip for the entities not cached with this tuple, a cost that follows
        ``len(sentence_ids)``, not the pools' sizes."""
        out: dict[str, frozenset[str]] = {}
        missing = []
        for e in dict.fromkeys(entity_ids):
            hit = self._members.get((sentence_ids, e))
            if hit is None:
                missing.append(e)
            else:
                out[e] = hit
        if missing:
            found: dict[str, set[str]] = {e: set() for e in missing}
            for r in self._query("pool_members", {"sentence_ids": list(sentence_ids), "entity_ids": missing}):
                found[r["entity_id"]].add(r["sentence_id"])
            for e, members in found.items():
                out[e] = frozenset(members)
                self._members.put((sentence_ids, e), out[e])
        return out

    def store_ranked_pool(self, entity_id: str, vector: np.ndarray, k: int,
                          exclude: Iterable[str] = ()) -> list[str]:
        """The best ``k`` sentences of ``entity_id``'s paper pool C(e) minus ``exclude`` by cosine to ``vector``
        (descending, ties by id), ranked inside the store (``lookup_ranked``): one round trip returning at most ``k``
        rows, however long the pool (``EnvConfig.lookup_store_rank_min``). Not cached (it depends on the vector and
        on C_t; the LOOKUP results built from it are). ``calls["store_ranked"]`` counts them."""
        rows = self._query("lookup_ranked", {"entity_id": entity_id, "vector": [float(x) for x in vector],
                                             "exclude": sorted(set(exclude)), "k": int(k)})
        self.calls["store_ranked"] += 1
        return [r["id"] for r in rows]

    def rank(self, vector: np.ndarray, sentence_ids: Sequence[str]) -> list[tuple[str, float]]:
        """Sentences ranked by cosine to ``vector``; ties broken by id. Unknown ids are dropped."""
        ids = [s for s in sentence_ids if s in self.row_of]
        if not ids:
            return []
        rows = np.fromiter((self.row_of[s] for s in ids), dtype=np.int64, count=len(ids))
        sims = row_cosines(self.embeddings[rows], vector)
        order = sorted(range(len(ids)), key=lambda i: (-float(sims[i]), ids[i]))
        return [(ids[i], float(sims[i])) for i in order]

    def prefetch_sentences(self, ids: Iterable[str]) -> None:
        """Fetch, in one round trip, the records of the ids not cached yet (a cheap no-op when all are)."""
        cached = self._sentences._data
        missing = [s for s in dict.fromkeys(ids) if s not in cached]
        if missing:
            self.sentences(missing)

    def entity_names(self, entity_ids: Sequence[str]) -> dict[str, str]:
        """Canonical names of entities by id, read once from the artifact's entity table (no store round trip)."""
        names = getattr(self, "_entity_names_cache", None)
        if names is None:
            table = self.artifact.table("entities", columns=["id", "name"])
            names = dict(zip(table.column("id").to_pylist(), table.column("name").to_pylist()))
            self._entity_names_cache = names
        return {e: names[e] for e in entity_ids if e in names}

    def entity_mentions(self, entity_ids: Sequence[str]) -> dict[str, int]:
        """How many mentions each entity has (the entity table's ``mentions``; read once from the artifact, no store
        round trip): about the size of S(e), the first channel of its LOOKUP pool (two mentions in one sentence count
        twice)."""
        counts = getattr(self, "_entity_mentions_cache", None)
        if counts is None:
            table = self.artifact.table("entities", columns=["id", "mentions"])
            counts = dict(zip(table.column("id").to_pylist(), table.column("mentions").to_pylist()))
            self._entity_mentions_cache = counts
        return {e: int(counts[e] or 0) for e in entity_ids if e in counts}

    def _id_order(self) -> np.ndarray:
        """int64 [n_sentences]: each row's position in ascending sentence-id order (the ranking tie-break)."""
        order = getattr(self, "_id_order_cache", None)
        if order is None:
            order = np.empty(len(self.sentence_ids), dtype=np.int64)
            order[np.array(sorted(range(len(self.sentence_ids)), key=self.sentence_ids.__getitem__), dtype=np.int64)] = \
                np.arange(len(self.sentence_ids), dtype=np.int64)
            self._id_order_cache = order
        return order

    _BIG_POOL = 256  # pools at least this long: row numbers cached, cosines taken from one product over all sentences
    #: ... while the graph has at most this many sentences per pool sentence: beyond, one all-sentence product per m_t
    #: would make a step cost grow with the corpus (bench_scale.py), so the pool's rows are gathered instead
    _ALL_SIMS_RATIO = 16

    def _rows(self, sentence_ids: Sequence[str]) -> np.ndarray:
        """int64 row numbers of the known ids, in order (cached for long tuples: the lookup pools are cached tuples)."""
        key = sentence_ids if isinstance(sentence_ids, tuple) and len(sentence_ids) >= self._BIG_POOL else None
        rows = self._rank_caches[0].get(key) if key is not None else None
        if rows is None:
            try:  # pools come from this graph's store: every id is known
                rows = np.fromiter(map(self.row_of.__getitem__, sentence_ids), dtype=np.int64, count=len(sentence_ids))
            except KeyError:
                rows = np.fromiter((r for r in map(self.row_of.get, sentence_ids) if r is not None), dtype=np.int64)
            if key is not None:
                self._rank_caches[0].put(key, rows)
        return rows

    def _all_sims(self, vector: np.ndarray) -> np.ndarray:
        """Cosine of ``vector`` to every sentence, float32 [n_sentences] (cached: one menu ranks many pools with one m_t)."""
        key = vector.tobytes()
        sims = self._rank_caches[1].get(key)
        if sims is None:
            sims = row_cosines(self.embeddings, vector)
            self._rank_caches[1].put(key, sims)
        return sims

    def _use_all_sims(self, pool: int) -> bool:
        """Whether a pool of ``pool`` rows takes its cosines from the all-sentence product (one per m_t, shared by a
        menu's pools) rather than from its own rows: long pools of a graph at most ``_ALL_SIMS_RATIO`` times their
        size. Either way the cosines are the same up to float rounding."""
        return pool >= self._BIG_POOL and len(self.sentence_ids) <= self._ALL_SIMS_RATIO * pool

    @property
    def _rank_caches(self) -> tuple[_LRU, _LRU]:
        """(long pool tuple -> row numbers, query vector -> all-sentence cosines): bounded, created on first use."""
        caches = getattr(self, "_rank_lrus", None)
        if caches is None:
            caches = self._rank_lrus = (_LRU(20_000), _LRU(64))
        return caches

    def rank_top(self, vector: np.ndarray, sentence_ids: Sequence[str], k: int, exclude: Iterable[str] = ()) -> list[str]:
        """The best ``k`` of ``sentence_ids`` minus ``exclude`` by cosine to ``vector`` (descending; ties by id; unknown
        ids dropped), computed in numpy: the whole list is scored, only the top ``k`` (and every tie with the k-th) is
        sorted. Same order as :meth:`rank` up to float rounding (long lists take their cosines from one product over
        all sentences)."""
        excl = exclude if isinstance(exclude, (set, frozenset)) else set(exclude)
        rows = self._rows(sentence_ids)
        want = k + len(excl)  # the excluded ids are few (C_t): rank a few more and drop them
        if rows.size == 0 or k <= 0:
            return []
        if self._use_all_sims(rows.size):
            sims = self._all_sims(vector)[rows]
        else:
            sims = row_cosines(self.embeddings[rows], vector)
        if want < rows.size:
            kth = np.partition(sims, rows.size - want)[rows.size - want]  # want-th largest; keep every tie with it
            keep = np.flatnonzero(sims >= kth)
            rows, sims = rows[keep], sims[keep]
        order = np.lexsort((self._id_order()[rows], -sims))
        ids = self.sentence_ids
        out = [ids[r] for r in rows[order[:want]]]
        return ([s for s in out if s not in excl] if excl else out)[:k]

    def cache_stats(self) -> dict[str, Any]:
        caches = {"sentences": self._sentences, "entities_of": self._entities_of, "pools": self._pools,
                  "article_pools": self._article_pools,
                  "sampled_pools": self._sampled_pools, "names": self._names, "question_grams": self._question_grams,
                  "vectors": self._vectors, "topk": self._topk}
        return {name: {"hits": c.hits, "misses": c.misses} for name, c in caches.items()} | {"timings": dict(self.timings), "calls": dict(self.calls)}
