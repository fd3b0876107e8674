"""Rollout generators: the chat backends that sample rollouts from the policy being trained (``rollout.generator``).

``GENERATORS`` maps a name to a factory ``(GeneratorRequest) -> generator``; the generator follows the contract
:class:`harness_g.training.generator_protocol.RolloutGenerator` (``generate``, ``count_tokens``, ``seconds``, ...,
and ``sync(policy)``, which the trainer calls after every optimiser step). Factories import their backend when called, so importing this module
(config validation, ``--help``) costs no torch or vLLM import.

    generator = GENERATORS.get(config.rollout.generator)(request)
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Mapping

from harness_g.errors import ConfigError
from harness_g.registry import Registry

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from harness_g.training.generator_protocol import RolloutGenerator


@dataclass(frozen=True)
class GeneratorRequest:
    """Everything a generator is built from; the trainer fills it once per run from its config."""

    policy: torch.nn.Module  # the unwrapped policy being trained (sampled directly, or the engine's first weights)
    tokenizer: Any  # the policy's tokenizer (its chat template renders every prompt)
    temperature: float  # rollout sampling temperature (rollout.temperature)
    top_p: float  # nucleus sampling mass (rollout.top_p)
    max_prompt_tokens: int  # prompt budget in tokens (the trainer's prompt_budget)
    max_new_tokens: int  # longest reply in tokens: max(rollout.max_action_tokens, rollout.max_answer_tokens)
    seed: int  # the run's seed (the vLLM engine's seed)
    workdir: Path  # the run directory; vllm exports the starting weights to workdir / "vllm-init"
    engine: Mapping[str, Any] = field(default_factory=dict)  # rollout.vllm: vllm.LLM keyword arguments (vllm only)
    num_processes: int = 1  # Accelerate processes in the run (vllm: one colocated engine, so 1 only)
    autocast: Callable[[], ContextManager[Any]] = contextlib.nullcontext  # the run's compute-dtype region (transformers)
    prefix_cache: bool = True  # keep episodes' key/value caches between turns (rollout.prefix_cache; transformers)


GeneratorFactory = Callable[[GeneratorRequest], "RolloutGenerator"]
GENERATORS: Registry[GeneratorFactory] = Registry("generator")


@GENERATORS.register("transformers")
def transformers_generator(req: GeneratorRequest) -> Any:
    """Batched transformers generation with the policy's own weights (CPU or GPU, any number of processes)."""
    from harness_g.training.rollout import Generator

    return Generator(req.policy, req.tokenizer, temperature=req.temperature, top_p=req.top_p,
                     max_prompt_tokens=req.max_prompt_tokens, autocast=req.autocast, prefix_cache=req.prefix_cache)


@GENERATORS.register("vllm")
def vllm_generator(req: GeneratorRequest) -> Any:
    """A colocated in-process vLLM engine started from the policy's exported weights, synced after every update."""
    from harness_g.training.vllm_generator import VLLMGenerator, export_for_engine

    if req.num_processes > 1:  # each rank would start its own engine on the default device
        raise ConfigError("rollout.generator vllm runs single-process for now (one colocated engine); "
                          "launch with one process, or use rollout.generator transformers for multi-process runs")
    source = export_for_engine(req.policy, req.tokenizer, Path(req.workdir) / "vllm-init")
    engine = {"max_model_len": req.max_prompt_tokens + req.max_new_tokens, **req.engine}
    return VLLMGenerator(source, req.tokenizer, temperature=req.temperature, top_p=req.top_p,
                         max_prompt_tokens=req.max_prompt_tokens, seed=req.seed, **engine)
