"""Rollout collection through the batched menu environment (graph store queries happen here).

Rollouts are played by :class:`harness_g.agent.policies.llm.LLMPolicy` -- the same policy object and the same
context builder (:mod:`harness_g.agent.llm.context`) as ``harness-g eval`` -- over a :class:`Generator` that samples
from the policy being trained. So a trained checkpoint is evaluated under exactly the prompt it was trained on.

Context mode ``multi-turn`` (the paper's: Harness-G §3.4, "Integration with GRPO";
appendix "Implementation Details", "Training objective and masking"): a trajectory is one growing chat; it
trains as one sequence (:meth:`Rollout.sequences`) in which every environment turn is loss-masked and every reply
carries its own step's advantage. When older turns had to be dropped to fit ``max_prompt_tokens``, the turns after
the drop start a new sequence (each reply is trained in exactly the context it was sampled in). Context mode
``markov``: every turn's prompt is the instruction plus the current observation, one sequence per turn. The final
answer is always a separate sequence conditioned on C_T only and carries A_out; SNC credit lands on the action
tokens of its step.

Only tokens the policy sampled are trained (paper appendix "Training objective and masking", "update only
model-generated tokens"): the end-of-turn token after a reply is trained when generation stopped on it, and not when
the reply was cut at its token limit (``max_action_tokens`` / ``max_answer_tokens``), where the policy never sampled it.
"""
from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Protocol, Sequence

import torch

from harness_g.agent.env.batch import BatchedMenuEnv
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.env.protocol import Environment
from harness_g.agent.env.trajectory import Trajectory
from harness_g.agent.eval.interfaces import trainable_interfaces
from harness_g.agent.eval.metrics import exact_match, token_f1
from harness_g.agent.llm.backends import Conversation, Generation
from harness_g.agent.llm.context import Turn, render_chat
from harness_g.agent.llm.kv_cache import RowState, cache_kwarg, empty_cache, reused_prefill, row_states
from harness_g.graph.types import QAItem
from harness_g.training.chat import ANSWER_TURN, Reply
from harness_g.training.chat import Sequence as TrainSequence
from harness_g.training.chat import build_chat_sequence
from harness_g.training.prompt_sharing import shared_prefill
from harness_g.training.tito import TokenContinuations, continues as ids_continue


def scorer_user_text(question: str, evidence: list[tuple[str, str]]) -> str:
    from harness_g.agent.llm import prompts

    return prompts.scorer_prompt(question, evidence)[0]["content"]


def _continues(prev: Turn, nxt: Turn) -> bool:
    """Whether ``nxt``'s chat is ``prev``'s chat + prev's reply + more (the same growing sequence)."""
    n = len(prev.messages)
    return (len(nxt.messages) > n and nxt.messages[:n] == prev.messages
            and nxt.messages[n] == {"role": "assistant", "content": prev.reply})


def turn_sequences(tokenizer: Any, turns: Sequence[Turn]) -> list[TrainSequence]:
    """Training sequences of one trajectory's decision turns: each maximal run of turns whose prompts extend one
    another becomes one sequence (the last turn's prompt + its reply) in which the run's replies, and only those,
    are trained, each tagged with its turn index. Multi-turn: one sequence (unless turns were dropped or a
    continuation broke); markov: one per turn. Token-in, token-out (:mod:`harness_g.training.tito`) when every turn
    carries its prompt and sampled ids; otherwise the chats are rendered and tokenised (backends that report text)."""
    if turns and all(t.prompt_ids is not None and t.reply_ids is not None for t in turns):
        return _id_sequences(turns)
    out: list[TrainSequence] = []
    start = 0
    for t in range(len(turns)):
        if t + 1 < len(turns) and _continues(turns[t], turns[t + 1]):
            continue
        last = turns[t]
        messages = [*last.messages, {"role": "assistant", "content": last.reply}]
        # the run's replies are the last (t - start) assistant messages of the chat, then the new reply
        assistant = [i for i, m in enumerate(messages) if m["role"] == "assistant"][-(t - start + 1):]
        replies = [Reply(i, turn, turns[turn].stopped) for i, turn in zip(assistant, range(start, t + 1))]
        out.append(build_chat_sequence(tokenizer, messages, replies))
        start = t + 1
    return out


