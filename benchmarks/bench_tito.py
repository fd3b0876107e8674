"""Do re-tokenised replies differ from the sampled ids? (issue: token-in, token-out; training/tito.py)

Plays real menu rollouts of a policy (default: the offline SmolLM2-135M-Instruct, unconstrained, temperature 1)
against a built graph with the trainer's own rollout path, then compares, for every decision reply and every
answer, the ids the policy sampled with the ids the old path trained: the chat rendered from the decoded, stripped
reply text and tokenised again (``training.chat.build_chat_sequence``). Writes ``OUT/tito.json`` and ``tito.md``.

    python benchmarks/bench_tito.py --graph GRAPH_DIR --questions 8 --group 8 --out benchmarks/results
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import machine_info, md_table, write_results  # noqa: E402


def compare(tokenizer, turn, turn_index: int) -> dict:
    """One reply: its sampled ids against the old path's re-tokenised trained ids."""
    from harness_g.training.chat import Reply, build_chat_sequence

    messages = [*turn.messages, {"role": "assistant", "content": turn.reply}]
    old = build_chat_sequence(tokenizer, messages, [Reply(len(turn.messages), turn_index, turn.stopped)])
    old_ids = [t for t, m in zip(old.input_ids, old.loss_mask) if m]
    sampled = list(turn.reply_ids)
    return {"same": old_ids == sampled, "sampled": tokenizer.convert_ids_to_tokens(sampled),
            "retokenised": tokenizer.convert_ids_to_tokens(old_ids), "reply": turn.reply}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graph", required=True, help="a built GRAPH_DIR (its questions are played)")
    ap.add_argument("--model", default="smollm2", help="policy (harness-g model spec; default the offline SmolLM2)")
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--group", type=int, default=8, help="rollouts per question")
    ap.add_argument("--max-turns", type=int, default=3)
    ap.add_argument("--constrain", action="store_true", help="constrained decoding (replies limited to menu ids)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch

    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.session import open_view
    from harness_g.training.config import ModelConfig
    from harness_g.training.modeling import load_policy, load_tokenizer
    from harness_g.training.rollout import Generator, collect_rollouts

    torch.manual_seed(0)
    spec = ModelConfig(name=args.model)
    tok = load_tokenizer(spec)
    model = load_policy(spec, tok).to("cuda" if torch.cuda.is_available() else "cpu")
    gen = Generator(model, tok, temperature=1.0, top_p=1.0, max_prompt_tokens=8192)
    t0 = time.perf_counter()
    with open_view(args.graph) as view:
        items = list(view.artifact.questions())[: args.questions]
        rollouts, _ = collect_rollouts(view, gen, items, args.group, EnvConfig(max_turns=args.max_turns),
                                       max_action_tokens=8, max_answer_tokens=24, constrain_actions=args.constrain)
    kinds: Counter = Counter()
    examples = []
    for ro in rollouts:
        for t, turn in enumerate(ro.turns):
            c = compare(tok, turn, t)
            kinds["decision", c["same"]] += 1
            if not c["same"] and len(examples) < 12:
                examples.append({"kind": "decision", **c})
        if ro.answer_turn is not None:
            c = compare(tok, ro.answer_turn, -1)
            kinds["answer", c["same"]] += 1
            if not c["same"] and len(examples) < 12:
                examples.append({"kind": "answer", **c})
    rows = []
    for kind in ("decision", "answer"):
        same, diff = kinds[kind, True], kinds[kind, False]
        rows.append([kind, same + diff, diff, diff / (same + diff) if same + diff else float("nan")])
    result = {"info": {**machine_info(), "device": str(next(model.parameters()).device)}, "args": vars(args),
              "seconds": time.perf_counter() - t0, "continued_prompts": gen.continuations.continued,
              "fresh_prompts": gen.continuations.fresh,
              "replies": {r[0]: {"n": r[1], "differ": r[2], "differ_frac": r[3]} for r in rows}, "examples": examples}
    md = (f"Model {args.model}, {len(items)} questions x {args.group} rollouts, T = {args.max_turns}, temperature 1, "
          f"{'constrained' if args.constrain else 'unconstrained'} decoding, graph {args.graph}\n\n"
          + md_table(["reply", "n", "re-tokenised != sampled", "fraction"], rows) + "\n")
    write_results(Path(args.out) / "tito.json", result, md)
    print(md)
    print(json.dumps(examples[:4], ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
