"""The GRPO + SNC training loop on Accelerate (paper Algorithm "Harness-G rollout and training"): orchestration only.

One step: sample questions -> N_g rollouts each through the batched menu environment (graph store
queries) -> outcome reward (max token F1) -> group-normalised A_out -> SNC step credit from the frozen
answerer on read-only previews -> token advantages A_out + λ·A_SNC on action tokens -> clipped
dual-clip surrogate + k3 KL, environment tokens masked -> optimiser steps (non-finite gradients skipped).
Checkpoints hold model, optimiser, scheduler, RNG and data position, so a resumed run continues exactly.

The parts live apart: the batch (training/batch.py), the update plan (training/update_plan.py), the step's metrics
(training/step_metrics.py), checkpoints and the data order (training/checkpoint.py), the data and the graph build
(training/data.py: ``harness-g train`` builds the graph before a Trainer exists; Python callers call
:func:`~harness_g.training.data.build_training_graph` first), rollout generators (training/generator_protocol.py,
training/generators.py) and the before/after evaluation (training/evaluation.py).
"""
from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import Any

import torch

from harness_g.agent.env.config import EnvConfig
from harness_g.errors import ConfigError
from harness_g.graph.types import QAItem
from harness_g.training import step_metrics as sm
from harness_g.training.advantages import compute_advantages, zero_advantage_stats
from harness_g.training.batch import build_batch, kept_rollouts, micro_batch, rows_index, zero_advantage_groups
from harness_g.training.chat import tail_logprobs
from harness_g.training.checkpoint import (DataOrder, RunState, export_policy, finish_checkpoint, keep_adapters_only,
                                           policy_settings, read_answerer_cache, write_answerer_cache)
from harness_g.training.collectives import concat_over_ranks, max_over_ranks, mean_over_ranks, sum_over_ranks
from harness_g.training.config import TrainConfig
from harness_g.training.context_budget import longest_reply, prompt_budget
from harness_g.training.credit import GROUP_SCHEMES, compute_credit, igpo_advantages, information_gains
from harness_g.training.data import HELDOUT_IDS
from harness_g.training.generator_protocol import RolloutGenerator
from harness_g.training.losses import policy_loss
from harness_g.training.precision import UpdateProbe, make_accelerator
from harness_g.training.resume import check_resume, truncate_logs
from harness_g.training.rollout import Rollout, collect_rollouts
from harness_g.training.snc_scoring import score_beliefs, score_rollouts
from harness_g.training.update_plan import (MiniBatch, MicroBatch, micro_batches, mini_batch_rows, pad_to_count,
                                            padded_tokens, pass_weights, question_starts, update_count)

#: the per-update loss statistics :meth:`Trainer._update` averages (attributes of ``policy_loss``'s result)
LOSS_KEYS = ("loss", "pg_loss", "kl", "clip_frac", "dual_clip_frac")


def _check_backend(accelerator: Any, config: TrainConfig) -> None:
    """Refuse launch backends whose semantics the update loop does not honour (rather than fail mid-step)."""
    from accelerate.utils import DistributedType

    kind = accelerator.distributed_type
    if kind == DistributedType.FSDP:
        # rollouts, π_old and the reference/answerer run the policy outside the wrapped forward, which needs the
        # full weights on every rank; gathering sharded weights for them is not wired yet
        raise ConfigError("FSDP is not supported yet (rollouts need the full policy weights on every rank); launch with "
                          "training/configs/accelerate/ddp.yaml or deepspeed_zero2.yaml")
    if kind == DistributedType.DEEPSPEED and config.optim.micro_batch_sequences:
        # DeepSpeed steps inside backward(), so accumulation across our micro-batches would step per micro-batch
        raise ConfigError("with DeepSpeed set optim.micro_batch_sequences = 0 (DeepSpeed steps inside backward; "
                          "use its own gradient accumulation for memory)")
    q, procs = config.rollout.questions_per_step, accelerator.num_processes
    if q % procs:  # the paper's batch (Table "Hyperparameter settings") counts questions over all processes
        raise ConfigError(f"rollout.questions_per_step ({q}) must be a multiple of the number of processes ({procs}): "
                          "each process plays an equal share of the step's questions")


