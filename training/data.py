"""The training data: building the run's graph (``data.build_format``) and splitting its questions.

The graph is built by the caller before a :class:`~harness_g.training.trainer.Trainer` exists: ``harness-g train``
(training/cli.py) calls :func:`build_training_graph`; Python callers call it themselves. The trainer only checks
that the graph is there (:func:`require_graph`) and never rebuilds it.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harness_g.errors import ConfigError
from harness_g.graph.artifact import MANIFEST
from harness_g.graph.types import QAItem

#: what a run records of its question split, in RUN_DIR: every id of both parts (JSON), and the held-out ids one per
#: line (what ``harness-g eval --question-ids`` reads)
SPLIT_FILE = "split.json"
HELDOUT_IDS = "heldout_ids.txt"


def build_training_graph(config: Any) -> bool:
    """(Re)build ``data.graph_dir`` from ``data.build_input`` in ``data.build_format`` (a cache hit when unchanged);
    returns whether a build ran (False when ``data.build_format`` is unset). ``config``: a TrainConfig. Under a
    multi-process launch the main process builds first and the others then hit its cache."""
    data = config.data
    if not data.build_format:
        return False
    if not data.graph_dir:
        raise ConfigError("data.graph_dir is empty: `harness-g train` builds the graph in RUN_DIR/graph; from Python "
                          "call harness_g.training.data.with_run_graph(config, run_dir) first")
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


def with_run_graph(config: Any, run_dir: str | Path) -> Any:
    """``config`` with an empty ``data.graph_dir`` set to ``RUN_DIR/graph`` when ``data.build_format`` builds it (the
    packaged configs: a run writes only under its ``--out``); ``config`` itself otherwise."""
    from dataclasses import replace

    if config.data.graph_dir or not config.data.build_format:
        return config
    return replace(config, data=replace(config.data, graph_dir=str(Path(run_dir).resolve() / "graph")))


def require_graph(config: Any) -> None:
    """ConfigError unless ``data.graph_dir`` holds a finished graph; with ``data.build_format`` set, the message
    says who builds it (the CLI does; Python callers call :func:`build_training_graph` first)."""
    if not config.data.graph_dir:
        raise ConfigError("data.graph_dir is empty: build a graph (`harness-g build ... --out DIR`) and give it with "
                          "--set data.graph_dir=DIR, or set data.build_format and data.build_input")
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
    is always left to train on), the training part's first ``data.train_offset`` skipped and the rest cut to
    ``data.train_questions``. ConfigError when
    ``rollout.questions_per_step`` is larger than the training part (:func:`check_batch_size`)."""
    return _split(config, _questions(config, lambda: view.artifact))


def check_training_data(config: Any) -> tuple[list[QAItem], list[QAItem]]:
    """The checks of :func:`split_questions` before a run starts (nothing is written, no model or store is loaded):
    ``harness-g train`` calls it after building the graph, so a batch larger than the data is refused in seconds.
    Returns the split (training, held-out), read from the artifact."""
    from harness_g.graph.artifact import Artifact

    require_graph(config)
    return _split(config, _questions(config, lambda: Artifact.open(config.data.graph_dir)))


def _questions(config: Any, artifact: Any) -> list[QAItem]:
    """``data.questions`` read in ``data.questions_format`` (sentence ids split as ``artifact()``'s graph split its
    sentences), else the graph's own questions; ``artifact``: a callable returning the graph's Artifact."""
    data = config.data
    if data.questions:
        from harness_g.graph.readers import load_questions

        if not data.questions_format:
            raise ConfigError("data.questions needs data.questions_format")
        from harness_g.graph.config import graph_rules
        from harness_g.graph.readers import get_spec

        join = False
        if get_spec(data.questions_format).split_repair:  # gold sentence ids as the graph split its sentences
            rules = graph_rules(artifact().manifest)
            join = bool(rules and rules[1]["join_fragments"])
        return list(load_questions(data.questions_format, data.questions, join_fragments=join))
    return list(artifact().questions())


