"""How ``harness-g eval`` runs: :class:`EvalConfig` (the policy's and the environment's settings are recorded beside it).

Its ``policy`` and ``interface`` names are checked against the policy registry and the interface registry
(:mod:`harness_g.agent.eval.interfaces`), both at or below this layer, so validating a config imports nothing above it.
"""
from __future__ import annotations

from dataclasses import dataclass

from harness_g.config_loader import Config, config_field
from harness_g.registry import RegistryNames

@dataclass(frozen=True)
class EvalConfig(Config):
    """How ``harness-g eval`` runs (the policy's own settings and the environment's are recorded beside it)."""

    CONFIG_NAME = "eval config"

    policy: str = config_field("heuristic", "policy name (see --policy; checked against the policy registry)",
                               choices=RegistryNames("harness_g.agent.policies:POLICIES",
                                                     lookup="harness_g.agent.policies:POLICIES.get"))
    interface: str = config_field("menu", "knowledge interface: menu | free-query | rag | naive (see agent/eval/interfaces.py; "
                                          "checked against the interface registry)",
                                  choices=RegistryNames("harness_g.agent.eval.interfaces:INTERFACES",
                                                        lookup="harness_g.agent.eval.interfaces:interface_runner"))
    limit: int | None = config_field(None, "first N (>= 1) questions only (None: all)", ge=1)
    reachability: bool = config_field(False, "also compute menu reachability per question")
    reach_budget: int = config_field(400, "menu expansions per reachability search (>= 1)", ge=1)
    max_consecutive_store_errors: int = config_field(3, "abort after this many store failures in a row (>= 1)", ge=1)
    max_consecutive_errors: int = config_field(5, "abort after this many failed questions in a row (e.g. a policy "
                                                  "server that went away), naming the last error (>= 1)", ge=1)
