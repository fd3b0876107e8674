"""Menu-environment speed (the RL inner loop) vs a Search-R1-style free-query step.

    python benchmarks/bench_env.py [--root /tmp/hg-dev] [--datasets 2wiki,hotpotqa] [--questions 30]
                                   [--batch-questions 8] [--group 8] [--profile auto|always|never]
                                   [--backends torch,onnx] [--env-variants "default;paper:article_pool=false"]

Per dataset (graphs from benchmarks/build_dev_graphs.py):

(a) single environment: for the first ``--questions`` questions, one ``MenuEnv`` plays a fixed,
    seeded pseudo-random sequence of valid actions (uniform over the SELECT/LOOKUP actions of the
    current menu; ANSWER_WITH/ANSWER are never drawn, so each episode runs all T turns and every
    step but the last rebuilds a menu). A *step* = ``env.step(reply)``: policy reply in -> next
    observation out. COLD = a fresh ``GraphView`` (empty caches; its construction, which loads the
    sentence embeddings, is excluded); WARM = the same questions and actions again on that view.
(b) batched: ``BatchedMenuEnv`` with ``--group`` environments per question (a GRPO group; each
    environment its own seed), steps/s over ``--batch-questions`` questions, cold (fresh view) and warm.
(c) free-query step, interleaved with (a) in the same run so both see the same machine load:
    ``view.embedder.encode_one(query)`` (no cache) + dense top-3 over ``view.embeddings``
    (numpy dot + argpartition) + ``store.query('sentences_by_ids')`` for the 3 texts (no cache).
    Queries: the question plus 8 words of a random graph sentence (a new string every step).

Step time is split with ``view.timings``/``view.calls`` into store (FalkorDB round trips), encode
(query encoder) and python (everything else: menu building, ranking, rendering, bookkeeping).
If the env step is slower than the free-query step, the same workload runs under cProfile and the
top hotspots are written out. Writes benchmarks/results/env.{json,md}.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import env_config, graph_dir, load_avg, machine_info, questions_of  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return float(np.percentile(np.asarray(values), q))


def summary_ms(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50_ms": round(1000 * pct(values, 50), 3), "p90_ms": round(1000 * pct(values, 90), 3),
            "p99_ms": round(1000 * pct(values, 99), 3), "mean_ms": round(1000 * statistics.fmean(values), 3),
            "max_ms": round(1000 * max(values), 3)}


def pick_action(env, rng: random.Random) -> str:
    """A valid non-terminal action id (uniform over SELECT/LOOKUP); ANSWER only when nothing else is offered."""
    from harness_g.agent.env.actions import ActionType

    menu = env.menu
    options = [a.id for a in menu.actions if a.type in (ActionType.SELECT, ActionType.LOOKUP)]
    if not options:
        options = [a.id for a in menu.actions if a.type is ActionType.ANSWER]
    return rng.choice(options)


class _TimedStore:
    """Proxy over the GraphStore: per named-query call count, seconds and rows (benchmark-side instrumentation)."""

    def __init__(self, store):
        self._store = store
        self.by_name: dict[str, dict[str, float]] = {}

    def query(self, name, params=None):
        t0 = time.perf_counter()
        rows = self._store.query(name, params)
        d = self.by_name.setdefault(name, {"calls": 0, "seconds": 0.0, "rows": 0})
        d["calls"] += 1
        d["seconds"] += time.perf_counter() - t0
        d["rows"] += len(rows)
        return rows

    def vector_top_k(self, vector, k):
        t0 = time.perf_counter()
        rows = self._store.vector_top_k(vector, k)  # calls the real store's query: counted only here
        d = self.by_name.setdefault("vector_top_k", {"calls": 0, "seconds": 0.0, "rows": 0})
        d["calls"] += 1
        d["seconds"] += time.perf_counter() - t0
        d["rows"] += len(rows)
        return rows

    def __getattr__(self, name):
        return getattr(self._store, name)


def word_pieces(embedder, texts) -> int:
    """Word pieces the encoder reads for ``texts`` (special tokens included, truncated at its max_seq_length)."""
    ids = embedder.tokenizer(list(texts), truncation=True, max_length=embedder.max_seq_length)["input_ids"]
    return sum(len(x) for x in ids)


class _TimedEmbedder:
    """Proxy over the view's Embedder: encode calls split into single texts (question / m_t) and batches (entity names)."""

    def __init__(self, embedder):
        self._emb = embedder
        self.by_kind: dict[str, dict[str, float]] = {}

    def encode(self, texts, **kw):
        t0 = time.perf_counter()
        out = self._emb.encode(texts, **kw)
        seconds = time.perf_counter() - t0
        kind = "single_text" if len(texts) == 1 else "batch_of_texts"
        d = self.by_kind.setdefault(kind, {"calls": 0, "seconds": 0.0, "texts": 0, "pieces": 0})
        d["calls"] += 1
        d["seconds"] += seconds
        d["texts"] += len(texts)
        d["pieces"] += word_pieces(self._emb, texts)  # counted outside the timed call
        return out

    def pieces(self) -> int:
        """Word pieces encoded so far (all kinds)."""
        return sum(d["pieces"] for d in self.by_kind.values())

    def __getattr__(self, name):
        return getattr(self._emb, name)


