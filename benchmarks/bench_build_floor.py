"""The compute floor of a graph build on this machine, next to the builds that were measured.

    python benchmarks/bench_build_floor.py [--graphs /tmp/hg-dev] [--datasets hotpotqa,2wiki]
                                           [--ner-sample 1000] [--out benchmarks/results/build_floor.json]

A build must encode every sentence and every lookup-able entity name (the ``link`` stage) and run NER on every
sentence. This script counts that work on the dev graphs that ``benchmarks/build_dev_graphs.py`` wrote and
divides it by what this machine can do at best:

- encoder FLOPs: word pieces of each text (the model's own tokenizer, truncated as the encoder truncates) times
  2 x multiply-adds per piece of a BERT layer stack, ``layers x (4 h^2 + 2 h f + 2 n h)`` for a text of ``n``
  pieces (projections, feed-forward, attention scores and mixing); embeddings, layer norms and pooling are not
  counted, so the count is a lower bound;
- the machine's best fp32 throughput: torch's SGEMM (oneDNN/MKL) GFLOP/s at the encoder's feed-forward shape
  ``[512, h] x [h, f]`` on 1 thread and on every core, best of 20 calls after warm-up;
- NER: spaCy (the build's ``EntityRecognizer``) CPU seconds per sentence on ``--ner-sample`` sentences;
- the encoder as it runs: the default ONNX fp32 encoder on 1 thread over the same sample (achieved GFLOP/s).

Floor (s per 1K corpus tokens) = encoder FLOPs / all-core peak + NER CPU seconds / cores, where the all-core peak
is the higher of one SGEMM on every core and cores x the 1-thread SGEMM (independent 1-thread calls, as the build's
encoder lanes run them): every core busy
on either job, the encoder at the SGEMM peak, nothing else (no load into the store, no Python stages). A build
cannot be faster than this on this machine; ``measured`` is the sum of the artifact's wall-clock stage seconds
(read, split, NER+embedding, entities, link, write: the build without the store load) as the build that wrote it
ran: ``build_dev_graphs.py`` builds with one torch thread by default, so for the build as a user runs it point
``--graphs`` at artifacts from ``harness-g build --no-load``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, load_avg, machine_info, machine_line, md_table, utc_stamp, write_results  # noqa: E402


def sgemm_gflops(m: int, k: int, n: int, threads: int, calls: int = 20) -> float:
    """Best-of-``calls`` GFLOP/s of a float32 ``[m, k] x [k, n]`` matmul with ``threads`` torch threads."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(m, k), torch.randn(k, n)
    for _ in range(5):
        a @ b
    best = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2.0 * m * k * n / best / 1e9


def flops_per_text(pieces: np.ndarray, layers: int, hidden: int, ffn: int) -> np.ndarray:
    """Forward FLOPs ``[len(pieces)]`` of a BERT encoder on texts of ``pieces`` word pieces each (lower bound)."""
    n = pieces.astype(np.float64)
    return 2.0 * n * layers * (4 * hidden * hidden + 2 * hidden * ffn + 2 * n * hidden)


def read_texts(graph: Path) -> tuple[list[str], list[str], dict]:
    """(sentence texts, lookup-able entity surfaces, manifest) of one artifact."""
    import pyarrow.parquet as pq

    for name in ("sentences.parquet", "entities.parquet", "manifest.json"):
        if not (graph / name).is_file():
            raise SystemExit(f"{graph / name}: missing; build the dev graphs first (benchmarks/build_dev_graphs.py)")
    sentences = pq.read_table(graph / "sentences.parquet", columns=["text"]).column("text").to_pylist()
    ents = pq.read_table(graph / "entities.parquet", columns=["surface", "lookupable"]).to_pydict()
    names = [s for s, ok in zip(ents["surface"], ents["lookupable"]) if ok]
    return sentences, names, json.loads((graph / "manifest.json").read_text())


