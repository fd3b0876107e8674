"""Neo4j bulk import (``neo4j-admin database import full``) against the Bolt loader: rows/s (issue 35 item 3).

For each graph (GRAPH_DIRs under ``--root``, plus the first one replicated ``--replicate`` times with
``bench_scale.replicate_artifact``) and each of ``--repeats`` rounds, on a fresh local Neo4j 5.26 each time:

- **bolt**: :class:`LocalNeo4j` started (not timed), then ``Neo4jStore.load`` (UNWIND batches, schema, vector index
  waited for): its ``total`` seconds.
- **bulk**: :func:`bulk_load_local` (CSV, offline import, server start, schema, GraphMeta, vector index): its total;
  ``bulk without start`` leaves out the server start (which the Bolt column does not pay either).

rows = nodes + relationships (the load report's per-stage rows). Median of the rounds.

    python benchmarks/bench_neo4j_bulk.py --root /tmp/bulk35-dev --graphs hotpotqa,2wiki --replicate 10 --repeats 3
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, load_avg, machine_info, machine_line, md_table, utc_stamp, write_results  # noqa: E402


def bolt_round(graph_dir: Path) -> dict[str, Any]:
    from harness_g.graph.artifact import Artifact
    from harness_g.graph.stores.local_neo4j import LocalNeo4j
    from harness_g.graph.stores.neo4j_store import Neo4jStore

    artifact = Artifact.open(graph_dir, verify=True)
    with LocalNeo4j() as server:
        store = Neo4jStore(server.bolt_uri, *server.auth)
        try:
            report = store.load(artifact, progress=False)
        finally:
            store.close()
    return {"rows": sum(report.rows.values()), "seconds": report.seconds["total"], "stages": report.seconds}


def bulk_round(graph_dir: Path) -> dict[str, Any]:
    from harness_g.graph.stores.neo4j_bulk import bulk_load_local

    server, store, report = bulk_load_local(graph_dir)
    store.close()
    server.stop()
    s = report.seconds
    return {"rows": sum(report.rows.values()), "seconds": s["total"], "without_start": s["total"] - s["start"],
            "stages": s}


def median_of(rounds: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True, help="folder of GRAPH_DIRs (built artifacts)")
    parser.add_argument("--graphs", default="hotpotqa,2wiki", help="comma-separated GRAPH_DIR names under --root")
    parser.add_argument("--replicate", type=int, default=10, help="also the first graph replicated N times (0: no)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / "neo4j_bulk.json"))
    parser.add_argument("--merge", action="store_true", help="keep the graphs already in --out (others' rounds)")
    args = parser.parse_args()
    started = time.perf_counter()
    graphs = {name: args.root / name for name in args.graphs.split(",") if name}
    if args.replicate > 1:
        from bench_scale import replicate_artifact

        first = next(iter(graphs))
        target = args.root / f"{first}-x{args.replicate}"
        if not (target / "manifest.json").exists():
            replicate_artifact(graphs[first], args.replicate, target)
        graphs = {first: graphs.pop(first), target.name: target, **graphs}  # measured second, before the others
    results: dict[str, Any] = {}
    commands: list[str] = []
    if args.merge and Path(args.out).exists():
        kept = json.loads(Path(args.out).read_text(encoding="utf-8"))
        results, commands = kept["graphs"], kept.get("commands", [kept.get("command")])
    for name, graph_dir in graphs.items():
        rounds: dict[str, list[dict[str, Any]]] = {"bolt": [], "bulk": []}
        before = load_avg()
        for _ in range(args.repeats):
            rounds["bolt"].append(bolt_round(graph_dir))
            rounds["bulk"].append(bulk_round(graph_dir))
        rows = rounds["bulk"][0]["rows"]
        assert all(r["rows"] == rows for rs in rounds.values() for r in rs), "bolt and bulk loaded different row counts"
        bolt_s, bulk_s = median_of(rounds["bolt"], "seconds"), median_of(rounds["bulk"], "seconds")
        bulk_ns = median_of(rounds["bulk"], "without_start")
        results[name] = {"rows": rows, "bolt_s": bolt_s, "bulk_s": bulk_s, "bulk_without_start_s": bulk_ns,
                         "bolt_rows_per_s": rows / bolt_s, "bulk_rows_per_s": rows / bulk_s,
                         "bulk_without_start_rows_per_s": rows / bulk_ns, "rounds": rounds,
                         "load_avg": [before, load_avg()]}
        print(name, {k: v for k, v in results[name].items() if k != "rounds"}, flush=True)
        write_report(args, results, time.perf_counter() - started, commands)  # after each graph: a cut-short run keeps its rows
    return 0


def write_report(args: argparse.Namespace, results: dict[str, Any], seconds: float, earlier: list[str]) -> None:
    """neo4j_bulk.json and .md from the graphs measured so far (and, with --merge, those of ``earlier`` commands)."""
    info = machine_info()
    command = "python benchmarks/bench_neo4j_bulk.py " + " ".join(sys.argv[1:])
    data = {"generated": utc_stamp(), "seconds": seconds, "machine": info, "command": command,
            "commands": [*earlier, command], "graphs": results}
    rows = [[name, f"{r['rows']:,}", f"{r['bolt_s']:.1f}", f"{r['bolt_rows_per_s']:,.0f}", f"{r['bulk_s']:.1f}",
             f"{r['bulk_rows_per_s']:,.0f}", f"{r['bulk_without_start_s']:.1f}",
             f"{r['bulk_without_start_rows_per_s']:,.0f}", str(len(r["rounds"]["bulk"])), str(r["load_avg"][0][0])]
            for name, r in results.items()]
    table = md_table(["graph", "rows (nodes+rels)", "bolt s", "bolt rows/s", "bulk s", "bulk rows/s",
                      "bulk s w/o server start", "bulk rows/s w/o start", "rounds", "load avg at start"], rows)
    stages = [[name, kind, ", ".join(f"{k} {v:.1f}" for k, v in r["rounds"][kind][0]["stages"].items())]
              for name, r in results.items() for kind in ("bolt", "bulk")]
    md = "\n".join([
        "# Neo4j: bulk import against the Bolt loader (issue 35 item 3)", "",
        f"Generated {data['generated']} by " + ", then ".join(f"`{c}`" for c in data["commands"]) + ".",
        f"Machine: {machine_line(info)}", "",
        "Each round on a fresh local Neo4j 5.26.30 (neo4j-harness, Community). **bolt**: `Neo4jStore.load` (UNWIND "
        "MERGE batches over Bolt, schema first, vector index last and waited for); the server start is not timed. "
        "**bulk**: `bulk_load_local` = CSV files + `neo4j-admin database import full` (AdminTool from the launcher's "
        "Maven classpath) + server start on the imported database + constraints, GraphMeta, vector index (waited for). "
        "rows = nodes + relationships. Median of the rounds (column `rounds`).", "", table, "",
        "Seconds per step, first round:", "", md_table(["graph", "loader", "seconds per step"], stages), "",
    ])
    write_results(args.out, data, md)


if __name__ == "__main__":
    raise SystemExit(main())
