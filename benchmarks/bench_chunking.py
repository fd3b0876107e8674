"""Does the paper's corpus chunking touch any benchmark passage? (harness-g.tex l.820, appendix "Splits and corpus
preprocessing": "we segment each corpus into 1,200-token chunks with 100-token overlap".)

    python benchmarks/bench_chunking.py [--limit-tokens 1200] [--no-wordpieces]

The readers keep every passage whole as one paragraph and chunk (1,200 whitespace tokens, 100 shared) only a
document longer than that (graph/readers/chunking.py); HotpotQA and 2Wiki paragraphs, whose gold labels index their
sentences, are never chunked. For each dev set this reads every distinct passage *unchunked* with the set's own
reader and counts those over the limit in whitespace tokens, the unit the readers chunk by, and (unless
``--no-wordpieces``) in word pieces of the build's packaged all-MiniLM-L6-v2 tokenizer, a subword count closer to
what a "1,200-token" chunker of a model tokenizer counts. It also reads each set as the build does (chunking on) and
counts the paragraphs that came out as chunks. TriviaQA ships no passages (its graph is its questions over the
other corpora). Writes benchmarks/results/chunking.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEV_SETS, RESULTS, DevSet  # noqa: E402

UNCHUNKED = 10**9  # a chunk size no passage reaches: every passage read whole
NEVER_CHUNKED = ("hotpotqa", "2wiki")  # sentence-split formats: graph/readers/multihop.py never chunks them


def passage_lengths(ds: DevSet, tokenizer: Any | None, limit: int) -> dict[str, Any]:
    """Whitespace-token (and word-piece) lengths of every distinct passage of ``ds``, read whole, the passages over
    ``limit`` whitespace tokens (title, tokens), and how many paragraphs the build's own read (chunking on) makes
    chunks of."""
    from harness_g.graph.readers import read_dataset
    from harness_g.graph.readers.chunking import DEFAULT_CHUNK_OVERLAP, DEFAULT_CHUNK_TOKENS, count_tokens

    whole = read_dataset(ds.fmt, ds.path, chunk_tokens=UNCHUNKED, chunk_overlap=0)
    built = read_dataset(ds.fmt, ds.path, chunk_tokens=DEFAULT_CHUNK_TOKENS, chunk_overlap=DEFAULT_CHUNK_OVERLAP)
    texts = [p.text for p in whole.paragraphs]
    words = [count_tokens(t) for t in texts]
    pieces = ([len(ids) for ids in tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]]
              if tokenizer is not None and texts else [])
    over = [{"title": p.title, "words": n} for p, n in zip(whole.paragraphs, words) if n > limit]
    return {"dataset": ds.name, "format": ds.fmt, "file": ds.rel, "passages": len(texts), "words": words,
            "pieces": pieces, "over_limit": over,
            "chunked_paragraphs": sum("#chunk" in p.source for p in built.paragraphs),
            "built_paragraphs": len(built.paragraphs)}


def summarise(raw: dict[str, Any], limit: int) -> dict[str, Any]:
    """Counts and percentiles of one set's lengths (the raw lists are not kept)."""
    out = {k: v for k, v in raw.items() if k not in ("words", "pieces")}
    for unit in ("words", "pieces"):
        values = sorted(raw[unit])
        if not values:
            continue
        out[unit] = {"max": values[-1], "p99": values[min(len(values) - 1, int(0.99 * len(values)))],
                     "median": statistics.median(values), f"over_{limit}": sum(v > limit for v in values)}
    return out


def markdown(rows: list[dict[str, Any]], limit: int, no_passages: list[str]) -> str:
    lines = [f"# Corpus chunking on the dev sets: passages over {limit:,} tokens", "",
             "Written by `benchmarks/bench_chunking.py`. The paper segments each corpus into 1,200-token chunks with",
             "100-token overlap (harness-g.tex l.820); the readers keep each passage whole and chunk only a document",
             f"over {limit:,} whitespace tokens (HotpotQA and 2Wiki paragraphs never: their gold labels index sentences).",
             "Every distinct passage of each dev set, read whole; word pieces: the packaged all-MiniLM-L6-v2 tokenizer.",
             "",
             f"| dataset | passages | max words | p99 words | median words | over {limit:,} words | max word pieces | "
             f"over {limit:,} word pieces | paragraphs chunked by the build |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        w, p = r["words"], r.get("pieces") or {}
        lines.append(f"| {r['dataset']} | {r['passages']:,} | {w['max']:,} | {w['p99']:,} | {w['median']:g} | "
                     f"{w[f'over_{limit}']} | {p.get('max', 'n/a')} | {p.get(f'over_{limit}', 'n/a')} | "
                     f"{r['chunked_paragraphs']} |")
    over = [(r["dataset"], o) for r in rows for o in r["over_limit"]]
    lines += ["", f"Passages over {limit:,} whitespace tokens, all sets: {len(over)}."]
    for name, o in over:
        kept = name in NEVER_CHUNKED
        lines.append(f"- {name}: \"{o['title']}\", {o['words']:,} words: "
                     + ("kept whole by the build (its gold labels index sentences); a 1,200-token chunker would cut it "
                        "in two" if kept else "chunked by the build"))
    if not over:
        lines.append("No benchmark passage is chunked: the paper's chunking and the readers' whole passages give the "
                     "same corpus.")
    if no_passages:
        lines += ["", f"No passages: {', '.join(no_passages)} (question-only; its graph is built over the other corpora)."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit-tokens", type=int, default=1200, help="the chunk size to count against (default 1200)")
    ap.add_argument("--no-wordpieces", action="store_true", help="count whitespace tokens only (no tokenizer load)")
    args = ap.parse_args()
    tokenizer = None
    if not args.no_wordpieces:
        from harness_g.graph.embed import get_embedder

        tokenizer = get_embedder().tokenizer
    rows, no_passages = [], []
    for ds in DEV_SETS:
        if not ds.path.is_file():
            print(f"{ds.name}: {ds.path} missing, skipped", file=sys.stderr)
            continue
        raw = passage_lengths(ds, tokenizer, args.limit_tokens)
        if not raw["passages"]:
            no_passages.append(ds.name)
            continue
        rows.append(summarise(raw, args.limit_tokens))
        print(f"{ds.name}: {rows[-1]['passages']} passages, max {rows[-1]['words']['max']} words, "
              f"{rows[-1]['words'][f'over_{args.limit_tokens}']} over {args.limit_tokens}", flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "chunking.json").write_text(json.dumps({"limit_tokens": args.limit_tokens, "sets": rows,
                                                       "no_passages": no_passages}, indent=1) + "\n")
    (RESULTS / "chunking.md").write_text(markdown(rows, args.limit_tokens, no_passages))
    print(f"wrote {RESULTS / 'chunking.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
