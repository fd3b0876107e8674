"""The GRPO + SNC training loop on Accelerate (paper Algorithm "Harness-G rollout and training").

One step: sample questions -> N_g rollouts each through the batched menu environment (graph store
queries) -> outcome reward (max token F1) -> group-normalised A_out -> SNC step credit from the frozen
answerer on read-only previews -> token advantages A_out + λ·A_SNC on action tokens -> clipped
dual-clip surrogate + k3 KL, environment tokens masked -> optimiser steps (non-finite gradients skipped).
Checkpoints hold model, optimiser, scheduler, RNG and data position, so a resumed run continues exactly.
"""
from __future__ import annotations

import contextlib
import json
import math
import random
import time
from pathlib import Path
from typing import Any

import torch

from harness_g.agent.config import EnvConfig
from harness_g.errors import ConfigError
from harness_g.graph.types import QAItem
from harness_g.training.advantages import combine_advantages, compute_advantages, zero_advantage_stats
from harness_g.training.chat import ANSWER_TURN, pad_batch, tail_logprobs
from harness_g.training.config import TrainConfig
from harness_g.training.credit import (GROUP_SCHEMES, compute_credit, igpo_advantages, igpo_step_advantage, information_gains,
                                       normalise_token_credits)
from harness_g.training.diagnostics import trajectory_group_diagnostics
from harness_g.training.losses import policy_loss
from harness_g.training.rollout import Generator, Rollout, collect_rollouts  # noqa: F401  (Generator: public API)
from harness_g.training.snc_scoring import score_beliefs, score_rollouts

STATE_FILE = "trainer_state.json"


def _questions(config: TrainConfig, view: Any) -> tuple[list[QAItem], list[QAItem]]:
    if config.data.questions:
        from harness_g.graph.readers import load_questions

        if not config.data.questions_format:
            raise ConfigError("data.questions needs data.questions_format")
        items = list(load_questions(config.data.questions_format, config.data.questions))
    else:
        items = view.artifact.questions()
    items = [q for q in items if q.answers]
    if config.data.limit:
        items = items[: config.data.limit]
    if not items:
        raise ConfigError(f"no training questions with answers in {config.data.graph_dir}")
    n_eval = min(config.data.eval_questions, len(items) - 1)
    train, held_out = (items[:-n_eval], items[-n_eval:]) if n_eval > 0 else (items, [])
    if config.data.train_questions:
        train = train[: config.data.train_questions]
    return train, held_out


class DataOrder:
    """Seeded epoch permutations; ``position`` (epoch, index) is saved in checkpoints."""

    def __init__(self, n: int, seed: int, epoch: int = 0, index: int = 0):
        self.n, self.seed, self.epoch, self.index = n, seed, epoch, index

    def _perm(self) -> list[int]:
        order = list(range(self.n))
        random.Random(self.seed * 100_003 + self.epoch).shuffle(order)
        return order

    def take(self, k: int) -> list[int]:
        out = []
        while len(out) < k:
            perm = self._perm()
            take = perm[self.index : self.index + (k - len(out))]
            out.extend(take)
            self.index += len(take)
            if self.index >= self.n:
                self.epoch, self.index = self.epoch + 1, 0
        return out


