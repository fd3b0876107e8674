"""What each extension does to menu reachability, under both presets, on the dev sets.

    python benchmarks/bench_extensions.py --paper-root /tmp/hg-dev-paper --extended-root /tmp/hg-dev-extended
        [--build-variant PRESET:FIELD:ROOT ...] [--datasets hotpotqa,2wiki,musique,nq,popqa] [--limit N]
        [--reach-budget 400] [--out benchmarks/results]

Graphs: the dev graphs of ``build_dev_graphs.py --preset paper`` and ``--preset extended``. Per dataset and per
question (``menu_reachability``, the search ``bench_quality.py`` runs), for each menu extension E of
``agent.config.ENV_EXTENSIONS``:

* *paper + E*: the paper graph, the paper menu with E alone at its extended value;
* *extended - E*: the extended graph, the extended menu with E alone at its paper value;

and the four build extensions together: *extended graph, paper menu* (every menu extension at its paper value, set
explicitly) against *paper*. A build extension alone needs graphs of its own: ``--build-variant paper:FIELD:ROOT``
names graphs built with ``build_dev_graphs.py --preset paper --set FIELD=true --root ROOT`` (*paper + FIELD*, the
paper menu on them), ``extended:FIELD:ROOT`` ones built with ``--preset extended --set FIELD=false`` (*extended -
FIELD*, the extended menu).
Each figure is reachable / decided (%); the baselines *paper* and *extended* are computed in the same run.
Writes ``extensions.{json,md}`` into ``--out``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEV_SETS, graph_dir, load_avg, machine_info, questions_of  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def variants(preset: str) -> list[tuple[str, dict[str, Any]]]:
    """(label, EnvConfig keywords) run on the graph of ``preset``: the preset itself, then each menu extension
    toggled alone (paper: switched on; extended: switched off); on the extended graph also the paper's menu."""
    from harness_g.agent.env.config import ENV_EXTENSIONS, ENV_PRESETS

    other = "extended" if preset == "paper" else "paper"
    sign = "+" if preset == "paper" else "-"
    out = [(preset, {"preset": preset})]
    out += [(f"{preset} {sign} {name}", {"preset": preset, name: ENV_PRESETS[other][name]}) for name in ENV_EXTENSIONS]
    if preset == "extended":  # the build rules alone: the extended graph under the paper's menu rules
        paper_menu = {name: ENV_PRESETS["paper"][name] for name in ENV_EXTENSIONS}
        out.append(("extended graph, paper menu", {"preset": "extended", **paper_menu}))
    return out


def reach_rate(view: Any, items: list, cfg: Any, budget: int) -> dict[str, Any]:
    """Reachable / decided over the questions with gold evidence."""
    from harness_g.agent.eval.reachability import menu_reachability

    status = [asdict(menu_reachability(view, it, cfg, budget=budget))["status"] for it in items
              if it.gold_sentence_ids or it.gold_paragraph_ids]
    reach, unreach = status.count("reachable"), status.count("unreachable")
    return {"questions": len(status), "reachable": reach, "unreachable": unreach, "unknown": status.count("unknown"),
            "rate": round(100 * reach / (reach + unreach), 1) if reach + unreach else None}


def run(name: str, roots: dict[str, Path], limit: int | None, budget: int,
        build_variants: list[tuple[str, str, Path]] = ()) -> dict[str, Any]:
    """Every variant's reachability on dataset ``name``: the menu variants on the two presets' graphs, then each
    ``(preset, build field, root)`` of ``build_variants`` under that preset's menu."""
    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.session import open_view

    out: dict[str, Any] = {"dataset": name, "rows": {}}
    runs = [(preset, root, variants(preset)) for preset, root in roots.items()]
    runs += [(preset, root, [(f"{preset} {'+' if preset == 'paper' else '-'} {field} (build)", {"preset": preset})])
             for preset, field, root in build_variants]
    for preset, root, todo in runs:
        if not (graph_dir(root, name) / "manifest.json").is_file():  # e.g. join_fragments: only HotpotQA and 2Wiki
            print(f"   {todo[0][0]}: no graph under {root}, n/a", flush=True)
            continue
        t0 = time.perf_counter()
        with open_view(graph_dir(root, name)) as view:
            items = questions_of(view, name)[:limit] if limit else questions_of(view, name)
            for label, kw in todo:
                out["rows"][label] = reach_rate(view, items, EnvConfig(**kw), budget)
                print(f"   {label}: {out['rows'][label]}", flush=True)
        out[f"seconds {todo[0][0]}"] = round(time.perf_counter() - t0, 1)
    return out