def _id_sequences(turns: Sequence[Turn], turn_tags: Sequence[int] | None = None) -> list[TrainSequence]:
    """Token-in, token-out sequences: a run of turns whose prompt ids each extend the previous prompt + its sampled
    ids is one sequence, the last prompt + its sampled ids, with exactly the sampled ids of every turn of the run
    trained (tagged with ``turn_tags[t]``, default t)."""
    tags = list(turn_tags) if turn_tags is not None else list(range(len(turns)))
    out: list[TrainSequence] = []
    start = 0
    for t, turn in enumerate(turns):
        nxt = turns[t + 1] if t + 1 < len(turns) else None
        if nxt is not None and ids_continue(turn.prompt_ids, turn.reply_ids, nxt.prompt_ids):
            continue
        ids = [*turn.prompt_ids, *turn.reply_ids]
        mask, turn_of = [0] * len(ids), [ANSWER_TURN] * len(ids)
        for k in range(start, t + 1):
            a = len(turns[k].prompt_ids)
            for pos in range(a, a + len(turns[k].reply_ids)):
                mask[pos], turn_of[pos] = 1, tags[k]
        out.append(TrainSequence(ids, mask, turn_of))
        start = t + 1
    return out


@dataclass
class Rollout:
    item: QAItem
    group: int
    trajectory: Trajectory
    turns: list[Turn] = field(default_factory=list)  # per executed decision turn: the chat sent, reply, stop flag
    answer_turn: Turn | None = None  # the answer's chat (question + C_T), raw reply and stop flag
    answer: str = ""  # the cleaned answer (what is scored, as in harness-g eval)
    reward: float = 0.0  # max token F1 over aliases
    em: float = 0.0
    response_tokens: int = 0

    @property
    def step_replies(self) -> list[str]:
        return [t.reply for t in self.turns]

    @property
    def queries(self) -> list[str]:
        """The free-text strings the policy wrote (free-query arm; empty on the menu arm)."""
        return list(self.trajectory.meta.get("queries", [])) if self.trajectory is not None else []

    def sequences(self, tokenizer: Any) -> list[TrainSequence]:
        """Every training sequence of this rollout: its decision turns (:func:`turn_sequences`), then the answer
        (turn :data:`~harness_g.training.chat.ANSWER_TURN`). A reply cut at its token limit has no end-of-turn
        token in its loss mask."""
        out = turn_sequences(tokenizer, self.turns)
        if self.answer_turn is not None and self.answer_turn.prompt_ids is not None and self.answer_turn.reply_ids is not None:
            out.extend(_id_sequences([self.answer_turn], [ANSWER_TURN]))
        elif self.answer_turn is not None:
            a = self.answer_turn
            out.append(build_chat_sequence(tokenizer, [*a.messages, {"role": "assistant", "content": a.reply}],
                                           [Reply(len(a.messages), ANSWER_TURN, a.stopped)]))
        return out


