"""The trainer's update path at the paper's scale, checked on a tiny random Llama on the CPU:

- mixed precision done right: trainable weights stay fp32 master copies while compute runs in bf16, so an AdamW
  step at the paper's lr 5e-7 moves the weights (bf16 parameters round such a step away), and the step reports
  ``param_update_frac``;
- no padding waste: passes are length-sorted and trimmed to their own longest row, and the loss and gradients are
  those of the unpadded, one-sequence-at-a-time computation.
"""
from __future__ import annotations

import warnings

import pytest
import torch

from harness_g.errors import ConfigError
from harness_g.training.chat import build_sequence, pad_batch
from harness_g.training.config import ModelConfig, load_config


@pytest.fixture(scope="module")
def tokenizer():
    from harness_g.training.modeling import load_tokenizer

    return load_tokenizer(ModelConfig(name="tiny-random"))


def _batch(tokenizer, n: int = 6):
    """Rows of very different lengths (prompt 3..~60 words), replies of different lengths, mixed-sign advantages."""
    seqs = [build_sequence(tokenizer, f"[Step 1/6]\nQuestion: q{i}?\n" + "evidence " * (3 + 11 * ((i * 5) % n)),
                           "A" + "1" * (1 + 2 * i)) for i in range(n)]
    batch = pad_batch(seqs, tokenizer.pad_token_id)
    adv = torch.tensor([1.0, -0.5, 0.25, -2.0, 0.7, -1.1][:n])
    batch["advantages"] = batch["loss_mask"] * adv.unsqueeze(1)
    return seqs, batch


def _trainer(tmp_path, name: str, **overrides):
    from harness_g.training.trainer import Trainer

    cfg = load_config(None, {"model.name": "tiny-random", "data.graph_dir": str(tmp_path / "unused"),
                             "log.tensorboard": False, **overrides})
    return Trainer(cfg, tmp_path / name, progress=False)


def test_bf16_compute_keeps_fp32_master_weights_and_moves_them_at_the_paper_lr(tmp_path, tokenizer):
    trainer = _trainer(tmp_path, "bf16", **{"model.compute_dtype": "bfloat16", "optim.lr": 5e-7, "optim.kl_coef": 0.0})
    assert trainer.accelerator.mixed_precision == "bf16"
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    assert params and all(p.dtype == torch.float32 for p in params)  # master weights
    assert all(p.dtype == torch.bfloat16 for p in trainer.reference.model.parameters())  # frozen copy: compute dtype
    for group in trainer.optimizer.state.values():
        assert all(t.dtype == torch.float32 for t in group.values() if torch.is_tensor(t) and t.dim())
    before = torch.cat([p.detach().flatten().clone() for p in params])
    stats = trainer._update(_batch(tokenizer)[1])
    after = torch.cat([p.detach().flatten() for p in params])
    changed = float((after != before).float().mean())
    assert stats["optimizer_steps"] == 1.0 and changed > 0.5
    assert stats["param_update_frac"] == pytest.approx(changed)  # the tiny model is measured on every element
    # the same step taken on bf16 parameters (the old ``model.dtype: bfloat16``) rounds almost all of it away
    as_bf16 = before.to(torch.bfloat16)
    assert float(((before + (after - before)).to(torch.bfloat16) != as_bf16).float().mean()) < 0.05


def test_update_probe_warns_when_steps_do_not_move_the_weights():
    from harness_g.training.precision import STALL_STEPS, UpdateProbe

    w = torch.nn.Parameter(torch.ones(1000))
    probe = UpdateProbe([w], limit=100)
    assert probe.stride == 10
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(STALL_STEPS):
            probe.before()
            with torch.no_grad():
                w[:11] += 1.0  # elements 0 and 10 are 2 of the 100 sampled (every 10th)
            assert probe.after() == pytest.approx(0.02)
        assert not seen  # 2% is not under 1%
        for _ in range(STALL_STEPS):
            probe.before()
            assert probe.after() == 0.0
    assert len([w for w in seen if "param_update_frac" in str(w.message)]) == 1


