"""Runs and graphs as pandas DataFrames, for notebooks.

    import harness_g

    run = harness_g.load_run("runs/hp-heuristic")          # an eval RUN_DIR (harness-g eval --out)
    run.records                  # one row per question: scores, turns, seconds, reachability, prediction, ...
    run.steps                    # one row per decision turn: the action chosen, its type, the menu's size
    run.config, run.summary      # config.json (the resolved settings), summary.json (the printed averages)

    train = harness_g.load_training("runs/tiny")             # a training RUN_DIR (harness-g train --out)
    train.metrics                # metrics.jsonl: one row per logged step (reward_f1, loss, kl, ...)
    train.eval                   # eval.jsonl: one row per evaluation (tag before/after, step, split, f1, em, ...)
    train.answers                # eval.jsonl's answers: one row per evaluated question
    train.config                 # config.yaml (the resolved TrainConfig) as a dict

    graph = harness_g.open_graph("graphs/hotpotqa")          # a GRAPH_DIR (harness-g build --out)
    graph.table("sentences")     # paragraphs, sentences, entities, mentions, synonyms, questions
    graph.embeddings()           # float32 [n_sentences, dim], row i = graph.table("sentences") row i

Everything is read from the files the commands wrote; nothing here opens a store or loads a model, and
``import harness_g`` does not import this module (or pandas) until one of these functions is called. A directory
that is not what a function expects is a one-line :class:`~harness_g.errors.InputError` naming it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from harness_g.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pandas as pd

#: per-question score columns of :attr:`EvalRun.records`, in the order the summary prints them
SCORE_COLUMNS = ("em", "f1", "rs", "evidence_recall", "evidence_precision", "answer_in_evidence", "ge")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSONL file a run appends to; a last line cut by a crash is skipped (the run re-does it)."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            if n == len(lines):
                continue
            raise InputError(f"corrupt JSON line ({exc.msg})", str(path), n) from exc
    return rows


def _frame(rows: Iterable[dict[str, Any]], columns: Iterable[str] = ()) -> "pd.DataFrame":
    """A DataFrame of ``rows`` that has ``columns`` (in that order, first) even when ``rows`` is empty."""
    import pandas as pd

    frame = pd.DataFrame(list(rows))
    if not len(frame.columns):
        return pd.DataFrame(columns=list(columns))
    first = [c for c in columns if c in frame.columns]
    return frame[first + [c for c in frame.columns if c not in first]]


# -- eval runs -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EvalRun:
    """An eval RUN_DIR read back. ``records``: one row per question (the latest record of each id, errors
    included: their ``error`` column is set); ``steps``: one row per decision turn; ``config``: ``config.json``
    (policy, interface, env, encoder, store, questions); ``summary``: ``summary.json``; ``raw``: the records as
    written (trajectories with every menu), by question id."""

    path: Path
    records: "pd.DataFrame"
    steps: "pd.DataFrame"
    config: dict[str, Any]
    summary: dict[str, Any]
    raw: dict[str, dict[str, Any]] = field(repr=False)


def _record_row(rec: dict[str, Any]) -> dict[str, Any]:
    """One :attr:`EvalRun.records` row: identity, scores (fractions in [0, 1]; the summary shows them x100), turns,
    seconds (``seconds``: the whole question; ``episode_seconds``: the policy and environment; ``reachability_seconds``,
    ``judge_seconds``), the answer, C_T and the reachability verdict."""
    m, t = rec.get("metrics") or {}, rec.get("trajectory") or {}
    reach, timing = rec.get("reachability") or {}, rec.get("timing") or {}
    row: dict[str, Any] = {"id": str(rec.get("id")), "question": rec.get("question"), "answers": rec.get("answers"),
                           "prediction": rec.get("prediction"), "dataset": rec.get("dataset"),
                           "interface": rec.get("interface"), "error": rec.get("error")}
    row.update({k: m.get(k) for k in SCORE_COLUMNS})
    row.update({"turns": m.get("turns"), "invalid_turns": m.get("invalid_turns"), "seconds": rec.get("seconds"),
                "episode_seconds": m.get("seconds"), "reachability_seconds": timing.get("reachability"),
                "judge_seconds": timing.get("judge"), "committed": t.get("committed"),
                "terminated_by": t.get("terminated_by"), "reachability": reach.get("status"),
                "reachability_cause": reach.get("cause"), "reachability_min_turns": reach.get("min_turns"),
                "gold_sentence_ids": (rec.get("gold") or {}).get("sentence_ids")})
    return row


#: the columns of :attr:`EvalRun.steps`
STEP_COLUMNS = ("id", "turn", "reply", "chosen", "action_type", "targets", "menu_size", "error", "introduced")


def _step_rows(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """The :attr:`EvalRun.steps` rows of one record: question id, turn, reply, chosen action id, its type and
    targets, the menu's size, the error of an invalid reply, and the sentences the step introduced."""
    return [dict(zip(STEP_COLUMNS, (str(rec.get("id")), s.get("turn"), s.get("reply"), s.get("chosen"),
                                    s.get("action_type"), s.get("targets"), len(s.get("menu") or ()), s.get("error"),
                                    s.get("introduced"))))
            for s in (rec.get("trajectory") or {}).get("steps") or ()]


