"""Agent commands for the ``harness-g`` CLI: ask, eval, menu."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness_g.errors import ConfigError


def _checkpoint_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The policy settings of a ``harness-g train`` checkpoint given as ``--model`` (transformers policy), else {}."""
    if getattr(args, "policy", None) != "transformers" or not getattr(args, "model", None):
        return {}
    from harness_g.agent.llm.checkpoint import policy_settings

    return policy_settings(args.model) or {}


def _env_config(args: argparse.Namespace):
    from harness_g.agent.config import EnvConfig

    data: dict[str, Any] = {}
    trained = _checkpoint_settings(args).get("env")
    if trained and not args.env_config:  # a trained checkpoint is evaluated in the environment it was trained in
        data = dict(trained)
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


#: policies that run a language model and take the --model/--base-url/... flags
LLM_POLICIES = ("transformers", "openai", "vllm")


def _add_interface_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--interface", default="menu", choices=["menu", "free-query", "rag", "naive"],
                   help="knowledge interface: menu (action ids), free-query (no ids: commit/answer by sentence handle, search in free text resolved onto a LOOKUP target), "
                        "rag (top-3 paragraphs by the encoder), naive (question only); default menu")
    g = p.add_argument_group("LLM policies (" + ", ".join(LLM_POLICIES) + ")")
    g.add_argument("--model", default="smollm2",
                   help="model name or path for LLM policies (default smollm2); a `harness-g train` checkpoint "
                        "(RUN_DIR/checkpoint-N, full or LoRA) is played with the settings it was trained with "
                        "(token caps, constrained decoding, context mode, environment config) unless flags override them")
    g.add_argument("--base-url", help="OpenAI-compatible server URL (openai policy), e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--temperature", type=float, help="sampling temperature (default: the policy's)")
    g.add_argument("--seed", type=int, help="sampling seed")
    g.add_argument("--max-new-tokens", type=int, help="generation cap per call")
    g.add_argument("--constrain-actions", action="store_true",
                   help="constrained decoding: the model can only reply with an offered action id (transformers policy; "
                        "makes the menu usable for small models such as SmolLM2-135M)")


def _make_policy(args: argparse.Namespace):
    """``make_policy(--policy)``; LLM policies also get model/base_url/temperature/seed/max_new_tokens."""
    from harness_g.agent.policies import make_policy

    kwargs: dict[str, Any] = {}
    if args.policy in LLM_POLICIES:
        for key in ("model", "base_url", "temperature", "seed", "max_new_tokens"):
            value = getattr(args, key, None)
            if value is not None:
                kwargs[key] = value
        if getattr(args, "constrain_actions", False):
            kwargs["constrain_actions"] = True
        trained = _checkpoint_settings(args)  # a train checkpoint: play it as the trainer did, unless a flag says otherwise
        for key, value in trained.get("policy", {}).items():
            kwargs.setdefault(key, value)
        if trained.get("dtype"):
            kwargs.setdefault("dtype", trained["dtype"])
        if "base_url" in kwargs and args.policy != "openai":
            raise ConfigError(f"--base-url is for the openai policy (an OpenAI-compatible server), not {args.policy!r}")
    return make_policy(args.policy, **kwargs)


def print_trajectory(traj, view, out=None) -> None:
    """Human-readable trajectory: each step's menu with the chosen action marked, then the answer.

    ``out`` defaults to the current ``sys.stdout`` (looked up per call, so redirection works)."""
    out = out or sys.stdout
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
    from harness_g.agent.session import open_graph
    from harness_g.graph.types import QAItem

    item = QAItem(id="ask", question=args.question, answers=tuple(args.answer or ()), dataset="")
    from harness_g.agent.interfaces import make_interface

    with open_graph(args.graph_dir, args.store, embedding_model=args.embedding_model) as view:
        traj = make_interface(args.interface, view, _make_policy(args), _env_config(args)).run(item)
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
    if callable(getattr(sys.stdin, "reconfigure", None)):
        # whatever the locale, an undecodable input byte becomes a surrogate escape (b"\xff" -> "\udcff"), never
        # a crash mid-episode; the reply is kept exactly and saved recoverably (see agent/trajectory.py)
        sys.stdin.reconfigure(errors="surrogateescape")
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
    from harness_g.agent.judge import make_judge

    config = EvalConfig(policy=args.policy, interface=args.interface, limit=args.limit, reachability=args.reachability)
    judge = make_judge(args.judge_base_url, args.judge_model, api_key=args.judge_api_key)
    from harness_g.graph.locks import exclusive_lock

    # the run directory's lock first: a second eval into the same --out is refused before any model loads
    with exclusive_lock(args.out, "--out directory"), \
            open_graph(args.graph_dir, args.store, embedding_model=args.embedding_model) as view:
        summary = run_eval(view, _make_policy(args), questions, args.out, env_config=_env_config(args), config=config,
                           progress=not args.quiet, judge=judge)
    keys = ["questions", "scored", "errors", "em", "f1", "rs", "evidence_recall", "evidence_precision", "answer_in_evidence",
            "mean_turns", "mean_invalid_turns", "mean_seconds", "reachable_rate", "ge", "ge_failures"]
    from harness_g.table import format_table

    print(format_table(["metric", "value"], [[k, summary.get(k)] for k in keys if k in summary]))
    print(f"records: {Path(args.out) / 'records.jsonl'}  summary: {Path(args.out) / 'summary.json'}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from harness_g.agent.report import build_report

    path = build_report(args.run_dirs, args.out, title=args.title, max_questions=args.max_questions, expand=args.expand)
    print(f"report: {path}")
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
    _add_interface_flags(p)
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
    _add_interface_flags(p)
    g = p.add_argument_group("G-E judge (optional; only with --judge-base-url)")
    g.add_argument("--judge-base-url", help="OpenAI-compatible chat endpoint of the G-E judge, e.g. http://host:8000/v1")
    g.add_argument("--judge-model", help="judge model name (default gpt-4o-mini)")
    g.add_argument("--judge-api-key", help="judge API key (default: $JUDGE_API_KEY or $OPENAI_API_KEY)")
    p.set_defaults(func=cmd_eval)

    p = sub.add_parser("report", help="one self-contained HTML report: eval run dirs (tables, SVG plots, trajectories) or a training run (curves)")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="directories written by `harness-g eval --out`")
    p.add_argument("--out", default="report.html", metavar="FILE.html", help="output file (default report.html)")
    p.add_argument("--title", default="harness-g evaluation report")
    p.add_argument("--max-questions", type=int, help="draw at most N trajectories per run (default: all)")
    p.add_argument("--expand", action="store_true", help="trajectory sections start open (for printing / screenshots)")
    p.set_defaults(func=cmd_report)