def new_view(store, artifact, instrument: bool = True, backend: str | None = None):
    """A fresh GraphView (empty caches); ``backend``: the query encoder's backend (default: the graph's)."""
    from harness_g.agent.env.graph_view import GraphView
    from harness_g.graph.embed import get_embedder

    embedder = get_embedder(artifact.embedding_model, backend=backend) if backend else None
    view = GraphView(store, artifact, embedder=embedder)
    if instrument:
        view.store = _TimedStore(view.store)
        view.embedder = _TimedEmbedder(view.embedder)
    return view


def _instrumentation(view) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(view.store, _TimedStore):
        out["store_by_query"] = {k: {"calls": v["calls"], "ms_per_call": round(1000 * v["seconds"] / max(1, v["calls"]), 2),
                                     "rows_per_call": round(v["rows"] / max(1, v["calls"]), 1), "seconds": round(v["seconds"], 3)}
                                 for k, v in sorted(view.store.by_name.items(), key=lambda kv: -kv[1]["seconds"])}
    if isinstance(view.embedder, _TimedEmbedder):
        out["encode_by_kind"] = {k: {"calls": v["calls"], "ms_per_call": round(1000 * v["seconds"] / max(1, v["calls"]), 2),
                                     "texts_per_call": round(v["texts"] / max(1, v["calls"]), 1), "seconds": round(v["seconds"], 3)}
                                 for k, v in view.embedder.by_kind.items()}
    return out


class FreeQuery:
    """Search-R1-style step: encode a free query (no cache), dense top-k over the same sentences, fetch k texts."""

    def __init__(self, view, k: int = 3, seed: int = 0):
        self.view, self.k = view, k
        self.rng = random.Random(seed)
        self.texts = view.artifact.table("sentences", columns=["text"]).column("text").to_pylist()
        # bypass the benchmark's instrumentation proxies: the free-query path is measured on its own
        self.embedder = getattr(view.embedder, "_emb", view.embedder)
        self.store = getattr(view.store, "_store", view.store)
        self.times: list[float] = []
        self.parts = {"encode_s": 0.0, "dot_s": 0.0, "fetch_s": 0.0}
        self.batch_queries = 0
        self.batch_wall = 0.0
        self.batch_pieces = 0  # word pieces of the batched free queries

    def query_for(self, question: str) -> str:
        words = self.texts[self.rng.randrange(len(self.texts))].split()
        start = self.rng.randrange(max(1, len(words) - 8))
        return f"{question} {' '.join(words[start:start + 8])}"

    def step(self, query: str) -> list[str]:
        view = self.view
        t0 = time.perf_counter()
        vec = self.embedder.encode_one(query)
        t1 = time.perf_counter()
        sims = view.embeddings @ vec
        top = np.argpartition(-sims, self.k)[: self.k]
        top = top[np.argsort(-sims[top])]
        ids = [view.sentence_ids[i] for i in top]
        t2 = time.perf_counter()
        rows = self.store.query("sentences_by_ids", {"ids": ids})
        texts = [r["text"] for r in rows]
        t3 = time.perf_counter()
        self.times.append(t3 - t0)
        self.parts["encode_s"] += t1 - t0
        self.parts["dot_s"] += t2 - t1
        self.parts["fetch_s"] += t3 - t2
        return texts