class Generator:
    """A chat backend (:class:`harness_g.agent.llm.backends.ChatBackend`) sampling from the policy being trained:
    batched transformers generation with left padding. Prompts are rendered with
    :func:`~harness_g.agent.llm.context.render_chat` and never truncated (the context builder keeps them within
    ``max_prompt_tokens`` by dropping whole older turns). Sampling draws from the global torch RNG, which the
    trainer seeds per rank and saves in checkpoints, so ``seed`` is ignored."""

    name = "policy"

    context_window = None

    def sync(self, policy: Any) -> float:
        """Nothing to copy: this generator samples from the live policy module itself; key/value caches kept from
        the old weights are dropped. Returns seconds spent (0)."""
        self.end_episodes()
        return 0.0

    def end_episodes(self) -> None:
        """Free the key/value caches kept for episodes' next turns (:mod:`harness_g.training.prefix_cache`):
        :func:`collect_rollouts` calls it when its episodes have ended, so the update never shares memory with them."""
        self.continuations.drop_states()

    def __init__(self, model: torch.nn.Module, tokenizer: Any, *, temperature: float, top_p: float, max_prompt_tokens: int,
                 autocast: Callable[[], ContextManager[Any]] = contextlib.nullcontext, share_prompts: bool = True,
                 prefix_cache: bool = True):
        self.model = model
        # identical prompts in one call (a group's first turn) are prefilled once (training/prompt_sharing.py)
        self.share_prompts = share_prompts
        # each episode's keys/values are kept from one turn to the next (training/prefix_cache.py)
        self.prefix_cache = prefix_cache
        # one autocast region per generate call: fp32 master weights are cast to the compute dtype once per call
        # (autocast's weight cache), not once per decoding step
        self.autocast = autocast
        self.tokenizer = tokenizer
        self.temperature = temperature  # rollout sampling settings (collect_rollouts reads them)
        self.top_p = top_p
        self.max_prompt_tokens = max_prompt_tokens
        self.seconds = 0.0
        self.tokens = 0
        self.prompt_tokens = 0  # real prompt tokens prefilled, over all calls
        self.padded_prompt_tokens = 0  # prompt positions of the padded batches (rows x each batch's longest prompt)
        self.prefilled_prompt_positions = 0  # prompt positions actually computed (less where prompts were shared)
        self.continuations = TokenContinuations(tokenizer)

    def _stop_ids(self) -> set[int]:
        ids = {self.tokenizer.eos_token_id}
        configured = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ids.update(configured if isinstance(configured, (list, tuple)) else [configured])
        return {i for i in ids if i is not None}

    def count_tokens(self, messages: Conversation) -> int:
        return len(self.tokenizer(render_chat(self.tokenizer, messages), add_special_tokens=False)["input_ids"])

    @torch.no_grad()
    def generate(self, batch: Sequence[Conversation], *, max_new_tokens: int, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int | None = None, stop: list[str] | None = None,
                 allowed: Sequence[Sequence[str]] | None = None) -> list[Generation]:
        """One reply per chat (greedy when ``temperature == 0``). ``allowed``: per chat, the only replies permitted
        (constrained decoding). ``finish_reason`` is "length" where a reply was cut at ``max_new_tokens``."""
        if not batch:
            return []
        t0 = time.perf_counter()
        tok = self.tokenizer
        taken = [self.continuations.take(conv) for conv in batch]  # token-in: continued from the last turn's ids
        prompts = [(ids, text) for ids, text, _ in taken]
        kept = [state for _, _, state in taken]  # the key/value states the previous turn left (None: fresh)
        del taken
        was_training = self.model.training
        self.model.eval()
        sampled, states = self._generate_rows([ids for ids, _ in prompts], kept, max_new_tokens, temperature, top_p,
                                              allowed)
        if was_training:
            self.model.train()
        seconds = time.perf_counter() - t0
        self.seconds += seconds
        out = []
        for conv, (prompt_ids, prompt_text), (ids, stopped), state in zip(batch, prompts, sampled, states):
            text = tok.decode(ids, skip_special_tokens=True).strip()
            self.tokens += len(ids)
            self.continuations.record(conv, prompt_ids, prompt_text, ids, text, stopped, state)  # token-out
            out.append(Generation(text=text, prompt_tokens=len(prompt_ids), completion_tokens=len(ids), seconds=seconds,
                                  finish_reason="stop" if stopped else "length", prompt_ids=tuple(prompt_ids),
                                  token_ids=tuple(ids)))
        return out

    def _generate_rows(self, rows: list[Sequence[int]], kept: list[RowState | None], max_new_tokens: int,
                       temperature: float, top_p: float, allowed: Sequence[Sequence[str]] | None
                       ) -> tuple[list[tuple[list[int], bool]], list[RowState | None]]:
        """One ``model.generate`` call over token-id prompts (left-padded): per row (sampled ids, stopped), and
        per row the key/value state kept for its next turn (None without :attr:`prefix_cache`). ``kept``: per row,
        the state its previous turn left (None: a fresh prompt); the list is emptied once the batch cache is built
        from it, so those states are freed before generation."""
        tok = self.tokenizer
        enc = left_pad(rows, tok.pad_token_id, next(self.model.parameters()).device)
        width = enc["input_ids"].shape[1]
        self.prompt_tokens += sum(len(r) for r in rows)
        self.padded_prompt_tokens += len(rows) * width
        sample = temperature > 0
        kwargs: dict[str, Any] = {"do_sample": sample, "max_new_tokens": max_new_tokens, "pad_token_id": tok.pad_token_id}
        if sample:
            kwargs.update(temperature=temperature, top_p=top_p)
        if allowed is not None:
            from harness_g.agent.llm.constrained import allowed_tokens_fn

            kwargs["prefix_allowed_tokens_fn"] = allowed_tokens_fn(tok, allowed, width, tok.eos_token_id)
        lens = [len(r) for r in rows]
        with self.autocast():
            reused = reused_prefill(self.model, enc, lens, kept) if self.prefix_cache and any(kept) else None
            kept.clear()
            shared = shared_prefill(self.model, enc, rows) if reused is None and self.share_prompts else None
            if reused is not None:
                kwargs[cache_kwarg()], computed = reused
                self.prefilled_prompt_positions += computed + len(rows)  # the uncached columns, then the last one
            elif shared is not None:
                kwargs[cache_kwarg()], distinct = shared
                # the distinct prompts' first width - 1 positions, then every row's last prompt position
                self.prefilled_prompt_positions += distinct * (width - 1) + len(rows)
            else:
                self.prefilled_prompt_positions += len(rows) * width
                if self.prefix_cache:  # a cache of our own, to keep each row's part of it for the next turn
                    kwargs[cache_kwarg()] = empty_cache(self.model)
            gen = self.model.generate(**enc, **kwargs)
        out = sampled_ids(gen[:, width:].tolist(), self._stop_ids())
        if not self.prefix_cache:
            return out, [None] * len(rows)
        return out, row_states(kwargs[cache_kwarg()], width, lens, [len(ids) for ids, _ in out])


