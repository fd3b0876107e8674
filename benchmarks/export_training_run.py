"""Copy a training run's logs into benchmarks/results/<name>/ with a curves page and a short summary table.

    python benchmarks/export_training_run.py /tmp/train-smollm2 train-smollm2
"""
import json
import shutil
import sys
from pathlib import Path

from harness_g.training.curves import render_training_report

run, name = Path(sys.argv[1]), sys.argv[2]
out = Path(__file__).resolve().parent / "results" / name
out.mkdir(parents=True, exist_ok=True)
for f in ("metrics.jsonl", "eval.jsonl", "config.yaml", "rollouts.jsonl"):
    if (run / f).exists():
        shutil.copy(run / f, out / f)
render_training_report(run, out / "curves.html", title=f"harness-g training run: {name}")
rows = {json.loads(line)["step"]: json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()}
evals = [json.loads(line) for line in (run / "eval.jsonl").read_text().splitlines()] if (run / "eval.jsonl").exists() else []
keys = ["reward_f1", "em", "loss", "kl", "grad_norm", "snc_credit_nonzero_frac", "zero_adv_frac", "turns", "time_rollout_s",
        "time_snc_s", "time_update_s", "time_total_s", "snc_share"]
lines = [f"# Training run `{name}`", "", f"{len(rows)} logged steps (config in `config.yaml`, curves in `curves.html`, generated and not committed: `harness-g report benchmarks/results/{name} --out /tmp/{name}.html` redraws them).", "",
         "| step | " + " | ".join(keys) + " |", "|" + "---|" * (len(keys) + 1)]
for step in sorted(rows):
    lines.append(f"| {step} | " + " | ".join(f"{rows[step].get(k, float('nan')):.4g}" for k in keys) + " |")
if evals:
    lines += ["", "## Greedy evaluation (F1/EM ×100)", "", "| when | step | split | n | F1 | EM |", "|---|---|---|---|---|---|"]
    lines += [f"| {e['tag']} | {e['step']} | {e['split']} | {e['questions']} | {100 * e['f1']:.2f} | {100 * e['em']:.2f} |" for e in evals]
(out / "results.md").write_text("\n".join(lines) + "\n")
print(f"exported to {out}")
