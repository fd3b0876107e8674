"""``MenuToolEnv`` with the real TRL (``trl`` 1.16): the environment class alone on the test graph, then TRL's own
``GRPOTrainer(environment_factory=...)`` running 2 steps of a tiny random model on CPU through it.

The GRPO test runs on the FalkorDB graph only: without Triton, TRL scores every position of each sequence against the
49,152-token vocabulary, in tiles of 32,768 vocabulary columns by default; the test took 191 s alone on one CPU thread
(214 s in a CI-like run), 83 s of each step in that fused head. With tiles of 1,024 columns (the same loss and
gradients up to float rounding) it took 72 s alone on one thread. Menus of two visible sentences and two LOOKUP
candidates keep the prompts short. The environment class itself is checked on both stores.

A tiny random model never writes a well-formed tool call by chance, so before GRPO it is fitted for up to 120 Adam
steps (plain PyTorch, no mock) to reply to the first observation with ``answer(<gold>)`` or ``answer("Paris")``, half
each: its rollouts then call the tool, the episode scores them with the answer's F1 through ``get_reward``, the
rewards of a group differ and GRPO has an advantage to follow, so its parameters change.
"""
from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("trl", reason="trl is not installed here (pip install trl==1.16.0, the env extra): TRL's "
                    "GRPOTrainer cannot run without it")

import torch  # noqa: E402

from harness_g.agent.env.config import EnvConfig  # noqa: E402
from harness_g.agent.eval.metrics import token_f1  # noqa: E402
from harness_g.agent.integrations.menu_service import MenuService  # noqa: E402
from harness_g.agent.integrations.trl_env import MenuToolEnv, menu_tool_env_factory  # noqa: E402
from harness_g.errors import HarnessError  # noqa: E402

PROMPT = "Answer the question with the tools.\n"
WRONG = "Paris"
#: vocabulary columns per tile of TRL's fused LM head off Triton (TRL's default 32,768): the loss and gradients are the
#: same up to float rounding, and a tile of 1,024 columns fits the CPU's caches
CPU_VOCAB_TILE = 1024


def test_the_tools_play_an_episode_and_get_reward_is_the_answers_f1(hotpot_view, hotpot_questions):
    item = next(q for q in hotpot_questions if q.question.startswith("Lorenzo Monaco"))
    env = menu_tool_env_factory(MenuService(hotpot_view, hotpot_questions))()
    assert env.get_reward() == 0.0  # nothing played yet
    first = env.reset(prompt=[{"role": "user", "content": PROMPT}], question=item.question)
    assert first.startswith(f"Question: {item.question}\nStep 1 of 6.") and "E0 | " in first and "S0 | " in first
    after = env.lookup("E0")
    assert after.splitlines()[1] == "Step 2 of 6." and "Rejected" not in after
    with pytest.raises(HarnessError, match="SELECT S99: not a visible sentence"):
        env.select("S99")  # TRL feeds the message back to the model; no turn used
    assert env.select("S0").splitlines()[1] == "Step 3 of 6."  # the refused S99 used no turn
    assert env.get_reward() == 0.0  # not answered yet: the outcome reward is 0
    assert env.answer("Giotto") == "Answer recorded; the episode is over."
    assert env.get_reward() == token_f1("Giotto", item.answers) == 1.0
    with pytest.raises(HarnessError, match="the episode is over"):
        env.answer("again")
    # the pooled instance is reset for the next rollout (TRL's "construct once, reset often")
    env.reset(question=item.id)
    assert env.answer_with(["S0"]).endswith("Retrieval is over: call answer(text) with your final answer.")
    env.answer(WRONG)
    assert env.get_reward() == token_f1(WRONG, item.answers) == 0.0
    with pytest.raises(HarnessError, match="no 'question' or 'question_id' column"):
        env.reset(prompt="x")