def left_pad(rows: Sequence[Sequence[int]], pad_id: int, device: Any) -> dict[str, torch.Tensor]:
    """Token-id prompts -> left-padded ``input_ids`` and ``attention_mask`` [B, longest] on ``device``."""
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r):] = torch.tensor(list(r), dtype=torch.long)
            mask[i, width - len(r):] = 1
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device)}


def sampled_ids(rows: Sequence[Sequence[int]], stop_ids: set[int]) -> list[tuple[list[int], bool]]:
    """Per generated row (what ``generate`` appended, padded after a finished row): (the ids the policy sampled, up
    to and including its first stop token; whether it stopped). A row without a stop token was cut at its limit."""
    out = []
    for row in rows:
        end = next((k for k, t in enumerate(row) if t in stop_ids), None)
        out.append((list(row[: end + 1]), True) if end is not None else (list(row), False))
    return out


def _observation_tokens(generator: Any, texts: Sequence[str]) -> list[int]:
    tok = getattr(generator, "tokenizer", None)
    if tok is None or not texts:
        return []
    return [len(ids) for ids in tok(list(texts), add_special_tokens=False)["input_ids"]]


def rollout_policy(generator: Any, *, greedy: bool, max_action_tokens: int, max_answer_tokens: int,
                   constrain_actions: bool = False, interface: str = "menu", context: str = "multi-turn",
                   max_prompt_tokens: int | None = None, size: int = 1024) -> Any:
    """The :class:`~harness_g.agent.policies.llm.LLMPolicy` that plays rollouts: the generator's sampling settings
    (greedy: temperature 0) for actions and the answer, no per-call reseeding, ``interface``'s header."""
    from harness_g.agent.policies.llm import LLMPolicy

    temperature = 0.0 if greedy else float(generator.temperature)
    policy = LLMPolicy(generator, temperature=temperature, top_p=float(generator.top_p), seed=None,
                       max_new_tokens=max_action_tokens, max_answer_tokens=max_answer_tokens,
                       max_context_tokens=max_prompt_tokens or getattr(generator, "max_prompt_tokens", None),
                       answer_temperature=temperature, constrain_actions=constrain_actions and interface == "menu",
                       context=context, interface=interface, name="policy")
    policy.max_chats = max(size, policy.max_chats)
    return policy


