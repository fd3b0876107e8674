"""Validation of one ``/v1/chat/completions`` request body for the bundled server (:mod:`.server`).

Every field is checked for type, finiteness and range before anything reaches the model; a bad
field is a :class:`RequestFieldError` whose message names it (the server answers HTTP 400). Unknown
fields are refused too, so a client never believes a setting was honoured when it was not.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from harness_g.agent.llm.backends import Conversation

DEFAULT_MAX_TOKENS = 256
MAX_STOP_STRINGS = 4  # OpenAI's limit
MAX_STOP_CHARS = 256
SEED_RANGE = (-(2**63), 2**63 - 1)  # what torch.manual_seed accepts without wrapping
TEMPERATURE_RANGE = (0.0, 2.0)  # OpenAI's range; 0 is greedy
ROLES = ("system", "user", "assistant")
KNOWN_FIELDS = frozenset({
    "model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "n", "seed", "stop",
    "stream", "user", "presence_penalty", "frequency_penalty",
})


class RequestFieldError(ValueError):
    """One field of a request is missing, of the wrong type or out of range; ``field`` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class ChatRequest:
    """A validated request: the conversation and the sampling parameters the backend is called with."""

    model: str | None
    messages: Conversation
    max_tokens: int
    temperature: float
    top_p: float
    seed: int | None
    stop: list[str] | None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(req: dict[str, Any], field: str, default: float, lo: float, hi: float, *, lo_open: bool = False) -> float:
    """A finite JSON number in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``), or ``default`` when absent/null."""
    value = req.get(field)
    if value is None:
        return default
    if not (_is_int(value) or isinstance(value, float)):
        raise RequestFieldError(field, f"must be a number, got {type(value).__name__} {value!r:.40}")
    if not math.isfinite(value):
        raise RequestFieldError(field, f"must be finite, got {value!r}")
    if value < lo or value > hi or (lo_open and value == lo):
        raise RequestFieldError(field, f"must be in {'(' if lo_open else '['}{lo:g}, {hi:g}], got {value!r}")
    return float(value)


def _integer(req: dict[str, Any], field: str, lo: int, hi: int) -> int | None:
    """A JSON integer in ``[lo, hi]`` (``true``/``1.0`` are refused), or None when absent/null."""
    value = req.get(field)
    if value is None:
        return None
    if not _is_int(value):
        raise RequestFieldError(field, f"must be an integer, got {type(value).__name__} {value!r:.40}")
    if not lo <= value <= hi:
        raise RequestFieldError(field, f"must be in [{lo}, {hi}], got {value}")
    return value


def _messages(req: dict[str, Any]) -> Conversation:
    messages = req.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestFieldError("messages", "must be a non-empty list of {role, content} objects")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("content"), str) or m.get("role") not in ROLES:
            raise RequestFieldError(f"messages[{i}]", f"must be an object with role in {list(ROLES)} "
                                                      "and string content")
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def _stop(req: dict[str, Any]) -> list[str] | None:
    stop = req.get("stop")
    if stop is None:
        return None
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise RequestFieldError("stop", "must be a string or a list of strings")
    if len(stops) > MAX_STOP_STRINGS or any(not s or len(s) > MAX_STOP_CHARS for s in stops):
        raise RequestFieldError("stop", f"at most {MAX_STOP_STRINGS} non-empty strings of at most "
                                        f"{MAX_STOP_CHARS} characters")
    return list(stops) or None


def _unsupported(req: dict[str, Any]) -> None:
    """Fields this server knows but cannot honour at a non-default value."""
    if req.get("stream") not in (None, False):
        raise RequestFieldError("stream", "streaming is not supported by this server (send false or omit it)")
    if _integer(req, "n", 1, 2**31) not in (None, 1):
        raise RequestFieldError("n", "only n=1 is supported by this server")
    for field in ("presence_penalty", "frequency_penalty"):
        if _number(req, field, 0.0, -2.0, 2.0) != 0.0:
            raise RequestFieldError(field, "only 0 is supported by this server")
    if req.get("model") is not None and not isinstance(req["model"], str):
        raise RequestFieldError("model", "must be a string")
    if req.get("user") is not None and not isinstance(req["user"], str):
        raise RequestFieldError("user", "must be a string")


def parse_chat_request(req: Any, *, max_tokens_limit: int) -> ChatRequest:
    """Validate a decoded JSON body. ``max_tokens_limit``: the largest ``max_tokens`` a request may ask for.

    Raises :class:`RequestFieldError` naming the first bad field."""
    if not isinstance(req, dict):
        raise RequestFieldError("body", f"must be a JSON object, got {type(req).__name__}")
    unknown = sorted(set(req) - KNOWN_FIELDS)
    if unknown:
        raise RequestFieldError(unknown[0], f"unknown field (this server accepts: {', '.join(sorted(KNOWN_FIELDS))})")
    messages = _messages(req)
    _unsupported(req)
    legacy = _integer(req, "max_tokens", 1, max_tokens_limit)
    max_tokens = _integer(req, "max_completion_tokens", 1, max_tokens_limit)  # OpenAI's newer name wins
    if max_tokens is None:
        max_tokens = legacy if legacy is not None else min(DEFAULT_MAX_TOKENS, max_tokens_limit)
    return ChatRequest(
        model=req.get("model"), messages=messages, max_tokens=max_tokens,
        temperature=_number(req, "temperature", 1.0, *TEMPERATURE_RANGE),
        top_p=_number(req, "top_p", 1.0, 0.0, 1.0, lo_open=True),
        seed=_integer(req, "seed", *SEED_RANGE), stop=_stop(req))
