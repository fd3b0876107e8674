"""Rollout collection through the batched menu environment (graph store queries happen here).

Context mode is *Markov*: each turn's prompt is the policy instruction plus the current observation,
which already holds the whole state (committed evidence, visible sentences, menu). So every turn is
one training sequence: environment tokens (loss-masked) followed by the policy's action tokens. The
final answer is a separate sequence conditioned on C_T only. Both get the rollout's outcome advantage;
SNC credit lands on the action tokens of its step.

Only tokens the policy sampled are trained (harness-g.tex l.910-911, "update only model-generated tokens"):
the end-of-turn token after a reply is trained when generation stopped on it, and not when the reply was cut
at its token limit (``max_action_tokens`` / ``max_answer_tokens``), where the policy never sampled it.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from harness_g.agent.batch import BatchedMenuEnv
from harness_g.agent.config import EnvConfig
from harness_g.agent.graph_view import GraphView
from harness_g.agent.metrics import exact_match, token_f1
from harness_g.agent.trajectory import Trajectory
from harness_g.graph.types import QAItem
from harness_g.training.chat import Sequence as TrainSequence
from harness_g.training.chat import build_sequence, render_prompt


INTERFACES = ("menu", "free-query")


def policy_user_text(observation: str, error: str | None = None, first: bool = False, interface: str = "menu") -> str:
    """Markov prompt: the policy instruction (menu ids, or free text for the free-query arm) + the
    event-conditioned current observation."""
    from harness_g.agent import prompts
    from harness_g.agent.free_query import free_query_header

    event = "invalid" if error else ("start" if first else "ok")
    header = prompts.policy_instruction() if interface == "menu" else free_query_header()
    return header + "\n\n" + prompts.environment_response(observation, event, error)


def answer_user_text(question: str, evidence: list[tuple[str, str]]) -> str:
    from harness_g.agent import prompts

    return prompts.answer_prompt(question, evidence)[0]["content"]


def scorer_user_text(question: str, evidence: list[tuple[str, str]]) -> str:
    from harness_g.agent import prompts

    return prompts.scorer_prompt(question, evidence)[0]["content"]


def policy_sequence(tokenizer: Any, user_text: str, reply: str, stopped: bool = True) -> TrainSequence:
    """:func:`build_sequence` with the loss mask on exactly the tokens the policy generated: the reply and, when
    generation stopped on it (``stopped``), its end-of-turn token."""
    return build_sequence(tokenizer, user_text, reply, stopped=stopped)


@dataclass
class Rollout:
    item: QAItem
    group: int
    trajectory: Trajectory
    step_prompts: list[str] = field(default_factory=list)  # user text per executed turn
    step_replies: list[str] = field(default_factory=list)
    step_stopped: list[bool] = field(default_factory=list)  # per turn: generation ended on end-of-turn (not cut)
    answer_prompt: str = ""
    answer: str = ""
    answer_stopped: bool = True
    reward: float = 0.0  # max token F1 over aliases
    em: float = 0.0
    response_tokens: int = 0

    @property
    def queries(self) -> list[str]:
        """The free-text strings the policy wrote (free-query arm; empty on the menu arm)."""
        return list(self.trajectory.meta.get("queries", [])) if self.trajectory is not None else []

    def sequences(self, tokenizer: Any) -> list[tuple[TrainSequence, int | None]]:
        """(sequence, step index or None for the answer) for every policy generation of this rollout; a reply cut at
        its token limit has no end-of-turn token in its loss mask (see :func:`policy_sequence`)."""
        stopped = self.step_stopped or [True] * len(self.step_replies)
        out = [(policy_sequence(tokenizer, p, r, s), t)
               for t, (p, r, s) in enumerate(zip(self.step_prompts, self.step_replies, stopped))]
        out.append((policy_sequence(tokenizer, self.answer_prompt, self.answer, self.answer_stopped), None))
        return out

    @property
    def n_sequences(self) -> int:
        """How many rows :meth:`sequences` gives: one per executed turn, plus the answer."""
        return len(self.step_prompts) + 1


class Generator:
    """Batched sampling with a transformers causal LM (left padding); returns decoded replies."""

    def __init__(self, model: torch.nn.Module, tokenizer: Any, *, temperature: float, top_p: float, max_prompt_tokens: int):
        self.model = model
        self.tokenizer = tokenizer
        self.temperature = temperature
        self.top_p = top_p
        self.max_prompt_tokens = max_prompt_tokens
        self.seconds = 0.0
        self.tokens = 0
        self.last_stopped: list[bool] = []  # per reply of the last call: ended on an end-of-turn token (not cut)

    def _stop_ids(self) -> set[int]:
        ids = {self.tokenizer.eos_token_id}
        configured = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ids.update(configured if isinstance(configured, (list, tuple)) else [configured])
        return {i for i in ids if i is not None}

    @torch.no_grad()
    def __call__(self, user_texts: Sequence[str], max_new_tokens: int, greedy: bool = False,
                 allowed: Sequence[Sequence[str]] | None = None) -> list[str]:
        """Sample one reply per prompt. ``allowed``: per prompt, the only replies permitted (constrained decoding).
        Sets :attr:`last_stopped`: whether each reply ended on an end-of-turn token (False: cut at max_new_tokens)."""
        t0 = time.perf_counter()
        tok = self.tokenizer
        prompts = [render_prompt(tok, u) for u in user_texts]
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False, truncation=True,
                  max_length=self.max_prompt_tokens)
        was_training = self.model.training
        self.model.eval()
        sample = not greedy and self.temperature > 0
        kwargs: dict[str, Any] = {"do_sample": sample, "max_new_tokens": max_new_tokens, "pad_token_id": tok.pad_token_id}
        if sample:
            kwargs.update(temperature=self.temperature, top_p=self.top_p)
        if allowed is not None:
            from harness_g.agent.llm.constrained import allowed_tokens_fn

            kwargs["prefix_allowed_tokens_fn"] = allowed_tokens_fn(tok, allowed, enc["input_ids"].shape[1], tok.eos_token_id)
        gen = self.model.generate(**enc, **kwargs)
        if was_training:
            self.model.train()
        new = gen[:, enc["input_ids"].shape[1] :]
        stop = torch.tensor(sorted(self._stop_ids()), dtype=new.dtype, device=new.device)
        self.last_stopped = torch.isin(new, stop).any(dim=1).tolist()  # finished rows hold their stop token
        self.tokens += int((new != tok.pad_token_id).sum())
        self.seconds += time.perf_counter() - t0
        return [t.strip() for t in tok.batch_decode(new, skip_special_tokens=True)]


def replies_stopped(generator: Any, replies: Sequence[str], max_new_tokens: int) -> list[bool]:
    """Per reply of the generator's last call: did generation stop on an end-of-turn token (False: cut at
    ``max_new_tokens``)? From the generator's ``last_stopped`` when it reports one; otherwise a reply whose
    re-tokenised length reaches the limit counts as cut (no tokenizer: every reply counts as stopped)."""
    flags = getattr(generator, "last_stopped", None)
    if isinstance(flags, list) and len(flags) == len(replies):
        return [bool(f) for f in flags]
    tok = getattr(generator, "tokenizer", None)
    if tok is None:
        return [True] * len(replies)
    return [len(tok(r, add_special_tokens=False)["input_ids"]) < max_new_tokens for r in replies]


def _observation_tokens(generator: Any, texts: Sequence[str]) -> list[int]:
    tok = getattr(generator, "tokenizer", None)
    if tok is None or not texts:
        return []
    return [len(ids) for ids in tok(list(texts), add_special_tokens=False)["input_ids"]]


def collect_rollouts(view: GraphView, generator: Generator, items: Sequence[QAItem], group_size: int, env_config: EnvConfig,
                     *, max_action_tokens: int, max_answer_tokens: int, greedy: bool = False,
                     constrain_actions: bool = False, interface: str = "menu",
                     max_observation_tokens: int | None = None) -> tuple[list[Rollout], dict[str, float]]:
    """Play ``group_size`` rollouts of every item through one BatchedMenuEnv; returns rollouts and timings.

    ``max_observation_tokens`` (paper: max tool-response tokens, harness-g.tex l.959): when given, every
    environment response is measured; the largest goes in the stats as ``observation_tokens_max`` (with
    ``observations_over_budget``, a count) and a warning names a turn over the budget. Observations are bounded by
    construction (K_s visible sentences, K_e lookups) and are not cut: cutting one would drop its menu.

    ``interface="free-query"``: the transition-matched free-query arm — each MenuEnv is seen through a
    :class:`FreeQueryEnv` (no ids in the observation; SELECT/ANSWER_WITH/ANSWER by sentence handle, any other reply a
    search string resolved to the nearest LOOKUP target), so transitions, previews and SNC are the menu arm's and only
    how a retrieval target is named differs.
    """
    from harness_g.agent.free_query import FreeQueryEnv

    if interface not in INTERFACES:
        raise ValueError(f"unknown interface {interface!r}; expected one of {', '.join(INTERFACES)}")
    free = interface == "free-query"
    expanded = [(item, g) for g, item in enumerate(items) for _ in range(group_size)]
    benv = BatchedMenuEnv(view, len(expanded), env_config, record_previews=True)
    fenvs = [FreeQueryEnv(e) for e in benv.envs] if free else []
    t_env = time.perf_counter()
    if free:
        view.encode(list(dict.fromkeys(it.question for it, _ in expanded)))  # one encoder call for the batch
        observations = [fe.reset(it) for fe, (it, _) in zip(fenvs, expanded)]
    else:
        observations = benv.reset([it for it, _ in expanded])
    env_s = time.perf_counter() - t_env
    rollouts = [Rollout(item=it, group=g, trajectory=None) for it, g in expanded]  # type: ignore[arg-type]
    errors: list[str | None] = [None] * len(expanded)
    gen_s0 = generator.seconds
    obs_max, obs_over = 0, 0
    while not benv.all_done:
        active = [i for i, e in enumerate(benv.envs) if not e.done]
        texts = [policy_user_text(observations[i], errors[i], first=not rollouts[i].step_prompts, interface=interface)
                 for i in active]
        if max_observation_tokens is not None:
            from harness_g.agent import prompts

            sizes = _observation_tokens(generator, [prompts.environment_response(observations[i], "ok") for i in active])
            obs_max = max([obs_max, *sizes])
            over = sum(n > max_observation_tokens for n in sizes)
            if over and not obs_over:
                warnings.warn(f"an environment response has {max(sizes)} tokens, over rollout.max_observation_tokens "
                              f"({max_observation_tokens})", stacklevel=2)
            obs_over += over
        allowed = [list(benv.envs[i].menu.by_id) for i in active] if constrain_actions and not free else None  # type: ignore[union-attr]
        replies = generator(texts, max_action_tokens, greedy=greedy, allowed=allowed)
        stopped = replies_stopped(generator, replies, max_action_tokens)
        step_replies: list[str | None] = [None] * len(expanded)
        for i, text, reply, stop in zip(active, texts, replies, stopped):
            rollouts[i].step_prompts.append(text)
            rollouts[i].step_replies.append(reply)
            rollouts[i].step_stopped.append(stop)
            step_replies[i] = reply
        t_env = time.perf_counter()
        if free:
            results = [None if step_replies[i] is None else fenvs[i].step(step_replies[i] or "") for i in range(len(expanded))]
        else:
            results = benv.step(step_replies)
        env_s += time.perf_counter() - t_env
        for i in active:
            r = results[i]
            assert r is not None
            observations[i] = r.observation
            errors[i] = r.error
    finals = fenvs if free else benv.envs
    answer_texts = [answer_user_text(ro.item.question, env.committed_texts()) for ro, env in zip(rollouts, finals)]
    answers = generator(answer_texts, max_answer_tokens, greedy=greedy)
    answers_stopped = replies_stopped(generator, answers, max_answer_tokens)
    for ro, env, text, answer, stop in zip(rollouts, finals, answer_texts, answers, answers_stopped):
        ro.answer_prompt, ro.answer, ro.answer_stopped = text, answer, stop
        ro.trajectory = env.finish(answer)
        ro.reward = token_f1(answer, list(ro.item.answers)) if ro.item.answers else 0.0
        ro.em = exact_match(answer, list(ro.item.answers)) if ro.item.answers else 0.0
    stats = {"env_s": env_s, "generate_s": generator.seconds - gen_s0}
    if max_observation_tokens is not None:
        stats.update(observation_tokens_max=float(obs_max), observations_over_budget=float(obs_over))
    return rollouts, stats
