"""What computing the hub samples costs at load, against the size of the mentions table (issue 35, item 7's cost model).

    python benchmarks/bench_hub_sample_cost.py --graph GRAPH_DIR [--replicas 1,10,100,300] [--size 1000]

Every load derives the hub samples (``graph/stores/hub_sample.py`` ``hub_samples``, Arrow and numpy) from the
artifact's whole mentions table, on the loading machine. This measures that step alone, beside its plain-Python
definition ``hub_samples_reference`` (the baseline), on the graph's mentions replicated R times (every mention R times
with a distinct sentence id, entities shared: every entity's mention set grows R-fold, as in ``bench_scale.py``'s
replicas, the worst case for hubs), each R and implementation in a fresh process: wall seconds (the median of 3 calls
after an untimed one), rows per second, the hubs and their rows, and the process's peak resident memory above what
the table itself holds.
``benchmarks/results/hub_sample_cost.{json,md}``.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, load_avg, machine_info, machine_line, md_table, utc_stamp, write_results  # noqa: E402

#: wiki-18's sentences (scale.md's extrapolation: 2.10B tokens at the HotpotQA dev corpus's 22.0 words per sentence);
#: its mention rows are this times the measured graph's mentions per sentence
WIKI18_SENTENCES = 96_000_000


def _rss_mb() -> float:
    """This process's peak resident set so far, MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


IMPLS = ("vectorised", "reference")


