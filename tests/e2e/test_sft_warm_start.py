"""The oracle-demonstration SFT warm start (``harness-g sft``, training/sft.py; ours, off unless a run sets
``model.init_adapter``), end to end on the real HotpotQA test graph.

- A demonstration is the oracle's own episode played through the GRPO rollout path (both stores): the executed
  actions are what the oracle plays directly, the trained tokens are exactly its replies (and the gold answer), each
  closed by the end-of-turn token; on the free-query arm the oracle's LOOKUP is written as a search string that the
  arm's resolver maps back to the oracle's target here.
- ``harness-g sft`` (tiny random model, real PEFT) lowers the demonstrations' loss, writes a policy checkpoint;
  a GRPO run warm-starts from it (``model.init_adapter``: merged before training, the reference is the merged model),
  and ``harness-g eval --model RUN/checkpoint-N`` merges the warm start again and reproduces the trainer's held-out
  answers. A warm start that demonstrated a held-out question is refused before anything is written.
"""
from __future__ import annotations

import json

import pytest
from helpers.cli_checks import assert_one_line_error, run

from harness_g.agent.env import MenuEnv
from harness_g.agent.eval.runner import run_episode
from harness_g.agent.policies.oracle import OraclePolicy
from harness_g.training.chat import ANSWER_TURN
from harness_g.training.config import ModelConfig, load_config
from harness_g.training.modeling import load_tokenizer
from harness_g.training.sft import collect_demonstrations

Q_ONE_VISIBLE = "5a8268aa55429940e5e1a8aa"  # one of two gold sentences in U_0, the other one LOOKUP away


def _trained_text(tokenizer, seq, turn):
    ids = [t for t, m, k in zip(seq.input_ids, seq.loss_mask, seq.turn_of) if m and k == turn]
    return ids, tokenizer.decode(ids, skip_special_tokens=True).strip()


@pytest.mark.parametrize("context", ["multi-turn", "markov"])
def test_a_menu_demonstration_is_the_oracle_episode_and_trains_exactly_its_replies(hotpot_view, context):
    tokenizer = load_tokenizer(ModelConfig(name="tiny-random"))
    config = load_config(None, {"model.name": "tiny-random", "rollout.max_turns": 4, "rollout.context": context,
                                "rollout.max_answer_tokens": 16})
    items = hotpot_view.artifact.questions()
    rollouts, stats = collect_demonstrations(hotpot_view, tokenizer, items, config, 4096)
    env_config = config.env_config()
    assert stats["questions"] == len(items) and stats["agreement"] == 1.0 and stats["cut_replies"] == 0
    assert stats["answer_f1"] == 1.0  # the answer turn is the gold answer
    assert stats["action_types"].get("LOOKUP", 0) >= 1  # Q_ONE_VISIBLE needs one
    for ro, item in zip(rollouts, items):
        direct = run_episode(MenuEnv(hotpot_view, env_config), OraclePolicy(hotpot_view, env_config, items), item)
        assert [s.chosen for s in ro.trajectory.steps] == [s.chosen for s in direct.steps], item.id
        assert ro.trajectory.committed == direct.committed
        seqs = ro.sequences(tokenizer)
        # markov: one sequence per decision turn, then the answer; multi-turn: one growing sequence, then the answer
        assert len(seqs) == (len(direct.steps) if context == "markov" else 1) + 1
        for turn, step in enumerate(direct.steps):
            seq = seqs[turn] if context == "markov" else seqs[0]
            ids, text = _trained_text(tokenizer, seq, turn)
            assert text == step.chosen and ids[-1] == tokenizer.eos_token_id
        ids, text = _trained_text(tokenizer, seqs[-1], ANSWER_TURN)
        assert text == item.answers[0] and ids[-1] == tokenizer.eos_token_id


def test_a_free_query_demonstration_searches_by_name_and_reaches_the_oracles_target(hotpot_view):
    tokenizer = load_tokenizer(ModelConfig(name="tiny-random"))
    items = [q for q in hotpot_view.artifact.questions() if q.id == Q_ONE_VISIBLE]
    sets = {"model.name": "tiny-random", "rollout.max_turns": 4, "rollout.interface": "free-query",
            "credit.scheme": "outcome", "rollout.max_action_tokens": 16}
    menu, _ = collect_demonstrations(hotpot_view, tokenizer, items, load_config(None, {**sets, "rollout.interface": "menu"}), 4096)
    free, stats = collect_demonstrations(hotpot_view, tokenizer, items, load_config(None, sets), 4096)
    (m,), (f,) = menu, free
    assert stats["agreement"] == 1.0 and stats["cut_replies"] == 0
    lookups = [s for s in f.trajectory.steps if s.action_type == "LOOKUP"]
    assert lookups and all(s.reply.startswith("SEARCH: ") for s in lookups)
    assert [s.chosen for s in f.trajectory.steps] == [s.chosen for s in m.trajectory.steps]
    assert f.trajectory.committed == m.trajectory.committed and f.trajectory.meta["queries"]
    # with 2 reply tokens the search string is cut (no end token trained), counted, and the episode goes on
    cut, cut_stats = collect_demonstrations(hotpot_view, tokenizer, items,
                                            load_config(None, {**sets, "rollout.max_action_tokens": 2}), 4096)
    assert cut_stats["cut_replies"] >= 1
    seq = cut[0].sequences(tokenizer)[0]
    ids, _ = _trained_text(tokenizer, seq, 0)
    assert len(ids) <= 2 and tokenizer.eos_token_id not in ids