def load_run(run_dir: str | Path) -> EvalRun:
    """An eval RUN_DIR (``harness-g eval --out RUN_DIR``) as an :class:`EvalRun` of DataFrames."""
    path = Path(run_dir)
    records_file = path / "records.jsonl"
    if not records_file.is_file():
        raise InputError("not an eval run directory (no records.jsonl; make one with `harness-g eval --out DIR`)",
                         str(path))
    raw: dict[str, dict[str, Any]] = {}
    for rec in _read_jsonl(records_file):
        raw[str(rec.get("id"))] = rec  # a resumed run re-does failed questions: the latest line wins
    records = _frame((_record_row(r) for r in raw.values()), _record_row({}).keys())
    steps = _frame((row for r in raw.values() for row in _step_rows(r)), STEP_COLUMNS)
    from harness_g.agent.eval.report import read_json

    return EvalRun(path, records, steps, read_json(path / "config.json"), read_json(path / "summary.json"), raw)


# -- training runs -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainingRun:
    """A training RUN_DIR read back. ``metrics``: ``metrics.jsonl``, one row per logged step; ``eval``:
    ``eval.jsonl``, one row per evaluation of one split (``tag`` before/after, ``step``, ``split``, ``f1``, ``em``
    as fractions, ``turns``, ...); ``answers``: each evaluated question's answer (``tag``, ``step``, ``split``,
    ``question_id``, ``question``, ``answer``, ``gold``); ``config``: ``config.yaml`` as a dict."""

    path: Path
    metrics: "pd.DataFrame"
    eval: "pd.DataFrame"
    answers: "pd.DataFrame"
    config: dict[str, Any]


def _answer_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """eval.jsonl's ``answers`` entries (``[question, answer, gold answers, question id]``) as rows, with the
    question's ``f1``, ``em`` and ``evidence_recall`` from the row's ``scores`` (None in rows written before it)."""
    out = []
    scores = row.get("scores") or []
    for i, entry in enumerate(row.get("answers") or ()):
        question, answer, gold = entry[0], entry[1], entry[2]
        f1, em, recall = scores[i] if i < len(scores) else (None, None, None)
        out.append({"tag": row.get("tag"), "step": row.get("step"), "split": row.get("split"),
                    "question_id": entry[3] if len(entry) > 3 else None, "question": question, "answer": answer,
                    "gold": gold, "f1": f1, "em": em, "evidence_recall": recall})
    return out