def _split(config: Any, items: list[QAItem]) -> tuple[list[QAItem], list[QAItem]]:
    data = config.data
    items = [q for q in items if q.answers]
    if data.limit:
        items = items[: data.limit]
    if not items:
        raise ConfigError(f"no training questions with answers in {data.graph_dir}")
    n_eval = min(data.eval_questions, len(items) - 1)
    train, held_out = (items[:-n_eval], items[-n_eval:]) if n_eval > 0 else (items, [])
    if data.train_offset:
        if data.train_offset >= len(train):
            raise ConfigError(f"data.train_offset ({data.train_offset}) leaves no training question: "
                              f"{data.questions or data.graph_dir} has {len(train)} after data.limit and "
                              f"data.eval_questions; set it to at most {len(train) - 1}")
        train = train[data.train_offset:]
    if data.train_questions:
        train = train[: data.train_questions]
    check_batch_size(config, len(train))
    return train, held_out


def check_batch_size(config: Any, n_train: int) -> None:
    """ConfigError when a step would draw more questions than the run trains on: ``rollout.questions_per_step``
    larger than the ``n_train`` training questions would replay each question several times per step, and a
    size far beyond the data (100,000) only exhausts memory before the first step."""
    q = config.rollout.questions_per_step
    if q > n_train:
        source = config.data.questions or config.data.graph_dir
        raise ConfigError(f"rollout.questions_per_step ({q}) is larger than the {n_train} training question(s) of "
                          f"{source} (after data.limit, data.eval_questions, data.train_offset, data.train_questions); "
                          f"set it to at most {n_train}")


def split_record(config: Any, train: list[QAItem], held_out: list[QAItem]) -> dict[str, Any]:
    """The run's question split as :data:`SPLIT_FILE` holds it: where the questions came from, the ``data.`` fields
    that cut them, and the ids of both parts in order (the paper's 5,120 training / 128 held-out questions per
    dataset, harness-g.tex appendix "Splits and corpus preprocessing", are ``data.train_questions`` /
    ``data.eval_questions`` of training/configs/qwen2.5-3b-paper.yaml)."""
    data = config.data
    return {"source": str(data.questions or data.graph_dir), "limit": data.limit, "eval_questions": data.eval_questions,
            "train_questions": data.train_questions, "train_offset": data.train_offset,
            "heldout": [q.id for q in held_out], "train": [q.id for q in train]}


def check_split(run_dir: str | Path, record: dict[str, Any]) -> None:
    """On resume: ConfigError when ``run_dir``'s recorded split is not ``record``'s (the graph, its questions or a
    ``data.`` field changed: the run would train on, or report, other questions than it began with). A run without a
    record (an older one) passes."""
    path = Path(run_dir) / SPLIT_FILE
    if not path.is_file():
        return
    try:
        before = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: unreadable question split ({exc})") from None
    changed = [f"{part}: {len(before.get(part) or [])} recorded, {len(record[part])} now"
               + ("" if len(before.get(part) or []) != len(record[part]) else " (other ids)")
               for part in ("train", "heldout") if before.get(part) != record[part]]
    if changed:
        raise ConfigError(f"{path}: the resumed run's question split differs from the recorded one ({'; '.join(changed)}); "
                          "resume with the graph, questions and data.* settings it began with")


def write_split(run_dir: str | Path, record: dict[str, Any]) -> None:
    """Write :data:`SPLIT_FILE` and :data:`HELDOUT_IDS` into ``run_dir`` (each by an atomic rename)."""
    out = Path(run_dir)
    for name, text in ((SPLIT_FILE, json.dumps(record, indent=1) + "\n"),
                       (HELDOUT_IDS, "".join(f"{qid}\n" for qid in record["heldout"]))):
        tmp = out / f".{name}.tmp"
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, out / name)
