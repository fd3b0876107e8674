"""Key/value states kept between turns of a chat that a backend renders afresh every turn (the eval backend).

:class:`~harness_g.agent.llm.transformers_backend.TransformersBackend` tokenises each turn's whole rendered chat, so
under the multi-turn context (the paper's, Harness-G §3.4) turn t+1's prompt repeats turn t's prompt and reply. The
trainer's generator continues prompts in token space (:mod:`harness_g.training.tito`); this backend does not, so the
reuse here is by token prefix: turn t's prompt ids and sampled ids are kept with their keys and values
(:class:`~harness_g.agent.llm.kv_cache.RowState`), and turn t+1's prompt reuses them up to the first token where
the two sequences differ (a reply the template re-renders differently from what was sampled ends the shared part
there; everything after it is computed). The layout of a reused batch is
:func:`~harness_g.agent.llm.kv_cache.reused_prefill`'s.

Execution only: the reused keys and values are those a full prefill computes for the same tokens at the same
positions (up to floating-point summation order), so the replies are the same. Chats are matched by their messages:
turn t+1's chat is turn t's chat, one assistant message and one user message. Memory is bounded by ``budget_bytes``
(oldest states dropped first: an episode that ended never asks for its state again).
"""
from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

Conversation = Sequence[dict[str, str]]


@dataclass
class _Kept:
    ids: tuple[int, ...]  # the turn's prompt ids + its sampled ids
    state: Any  # RowState over a prefix of ``ids``
    nbytes: int


def _chat_key(messages: Conversation) -> str:
    return json.dumps([[m["role"], m["content"]] for m in messages], ensure_ascii=False)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two id sequences."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def _state_bytes(state: Any) -> int:
    return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in state.layers)


class ChatStates:
    """Per chat, the key/value states its last turn left: ``take(chat, prompt_ids)`` before a turn (the state of the
    chat's previous turn cut to the prefix it shares with ``prompt_ids``, or None), ``record(chat, ids, state)``
    after it. Chats with the same messages so far (a group's identical first turns) queue under one key, and a take
    picks the queued state sharing the longest prefix. ``budget_bytes`` caps the memory held (oldest dropped).
    ``reused`` / ``fresh`` count the prompts of each kind."""

    def __init__(self, budget_bytes: int):
        self.budget_bytes = int(budget_bytes)
        self._kept: OrderedDict[str, list[_Kept]] = OrderedDict()
        self._bytes = 0
        self.reused = 0
        self.fresh = 0

    @property
    def nbytes(self) -> int:
        """Bytes of key/value tensors held now."""
        return self._bytes

    def take(self, chat: Conversation, prompt_ids: Sequence[int]) -> Any:
        """The state to start ``chat``'s prompt from (a RowState over at most the prefix its previous turn shares
        with ``prompt_ids``), or None: the chat has no recorded previous turn, or nothing of it is shared."""
        from harness_g.agent.llm.kv_cache import RowState

        queue = None
        if len(chat) >= 3 and chat[-2].get("role") == "assistant":
            key = _chat_key(chat[:-2])
            queue = self._kept.get(key)
        if not queue:
            self.fresh += 1
            return None
        shared = [_common_prefix(item.ids, prompt_ids) for item in queue]
        best = max(range(len(queue)), key=shared.__getitem__)
        item = queue.pop(best)
        self._bytes -= item.nbytes
        if not queue:
            del self._kept[key]
        n = min(shared[best], item.state.length)
        if n < 1:
            self.fresh += 1
            return None
        self.reused += 1
        if n == item.state.length:
            return item.state
        return RowState(n, tuple((k[:, :n], v[:, :n]) for k, v in item.state.layers))

    def record(self, chat: Conversation, ids: Sequence[int], state: Any) -> None:
        """Keep ``state`` (covering a prefix of ``ids``: the turn's prompt ids + sampled ids) for ``chat``'s next
        turn. None (nothing to keep) is ignored; a state larger than the whole budget is not kept."""
        if state is None:
            return
        nbytes = _state_bytes(state)
        if nbytes > self.budget_bytes:
            return
        self._kept.setdefault(_chat_key(chat), []).append(_Kept(tuple(ids), state, nbytes))
        self._bytes += nbytes
        while self._bytes > self.budget_bytes:
            key, queue = next(iter(self._kept.items()))
            self._bytes -= queue.pop(0).nbytes
            if not queue:
                del self._kept[key]

    def clear(self) -> None:
        """Forget every kept state (the weights that computed them changed, or the episodes ended)."""
        self._kept.clear()
        self._bytes = 0