def test_launch_precision_must_agree_with_the_run_config():
    from harness_g.training.precision import mixed_precision

    assert mixed_precision("bfloat16", launcher="no") == "bf16"
    assert mixed_precision("float32", launcher="") == "no"
    assert mixed_precision("bfloat16", launcher="bf16") == "bf16"
    with pytest.raises(ConfigError, match="sets mixed_precision 'bf16' but model.compute_dtype is 'float32'"):
        mixed_precision("float32", launcher="bf16")
    with pytest.raises(ConfigError, match="model.dtype was renamed: use model.compute_dtype"):
        load_config(None, {"data.graph_dir": "x", "model.dtype": "bfloat16"})


def _unpadded_reference(trainer, seqs, batch):
    """The update's loss and gradient computed one sequence at a time, with no padding at all: the token mean of
    the clipped surrogate (+ KL) over every policy token of the batch, π_old = π_θ (one on-policy step)."""
    from harness_g.training.losses import policy_loss

    model = trainer.accelerator.unwrap_model(trainer.model)
    total = float(batch["loss_mask"].sum())
    loss_sum = 0.0
    for i, s in enumerate(seqs):
        ids = torch.tensor([s.input_ids])
        mask = torch.tensor([s.loss_mask], dtype=torch.float32)
        logits = model(input_ids=ids).logits.float()
        logp = torch.zeros_like(mask)
        logp[:, 1:] = torch.log_softmax(logits[:, :-1], -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        logp = logp * mask
        with torch.no_grad():
            ref_logits = trainer.reference(input_ids=ids).logits.float()
        ref = torch.zeros_like(mask)
        ref[:, 1:] = torch.log_softmax(ref_logits[:, :-1], -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        adv = batch["advantages"][i, :len(s.input_ids)].unsqueeze(0)
        out = policy_loss(logp, logp.detach(), adv, mask, ref_logp=ref * mask, kl_coef=trainer.config.optim.kl_coef)
        share = float(mask.sum()) / total
        (out.loss * share).backward()
        loss_sum += float(out.loss.detach()) * share
    grad = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    model.zero_grad(set_to_none=True)
    return loss_sum, grad


@pytest.mark.parametrize("knob", [{"optim.micro_batch_sequences": 2}, {"optim.micro_batch_tokens": 120},
                                  {"optim.micro_batch_sequences": 0}])
def test_trimmed_length_sorted_passes_equal_the_unpadded_computation(tmp_path, tokenizer, knob):
    # no gradient clipping: the recorded gradient is compared before any rescaling
    trainer = _trainer(tmp_path, "pad", **{"optim.lr": 1e-2, "optim.kl_coef": 0.1, "optim.max_grad_norm": 1e9, **knob})
    seqs, batch = _batch(tokenizer)
    want_loss, want_grad = _unpadded_reference(trainer, seqs, batch)
    grads, step = [], trainer.optimizer.step

    def recording_step(*args, **kwargs):
        grads.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters() if p.grad is not None]))
        return step(*args, **kwargs)

    trainer.optimizer.step = recording_step
    stats = trainer._update(batch)
    assert stats["optimizer_steps"] == 1.0 and len(grads) == 1
    assert stats["loss"] == pytest.approx(want_loss, rel=1e-4, abs=1e-6)
    scale = float(want_grad.abs().max())
    assert scale > 0 and torch.allclose(grads[0], want_grad, rtol=1e-4, atol=5e-5 * scale)
    # padding: what the passes compute over the real tokens, against padding every row to the batch's longest
    lengths = [len(s.input_ids) for s in seqs]
    whole = len(seqs) * max(lengths) / sum(lengths)
    assert 1.0 <= stats["pad_ratio"] <= whole
    if knob.get("optim.micro_batch_sequences") == 2:  # sorted pairs: each pads only to its own longest row
        pairs = sorted(lengths, reverse=True)
        assert stats["pad_ratio"] == pytest.approx(sum(2 * pairs[k] for k in (0, 2, 4)) / sum(lengths))
        assert stats["pad_ratio"] < whole
    assert {"time_update_ref_s", "time_update_train_s", "time_update_optim_s"} <= set(stats)
