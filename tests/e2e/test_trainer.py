"""The GRPO + SNC trainer with a tiny randomly initialised Llama (no download) on the shipped 2Wiki slice:
loss masks on hand-built sequences, a few real steps against each graph store (embedded FalkorDB and a
local Neo4j), parameter change, and exact resume from a checkpoint."""
import json
from pathlib import Path

import pytest
import torch
from helpers.paths import REPO_ROOT as ROOT
from helpers.paths import TEST_DATA

from harness_g.errors import ConfigError
from harness_g.training.chat import build_sequence, pad_batch
from harness_g.training.config import ModelConfig, load_config

SLICE = TEST_DATA / "2wikimultihopqa" / "dev.subset.json"


@pytest.fixture(scope="module")
def tokenizer():
    from harness_g.training.modeling import load_tokenizer

    return load_tokenizer(ModelConfig(name="tiny-random"))


def test_loss_mask_covers_exactly_the_reply_and_its_end_token(tokenizer):
    seq = build_sequence(tokenizer, "[Step 1/6]\nQuestion: who?\nA0 = SELECT S0\nA1 = ANSWER", "A1")
    masked = [t for t, m in zip(seq.input_ids, seq.loss_mask) if m]
    assert tokenizer.decode(masked[:-1]) == "A1"
    assert masked[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>")  # the policy also learns to stop
    start, end = seq.reply_span
    assert sum(seq.loss_mask) == end - start  # contiguous: no environment token is trained
    assert "Question: who?" in tokenizer.decode(seq.input_ids[:start])


def test_right_padding_keeps_masks(tokenizer):
    a = build_sequence(tokenizer, "short prompt", "A0")
    b = build_sequence(tokenizer, "a much longer prompt " * 10, "A12")
    batch = pad_batch([a, b], tokenizer.pad_token_id)
    n = len(a.input_ids)
    assert batch["loss_mask"].sum().item() == sum(a.loss_mask) + sum(b.loss_mask)
    assert batch["input_ids"][0, :n].tolist() == a.input_ids  # rows start at column 0, padding after
    assert batch["loss_mask"][0, :n].tolist() == a.loss_mask and batch["loss_mask"][0, n:].sum().item() == 0
    assert batch["attention_mask"][0, :n].sum().item() == n and batch["attention_mask"][0, -1].item() == 0
    assert batch["position_ids"][0, n - 1].item() == n - 1


def test_policy_token_logprobs_equal_the_full_forward(tokenizer):
    """tail_logprobs projects only the positions predicting policy tokens; the values must equal a full forward's."""
    from harness_g.training.chat import tail_logprobs
    from harness_g.training.modeling import load_policy

    model = load_policy(ModelConfig(name="tiny-random"), tokenizer, seed=1)
    seqs = [build_sequence(tokenizer, "short prompt", "A0"), build_sequence(tokenizer, "a much longer prompt " * 10, "A12")]
    batch = pad_batch(seqs, tokenizer.pad_token_id)
    with torch.no_grad():
        got = tail_logprobs(model, batch)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       position_ids=batch["position_ids"]).logits.float()
    want = torch.log_softmax(logits[:, :-1], -1).gather(-1, batch["input_ids"][:, 1:, None]).squeeze(-1)
    mask = batch["loss_mask"][:, 1:] > 0
    assert mask.sum() > 0 and torch.allclose(got[:, 1:][mask], want[mask], atol=1e-5)
    assert (got[batch["loss_mask"] == 0] == 0).all()


def _hand_batch(tokenizer):
    # completions of different lengths, so token-share weighting of micro-batches differs from an equal-weight mean
    seqs = [build_sequence(tokenizer, f"[Step 1/6]\nQuestion: q{i}?\n" + "evidence " * (3 + 4 * i), "A" + "1" * (1 + 3 * i))
            for i in range(5)]
    batch = pad_batch(seqs, tokenizer.pad_token_id)
    batch["advantages"] = batch["loss_mask"] * torch.tensor([1.0, -0.5, 0.25, -2.0, 0.7]).unsqueeze(1)
    return batch


