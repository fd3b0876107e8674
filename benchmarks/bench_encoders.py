"""Sentence-encoder backends on real sentences: torch (sentence-transformers) vs ONNX Runtime fp32 vs int8.

    python benchmarks/bench_encoders.py [--datasets hotpotqa,2wiki] [-n 1000] [--threads 1,2] [--runs 3]
                                        [--budgets 256,512,1024,100000] [--names 4000] [--graphs /tmp/hg-dev]
                                        [--out benchmarks/results/encoders.json]

Sentences: the first ``n / len(datasets)`` rows of each dev graph's ``sentences.parquet`` (column ``text``),
as ``benchmarks/build_dev_graphs.py`` wrote them. For each intra-op thread count, every backend encodes the
same list ``--runs`` times, interleaved (torch, onnx, onnx-int8, torch, ...) so load from other processes
hits them alike; the table gives the median run as sentences/s and as seconds per 1,000 whitespace tokens
(the build's TP1KT unit), the speed-up over torch at the same thread count, and the minimum cosine of each
row against torch. The ONNX files are exported into a fresh cache (``--cache``, default a temporary
directory), so the export seconds are measured too, then a second construction shows the cached load.
A second table times fp32 ONNX at each ``--budgets`` value of ``max_batch_tokens`` (padded word pieces per
onnxruntime call), interleaved, to show what the default budget buys over fixed-row batches. A third runs fp32 ONNX
at the largest ``--threads`` count as one call vs two concurrent lanes (``encode(..., lanes=2)``), on the sentences
and on ``--names`` lookup-able entity names, and checks the vectors are bitwise equal.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, load_avg, machine_info, machine_line, md_table, utc_stamp, write_results  # noqa: E402

BACKENDS = ("torch", "onnx", "onnx-int8")


def read_sentences_evenly(graphs: Path, datasets: list[str], n: int) -> list[str]:
    """``n`` sentences split evenly over the datasets' dev graphs, in file order (unlike
    :func:`bench_build_gpu.read_sentences`: every sentence of the named graphs, then the first ``n``)."""
    import pyarrow.parquet as pq

    per = -(-n // len(datasets))
    texts: list[str] = []
    for name in datasets:
        path = graphs / name / "sentences.parquet"
        if not path.is_file():
            raise SystemExit(f"{path}: missing; build the dev graphs first (benchmarks/build_dev_graphs.py)")
        texts += pq.read_table(path, columns=["text"]).column("text").to_pylist()[:per]
    return texts[:n]


def load_backends(cache: Path) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """Embedders per backend, with seconds for the first construction (export) and a second one (cached)."""
    import os

    os.environ["HARNESS_G_CACHE"] = str(cache)
    from harness_g.graph.embed import Embedder

    embedders, seconds = {}, {}
    for backend in BACKENDS:
        t0 = time.perf_counter()
        Embedder(backend=backend)
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        embedders[backend] = Embedder(backend=backend)
        seconds[backend] = {"first_construction_s": first, "cached_construction_s": time.perf_counter() - t0}
    return embedders, seconds


def time_runs(embedders: dict[str, Any], texts: list[str], runs: int, batch_size: int) -> dict[str, Any]:
    """Seconds per run for each backend (interleaved), and each backend's last output."""
    samples: dict[str, list[float]] = {b: [] for b in embedders}
    outputs: dict[str, np.ndarray] = {}
    for backend, emb in embedders.items():  # warm-up: onnxruntime starts a session per thread count
        emb.encode(texts[:batch_size], batch_size=batch_size)
    for _ in range(runs):
        for backend, emb in embedders.items():
            t0 = time.perf_counter()
            outputs[backend] = emb.encode(texts, batch_size=batch_size)
            samples[backend].append(time.perf_counter() - t0)
    return {"samples": samples, "outputs": outputs}


def measure(embedders: dict[str, Any], texts: list[str], threads: list[int], runs: int,
            batch_size: int) -> list[dict[str, Any]]:
    """One row per (threads, backend): median seconds, sentences/s, s per 1K tokens, speed-up, min cosine."""
    import torch

    words = sum(len(t.split()) for t in texts)
    rows = []
    before = torch.get_num_threads()
    try:
        for count in threads:
            torch.set_num_threads(count)  # the ONNX sessions follow torch's count (one session per count)
            got = time_runs(embedders, texts, runs, batch_size)
            base = statistics.median(got["samples"]["torch"])
            for backend, secs in got["samples"].items():
                median = statistics.median(secs)
                cosine = (got["outputs"][backend] * got["outputs"]["torch"]).sum(axis=1)
                rows.append({"threads": count, "backend": backend, "runs_s": secs, "median_s": median,
                             "sentences_per_s": len(texts) / median, "s_per_1k_tokens": median / words * 1000,
                             "speedup_vs_torch": base / median, "min_cosine_vs_torch": float(cosine.min()),
                             "mean_cosine_vs_torch": float(cosine.mean())})
    finally:
        torch.set_num_threads(before)
    return rows


