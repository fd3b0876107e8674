"""Menu proposal and filtering: M_t = Filter(Propose(z_t, G), H_t).

Propose: SELECT for each visible sentence, ANSWER_WITH for each set of 1..k visible sentences
(k = ``EnvConfig.answer_with_max``), LOOKUP for bridge entities (in committed evidence), question entities
(named in the question, ``EnvConfig.question_lookups``) and frontier entities (in visible sentences), in that
order, at most K_e, ANSWER.
Filter: committed sentences and visited entities are never offered, invalid targets (the
build's junk filter) never reach the menu, a LOOKUP whose result adds nothing new or repeats
a higher-ranked LOOKUP's result is merged away, one name is offered once (a target whose
canonical name equals a visited or a higher-ranked kept target's, e.g. the TITLE and the PERSON
entity of one article, is merged away), and duplicate sentence texts are merged.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from harness_g.agent.env.actions import Action, ActionType
from harness_g.agent.env.graph_view import EntityInfo, GraphView, SentenceInfo, row_cosines

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.env.config import EnvConfig


def text_key(text: str) -> str:
    """Key under which two sentences count as the same retrieval (case/space-insensitive)."""
    return " ".join(text.lower().split())


@dataclass
class Menu:
    """One step's menu. ``lookup_results[entity_id]`` is the exact U_{t+1} that LOOKUP would set."""

    sentences: list[SentenceInfo]
    entities: list[EntityInfo]
    entity_roles: list[str]
    actions: list[Action]
    lookup_results: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_id = {a.id: a for a in self.actions}
        self._s_label = {s.id: f"S{i}" for i, s in enumerate(self.sentences)}
        self._e_label = {e.id: f"E{i}" for i, e in enumerate(self.entities)}
        self._entity = {e.id: e for e in self.entities}

    def label(self, target: str) -> str:
        return self._s_label.get(target) or self._e_label.get(target) or target

    def describe(self, action: Action) -> str:
        """``A0 = SELECT S0``, ``A1 = LOOKUP E3 | entity: …``, ``A2 = ANSWER_WITH S0``, ``A3 = ANSWER_WITH S0 S2``,
        ``A4 = ANSWER``."""
        if action.type is ActionType.ANSWER:
            return f"{action.id} = ANSWER"
        labels = " ".join(self.label(t) for t in action.targets)
        if action.type is ActionType.LOOKUP:
            return f"{action.id} = LOOKUP {labels} | entity: {self._entity[action.targets[0]].surface}"
        return f"{action.id} = {action.type.value} {labels}"

    def to_json(self) -> list[dict]:
        return [a.to_json() | {"label": self.describe(a)} for a in self.actions]


def _distinct(ids: Sequence[str], texts: dict[str, SentenceInfo], seen: set[str]):
    """Yield ids whose text key is not in ``seen`` (updated in place): duplicate retrievals merge."""
    for sid in ids:
        info = texts.get(sid)
        if info is None:
            continue
        key = text_key(info.text)
        if key not in seen:
            seen.add(key)
            yield sid


def dedup_by_text(ids: Sequence[str], texts: dict[str, SentenceInfo], exclude_keys: set[str]) -> list[str]:
    """Keep the first sentence of each distinct text, dropping texts in ``exclude_keys``."""
    return list(_distinct(ids, texts, set(exclude_keys)))


