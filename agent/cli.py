"""Agent commands for the ``harness-g`` CLI: ask, eval, menu, report, browse, serve-env."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness_g.errors import ConfigError, HarnessError
from harness_g.run_kinds import RunKind, register_run_kind


def _checkpoint_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The policy settings of a ``harness-g train`` checkpoint given as ``--model`` (transformers policy), else {}."""
    if getattr(args, "policy", None) != "transformers" or not getattr(args, "model", None):
        return {}
    from harness_g.agent.llm.checkpoint import policy_settings

    return policy_settings(args.model) or {}


#: flags that are shortcuts for config fields (argparse dest -> dotted field); ``--set`` wins over them
ENV_SHORTCUTS = {"max_turns": "env.max_turns"}
#: the LLM policy flags of ``eval``: shortcuts for its ``eval.llm`` section
#: (:class:`~harness_g.agent.eval.config.PolicyConfig`)
LLM_SHORTCUTS = {name: f"eval.llm.{name}" for name in ("model", "base_url", "temperature", "seed", "max_new_tokens",
                                                        "constrain_actions")}
EVAL_SHORTCUTS = {**ENV_SHORTCUTS, "policy": "eval.policy", "interface": "eval.interface", "limit": "eval.limit",
                  "reachability": "eval.reachability", **LLM_SHORTCUTS}


def _with_eval_settings(args: argparse.Namespace, config: Any) -> argparse.Namespace:
    """``args`` with ``policy``/``interface`` and the LLM settings (``eval.llm``: model, base_url, api_key_env, ...)
    as an :class:`EvalRunConfig` resolved them (the policy factory reads the flags); ``args`` itself for the other
    configs."""
    run = getattr(config, "eval", None)
    if run is None:
        return args
    from dataclasses import asdict

    return argparse.Namespace(**{**vars(args), "policy": run.policy, "interface": run.interface, **asdict(run.llm)})


def _run_config(args: argparse.Namespace, cls: type, shortcuts: dict[str, str]) -> Any:
    """``cls`` (EnvRunConfig or EvalRunConfig): defaults < a trained checkpoint's environment (it is played in the
    environment it was trained in) < --config < the shortcut flags < --set. A --config whose environment differs
    from the checkpoint's is refused (:func:`_refuse_env_mismatch`); flags and --set still override it on purpose."""
    from harness_g.agent.config import load_agent_config
    from harness_g.config_loader import parse_set

    overrides = {name: getattr(args, dest) for dest, name in shortcuts.items() if getattr(args, dest, None) is not None}
    overrides.update(parse_set(text) for text in args.set)
    if getattr(args, "preset", None) is not None:  # --preset is a shortcut flag: it wins over the checkpoint's
        overrides.setdefault("env.preset", args.preset)
    config = load_agent_config(cls, args.config, overrides)
    settings = _checkpoint_settings(_with_eval_settings(args, config))
    trained = settings.get("env")
    if trained and "preset" not in trained:  # trained before presets: under today's extended rules, anchor in article_pool
        trained = {"preset": "extended", "anchor_slot": trained.get("article_pool", True), **trained}
    if trained:
        played = load_agent_config(cls, args.config, {**{f"env.{k}": v for k, v in trained.items()}, **overrides})
        if args.config:
            _refuse_env_mismatch(args, cls, config, played, overrides)
        config = played
    if settings.get("interface") and getattr(config, "eval", None) is not None:
        config = _checkpoint_interface(args, config, settings["interface"], overrides)
    return config


def _checkpoint_interface(args: argparse.Namespace, config: Any, interface: str, overrides: dict[str, Any]) -> Any:
    """``config`` with ``eval.interface`` the checkpoint's own (a free-query checkpoint plays the free-query arm, as it
    was trained), unless ``--interface``/``--set eval.interface`` chose one on purpose; a --config file naming another
    interface is refused in one line, as a differing environment is (:func:`_refuse_env_mismatch`)."""
    from dataclasses import replace

    if "eval.interface" in overrides:
        return config
    if args.config:
        from harness_g.config_loader import read_yaml

        named = (read_yaml(args.config).get("eval") or {}).get("interface")
        if named is not None and named != interface:
            raise ConfigError(f"{args.config}: eval.interface {named!r} differs from the interface {args.model} was "
                              f"trained with ({interface!r}, harness_g_policy.json); drop it from the file to play the "
                              "checkpoint as trained, or give --interface to evaluate it under another on purpose")
    return replace(config, eval=replace(config.eval, interface=interface))


