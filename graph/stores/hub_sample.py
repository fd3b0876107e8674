"""Hub samples: a deterministic, bounded stand-in for a hub entity's mention set S(e), stored on its Entity node.

The paper's LOOKUP ranks every sentence of C(e) = S(e) ∪ S(Syn(e)) ∪ N_SS(S(e)) by cosine to m_t (Harness-G §3.3,
the equation of C(e)), so its cost grows with the entity's mentions: on a 100x replica "United States" has 37,100
pool sentences (``benchmarks/results/scale.md``), on wiki-18 a hub has 10^5-10^6. Neither store hands out a
bounded, deterministic subset of a node's edges without reading them all (``LIMIT`` takes storage order, which
differs between stores and loads), so the subset is chosen at load time:

- an entity is a **hub** when more than ``size`` distinct sentences mention it (any MENTIONS kind);
- its **sample** is the ``size`` sentence ids of S(e) with the smallest :func:`sample_key` (an 8-byte BLAKE2b of
  the id, ties by id), in key order: a uniform sample without replacement that depends only on the set S(e), not on
  the build engine, the shard layout or the load order. It is a bottom-k sketch, so the sample of a union is the
  bottom ``size`` of the old sample and the new mentions (what ``build --append`` relies on), and the sample of size
  n < size is its first n ids;
- the store keeps it as the Entity property ``pool_sample`` (a list of sentence ids; absent on non-hubs) and the
  sample size in GraphMeta (``hub_sample``).

``EnvConfig.lookup_hub_sample`` (off under both presets) then reads a hub's sample instead of S(e)
(``cypher/lookup_candidates_sampled.cypher``), so a LOOKUP reads at most ~(3 + synonyms) x ``size`` sentences
whatever the corpus. Results of entities whose pool touches no hub are the paper's exactly.
"""
from __future__ import annotations

import hashlib
from typing import Any, Iterator

import pyarrow.compute as pc

#: distinct sentences above which an entity is a hub, and the size of its stored sample (GraphMeta.hub_sample)
HUB_SAMPLE_SIZE = 1000


def check_hub_sample(value: Any, name: str = "hub sample size") -> int:
    """``value`` as a sample size, or a one-line ConfigError naming ``name`` (a flag, a parameter) when it is below 1."""
    from harness_g.errors import ConfigError

    if int(value) < 1:
        raise ConfigError(f"{name} must be >= 1 sentence, got {value}")
    return int(value)


def sample_key(sentence_id: str) -> bytes:
    """The sentence's place in every sample: 8 bytes of BLAKE2b over its UTF-8 id (compare as bytes, then id)."""
    return hashlib.blake2b(sentence_id.encode("utf-8"), digest_size=8).digest()


def bottom_k(sentence_ids: Any, size: int) -> list[str]:
    """The ``size`` distinct ids of ``sentence_ids`` with the smallest :func:`sample_key` (ties by id), in that
    order."""
    unique = set(sentence_ids)
    return sorted(unique, key=lambda s: (sample_key(s), s))[:size]