class Trainer:
    """One training run in ``output_dir`` (metrics.jsonl, eval.jsonl, rollouts.jsonl, config.yaml, checkpoints).

    The graph ``config.data.graph_dir`` must exist before :meth:`train` (``harness-g train`` builds it from
    ``data.build_format``; Python callers call :func:`~harness_g.training.data.build_training_graph`). ``resume``:
    a ``RUN_DIR/checkpoints/<tag>`` directory to continue from exactly."""

    def __init__(self, config: TrainConfig, output_dir: str | Path, *, resume: str | Path | None = None, progress: bool = True):
        from accelerate.utils import set_seed

        self.config = config
        self.out = Path(output_dir)
        if resume is None and (self.out / "metrics.jsonl").exists():
            raise ConfigError(f"{self.out} already holds a training run; pass --resume CHECKPOINT or choose a new --out")
        self.out.mkdir(parents=True, exist_ok=True)
        self.progress = progress
        self.accelerator = make_accelerator(config.model.compute_dtype)
        _check_backend(self.accelerator, config)
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        self.resume_from = Path(resume) if resume else None
        # settings, files (manifest) and step count are checked before anything loads (training/resume.py)
        self.resume_state = check_resume(self.resume_from, config, processes=self.accelerator.num_processes) \
            if self.resume_from else None
        set_seed(config.seed, device_specific=True)  # rank r samples with seed + r (identical when single-process)
        model = self._prepare_model()
        r = config.rollout
        self.env_config = config.env_config()  # rollout.env under the run's preset, T from rollout.max_turns
        # the context must fit the model: prompt budget + the longest reply <= max positions
        self.prompt_budget = prompt_budget(r, getattr(getattr(model, "config", None), "max_position_embeddings", None))
        self.step = 0
        self.answerer: Any = None  # the frozen answerer of train() (its score cache goes into checkpoints)
        self.skipped_batches = 0
        self.order: DataOrder | None = None

    def _prepare_model(self) -> torch.nn.Module:
        """Load tokenizer, policy and its frozen reference; prepare model, AdamW and the warm-up schedule with
        Accelerate. Returns the policy as loaded (unwrapped)."""
        from harness_g.training.modeling import Reference, load_policy, load_tokenizer, torch_dtype

        config = self.config
        self.tokenizer = load_tokenizer(config.model)
        model = load_policy(config.model, self.tokenizer, config.seed)  # trainable weights in fp32 (master weights)
        self.reference = Reference(model, config.model.lora, torch_dtype(config.model.compute_dtype))
        params = [p for p in model.parameters() if p.requires_grad]
        # the fused CUDA kernel: one launch for every tensor (same maths as the default foreach implementation)
        fused = {"fused": True} if self.accelerator.device.type == "cuda" else {}
        optimizer = torch.optim.AdamW(params, lr=config.optim.lr, weight_decay=config.optim.weight_decay, **fused)
        warm = max(config.optim.warmup_steps, 0)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
        self.model, self.optimizer, self.scheduler = self.accelerator.prepare(model, optimizer, scheduler)
        if config.model.lora:  # resume state = the adapters, not the frozen base (training/checkpoint.py)
            keep_adapters_only(self.accelerator)
        if self.reference.model is not None:  # the frozen copy (KL reference, SNC answerer) lives beside the policy
            self.reference.model.to(self.accelerator.device)
        self.probe = UpdateProbe(self.accelerator.unwrap_model(self.model).parameters())
        return model

    # -- checkpoints ----------------------------------------------------------------------
    def save(self, tag: str | None = None) -> Path:
        """Resume state in ``RUN_DIR/checkpoints/<tag or step-N>`` and the policy, loadable like a Hugging Face
        checkpoint, in ``RUN_DIR/checkpoint-N`` (:mod:`harness_g.agent.llm.checkpoint`)."""
        path = self.out / "checkpoints" / (tag or f"step-{self.step:06d}")
        self.accelerator.save_state(str(path))
        if self.answerer is not None:  # each process's score cache: a resumed run scores what this one would have
            write_answerer_cache(path, self.accelerator.process_index, self.answerer.cache_state())
        self.accelerator.wait_for_everyone()  # every process's RNG state is written before the manifest lists it
        assert self.order is not None
        if self.accelerator.is_main_process:
            finish_checkpoint(path, RunState(self.step, *self.order.position, skipped_batches=self.skipped_batches),
                              self.config, processes=self.accelerator.num_processes)
            self.export_policy()
        self.accelerator.wait_for_everyone()
        return path

    def policy_settings(self) -> dict[str, Any]:
        """How this run plays its policy: what ``harness-g eval`` needs to run a checkpoint exactly as the trainer's
        own evaluation does (see :func:`harness_g.training.checkpoint.policy_settings`)."""
        return policy_settings(self.config, self.step, self.prompt_budget, self.env_config.to_dict())

    def export_policy(self) -> Path:
        """Write ``RUN_DIR/checkpoint-N`` (main process only). A LoRA run saves its adapter; over the offline
        tiny-random base (no hub id to reload it from) the frozen base weights are saved once to RUN_DIR/base-model."""
        m = self.config.model
        return export_policy(self.accelerator.unwrap_model(self.model), self.tokenizer, self.out, self.policy_settings(),
                             save_base=bool(m.lora and m.name == "tiny-random"))

    def _restore(self, path: Path) -> None:
        state = self.resume_state  # verified in __init__, before Accelerate reads anything
        assert state is not None
        self.accelerator.load_state(str(path))
        cache = read_answerer_cache(path, self.accelerator.process_index)
        if cache is not None and self.answerer is not None:
            self.answerer.load_cache_state(cache)
        self.step, self.skipped_batches = state.step, state.skipped_batches
        assert self.order is not None
        self.order.epoch, self.order.index = state.epoch, state.index

    # -- parts ------------------------------------------------------------------------------
    def _logprobs(self, forward: Any, batch: dict[str, torch.Tensor], passes: list[MicroBatch], out: torch.Tensor) -> None:
        """No-grad token log-probs of the rows of ``passes`` (one forward per micro-batch, each trimmed to its
        longest row) written into ``out`` [N, L]. One autocast region for all passes, so each weight is cast to the
        compute dtype once, not once per pass."""
        with torch.no_grad(), self.accelerator.autocast():
            for rows in passes:
                if rows:
                    sub, width = micro_batch(batch, rows)
                    out[rows_index(rows, out), :width] = tail_logprobs(forward, sub)

    def _make_generator(self, policy: torch.nn.Module) -> RolloutGenerator:
        """The ``rollout.generator`` registered in ``training/generators.py`` (transformers: sample with the policy
        itself; vllm: a colocated engine, sized for prompt budget + longest reply, synced after every update)."""
        from harness_g.training.generators import GENERATORS, GeneratorRequest
        from harness_g.training.prefix_cache import enabled as prefix_cache_enabled

        r = self.config.rollout
        request = GeneratorRequest(policy=policy, tokenizer=self.tokenizer, temperature=r.temperature, top_p=r.top_p,
                                   max_prompt_tokens=self.prompt_budget, max_new_tokens=longest_reply(r),
                                   seed=self.config.seed, workdir=self.out, engine=r.vllm,
                                   num_processes=self.accelerator.num_processes, autocast=self.accelerator.autocast,
                                   prefix_cache=prefix_cache_enabled(r))
        return GENERATORS.get(r.generator)(request)

    def _answerer_model(self) -> tuple[Any, Any]:
        """(forward, tokenizer) of SNC's frozen answerer g (``credit.answerer``). 'reference': the initial reference
        checkpoint, fixed throughout training (the paper's choice, appendix "Training objective and masking" and Table
        "Hyperparameter settings");
        anything else names a model loaded frozen, with its own tokenizer (and chat template)."""
        name = self.config.credit.answerer
        if name == "reference":
            return self.reference, self.tokenizer
        from harness_g.training.config import ModelConfig
        from harness_g.training.modeling import load_policy, load_tokenizer

        spec = ModelConfig(name=name, compute_dtype=self.config.model.compute_dtype, tiny_hidden=self.config.model.tiny_hidden,
                           tiny_layers=self.config.model.tiny_layers)
        tokenizer = load_tokenizer(spec)
        model = load_policy(spec, tokenizer, self.config.seed, trainable=False)
        model = model.to(self.accelerator.device).eval().requires_grad_(False)
        return model, tokenizer  # FrozenAnswerer scores under no_grad and finds the device from the module

    # -- main loop ------------------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        """Run ``optim.steps`` steps (from the resumed step), evaluating before and after; returns ``steps``,
        ``final_checkpoint``, ``last`` (the last step's metrics), ``skipped_batches``, ``heldout_ids`` (the file
        ``harness-g eval --question-ids`` reads: the run's held-out questions) and, when TensorBoard is on,
        ``tensorboard`` (the command that shows the curves)."""
        from harness_g.agent.env.session import open_view
        from harness_g.training.answerer import FrozenAnswerer
        from harness_g.training.data import check_split, require_graph, split_questions, split_record, write_split
        from harness_g.training.logger import MetricsLogger
        from harness_g.training.rollout import scorer_user_text
        from harness_g.training.sft import check_warm_start

        cfg = self.config
        require_graph(cfg)
        if self.accelerator.is_main_process:
            cfg.save(self.out / "config.yaml")
        unwrapped = self.accelerator.unwrap_model(self.model)
        generator = self._make_generator(unwrapped)
        answerer = FrozenAnswerer(*self._answerer_model(), scorer_user_text, max_aliases=cfg.credit.max_aliases)
        self.answerer = answerer  # its score cache is saved with every checkpoint and restored on resume
        resumed_at = self.resume_state.step if self.resume_state is not None else None
        if resumed_at is not None and self.accelerator.is_main_process:
            truncate_logs(self.out, resumed_at, cfg.optim.steps)  # a killed run's rows after the checkpoint: one row per step
        logger = MetricsLogger(self.out, tensorboard=cfg.log.tensorboard, wandb=cfg.log.wandb, config=cfg.to_dict(),
                               enabled=self.accelerator.is_main_process,
                               purge_step=resumed_at + 1 if resumed_at is not None else None)
        with open_view(cfg.data.graph_dir, cfg.data.store) as view:
            train_q, eval_q = split_questions(cfg, view)
            split = split_record(cfg, train_q, eval_q)
            check_warm_start(cfg.model.init_adapter, split["heldout"])  # a warm start never saw a held-out question
            if self.resume_from is not None:
                check_split(self.out, split)  # every rank, before any collective: all refuse together
            if self.accelerator.is_main_process:
                write_split(self.out, split)  # RUN_DIR/split.json, RUN_DIR/heldout_ids.txt
            self.order = DataOrder(len(train_q), cfg.seed)
            if self.resume_from is not None:
                self._restore(self.resume_from)
            generator.sync(unwrapped)  # the generator starts from the (possibly restored) policy weights
            eval_sets = {"heldout": eval_q, "train": train_q[: cfg.log.eval_train_questions]}
            if self.step == 0 and any(eval_sets.values()):
                self._evaluate(view, eval_sets, "before")
            history = self._loop(view, generator, answerer, logger, train_q)
            final = self.save("final")
            if any(eval_sets.values()):
                self._evaluate(view, eval_sets, "after")
            tb_dir = logger.tensorboard_dir
            logger.close()
        out = {"steps": self.step, "final_checkpoint": str(final), "last": history[-1] if history else {},
               "skipped_batches": self.skipped_batches, "heldout_ids": str(self.out / HELDOUT_IDS)}
        if tb_dir is not None:
            out["tensorboard"] = f"tensorboard --logdir {tb_dir}"
        return out

    def _loop(self, view: Any, generator: RolloutGenerator, answerer: Any, logger: Any, train_q: list[QAItem]) -> list[dict[str, Any]]:
        """Steps until ``optim.steps``: log, checkpoint, progress bar. Returns every step's (rank-averaged) metrics."""
        from tqdm.auto import tqdm

        cfg = self.config
        history = []
        bar = tqdm(total=cfg.optim.steps, initial=self.step, desc="train", unit="step",
                   disable=not self.progress or not self.accelerator.is_main_process)
        while self.step < cfg.optim.steps:
            metrics = mean_over_ranks(self.accelerator, self.train_step(view, generator, answerer, self._step_questions(train_q),
                                                                        self.env_config))
            self.step += 1
            history.append(metrics)
            if self.step % cfg.log.every == 0:
                logger.log(self.step, metrics)
            if cfg.log.save_every and self.step % cfg.log.save_every == 0:
                self.save()
            bar.update(1)
            bar.set_postfix(f1=f"{metrics['reward_f1']:.3f}", loss=f"{metrics['loss']:.4f}")
        bar.close()
        return history

    def _step_questions(self, train_q: list[QAItem]) -> list[QAItem]:
        """This process's questions for the next step: every rank draws the same global batch of
        ``questions_per_step`` questions (the paper's batch size, Table "Hyperparameter settings") from the shared
        order and plays its own equal slice of it."""
        assert self.order is not None
        rank, procs = self.accelerator.process_index, self.accelerator.num_processes
        q = self.config.rollout.questions_per_step // procs
        chunk = self.order.take(self.config.rollout.questions_per_step)
        return [train_q[i] for i in chunk[rank * q: (rank + 1) * q]]

    def train_step(self, view: Any, generator: RolloutGenerator, answerer: Any, items: list[QAItem],
                   env_cfg: EnvConfig) -> dict[str, Any]:
        """One step on this process's ``items``: rollouts, credit, the batch, the update, the generator sync.
        Returns the step's metrics (this process's; the loop averages them over processes)."""
        cfg, r = self.config, self.config.rollout
        t0 = time.perf_counter()
        rollouts, r_times = collect_rollouts(view, generator, items, r.group_size, env_cfg, max_action_tokens=r.max_action_tokens,
                                             max_answer_tokens=r.max_answer_tokens, constrain_actions=r.constrain_actions,
                                             interface=r.interface, max_observation_tokens=r.max_observation_tokens,
                                             context=r.context)
        t_rollout = time.perf_counter() - t0
        rewards = torch.tensor([ro.reward for ro in rollouts], dtype=torch.float32)
        groups = torch.tensor([ro.group for ro in rollouts])
        adv_out = compute_advantages(cfg.optim.estimator, rewards, groups)
        t1 = time.perf_counter()
        credits, turn_adv = self._credits(view, answerer, rollouts)
        t_snc = time.perf_counter() - t1
        keep = self._kept(rollouts, turn_adv)
        kept = [rollouts[i] for i in keep]
        batch, bstats = build_batch(kept, self.tokenizer, adv_out[torch.tensor(keep)], [credits[i] for i in keep],
                                    cfg.credit.lam, cfg.credit,
                                    gather=concat_over_ranks if self.accelerator.num_processes > 1 else None,
                                    turn_advantages=[turn_adv[i] for i in keep] if turn_adv is not None else None)
        batch["question"] = torch.tensor([kept[i].group for i in batch["owner"].tolist()])  # row -> its question
        # built on the CPU (tokenizer output); the update runs where the policy is (a GPU run crashed without this)
        batch = {k: v.to(self.accelerator.device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
        t2 = time.perf_counter()
        upd = self._update(batch)
        t_update = time.perf_counter() - t2
        t_sync = generator.sync(self.accelerator.unwrap_model(self.model))
        times = sm.StepTimes(t_rollout, t_snc, t_update, t_sync, time.perf_counter() - t0)
        if self.accelerator.is_main_process:
            from harness_g.training.logger import append_rollouts

            append_rollouts(self.out / "rollouts.jsonl", self.step + 1, rollouts[: cfg.log.keep_trajectories])
        return {**sm.outcome_metrics(rollouts), **upd, **sm.zero_advantage_metrics(zero_advantage_stats(rewards, groups)),
                **sm.equivalence_metrics(rollouts, cfg.credit.equivalence_jaccard, r.interface == "free-query"),
                **sm.action_metrics(rollouts), **sm.batch_metrics(batch["loss_mask"], kept, rollouts),
                **sm.credit_metrics(credits, sm.total_steps(rollouts)), **bstats, **sm.time_metrics(times, r_times),
                "answerer_calls": float(answerer.calls), "processes": float(self.accelerator.num_processes),
                "lr": float(self.scheduler.get_last_lr()[0])}

    def _credits(self, view: Any, answerer: Any, rollouts: list[Rollout]) -> tuple[list[list[float]], list[list[float]] | None]:
        """(per rollout, one step credit per executed turn; IGPO turn advantages or None). IGPO: the current policy's
        beliefs, no frozen answerer, no λ (its information gains are logged as the credits); SNC and its ablations:
        the frozen answerer on read-only previews; ``outcome`` or λ = 0: no credit."""
        cfg = self.config.credit
        if cfg.scheme in GROUP_SCHEMES:
            from harness_g.training.answerer import PolicyBelief
            from harness_g.training.rollout import scorer_user_text

            belief = PolicyBelief(self.accelerator.unwrap_model(self.model), self.tokenizer, scorer_user_text,
                                  max_aliases=cfg.max_aliases)
            beliefs, _ = score_beliefs(view, belief, rollouts)
            turn_adv = igpo_advantages(beliefs, [r.reward for r in rollouts], [r.group for r in rollouts], gamma=cfg.gamma,
                                       gain=cfg.igpo_gain)
            return [information_gains(b, cfg.igpo_gain) for b in beliefs], turn_adv
        if cfg.scheme != "outcome" and cfg.lam != 0.0:
            gains, _ = score_rollouts(view, answerer, rollouts, frontier_size=cfg.frontier_size, eps=cfg.dead_zone)
            return [[c.total for c in compute_credit(cfg.scheme, g, cfg.gamma)] for g in gains], None
        return [[0.0] * len(r.trajectory.steps) for r in rollouts], None

    def _kept(self, rollouts: list[Rollout], turn_adv: list[list[float]] | None) -> list[int]:
        """Indices of the rollouts to train on: all, or with ``optim.drop_zero_advantage_groups`` those outside the
        zero-advantage groups (whole groups, never single rollouts of a live group; all when every group is dead)."""
        if not self.config.optim.drop_zero_advantage_groups:
            return list(range(len(rollouts)))
        return kept_rollouts(rollouts, zero_advantage_groups([r.reward for r in rollouts], [r.group for r in rollouts], turn_adv))

    # -- the update -----------------------------------------------------------------------
    def _plan(self, questions: list[int], lengths: list[int]) -> list[MiniBatch]:
        """Mini-batches (one optimiser update each) as lists of micro-batches of row indices; ``questions``: the
        question id of every row (a question's rows contiguous, as :func:`~harness_g.training.batch.build_batch` lays
        them out), ``lengths``: every row's real tokens. See :mod:`harness_g.training.update_plan`.

        A mini-batch is all the sequences of ``optim.mini_batch_questions`` questions, counted over all processes:
        the paper's batch size / mini-batch 128 / 32 (Harness-G appendix "Implementation Details") give
        ceil(128 / 32) = 4 updates per step. Every rank cuts its own questions into that many near-even groups of
        whole questions, then each group into length-sorted passes (``optim.micro_batch_sequences``,
        ``optim.micro_batch_tokens``). DDP forwards and backwards are collective, so the update count comes from the
        global question count and every rank runs the most passes any rank needs (a rank with fewer gets empty
        passes, run at zero weight)."""
        cfg = self.config.optim
        starts = question_starts(questions)
        updates = update_count(sum_over_ranks(self.accelerator, len(starts)), cfg.mini_batch_questions)
        plan = [micro_batches(range(a, b), lengths, cfg.micro_batch_sequences, cfg.micro_batch_tokens)
                for a, b in mini_batch_rows(starts, len(questions), updates)]
        return pad_to_count(plan, max_over_ranks(self.accelerator, [len(mb) for mb in plan]))

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """Clipped-surrogate updates over one batch (keys and [N, L] shapes: :mod:`harness_g.training.batch`; an
        optional ``question`` [N] maps rows to questions, else each row is its own question). ``ppo_epochs`` passes
        over :meth:`_plan`'s mini-batches, one optimiser step each. Returns the mean of each of :data:`LOSS_KEYS`,
        ``grad_norm`` and ``param_update_frac`` over the steps taken, ``skipped_batches`` (run total),
        ``optimizer_steps``, ``pad_ratio`` (positions the training passes compute / real tokens in them) and the
        update's seconds by phase (``time_update_{ref,old,train,optim}_s``)."""
        cfg = self.config.optim
        n = batch["input_ids"].shape[0]
        questions = batch["question"].tolist() if "question" in batch else list(range(n))
        if len(questions) != n:
            raise ValueError(f"batch['question'] has {len(questions)} entries for {n} rows")
        lengths = batch["attention_mask"].sum(dim=1).tolist()
        plan = self._plan(questions, lengths)
        padded, real = padded_tokens(plan, lengths)
        clock = sm.PhaseClock(self.accelerator.device)
        old, have_old = self._old_logprobs(batch, plan)
        clock.lap("old")
        ref = None
        if cfg.kl_coef:
            ref = torch.zeros_like(batch["loss_mask"])
            self._logprobs(self.reference, batch, [mb for mini in plan for mb in mini], ref)
        clock.lap("ref")
        stats: dict[str, list[float]] = {k: [] for k in (*LOSS_KEYS, "grad_norm", "param_update_frac")}
        self.model.train()
        for _ in range(cfg.ppo_epochs):
            for passes in plan:
                acc = self._accumulate(batch, passes, old, have_old, ref)
                clock.lap("train")
                step = self._optimizer_step()
                clock.lap("optim")
                if step is None:
                    continue
                for k, v in acc.items():
                    stats[k].append(v)
                stats["grad_norm"].append(step[0])
                stats["param_update_frac"].append(step[1])

        def avg(xs: list[float]) -> float:
            return sum(xs) / len(xs) if xs else float("nan")

        return {**{k: avg(v) for k, v in stats.items()}, "skipped_batches": float(self.skipped_batches),
                "optimizer_steps": float(len(stats["loss"])), "pad_ratio": padded / real if real else float("nan"),
                **clock.metrics("time_update_")}

    def _old_logprobs(self, batch: dict[str, torch.Tensor], plan: list[MiniBatch]) -> tuple[torch.Tensor, torch.Tensor]:
        """(π_old log-probs [N, L], have_old [N] bool). π_old is only needed where the weights have already moved:
        with one PPO epoch, the first mini-batch's rows take it from their own (detached) forward in
        :meth:`_accumulate` (exact on-policy, a pass saved); every later row is scored now, before the first step."""
        old = torch.zeros_like(batch["loss_mask"])
        have_old = torch.zeros(batch["input_ids"].shape[0], dtype=torch.bool)
        later = plan[1:] if self.config.optim.ppo_epochs == 1 else plan
        passes = [mb for mini in later for mb in mini if mb]
        if passes:
            self._logprobs(self.accelerator.unwrap_model(self.model), batch, passes, old)
            have_old[[i for mb in passes for i in mb]] = True
        return old, have_old

    def _accumulate(self, batch: dict[str, torch.Tensor], passes: MiniBatch, old: torch.Tensor, have_old: torch.Tensor,
                    ref: torch.Tensor | None) -> dict[str, float]:
        """Forward + backward of one mini-batch's micro-batches (each trimmed to its longest row), each weighted by
        its share of the mini-batch's policy tokens over all processes (:func:`pass_weights`: the step is a token mean
        over the whole mini-batch, DAPO's token-level loss and verl's token-mean). Fills ``old``/``have_old`` in place
        for rows without π_old. Returns the token-weighted :data:`LOSS_KEYS` (the loop's mean over ranks of them is
        the update's token mean)."""
        cfg = self.config.optim
        mask = batch["loss_mask"]
        counts = [int(mask[rows_index(rows, mask)].sum()) if rows else 0 for rows in passes]
        weights = pass_weights(counts, sum_over_ranks(self.accelerator, sum(counts)), self.accelerator.num_processes)
        acc = dict.fromkeys(LOSS_KEYS, 0.0)
        for j, rows in enumerate(passes):
            empty = not rows
            rows = rows or [0]  # an empty pass still joins the collective, at weight 0
            idx = rows_index(rows, mask)
            sub, width = micro_batch(batch, rows)
            # DDP: all-reduce gradients once per optimiser step, not once per micro-batch
            sync = contextlib.nullcontext() if j == len(passes) - 1 else self.accelerator.no_sync(self.model)
            with sync:
                logp = tail_logprobs(self.model, sub)
                if not empty and not bool(have_old[rows].all()):  # exact on-policy: π_old = π_θ before this step
                    old[idx, :width] = logp.detach()
                    have_old[rows] = True
                out = policy_loss(logp, old[idx, :width], batch["advantages"][idx, :width], sub["loss_mask"],
                                  ref_logp=ref[idx, :width] if ref is not None else None, clip_eps=cfg.clip_eps,
                                  clip_eps_high=cfg.clip_eps_high, dual_clip=cfg.dual_clip, kl_coef=cfg.kl_coef)
                share = 0.0 if empty else weights[j]
                self.accelerator.backward(out.loss * share)
            for k in acc:
                acc[k] += float(getattr(out, k).detach()) * share
        return acc

    def _optimizer_step(self) -> tuple[float, float] | None:
        """Clip the gradient norm and step optimiser and scheduler; returns (gradient norm, fraction of the sampled
        trainable elements the step changed: :class:`~harness_g.training.precision.UpdateProbe`). A non-finite norm
        (global, so every rank agrees) rejects the batch before the optimiser sees it: counted in
        ``skipped_batches``, returns None."""
        norm = self.accelerator.clip_grad_norm_(self.model.parameters(), self.config.optim.max_grad_norm)
        norm_f = float(norm) if norm is not None else 0.0
        if not math.isfinite(norm_f):
            self.skipped_batches += 1
            self.optimizer.zero_grad(set_to_none=True)
            return None
        self.probe.before()
        self.optimizer.step()
        frac = self.probe.after()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return norm_f, frac

    # -- evaluation -----------------------------------------------------------------------
    def eval_policy(self) -> Any:
        """The greedy :class:`~harness_g.agent.policies.llm.LLMPolicy` over the current weights, built exactly as
        ``harness-g eval --policy transformers --model RUN_DIR/checkpoint-N`` builds it from this run's
        :meth:`policy_settings` (same backend class, options and, on CPU, one generation thread)."""
        from harness_g.agent.llm.transformers_backend import TransformersBackend
        from harness_g.agent.policies.llm import LLMPolicy

        model = self.accelerator.unwrap_model(self.model)
        on_cpu = next(model.parameters()).device.type == "cpu"
        backend = TransformersBackend.from_loaded(model, self.tokenizer, num_threads=1 if on_cpu else None)
        return LLMPolicy(backend, temperature=0.0, seed=0, **self.policy_settings()["policy"], name="policy")

    def _evaluate(self, view: Any, sets: dict[str, list[QAItem]], tag: str) -> None:
        """Greedy episodes on held-out and training questions (training/evaluation.py), appended to eval.jsonl as
        {tag, step, split, f1, em, ...}; a row names the checkpoint of this step when one was saved, whose
        ``harness-g eval --model`` reproduces it."""
        import json

        from harness_g.agent.eval.interfaces import make_interface
        from harness_g.training.evaluation import evaluate_sets

        runner = make_interface(self.config.rollout.interface, view, self.eval_policy(), self.env_config)
        rows = evaluate_sets(runner, sets, rank=self.accelerator.process_index, procs=self.accelerator.num_processes)
        checkpoint = self.out / f"checkpoint-{self.step}"
        if not self.accelerator.is_main_process:
            return
        with open(self.out / "eval.jsonl", "a", encoding="utf-8") as fh:
            for row in rows:
                extra = {"checkpoint": str(checkpoint)} if checkpoint.is_dir() else {}
                fh.write(json.dumps({"tag": tag, "step": self.step, **row, **extra}) + "\n")


def train(config: TrainConfig, output_dir: str | Path, *, resume: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Train ``config`` into ``output_dir`` (the graph must already exist: :func:`~harness_g.training.data.build_training_graph`).

    Ends with ``Accelerator.end_training`` (Accelerate: "should always be called at the end of your script"): it
    destroys the process group of a multi-process run, whose gloo threads otherwise meet interpreter shutdown (one
    CI run saw a rank abort at exit with "terminate called without an active exception" after training finished)."""
    trainer = Trainer(config, output_dir, resume=resume, progress=progress)
    try:
        return trainer.train()
    finally:
        trainer.accelerator.end_training()