def _refuse_env_mismatch(args: argparse.Namespace, cls: type, filed: Any, played: Any, overrides: dict[str, Any]) -> None:
    """ConfigError naming every environment setting that --config resolves differently from the checkpoint's
    ``harness_g_policy.json`` (``filed``: the config as --config and the flags give it; ``played``: with the
    checkpoint's env under the flags). Only what the file decides counts: a field the file does not name or change
    from the default takes the checkpoint's value, and a flag or --set decides over both."""
    from dataclasses import fields

    from harness_g.agent.config import _env_file_as_section, load_agent_config
    from harness_g.config_loader import read_yaml

    plain = load_agent_config(cls, None, overrides).env  # what the defaults and the flags give, without the file
    section = _env_file_as_section(cls)(read_yaml(args.config)).get("env")
    named = set(section) if isinstance(section, dict) else set()  # the env fields the file names
    differ = [f"{f.name} {getattr(filed.env, f.name)!r} (checkpoint {getattr(played.env, f.name)!r})"
              for f in fields(filed.env)
              if getattr(filed.env, f.name) != getattr(played.env, f.name)
              and (f.name in named or getattr(filed.env, f.name) != getattr(plain, f.name))]
    if differ:
        raise ConfigError(f"{args.config}: env settings differ from those {args.model} was trained with "
                          f"(harness_g_policy.json): {', '.join(differ)}; drop them from the file to play the "
                          "checkpoint as trained, or give them with --set to evaluate it under other settings on purpose")


def _env_config(args: argparse.Namespace):
    """The EnvConfig of ``ask``/``menu``/``browse`` (see :func:`_run_config`)."""
    from harness_g.agent.config import EnvRunConfig

    return _run_config(args, EnvRunConfig, ENV_SHORTCUTS).env


def _add_env_flags(p: argparse.ArgumentParser, sections: str = "env") -> None:
    """--store, the config flags (``sections``: what --config/--set address), --max-turns, --embedding-model."""
    from harness_g.cli_args import STORE_HELP

    p.add_argument("--store", help=STORE_HELP)
    g = p.add_argument_group(f"config ({sections} sections; precedence: defaults < --config < shortcut flags such as "
                             "--max-turns < --set, so --set wins over the file)")
    g.add_argument("--config", "--env-config", dest="config", metavar="FILE.yaml",
                   help=f"YAML config with sections {sections} (e.g. 'env: {{visible_cap: 4}}'); a file of EnvConfig "
                        "fields alone (max_turns, visible_cap, lookup_cap, ...) is the env section, so --env-config is "
                        "the same flag")
    from harness_g.cli_args import PRESET_HELP, PRESETS

    g.add_argument("--preset", choices=PRESETS,
                   help=PRESET_HELP + " (shortcut for --set env.preset=NAME; the file's 'preset:' otherwise; the graph "
                                      "must have been built under the same preset)")
    g.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a field, e.g. --set env.visible_cap=4 (parsed by the field's type; repeatable; wins "
                        "over --config and the shortcut flags)")
    g.add_argument("--max-turns", type=int, help="shortcut for --set env.max_turns=N: T, decision turns per episode "
                                                 "(default 6)")
    p.add_argument("--embedding-model", help="must match the graph's embedding model (default: the graph's)")
    from harness_g.graph.encoders import BACKENDS

    p.add_argument("--embedding-backend", choices=BACKENDS,
                   help="query encoder backend (default: the one the graph was built with; torch and onnx give the same "
                        "vectors, onnx-int8 is faster and approximate)")