def hub_samples(mentions: Any, size: int = HUB_SAMPLE_SIZE) -> dict[str, list[str]]:
    """``{entity id: its sample}`` for every hub of a mentions table (a ``pyarrow.Table`` with ``sentence_id`` and
    ``entity_id`` columns, any row order, duplicates allowed), by entity id. ``size`` < 1 means no samples.

    Equal to :func:`hub_samples_reference` (tested), computed in Arrow and numpy: one-column row counts leave the
    entities that can be hubs, their distinct (entity, sentence) pairs decide which are; each distinct hub sentence
    id is hashed once (:func:`sample_key`, the only per-row Python), and one ``lexsort`` by (entity, key, id) orders
    every hub's sentences, whose first ``size`` are its sample. Memory is a few numpy words per hub pair, not a Python
    set of strings per hub (``benchmarks/results/hub_sample_cost.md``: what this costs against the mentions table)."""
    import numpy as np

    if size < 1 or mentions.num_rows == 0:
        return {}
    pairs = mentions.select(["entity_id", "sentence_id"])
    # hubs have more than ``size`` rows, so only entities with that many rows (one-column counts, cheap) can be hubs;
    # their distinct (entity, sentence) pairs then decide (a two-key distinct count over every row costs ~2x more)
    rows = _with_more_than(pairs, size)
    if rows.num_rows == 0:
        return {}
    rows = rows.group_by(["entity_id", "sentence_id"]).aggregate([])  # distinct (entity, sentence) pairs
    rows = _with_more_than(rows, size)
    if rows.num_rows == 0:
        return {}
    unique = pc.unique(rows.column("sentence_id"))
    ids = unique.to_pylist()
    keys = np.fromiter((int.from_bytes(sample_key(s), "big") for s in ids), dtype=np.uint64, count=len(ids))
    id_rank = np.empty(len(ids), dtype=np.int64)  # ties of the 8-byte key are broken by the id (string order)
    id_rank[pc.sort_indices(unique).to_numpy()] = np.arange(len(ids))
    sid = pc.index_in(rows.column("sentence_id"), value_set=unique).to_numpy()
    entity = pc.dictionary_encode(rows.column("entity_id")).combine_chunks()
    code = entity.indices.to_numpy()
    order = np.lexsort((id_rank[sid], keys[sid], code))  # by entity, then key (big-endian: byte order), then id
    starts = np.flatnonzero(np.r_[True, code[order][1:] != code[order][:-1]])
    names = entity.dictionary.to_pylist()
    out = {names[code[order[start]]]: [ids[i] for i in sid[order[start:start + size]]] for start in starts}
    return dict(sorted(out.items()))


def hub_samples_reference(mentions: Any, size: int = HUB_SAMPLE_SIZE) -> dict[str, list[str]]:
    """The definition of :func:`hub_samples` in plain Python (a set of sentence ids per hub, :func:`bottom_k`): the
    tests' and the benchmark's baseline."""
    if size < 1 or mentions.num_rows == 0:
        return {}
    pairs = mentions.select(["entity_id", "sentence_id"])
    hubs = _hubs(pairs, size)
    if len(hubs) == 0:
        return {}
    rows = pairs.filter(pc.is_in(pairs.column("entity_id"), value_set=hubs))
    members: dict[str, set[str]] = {}
    for eid, sid in zip(rows.column("entity_id").to_pylist(), rows.column("sentence_id").to_pylist()):
        members.setdefault(eid, set()).add(sid)
    return {eid: bottom_k(ids, size) for eid, ids in sorted(members.items())}


def _with_more_than(rows: Any, size: int) -> Any:
    """The rows of ``rows`` whose entity has more than ``size`` of them (one value count)."""
    counts = pc.value_counts(rows.column("entity_id"))
    keep = counts.field("values").filter(pc.greater(counts.field("counts"), size))
    return rows.filter(pc.is_in(rows.column("entity_id"), value_set=keep)) if len(keep) else rows.slice(0, 0)


def _hubs(pairs: Any, size: int) -> Any:
    """The entity ids of ``pairs`` with more than ``size`` distinct sentence ids (one Arrow group-by)."""
    counts = pairs.group_by("entity_id").aggregate([("sentence_id", "count_distinct")])
    return counts.filter(pc.greater(counts.column("sentence_id_count_distinct"), size)).column("entity_id")


def sample_rows(samples: dict[str, list[str]], batch_size: int) -> Iterator[list[dict[str, Any]]]:
    """``load_pool_samples`` rows ``{id, sample}`` in batches (entity id order)."""
    rows = [{"id": eid, "sample": ids} for eid, ids in sorted(samples.items())]
    for start in range(0, len(rows), max(1, batch_size)):
        yield rows[start:start + batch_size]


__all__ = ["HUB_SAMPLE_SIZE", "bottom_k", "check_hub_sample", "hub_samples", "hub_samples_reference", "sample_key",
           "sample_rows"]