def measure_budgets(embedder: Any, texts: list[str], threads: list[int], runs: int, batch_size: int,
                    budgets: list[int]) -> list[dict[str, Any]]:
    """fp32 ONNX at several ``max_batch_tokens`` (padded word pieces per call), interleaved: one row per (threads,
    budget) with the median sentences/s. A budget >= batch_size x the longest text is plain ``batch_size`` rows."""
    import torch

    encoder = embedder._model
    kept, before = encoder.max_batch_tokens, torch.get_num_threads()
    rows = []
    try:
        for count in threads:
            torch.set_num_threads(count)
            embedder.encode(texts[:batch_size], batch_size=batch_size)  # the session for this thread count
            samples: dict[int, list[float]] = {b: [] for b in budgets}
            for _ in range(runs):
                for budget in budgets:
                    encoder.max_batch_tokens = budget
                    t0 = time.perf_counter()
                    embedder.encode(texts, batch_size=batch_size)
                    samples[budget].append(time.perf_counter() - t0)
            for budget, secs in samples.items():
                rows.append({"threads": count, "max_batch_tokens": budget, "runs_s": secs,
                             "sentences_per_s": len(texts) / statistics.median(secs)})
    finally:
        encoder.max_batch_tokens = kept
        torch.set_num_threads(before)
    return rows