def _add_interface_flags(p: argparse.ArgumentParser, shortcut: bool) -> None:
    """--interface (no default: a trained checkpoint's own interface, else menu, decided once the model is known) and
    the LLM flags. ``shortcut`` (eval): the flags are shortcuts for config fields (eval.interface and eval.llm, whose
    defaults are :class:`~harness_g.agent.eval.config.PolicyConfig`'s)."""
    from harness_g.agent.eval.interfaces import INTERFACES
    from harness_g.agent.policies import llm_policies

    def note(name: str) -> str:
        return f" (shortcut for --set eval.llm.{name}=VALUE)" if shortcut else ""

    p.add_argument("--interface", default=None, choices=INTERFACES.names(),
                   help="knowledge interface: menu (action ids), free-query (no ids: commit/answer by sentence handle, search in free text resolved onto a LOOKUP target), "
                        "rag (top-3 paragraphs by the encoder), naive (question only); default: a `harness-g train` checkpoint's own "
                        "interface (harness_g_policy.json), else menu")
    g = p.add_argument_group("LLM policies (" + ", ".join(llm_policies()) + ")")
    g.add_argument("--model", default=None if shortcut else "smollm2",
                   help="model name or path for LLM policies (default smollm2); a `harness-g train` checkpoint "
                        "(RUN_DIR/checkpoint-N, full or LoRA) is played with the settings it was trained with "
                        "(interface, token caps, constrained decoding, context mode, environment config) unless flags override them"
                        + note("model"))
    g.add_argument("--base-url", help="OpenAI-compatible server URL (openai policy), e.g. http://127.0.0.1:8000/v1"
                                      + note("base_url"))
    g.add_argument("--temperature", type=float, help="sampling temperature (default: the policy's)"
                                                     + note("temperature"))
    g.add_argument("--seed", type=int, help="sampling seed" + note("seed"))
    g.add_argument("--max-new-tokens", type=int, help="generation cap per call" + note("max_new_tokens"))
    g.add_argument("--constrain-actions", action="store_true", default=None if shortcut else False,
                   help="constrained decoding: the model can only reply with an offered action id (transformers policy; "
                        "makes the menu usable for small models such as SmolLM2-135M)" + note("constrain_actions"))


def _make_policy(args: argparse.Namespace, **gold: Any):
    """``make_policy(--policy)``; LLM policies also get model/base_url/temperature/seed/max_new_tokens; the oracle
    gets ``gold`` (view, env_config, questions: only `harness-g eval` has gold labels)."""
    from harness_g.agent.policies import llm_policies, make_policy

    kwargs: dict[str, Any] = {}
    if args.policy == "oracle":
        from harness_g.agent.policies.oracle import NEEDS_GOLD

        if not gold:
            raise ConfigError(NEEDS_GOLD)
        if getattr(args, "interface", "menu") != "menu":
            raise ConfigError("the oracle policy plays the menu interface only (--interface menu)")
        kwargs.update(gold)
    if args.policy in llm_policies():
        for key in ("model", "base_url", "temperature", "seed", "max_new_tokens"):
            value = getattr(args, key, None)
            if value is not None:
                kwargs[key] = value
        if getattr(args, "constrain_actions", False):
            kwargs["constrain_actions"] = True
        if getattr(args, "prefix_cache", True) is False:  # eval.llm.prefix_cache: the transformers backend's switch
            if args.policy != "transformers":
                raise ConfigError(f"eval.llm.prefix_cache applies to the transformers policy only, not {args.policy!r} "
                                  "(its server or engine caches prefixes its own way)")
            kwargs["prefix_cache"] = False
        if args.policy == "openai" and getattr(args, "api_key_env", None):
            kwargs["api_key_env"] = args.api_key_env  # the variable's name: the key itself is never in a config
        trained = _checkpoint_settings(args)  # a train checkpoint: play it as the trainer did, unless a flag says otherwise
        for key, value in trained.get("policy", {}).items():
            kwargs.setdefault(key, value)
        if trained.get("dtype"):
            kwargs.setdefault("dtype", trained["dtype"])
        if "base_url" in kwargs and args.policy != "openai":
            raise ConfigError(f"--base-url is for the openai policy (an OpenAI-compatible server), not {args.policy!r}")
    return make_policy(args.policy, **kwargs)