def load_training(run_dir: str | Path) -> TrainingRun:
    """A training RUN_DIR (``harness-g train --out RUN_DIR``) as a :class:`TrainingRun` of DataFrames."""
    import yaml

    path = Path(run_dir)
    if not (path / "metrics.jsonl").is_file() and not (path / "config.yaml").is_file():
        raise InputError("not a training run directory (no metrics.jsonl or config.yaml; make one with "
                         "`harness-g train --out DIR`)", str(path))
    try:
        config = yaml.safe_load((path / "config.yaml").read_text(encoding="utf-8")) if (path / "config.yaml").is_file() else {}
    except yaml.YAMLError as exc:
        raise InputError(f"corrupt YAML ({' '.join(str(exc).split())[:200]})", str(path / "config.yaml")) from exc
    evals = _read_jsonl(path / "eval.jsonl")
    metrics = _frame(_read_jsonl(path / "metrics.jsonl"), ("step",))
    return TrainingRun(path, metrics, _frame(({k: v for k, v in r.items() if k not in ("answers", "scores")} for r in evals),
                                             ("tag", "step", "split", "questions", "f1", "em")),
                       _frame((a for r in evals for a in _answer_rows(r)),
                              ("tag", "step", "split", "question_id", "question", "answer", "gold", "f1", "em",
                               "evidence_recall")),
                       config or {})


# -- graphs --------------------------------------------------------------------------------------------------
class Graph:
    """A GRAPH_DIR's artifact (``harness-g build --out GRAPH_DIR``), read without a store: its Parquet tables as
    DataFrames (:meth:`table`), its questions, and its embeddings as numpy arrays. ``manifest``: ``manifest.json``
    (dataset, counts, models, content hash, the build's config)."""

    #: what :meth:`table` reads: the artifact's Parquet tables, and ``questions`` (questions.jsonl)
    TABLES = ("paragraphs", "sentences", "entities", "mentions", "synonyms", "questions")

    def __init__(self, graph_dir: str | Path):
        from harness_g.graph.artifact import Artifact

        self._artifact = Artifact.open(graph_dir)  # InputError naming the directory when it is not a graph
        self.path = self._artifact.path
        self.manifest = self._artifact.manifest

    def __repr__(self) -> str:
        return f"Graph({str(self.path)!r}, dataset={self.manifest.get('dataset')!r}, counts={self._artifact.counts})"

    def table(self, name: str) -> "pd.DataFrame":
        """Table ``name`` (:attr:`TABLES`) as a DataFrame, in file order (``sentences`` row i = embedding row i).
        ``paragraphs``: id, title, text, source; ``sentences``: id, paragraph_id, position, title, text;
        ``entities``: id, name (canonical key), surface (display name), label, lookupable, reject_reason, mentions;
        ``mentions``: sentence_id, entity_id, surface, start, end, kind; ``synonyms``: src, dst, kind, score;
        ``questions``: id, question, answers, gold_sentence_ids, gold_paragraph_ids, dataset, ..."""
        if name not in self.TABLES:
            raise InputError(f"unknown table {name!r}; the tables are {', '.join(self.TABLES)}", str(self.path))
        if name == "questions":
            return _frame((q.to_json() for q in self._artifact.questions()), ("id", "question", "answers"))
        return self._artifact.table(name).to_pandas()

    def embeddings(self) -> "np.ndarray":
        """Sentence embeddings, float32 ``[n_sentences, dim]`` (L2-normalised: cosine = dot product), row i =
        ``table("sentences")`` row i; read into memory."""
        import numpy as np

        return np.asarray(self._artifact.embeddings(mmap=False))

    def entity_embeddings(self) -> "np.ndarray | None":
        """Entity display-name vectors, float32 ``[n_entities, dim]``, row i = ``table("entities")`` row i (None for
        graphs built before they were stored)."""
        return self._artifact.entity_embeddings()


def open_graph(graph_dir: str | Path) -> Graph:
    """A GRAPH_DIR's artifact as a :class:`Graph` (tables as DataFrames, embeddings as numpy)."""
    return Graph(graph_dir)


__all__ = ["EvalRun", "Graph", "TrainingRun", "load_run", "load_training", "open_graph"]