def read_names(graphs: Path, datasets: list[str], n: int) -> list[str]:
    """``n`` lookup-able entity surfaces (what the build's link stage encodes), split evenly over the dev graphs."""
    import pyarrow.parquet as pq

    per = -(-n // len(datasets))
    names: list[str] = []
    for name in datasets:
        table = pq.read_table(graphs / name / "entities.parquet", columns=["surface", "lookupable"]).to_pydict()
        names += [s for s, ok in zip(table["surface"], table["lookupable"]) if ok][:per]
    return names[:n]


def measure_lanes(embedder: Any, corpora: dict[str, list[str]], threads: int, runs: int,
                  batch_size: int) -> list[dict[str, Any]]:
    """fp32 ONNX with ``threads`` torch threads as one call (``lanes=1``) vs two concurrent lanes of half the threads
    each (``lanes=2``, what the build uses once NER is done), interleaved; one row per (texts, lanes) with the median
    items/s and whether the vectors equal the one-lane ones bit for bit."""
    import torch

    before = torch.get_num_threads()
    rows = []
    try:
        torch.set_num_threads(threads)
        for kind, texts in corpora.items():
            for lanes in (1, 2):
                embedder.encode(texts[:4 * batch_size], batch_size=batch_size, lanes=lanes)  # sessions started
            samples: dict[int, list[float]] = {1: [], 2: []}
            outs: dict[int, np.ndarray] = {}
            for _ in range(runs):
                for lanes in (1, 2):
                    t0 = time.perf_counter()
                    outs[lanes] = embedder.encode(texts, batch_size=batch_size, lanes=lanes)
                    samples[lanes].append(time.perf_counter() - t0)
            base = statistics.median(samples[1])
            for lanes, secs in samples.items():
                rows.append({"texts": kind, "n": len(texts), "threads": threads, "lanes": lanes, "runs_s": secs,
                             "items_per_s": len(texts) / statistics.median(secs),
                             "speedup_vs_one_lane": base / statistics.median(secs),
                             "bitwise_equal_to_one_lane": bool(np.array_equal(outs[lanes], outs[1]))})
    finally:
        torch.set_num_threads(before)
    return rows


def _runs(row: dict[str, Any]) -> str:
    return ", ".join(f"{x:.2f}" for x in row["runs_s"])


def _section(rows: list[dict[str, Any]] | None, intro: str, headers: list[str],
             cells: Callable[[dict[str, Any]], list[Any]]) -> list[str]:
    """Markdown lines: ``intro``, a table with a ``cells(row)`` line per row, a blank line; none without rows."""
    return [intro, "", md_table(headers, [cells(r) for r in rows]), ""] if rows else []


def markdown(data: dict[str, Any]) -> str:
    """The results page: setup line, load averages, the table, construction seconds."""
    table = md_table(
        ["threads", "backend", "sentences/s", "s / 1K tokens", "speed-up vs torch", "min cos vs torch", "runs (s)"],
        [[r["threads"], r["backend"], f"{r['sentences_per_s']:.1f}", f"{r['s_per_1k_tokens']:.3f}",
          f"{r['speedup_vs_torch']:.2f}x", f"{r['min_cosine_vs_torch']:.7f}",
          ", ".join(f"{s:.2f}" for s in r["runs_s"])] for r in data["rows"]])
    loads = md_table(["backend", "first construction (s, export incl.)", "second construction (s, cache hit)"],
                     [[b, f"{s['first_construction_s']:.2f}", f"{s['cached_construction_s']:.2f}"]
                      for b, s in data["construction"].items()])
    budget_lines = _section(
        data.get("budget_rows"),
        f"fp32 ONNX by `max_batch_tokens` (padded word pieces per onnxruntime call; at most {data['batch_size']} "
        "rows; the default is `MAX_BATCH_TOKENS` in graph/encoders.py; the largest budget here is plain fixed-row "
        "batches), same sentences, interleaved:",
        ["threads", "max_batch_tokens", "sentences/s (median)", "runs (s)"],
        lambda r: [r["threads"], r["max_batch_tokens"], f"{r['sentences_per_s']:.1f}", _runs(r)])
    lane_rows = data.get("lane_rows") or []
    lane_lines = _section(
        lane_rows,
        f"fp32 ONNX with {lane_rows[0]['threads'] if lane_rows else '?'} torch threads: one call (1 lane) vs two "
        "concurrent lanes of half the threads each (`encode(..., lanes=2)`, the build's embed stage once NER is done "
        "and its link stage), same batches, interleaved; *names* = lookup-able entity surfaces (the link stage's texts):",
        ["texts", "n", "lanes", "items/s (median)", "speed-up vs 1 lane", "bitwise equal", "runs (s)"],
        lambda r: [r["texts"], r["n"], r["lanes"], f"{r['items_per_s']:.1f}", f"{r['speedup_vs_one_lane']:.2f}x",
                   "yes" if r["bitwise_equal_to_one_lane"] else "NO", _runs(r)])
    return "\n".join([
        "# Sentence-encoder backends: torch vs ONNX Runtime fp32 vs int8",
        "",
        f"{data['when']}; {machine_line(data['machine'])}; onnxruntime {data['onnxruntime']}.",
        f"{data['n_sentences']} real sentences ({', '.join(data['datasets'])} dev graphs), "
        f"{data['n_words']} whitespace tokens; batch size {data['batch_size']}; "
        f"median of {data['runs']} interleaved runs per cell.",
        f"Load average (1, 5, 15 min) before: {data['load_before']}, after: {data['load_after']} "
        "(other engineers share this machine: expect noise).",
        "",
        table,
        "",
        loads,
        "",
        *budget_lines,
        *lane_lines,
        "Regenerate: `python benchmarks/bench_encoders.py` (needs onnxruntime and onnx).",
    ])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="hotpotqa,2wiki")
    ap.add_argument("-n", type=int, default=1000, help="sentences")
    ap.add_argument("--threads", default="1,2", help="intra-op thread counts")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--budgets", default="256,512,1024,100000",
                    help="max_batch_tokens values timed for fp32 ONNX (empty: skip that table)")
    ap.add_argument("--names", type=int, default=4000, help="entity names for the lanes table")
    ap.add_argument("--graphs", type=Path, default=Path("/tmp/hg-dev"), help="folder of dev graphs")
    ap.add_argument("--cache", type=Path, default=None, help="ONNX cache (default: a fresh temporary one)")
    ap.add_argument("--out", type=Path, default=RESULTS / "encoders.json")
    args = ap.parse_args(argv)
    import onnxruntime

    datasets = args.datasets.split(",")
    texts = read_sentences_evenly(args.graphs, datasets, args.n)
    load_before = load_avg()
    with tempfile.TemporaryDirectory(prefix="hg-onnx-") as tmp:
        embedders, construction = load_backends(args.cache or Path(tmp))
        threads = [int(t) for t in args.threads.split(",")]
        rows = measure(embedders, texts, threads, args.runs, args.batch_size)
        budgets = [int(b) for b in args.budgets.split(",") if b]
        budget_rows = measure_budgets(embedders["onnx"], texts, threads, args.runs, args.batch_size, budgets) if budgets else []
        lane_rows = (measure_lanes(embedders["onnx"], {"sentences": texts, "names": read_names(args.graphs, datasets, args.names)},
                                   max(threads), args.runs, args.batch_size) if max(threads) >= 2 else [])
    data = {"when": utc_stamp(), "machine": machine_info(), "onnxruntime": onnxruntime.__version__,
            "datasets": datasets, "n_sentences": len(texts), "n_words": sum(len(t.split()) for t in texts),
            "batch_size": args.batch_size, "runs": args.runs, "load_before": load_before, "load_after": load_avg(),
            "construction": construction, "rows": rows, "budget_rows": budget_rows, "lane_rows": lane_rows}
    md = markdown(data)
    for path in write_results(args.out, data, md):
        print(f"wrote {path}")
    print(md)


if __name__ == "__main__":
    main()
