"""Rollout time with and without one of the generator's prefill savings, paired per question.

``--switch share_prompts`` (the default): shared prompt prefill (training/prompt_sharing.py) against prefilling
every prompt, with no cross-turn cache in either. ``--switch prefix_cache``: each episode's key/value cache kept from
turn to turn (training/prefix_cache.py) against prefilling every turn's whole prompt, with shared prefill in both
(the multi-turn context is where it saves anything).

Each question's group of N_g rollouts is played twice through ``collect_rollouts`` with the trainer's transformers
generator -- once with the switch off (the plain baseline), once with it on -- from the same torch seed, in
alternating order. Reports the medians of the per-question rollout seconds, their ratio, the prompt positions
computed per real prompt token, and whether both played the same rollouts (same replies, same trajectories), in
``--results FILE`` (default ``benchmarks/results/prompt_sharing.json`` or ``prefix_cache.json``, and its ``.md``).
Settings and arms are ``repro_small.py``'s (the same flags), so the numbers speak for its runs:

    python benchmarks/bench_prompt_sharing.py --graph /tmp/repro31/graphs/2wiki \
        --questions ../shared/data/2wikimultihopqa/dev.subset.json --format 2wiki --n-questions 6 --threads 2 \
        --set rollout.context=markov --set rollout.max_turns=2 --set rollout.max_action_tokens=4 \
        --set rollout.max_answer_tokens=12 --set "rollout.env={visible_cap: 3, lookup_cap: 3, answer_with_max: 1}"
"""
from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import repro_small  # noqa: E402
from common import (RESULTS, machine_info, machine_line, md_table, utc_stamp, without_timings,  # noqa: E402
                    write_results)



#: per switch: (the other saving's setting in both runs, the results file's stem, the page's title and its legend)
SWITCHES = {
    "share_prompts": ({"prefix_cache": False}, "prompt_sharing", "Shared prompt prefill",
                      "plain = every row's prompt prefilled (`share_prompts=False`); shared = each distinct prompt "
                      "prefilled once and its key/value cache copied to the rows that share it (the default)."),
    "prefix_cache": ({"share_prompts": True}, "prefix_cache", "Cross-turn prefix cache",
                     "plain = every turn's whole prompt prefilled (`rollout.prefix_cache=false`); shared = each "
                     "episode's key/value cache kept from one turn to the next, so only the new tokens are computed "
                     "(the default); shared prompt prefill in both."),
}