GLOSS_CHARS = 90  # sentence text shown after a SELECT / ANSWER_WITH line of a printed trajectory


def _sentence_gloss(action: dict, texts: dict) -> str:
    """`` | <sentence text>`` for a single-sentence SELECT / ANSWER_WITH line (cut to GLOSS_CHARS), else ""."""
    if action["type"] not in ("SELECT", "ANSWER_WITH") or len(action["targets"]) != 1 or action["targets"][0] not in texts:
        return ""
    text = texts[action["targets"][0]].text
    return " | " + (text if len(text) <= GLOSS_CHARS else text[: GLOSS_CHARS - 1].rstrip() + "…")


def print_trajectory(traj, view, out=None) -> None:
    """Human-readable trajectory: each step's menu with the chosen action marked, then the answer.

    ``out`` defaults to the current ``sys.stdout`` (looked up per call, so redirection works)."""
    out = out or sys.stdout
    for step in traj.steps:
        out.write(f"\n-- turn {step.turn + 1}: reply {step.reply!r}" + (f"  INVALID: {step.error}" if step.error else "") + "\n")
        texts = view.sentences([t for a in step.menu if a["type"] in ("SELECT", "ANSWER_WITH") for t in a["targets"]])
        for a in step.menu:
            mark = ">>" if a["id"] == step.chosen else "  "
            out.write(f" {mark} {a['label']}{_sentence_gloss(a, texts)}\n")
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
        from harness_g.agent.eval.metrics import exact_match, token_f1

        out.write(f"Gold: {traj.answers}  EM={exact_match(traj.answer or '', traj.answers):.0f} F1={token_f1(traj.answer or '', traj.answers):.2f}\n")


def cmd_ask(args: argparse.Namespace) -> int:
    from harness_g.agent.env.session import open_view
    from harness_g.graph.types import QAItem

    if args.interface is None:  # a trained checkpoint plays the interface it was trained on, else the menu
        args.interface = _checkpoint_settings(args).get("interface") or "menu"
    _check_policy_flags(args)
    item = QAItem(id="ask", question=args.question, answers=tuple(args.answer or ()), dataset="")
    from harness_g.agent.eval.interfaces import make_interface

    if args.policy == "oracle":  # before the graph loads: an ad-hoc question has no gold labels
        _make_policy(args)

    with open_view(args.graph_dir, args.store, embedding_model=args.embedding_model,
                  embedding_backend=args.embedding_backend) as view:
        traj = make_interface(args.interface, view, _make_policy(args), _env_config(args)).run(item)
        if args.json:
            print(json.dumps(traj.to_json(), indent=2, ensure_ascii=False))
        else:
            print(f"Question: {args.question}")
            print_trajectory(traj, view)
    return 0


def cmd_menu(args: argparse.Namespace) -> int:
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.session import open_view
    from harness_g.agent.eval.runner import run_episode
    from harness_g.agent.policies.human import HumanPolicy
    from harness_g.graph.types import QAItem

    item = QAItem(id="menu", question=args.question, answers=tuple(args.answer or ()), dataset="")
    if callable(getattr(sys.stdin, "reconfigure", None)):
        # whatever the locale, an undecodable input byte becomes a surrogate escape (b"\xff" -> "\udcff"), never
        # a crash mid-episode; the reply is kept exactly and saved recoverably (see agent/env/trajectory.py)
        sys.stdin.reconfigure(errors="surrogateescape")
    with open_view(args.graph_dir, args.store, embedding_model=args.embedding_model,
                  embedding_backend=args.embedding_backend) as view:
        env = MenuEnv(view, _env_config(args))
        traj = run_episode(env, HumanPolicy(), item)
        print_trajectory(traj, view)
        if args.save:
            from harness_g.agent.env.trajectory import save_jsonl

            save_jsonl(args.save, [traj], append=True)
            print(f"trajectory appended to {args.save}")
    return 0


