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


@register("human")
def _human(**kwargs: Any) -> Policy:
    from harness_g.agent.policies.human import HumanPolicy

    return HumanPolicy(**kwargs)


def make_policy(name: str, **kwargs: Any) -> Policy:
    if name not in POLICIES:
        raise ConfigError(f"unknown policy {name!r}; available: {', '.join(sorted(POLICIES))}")
    return POLICIES[name](**kwargs)