def lookup_result(view: GraphView, pool: Sequence[str], m_vec: np.ndarray, committed: set[str], committed_keys: set[str],
                  cfg: "EnvConfig", *, ranked: Sequence[str] | None = None,
                  anchors: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """U_{t+1} for a LOOKUP: the whole pool minus committed sentences, ranked by cosine to m_t (ties by id),
    cut to the best ``lookup_pool_cap``, text-deduped, top K_s.

    Ranking comes before any cap, so no channel (mention, synonym, neighbour) of a large entity's pool is
    lost to the pool's storage order; the cap only bounds how many ranked sentences the de-duplication reads.
    ``ranked``: that ranking when the caller already has it. ``anchors``: the title anchors of the article(s) e
    titles (``GraphView.title_anchors``, with ``EnvConfig.anchor_slot``): when none of them made the top K_s, the
    best of them by the same cosine takes the last slot -- LOOKUP(Charles Lamont) shows the first sentence of
    Charles Lamont's article ("Charles Lamont (May 5, 1895 - September 12, 1993) was a prolific filmmaker"), not
    only six sentences about films he directed that resemble the question more.
    """
    if ranked is None:
        ranked = _ranked_pool(view, pool, m_vec, committed, cfg)
    out: list[str] = []
    seen = set(committed_keys)
    # fetch texts lazily in small chunks: most lookups fill K_s from the first few ranked sentences
    chunk = max(2 * cfg.visible_cap, 8)
    for start in range(0, len(ranked), chunk):
        part = ranked[start : start + chunk]
        for sid in _distinct(part, view.sentences(part), seen):
            out.append(sid)
            if len(out) == cfg.visible_cap:
                break
        if len(out) == cfg.visible_cap:
            break
    if anchors and not anchors.intersection(out):
        out = _show_title_anchor(view, out, anchors, m_vec, committed, seen, cfg)
    return tuple(out)


# -- which pools a LOOKUP reads: the one place that reads EnvConfig.article_pool ----------------------------------
def lookup_pools(view: GraphView, entity_ids: Sequence[str], cfg: "EnvConfig") -> dict[str, tuple[str, ...]]:
    """Each entity's uncapped LOOKUP pool (cached by the view): the paper's C(e) = S(e) ∪ S(Syn(e)) ∪ N_SS(S(e))
    (harness-g.tex, section "The Menu Environment"), with ``EnvConfig.article_pool`` followed by the other sentences
    of the article(s) e titles. Every reader of LOOKUP pools (the menu, the reachability search and its relaxed
    closure, the batched prefetch) goes through here. With ``EnvConfig.lookup_hub_sample`` a hub's S(x) is its stored
    sample (:mod:`harness_g.graph.stores.hub_sample`)."""
    return view.lookup_pools(entity_ids, articles=cfg.article_pool, hub_sample=cfg.lookup_hub_sample)


def lookup_rules(cfg: "EnvConfig") -> tuple:
    """The settings a LOOKUP's U_{t+1} depends on besides m_t, C_t and e (K_s, the pool cap, the pool of
    :func:`lookup_pools`, the anchor slot, the index path of :func:`index_lookup_results`, the store-ranked path of
    :func:`store_ranked_results`): with them, a key of the
    view's LOOKUP result cache."""
    return (cfg.visible_cap, cfg.lookup_pool_cap, cfg.article_pool, cfg.anchor_slot, cfg.lookup_index_top_m,
            cfg.lookup_store_rank_min, cfg.lookup_hub_sample)


# -- the store-ranked LOOKUP (EnvConfig.lookup_store_rank_min): a hub's pool ranked where it is stored -------------
def store_ranked(view: GraphView, entity_ids: Sequence[str], cfg: "EnvConfig") -> list[str]:
    """The entities of ``entity_ids`` whose pool the store ranks (``cfg.lookup_store_rank_min`` set and at least that
    many mentions: S(e) alone is that long, so C(e) is at least as long); the others' pools are read whole."""
    if not cfg.lookup_store_rank_min:
        return []
    counts = view.entity_mentions(entity_ids)
    return [e for e in dict.fromkeys(entity_ids) if counts.get(e, 0) >= cfg.lookup_store_rank_min]


def store_ranked_results(view: GraphView, entity_ids: Sequence[str], m_vec: np.ndarray, committed: set[str],
                         committed_keys: set[str], cfg: "EnvConfig") -> dict[str, tuple[str, ...]]:
    """U_{t+1} of LOOKUP(e) for each of ``entity_ids`` that :func:`store_ranked` picks: the store ranks C(e) minus
    C_t by cosine to m_t and returns its first ``lookup_pool_cap`` (:meth:`GraphView.store_ranked_pool`), which
    :func:`lookup_result` reads as it reads the client's ranking. That ranking is the one of
    :meth:`GraphView.rank_top` (cosine descending, ties by id) computed by the store in float32, so the result is the
    paper's up to float rounding between two near-tied sentences; one round trip per entity, returning at most
    ``lookup_pool_cap`` rows, where the paper's path moves the whole pool to the client."""
    rankings = {e: view.store_ranked_pool(e, m_vec, cfg.lookup_pool_cap, exclude=committed)
                for e in store_ranked(view, entity_ids, cfg)}
    chunk = max(2 * cfg.visible_cap, 8)  # the texts the de-duplication reads first, in one round trip for all
    view.prefetch_sentences(s for ranked in rankings.values() for s in ranked[:chunk])
    return {e: lookup_result(view, (), m_vec, committed, committed_keys, cfg, ranked=ranked)
            for e, ranked in rankings.items()}


# -- the bounded LOOKUP (EnvConfig.lookup_index_top_m): the paper's result without reading the pool ---------------
#: cosine margin over the index's floor: the store's cosines and numpy's differ by float32 rounding (~1e-6)
INDEX_MARGIN = 1e-4
#: the share of the index's top M below whose last cosine nothing is trusted: HNSW misses true neighbours in the tail
#: of its answer (on the HotpotQA dev graph at M = 400, recall 0.99-1.0, the first miss at rank 237 or later), so the
#: floor is the cosine at rank M * INDEX_TRUSTED_SHARE, not at rank M
INDEX_TRUSTED_SHARE = 0.5
#: the index serves entities with at least this many mentions per M (``EnvConfig.lookup_index_top_m``): a smaller
#: pool (about its mentions and their neighbours) costs about what the top M costs to read, and may hold fewer than
#: K_s sentences, which the index can never decide
INDEX_MENTIONS_PER_M = 1.0


def index_tried(view: GraphView, entity_ids: Sequence[str], cfg: "EnvConfig") -> list[str]:
    """The entities of ``entity_ids`` whose LOOKUP the vector index tries (``cfg.lookup_index_top_m`` set and at least
    ``INDEX_MENTIONS_PER_M * M`` mentions); the others' pools are read whole, as the paper's LOOKUP reads them."""
    if not cfg.lookup_index_top_m:
        return []
    counts = view.entity_mentions(entity_ids)
    return [e for e in entity_ids if counts.get(e, 0) >= INDEX_MENTIONS_PER_M * cfg.lookup_index_top_m]


def index_lookup_results(view: GraphView, entity_ids: Sequence[str], m_vec: np.ndarray, committed: set[str],
                         committed_keys: set[str], cfg: "EnvConfig") -> dict[str, tuple[str, ...]]:
    """U_{t+1} of LOOKUP(e) for each of ``entity_ids`` that the vector index decides, read without C(e) itself;
    the others are absent (the caller ranks their whole pool: :func:`lookup_result`). Two round trips for all of
    them, whatever the pools' sizes: the index's top M = ``cfg.lookup_index_top_m`` sentences by cosine to m_t
    (:meth:`GraphView.index_top`) and which of them lie in which pool (:meth:`GraphView.pool_members`).

    Exactness: let f be the cosine of the index's (M * ``INDEX_TRUSTED_SHARE``)-th sentence. If the index's top M
    holds every sentence above f (true when it is exact), no pool sentence the intersection misses has a cosine above
    f. Every pool sentence of the intersection whose cosine exceeds f (by ``INDEX_MARGIN``, for rounding) therefore ranks above every pool sentence it misses:
    these trusted sentences, ranked as :meth:`GraphView.rank_top` ranks (cosine, ties by id; C_t removed), are the
    first ones of the whole pool's ranking. The paper's U_{t+1} reads that ranking front to back (text
    de-duplication, top K_s, at most ``lookup_pool_cap``), so when the trusted sentences fill K_s, or number
    ``lookup_pool_cap``, it is the same read over the same prefix: the same result. Otherwise the entity is left out.
    HNSW indexes (both stores') are approximate: a sentence above f that the index misses can change a result (hence
    the margin of ``INDEX_TRUSTED_SHARE``: their misses lie mostly in the tail of the top M). Two sentences tied up to
    float rounding (one text in two paragraphs) can swap: the whole pool's ranking may take a long pool's cosines from
    one product over every sentence (:meth:`GraphView.rank_top`), this one from the trusted rows alone.

    Only entities with at least ``INDEX_MENTIONS_PER_M * M`` mentions are tried (the others' pools are read whole,
    as cheaply); ``view.calls`` counts the tried ones as ``index_lookups`` (decided) or ``index_fallbacks``."""
    entity_ids = index_tried(view, entity_ids, cfg)
    if not entity_ids:
        return {}
    top, cosines, complete = view.index_top(m_vec, cfg.lookup_index_top_m)
    floor = None if complete or not cosines else cosines[max(1, math.ceil(len(cosines) * INDEX_TRUSTED_SHARE)) - 1]
    members = view.pool_members(top, entity_ids)
    rankings = {e: _trusted_ranking(view, members.get(e, frozenset()), floor, m_vec, committed, cfg) for e in entity_ids}
    chunk = max(2 * cfg.visible_cap, 8)  # the texts the de-duplication reads first, in one round trip for all
    view.prefetch_sentences(s for ranked in rankings.values() for s in ranked[:chunk])
    out: dict[str, tuple[str, ...]] = {}
    for e, ranked in rankings.items():
        result = lookup_result(view, (), m_vec, committed, committed_keys, cfg, ranked=ranked)
        decided = len(result) == cfg.visible_cap or len(ranked) >= cfg.lookup_pool_cap
        view.calls["index_lookups" if decided else "index_fallbacks"] += 1
        if decided:
            out[e] = result
    return out


def _trusted_ranking(view: GraphView, members: frozenset[str], floor: float | None, m_vec: np.ndarray,
                     committed: set[str], cfg: "EnvConfig") -> list[str]:
    """The pool sentences of the index's top M whose cosine to m_t exceeds ``floor + INDEX_MARGIN`` (all of them
    when ``floor`` is None), ranked by :meth:`GraphView.rank_top` minus C_t, cut to ``lookup_pool_cap``."""
    ids = sorted(members)
    if floor is not None and ids:
        rows = np.fromiter(map(view.row_of.__getitem__, ids), dtype=np.int64, count=len(ids))
        sims = row_cosines(view.embeddings[rows], m_vec)
        ids = [sid for sid, sim in zip(ids, sims) if sim > floor + INDEX_MARGIN]
    return view.rank_top(m_vec, ids, cfg.lookup_pool_cap, exclude=committed)


def question_entity_channel(view: GraphView, entity_ids: Sequence[str], q_vec: np.ndarray, k: int,
                            cfg: "EnvConfig") -> list[str]:
    """InitRetrieve's question-entity channel (Harness-G §3.3): the sentences of the question entities' pools C(e),
    one entry per (entity, sentence), ranked by cosine to q (:meth:`GraphView.rank`: ties by id), the first ``k``.

    With ``cfg.lookup_index_top_m`` the entities :func:`index_tried` tries contribute only their pool sentences
    among the index's top M by cosine to q (:meth:`GraphView.pool_members`, a cost that follows M, not the pools);
    the other entities' pools are read whole. Let f be the M * ``INDEX_TRUSTED_SHARE``-th cosine of the index's top
    M: a pool sentence left out lies at or below f when the top M is exact, so when the k-th entry of this ranking
    lies above f + ``INDEX_MARGIN`` the first k entries are the paper's. Otherwise the tried pools are read whole. ``view.calls`` counts ``index_channels`` (decided) and ``index_channel_fallbacks``.

    With ``cfg.lookup_store_rank_min`` the entities :func:`store_ranked` picks contribute their pool's first k by
    cosine to q, ranked by the store (:meth:`GraphView.store_ranked_pool`): the rest of such a pool ranks below k
    entries of its own, so it cannot reach the first k (the paper's result up to float rounding)."""
    ids = list(entity_ids)  # as the caller lists them: an entity named twice counts its pool twice, as before
    tried = index_tried(view, ids, cfg)
    if tried:
        top, cosines, complete = view.index_top(q_vec, cfg.lookup_index_top_m)
        floor = None if complete or not cosines else cosines[max(1, math.ceil(len(cosines) * INDEX_TRUSTED_SHARE)) - 1]
        members = view.pool_members(top, tried)
        rest = [e for e in ids if e not in members]
        pools = view.lookup_pools(rest, articles=False, hub_sample=cfg.lookup_hub_sample) if rest else {}
        entries = [sid for e in ids for sid in (sorted(members[e]) if e in members else pools.get(e, ()))]
        ranked = view.rank(q_vec, entries)
        if floor is None or (len(ranked) >= k and ranked[k - 1][1] > floor + INDEX_MARGIN):
            view.calls["index_channels"] += 1
            return [sid for sid, _ in ranked[:k]]
        view.calls["index_channel_fallbacks"] += 1
    in_store = set(store_ranked(view, ids, cfg))
    rest = [e for e in ids if e not in in_store]
    pools = view.lookup_pools(rest, articles=False, hub_sample=cfg.lookup_hub_sample) if rest else {}
    # a store-ranked pool's first k by cosine to q hold all it can add to the first k entries
    pools.update({e: view.store_ranked_pool(e, q_vec, k) for e in in_store})
    return [sid for sid, _ in view.rank(q_vec, [sid for e in ids for sid in pools.get(e, ())])][:k]


def decided_without_pools(view: GraphView, entity_ids: Sequence[str], m_vec: np.ndarray, committed: set[str],
                          committed_keys: set[str], cfg: "EnvConfig") -> dict[str, tuple[str, ...]]:
    """U_{t+1} of the LOOKUPs of ``entity_ids`` that an execution switch decides without reading the pool into the
    client: the index first (``lookup_index_top_m``, :func:`index_lookup_results`), then the store's own ranking
    (``lookup_store_rank_min``, :func:`store_ranked_results`); the others are absent (their pools are read whole)."""
    decided: dict[str, tuple[str, ...]] = {}
    for on, decide in ((cfg.lookup_index_top_m, index_lookup_results), (cfg.lookup_store_rank_min, store_ranked_results)):
        todo = [e for e in entity_ids if e not in decided]
        if on and todo:
            decided |= decide(view, todo, m_vec, committed, committed_keys, cfg)
    return decided


def lookup_results_for(view: GraphView, entity_ids: Sequence[str], m_vec: np.ndarray, committed: set[str],
                       committed_keys: set[str], cfg: "EnvConfig") -> dict[str, tuple[str, ...]]:
    """U_{t+1} of LOOKUP(e) for each entity: through an execution switch where one decides it
    (:func:`decided_without_pools`), the whole pool otherwise (one ``candidate_pools`` round trip for those). What the
    reachability search reads."""
    decided = decided_without_pools(view, entity_ids, m_vec, committed, committed_keys, cfg)
    rest = [e for e in entity_ids if e not in decided]
    if rest:
        pools, anchors = candidate_pools(view, rest, cfg)
        for e in rest:
            decided[e] = lookup_result(view, pools.get(e, ()), m_vec, committed, committed_keys, cfg,
                                       anchors=anchors.get(e, frozenset()))
    return decided


def candidate_pools(view: GraphView, entity_ids: Sequence[str],
                    cfg: "EnvConfig") -> tuple[dict[str, tuple[str, ...]], dict[str, frozenset[str]]]:
    """(each entity's LOOKUP pool, :func:`lookup_pools`; each entity's title anchors): with ``EnvConfig.anchor_slot``
    the anchors :func:`lookup_result` always shows (none without it); one cached store query for both when both are
    on."""
    return lookup_pools(view, entity_ids, cfg), (view.title_anchors(entity_ids) if cfg.anchor_slot else {})


def _show_title_anchor(view: GraphView, out: list[str], anchors: frozenset[str], m_vec: np.ndarray, committed: set[str],
                       shown_keys: set[str], cfg: "EnvConfig") -> list[str]:
    """``out`` with its last slot (or a free one) given to the best of ``anchors`` by cosine to m_t whose text is
    neither committed nor already shown; ``out`` unchanged when there is none."""
    ranked = view.rank_top(m_vec, sorted(anchors), len(anchors), exclude=committed)
    best = next(iter(_distinct(ranked, view.sentences(ranked), set(shown_keys))), None)
    if best is None:
        return out
    return (out if len(out) < cfg.visible_cap else out[:-1]) + [best]


#: LOOKUP candidates' tiers, best first: entities of C_t, entities the question names, entities of U_t
_ROLE_RANK = {"bridge": 0, "question": 1, "frontier": 2}


def _ranked_pool(view: GraphView, pool: Sequence[str], m_vec: np.ndarray, committed: set[str], cfg: "EnvConfig") -> list[str]:
    return view.rank_top(m_vec, pool, cfg.lookup_pool_cap, exclude=committed)


def _lookup_candidates(view: GraphView, committed: Sequence[str], sentences: Sequence[SentenceInfo],
                       visited: Sequence[str], question_targets: Sequence[EntityInfo],
                       question_vec: np.ndarray) -> tuple[list[EntityInfo], dict[str, str]]:
    """The lookupable, unvisited entities of C_t, the question and U_t (``sentences``), each once, ordered by role
    tier (``_ROLE_RANK``), then name cosine to the question, then id; and each one's role (entity id -> role)."""
    # Candidate entities: bridge (mentioned in committed evidence), then question (named in q), then frontier (visible).
    ents_of = view.entities_of(list(committed) + [s.id for s in sentences])
    visited_set = set(visited)
    roles: dict[str, str] = {}
    pool: dict[str, EntityInfo] = {}
    frontier = [e for s in sentences for e in ents_of.get(s.id, ())]
    bridges = [e for sid in committed for e in ents_of.get(sid, ())]
    for role, ents in (("bridge", bridges), ("question", question_targets), ("frontier", frontier)):
        for e in ents:
            if e.lookupable and e.id not in visited_set and e.id not in pool:
                pool[e.id] = e
                roles[e.id] = role
    candidates = list(pool.values())
    if candidates:
        name_vecs = view.entity_vectors(candidates)
        sims = row_cosines(name_vecs, question_vec)
        order = sorted(range(len(candidates)),
                       key=lambda i: (_ROLE_RANK[roles[candidates[i].id]], -float(sims[i]), candidates[i].id))
        candidates = [candidates[i] for i in order]
    return candidates, roles


def _cached_results(view: GraphView, state: tuple[Any, ...] | None,
                    candidates: Sequence[EntityInfo]) -> dict[str, tuple[str, ...]]:
    """LOOKUP results of ``candidates`` already cached in the view for this ``state`` (entity id -> result)."""
    known: dict[str, tuple[str, ...]] = {}
    if state is not None:
        for e in candidates:
            hit = view.lookup_result_cache.get((state, e.id))
            if hit is not None:
                known[e.id] = hit
    return known


def _rank_likely_pools(view: GraphView, candidates: Sequence[EntityInfo], known: dict[str, tuple[str, ...]],
                       taken_names: set[str], pools: dict[str, Any], title_anchors: dict[str, Any],
                       m_vec: np.ndarray, committed_set: set[str], cfg: "EnvConfig") -> dict[str, list[str]]:
    """Rank the pools of the likely-kept candidates (the first ``lookup_cap + 2`` new names) and fetch the texts
    their de-duplication reads in one round trip; returns entity id -> ranked pool."""
    chunk = max(2 * cfg.visible_cap, 8)
    ranked: dict[str, list[str]] = {}
    head_names: set[str] = set()
    for e in candidates:
        if len(head_names) == cfg.lookup_cap + 2:
            break
        if e.name not in taken_names and e.name not in head_names:
            head_names.add(e.name)
            if e.id not in known:
                ranked[e.id] = _ranked_pool(view, pools.get(e.id, ()), m_vec, committed_set, cfg)
    if ranked:  # with the title anchors a result may show (anchor_slot): their texts in the same round trip
        view.prefetch_sentences(itertools.chain((s for r in ranked.values() for s in r[:chunk]),
                                                (s for e in ranked for s in title_anchors.get(e, ()))))
    return ranked


def _kept_lookups(view: GraphView, candidates: Sequence[EntityInfo], state: tuple[Any, ...] | None,
                  visited: Sequence[str], sentences: Sequence[SentenceInfo], m_vec: np.ndarray, committed_set: set[str],
                  committed_keys: set[str], cfg: "EnvConfig") -> tuple[list[EntityInfo], dict[str, tuple[str, ...]]]:
    """The LOOKUPs the menu offers (at most ``lookup_cap``, in candidate order) and each one's result (entity id ->
    sentence ids). One LOOKUP per name: same-name entities (TITLE/PERSON/WORK_OF_ART of one article) are one target
    for a policy; a result that is empty, within U_t, or equal to a better-ranked one's is merged away."""
    taken_names = set(view.entity_names(visited).values()) if visited else set()
    kept: list[EntityInfo] = []
    results: dict[str, tuple[str, ...]] = {}
    current_set = frozenset(s.id for s in sentences)
    seen_results = {current_set}
    known = _cached_results(view, state, candidates)
    todo = [e for e in candidates if e.id not in known]
    if todo:  # the execution switches' LOOKUPs (no pool read); what they leave is read whole below
        decided = decided_without_pools(view, [e.id for e in todo], m_vec, committed_set, committed_keys, cfg)
        if state is not None:
            for eid, res in decided.items():
                view.lookup_result_cache.put((state, eid), res)
        known |= decided
        todo = [e for e in todo if e.id not in known]
    pools, title_anchors = candidate_pools(view, [e.id for e in todo], cfg) if todo else ({}, {})
    ranked = _rank_likely_pools(view, candidates, known, taken_names, pools, title_anchors, m_vec, committed_set, cfg)
    for e in candidates:
        if len(kept) == cfg.lookup_cap:
            break
        if e.name in taken_names:
            continue
        res = known.get(e.id)
        if res is None:
            res = lookup_result(view, pools.get(e.id, ()), m_vec, committed_set, committed_keys, cfg,
                                ranked=ranked.get(e.id), anchors=title_anchors.get(e.id, frozenset()))
            if state is not None:
                view.lookup_result_cache.put((state, e.id), res)
        key = frozenset(res)
        # merged away: no result, nothing beyond what is already visible, or the same retrieval as a better-ranked lookup
        if not res or key <= current_set or key in seen_results:
            continue
        seen_results.add(key)
        taken_names.add(e.name)
        kept.append(e)
        results[e.id] = res
    return kept, results


def build_menu(view: GraphView, *, question_vec: np.ndarray, m_vec: np.ndarray, committed: Sequence[str], visible: Sequence[str],
               visited: Sequence[str], cfg: "EnvConfig", m_text: str | None = None,
               question_targets: Sequence[EntityInfo] = ()) -> Menu:
    """Propose and filter the menu for the current state (read-only).

    ``m_text``: the text of m_t (whose vector is ``m_vec``). Given, each LOOKUP result is cached in the view under
    (m_t, C_t, caps, entity) -- all a result depends on -- so a state revisited by another rollout of a GRPO group,
    or a candidate offered again while C_t is unchanged, is not ranked again.

    ``question_targets``: the question's entities (``env.question_targets``; empty when
    ``EnvConfig.question_lookups`` is off), candidates with role "question" unless C_t names them (then "bridge");
    ranked after the bridges and before the frontier."""
    committed_set = set(committed)
    infos = view.sentences(list(committed) + list(visible))
    committed_keys = {text_key(infos[s].text) for s in committed if s in infos}
    sentences = [infos[s] for s in visible if s in infos and s not in committed_set]
    candidates, roles = _lookup_candidates(view, committed, sentences, visited, question_targets, question_vec)
    state = (m_text, frozenset(committed_set), *lookup_rules(cfg)) if m_text is not None else None
    kept, results = _kept_lookups(view, candidates, state, visited, sentences, m_vec, committed_set, committed_keys, cfg)

    actions: list[Action] = []

    def add(kind: ActionType, targets: tuple[str, ...]) -> None:
        actions.append(Action(f"A{len(actions)}", kind, targets))

    for s in sentences:
        add(ActionType.SELECT, (s.id,))
    for e in kept:
        add(ActionType.LOOKUP, (e.id,))
    if cfg.answer_with:
        # ANSWER_WITH(s_1..s_k) commits one or more visible sentences and stops (Harness-G §3.3; appendix "Action
        # inventory"): every subset of U_t of size 1..answer_with_max, by size then visible order, so the menu stays
        # finite and small
        for size in range(1, min(cfg.answer_with_max, len(sentences)) + 1):
            for combo in itertools.combinations(sentences, size):
                add(ActionType.ANSWER_WITH, tuple(s.id for s in combo))
    add(ActionType.ANSWER, ())
    return Menu(sentences, kept, [roles[e.id] for e in kept], actions, results)