@pytest.mark.parametrize("mini", [5, 2])
def test_micro_batches_accumulate_to_the_same_update(tmp_path, tokenizer, mini):
    """Gradient accumulation over micro-batches (token-share weighted) must give the same optimiser steps as one
    pass, and the first mini-batch's π_old taken from its own forward is exactly on-policy (ratio 1, no clipping)."""
    from harness_g.training.trainer import Trainer

    results = []
    for micro in (0, 1):
        cfg = load_config(None, {"model.name": "tiny-random", "data.graph_dir": str(tmp_path / "unused"), "optim.lr": 1e-2,
                                 "optim.mini_batch_questions": mini, "optim.micro_batch_sequences": micro,
                                 "log.tensorboard": False})
        trainer = Trainer(cfg, tmp_path / f"run-{mini}-{micro}", progress=False)
        grads, step = [], trainer.optimizer.step

        def recording_step(*args, **kwargs):  # record each optimiser step's gradient, then really step
            grads.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None]))
            return step(*args, **kwargs)

        trainer.optimizer.step = recording_step
        stats = trainer._update(_hand_batch(tokenizer))
        results.append((stats, grads))
    (one, g_one), (acc, g_acc) = results
    assert one["optimizer_steps"] == acc["optimizer_steps"] == len(g_one) == len(g_acc) == (1 if mini == 5 else 3)
    assert acc["loss"] == pytest.approx(one["loss"], rel=1e-4, abs=1e-6)
    for a, b in zip(g_one, g_acc):
        # fp32 sums over different batch shapes differ in summation order: ~1e-6 absolute on a gradient of norm-max
        # ~0.2 on AMD EPYC, so the absolute tolerance scales with the gradient; a wrong micro-batch weight is off by
        # a sizeable fraction of it
        scale = float(a.abs().max())
        assert scale > 0 and torch.allclose(a, b, rtol=1e-4, atol=5e-5 * scale)
    if mini == 5:  # one on-policy step: π_old == π_θ, so nothing is clipped and KL to the (identical) reference is 0
        assert one["clip_frac"] == 0.0 and one["kl"] == pytest.approx(0.0, abs=1e-7)


def test_non_finite_batch_is_skipped_counted_and_changes_nothing(tmp_path, tokenizer):
    from harness_g.training.trainer import Trainer

    cfg = load_config(None, {"model.name": "tiny-random", "data.graph_dir": str(tmp_path / "unused"), "log.tensorboard": False})
    trainer = Trainer(cfg, tmp_path / "run", progress=False)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    batch = _hand_batch(tokenizer)
    batch["advantages"][1, -2] = float("nan")  # one poisoned token is enough to make the gradient non-finite
    stats = trainer._update(batch)
    assert stats["skipped_batches"] == 1.0 and stats["optimizer_steps"] == 0.0
    assert all(torch.equal(before[n], p.detach()) for n, p in trainer.model.named_parameters())
    assert trainer._update(_hand_batch(tokenizer))["optimizer_steps"] == 1.0  # the next clean batch trains


@pytest.mark.slow
def test_two_process_ddp_run_shards_questions(tmp_path):
    """Two CPU processes (torchrun + gloo): ranks play different questions, forwards/backwards stay collective
    even though the ranks hold different numbers of sequences, and metrics are averaged over ranks. The before/after
    evaluations are sharded over the ranks and gathered: rank 0 reports what a single process reports."""
    import os
    import subprocess
    import sys

    cfg = tmp_path / "ddp.yaml"
    # 2 questions per step over 2 processes; 6 questions = 4 to train on + 2 held out; 3 training questions evaluated
    extra = {"rollout.questions_per_step": 2, "data.limit": 6, "data.eval_questions": 2, "log.eval_train_questions": 3}
    _config(tmp_path, steps=2, **extra).save(cfg)
    import socket

    with socket.socket() as sock:  # a free port for the rendezvous
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
                           "-m", "harness_g.training", "--config", str(cfg), "--output-dir", str(tmp_path / "run"), "-q"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("last step:") == 1  # one summary per run, from the main process
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(r["processes"] == 2.0 for r in rows)
    state = json.loads((tmp_path / "run" / "checkpoints" / "step-000001" / "trainer_state.json").read_text())
    assert state["epoch"] * 4 + state["index"] == 2  # 1 question per rank per step: the shared order moved by 2

    # evaluation: every question once, in order, and the numbers a single process gets from the same initial weights
    evals = [json.loads(line) for line in (tmp_path / "run" / "eval.jsonl").read_text().splitlines()]
    assert [(e["tag"], e["split"], e["questions"]) for e in evals] == [
        ("before", "heldout", 2), ("before", "train", 3), ("after", "heldout", 2), ("after", "train", 3)]
    assert [e["process_questions"] for e in evals] == [[1, 1], [2, 1]] * 2  # each question played on one rank only
    for e in evals:  # per-question scores in the answers' order; evidence recall of C_T against the gold units
        assert len(e["scores"]) == e["questions"] == len(e["answers"])
        assert e["f1"] == pytest.approx(sum(f1 for f1, _, _ in e["scores"]) / e["questions"])
        assert e["evidence_questions"] == e["questions"]  # every 2Wiki slice question has supporting facts
        assert 0.0 <= e["evidence_recall"] <= 1.0
    from harness_g.training.trainer import Trainer

    Trainer(_config(tmp_path, steps=1, **{**extra, "rollout.questions_per_step": 1, "log.save_every": 0}), tmp_path / "single",
            progress=False).train()
    single = [json.loads(line) for line in (tmp_path / "single" / "eval.jsonl").read_text().splitlines()]
    keys = ("split", "questions", "f1", "em", "turns", "invalid_action_frac", "evidence_recall", "answers", "scores")
    assert [{k: e[k] for k in keys} for e in evals[:2]] == [{k: e[k] for k in keys} for e in single[:2]]

    # vLLM rollouts are single-process: a multi-process launch is refused before any engine starts
    vllm_cfg = tmp_path / "ddp-vllm.yaml"
    _config(tmp_path, steps=1, **{"rollout.generator": "vllm", "rollout.questions_per_step": 2}).save(vllm_cfg)
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port),
                           "-m", "harness_g.training", "--config", str(vllm_cfg), "--output-dir", str(tmp_path / "run-vllm"), "-q"],
                          capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode != 0 and "rollout.generator vllm runs single-process for now" in proc.stderr


