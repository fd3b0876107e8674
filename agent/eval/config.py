"""How ``harness-g eval`` runs: :class:`EvalConfig`, with the LLM policies' settings as its ``llm`` section
(:class:`PolicyConfig`); the environment's settings are recorded beside it.

Its ``policy`` and ``interface`` names are checked against the policy registry and the interface registry
(:mod:`harness_g.agent.eval.interfaces`), both at or below this layer, so validating a config imports nothing above it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from harness_g.config_loader import Config, config_field
from harness_g.registry import RegistryNames


@dataclass(frozen=True)
class PolicyConfig(Config):
    """The LLM policies' settings (transformers, openai, vllm; ``harness-g eval --model/--temperature/...`` fill it).
    A setting left None takes the policy's own default, or a trained checkpoint's (``harness_g_policy.json``).
    Secrets have no field: the openai policy's API key is read from the environment variable ``api_key_env`` names."""

    CONFIG_NAME = "policy config"

    model: str = config_field("smollm2", "model name or path of the LLM policies; a `harness-g train` checkpoint "
                                         "(RUN_DIR/checkpoint-N) is played with the settings it was trained with")
    base_url: str | None = config_field(None, "OpenAI-compatible server URL of the openai policy, e.g. "
                                              "http://127.0.0.1:8000/v1 (None: $OPENAI_BASE_URL); other policies refuse it")
    api_key_env: str = config_field("OPENAI_API_KEY", "name of the environment variable holding the openai policy's "
                                                      "API key; only the name is recorded, never the key")
    temperature: float | None = config_field(None, "sampling temperature of action replies (None: the policy's "
                                                   "default, 0 = greedy)", ge=0.0)
    seed: int | None = config_field(None, "sampling seed (None: the policy's default)")
    max_new_tokens: int | None = config_field(None, "generation cap per action reply, in tokens (None: the policy's "
                                                    "default)", ge=1)
    constrain_actions: bool = config_field(False, "constrained decoding: a reply can only be an offered action id "
                                                  "(transformers policy; makes the menu usable for small models)")
    prefix_cache: bool = config_field(True, "transformers policy: keep each chat's key/value cache from one turn to the "
                                            "next under the multi-turn context (execution only: the same replies, "
                                            "fewer prompt tokens computed; agent/llm/chat_states.py)")


@dataclass(frozen=True)
class EvalConfig(Config):
    """How ``harness-g eval`` runs (the environment's settings are recorded beside it)."""

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
    llm: PolicyConfig = field(default_factory=PolicyConfig,
                              metadata={"help": "settings of the LLM policies (transformers, openai, vllm); the "
                                                "other policies take none"})
