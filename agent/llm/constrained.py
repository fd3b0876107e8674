"""Constrained decoding of action ids: a reply can only be one of the menu's ids, then end-of-turn.

Small models (SmolLM2-135M) rarely emit a bare ``A3``; constraining generation to the offered ids makes the
menu usable for them (and is how the trainer's CPU recipes sample actions). transformers only, via
``prefix_allowed_tokens_fn``.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence


def allowed_tokens_fn(tokenizer: Any, allowed: Sequence[Sequence[str]], prompt_len: int, eos_id: int) -> Callable[[int, Any], list[int]]:
    """``prefix_allowed_tokens_fn`` restricting batch row b to one of ``allowed[b]`` followed by ``eos_id``.

    ``prompt_len`` is the (padded) prompt width: generated tokens start there in every row.
    """
    tries: list[dict[tuple[int, ...], set[int]]] = []
    for options in allowed:
        trie: dict[tuple[int, ...], set[int]] = {}
        for text in options:
            ids = tuple(tokenizer(text, add_special_tokens=False)["input_ids"])
            for k in range(len(ids)):
                trie.setdefault(ids[:k], set()).add(ids[k])
            trie.setdefault(ids, set()).add(eos_id)
        tries.append(trie)

    def fn(batch_id: int, input_ids: Any) -> list[int]:
        nxt = tries[batch_id].get(tuple(input_ids[prompt_len:].tolist()))
        return sorted(nxt) if nxt else [eos_id]

    return fn
