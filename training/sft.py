"""Oracle-demonstration SFT warm start (``harness-g sft``): ours, not the paper's.

harness-g.tex trains GRPO from the base checkpoint (section "Method", "Integration with GRPO"; no supervised stage).
A 135M policy starting there rarely LOOKUPs (``benchmarks/results/repro_small``: ~0.35 per rollout), so outcome
groups are mostly all-wrong and GRPO has little to learn from. This module gives users the usual remedy as a named,
recorded switch: a short supervised fine-tune on trajectories of the privileged oracle policy
(:mod:`harness_g.agent.policies.oracle`), written as a LoRA adapter that a GRPO run then starts from
(``model.init_adapter``; the KL reference and the frozen answerer are the warm-started model).

A demonstration is played exactly as a GRPO rollout is (:func:`harness_g.training.rollout.collect_rollouts`): the
run's environment, interface, context mode, prompt budget and reply token limits, token-in, token-out. Only the
generator differs: :class:`ScriptedGenerator` replies with the teacher's text instead of sampling. So the SFT trains
the very token sequences (:meth:`Rollout.sequences`, replies and their end-of-turn token) GRPO later trains.

What the teacher writes (:class:`OracleTeacher`), and the readings chosen:

- menu arm: the oracle's action id;
- free-query arm (the transition-matched arm has no ids): the oracle's move by handle (``SELECT S2``,
  ``ANSWER_WITH S1 S3``, ``ANSWER``), and for its LOOKUP ``SEARCH: <the target entity's surface form>``, the text the
  arm's frozen resolver ranks; the resolver may map it to another target, and :func:`demonstration_stats` counts
  how often the executed action was the oracle's (``agreement``);
- the answer turn: the question's first gold answer (the oracle's own answer is an extractive heuristic);
- a reply longer than the run's token limit (``rollout.max_action_tokens``, ``max_answer_tokens``) is cut there
  exactly as a sampled one would be (no end-of-turn token) and counted in ``cut_replies``.

Only the run's training split is demonstrated (``data.*`` as in ``harness-g train``), and ``sft.json`` lists the
questions used; a GRPO run warm-started from the adapter refuses to start when one of them is in its held-out set
(:func:`check_warm_start`).
"""
from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import torch

from harness_g.agent.env.actions import Action, ActionType
from harness_g.agent.env.protocol import Environment
from harness_g.agent.llm.backends import Conversation, Generation
from harness_g.agent.llm.context import render_chat
from harness_g.config_loader import Config
from harness_g.config_loader import config_field as _f
from harness_g.errors import ConfigError, HarnessError
from harness_g.graph.types import QAItem
from harness_g.training.tito import TokenContinuations

#: what ``harness-g sft`` writes beside the adapter: settings, question ids, demonstration stats, losses
SFT_FILE = "sft.json"


@dataclass(frozen=True)
class SFTConfig(Config):
    """The supervised warm start's own settings (``--sft KEY=VALUE``); everything else is the GRPO run's TrainConfig."""

    CONFIG_NAME = "sft"

    questions: int = _f(0, "demonstrate on the first N (>= 0) questions of the run's training split (0: all of it); "
                           "the held-out split is never demonstrated", ge=0)
    epochs: int = _f(2, "passes over the demonstration sequences (>= 1)", ge=1)
    lr: float = _f(2e-4, "AdamW learning rate of the LoRA adapters (> 0)", gt=0.0)
    batch_sequences: int = _f(8, "training sequences per optimiser step (>= 1); sequences are length-sorted into "
                                 "batches, the batches shuffled", ge=1)
    micro_batch_tokens: int = _f(2048, "at most this many padded tokens (rows x longest row) per forward/backward pass "
                                       "inside a batch, gradients accumulated (0: the whole batch in one pass); activation "
                                       "memory grows with it (SmolLM2-135M, fp32, 8 rows of ~600 tokens in one pass: "
                                       "~13 GB resident on CPU)", ge=0)
    oracle_budget: int = _f(400, "new menus one oracle turn's search may build (OraclePolicy budget, >= 1)", ge=1)


