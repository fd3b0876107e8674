"""An LLM policy plays the menu (or, through :meth:`LLMPolicy.for_interface`, the free-query arm): one chat per episode, one action id per turn, then an answer from C_T only.

The episode's chat (paper appendix "Environment Protocol and Prompts"; no custom system prompt):

- user      instruction + tool schema + environment_response(o_0, "start")
- assistant the model's raw reply (the environment parses it strictly; invalid replies are counted there)
- user      environment_response(o_t, "ok" | "invalid" + reason)
- ...

The chat is built by :class:`harness_g.agent.llm.context.EpisodeContext`, the one context builder the trainer's
rollouts use too (so a trained checkpoint is evaluated under the prompt it was trained on); ``context="markov"``
sends only the current observation. When the chat outgrows the context budget the oldest whole turns are dropped,
always keeping the instruction, the tool schema and the latest observation. ``answer`` opens a fresh chat holding
only the question and the committed evidence C_T. Per-episode token counts and seconds are kept
(``episode_stats(observation)``, ``stats`` for the latest episode) and recorded in ``trajectory.meta["llm"]``
(:meth:`LLMPolicy.trajectory_meta`).

The policy sees :class:`~harness_g.agent.env.observation.Observation` objects, never an environment: each episode's chat
is keyed by ``observation.episode``; the event of each environment response (start / ok / invalid + reason) is the
observation's own.
"""
from __future__ import annotations

import copy
import inspect
import os
import re
import time
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any, TYPE_CHECKING, Sequence

from harness_g.agent.llm import load_transformers_backend, load_vllm_backend
from harness_g.agent.llm.backends import ChatBackend, Conversation, Generation, context_limit, count_tokens
from harness_g.agent.llm.context import OMITTED, EpisodeContext, Turn, answer_messages, check_mode, policy_header
from harness_g.agent.llm.prompts import free_query_header
from harness_g.agent.policies.base import Policy
from harness_g.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from harness_g.agent.env.batch import BatchedMenuEnv
    from harness_g.agent.env.observation import Observation
    from harness_g.agent.env.trajectory import Trajectory
    from harness_g.graph.types import QAItem

__all__ = ["LLMPolicy", "OMITTED", "clean_answer", "openai_policy", "run_batch", "transformers_policy", "vllm_policy"]
MAX_CHATS = 1024  # chats (and their stats) kept, most recent episodes first
#: free-text replies need more room than an action id (LLM policies default to 8 new tokens)
FREE_QUERY_MAX_NEW_TOKENS = 48
#: the factories' keyword arguments that are LLMPolicy's; the rest go to the backend
POLICY_KWARGS = ("temperature", "top_p", "seed", "max_new_tokens", "constrain_actions", "max_answer_tokens",
                 "max_context_tokens", "stop", "answer_temperature", "name", "context", "interface")


@dataclass
class EpisodeStats:
    act_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    act_seconds: float = 0.0
    dropped_turns: int = 0  # most turns dropped from the chat to fit the context budget
    answer_prompt_tokens: int = 0
    answer_completion_tokens: int = 0
    answer_seconds: float = 0.0
    answer_truncated: bool = False  # the answer hit max_answer_tokens and was cut
    failures: int = 0  # backend generations that came back as errors (on_error="empty")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class _Chat:
    context: EpisodeContext  # what every turn was sent and replied (agent/llm/context.py)
    stats: EpisodeStats = field(default_factory=EpisodeStats)
    answer: Turn | None = None  # the answer's fresh chat, the raw reply (before clean_answer) and its stop flag


_PREFIX = re.compile(r"^(?:the\s+)?(?:final\s+)?answer(?:\s+to\s+(?:this|the)\s+question)?(?:\s+is)?\s*[:\-]\s*", re.I)


