"""``harness-g demo``: build the shipped HotpotQA slice (the graph layer's build and stats), then show one menu and
the LLM-free heuristic policy playing it (the agent layer's environment): the whole pipeline in one command."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import harness_g
from harness_g.cli_args import PRESET_HELP, PRESETS, STORE_HELP
from harness_g.errors import ConfigError

# shipped inside the package (package data), so `harness-g demo` works from a wheel too; examples/ in the repo
# is a link to harness_g/examples/
EXAMPLE_DIR = Path(harness_g.__file__).resolve().parent / "examples" / "hotpotqa-dev-slice"


def _step_summary(step: Any, view: Any, width: int = 100) -> str:
    """One trajectory step as text: ``SELECT [Title] sentence…``, ``LOOKUP entity: Name``, ``ANSWER``."""
    if step.chosen is None:
        return f"invalid reply {step.reply!r}"
    if step.action_type == "LOOKUP":
        label = next((a["label"] for a in step.menu if a["id"] == step.chosen), "")
        return "LOOKUP " + (label.split(" | ", 1)[1] if " | " in label else ",".join(step.targets))
    infos = view.sentences(list(step.targets))
    texts = " / ".join(f"[{infos[t].title}] {infos[t].text}" for t in step.targets if t in infos)
    line = f"{step.action_type} {texts}".rstrip()
    return line if len(line) <= width else line[: width - 1].rstrip() + "…"


def cmd_demo(args: argparse.Namespace) -> int:
    """Build the shipped HotpotQA slice into the embedded store, print stats and one menu."""
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.session import open_view
    from harness_g.agent.eval.runner import run_episode
    from harness_g.agent.policies import make_policy
    from harness_g.graph.artifact import Artifact
    from harness_g.graph.cli import build_namespace, cmd_build, cmd_stats
    from harness_g.graph.readers import FORMATS  # noqa: F401  (fail early if readers are broken)

    source = EXAMPLE_DIR / "hotpot_dev_distractor_v1.slice.json"
    if not source.exists():
        raise ConfigError(f"demo data not found at {source} (run the demo from a clone of the repository)")
    print(f"== 1. build: {source.name} (HotpotQA dev slice, CC BY-SA 4.0) -> {args.out}, preset {args.preset}")
    build_argv = ["--input", str(source), "--format", "hotpotqa", "--out", str(args.out), "--preset", args.preset,
                  *(["--store", args.store] if args.store else []), *(["--quiet"] if args.quiet else [])]
    cmd_build(build_namespace(build_argv))
    print("\n== 2. stats")
    cmd_stats(argparse.Namespace(graph_dir=args.out, store=args.store, json=False, no_store=False))
    item = Artifact.open(args.out).questions()[args.question_index]
    print(f"\n== 3. one menu (question {item.id}; gold answer {item.answers[0]!r})\n")
    from harness_g.agent.env.config import EnvConfig

    env_config = EnvConfig(preset=args.preset)
    with open_view(args.out, args.store) as view:
        env = MenuEnv(view, env_config)
        print(env.reset(item))
        traj = run_episode(MenuEnv(view, env_config), make_policy("heuristic"), item)
        print("\n== 4. the LLM-free heuristic policy on it")
        for step in traj.steps:
            print(f"   {step.turn + 1}. {_step_summary(step, view)}")
    print(f"   answer {traj.answer!r} (gold {item.answers[0]!r})")
    print(f"\nnext: harness-g menu {args.out} \"{item.question}\"   (play it yourself)")
    return 0


def register(sub: Any) -> None:
    """Add ``demo`` to the root parser's subcommands ``sub``."""
    p = sub.add_parser("demo", help="build the shipped HotpotQA slice into the embedded store and show one menu")
    p.add_argument("--out", default="demo-graph", metavar="GRAPH_DIR", help="where to build (default ./demo-graph)")
    p.add_argument("--store", help=STORE_HELP)
    p.add_argument("--question-index", type=int, default=0, help="which slice question to show")
    p.add_argument("--preset", choices=PRESETS, default="paper", help=PRESET_HELP + " (graph and menu)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_demo)
