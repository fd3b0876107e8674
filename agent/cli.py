"""Agent commands for the ``harness-g`` CLI: ask, eval, menu."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness_g.errors import ConfigError


def _env_config(args: argparse.Namespace):
    from harness_g.agent.config import EnvConfig

    data: dict[str, Any] = {}
    if args.env_config:
        import yaml

        try:
            data = yaml.safe_load(Path(args.env_config).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{args.env_config}: cannot read env config ({exc})") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"{args.env_config}: env config must be a mapping")
    if args.max_turns is not None:
        data["max_turns"] = args.max_turns
    return EnvConfig.from_dict(data)


def _add_env_flags(p: argparse.ArgumentParser) -> None:
    from harness_g.cli import STORE_HELP

    p.add_argument("--store", help=STORE_HELP)
    p.add_argument("--env-config", help="YAML file with EnvConfig fields (max_turns, visible_cap, lookup_cap, ...)")
    p.add_argument("--max-turns", type=int, help="T, decision turns per episode (default 6)")
    p.add_argument("--embedding-model", help="must match the graph's embedding model (default: the graph's)")


def print_trajectory(traj, view, out=sys.stdout) -> None:
    """Human-readable trajectory: each step's menu with the chosen action marked, then the answer."""
    for step in traj.steps:
        out.write(f"\n-- turn {step.turn + 1}: reply {step.reply!r}" + (f"  INVALID: {step.error}" if step.error else "") + "\n")
        for a in step.menu:
            mark = ">>" if a["id"] == step.chosen else "  "
            out.write(f" {mark} {a['label']}\n")
        if step.introduced:
            infos = view.sentences(step.introduced)
            verb = "surfaced" if step.action_type == "LOOKUP" else "committed"
            for sid in step.introduced:
                if sid in infos:
                    out.write(f"    {verb}: [{infos[sid].title}] {infos[sid].text}\n")
    infos = view.sentences(traj.committed)
    out.write("\nCommitted evidence C_T:\n")
    for i, sid in enumerate(traj.committed):
        if sid in infos:
            out.write(f"  {i + 1}. [{infos[sid].title}] {infos[sid].text}\n")
    out.write(f"\nAnswer: {traj.answer!r}  (ended by {traj.terminated_by}, {traj.turns} turns)\n")
    if traj.answers:
        from harness_g.agent.metrics import exact_match, token_f1

        out.write(f"Gold: {traj.answers}  EM={exact_match(traj.answer or '', traj.answers):.0f} F1={token_f1(traj.answer or '', traj.answers):.2f}\n")


def cmd_ask(args: argparse.Namespace) -> int:
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.policies import make_policy
    from harness_g.agent.runner import run_episode
    from harness_g.agent.session import open_graph
    from harness_g.graph.types import QAItem

    item = QAItem(id="ask", question=args.question, answers=tuple(args.answer or ()), dataset="")
    with open_graph(args.graph_dir, args.store, embedding_model=args.embedding_model) as view:
        env = MenuEnv(view, _env_config(args))
        traj = run_episode(env, make_policy(args.policy), item)
        if args.json:
            print(json.dumps(traj.to_json(), indent=2, ensure_ascii=False))
        else:
            print(f"Question: {args.question}")
            print_trajectory(traj, view)
    return 0


def cmd_menu(args: argparse.Namespace) -> int:
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.policies.human import HumanPolicy
    from harness_g.agent.runner import run_episode
    from harness_g.agent.session import open_graph
    from harness_g.graph.types import QAItem

    item = QAItem(id="menu", question=args.question, answers=tuple(args.answer or ()), dataset="")
    with open_graph(args.graph_dir, args.store, embedding_model=args.embedding_model) as view:
        env = MenuEnv(view, _env_config(args))
        traj = run_episode(env, HumanPolicy(), item)
        print_trajectory(traj, view)
        if args.save:
            from harness_g.agent.trajectory import save_jsonl

            save_jsonl(args.save, [traj], append=True)
            print(f"trajectory appended to {args.save}")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from harness_g.agent.evaluate import EvalConfig, run_eval
    from harness_g.agent.policies import make_policy
    from harness_g.agent.session import open_graph
    from harness_g.graph.artifact import Artifact

    if args.questions:
        if not args.format:
            raise ConfigError("--questions needs --format (the questions file's format, e.g. hotpotqa)")
        from harness_g.graph.readers import load_questions

        questions = list(load_questions(args.format, args.questions))
    else:
        questions = Artifact.open(args.graph_dir).questions()
        if not questions:
            raise ConfigError(f"{args.graph_dir} has no questions; pass --questions PATH --format FORMAT")
    config = EvalConfig(policy=args.policy, limit=args.limit, reachability=args.reachability)
    with open_graph(args.graph_dir, args.store, embedding_model=args.embedding_model) as view:
        summary = run_eval(view, make_policy(args.policy), questions, args.out, env_config=_env_config(args), config=config,
                           progress=not args.quiet)
    keys = ["questions", "scored", "errors", "em", "f1", "rs", "evidence_recall", "evidence_precision", "answer_in_evidence",
            "mean_turns", "mean_invalid_turns", "mean_seconds", "reachable_rate"]
    from harness_g.table import format_table

    print(format_table(["metric", "value"], [[k, summary.get(k)] for k in keys if k in summary]))
    print(f"records: {Path(args.out) / 'records.jsonl'}  summary: {Path(args.out) / 'summary.json'}")
    return 0


def register(sub: Any) -> None:
    from harness_g.agent.policies import POLICIES

    policies = ", ".join(sorted(POLICIES))
    p = sub.add_parser("ask", help="answer one question with a policy and print the trajectory")
    p.add_argument("graph_dir", metavar="GRAPH_DIR")
    p.add_argument("question")
    p.add_argument("--policy", default="heuristic", help=f"policy ({policies}); default heuristic")
    p.add_argument("--answer", action="append", help="gold answer (repeatable) to score the result")
    p.add_argument("--json", action="store_true", help="print the trajectory record as JSON")
    _add_env_flags(p)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("menu", help="play the menu yourself in the terminal (type an action id per step)")
    p.add_argument("graph_dir", metavar="GRAPH_DIR")
    p.add_argument("question")
    p.add_argument("--answer", action="append", help="gold answer (repeatable) to score the result")
    p.add_argument("--save", help="append the trajectory to this JSONL file")
    _add_env_flags(p)
    p.set_defaults(func=cmd_menu)

    p = sub.add_parser("eval", help="evaluate a policy on a question set (resumable; writes records + summary)")
    p.add_argument("graph_dir", metavar="GRAPH_DIR")
    p.add_argument("--questions", help="questions file (default: the questions read with the graph's corpus)")
    p.add_argument("--format", help="format of --questions (hotpotqa, 2wiki, musique, nq, popqa, triviaqa, questions)")
    p.add_argument("--policy", default="heuristic", help=f"policy ({policies}); default heuristic")
    p.add_argument("--out", required=True, metavar="DIR", help="run directory (re-run the same DIR to resume)")
    p.add_argument("--limit", type=int, help="first N questions")
    p.add_argument("--reachability", action="store_true", help="also compute menu reachability of the gold evidence")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _add_env_flags(p)
    p.set_defaults(func=cmd_eval)
