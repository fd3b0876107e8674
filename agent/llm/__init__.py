"""LLM plumbing: chat backends (transformers, OpenAI-compatible HTTP, vLLM), model references, checkpoints, the
policy's chat context (``context``) and the prompt stack (``prompts``). The policy that plays them is
:class:`harness_g.agent.policies.llm.LLMPolicy`:

    from harness_g.agent.policies import make_policy
    policy = make_policy("transformers", model="smollm2")          # bundled SmolLM2-135M, CPU
    policy = make_policy("transformers", model="Qwen/Qwen2.5-3B-Instruct", device="cuda", dtype="bfloat16")
    policy = make_policy("openai", base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen2.5-3B-Instruct")
    policy = make_policy("vllm", model="Qwen/Qwen2.5-3B-Instruct", gpu_memory_utilization=0.5)

Heavy imports (torch, transformers, vllm) happen only when a backend is built. Imports nothing of
:mod:`harness_g.agent.env`, :mod:`harness_g.agent.policies` or :mod:`harness_g.agent.eval` (``tests/e2e/test_layering.py``).
"""
from __future__ import annotations

import threading
from typing import Any

from harness_g.agent.llm.backends import BackendError, ChatBackend, Generation, InvalidRequest

_BACKENDS: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def load_transformers_backend(model: str = "smollm2", **backend_kwargs: Any):
    """A :class:`TransformersBackend`, shared per (model, options) within the process (models load once)."""
    from harness_g.agent.llm.transformers_backend import TransformersBackend

    key = ("transformers", str(model), tuple(sorted((k, repr(v)) for k, v in backend_kwargs.items())))
    with _LOCK:
        if key not in _BACKENDS:
            _BACKENDS[key] = TransformersBackend(model, **backend_kwargs)
        return _BACKENDS[key]


def load_vllm_backend(model: str = "smollm2", **engine_kwargs: Any):
    """A :class:`VLLMBackend`, shared per (model, engine options) within the process (engines start once)."""
    from harness_g.agent.llm.vllm_backend import VLLMBackend

    key = ("vllm", str(model), tuple(sorted((k, repr(v)) for k, v in engine_kwargs.items())))
    with _LOCK:
        if key not in _BACKENDS:
            _BACKENDS[key] = VLLMBackend(model, **engine_kwargs)
        return _BACKENDS[key]


__all__ = ["BackendError", "ChatBackend", "Generation", "InvalidRequest", "load_transformers_backend",
           "load_vllm_backend"]
