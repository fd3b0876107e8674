"""Scale: NER over several processes, per-unit build rates, and the menu environment's step cost against corpus size.

    python benchmarks/bench_scale.py [--workers 1,2] [--scales 1,10] [--questions 40] [--top-entities 10]
                                     [--workdir /tmp/hg-scale] [--out benchmarks/results/scale.json]

(a) build, ``--workers`` (issue 35 item 1): the HotpotQA dev subset built once per NER worker count, each in a fresh
    subprocess (no store load: the artifact is store-independent). Per stage: wall seconds and CPU seconds of the
    build process plus its finished NER worker processes (``BuildResult.cpu_seconds``), so ``CPU / wall`` is how many
    cores a stage kept busy. The artifacts of all counts are compared file by file (manifest sha256s).
(b) per-unit rates from (a): NER tokens/s per busy NER core (corpus tokens / NER CPU seconds), sentences/s of the
    sentence encoder (sentences / embed busy seconds and per embed CPU second), entity names/s in ``link``.
(c) step cost against corpus size (issue 35 item 5): the 1x graph of (a) replicated R times into a synthetic graph
    (see :func:`replicate_artifact`: every sentence R times with distinct text and a distinct vector, every entity
    shared, so every LOOKUP pool is R times larger -- the worst case of a growing corpus, where in a real one only
    the hub entities' pools grow), loaded into the embedded FalkorDB; then, per scale, with the paper preset: env step
    p50/p99 over ``--questions`` questions (bench_env.py's seeded SELECT/LOOKUP walk, fresh GraphView) and the LOOKUP
    cost on the ``--top-entities`` entities with the largest pools (store pool query, ranking, the whole lookup).

Each scale runs in its own subprocess. Writes ``benchmarks/results/scale.{json,md}``, including a wiki-18 cost
extrapolation computed from (b) with every assumption named.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BY_NAME, RESULTS, fmt, load_avg, machine_info, machine_line, md_table, utc_stamp, write_results  # noqa: E402
from common import run_child as common_run_child  # noqa: E402

STAGES = ("read", "split", "ner", "embed", "ner_embed_wall", "entities", "link", "write")
WALL_STAGES = ("read", "split", "ner_embed_wall", "entities", "link", "write")
#: GraphView._ALL_SIMS_RATIO per variant of (c): before issue 35 every pool of >= 256 sentences took its cosines from
#: one product over all sentences whatever the corpus size ("all_sims"); "bounded" (the default now) only while the
#: graph has at most 16 sentences per pool sentence
VARIANTS = {"all_sims": float("inf"), "bounded": 16}
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


def child_scale(spec: dict[str, Any]) -> dict[str, Any]:
    """Load one replicated graph, then time env steps and the largest pools' LOOKUPs (c)."""
    from bench_env import run_single, summary_ms

    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.graph_view import GraphView
    from harness_g.agent.env.menu import lookup_pools, lookup_result
    from harness_g.agent.env.retrieval import lookup_query
    from harness_g.graph.artifact import Artifact
    from harness_g.graph.load import load_graph

    graph_dir = Path(spec["graph_dir"])
    t = time.perf_counter()
    store, report = load_graph(graph_dir, progress=False, force=True)
    load_s = time.perf_counter() - t
    artifact = Artifact.open(graph_dir)
    out: dict[str, Any] = {"factor": spec["factor"], "counts": artifact.counts, "load_s": load_s,
                           "load_avg_before": load_avg()}
    with store:
        cfg = EnvConfig()  # the paper preset
        items = artifact.questions()[: spec["questions"]]
        # the largest pools: the lookup-able entities with the most mentions
        ents = artifact.table("entities", columns=["id", "surface", "lookupable", "mentions"]).to_pylist()
        top = sorted((e for e in ents if e["lookupable"]), key=lambda e: (-e["mentions"], e["id"]))[: spec["top_entities"]]
        m_text = lookup_query(items[0].question, [])
        view = GraphView(store, artifact)
        out["variants"] = {}
        rankings: dict[str, list[list[str]]] = {}
        for variant, ratio in VARIANTS.items():
            GraphView._ALL_SIMS_RATIO = ratio
            single = run_single(_empty_caches(view), items, seed=0, free=None, config=cfg)
            single.pop("_step_s")
            rows, rankings[variant] = [], []
            for e in top:
                reps: dict[str, list[float]] = {"pool_ms": [], "rank_ms": [], "lookup_ms": []}
                for _ in range(spec["repeats"]):
                    fresh = _empty_caches(view)
                    m_vec = fresh.encode([m_text])[0]
                    t0 = time.perf_counter()
                    pool = lookup_pools(fresh, [e["id"]], cfg)[e["id"]]
                    t1 = time.perf_counter()
                    ranked = fresh.rank_top(m_vec, pool, cfg.lookup_pool_cap, exclude=set())
                    t2 = time.perf_counter()
                    lookup_result(fresh, pool, m_vec, set(), set(), cfg, ranked=ranked)
                    t3 = time.perf_counter()
                    reps["pool_ms"].append(1000 * (t1 - t0))
                    reps["rank_ms"].append(1000 * (t2 - t1))
                    reps["lookup_ms"].append(1000 * (t3 - t0))
                rankings[variant].append(ranked)
                rows.append({"entity": e["surface"], "mentions": e["mentions"], "pool": len(pool),
                             **{k: float(np.median(v)) for k, v in reps.items()}})
            out["variants"][variant] = {"env": single, "largest_pools": rows,
                                        "lookup_ms": summary_ms([r["lookup_ms"] / 1000 for r in rows])}
        GraphView._ALL_SIMS_RATIO = VARIANTS["bounded"]
        first, *others = rankings.values()
        out["same_rankings"] = all(r == first for r in others)  # every largest pool's top lookup_pool_cap, both ways
        out.update(out["variants"]["bounded"])
    out["load_avg_after"] = load_avg()
    return out


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
    data.update(benchmark="scale", created=utc_stamp(), machine=machine_info())
    source = BY_NAME["hotpotqa"].path
    workers = [int(w) for w in args.workers.split(",") if w]
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
    scales = [int(s) for s in args.scales.split(",") if s]
    if scales:
        base = args.workdir / f"hotpotqa-w{workers[-1] if workers else 1}"
        if not (base / "manifest.json").exists():
            raise SystemExit(f"no 1x graph at {base}: run with --workers first")
        curve = []
        for f in scales:
            name = f"hotpotqa-x{f}"
            t = time.perf_counter()
            rep = replicate_artifact(base, f, args.workdir / name)
            replicate_s = time.perf_counter() - t
            print(f"[bench_scale] {name}: {rep['counts']['sentences']} sentences (replicated in {fmt(replicate_s)} s); "
                  f"loading + stepping (load avg {load_avg()}) ...", flush=True)
            res = run_child("scale", {"name": name, "factor": f, "graph_dir": str(args.workdir / name),
                                      "questions": args.questions, "top_entities": args.top_entities,
                                      "repeats": args.repeats}, args.workdir)
            res.update(name=name, replicate_s=replicate_s, corpus_tokens=rep["corpus_tokens"])
            curve.append(res)
            print(f"[bench_scale] {name}: step p50 {res['env']['step']['p50_ms']} ms p99 {res['env']['step']['p99_ms']} "
                  f"ms; largest-pool lookup p50 {res['lookup_ms']['p50_ms']} ms", flush=True)
        data["curve"] = curve
        data["scale_options"] = {"questions": args.questions, "top_entities": args.top_entities, "repeats": args.repeats,
                                 "replica_noise": REPLICA_NOISE}
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
    curve = data.get("curve") or []
    if curve:
        opt = data["scale_options"]
        lines += [
            "## (c) Step cost against corpus size (paper preset, embedded FalkorDB)",
            "",
            f"The 1x graph replicated R times (`replicate_artifact`: every sentence R times, distinct text and vector "
            f"(noise norm {opt['replica_noise']}), entities shared, so every LOOKUP pool is R times larger). Env step: "
            f"{opt['questions']} questions, seeded SELECT/LOOKUP walk (bench_env.py), fresh GraphView, one pass (cold "
            f"caches). Largest pools: the {opt['top_entities']} lookup-able entities with the most mentions, each LOOKUP "
            f"from empty caches (store pool query + ranking + the whole lookup_result), median of {opt['repeats']}.",
            "",
            md_table(["scale", "sentences", "steps", "step p50 ms", "step p99 ms", "store ms/step", "python ms/step",
                      "largest pool", "largest-pool LOOKUP p50 ms", "max ms", "load s"],
                     [[c["name"], f"{c['counts']['sentences']:,}", c["env"]["step"]["n"], fmt(c["env"]["step"]["p50_ms"]),
                       fmt(c["env"]["step"]["p99_ms"]), fmt(c["env"]["per_step_mean_split"]["store_ms"]),
                       fmt(c["env"]["per_step_mean_split"]["python_ms"]), max(r["pool"] for r in c["largest_pools"]),
                       fmt(c["lookup_ms"]["p50_ms"]), fmt(c["lookup_ms"]["max_ms"]), fmt(c["load_s"])] for c in curve]),
            "",
        ]
        for c in curve:
            lines += [f"**{c['name']}** largest pools (load avg {c['load_avg_before']} -> {c['load_avg_after']}):", "",
                      md_table(["entity", "mentions", "pool", "pool query ms", "rank ms", "LOOKUP ms"],
                               [[r["entity"], r["mentions"], r["pool"], fmt(r["pool_ms"]), fmt(r["rank_ms"]),
                                 fmt(r["lookup_ms"])] for r in c["largest_pools"]]), ""]
    lines += extrapolation(builds)
    lines += ["", *data.get("notes", [])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
