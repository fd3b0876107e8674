"""The training data: building the run's graph (``data.build_format``) and splitting its questions.

The graph is built by the caller before a :class:`~harness_g.training.trainer.Trainer` exists: ``harness-g train``
(training/cli.py) calls :func:`build_training_graph`; Python callers call it themselves. The trainer only checks
that the graph is there (:func:`require_graph`) and never rebuilds it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_g.errors import ConfigError
from harness_g.graph.artifact import MANIFEST
from harness_g.graph.types import QAItem


def build_training_graph(config: Any) -> bool:
    """(Re)build ``data.graph_dir`` from ``data.build_input`` in ``data.build_format`` (a cache hit when unchanged);
    returns whether a build ran (False when ``data.build_format`` is unset). ``config``: a TrainConfig. Under a
    multi-process launch the main process builds first and the others then hit its cache."""
    data = config.data
    if not data.build_format:
        return False
    if not data.build_input:
        raise ConfigError("data.build_format needs data.build_input")
    from accelerate import PartialState
    from accelerate.utils import parse_flag_from_env

    from harness_g.graph.build import CorpusSpec, build_graph

    # the process state the trainer's Accelerator will share: ACCELERATE_USE_CPU decides CPU launches as it does there
    with PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU")).main_process_first():
        build_graph([CorpusSpec(data.build_format, Path(data.build_input))], data.graph_dir, config.build_config(),
                    progress=False)
    return True


def require_graph(config: Any) -> None:
    """ConfigError unless ``data.graph_dir`` holds a finished graph; with ``data.build_format`` set, the message
    says who builds it (the CLI does; Python callers call :func:`build_training_graph` first)."""
    if (Path(config.data.graph_dir) / MANIFEST).is_file():
        check_build_keys(config)
        return
    if config.data.build_format:
        raise ConfigError(f"data.graph_dir {config.data.graph_dir} holds no graph yet: `harness-g train` builds it from "
                          "data.build_format/data.build_input; from Python call "
                          "harness_g.training.data.build_training_graph(config) before training")
    raise ConfigError(f"data.graph_dir {config.data.graph_dir} holds no graph (no {MANIFEST}): build it with "
                      "`harness-g build`, or set data.build_format and data.build_input")


def check_build_keys(config: Any) -> None:
    """ConfigError (one line) when ``data.graph_dir`` was built otherwise than a ``data.build`` key given explicitly
    (not by the preset) says, e.g. ``embedding_model: BAAI/bge-large-en-v1.5`` beside a MiniLM graph. Keys the preset
    filled are the environment's check (``agent.config.check_graph_preset``); execution-only keys (device, batch
    sizes) are not compared."""
    import json
    from dataclasses import fields

    from harness_g.config_loader import sources
    from harness_g.graph.config import BuildConfig

    if not getattr(config.data, "build", None):
        return
    graph = Path(config.data.graph_dir)
    built = json.loads((graph / MANIFEST).read_text(encoding="utf-8")).get("config") or {}
    given = sources(config)
    hashed = {f.name for f in fields(BuildConfig) if f.metadata.get("hash", True)}
    for key, value in config.data.build.items():
        if given.get(f"data.build.{key}") != "set" or key not in hashed or key not in built:
            continue
        want = list(value) if isinstance(value, tuple) else value
        if built[key] != want:
            raise ConfigError(f"data.build.{key}: {graph} was built with {key}={built[key]!r}, the config says "
                              f"{value!r}: rebuild it (data.build_format) or set data.build.{key}={built[key]}")


def split_questions(config: Any, view: Any) -> tuple[list[QAItem], list[QAItem]]:
    """(training, held-out) questions: ``data.questions`` (in ``data.questions_format``) or the graph's own, those
    with gold answers, the first ``data.limit``; the last ``data.eval_questions`` held out (at least one question
    is always left to train on), the training part cut to ``data.train_questions``."""
    data = config.data
    if data.questions:
        from harness_g.graph.readers import load_questions

        if not data.questions_format:
            raise ConfigError("data.questions needs data.questions_format")
        from harness_g.graph.config import graph_rules

        rules = graph_rules(view.artifact.manifest)  # gold sentence ids as the graph split its sentences
        items = list(load_questions(data.questions_format, data.questions,
                                    join_fragments=bool(rules and rules[1]["join_fragments"])))
    else:
        items = view.artifact.questions()
    items = [q for q in items if q.answers]
    if data.limit:
        items = items[: data.limit]
    if not items:
        raise ConfigError(f"no training questions with answers in {data.graph_dir}")
    n_eval = min(data.eval_questions, len(items) - 1)
    train, held_out = (items[:-n_eval], items[-n_eval:]) if n_eval > 0 else (items, [])
    if data.train_questions:
        train = train[: data.train_questions]
    return train, held_out
