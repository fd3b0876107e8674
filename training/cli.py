"""``harness-g train``: a shortcut for ``accelerate launch -m harness_g.training``."""
from __future__ import annotations

import argparse
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from harness_g.config_loader import describe, parse_set
from harness_g.errors import ConfigError
from harness_g.run_kinds import RunKind, register_run_kind


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    from harness_g.cli_args import PRESET_HELP, PRESETS

    p.add_argument("--config", help="YAML config (TrainConfig fields): a file, or the name of a packaged one (tiny-cpu, "
                                    "smollm2-lora-cpu, qwen2.5-3b-paper, ...; `harness-g configs` lists them)")
    p.add_argument("--preset", choices=PRESETS,
                   help=PRESET_HELP + ": fills rollout.env and data.build (shortcut for --set preset=NAME; the file's "
                                      "'preset:' otherwise)")
    p.add_argument("--out", "--output-dir", dest="output_dir", required=False,
                   help="run directory: metrics.jsonl, checkpoints/, config.yaml (--output-dir is the same flag)")
    p.add_argument("--resume", help="checkpoint directory to resume from (restores optimiser, scheduler, RNG, data position); "
                   "refused when the settings differ from the ones it was saved with, except optim.steps and "
                   "log.every/save_every/tensorboard/wandb/keep_trajectories")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a field, e.g. --set optim.lr=1e-6 (parsed by the field's type; repeatable; wins over --config)")
    p.add_argument("--show-config", action="store_true", help="print every field with its help and value (defaults, or as resolved from --config/--set), then exit")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


@contextmanager
def run_dir_lock(output_dir: str) -> Iterator[None]:
    """Hold ``RUN_DIR/.lock`` (:mod:`harness_g.graph.locks`) for the whole run, as ``eval`` does: a second
    ``harness-g train --out RUN_DIR`` is refused at once, naming the first (pid, start, command). Under a
    multi-process launch only the main process holds it (the ranks of one run share the directory)."""
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    from harness_g.graph.locks import exclusive_lock

    if not PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU")).is_main_process:
        yield
        return
    with exclusive_lock(output_dir, "--out directory"):
        yield


def run_train(args: argparse.Namespace) -> int:
    from harness_g.training.config import TrainConfig, load_config

    from harness_g.training.packaged import resolve_config

    preset = getattr(args, "preset", None)
    args.config = resolve_config(args.config)
    if args.show_config:  # the defaults, or the resolved values of --config/--set/--preset
        print("\n".join(describe(load_config(args.config, dict(parse_set(s) for s in args.set), preset=preset)
                                  if args.config or args.set or preset else TrainConfig)))
        return 0
    if not args.output_dir:
        raise ConfigError("--out is required (the run directory)")
    from harness_g.training.data import with_run_graph

    config = with_run_graph(load_config(args.config, dict(parse_set(s) for s in args.set), preset=preset),
                            args.output_dir)
    if not config.data.graph_dir:  # nothing to build or read: refused before the run directory is written
        from harness_g.training.data import require_graph

        require_graph(config)
    if args.resume:  # before the graph is (re)built: a resume with other data settings must not replace its graph
        from harness_g.training.resume import check_settings

        check_settings(Path(args.resume), config)
    from accelerate import PartialState

    from harness_g.training.data import build_training_graph, check_training_data
    from harness_g.training.sft import check_warm_start, record_warm_start
    from harness_g.training.trainer import train

    with run_dir_lock(args.output_dir):  # a second run into the same --out is refused before anything loads
        build_training_graph(config)  # data.build_format: (re)build graph_dir before the trainer exists (a cache hit when unchanged)
        _, held_out = check_training_data(config)  # e.g. a batch larger than the data: refused before the run directory is written
        check_warm_start(config.model.init_adapter, [q.id for q in held_out])  # and an SFT that saw a held-out question
        # a resume from other warm-start weights is refused (RUN_DIR/warm_start.json)
        record_warm_start(args.output_dir, config.model.init_adapter, resume=bool(args.resume),
                          write=PartialState().is_main_process)
        result = train(config, args.output_dir, resume=args.resume, progress=not args.quiet)

    if not PartialState().is_main_process:  # one summary per run, not one per rank
        return 0
    print(json.dumps({k: v for k, v in result.items() if k != "last"}, indent=2))
    last = result.get("last", {})
    keys = ("reward_f1", "em", "loss", "kl", "grad_norm", "turns", "invalid_action_frac", "snc_share", "time_total_s")
    print("last step: " + ", ".join(f"{k}={last[k]:.4g}" for k in keys if k in last))
    if result.get("tensorboard"):
        print(f"curves: {result['tensorboard']}")
    return 0


def run_sft(args: argparse.Namespace) -> int:
    """``harness-g sft``: oracle-demonstration SFT warm start (ours; training/sft.py) under a TrainConfig."""
    from harness_g.config_loader import load
    from harness_g.training.config import load_config
    from harness_g.training.packaged import resolve_config
    from harness_g.training.sft import SFTConfig, run_sft as sft

    if args.resume:
        raise ConfigError("harness-g sft has no --resume (a warm start takes minutes): run it again into a new --out")
    sft_config = load(SFTConfig, None, dict(parse_set(s) for s in args.sft))
    config = load_config(resolve_config(args.config), dict(parse_set(s) for s in args.set), preset=args.preset)
    if args.show_config:
        print("\n".join([*describe(config), *describe(sft_config, prefix="sft.")]))
        return 0
    if not args.output_dir:
        raise ConfigError("--out is required (the SFT run directory)")
    from harness_g.training.data import build_training_graph, check_training_data, with_run_graph

    config = with_run_graph(config, args.output_dir)  # data.build_format: the graph is built in OUT/graph, as train does
    with run_dir_lock(args.output_dir):
        build_training_graph(config)
        check_training_data(config)
        summary = sft(config, sft_config, args.output_dir, progress=not args.quiet)
    d = summary["demonstrations"]
    print(json.dumps({k: summary[k] for k in ("policy", "steps", "sequences", "trained_tokens", "loss_first",
                                              "loss_last")} | {"demonstrations": d}, indent=2))
    print(f"warm-start a GRPO run with: --set model.init_adapter={summary['policy']}")
    return 0


def run_configs(args: argparse.Namespace) -> int:
    """``harness-g configs``: the packaged configs, name and path; ``--path NAME``: that file's path alone."""
    from harness_g.training.packaged import packaged_configs, resolve_config

    if args.path:
        found = resolve_config(args.path, "--path")
        if Path(found).resolve() not in packaged_configs().values():
            raise ConfigError(f"--path {args.path}: not a packaged config (packaged: {', '.join(packaged_configs())})")
        print(found)
        return 0
    for name, path in packaged_configs().items():
        print(f"{name:<28} {path}")
    return 0


def _is_training_run(run_dir: Path) -> bool:
    from harness_g.training.curves import is_training_run

    return is_training_run(run_dir)


def _report_training_runs(run_dirs: list[str], args: argparse.Namespace, alone: bool) -> None:
    """Each training run (metrics.jsonl + config.yaml) gets its curves page: ``--out`` itself when it is the only run
    of the call, else ``<out>-train-<run name>.html`` beside it (a repeated name gets ``-<index>``)."""
    from harness_g.training.curves import render_training_report

    out = Path(args.out)
    names = [Path(r).name for r in run_dirs]
    for i, run in enumerate(run_dirs):
        tag = names[i] if names.count(names[i]) == 1 else f"{names[i]}-{i}"
        path = out if alone and len(run_dirs) == 1 else out.with_name(f"{out.stem}-train-{tag}{out.suffix or '.html'}")
        print(f"report: {render_training_report(run, path, args.title)}")


register_run_kind(RunKind("training run", claims=_is_training_run, report=_report_training_runs))


def register(sub: Any) -> None:
    p = sub.add_parser("train", help="GRPO + SNC training (shortcut for `accelerate launch -m harness_g.training`)")
    add_train_arguments(p)
    p.set_defaults(func=run_train)
    p = sub.add_parser("sft", help="oracle-demonstration SFT warm start, a LoRA adapter for model.init_adapter (ours)",
                       description="Play the privileged oracle through the run's environment (the TrainConfig's "
                                   "interface, context and token limits) on its training split and fine-tune the "
                                   "policy's LoRA adapters on those replies and the gold answers. The paper trains "
                                   "GRPO from the base checkpoint; this warm start is an extension, off unless a run "
                                   "sets model.init_adapter.")
    add_train_arguments(p)
    p.add_argument("--sft", action="append", default=[], metavar="KEY=VALUE",
                   help="an SFT setting (questions, epochs, lr, batch_sequences, oracle_budget), e.g. --sft epochs=3")
    p.set_defaults(func=run_sft)
    p = sub.add_parser("configs", help="the packaged training and Accelerate configs (names for --config, paths)",
                       description="List the configs shipped inside the package: `harness-g train --config NAME` takes "
                                   "the name from any directory; --path prints one file's path, e.g. for "
                                   "`accelerate launch --config_file \"$(harness-g configs --path accelerate/ddp)\"`, "
                                   "or to copy it and edit.")
    p.add_argument("--path", metavar="NAME", help="print the path of packaged config NAME only")
    p.set_defaults(func=run_configs)
