"""Cross-turn prefix caching (training/prefix_cache.py): an episode's key/value cache is kept from one turn to the
next, and a multi-turn rollout plays exactly as when every turn's whole prompt is prefilled -- the same sampled ids,
greedy and at temperature 1 from the same seed -- while computing fewer prompt positions. Real transformers models:
a tiny random Llama (SmolLM2's tokenizer) and the real SmolLM2-135M-Instruct; the rollout test plays the menu on the
embedded FalkorDB HotpotQA slice graph."""
from __future__ import annotations

import pytest
import torch
from helpers.kv_cache import assert_matches_full_prefill, without_timings

from harness_g.agent.llm.kv_cache import RowState, cache_kwarg, empty_cache, reused_prefill, row_states
from harness_g.training.config import ModelConfig



def _load(name: str, seed: int = 3):
    from harness_g.training.modeling import load_policy, load_tokenizer

    tok = load_tokenizer(ModelConfig(name=name))
    return load_policy(ModelConfig(name=name), tok, seed=seed, trainable=False).float().eval(), tok


@pytest.fixture(scope="module")
def tiny():
    return _load("tiny-random")


def _generator(model, tok, prefix: bool):
    from harness_g.training.rollout import Generator

    return Generator(model, tok, temperature=1.0, top_p=1.0, max_prompt_tokens=8192, prefix_cache=prefix)


def _first_chats() -> list[list[dict[str, str]]]:
    """Four episodes whose prompts differ in length (so every batch is left-padded differently each turn)."""
    return [[{"role": "user", "content": f"Question {i}: " + "who directed the film? " * (2 + 5 * i)
              + "\nA0 = SELECT S0\nA1 = ANSWER"}] for i in range(4)]


def _play(gen, temperature: float, turns: int = 4, seed: int = 0) -> list[list[tuple[int, ...]]]:
    """``turns`` turns of four growing chats (each turn's environment response a different length per episode): the
    sampled ids per turn and episode."""
    torch.manual_seed(seed)
    chats, ids = _first_chats(), []
    for turn in range(turns):
        out = gen.generate(chats, max_new_tokens=6, temperature=temperature)
        ids.append([g.token_ids for g in out])
        chats = [[*c, {"role": "assistant", "content": g.text},
                  {"role": "user", "content": f"[ok] turn {turn} " + "menu item text " * (1 + 3 * k)}]
                 for k, (c, g) in enumerate(zip(chats, out))]
    return ids


@pytest.mark.parametrize("temperature", [0.0, 1.0], ids=["greedy", "sampled"])
def test_kept_caches_play_the_same_turns_and_compute_fewer_positions(tiny, temperature: float) -> None:
    model, tok = tiny
    plain, cached = _generator(model, tok, False), _generator(model, tok, True)
    want, got = _play(plain, temperature), _play(cached, temperature)
    assert got == want
    if temperature > 0:  # (a random model's greedy replies are one token repeated; SmolLM2's test below is greedy)
        assert len({row for turn in want for row in turn}) > 4  # the replies are not all one (the check could fail)
    assert cached.continuations.continued == plain.continuations.continued == 12  # turns 2-4 of 4 episodes continued
    assert cached.prompt_tokens == plain.prompt_tokens  # the same prompts
    # turns 2-4 compute only what the last turn did not leave: well under half of what prefilling everything does
    assert cached.prefilled_prompt_positions < 0.5 * plain.prefilled_prompt_positions


def test_the_reused_cache_holds_the_keys_and_values_of_a_full_prefill(tiny) -> None:
    """Turn 2's batch cache laid together from turn 1's kept states plus one forward equals, at every real position,
    the cache of prefilling turn 2's prompts from scratch."""
    from harness_g.training.rollout import left_pad

    model, tok = tiny
    gen = _generator(model, tok, True)
    torch.manual_seed(0)
    out = gen.generate(_first_chats(), max_new_tokens=6, temperature=0.0)
    chats2 = [[*c, {"role": "assistant", "content": g.text}, {"role": "user", "content": "[ok] " + "x " * (3 * k)}]
              for k, (c, g) in enumerate(zip(_first_chats(), out))]
    taken = [gen.continuations.take(c) for c in chats2]
    rows, states = [ids for ids, _, _ in taken], [state for _, _, state in taken]
    assert all(isinstance(s, RowState) for s in states)
    for (ids, _, state), g in zip(taken, out):
        assert state.length == len(g.prompt_ids) + len(g.token_ids) - 1 < len(ids)  # all but the last sampled id
    enc = left_pad(rows, tok.pad_token_id, torch.device("cpu"))
    reused, computed = reused_prefill(model, enc, [len(r) for r in rows], states)
    width = enc["input_ids"].shape[1]
    assert 0 < computed < len(rows) * (width - 1)
    assert_matches_full_prefill(model, enc, reused, atol=1e-5)


