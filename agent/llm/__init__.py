"""LLM policies: chat backends (transformers, OpenAI-compatible HTTP, vLLM) and :class:`LLMPolicy`.

    from harness_g.agent.policies import make_policy
    policy = make_policy("transformers", model="smollm2")          # bundled SmolLM2-135M, CPU
    policy = make_policy("transformers", model="Qwen/Qwen2.5-3B-Instruct", device="cuda", dtype="bfloat16")
    policy = make_policy("openai", base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen2.5-3B-Instruct")
    policy = make_policy("vllm", model="Qwen/Qwen2.5-3B-Instruct", gpu_memory_utilization=0.5)

Heavy imports (torch, transformers, vllm) happen only when a backend is built.
"""
from __future__ import annotations

import threading
from typing import Any

from harness_g.agent.llm.backends import BackendError, ChatBackend, Generation, InvalidRequest

POLICY_KWARGS = ("temperature", "top_p", "seed", "max_new_tokens", "constrain_actions", "max_answer_tokens", "max_context_tokens", "stop",
                 "answer_temperature", "name", "context", "interface")

_BACKENDS: dict[tuple, Any] = {}
_LOCK = threading.Lock()


def _split(kwargs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    policy = {k: kwargs.pop(k) for k in POLICY_KWARGS if k in kwargs}
    return policy, kwargs


def load_transformers_backend(model: str = "smollm2", **backend_kwargs: Any):
    """A :class:`TransformersBackend`, shared per (model, options) within the process (models load once)."""
    from harness_g.agent.llm.transformers_backend import TransformersBackend

    key = ("transformers", str(model), tuple(sorted((k, repr(v)) for k, v in backend_kwargs.items())))
    with _LOCK:
        if key not in _BACKENDS:
            _BACKENDS[key] = TransformersBackend(model, **backend_kwargs)
        return _BACKENDS[key]


def transformers_policy(model: str = "smollm2", *, gguf_file: str | None = None, device: str = "cpu",
                        temperature: float = 0.0, seed: int | None = 0, max_new_tokens: int = 8, **kwargs: Any):
    """On CPU generation runs on one torch thread unless ``num_threads`` says otherwise: a small model
    gains little from more, and on a busy machine (other jobs on the same cores) two threads were
    measured ~5x slower than one. Other kwargs go to :class:`LLMPolicy` or :class:`TransformersBackend`."""
    from harness_g.agent.llm.policy import LLMPolicy

    policy_kw, backend_kw = _split(kwargs)
    if device == "cpu":
        backend_kw.setdefault("num_threads", 1)
    backend = load_transformers_backend(model, gguf_file=gguf_file, device=device, **backend_kw)
    return LLMPolicy(backend, temperature=temperature, seed=seed, max_new_tokens=max_new_tokens,
                     **{"name": f"transformers:{model}", **policy_kw})


def openai_policy(base_url: str | None = None, model: str | None = None, **kwargs: Any):
    """``base_url``/``model`` default to $OPENAI_BASE_URL / $OPENAI_MODEL. ``check_endpoint`` (default True): ask the
    server's ``/models`` first and refuse a dead endpoint or a model it does not serve."""
    import os

    from harness_g.agent.llm.openai_backend import OpenAIBackend
    from harness_g.agent.llm.policy import LLMPolicy
    from harness_g.errors import ConfigError

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


def vllm_policy(model: str = "smollm2", **kwargs: Any):
    from harness_g.agent.llm.policy import LLMPolicy
    from harness_g.agent.llm.vllm_backend import VLLMBackend

    policy_kw, engine_kw = _split(kwargs)
    key = ("vllm", str(model), tuple(sorted((k, repr(v)) for k, v in engine_kw.items())))
    with _LOCK:
        if key not in _BACKENDS:
            _BACKENDS[key] = VLLMBackend(model, **engine_kw)
        backend = _BACKENDS[key]
    return LLMPolicy(backend, **{"name": f"vllm:{model}", **policy_kw})


__all__ = ["BackendError", "ChatBackend", "Generation", "InvalidRequest", "openai_policy", "load_transformers_backend",
           "transformers_policy", "vllm_policy"]
