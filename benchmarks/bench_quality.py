"""Menu quality on the six dev sets: reachability, heuristic policy, and a dense top-k baseline.

    python benchmarks/bench_quality.py [--root /tmp/hg-dev] [--datasets ...] [--limit N] [--reach-budget 400]

Per dev graph (from benchmarks/build_dev_graphs.py) and its own questions (all, or the first
``--limit``), with the default EnvConfig (T = 6, K_s = 6, K_e = 8):

* menu reachability (``menu_reachability``): reachable / unreachable / unknown (search budget hit)
  counts, reachable rate over decided questions, mean min_turns of reachable ones, and the fraction
  of gold units already visible in U_0;
* the LLM-free heuristic policy (``run_episode`` + ``score_trajectory``): evidence recall and
  precision of C_T, EM/F1 of its extractive answer, answer-in-evidence, mean turns, mean commits;
* dense top-k sentence retrieval at the SAME evidence budget: k = the number of sentences the
  heuristic committed for that question (per question; k = 0 retrieves nothing), and also a fixed
  k = round(mean committed over the dataset). Question embedding (the same MiniLM encoder) against
  every sentence embedding of the graph, exact cosine, duplicate texts merged (as the menu does).

TriviaQA: no gold evidence (its graph is the union of the other five corpora) -> reachability and
evidence recall/precision are n/a; EM/F1 and answer-in-evidence are reported.
Writes benchmarks/results/quality.{json,md} (per-question records inside quality.json with ``--records``).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_env import FixedEntitiesStore, verify_fixed_query  # noqa: E402
from build_dev_graphs import DEV_SETS, graph_dir, load_avg, machine_info, questions_of  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(sum(xs) / len(xs)) if xs else None


def r100(x: float | None, nd: int = 1) -> float | None:
    return None if x is None else round(100 * x, nd)


def dense_top_k(view, q_vec: np.ndarray, k: int) -> list[str]:
    """Top-k sentence ids by cosine to the question (ties by row), duplicate texts merged (first kept)."""
    from harness_g.agent.menu import text_key

    if k <= 0:
        return []
    n = min(len(view.sentence_ids), 4 * k + 8)
    sims = view.embeddings @ q_vec
    top = np.argpartition(-sims, n - 1)[:n] if n < len(sims) else np.arange(len(sims))
    top = top[np.lexsort((top, -sims[top]))]
    ranked = [view.sentence_ids[i] for i in top]
    infos = view.sentences(ranked)
    out, seen = [], set()
    for sid in ranked:
        info = infos.get(sid)
        if info is None or text_key(info.text) in seen:
            continue
        seen.add(text_key(info.text))
        out.append(sid)
        if len(out) == k:
            break
    return out


def score_ids(view, item, ids: list[str]) -> dict[str, Any]:
    from harness_g.agent import metrics as M

    units = M.gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)
    infos = view.sentences(ids)
    texts = [infos[s].text for s in ids if s in infos]
    return {"recall": M.evidence_recall(units, ids), "precision": M.evidence_precision(units, ids),
            "aie": float(M.answer_in_evidence(list(item.answers), texts)) if item.answers else None}


def eval_dataset(name: str, root: Path, *, limit: int | None, reach_budget: int, keep_records: bool,
                 fixed_query: bool = True) -> dict[str, Any]:
    from harness_g.agent.config import EnvConfig
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.evaluate import score_trajectory
    from harness_g.agent.policies import make_policy
    from harness_g.agent.reachability import menu_reachability
    from harness_g.agent.runner import run_episode
    from harness_g.agent.session import open_graph

    gdir = graph_dir(root, name)
    cfg = EnvConfig()
    t_start = time.perf_counter()
    records: list[dict[str, Any]] = []
    with open_graph(gdir) as view:
        fix_check = None
        if fixed_query:  # same rows as the shipped query (checked), ~20-60x faster on FalkorDB: see bench_env
            fix_check = verify_fixed_query(view.store, view.artifact)
            assert fix_check["identical"] == fix_check["batches"], fix_check
            view.store = FixedEntitiesStore(view.store, verify=20)
        items = questions_of(view, name)
        n_all = len(items)
        if limit:
            items = items[:limit]
        policy = make_policy("heuristic")
        env = MenuEnv(view, cfg)
        t_reach = t_pol = t_dense = 0.0
        for item in items:
            rec: dict[str, Any] = {"id": item.id, "gold_units": len(item.gold_sentence_ids or item.gold_paragraph_ids)}
            t0 = time.perf_counter()
            traj = run_episode(env, policy, item)
            m = score_trajectory(view, item, traj)
            t_pol += time.perf_counter() - t0
            rec.update({"em": m["em"], "f1": m["f1"], "recall": m["evidence_recall"], "precision": m["evidence_precision"],
                        "aie": m["answer_in_evidence"], "turns": m["turns"], "committed": len(traj.committed),
                        "terminated_by": traj.terminated_by, "prediction": traj.answer,
                        "actions": [s.action_type for s in traj.steps]})
            t0 = time.perf_counter()
            if rec["gold_units"]:
                r = menu_reachability(view, item, cfg, budget=reach_budget)
                rec["reach"] = asdict(r)
            t_reach += time.perf_counter() - t0
            t0 = time.perf_counter()
            rec["_q_vec"] = view.encode([item.question])[0]
            rec["dense_same_k"] = score_ids(view, item, dense_top_k(view, rec["_q_vec"], len(traj.committed)))
            t_dense += time.perf_counter() - t0
            records.append(rec)
        k_fixed = max(1, round(mean(r["committed"] for r in records) or 1))
        t0 = time.perf_counter()
        for item, rec in zip(items, records):
            rec["dense_fixed_k"] = score_ids(view, item, dense_top_k(view, rec.pop("_q_vec"), k_fixed))
        t_dense += time.perf_counter() - t0
        cache = view.cache_stats()

    has_gold = any(r["gold_units"] for r in records)
    reach = [r["reach"] for r in records if "reach" in r]
    status = {s: sum(1 for x in reach if x["status"] == s) for s in ("reachable", "unreachable", "unknown")}
    decided = status["reachable"] + status["unreachable"]
    init_frac = mean(x["initially_visible"] / x["gold_units"] for x in reach if x["gold_units"])
    by_units: dict[int, dict[str, int]] = {}
    for x in reach:
        d = by_units.setdefault(x["gold_units"], {"n": 0, "reachable": 0})
        d["n"] += 1
        d["reachable"] += x["status"] == "reachable"
    # which gold units the heuristic found among reachable / unreachable questions
    rec_reach = mean(r["recall"] for r in records if r.get("reach", {}).get("status") == "reachable")
    rec_unreach = mean(r["recall"] for r in records if r.get("reach", {}).get("status") == "unreachable")
    action_mix: dict[str, int] = {}
    for r in records:
        for a in r["actions"]:
            action_mix[a or "INVALID"] = action_mix.get(a or "INVALID", 0) + 1
    summary = {
        "dataset": name,
        "questions": len(records),
        "questions_available": n_all,
        "gold": "none (unknown)" if not has_gold else ("sentence" if any(q.gold_sentence_ids for q in items) else "paragraph"),
        "reachability": None if not reach else {
            **status, "no_gold": len(records) - len(reach),
            "reachable_rate": r100(status["reachable"] / decided) if decided else None,
            "reachable_rate_all": r100(status["reachable"] / len(reach)),
            "mean_min_turns": round(mean(x["min_turns"] for x in reach if x["status"] == "reachable") or 0, 2),
            "gold_units_in_U0": r100(init_frac),
            "all_gold_in_U0": r100(mean(float(x["initially_visible"] == x["gold_units"]) for x in reach)),
            "mean_expansions": round(mean(x["expansions"] for x in reach) or 0, 1),
            "by_gold_units": {str(k): v for k, v in sorted(by_units.items())},
        },
        "heuristic": {
            "evidence_recall": r100(mean(r["recall"] for r in records)),
            "evidence_precision": r100(mean(r["precision"] for r in records)),
            "em": r100(mean(r["em"] for r in records)), "f1": r100(mean(r["f1"] for r in records)),
            "answer_in_evidence": r100(mean(r["aie"] for r in records)),
            "mean_turns": round(mean(r["turns"] for r in records) or 0, 2),
            "mean_committed": round(mean(r["committed"] for r in records) or 0, 2),
            "zero_commit_questions": sum(1 for r in records if r["committed"] == 0),
            "recall_when_reachable": r100(rec_reach), "recall_when_unreachable": r100(rec_unreach),
            "action_mix": action_mix,
        },
        "dense_same_k": {
            "k": "per question = heuristic's committed count",
            "evidence_recall": r100(mean(r["dense_same_k"]["recall"] for r in records)),
            "evidence_precision": r100(mean(r["dense_same_k"]["precision"] for r in records)),
            "answer_in_evidence": r100(mean(r["dense_same_k"]["aie"] for r in records)),
        },
        "dense_fixed_k": {
            "k": k_fixed,
            "evidence_recall": r100(mean(r["dense_fixed_k"]["recall"] for r in records)),
            "evidence_precision": r100(mean(r["dense_fixed_k"]["precision"] for r in records)),
            "answer_in_evidence": r100(mean(r["dense_fixed_k"]["aie"] for r in records)),
        },
        "seconds": {"policy": round(t_pol, 1), "reachability": round(t_reach, 1), "dense": round(t_dense, 1),
                    "total": round(time.perf_counter() - t_start, 1)},
        "cache": cache,
        "index_first_entities_query": fix_check,
        "loadavg_end": load_avg(),
    }
    if keep_records:
        summary["records"] = records
    return summary


def fmt(x, nd=1) -> str:
    return "n/a" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def table_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    cols = ["dataset", "n", "reach/unreach/unk", "reach %", "min turns", "gold in U0 %", "heur R", "heur P", "EM", "F1",
            "AiE", "turns", "commits", "dense@same-k R", "dense@same-k AiE", "dense@k R", "dense@k AiE", "k"]
    rows = []
    for r in results:
        re, h, d, f = r["reachability"], r["heuristic"], r["dense_same_k"], r["dense_fixed_k"]
        rows.append([r["dataset"], str(r["questions"]),
                     "n/a" if re is None else f"{re['reachable']}/{re['unreachable']}/{re['unknown']}",
                     "n/a" if re is None else fmt(re["reachable_rate"]), "n/a" if re is None else fmt(re["mean_min_turns"], 2),
                     "n/a" if re is None else fmt(re["gold_units_in_U0"]),
                     fmt(h["evidence_recall"]), fmt(h["evidence_precision"]), fmt(h["em"]), fmt(h["f1"]), fmt(h["answer_in_evidence"]),
                     fmt(h["mean_turns"], 2), fmt(h["mean_committed"], 2),
                     fmt(d["evidence_recall"]), fmt(d["answer_in_evidence"]), fmt(f["evidence_recall"]), fmt(f["answer_in_evidence"]),
                     str(f["k"])])
    return cols, rows


def _merged_chain(meta: dict[str, Any]) -> list[dict[str, Any]]:
    out, m = [], meta.get("merged_from")
    while m:
        out.append(m)
        m = m.get("merged_from")
    return out


def write_report(results: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "quality.json").write_text(json.dumps({"meta": meta, "datasets": results}, indent=2, default=float) + "\n", encoding="utf-8")
    cols, rows = table_rows(results)
    L = ["# Menu quality on the six dev sets", "",
         f"Generated {meta['finished']} ({meta['machine']['cpus']} shared CPUs, load average at start {meta['machine']['loadavg']}, "
         f"at end {meta['loadavg_end']}). Default EnvConfig (T = 6, K_s = 6, K_e = 8); heuristic policy (max 2 commits, "
         f"extractive answer); reachability search budget {meta['reach_budget']} menu expansions/question. "
         + "Questions evaluated (first n of the dev file): " + ", ".join(
             f"{r['dataset']} {r['questions']}/{r['questions_available']}" for r in results)
         + (" (**limited with --limit**). " if any(r["questions"] < r["questions_available"] for r in results) else ". ")
         + "All values ×100 except counts, turns and k."
         + "".join(f" Earlier merged run: started {m.get('started')}, load average at start {m['machine']['loadavg']}, at end "
                   f"{m.get('loadavg_end')}." for m in _merged_chain(meta))
         + (" Store access used the index-first `entities_of_sentences` variant (identical rows, checked; speed only - see env.md)."
            if meta.get("index_first_entities_query") else ""), "",
         "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    L += ["| " + " | ".join(r) + " |" for r in rows]
    L += ["",
          "Columns: *reach/unreach/unk* = menu reachability verdicts (unk = search budget hit); *reach %* = reachable / "
          "(reachable + unreachable); *min turns* = mean fewest turns to commit all gold units (reachable questions); "
          "*gold in U0 %* = mean fraction of gold units with a sentence in the initial visible set U_0; *heur R/P* = the "
          "heuristic's evidence recall/precision of C_T; *AiE* = answer-in-evidence (a gold alias occurs in the committed "
          "text); *dense@same-k* = dense top-k sentences (question embedding, exact cosine over all sentences of the graph, "
          "duplicate texts merged) with k = the number of sentences the heuristic committed for that question; *dense@k* = "
          "the same with a fixed k = round(mean commits) (last column). Evidence units: gold sentences (HotpotQA, 2Wiki), "
          "gold paragraphs (MuSiQue, NQ, PopQA; any committed sentence of the paragraph satisfies it). TriviaQA: gold "
          "evidence unknown, recall/precision/reachability n/a.", ""]
    L += ["## Reachability by number of gold units", "", "| dataset | units: n (reachable) |", "|---|---|"]
    for r in results:
        if r["reachability"]:
            L.append(f"| {r['dataset']} | " + ", ".join(f"{k}: {v['n']} ({v['reachable']})" for k, v in r["reachability"]["by_gold_units"].items())
                     + " |")
    L += ["", "## Heuristic recall split by reachability; action mix; time", "",
          "| dataset | recall (reachable q) | recall (unreachable q) | all gold in U0 % | zero-commit q | action mix | seconds policy/reach/dense |",
          "|---|---|---|---|---|---|---|"]
    for r in results:
        h, re, s = r["heuristic"], r["reachability"], r["seconds"]
        L.append(f"| {r['dataset']} | {fmt(h['recall_when_reachable'])} | {fmt(h['recall_when_unreachable'])} | "
                 f"{'n/a' if re is None else fmt(re['all_gold_in_U0'])} | {h['zero_commit_questions']} | "
                 f"{', '.join(f'{k} {v}' for k, v in sorted(h['action_mix'].items()))} | {s['policy']}/{s['reachability']}/{s['dense']} |")
    if meta.get("discussion"):
        L += ["", "## What the numbers show", ""] + meta["discussion"]
    (RESULTS / "quality.md").write_text("\n".join(L) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default="/tmp/hg-dev", type=Path)
    ap.add_argument("--datasets", default=",".join(d.name for d in DEV_SETS))
    ap.add_argument("--limit", type=int, help="first N questions per dataset")
    ap.add_argument("--reach-budget", type=int, default=400)
    ap.add_argument("--records", action="store_true", help="keep per-question records in quality.json")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--discussion", help="markdown file whose paragraphs are appended under 'What the numbers show'")
    ap.add_argument("--merge", action="store_true", help="keep other datasets' rows from an existing quality.json")
    ap.add_argument("--shipped-entities-query", dest="fixed_query", action="store_false",
                    help="use the shipped entities_of_sentences Cypher (slow label scan) instead of the verified index-first variant")
    ap.add_argument("--report-only", action="store_true", help="rewrite quality.md from quality.json (e.g. with --discussion)")
    args = ap.parse_args(argv)
    if args.report_only:
        data = json.loads((RESULTS / "quality.json").read_text())
        meta = data["meta"]
        if args.discussion:
            meta["discussion"] = Path(args.discussion).read_text(encoding="utf-8").strip().split("\n")
        write_report(data["datasets"], meta)
        print((RESULTS / "quality.md").read_text())
        return 0
    if args.torch_threads:
        import torch
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(args.torch_threads)
        threadpool_limits(args.torch_threads)
    meta = {"machine": machine_info(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "limit": args.limit,
            "reach_budget": args.reach_budget, "torch_threads": args.torch_threads, "index_first_entities_query": args.fixed_query}
    if args.discussion:
        meta["discussion"] = Path(args.discussion).read_text(encoding="utf-8").strip().split("\n")
    names = args.datasets.split(",")
    prev: dict[str, Any] = {}
    if args.merge and (RESULTS / "quality.json").exists():
        old = json.loads((RESULTS / "quality.json").read_text())
        prev = {d["dataset"]: d for d in old["datasets"]}
        meta["merged_from"] = old["meta"]
    results = []
    for d in DEV_SETS:
        if d.name not in names:
            if d.name in prev:
                results.append(prev[d.name])
            continue
        print(f"[{time.strftime('%H:%M:%S')}] {d.name} (load {load_avg()})", flush=True)
        res = eval_dataset(d.name, args.root, limit=args.limit, reach_budget=args.reach_budget, keep_records=args.records,
                           fixed_query=args.fixed_query)
        print(f"   {res['questions']} q in {res['seconds']}", flush=True)
        results.append(res)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    meta["loadavg_end"] = load_avg()
    write_report(results, meta)
    cols, rows = table_rows(results)
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
