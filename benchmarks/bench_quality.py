"""Menu quality on the six dev sets: reachability, the LLM-free and oracle policies, and a dense top-k baseline.

    python benchmarks/bench_quality.py [--root /tmp/hg-dev] [--datasets ...] [--limit N] [--reach-budget 400]
        [--policies heuristic,lookahead,oracle] [--preset paper|extended] [--answer-with-max K]
        [--env-set KEY=VALUE ...] [--out DIR]
    python benchmarks/bench_quality.py --compare PAPER/quality.json EXTENDED/quality.json --out DIR
    python benchmarks/bench_quality.py --reach-only [--merge] [--before OLD/quality.json --before-note "..."]

Per dev graph (from benchmarks/build_dev_graphs.py) and its own questions (all, or the first
``--limit``), with the default EnvConfig (T = 6, K_s = 6, K_e = 8):

* menu reachability (``menu_reachability``): reachable / unreachable / unknown (search budget hit)
  counts, reachable rate over decided questions, mean min_turns of reachable ones, the fraction
  of gold units already visible in U_0, and the cause of every non-reachable question (gold_absent,
  no_entity_path, pool_or_rank_cap, turn_budget, search_budget: a per-dataset table, printed and in
  quality.md; ``--before`` adds an earlier run's rows for comparison);
* policies (``--policies``, default heuristic, lookahead, oracle; ``run_episode`` + ``score_trajectory``):
  evidence recall and precision of C_T, EM/F1 of the extractive answer, answer-in-evidence, mean turns, mean
  commits. *heuristic* is the fixed SELECT -> LOOKUP -> ANSWER_WITH script; *lookahead* the LLM-free baseline
  that previews LOOKUPs (agent/policies/lookahead.py); *oracle* is PRIVILEGED (plans from the gold labels) and
  only an upper reference -- skipped where ``make_policy("oracle")`` does not exist;
* dense top-k sentence retrieval at the SAME evidence budget, per policy: k = the number of sentences that
  policy committed for that question (per question; k = 0 retrieves nothing), and the delta = the policy's
  recall - that dense@same-k recall; also a fixed k = round(mean heuristic commits over the dataset). Question
  embedding (the same MiniLM encoder) against every sentence embedding of the graph, exact cosine, duplicate
  texts merged (as the menu does).

Every run uses ``EnvConfig`` of ``--preset`` (paper by default; the graphs under ``--root`` must be built under the
same preset, build_dev_graphs.py ``--preset``) with ``--answer-with-max`` (default: the preset's k, 1 in paper, 2 in
extended): menus offer ANSWER_WITH over 1..k visible sentences, and reachability assumes the same k.
``--compare`` writes ``quality.{json,md}`` into ``--out``: reachability, lookahead and oracle recall of two runs
side by side per dev set (the paper preset's run first).

TriviaQA: no gold evidence (its graph is the union of the other five corpora) -> reachability and
evidence recall/precision are n/a; EM/F1 and answer-in-evidence are reported.
``--reach-only`` runs only the reachability part, on every question (``--limit`` to cut); with ``--merge``
the heuristic/dense figures of the existing quality.json stay beside it, each table saying how many
questions its figures rest on.
Writes benchmarks/results/quality.{json,md} (per-question records inside quality.json with ``--records``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEV_SETS, env_config, graph_dir, load_avg, machine_info, questions_of  # noqa: E402

if TYPE_CHECKING:
    from harness_g.agent.env.config import EnvConfig

RESULTS = Path(__file__).resolve().parent / "results"


def mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(sum(xs) / len(xs)) if xs else None


def r100(x: float | None, nd: int = 1) -> float | None:
    return None if x is None else round(100 * x, nd)


def dense_top_k(view, q_vec: np.ndarray, k: int) -> list[str]:
    """Top-k sentence ids by cosine to the question (ties by row), duplicate texts merged (first kept)."""
    from harness_g.agent.env.menu import text_key

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
    from harness_g.agent.eval import metrics as M

    units = M.gold_units(item.gold_sentence_ids, item.gold_paragraph_ids)
    infos = view.sentences(ids)
    texts = [infos[s].text for s in ids if s in infos]
    return {"recall": M.evidence_recall(units, ids), "precision": M.evidence_precision(units, ids),
            "aie": float(M.answer_in_evidence(list(item.answers), texts)) if item.answers else None}


def reach_summary(reach: list[dict[str, Any]], n_questions: int) -> dict[str, Any] | None:
    """Reachability verdicts, rates and the cause of every non-reachable question (``menu_reachability``)."""
    from harness_g.agent.eval.reachability import CAUSES

    if not reach:
        return None
    status = {s: sum(1 for x in reach if x["status"] == s) for s in ("reachable", "unreachable", "unknown")}
    decided = status["reachable"] + status["unreachable"]
    by_units: dict[int, dict[str, int]] = {}
    for x in reach:
        d = by_units.setdefault(x["gold_units"], {"n": 0, "reachable": 0})
        d["n"] += 1
        d["reachable"] += x["status"] == "reachable"
    missed = [x for x in reach if x["status"] in ("unreachable", "unknown")]
    details: dict[str, int] = {}
    for x in missed:
        key = f"{x.get('cause')}/{x.get('detail')}" if x.get("detail") else str(x.get("cause"))
        details[key] = details.get(key, 0) + 1
    return {
        **status, "no_gold": n_questions - len(reach), "questions": len(reach),
        "reachable_rate": r100(status["reachable"] / decided) if decided else None,
        "reachable_rate_all": r100(status["reachable"] / len(reach)),
        "mean_min_turns": round(mean(x["min_turns"] for x in reach if x["status"] == "reachable") or 0, 2),
        "gold_units_in_U0": r100(mean(x["initially_visible"] / x["gold_units"] for x in reach if x["gold_units"])),
        "all_gold_in_U0": r100(mean(float(x["initially_visible"] == x["gold_units"]) for x in reach)),
        "mean_expansions": round(mean(x["expansions"] for x in reach) or 0, 1),
        "by_gold_units": {str(k): v for k, v in sorted(by_units.items())},
        "causes": {c: sum(1 for x in missed if x.get("cause") == c) for c in CAUSES},
        "cause_details": dict(sorted(details.items())),
    }


def eval_reach_only(name: str, root: Path, *, limit: int | None, reach_budget: int, keep_records: bool,
                    cfg: EnvConfig | None = None) -> dict[str, Any]:
    """Reachability (verdict + cause) of every question, without the policy and dense runs; ``cfg``: the
    environment (None: EnvConfig's defaults)."""
    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.session import open_view
    from harness_g.agent.eval.reachability import menu_reachability

    cfg = cfg or EnvConfig()
    t_start = time.perf_counter()
    records: list[dict[str, Any]] = []
    with open_view(graph_dir(root, name)) as view:
        items, n_all = _dataset_questions(view, name, limit)
        for item in items:
            rec: dict[str, Any] = {"id": item.id, "gold_units": len(item.gold_sentence_ids or item.gold_paragraph_ids)}
            if rec["gold_units"]:
                t0 = time.perf_counter()
                rec["reach"] = asdict(menu_reachability(view, item, cfg, budget=reach_budget))
                rec["reach"]["seconds"] = round(time.perf_counter() - t0, 3)
            records.append(rec)
        graph_hash = view.version
    reach = [r["reach"] for r in records if "reach" in r]
    summary = {"dataset": name, "questions": len(records), "questions_available": n_all, "graph": graph_hash,
               "answer_with_max": cfg.answer_with_max,
               "reachability": reach_summary(reach, len(records)), "heuristic": None, "dense_same_k": None, "dense_fixed_k": None,
               "seconds": {"reachability": round(time.perf_counter() - t_start, 1)},
               "loadavg_end": load_avg()}
    if keep_records:
        summary["records"] = records
    return summary


def _dataset_questions(view: Any, name: str, limit: int | None) -> tuple[list, int]:
    """(the first ``limit`` questions of dataset ``name`` in the graph, how many it has)."""
    items = questions_of(view, name)
    return (items[:limit] if limit else items), len(items)


#: the policies run per question by default: the fixed script, the preview-based baseline, and the privileged
#: oracle (an upper reference: it plans from the gold labels; skipped when ``make_policy("oracle")`` is unavailable)
DEFAULT_POLICIES = ("heuristic", "lookahead", "oracle")


def make_bench_policy(name: str, view: Any, cfg: Any, items: list) -> Any | None:
    """``make_policy(name)``; the oracle gets the graph, the environment config and the gold-labelled questions.
    None when the policy is not available in this checkout (e.g. no oracle yet) or, for the oracle, when the dataset
    has no gold evidence labels."""
    from harness_g.agent.policies import POLICIES, make_policy

    if name not in POLICIES:
        return None
    if name == "oracle":
        if not any(it.gold_sentence_ids or it.gold_paragraph_ids for it in items):
            return None  # no gold labels (TriviaQA): nothing to plan from
        return make_policy("oracle", view=view, env_config=cfg, questions=items)
    return make_policy(name)


def run_policy(view: Any, env: Any, policy: Any, items: list) -> list[dict[str, Any]]:
    """One episode per question: scores of C_T and of dense top-k with k = this policy's commits for that question
    (its dense@same-k), and the trajectory's shape."""
    from harness_g.agent.eval.run import score_trajectory
    from harness_g.agent.eval.runner import run_episode

    out = []
    for item in items:
        t0 = time.perf_counter()
        traj = run_episode(env, policy, item)
        m = score_trajectory(view, item, traj)
        seconds = time.perf_counter() - t0
        dense = score_ids(view, item, dense_top_k(view, view.encode([item.question])[0], len(traj.committed)))
        out.append({"em": m["em"], "f1": m["f1"], "recall": m["evidence_recall"], "precision": m["evidence_precision"],
                    "aie": m["answer_in_evidence"], "turns": m["turns"], "committed": len(traj.committed),
                    "terminated_by": traj.terminated_by, "prediction": traj.answer,
                    "actions": [st.action_type for st in traj.steps], "dense_same_k": dense, "seconds": round(seconds, 3)})
    return out


def policy_summary(records: list[dict[str, Any]], reach: list[dict[str, Any] | None]) -> dict[str, Any]:
    """Aggregates of one policy's records (``reach``: each question's reachability or None, same order); the
    delta is the policy's evidence recall minus its dense@same-k recall, in points."""
    action_mix: dict[str, int] = {}
    for r in records:
        for a in r["actions"]:
            action_mix[a or "INVALID"] = action_mix.get(a or "INVALID", 0) + 1
    recall, dense = r100(mean(r["recall"] for r in records)), r100(mean(r["dense_same_k"]["recall"] for r in records))
    by_status = lambda s: r100(mean(r["recall"] for r, x in zip(records, reach) if x and x["status"] == s))  # noqa: E731
    return {
        "questions": len(records),
        "evidence_recall": recall, "evidence_precision": r100(mean(r["precision"] for r in records)),
        "em": r100(mean(r["em"] for r in records)), "f1": r100(mean(r["f1"] for r in records)),
        "answer_in_evidence": r100(mean(r["aie"] for r in records)),
        "mean_turns": round(mean(r["turns"] for r in records) or 0, 2),
        "mean_committed": round(mean(r["committed"] for r in records) or 0, 2),
        "zero_commit_questions": sum(1 for r in records if r["committed"] == 0),
        "recall_when_reachable": by_status("reachable"), "recall_when_unreachable": by_status("unreachable"),
        "action_mix": action_mix,
        "dense_same_k": {
            "k": "per question = this policy's committed count",
            "evidence_recall": dense,
            "evidence_precision": r100(mean(r["dense_same_k"]["precision"] for r in records)),
            "answer_in_evidence": r100(mean(r["dense_same_k"]["aie"] for r in records)),
        },
        "delta_recall_vs_dense": None if recall is None or dense is None else round(recall - dense, 1),
        "seconds": round(sum(r["seconds"] for r in records), 1),
    }


def eval_dataset(name: str, root: Path, *, limit: int | None, reach_budget: int, keep_records: bool,
                 policies: tuple[str, ...] = DEFAULT_POLICIES,
                 cfg: EnvConfig | None = None) -> dict[str, Any]:
    """Reachability, every policy of ``policies`` (each with its own dense@same-k) and dense at a fixed k, on the
    first ``limit`` questions. The legacy ``heuristic``/``dense_same_k``/``dense_fixed_k`` keys describe the heuristic
    (when it ran); ``policies`` holds every policy's summary."""
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.session import open_view
    from harness_g.agent.eval.reachability import menu_reachability

    cfg = cfg or EnvConfig()
    t_start = time.perf_counter()
    with open_view(graph_dir(root, name)) as view:
        items, n_all = _dataset_questions(view, name, limit)
        env = MenuEnv(view, cfg)
        runs: dict[str, list[dict[str, Any]]] = {}
        for pname in policies:
            policy = make_bench_policy(pname, view, cfg, items)
            if policy is None:
                print(f"   policy {pname!r} is not available here (or needs gold labels): skipped", flush=True)
                continue
            runs[pname] = run_policy(view, env, policy, items)
            print(f"   {pname}: {round(sum(r['seconds'] for r in runs[pname]), 1)} s", flush=True)
        t0 = time.perf_counter()
        reach = [asdict(menu_reachability(view, it, cfg, budget=reach_budget))
                 if (it.gold_sentence_ids or it.gold_paragraph_ids) else None for it in items]
        t_reach = time.perf_counter() - t0
        base = runs.get("heuristic") or next(iter(runs.values()), None)
        k_fixed = max(1, round(mean(r["committed"] for r in base) or 1)) if base else 1
        t0 = time.perf_counter()
        fixed = [score_ids(view, it, dense_top_k(view, view.encode([it.question])[0], k_fixed)) for it in items]
        t_dense = time.perf_counter() - t0
        cache = view.cache_stats()

    summaries = {p: policy_summary(recs, reach) for p, recs in runs.items()}
    has_gold = any(x is not None for x in reach)
    heur = summaries.get("heuristic")
    summary = {
        "dataset": name, "questions": len(items), "questions_available": n_all,
        "gold": "none (unknown)" if not has_gold else ("sentence" if any(q.gold_sentence_ids for q in items) else "paragraph"),
        "answer_with_max": cfg.answer_with_max,
        "reachability": reach_summary([x for x in reach if x is not None], len(items)),
        "heuristic": None if heur is None else {k: v for k, v in heur.items() if k not in ("dense_same_k", "delta_recall_vs_dense")},
        "dense_same_k": None if heur is None else heur["dense_same_k"],
        "dense_fixed_k": {
            "k": k_fixed,
            "evidence_recall": r100(mean(f["recall"] for f in fixed)),
            "evidence_precision": r100(mean(f["precision"] for f in fixed)),
            "answer_in_evidence": r100(mean(f["aie"] for f in fixed)),
        },
        "policies": summaries,
        "seconds": {"policy": round(sum(x["seconds"] for x in summaries.values()), 1), "reachability": round(t_reach, 1),
                    "dense": round(t_dense, 1), "total": round(time.perf_counter() - t_start, 1),
                    **{f"policy_{p}": x["seconds"] for p, x in summaries.items()}},
        "cache": cache, "loadavg_end": load_avg(),
    }
    if keep_records:
        summary["records"] = [{"id": it.id, "gold_units": len(it.gold_sentence_ids or it.gold_paragraph_ids),
                               "reach": x, "dense_fixed_k": f, "policies": {p: recs[i] for p, recs in runs.items()}}
                              for i, (it, x, f) in enumerate(zip(items, reach, fixed))]
    return summary


def fmt(x, nd=1) -> str:
    return "n/a" if x is None else (f"{x:.{nd}f}" if isinstance(x, float) else str(x))


def table_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    cols = ["dataset", "n", "reach n", "reach/unreach/unk", "reach %", "min turns", "gold in U0 %", "heur R", "heur P", "EM", "F1",
            "AiE", "turns", "commits", "dense@same-k R", "dense@same-k AiE", "dense@k R", "dense@k AiE", "k"]
    rows = []
    for r in results:
        re, h, d, f = r["reachability"], r.get("heuristic"), r.get("dense_same_k"), r.get("dense_fixed_k")
        h, d, f = h or {}, d or {}, f or {}
        rows.append([r["dataset"], str(r["questions"]) if h else "n/a", "n/a" if re is None else str(re.get("questions", r["questions"])),
                     "n/a" if re is None else f"{re['reachable']}/{re['unreachable']}/{re['unknown']}",
                     "n/a" if re is None else fmt(re["reachable_rate"]), "n/a" if re is None else fmt(re["mean_min_turns"], 2),
                     "n/a" if re is None else fmt(re["gold_units_in_U0"]),
                     fmt(h.get("evidence_recall")), fmt(h.get("evidence_precision")), fmt(h.get("em")), fmt(h.get("f1")),
                     fmt(h.get("answer_in_evidence")), fmt(h.get("mean_turns"), 2), fmt(h.get("mean_committed"), 2),
                     fmt(d.get("evidence_recall")), fmt(d.get("answer_in_evidence")), fmt(f.get("evidence_recall")),
                     fmt(f.get("answer_in_evidence")), str(f.get("k", "n/a"))])
    return cols, rows


def policy_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """One row per (dataset, policy): its evidence recall against dense top-k at its own per-question budget."""
    cols = ["dataset", "policy", "n", "R", "P", "EM", "F1", "AiE", "turns", "commits", "dense@same-k R", "delta R",
            "dense@same-k AiE", "seconds"]
    rows = []
    for r in results:
        for name, x in (r.get("policies") or {}).items():
            d = x["dense_same_k"]
            delta = x.get("delta_recall_vs_dense")
            rows.append([r["dataset"], name, str(x["questions"]), fmt(x["evidence_recall"]), fmt(x["evidence_precision"]),
                         fmt(x["em"]), fmt(x["f1"]), fmt(x["answer_in_evidence"]), fmt(x["mean_turns"], 2),
                         fmt(x["mean_committed"], 2), fmt(d["evidence_recall"]), "n/a" if delta is None else f"{delta:+.1f}",
                         fmt(d["answer_in_evidence"]), fmt(x.get("seconds"))])
    return cols, rows


def cause_rows(results: list[dict[str, Any]], before: dict[str, Any] | None = None) -> tuple[list[str], list[list[str]]]:
    """Per dataset: reachable count and the cause of every other question (``before``: dataset -> an earlier run's summary)."""
    from harness_g.agent.eval.reachability import CAUSES

    cols = ["dataset", "run", "n", "reachable", "reach % (all)", "reach % (decided)", *CAUSES, "details"]
    rows = []
    for r in results:
        runs = [("before", (before or {}).get(r["dataset"])), ("after" if before else "now", r["reachability"])]
        for label, re in runs:
            if not re:
                continue
            causes = re.get("causes") or {}
            rows.append([r["dataset"], label, str(re.get("questions", r["questions"])), str(re["reachable"]),
                         fmt(re["reachable_rate_all"]), fmt(re["reachable_rate"]), *(str(causes.get(c, "n/a")) for c in CAUSES),
                         ", ".join(f"{k} {v}" for k, v in (re.get("cause_details") or {}).items()) or "-"])
    return cols, rows


def print_table(cols: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths)))
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))


