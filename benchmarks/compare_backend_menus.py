"""Do graphs built with two encoder backends give the same menus? (issue 14: the default backend must give the
same U_0 and lookup results for >= 99% of states, or the difference is explained.)

    python benchmarks/compare_backend_menus.py --a /tmp/hg-dev --b /tmp/hg-dev-onnx [--datasets hotpotqa,2wiki,musique]

For every dev question: the lookahead policy plays an episode on graph A (deterministic); its replies are replayed on
graph B, and each state's menu is compared: U_t (the visible sentence ids, in order), the LOOKUP targets, and every
LOOKUP's preview (the sentences it would show). A state counts as identical when all three match. When a state
differs, the replay stops for that question (later states would not be the same states). Each graph's queries are
encoded with its own backend (the one it was built with). Writes benchmarks/results/backend_menus.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, graph_dir, load_avg, machine_info, md_table, questions_of  # noqa: E402


def menu_signature(env: Any) -> dict[str, Any]:
    """U_t, the LOOKUP targets and each LOOKUP's previewed sentences of the current menu."""
    from harness_g.agent.env.actions import ActionType

    obs = env.observe()
    lookups = obs.actions(ActionType.LOOKUP)
    return {"visible": list(obs.visible_ids), "lookups": [a.targets[0] for a in lookups],
            "previews": [list(env.preview(a.id).visible) for a in lookups]}


def compare_dataset(name: str, root_a: Path, root_b: Path) -> dict[str, Any]:
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.env.session import open_view
    from harness_g.agent.policies import make_policy

    with open_view(graph_dir(root_a, name)) as va, open_view(graph_dir(root_b, name)) as vb:
        items = questions_of(va, name)
        ea, eb = MenuEnv(va, EnvConfig()), MenuEnv(vb, EnvConfig())
        states = same = u0_same = 0
        diffs: list[dict[str, Any]] = []
        for item in items:
            policy = make_policy("lookahead")
            ea.reset(item)
            eb.reset(item)
            u0_same += ea.observe().visible_ids == eb.observe().visible_ids
            while not ea.done:
                sa, sb = menu_signature(ea), menu_signature(eb)
                states += 1
                if sa != sb:
                    diffs.append({"question": item.id, "turn": ea.state.turn,
                                  "what": [k for k in sa if sa[k] != sb[k]]})
                    break
                same += 1
                reply = policy.act(ea.observe())
                ea.step(reply)
                eb.step(reply)
        return {"dataset": name, "questions": len(items), "u0_identical": u0_same, "states": states,
                "states_identical": same, "pct_identical": round(100.0 * same / max(1, states), 2),
                "backend_a": va.artifact.embedding_backend, "backend_b": vb.artifact.embedding_backend,
                "differences": diffs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", type=Path, default=Path("/tmp/hg-dev"), help="root of the dev graphs built with backend A")
    ap.add_argument("--b", type=Path, default=Path("/tmp/hg-dev-onnx"), help="root of the same graphs, backend B")
    ap.add_argument("--datasets", default="hotpotqa,2wiki,musique")
    args = ap.parse_args(argv)
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    results = []
    for name in args.datasets.split(","):
        print(f"[{time.strftime('%H:%M:%S')}] {name}", flush=True)
        results.append(compare_dataset(name, args.a, args.b))
    meta = {"started": started, "finished": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine_info(),
            "load_avg_end": load_avg(), "a": str(args.a), "b": str(args.b)}
    (RESULTS / "backend_menus.json").write_text(json.dumps({"meta": meta, "datasets": results}, indent=2) + "\n")
    rows = [[r["dataset"], f"{r['backend_a']} vs {r['backend_b']}", r["questions"], r["u0_identical"], r["states"],
             r["states_identical"], r["pct_identical"],
             "; ".join(f"{d['question'][:12]} t{d['turn']}: {'/'.join(d['what'])}" for d in r["differences"]) or "-"]
            for r in results]
    table = md_table(["dataset", "backends", "questions", "U_0 identical", "states", "states identical", "% identical",
                      "first difference per question (id, turn: what)"], rows)
    text = "\n".join([
        "# Menus on graphs built with two encoder backends", "",
        f"Generated {meta['finished']} by `python benchmarks/compare_backend_menus.py --a {args.a} --b {args.b}`. Every dev "
        "question of each set; the lookahead policy plays on graph A and its replies are replayed on graph B; a state "
        "is identical when U_t, the LOOKUP targets and every LOOKUP's previewed sentences match (a question's replay "
        "stops at its first differing state). Each graph encodes queries with its own backend.", "", table, ""])
    (RESULTS / "backend_menus.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