class ScriptedGenerator:
    """A rollout generator (:class:`~harness_g.training.generator_protocol.RolloutGenerator`) that replies with
    ``script`` -- one text per chat of the next :meth:`generate` call, set by the teacher -- instead of sampling.

    Each reply is tokenised (no special tokens) and closed with the tokenizer's end-of-turn token, then cut at
    ``max_new_tokens`` like a sampled reply (no end token then). Prompts continue in token space from the
    episode's previous turn (:class:`~harness_g.training.tito.TokenContinuations`), as the sampling generator's do,
    so the demonstration's training sequences have the same shape as a rollout's."""

    name = "scripted"
    context_window = None
    temperature = 0.0
    top_p = 1.0

    def __init__(self, tokenizer: Any, max_prompt_tokens: int):
        self.tokenizer = tokenizer
        self.max_prompt_tokens = max_prompt_tokens
        self.seconds = 0.0
        self.script: list[str] = []
        self.cut = 0  # replies cut at their token limit
        self.continuations = TokenContinuations(tokenizer)
        if tokenizer.eos_token_id is None:
            raise ConfigError("the tokenizer has no end-of-turn (eos) token to close a demonstrated reply with")

    def count_tokens(self, messages: Conversation) -> int:
        return len(self.tokenizer(render_chat(self.tokenizer, messages), add_special_tokens=False)["input_ids"])

    def sync(self, policy: Any) -> float:
        """Nothing samples from the policy: 0 seconds."""
        return 0.0

    def generate(self, batch: Sequence[Conversation], *, max_new_tokens: int, temperature: float = 0.0,
                 top_p: float = 1.0, seed: int | None = None, stop: list[str] | None = None,
                 allowed: Sequence[Sequence[str]] | None = None) -> list[Generation]:
        """The scripted replies of ``batch`` (one per chat, in order); HarnessError when the script does not hold
        exactly one reply per chat (the teacher and the policy disagree on who acts)."""
        if len(self.script) != len(batch):
            raise HarnessError(f"the teacher scripted {len(self.script)} replies for {len(batch)} chats")
        out = []
        for conv, text in zip(batch, self.script):
            prompt_ids, prompt_text = self.continuations.prompt(conv)
            ids = [*self.tokenizer(text, add_special_tokens=False)["input_ids"], self.tokenizer.eos_token_id]
            stopped = len(ids) <= max_new_tokens
            self.cut += not stopped
            ids = ids[:max_new_tokens]
            reply = self.tokenizer.decode(ids, skip_special_tokens=True).strip()
            self.continuations.record(conv, prompt_ids, prompt_text, ids, reply, stopped)
            out.append(Generation(text=reply, prompt_tokens=len(prompt_ids), completion_tokens=len(ids), seconds=0.0,
                                  finish_reason="stop" if stopped else "length", prompt_ids=tuple(prompt_ids),
                                  token_ids=tuple(ids)))
        self.script = []
        return out


def free_query_reply(env: Any, action: Action) -> str:
    """The free-query arm's words for a menu action (``env``: a FreeQueryEnv at the action's state): moves by handle,
    a LOOKUP as ``SEARCH: `` + its target's surface form (what the arm's resolver ranks)."""
    from harness_g.agent.env.free_query import SEARCH_PREFIX, target_text

    if action.type is ActionType.ANSWER:
        return "ANSWER"
    if action.type is ActionType.LOOKUP:
        return SEARCH_PREFIX + target_text(action, env.inner.menu)
    handles = [env.handle_of(t) for t in action.targets]
    if any(h is None for h in handles):
        raise HarnessError(f"{action.type.value} {action.id}: a target is not visible")
    return f"{action.type.value} {' '.join(handles)}"  # type: ignore[arg-type]