def _free_batch(free: "FreeQuery", queries: list[str]) -> None:
    """A group's free-query steps done the batched way: one encoder call, one matmul, one fetch."""
    if not queries:
        return
    view = free.inner.view
    t0 = time.perf_counter()
    vecs = free.embedder.encode(queries)
    sims = view.embeddings @ vecs.T  # [n_sentences, B]
    ids: list[str] = []
    for j in range(sims.shape[1]):
        col = sims[:, j]
        top = np.argpartition(-col, free.k)[: free.k]
        ids += [view.sentence_ids[i] for i in top[np.argsort(-col[top])]]
    free.store.query("sentences_by_ids", {"ids": ids})
    free.batch_wall += time.perf_counter() - t0
    free.batch_queries += len(queries)
    free.batch_pieces += word_pieces(free.embedder, queries)


def _snap(view) -> tuple[float, float, int, int]:
    return view.timings["store_s"], view.timings["encode_s"], view.calls["store"], view.calls["encode"]


def run_single(view, items, *, seed: int, free: FreeQuery | None, config=None) -> dict[str, Any]:
    """One pass of (a): every question once, returns per-step times and the store/encode/python split.
    ``config``: the EnvConfig (default: EnvConfig's defaults)."""
    from harness_g.agent.env import MenuEnv

    env = MenuEnv(view, config)
    step_s: list[float] = []
    reset_s: list[float] = []
    split = {"store_s": 0.0, "encode_s": 0.0, "store_calls": 0, "encode_calls": 0, "step_total_s": 0.0}
    types: dict[str, int] = {}
    for qi, item in enumerate(items):
        rng = random.Random(seed * 100_003 + qi)
        t0 = time.perf_counter()
        env.reset(item)
        reset_s.append(time.perf_counter() - t0)
        while not env.done:
            reply = pick_action(env, rng)
            types[env.menu.by_id[reply].type.value] = types.get(env.menu.by_id[reply].type.value, 0) + 1
            before = _snap(view)
            t0 = time.perf_counter()
            env.step(reply)
            dt = time.perf_counter() - t0
            after = _snap(view)
            step_s.append(dt)
            split["step_total_s"] += dt
            split["store_s"] += after[0] - before[0]
            split["encode_s"] += after[1] - before[1]
            split["store_calls"] += after[2] - before[2]
            split["encode_calls"] += after[3] - before[3]
            if free is not None:
                free.step(free.query_for(item.question))
    split["python_s"] = split["step_total_s"] - split["store_s"] - split["encode_s"]
    n = max(1, len(step_s))
    per_step = {
        "store_ms": round(1000 * split["store_s"] / n, 3),
        "encode_ms": round(1000 * split["encode_s"] / n, 3),
        "python_ms": round(1000 * split["python_s"] / n, 3),
        "store_calls": round(split["store_calls"] / n, 2),
        "encode_calls": round(split["encode_calls"] / n, 2),
        "store_ms_per_call": round(1000 * split["store_s"] / max(1, split["store_calls"]), 3),
        "encode_ms_per_call": round(1000 * split["encode_s"] / max(1, split["encode_calls"]), 3),
    }
    return {"step": summary_ms(step_s), "reset": summary_ms(reset_s), "per_step_mean_split": per_step,
            "action_mix": types, "steps_per_s_serial": round(len(step_s) / max(1e-9, split["step_total_s"]), 2),
            "_step_s": step_s}


