"""How one step's batch is cut into optimiser updates (mini-batches) and forward passes (micro-batches).

Pure functions over the batch's row -> question layout; the trainer supplies the two cross-process reductions
(a sum of question counts and an element-wise max of micro-batch counts), so every rank runs the same number of
updates and passes even though ranks hold different numbers of sequences (DDP forwards and backwards are
collective). A plan is a list of mini-batches, each a list of micro-batch row slices; an empty slice
(``start == stop``) is a zero-weight pass that only joins the collective.
"""
from __future__ import annotations

import math
from typing import Sequence

#: one mini-batch (one optimiser update): its micro-batch row slices, in order
MiniBatch = list[slice]


def question_starts(questions: Sequence[int]) -> list[int]:
    """First row of each question's run of rows. ``questions``: the question id of every row, each question's rows
    contiguous (as :func:`~harness_g.training.batch.build_batch` lays them out); ValueError otherwise."""
    starts = [i for i in range(len(questions)) if i == 0 or questions[i] != questions[i - 1]]
    if len(set(questions)) != len(starts):
        raise ValueError("the rows of each question must be contiguous in the batch")
    return starts


def update_count(global_questions: int, mini_batch_questions: int) -> int:
    """Optimiser updates per step: ceil(questions over all processes / questions per update), at least 1 (the
    paper's 128 / 32 give 4, harness-g.tex l.953)."""
    return max(1, math.ceil(global_questions / mini_batch_questions))


def mini_batch_rows(starts: Sequence[int], n_rows: int, updates: int) -> list[tuple[int, int]]:
    """Cut this rank's questions into ``updates`` near-even groups of whole questions -> row ranges [a, b)."""
    edges = [*starts, n_rows]
    cuts = [round(i * len(starts) / updates) for i in range(updates + 1)]
    return [(edges[cuts[i]], edges[cuts[i + 1]]) for i in range(updates)]


def micro_batch_counts(chunks: Sequence[tuple[int, int]], micro_batch_sequences: int) -> list[int]:
    """Forward passes each mini-batch needs on this rank: ceil(rows / micro_batch_sequences), at least 1; one pass
    per mini-batch when ``micro_batch_sequences`` is 0."""
    micro = micro_batch_sequences
    return [max(1, math.ceil((b - a) / micro)) if micro else 1 for a, b in chunks]


def micro_slices(chunks: Sequence[tuple[int, int]], counts: Sequence[int]) -> list[MiniBatch]:
    """Split each row range [a, b) into ``counts[i]`` near-equal slices (trailing ones empty when the rank has fewer
    rows than the agreed count)."""
    plan = []
    for (a, b), m in zip(chunks, counts):
        size = max(1, math.ceil((b - a) / m))
        plan.append([slice(min(a + j * size, b), min(a + (j + 1) * size, b)) for j in range(m)])
    return plan


def plan_updates(questions: Sequence[int], mini_batch_questions: int, micro_batch_sequences: int) -> list[MiniBatch]:
    """The single-process plan: :func:`question_starts` -> :func:`update_count` -> :func:`mini_batch_rows` ->
    :func:`micro_batch_counts` -> :func:`micro_slices` (a multi-process trainer reduces the question count and the
    micro-batch counts over ranks between those steps)."""
    starts = question_starts(questions)
    chunks = mini_batch_rows(starts, len(questions), update_count(len(starts), mini_batch_questions))
    return micro_slices(chunks, micro_batch_counts(chunks, micro_batch_sequences))