def test_malformed_config_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("optim: {lr: 1e-4, bogus: 1}\ndata: {graph_dir: x}\n")
    with pytest.raises(ConfigError, match="unknown field.*bogus"):
        load_config(bad)
    with pytest.raises(ConfigError, match="credit.scheme 'nope'"):
        load_config(None, {"data.graph_dir": "x", "credit.scheme": "nope"})
    with pytest.raises(ConfigError, match="rollout.generator 'sglang' unknown; available: transformers, vllm"):
        load_config(None, {"data.graph_dir": "x", "rollout.generator": "sglang"})
    with pytest.raises(ConfigError, match="rollout.interface 'rag' unknown; available: free-query, menu"):
        load_config(None, {"data.graph_dir": "x", "rollout.interface": "rag"})
    with pytest.raises(ConfigError, match="rollout.vllm settings are given but rollout.generator is 'transformers'"):
        load_config(None, {"data.graph_dir": "x", "rollout.vllm": {"gpu_memory_utilization": 0.3}})
    # no graph_dir: loads (a packaged config builds into RUN_DIR/graph), refused where a graph is needed
    from harness_g.training.data import require_graph, with_run_graph

    with pytest.raises(ConfigError, match="data.graph_dir is empty"):
        require_graph(load_config(None, {}))
    built_here = with_run_graph(load_config(None, {"data.build_format": "2wiki", "data.build_input": "q.json"}), tmp_path)
    assert built_here.data.graph_dir == str(tmp_path.resolve() / "graph")
    assert with_run_graph(load_config(None, {"data.graph_dir": "x"}), tmp_path).data.graph_dir.endswith("x")



def _config(tmp_path: Path, steps: int, store: str | None = None, **extra):
    overrides = {
        "model.name": "tiny-random", "data.graph_dir": str(tmp_path / "graph"), "data.store": store, "data.build_format": "2wiki",
        "data.build_input": str(SLICE), "data.limit": 4, "rollout.group_size": 2, "rollout.questions_per_step": 1,
        "rollout.max_turns": 2, "rollout.constrain_actions": True, "rollout.env": {"visible_cap": 3, "lookup_cap": 3},
        "rollout.max_answer_tokens": 4, "credit.dead_zone": 0.0, "optim.lr": 1e-3, "optim.steps": steps,
        "optim.mini_batch_questions": 1, "log.save_every": 1, "log.tensorboard": False, **extra,
    }
    return load_config(None, overrides)


def _losses(run: Path) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())}


