"""A prefilled key/value cache checked against the one a plain prefill computes (the prompt-sharing and prefix-cache
tests): the reference is the model run once over the whole left-padded batch, nothing shared or reused. Also what two
plays with and without a cache must agree on (:func:`without_timings`)."""
from __future__ import annotations

from typing import Any

import torch

from harness_g.agent.llm.kv_cache import cache_kwarg, empty_cache, position_ids


def assert_matches_full_prefill(model: Any, enc: dict[str, torch.Tensor], cache: Any, atol: float) -> None:
    """``cache`` holds, at every real (non-padding) position of ``enc``'s first W - 1 columns, the keys and values of
    one forward over those columns (``enc``: left-padded ``input_ids``/``attention_mask`` [B, W])."""
    full = empty_cache(model)
    mask = enc["attention_mask"][:, :-1]
    with torch.no_grad():
        model(input_ids=enc["input_ids"][:, :-1], attention_mask=mask, position_ids=position_ids(mask),
              use_cache=True, **{cache_kwarg(): full})
    real = mask.bool()[:, None, :, None]  # [B, 1, W - 1, 1]: padding positions hold whatever; compare the real ones
    for a, b in zip(cache.layers, full.layers, strict=True):
        assert a.keys.shape == b.keys.shape
        assert torch.allclose(a.keys * real, b.keys * real, atol=atol)
        assert torch.allclose(a.values * real, b.values * real, atol=atol)


def without_timings(value: Any) -> Any:
    """``value`` (trajectories, rollout records) with every wall-clock field (a key naming seconds) removed: what two
    plays with and without a cache must agree on."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if "seconds" not in k and not k.endswith("_s")}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value
