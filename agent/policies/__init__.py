"""Policies: a :class:`~harness_g.registry.Registry` so ``--policy NAME`` finds them.

The built-in policies are registered by import path (:class:`LazyPolicy`) and imported only when one is
built, so importing this package stays cheap: no torch, transformers or vLLM until an LLM policy is made.
A new policy registers any factory ``(**kwargs) -> Policy``: ``POLICIES.add("mine", LazyPolicy(...))`` or
``@POLICIES.register("mine")`` on a function.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

from harness_g.agent.policies.base import Policy
from harness_g.registry import Registry

PolicyFactory = Callable[..., Policy]


@dataclass(frozen=True)
class LazyPolicy:
    """A policy factory named by its import path, imported when the first policy is built."""

    target: str  # "package.module:attribute": a Policy class or a function, called with the policy's kwargs
    help: str  # one line for --help: what the policy is and the kwargs it takes
    llm: bool = False  # runs a language model, so it takes the CLI's --model/--base-url/--temperature/... flags

    def load(self) -> PolicyFactory:
        module, _, attribute = self.target.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def __call__(self, **kwargs: Any) -> Policy:
        return self.load()(**kwargs)


POLICIES: Registry[PolicyFactory] = Registry("policy")

_BUILT_IN = {
    "heuristic": LazyPolicy("harness_g.agent.policies.heuristic:HeuristicPolicy",
                            "LLM-free: SELECT closest sentence, LOOKUP best bridge entity, extractive answer; kwargs max_commits"),
    "lookahead": LazyPolicy("harness_g.agent.policies.lookahead:LookaheadPolicy",
                            "LLM-free: previews LOOKUPs, commits named/bridge article leads; kwargs max_commits, named_bonus, "
                            "backward_hops"),
    "oracle": LazyPolicy("harness_g.agent.policies.oracle:OraclePolicy",
                         "PRIVILEGED (reads gold evidence labels): kwargs view, env_config, questions (id -> QAItem or "
                         "QAItems), budget"),
    "human": LazyPolicy("harness_g.agent.policies.human:HumanPolicy", "a person at the terminal; kwargs stdin, stdout"),
    "transformers": LazyPolicy("harness_g.agent.policies.llm:transformers_policy",
                               'offline LLM; kwargs model="smollm2", gguf_file=None, temperature=0.0, seed=0, '
                               'max_new_tokens=8, device="cpu", ...', llm=True),
    "vllm": LazyPolicy("harness_g.agent.policies.llm:vllm_policy", "kwargs model, LLMPolicy options, and vllm.LLM engine options",
                       llm=True),
    "openai": LazyPolicy("harness_g.agent.policies.llm:openai_policy",
                         'OpenAI-compatible server; kwargs base_url, model, api_key_env="OPENAI_API_KEY", timeout_s, '
                         "max_retries, LLMPolicy options", llm=True),
}
for _name, _factory in _BUILT_IN.items():
    POLICIES.add(_name, _factory)


def make_policy(name: str, **kwargs: Any) -> Policy:
    """Build the policy registered as ``name`` with ``kwargs``; ConfigError listing the policies if unknown."""
    return POLICIES.get(name)(**kwargs)


def is_llm_policy(factory: PolicyFactory) -> bool:
    """Whether a registered factory runs a language model (``LazyPolicy.llm``; False for plain functions)."""
    return bool(getattr(factory, "llm", False))


def llm_policies() -> list[str]:
    """Names of the policies that take the LLM flags (--model, --base-url, ...), sorted."""
    return POLICIES.names(is_llm_policy)
