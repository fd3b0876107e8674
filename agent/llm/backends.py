"""The chat-backend protocol every LLM policy talks to, and helpers shared by the backends."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence, runtime_checkable

from harness_g.errors import HarnessError

Message = dict[str, str]
Conversation = list[Message]

FINISH_REASONS = ("stop", "length", "error")


class BackendError(HarnessError):
    """A backend could not produce a generation (server down, bad response, missing engine)."""


class InvalidRequest(BackendError):
    """Bad generation parameters (an OpenAI-compatible server answers HTTP 400)."""


@dataclass
class Generation:
    """One completion. ``finish_reason``: "stop" (end of turn or a stop string), "length" (hit
    ``max_new_tokens``) or "error" (a counted failure with ``on_error="empty"``). ``seconds`` is the
    wall time of the call that produced it (shared by every member of a batch)."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str = "stop"
    error: str | None = None
    #: token-in, token-out (backends that see tokens; None elsewhere): the exact prompt ids the model was fed and
    #: the ids it sampled, its end-of-turn token included when it stopped on one
    prompt_ids: tuple[int, ...] | None = None
    token_ids: tuple[int, ...] | None = None


@runtime_checkable
class ChatBackend(Protocol):
    """Generate one assistant reply per conversation, in order."""

    name: str

    def generate(self, batch: Sequence[Conversation], *, max_new_tokens: int, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | None = None, stop: list[str] | None = None) -> list[Generation]: ...


def count_tokens(backend: Any, messages: Conversation) -> int:
    """Prompt length of ``messages`` in tokens: the backend's own count when it has one, else ~4 chars/token."""
    fn = getattr(backend, "count_tokens", None)
    if callable(fn):
        return int(fn(messages))
    return sum(len(m.get("content", "")) for m in messages) // 4 + 4 * len(messages)


def context_limit(backend: Any) -> int | None:
    """The backend's context window in tokens, if it knows it."""
    value = getattr(backend, "context_window", None)
    return int(value) if value else None


def cut_at_stop(text: str, stop: Sequence[str] | None) -> tuple[str, bool]:
    """Cut ``text`` before the earliest stop string (OpenAI semantics: the stop string is not returned)."""
    if not stop:
        return text, False
    cut = min((i for i in (text.find(s) for s in stop if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


def check_sampling(max_new_tokens: int, temperature: float, top_p: float) -> None:
    if max_new_tokens < 1:
        raise InvalidRequest(f"max_new_tokens must be >= 1 (got {max_new_tokens})")
    if temperature < 0:
        raise InvalidRequest(f"temperature must be >= 0 (got {temperature})")
    if not 0 < top_p <= 1:
        raise InvalidRequest(f"top_p must be in (0, 1] (got {top_p})")
