"""The GRPO + SNC trainer with a tiny randomly initialised Llama (no download) on the shipped 2Wiki slice:
loss masks on hand-built sequences, a few real steps against the embedded FalkorDB, parameter change,
and exact resume from a checkpoint."""
import json
from pathlib import Path

import pytest
import torch

from harness_g.errors import ConfigError
from harness_g.training.chat import build_sequence, pad_batch
from harness_g.training.config import ModelConfig, load_config

ROOT = Path(__file__).resolve().parents[1]
SLICE = ROOT / "tests" / "data" / "2wikimultihopqa" / "dev.subset.json"


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


def test_left_padding_keeps_masks_and_tail(tokenizer):
    a = build_sequence(tokenizer, "short prompt", "A0")
    b = build_sequence(tokenizer, "a much longer prompt " * 10, "A12")
    batch = pad_batch([a, b], tokenizer.pad_token_id)
    assert batch["loss_mask"].sum().item() == sum(a.loss_mask) + sum(b.loss_mask)
    assert batch["loss_mask"][0, -3:].sum().item() >= 1  # replies sit at the right edge (template may add a newline)
    assert batch["attention_mask"][0, 0].item() == 0
    assert int(batch["tail"]) >= max(len(s.input_ids) - s.reply_span[0] + 1 for s in (a, b))
    assert batch["position_ids"][0, -1].item() == len(a.input_ids) - 1


def test_malformed_config_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("optim: {lr: 1e-4, bogus: 1}\ndata: {graph_dir: x}\n")
    with pytest.raises(ConfigError, match="unknown field.*bogus"):
        load_config(bad)
    with pytest.raises(ConfigError, match="credit.scheme 'nope'"):
        load_config(None, {"data.graph_dir": "x", "credit.scheme": "nope"})
    with pytest.raises(ConfigError, match="rollout.generator 'vllm' is not available yet"):
        load_config(None, {"data.graph_dir": "x", "rollout.generator": "vllm"})
    with pytest.raises(ConfigError, match="graph_dir is required"):
        load_config(None, {})


def _config(tmp_path: Path, steps: int, **extra):
    overrides = {
        "model.name": "tiny-random", "data.graph_dir": str(tmp_path / "graph"), "data.build_format": "2wiki",
        "data.build_input": str(SLICE), "data.limit": 4, "rollout.group_size": 2, "rollout.questions_per_step": 1,
        "rollout.max_turns": 2, "rollout.constrain_actions": True, "rollout.env": {"visible_cap": 3, "lookup_cap": 3},
        "rollout.max_answer_tokens": 4, "credit.dead_zone": 0.0, "optim.lr": 1e-3, "optim.steps": steps,
        "optim.mini_batch_sequences": 16, "log.save_every": 1, "log.tensorboard": False, **extra,
    }
    return load_config(None, overrides)


def _losses(run: Path) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in map(json.loads, (run / "metrics.jsonl").read_text().splitlines())}


@pytest.mark.slow
def test_tiny_training_runs_changes_parameters_and_resumes_exactly(tmp_path):
    from harness_g.training.trainer import Trainer

    run_a = tmp_path / "a"
    trainer = Trainer(_config(tmp_path, steps=2), run_a, progress=False)
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
    Trainer(_config(tmp_path, steps=2), run_b, resume=run_a / "checkpoints" / "step-000001", progress=False).train()
    assert _losses(run_b)[2] == pytest.approx(_losses(run_a)[2], rel=1e-5, abs=1e-7)


def test_train_cli_show_config_and_errors(tmp_path, capsys):
    from harness_g.cli import main

    assert main(["train", "--show-config"]) == 0
    out = capsys.readouterr().out
    assert "credit:" in out and "lam: 0.2" in out and "# λ, weight of the SNC advantage" in out
    assert main(["train", "--config", str(tmp_path / "missing.yaml"), "--output-dir", str(tmp_path / "run")]) == 2
    assert "cannot read config" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: {graph_dir: x}\n")
    assert main(["train", "--config", str(bad), "--set", "credit.scheme=bogus", "--output-dir", str(tmp_path / "run")]) == 2
    assert "credit.scheme 'bogus' unknown" in capsys.readouterr().err
