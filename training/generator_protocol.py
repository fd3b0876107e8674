"""What the trainer needs from a rollout generator (the factory's input, GeneratorRequest, lives in training/generators.py).

A rollout generator is a chat backend (:class:`harness_g.agent.llm.backends.ChatBackend`) sampling from the policy
being trained, plus :meth:`RolloutGenerator.sync`, which the trainer calls after every update and once at the start
(after a resume): the in-process transformers generator samples from the live weights and syncs as a no-op; the vLLM
generator copies the weights into its engine. Factories are registered by name in ``training/generators.py``
(``GENERATORS``, a :class:`harness_g.registry.Registry`); the trainer builds its generator as
``GENERATORS.get(config.rollout.generator)(GeneratorRequest(...))`` and calls ``sync`` unconditionally.
"""
from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

import torch

from harness_g.agent.llm.backends import Conversation, Generation


@runtime_checkable
class RolloutGenerator(Protocol):
    """A policy-sampling chat backend. ``collect_rollouts`` reads the sampling settings (``temperature``, ``top_p``),
    the prompt budget (``max_prompt_tokens``, in tokens) and the cumulative generation time (``seconds``)."""

    name: str
    context_window: int | None
    temperature: float
    top_p: float
    max_prompt_tokens: int
    seconds: float

    def count_tokens(self, messages: Conversation) -> int:
        """Prompt length of ``messages`` in the policy's tokens (its chat template applied)."""
        ...

    def generate(self, batch: Sequence[Conversation], *, max_new_tokens: int, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int | None = None, stop: list[str] | None = None,
                 allowed: Sequence[Sequence[str]] | None = None) -> list[Generation]:
        """One reply per chat, in order; ``allowed``: per chat, the only replies permitted (constrained decoding);
        ``finish_reason`` "length" where a reply was cut at ``max_new_tokens``."""
        ...

    def sync(self, policy: torch.nn.Module) -> float:
        """Make the generator sample from ``policy``'s current weights; returns the seconds spent (0.0 for a no-op)."""
        ...