def _merged_chain(meta: dict[str, Any]) -> list[dict[str, Any]]:
    out, m = [], meta.get("merged_from")
    while m:
        out.append(m)
        m = m.get("merged_from")
    return out


def write_report(results: list[dict[str, Any]], meta: dict[str, Any], out: Path = RESULTS) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "quality.json").write_text(json.dumps({"meta": meta, "datasets": results}, indent=2, default=float) + "\n", encoding="utf-8")
    cols, rows = table_rows(results)
    heur_n = ", ".join(f"{r['dataset']} {r['questions']}/{r['questions_available']}" for r in results if r.get("heuristic"))
    reach_n = ", ".join(f"{r['dataset']} {r['reachability'].get('questions', r['questions'])}/{r['questions_available']}"
                        for r in results if r.get("reachability"))
    L = ["# Menu quality on the six dev sets", "",
         f"Generated {meta['finished']} ({meta['machine']['cores']} shared CPUs, load average at start {meta['machine']['load_avg']}, "
         f"at end {meta['loadavg_end']}). EnvConfig preset {meta.get('preset', 'extended (before presets)')} on graphs "
         f"built under the same preset{' (' + meta['root'] + ')' if meta.get('root') else ''} "
         "(T = 6, K_s = 6, K_e = 8, ANSWER_WITH k = "
         f"{meta.get('answer_with_max', 1)}"
         + "".join(f", {k} = {v}" for k, v in (meta.get("env_set") or {}).items() if k != "answer_with_max")
         + f"; every other field its default); policies {', '.join(meta.get('policies') or ['heuristic'])} (the heuristic "
         f"commits at most 2; all answer extractively from C_T); reachability search budget {meta['reach_budget']} menu expansions/question. "
         + "Questions each figure rests on (first n of the dev file / all): reachability: " + reach_n
         + "; heuristic and dense columns: " + (heur_n or "none") + ". "
         + ("The heuristic/dense columns come from an earlier run (reachability-only runs keep them; see `meta.merged_from`), "
            "on the graph and code of that run. " if meta.get("reach_only") else "")
         + "All values ×100 except counts, turns and k."
         + "".join(f" Earlier merged run: started {m.get('started')}, load average at start {m['machine'].get('load_avg', m['machine'].get('loadavg'))}, at end "
                   f"{m.get('loadavg_end')}." for m in _merged_chain(meta)), "",
         "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    L += ["| " + " | ".join(r) + " |" for r in rows]
    pcols, prows = policy_rows(results)
    if prows:
        L += ["", "## Policies against dense retrieval at the same budget", "",
              f"Each policy plays the menu (ANSWER_WITH k = {meta.get('answer_with_max', 'n/a')}); *dense@same-k* = dense top-k "
              "sentences with k = the sentences *that policy* committed for that question; *delta R* = its evidence recall - "
              "its dense@same-k recall (points). *heuristic* = the fixed SELECT -> LOOKUP -> ANSWER_WITH script; "
              "*lookahead* = the LLM-free preview-based baseline (agent/policies/lookahead.py); *oracle* = PRIVILEGED, "
              "plans from the gold evidence labels (an upper reference for the menu, not a baseline). *seconds* = that "
              "policy's episodes (environment included).", "",
              "| " + " | ".join(pcols) + " |", "|" + "---|" * len(pcols)]
        L += ["| " + " | ".join(r) + " |" for r in prows]
    L += ["",
          "Columns: *n* = questions behind the heuristic and dense columns; *reach n* = questions behind the reachability "
          "columns; *reach/unreach/unk* = menu reachability verdicts (unk = search budget hit); *reach %* = reachable / "
          "(reachable + unreachable); *min turns* = mean fewest turns to commit all gold units (reachable questions); "
          "*gold in U0 %* = mean fraction of gold units with a sentence in the initial visible set U_0; *heur R/P* = the "
          "heuristic's evidence recall/precision of C_T; *AiE* = answer-in-evidence (a gold alias occurs in the committed "
          "text); *dense@same-k* = dense top-k sentences (question embedding, exact cosine over all sentences of the graph, "
          "duplicate texts merged) with k = the number of sentences the heuristic committed for that question; *dense@k* = "
          "the same with a fixed k = round(mean commits) (last column). Evidence units: gold sentences (HotpotQA, 2Wiki), "
          "gold paragraphs (MuSiQue, NQ, PopQA; any committed sentence of the paragraph satisfies it). TriviaQA: gold "
          "evidence unknown, recall/precision/reachability n/a.", ""]
    from harness_g.agent.env.gold_search import DETOURS

    ccols, crows = cause_rows(results, meta.get("reach_before"))
    if crows:
        L += ["## Why unreachable (T = 6, K_s = 6, K_e = 8)", "",
              f"A question is reachable when the search (gold commits and LOOKUPs, a visible gold sentence committed now or "
              f"after LOOKUPs that show it again, then also up to {DETOURS} non-gold SELECT, which changes m_t) finds a "
              "trajectory within T. "
              "Every question that is not reachable gets one cause (`agent/env/gold_search.py` defines each exactly): "
              "*gold_absent* = a gold unit no sentence of the graph satisfies; *no_entity_path* = the relaxed closure from U_0 "
              "(every lookup-able entity's full candidate pool, no caps, no turn limit) never reaches a gold unit: no policy "
              "can; *pool_or_rank_cap* = T turns would do without caps, the capped menus do not reach it even with T + 4 "
              "(detail: gold_cut = a gold sentence sat in a LOOKUP candidate's pool but was cut by lookup_pool_cap/K_s/K_e; "
              "upstream = the bridge to it was cut; combination = each unit visible somewhere, never all on one path); "
              "*turn_budget* = reachable only with more than T turns (relaxed = a proof from the uncapped lookup depth, "
              "capped = a trajectory of T+1..T+4 turns exists); *search_budget* = the search hit its expansion budget. "
              "*reach % (all)* counts unknown verdicts as misses."
              + (" *before* = the previous code and graphs (" + str(meta.get("reach_before_note", "")) + "); *after* = this run."
                 if meta.get("reach_before") else ""), "",
              "| " + " | ".join(ccols) + " |", "|" + "---|" * len(ccols)]
        L += ["| " + " | ".join(r) + " |" for r in crows]
        L.append("")
    L += ["## Reachability by number of gold units", "", "| dataset | units: n (reachable) |", "|---|---|"]
    for r in results:
        if r["reachability"]:
            L.append(f"| {r['dataset']} | " + ", ".join(f"{k}: {v['n']} ({v['reachable']})" for k, v in r["reachability"]["by_gold_units"].items())
                     + " |")
    if any(r.get("heuristic") for r in results):
        L += ["", "## Heuristic recall split by reachability; action mix; time", "",
              "Recall split by the reachability verdict of the run that produced the heuristic numbers.", "",
              "| dataset | recall (reachable q) | recall (unreachable q) | all gold in U0 % | zero-commit q | action mix | seconds policy/reach/dense |",
              "|---|---|---|---|---|---|---|"]
        for r in results:
            h, re, s = r.get("heuristic"), r.get("heuristic_reachability") or r["reachability"], r.get("heuristic_seconds") or r["seconds"]
            if not h:
                continue
            L.append(f"| {r['dataset']} | {fmt(h['recall_when_reachable'])} | {fmt(h['recall_when_unreachable'])} | "
                     f"{'n/a' if re is None else fmt(re['all_gold_in_U0'])} | {h['zero_commit_questions']} | "
                     f"{', '.join(f'{k} {v}' for k, v in sorted(h['action_mix'].items()))} | "
                     f"{s.get('policy', 'n/a')}/{s.get('reachability', 'n/a')}/{s.get('dense', 'n/a')} |")
    if meta.get("discussion"):
        L += ["", "## What the numbers show", ""] + meta["discussion"]
    (out / "quality.md").write_text("\n".join(L) + "\n", encoding="utf-8")


#: what the preset comparison shows per run: (column, how to read it from a dataset's summary)
COMPARED = (
    ("reach %", lambda r: (r.get("reachability") or {}).get("reachable_rate")),
    ("reach (n)", lambda r: None if not r.get("reachability") else
        f"{r['reachability']['reachable']}/{r['reachability'].get('questions', r['questions'])}"),
    ("lookahead R", lambda r: ((r.get("policies") or {}).get("lookahead") or {}).get("evidence_recall")),
    ("oracle R", lambda r: ((r.get("policies") or {}).get("oracle") or {}).get("evidence_recall")),
    ("heuristic R", lambda r: (r.get("heuristic") or {}).get("evidence_recall")),
    ("lookahead AiE", lambda r: ((r.get("policies") or {}).get("lookahead") or {}).get("answer_in_evidence")),
)


def comparison_rows(paper: list[dict[str, Any]], extended: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """One row per dev set: each :data:`COMPARED` figure under the paper preset, the extended one and (numbers) the
    difference extended - paper in points."""
    cols = ["dataset", "n"]
    for name, _ in COMPARED:
        cols += [f"{name} paper", f"{name} ext."] + ([] if name.endswith("(n)") else ["Δ"])
    ext = {r["dataset"]: r for r in extended}
    rows = []
    for p in paper:
        e = ext.get(p["dataset"], {})
        row = [p["dataset"], str(p["questions"]) if p["questions"] == e.get("questions") else f"{p['questions']}/{e.get('questions')}"]
        for name, get in COMPARED:
            a, b = get(p), get(e) if e else None
            row += [fmt(a), fmt(b)]
            if not name.endswith("(n)"):
                row.append("n/a" if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) else f"{b - a:+.1f}")
        rows.append(row)
    return cols, rows


def write_comparison(paper_json: Path, extended_json: Path, out: Path, discussion: list[str] | None = None) -> None:
    """``out/quality.{json,md}``: the two presets' runs side by side per dev set, with where each full report is;
    ``discussion``: markdown lines appended under "What the numbers show"."""
    paper, extended = (json.loads(Path(p).read_text()) for p in (paper_json, extended_json))
    for label, run, want in (("paper", paper, "paper"), ("extended", extended, "extended")):
        if run["meta"].get("preset", "extended") != want:
            raise SystemExit(f"--compare: the {label} run {paper_json if want == 'paper' else extended_json} was made "
                             f"under preset {run['meta'].get('preset')!r}")
    cols, rows = comparison_rows(paper["datasets"], extended["datasets"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "quality.json").write_text(json.dumps({"paper": str(paper_json), "extended": str(extended_json),
                                                  "columns": cols, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    rel = lambda p: Path(p).resolve().parent.relative_to(out.resolve()) if Path(p).resolve().is_relative_to(out.resolve()) else Path(p).parent  # noqa: E731
    measured = [r["dataset"] for r in paper["datasets"]]
    L = ["# Menu quality on the dev sets, under both presets", "",
         "Each preset's environment on graphs built under the same preset (`build_dev_graphs.py --preset`, "
         "`bench_quality.py --preset`): *paper* = every menu and build rule as harness-g.tex defines it, *extended* = "
         "the project's extensions on top (README \"Presets and extensions\"). *reach %* = questions whose gold evidence "
         "the menu can commit within T = 6 (reachable / decided), *reach (n)* = reachable / questions, *lookahead R* = "
         "the LLM-free preview-based policy's evidence recall, *oracle R* = the privileged gold-guided policy's recall (an "
         "upper reference), *heuristic R* = the fixed script's, *AiE* = a gold answer in the committed evidence; all ×100; "
         "Δ = extended - paper in points. Dev sets: " + ", ".join(measured) + ", every question of each (n)"
         + ("" if "triviaqa" in measured else "; TriviaQA is not in this comparison: it has no gold evidence, so "
            "reachability and evidence recall are n/a for it by definition") + ".", "",
         f"Runs: paper {paper['meta'].get('started')} - {paper['meta'].get('finished')} (load at start "
         f"{paper['meta']['machine'].get('load_avg')}), extended {extended['meta'].get('started')} - "
         f"{extended['meta'].get('finished')} (load at start {extended['meta']['machine'].get('load_avg')}); full reports "
         f"(causes of every miss, dense baselines, action mix): [`{rel(paper_json)}/quality.md`]({rel(paper_json)}/quality.md), "
         f"[`{rel(extended_json)}/quality.md`]({rel(extended_json)}/quality.md).", "",
         "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    L += ["| " + " | ".join(r) + " |" for r in rows]
    if discussion:
        L += ["", "## What the numbers show", ""] + discussion
    (out / "quality.md").write_text("\n".join(L) + "\n", encoding="utf-8")


def _merge_reach(new: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    """A reachability-only result merged into the earlier full result of the same dataset (heuristic/dense kept)."""
    if not old or not old.get("heuristic"):
        return new
    merged = dict(old)
    merged["heuristic_reachability"] = old.get("heuristic_reachability") or old["reachability"]
    merged["heuristic_seconds"] = old.get("heuristic_seconds") or old["seconds"]
    for k in ("reachability", "seconds", "graph", "loadavg_end", "records"):
        if k in new:
            merged[k] = new[k]
    merged["questions_available"] = new["questions_available"]
    return merged


def main(argv: list[str] | None = None) -> int:
    from harness_g.agent.env.config import EnvConfig
    from harness_g.errors import ConfigError

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default="/tmp/hg-dev", type=Path)
    ap.add_argument("--datasets", default=",".join(d.name for d in DEV_SETS))
    ap.add_argument("--limit", type=int, help="first N questions per dataset")
    ap.add_argument("--reach-budget", type=int, default=400)
    ap.add_argument("--reach-only", action="store_true",
                    help="reachability (verdict + cause) of every question only; with --merge the heuristic/dense figures of "
                         "the existing quality.json are kept beside it, with their own question counts")
    ap.add_argument("--preset", choices=("paper", "extended"), default="paper",
                    help="EnvConfig preset of every run (default paper); the graphs under --root must be built under it")
    ap.add_argument("--answer-with-max", type=int,
                    help="EnvConfig.answer_with_max for every run (menus, policies, reachability): the most visible sentences "
                         "one ANSWER_WITH commits (1 = single-sentence; default: the preset's)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("PAPER_JSON", "EXTENDED_JSON"),
                    help="only write quality.{json,md} into --out (default benchmarks/results): the two runs side by side")
    ap.add_argument("--policies", default=",".join(DEFAULT_POLICIES),
                    help="policies run per question, each with its own dense@same-k (default %(default)s; oracle is "
                         "privileged: it plans from the gold labels, an upper reference; skipped where it does not exist)")
    ap.add_argument("--before", type=Path, help="quality.json of an earlier run: its reachability is shown as 'before' in the cause table")
    ap.add_argument("--before-note", default="", help="one line saying what the --before run was")
    ap.add_argument("--out", type=Path, help="directory for quality.json/md (default benchmarks/results/quality-PRESET; "
                                             "with --compare: benchmarks/results)")
    ap.add_argument("--records", action="store_true", help="keep per-question records in quality.json")
    ap.add_argument("--env-set", action="append", default=[], metavar="KEY=VALUE",
                    help="an EnvConfig field for every run, as `harness-g eval --set` takes it (repeatable; e.g. "
                         "article_pool=false for the paper's C(e)); quality.md's header lists the fields set")
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--discussion", help="markdown file whose paragraphs are appended under 'What the numbers show'")
    ap.add_argument("--merge", action="store_true", help="keep other datasets' rows from an existing quality.json")
    ap.add_argument("--report-only", action="store_true", help="rewrite quality.md from quality.json (e.g. with --discussion)")
    args = ap.parse_args(argv)
    if args.answer_with_max is None:
        args.answer_with_max = EnvConfig(preset=args.preset).answer_with_max
    if args.out is None:
        args.out = RESULTS if args.compare else RESULTS / f"quality-{args.preset}"
    if args.compare:
        write_comparison(*args.compare, args.out,
                         Path(args.discussion).read_text(encoding="utf-8").strip().split("\n") if args.discussion else None)
        print((args.out / "quality.md").read_text())
        return 0
    if args.report_only:
        data = json.loads((args.out / "quality.json").read_text())
        meta = data["meta"]
        if args.discussion:
            meta["discussion"] = Path(args.discussion).read_text(encoding="utf-8").strip().split("\n")
        write_report(data["datasets"], meta, args.out)
        print((args.out / "quality.md").read_text())
        return 0
    try:  # before any heavy import: a typo fails in a second
        cfg, env_set = env_config([*args.env_set, f"answer_with_max={args.answer_with_max}"], args.preset)
    except ConfigError as exc:
        ap.error(f"--env-set: {exc}")
    if any(s.partition("=")[0].strip() == "answer_with_max" for s in args.env_set):
        ap.error("set ANSWER_WITH k with --answer-with-max, not --env-set answer_with_max=...")
    if args.torch_threads:
        import torch
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(args.torch_threads)
        threadpool_limits(args.torch_threads)
    meta = {"machine": machine_info(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "limit": args.limit,
            "reach_budget": args.reach_budget, "torch_threads": args.torch_threads,
            "reach_only": args.reach_only, "answer_with_max": args.answer_with_max, "env_set": env_set,
            "preset": args.preset, "root": str(args.root),
            "policies": None if args.reach_only else args.policies.split(",")}
    if args.discussion:
        meta["discussion"] = Path(args.discussion).read_text(encoding="utf-8").strip().split("\n")
    if args.before:
        before = json.loads(args.before.read_text())
        meta["reach_before"] = {d["dataset"]: d["reachability"] for d in before["datasets"] if d.get("reachability")}
        meta["reach_before_note"] = args.before_note
    names = args.datasets.split(",")
    prev: dict[str, Any] = {}
    if args.merge and (args.out / "quality.json").exists():
        old = json.loads((args.out / "quality.json").read_text())
        prev = {d["dataset"]: d for d in old["datasets"]}
        meta["merged_from"] = old["meta"]
    results = []
    for d in DEV_SETS:
        if d.name not in names:
            if d.name in prev:
                results.append(prev[d.name])
            continue
        print(f"[{time.strftime('%H:%M:%S')}] {d.name} (load {load_avg()})", flush=True)
        if args.reach_only:
            res = eval_reach_only(d.name, args.root, limit=args.limit, reach_budget=args.reach_budget, keep_records=args.records, cfg=cfg)
        else:
            res = eval_dataset(d.name, args.root, limit=args.limit, reach_budget=args.reach_budget, keep_records=args.records, policies=tuple(filter(None, args.policies.split(","))),
                               cfg=cfg)
        print(f"   {res['questions']} q in {res['seconds']}", flush=True)
        results.append(_merge_reach(res, prev.get(d.name)) if args.reach_only else res)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    meta["loadavg_end"] = load_avg()
    write_report(results, meta, args.out)
    print_table(*table_rows(results))
    if any(r.get("policies") for r in results):
        print()
        print_table(*policy_rows(results))
    print()
    print_table(*cause_rows(results, meta.get("reach_before")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
