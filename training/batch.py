"""The training batch of one step: every rollout's sequences, right-padded, with per-token advantages.

Layout (what :func:`build_batch` returns, N rows = every rollout's :meth:`~harness_g.training.rollout.Rollout.sequences`
in rollout order, so a question's rows are contiguous; L = the longest sequence):

- ``input_ids`` [N, L] long, ``attention_mask`` [N, L] long, ``position_ids`` [N, L] long, right-padded;
- ``loss_mask`` [N, L] float32: 1 on policy tokens (replies and their end-of-turn token), 0 on environment and padding;
- ``advantages`` [N, L] float32: the advantage of every policy token (0 elsewhere);
- ``owner`` [N] long: the index (into the ``rollouts`` argument) of each row's rollout.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from harness_g.training.advantages import ZERO_STD, combine_advantages
from harness_g.training.chat import ANSWER_TURN, pad_batch
from harness_g.training.chat import Sequence as TrainSequence
from harness_g.training.credit import igpo_step_advantage, normalise_token_credits
from harness_g.training.rollout import Rollout

#: list -> the concatenation of that list over all processes (multi-process SNC scale); None when single-process
Gather = Callable[[list[float]], list[float]]


@dataclass(frozen=True)
class RowSequences:
    """The batch's sequences before padding: ``sequences[i]`` is row i, owned by rollout ``owners[i]``."""

    sequences: list[TrainSequence]
    owners: list[int]


def rollout_rows(rollouts: Sequence[Rollout], tokenizer: Any) -> RowSequences:
    """Every rollout's training sequences in rollout order (a rollout's rows contiguous)."""
    seqs, owners = [], []
    for r_i, ro in enumerate(rollouts):
        for seq in ro.sequences(tokenizer):
            seqs.append(seq)
            owners.append(r_i)
    return RowSequences(seqs, owners)


def per_token(values: Sequence[Sequence[float]], like: torch.Tensor) -> torch.Tensor:
    """Per-row token values (row i: one value per token of sequence i, unpadded) -> float32 [N, L] left-aligned
    like ``like`` ([N, L], right-padded as :func:`~harness_g.training.chat.pad_batch` pads), 0 on the padding."""
    out = torch.zeros_like(like, dtype=torch.float32)
    for i, vals in enumerate(values):
        out[i, :len(vals)] = torch.tensor(list(vals), dtype=torch.float32)
    return out


def _stats(nonzero: Sequence[float], policy_tokens: int, scale: float, rows: int, length: int) -> dict[str, float]:
    return {"snc_scale": scale, "snc_nonzero_token_frac": len(nonzero) / max(1, policy_tokens),
            "snc_token_mean": sum(nonzero) / len(nonzero) if nonzero else 0.0, "sequences": float(rows),
            "max_len": float(length)}


def igpo_token_values(rows: RowSequences, turn_advantages: Sequence[Sequence[float]]) -> list[list[float]]:
    """IGPO arm (appendix "Factorial credit control"): every policy token of turn t carries rollout's turn advantage
    Ã_t (the answer's tokens the answer turn's); environment tokens 0. One list per row, one value per token."""
    return [[igpo_step_advantage(turn_advantages[r_i], t if t != ANSWER_TURN else None) if m else 0.0
             for m, t in zip(seq.loss_mask, seq.turn_of)] for seq, r_i in zip(rows.sequences, rows.owners)]


def snc_token_credits(rows: RowSequences, step_credits: Sequence[Sequence[float]]) -> list[list[float]]:
    """Raw SNC credit of the step whose reply each policy token is (answer and environment tokens: 0)."""
    return [[step_credits[r_i][t] if m and 0 <= t < len(step_credits[r_i]) else 0.0
             for m, t in zip(seq.loss_mask, seq.turn_of)] for seq, r_i in zip(rows.sequences, rows.owners)]


def action_token_mask(rows: RowSequences) -> list[list[float]]:
    """1.0 on decision-turn policy tokens (not the answer's), 0.0 elsewhere; one list per row."""
    return [[1.0 if m and t != ANSWER_TURN else 0.0 for m, t in zip(seq.loss_mask, seq.turn_of)] for seq in rows.sequences]