#: the terminal summary of `harness-g eval`: metric -> unit (scores are macro averages over scored questions)
SUMMARY_UNITS = {
    "questions": "count", "scored": "count", "unscored": "count", "errors": "count", "em": "% (x100)",
    "f1": "token F1 x100",
    "rs": "R-S: cosine(retrieved, gold evidence) x100", "evidence_recall": "% of gold units in C_T",
    "evidence_precision": "% of C_T that is gold", "answer_in_evidence": "% with a gold answer in C_T",
    "mean_turns": "turns/question", "mean_invalid_turns": "turns/question",
    "mean_seconds": "s/question: all it did (episode, scoring, judge, reachability)",
    "mean_episode_seconds": "s/question: the episode (policy + environment)",
    "mean_reachability_seconds": "s/question: the reachability search", "mean_judge_seconds": "s/question: the judge",
    "reachable_rate": "% of decided questions", "ge": "G-E x100", "ge_failures": "count",
}


def _check_policy_flags(args: argparse.Namespace) -> None:
    """What can be wrong with --policy and its flags, checked before any graph or model loads (seconds to minutes)."""
    import os

    from harness_g.agent.policies import POLICIES

    POLICIES.get(args.policy)  # unknown: "unknown policy NAME; available: ..."
    if args.policy == "openai":
        missing = [flag for flag, value, env in (("--base-url", args.base_url, "OPENAI_BASE_URL"),
                                                 ("--model", args.model, "OPENAI_MODEL")) if not (value or os.environ.get(env))]
        if missing:
            raise ConfigError(f"the openai policy needs {' and '.join(missing)}, e.g. --base-url http://127.0.0.1:8011/v1 "
                              "--model smollm2")


def select_questions(questions: list, path: str | Path, source: str | Path) -> list:
    """The questions whose ids ``path`` lists (one per line, blank lines skipped), in the file's order: e.g. a
    training run's RUN_DIR/heldout_ids.txt. An id that is not among ``questions`` (read from ``source``) or is
    listed twice is a one-line ConfigError naming the file and line; so is a file with no id."""
    from harness_g.graph.readers.common import read_text, require_file

    by_id = {q.id: q for q in questions}
    out, seen = [], set()
    for n, line in enumerate(read_text(require_file(path)).splitlines(), 1):
        qid = line.strip()
        if not qid:
            continue
        if qid not in by_id:
            raise ConfigError(f"{path}:{n}: question id {qid!r} is not among the {len(by_id)} questions of {source}")
        if qid in seen:
            raise ConfigError(f"{path}:{n}: question id {qid!r} is listed twice")
        seen.add(qid)
        out.append(by_id[qid])
    if not out:
        raise ConfigError(f"{path}: no question id in it (one id per line)")
    return out


def _run_questions(args: argparse.Namespace, settings: dict[str, Any]) -> None:
    """``eval --model RUN_DIR/checkpoint-N`` without GRAPH_DIR reproduces the trainer's own evaluation: the graph
    the run trained on, its ``data.questions`` file if it had one, and (unless --question-ids or --questions says
    otherwise) the run's held-out questions, ``RUN_DIR/heldout_ids.txt`` (``data.eval_questions``); a note on
    stderr says which. Sets ``args.graph_dir`` (None when ``settings`` names no graph), ``questions``, ``format``,
    ``question_ids`` in place."""
    args.graph_dir = settings.get("graph_dir") or None
    if not args.graph_dir:
        return
    if args.questions:  # questions the user named: all of them, or --question-ids of them
        return
    if settings.get("questions"):
        args.questions, args.format = settings["questions"], settings.get("questions_format")
    held_out = Path(args.model).resolve().parent / "heldout_ids.txt"  # RUN_DIR (training.data.HELDOUT_IDS)
    if args.question_ids is None and held_out.is_file():
        args.question_ids = str(held_out.resolve())
        print(f"eval: {args.model} is played on its run's held-out questions ({args.question_ids}) in its graph "
              f"{args.graph_dir}; give GRAPH_DIR to evaluate every question of a graph", file=sys.stderr)