def collect_rollouts(view: GraphView, generator: Any, items: Sequence[QAItem], group_size: int, env_config: EnvConfig,
                     *, max_action_tokens: int, max_answer_tokens: int, greedy: bool = False,
                     constrain_actions: bool = False, interface: str = "menu",
                     max_observation_tokens: int | None = None, context: str = "multi-turn",
                     max_prompt_tokens: int | None = None, teacher: Teacher | None = None) -> tuple[list[Rollout], dict[str, float]]:
    """Play ``group_size`` rollouts of every item through one BatchedMenuEnv; returns rollouts and timings.

    ``generator``: a chat backend over the policy (:class:`Generator` or the vLLM one); ``context``: multi-turn
    (the paper's) or markov (:mod:`harness_g.agent.llm.context`); ``max_prompt_tokens`` (default: the generator's) is
    the prompt budget -- older whole turns are dropped to fit it and counted in the stats as ``dropped_turns_max``.

    ``max_observation_tokens`` (paper: max tool-response tokens, Table "Hyperparameter settings"): when given, every
    environment response is measured; the largest goes in the stats as ``observation_tokens_max`` (with
    ``observations_over_budget``, a count) and a warning names a turn over the budget. Observations are bounded by
    construction (K_s visible sentences, K_e lookups) and are not cut: cutting one would drop its menu.

    ``interface="free-query"``: the transition-matched free-query arm — each MenuEnv is seen through a
    :class:`FreeQueryEnv` (no ids in the observation; SELECT/ANSWER_WITH/ANSWER by sentence handle, any other reply a
    search string resolved to the nearest LOOKUP target), so transitions, previews and SNC are the menu arm's and only
    how a retrieval target is named differs.

    ``teacher`` (demonstrations, :mod:`harness_g.training.sft`): told every turn's live environments before the
    policy acts, and the episodes before it answers, so a scripted ``generator`` can reply for it.
    """
    from harness_g.agent.env.free_query import FreeQueryEnv

    trainable = trainable_interfaces()
    if interface not in trainable:
        raise ValueError(f"unknown interface {interface!r}; expected one of {', '.join(trainable)}")
    free = interface == "free-query"
    expanded = [(item, g) for g, item in enumerate(items) for _ in range(group_size)]
    benv = BatchedMenuEnv(view, len(expanded), env_config, record_previews=True)
    policy = rollout_policy(generator, greedy=greedy, max_action_tokens=max_action_tokens, max_answer_tokens=max_answer_tokens,
                            constrain_actions=constrain_actions, interface=interface, context=context,
                            max_prompt_tokens=max_prompt_tokens, size=len(expanded))
    envs: list[Environment] = [FreeQueryEnv(e) for e in benv.envs] if free else list(benv.envs)
    budget = _ObservationBudget(generator, max_observation_tokens)
    t_env = time.perf_counter()
    if free:
        view.encode(list(dict.fromkeys(it.question for it, _ in expanded)))  # one encoder call for the batch
        observations: list[str | None] = [fe.reset(it) for fe, (it, _) in zip(envs, expanded)]
    else:
        observations = list(benv.reset([it for it, _ in expanded]))
    env_s = time.perf_counter() - t_env
    gen_s0 = generator.seconds
    pad0 = (getattr(generator, "prompt_tokens", 0), getattr(generator, "padded_prompt_tokens", 0),
            getattr(generator, "prefilled_prompt_positions", 0))
    while not benv.all_done:
        budget.measure(observations)
        if teacher is not None:
            teacher.before_turn([e for o, e in zip(observations, envs) if o is not None])
        replies = policy.act_batch([None if o is None else e.observe() for o, e in zip(observations, envs)])
        t_env = time.perf_counter()
        results = [None if r is None else e.step(r) for e, r in zip(envs, replies)] if free else benv.step(replies)
        env_s += time.perf_counter() - t_env
        observations = [r.observation if r is not None and not r.done else None for r in results]
    if hasattr(generator, "end_episodes"):  # every episode has acted for the last time: free what was kept for it
        generator.end_episodes()
    finals = [e.observe() for e in envs]
    if teacher is not None:
        teacher.before_answer([it for it, _ in expanded])
    answers = policy.answer_batch([it.question for it, _ in expanded], [e.committed_texts() for e in envs], finals)
    if hasattr(generator, "end_episodes"):  # nor does anything continue the answers
        generator.end_episodes()
    rollouts, dropped = _finish_rollouts(policy, expanded, envs, answers, finals)
    stats = {"env_s": env_s, "generate_s": generator.seconds - gen_s0, "dropped_turns_max": float(dropped)}
    real = getattr(generator, "prompt_tokens", 0) - pad0[0]
    if real > 0:  # prompt positions prefilled per real prompt token (1.0 = no padding); transformers generator only
        stats["generate_pad_ratio"] = (getattr(generator, "padded_prompt_tokens", 0) - pad0[1]) / real
        # prompt positions actually computed per real prompt token: below the pad ratio where prompts were shared
        stats["generate_prefill_ratio"] = (getattr(generator, "prefilled_prompt_positions", 0) - pad0[2]) / real
    if dropped:
        warnings.warn(f"older turns were dropped from a rollout's context to fit the prompt budget ({dropped} at most); "
                      "raise rollout.max_prompt_tokens to keep them", stacklevel=2)
    stats.update(budget.stats())
    return rollouts, stats