def write(results: list[dict[str, Any]], meta: dict[str, Any], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "extensions.json").write_text(json.dumps({"meta": meta, "datasets": results}, indent=2) + "\n", encoding="utf-8")
    labels = list(dict.fromkeys(label for r in results for label in r["rows"]))
    names = [r["dataset"] for r in results]
    counts = ", ".join(f"{r['dataset']} {next(iter(r['rows'].values()))['questions']}" for r in results)
    L = ["# Each extension's effect on menu reachability, under both presets", "",
         f"Generated {meta['finished']} ({meta['machine']['cores']} shared CPUs, load average at start "
         f"{meta['machine']['load_avg']}, at end {meta['loadavg_end']}); `benchmarks/bench_extensions.py`, reachability "
         f"search budget {meta['reach_budget']}, T = 6, K_s = 6, K_e = 8. Cells: reachable / decided questions, % "
         f"(questions: {counts}"
         f"{'; first ' + str(meta['limit']) + ' per set' if meta.get('limit') else ''}). *paper + E*: paper graph, "
         "paper menu with extension E on; *extended - E*: extended graph, extended menu with E off; *extended graph, "
         "paper menu*: the four build extensions alone; *(build)* rows: one build extension toggled, on graphs of their "
         "own (n/a: not measured; join_fragments applies only to HotpotQA's and 2Wiki's own sentence splits, and the "
         "build rows were not run on data sets a merge kept from an earlier run)."
         + (" The (build) rows come from a later run merged in (`meta.merged_from`)." if meta.get("merged_from") else ""),
         "",
         "| variant | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label in labels:
        cells = []
        for r in results:
            x = r["rows"].get(label)
            decided = x["reachable"] + x["unreachable"] if x else 0
            cells.append("n/a" if not x or x["rate"] is None else f"{x['rate']:.1f} ({x['reachable']}/{decided})")
        L.append(f"| {label} | " + " | ".join(cells) + " |")
    (out / "extensions.md").write_text("\n".join(L) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paper-root", type=Path, default=Path("/tmp/hg-dev-paper"))
    ap.add_argument("--extended-root", type=Path, default=Path("/tmp/hg-dev-extended"))
    ap.add_argument("--datasets", default=",".join(d.name for d in DEV_SETS if d.name != "triviaqa"),
                    help="dev sets with gold evidence (default: all but TriviaQA)")
    ap.add_argument("--limit", type=int, help="first N questions per dataset")
    ap.add_argument("--reach-budget", type=int, default=400)
    ap.add_argument("--torch-threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--build-variant", action="append", default=[], metavar="PRESET:FIELD:ROOT",
                    help="graphs with one build extension toggled (see above; repeatable)")
    ap.add_argument("--merge", action="store_true", help="keep the rows of an existing extensions.json and add these")
    args = ap.parse_args(argv)
    build_variants = []
    for text in args.build_variant:
        preset, field, root = (text.split(":", 2) + ["", ""])[:3]
        if preset not in ("paper", "extended") or not field or not root:
            ap.error(f"--build-variant expects PRESET:FIELD:ROOT, got {text!r}")
        build_variants.append((preset, field, Path(root)))
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    meta = {"machine": machine_info(), "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "limit": args.limit,
            "reach_budget": args.reach_budget, "roots": {"paper": str(args.paper_root), "extended": str(args.extended_root)}}
    old = {}
    if args.merge and (args.out / "extensions.json").exists():
        prev = json.loads((args.out / "extensions.json").read_text())
        old = {r["dataset"]: r for r in prev["datasets"]}
        meta["merged_from"] = prev["meta"]
    roots = {} if args.merge else {"paper": args.paper_root, "extended": args.extended_root}
    results = []
    for name in args.datasets.split(","):
        print(f"[{time.strftime('%H:%M:%S')}] {name} (load {load_avg()})", flush=True)
        row = run(name, roots, args.limit, args.reach_budget, build_variants)
        if name in old:
            kept = {k: v for k, v in row.items() if k != "rows"}
            row = {**old[name], **kept, "rows": {**old[name]["rows"], **row["rows"]}}
        results.append(row)
        meta["finished"], meta["loadavg_end"] = time.strftime("%Y-%m-%dT%H:%M:%S"), load_avg()
        kept_old = [old[n] for n in old if n not in {r["dataset"] for r in results}]  # a merge keeps unlisted sets
        write(results + kept_old, meta, args.out)  # after every dataset: a long run leaves what it measured
    print((args.out / "extensions.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