def run_batched(view, items, *, group: int, seed: int, free: "FreeQuery | None" = None, config=None) -> dict[str, Any]:
    """(b): a BatchedMenuEnv of ``group`` environments per question; steps/s over all questions."""
    from harness_g.agent.env.batch import BatchedMenuEnv

    benv = BatchedMenuEnv(view, group, config)
    steps = 0
    step_wall = 0.0
    reset_wall = 0.0
    batch_calls: list[float] = []
    for qi, item in enumerate(items):
        rngs = [random.Random(seed * 100_003 + 7919 * qi + g) for g in range(group)]
        t0 = time.perf_counter()
        benv.reset([item] * group)
        reset_wall += time.perf_counter() - t0
        while not benv.all_done:
            replies = [None if e.done else pick_action(e, r) for e, r in zip(benv.envs, rngs)]
            t0 = time.perf_counter()
            out = benv.step(replies)
            dt = time.perf_counter() - t0
            step_wall += dt
            batch_calls.append(dt)
            n = sum(1 for r in out if r is not None)
            steps += n
            if free is not None:  # the same number of free-query steps, batched, right after (same load)
                _free_batch(free, [free.query_for(item.question) for _ in range(n)])
    return {"env_steps": steps, "step_wall_s": round(step_wall, 3), "steps_per_s": round(steps / max(1e-9, step_wall), 2),
            "reset_wall_s": round(reset_wall, 3),
            "steps_per_s_incl_reset": round(steps / max(1e-9, step_wall + reset_wall), 2),
            "batch_step_call": summary_ms(batch_calls), "questions": len(items), "group": group}


def profile_workload(store, artifact, items, *, seed: int, top: int = 25, config=None) -> dict[str, Any]:
    """cProfile a cold + warm pass of (a) (no free-query steps inside)."""
    view = new_view(store, artifact, instrument=False)
    prof = cProfile.Profile()
    prof.enable()
    run_single(view, items, seed=seed, free=None, config=config)
    run_single(view, items, seed=seed, free=None, config=config)
    prof.disable()
    out = {}
    for key in ("tottime", "cumulative"):
        buf = io.StringIO()
        st = pstats.Stats(prof, stream=buf)
        st.sort_stats(key).print_stats(top)
        text = buf.getvalue()
        out[key] = text[text.find("ncalls"):] if "ncalls" in text else text
    rows = []
    st = pstats.Stats(prof)
    for (fn, line, name), (cc, nc, tt, ct, _) in st.stats.items():
        rows.append({"function": f"{Path(fn).name}:{line}({name})", "ncalls": nc, "tottime_s": round(tt, 4), "cumtime_s": round(ct, 4)})
    total = st.total_tt
    rows.sort(key=lambda r: -r["tottime_s"])
    return {"total_s": round(total, 3), "top_tottime": rows[:top], "top_cumulative": sorted(rows, key=lambda r: -r["cumtime_s"])[:top],
            "text": out}


def env_variant(spec: str):
    """``LABEL:key=value,key=value`` (or ``default``) -> (label, EnvConfig); values parsed by the field's type."""
    label, _, sets = spec.partition(":")
    return label.strip(), env_config(sets.split(","))[0]


