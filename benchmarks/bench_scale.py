"""Scale: NER over several processes, per-unit build rates, and the menu environment's step cost against corpus size.

    python benchmarks/bench_scale.py [--parts a,c] [--workers 1,2] [--scales 1,10] [--questions 40] [--top-entities 10]
                                     [--index-m 1000] [--store-rank-min 1000] [--m-queries 10] [--base GRAPH_DIR]
                                     [--merge] [--store embedded|neo4j]
                                     [--workdir /tmp/hg-scale] [--out benchmarks/results/scale.json]
    python benchmarks/bench_scale.py --parts c --scales 1,10,100 --base /tmp/hg-scale/hotpotqa-w1 --merge   # (c) only
    python benchmarks/bench_scale.py --parts c --scales 1,10 --store neo4j --base /tmp/hg-scale/hotpotqa-w1 --merge

(a) build, ``--workers`` (issue 35 item 1): the HotpotQA dev subset built once per NER worker count, each in a fresh
    subprocess (no store load: the artifact is store-independent). Per stage: wall seconds and CPU seconds of the
    build process plus its finished NER worker processes (``BuildResult.cpu_seconds``), so ``CPU / wall`` is how many
    cores a stage kept busy. The artifacts of all counts are compared file by file (manifest sha256s).
(b) per-unit rates from (a): NER tokens/s per busy NER core (corpus tokens / NER CPU seconds), sentences/s of the
    sentence encoder (sentences / embed busy seconds and per embed CPU second), entity names/s in ``link``.
(c) step cost against corpus size (issue 35 item 5): the 1x graph of (a) replicated R times into a synthetic graph
    (see :func:`replicate_artifact`: every sentence R times with distinct text and a distinct vector, every entity
    shared, so every LOOKUP pool is R times larger -- the worst case of a growing corpus, where in a real one only
    the hub entities' pools grow), loaded into the embedded FalkorDB (``--store neo4j``: bulk-imported into a fresh
    local Neo4j 5.26, results under the JSON's ``neo4j`` key); then, per scale, with the paper preset and with
    the bounded LOOKUP (``EnvConfig.lookup_index_top_m = --index-m``) and with the store-ranked LOOKUP
    (``EnvConfig.lookup_store_rank_min = --store-rank-min``: a pool ranked inside the store): env step p50/p99 over ``--questions`` questions
    (bench_env.py's seeded SELECT/LOOKUP walk, fresh GraphView; how many LOOKUP results the index decided and how many
    fell back to the whole pool) and the LOOKUP cost on the ``--top-entities`` entities with the largest pools (paper:
    store pool query, ranking, the whole lookup; bounded: index top-M query, pool_members query, ranking, with its
    fallback, and whether its results equal the paper's; store-ranked: the whole lookup and whether its results
    equal the paper's), plus where the paper's pool query spends its time
    (FalkorDB's server run time against the client's round trip, for the pool query and cheaper variants of it).

Each scale runs in its own subprocess. Writes ``benchmarks/results/scale.{json,md}``, including a wiki-18 cost
extrapolation computed from (b) with every assumption named.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BY_NAME, RESULTS, fmt, load_avg, machine_info, machine_line, md_table, utc_stamp, write_results  # noqa: E402
from common import run_child as common_run_child  # noqa: E402

from harness_g.graph.stores.hub_sample import HUB_SAMPLE_SIZE  # noqa: E402

STAGES = ("read", "split", "ner", "embed", "ner_embed_wall", "entities", "link", "write")
WALL_STAGES = ("read", "split", "ner_embed_wall", "entities", "link", "write")
#: noise norm added to a replica's sentence vector before renormalising: cosine to the original 1/sqrt(1+0.25^2)=0.970
REPLICA_NOISE = 0.25


# -- (a) build ------------------------------------------------------------------------------------
def child_build(spec: dict[str, Any]) -> dict[str, Any]:
    from harness_g.graph.build import CorpusSpec, build_graph
    from harness_g.graph.config import BuildConfig

    graph_dir = Path(spec["graph_dir"])
    shutil.rmtree(graph_dir, ignore_errors=True)
    la0 = load_avg()
    t0 = time.perf_counter()
    res = build_graph([CorpusSpec("hotpotqa", Path(spec["path"]))], graph_dir, BuildConfig(workers=spec["workers"]),
                      force=True, progress=False)
    wall = time.perf_counter() - t0
    manifest = json.loads((graph_dir / "manifest.json").read_text(encoding="utf-8"))
    return {"workers": res.workers, "seconds": res.seconds, "cpu_seconds": res.cpu_seconds, "wall_s": wall,
            "corpus_tokens": res.corpus_tokens, "counts": res.counts, "peak_rss_mb": res.peak_rss_mb,
            "files": {k: v["sha256"] for k, v in manifest["files"].items()}, "content_hash": manifest["content_hash"],
            "load_avg_before": la0, "load_avg_after": load_avg()}


def rates(case: dict[str, Any]) -> dict[str, float]:
    """Per-unit rates of one build (b)."""
    s, c, n = case["seconds"], case["cpu_seconds"], case["counts"]
    return {"ner_tokens_per_cpu_s": case["corpus_tokens"] / c["ner"],
            "ner_sentences_per_cpu_s": n["sentences"] / c["ner"],
            "embed_sentences_per_s": n["sentences"] / s["embed"],
            "embed_sentences_per_cpu_s": n["sentences"] / max(1e-9, c["embed"]),
            "link_names_per_s": n["lookupable_entities"] / s["link"],
            "build_s_per_1k_tokens": sum(s[k] for k in WALL_STAGES) / (case["corpus_tokens"] / 1000.0),
            "cpu_s_per_1k_tokens": sum(c[k] for k in WALL_STAGES) / (case["corpus_tokens"] / 1000.0)}


# -- (c) replicated graphs ------------------------------------------------------------------------
def replicate_artifact(src: Path, factor: int, out: Path, seed: int = 0) -> dict[str, Any]:
    """Write the ``factor``-times replicated graph of artifact ``src`` into ``out``.

    Replica 0 is ``src`` unchanged (its questions' gold ids stay valid); replica r > 0 copies every paragraph (id
    suffixed ``_r<r>``, text and every sentence suffixed `` (copy r<r>)``, title kept), every sentence's vector plus
    Gaussian noise of norm ``REPLICA_NOISE`` renormalised (cosine ~0.97 to the original: no two sentences share a
    vector), and every mention (same entity, so each entity's pool is ``factor`` times larger). Entities, their name
    vectors and the SYNONYM links are ``src``'s. NER is not re-run: replicas mention what the originals mention."""
    import pyarrow.parquet as pq

    from harness_g.graph import artifact as art
    from harness_g.graph.types import paragraph_of, sentence_id

    a = art.Artifact.open(src)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    par = a.table("paragraphs").to_pydict()
    sen = a.table("sentences").to_pydict()
    men = a.table("mentions").to_pydict()
    ent = a.table("entities").to_pydict()

    def rid(pid: str, r: int) -> str:
        return pid if r == 0 else f"{pid}_r{r}"

    def rtext(text: str, r: int) -> str:
        return text if r == 0 else f"{text} (copy r{r})"

    P = {k: [] for k in par}
    S = {k: [] for k in sen}
    M = {k: [] for k in men}
    for r in range(factor):
        for i in range(len(par["id"])):
            P["id"].append(rid(par["id"][i], r))
            P["title"].append(par["title"][i])
            P["text"].append(rtext(par["text"][i], r))
            P["source"].append(par["source"][i])
        for i in range(len(sen["id"])):
            pid = rid(sen["paragraph_id"][i], r)
            S["id"].append(sentence_id(pid, sen["position"][i]))
            S["paragraph_id"].append(pid)
            S["position"].append(sen["position"][i])
            S["title"].append(sen["title"][i])
            S["text"].append(rtext(sen["text"][i], r))
        for i in range(len(men["sentence_id"])):
            sid = men["sentence_id"][i]
            M["sentence_id"].append(sentence_id(rid(paragraph_of(sid), r), int(sid.rsplit(":", 1)[1])))
            for k in ("entity_id", "surface", "start", "end", "kind"):
                M[k].append(men[k][i])
    ent["mentions"] = [m * factor for m in ent["mentions"]]
    counts = {"paragraphs": art.write_table(out, "paragraphs", P), "sentences": art.write_table(out, "sentences", S),
              "entities": art.write_table(out, "entities", ent), "mentions": art.write_table(out, "mentions", M)}
    shutil.copy(a.file("synonyms.parquet"), out / "synonyms.parquet")
    counts["synonyms"] = pq.read_metadata(out / "synonyms.parquet").num_rows
    base = np.asarray(a.embeddings(mmap=False), dtype=np.float32)
    rng = np.random.default_rng(seed)
    emb = np.empty((base.shape[0] * factor, base.shape[1]), dtype=np.float32)
    emb[: base.shape[0]] = base
    for r in range(1, factor):
        noise = rng.standard_normal(base.shape).astype(np.float32)
        noise *= REPLICA_NOISE / np.linalg.norm(noise, axis=1, keepdims=True)
        v = base + noise
        emb[r * base.shape[0]:(r + 1) * base.shape[0]] = v / np.linalg.norm(v, axis=1, keepdims=True)
    art.write_embeddings(out, emb)
    shutil.copy(a.file(art.ENTITY_EMBEDDINGS), out / art.ENTITY_EMBEDDINGS)
    shutil.copy(a.file(art.QUESTIONS), out / art.QUESTIONS)
    src_counts = a.counts
    counts.update(lookupable_entities=src_counts["lookupable_entities"], questions=src_counts["questions"],
                  next_edges=src_counts["next_edges"] * factor)
    manifest = dict(a.manifest)
    manifest.update(
        content_hash=hashlib.sha256(f"{a.content_hash}/x{factor}/noise{REPLICA_NOISE}/seed{seed}".encode()).hexdigest(),
        dataset=f"{manifest['dataset']}-x{factor}-replicated", counts=counts,
        corpus_tokens=sum(len(t.split()) for t in P["text"]), seconds={}, replicated_from=str(src),
        files=art.file_digests(out), created=utc_stamp())
    art.write_manifest(out, manifest)
    return {"counts": counts, "corpus_tokens": manifest["corpus_tokens"]}


#: where a large pool's store query spends its time (FalkorDB: server-side run time against the client's wall): the
#: matching alone (a count), the ids of the three channels (no channel, no priority, no ORDER BY), and the mention
#: channel alone; beside them the real query, lookup_candidates_multi
_CHANNELS = """
  MATCH (:Entity {id: eid})<-[:MENTIONS]-(s:Sentence) RETURN s.id AS id
  UNION WITH eid MATCH (:Entity {id: eid})-[:SYNONYM]-(:Entity)<-[:MENTIONS]-(s:Sentence) RETURN s.id AS id
  UNION WITH eid MATCH (:Entity {id: eid})<-[:MENTIONS]-(:Sentence)-[:NEXT]-(s:Sentence) RETURN s.id AS id"""
POOL_QUERY_PARTS = {
    "count (match only)": "UNWIND $entity_ids AS eid CALL { WITH eid " + _CHANNELS + " } RETURN count(*) AS n",
    "ids only": "UNWIND $entity_ids AS eid CALL { WITH eid " + _CHANNELS + " } RETURN eid AS entity_id, id",
    "mention ids": "MATCH (:Entity {id: $entity_ids[0]})<-[:MENTIONS]-(s:Sentence) RETURN s.id AS id",
}


def pool_query_parts(store: Any, entity_id: str, repeats: int) -> dict[str, dict[str, float]]:
    """Best of ``repeats`` per query of :data:`POOL_QUERY_PARTS` and the real pool query (FalkorDB only): rows,
    server ms (FalkorDB's own run time) and client ms (the round trip, reply parsing included)."""
    from harness_g.graph.stores.queries import load_query

    texts = {"lookup_candidates_multi": load_query("lookup_candidates_multi", store.dialect), **POOL_QUERY_PARTS,
             "lookup_candidates_sampled": load_query("lookup_candidates_sampled", store.dialect)}
    params = {"entity_ids": [entity_id], "articles": False}
    out = {}
    for name, text in texts.items():
        best = None
        for _ in range(repeats):
            t0 = time.perf_counter()
            res = store._execute(text, params, write=False, what=name)
            dt = 1000 * (time.perf_counter() - t0)
            if best is None or dt < best["client_ms"]:
                best = {"rows": len(res.result_set), "server_ms": float(res.run_time_ms), "client_ms": dt}
        out[name] = best
    return out


def child_scale(spec: dict[str, Any]) -> dict[str, Any]:
    """Load one replicated graph, then per variant (the paper's LOOKUP; the bounded one, ``lookup_index_top_m``)
    time env steps and the largest pools' LOOKUPs (c)."""
    from harness_g.graph.artifact import Artifact
    from harness_g.graph.load import load_graph

    graph_dir = Path(spec["graph_dir"])
    server = None
    t = time.perf_counter()
    if spec.get("store", "embedded") == "neo4j":  # a fresh local Neo4j 5.26, bulk-imported (issue 35 item 3)
        from harness_g.graph.stores.neo4j_bulk import bulk_load_local

        server, store, _ = bulk_load_local(graph_dir, hub_sample=spec.get("hub_sample"))
    else:
        store, _ = load_graph(graph_dir, progress=False, force=True, hub_sample=spec.get("hub_sample"))
    load_s = time.perf_counter() - t
    artifact = Artifact.open(graph_dir)
    out: dict[str, Any] = {"factor": spec["factor"], "counts": artifact.counts, "load_s": load_s,
                           "store": store.dialect, "load_avg_before": load_avg()}
    try:
        out.update(_scale_on(store, artifact, spec))
    finally:
        store.close()
        if server is not None:
            server.stop()
    out["env"] = out["variants"]["paper"]["env"]
    out["lookup_ms"] = out["variants"]["paper"]["lookup_ms"]
    out["load_avg_after"] = load_avg()
    return out


def _scale_on(store: Any, artifact: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """(c) on one loaded store: env steps per variant, the largest pools' LOOKUPs, FalkorDB's pool query parts."""
    from bench_env import run_single, summary_ms

    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.graph_view import GraphView
    from harness_g.agent.env.menu import index_lookup_results, lookup_pools, lookup_result
    from harness_g.agent.env.retrieval import lookup_query

    out: dict[str, Any] = {}
    configs = {"paper": EnvConfig(), "index": EnvConfig(lookup_index_top_m=spec["index_m"]),
               "store": EnvConfig(lookup_store_rank_min=spec.get("store_rank_min", STORE_RANK_MIN)),
               "sample": EnvConfig(lookup_hub_sample=spec.get("hub_sample", HUB_SAMPLE_SIZE))}
    items = artifact.questions()[: spec["questions"]]
    # the largest pools: the lookup-able entities with the most mentions
    ents = artifact.table("entities", columns=["id", "surface", "lookupable", "mentions"]).to_pylist()
    top = sorted((e for e in ents if e["lookupable"]), key=lambda e: (-e["mentions"], e["id"]))[: spec["top_entities"]]
    m_texts = [lookup_query(item.question, []) for item in items[: spec["m_queries"]]]
    view = GraphView(store, artifact)
    hubs = {r["id"] for r in store.query("pool_samples_get")}  # entities whose pool the sample environment samples
    out["hubs"] = len(hubs)
    out["variants"] = {}
    for variant, cfg in configs.items():
        before = dict(view.calls)
        single = run_single(_empty_caches(view), items, seed=0, free=None, config=cfg)
        single.pop("_step_s")
        single.update({k: view.calls[k] - before[k] for k in ("index_lookups", "index_fallbacks", "store_ranked")})
        out["variants"][variant] = {"env": single}
    rows = []
    for e in top:
        reps: dict[str, list[float]] = {"pool_ms": [], "rank_ms": [], "lookup_ms": []}
        for _ in range(spec["repeats"]):  # the paper's LOOKUP on m_t of the first question, from empty caches
            fresh = _empty_caches(view)
            m_vec = fresh.encode([m_texts[0]])[0]
            t0 = time.perf_counter()
            pool = lookup_pools(fresh, [e["id"]], configs["paper"])[e["id"]]
            t1 = time.perf_counter()
            ranked = fresh.rank_top(m_vec, pool, configs["paper"].lookup_pool_cap, exclude=set())
            t2 = time.perf_counter()
            lookup_result(fresh, pool, m_vec, set(), set(), configs["paper"], ranked=ranked)
            t3 = time.perf_counter()
            reps["pool_ms"].append(1000 * (t1 - t0))
            reps["rank_ms"].append(1000 * (t2 - t1))
            reps["lookup_ms"].append(1000 * (t3 - t0))
        row = {"entity": e["surface"], "mentions": e["mentions"], "pool": len(pool),
               **{k: float(np.median(v)) for k, v in reps.items()}}
        row.update(_index_lookups(view, e["id"], pool, m_texts, configs, index_lookup_results, lookup_result))
        row.update(_store_lookups(view, e["id"], m_texts, configs))
        row.update(_sample_lookups(view, e["id"], m_texts, configs, hubs))
        row.update(_entity_channel(view, e["id"], _naming(view, artifact.questions(), e["id"], spec["m_queries"]),
                                   configs))
        rows.append(row)
    out["largest_pools"] = rows
    for variant in configs:
        out["variants"][variant]["lookup_ms"] = summary_ms([lookup_ms(r, variant) / 1000 for r in rows])
    if store.dialect == "falkordb":
        out["pool_query_parts"] = {"entity": top[0]["surface"],
                                   **pool_query_parts(store, top[0]["id"], spec["repeats"])}
    return out


def lookup_ms(row: dict[str, Any], variant: str) -> float:
    """One largest-pool row's LOOKUP ms in ``variant``: an entity the index does not try, or the store does not rank,
    costs the paper's lookup."""
    if variant == "index" and row.get("tried", True):
        return row["index_total_ms"]
    if variant == "store" and row.get("store_tried"):
        return row["store_ms"]
    if variant == "sample" and "sample_ms" in row:
        return row["sample_ms"]
    return row["lookup_ms"]


#: (c)'s store-ranked environment: entities with at least this many mentions rank their pool in the store
STORE_RANK_MIN = 1000


def _store_lookups(view: Any, entity_id: str, m_texts: list[str], configs: dict[str, Any]) -> dict[str, Any]:
    """The store-ranked LOOKUP (``lookup_store_rank_min``) of one entity for each m_t of ``m_texts``, each from empty
    caches: the median ms and how many results equal the paper's (the whole pool ranked in the client)."""
    from harness_g.agent.env.menu import lookup_pools, lookup_result, store_ranked, store_ranked_results

    cfg, paper = configs["store"], configs["paper"]
    if not store_ranked(view, [entity_id], cfg):
        return {"store_tried": False}
    times, same = [], 0
    for m_text in m_texts:
        fresh = _empty_caches(view)
        m_vec = fresh.encode([m_text])[0]
        t0 = time.perf_counter()
        got = store_ranked_results(fresh, [entity_id], m_vec, set(), set(), cfg)[entity_id]
        times.append(1000 * (time.perf_counter() - t0))
        same += got == lookup_result(fresh, lookup_pools(fresh, [entity_id], paper)[entity_id], m_vec, set(), set(), paper)
    return {"store_tried": True, "store_ms": float(np.median(times)), "store_same": same}


def _sample_lookups(view: Any, entity_id: str, m_texts: list[str], configs: dict[str, Any],
                    hubs: set[str]) -> dict[str, Any]:
    """The hub-sampled LOOKUP (``lookup_hub_sample``: the pool query ``lookup_candidates_sampled``, then the paper's
    ranking of that pool) of one entity for each m_t of ``m_texts``, each from empty caches: the median ms, the
    sampled pool's size, whether the entity is a hub, how many results equal the paper's and the mean share of the
    paper's K_s sentences the sampled result shows (its overlap, in [0, 1])."""
    from harness_g.agent.env.menu import lookup_pools, lookup_result

    cfg, paper = configs["sample"], configs["paper"]
    times, same, overlap, size = [], 0, [], 0
    for m_text in m_texts:
        fresh = _empty_caches(view)
        m_vec = fresh.encode([m_text])[0]
        t0 = time.perf_counter()
        pool = lookup_pools(fresh, [entity_id], cfg)[entity_id]
        got = lookup_result(fresh, pool, m_vec, set(), set(), cfg)
        times.append(1000 * (time.perf_counter() - t0))
        size = len(pool)
        exact = lookup_result(fresh, lookup_pools(fresh, [entity_id], paper)[entity_id], m_vec, set(), set(), paper)
        same += got == exact
        overlap.append(len(set(got) & set(exact)) / max(1, len(exact)))
    return {"sample_ms": float(np.median(times)), "sample_pool": size, "sample_hub": entity_id in hubs, "sample_same": same,
            "sample_overlap": float(np.mean(overlap))}


def _index_lookups(view: Any, entity_id: str, pool: tuple[str, ...], m_texts: list[str], configs: dict[str, Any],
                   index_lookup_results: Any, lookup_result: Any) -> dict[str, Any]:
    """The bounded LOOKUP of one entity for each m_t of ``m_texts``, each from empty caches: medians of the index's
    top-M query, the pool_members query, the ranking, the whole attempt and the attempt plus its fallback (the
    paper's lookup of the same m_t when the index leaves it undecided); how many it decided and how many of those
    equal the paper's result."""
    from harness_g.agent.env.menu import INDEX_MENTIONS_PER_M, lookup_pools

    cfg, paper = configs["index"], configs["paper"]
    tried = view.entity_mentions([entity_id]).get(entity_id, 0) >= INDEX_MENTIONS_PER_M * cfg.lookup_index_top_m
    if not tried:  # the bounded environment reads this pool as the paper does: nothing of its own to time
        return {"m_queries": len(m_texts), "decided": 0, "same": 0, "tried": False}
    t: dict[str, list[float]] = {"index_top_ms": [], "members_ms": [], "index_result_ms": [], "index_ms": [],
                                 "index_total_ms": []}
    decided = same = 0
    for m_text in m_texts:
        fresh = _empty_caches(view)
        m_vec = fresh.encode([m_text])[0]
        t0 = time.perf_counter()
        top, _, _ = fresh.index_top(m_vec, cfg.lookup_index_top_m)
        t1 = time.perf_counter()
        fresh.pool_members(top, [entity_id])
        t2 = time.perf_counter()
        got = index_lookup_results(fresh, [entity_id], m_vec, set(), set(), cfg)  # the two queries above are cached
        t3 = time.perf_counter()
        exact = lookup_result(fresh, lookup_pools(fresh, [entity_id], paper)[entity_id], m_vec, set(), set(), paper)
        t4 = time.perf_counter()
        t["index_top_ms"].append(1000 * (t1 - t0))
        t["members_ms"].append(1000 * (t2 - t1))
        t["index_result_ms"].append(1000 * (t3 - t2))
        t["index_ms"].append(1000 * (t3 - t0))
        t["index_total_ms"].append(1000 * ((t3 - t0) if entity_id in got else (t4 - t0)))
        if entity_id in got:
            decided += 1
            same += got[entity_id] == exact
    return {**{k: float(np.median(v)) for k, v in t.items()}, "m_queries": len(m_texts), "decided": decided,
            "same": same, "tried": True}


def _naming(view: Any, items: list[Any], entity_id: str, n: int) -> list[str]:
    """Up to ``n`` question texts whose question entities (:meth:`GraphView.question_entities`) include
    ``entity_id``, in the graph's question order; the first questions' texts fill the rest."""
    from harness_g.agent.env.config import EnvConfig

    ngram = EnvConfig().question_ngram_max
    naming = [it.question for it in items if entity_id in {e.id for e in view.question_entities(it.question, ngram)}]
    return (naming + [it.question for it in items if it.question not in naming])[:n]


def _entity_channel(view: Any, entity_id: str, q_texts: list[str], configs: dict[str, Any]) -> dict[str, Any]:
    """InitRetrieve's question-entity channel with ``entity_id`` as the question's only entity, for each question
    text of ``q_texts``, each from empty caches: medians of the paper's channel (the whole pool read and ranked) and
    the bounded one (``lookup_index_top_m``: :func:`menu.question_entity_channel`, its fallback included), how many
    the index decided and how many bounded channels equal the paper's."""
    from harness_g.agent.env.menu import question_entity_channel

    t: dict[str, list[float]] = {"channel_paper_ms": [], "channel_index_ms": [], "channel_store_ms": [],
                                 "channel_sample_ms": []}
    decided = same = store_same = sample_same = 0
    for q_text in q_texts:
        outs = {}
        for variant, key in (("paper", "channel_paper_ms"), ("index", "channel_index_ms"),
                             ("store", "channel_store_ms"), ("sample", "channel_sample_ms")):
            fresh = _empty_caches(view)
            q_vec = fresh.encode([q_text])[0]
            before = fresh.calls["index_channels"]
            t0 = time.perf_counter()
            outs[variant] = question_entity_channel(fresh, [entity_id], q_vec, configs[variant].init_entity_k,
                                                    configs[variant])
            t[key].append(1000 * (time.perf_counter() - t0))
            decided += fresh.calls["index_channels"] - before
        same += outs["index"] == outs["paper"]
        store_same += outs["store"] == outs["paper"]
        sample_same += outs["sample"] == outs["paper"]
    return {**{k: float(np.median(v)) for k, v in t.items()}, "channel_decided": decided, "channel_same": same,
            "channel_store_same": store_same, "channel_sample_same": sample_same}


def _empty_caches(view: Any) -> Any:
    """``view`` with every cache emptied (pools, sentence texts, ranking row maps, all-sentence cosines, vectors)."""
    from harness_g.agent.env.graph_view import _LRU

    for value in vars(view).values():
        if isinstance(value, _LRU):
            value.clear()
    view.__dict__.pop("_rank_lrus", None)
    return view


# -- parent -----------------------------------------------------------------------------------------
def run_child(kind: str, spec: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """This script in a child process (:func:`common.run_child`)."""
    return common_run_child(__file__, kind, spec, workdir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", default="1,2", help="NER worker counts of (a), run in this order (empty: skip (a))")
    ap.add_argument("--scales", default="1,10", help="replication factors of (c) (empty: skip (c))")
    ap.add_argument("--questions", type=int, default=40, help="questions per scale for the env step times")
    ap.add_argument("--top-entities", type=int, default=10, help="largest-pool entities timed per scale")
    ap.add_argument("--repeats", type=int, default=3, help="cold runs per largest-pool LOOKUP (median)")
    ap.add_argument("--parts", default="a,c", help="which parts to run: a (builds; b is computed from them), c (scales)")
    ap.add_argument("--base", type=Path, help="the 1x graph (c) replicates (default: WORKDIR/hotpotqa-w<last worker "
                                              "count>, built by (a))")
    ap.add_argument("--index-m", type=int, default=1000, help="M of (c)'s bounded LOOKUP (EnvConfig.lookup_index_top_m)")
    ap.add_argument("--store-rank-min", type=int, default=STORE_RANK_MIN,
                    help="mentions from which (c)'s store-ranked LOOKUP ranks a pool in the store (lookup_store_rank_min)")
    ap.add_argument("--hub-sample", type=int, default=HUB_SAMPLE_SIZE,
                    help="(c)'s hub-sampled LOOKUP (lookup_hub_sample): the stores are loaded with this sample size")
    ap.add_argument("--m-queries", type=int, default=10, help="m_t per largest-pool entity for the bounded LOOKUP")
    ap.add_argument("--store", choices=("embedded", "neo4j"), default="embedded",
                    help="(c)'s store: the embedded FalkorDB, or a fresh local Neo4j 5.26 per scale, bulk-imported "
                         "(its results go to the JSON's `neo4j` part)")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/hg-scale"))
    ap.add_argument("--out", type=Path, default=RESULTS / "scale.json")
    ap.add_argument("--merge", action="store_true", help="keep the parts of --out's JSON this run does not redo")
    ap.add_argument("--render", action="store_true", help="only re-render --out's markdown from its JSON")
    ap.add_argument("--child-build", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--child-scale", nargs=2, metavar=("SPEC", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    for kind, fn in (("child_build", child_build), ("child_scale", child_scale)):
        if getattr(args, kind):
            spec_path, out_path = getattr(args, kind)
            result = fn(json.loads(Path(spec_path).read_text(encoding="utf-8")))
            Path(out_path).write_text(json.dumps(result), encoding="utf-8")
            return
    if args.render:
        data = json.loads(args.out.read_text(encoding="utf-8"))
        write_results(args.out, data, markdown(data))
        return
    data: dict[str, Any] = json.loads(args.out.read_text(encoding="utf-8")) if args.merge and args.out.exists() else {}
    started = time.perf_counter()
    args.workdir.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    if "a" in parts or "created" not in data:  # a (c)-only run keeps the header of the builds it merges into
        data.update(benchmark="scale", created=utc_stamp(), machine=machine_info())
    source = BY_NAME["hotpotqa"].path
    workers = [int(w) for w in args.workers.split(",") if w] if "a" in parts else []
    if workers:
        builds = []
        for w in workers:
            name = f"hotpotqa-w{w}"
            print(f"[bench_scale] build {name} (load avg {load_avg()}) ...", flush=True)
            case = run_child("build", {"name": name, "workers": w, "path": str(source),
                                       "graph_dir": str(args.workdir / name)}, args.workdir)
            case.update(name=name, rates=rates(case))
            builds.append(case)
            print(f"[bench_scale] {name}: wall {fmt(case['wall_s'])} s, ner cpu/wall "
                  f"{fmt(case['cpu_seconds']['ner'] / case['seconds']['ner'])}", flush=True)
        data["builds"] = builds
        data["identical_artifacts"] = all(b["files"] == builds[0]["files"] for b in builds)
        data["source"] = str(source)
    scales = [int(s) for s in args.scales.split(",") if s] if "c" in parts else []
    if scales:
        base = args.base or args.workdir / f"hotpotqa-w{workers[-1] if workers else 1}"
        if not (base / "manifest.json").exists():
            raise SystemExit(f"no 1x graph at {base}: run with --workers first, or name one with --base")
        part = data.setdefault("neo4j", {}) if args.store == "neo4j" else data  # where (c)'s results go
        curve = []
        scale_started, scale_load, t_scales = utc_stamp(), load_avg(), time.perf_counter()
        for f in scales:
            name = f"hotpotqa-x{f}"
            t = time.perf_counter()
            rep = replicate_artifact(base, f, args.workdir / name)
            replicate_s = time.perf_counter() - t
            print(f"[bench_scale] {name}: {rep['counts']['sentences']} sentences (replicated in {fmt(replicate_s)} s); "
                  f"loading + stepping (load avg {load_avg()}) ...", flush=True)
            res = run_child("scale", {"name": name, "factor": f, "graph_dir": str(args.workdir / name),
                                      "questions": args.questions, "top_entities": args.top_entities,
                                      "repeats": args.repeats, "index_m": args.index_m,
                                      "m_queries": args.m_queries, "store": args.store,
                                      "store_rank_min": args.store_rank_min, "hub_sample": args.hub_sample},
                            args.workdir)
            res.update(name=name, replicate_s=replicate_s, corpus_tokens=rep["corpus_tokens"], finished=utc_stamp())
            curve.append(res)
            for variant, v in res["variants"].items():
                print(f"[bench_scale] {name} {variant}: step p50 {v['env']['step']['p50_ms']} ms p99 "
                      f"{v['env']['step']['p99_ms']} ms; largest-pool lookup p50 {v['lookup_ms']['p50_ms']} ms", flush=True)
        if args.merge:  # keep the scales of --out's curve this run did not redo (the same variants and options)
            curve = sorted([c for c in part.get("curve") or [] if c["factor"] not in scales and "variants" in c
                            and "index" in c["variants"]] + curve, key=lambda c: c["factor"])
        part["curve"] = curve
        part["scale_run"] = {"created": scale_started, "wall_s": time.perf_counter() - t_scales,
                             "load_avg_start": scale_load, "load_avg_end": load_avg(), "machine": machine_info()}
        part["scale_options"] = {"questions": args.questions, "top_entities": args.top_entities, "repeats": args.repeats,
                                 "replica_noise": REPLICA_NOISE, "index_m": args.index_m, "m_queries": args.m_queries,
                                 "store_rank_min": args.store_rank_min, "hub_sample": args.hub_sample,
                                 "base": str(base)}
    if "a" in parts:
        data["machine"]["load_avg_end"] = load_avg()
        data["bench_wall_s"] = time.perf_counter() - started
    for p in write_results(args.out, data, markdown(data)):
        print(f"wrote {p}")


# -- report -----------------------------------------------------------------------------------------
#: wiki-18 (the DPR Wikipedia dump Search-R1 and FlashRAG retrieve from): passages and words per passage
WIKI18_PASSAGES = 21_015_324
WIKI18_WORDS_PER_PASSAGE = 100


def extrapolation(builds: list[dict[str, Any]]) -> list[str]:
    """wiki-18 build cost from the measured per-unit rates, every assumption named."""
    if not builds:
        return []
    best = max(builds, key=lambda b: b["rates"]["ner_tokens_per_cpu_s"])
    r = best["rates"]
    tokens = WIKI18_PASSAGES * WIKI18_WORDS_PER_PASSAGE
    words_per_sentence = best["corpus_tokens"] / best["counts"]["sentences"]
    sentences = tokens / words_per_sentence
    ner_core_h = tokens / r["ner_tokens_per_cpu_s"] / 3600
    embed_core_h = sentences / r["embed_sentences_per_cpu_s"] / 3600
    store_gb = sentences * 384 * 4 / 1e9
    lines = [
        "## wiki-18 extrapolation (CPU only)",
        "",
        f"Computed from the `{best['name']}` build's rates above; every number below is arithmetic on them.",
        "",
        "Assumptions:",
        f"- wiki-18 = {WIKI18_PASSAGES:,} passages of {WIKI18_WORDS_PER_PASSAGE} words (DPR's split) = "
        f"{tokens / 1e9:.2f}B whitespace tokens.",
        f"- Sentences per token as in the HotpotQA dev corpus ({words_per_sentence:.1f} words per sentence) -> "
        f"{sentences / 1e6:.0f}M sentences.",
        "- NER and the encoder (all-MiniLM-L6-v2, ONNX fp32) cost per token / per sentence what they cost here, and "
        "scale linearly with cores (NER: independent processes; the encoder: measured per CPU second, so a core "
        "of another machine of the same class runs at the same rate; faster cores shorten everything).",
        "- Entity linking, canonicalisation, write and load are left out (they were < 25% of this build; at wiki-18 "
        "scale the single-process `entities`/`link` stages would need the Ray path of item 2).",
        "- One sentence vector = 384 float32 = 1,536 bytes; the store's HNSW index and the Parquet tables come on top.",
        "",
        f"| what | rate here (per CPU second) | wiki-18 core-hours | on 16 cores (h) | on 8 machines x 64 cores (h) |",
        "|---|---:|---:|---:|---:|",
        f"| NER (spaCy en_core_web_sm) | {r['ner_tokens_per_cpu_s']:,.0f} tokens | {ner_core_h:,.0f} | "
        f"{ner_core_h / 16:,.0f} | {ner_core_h / 512:,.1f} |",
        f"| sentence embedding (MiniLM, CPU) | {r['embed_sentences_per_cpu_s']:,.0f} sentences | {embed_core_h:,.0f} | "
        f"{embed_core_h / 16:,.0f} | {embed_core_h / 512:,.1f} |",
        f"| both | | {ner_core_h + embed_core_h:,.0f} | {(ner_core_h + embed_core_h) / 16:,.0f} | "
        f"{(ner_core_h + embed_core_h) / 512:,.1f} |",
        "",
        f"Sentence vectors alone: {store_gb:,.0f} GB (float32). The paper's encoder (bge-large, 335M parameters, "
        "1024-d) is ~15x MiniLM's compute per sentence and 2.7x its vector size: on CPU it would dominate even more. "
        "The GPU rate (sentences/s per H100 and the end-to-end build against the paper's 0.116 s/1K tokens) waits for "
        "a GPU session: this session had none.",
    ]
    return lines


def scale_section(data: dict[str, Any], store: str = "embedded") -> list[str]:
    """Section (c): the step and LOOKUP cost against corpus size, the paper's LOOKUP beside the bounded one, on the
    embedded FalkorDB (``data``'s top level) or on a bulk-imported local Neo4j (``data["neo4j"]``)."""
    part = (data.get("neo4j") or {}) if store == "neo4j" else data
    curve = part.get("curve") or []
    if not curve:
        return []
    opt, run = part["scale_options"], part.get("scale_run", {})
    m = opt.get("index_m")
    where = ("a fresh local Neo4j 5.26 per scale, bulk-imported; `load s` = CSV + offline import + server start + "
             "schema and vector index" if store == "neo4j" else "embedded FalkorDB")
    lines = [
        f"## (c) Step cost against corpus size ({where}): the paper's LOOKUP, the bounded one, the store-ranked one "
        "and the hub-sampled one",
        "",
        *([*part["summary"], ""] if part.get("summary") else []),  # written by hand into the JSON after a run
        f"Last run {run.get('created', data['created'])} (`python benchmarks/bench_scale.py --parts c --scales "
        f"{','.join(str(c['factor']) for c in curve)} --base {opt.get('base', 'WORKDIR/hotpotqa-w1')} --merge"
        f"{' --store neo4j' if store == 'neo4j' else ''}`, "
        f"{fmt(run.get('wall_s'))} s; load average {run.get('load_avg_start')} -> {run.get('load_avg_end')}"
        f"{'; ' + machine_line(run['machine']) if run.get('machine') else ''}). "
        f"The 1x graph replicated R times (`replicate_artifact`: every sentence R times, distinct text and vector "
        f"(noise norm {opt['replica_noise']}), entities shared, so every LOOKUP pool is R times larger). "
        f"Environments per scale: **paper** (every LOOKUP ranks its whole pool C(e)), **index** "
        f"(`lookup_index_top_m={m}`: the pool sentences among the vector index's top {m} by cosine to m_t, the whole "
        f"pool only when they cannot fill K_s; tried for entities with at least {m} mentions, the others read their "
        f"pool as the paper does)" + (f" and **store** (`lookup_store_rank_min={opt['store_rank_min']}`: entities with "
        f"at least that many mentions have their pool ranked by cosine to m_t inside the store, which returns the top "
        f"`lookup_pool_cap`; the others read their pool as the paper does; `decided` column: LOOKUPs ranked in the "
        f"store)" if opt.get("store_rank_min") else "") + (f" and **sample** (`lookup_hub_sample={opt['hub_sample']}`: "
        f"a hub, an entity mentioned in more than {opt['hub_sample']} sentences, reads its stored sample of "
        f"{opt['hub_sample']} of them in place of S(e) in every pool; this changes hub results, `same as paper` and "
        f"`overlap` (the mean share of the paper's K_s sentences the sampled LOOKUP shows) say by how much; decided "
        f"column: the graph's hubs)" if opt.get("hub_sample") else "") + f". Env step: {opt['questions']} questions, seeded SELECT/LOOKUP walk "
        f"(bench_env.py), fresh GraphView, one pass (cold caches); `decided / fell back`: the menus' LOOKUP results "
        f"the index decided / left to the whole pool. Largest pools: the {opt['top_entities']} lookup-able entities "
        f"with the most mentions, every LOOKUP from empty caches; paper: m_t of the first question, median of "
        f"{opt['repeats']}; index: the m_t of the first {opt.get('m_queries')} questions, median, a fallback's paper "
        f"lookup included (`index total`).",
        "",
        md_table(["scale", "sentences", "env", "steps", "step p50 ms", "step p99 ms", "store ms/step",
                  "python ms/step", "decided / fell back", "largest pool", "largest-pool LOOKUP p50 ms", "max ms",
                  "load s"],
                 [[c["name"], f"{c['counts']['sentences']:,}", variant, v["env"]["step"]["n"],
                   fmt(v["env"]["step"]["p50_ms"]), fmt(v["env"]["step"]["p99_ms"]),
                   fmt(v["env"]["per_step_mean_split"]["store_ms"]), fmt(v["env"]["per_step_mean_split"]["python_ms"]),
                   f"{v['env'].get('index_lookups', 0)} / {v['env'].get('index_fallbacks', 0)}" if variant == "index"
                   else f"{v['env'].get('store_ranked', 0)} in store" if variant == "store"
                   else f"{c.get('hubs', '?')} hubs" if variant == "sample" else "", max(r["pool"] for r in c["largest_pools"]),
                   fmt(float(np.median([lookup_ms(r, variant) for r in c["largest_pools"]]))),
                   fmt(max(lookup_ms(r, variant) for r in c["largest_pools"])), fmt(c["load_s"])]
                  for c in curve for variant, v in c["variants"].items()]),
        "",
    ]
    for c in curve:
        lines += [f"**{c['name']}** largest pools (run finished {c.get('finished', '?')}, load avg "
                  f"{c['load_avg_before']} -> {c['load_avg_after']}):", "",
                  md_table(["entity", "mentions", "pool", "paper: pool query ms", "rank ms", "LOOKUP ms",
                            f"index: top-{m} ms", "pool_members ms", "result ms", "index total ms",
                            "decided / same as paper", "store: LOOKUP ms", "same as paper", "sample: pool read",
                            "sample: LOOKUP ms", "same as paper / overlap"],
                           [[r["entity"], r["mentions"], r["pool"], fmt(r["pool_ms"]), fmt(r["rank_ms"]),
                             fmt(r["lookup_ms"])]
                            + ([fmt(r["index_top_ms"]), fmt(r["members_ms"]), fmt(r["index_result_ms"]),
                                fmt(r["index_total_ms"]), f"{r['decided']}/{r['m_queries']} / {r['same']}"]
                               if r.get("tried", True) else ["", "", "", "= paper", "not tried (< M mentions)"])
                            + ([fmt(r["store_ms"]), f"{r['store_same']}/{r['m_queries']}"] if r.get("store_tried")
                               else ["= paper", "not ranked in store (< min mentions)"])
                            + ([f"{r['sample_pool']:,}" + (" (hub)" if r.get("sample_hub") else ""),
                                fmt(r["sample_ms"]), f"{r['sample_same']}/{r['m_queries']} / {r['sample_overlap']:.2f}"]
                               if "sample_ms" in r else ["", "", ""])
                            for r in c["largest_pools"]]), ""]
    with_channel = [c for c in curve if any("channel_paper_ms" in r for r in c["largest_pools"])]
    if with_channel:
        lines += ["InitRetrieve's question-entity channel with each largest-pool entity as the question's only entity "
                  "(k = 20; as q the texts of questions that name the entity, the first questions' where fewer do; "
                  "each from empty caches, medians; index = "
                  "`lookup_index_top_m`, its fallback to the whole pool included):", "",
                  md_table(["scale", "entity", "pool", "paper channel ms", "index channel ms", "decided / same as paper",
                            "store channel ms", "same as paper", "sample channel ms", "same as paper"],
                           [[c["name"], r["entity"], r["pool"], fmt(r["channel_paper_ms"]), fmt(r["channel_index_ms"]),
                             f"{r['channel_decided']}/{r['m_queries']} / {r['channel_same']}",
                             fmt(r.get("channel_store_ms")), f"{r.get('channel_store_same', '')}/{r['m_queries']}",
                             fmt(r.get("channel_sample_ms")), f"{r.get('channel_sample_same', '')}/{r['m_queries']}"]
                            for c in with_channel for r in c["largest_pools"] if "channel_paper_ms" in r]), ""]
    parts = [c for c in curve if c.get("pool_query_parts")]
    if parts:
        names = [k for k in parts[0]["pool_query_parts"] if k != "entity"]
        lines += [f"Where the paper's pool query spends its time (FalkorDB, the largest pool, best of {opt['repeats']}; "
                  "server = FalkorDB's own run time, client = the round trip with the reply parsed; `count` matches "
                  "the three channels and returns one row, `ids only` returns their ids without channel, priority or "
                  "order):", "",
                  md_table(["scale", "entity"] + [f"{n}: rows / server ms / client ms" for n in names],
                           [[c["name"], c["pool_query_parts"]["entity"]]
                            + [f"{q['rows']:,} / {fmt(q['server_ms'])} / {fmt(q['client_ms'])}"
                               for q in (c["pool_query_parts"][n] for n in names)] for c in parts]), ""]
    return lines


def markdown(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [
        "# Scale: every core for NER, per-unit rates, step cost against corpus size (issue 35 items 1, 5, 7)",
        "",
        f"Generated {data['created']} by `python benchmarks/bench_scale.py` in {fmt(data.get('bench_wall_s'))} s.",
        f"Machine: {machine_line(m)} Load average at start {m.get('load_avg')}, at end {m.get('load_avg_end')} "
        "(the machine is shared with other engineers' tests and training runs: wall times carry their load; CPU "
        "seconds less so).",
        "",
    ]
    builds = data.get("builds") or []
    if builds:
        lines += [
            f"## (a) Build with NER over N worker processes (HotpotQA dev subset, {builds[0]['corpus_tokens']:,} tokens, "
            f"{builds[0]['counts']['sentences']:,} sentences)",
            "",
            "One build per worker count, each in a fresh subprocess, no store load. Per stage: wall seconds / CPU seconds "
            "(build process + its exited NER workers) / CPU per wall = cores kept busy (at most 2 here). `ner` CPU = the "
            "NER loop's thread and its worker processes; `embed` CPU = the rest of `ner+embed wall` (the encoder's "
            "threads); `ner` and `embed` wall are the two concurrent workers' busy seconds, inside `ner+embed wall`.",
            "",
        ]
        headers = ["stage"] + [f"{b['name']} wall s" for b in builds] + [f"{b['name']} CPU s" for b in builds] + \
                  [f"{b['name']} cores busy" for b in builds]
        rows = []
        for st in STAGES:
            rows.append([st] + [fmt(b["seconds"].get(st)) for b in builds] + [fmt(b["cpu_seconds"].get(st)) for b in builds]
                        + [fmt(b["cpu_seconds"].get(st, 0) / b["seconds"][st]) if b["seconds"].get(st) else "" for b in builds])
        tot = lambda b, d: sum(b[d].get(k, 0.0) for k in WALL_STAGES)  # noqa: E731
        rows.append(["**total**"] + [fmt(tot(b, "seconds")) for b in builds] + [fmt(tot(b, "cpu_seconds")) for b in builds]
                    + [fmt(tot(b, "cpu_seconds") / tot(b, "seconds")) for b in builds])
        lines += [md_table(headers, rows), ""]
        lines += [f"Load average before/after each build: " + "; ".join(
            f"{b['name']} {b['load_avg_before']} -> {b['load_avg_after']}" for b in builds) + ".",
            f"Artifacts byte-identical across worker counts (every file's sha256 in the manifests): "
            f"**{data.get('identical_artifacts')}**.", ""]
        lines += ["## (b) Per-unit rates (this CPU; each from one build of the corpus above)", "",
                  md_table(["build", "NER tokens/s per CPU s", "NER sentences/s per CPU s", "embed sentences/s (busy wall)",
                            "embed sentences/s per CPU s", "link names/s", "build s/1K tokens", "CPU s/1K tokens"],
                           [[b["name"], fmt(b["rates"]["ner_tokens_per_cpu_s"]), fmt(b["rates"]["ner_sentences_per_cpu_s"]),
                             fmt(b["rates"]["embed_sentences_per_s"]), fmt(b["rates"]["embed_sentences_per_cpu_s"]),
                             fmt(b["rates"]["link_names_per_s"]), fmt(b["rates"]["build_s_per_1k_tokens"]),
                             fmt(b["rates"]["cpu_s_per_1k_tokens"])] for b in builds]), ""]
    lines += scale_section(data)
    lines += scale_section(data, "neo4j")
    lines += extrapolation(builds)
    lines += ["", *data.get("notes", [])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