def _tool_call(name: str, arguments: dict) -> str:
    """An assistant turn calling ``name`` as the Qwen2.5 template renders it (what TRL's parser reads)."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call><|im_end|>"


def _fit_to_answer(model, tok, env: MenuToolEnv, question: str, gold: str, steps: int = 120) -> float:
    """Adam steps until ``model`` replies to the first observation with answer(gold) or answer(WRONG); the last loss
    (mean over the reply tokens; the whole prompt is the context, as in the rollouts)."""
    tools = [env.answer, env.answer_with, env.lookup, env.select]  # TRL's order (inspect.getmembers: by name)
    prompt = tok.apply_chat_template([{"role": "user", "content": PROMPT + env.reset(question=question)}], tools=tools,
                                     add_generation_prompt=True, tokenize=False)
    head = tok(prompt, add_special_tokens=False).input_ids
    rows = [tok(_tool_call("answer", {"text": text}), add_special_tokens=False).input_ids for text in (gold, WRONG)]
    width = len(head) + max(len(r) for r in rows)
    ids = torch.tensor([head + r + [tok.pad_token_id] * (width - len(head) - len(r)) for r in rows])
    labels = torch.tensor([[-100] * len(head) + r + [-100] * (width - len(head) - len(r)) for r in rows])
    scored = labels[:, 1:] != -100  # logits only where a reply token is predicted: the vocabulary is 49,152 wide
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    for _ in range(steps):
        hidden = model.model(input_ids=ids).last_hidden_state[:, :-1][scored]
        loss = torch.nn.functional.cross_entropy(model.lm_head(hidden), labels[:, 1:][scored])
        if loss.item() < 0.05:  # fitted: the reply is the gold or the wrong answer, nearly surely
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def test_grpo_trainer_trains_a_tiny_model_through_the_environment(falkordb_hotpot_view, hotpot_questions, tmp_path,
                                                                 monkeypatch):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template
    from trl.trainer import utils as trl_utils

    from harness_g.training.config import ModelConfig
    from harness_g.training.modeling import load_policy, load_tokenizer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.setattr(trl_utils, "_CHUNKED_LOGPROB_CHUNK_SIZE", CPU_VOCAB_TILE)
    torch.manual_seed(0)
    item = next(q for q in hotpot_questions if q.question.startswith("Lorenzo Monaco"))
    spec = ModelConfig(name="tiny-random", tiny_hidden=32, tiny_layers=1)
    tok = load_tokenizer(spec)
    tok.chat_template = qwen2_5_chat_template  # SmolLM2's own template has no tool calls; this one TRL can parse
    model = load_policy(spec, tok)
    # two visible sentences and two LOOKUP candidates: the first prompt is 821 tokens, not 1,065, and on CPU TRL scores
    # every position of a sequence against the 49,152-token vocabulary (its compact path needs Triton)
    service = MenuService(falkordb_hotpot_view, hotpot_questions, EnvConfig(visible_cap=2, lookup_cap=2))
    made: list[MenuToolEnv] = []

    def factory() -> MenuToolEnv:
        made.append(menu_tool_env_factory(service)())
        return made[-1]

    assert _fit_to_answer(model, tok, factory(), item.question, item.answers[0]) < 0.2
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    rows = Dataset.from_list([{"prompt": [{"role": "user", "content": PROMPT}], "question": item.question}] * 2)
    args = GRPOConfig(output_dir=str(tmp_path / "grpo"), use_cpu=True, max_steps=2, per_device_train_batch_size=4,
                      num_generations=4, max_completion_length=64, max_tool_calling_iterations=1, temperature=0.5,
                      gradient_checkpointing=False,
                      learning_rate=1e-3, logging_steps=1, save_strategy="no", report_to=[], seed=0)
    trainer = GRPOTrainer(model=model, processing_class=tok, args=args, train_dataset=rows, environment_factory=factory)
    trainer.train()

    logs = [h for h in trainer.state.log_history if "rewards/MenuToolEnv/mean" in h]
    assert len(logs) == 2 and trainer.state.global_step == 2
    assert logs[0]["tools/call_frequency"] > 0  # the first step's rollouts called the environment's tools
    assert any(h["reward_std"] > 0 for h in logs)  # get_reward told the group's rollouts apart
    answered = [e for e in made if e._obs is not None and e._obs["phase"] == "over"]
    assert answered and {e.get_reward() for e in answered} <= {0.0, 1.0}
    changed = [name for name, p in model.named_parameters() if not torch.equal(p.detach(), before[name])]
    assert changed, "GRPO changed no parameter"