def bench_dataset(name: str, root: Path, *, n_questions: int, n_batch: int, group: int, seed: int, profile: str,
                  backend: str | None = None, variant: str | None = None, config=None) -> dict[str, Any]:
    """One dataset with one query-encoder backend and one EnvConfig (``variant`` labels it); the free-query
    comparator encodes with the same embedder."""
    from harness_g.agent.env.config import EnvConfig
    from harness_g.config_loader import to_dict
    from harness_g.graph.artifact import Artifact
    from harness_g.graph.load import load_graph

    gdir = graph_dir(root, name)
    artifact = Artifact.open(gdir)
    store, _ = load_graph(gdir, None, progress=False)
    items = questions_of(artifact, name)[:n_questions]
    label = name + (f" ({backend})" if backend else "") + (f" [{variant}]" if variant else "")
    res: dict[str, Any] = {"dataset": label, "backend": backend or artifact.embedding_backend,
                           "env_config": to_dict(config or EnvConfig()),
                           "graph_dir": str(gdir), "questions": len(items), "sentences": artifact.counts.get("sentences"),
                           "loadavg_start": load_avg()}
    with store:
        t0 = time.perf_counter()
        view = new_view(store, artifact, backend=backend)  # excluded from every step time
        res["view_construct_s"] = round(time.perf_counter() - t0, 3)
        view.encode(["warm up the encoder"])  # first torch call allocates; not a graph-cache effect
        view._vectors.clear()
        free = FreeQuery(view, seed=seed)
        free.step("warm up")  # same for the free-query path
        free.times.clear()
        free.parts = dict.fromkeys(free.parts, 0.0)
        cold = run_single(view, items, seed=seed, free=free, config=config)
        n1 = len(free.times)
        warm = run_single(view, items, seed=seed, free=free, config=config)
        res["cache_stats_after_warm"] = view.cache_stats()
        res["instrumentation_cold_plus_warm"] = _instrumentation(view)
        res["single"] = {"cold": {k: v for k, v in cold.items() if not k.startswith("_")},
                         "warm": {k: v for k, v in warm.items() if not k.startswith("_")}}
        fq_n = max(1, len(free.times))
        res["free_query"] = {"all": summary_ms(free.times), "during_cold": summary_ms(free.times[:n1]),
                             "during_warm": summary_ms(free.times[n1:]),
                             "per_step_mean_split_ms": {k.replace("_s", "_ms"): round(1000 * v / fq_n, 3) for k, v in free.parts.items()},
                             "steps_per_s_serial": round(len(free.times) / max(1e-9, sum(free.times)), 2)}
        fq50 = res["free_query"]["all"]["p50_ms"]
        fqm = res["free_query"]["all"]["mean_ms"]
        res["ratios_env_over_free_p50"] = {"cold": round(cold["step"]["p50_ms"] / fq50, 2), "warm": round(warm["step"]["p50_ms"] / fq50, 2)}
        res["ratios_env_over_free_mean"] = {"cold": round(cold["step"]["mean_ms"] / fqm, 2), "warm": round(warm["step"]["mean_ms"] / fqm, 2)}

        bitems = items[:n_batch]
        batched: dict[str, Any] = {}
        bview = new_view(store, artifact, backend=backend)
        bview.encode(["warm up the encoder"])
        bview._vectors.clear()
        bfree = FreeQuery(bview, seed=seed + 1)
        pieces0 = bview.embedder.pieces()
        batched["cold"] = run_batched(bview, bitems, group=group, seed=seed, free=bfree, config=config)
        # encoding work per step: with exact menus every new (q, C_t) needs m_t encoded once, so if encoding were all
        # of both steps, env/free steps/s could be at most (free pieces per query) / (env pieces per step)
        env_pieces = (bview.embedder.pieces() - pieces0) / max(1, batched["cold"]["env_steps"])
        free_pieces = bfree.batch_pieces / max(1, bfree.batch_queries)
        batched["cold"]["encoded_pieces_per_step"] = round(env_pieces, 2)
        batched["free_pieces_per_query"] = round(free_pieces, 2)
        batched["encode_bound_env_over_free"] = round(free_pieces / max(1e-9, env_pieces), 2)
        batched["warm"] = run_batched(bview, bitems, group=group, seed=seed, free=bfree, config=config)
        batched["cache_stats_after_warm"] = bview.cache_stats()
        batched["free_query_batched"] = {"queries": bfree.batch_queries, "wall_s": round(bfree.batch_wall, 3),
                                         "queries_per_s": round(bfree.batch_queries / max(1e-9, bfree.batch_wall), 2)}
        res["batched"] = batched
        fb = batched["free_query_batched"]["queries_per_s"]
        res["batched_ratio_free_over_env_steps_per_s"] = {
            "cold": round(fb / max(1e-9, batched["cold"]["steps_per_s"]), 2),
            "warm": round(fb / max(1e-9, batched["warm"]["steps_per_s"]), 2)}
        slower = cold["step"]["p50_ms"] > fq50 or warm["step"]["p50_ms"] > fq50
        res["env_slower_than_free_query"] = {"cold": cold["step"]["p50_ms"] > fq50, "warm": warm["step"]["p50_ms"] > fq50}
        if profile == "always" or (profile == "auto" and slower):
            res["profile"] = profile_workload(store, artifact, items[: max(5, n_questions // 2)], seed=seed, config=config)
    res["loadavg_end"] = load_avg()
    return res


def write_report(results: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "env.json").write_text(json.dumps({"meta": meta, "datasets": results}, indent=2, default=str) + "\n", encoding="utf-8")
    L = ["# Environment speed", "",
         f"Generated {meta['finished']}; {meta['machine']['cores']} CPUs shared with other jobs (load average at start "
         f"{meta['machine']['load_avg']}, at end {meta['loadavg_end']}); torch threads {meta['torch_threads']}; embedded FalkorDB "
         "over a unix socket. All figures are medians/percentiles of per-step wall times from one run; treat absolute "
         "numbers as indicative on this loaded machine, the ratios (measured interleaved, same load) as the result."
         + (f" Datasets {', '.join(meta.get('merged_datasets') or [d['dataset'] for d in results[:-1]])} come from an earlier run of the same script (started "
            f"{meta['merged_from'].get('started')}, load average at start {meta['merged_from']['machine'].get('load_avg')}, "
            f"at end {meta['merged_from'].get('loadavg_end')})." if meta.get("merged_from") else ""), "",
         f"Workload: first {meta['questions']} dev questions per dataset, T = 6, a seeded uniform choice among the SELECT/LOOKUP "
         "actions of each menu (no ANSWER/ANSWER_WITH, so every episode runs 6 steps and 5 of them rebuild a menu). "
         "A step = `env.step(reply)` -> next observation. COLD = fresh GraphView (construction excluded); WARM = same "
         f"questions and actions again. Batched: BatchedMenuEnv, {meta['group']} environments per question (GRPO group), "
         f"{meta['batch_questions']} questions. Free query = encode_one(query) + numpy top-3 over all sentence embeddings + "
         "`sentences_by_ids` for the 3 texts, no caches.", "",
         "## Single-environment step latency (ms) and free-query step", "",
         "| dataset | sentences | env cold p50 | env cold p99 | env warm p50 | env warm p99 | "
         "free-query p50 | free-query p99 | env/free p50 cold | env/free p50 warm | reset cold p50 | reset warm p50 |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        s, f, q = r["single"], r["free_query"]["all"], r["ratios_env_over_free_p50"]
        L.append(f"| {r['dataset']} | {r['sentences']} | {s['cold']['step']['p50_ms']:.1f} | {s['cold']['step']['p99_ms']:.1f} | "
                 f"{s['warm']['step']['p50_ms']:.2f} | {s['warm']['step']['p99_ms']:.1f} | "
                 f"{f['p50_ms']:.1f} | {f['p99_ms']:.1f} | {q['cold']:.2f}x | {q['warm']:.3f}x | "
                 f"{s['cold']['reset']['p50_ms']:.1f} | {s['warm']['reset']['p50_ms']:.1f} |")
    L += ["", "## Batched throughput (BatchedMenuEnv, one GRPO group per question) vs the free-query step batched the same way", "",
          "The free-query comparator here is batched too: after each batched env step, the same number of free queries are "
          "encoded in one encoder call, scored with one [n_sentences x B] matmul and fetched in one `sentences_by_ids`.", "",
          "`pieces/step`: word pieces the encoder read per cold env step (m_t of each new committed set; repeats hit the "
          "query cache) and per free query. Every new (q, C_t) must have m_t encoded for the menu to be exact (each LOOKUP "
          "candidate's result is ranked by sim(m_t, .)), so if encoding were the whole cost of both steps env steps/s could be "
          "at most `encode bound` = free pieces / env pieces times the free queries/s.", "",
          "| dataset | env steps/s cold | env steps/s warm | incl. reset cold | incl. reset warm | "
          "free queries/s (batched) | free/env cold | free/env warm | env pieces/step cold | free pieces/query | "
          "encode bound env/free |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        b, x = r["batched"], r["batched_ratio_free_over_env_steps_per_s"]
        L.append(f"| {r['dataset']} | {b['cold']['steps_per_s']:.1f} | {b['warm']['steps_per_s']:.1f} | "
                 f"{b['cold']['steps_per_s_incl_reset']:.1f} | {b['warm']['steps_per_s_incl_reset']:.1f} | "
                 f"{b['free_query_batched']['queries_per_s']:.1f} | {x['cold']:.2f}x | {x['warm']:.3f}x | "
                 f"{b['cold'].get('encoded_pieces_per_step', 'n/a')} | {b.get('free_pieces_per_query', 'n/a')} | "
                 f"{b.get('encode_bound_env_over_free', 'n/a')}x |")
    L += ["", "## Where an env step's time goes (mean per step, ms)", "",
          "| dataset | pass | step mean | store | store calls | ms/store call | encode | encode calls | python |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for p in ("cold", "warm"):
            s = r["single"][p]
            sp = s["per_step_mean_split"]
            L.append(f"| {r['dataset']} | {p} | {s['step']['mean_ms']:.1f} | {sp['store_ms']:.1f} | {sp['store_calls']} | "
                     f"{sp['store_ms_per_call']:.2f} | {sp['encode_ms']:.1f} | {sp['encode_calls']} | {sp['python_ms']:.1f} |")
        fs = r["free_query"]["per_step_mean_split_ms"]
        L.append(f"| {r['dataset']} | free query | {r['free_query']['all']['mean_ms']:.1f} | {fs['fetch_ms']:.1f} | 1 | "
                 f"{fs['fetch_ms']:.2f} | {fs['encode_ms']:.1f} | 1 | {fs['dot_ms']:.1f} (dot+argpartition) |")
    L += ["", "## Store queries and encoder calls behind the env steps and resets (cold + warm passes of (a))", "",
          "| dataset | named query / encode kind | calls | ms per call | rows or texts per call | seconds |", "|---|---|---|---|---|---|"]
    for r in results:
        ins = r.get("instrumentation_cold_plus_warm", {})
        for k, v in ins.get("store_by_query", {}).items():
            L.append(f"| {r['dataset']} | store `{k}` | {v['calls']} | {v['ms_per_call']} | {v['rows_per_call']} | {v['seconds']} |")
        for k, v in ins.get("encode_by_kind", {}).items():
            L.append(f"| {r['dataset']} | encode {k} | {v['calls']} | {v['ms_per_call']} | {v['texts_per_call']} | {v['seconds']} |")
    for r in results:
        if "profile" in r:
            L += ["", f"## cProfile hotspots: {r['dataset']} (cold+warm pass, {r['profile']['total_s']} s profiled)", "",
                  "| function | ncalls | tottime s | cumtime s |", "|---|---|---|---|"]
            for row in r["profile"]["top_tottime"][:15]:
                L.append(f"| `{row['function']}` | {row['ncalls']} | {row['tottime_s']} | {row['cumtime_s']} |")
            L += ["", "Top by cumulative time:", "", "| function | ncalls | tottime s | cumtime s |", "|---|---|---|---|"]
            for row in r["profile"]["top_cumulative"][:20]:
                L.append(f"| `{row['function']}` | {row['ncalls']} | {row['tottime_s']} | {row['cumtime_s']} |")
    if meta.get("notes"):
        L += ["", "## Findings", ""] + [f"- {n}" for n in meta["notes"]]
    (RESULTS / "env.md").write_text("\n".join(L) + "\n", encoding="utf-8")


def print_table(results: list[dict[str, Any]]) -> None:
    print(f"{'dataset':<9} {'cold p50':>9} {'cold p99':>9} {'warm p50':>9} {'warm p99':>9} {'free p50':>9} {'free p99':>9} "
          f"{'c/f':>6} {'w/f':>6} {'b cold/s':>9} {'b warm/s':>9} {'bfree/s':>8}")
    for r in results:
        s, f, b, q = r["single"], r["free_query"]["all"], r["batched"], r["ratios_env_over_free_p50"]
        print(f"{r['dataset']:<9} {s['cold']['step']['p50_ms']:>9.1f} {s['cold']['step']['p99_ms']:>9.1f} {s['warm']['step']['p50_ms']:>9.2f} "
              f"{s['warm']['step']['p99_ms']:>9.1f} {f['p50_ms']:>9.1f} {f['p99_ms']:>9.1f} "
              f"{q['cold']:>6.2f} {q['warm']:>6.3f} {b['cold']['steps_per_s']:>9.1f} {b['warm']['steps_per_s']:>9.1f} "
              f"{b['free_query_batched']['queries_per_s']:>8.1f}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default="/tmp/hg-dev", type=Path)
    ap.add_argument("--datasets", default="2wiki,hotpotqa")
    ap.add_argument("--questions", type=int, default=30, help="questions for the single-environment passes")
    ap.add_argument("--batch-questions", type=int, default=8, help="questions for the batched passes")
    ap.add_argument("--group", type=int, default=8, help="environments per question in the batched passes")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", choices=("auto", "always", "never"), default="auto")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--backends", default="",
                    help="comma list of query-encoder backends (torch, onnx, onnx-int8) run one after the other per "
                         "dataset (default: the graph's); the free-query comparator uses the same backend")
    ap.add_argument("--env-variants", default="",
                    help="semicolon list of environment settings run one after the other per dataset and backend, each "
                         "LABEL or LABEL:key=value,... of EnvConfig fields (e.g. 'default;paper:article_pool=false'); "
                         "default: EnvConfig's defaults, unlabelled")
    ap.add_argument("--merge", action="store_true", help="keep other datasets' results from an existing env.json")
    ap.add_argument("--note", action="append", default=[], help="a finding to append to env.md (repeatable)")
    ap.add_argument("--notes-file", help="markdown file: one finding per line, appended under Findings")
    ap.add_argument("--report-only", action="store_true", help="rewrite env.md from env.json (with --note/--notes-file)")
    args = ap.parse_args(argv)
    notes = list(args.note)
    if args.notes_file:
        notes += [ln.strip().removeprefix("- ") for ln in Path(args.notes_file).read_text(encoding="utf-8").splitlines() if ln.strip()]
    if args.report_only:
        data = json.loads((RESULTS / "env.json").read_text())
        data["meta"]["notes"] = notes or data["meta"].get("notes", [])
        write_report(data["datasets"], data["meta"])
        print((RESULTS / "env.md").read_text())
        return 0
    from harness_g.errors import ConfigError

    try:  # before any heavy import: a typo fails in a second
        variants = [env_variant(v) for v in args.env_variants.split(";") if v.strip()] or [(None, None)]
    except ConfigError as exc:
        ap.error(f"--env-variants: {exc}")
    if args.torch_threads:
        import torch
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(args.torch_threads)
        threadpool_limits(args.torch_threads)  # numpy's OpenBLAS too (2 threads on 2 busy cores thrash)
    meta = {"machine": machine_info(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "questions": args.questions,
            "batch_questions": args.batch_questions, "group": args.group, "seed": args.seed, "torch_threads": args.torch_threads,
            "notes": notes}
    prev: dict[str, Any] = {}
    if args.merge and (RESULTS / "env.json").exists():
        old = json.loads((RESULTS / "env.json").read_text())
        prev = {d["dataset"]: d for d in old["datasets"]}
        meta["merged_from"] = old["meta"]
    results = [v for k, v in prev.items() if k not in args.datasets.split(",")]
    if prev:
        meta["merged_datasets"] = [r["dataset"] for r in results]
    for name in args.datasets.split(","):
        for backend in [b for b in args.backends.split(",") if b] or [None]:
            for label, config in variants:
                print(f"[{time.strftime('%H:%M:%S')}] {name} {backend or ''} {label or ''} (load {load_avg()})", flush=True)
                results.append(bench_dataset(name, args.root, n_questions=args.questions, n_batch=args.batch_questions,
                                             group=args.group, seed=args.seed, profile=args.profile, backend=backend,
                                             variant=label, config=config))
        meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        meta["loadavg_end"] = load_avg()
        write_report(results, meta)  # after every dataset, so a crash keeps what finished
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