def test_a_sliding_window_model_keeps_nothing_and_plays_as_without_the_cache(tiny) -> None:
    """Rows cannot be cut out of a sliding-window layer (it drops old positions): nothing is kept, and the generator
    prefills every turn as without the cache (a tiny random Mistral, window 4 tokens, SmolLM2's tokenizer)."""
    from transformers import MistralConfig, MistralForCausalLM

    _, tok = tiny
    torch.manual_seed(0)
    model = MistralForCausalLM(MistralConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                             sliding_window=4)).eval()
    cache = empty_cache(model)
    ids = torch.randint(3, 64, (2, 6))
    model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=3, do_sample=False,
                   pad_token_id=0, **{cache_kwarg(): cache})
    assert row_states(cache, 6, [6, 6], [3, 3]) == [None, None]
    plain, cached = _generator(model, tok, False), _generator(model, tok, True)
    assert _play(cached, 1.0, turns=2) == _play(plain, 1.0, turns=2)
    assert cached.continuations.continued == 4
    assert cached.prefilled_prompt_positions == plain.prefilled_prompt_positions  # nothing was reused


def test_smollm2_plays_the_same_multi_turn_chats_with_kept_caches() -> None:
    """The real SmolLM2-135M-Instruct, greedy, four turns of four episodes: the same ids either way."""
    model, tok = _load("smollm2")
    want = _play(_generator(model, tok, False), 0.0, turns=3)
    cached = _generator(model, tok, True)
    assert _play(cached, 0.0, turns=3) == want
    assert cached.continuations.continued == 8


def test_rollouts_on_the_menu_are_the_same_and_free_what_they_kept(falkordb_hotpot_view, hotpot_questions, tiny) -> None:
    """collect_rollouts (multi-turn, the menu on the embedded FalkorDB slice graph, N_g = 4 at temperature 1): the same
    trajectories and token ids with and without kept caches, and no state outlives the rollouts."""
    from harness_g.agent.env.config import EnvConfig
    from harness_g.training.rollout import collect_rollouts

    model, tok = tiny
    env_cfg = EnvConfig(max_turns=4, visible_cap=3, lookup_cap=3)
    played = {}
    for prefix in (False, True):
        gen = _generator(model, tok, prefix)
        torch.manual_seed(11)
        rollouts, stats = collect_rollouts(falkordb_hotpot_view, gen, hotpot_questions[:2], 4, env_cfg,
                                           max_action_tokens=4, max_answer_tokens=6, constrain_actions=True)
        played[prefix] = ([[(t.prompt_ids, t.reply_ids) for t in ro.turns] for ro in rollouts],
                          [without_timings(ro.trajectory.to_json()) for ro in rollouts], stats["generate_prefill_ratio"])
        kept = [item.state for queue in gen.continuations._pending.values() for item in queue]
        assert kept and all(state is None for state in kept)  # ended episodes' caches were freed
    assert played[True][:2] == played[False][:2]
    assert max(len(turns) for turns in played[True][0]) >= 2  # some episode continued (the check could fail)
    assert played[True][2] < played[False][2]


def test_rollout_prefix_cache_reaches_the_generator_on_by_default_under_the_multi_turn_context(tiny, tmp_path) -> None:
    """``rollout.prefix_cache`` (default on) is what the registered transformers generator is built with."""
    from harness_g.training.config import load_config
    from harness_g.training.generators import GENERATORS, GeneratorRequest

    from harness_g.training.prefix_cache import enabled

    model, tok = tiny
    assert load_config(None, {}).rollout.prefix_cache is True
    assert enabled(load_config(None, {}).rollout)  # the multi-turn context, the paper's
    assert not enabled(load_config(None, {"rollout.context": "markov"}).rollout)  # no prompt continues the last
    assert not enabled(load_config(None, {"rollout.prefix_cache": False}).rollout)
    for value in (True, False):
        cfg = load_config(None, {"rollout.prefix_cache": value})
        gen = GENERATORS.get("transformers")(GeneratorRequest(
            policy=model, tokenizer=tok, temperature=1.0, top_p=1.0, max_prompt_tokens=512, max_new_tokens=4, seed=0,
            workdir=tmp_path, prefix_cache=cfg.rollout.prefix_cache))
        assert gen.prefix_cache is value
