"""Token budgets of the policy's context: the prompt budget within the model's positions and the longest reply (a
generation engine is sized for their sum: the vLLM factory in training/generators.py)."""
from __future__ import annotations

from typing import Any


def longest_reply(rollout: Any) -> int:
    """The longest reply a rollout samples, in tokens: max(``max_action_tokens``, ``max_answer_tokens``)."""
    return max(rollout.max_action_tokens, rollout.max_answer_tokens)


def prompt_budget(rollout: Any, max_positions: int | None) -> int:
    """Max prompt tokens: ``rollout.max_prompt_tokens``, lowered so that prompt + the longest reply fits the model's
    ``max_positions`` (None: the model states no limit). ``rollout``: a RolloutConfig."""
    new_tokens = longest_reply(rollout)
    limit = max_positions or rollout.max_prompt_tokens + new_tokens
    return min(rollout.max_prompt_tokens, limit - new_tokens)