def play(run, arm: str, config, view, models, item, on: bool, switch: str = "share_prompts") -> dict:
    """One group of ``item`` on ``arm`` with ``switch`` on or off: wall seconds, prompt counters and the rollouts
    (JSON text, timings removed)."""
    import torch

    from harness_g.training.rollout import collect_rollouts

    gen = models.generator(config)
    for name, value in {**SWITCHES[switch][0], switch: on}.items():
        setattr(gen, name, value)
    r = config.rollout
    torch.manual_seed(repro_small.question_seed(run.seed, item.id))
    t0 = time.perf_counter()
    rollouts, stats = collect_rollouts(view, gen, [item], r.group_size, config.env_config(),
                                       max_action_tokens=r.max_action_tokens, max_answer_tokens=r.max_answer_tokens,
                                       constrain_actions=r.constrain_actions, interface=arm, context=r.context)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "prompt_tokens": gen.prompt_tokens, "padded": gen.padded_prompt_tokens,
            "computed": gen.prefilled_prompt_positions,
            "rollouts": json.dumps(without_timings([repro_small.rollout_record(ro) for ro in rollouts]), sort_keys=True)}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    switch, results = "share_prompts", None
    if "--switch" in argv:  # this script's own flags; the rest are repro_small.py's
        k = argv.index("--switch")
        switch, argv = argv[k + 1], argv[:k] + argv[k + 2:]
        if switch not in SWITCHES:
            print(f"bench_prompt_sharing.py: error: --switch {switch!r}: expected one of {', '.join(SWITCHES)}",
                  file=sys.stderr)
            return 2
    if "--results" in argv:
        k = argv.index("--results")
        results, argv = Path(argv[k + 1]), argv[:k] + argv[k + 2:]
    _, stem, title, legend = SWITCHES[switch]
    results = results or RESULTS / f"{stem}.json"
    ap = repro_small.parser()
    ap.prog = "bench_prompt_sharing.py"
    args = ap.parse_args(["equivalence", *argv])
    if "--out" not in argv:  # repro_small's settings record goes to a scratch folder, not its result folder
        args.out = Path(tempfile.mkdtemp(prefix="hg-share-"))
    run = repro_small.run_of(args)
    view_cm, view, items = repro_small._open(run)
    rows, arms = [], {}
    try:
        configs = {arm: repro_small.arm_config(run, arm) for arm in repro_small.ARMS}
        models = repro_small.Models(configs["menu"], run.device)
        for arm in repro_small.ARMS:
            per_q = []
            for k, item in enumerate(items):
                order = (False, True) if k % 2 == 0 else (True, False)
                got = {on: play(run, arm, configs[arm], view, models, item, on, switch) for on in order}
                per_q.append({"question_id": item.id, "plain_s": got[False]["seconds"], "shared_s": got[True]["seconds"],
                              "same_rollouts": got[False]["rollouts"] == got[True]["rollouts"],
                              "prompt_tokens": got[True]["prompt_tokens"], "padded": got[False]["padded"],
                              "computed_shared": got[True]["computed"], "computed_plain": got[False]["computed"]})
                print(f"{arm} {item.id}: plain {per_q[-1]['plain_s']:.1f} s, shared {per_q[-1]['shared_s']:.1f} s, "
                      f"same rollouts: {per_q[-1]['same_rollouts']}", file=sys.stderr, flush=True)
            plain = statistics.median(q["plain_s"] for q in per_q)
            shared = statistics.median(q["shared_s"] for q in per_q)
            real = sum(q["prompt_tokens"] for q in per_q)
            arms[arm] = {"questions": per_q, "plain_median_s": plain, "shared_median_s": shared,
                         "ratio_median": statistics.median(q["plain_s"] / q["shared_s"] for q in per_q),
                         "computed_per_prompt_token": {"plain": sum(q["computed_plain"] for q in per_q) / real,
                                                       "shared": sum(q["computed_shared"] for q in per_q) / real},
                         "same_rollouts": sum(q["same_rollouts"] for q in per_q)}
            a = arms[arm]
            rows.append([arm, len(per_q), f"{plain:.1f}", f"{shared:.1f}", f"{a['ratio_median']:.2f}x",
                         f"{a['computed_per_prompt_token']['plain']:.2f}", f"{a['computed_per_prompt_token']['shared']:.2f}",
                         f"{a['same_rollouts']}/{len(per_q)}"])
    finally:
        view_cm.__exit__(None, None, None)
    info = machine_info()
    headers = ["arm", "questions", "plain s (median)", "shared s (median)", "speed-up (median of per-question ratios)",
               "positions / prompt token, plain", "shared", "same rollouts"]
    md = "\n".join([
        f"# {title}: rollout time per question group", "",
        f"{utc_stamp()}. {machine_line(info)}. N_g = {run.group_size}, the untrained {run.model}, graph `{run.graph}`, "
        f"the first {len(items)} questions; settings `{' '.join(run.sets) or 'the paper preset'}`. Each question's group "
        "played twice from the same torch seed (plain first on even questions, shared first on odd ones).", "",
        md_table(headers, rows), "",
        f"{legend} positions / prompt token = prompt positions the model computed per real prompt token (padding "
        "included).",
    ])
    write_results(results, {"machine": info, "switch": switch,
                            "run": {"graph": str(run.graph), "questions": len(items), "sets": list(run.sets),
                                                 "group_size": run.group_size, "model": run.model}, "arms": arms}, md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