def one(graph: Path, replicas: int, size: int, impl: str) -> dict:
    """In this process: replicate the mentions ``replicas`` times and time ``impl`` (``hub_samples``, or
    ``hub_samples_reference``: the plain-Python definition, the baseline) on them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from harness_g.graph.artifact import Artifact
    from harness_g.graph.stores import hub_sample

    hub_samples = hub_sample.hub_samples if impl == "vectorised" else hub_sample.hub_samples_reference

    base = Artifact.open(graph).table("mentions", columns=["sentence_id", "entity_id"])
    parts = [base] + [pa.table({"sentence_id": pc.binary_join_element_wise(base.column("sentence_id"), f"~r{r}", ""),
                                "entity_id": base.column("entity_id")}) for r in range(1, replicas)]
    table = pa.concat_tables(parts).combine_chunks()
    del parts
    before = _current_rss_mb()
    hub_samples(table, size)  # untimed: the first group-bys start Arrow's compute engine and thread pool (~1 s)
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        samples = hub_samples(table, size)
        times.append(time.perf_counter() - t0)
    seconds = sorted(times)[1]  # the median of 3
    hub_rows = int(pc.sum(pc.is_in(table.column("entity_id"), value_set=pa.array(sorted(samples)))).as_py() or 0) \
        if samples else 0
    return {"impl": impl, "replicas": replicas, "rows": table.num_rows, "table_mb": round(table.nbytes / 2**20, 1), "seconds": round(seconds, 3),
            "rows_per_s": round(table.num_rows / seconds) if seconds else None, "hubs": len(samples), "hub_rows": hub_rows,
            "rss_before_mb": round(before, 1), "peak_rss_mb": round(_rss_mb(), 1),
            "peak_above_table_mb": round(_rss_mb() - before, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", required=True, type=Path, help="GRAPH_DIR whose mentions are replicated")
    ap.add_argument("--replicas", default="1,10,100,300", help="comma-separated R (default 1,10,100,300)")
    ap.add_argument("--size", type=int, default=1000, help="hub sample size (default HUB_SAMPLE_SIZE, 1000)")
    ap.add_argument("--out", type=Path, default=RESULTS / "hub_sample_cost.json")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child: one R, JSON on stdout
    ap.add_argument("--impl", choices=IMPLS, default="vectorised", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one(args.graph, args.one, args.size, args.impl)))
        return 0
    try:
        reps = [int(r) for r in args.replicas.split(",") if r.strip()]
    except ValueError:
        print(f"error: --replicas {args.replicas!r}: expected comma-separated integers", file=sys.stderr)
        return 2
    if not reps or min(reps) < 1 or args.size < 1:
        print("error: --replicas and --size must be >= 1", file=sys.stderr)
        return 2
    if not (args.graph / "manifest.json").is_file():
        print(f"error: --graph {args.graph}: no graph there (no manifest.json)", file=sys.stderr)
        return 2
    load0, started = load_avg(), time.perf_counter()
    rows = []
    for r in reps:
        for impl in IMPLS:
            out = subprocess.run([sys.executable, __file__, "--graph", str(args.graph), "--size", str(args.size),
                                  "--one", str(r), "--impl", impl], capture_output=True, text=True, check=False)
            if out.returncode:
                why = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode
                print(f"error: replicas {r} ({impl}): {why}", file=sys.stderr)
                return 1
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), file=sys.stderr)
    ref = {r["replicas"]: r for r in rows if r["impl"] == "reference"}
    for r in rows:
        r["speedup_vs_reference"] = round(ref[r["replicas"]]["seconds"] / r["seconds"], 2) if r["seconds"] else None
    largest = [r for r in rows if r["impl"] == "vectorised"][-1]
    per_row_s = largest["seconds"] / largest["rows"]
    per_row_mb = largest["peak_above_table_mb"] / largest["rows"]
    mentions_per_sentence = rows[0]["rows"] / rows[0]["replicas"] / max(1, _sentences(args.graph))
    wiki_rows = WIKI18_SENTENCES * mentions_per_sentence
    wiki = {"sentences": WIKI18_SENTENCES, "mentions_per_sentence": round(mentions_per_sentence, 2),
            "mention_rows": round(wiki_rows), "seconds": round(wiki_rows * per_row_s),
            "memory_above_table_gb": round(wiki_rows * per_row_mb / 1024, 1),
            "table_gb": round(wiki_rows * largest["table_mb"] / largest["rows"] / 1024, 1),
            "from": f"R = {largest['replicas']}, linear in rows"}
    info = machine_info()
    data = {"generated": utc_stamp(), "graph": str(args.graph), "size": args.size, "rows": rows, "wiki18": wiki,
            "load_avg": [load0, load_avg()], "seconds": round(time.perf_counter() - started, 1), "machine": info}
    md = [f"# Hub samples at load: cost against the mentions table ({utc_stamp()})", "",
          f"`python benchmarks/bench_hub_sample_cost.py --graph {args.graph} --replicas {args.replicas} --size {args.size}`"
          f"; {machine_line(info)}; load average {load0} -> {load_avg()}. One run per R, each in a fresh process.", "",
          md_table(["R", "implementation", "mention rows", "table MB", "seconds", "rows/s", "x reference", "hubs",
                    "hub rows", "peak RSS above the table MB"],
                   [[r["replicas"], r["impl"], f"{r['rows']:,}", r["table_mb"], r["seconds"], f"{r['rows_per_s']:,}",
                     r["speedup_vs_reference"], r["hubs"], f"{r['hub_rows']:,}", r["peak_above_table_mb"]] for r in rows]),
          "", "`vectorised`: `hub_samples` (what every load runs); `reference`: `hub_samples_reference`, the plain-Python "
          "definition it equals (tests/unit/test_hub_sample_math.py), the baseline.", "",
          f"wiki-18 with `hub_samples`, extrapolated linearly from R = {largest['replicas']} (an estimate, not a measurement): "
          f"{WIKI18_SENTENCES:,} sentences x {wiki['mentions_per_sentence']} mentions per sentence = "
          f"{wiki['mention_rows']:,} mention rows; ~{wiki['seconds']:,} s on this machine and "
          f"~{wiki['memory_above_table_gb']} GB "
          f"above the two id columns' ~{wiki['table_gb']} GB. The replicas are the worst case for hubs (every entity's "
          f"mentions grow R-fold: {largest['hub_rows']:,} of {largest['rows']:,} rows belong to hubs at R = "
          f"{largest['replicas']}); the ids of a real corpus are longer or shorter than these."]
    write_results(args.out, data, "\n".join(md) + "\n")
    print(args.out)
    return 0


def _sentences(graph: Path) -> int:
    return int(json.loads((graph / "manifest.json").read_text(encoding="utf-8")).get("counts", {}).get("sentences", 0))


if __name__ == "__main__":
    sys.exit(main())
