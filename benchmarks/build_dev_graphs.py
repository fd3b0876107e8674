"""Build (or reuse) the six dev graphs, load them into the embedded FalkorDB, smoke-test the CLI.

    python benchmarks/build_dev_graphs.py [--root /tmp/hg-dev] [--only hotpotqa,2wiki] [--force]
        [--preset paper|extended] [--stem dev_graphs]

``--preset`` picks the build rules (BuildConfig's preset; paper by default) and ``--set KEY=VALUE`` overrides single
BuildConfig fields (e.g. ``--preset paper --set title_mentions=true``: one build extension alone); build each
variant into its own ``--root`` (e.g. /tmp/hg-dev-paper, /tmp/hg-dev-extended) and ``--stem`` (results file name).

Per dataset GRAPH_DIR = ROOT/<name>. Builds go through the Python API (``build_graph`` +
``load_graph``), so an unchanged input is a cache hit (content hash in the manifest). TriviaQA has
no passages: its graph is the TriviaQA questions over the union of the other five dev corpora
(its gold evidence is unknown: evidence recall is n/a for it, answer-in-evidence still works).

``--reuse-embeddings`` (default on) pre-fills an in-process text->vector memo from the five
already-built artifacts before the TriviaQA build, so the union corpus's sentences are not
re-embedded (same model, same texts: the vectors are the ones the five builds computed). The
TriviaQA build seconds are then *not* a from-scratch build time; the report says so and gives the
memo hit count. ``--no-reuse-embeddings`` for an honest from-scratch number. ``--reuse-from ROOT`` pre-fills the memo from the
graphs of the same datasets under ROOT (e.g. the other preset's: the sentences and entity names the two presets share
are encoded once); the build seconds of such a build are not from-scratch times either.

Afterwards, for each graph: ``harness-g stats --json``, one ``harness-g cypher`` query and one
``harness-g ask`` (the dataset's first question) are run as subprocesses; pass/fail is recorded.
Writes benchmarks/results/dev_graphs.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BY_NAME, CORPUS_SETS, DEV_SETS, RESULTS, DevSet, graph_dir, load_avg, machine_info, questions_of  # noqa: E402,F401


def inputs_for(ds: DevSet):
    from harness_g.graph.build import CorpusSpec

    inputs = [CorpusSpec(ds.fmt, ds.path)]
    if ds.name == "triviaqa":
        inputs += [CorpusSpec(c.fmt, c.path) for c in CORPUS_SETS]
    return inputs


class _EmbedMemo:
    """Replaces ``Embedder.encode`` on the process-wide cached embedder: known texts are not re-encoded."""

    def __init__(self, embedder):
        self.embedder = embedder
        self.orig = embedder.encode
        self.cache: dict[str, np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    def add(self, texts, vecs) -> None:
        for t, v in zip(texts, vecs):
            self.cache.setdefault(t, np.asarray(v, dtype=np.float32))

    reuse = False  # False: pass every call through unchanged and only record (honest build times)

    def __call__(self, texts, *, batch_size=None, progress=False, lanes=1):
        texts = list(texts)
        if not self.reuse:
            out = self.orig(texts, batch_size=batch_size, progress=progress, lanes=lanes)
            self.add(texts, out)
            return out
        miss = [t for t in dict.fromkeys(texts) if t not in self.cache]
        miss_set = set(miss)
        self.hits += sum(1 for t in texts if t not in miss_set)
        self.misses += len(miss)
        if miss:
            self.add(miss, self.orig(miss, batch_size=batch_size, progress=progress, lanes=lanes))
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.ascontiguousarray(np.stack([self.cache[t] for t in texts]), dtype=np.float32)

    def uninstall(self) -> None:
        self.embedder.encode = self.orig


_MEMO: _EmbedMemo | None = None


def _memo(config) -> _EmbedMemo:
    """The process-wide memo on the embedder instance build_graph uses (recording from the first build on)."""
    global _MEMO
    from harness_g.graph.embed import get_embedder

    if _MEMO is None:  # the instance build_graph uses: get_embedder is cached per (model, device, backend)
        emb = get_embedder(config.embedding_model, config.device, config.embedding_backend)
        _MEMO = _EmbedMemo(emb)
        emb.encode = _MEMO
    return _MEMO


def _prefill_memo(root: Path, config, names=None) -> _EmbedMemo:
    """The memo with the sentence vectors (and lookup-able entity names' vectors) of the graphs ``names`` (default:
    the five corpora) under ``root`` built with the same model."""
    from harness_g.graph.artifact import Artifact

    memo = _memo(config)
    for c in [BY_NAME[n] for n in names] if names else CORPUS_SETS:
        g = graph_dir(root, c.name)
        try:
            art = Artifact.open(g)
        except Exception:
            continue
        if art.embedding_model != config.embedding_model:
            continue
        texts = art.table("sentences", columns=["text"]).column("text").to_pylist()
        memo.add(texts, art.embeddings(mmap=False))
        names_vecs = art.entity_embeddings()
        if names_vecs is not None:
            ents = art.table("entities", columns=["surface", "lookupable"]).to_pydict()
            keep = [i for i, ok in enumerate(ents["lookupable"]) if ok]
            memo.add([ents["surface"][i] for i in keep], names_vecs[keep])
    return memo


def build_one(ds: DevSet, root: Path, *, force: bool, reuse_embeddings: bool, backend: str | None = None,
              preset: str = "paper", reuse_from: Path | None = None, sets: dict[str, str] | None = None) -> dict[str, Any]:
    from harness_g.graph.artifact import Artifact
    from harness_g.graph.build import build_graph, build_wall_seconds
    from harness_g.graph.config import BuildConfig
    from harness_g.graph.load import load_graph

    config = BuildConfig.load(None, {**({"embedding_backend": backend} if backend else {}), **(sets or {})}, preset=preset)
    out = graph_dir(root, ds.name)
    memo = None
    if reuse_embeddings:
        if reuse_from is not None:
            memo = _prefill_memo(reuse_from, config, [ds.name])
        else:
            memo = _prefill_memo(root, config) if ds.name == "triviaqa" else _memo(config)
        memo.reuse = ds.name == "triviaqa" or reuse_from is not None
        memo.hits = memo.misses = 0
    t0 = time.perf_counter()
    try:
        result = build_graph(inputs_for(ds), out, config, force=force, progress=False)
    finally:
        if memo is not None:
            memo.reuse = False
    build_wall = time.perf_counter() - t0
    t1 = time.perf_counter()
    store, report = load_graph(out, None, progress=False, force=force)  # --force reloads the store too
    with store:
        stats = store.stats()
    load_wall = time.perf_counter() - t1
    art = Artifact.open(out)
    manifest = art.manifest
    qs = questions_of(art, ds.name)
    counts = manifest.get("counts", {})
    row = {
        "dataset": ds.name,
        "preset": preset,
        "graph_dir": str(out),
        "inputs": manifest.get("inputs"),
        "gold": ds.gold,
        "cache_hit": result.cache_hit,
        "questions": len(qs),
        "questions_in_graph": counts.get("questions"),
        "paragraphs": counts.get("paragraphs"),
        "sentences": counts.get("sentences"),
        "entities": counts.get("entities"),
        "lookupable_entities": counts.get("lookupable_entities"),
        "mentions": counts.get("mentions"),
        "synonym_links": counts.get("synonyms"),
        "synonym_kinds": manifest.get("synonym_kinds"),
        "corpus_tokens": manifest.get("corpus_tokens"),
        # the manifest keeps the seconds of the build that produced the artifact (also on a cache hit)
        "build_stage_seconds": manifest.get("seconds"),
        "build_seconds": round(build_wall_seconds(manifest.get("seconds") or {}), 2),
        "build_wall_this_run_s": round(build_wall, 2),
        "load_wall_this_run_s": round(load_wall, 2),
        "load_skipped": report.skipped,
        "load_seconds": {k: round(v, 3) for k, v in report.seconds.items()},
        "store": {"nodes": stats.get("nodes"), "relationships": stats.get("relationships"),
                  "lookupable_entities": stats.get("lookupable_entities"), "indexes": stats.get("indexes"),
                  "complete": stats.get("complete")},
        "content_hash": manifest.get("content_hash"),
        "built_at": manifest.get("created"),
        "loadavg_after": load_avg(),
    }
    if memo is not None and (ds.name == "triviaqa" or reuse_from is not None) and not result.cache_hit:
        source = f"the {ds.name} graph under {reuse_from}" if reuse_from is not None else "the five dev builds"
        row["embedding_memo"] = {"hits": memo.hits, "misses": memo.misses,
                                 "note": f"sentence (and entity-name) vectors reused from {source}; "
                                         "build_seconds is not a from-scratch time"}
    return row


def _run(cmd: list[str], timeout: float = 600) -> tuple[int, str, str, float]:
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.perf_counter() - t0
    except subprocess.TimeoutExpired as exc:
        return 124, exc.stdout or "", f"timeout after {timeout}s", time.perf_counter() - t0


def cli_checks(ds: DevSet, root: Path, preset: str = "paper") -> dict[str, Any]:
    """`harness-g stats`, one `cypher`, one `ask` on the graph; each pass/fail with a short reason."""
    from harness_g.graph.artifact import Artifact

    g = str(graph_dir(root, ds.name))
    exe = [sys.executable, "-m", "harness_g"]
    out: dict[str, Any] = {}
    rc, so, se, s = _run(exe + ["stats", g, "--json"])
    ok, why = rc == 0, ""
    if ok:
        try:
            st = json.loads(so)
            n_sent = st["store"]["nodes"]["Sentence"]
            ok = n_sent == st["manifest"]["counts"]["sentences"] and st["store"]["complete"]
            why = f"Sentence nodes {n_sent}, complete={st['store']['complete']}"
        except Exception as exc:  # noqa: BLE001
            ok, why = False, f"bad JSON: {exc}"
    out["stats"] = {"pass": ok, "rc": rc, "seconds": round(s, 2), "detail": why or se.strip().splitlines()[-1:]}

    query = ("MATCH (s:Sentence)-[:MENTIONS]->(e:Entity {lookupable: true}) "
             "RETURN e.surface AS entity, count(s) AS sentences ORDER BY sentences DESC, entity LIMIT 3")
    rc, so, se, s = _run(exe + ["cypher", g, query, "--json"])
    ok, why = rc == 0, ""
    if ok:
        try:
            rows = json.loads(so)
            ok = len(rows) == 3
            why = "top entities: " + ", ".join(f"{r['entity']} ({r['sentences']})" for r in rows)
        except Exception as exc:  # noqa: BLE001
            ok, why = False, f"bad JSON: {exc}"
    out["cypher"] = {"pass": ok, "rc": rc, "seconds": round(s, 2), "query": query, "detail": why or se.strip().splitlines()[-1:]}

    item = questions_of(Artifact.open(g), ds.name)[0]
    cmd = exe + ["ask", g, item.question, "--json", "--preset", preset] + [x for a in item.answers[:5] for x in ("--answer", a)]
    rc, so, se, s = _run(cmd)
    ok, why = rc == 0, ""
    if ok:
        try:
            traj = json.loads(so)
            ok = bool(traj.get("steps")) and traj.get("terminated_by") is not None
            why = (f"q={item.question[:60]!r} answer={traj.get('answer')!r} gold={item.answers[:1]} "
                   f"turns={len(traj.get('steps', []))} ended_by={traj.get('terminated_by')}")
        except Exception as exc:  # noqa: BLE001
            ok, why = False, f"bad JSON: {exc}"
    out["ask"] = {"pass": ok, "rc": rc, "seconds": round(s, 2), "detail": why or se.strip().splitlines()[-3:]}
    return out


def write_report(rows: list[dict[str, Any]], meta: dict[str, Any], stem: str = "dev_graphs") -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.json").write_text(json.dumps({"meta": meta, "graphs": rows}, indent=2, default=str) + "\n", encoding="utf-8")
    cols = ["dataset", "questions", "paragraphs", "sentences", "entities", "lookup-able", "synonym links", "gold", "build s",
            "load s", "stats", "cypher", "ask"]
    lines = ["# Dev graphs", "",
             f"Root `{meta['root']}`; generated {meta['finished']} on {meta['machine'].get('cores', meta['machine'].get('cpus'))} CPUs "
             f"(load average at start {meta['machine'].get('load_avg', meta['machine'].get('loadavg'))}, at end {meta['loadavg_end']}; the machine is shared, "
             "so seconds are indicative). Built with the Python API (`build_graph` + `load_graph`, embedded FalkorDB); "
             f"BuildConfig preset {meta.get('preset', 'extended (before presets)')}"
             + "".join(f", {k} = {v}" for k, v in (meta.get("set") or {}).items())
             + " (all-MiniLM-L6-v2, en_core_web_sm).", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        c = r.get("cli", {})
        pf = lambda k: ("pass" if c.get(k, {}).get("pass") else "FAIL") if c else "-"  # noqa: E731
        lines.append("| " + " | ".join(str(x) for x in [
            r["dataset"], r["questions"], r["paragraphs"], r["sentences"], r["entities"], r["lookupable_entities"],
            r["synonym_links"], r["gold"], f"{r['build_seconds']:.1f}" + ("*" if "embedding_memo" in r else ""),
            f"{sum(r['load_seconds'].values()):.1f}" if not r["load_skipped"] else "loaded", pf("stats"), pf("cypher"), pf("ask")]) + " |")
    lines += ["",
              "*build s*: the manifest's build seconds (read+split+NER/embed wall+entities+link+write) of the build that made the "
              "artifact (a cache hit reports the original build). *load s*: FalkorDB load of this run (`loaded` = already "
              "loaded, no-op). *questions*: the dataset's own questions (the TriviaQA graph also stores the corpora's 800 "
              "questions; they are ignored).", ""]
    for r in rows:
        if "embedding_memo" in r:
            m = r["embedding_memo"]
            lines.append(f"\\* {r['dataset']}: sentence vectors reused from the five dev artifacts (memo hits {m['hits']}, "
                         f"misses {m['misses']}): not a from-scratch build time.")
    tq = next((r for r in rows if r["dataset"] == "triviaqa"), None)
    if tq:
        lines += ["", "TriviaQA has no passages: its graph = its 200 questions over the union of the other five dev corpora "
                  f"({tq['paragraphs']} paragraphs after de-duplication). Its gold evidence is unknown, so evidence recall is n/a; "
                  "answer-in-evidence is still meaningful."]
    lines += ["", "## Build stages (seconds, from the manifest)", "",
              "| dataset | read | split | ner | embed | ner+embed wall | entities | link | write | corpus tokens |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["build_stage_seconds"] or {}
        lines.append(f"| {r['dataset']} | " + " | ".join(f"{s.get(k, 0):.1f}" for k in ("read", "split", "ner", "embed", "ner_embed_wall", "entities", "link", "write"))
                     + f" | {r['corpus_tokens']} |")
    lines += ["", "## CLI checks", "", "| dataset | command | result | seconds | detail |", "|---|---|---|---|---|"]
    for r in rows:
        for k, v in r.get("cli", {}).items():
            det = v["detail"] if isinstance(v["detail"], str) else " ".join(map(str, v["detail"]))
            lines.append(f"| {r['dataset']} | {k} | {'pass' if v['pass'] else 'FAIL (rc ' + str(v['rc']) + ')'} | {v['seconds']} | "
                         f"{det.replace('|', '/')[:160]} |")
    if meta.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in meta["notes"]]
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default="/tmp/hg-dev", type=Path)
    ap.add_argument("--only", help="comma-separated dataset names (default: all six)")
    ap.add_argument("--force", action="store_true", help="rebuild even when the artifact matches")
    ap.add_argument("--embedding-backend", choices=("torch", "onnx", "onnx-int8"),
                    help="sentence encoder backend (default: the build's default); e.g. onnx-int8 graphs into another "
                         "--root, to measure int8's quality cost with bench_quality.py")
    ap.add_argument("--no-reuse-embeddings", dest="reuse_embeddings", action="store_false")
    ap.add_argument("--reuse-from", type=Path, help="pre-fill the embedding memo from the same datasets' graphs under "
                                                    "this root (e.g. the other preset's); build seconds then not from scratch")
    ap.add_argument("--no-cli", dest="cli", action="store_false", help="skip the stats/cypher/ask checks")
    ap.add_argument("--torch-threads", type=int, default=1,
                    help="torch intra-op threads (default 1: on the shared 2-core box 2 threads embed 3-4x slower)")
    ap.add_argument("--notes-file", help="markdown file, one note per line, appended under Notes")
    ap.add_argument("--report-only", action="store_true", help="rewrite dev_graphs.md from dev_graphs.json (with --notes-file)")
    ap.add_argument("--preset", choices=("paper", "extended"), default="paper",
                    help="build rules (BuildConfig preset; default paper); give each preset its own --root")
    ap.add_argument("--stem", default="dev_graphs", help="results file stem in benchmarks/results (default dev_graphs)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a BuildConfig field, as `harness-g build --set` takes it (repeatable; beats the preset)")
    args = ap.parse_args(argv)
    from harness_g.config_loader import parse_set

    sets = dict(parse_set(text) for text in args.set)
    notes = []
    if args.notes_file:
        notes = [ln.strip().removeprefix("- ") for ln in Path(args.notes_file).read_text(encoding="utf-8").splitlines() if ln.strip()]
    if args.report_only:
        data = json.loads((RESULTS / f"{args.stem}.json").read_text())
        data["meta"]["notes"] = notes or data["meta"].get("notes", [])
        write_report(data["graphs"], data["meta"], args.stem)
        print((RESULTS / f"{args.stem}.md").read_text())
        return 0
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
        os.environ.setdefault("OMP_NUM_THREADS", str(args.torch_threads))  # the CLI subprocesses too
    names = args.only.split(",") if args.only else [d.name for d in DEV_SETS]
    meta = {"root": str(args.root), "machine": machine_info(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "reuse_embeddings": args.reuse_embeddings, "force": args.force, "torch_threads": args.torch_threads, "notes": notes,
            "preset": args.preset, "set": sets}
    rows = []
    prev = {}
    if (RESULTS / f"{args.stem}.json").exists() and args.only:
        try:
            prev = {r["dataset"]: r for r in json.loads((RESULTS / f"{args.stem}.json").read_text())["graphs"]}
        except Exception:  # noqa: BLE001
            prev = {}
    for name in [d.name for d in DEV_SETS]:
        if name not in names:
            if name in prev:
                rows.append(prev[name])
            continue
        ds = BY_NAME[name]
        print(f"[{time.strftime('%H:%M:%S')}] build {name} (load {load_avg()})", flush=True)
        row = build_one(ds, args.root, force=args.force, reuse_embeddings=args.reuse_embeddings,
                        backend=args.embedding_backend, preset=args.preset, reuse_from=args.reuse_from, sets=sets)
        print(f"   {'cache hit' if row['cache_hit'] else 'built'}: {row['sentences']} sentences, {row['entities']} entities, "
              f"build {row['build_seconds']}s (wall this run {row['build_wall_this_run_s']}s), load {row['load_wall_this_run_s']}s", flush=True)
        if args.cli:
            row["cli"] = cli_checks(ds, args.root, args.preset)
            print("   cli: " + ", ".join(f"{k} {'pass' if v['pass'] else 'FAIL'}" for k, v in row["cli"].items()), flush=True)
        rows.append(row)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    meta["loadavg_end"] = load_avg()
    write_report(rows, meta, args.stem)
    print((RESULTS / f"{args.stem}.md").read_text())
    return 0 if all(all(v["pass"] for v in r.get("cli", {}).values()) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
