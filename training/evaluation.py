"""Greedy before/after evaluation of the policy during training, through ``harness-g eval``'s own path.

A set is played one question at a time by an interface runner (``harness_g.agent.eval.interfaces.make_interface``
over the trainer's :meth:`~harness_g.training.trainer.Trainer.eval_policy`), so ``harness-g eval --model
RUN_DIR/checkpoint-N`` reproduces the numbers. Multi-process: every process plays its own contiguous share of each
set and the per-question results are gathered in rank order, so rank 0 reports what one process would report (each
question played once).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from harness_g.graph.types import QAItem


@dataclass(frozen=True)
class QuestionResult:
    """One evaluated question."""

    f1: float  # max token F1 of the answer over the gold aliases
    em: float  # exact match (0/1)
    turns: int  # executed decision turns
    invalid_turns: int  # turns whose reply named no action of the menu
    answer: list[Any]  # [question text, answer, gold answers, question id] (eval.jsonl's "answers" entries)
    evidence_recall: float | None = None  # fraction of gold evidence units in C_T (harness-g eval's); None: no gold


def share(items: Sequence[QAItem], rank: int, procs: int) -> Sequence[QAItem]:
    """Process ``rank``'s contiguous share of ``items`` (near-even over ``procs`` processes)."""
    return items[round(rank * len(items) / procs): round((rank + 1) * len(items) / procs)]


def play(runner: Any, items: Sequence[QAItem]) -> list[QuestionResult]:
    """Play each question once with ``runner.run(item) -> Trajectory`` and score its answer."""
    from harness_g.agent.eval.metrics import evidence_recall, exact_match, gold_units, token_f1

    out = []
    for item in items:
        traj = runner.run(item)
        answer, gold = traj.answer or "", list(item.answers)
        recall = evidence_recall(gold_units(item.gold_sentence_ids, item.gold_paragraph_ids), traj.committed)
        out.append(QuestionResult(token_f1(answer, gold), exact_match(answer, gold), len(traj.steps), traj.invalid_turns,
                                  [item.question, answer, gold, item.id], recall))
    return out


def gather(results: list[QuestionResult], procs: int) -> list[list[QuestionResult]]:
    """Every process's results, in rank order (``[results]`` when single-process)."""
    if procs == 1:
        return [results]
    from accelerate.utils import gather_object

    return gather_object([results])


def summary(split: str, parts: list[list[QuestionResult]]) -> dict[str, Any]:
    """The eval.jsonl fields of one split: question counts (total and per process), mean F1 / EM / turns, the
    fraction of invalid turns, the mean evidence recall over the questions with gold evidence (None when none has
    any; ``evidence_questions`` counts them), every question's answer and, in the same order, every question's
    ``scores`` ``[f1, em, evidence_recall]`` (so before/after differences can be paired by question)."""
    results = [x for part in parts for x in part]
    n, turns = len(results), sum(x.turns for x in results)
    recalls = [x.evidence_recall for x in results if x.evidence_recall is not None]
    return {"split": split, "questions": n, "process_questions": [len(p) for p in parts],
            "f1": sum(x.f1 for x in results) / n, "em": sum(x.em for x in results) / n, "turns": turns / n,
            "invalid_action_frac": sum(x.invalid_turns for x in results) / max(1, turns),
            "evidence_recall": sum(recalls) / len(recalls) if recalls else None, "evidence_questions": len(recalls),
            "answers": [x.answer for x in results], "scores": [[x.f1, x.em, x.evidence_recall] for x in results]}


def evaluate_sets(runner: Any, sets: dict[str, list[QAItem]], *, rank: int = 0, procs: int = 1) -> list[dict[str, Any]]:
    """One :func:`summary` per non-empty set (``sets``: split name -> questions), this process playing its share."""
    rows = []
    for split, items in sets.items():
        if items:
            rows.append(summary(split, gather(play(runner, share(items, rank, procs)), procs)))
    return rows