def build_batch(rollouts: list[Rollout], tokenizer: Any, outcome_adv: torch.Tensor, step_credits: list[list[float]], lam: float,
                credit_cfg: Any, gather: Gather | None = None,
                turn_advantages: list[list[float]] | None = None) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """The step's batch (see the module docstring for its keys and shapes) and its credit stats.

    ``outcome_adv`` [R] float: A_out of each of the R rollouts; ``step_credits``: per rollout, one SNC credit per
    executed decision turn. The tokens of decision turn t's reply carry A_out + λ·A_SNC_t (Harness-G §3.4
    "Integration with GRPO"; appendix "SNC Computation per Trajectory", "Provenance and token placement"), SNC
    normalised batch-globally (``credit_cfg.scale_floor``, ``credit_cfg.clip``); the answer's tokens A_out only; environment
    tokens nothing. ``gather``: the SNC scale is global to the whole batch over processes. ``turn_advantages`` (IGPO
    arm): per rollout, its IGPO turn advantages (:func:`~harness_g.training.credit.igpo_advantages`); every policy
    token of a turn carries that turn's value instead of A_out + λ·A_SNC, with no SNC scale or clip. Stats:
    ``snc_scale``, ``snc_nonzero_token_frac``, ``snc_token_mean``, ``sequences`` (N), ``max_len`` (L)."""
    rows = rollout_rows(rollouts, tokenizer)
    batch = pad_batch(rows.sequences, tokenizer.pad_token_id)
    batch["owner"] = torch.tensor(rows.owners, dtype=torch.long)
    mask, length = batch["loss_mask"], batch["input_ids"].shape[1]
    policy_tokens = int(mask.sum())
    if turn_advantages is not None:
        values = igpo_token_values(rows, turn_advantages)
        batch["advantages"] = per_token(values, mask)
        flat = [v for vals in values for v in vals if v != 0.0]
        return batch, _stats(flat, policy_tokens, 1.0, len(rows.sequences), length)
    raw = snc_token_credits(rows, step_credits)
    local = [v for vals in raw for v in vals if v != 0.0]
    norm = normalise_token_credits(raw, s_min=credit_cfg.scale_floor, clip=credit_cfg.clip,
                                   pool=gather(local) if gather is not None else None)
    outcome = outcome_adv[torch.tensor(rows.owners, dtype=torch.long)]
    batch["advantages"] = combine_advantages(outcome, per_token(norm.values, mask), per_token(action_token_mask(rows), mask),
                                             mask, lam)
    return batch, _stats(local, policy_tokens, norm.scale, len(rows.sequences), length)


def zero_advantage_groups(rewards: Sequence[float], groups: Sequence[int],
                          turn_advantages: Sequence[Sequence[float]] | None = None) -> set[int]:
    """The groups ``optim.drop_zero_advantage_groups`` drops (DAPO dynamic sampling): those whose outcome advantages
    are all zero, i.e. whose rewards are all equal (within-group std below ZERO_STD, the paper's zero-advantage
    group, appendix "Zero-advantage diagnostics"; a group of one included). With IGPO ``turn_advantages``: those in
    which every turn advantage of every rollout is zero. ``rewards``/``groups``: one entry per rollout. A live group
    is always kept whole."""
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    out = set()
    for g, idx in members.items():
        if turn_advantages is not None:
            zero = not any(any(turn_advantages[i]) for i in idx)
        else:
            zero = float(torch.tensor([rewards[i] for i in idx], dtype=torch.float32).std(unbiased=False)) < ZERO_STD
        if zero:
            out.add(g)
    return out


def kept_rollouts(rollouts: Sequence[Rollout], dropped: set[int]) -> list[int]:
    """Indices of the rollouts outside the ``dropped`` groups; every index when that would drop them all."""
    keep = [i for i, r in enumerate(rollouts) if r.group not in dropped]
    return keep or list(range(len(rollouts)))


def rows_index(rows: Sequence[int], like: torch.Tensor) -> torch.Tensor:
    """``rows`` as a long index tensor on ``like``'s device (for ``x[idx, :width]`` reads and writes)."""
    return torch.tensor(list(rows), dtype=torch.long, device=like.device)


def micro_batch(batch: dict[str, torch.Tensor], rows: Sequence[int]) -> tuple[dict[str, torch.Tensor], int]:
    """The model inputs of ``rows`` trimmed to their own longest row: ``input_ids``, ``attention_mask``,
    ``position_ids``, ``loss_mask`` [len(rows), width] and ``width``. The batch is right-padded, so the first
    ``width`` columns hold every token of these rows and the columns cut hold only padding; a result of
    :func:`~harness_g.training.chat.tail_logprobs` on it belongs at ``[rows, :width]`` of the [N, L] batch."""
    idx = rows_index(rows, batch["input_ids"])
    width = int(batch["attention_mask"][idx].sum(dim=1).max())
    keys = ("input_ids", "attention_mask", "position_ids", "loss_mask")
    return {k: batch[k][idx, :width] for k in keys}, width
