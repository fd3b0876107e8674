"""``harness-g eval``'s transformers policy with and without its prefix cache, paired per question.

The eval backend (agent/llm/transformers_backend.py) renders and tokenises each turn's whole chat; under the
multi-turn context (the paper's, and eval's default) its prefix cache (agent/llm/chat_states.py,
``eval.llm.prefix_cache``, on by default) keeps each chat's key/value states from one turn to the next, so a turn
computes only what the last turn's prompt and reply do not cover. Each question is played twice by the policy
``harness-g eval --policy transformers --model MODEL --constrain-actions`` builds (greedy, seed 0, eval's default
EnvConfig: T = 6, K_s = 6, K_e = 8 under the paper preset), once with the cache off (the plain baseline)
and once on, in alternating order, over one loaded model. Reports the medians of the per-question seconds, their
ratio, prompt positions computed per padded prompt position, and whether both played the same episodes:

    python benchmarks/bench_eval_prefix_cache.py --graph /tmp/repro31/graphs/hotpotqa --n-questions 8

writes ``benchmarks/results/eval_prefix_cache.{json,md}`` (``--results FILE`` for another place).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (RESULTS, machine_info, machine_line, md_table, utc_stamp, without_timings,  # noqa: E402
                    write_results)



def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graph", required=True, help="GRAPH_DIR (a built graph; its own questions are played)")
    p.add_argument("--n-questions", type=int, default=8, help="the graph's first N questions (>= 1)")
    p.add_argument("--model", default="smollm2", help="the transformers policy's model (default smollm2)")
    p.add_argument("--results", default=None, help="results JSON (default benchmarks/results/eval_prefix_cache.json)")
    args = p.parse_args(argv)
    if args.n_questions < 1:
        p.error(f"--n-questions must be >= 1 (got {args.n_questions})")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.session import open_view
    from harness_g.agent.eval.runner import run_episode
    from harness_g.agent.llm.transformers_backend import TransformersBackend
    from harness_g.agent.policies import make_policy
    from harness_g.agent.policies.llm import LLMPolicy
    from harness_g.graph.artifact import Artifact

    artifact = Artifact.open(args.graph)
    env_cfg = EnvConfig()  # `harness-g eval`'s default: the paper's rules
    items = list(artifact.questions())[: args.n_questions]
    # the policy `harness-g eval --policy transformers --constrain-actions` builds; the second arm shares its weights
    base: LLMPolicy = make_policy("transformers", model=args.model, constrain_actions=True, prefix_cache=False)
    plain = base.backend
    cached = TransformersBackend.from_loaded(plain.model, plain.tokenizer, name=plain.name,
                                             num_threads=plain.num_threads)
    arms = {"plain": plain, "cached": cached}
    rows, same = [], True
    with open_view(args.graph) as view:
        for k, item in enumerate(items):
            order = ("plain", "cached") if k % 2 == 0 else ("cached", "plain")
            played: dict[str, Any] = {}
            for arm in order:
                backend = arms[arm]
                policy = LLMPolicy(backend, **{key: value for key, value in base.settings().items()
                                               if key not in ("model", "interface")}, name=base.name)
                before = (backend.prompt_positions, backend.computed_positions)
                t0 = time.perf_counter()
                traj = run_episode(MenuEnv(view, env_cfg), policy, item)
                seconds = time.perf_counter() - t0
                played[arm] = {"seconds": seconds, "turns": traj.turns,
                               "positions": backend.prompt_positions - before[0],
                               "computed": backend.computed_positions - before[1],
                               "trajectory": json.dumps(without_timings(traj.to_json()), sort_keys=True)}
                backend.clear_states()
            equal = played["plain"]["trajectory"] == played["cached"]["trajectory"]
            same = same and equal
            rows.append({"question": item.id, "turns": played["plain"]["turns"], "same": equal,
                         **{f"{arm}_{key}": played[arm][key]
                            for arm in arms for key in ("seconds", "positions", "computed")}})
            print(f"{item.id}: turns {rows[-1]['turns']}  plain {rows[-1]['plain_seconds']:.1f}s  "
                  f"cached {rows[-1]['cached_seconds']:.1f}s  same={equal}", flush=True)
    med = {arm: statistics.median(r[f"{arm}_seconds"] for r in rows) for arm in arms}
    ratios = [r["plain_seconds"] / r["cached_seconds"] for r in rows if r["cached_seconds"] > 0]
    prefill = {arm: sum(r[f"{arm}_computed"] for r in rows) / max(1, sum(r[f"{arm}_positions"] for r in rows))
               for arm in arms}
    info = machine_info()
    data = {"when": utc_stamp(), "machine": info, "graph": str(args.graph), "model": args.model,
            "questions": len(rows), "env": env_cfg.to_dict(),
            "median_seconds": med, "median_ratio": statistics.median(ratios) if ratios else None,
            "ratio_of_medians": med["plain"] / med["cached"] if med["cached"] else None,
            "computed_per_prompt_position": prefill, "same_episodes": same, "rows": rows}
    md = "\n".join([
        "# `harness-g eval`: the transformers policy's prefix cache", "",
        f"{machine_line(info)}. {len(rows)} questions of `{args.graph}`, model {args.model}, greedy, constrained "
        f"actions, `harness-g eval`'s default environment settings (the paper's), generation on "
        f"{plain.num_threads or 'all'} torch thread(s); each question played with the cache off (plain) and on "
        "(cached), alternating which goes first, over one loaded model.", "",
        md_table(["", "plain", "cached"], [
            ["median seconds per question", f"{med['plain']:.2f}", f"{med['cached']:.2f}"],
            ["prompt positions computed per padded position", f"{prefill['plain']:.3f}", f"{prefill['cached']:.3f}"],
        ]), "",
        f"Median of per-question ratios (plain / cached): **{data['median_ratio']:.2f}x**; ratio of medians "
        f"{data['ratio_of_medians']:.2f}x. Same episodes in every question: **{same}**.", "",
    ])
    out = Path(args.results) if args.results else RESULTS / "eval_prefix_cache.json"
    write_results(out, data, md)
    print(md)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
