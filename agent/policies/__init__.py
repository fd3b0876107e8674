"""Policies: a registry so ``--policy NAME`` finds them (LLM policies register here too)."""
from __future__ import annotations

from typing import Any, Callable

from harness_g.agent.policies.base import Policy
from harness_g.errors import ConfigError

POLICIES: dict[str, Callable[..., Policy]] = {}


def register(name: str) -> Callable[[Callable[..., Policy]], Callable[..., Policy]]:
    def deco(factory: Callable[..., Policy]) -> Callable[..., Policy]:
        POLICIES[name] = factory
        return factory

    return deco


@register("heuristic")
def _heuristic(**kwargs: Any) -> Policy:
    from harness_g.agent.policies.heuristic import HeuristicPolicy

    return HeuristicPolicy(**kwargs)


@register("lookahead")
def _lookahead(**kwargs: Any) -> Policy:
    """LLM-free: previews LOOKUPs, commits named/bridge article leads; kwargs max_commits, named_bonus, backward_hops."""
    from harness_g.agent.policies.lookahead import LookaheadPolicy

    return LookaheadPolicy(**kwargs)


@register("oracle")
def _oracle(**kwargs: Any) -> Policy:
    """PRIVILEGED (reads gold evidence labels): kwargs view, env_config, questions (id -> QAItem or QAItems), budget."""
    from harness_g.agent.policies.oracle import OraclePolicy

    return OraclePolicy(**kwargs)


@register("human")
def _human(**kwargs: Any) -> Policy:
    from harness_g.agent.policies.human import HumanPolicy

    return HumanPolicy(**kwargs)


def make_policy(name: str, **kwargs: Any) -> Policy:
    if name not in POLICIES:
        raise ConfigError(f"unknown policy {name!r}; available: {', '.join(sorted(POLICIES))}")
    return POLICIES[name](**kwargs)


# -- LLM policies (harness_g.agent.llm); heavy imports happen when a policy is built -------------
@register("transformers")
def _transformers(**kwargs: Any) -> Policy:
    """kwargs: model="smollm2", gguf_file=None, temperature=0.0, seed=0, max_new_tokens=8, device="cpu", ..."""
    from harness_g.agent.llm import transformers_policy

    return transformers_policy(**kwargs)


@register("vllm")
def _vllm(**kwargs: Any) -> Policy:
    """kwargs: model, LLMPolicy options, and vllm.LLM engine options."""
    from harness_g.agent.llm import vllm_policy

    return vllm_policy(**kwargs)


@register("openai")
def _openai(**kwargs: Any) -> Policy:
    """kwargs: base_url, model, api_key_env="OPENAI_API_KEY", timeout_s, max_retries, LLMPolicy options."""
    from harness_g.agent.llm import openai_policy

    return openai_policy(**kwargs)
