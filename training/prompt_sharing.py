"""Shared prompt prefill: a rollout batch's identical prompts are prefilled once.

A GRPO group's N_g rollouts start from the same question and the same first observation, so their first-turn prompts
are identical token for token (and, under the markov context, so are later prompts of rollouts that took the same
actions). ``model.generate`` would prefill each copy. :func:`shared_prefill` prefills each distinct prompt once (all
but its last token), copies the key/value cache to every row that has that prompt, and hands the cache to
``generate``, which then computes only the last prompt token and the reply per row.

This is execution only, like batching: every row is sampled from the same distribution with the same RNG draws (the
cache holds the same keys and values, up to floating-point summation order), so no rule of the paper changes. It is
measured by the generator's ``padded_prompt_tokens`` / ``prefilled_prompt_positions`` counters (the
``generate_pad_ratio`` / ``generate_prefill_ratio`` rollout metrics).
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from harness_g.agent.llm.kv_cache import cache_kwarg, empty_cache, position_ids


def distinct_rows(rows: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """(for each row, the index of its prompt among the distinct prompts; the first row holding each distinct prompt),
    distinct prompts numbered in order of first appearance. Shapes: ``len(rows)`` and ``U`` (number of distinct)."""
    first: dict[tuple[int, ...], int] = {}
    index, firsts = [], []
    for i, row in enumerate(rows):
        key = tuple(row)
        if key not in first:
            first[key] = len(firsts)
            firsts.append(i)
        index.append(first[key])
    return index, firsts


@torch.no_grad()
def shared_prefill(model: torch.nn.Module, enc: dict[str, torch.Tensor], rows: Sequence[Sequence[int]]) -> tuple[Any, int] | None:
    """The prefilled key/value cache of ``enc`` (left-padded ``input_ids``/``attention_mask`` [B, W] of ``rows``) for
    its first W - 1 positions, computed once per distinct prompt and copied to every row, with the number U of
    distinct prompts (U x (W - 1) positions were computed); None when no two rows share a prompt or the prompts are
    a single token wide (then ``generate`` prefills as usual)."""
    index, firsts = distinct_rows(rows)
    width = enc["input_ids"].shape[1]
    if len(firsts) == len(rows) or width < 2:
        return None
    device = enc["input_ids"].device
    pick = torch.tensor(firsts, dtype=torch.long, device=device)
    ids = enc["input_ids"].index_select(0, pick)[:, :-1]
    mask = enc["attention_mask"].index_select(0, pick)[:, :-1]
    cache = empty_cache(model)
    model(input_ids=ids, attention_mask=mask, position_ids=position_ids(mask), use_cache=True, logits_to_keep=1,
          **{cache_kwarg(): cache})
    cache.reorder_cache(torch.tensor(index, dtype=torch.long, device=device))
    return cache, len(firsts)