def build_batch(rollouts: list[Rollout], tokenizer: Any, outcome_adv: torch.Tensor, step_credits: list[list[float]], lam: float,
                credit_cfg: Any, gather: Any = None,
                turn_advantages: list[list[float]] | None = None) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """Sequences + token advantages: input_ids, attention_mask, position_ids, loss_mask (1 = policy token) and
    advantages, all [N, L] left-padded, plus ``tail``. N = every rollout's :meth:`Rollout.sequences` (multi-turn: one
    sequence per trajectory + the answer; markov: one per turn + the answer). The tokens of decision turn t's reply
    carry A_out + λ·A_SNC_t (harness-g.tex l.443, l.1217); the answer's tokens A_out only; environment tokens nothing. ``gather``: list -> the concatenation of that
    list over all processes, so the SNC scale is global to the whole batch (None when single-process).
    ``turn_advantages`` (IGPO arm, harness-g.tex l.1061): per rollout, its IGPO turn advantages
    (:func:`~harness_g.training.credit.igpo_advantages`); every policy token of a turn carries that turn's value
    instead of A_out + λ·A_SNC, with no SNC scale or clip."""
    seqs, owners = [], []
    for r_i, ro in enumerate(rollouts):
        for seq in ro.sequences(tokenizer):
            seqs.append(seq)
            owners.append(r_i)
    batch = pad_batch(seqs, tokenizer.pad_token_id)
    batch["owner"] = torch.tensor(owners, dtype=torch.long)  # row -> index of its rollout
    length = batch["input_ids"].shape[1]

    def per_token(values: list[list[float]]) -> torch.Tensor:  # left-padded like pad_batch
        out = torch.zeros_like(batch["loss_mask"])
        for i, vals in enumerate(values):
            out[i, length - len(vals) :] = torch.tensor(vals, dtype=torch.float32)
        return out

    if turn_advantages is not None:
        values = [[igpo_step_advantage(turn_advantages[r_i], t if t != ANSWER_TURN else None) if m else 0.0
                   for m, t in zip(seq.loss_mask, seq.turn_of)] for seq, r_i in zip(seqs, owners)]
        batch["advantages"] = per_token(values)
        flat = [v for vals in values for v in vals if v != 0.0]
        return batch, {"snc_scale": 1.0, "snc_nonzero_token_frac": len(flat) / max(1, int(batch["loss_mask"].sum())),
                       "snc_token_mean": sum(flat) / len(flat) if flat else 0.0, "sequences": float(len(seqs)),
                       "max_len": float(length)}
    # SNC credit of the step whose reply each policy token is (answer and environment tokens: none)
    raw_credit = [[step_credits[r_i][t] if m and 0 <= t < len(step_credits[r_i]) else 0.0
                   for m, t in zip(seq.loss_mask, seq.turn_of)] for seq, r_i in zip(seqs, owners)]
    local = [v for vals in raw_credit for v in vals if v != 0.0]
    norm = normalise_token_credits(raw_credit, s_min=credit_cfg.scale_floor, clip=credit_cfg.clip,
                                   pool=gather(local) if gather is not None else None)
    snc = per_token(norm.values)
    action = per_token([[1.0 if m and t != ANSWER_TURN else 0.0 for m, t in zip(seq.loss_mask, seq.turn_of)] for seq in seqs])
    outcome = outcome_adv[torch.tensor(owners)]
    batch["advantages"] = combine_advantages(outcome, snc, action, batch["loss_mask"], lam)
    stats = {"snc_scale": norm.scale, "snc_nonzero_token_frac": len(local) / max(1, int(batch["loss_mask"].sum())),
             "snc_token_mean": sum(local) / len(local) if local else 0.0, "sequences": float(len(seqs)),
             "max_len": float(length)}
    return batch, stats


def zero_advantage_groups(rewards: list[float], groups: list[int], turn_advantages: list[list[float]] | None = None) -> set[int]:
    """The groups ``optim.drop_zero_advantage_groups`` drops (DAPO dynamic sampling): those whose outcome advantages
    are all zero, i.e. whose rewards are all equal (within-group std below ZERO_STD, the paper's zero-advantage
    group, harness-g.tex l.1046; a group of one included). With IGPO ``turn_advantages``: those in which every
    turn advantage of every rollout is zero. A live group is always kept whole."""
    from harness_g.training.advantages import ZERO_STD

    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    out = set()
    for g, idx in members.items():
        if turn_advantages is not None:
            zero = not any(any(turn_advantages[i]) for i in idx)
        else:
            zero = float(torch.tensor([rewards[i] for i in idx], dtype=torch.float32).std(unbiased=False)) < ZERO_STD
        if zero:
            out.add(g)
    return out


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
    if q % procs:  # the paper's batch (harness-g.tex l.953) counts questions over all processes
        raise ConfigError(f"rollout.questions_per_step ({q}) must be a multiple of the number of processes ({procs}): "
                          "each process plays an equal share of the step's questions")


