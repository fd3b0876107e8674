"""The SFT warm start's parts (training/sft.py) that need no graph: its batches, its settings, the scripted generator
(real SmolLM2 tokenizer and chat template) and the warm-start split check."""
from __future__ import annotations

import json

import pytest

from harness_g.config_loader import load
from harness_g.errors import ConfigError, HarnessError
from harness_g.training.sft import SFT_FILE, ScriptedGenerator, SFTConfig, check_warm_start, sft_batches


def test_batches_cover_every_row_once_sorted_by_length_and_shuffled_per_epoch():
    lengths = [50, 10, 30, 20, 40, 60, 15]
    one = sft_batches(lengths, 3, seed=0, epoch=0)
    assert sorted(i for b in one for i in b) == list(range(len(lengths)))
    assert all(len(b) <= 3 for b in one)
    # inside a batch the rows are neighbours in length order: each batch is a run of the sorted order
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    assert sorted(tuple(b) for b in one) == sorted(tuple(order[k:k + 3]) for k in range(0, len(order), 3))
    assert one == sft_batches(lengths, 3, seed=0, epoch=0)  # deterministic
    epochs = [sft_batches(lengths, 2, seed=0, epoch=e) for e in range(6)]
    assert len({json.dumps(e) for e in epochs}) > 1  # the batch order changes between epochs


def test_settings_are_typed_and_checked():
    assert load(SFTConfig, None, {"epochs": "3", "lr": "1e-3"}).epochs == 3
    with pytest.raises(ConfigError, match="epochs"):
        load(SFTConfig, None, {"epochs": "0"})
    with pytest.raises(ConfigError, match="unknown"):
        load(SFTConfig, None, {"epoch": "2"})


@pytest.fixture(scope="module")
def tokenizer():
    from harness_g.training.config import ModelConfig
    from harness_g.training.modeling import load_tokenizer

    return load_tokenizer(ModelConfig(name="tiny-random"))


def test_scripted_replies_are_the_script_closed_by_the_end_token_and_cut_at_the_limit(tokenizer):
    gen = ScriptedGenerator(tokenizer, max_prompt_tokens=512)
    chats = [[{"role": "user", "content": "Pick one: A1 A2"}], [{"role": "user", "content": "Pick another: A1 A2"}]]
    gen.script = ["A2", "SEARCH: Alexander Fleming and penicillin"]
    short, long = gen.generate(chats, max_new_tokens=4)
    assert short.text == "A2" and short.finish_reason == "stop" and short.token_ids[-1] == tokenizer.eos_token_id
    assert list(short.token_ids[:-1]) == tokenizer("A2", add_special_tokens=False)["input_ids"]
    # the long reply is cut at 4 tokens, like a sampled one: no end token, counted
    assert long.finish_reason == "length" and len(long.token_ids) == 4 and tokenizer.eos_token_id not in long.token_ids
    assert gen.cut == 1 and gen.script == []
    # the prompt is the chat template's rendering of the chat
    assert tokenizer.decode(short.prompt_ids) == tokenizer.apply_chat_template(chats[0], tokenize=False,
                                                                               add_generation_prompt=True)
    with pytest.raises(HarnessError, match="scripted 0 replies for 2 chats"):
        gen.generate(chats, max_new_tokens=4)


def test_a_warm_start_that_saw_a_held_out_question_is_refused(tmp_path):
    policy = tmp_path / "sft" / "policy"
    policy.mkdir(parents=True)
    with pytest.raises(ConfigError, match="not a LoRA adapter directory"):
        check_warm_start(str(policy), ["q1"])
    (policy / "adapter_config.json").write_text("{}")
    check_warm_start(str(policy), ["q1"])  # no sft.json beside it: not ours to check
    (tmp_path / "sft" / SFT_FILE).write_text(json.dumps({"demonstrated_ids": ["q0", "q1", "q2"]}))
    check_warm_start(str(policy), ["q3", "q4"])
    with pytest.raises(ConfigError, match="include 1 of this run's held-out questions .e.g. 'q2'"):
        check_warm_start(str(policy), ["q2", "q3"])
    check_warm_start(None, ["q2"])  # no warm start: nothing to check


def test_micro_batches_accumulate_to_the_whole_batch_token_mean(tokenizer):
    """Passes of a batch, each divided by the batch's token count, add up to the one-pass token mean: loss and
    gradient (a real tiny model with LoRA, real chat sequences)."""
    import torch

    from harness_g.training.chat import build_sequence
    from harness_g.training.config import ModelConfig
    from harness_g.training.modeling import load_policy
    from harness_g.training.sft import sft_loss

    model = load_policy(ModelConfig(name="tiny-random", lora=True), tokenizer, seed=0)
    for name, p in model.named_parameters():  # LoRA B starts at 0: make the adapters matter
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.1)
    seqs = [build_sequence(tokenizer, "Question: who? " * k, f"A{k}") for k in (1, 5, 12, 3)]
    n = sum(sum(s.loss_mask) for s in seqs)

    def grads(parts):
        model.zero_grad()
        total = 0.0
        for part in parts:
            loss, _ = sft_loss(model, [seqs[i] for i in part], torch.device("cpu"), n)
            loss.backward()
            total += loss.item()
        return total, [p.grad.clone() for p in model.parameters() if p.requires_grad]

    whole, g_whole = grads([[0, 1, 2, 3]])
    split, g_split = grads([[2], [1, 3], [0]])
    assert whole == pytest.approx(split, rel=1e-5) and whole > 0
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(g_whole, g_split))
