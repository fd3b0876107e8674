"""``harness-g train``: a shortcut for ``accelerate launch -m harness_g.training``."""
from __future__ import annotations

import argparse
import json
from contextlib import contextmanager
from typing import Any, Iterator

from harness_g.config_loader import describe, parse_set
from harness_g.errors import ConfigError


def add_train_arguments(p: argparse.ArgumentParser) -> None:
    from harness_g.cli_args import PRESET_HELP, PRESETS

    p.add_argument("--config", help="YAML config (TrainConfig fields; see training/configs/)")
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

    preset = getattr(args, "preset", None)
    if args.show_config:  # the defaults, or the resolved values of --config/--set/--preset
        print("\n".join(describe(load_config(args.config, dict(parse_set(s) for s in args.set), preset=preset)
                                  if args.config or args.set or preset else TrainConfig)))
        return 0
    if not args.output_dir:
        raise ConfigError("--out is required (the run directory)")
    config = load_config(args.config, dict(parse_set(s) for s in args.set), preset=preset)
    if args.resume:  # before the graph is (re)built: a resume with other data settings must not replace its graph
        from pathlib import Path

        from harness_g.training.resume import check_settings

        check_settings(Path(args.resume), config)
    from harness_g.training.data import build_training_graph, check_training_data
    from harness_g.training.trainer import train

    with run_dir_lock(args.output_dir):  # a second run into the same --out is refused before anything loads
        build_training_graph(config)  # data.build_format: (re)build graph_dir before the trainer exists (a cache hit when unchanged)
        check_training_data(config)  # e.g. a batch larger than the data: refused before the run directory is written
        result = train(config, args.output_dir, resume=args.resume, progress=not args.quiet)
    from accelerate import PartialState

    if not PartialState().is_main_process:  # one summary per run, not one per rank
        return 0
    print(json.dumps({k: v for k, v in result.items() if k != "last"}, indent=2))
    last = result.get("last", {})
    keys = ("reward_f1", "em", "loss", "kl", "grad_norm", "turns", "invalid_action_frac", "snc_share", "time_total_s")
    print("last step: " + ", ".join(f"{k}={last[k]:.4g}" for k in keys if k in last))
    if result.get("tensorboard"):
        print(f"curves: {result['tensorboard']}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("train", help="GRPO + SNC training (shortcut for `accelerate launch -m harness_g.training`)")
    add_train_arguments(p)
    p.set_defaults(func=run_train)
