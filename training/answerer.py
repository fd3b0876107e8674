"""Teacher-forced gold-answer scoring: the frozen answerer g(O) used by SNC (paper appendix "SNC Computation per
Trajectory", "Answerer scoring") and the current policy's belief used by IGPO (appendix "Factorial credit
control").

g(O) = exp( (1/|y*|) Σ_j log P(y*_j | q, O, y*_<j) ), maximised over the *normalised* gold-answer alias set
("Answerer scoring"; norm() of appendix "Evaluation Details", "Exact Match (EM)": lowercase, drop punctuation and
articles, fold whitespace). Calls are batched; log-probabilities are clamped before exponentiation.

Cache: a score depends on the question, its gold aliases and the ordered context, so the key is
(question id, question text, normalised aliases, context key) — never the question text alone, which two
different questions (different answers) can share. :class:`FrozenAnswerer` (stop-gradient reference weights)
keeps it across steps; :class:`PolicyBelief` (the moving policy) only dedupes inside one call.
"""
from __future__ import annotations

import math
import time
from collections import OrderedDict
from typing import Any, Callable, NamedTuple, Sequence

import torch

LOGP_FLOOR = -30.0  # clamp: keeps exp() finite and gains comparable


class ScoreRequest(NamedTuple):
    """One context to score: ``context`` is the hashable key of ``evidence`` (e.g. its ordered sentence ids)."""

    question_id: str
    question: str
    context: tuple[str, ...]
    evidence: list[tuple[str, str]]  # [(title, text)] in context order
    aliases: Sequence[str]


def gold_aliases(answers: Sequence[str], max_aliases: int | None = None) -> tuple[str, ...]:
    """The normalised gold-answer alias set (appendix "Answerer scoring" with norm() of "Exact Match (EM)"): every
    annotated alias normalised, deduplicated in annotation order, empties dropped (raw stripped aliases only if all
    normalise to empty). ``max_aliases``: optional cap (None or <= 0: all)."""
    from harness_g.agent.eval.metrics import normalize_answer

    out = tuple(dict.fromkeys(n for n in (normalize_answer(a) for a in answers if a) if n))
    if not out:
        out = tuple(dict.fromkeys(a.strip() for a in answers if a and a.strip()))
    return out[:max_aliases] if max_aliases and max_aliases > 0 else out


def _listed(value: Any) -> Any:
    """Tuples (at any depth) as lists: a cache key as JSON holds it."""
    return [_listed(v) for v in value] if isinstance(value, (tuple, list)) else value


def _tupled(value: Any) -> Any:
    """Lists (at any depth) as tuples: a cache key read back from JSON."""
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