def clean_answer(text: str) -> str:
    """First non-empty line, without an ``Answer:`` / ``The answer is:`` prefix, quotes or a trailing period."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    line = _PREFIX.sub("", line)
    line = line.strip().strip("\"'`*\u201c\u201d").strip()
    return line[:-1].rstrip() if line.endswith(".") else line


def _seed(base: int | None, *parts: object) -> int | None:
    if base is None:
        return None
    return zlib.crc32(":".join(map(str, (base, *parts))).encode("utf-8")) & 0x7FFFFFFF


class LLMPolicy(Policy):
    """A single model both selects menu actions and writes the final answer.

    ``max_new_tokens`` bounds each action reply, ``max_answer_tokens`` the answer.
    ``max_context_tokens`` is the prompt budget (default: the backend's context window minus
    ``max_new_tokens``; no truncation when neither is known). ``stop`` optional stop strings for
    action replies. ``seed`` makes sampling reproducible per (question, turn). ``context``: "multi-turn" (the
    paper's growing chat, default) or "markov" (the current observation only), see :mod:`harness_g.agent.llm.context`.
    """

    name = "llm"

    def __init__(self, backend: ChatBackend, *, temperature: float = 0.0, top_p: float = 1.0, seed: int | None = 0,
                 max_new_tokens: int = 8, max_answer_tokens: int = 32, max_context_tokens: int | None = None,
                 stop: list[str] | None = None, answer_temperature: float = 0.0, name: str | None = None,
                 constrain_actions: bool = False, context: str = "multi-turn", interface: str = "menu"):
        if max_new_tokens < 1 or max_answer_tokens < 1:
            raise ConfigError("max_new_tokens and max_answer_tokens must be >= 1")
        if constrain_actions and "allowed" not in inspect.signature(backend.generate).parameters:
            raise ConfigError(f"constrained action decoding is not supported by the {type(backend).__name__} backend "
                              "(use the transformers policy)")
        self.constrain_actions = constrain_actions
        self.backend = backend
        # the backend can keep a chat's key/value state for its next turn (TransformersBackend's prefix cache)
        self._keeps_states = "keep_states" in inspect.signature(backend.generate).parameters
        self.temperature = float(temperature)
        self.top_p = float(top_p)
        self.seed = seed
        self.max_new_tokens = int(max_new_tokens)
        self.max_answer_tokens = int(max_answer_tokens)
        window = context_limit(backend)
        self.max_context_tokens = max_context_tokens or (window - max_new_tokens if window else None)
        self.stop = list(stop) if stop else None
        self.answer_temperature = float(answer_temperature)
        if name:
            self.name = name
        self.context_mode = check_mode(context)
        self.header = policy_header(interface)
        self.free_query = interface == "free-query"
        self.max_chats = MAX_CHATS
        self._chats: dict[int, _Chat] = {}  # by episode id (Observation.episode)
        self._answered: list[int] = []  # episodes whose answer was written: dropped when a new episode starts
        self._last: int | None = None

    def settings(self) -> dict:
        """The model and every decoding / context option (recorded in eval runs; a resume must match them)."""
        return {"model": getattr(self.backend, "name", type(self.backend).__name__), "temperature": self.temperature,
                "top_p": self.top_p, "seed": self.seed, "max_new_tokens": self.max_new_tokens,
                "max_answer_tokens": self.max_answer_tokens, "max_context_tokens": self.max_context_tokens,
                "stop": self.stop, "answer_temperature": self.answer_temperature,
                "constrain_actions": self.constrain_actions, "context": self.context_mode,
                "interface": "free-query" if self.free_query else "menu"}

    def for_interface(self, name: str) -> "LLMPolicy":
        """This policy for interface ``name``. "free-query": a copy sharing the backend and sampling settings whose
        chat opens with :func:`~harness_g.agent.llm.prompts.free_query_header` instead of the menu instruction and
        tool schema, with room for a free-text reply (:data:`FREE_QUERY_MAX_NEW_TOKENS`, taken from the context
        budget), no constrained decoding (no ids to constrain to) and its own episode bookkeeping. Any other
        interface, or a policy already built for the free-query arm: ``self``."""
        if name != "free-query" or self.free_query:
            return self
        fq = copy.copy(self)
        fq.header = free_query_header()
        fq._chats, fq._answered, fq._last = {}, [], None
        fq.max_new_tokens = max(self.max_new_tokens, FREE_QUERY_MAX_NEW_TOKENS)
        if self.max_context_tokens:  # keep prompt + reply inside the same window
            fq.max_context_tokens = self.max_context_tokens - (fq.max_new_tokens - self.max_new_tokens)
        fq.constrain_actions = False
        fq.free_query = True
        return fq

    # -- bookkeeping --------------------------------------------------------------------------
    @staticmethod
    def _key(ref: "Observation | int") -> int:
        return ref if isinstance(ref, int) else ref.episode

    def _new_chat(self, key: int) -> _Chat:
        """A fresh chat for episode ``key``; answered episodes and the oldest chats beyond ``max_chats`` go."""
        for done in self._answered:
            if done != key:
                self._chats.pop(done, None)
        self._answered = [k for k in self._answered if k == key]
        self._chats.pop(key, None)
        while len(self._chats) >= self.max_chats:  # keep memory bounded over many episodes
            self._chats.pop(next(iter(self._chats)))
        chat = self._chats[key] = _Chat(EpisodeContext(self.header, self.context_mode))
        return chat

    def _chat(self, observation: "Observation") -> _Chat:
        key = observation.episode
        chat = self._chats.get(key)
        # a new episode, or its first turn (or an earlier turn) played again: a fresh chat
        if chat is None or observation.turn == 0 or len(chat.context.turns) > observation.turn:
            chat = self._new_chat(key)
        self._last = key
        return chat

    def episode_context(self, ref: "Observation | int") -> EpisodeContext | None:
        """The context of an episode (any of its observations, or its id): every turn's chat, reply and stop flag."""
        chat = self._chats.get(self._key(ref))
        return chat.context if chat is not None else None

    def episode_answer(self, ref: "Observation | int") -> Turn | None:
        """The answer of an episode (any of its observations, or its id): its chat, raw reply (before cleaning), stop flag."""
        chat = self._chats.get(self._key(ref))
        return chat.answer if chat is not None else None

    def episode_stats(self, ref: "Observation | int") -> EpisodeStats:
        chat = self._chats.get(self._key(ref))
        return chat.stats if chat is not None else EpisodeStats()

    def trajectory_meta(self, observation: "Observation") -> dict[str, Any]:
        """``{"llm": {"backend": ..., token counts, seconds, ...}}`` of the episode once answered, else {}."""
        chat = self._chats.get(observation.episode)
        if chat is None or chat.answer is None:
            return {}
        return {"llm": {"backend": getattr(self.backend, "name", type(self.backend).__name__), **chat.stats.to_dict()}}

    @property
    def stats(self) -> dict:
        """Stats of the episode this policy touched last (``{}`` before any)."""
        chat = self._chats.get(self._last) if self._last is not None else None
        return chat.stats.to_dict() if chat is not None else {}

    # -- prompts ------------------------------------------------------------------------------
    def messages(self, chat: _Chat) -> Conversation:
        """The chat sent to the model this turn (oldest whole turns dropped while it exceeds the budget)."""
        msgs = chat.context.messages(lambda m: count_tokens(self.backend, m), self.max_context_tokens)
        chat.stats.dropped_turns = chat.context.dropped_turns
        return msgs

    # -- acting -------------------------------------------------------------------------------
    def act(self, observation: "Observation") -> str:
        return self.act_batch([observation])[0] or ""

    def act_batch(self, observations: Sequence["Observation | None"]) -> list[str | None]:
        """One backend call for every live observation; ``None`` for a None observation or a finished episode."""
        live = [i for i, obs in enumerate(observations) if obs is not None and not obs.done]
        out: list[str | None] = [None] * len(observations)
        if not live:
            return out
        chats, convs = [], []
        for i in live:
            obs = observations[i]
            assert obs is not None
            chat = self._chat(obs)
            chat.context.observe(obs.text, obs.event, obs.error)
            chats.append(chat)
            convs.append(self.messages(chat))
        o0 = observations[live[0]]
        assert o0 is not None
        seed = _seed(self.seed, o0.question_id, o0.turn, len(live))
        extra: dict[str, Any] = {}
        if self.constrain_actions:  # the reply can only be one of the offered ids
            extra["allowed"] = [list(observations[i].action_ids) for i in live]  # type: ignore[union-attr]
        if self.context_mode == "multi-turn" and self._keeps_states:  # each chat continues next turn: keep its state
            extra["keep_states"] = True
        gens = self.backend.generate(convs, max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                     top_p=self.top_p, seed=seed, stop=self.stop, **extra)
        for i, chat, gen in zip(live, chats, gens):
            chat.context.reply(gen.text, stopped=gen.finish_reason != "length", prompt_ids=gen.prompt_ids,
                               reply_ids=gen.token_ids)
            s = chat.stats
            s.act_calls += 1
            s.prompt_tokens += gen.prompt_tokens
            s.completion_tokens += gen.completion_tokens
            s.act_seconds += gen.seconds / len(live)
            s.failures += gen.finish_reason == "error"
            out[i] = gen.text
        return out

    # -- answering ----------------------------------------------------------------------------
    def answer(self, question: str, evidence: list[tuple[str, str]], observation: "Observation") -> str:
        return self.answer_batch([question], [evidence], [observation])[0]

    def answer_batch(self, questions: Sequence[str], evidences: Sequence[list[tuple[str, str]]],
                     observations: Sequence["Observation"]) -> list[str]:
        """Answers from the question and C_T only: a fresh chat per episode, no menu history. ``observations``: each
        episode's final observation (its ``episode`` keys the stats; :meth:`trajectory_meta` reads them after)."""
        if not (len(questions) == len(evidences) == len(observations)):
            raise ConfigError("answer_batch needs one question, one evidence list and one observation per episode")
        if not questions:
            return []
        convs = [answer_messages(q, ev) for q, ev in zip(questions, evidences)]
        o0 = observations[0]
        gens: list[Generation] = self.backend.generate(
            convs, max_new_tokens=self.max_answer_tokens, temperature=self.answer_temperature, top_p=self.top_p,
            seed=_seed(self.seed, o0.question_id, "answer", len(observations)))
        answers = []
        for obs, conv, gen in zip(observations, convs, gens):
            key = obs.episode
            chat = self._chats.get(key) or self._new_chat(key)
            self._last = key
            s = chat.stats
            s.answer_prompt_tokens += gen.prompt_tokens
            s.answer_completion_tokens += gen.completion_tokens
            s.answer_seconds += gen.seconds / len(observations)
            s.answer_truncated = gen.finish_reason == "length"
            chat.answer = Turn(conv, gen.text, stopped=gen.finish_reason != "length", prompt_ids=gen.prompt_ids,
                               reply_ids=gen.token_ids)
            s.failures += gen.finish_reason == "error"
            self._answered.append(key)
            answers.append(clean_answer(gen.text))
        return answers


def run_batch(batch_env: "BatchedMenuEnv", policy: LLMPolicy, items: Sequence["QAItem"]) -> list["Trajectory"]:
    """Play ``items`` (one per environment) together: one generation call per step for all unfinished
    environments, then one call for all the answers."""
    t0 = time.perf_counter()
    batch_env.reset(items)
    while not batch_env.all_done:
        replies = policy.act_batch(batch_env.observe())
        batch_env.step(replies)
    envs = batch_env.envs
    finals = [e.observe() for e in envs]
    answers = policy.answer_batch([i.question for i in items], [e.committed_texts() for e in envs], finals)
    trajectories = [env.finish(a, **{**policy.trajectory_meta(o), "policy": policy.name})
                    for env, a, o in zip(envs, answers, finals)]
    total = time.perf_counter() - t0
    for t in trajectories:
        t.seconds["batch_total"] = total
    return trajectories


# -- the registered factories (agent/policies/__init__.py: transformers, openai, vllm) ---------------------------
def _split(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    policy = {k: kwargs.pop(k) for k in POLICY_KWARGS if k in kwargs}
    return policy, kwargs


def transformers_policy(model: str = "smollm2", *, gguf_file: str | None = None, device: str = "cpu",
                        temperature: float = 0.0, seed: int | None = 0, max_new_tokens: int = 8,
                        **kwargs: Any) -> LLMPolicy:
    """On CPU generation runs on one torch thread unless ``num_threads`` says otherwise: a small model
    gains little from more, and on a busy machine (other jobs on the same cores) two threads were
    measured ~5x slower than one. Other kwargs go to :class:`LLMPolicy` or :class:`TransformersBackend`."""
    policy_kw, backend_kw = _split(kwargs)
    if device == "cpu":
        backend_kw.setdefault("num_threads", 1)
    backend = load_transformers_backend(model, gguf_file=gguf_file, device=device, **backend_kw)
    return LLMPolicy(backend, temperature=temperature, seed=seed, max_new_tokens=max_new_tokens,
                     **{"name": f"transformers:{model}", **policy_kw})


def openai_policy(base_url: str | None = None, model: str | None = None, **kwargs: Any) -> LLMPolicy:
    """``base_url``/``model`` default to $OPENAI_BASE_URL / $OPENAI_MODEL. ``check_endpoint`` (default True): ask the
    server's ``/models`` first and refuse a dead endpoint or a model it does not serve."""
    from harness_g.agent.llm.openai_backend import OpenAIBackend

    base_url = base_url or os.environ.get("OPENAI_BASE_URL")
    model = model or os.environ.get("OPENAI_MODEL")
    if not base_url or not model:
        missing = " and ".join(f for f, v in (("--base-url", base_url), ("--model", model)) if not v)
        raise ConfigError(f"the openai policy needs {missing} (or $OPENAI_BASE_URL / $OPENAI_MODEL), "
                          "e.g. --base-url http://127.0.0.1:8011/v1 --model smollm2")
    check = kwargs.pop("check_endpoint", True)
    policy_kw, backend_kw = _split(kwargs)
    backend = OpenAIBackend(base_url, model, **backend_kw)
    if check:  # a dead endpoint or a wrong model name is one error before the first question, not one per question
        backend.check()
    return LLMPolicy(backend, **{"name": f"openai:{model}", **policy_kw})


def vllm_policy(model: str = "smollm2", **kwargs: Any) -> LLMPolicy:
    """kwargs: :class:`LLMPolicy` options, the rest are ``vllm.LLM`` engine options."""
    policy_kw, engine_kw = _split(kwargs)
    return LLMPolicy(load_vllm_backend(model, **engine_kw), **{"name": f"vllm:{model}", **policy_kw})
