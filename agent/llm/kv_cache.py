"""Key/value caches laid out by hand for ``generate``: a batch's prompts prefilled from states kept per row.

The mechanics shared by the trainer's rollout generator (:mod:`harness_g.training.prefix_cache`,
:mod:`harness_g.training.prompt_sharing`) and the eval backend (:mod:`harness_g.agent.llm.chat_states`): a row's keys
and values cut out of the cache ``generate`` filled (:class:`RowState`, :func:`row_states`), and a left-padded batch's
cache rebuilt from such states plus one forward over the columns they do not cover (:func:`reused_prefill`).

Layout of a reused batch (``B`` rows, the longest prompt ``W`` tokens, left padding as without reuse): row ``i``'s
prompt of ``L_i`` tokens fills columns ``[W - L_i, W)`` and its kept state covers its first ``P_i`` tokens. The batch
cache covers the columns ``[0, X)`` with ``X = min_i(W - L_i + P_i)`` (every row has keys and values there or is
padding), one forward computes columns ``[X, W - 1)`` into it, and ``generate`` computes column ``W - 1`` and the
reply. A row whose state is longer than ``X - (W - L_i)`` recomputes the difference; a row without a state makes
``X`` its left edge, so a batch that mixes continued and fresh prompts is prefilled as without reuse.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Sequence

import torch


@functools.lru_cache(maxsize=1)
def cache_kwarg() -> str:
    """The keyword a key/value cache is passed under to a model's forward and to ``generate``: ``cache`` in
    transformers releases that renamed it (5.24 warns on ``past_key_values``), ``past_key_values`` before."""
    from transformers import LlamaForCausalLM

    return "cache" if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters else "past_key_values"


def position_ids(attention_mask: torch.Tensor) -> torch.Tensor:
    """Positions of a left-padded batch [B, W] as ``generate`` derives them: 0 at each row's first real token, padding 1."""
    pos = attention_mask.long().cumsum(-1) - 1
    return pos.masked_fill(attention_mask == 0, 1)


@dataclass(frozen=True)
class RowState:
    """One episode's keys and values for its first ``length`` tokens: per layer ``(keys, values)``, each
    ``[kv_heads, length, head_dim]`` on the model's device, in the dtype the model computed them in."""

    length: int
    layers: tuple[tuple[torch.Tensor, torch.Tensor], ...]


def full_attention(cache: Any) -> bool:
    """Whether every layer of ``cache`` keeps all positions (transformers' ``DynamicLayer``): only then can a row's
    columns be cut out and laid back. Sliding-window and recurrent layers (Gemma 3's local layers, Mamba) cannot."""
    layers = getattr(cache, "layers", None)
    return bool(layers) and all(type(layer).__name__ == "DynamicLayer" for layer in layers)


def empty_cache(model: torch.nn.Module) -> Any:
    """An empty ``DynamicCache`` for ``model`` (its config decides the layer kinds)."""
    from transformers import DynamicCache

    config = getattr(model, "config", None)
    return DynamicCache(config=config) if config is not None else DynamicCache()


def row_states(cache: Any, width: int, prompt_lens: Sequence[int], sampled_lens: Sequence[int]) -> list[RowState | None]:
    """Cut each row's state out of the cache ``generate`` filled: row ``i``'s prompt occupied columns
    ``[width - prompt_lens[i], width)`` and its ``sampled_lens[i]`` sampled ids the columns after; the state covers
    the prompt and all sampled ids but the last (whose keys ``generate`` never computes). None for an empty reply.
    Each state is a copy, and the batch cache is emptied layer by layer as the rows are cut out of it, so the kept
    states never sit in memory beside the whole batch cache."""
    if not full_attention(cache):
        return [None] * len(prompt_lens)
    spans = [(width - plen, width + slen - 1) if slen >= 1 else None for plen, slen in zip(prompt_lens, sampled_lens)]
    kept: list[list[tuple[torch.Tensor, torch.Tensor]]] = [[] for _ in spans]
    for layer in cache.layers:
        for i, span in enumerate(spans):
            if span is not None:
                kept[i].append((layer.keys[i, :, span[0]:span[1]].clone(), layer.values[i, :, span[0]:span[1]].clone()))
        layer.keys = layer.values = None  # this layer's rows are copied out: free the batch tensors now
    return [RowState(span[1] - span[0], tuple(layers)) if span is not None else None
            for span, layers in zip(spans, kept)]


@torch.no_grad()
def reused_prefill(model: torch.nn.Module, enc: dict[str, torch.Tensor], prompt_lens: Sequence[int],
                   states: Sequence[RowState | None]) -> tuple[Any, int] | None:
    """The key/value cache of ``enc`` (left-padded ``input_ids``/``attention_mask`` [B, W]) for its first W - 1
    columns, built from each row's kept ``states`` (None: nothing kept) and one forward over the columns no state
    covers; with the prompt positions that forward computed (rows x columns). None when no column would come from
    the states (then ``generate`` prefills as usual). The caller drops its references to
    ``states`` once this returns: the batch cache holds copies of what was needed."""
    width = enc["input_ids"].shape[1]
    starts = [width - n for n in prompt_lens]
    kept = [min(s.length if s is not None else 0, n - 1) for s, n in zip(states, prompt_lens)]
    split = min(start + k for start, k in zip(starts, kept))
    if split < 1:  # nothing to reuse: a longest prompt without a state starts at column 0
        return None
    first = next(s for s in states if s is not None)
    cache = empty_cache(model)
    rows = len(prompt_lens)
    for layer, (k0, v0) in enumerate(first.layers):
        keys = k0.new_zeros((rows, k0.shape[0], split, k0.shape[2]))
        values = v0.new_zeros((rows, v0.shape[0], split, v0.shape[2]))
        for i, (state, start) in enumerate(zip(states, starts)):
            n = split - start  # row i's cached tokens that fall before the split (0 < n <= its state's length)
            if n > 0 and state is not None:
                keys[i, :, start:split] = state.layers[layer][0][:, :n]
                values[i, :, start:split] = state.layers[layer][1][:, :n]
        cache.update(keys, values, layer)
    computed = rows * (width - 1 - split)
    if width - 1 > split:
        mask = enc["attention_mask"][:, : width - 1]
        model(input_ids=enc["input_ids"][:, split: width - 1], attention_mask=mask,
              position_ids=position_ids(mask)[:, split:], use_cache=True, logits_to_keep=1, **{cache_kwarg(): cache})
    return cache, computed
