"""Shared prompt prefill (training/prompt_sharing.py) with the real SmolLM2-135M-Instruct on CPU: a batch whose rows
repeat prompts (a GRPO group's first turn) is prefilled once per distinct prompt, and every row gets the replies and
the key/value cache it would have got with each copy prefilled (greedy and sampled, the same RNG seed)."""
from __future__ import annotations

import pytest
import torch
from helpers.kv_cache import assert_matches_full_prefill

from harness_g.training.config import ModelConfig
from harness_g.training.prompt_sharing import distinct_rows, shared_prefill


@pytest.fixture(scope="module")
def smol():
    from harness_g.training.modeling import load_policy, load_tokenizer

    tok = load_tokenizer(ModelConfig(name="smollm2"))
    return load_policy(ModelConfig(name="smollm2"), tok, trainable=False).float().eval(), tok


def _chat(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


#: 8 rows, 3 distinct prompts of different lengths (so the batch is left-padded), duplicates not adjacent
BATCH = [_chat("Which river flows through Copenhagen? Answer in one word."), _chat("Pick A1 or A2."),
         _chat("Which river flows through Copenhagen? Answer in one word."), _chat("Name a Danish city."),
         _chat("Pick A1 or A2."), _chat("Which river flows through Copenhagen? Answer in one word."),
         _chat("Name a Danish city."), _chat("Pick A1 or A2.")]


def test_distinct_rows_numbers_prompts_in_order_of_first_appearance() -> None:
    assert distinct_rows([[1, 2], [3], [1, 2], [3], [4]]) == ([0, 1, 0, 1, 2], [0, 1, 4])
    assert distinct_rows([[1], [2]]) == ([0, 1], [0, 1])


def _generator(smol, share: bool):
    from harness_g.training.rollout import Generator

    model, tok = smol
    return Generator(model, tok, temperature=1.0, top_p=1.0, max_prompt_tokens=2048, share_prompts=share)


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampled"])
def test_shared_prefill_gives_every_row_the_replies_of_a_full_prefill(smol, temperature: float) -> None:
    replies = {}
    for share in (False, True):
        gen = _generator(smol, share)
        torch.manual_seed(7)
        out = gen.generate(BATCH, max_new_tokens=12, temperature=temperature)
        replies[share] = [g.token_ids for g in out]
        counters = (gen.prompt_tokens, gen.padded_prompt_tokens, gen.prefilled_prompt_positions)
        if share:
            real, padded, computed = counters
            width = max(g.prompt_tokens for g in out)
            assert computed == 3 * (width - 1) + len(BATCH) < padded  # 3 distinct prompts prefilled, then 8 last tokens
        else:
            assert counters[2] == counters[1]  # nothing shared: every padded position computed
    assert replies[True] == replies[False]
    assert len(set(replies[True])) > 1  # the rows are not all one reply (the check could fail)


def test_the_shared_cache_holds_the_keys_and_values_of_each_rows_own_prefill(smol) -> None:
    from harness_g.training.rollout import left_pad

    model, tok = smol
    gen = _generator(smol, True)
    rows = [gen.continuations.prompt(conv)[0] for conv in BATCH]
    enc = left_pad(rows, tok.pad_token_id, torch.device("cpu"))
    shared, distinct = shared_prefill(model, enc, rows)
    assert distinct == 3
    assert_matches_full_prefill(model, enc, shared, atol=1e-4)


def test_no_shared_prompt_means_no_shared_prefill(smol) -> None:
    from harness_g.training.rollout import left_pad

    model, tok = smol
    rows = [[1, 2, 3], [4, 5], [1, 2]]
    assert shared_prefill(model, left_pad(rows, tok.pad_token_id, torch.device("cpu")), rows) is None