class OracleTeacher:
    """Scripts ``generator`` with the oracle's replies (:mod:`harness_g.agent.policies.oracle`, one planner per
    episode) and the gold answers; records, per episode, the action id the oracle chose at every turn."""

    def __init__(self, view: Any, env_config: Any, items: Sequence[QAItem], generator: ScriptedGenerator, *,
                 interface: str, budget: int = 400):
        from harness_g.agent.policies.oracle import require_gold

        require_gold(items)
        self.view, self.env_config, self.items = view, env_config, {q.id: q for q in items}
        self.generator, self.interface, self.budget = generator, interface, budget
        self._oracles: dict[int, Any] = {}
        self.chosen: dict[int, list[str]] = {}  # id(menu env) -> the oracle's action id per turn

    def _menu_env(self, env: Environment) -> Any:
        return getattr(env, "inner", env)

    def reply(self, env: Environment) -> str:
        """The oracle's reply at ``env``'s current state, in the interface's words."""
        from harness_g.agent.policies.oracle import OraclePolicy

        inner = self._menu_env(env)
        oracle = self._oracles.get(id(inner))
        if oracle is None:
            oracle = self._oracles[id(inner)] = OraclePolicy(self.view, self.env_config, self.items, budget=self.budget)
        action_id = oracle.act(inner.observe())
        self.chosen.setdefault(id(inner), []).append(action_id)
        if self.interface == "menu":
            return action_id
        return free_query_reply(env, inner.menu.by_id[action_id])

    def before_turn(self, envs: Sequence[Environment]) -> None:
        self.generator.script = [self.reply(e) for e in envs]

    def before_answer(self, items: Sequence[QAItem]) -> None:
        self.generator.script = [it.answers[0] for it in items]


def collect_demonstrations(view: Any, tokenizer: Any, items: Sequence[QAItem], config: Any, prompt_budget: int, *,
                           budget: int = 400) -> tuple[list[Any], dict[str, Any]]:
    """One oracle demonstration per item under ``config`` (a TrainConfig: environment, interface, context, token
    limits): (the Rollouts, :func:`demonstration_stats`)."""
    from harness_g.training.rollout import collect_rollouts

    r = config.rollout
    generator = ScriptedGenerator(tokenizer, prompt_budget)
    teacher = OracleTeacher(view, config.env_config(), items, generator, interface=r.interface, budget=budget)
    rollouts, _ = collect_rollouts(view, generator, items, 1, config.env_config(), max_action_tokens=r.max_action_tokens,
                                   max_answer_tokens=r.max_answer_tokens, interface=r.interface, context=r.context,
                                   max_prompt_tokens=prompt_budget, teacher=teacher)
    return rollouts, demonstration_stats(rollouts, teacher, generator.cut)


def demonstration_stats(rollouts: Sequence[Any], teacher: OracleTeacher, cut: int) -> dict[str, Any]:
    """``questions``; ``turns``; ``agreement``: the fraction of turns whose executed action is the one the oracle
    chose (below 1 when the free-query resolver maps a search elsewhere, or a cut reply is invalid); ``cut_replies``;
    ``action_types``: counts; ``evidence_recall`` and ``answer_f1``: means over the demonstrations."""
    from harness_g.agent.env.gold import gold_units
    from harness_g.agent.eval.metrics import evidence_recall

    turns = agree = 0
    types: dict[str, int] = {}
    recalls = []
    if len(teacher.chosen) != len(rollouts):  # every episode acts at its first turn, in rollout order
        raise HarnessError(f"the teacher saw {len(teacher.chosen)} episodes for {len(rollouts)} demonstrations")
    for ro in rollouts:
        for s in ro.trajectory.steps:
            turns += 1
            types[s.action_type or "invalid"] = types.get(s.action_type or "invalid", 0) + 1
        units = gold_units(ro.item.gold_sentence_ids, ro.item.gold_paragraph_ids)
        rec = evidence_recall(units, ro.trajectory.committed)
        if rec is not None:
            recalls.append(rec)
    for ids, ro in zip(teacher.chosen.values(), rollouts):
        agree += sum(s.chosen == a for s, a in zip(ro.trajectory.steps, ids))
    return {"questions": len(rollouts), "turns": turns, "agreement": agree / max(1, turns), "cut_replies": cut,
            "action_types": types, "evidence_recall": sum(recalls) / len(recalls) if recalls else None,
            "answer_f1": sum(r.reward for r in rollouts) / max(1, len(rollouts))}


