"""The frozen answerer g(O) used by SNC (paper appendix "SNC Computation per Trajectory").

g(O) = exp( (1/|y*|) Σ_j log P_ref(y*_j | q, O, y*_<j) ), maximised over gold aliases, under
stop-gradient reference weights. Calls are batched and cached (same question + same ordered
context + same alias -> same score), and log-probabilities are clamped before exponentiation.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Callable, Sequence

import torch

LOGP_FLOOR = -30.0  # clamp: keeps exp() finite and gains comparable


class FrozenAnswerer:
    def __init__(self, forward: Callable[..., Any], tokenizer: Any, prompt_fn: Callable[[str, list[tuple[str, str]]], str], *,
                 max_aliases: int = 3, batch_size: int = 8, max_context_tokens: int = 2048, cache_size: int = 200_000):
        self.forward = forward  # callable(**inputs) -> output with .logits, no grad
        self.tokenizer = tokenizer
        self.prompt_fn = prompt_fn
        self.max_aliases = max_aliases
        self.batch_size = batch_size
        self.max_context_tokens = max_context_tokens
        # g is a function of frozen weights, so a score stays valid across steps: revisited questions and
        # re-reached contexts cost nothing. LRU-bounded to ``cache_size`` entries.
        self._cache: OrderedDict[tuple, float] = OrderedDict()
        self.cache_size = cache_size
        self.calls = 0
        self.seconds = 0.0

    def _texts(self, question: str, evidence: list[tuple[str, str]], answer: str) -> tuple[str, str]:
        from harness_g.training.chat import render_prompt

        prompt = render_prompt(self.tokenizer, self.prompt_fn(question, evidence))
        return prompt, answer

    def score_many(self, requests: Sequence[tuple[str, tuple[str, ...], list[tuple[str, str]], Sequence[str]]]) -> list[float]:
        """requests: (question, context key, evidence [(title, text)], aliases) -> g values in [0, 1]."""
        out: list[float | None] = [None] * len(requests)
        todo: list[tuple[int, str, str, tuple]] = []
        first: dict[tuple, int] = {}  # cache key -> the request that scores it (duplicates copy its value)
        for i, (question, key, evidence, aliases) in enumerate(requests):
            cache_key = (question, key)
            if cache_key in self._cache:
                self._cache.move_to_end(cache_key)
                out[i] = self._cache[cache_key]
                continue
            if cache_key in first:
                continue
            first[cache_key] = i
            for alias in list(dict.fromkeys(a for a in aliases if a))[: self.max_aliases]:
                prompt, answer = self._texts(question, evidence, alias)
                todo.append((i, prompt, answer, cache_key))
        if todo:
            t0 = time.perf_counter()
            scores = self._teacher_forced(todo)
            self.seconds += time.perf_counter() - t0
            best: dict[int, float] = {}
            keys: dict[int, tuple] = {}
            for (i, _, _, key), s in zip(todo, scores):
                best[i] = max(best.get(i, 0.0), s)
                keys[i] = key
            for i, s in best.items():
                out[i] = s
                self._cache[keys[i]] = s
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        for i, (question, key, _, _) in enumerate(requests):  # in-batch duplicates of a freshly scored context
            if out[i] is None and (question, key) in first:
                out[i] = out[first[(question, key)]]
        return [0.0 if v is None else v for v in out]

    @torch.no_grad()
    def _teacher_forced(self, items: list[tuple[int, str, str, tuple]]) -> list[float]:
        tok = self.tokenizer
        results: list[float] = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            seqs, spans = [], []
            for _, prompt, answer, _ in chunk:
                p_ids = tok(prompt, add_special_tokens=False)["input_ids"][-self.max_context_tokens :]
                a_ids = tok(answer, add_special_tokens=False)["input_ids"]
                seqs.append(p_ids + a_ids)
                spans.append((len(p_ids), len(p_ids) + len(a_ids)))
            length = max(len(s) for s in seqs)
            pad = tok.pad_token_id if tok.pad_token_id is not None else 0
            # left padding: every answer ends at the right edge, so only the last `tail` logits are needed
            ids = torch.full((len(seqs), length), pad, dtype=torch.long)
            attn = torch.zeros((len(seqs), length), dtype=torch.long)
            for i, s in enumerate(seqs):
                ids[i, length - len(s) :] = torch.tensor(s)
                attn[i, length - len(s) :] = 1
            tail = max(b - a for a, b in spans) + 1
            positions = (attn.cumsum(-1) - 1).clamp_min(0)
            self.calls += 1
            logits = self.forward(input_ids=ids, attention_mask=attn, position_ids=positions, logits_to_keep=tail).logits
            logits = logits[:, -tail:-1].float()  # predicts the last tail-1 tokens
            logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, length - tail + 1 :].unsqueeze(-1)).squeeze(-1)
            for i, (a, b) in enumerate(spans):
                n = b - a
                if n <= 0:
                    results.append(0.0)
                    continue
                token_lp = logp[i, logp.shape[1] - n :].clamp_min(LOGP_FLOOR)
                results.append(float(torch.exp(token_lp.mean())))
        return results
