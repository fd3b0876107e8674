"""Training configuration: typed dataclasses with help text; YAML in and out.

Defaults follow the paper's hyper-parameter table (Qwen2.5-3B recipe) except where a CPU run
needs smaller numbers; ``training/configs/*.yaml`` hold ready recipes.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

import yaml

from harness_g.errors import ConfigError


def _f(default: Any, help: str, **kw: Any) -> Any:
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata={"help": help, **kw})
    return field(default=default, metadata={"help": help, **kw})


@dataclass(frozen=True)
class ModelConfig:
    name: str = _f("smollm2", "policy checkpoint: hub id, local dir, 'smollm2' (offline GGUF) or 'tiny-random' (built from a config)")
    gguf_file: str | None = _f(None, "GGUF file inside the model dir, if any")
    dtype: str = _f("float32", "parameter dtype (float32, bfloat16); log-probs are always computed in fp32")
    lora: bool = _f(False, "train LoRA adapters instead of all weights (PEFT)")
    lora_r: int = _f(16, "LoRA rank")
    lora_alpha: int = _f(32, "LoRA alpha")
    lora_dropout: float = _f(0.0, "LoRA dropout")
    lora_targets: list = _f(["q_proj", "k_proj", "v_proj", "o_proj"], "module names LoRA wraps")
    gradient_checkpointing: bool = _f(False, "trade compute for memory")
    tiny_hidden: int = _f(64, "tiny-random only: hidden size")
    tiny_layers: int = _f(2, "tiny-random only: layers")


@dataclass(frozen=True)
class DataConfig:
    graph_dir: str = _f("", "GRAPH_DIR built with `harness-g build` (its questions.jsonl are the training set)")
    store: str | None = _f(None, "store spec (default: the graph's remembered store, else embedded FalkorDB)")
    build_format: str | None = _f(None, "if set, (re)build graph_dir from build_input in this format first (a cache hit when unchanged)")
    build_input: str | None = _f(None, "corpus/questions file for build_format")
    questions: str | None = _f(None, "optional questions file instead of the graph's questions")
    questions_format: str | None = _f(None, "format of `questions`")
    limit: int | None = _f(None, "use only the first N training questions")
    eval_questions: int = _f(0, "hold out the last N questions for before/after evaluation")
    train_questions: int | None = _f(None, "train on only the first N non-held-out questions (a small pool is revisited "
                                           "every N steps; evaluate it with log.eval_train_questions)")


@dataclass(frozen=True)
class RolloutConfig:
    group_size: int = _f(8, "N_g rollouts per question (GRPO group)")
    questions_per_step: int = _f(16, "questions per training step (batch = questions × N_g rollouts)")
    max_turns: int = _f(6, "T decision turns")
    temperature: float = _f(1.0, "sampling temperature for rollouts")
    top_p: float = _f(1.0, "nucleus sampling")
    max_action_tokens: int = _f(8, "max new tokens per action reply")
    max_answer_tokens: int = _f(24, "max new tokens for the final answer")
    max_prompt_tokens: int = _f(8192, "prompt budget: older turns are dropped beyond it")
    generator: str = _f("transformers", "rollout generator: transformers (CPU/GPU, in the policy's own weights) | vllm "
                                        "(colocated in-process engine, weights synced after every optimiser step)")
    vllm: dict = _f({}, "vllm.LLM keyword arguments for generator vllm (gpu_memory_utilization, max_model_len, dtype, "
                        "enforce_eager, ...); the engine's seed is the run's seed")
    env: dict = _f({}, "EnvConfig overrides for rollouts (visible_cap, lookup_cap, ...; max_turns comes from max_turns)")
    constrain_actions: bool = _f(False, "constrained decoding: action replies can only be a valid menu id (small models)")
    interface: str = _f("menu", "menu | free-query (the transition-matched free-query arm: free-text replies resolved "
                                "to the closest feasible move; logs D_query; give it max_action_tokens ~32)")


@dataclass(frozen=True)
class CreditConfig:
    scheme: str = _f("snc", "step credit: outcome | snc | snc_no_enablement | snc_no_frontier | igpo")
    lam: float = _f(0.2, "λ, weight of the SNC advantage on action tokens")
    gamma: float = _f(1.0, "γ, enablement propagation discount")
    frontier_size: int = _f(4, "K_f frontier alternatives per information-acquiring step")
    dead_zone: float = _f(1e-4, "|p| below this is treated as 0")
    clip: float = _f(5.0, "c, SNC token credits are clipped to [-c, c]")
    scale_floor: float = _f(5e-4, "s_min, floor of the batch-global SNC scale")
    answerer: str = _f("reference", "frozen answerer g: 'reference' (initial checkpoint) or a model path")
    max_aliases: int = _f(3, "score at most this many gold aliases (max over them)")
    equivalence_jaccard: float = _f(0.8, "evidence-overlap threshold for retrieval-equivalence classes")


@dataclass(frozen=True)
class OptimConfig:
    estimator: str = _f("grpo", "advantage estimator: grpo | dapo | reinforce_pp")
    lr: float = _f(5e-7, "learning rate")
    weight_decay: float = _f(0.0, "AdamW weight decay")
    warmup_steps: int = _f(0, "linear warm-up steps")
    steps: int = _f(120, "training steps")
    mini_batch_sequences: int = _f(32, "sequences per optimiser step (one rollout batch gives ceil(n / this) steps)")
    micro_batch_sequences: int = _f(0, "sequences per forward/backward pass inside a mini-batch, gradients accumulated "
                                        "(memory knob; 0 = the whole mini-batch at once)")
    ppo_epochs: int = _f(1, "passes over each rollout batch")
    clip_eps: float = _f(0.2, "ε of the clipped surrogate")
    clip_eps_high: float | None = _f(None, "upper ε (DAPO clip-higher); None = clip_eps")
    dual_clip: float | None = _f(3.0, "C of dual-clip (None disables)")
    kl_coef: float = _f(0.001, "β of the k3 KL to the reference")
    max_grad_norm: float = _f(1.0, "gradient clipping")
    drop_zero_advantage_groups: bool = _f(False, "DAPO dynamic sampling: skip groups with zero reward variance")


@dataclass(frozen=True)
class LogConfig:
    every: int = _f(1, "log every N steps")
    save_every: int = _f(10, "checkpoint every N steps (0: only at the end)")
    tensorboard: bool = _f(True, "also log to TensorBoard when installed")
    wandb: bool = _f(False, "also log to Weights & Biases when installed")
    keep_trajectories: int = _f(2, "trajectories per step written to rollouts.jsonl")
    eval_train_questions: int = _f(0, "also evaluate (greedy) this many training questions before and after training")


@dataclass(frozen=True)
class TrainConfig:
    seed: int = _f(0, "seed for sampling, data order and initialisation")
    torch_threads: int | None = _f(None, "torch CPU threads (None: torch's default; 1 is fastest on a busy 2-core machine)")
    model: ModelConfig = field(default_factory=ModelConfig, metadata={"help": "policy model"})
    data: DataConfig = field(default_factory=DataConfig, metadata={"help": "graph and questions"})
    rollout: RolloutConfig = field(default_factory=RolloutConfig, metadata={"help": "rollout collection"})
    credit: CreditConfig = field(default_factory=CreditConfig, metadata={"help": "SNC and ablations"})
    optim: OptimConfig = field(default_factory=OptimConfig, metadata={"help": "optimisation"})
    log: LogConfig = field(default_factory=LogConfig, metadata={"help": "logging and checkpoints"})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(yaml.safe_dump(self.to_dict(), sort_keys=False), encoding="utf-8")


def _build(cls: type, data: dict[str, Any], where: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    hints = get_type_hints(cls)
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(known)}")
    kwargs = {}
    for name, value in data.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            kwargs[name] = _build(hint, value or {}, f"{where}.{name}")
        else:
            kwargs[name] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Read a YAML config (missing fields take defaults) and apply dotted overrides like {'optim.lr': 1e-6}."""
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        except OSError as exc:
            raise ConfigError(f"{p}: cannot read config ({exc.strerror})") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{p}: malformed YAML ({exc})") from exc
        where = str(p)
    else:
        where = "config"
    for key, value in (overrides or {}).items():
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    config = _build(TrainConfig, data, where)
    _validate(config, where)
    return config