class Teacher(Protocol):
    """Who scripts a demonstration's replies (:func:`collect_rollouts`' ``teacher``)."""

    def before_turn(self, envs: Sequence[Environment]) -> None:
        """The environments about to act this turn, in the order the policy's chats reach the generator."""
        ...

    def before_answer(self, items: Sequence[QAItem]) -> None:
        """Every episode's question, in the order the answer chats reach the generator."""
        ...


class _ObservationBudget:
    """Measures environment responses in tokens against ``max_observation_tokens`` (None: measures nothing)."""

    def __init__(self, generator: Any, limit: int | None):
        self.generator, self.limit = generator, limit
        self.largest, self.over = 0, 0

    def measure(self, observations: Sequence[str | None]) -> None:
        """Count the live observations' tokens (as the policy sees them: wrapped as environment responses)."""
        if self.limit is None:
            return
        from harness_g.agent.llm import prompts

        sizes = _observation_tokens(self.generator, [prompts.environment_response(o, "ok") for o in observations
                                                     if o is not None])
        self.largest = max([self.largest, *sizes])
        over = sum(n > self.limit for n in sizes)
        if over and not self.over:
            warnings.warn(f"an environment response has {max(sizes)} tokens, over rollout.max_observation_tokens "
                          f"({self.limit})", stacklevel=3)
        self.over += over

    def stats(self) -> dict[str, float]:
        """``observation_tokens_max`` and ``observations_over_budget`` (empty when nothing was measured)."""
        if self.limit is None:
            return {}
        return {"observation_tokens_max": float(self.largest), "observations_over_budget": float(self.over)}


def _finish_rollouts(policy: Any, expanded: Sequence[tuple[QAItem, int]], envs: Sequence[Environment], answers: Sequence[str],
                     finals: Sequence[Any]) -> tuple[list[Rollout], int]:
    """Close every episode with its answer: the Rollouts (reward = max token F1 over gold aliases, EM) and the most
    whole turns any rollout's context dropped to fit the prompt budget."""
    rollouts, dropped = [], 0
    for (item, g), env, answer, final in zip(expanded, envs, answers, finals):
        chat = policy.episode_context(final)
        turns = list(chat.turns) if chat is not None else []
        dropped = max(dropped, chat.dropped_turns if chat is not None else 0)
        ro = Rollout(item=item, group=g, trajectory=env.finish(answer, **{**policy.trajectory_meta(final), "policy": policy.name}),
                     turns=turns, answer_turn=policy.episode_answer(final), answer=answer)
        ro.reward = token_f1(answer, list(item.answers)) if item.answers else 0.0
        ro.em = exact_match(answer, list(item.answers)) if item.answers else 0.0
        rollouts.append(ro)
    return rollouts, dropped
