"""What the oracle-demonstration SFT warm start (``harness-g sft``, ours) does to a policy by itself, before any GRPO:
the SFT policy against the untrained model under identical play settings, on questions the SFT never saw.

    python benchmarks/bench_sft_warm_start.py --sft SFT_DIR --out DIR [--questions N]

- **The baseline is the same checkpoint with its LoRA deltas zeroed** (``lora_B`` = 0, so every adapted layer
  computes exactly the base weights): ``DIR/base-policy``. Both are played by ``harness-g eval --model`` with the
  settings the SFT recorded (interface, context, token limits, constrained decoding, environment), greedy.
- **Questions:** the SFT run's held-out questions first, then its training-split questions that were not
  demonstrated, up to ``--questions`` (default: all of them). The SFT never saw either kind; they are reported apart
  and pooled.
- ``DIR/sft_warm_start.json``: per policy the means of F1, EM, evidence recall, LOOKUPs per episode and **gold
  LOOKUPs** per episode (LOOKUPs that surfaced a gold sentence not visible before; ``gold_lookups_committed``: of
  those, the ones whose new gold sentence ends in C_T), the action mix; per metric the paired difference SFT minus
  base, with a bootstrap 95% interval over questions (``repro_small.bootstrap_mean``).
- ``--reuse-evals``: keep ``DIR/eval-base`` and ``DIR/eval-sft`` when each holds a record for every question on the
  checkpoint's interface (a result re-summarised without playing again).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repro_small import bootstrap_mean  # noqa: E402

METRICS = ("f1", "em", "evidence_recall", "lookups", "gold_lookups", "gold_lookups_committed")


def zeroed_copy(policy: Path, out: Path) -> Path:
    """``policy`` (a LoRA policy checkpoint) copied to ``out`` with every ``lora_B`` tensor zeroed: the base model under
    the checkpoint's own play settings."""
    from safetensors.torch import load_file, save_file

    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(policy, out)
    weights = out / "adapter_model.safetensors"
    state = load_file(str(weights))
    zeroed = {k: (v.zero_() if "lora_B" in k else v) for k, v in state.items()}
    if not any("lora_B" in k for k in zeroed):
        raise SystemExit(f"{policy}: no lora_B tensors (not a LoRA adapter)")
    save_file(zeroed, str(weights))
    return out


def question_ids(sft: dict[str, Any], limit: int | None) -> tuple[list[str], set[str]]:
    """(the ids to evaluate: held-out first, then the training split's undemonstrated questions in order; the
    held-out ids). The split is the SFT run's own, recomputed from its recorded config and graph."""
    from harness_g.training.config import TrainConfig
    from harness_g.training.data import check_training_data

    train, _ = check_training_data(TrainConfig.from_dict(sft["train_config"]))
    demonstrated, held = set(sft["demonstrated_ids"]), list(sft["heldout_ids"])
    ids = held + [q.id for q in train if q.id not in demonstrated]
    return (ids[:limit] if limit else ids), set(held)


def evaluate(model: Path, ids: list[str], ids_file: Path, out: Path, interface: str, gold: dict[str, set[str]],
             reuse: bool = False) -> dict[str, dict[str, float]]:
    """``harness-g eval --model model`` on the ids: per question id, its metrics (:func:`read_records`). The eval
    plays the checkpoint's own ``interface``; SystemExit if its config.json says otherwise. ``reuse``: an existing
    ``out`` with a record for every id on that interface is read, not played again."""
    kept = read_records(out, gold) if reuse and (out / "records.jsonl").is_file() else {}
    if set(ids) <= set(kept) and _interface(out) == interface:
        return kept
    if out.exists():
        shutil.rmtree(out)
    cmd = [sys.executable, "-m", "harness_g", "eval", "--policy", "transformers", "--model", str(model),
           "--question-ids", str(ids_file), "--out", str(out), "-q"]
    subprocess.run(cmd, check=True)
    if _interface(out) != interface:
        raise SystemExit(f"{out}: evaluated on the {_interface(out)} interface, but {model} was trained on {interface}")
    return read_records(out, gold)


def _interface(out: Path) -> str:
    return json.loads((out / "config.json").read_text(encoding="utf-8"))["eval"]["interface"]


def gold_sentences(train_config: dict[str, Any]) -> dict[str, set[str]]:
    """Per question id of the SFT's graph, its gold sentences: the gold sentence ids where the dataset has them (the
    evidence units of HotpotQA and 2Wiki), else every sentence of a gold paragraph (MuSiQue, NQ, PopQA)."""
    from harness_g.graph.artifact import Artifact

    artifact = Artifact.open(train_config["data"]["graph_dir"])
    table = artifact.table("sentences", columns=["id", "paragraph_id"])
    by_paragraph: dict[str, set[str]] = {}
    for sid, pid in zip(table.column("id").to_pylist(), table.column("paragraph_id").to_pylist()):
        by_paragraph.setdefault(pid, set()).add(sid)
    return {q.id: set(q.gold_sentence_ids) if q.gold_sentence_ids else
            {s for p in (q.gold_paragraph_ids or ()) for s in by_paragraph.get(p, ())} for q in artifact.questions()}


