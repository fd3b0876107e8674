"""token_budget_batches: the pure batching rule behind the ONNX encoder (graph/encoders.py)."""
from __future__ import annotations

import pytest

from harness_g.errors import ConfigError
from harness_g.graph.encoders import OnnxEncoder, token_budget_batches


def _check(lengths: list[int], max_rows: int, max_tokens: int) -> list[tuple[int, int]]:
    batches = token_budget_batches(lengths, max_rows, max_tokens)
    if not lengths:
        assert batches == []
        return batches
    # contiguous, covering, non-empty
    assert [b[0] for b in batches] == [0] + [b[1] for b in batches[:-1]] and batches[-1][1] == len(lengths)
    for start, stop in batches:
        rows, width = stop - start, lengths[stop - 1]
        assert 1 <= rows <= max_rows
        assert rows * width <= max_tokens or rows == 1
    return batches


def test_short_rows_fill_to_the_row_cap() -> None:
    assert _check([5] * 10, 4, 512) == [(0, 4), (4, 8), (8, 10)]


def test_long_rows_fill_to_the_token_budget() -> None:
    # 30-piece rows: 512 // 30 = 17 per call; the longer tail gets fewer rows
    batches = _check([30] * 40 + [100] * 12, 64, 512)
    assert batches[0] == (0, 17) and (40, 45) in batches


def test_a_row_longer_than_the_budget_is_its_own_batch() -> None:
    assert _check([10, 10, 600, 700], 8, 512) == [(0, 2), (2, 3), (3, 4)]


@pytest.mark.parametrize("lengths", [[], [1], list(range(1, 300, 7)), [256] * 9])
def test_property_holds_for_mixed_lengths(lengths: list[int]) -> None:
    for rows in (1, 3, 64):
        for budget in (1, 64, 512):
            _check(lengths, rows, budget)


def test_a_non_positive_budget_is_refused_before_any_model_loads() -> None:
    with pytest.raises(ConfigError, match="max_batch_tokens must be >= 1, got 0"):
        OnnxEncoder("no-such-model", max_batch_tokens=0)