# -- training ------------------------------------------------------------------------------------------------------
def sft_batches(lengths: Sequence[int], batch_sequences: int, seed: int, epoch: int) -> list[list[int]]:
    """Row indices per optimiser step for one epoch: rows sorted by length (so a batch pads little), cut into
    batches of ``batch_sequences``, the batches shuffled by ``(seed, epoch)``."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches = [order[k:k + batch_sequences] for k in range(0, len(order), batch_sequences)]
    random.Random(f"{seed}:{epoch}").shuffle(batches)
    return batches


def sft_loss(model: Any, sequences: Sequence[Any], device: Any, denominator: int | None = None) -> tuple[torch.Tensor, int]:
    """Negative log-likelihood of the trained tokens (``loss_mask``) of ``sequences`` in one padded forward pass,
    divided by ``denominator`` (default: their own count, a token mean; a micro-batch passes its batch's count, so
    the accumulated gradient is the batch's token mean): (loss, number of trained tokens)."""
    from harness_g.training.chat import pad_batch, tail_logprobs

    batch = {k: v.to(device) for k, v in pad_batch(list(sequences), 0).items()}
    logp = tail_logprobs(model, batch)
    mask = batch["loss_mask"]
    n = int(mask.sum())
    return -(logp * mask).sum() / max(1, denominator or n), n


def check_warm_start(init_adapter: str | None, heldout_ids: Sequence[str]) -> None:
    """ConfigError when the warm start ``init_adapter`` (a ``harness-g sft`` output's ``policy`` directory) was
    trained on one of ``heldout_ids``: the run would report held-out numbers on questions its policy was fitted to.
    An adapter without :data:`SFT_FILE` beside it is not ours to check and passes."""
    if not init_adapter:
        return
    from harness_g.agent.llm.checkpoint import is_adapter

    if not is_adapter(init_adapter):
        raise ConfigError(f"model.init_adapter {init_adapter}: not a LoRA adapter directory (no adapter_config.json)")
    record = Path(init_adapter).parent / SFT_FILE
    if not record.is_file():
        return
    trained = set(json.loads(record.read_text(encoding="utf-8")).get("demonstrated_ids", []))
    leaked = [q for q in heldout_ids if q in trained]
    if leaked:
        raise ConfigError(f"model.init_adapter {init_adapter}: its SFT demonstrations include {len(leaked)} of this "
                          f"run's held-out questions (e.g. {leaked[0]!r}); warm-start from an SFT run over the same "
                          "training split")


#: what a warm-started run records of its warm start (RUN_DIR/warm_start.json): the adapter's path and weights' hash
WARM_START_FILE = "warm_start.json"


def adapter_digest(init_adapter: str) -> str:
    """sha256 of the adapter's weights (``adapter_model.safetensors``)."""
    import hashlib

    h = hashlib.sha256()
    with open(Path(init_adapter) / "adapter_model.safetensors", "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def record_warm_start(run_dir: str | Path, init_adapter: str | None, *, resume: bool, write: bool = True) -> None:
    """A fresh run writes ``RUN_DIR/warm_start.json`` (when ``write``: the main process); a resume is refused
    (ConfigError, every process) when the warm start's weights, or whether there is one, changed since the run
    began: it would continue from other initial weights (the KL reference and the answerer with them)."""
    path = Path(run_dir) / WARM_START_FILE
    now = {"init_adapter": str(Path(init_adapter).resolve()), "sha256": adapter_digest(init_adapter)} if init_adapter else None
    if resume:
        before = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        if before != now:
            raise ConfigError(f"{path}: the run began from warm start {before}, the resume names {now}; resume with the "
                              "same model.init_adapter weights")
        return
    if write and now is not None:
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(now, indent=1) + "\n", encoding="utf-8")
    elif write and path.is_file():
        path.unlink()


def run_sft(config: Any, sft: SFTConfig, out: str | Path, *, progress: bool = True) -> dict[str, Any]:
    """Demonstrate, fine-tune the LoRA adapters of ``config.model`` on the demonstrations, and write ``out/policy``
    (a policy checkpoint: the adapter, tokenizer and play settings, loadable by ``harness-g eval`` and as
    ``model.init_adapter``), ``out/metrics.jsonl`` (one row per optimiser step: ``loss``, ``tokens``) and
    ``out/sft.json``. Returns the summary written to sft.json."""
    from harness_g.agent.env.session import open_view
    from harness_g.training.checkpoint import export_policy, policy_settings
    from harness_g.training.context_budget import prompt_budget
    from harness_g.training.data import require_graph, split_questions
    from harness_g.training.modeling import load_policy, load_tokenizer
    from harness_g.training.precision import make_accelerator
    from harness_g.training.update_plan import micro_batches

    if not config.model.lora:
        raise ConfigError("harness-g sft writes a LoRA adapter (a warm start for model.init_adapter): set model.lora=true")
    require_graph(config)
    out = Path(out)
    if (out / SFT_FILE).exists():
        raise ConfigError(f"{out} already holds an SFT run ({SFT_FILE}); choose another --out")
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(config.seed)
    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    accelerator = make_accelerator(config.model.compute_dtype)
    if accelerator.num_processes > 1:
        raise ConfigError("harness-g sft runs in one process (a warm start takes minutes): launch it without "
                          "accelerate launch / torchrun")
    tokenizer = load_tokenizer(config.model)
    model = load_policy(config.model, tokenizer, config.seed)
    budget = prompt_budget(config.rollout, getattr(getattr(model, "config", None), "max_position_embeddings", None))
    t0 = time.perf_counter()
    with open_view(config.data.graph_dir, config.data.store) as view:
        train_q, held_out = split_questions(config, view)
        items = train_q[: sft.questions] if sft.questions else train_q
        rollouts, stats = collect_demonstrations(view, tokenizer, items, config, budget, budget=sft.oracle_budget)
    demo_s = time.perf_counter() - t0
    sequences = [seq for ro in rollouts for seq in ro.sequences(tokenizer)]
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=sft.lr, weight_decay=config.optim.weight_decay)
    model, optimizer = accelerator.prepare(model, optimizer)
    model.train()
    step, losses, t1 = 0, [], time.perf_counter()
    with open(out / "metrics.jsonl", "w", encoding="utf-8") as log:
        for epoch in range(sft.epochs):
            for rows in sft_batches([len(s.input_ids) for s in sequences], sft.batch_sequences, config.seed, epoch):
                batch = [sequences[i] for i in rows]
                n = sum(sum(s.loss_mask) for s in batch)
                optimizer.zero_grad(set_to_none=True)
                loss = 0.0
                for part in micro_batches(range(len(batch)), [len(s.input_ids) for s in batch], 0, sft.micro_batch_tokens):
                    with accelerator.autocast():
                        part_loss, _ = sft_loss(model, [batch[i] for i in part], accelerator.device, n)
                    accelerator.backward(part_loss)
                    loss += part_loss.item()
                accelerator.clip_grad_norm_(params, config.optim.max_grad_norm)
                optimizer.step()
                step += 1
                losses.append(loss)
                log.write(json.dumps({"step": step, "epoch": epoch, "loss": losses[-1], "tokens": n}) + "\n")
                log.flush()
                if progress:
                    print(f"sft step {step} epoch {epoch}: loss {losses[-1]:.4f} ({n} tokens)", flush=True)
    unwrapped = accelerator.unwrap_model(model)
    settings = policy_settings(config, step, budget, config.env_config().to_dict())
    export_policy(unwrapped, tokenizer, out, settings, save_base=config.model.name == "tiny-random")
    policy_dir = out / "policy"
    if policy_dir.exists():  # left by a run killed after its export (it wrote no sft.json)
        import shutil

        shutil.rmtree(policy_dir)
    (out / f"checkpoint-{step}").rename(policy_dir)
    summary = {"sft": sft.to_dict(), "train_config": config.to_dict(), "policy": str(policy_dir.resolve()),
               "demonstrated_ids": [q.id for q in items], "heldout_ids": [q.id for q in held_out],
               "demonstrations": stats, "sequences": len(sequences),
               "trained_tokens": sum(sum(s.loss_mask) for s in sequences), "steps": step,
               "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None,
               "demonstrate_s": demo_s, "train_s": time.perf_counter() - t1,
               "device": str(accelerator.device)}
    (out / SFT_FILE).write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary
