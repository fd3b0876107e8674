"""Load the policy (optionally with LoRA) and its frozen reference; build tiny random models offline."""
from __future__ import annotations

import copy
from typing import Any

import torch

from harness_g.errors import ConfigError
from harness_g.training.config import ModelConfig



def _ref(name: str, gguf_file: str | None) -> Any:
    """Resolve a model spec with the agent's resolver ('smollm2' = the cached conversion of the offline GGUF)."""
    from harness_g.agent.llm.models import resolve_model

    return resolve_model(name, gguf_file)


def load_tokenizer(cfg: ModelConfig) -> Any:
    """The policy's tokenizer (tiny-random models borrow SmolLM2's, which has a chat template); left padding."""
    from transformers import AutoTokenizer

    ref = _ref("smollm2" if cfg.name == "tiny-random" else cfg.name, None if cfg.name == "tiny-random" else cfg.gguf_file)
    kwargs = {"gguf_file": ref.gguf_file} if ref.gguf_file else {}
    tok = AutoTokenizer.from_pretrained(ref.name_or_path, **kwargs)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    if not getattr(tok, "chat_template", None):
        raise ConfigError(f"model {cfg.name!r} has no chat template; the policy needs one")
    return tok


def torch_dtype(name: str) -> torch.dtype:
    """``model.compute_dtype``'s name -> the torch dtype."""
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
    except KeyError:
        raise ConfigError(f"unknown dtype {name!r} (float32, bfloat16, float16)") from None


#: Accelerate's ``mixed_precision`` for each ``model.compute_dtype``
MIXED_PRECISION = {"float32": "no", "bfloat16": "bf16", "float16": "fp16"}


def load_policy(cfg: ModelConfig, tokenizer: Any, seed: int = 0, *, trainable: bool = True) -> torch.nn.Module:
    """The policy (``trainable``) or a frozen model of ``cfg``. Mixed precision done right: what the optimiser
    updates is fp32 (master weights: a bf16 weight rounds an update below half its ulp away, so at lr 5e-7 almost
    nothing would move), compute runs in ``cfg.compute_dtype`` under autocast. A full fine-tune loads every weight
    in fp32; a LoRA run stores the frozen base in the compute dtype and its adapters in fp32; a frozen model
    (``trainable=False``) is stored in the compute dtype."""
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    compute = torch_dtype(cfg.compute_dtype)
    dtype = torch.float32 if trainable and not cfg.lora else compute
    if cfg.name == "tiny-random":
        torch.manual_seed(seed)
        config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=cfg.tiny_hidden, intermediate_size=cfg.tiny_hidden * 2,
                             num_hidden_layers=cfg.tiny_layers, num_attention_heads=4, num_key_value_heads=2,
                             max_position_embeddings=8192, tie_word_embeddings=True,
                             bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                             pad_token_id=tokenizer.pad_token_id)
        model = LlamaForCausalLM(config).to(dtype)
    else:
        ref = _ref(cfg.name, cfg.gguf_file)
        kwargs = {"gguf_file": ref.gguf_file} if ref.gguf_file else {}
        model = AutoModelForCausalLM.from_pretrained(ref.name_or_path, dtype=dtype, **kwargs)
    if cfg.init_adapter:  # the warm start (ours): merged before anything trains, so the reference is the merged model
        from harness_g.agent.llm.checkpoint import merge_adapter

        model = merge_adapter(model, cfg.init_adapter, base_model=cfg.name)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    if cfg.lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                                 target_modules=list(cfg.lora_targets), task_type="CAUSAL_LM"))
    for p in model.parameters():  # fp32 master weights for whatever the optimiser updates (PEFT adapters included)
        if p.requires_grad and p.dtype != torch.float32:
            p.data = p.data.float()
    return model


class Reference:
    """Stop-gradient reference weights (the initial checkpoint): a frozen copy stored in ``dtype`` (the compute
    dtype: it is never updated, so it needs no fp32 master), or the LoRA base with adapters off."""

    def __init__(self, policy: torch.nn.Module, lora: bool, dtype: torch.dtype = torch.float32):
        self.lora = lora
        self.model = None if lora else copy.deepcopy(policy).to(dtype).eval()
        if self.model is not None:
            for p in self.model.parameters():
                p.requires_grad_(False)
        self.policy = policy

    def __call__(self, **inputs: Any) -> Any:
        with torch.no_grad():
            if self.lora:
                with self.policy.disable_adapter():
                    return self.policy(**inputs)
            assert self.model is not None
            return self.model(**inputs)