def cmd_eval(args: argparse.Namespace) -> int:
    from harness_g.agent.config import EvalRunConfig
    from harness_g.agent.env.session import open_view
    from harness_g.agent.eval.run import run_eval
    from harness_g.config_loader import describe
    from harness_g.graph.artifact import Artifact

    run = _run_config(args, EvalRunConfig, EVAL_SHORTCUTS)
    if args.show_config:
        print("\n".join(describe(run)))
        return 0
    args = _with_eval_settings(args, run)
    if not args.graph_dir:  # a train checkpoint: the graph, questions and held-out split it was trained with
        _run_questions(args, _checkpoint_settings(args))
    if not args.graph_dir or not args.out:
        raise ConfigError("eval needs GRAPH_DIR and --out DIR")
    _check_policy_flags(args)

    if args.questions:
        if not args.format:
            raise ConfigError("--questions needs --format (the questions file's format, e.g. hotpotqa)")
        from harness_g.graph.config import graph_rules
        from harness_g.graph.readers import load_questions

        rules = graph_rules(Artifact.open(args.graph_dir).manifest)  # gold ids as the graph split its sentences
        questions = list(load_questions(args.format, args.questions,
                                        join_fragments=bool(rules and rules[1]["join_fragments"])))
    else:
        questions = Artifact.open(args.graph_dir).questions()
        if not questions:
            raise ConfigError(f"{args.graph_dir} has no questions; pass --questions PATH --format FORMAT")
    if args.question_ids:
        questions = select_questions(questions, args.question_ids, args.questions or args.graph_dir)
    from harness_g.agent.eval.judge import make_judge

    config, env_config = run.eval, run.env
    if args.policy == "oracle":  # before anything is written: a question without gold labels can only be an error
        from harness_g.agent.policies.oracle import require_gold

        require_gold(questions[: config.limit])
    judge = make_judge(args.judge_base_url, args.judge_model, api_key=args.judge_api_key)
    from harness_g.graph.locks import exclusive_lock

    # the run directory's lock first: a second eval into the same --out is refused before any model loads
    with exclusive_lock(args.out, "--out directory"), \
            open_view(args.graph_dir, args.store, embedding_model=args.embedding_model,
                  embedding_backend=args.embedding_backend) as view:
        gold = {"view": view, "env_config": env_config, "questions": questions} if args.policy == "oracle" else {}
        summary = run_eval(view, _make_policy(args, **gold), questions, args.out, env_config=env_config, config=config,
                           progress=not args.quiet, judge=judge)
    from harness_g.table import format_table

    records = Path(args.out) / "records.jsonl"
    if summary["questions"] and not summary["scored"]:  # no score line: every metric would be None
        raise HarnessError(f"nothing could be scored: of {summary['questions']} questions {summary['errors']} "
                           f"failed and {summary['unscored']} have neither gold answers nor gold evidence; "
                           f"the trajectories are in {records}")
    print(format_table(["metric", "value", "unit"], [[k, summary.get(k), unit] for k, unit in SUMMARY_UNITS.items() if k in summary]))
    print(f"records: {records}  summary: {Path(args.out) / 'summary.json'}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """``harness-g report RUN_DIR...``: each run kind (:mod:`harness_g.run_kinds`) draws its own runs, eval runs first."""
    from harness_g.run_kinds import group_runs

    groups = group_runs(list(args.run_dirs))
    for kind, runs in groups:
        kind.report(runs, args, len(groups) == 1)
    return 0


#: ``report --title`` when none is given, for the eval runs' page
EVAL_REPORT_TITLE = "harness-g evaluation report"


def _report_eval_runs(run_dirs: list[str], args: argparse.Namespace, alone: bool) -> None:
    """The eval runs (``harness-g eval --out``) share one page at ``--out``."""
    from harness_g.agent.eval.report import build_report

    title = EVAL_REPORT_TITLE if args.title is None else args.title
    path = build_report(run_dirs, args.out, title=title, max_questions=args.max_questions, expand=args.expand)
    print(f"report: {path}")


register_run_kind(RunKind("eval run", claims=None, report=_report_eval_runs))  # the default: what no other kind claims


def cmd_browse(args: argparse.Namespace) -> int:
    """Draw a question's menu neighbourhood, or a Cypher query's result, as one self-contained HTML page."""
    from harness_g.agent.eval import browse

    if (args.question is None) == (args.cypher is None):
        raise ConfigError("give a QUESTION (text or question id) or --cypher QUERY" + (", not both" if args.question else ""))
    if args.param and args.cypher is None:
        raise ConfigError("--param needs --cypher")
    if args.port is not None and not args.serve:
        raise ConfigError("--port needs --serve")
    if args.cypher is not None:
        from harness_g.cli_args import parse_param
        from harness_g.graph.load import open_store

        params = dict(parse_param(p) for p in args.param or [])
        with open_store(args.graph_dir, args.store) as store:  # refused when it holds another graph
            data = browse.cypher_graph(store, args.cypher, params)
        title = args.title or f"harness-g browse: Cypher on {Path(args.graph_dir).name}"
    else:
        from harness_g.agent.env.session import open_view
        from harness_g.graph.artifact import Artifact

        item = browse.resolve_question(Artifact.open(args.graph_dir).questions(), args.question, str(args.graph_dir))
        with open_view(args.graph_dir, args.store, embedding_model=args.embedding_model,
                  embedding_backend=args.embedding_backend) as view:
            config = browse.BrowseConfig(env=_env_config(args), all_mentions=not args.lookupable_only)
            data = browse.neighbourhood(view, item, config)
        title = args.title or "harness-g browse: menu neighbourhood" + (f" of {item.id}" if item.id != "browse" else "")
    path = browse.write_page(data, args.out, title)
    print(f"browse: {path}  ({len(data.nodes)} nodes, {len(data.edges)} edges)", flush=True)
    if args.serve:
        browse.serve(path, 8000 if args.port is None else args.port)
    return 0


def cmd_serve_env(args: argparse.Namespace) -> int:
    from harness_g.agent.integrations.serve_cli import run

    return run(args, _env_config(args))


def register(sub: Any) -> None:
    """Add the agent's commands (ask, menu, eval, report, browse, serve-env) to the root parser's subparsers."""
    from harness_g.agent.policies import POLICIES

    policies = ", ".join(POLICIES.names())
    _register_ask(sub, policies)
    _register_menu(sub)
    _register_eval(sub, policies)
    _register_report(sub)
    _register_browse(sub)
    _register_serve_env(sub)


def _register_ask(sub: Any, policies: str) -> None:
    p = sub.add_parser("ask", help="answer one question with a policy and print the trajectory")
    p.add_argument("graph_dir", metavar="GRAPH_DIR")
    p.add_argument("question")
    p.add_argument("--policy", default="heuristic", help=f"policy ({policies}); default heuristic")
    p.add_argument("--answer", action="append", help="gold answer (repeatable) to score the result")
    p.add_argument("--json", action="store_true", help="print the trajectory record as JSON")
    _add_env_flags(p)
    _add_interface_flags(p, shortcut=False)
    p.set_defaults(func=cmd_ask)


def _register_menu(sub: Any) -> None:
    p = sub.add_parser("menu", help="play the menu yourself in the terminal (type an action id per step)")
    p.add_argument("graph_dir", metavar="GRAPH_DIR")
    p.add_argument("question")
    p.add_argument("--answer", action="append", help="gold answer (repeatable) to score the result")
    p.add_argument("--save", help="append the trajectory to this JSONL file")
    _add_env_flags(p)
    p.set_defaults(func=cmd_menu)


def _register_eval(sub: Any, policies: str) -> None:
    p = sub.add_parser("eval", help="evaluate a policy on a question set (resumable; writes records + summary)",
                       description="Evaluate a policy; the run directory's config.json records the resolved config "
                                   "(eval and env sections, the policy's settings, graph version, question set).")
    p.add_argument("graph_dir", nargs="?", metavar="GRAPH_DIR",
                   help="graph directory (required, except with --show-config or with a `harness-g train` checkpoint as "
                        "--model: then the graph it was trained on, and its held-out questions)")
    p.add_argument("--questions", help="questions file (default: the questions read with the graph's corpus)")
    p.add_argument("--question-ids", metavar="FILE",
                   help="evaluate only the questions with these ids, one per line, in that order (e.g. a training run's "
                        "RUN_DIR/heldout_ids.txt: its held-out questions, data.eval_questions; the default for "
                        "--model RUN_DIR/checkpoint-N without GRAPH_DIR and --questions)")
    p.add_argument("--format", help="format of --questions (hotpotqa, 2wiki, musique, nq, popqa, triviaqa, questions)")
    p.add_argument("--policy", help=f"policy ({policies}); default heuristic; oracle is privileged: it plans from the gold "
                                    "evidence labels (shortcut for --set eval.policy=NAME)")
    p.add_argument("--out", metavar="DIR", help="run directory (re-run the same DIR to resume; required, except with "
                                                "--show-config)")
    p.add_argument("--limit", type=int, help="first N questions (shortcut for --set eval.limit=N)")
    p.add_argument("--reachability", action="store_true", default=None,
                   help="also compute menu reachability of the gold evidence (shortcut for --set eval.reachability=true)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _add_env_flags(p, sections="eval, env")
    p.add_argument("--show-config", action="store_true",
                   help="print every eval and env field with its help and resolved value, then exit")
    _add_interface_flags(p, shortcut=True)
    g = p.add_argument_group("G-E judge (optional; only with --judge-base-url)")
    g.add_argument("--judge-base-url", help="OpenAI-compatible chat endpoint of the G-E judge, e.g. http://host:8000/v1")
    g.add_argument("--judge-model", help="judge model name (default gpt-4o-mini)")
    g.add_argument("--judge-api-key", help="judge API key (default: $JUDGE_API_KEY or $OPENAI_API_KEY)")
    p.set_defaults(func=cmd_eval)


def _register_report(sub: Any) -> None:
    p = sub.add_parser("report", help="one self-contained HTML report: eval run dirs (tables, SVG plots, trajectories) or a training run (curves)")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="directories written by `harness-g eval --out`")
    p.add_argument("--out", default="report.html", metavar="FILE.html", help="output file (default report.html)")
    p.add_argument("--title")
    p.add_argument("--max-questions", type=int, help="draw at most N trajectories per run (default: all)")
    p.add_argument("--expand", action="store_true", help="trajectory sections start open (for printing / screenshots)")
    p.set_defaults(func=cmd_report)


def _register_browse(sub: Any) -> None:
    p = sub.add_parser("browse", help="draw a question's menu neighbourhood or a Cypher result as one offline HTML page",
                       description="Write one self-contained HTML page (vis-network inlined: works offline, from file://) "
                                   "drawing either a question's menu neighbourhood -- U_0, the first menu's LOOKUP targets "
                                   "and what each would surface, their paragraphs and entities, gold evidence marked -- or "
                                   "the nodes, relationships and ids a read-only Cypher query returns.")
    p.add_argument("graph_dir", metavar="GRAPH_DIR")
    p.add_argument("question", nargs="?", metavar="QUESTION",
                   help="question text, or the id of a question of the graph's set (its gold evidence is then marked)")
    p.add_argument("--cypher", metavar="QUERY", help="draw this read-only query's result instead; use $name parameters")
    p.add_argument("--param", action="append", metavar="NAME=VALUE", help="query parameter (VALUE parsed as JSON if possible)")
    p.add_argument("--out", default="browse.html", metavar="FILE.html", help="output page (default browse.html)")
    p.add_argument("--title", help="page title")
    p.add_argument("--lookupable-only", action="store_true",
                   help="draw only lookup-able entities (default: every mentioned one, dates and numbers included)")
    p.add_argument("--serve", action="store_true", help="also serve the page on http://127.0.0.1:PORT until Ctrl-C")
    p.add_argument("--port", type=int, help="port for --serve (default 8000; 0: any free port)")
    _add_env_flags(p)
    p.set_defaults(func=cmd_browse)


def _register_serve_env(sub: Any) -> None:
    from harness_g.agent.integrations import serve_cli

    p = sub.add_parser("serve-env", help="serve the menu environment as an OpenEnv server (TRL, SkyRL, verl, ...)",
                       description=serve_cli.DESCRIPTION, epilog=serve_cli.EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    serve_cli.add_arguments(p)
    _add_env_flags(p)
    p.set_defaults(func=cmd_serve_env)
