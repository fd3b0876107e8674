"""What the hub-sampled LOOKUP costs in answers on real questions (issue 35 item 5's open question).

    python benchmarks/bench_hub_sample_answers.py --graphs DIR[,DIR...] [--sizes 5,25,100] [--limit N]
        [--policies lookahead,oracle] [--reach-budget 400] [--out benchmarks/results] [--name hub_sample_answers]

``EnvConfig.lookup_hub_sample=S`` (ours, off under both presets; ``graph/stores/hub_sample.py``) bounds a LOOKUP's cost
by reading, for every hub (an entity mentioned in more than S distinct sentences), a fixed uniform sample of S of its
mentions in place of S(e) in the pool C(e) (Harness-G §3.3). ``benchmarks/results/scale.md`` measured its speed on
replicated corpora, where every extra mention is a near-duplicate and says nothing about answers. This measures its
price on the dev graphs' own questions: per graph, the paper's environment (S = 0) and one environment per size S
(the store reloaded with samples of S, a sample-only rewrite), each with the same questions and, paired per question:

* **menu reachability** (``agent/eval/reachability.py``: does any trajectory within T commit every gold unit);
* the LLM-free **lookahead** policy and the privileged **oracle** (plans from the gold labels: the menu's upper
  reference): evidence recall and F1 of C_T, with paired bootstrap 95% intervals over questions (sampled minus paper);
* **LOOKUPs the sample changes**: of the paper oracle's LOOKUPs, those whose pool C(e) under the sample differs from
  the paper's (so only they can change), per question.

The dev graphs are small (a few thousand sentences; their largest pools hold ~240-280 mentions), so a sample of S
keeps a larger share of a hub's mentions than a wiki-18 hub's sample of 1,000 out of 10^5-10^6 would; small S (5, 25)
make many entities hubs and keep 2-10% of the largest ones, the nearest these graphs come to that ratio. The
``sampled share`` columns say what share of its mentions each size keeps. Every environment is the paper preset's
EnvConfig (T = 6, K_s = 6, K_e = 8, k = 1) with only ``lookup_hub_sample`` changed.
Writes ``OUT/NAME.{json,md}`` (``NAME`` defaults to ``hub_sample_answers``; the open-corpus run is
``hub_sample_answers_open``: every dataset's passages in one graph, see ``benchmarks/results/scale.md``).
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_quality import make_bench_policy, mean, reach_summary, run_policy  # noqa: E402
from common import RESULTS, load_avg, machine_info, utc_stamp, write_results  # noqa: E402
from repro_small import bootstrap_mean  # noqa: E402

POLICIES = ("lookahead", "oracle")


def mention_counts(artifact: Any) -> dict[str, int]:
    """``{entity id: distinct sentences mentioning it}`` (every MENTIONS kind: what makes a hub)."""
    table = artifact.table("mentions", columns=["entity_id", "sentence_id"])
    counts = table.group_by("entity_id").aggregate([("sentence_id", "count_distinct")])
    return dict(zip(counts.column("entity_id").to_pylist(), counts.column("sentence_id_count_distinct").to_pylist()))


def hub_profile(counts: dict[str, int], size: int) -> dict[str, Any]:
    """How many entities are hubs at ``size`` and what share of its mentions a hub's sample keeps (min, median)."""
    shares = sorted(size / n for n in counts.values() if n > size)
    return {"hubs": len(shares), "largest_pool_mentions": max(counts.values(), default=0),
            "sampled_share_min": round(shares[0], 4) if shares else None,
            "sampled_share_median": round(shares[len(shares) // 2], 4) if shares else None}


def play(graph: Path, cfg: Any, policies: tuple[str, ...], limit: int | None, reach_budget: int,
         targets: bool = False) -> dict[str, Any]:
    """Per question: reachability and each policy's record under ``cfg``; with ``targets``, also ``oracle_targets``:
    the oracle's LOOKUP targets per question (when the oracle plays)."""
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.session import open_view
    from harness_g.agent.eval.reachability import menu_reachability
    from harness_g.agent.eval.runner import run_episode

    out: dict[str, Any] = {"seconds": {}}
    with open_view(graph) as view:
        items = view.artifact.questions()
        items = items[:limit] if limit else items
        out["ids"] = [q.id for q in items]
        env = MenuEnv(view, cfg)
        for name in policies:
            policy = make_bench_policy(name, view, cfg, items)
            if policy is None:
                raise SystemExit(f"policy {name!r} is not available here")
            t0 = time.perf_counter()
            out[name] = run_policy(view, env, policy, items)
            out["seconds"][name] = round(time.perf_counter() - t0, 1)
            if targets and name == "oracle":  # the oracle is deterministic: its episodes replayed for their LOOKUP targets
                out["oracle_targets"] = [[st.targets[0] for st in run_episode(env, policy, q).steps
                                          if st.action_type == "LOOKUP" and st.targets] for q in items]
        t0 = time.perf_counter()
        out["reach"] = [asdict(menu_reachability(view, q, cfg, budget=reach_budget))
                        if (q.gold_sentence_ids or q.gold_paragraph_ids) else None for q in items]
        out["seconds"]["reach"] = round(time.perf_counter() - t0, 1)
    return out


def changed_lookups(graph: Path, size: int, targets: list[list[str]]) -> list[dict[str, int]]:
    """Per question, its LOOKUP ``targets`` (the paper oracle's) and how many of them have a different pool C(e)
    under samples of ``size`` (the store must hold samples of ``size``)."""
    from harness_g.agent.env.session import open_view

    rows = []
    with open_view(graph) as view:
        for question in targets:
            paper = view.lookup_pools(question, articles=False)
            sampled = view.lookup_pools(question, articles=False, hub_sample=size)
            rows.append({"lookups": len(question),
                         "changed": sum(1 for e in question if set(paper.get(e, ())) != set(sampled.get(e, ())))})
    return rows


def paired(base: list[dict[str, Any]], other: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Bootstrap mean of ``other[key] - base[key]`` over questions."""
    return bootstrap_mean([float(o[key]) - float(b[key]) for b, o in zip(base, other)])


def reach_flags(reach: list[dict[str, Any] | None]) -> list[dict[str, float]]:
    """Per question with gold: ``{"reachable": 1.0 or 0.0}`` (unknown counts as not reachable)."""
    return [{"reachable": float(r["status"] == "reachable")} for r in reach if r is not None]


def graph_rows(graph: Path, sizes: list[int], policies: tuple[str, ...], limit: int | None,
               reach_budget: int) -> dict[str, Any]:
    """The paper run and one run per sample size on ``graph``, compared per question."""
    from harness_g.agent.env.config import EnvConfig
    from harness_g.graph.artifact import Artifact
    from harness_g.graph.load import load_graph

    artifact = Artifact.open(graph)
    counts = mention_counts(artifact)
    paper_cfg = EnvConfig()
    print(f"{graph.name}: paper", flush=True)
    paper = play(graph, paper_cfg, policies, limit, reach_budget, targets=True)
    result: dict[str, Any] = {"graph": str(graph), "content_hash": artifact.content_hash,
                              "questions": len(paper["ids"]), "paper": summarise(paper, policies), "sizes": {}}
    for size in sizes:
        store, report = load_graph(graph, progress=False, remember=False, hub_sample=size)
        store.close()
        print(f"{graph.name}: hub sample {size} ({report.rows.get('pool_samples')} sample rows rewritten)", flush=True)
        run = play(graph, replace(paper_cfg, lookup_hub_sample=size), policies, limit, reach_budget)
        assert run["ids"] == paper["ids"]
        lookups = changed_lookups(graph, size, paper["oracle_targets"]) if "oracle_targets" in paper else []
        entry = {"profile": hub_profile(counts, size), **summarise(run, policies),
                 "oracle_lookups": sum(r["lookups"] for r in lookups),
                 "oracle_lookups_changed": sum(r["changed"] for r in lookups),
                 "questions_with_changed_lookup": sum(1 for r in lookups if r["changed"]),
                 "delta": {name: {"evidence_recall": paired(paper[name], run[name], "recall"),
                                  "f1": paired(paper[name], run[name], "f1"),
                                  "changed_questions": sum(1 for b, o in zip(paper[name], run[name])
                                                           if (b["recall"], b["f1"]) != (o["recall"], o["f1"]))}
                           for name in policies}}
        entry["delta"]["reachable"] = paired(reach_flags(paper["reach"]), reach_flags(run["reach"]), "reachable")
        result["sizes"][str(size)] = entry
    return result


def summarise(run: dict[str, Any], policies: tuple[str, ...]) -> dict[str, Any]:
    """Each policy's mean recall and F1, reachability and seconds of one run."""
    reach = reach_summary([r for r in run["reach"] if r is not None], len(run["ids"]))
    return {**{name: {"evidence_recall": _mean4(r["recall"] for r in run[name]), "f1": _mean4(r["f1"] for r in run[name]),
                      "lookups": sum(r["actions"].count("LOOKUP") for r in run[name])} for name in policies},
            "reachable": reach["reachable"] if reach else None, "reach_decided": (reach["reachable"] + reach["unreachable"]) if reach else None,
            "unknown": reach["unknown"] if reach else None, "seconds": run["seconds"]}


def _mean4(xs: Any) -> float | None:
    value = mean(xs)
    return None if value is None else round(value, 4)


def _ci(d: dict[str, Any], scale: float = 100.0) -> str:
    if d.get("mean") is None:
        return "n/a"
    return f"{d['mean'] * scale:+.1f} [{d['lo'] * scale:+.1f}, {d['hi'] * scale:+.1f}]"


def markdown(data: dict[str, Any]) -> str:
    """The report: one row per graph and size, paired differences in points."""
    pols = data["policies"]
    graphs = ", ".join(Path(g["graph"]).name for g in data["graphs"])
    lines = [f"# What the hub-sampled LOOKUP costs in answers ({graphs}; paper preset)", "",
             f"Run {data['run_at']} (`{data['command']}`, {data['seconds']} s; {data['machine']['cores']} cores, load "
             f"average {data['loadavg_start']} -> {data['loadavg_end']}; CPU, LLM-free, deterministic: one run).", "",
             "Each row: the paper's environment (T = 6, K_s = 6, K_e = 8, k = 1) against the same with "
             "`lookup_hub_sample = S`, on every question of the graph, paired per question (sampled minus paper, "
             "points, bootstrap 95% interval over questions). *hubs*: entities mentioned in more than S sentences; "
             "*kept*: the share of a hub's mentions its sample keeps (smallest / median hub); *oracle LOOKUPs changed*: "
             "the paper oracle's LOOKUPs whose pool the sample changes (only they can change), and the questions with one.",
             "", "| graph | S | questions | hubs | kept (min / median) | oracle LOOKUPs changed | reachable (paper -> S) | "
             "reachable delta | " + " | ".join(f"{p} recall delta | {p} F1 delta | {p} questions changed" for p in pols) + " |",
             "|" + "---|" * (8 + 3 * len(pols))]
    for g in data["graphs"]:
        for size, e in g["sizes"].items():
            prof = e["profile"]
            kept = (f"{prof['sampled_share_min']:.1%} / {prof['sampled_share_median']:.1%}" if prof["hubs"] else "-")
            cells = [Path(g["graph"]).name, size, str(g["questions"]), str(prof["hubs"]), kept,
                     f"{e['oracle_lookups_changed']} of {e['oracle_lookups']} ({e['questions_with_changed_lookup']} q)",
                     f"{g['paper']['reachable']}/{g['paper']['reach_decided']} -> {e['reachable']}/{e['reach_decided']}",
                     _ci(e["delta"]["reachable"])]
            for p in pols:
                d = e["delta"][p]
                cells += [_ci(d["evidence_recall"]), _ci(d["f1"]), str(d["changed_questions"])]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Paper-run scores (recall / F1, %): " + "; ".join(
        f"{Path(g['graph']).name}: " + ", ".join(f"{p} {g['paper'][p]['evidence_recall'] * 100:.1f} / "
                                                  f"{g['paper'][p]['f1'] * 100:.1f}" for p in pols)
        for g in data["graphs"]) + "."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", required=True, help="comma-separated GRAPH_DIRs (paper preset) with their own questions")
    ap.add_argument("--sizes", default="5,25,100", help="hub sample sizes S, comma-separated, each >= 1")
    ap.add_argument("--policies", default=",".join(POLICIES), help="policies played per question (bench_quality names)")
    ap.add_argument("--limit", type=int, default=None, help="the first N questions of each graph (default: all)")
    ap.add_argument("--reach-budget", type=int, default=400, help="reachability search expansions per question")
    ap.add_argument("--out", default=str(RESULTS), help="folder for NAME.{json,md}")
    ap.add_argument("--name", default="hub_sample_answers", help="file stem of the results (letters, digits, _ and -)")
    args = ap.parse_args(argv)
    if not re.fullmatch(r"[A-Za-z0-9_-]+", args.name):
        ap.error(f"--name: {args.name!r} is not a file stem (letters, digits, _ and - only)")
    from harness_g.errors import ConfigError
    from harness_g.graph.stores.hub_sample import check_hub_sample

    try:
        sizes = [check_hub_sample(s.strip(), "--sizes") for s in args.sizes.split(",") if s.strip()]
    except ValueError as exc:
        ap.error(f"--sizes takes integers: {exc}")
    except ConfigError as exc:
        ap.error(str(exc))
    graphs = [Path(g) for g in args.graphs.split(",") if g]
    for g in graphs:
        if not (g / "manifest.json").is_file():
            ap.error(f"--graphs: {g} is not a GRAPH_DIR (no manifest.json)")
    policies = tuple(p for p in args.policies.split(",") if p)
    start, load0 = time.perf_counter(), load_avg()
    data: dict[str, Any] = {"run_at": utc_stamp(), "command": "python benchmarks/bench_hub_sample_answers.py "
                            + " ".join(argv if argv is not None else sys.argv[1:]),
                            "sizes": sizes, "policies": list(policies), "limit": args.limit,
                            "reach_budget": args.reach_budget, "loadavg_start": load0, "machine": machine_info(),
                            "graphs": [graph_rows(g, sizes, policies, args.limit, args.reach_budget) for g in graphs]}
    data["seconds"] = round(time.perf_counter() - start)
    data["loadavg_end"] = load_avg()
    out = Path(args.out)
    for path in write_results(out / f"{args.name}.json", data, markdown(data)):
        print(f"wrote {path}")
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