def _validate(c: TrainConfig, where: str) -> None:
    from harness_g.training.advantages import ESTIMATORS
    from harness_g.training.credit import CREDIT_SCHEMES

    if c.credit.scheme not in CREDIT_SCHEMES:
        raise ConfigError(f"{where}: credit.scheme {c.credit.scheme!r} unknown; available: {', '.join(sorted(CREDIT_SCHEMES))}")
    if c.optim.estimator not in ESTIMATORS:
        raise ConfigError(f"{where}: optim.estimator {c.optim.estimator!r} unknown; available: {', '.join(sorted(ESTIMATORS))}")
    if c.rollout.group_size < 1 or c.rollout.questions_per_step < 1 or c.optim.steps < 1:
        raise ConfigError(f"{where}: group_size, questions_per_step and steps must be >= 1")
    if c.rollout.generator not in ("transformers", "vllm"):
        raise ConfigError(f"{where}: rollout.generator {c.rollout.generator!r} unknown; available: transformers, vllm")
    if c.rollout.interface not in ("menu", "free-query"):
        raise ConfigError(f"{where}: rollout.interface {c.rollout.interface!r} unknown; available: menu, free-query")
    if c.rollout.interface == "free-query" and c.rollout.constrain_actions:
        raise ConfigError(f"{where}: rollout.constrain_actions needs the menu interface (free-query replies have no ids)")
    if c.rollout.vllm and c.rollout.generator != "vllm":
        raise ConfigError(f"{where}: rollout.vllm settings are given but rollout.generator is {c.rollout.generator!r}")
    if not c.data.graph_dir:
        raise ConfigError(f"{where}: data.graph_dir is required (a GRAPH_DIR from `harness-g build`)")


def describe(config: Any = TrainConfig, prefix: str = "") -> list[str]:
    """``field: value  # help`` lines for every field (``harness-g train --show-config``): the defaults when given
    the class, the resolved values when given a loaded config."""
    out = []
    cls = config if isinstance(config, type) else type(config)
    for f in fields(cls):
        hint = get_type_hints(cls)[f.name]
        if dataclasses.is_dataclass(hint):
            out.append(f"{prefix}{f.name}:  # {f.metadata.get('help', '')}")
            out.extend(describe(hint if isinstance(config, type) else getattr(config, f.name), prefix + "  "))
        else:
            if isinstance(config, type):
                value = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            else:
                value = getattr(config, f.name)
            out.append(f"{prefix}{f.name}: {value!r}  # {f.metadata.get('help', '')}")
    return out
