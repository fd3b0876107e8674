"""Cross-turn prefix caching: an episode's key/value cache is kept from one turn's ``generate`` to the next.

Under the multi-turn context (the paper's, Harness-G §3.4) the prompt of turn t+1 is the prompt of turn t, the ids
sampled at turn t and the environment's response (token-in, token-out: :mod:`harness_g.training.tito`). Without a
cache ``generate`` prefills the whole growing chat again at every turn, so a T-turn episode prefills about T/2 times
the tokens of its last prompt. Here every row's keys and values for its prompt and all but its last sampled token are
kept (:class:`~harness_g.agent.llm.kv_cache.RowState`); at the next turn they are laid back into a left-padded batch
cache and only the rest of each prompt (the last sampled token, the environment's response, the next generation
prompt) is computed.

Execution only, like batching and :mod:`harness_g.training.prompt_sharing`: the cache holds the keys and values a
full prefill computes for those positions (up to floating-point summation order), positions are unchanged, and
``generate`` draws its samples as before, so no rule of the paper changes. ``rollout.prefix_cache`` switches it off. The
cache mechanics (row states, the reused prefill) are :mod:`harness_g.agent.llm.kv_cache`'s, shared with the eval
backend.
"""
from __future__ import annotations

from typing import Any


def enabled(rollout: Any) -> bool:
    """Whether a run's generator keeps caches between turns: ``rollout.prefix_cache`` under the multi-turn context
    (under the markov context no prompt continues the previous turn's, so there is nothing to reuse)."""
    return bool(rollout.prefix_cache) and rollout.context == "multi-turn"
