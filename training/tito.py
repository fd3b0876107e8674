"""Token-in, token-out: a rollout is trained on the token ids the policy was prompted with and sampled.

Decoding a reply and tokenising the chat again is not an identity: a reply is stored stripped (a sampled leading
space or newline token disappears), special tokens are skipped, and a sampled token sequence need not be the one
BPE would produce for its text. Training on the re-tokenised chat then scores tokens the policy never sampled.

:class:`TokenContinuations` makes the generator's prompts token-continuous within an episode: the prompt of turn
t+1 is the prompt of turn t, then the ids sampled at turn t (its end-of-turn token included when sampled), then the
tokens of what the chat template adds after that reply (the environment's response and the next generation
prompt). A generation then carries ``prompt_ids`` and ``token_ids``, and :func:`turn_id_sequences` builds a
trajectory's training sequence from exactly those ids. When the continuation cannot be made (older turns dropped to
fit the prompt budget, a template that renders history differently from the live prompt, a stop token whose text
is not what the template writes), the prompt is tokenised afresh and the training sequence splits there, so every
trained token is still a sampled one.
"""
from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

from harness_g.agent.llm.context import render_chat


@dataclass
class _Continuation:
    ids: list[int]  # the turn's prompt ids + its sampled ids
    text: str  # the turn's prompt text + its reply as the chat history will hold it
    stop_text: str  # the sampled end-of-turn token's text ("" when the reply was cut at its token limit)
    state: Any = None  # what the generator kept of this turn for the next (a key/value cache: training/prefix_cache.py)


class TokenContinuations:
    """Prompt ids for chats, continued in token space from the previous turn of the same episode.

    ``prompt(conv)`` -> (prompt ids, prompt text); after generating, ``record(conv, prompt_ids, prompt_text,
    sampled_ids, reply, stopped)``. Episodes are matched by their chat: the next turn's chat is this chat, the
    reply as an assistant message, and one more user message; episodes with the same chat so far (a GRPO group's
    identical first turns) queue under one key and each takes one continuation. At most ``capacity`` chats are kept
    (oldest dropped: an episode that ended never asks again). ``continued`` / ``fresh`` count the prompts of each
    kind."""

    def __init__(self, tokenizer: Any, capacity: int = 8192):
        self.tokenizer = tokenizer
        self.capacity = capacity
        self._pending: OrderedDict[str, list[_Continuation]] = OrderedDict()
        self.continued = 0
        self.fresh = 0

    @staticmethod
    def _key(messages: Sequence[dict[str, str]]) -> str:
        return json.dumps([[m["role"], m["content"]] for m in messages], ensure_ascii=False)

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def prompt(self, conv: Sequence[dict[str, str]]) -> tuple[list[int], str]:
        """The ids to prompt ``conv`` with, and its rendered text (with the generation prompt)."""
        ids, text, _ = self.take(conv)
        return ids, text

    def take(self, conv: Sequence[dict[str, str]]) -> tuple[list[int], str, Any]:
        """:meth:`prompt`, with the state recorded for the turn it continues (None for a fresh prompt): the state
        covers a prefix of the returned ids."""
        text = render_chat(self.tokenizer, list(conv))
        prev = self._take(self._key(conv[:-1])) if len(conv) >= 3 else None
        if prev is not None and text.startswith(prev.text):
            rest = text[len(prev.text):]
            if rest.startswith(prev.stop_text):  # the template writes the end-of-turn token the policy sampled
                self.continued += 1
                return prev.ids + self._encode(rest[len(prev.stop_text):]), text, prev.state
        self.fresh += 1
        return self._encode(text), text, None

    def record(self, conv: Sequence[dict[str, str]], prompt_ids: Sequence[int], prompt_text: str,
               sampled_ids: Sequence[int], reply: str, stopped: bool, state: Any = None) -> None:
        """Remember a generated turn so the episode's next prompt continues from its ids. ``reply``: the text the
        chat history will hold; ``stopped``: the last sampled id is the end-of-turn token; ``state``: what the
        generator keeps for the next turn (covering a prefix of ``prompt_ids + sampled_ids``)."""
        key = self._key([*conv, {"role": "assistant", "content": reply}])
        stop_text = self.tokenizer.decode([sampled_ids[-1]]) if stopped and sampled_ids else ""
        self._pending.setdefault(key, []).append(
            _Continuation([*prompt_ids, *sampled_ids], prompt_text + reply, stop_text, state))
        while len(self._pending) > self.capacity:
            self._pending.popitem(last=False)

    def drop_states(self) -> None:
        """Forget every kept state (the ids stay): the episodes that would have continued from them have ended, or
        the weights that computed them have changed."""
        for queue in self._pending.values():
            for item in queue:
                item.state = None

    def _take(self, key: str) -> _Continuation | None:
        queue = self._pending.get(key)
        if not queue:
            return None
        item = queue.pop(0)
        if not queue:
            del self._pending[key]
        return item


def continues(prev_prompt: Sequence[int], prev_reply: Sequence[int], prompt: Sequence[int]) -> bool:
    """Whether ``prompt`` is the previous turn's prompt + its sampled reply + more (one growing token sequence)."""
    n = len(prev_prompt) + len(prev_reply)
    return len(prompt) > n and list(prompt[: len(prev_prompt)]) == list(prev_prompt) and \
        list(prompt[len(prev_prompt): n]) == list(prev_reply)