def gold_lookups(trajectory: dict[str, Any], gold: set[str]) -> tuple[int, int]:
    """(LOOKUPs that surfaced a gold sentence not visible before, those whose new gold sentence ends in C_T)."""
    seen, committed = set(trajectory["initial_visible"]), set(trajectory.get("committed") or ())
    found = kept = 0
    for step in trajectory["steps"]:
        introduced = set(step.get("introduced") or ())
        if step.get("action_type") == "LOOKUP":
            new = (introduced & gold) - seen
            found += bool(new)
            kept += bool(new & committed)
        seen |= introduced
    return found, kept


def read_records(out: Path, gold: dict[str, set[str]]) -> dict[str, dict[str, Any]]:
    """Per question id of an eval run's ``records.jsonl``: F1, EM, evidence recall, LOOKUPs, gold LOOKUPs
    (:func:`gold_lookups`), the action types."""
    per = {}
    for line in (out / "records.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        steps = r["trajectory"]["steps"]
        found, kept = gold_lookups(r["trajectory"], gold.get(r["id"], set()))
        per[r["id"]] = {"f1": r["metrics"]["f1"], "em": r["metrics"]["em"],
                        "evidence_recall": r["metrics"]["evidence_recall"],
                        "lookups": float(sum(s.get("action_type") == "LOOKUP" for s in steps)),
                        "gold_lookups": float(found), "gold_lookups_committed": float(kept),
                        "actions": [s.get("action_type") or "invalid" for s in steps]}
    return per


def summarise(base: dict[str, Any], sft: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"questions": len(ids)}
    for name, per in (("base", base), ("sft", sft)):
        mix: dict[str, int] = {}
        for q in ids:
            for a in per[q]["actions"]:
                mix[a] = mix.get(a, 0) + 1
        means = {}
        for m in METRICS:
            xs = [per[q][m] for q in ids if per[q][m] is not None]
            means[m] = sum(xs) / len(xs) if xs else None
        out[name] = {**means, "actions": mix}
    out["sft_minus_base"] = {m: bootstrap_mean([sft[q][m] - base[q][m] for q in ids
                                                if sft[q][m] is not None and base[q][m] is not None]) for m in METRICS}
    return out


def write_per_question(path: Path, base: dict[str, Any], sft: dict[str, Any], ids: list[str], held: set[str]) -> None:
    """One line per question: its split, and both policies' F1, EM, evidence recall, LOOKUPs and actions."""
    with open(path, "w", encoding="utf-8") as fh:
        for q in ids:
            fh.write(json.dumps({"id": q, "split": "heldout" if q in held else "undemonstrated_train",
                                 "base": base[q], "sft": sft[q]}) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sft", type=Path, required=True, help="a `harness-g sft` output directory (sft.json, policy/)")
    ap.add_argument("--out", type=Path, required=True, help="result folder")
    ap.add_argument("--questions", type=int, help="evaluate at most N questions (held-out first)")
    ap.add_argument("--reuse-evals", action="store_true",
                    help="keep DIR/eval-base and DIR/eval-sft when they hold every question (re-summarise only)")
    args = ap.parse_args(argv)
    record = json.loads((args.sft / "sft.json").read_text(encoding="utf-8"))
    policy = Path(record["policy"])
    settings = json.loads((policy / "harness_g_policy.json").read_text(encoding="utf-8"))
    args.out.mkdir(parents=True, exist_ok=True)
    ids, held = question_ids(record, args.questions)
    ids_file = args.out / "question_ids.txt"
    ids_file.write_text("".join(f"{q}\n" for q in ids), encoding="utf-8")
    gold = gold_sentences(record["train_config"])
    previous = args.out / "sft_warm_start.json"
    seconds = json.loads(previous.read_text(encoding="utf-8")).get("eval_seconds") if previous.is_file() else None
    t0 = time.perf_counter()
    base = evaluate(zeroed_copy(policy, args.out / "base-policy"), ids, ids_file, args.out / "eval-base",
                    settings["interface"], gold, args.reuse_evals)
    t1 = time.perf_counter()
    sft = evaluate(policy, ids, ids_file, args.out / "eval-sft", settings["interface"], gold, args.reuse_evals)
    t2 = time.perf_counter()
    if not (args.reuse_evals and seconds):
        seconds = {"base": round(t1 - t0, 1), "sft": round(t2 - t1, 1)}
    import torch

    result = {"sft": {k: record[k] for k in ("sft", "demonstrations", "sequences", "trained_tokens", "steps",
                                             "loss_first", "loss_last", "demonstrate_s", "train_s", "device")},
              "play": {k: settings[k] for k in ("base_model", "interface", "policy")},
              "env": {k: settings["env"][k] for k in ("max_turns", "visible_cap", "lookup_cap", "answer_with_max")},
              "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU",
              "eval_seconds": seconds,
              "heldout": summarise(base, sft, [q for q in ids if q in held]),
              "undemonstrated_train": summarise(base, sft, [q for q in ids if q not in held]),
              "pooled": summarise(base, sft, ids)}
    (args.out / "sft_warm_start.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    write_per_question(args.out / "per_question.jsonl", base, sft, ids, held)
    for part in ("heldout", "undemonstrated_train", "pooled"):
        r = result[part]
        d = r["sft_minus_base"]
        if not r["questions"]:
            continue
        print(f"{part} ({r['questions']} q): " + ", ".join(
            f"{m} {r['base'][m]:.3f} -> {r['sft'][m]:.3f} ({d[m]['mean']:+.3f} [{d[m]['lo']:+.3f}, {d[m]['hi']:+.3f}])"
            for m in METRICS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