class Trainer:
    def __init__(self, config: TrainConfig, output_dir: str | Path, *, resume: str | Path | None = None, progress: bool = True):
        from accelerate import Accelerator
        from accelerate.utils import set_seed

        self.config = config
        self.out = Path(output_dir)
        if resume is None and (self.out / "metrics.jsonl").exists():
            raise ConfigError(f"{self.out} already holds a training run; pass --resume CHECKPOINT or choose a new --out")
        self.out.mkdir(parents=True, exist_ok=True)
        self.progress = progress
        self.accelerator = Accelerator()
        _check_backend(self.accelerator, config)
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        set_seed(config.seed, device_specific=True)  # rank r samples with seed + r (identical when single-process)
        from harness_g.training.modeling import Reference, load_policy, load_tokenizer

        self.tokenizer = load_tokenizer(config.model)
        model = load_policy(config.model, self.tokenizer, config.seed)
        self.reference = Reference(model, config.model.lora)
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=config.optim.lr, weight_decay=config.optim.weight_decay)
        warm = max(config.optim.warmup_steps, 0)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warm) if warm else 1.0)
        self.model, self.optimizer, self.scheduler = self.accelerator.prepare(model, optimizer, scheduler)
        r = config.rollout
        self.env_config = EnvConfig.from_dict({**r.env, "max_turns": r.max_turns})
        # the context must fit the model: prompt budget + the longest reply <= max positions
        new_tokens = max(r.max_action_tokens, r.max_answer_tokens)
        limit = getattr(getattr(model, "config", None), "max_position_embeddings", None) or r.max_prompt_tokens + new_tokens
        self.prompt_budget = min(r.max_prompt_tokens, limit - new_tokens)
        self.step = 0
        self.skipped_batches = 0
        self.order: DataOrder | None = None
        self.resume_from = Path(resume) if resume else None

    # -- checkpoints ----------------------------------------------------------------------
    def save(self, tag: str | None = None) -> Path:
        """Resume state in ``RUN_DIR/checkpoints/<tag or step-N>`` and the policy, loadable like a Hugging Face
        checkpoint, in ``RUN_DIR/checkpoint-N`` (:mod:`harness_g.agent.llm.checkpoint`)."""
        path = self.out / "checkpoints" / (tag or f"step-{self.step:06d}")
        self.accelerator.save_state(str(path))
        assert self.order is not None
        state = {"step": self.step, "epoch": self.order.epoch, "index": self.order.index, "skipped_batches": self.skipped_batches}
        if self.accelerator.is_main_process:
            (path / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
            self.export_policy()
        self.accelerator.wait_for_everyone()
        return path

    def policy_settings(self) -> dict[str, Any]:
        """How this run plays its policy: what ``harness-g eval`` needs to run a checkpoint exactly as the trainer's
        own evaluation does (see :mod:`harness_g.agent.llm.checkpoint`)."""
        cfg, r, m = self.config, self.config.rollout, self.config.model
        return {"step": self.step, "base_model": m.name, "gguf_file": m.gguf_file, "lora": m.lora, "dtype": m.dtype,
                "policy": {"max_new_tokens": r.max_action_tokens, "max_answer_tokens": r.max_answer_tokens,
                           "constrain_actions": r.constrain_actions, "context": r.context,
                           "max_context_tokens": self.prompt_budget},
                "interface": r.interface, "env": self.env_config.to_dict(), "graph_dir": str(cfg.data.graph_dir)}

    def export_policy(self) -> Path:
        """Write ``RUN_DIR/checkpoint-N`` (main process only). A LoRA run saves its adapter; over the offline
        tiny-random base (no hub id to reload it from) the frozen base weights are saved once to RUN_DIR/base-model."""
        from harness_g.agent.llm.checkpoint import write_policy_checkpoint

        model = self.accelerator.unwrap_model(self.model)
        settings = self.policy_settings()
        if self.config.model.lora and self.config.model.name == "tiny-random":
            import copy

            base_dir = self.out / "base-model"
            if not (base_dir / "config.json").is_file():
                copy.deepcopy(model).unload().save_pretrained(base_dir)  # adapters removed, not merged: the initial weights
                self.tokenizer.save_pretrained(base_dir)
            settings["base_model"] = str(base_dir.resolve())
        return write_policy_checkpoint(model, self.tokenizer, self.out / f"checkpoint-{self.step}", settings)

    def _restore(self, path: Path) -> None:
        if not (path / STATE_FILE).exists():
            raise ConfigError(f"{path}: not a harness-g checkpoint (no {STATE_FILE})")
        self.accelerator.load_state(str(path))
        state = json.loads((path / STATE_FILE).read_text(encoding="utf-8"))
        self.step = int(state["step"])
        self.skipped_batches = int(state.get("skipped_batches", 0))
        assert self.order is not None
        self.order.epoch, self.order.index = int(state["epoch"]), int(state["index"])

    # -- logprobs -------------------------------------------------------------------------
    def _logprobs(self, forward: Any, batch: dict[str, torch.Tensor], mb: int, start: int = 0) -> torch.Tensor:
        """No-grad token log-probs [n − start, L] of rows start.. of the batch, mb rows per forward."""
        outs = []
        with torch.no_grad():
            for s in range(start, batch["input_ids"].shape[0], mb):
                outs.append(tail_logprobs(forward, batch, slice(s, s + mb)))
        return torch.cat(outs)

    def _mean_over_ranks(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Per-step metrics averaged over processes (a key missing on a rank counts as 0 there, e.g. an action
        type no rollout of that rank took); single-process runs return ``metrics`` unchanged."""
        if self.accelerator.num_processes == 1:
            return metrics
        from accelerate.utils import gather_object

        per_rank = gather_object([metrics])
        keys = sorted({k for m in per_rank for k in m})
        return {k: sum(float(m.get(k, 0.0)) for m in per_rank) / len(per_rank) for k in keys}

    def _concat_over_ranks(self, values: list[float]) -> list[float]:
        from accelerate.utils import gather_object

        return [v for part in gather_object([values]) for v in part]

    def _make_generator(self, policy: Any) -> Any:
        """transformers: sample with the policy itself; vllm: a colocated engine synced after every update."""
        r = self.config.rollout
        prompt_budget = self.prompt_budget
        if r.generator == "transformers":
            return Generator(policy, self.tokenizer, temperature=r.temperature, top_p=r.top_p, max_prompt_tokens=prompt_budget)
        from harness_g.training.vllm_generator import VLLMGenerator, export_for_engine

        if self.accelerator.num_processes > 1:  # each rank would start its own engine on the default device
            raise ConfigError("rollout.generator vllm runs single-process for now (one colocated engine); "
                              "launch with one process, or use rollout.generator transformers for multi-process runs")
        source = export_for_engine(policy, self.tokenizer, self.out / "vllm-init")
        engine = {"max_model_len": prompt_budget + max(r.max_action_tokens, r.max_answer_tokens), **r.vllm}
        return VLLMGenerator(source, self.tokenizer, temperature=r.temperature, top_p=r.top_p,
                             max_prompt_tokens=prompt_budget, seed=self.config.seed, **engine)

    def _answerer_model(self) -> tuple[Any, Any]:
        """(forward, tokenizer) of SNC's frozen answerer g (``credit.answerer``). 'reference': the initial reference
        checkpoint, fixed throughout training (the paper's choice, harness-g.tex l.912 and Table tab:hyper l.975);
        anything else names a model loaded frozen, with its own tokenizer (and chat template)."""
        name = self.config.credit.answerer
        if name == "reference":
            return self.reference, self.tokenizer
        from harness_g.training.config import ModelConfig
        from harness_g.training.modeling import load_policy, load_tokenizer

        spec = ModelConfig(name=name, dtype=self.config.model.dtype, tiny_hidden=self.config.model.tiny_hidden,
                           tiny_layers=self.config.model.tiny_layers)
        tokenizer = load_tokenizer(spec)
        model = load_policy(spec, tokenizer, self.config.seed).to(self.accelerator.device).eval().requires_grad_(False)
        return model, tokenizer  # FrozenAnswerer scores under no_grad and finds the device from the module

    # -- main loop ------------------------------------------------------------------------
    def train(self) -> dict[str, Any]:
        from harness_g.agent.session import open_graph
        from harness_g.training.rollout import scorer_user_text
        from harness_g.training.answerer import FrozenAnswerer
        from harness_g.training.logger import MetricsLogger

        cfg = self.config
        if self.accelerator.is_main_process:
            cfg.save(self.out / "config.yaml")
        env_cfg = self.env_config
        unwrapped = self.accelerator.unwrap_model(self.model)
        generator = self._make_generator(unwrapped)
        answerer = FrozenAnswerer(*self._answerer_model(), scorer_user_text, max_aliases=cfg.credit.max_aliases)
        logger = MetricsLogger(self.out, tensorboard=cfg.log.tensorboard, wandb=cfg.log.wandb, config=cfg.to_dict(),
                               enabled=self.accelerator.is_main_process)
        history = []
        if cfg.data.build_format:
            from harness_g.graph.build import CorpusSpec, build_graph

            if not cfg.data.build_input:
                raise ConfigError("data.build_format needs data.build_input")
            with self.accelerator.main_process_first():  # one rank builds; the others then hit its cache
                build_graph([CorpusSpec(cfg.data.build_format, Path(cfg.data.build_input))], cfg.data.graph_dir, progress=False)
        with open_graph(cfg.data.graph_dir, cfg.data.store) as view:
            train_q, eval_q = _questions(cfg, view)
            self.order = DataOrder(len(train_q), cfg.seed)
            if self.resume_from is not None:
                self._restore(self.resume_from)
            if hasattr(generator, "sync"):
                generator.sync(unwrapped)  # the engine starts from the (possibly restored) policy weights
            from tqdm.auto import tqdm

            eval_sets = {"heldout": eval_q, "train": train_q[: cfg.log.eval_train_questions]}
            if self.step == 0 and any(eval_sets.values()):
                self._evaluate(view, generator, env_cfg, eval_sets, "before")
            bar = tqdm(total=cfg.optim.steps, initial=self.step, desc="train", unit="step",
                       disable=not self.progress or not self.accelerator.is_main_process)
            while self.step < cfg.optim.steps:
                # every rank draws the same global batch of questions_per_step questions (the paper's batch size,
                # harness-g.tex l.953) from the shared order and plays its own equal slice of it
                rank = self.accelerator.process_index
                q = cfg.rollout.questions_per_step // self.accelerator.num_processes
                chunk = self.order.take(cfg.rollout.questions_per_step)
                items = [train_q[i] for i in chunk[rank * q : (rank + 1) * q]]
                metrics = self._mean_over_ranks(self.train_step(view, generator, answerer, items, env_cfg))
                self.step += 1
                history.append(metrics)
                if self.step % cfg.log.every == 0:
                    logger.log(self.step, metrics)
                if cfg.log.save_every and self.step % cfg.log.save_every == 0:
                    self.save()
                bar.update(1)
                bar.set_postfix(f1=f"{metrics['reward_f1']:.3f}", loss=f"{metrics['loss']:.4f}")
            bar.close()
            final = self.save("final")
            if any(eval_sets.values()):
                self._evaluate(view, generator, env_cfg, eval_sets, "after")
            tb_dir = logger.tensorboard_dir
            logger.close()
        out = {"steps": self.step, "final_checkpoint": str(final), "last": history[-1] if history else {},
               "skipped_batches": self.skipped_batches}
        if tb_dir is not None:
            out["tensorboard"] = f"tensorboard --logdir {tb_dir}"
        return out

    def train_step(self, view: Any, generator: Generator, answerer: Any, items: list[QAItem], env_cfg: EnvConfig) -> dict[str, Any]:
        cfg = self.config
        t0 = time.perf_counter()
        rollouts, r_times = collect_rollouts(view, generator, items, cfg.rollout.group_size, env_cfg,
                                             max_action_tokens=cfg.rollout.max_action_tokens,
                                             max_answer_tokens=cfg.rollout.max_answer_tokens,
                                             constrain_actions=cfg.rollout.constrain_actions, interface=cfg.rollout.interface,
                                             max_observation_tokens=cfg.rollout.max_observation_tokens,
                                             context=cfg.rollout.context)
        t_rollout = time.perf_counter() - t0
        rewards = torch.tensor([r.reward for r in rollouts], dtype=torch.float32)
        groups = torch.tensor([r.group for r in rollouts])
        adv_out = compute_advantages(cfg.optim.estimator, rewards, groups)
        zstats = zero_advantage_stats(rewards, groups)

        t1 = time.perf_counter()
        snc_stats: dict[str, float] = {"snc_s": 0.0}
        turn_adv: list[list[float]] | None = None
        if cfg.credit.scheme in GROUP_SCHEMES:  # IGPO: the current policy's beliefs, no frozen answerer, no λ
            from harness_g.training.answerer import PolicyBelief
            from harness_g.training.rollout import scorer_user_text

            belief = PolicyBelief(self.accelerator.unwrap_model(self.model), self.tokenizer, scorer_user_text,
                                  max_aliases=cfg.credit.max_aliases)
            beliefs, snc_stats = score_beliefs(view, belief, rollouts)
            turn_adv = igpo_advantages(beliefs, [r.reward for r in rollouts], [r.group for r in rollouts], gamma=cfg.credit.gamma)
            credits = [information_gains(b) for b in beliefs]  # logged as snc_credit_*
        elif cfg.credit.scheme != "outcome" and cfg.credit.lam != 0.0:
            gains, snc_stats = score_rollouts(view, answerer, rollouts, frontier_size=cfg.credit.frontier_size,
                                              eps=cfg.credit.dead_zone)
            credits = [[c.total for c in compute_credit(cfg.credit.scheme, g, cfg.credit.gamma)] for g in gains]
        else:
            credits = [[0.0] * len(r.trajectory.steps) for r in rollouts]
        t_snc = time.perf_counter() - t1

        keep = list(range(len(rollouts)))
        if cfg.optim.drop_zero_advantage_groups:  # whole groups, never single rollouts of a live group
            dropped = zero_advantage_groups([r.reward for r in rollouts], [r.group for r in rollouts], turn_adv)
            keep = [i for i in keep if rollouts[i].group not in dropped] or keep
        kept = [rollouts[i] for i in keep]
        batch, bstats = build_batch(kept, self.tokenizer, adv_out[torch.tensor(keep)], [credits[i] for i in keep],
                                    cfg.credit.lam, cfg.credit,
                                    gather=self._concat_over_ranks if self.accelerator.num_processes > 1 else None,
                                    turn_advantages=[turn_adv[i] for i in keep] if turn_adv is not None else None)
        batch["question"] = torch.tensor([kept[i].group for i in batch["owner"].tolist()])  # row -> its question
        t2 = time.perf_counter()
        upd = self._update(batch)
        t_update = time.perf_counter() - t2
        t_sync = generator.sync(self.accelerator.unwrap_model(self.model)) if hasattr(generator, "sync") else 0.0

        group_ids = sorted(set(int(x) for x in groups))
        free = cfg.rollout.interface == "free-query"
        # E(tau): union of LOOKUP results over retrieval turns t >= 1, last step included (training/diagnostics.py)
        equiv = trajectory_group_diagnostics([[r.trajectory for r in rollouts if r.group == g] for g in group_ids],
                                             threshold=cfg.credit.equivalence_jaccard,
                                             queries=[[q for r in rollouts if r.group == g for q in r.queries] for g in group_ids] if free else None)
        steps_taken = [len(r.trajectory.steps) for r in rollouts]
        invalid = sum(r.trajectory.invalid_turns for r in rollouts)
        action_counts: dict[str, int] = {}
        for r in rollouts:
            for s in r.trajectory.steps:
                action_counts[s.action_type or "INVALID"] = action_counts.get(s.action_type or "INVALID", 0) + 1
        total_steps = max(1, sum(steps_taken))
        response_tokens = float(batch["loss_mask"].sum()) / max(1, len(kept))
        nonzero_credit = [c for cs in credits for c in cs if c != 0.0]
        total = time.perf_counter() - t0
        self._dump_rollouts(rollouts[: cfg.log.keep_trajectories])
        return {
            "reward_f1": float(rewards.mean()), "em": float(sum(r.em for r in rollouts) / len(rollouts)),
            **upd, "zero_adv_frac": zstats.zero, "zero_adv_all_wrong": zstats.all_wrong, "zero_adv_all_correct": zstats.all_correct,
            "d_ret": equiv.d_ret, "mean_n_eq": equiv.mean_n_eq, **({"d_query": equiv.d_query} if free else {}),
            "turns": sum(steps_taken) / len(steps_taken), "invalid_action_frac": invalid / total_steps,
            **{f"action_frac_{k}": v / total_steps for k, v in sorted(action_counts.items())},
            "response_tokens": response_tokens,
            "snc_credit_mean": sum(nonzero_credit) / len(nonzero_credit) if nonzero_credit else 0.0,
            "snc_credit_nonzero_frac": len(nonzero_credit) / total_steps, **bstats,
            "time_rollout_s": t_rollout, "time_generate_s": r_times["generate_s"], "time_env_s": r_times["env_s"],
            **{k: r_times[k] for k in ("observation_tokens_max", "observations_over_budget") if k in r_times},
            "dropped_groups": float(len({r.group for r in rollouts}) - len({r.group for r in kept})),
            "time_snc_s": t_snc, "time_update_s": t_update, "time_sync_s": t_sync, "time_total_s": total, "snc_share": t_snc / total if total else 0.0,
            "answerer_calls": float(answerer.calls), "processes": float(self.accelerator.num_processes), "lr": float(self.scheduler.get_last_lr()[0]),
        }

    def _max_over_ranks(self, values: list[int]) -> list[int]:
        """Element-wise max of an equal-length int list across processes (identity when single-process)."""
        if self.accelerator.num_processes == 1:
            return values
        t = torch.tensor(values, dtype=torch.long, device=self.accelerator.device)
        return self.accelerator.gather(t).view(self.accelerator.num_processes, -1).max(0).values.tolist()

    def _sum_over_ranks(self, value: int) -> int:
        """Sum of an int over processes (identity when single-process)."""
        if self.accelerator.num_processes == 1:
            return value
        t = torch.tensor([value], dtype=torch.long, device=self.accelerator.device)
        return int(self.accelerator.gather(t).sum())

    def _plan(self, questions: list[int]) -> list[list[slice]]:
        """Mini-batches (one optimiser update each) as lists of micro-batch row slices; ``questions``: the question
        id of every row (a question's rows contiguous, as :func:`build_batch` lays them out).

        A mini-batch is all the sequences of ``optim.mini_batch_questions`` questions, counted over all processes:
        the paper's batch size / mini-batch 128 / 32 (harness-g.tex l.953) give ceil(128 / 32) = 4 updates per step.
        Every rank cuts its own questions into that many near-even groups of whole questions.

        Ranks hold different numbers of sequences (rollouts differ in turns), but DDP/FSDP forwards and
        backwards are collective: every rank must run the same number of steps and micro-batches. So the
        update count comes from the global question count, micro-batch counts are the max over ranks, and a rank
        with fewer rows gets empty slices, which :meth:`_update` runs as zero-weight passes.
        """
        cfg = self.config.optim
        n = len(questions)
        starts = [i for i in range(n) if i == 0 or questions[i] != questions[i - 1]]
        if len(set(questions)) != len(starts):
            raise ValueError("the rows of each question must be contiguous in the batch")
        edges = starts + [n]
        k = max(1, math.ceil(self._sum_over_ranks(len(starts)) / cfg.mini_batch_questions))
        cuts = [round(i * len(starts) / k) for i in range(k + 1)]
        chunks = [(edges[cuts[i]], edges[cuts[i + 1]]) for i in range(k)]
        micro = cfg.micro_batch_sequences
        counts = self._max_over_ranks([max(1, math.ceil((b - a) / micro)) if micro else 1 for a, b in chunks])
        plan = []
        for (a, b), m in zip(chunks, counts):
            size = max(1, math.ceil((b - a) / m))
            plan.append([slice(min(a + j * size, b), min(a + (j + 1) * size, b)) for j in range(m)])
        return plan

    def _update(self, batch: dict[str, torch.Tensor]) -> dict[str, float]:
        """Clipped-surrogate updates over one rollout batch (see :meth:`_plan` for how it is cut).

        Micro-batch gradients accumulate with weights = their share of the mini-batch's policy tokens, so a
        step equals a token-mean over the whole mini-batch. π_old log-probs are only needed where the weights
        have already moved: in the first epoch, rows of the first mini-batch take them from their own
        (detached) forward, which is exact on-policy and saves a pass; later rows are scored before the first step.
        """
        cfg = self.config.optim
        n = batch["input_ids"].shape[0]
        # row -> question id (build_batch's layout); a hand-built batch without one counts each row as a question
        questions = batch["question"].tolist() if "question" in batch else list(range(n))
        if len(questions) != n:
            raise ValueError(f"batch['question'] has {len(questions)} entries for {n} rows")
        plan = self._plan(questions)
        micro = max((s.stop - s.start for mb in plan for s in mb), default=1) or 1
        scorer = self.accelerator.unwrap_model(self.model)  # no-grad passes need no collectives
        start = plan[0][-1].stop if cfg.ppo_epochs == 1 else 0
        old = torch.zeros_like(batch["loss_mask"])
        if start < n:
            old[start:] = self._logprobs(scorer, batch, micro, start=start)
        have_old = torch.arange(n) >= start
        ref = self._logprobs(self.reference, batch, micro) if cfg.kl_coef else None
        keys = ("loss", "pg_loss", "kl", "clip_frac", "dual_clip_frac")
        stats: dict[str, list[float]] = {k: [] for k in (*keys, "grad_norm")}
        self.model.train()
        for _ in range(cfg.ppo_epochs):
            for slices in plan:
                tokens = float(sum(batch["loss_mask"][sl].sum() for sl in slices)) or 1.0
                acc = dict.fromkeys(keys, 0.0)
                for j, sl in enumerate(slices):
                    empty = sl.stop <= sl.start
                    rows = slice(0, 1) if empty else sl  # an empty slice still joins the collective, at weight 0
                    # DDP/FSDP: all-reduce gradients once per optimiser step, not once per micro-batch
                    sync = contextlib.nullcontext() if j == len(slices) - 1 else self.accelerator.no_sync(self.model)
                    with sync:
                        logp = tail_logprobs(self.model, batch, rows)
                        if not empty and not bool(have_old[rows].all()):  # exact on-policy: π_old = π_θ before this step
                            old[rows] = logp.detach()
                            have_old[rows] = True
                        out = policy_loss(logp, old[rows], batch["advantages"][rows], batch["loss_mask"][rows],
                                          ref_logp=ref[rows] if ref is not None else None, clip_eps=cfg.clip_eps,
                                          clip_eps_high=cfg.clip_eps_high, dual_clip=cfg.dual_clip, kl_coef=cfg.kl_coef)
                        share = 0.0 if empty else float(batch["loss_mask"][rows].sum()) / tokens
                        self.accelerator.backward(out.loss * share)
                    for k in acc:
                        acc[k] += float(getattr(out, k).detach()) * share
                norm = self.accelerator.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
                norm_f = float(norm) if norm is not None else 0.0
                if not math.isfinite(norm_f):  # the norm is global, so every rank skips together
                    self.skipped_batches += 1  # reject the batch before the optimiser sees it
                    self.optimizer.zero_grad(set_to_none=True)
                    continue
                self.optimizer.step()
                self.scheduler.step()
                self.optimizer.zero_grad(set_to_none=True)
                for k, v in acc.items():
                    stats[k].append(v)
                stats["grad_norm"].append(norm_f)

        def avg(xs: list[float]) -> float:
            return sum(xs) / len(xs) if xs else float("nan")

        return {**{k: avg(v) for k, v in stats.items()}, "skipped_batches": float(self.skipped_batches),
                "optimizer_steps": float(len(stats["loss"]))}

    def eval_policy(self) -> Any:
        """The greedy :class:`~harness_g.agent.llm.policy.LLMPolicy` over the current weights, built exactly as
        ``harness-g eval --policy transformers --model RUN_DIR/checkpoint-N`` builds it from this run's
        :meth:`policy_settings` (same backend class, options and, on CPU, one generation thread)."""
        from harness_g.agent.llm.policy import LLMPolicy
        from harness_g.agent.llm.transformers_backend import TransformersBackend

        model = self.accelerator.unwrap_model(self.model)
        on_cpu = next(model.parameters()).device.type == "cpu"
        backend = TransformersBackend.from_loaded(model, self.tokenizer, num_threads=1 if on_cpu else None)
        return LLMPolicy(backend, temperature=0.0, seed=0, **self.policy_settings()["policy"], name="policy")

    def _evaluate(self, view: Any, generator: Any, env_cfg: EnvConfig, sets: dict[str, list[QAItem]], tag: str) -> None:
        """Greedy episodes on held-out and training questions; appended to eval.jsonl as {tag, split, f1, em, ...}.

        The episodes run through ``harness-g eval``'s own path (:meth:`eval_policy` + the interface runner, one
        question at a time), so evaluating ``RUN_DIR/checkpoint-N`` with ``harness-g eval`` reproduces these numbers.
        Multi-process: every process plays its own contiguous share of each set and the per-question results are
        gathered in order, so rank 0 reports the same numbers as a single process would (each question played once)."""
        from harness_g.agent.interfaces import make_interface
        from harness_g.agent.metrics import exact_match, token_f1

        procs, rank = self.accelerator.num_processes, self.accelerator.process_index
        runner = make_interface(self.config.rollout.interface, view, self.eval_policy(), env_cfg)
        for split, items in sets.items():
            if not items:
                continue
            mine = items[round(rank * len(items) / procs) : round((rank + 1) * len(items) / procs)]
            results = []
            for item in mine:
                traj = runner.run(item)
                answer, gold = traj.answer or "", list(item.answers)
                results.append((token_f1(answer, gold), exact_match(answer, gold), len(traj.steps), traj.invalid_turns,
                                [item.question, answer, gold, item.id]))
            parts = [results]
            if procs > 1:
                from accelerate.utils import gather_object

                parts = gather_object([results])  # rank order = item order
            results = [x for part in parts for x in part]
            n, turns = len(results), sum(x[2] for x in results)
            row = {"tag": tag, "step": self.step, "split": split, "questions": n, "process_questions": [len(p) for p in parts],
                   "f1": sum(x[0] for x in results) / n, "em": sum(x[1] for x in results) / n, "turns": turns / n,
                   "invalid_action_frac": sum(x[3] for x in results) / max(1, turns),
                   "answers": [x[4] for x in results]}
            if (self.out / f"checkpoint-{self.step}").is_dir():  # `harness-g eval --model` of it reproduces this row
                row["checkpoint"] = str(self.out / f"checkpoint-{self.step}")
            if self.accelerator.is_main_process:
                with open(self.out / "eval.jsonl", "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row) + "\n")

    def _dump_rollouts(self, rollouts: list[Rollout]) -> None:
        if not self.accelerator.is_main_process or not rollouts:
            return
        with open(self.out / "rollouts.jsonl", "a", encoding="utf-8") as fh:
            for r in rollouts:
                fh.write(json.dumps({"step": self.step + 1, "question": r.item.question, "answers": list(r.item.answers),
                                     "answer": r.answer, "reward": r.reward,
                                     "actions": [(s.reply, s.action_type, s.error) for s in r.trajectory.steps],
                                     **({"queries": r.queries} if r.queries else {})}) + "\n")


def train(config: TrainConfig, output_dir: str | Path, *, resume: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    return Trainer(config, output_dir, resume=resume, progress=progress).train()