def _nll(model, sequences):
    import torch

    from harness_g.training.sft import sft_loss

    with torch.no_grad():
        return float(sft_loss(model.eval(), sequences, torch.device("cpu"))[0])


@pytest.mark.slow
def test_sft_then_a_warm_started_grpo_run_and_its_evaluation(tmp_path, capsys, hotpot_graph_dir):
    """The whole chain on the tiny random model with LoRA (real PEFT): its SFT saves the base it was built over
    (RUN/base-model), which the GRPO run then names as its model, so the run's checkpoint is a LoRA over a loadable
    base plus ``init_adapter``, the way a SmolLM2 or hub-model run's is."""
    from harness_g.agent.env.session import open_view
    from harness_g.agent.llm.checkpoint import load_adapter_model
    from harness_g.training.modeling import load_policy

    base = {"model.name": "tiny-random", "model.lora": True, "model.lora_targets": ["q_proj", "v_proj", "down_proj", "lm_head"],
            "data.graph_dir": str(hotpot_graph_dir), "data.eval_questions": 2, "rollout.max_turns": 3,
            "rollout.max_answer_tokens": 8, "rollout.group_size": 2, "rollout.questions_per_step": 1,
            "rollout.constrain_actions": True, "optim.mini_batch_questions": 1, "optim.steps": 1,
            "log.save_every": 0, "log.tensorboard": False}
    cfg = tmp_path / "run.yaml"
    load_config(None, base).save(cfg)
    sft_dir = tmp_path / "sft"
    rc, out, err = run(capsys, "sft", "--config", cfg, "--out", sft_dir, "--sft", "epochs=10", "--sft", "lr=1e-2",
                       "--sft", "batch_sequences=4", "--sft", "questions=3", "-q")
    assert rc == 0, err
    record = json.loads((sft_dir / "sft.json").read_text())
    assert f"--set model.init_adapter={sft_dir.resolve() / 'policy'}" in out
    assert len(record["demonstrated_ids"]) == 3 and not set(record["demonstrated_ids"]) & set(record["heldout_ids"])
    losses = [json.loads(line)["loss"] for line in (sft_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(losses) == record["steps"] and sum(losses[-3:]) < 0.5 * sum(losses[:3])  # the demonstrations are fitted

    # the warm start merged into the base (what a GRPO run starts from) scores the demonstrations as the adapter does
    warm = {"model.name": str(sft_dir / "base-model"), "model.init_adapter": str(sft_dir / "policy")}
    config = load_config(cfg, warm)
    tokenizer = load_tokenizer(config.model)
    with open_view(str(hotpot_graph_dir)) as view:
        items = [q for q in view.artifact.questions() if q.id in record["demonstrated_ids"]]
        demos, _ = collect_demonstrations(view, tokenizer, items, config, 4096)
    seqs = [s for ro in demos for s in ro.sequences(tokenizer)]
    merged = _nll(load_policy(config.model, tokenizer), seqs)
    assert merged == pytest.approx(_nll(load_adapter_model(sft_dir / "policy", dtype=None), seqs), abs=1e-4)
    assert merged < 0.5 * _nll(load_policy(load_config(cfg, {"model.name": warm["model.name"]}).model, tokenizer), seqs)

    # benchmarks/bench_sft_warm_start.py: its baseline (the adapter with lora_B zeroed) is exactly the base model, and
    # it reports the SFT policy against it on questions the SFT never saw, held-out and undemonstrated apart
    import subprocess
    import sys

    from helpers.paths import REPO_ROOT

    bench = tmp_path / "page" / "sft_warm_start"  # where repro_small.py page finds it
    done = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / "bench_sft_warm_start.py"), "--sft",
                           str(sft_dir), "--out", str(bench), "--questions", "3"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    zeroed = load_adapter_model(bench / "base-policy", dtype=None)
    assert _nll(zeroed, seqs) == pytest.approx(
        _nll(load_policy(load_config(cfg, {"model.name": warm["model.name"]}).model, tokenizer), seqs), abs=1e-5)
    result = json.loads((bench / "sft_warm_start.json").read_text())
    assert (result["heldout"]["questions"], result["undemonstrated_train"]["questions"]) == (2, 1)
    ids = (bench / "question_ids.txt").read_text().split()
    assert ids[:2] == record["heldout_ids"] and not set(ids) & set(record["demonstrated_ids"])
    pooled = result["pooled"]
    assert pooled["sft_minus_base"]["f1"]["mean"] == pytest.approx(pooled["sft"]["f1"] - pooled["base"]["f1"])
    # --reuse-evals re-summarises the kept evaluations without playing them again: the same result
    played = {d: (bench / d / "records.jsonl").stat().st_mtime_ns for d in ("eval-base", "eval-sft")}
    again = subprocess.run([sys.executable, str(REPO_ROOT / "benchmarks" / "bench_sft_warm_start.py"), "--sft",
                            str(sft_dir), "--out", str(bench), "--questions", "3", "--reuse-evals"],
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert {d: (bench / d / "records.jsonl").stat().st_mtime_ns for d in played} == played
    assert json.loads((bench / "sft_warm_start.json").read_text()) == result
    sys.path.insert(0, str(REPO_ROOT / "benchmarks"))
    from repro_small import warm_start_section

    section = warm_start_section(tmp_path / "page")  # on the page: 2 held-out questions are too few to show anything
    assert "SFT on oracle demonstrations" in section and "<td>held-out</td><td>2</td>" in section
    assert section.count("not shown") == 3 and "undemonstrated" in section

    # GRPO from the warm start; eval of its checkpoint (LoRA over the merged warm start) reproduces its answers
    grpo = tmp_path / "grpo"
    rc, _, err = run(capsys, "train", "--config", cfg, *[a for k, v in warm.items() for a in ("--set", f"{k}={v}")],
                     "--out", grpo, "-q")
    assert rc == 0, err
    assert json.loads((grpo / "checkpoint-1" / "harness_g_policy.json").read_text())["init_adapter"] == \
        str((sft_dir / "policy").resolve())
    (after,) = [r for r in map(json.loads, (grpo / "eval.jsonl").read_text().splitlines())
                if r["split"] == "heldout" and r["tag"] == "after"]
    ev = tmp_path / "eval"
    rc, _, err = run(capsys, "eval", "--policy", "transformers", "--model", grpo / "checkpoint-1",
                     "--question-ids", grpo / "heldout_ids.txt", "--out", ev, "-q")
    assert rc == 0, err
    records = [json.loads(line) for line in (ev / "records.jsonl").read_text().splitlines()]
    assert {r["id"]: r["prediction"] for r in records} == {qid: answer for _, answer, _, qid in after["answers"]}

    # a warm start over another base is refused in one line
    rc, _, err = run(capsys, "train", "--config", cfg, "--set", f"model.init_adapter={sft_dir / 'policy'}",
                     "--set", "model.name=smollm2", "--out", tmp_path / "other", "-q")
    assert_one_line_error(rc, err, "was trained on base", "not 'smollm2'")
    # a run that holds out a question the warm start demonstrated is refused before its directory is written
    leak = tmp_path / "leak"
    rc, _, err = run(capsys, "train", "--config", cfg, *[a for k, v in warm.items() for a in ("--set", f"{k}={v}")],
                     "--set", "data.eval_questions=4", "--out", leak, "-q")
    assert_one_line_error(rc, err, "its SFT demonstrations include", "held-out questions")
    assert not (leak / "config.yaml").exists()

    # the run recorded its warm start's weights: a resume after they changed (here: replaced by the zeroed copy) is
    # refused in one line, and nothing of the run is lost
    recorded = json.loads((grpo / "warm_start.json").read_text())
    assert recorded["init_adapter"] == str((sft_dir / "policy").resolve()) and len(recorded["sha256"]) == 64
    import shutil

    shutil.copy(bench / "base-policy" / "adapter_model.safetensors", sft_dir / "policy" / "adapter_model.safetensors")
    metrics = (grpo / "metrics.jsonl").read_text()
    rc, _, err = run(capsys, "train", "--config", cfg, *[a for k, v in warm.items() for a in ("--set", f"{k}={v}")],
                     "--set", "optim.steps=2", "--out", grpo, "--resume", grpo / "checkpoints" / "final", "-q")
    assert_one_line_error(rc, err, "warm_start.json: the run began from warm start", "same model.init_adapter weights")
    assert (grpo / "metrics.jsonl").read_text() == metrics and json.loads((grpo / "warm_start.json").read_text()) == recorded


def test_sft_refusals_name_the_problem(tmp_path, capsys, hotpot_graph_dir):
    common = ["--set", f"data.graph_dir={hotpot_graph_dir}", "--set", "model.name=tiny-random",
              "--set", "rollout.questions_per_step=1", "--out", tmp_path / "s"]
    rc, _, err = run(capsys, "sft", *common)
    assert_one_line_error(rc, err, "writes a LoRA adapter", "model.lora=true")
    rc, _, err = run(capsys, "sft", *common, "--set", "model.lora=true", "--sft", "epochs=0")
    assert_one_line_error(rc, err, "epochs")
    rc, _, err = run(capsys, "sft", *common, "--set", "model.lora=true", "--resume", tmp_path)
    assert_one_line_error(rc, err, "no --resume")
    rc, _, err = run(capsys, "train", "--set", f"data.graph_dir={hotpot_graph_dir}", "--set", "model.name=tiny-random",
                     "--set", "rollout.questions_per_step=1",
                     "--set", f"model.init_adapter={tmp_path}", "--out", tmp_path / "t")
    assert_one_line_error(rc, err, "not a LoRA adapter directory")
    assert not (tmp_path / "s" / "sft.json").exists()