def measure(graphs: Path, datasets: list[str], ner_sample: int) -> dict:
    import torch

    from harness_g.graph.build import build_wall_seconds
    from harness_g.graph.embed import get_embedder
    from harness_g.graph.text.ner import EntityRecognizer

    cores = os.cpu_count() or 1
    embedder = get_embedder()  # the default backend (fp32 ONNX), as a build uses it
    encoder = embedder._model
    if not hasattr(encoder, "token_ids"):
        raise SystemExit("the floor counts word pieces with the ONNX encoder: run it with the default backend")
    cfg = json.loads((encoder.layout.transformer_dir / "config.json").read_text())
    layers, hidden, ffn = int(cfg.get("num_hidden_layers", 6)), int(cfg.get("hidden_size", 384)), int(cfg.get("intermediate_size", 1536))
    peak = {t: sgemm_gflops(512, hidden, ffn, t) for t in sorted({1, cores})}
    recognizer = EntityRecognizer()
    rows = []
    for name in datasets:
        sentences, names, manifest = read_texts(graphs / name)
        tokens = int(manifest.get("corpus_tokens") or sum(len(s.split()) for s in sentences))
        tok = encoder.token_ids
        s_pieces = np.array([len(x) for x in tok(sentences)])
        n_pieces = np.array([len(x) for x in tok(sorted(set(names)))])  # the encoder runs each distinct name once
        s_flops = float(flops_per_text(s_pieces, layers, hidden, ffn).sum())
        n_flops = float(flops_per_text(n_pieces, layers, hidden, ffn).sum())

        sample = sentences[:ner_sample]
        torch.set_num_threads(1)
        embedder.encode(sample[:64])
        t0, c0 = time.perf_counter(), time.process_time()
        embedder.encode(sample)
        enc_wall, enc_cpu = time.perf_counter() - t0, time.process_time() - c0
        sample_flops = float(flops_per_text(s_pieces[:len(sample)], layers, hidden, ffn).sum())
        list(recognizer.extract(sample[:64]))
        c0 = time.process_time()
        list(recognizer.extract(sample))
        ner_cpu_per_sentence = (time.process_time() - c0) / len(sample)
        torch.set_num_threads(cores)

        ner_cpu = ner_cpu_per_sentence * len(sentences)
        floor_s = (s_flops + n_flops) / (all_core_peak(peak, cores) * 1e9) + ner_cpu / cores
        measured = build_wall_seconds(manifest["seconds"]) if manifest.get("seconds") else None
        rows.append({
            "dataset": name, "tokens": tokens, "sentences": len(sentences), "names": len(names),
            "distinct_names": int(len(n_pieces)), "sentence_pieces": int(s_pieces.sum()), "name_pieces": int(n_pieces.sum()),
            "pieces_per_token": (int(s_pieces.sum()) + int(n_pieces.sum())) / tokens,
            "encoder_tflop": (s_flops + n_flops) / 1e12, "ner_cpu_s": ner_cpu,
            "encoder_gflops_1thread": sample_flops / enc_wall / 1e9, "encoder_cpu_share": enc_cpu / enc_wall,
            "floor_s": floor_s, "floor_s_per_1k": floor_s / tokens * 1000,
            "measured_build_s": measured, "measured_s_per_1k": (measured / tokens * 1000) if measured else None,
            "embedding_backend": manifest.get("config", {}).get("embedding_backend"),
        })
    return {"peak_gflops": {str(k): v for k, v in peak.items()}, "cores": cores, "layers": layers, "hidden": hidden,
            "ffn": ffn, "rows": rows}


def all_core_peak(peak: dict[int, float], cores: int) -> float:
    """GFLOP/s every core can give the encoder at once: one SGEMM on all cores, or one single-thread SGEMM per core
    (the build's lanes run independent 1-thread calls: graph/build.py ``encode_lanes``), whichever is higher."""
    return max(peak[cores], cores * peak[1])


def render(data: dict) -> str:
    peak = data["peak_gflops"]
    lines = [
        "# Build compute floor on this machine",
        "",
        f"Generated {data['generated']} by `python benchmarks/bench_build_floor.py` on {data['machine_line']}. "
        f"Load average at start {data['load_start']}, at end {data['load_end']}.",
        "",
        f"Machine's best fp32 throughput (torch SGEMM at the encoder's feed-forward shape [512, {data['hidden']}] x "
        f"[{data['hidden']}, {data['ffn']}], best of 20): " + ", ".join(f"{v:.0f} GFLOP/s on {k} thread(s)" for k, v in peak.items()) + ".",
        f"Encoder FLOPs: {data['layers']} layers x (4h^2 + 2hf + 2nh) multiply-adds per word piece (a lower bound). "
        "Floor = encoder FLOPs / all-core peak + NER CPU s / cores, the all-core peak being the higher of the "
        f"{data['cores']}-thread SGEMM and {data['cores']} x the 1-thread one (independent 1-thread calls, as the build's "
        f"encoder lanes run them): {all_core_peak({int(k): v for k, v in peak.items()}, data['cores']):.0f} GFLOP/s "
        "(every core busy, the encoder at the SGEMM peak, no store load, no Python stages). Measured = the dev "
        "artifact's build seconds (same stages, no load).",
        "",
    ]
    rows = [[r["dataset"], f"{r['tokens']:,}", f"{r['sentence_pieces']:,}", f"{r['distinct_names']:,} ({r['name_pieces']:,})",
             f"{r['pieces_per_token']:.2f}", f"{r['encoder_tflop']:.2f}", f"{r['ner_cpu_s']:.1f}",
             f"{r['encoder_gflops_1thread']:.0f}", f"{r['floor_s']:.1f}", f"{r['floor_s_per_1k']:.3f}",
             f"{r['measured_s_per_1k']:.3f}" if r["measured_s_per_1k"] else "n/a"] for r in data["rows"]]
    lines.append(md_table(["dataset", "corpus tokens", "sentence pieces", "distinct names (pieces)", "pieces / token",
                           "encoder TFLOP", "NER CPU s", "encoder GFLOP/s (1 thread, achieved)", "floor s",
                           "floor s/1K", "measured s/1K"], rows))
    lines += ["", "Regenerate: `python benchmarks/bench_build_floor.py --graphs <root>`, the root holding one artifact per "
              "dataset (`harness-g build --no-load` for the build as users run it; `build_dev_graphs.py` builds with 1 "
              "torch thread)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default="/tmp/hg-dev", help="root of the dev graphs (benchmarks/build_dev_graphs.py)")
    ap.add_argument("--datasets", default="hotpotqa,2wiki")
    ap.add_argument("--ner-sample", type=int, default=1000, help="sentences timed for NER and the encoder")
    ap.add_argument("--out", default=str(RESULTS / "build_floor.json"))
    args = ap.parse_args()
    start = load_avg()
    data = measure(Path(args.graphs), [d for d in args.datasets.split(",") if d], args.ner_sample)
    info = machine_info()
    data.update(generated=utc_stamp(), machine=info, machine_line=machine_line(info), load_start=start, load_end=load_avg())
    md = render(data)
    print(md)
    for path in write_results(args.out, data, md):
        print("wrote", path)


if __name__ == "__main__":
    main()