class FrozenAnswerer:
    def __init__(self, forward: Callable[..., Any], tokenizer: Any, prompt_fn: Callable[[str, list[tuple[str, str]]], str], *,
                 max_aliases: int | None = None, batch_size: int = 8, max_context_tokens: int = 2048,
                 cache_size: int = 200_000):
        self.forward = forward  # callable(**inputs) -> output with .logits, no grad
        self.tokenizer = tokenizer
        self.prompt_fn = prompt_fn
        self.max_aliases = max_aliases  # None / 0: every normalised alias (the paper's max is over all of them)
        self.batch_size = batch_size
        self.max_context_tokens = max_context_tokens
        # g is a function of frozen weights, so a score stays valid across steps: revisited questions and
        # re-reached contexts cost nothing. LRU-bounded to ``cache_size`` entries (0: no cross-call cache).
        self._cache: OrderedDict[tuple, float] = OrderedDict()  # key -> max-over-aliases mean log-prob
        self.cache_size = cache_size
        self.calls = 0
        self.seconds = 0.0

    def _texts(self, question: str, evidence: list[tuple[str, str]], answer: str) -> tuple[str, str]:
        from harness_g.training.chat import render_prompt

        prompt = render_prompt(self.tokenizer, self.prompt_fn(question, evidence))
        return prompt, answer

    def cache_state(self) -> list[list[Any]]:
        """The score cache as JSON-ready ``[key, log score]`` pairs, least recently used first (a checkpoint keeps it:
        a resumed run scores exactly what the uninterrupted one did, since a score computed in another batch may
        differ in its last bits)."""
        return [[list(_listed(key)), value] for key, value in self._cache.items()]

    def load_cache_state(self, items: Sequence[Sequence[Any]]) -> None:
        """Replace the score cache with ``items`` from :meth:`cache_state` (same order, same LRU bound)."""
        self._cache = OrderedDict((_tupled(key), float(value)) for key, value in items)
        while len(self._cache) > max(self.cache_size, 0):
            self._cache.popitem(last=False)

    def cache_key(self, request: Sequence[Any]) -> tuple:
        r = ScoreRequest(*request)
        return (str(r.question_id), r.question, gold_aliases(r.aliases, self.max_aliases), tuple(r.context))

    def log_scores_many(self, requests: Sequence[ScoreRequest | tuple]) -> list[float]:
        """requests: (question id, question, context key, evidence [(title, text)], aliases) ->
        log g = max over normalised aliases of the mean teacher-forced log-prob (each token clamped at LOGP_FLOOR);
        LOGP_FLOOR for a request with no alias."""
        out: list[float | None] = [None] * len(requests)
        keys = [self.cache_key(r) for r in requests]
        todo: list[tuple[int, str, str]] = []
        first: dict[tuple, int] = {}  # cache key -> the request that scores it (duplicates copy its value)
        for i, (req, key) in enumerate(zip(requests, keys)):
            if key in self._cache:
                self._cache.move_to_end(key)
                out[i] = self._cache[key]
                continue
            if key in first:
                continue
            first[key] = i
            r = ScoreRequest(*req)
            if key[2]:
                prompt, _ = self._texts(r.question, r.evidence, "")  # one prompt, every alias teacher-forced after it
                todo.extend((i, prompt, alias) for alias in key[2])
        if todo:
            t0 = time.perf_counter()
            scores = self._teacher_forced(todo)
            self.seconds += time.perf_counter() - t0
            best: dict[int, float] = {}
            for (i, _, _), s in zip(todo, scores):
                best[i] = max(best.get(i, LOGP_FLOOR), s)
            for i, s in best.items():
                out[i] = s
                if self.cache_size > 0:
                    self._cache[keys[i]] = s
            while len(self._cache) > max(self.cache_size, 0):
                self._cache.popitem(last=False)
        for i, key in enumerate(keys):  # in-batch duplicates of a freshly scored context
            if out[i] is None and key in first:
                out[i] = out[first[key]]
        return [LOGP_FLOOR if v is None else v for v in out]

    def score_many(self, requests: Sequence[ScoreRequest | tuple]) -> list[float]:
        """g values in [0, 1]: exp of :meth:`log_scores_many` (0 for a request with no alias)."""
        return [math.exp(lp) if self.cache_key(r)[2] else 0.0 for r, lp in zip(requests, self.log_scores_many(requests))]

    def _device(self) -> torch.device:
        """The scoring weights' device: inputs go there (a Reference keeps a frozen copy or the LoRA policy)."""
        f = self.forward
        return _device_of(f, getattr(f, "model", None), getattr(f, "policy", None))

    @torch.no_grad()
    def _teacher_forced(self, items: list[tuple[int, str, str]]) -> list[float]:
        """Mean clamped log-prob of each answer after its prompt."""
        tok = self.tokenizer
        results: list[float] = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            seqs, spans = [], []
            prompt_ids: dict[str, list[int]] = {}
            for _, prompt, answer in chunk:
                if prompt not in prompt_ids:
                    prompt_ids[prompt] = tok(prompt, add_special_tokens=False)["input_ids"][-self.max_context_tokens :]
                p_ids = prompt_ids[prompt]
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
            device = self._device()
            logits = self.forward(input_ids=ids.to(device), attention_mask=attn.to(device), position_ids=positions.to(device),
                                  logits_to_keep=tail).logits
            logits = logits[:, -tail:-1].float().cpu()  # predicts the last tail-1 tokens
            logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, length - tail + 1 :].unsqueeze(-1)).squeeze(-1)
            for i, (a, b) in enumerate(spans):
                n = b - a
                if n <= 0:
                    results.append(LOGP_FLOOR)
                    continue
                token_lp = logp[i, logp.shape[1] - n :].clamp_min(LOGP_FLOOR)
                results.append(float(token_lp.mean()))
        return results


def _device_of(*objs: Any) -> torch.device:
    """Where the first of ``objs`` that has parameters keeps them (CPU when none can be told)."""
    for obj in objs:
        params = getattr(obj, "parameters", None)
        if callable(params):
            try:
                return next(params()).device
            except StopIteration:
                continue
    return torch.device("cpu")


class PolicyBelief(FrozenAnswerer):
    """The *current* policy's belief in the gold answer, for IGPO's information gain (appendix "Factorial credit
    control": "policy-belief information gain"): the same teacher-forced, alias-maximised log-likelihood as g,
    computed with the live policy weights in eval mode and without gradients. The weights move every optimiser step,
    so nothing is cached across calls (duplicates inside one call are still scored once).

    Which context, against IGPO (arXiv 2510.14967): IGPO scores π_θ(a | q, o_≤t), the gold answer teacher-forced
    after the agent's own rollout so far, because its agent answers inside that chat. Here the policy never answers
    in its menu chat (its replies there are action ids): :meth:`LLMPolicy.answer_batch` answers from a fresh chat
    of the question and the evidence (``agent/prompts.answer_prompt``). So the policy's probability of producing the
    gold answer after turn t is taken on that answer chat, with every sentence surfaced so far (O_t, what its menu
    chat has shown it) as the evidence: ``prompt_fn`` is ``scorer_user_text``, the answer prompt's text. Scoring
    after the menu chat instead would teacher-force a reply the policy is never asked for there. Kept from g, also
    unlike IGPO's code (its first gold answer): the max over the normalised gold aliases. The log-beliefs become
    information gains in :func:`harness_g.training.credit.information_gains` (IGPO's probability difference)."""

    def __init__(self, policy: torch.nn.Module, tokenizer: Any, prompt_fn: Callable[[str, list[tuple[str, str]]], str], *,
                 max_aliases: int | None = None, batch_size: int = 8, max_context_tokens: int = 2048):
        super().__init__(self._forward, tokenizer, prompt_fn, max_aliases=max_aliases, batch_size=batch_size,
                         max_context_tokens=max_context_tokens, cache_size=0)
        self.policy = policy

    def _device(self) -> torch.device:
        return _device_of(self.policy)

    def _forward(self, **inputs: Any) -> Any:
        was_training = self.policy.training
        self.policy.eval()
        try:
            with torch.no_grad():
                return self.policy(**inputs)
        finally:
            if was_training:
                self.policy.train()