@pytest.mark.slow
def test_tiny_training_runs_changes_parameters_and_resumes_exactly(tmp_path, store_spec):
    from harness_g.training.data import build_training_graph
    from harness_g.training.trainer import Trainer

    run_a = tmp_path / "a"
    config = _config(tmp_path, steps=2, store=store_spec)
    build_training_graph(config)  # the CLI builds before training; Python callers build first
    trainer = Trainer(config, run_a, progress=False)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    result = trainer.train()
    assert result["steps"] == 2 and result["skipped_batches"] == 0
    rows = [json.loads(line) for line in (run_a / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert all(torch.isfinite(torch.tensor(r[k])) for k in ("loss", "kl", "grad_norm", "pg_loss"))
        assert r["invalid_action_frac"] == 0.0  # constrained decoding: only menu ids
        assert {"time_rollout_s", "time_env_s", "time_snc_s", "time_update_s", "zero_adv_frac", "d_ret"} <= set(r)
    assert any(r["snc_credit_nonzero_frac"] > 0 for r in rows)  # SNC produced credit from real previews
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(before[n], p.detach())]
    assert changed, "no parameter changed after two updates"
    assert (run_a / "checkpoints" / "step-000001" / "trainer_state.json").exists()

    # resume from step 1 and redo step 2: identical loss
    run_b = tmp_path / "b"
    Trainer(_config(tmp_path, steps=2, store=store_spec), run_b, resume=run_a / "checkpoints" / "step-000001", progress=False).train()
    assert _losses(run_b)[2] == pytest.approx(_losses(run_a)[2], rel=1e-5, abs=1e-7)


@pytest.mark.slow
def test_free_query_arm_trains_and_logs_query_diversity(tmp_path, store_spec):
    """The transition-matched free-query arm: free-text replies (no ids, no constrained decoding) are resolved to
    menu moves, trained on, and D_query is logged next to D_ret (the paper's illusory-exploration diagnostic)."""
    from harness_g.training.data import build_training_graph
    from harness_g.training.trainer import Trainer

    cfg = _config(tmp_path, steps=1, store=store_spec, **{"rollout.interface": "free-query", "rollout.constrain_actions": False,
                                        "rollout.max_action_tokens": 8, "credit.scheme": "outcome"})
    build_training_graph(cfg)
    result = Trainer(cfg, tmp_path / "run", progress=False).train()
    row = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert result["steps"] == 1 and torch.isfinite(torch.tensor(row["loss"]))
    assert 0.0 <= row["d_query"] <= 1.0 and 0.0 <= row["d_ret"] <= 1.0
    assert row["invalid_action_frac"] == 0.0  # every string resolves to some feasible move
    dumped = [json.loads(line) for line in (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()]
    for d in dumped:  # the policy's own strings are kept as queries; each executed as a real menu move
        assert d["queries"] == [reply for reply, _, _ in d["actions"]]
        assert all(kind in {"SELECT", "LOOKUP", "ANSWER_WITH", "ANSWER"} for _, kind, _ in d["actions"])
    with pytest.raises(ConfigError, match="constrain_actions needs the menu interface"):
        load_config(None, {"data.graph_dir": "x", "rollout.interface": "free-query", "rollout.constrain_actions": True,
                           "credit.scheme": "outcome"})


def test_train_cli_show_config_and_errors(tmp_path, capsys):
    from harness_g.cli import main

    assert main(["train", "--show-config"]) == 0
    out = capsys.readouterr().out
    assert "credit:" in out and "lam: 0.2" in out and "# [default] λ, weight of the SNC advantage" in out
    assert main(["train", "--config", str(ROOT / "training/configs/tiny-cpu.yaml"), "--set", "optim.lr=0.5", "--show-config"]) == 0
    resolved = capsys.readouterr().out
    assert "lr: 0.5  # [set] learning rate" in resolved and "name: 'tiny-random'" in resolved  # the config's values, not defaults
    assert "article_pool: False  # [preset paper]" in resolved  # rollout.env: the paper's menu by default
    assert main(["train", "--config", str(tmp_path / "missing.yaml"), "--output-dir", str(tmp_path / "run")]) == 2
    assert "cannot read config" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: {graph_dir: x}\n")
    assert main(["train", "--config", str(bad), "--set", "credit.scheme=bogus", "--output-dir", str(tmp_path / "run")]) == 2
    assert "credit.scheme 'bogus' unknown" in capsys.readouterr().err


def test_tensorboard_tags_are_grouped() -> None:
    from harness_g.training.logger import tensorboard_tag

    assert [tensorboard_tag(k) for k in ("reward_f1", "time_update_s", "snc_scale", "action_frac_LOOKUP", "zero_adv_frac")] == [
        "train/reward_f1", "time/time_update_s", "credit/snc_scale", "actions/action_frac_LOOKUP", "groups/zero_adv_frac"]
