"""Training-step cost of the paper's multi-turn context vs the Markov prompt (same config, graph and seed).

Runs ``--steps`` training steps per context mode (``rollout.context``), each in a fresh subprocess, and reports
median per-step seconds (generation, environment, SNC, update, total) over steps 2..N, the longest training
sequence and the sequences per step. Multi-turn trains one growing sequence per trajectory (harness-g.tex l.443,
l.911); Markov one short sequence per turn.

    python benchmarks/bench_train_context.py --config training/configs/smollm2-lora-cpu.yaml --steps 4
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_train_generators import run_arm  # noqa: E402
from common import RESULTS, machine_info, machine_line, md_table, text_table, write_results  # noqa: E402

MODES = ("multi-turn", "markov")
KEYS = ["time_generate_s", "time_env_s", "time_snc_s", "time_update_s", "time_total_s", "sequences", "max_len"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="training/configs/smollm2-lora-cpu.yaml")
    ap.add_argument("--steps", type=int, default=4, help="steps per arm (the first is excluded from medians)")
    ap.add_argument("--set", action="append", default=[], help="extra config overrides for both arms")
    ap.add_argument("--out", default=str(RESULTS / "train_context.json"))
    args = ap.parse_args()
    extra = [x for s in args.set for x in ("--set", s)]
    info = machine_info()
    arms = []
    for mode in MODES:
        arm = run_arm(args.config, "transformers", args.steps, {}, [*extra, "--set", f"rollout.context={mode}"], keys=KEYS)
        arms.append({"context": mode, **arm})
    headers = ["context", "steps", *[k.removeprefix("time_").removesuffix("_s") + (" s" if k.endswith("_s") else "") for k in KEYS]]
    rows = [[a["context"], a["steps"], *[a["per_step"].get(k, {}).get("median") for k in KEYS]] for a in arms]
    total = {a["context"]: a["per_step"]["time_total_s"]["median"] for a in arms}
    ratio = total["multi-turn"] / total["markov"] if total["markov"] else None
    print(machine_line(info))
    print(text_table(headers, rows))
    print(f"multi-turn / markov step time (medians): {ratio:.2f}x" if ratio else "")
    md = [f"# Training-step cost: multi-turn context vs Markov prompt\n",
          f"Config `{args.config}` ({args.steps} steps per arm, medians over steps 2..{args.steps}; overrides "
          f"{' '.join(args.set) or 'none'}). {machine_line(info)}\n", md_table(headers, rows), "",
          f"multi-turn / markov step time (medians): **{ratio:.2f}x**." if ratio else ""]
    write_results(Path(args.out), {"machine": info, "config": args.config, "arms": arms, "ratio_total": ratio}, "\n".join(md))


if __name__ == "__main__":
    main()
