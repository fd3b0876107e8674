"""``harness-g build --append`` of a small delta to the dev 2Wiki graph vs a full rebuild of the union (issue 35 item 4).

    python benchmarks/bench_append.py [--delta 5] [--repeats 3] [--rebuild-repeats 3] [--preset paper] [--no-store]
        [--work DIR]

The dev 2Wiki questions share many context paragraphs, and an append refuses a document the graph holds, so the
delta is ``--delta`` questions whose paragraphs no other question uses (the first such in file order); the base is
every other question. Each repeat, on a fresh copy of the base graph (artifact + its embedded FalkorDB, loaded once
before timing): (1) the append (``append_graph``) and its store delta (``load_delta``) into the loaded store, and
(2) a full rebuild of base + delta (``build_graph(force=True)``) and its full load (``load_graph(force=True)``).
Seconds are wall clock, median of the repeats; the machine is shared, so the spread is printed too. ``--no-store``
times the artifact steps only; ``--rebuild-repeats`` runs fewer full rebuilds than appends (they dominate the run);
``--work DIR`` keeps the inputs and the base graph in DIR and reuses them when they are there.
Writes benchmarks/results/append.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BY_NAME, RESULTS  # noqa: E402

from harness_g.graph.append import append_graph, load_delta  # noqa: E402
from harness_g.graph.build import CorpusSpec, build_graph  # noqa: E402
from harness_g.graph.config import BuildConfig  # noqa: E402
from harness_g.graph.load import load_graph  # noqa: E402
from harness_g.graph.readers import read_dataset  # noqa: E402


def disjoint_split(source: Path, n_delta: int, out_dir: Path) -> tuple[Path, Path, int]:
    """``(base file, delta file, delta paragraphs)``: the first ``n_delta`` questions whose context paragraphs no
    other question has, and the rest."""
    records = json.loads(source.read_text(encoding="utf-8"))
    out_dir.mkdir(parents=True, exist_ok=True)
    para_sets = []
    for k, record in enumerate(records):
        one = out_dir / f"q{k}.json"
        one.write_text(json.dumps([record]), encoding="utf-8")
        para_sets.append({p.id for p in read_dataset("2wiki", one).paragraphs})
        one.unlink()
    users: dict[str, int] = {}
    for ids in para_sets:
        for pid in ids:
            users[pid] = users.get(pid, 0) + 1
    delta = [k for k, ids in enumerate(para_sets) if all(users[p] == 1 for p in ids)][:n_delta]
    if len(delta) < n_delta:
        raise SystemExit(f"only {len(delta)} questions with paragraphs of their own")
    base_file, delta_file = out_dir / "base.json", out_dir / "delta.json"
    base_file.write_text(json.dumps([r for k, r in enumerate(records) if k not in delta]), encoding="utf-8")
    delta_file.write_text(json.dumps([records[k] for k in delta]), encoding="utf-8")
    return base_file, delta_file, sum(len(para_sets[k]) for k in delta)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--delta", type=int, default=5, help="questions appended (default 5)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rebuild-repeats", type=int, default=None, help="full rebuilds timed (default: --repeats)")
    ap.add_argument("--preset", default="paper")
    ap.add_argument("--no-store", action="store_true", help="time the artifact steps only")
    ap.add_argument("--work", type=Path, help="working directory kept (and reused: its inputs and base graph)")
    args = ap.parse_args()
    config = BuildConfig.load(None, {}, preset=args.preset)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-append-"))
    base_file, delta_file, delta_paragraphs = disjoint_split(BY_NAME["2wiki"].path, args.delta, work / "in")
    base = work / "base"
    build_graph([CorpusSpec("2wiki", base_file)], base, config, progress=False)  # a cache hit when reused
    if not args.no_store:
        store, _ = load_graph(base, progress=False)
        store.close()
    rebuilds = args.repeats if args.rebuild_repeats is None else args.rebuild_repeats
    rows: dict[str, list[float]] = {"append": [], "append_store_delta": [], "rebuild": [], "rebuild_full_load": []}
    counts: dict[str, dict] = {}
    for repeat in range(args.repeats):
        g = work / "g"
        shutil.rmtree(g, ignore_errors=True)
        skip = [".lock", "*.sock", "*.pid"] + (["store", "store.json"] if args.no_store else [])
        shutil.copytree(base, g, ignore=shutil.ignore_patterns(*skip))
        t = time.perf_counter()
        result = append_graph([CorpusSpec("2wiki", delta_file)], g, config, progress=False)
        rows["append"].append(time.perf_counter() - t)
        if not args.no_store:
            t = time.perf_counter()
            store, how, _ = load_delta(g, None, result.delta, progress=False)
            store.close()
            rows["append_store_delta"].append(time.perf_counter() - t)
            assert how == "delta", how
        counts = {"appended": result.counts, "delta": result.delta.sizes() if result.delta else {},
                  "affected": result.affected}
        if repeat >= rebuilds:
            continue
        t = time.perf_counter()
        build_graph([CorpusSpec("2wiki", base_file), CorpusSpec("2wiki", delta_file)], g, config, force=True,
                    progress=False)
        rows["rebuild"].append(time.perf_counter() - t)
        if not args.no_store:
            t = time.perf_counter()
            store, _ = load_graph(g, progress=False, force=True)
            store.close()
            rows["rebuild_full_load"].append(time.perf_counter() - t)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    rows = {k: v for k, v in rows.items() if v}
    med = {k: statistics.median(v) for k, v in rows.items()}
    out = {"preset": args.preset, "delta_questions": args.delta, "delta_paragraphs": delta_paragraphs,
           "repeats": args.repeats, "rebuild_repeats": rebuilds, "store": not args.no_store, "seconds": rows, "median": med, **counts}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "append.json").write_text(json.dumps(out, indent=2, default=str) + "\n", encoding="utf-8")
    c = counts["appended"]
    flags = f" --rebuild-repeats {rebuilds}" + (" --no-store" if args.no_store else "")
    lines = [
        "# Append vs full rebuild: the dev 2Wiki graph",
        "",
        f"`python benchmarks/bench_append.py --delta {args.delta} --repeats {args.repeats}{flags} --preset {args.preset}` "
        "(2-core shared CPU, embedded FalkorDB; wall seconds, median of the repeats, each repeat's value in "
        "append.json).",
        "",
        f"Graph after the append: {c.get('paragraphs')} paragraphs, {c.get('sentences')} sentences, {c.get('entities')} "
        f"entities, {c.get('synonyms')} synonym links. Delta: {args.delta} questions, {delta_paragraphs} paragraphs "
        f"of their own; store delta rows {counts['delta']}; {counts['affected']}.",
        "",
        "| step | append | full rebuild | ratio |",
        "|---|---|---|---|",
        f"| artifact | {med['append']:.1f} | {med['rebuild']:.1f} | {med['rebuild'] / med['append']:.1f}x |",
    ]
    if "append_store_delta" in med and "rebuild_full_load" in med:
        lines += [
            f"| store (delta vs full load) | {med['append_store_delta']:.1f} | {med['rebuild_full_load']:.1f} | "
            f"{med['rebuild_full_load'] / max(med['append_store_delta'], 1e-9):.1f}x |",
        ]
    lines += [
        "",
        f"Repeats: {args.repeats} appends, {rebuilds} full rebuilds. Spread (min-max): " + ", ".join(f"{k} {min(v):.1f}-{max(v):.1f}" for k, v in rows.items()) + ".",
        "",
        "What the append still does over the whole graph (graph/append.py): it reads the old tables and re-derives "
        "the entity stage from the stored mentions (no NER) and the rule links (hash joins), and writes the whole "
        "union artifact again (Parquet + .npy + sha256 of each file); NER, sentence embeddings, name encoding and the "
        "embedding-link ranking run for the delta and the entities it touches only, and the store receives the delta.",
    ]
    (RESULTS / "append.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
