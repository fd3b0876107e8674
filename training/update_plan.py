"""How one step's batch is cut into optimiser updates (mini-batches) and forward passes (micro-batches).

Pure functions over the batch's row -> question layout and row lengths; the trainer supplies the two cross-process
reductions (a sum of question counts and an element-wise max of micro-batch counts), so every rank runs the same
number of updates and passes even though ranks hold different numbers of sequences (DDP forwards and backwards are
collective).

A plan is a list of mini-batches, each a list of micro-batches, each a list of row indices. Inside a mini-batch the
rows are sorted by length (longest first) before they are cut into micro-batches, so a micro-batch holds rows of
similar length and the trainer trims it to its own longest row (the batch is right-padded): padding is what the
rows of one pass differ by, not what the step's longest row adds to every row. An empty micro-batch is a
zero-weight pass that only joins the collective.
"""
from __future__ import annotations

import math
from typing import Sequence

#: one micro-batch (one forward/backward pass): row indices, longest row first
MicroBatch = list[int]
#: one mini-batch (one optimiser update): its micro-batches, in order
MiniBatch = list[MicroBatch]


def question_starts(questions: Sequence[int]) -> list[int]:
    """First row of each question's run of rows. ``questions``: the question id of every row, each question's rows
    contiguous (as :func:`~harness_g.training.batch.build_batch` lays them out); ValueError otherwise."""
    starts = [i for i in range(len(questions)) if i == 0 or questions[i] != questions[i - 1]]
    if len(set(questions)) != len(starts):
        raise ValueError("the rows of each question must be contiguous in the batch")
    return starts


def update_count(global_questions: int, mini_batch_questions: int) -> int:
    """Optimiser updates per step: ceil(questions over all processes / questions per update), at least 1 (the
    paper's batch size / mini-batch 128 / 32 give 4, Harness-G appendix "Implementation Details")."""
    return max(1, math.ceil(global_questions / mini_batch_questions))


def mini_batch_rows(starts: Sequence[int], n_rows: int, updates: int) -> list[tuple[int, int]]:
    """Cut this rank's questions into ``updates`` near-even groups of whole questions -> row ranges [a, b)."""
    edges = [*starts, n_rows]
    cuts = [round(i * len(starts) / updates) for i in range(updates + 1)]
    return [(edges[cuts[i]], edges[cuts[i + 1]]) for i in range(updates)]


def micro_batches(rows: range, lengths: Sequence[int], max_sequences: int = 0, max_tokens: int = 0) -> list[MicroBatch]:
    """Cut ``rows`` into passes: sorted by length (longest first, ties by row), a pass is closed when it holds
    ``max_sequences`` rows or when one more row would make rows x longest exceed ``max_tokens`` padded tokens (0: no
    such cap; a row longer than ``max_tokens`` gets a pass of its own). ``lengths[i]``: row i's real tokens. No rows:
    one empty pass."""
    order = sorted(rows, key=lambda i: (-lengths[i], i))
    out: list[MicroBatch] = []
    for i in order:
        cur = out[-1] if out else None
        full = cur is None or (max_sequences and len(cur) >= max_sequences) or (
            max_tokens and (len(cur) + 1) * lengths[cur[0]] > max_tokens)
        if full:
            out.append([i])
        else:
            cur.append(i)
    return out or [[]]


def pad_to_count(plan: Sequence[MiniBatch], counts: Sequence[int]) -> list[MiniBatch]:
    """Append empty passes so mini-batch i has ``counts[i]`` passes (the count agreed over ranks)."""
    return [[*mb, *([] for _ in range(max(0, m - len(mb))))] for mb, m in zip(plan, counts)]


def plan_updates(questions: Sequence[int], lengths: Sequence[int], mini_batch_questions: int,
                 micro_batch_sequences: int = 0, micro_batch_tokens: int = 0) -> list[MiniBatch]:
    """The single-process plan: :func:`question_starts` -> :func:`update_count` -> :func:`mini_batch_rows` ->
    :func:`micro_batches` per mini-batch (a multi-process trainer reduces the question count over ranks before the
    cut and pads every rank to the most passes any rank needs with :func:`pad_to_count`)."""
    starts = question_starts(questions)
    chunks = mini_batch_rows(starts, len(questions), update_count(len(starts), mini_batch_questions))
    return [micro_batches(range(a, b), lengths, micro_batch_sequences, micro_batch_tokens) for a, b in chunks]


def padded_tokens(plan: Sequence[MiniBatch], lengths: Sequence[int]) -> tuple[int, int]:
    """(padded positions the passes compute: rows x longest row, summed; real tokens in them) over the plan's
    non-empty passes; their ratio is the update's pad ratio (1.0 = no padding)."""
    padded = sum(len(mb) * max(lengths[i] for i in mb) for mini in plan for mb in mini if mb)
    real = sum(lengths[i] for mini in plan for mb in mini for i in mb)
    return padded, real


def pass_weights(pass_tokens: Sequence[int], update_tokens: int, processes: int = 1) -> list[float]:
    """The weight of each of this rank's passes in one update, so the update's loss is the mean over *all* its
    policy tokens on all processes (DAPO's token-level loss; verl's ``token-mean`` with a global token count).

    ``pass_tokens``: policy tokens of each pass on this rank; ``update_tokens``: the update's policy tokens summed
    over every process; ``processes``: how many there are. DDP averages the ranks' gradients, so a pass of n tokens
    weighs n x processes / update_tokens: a token's weight is 1 / update_tokens whichever rank holds it (a mean of
    per-rank token means would weigh a token of a rank holding few tokens more). An update with no token: zeros.
    The same rule serves GRPO: the paper does not state its aggregation, DeepSeekMath's GRPO formula averages each
    sequence first, but the paper trained on verl (appendix "Implementation Details"), whose actor default is
    token-mean, with verl's default dual-clip and low-variance KL rows; token-mean is the reading taken."""
    if update_tokens <= 0:
        return [0.0 for _ in pass_tokens]
    return [n * processes / update_tokens for n in pass_tokens]
