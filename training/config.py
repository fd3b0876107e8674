"""Training configuration: typed dataclasses with help text; YAML in and out.

Defaults follow the paper's hyper-parameter table (``../shared/paper/harness-g.tex`` appendix
"Implementation Details", Table "Hyperparameter settings for Harness-G (3B)": the Qwen2.5-3B recipe); the top-level
``preset`` (paper by default) fills the environment's menu rules (``rollout.env``, an :class:`EnvConfig` section
that inherits that preset, :data:`ENV_PRESETS`) and the build rules of a graph ``harness-g train`` builds
(``data.build``, :data:`BUILD_PRESETS`), each key given explicitly winning over the preset;
``training/configs/*.yaml`` hold ready recipes (the paper's, and small CPU ones).

Loading is :mod:`harness_g.config_loader`'s, shared with build and eval: every value - from YAML or from
``--set key=value`` - is parsed by its field's declared type (``rollout.env.*`` by :class:`EnvConfig`'s) and
checked against the range or the choices the field declares; a wrong value is a one-line :class:`ConfigError`
naming the field, e.g. ``optim.lr: expected float, got 'abc'``. Cross-field checks are :func:`_validate`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_g.agent.env.config import EnvConfig
from harness_g.config_loader import Config, describe, inherit_field, load, partial_mapping, preset_field
from harness_g.config_loader import config_field as _f
from harness_g.errors import ConfigError
from harness_g.graph.config import BuildConfig
from harness_g.registry import RegistryNames

__all__ = ["CreditConfig", "DataConfig", "LogConfig", "ModelConfig", "OptimConfig", "RENAMED", "RolloutConfig",
           "TrainConfig", "describe", "load_config"]


def _build_overrides(data: Any, name: str) -> dict[str, Any]:
    """``data.build``: BuildConfig fields, each parsed by BuildConfig's own type."""
    return partial_mapping(BuildConfig, data, name, refused={
        "preset": "set the top-level preset instead (it fills rollout.env and data.build)"})


@dataclass(frozen=True)
class ModelConfig(Config):
    name: str = _f("smollm2", "policy checkpoint: hub id, local dir, 'smollm2' (offline GGUF) or 'tiny-random' (built from a config)")
    gguf_file: str | None = _f(None, "GGUF file inside the model dir, if any")
    compute_dtype: str = _f("float32", "dtype of the forward/backward compute (autocast via Accelerate's mixed_precision); "
                                       "trainable weights and AdamW state are always fp32 master copies, frozen copies "
                                       "(KL reference, answerer, a LoRA base) are stored in it; log-probs are fp32",
                            choices=("float32", "bfloat16", "float16"))
    lora: bool = _f(False, "train LoRA adapters instead of all weights (PEFT)")
    lora_r: int = _f(16, "LoRA rank (>= 1)", ge=1)
    lora_alpha: int = _f(32, "LoRA alpha (>= 1)", ge=1)
    lora_dropout: float = _f(0.0, "LoRA dropout, in [0, 1)", ge=0.0, lt=1.0)
    lora_targets: list = _f(["q_proj", "k_proj", "v_proj", "o_proj"], "module names LoRA wraps")
    gradient_checkpointing: bool = _f(False, "trade compute for memory")
    tiny_hidden: int = _f(64, "tiny-random only: hidden size (>= 1)", ge=1)
    tiny_layers: int = _f(2, "tiny-random only: layers (>= 1)", ge=1)
    init_adapter: str | None = _f(None, "warm start (ours; the paper trains from the base checkpoint): a LoRA adapter "
                                        "directory, e.g. `harness-g sft`'s output, merged into the base weights before "
                                        "training; the KL reference and the frozen answerer are then the merged model",
                                  path=True)


@dataclass(frozen=True)
class DataConfig(Config):
    graph_dir: str = _f("", "GRAPH_DIR built with `harness-g build` (its questions.jsonl are the training set); empty with "
                            "data.build_format set: `harness-g train` builds it in RUN_DIR/graph", path=True)
    store: str | None = _f(None, "store spec (default: the graph's remembered store, else embedded FalkorDB)")
    build_format: str | None = _f(None, "if set, `harness-g train` (re)builds graph_dir from build_input in this format before training (a cache "
                                   "hit when unchanged); Python callers call training.data.build_training_graph first")
    build_input: str | None = _f(None, "corpus/questions file for build_format", path=True)
    questions: str | None = _f(None, "optional questions file instead of the graph's questions")
    questions_format: str | None = _f(None, "format of `questions`")
    limit: int | None = _f(None, "use only the first N (>= 1) training questions", ge=1)
    eval_questions: int = _f(0, "hold out the last N (>= 0) questions after data.limit, evaluated greedily before and "
                                "after training, their ids in RUN_DIR/heldout_ids.txt and RUN_DIR/split.json (a resume "
                                "must match it). Paper: 128 per dataset (appendix 'Splits and corpus preprocessing')",
                             ge=0)
    train_questions: int | None = _f(None, "train on only the first N (>= 1) non-held-out questions after "
                                           "data.train_offset (a small pool is revisited every N steps; evaluate it "
                                           "with log.eval_train_questions); paper: 5,120 per dataset, Graph-R1's split",
                                     ge=1)
    train_offset: int = _f(0, "ours: skip the first N (>= 0) non-held-out questions before data.train_questions cuts the "
                              "training part, so another small pool of the same split can be trained on (0: the paper's "
                              "split)", ge=0)
    build: dict = _f({}, "BuildConfig fields (keys [preset ...] filled by the top-level preset): the build rules when "
                         "build_format makes graph_dir; a key given explicitly (e.g. embedding_model) must match a "
                         "graph_dir built otherwise, or training is refused naming it", parse=_build_overrides,
                     preset_of=BuildConfig, preset_skip=("preset",))


@dataclass(frozen=True)
class RolloutConfig(Config):
    group_size: int = _f(8, "N_g rollouts per question (GRPO group, Harness-G §3.4; >= 1; "
                            "Table 'Hyperparameter settings': 8)", ge=1)
    questions_per_step: int = _f(128, "questions per training step over all processes: the paper's batch size (each "
                                      "question gets N_g rollouts; split evenly over the processes, so a multiple of "
                                      "their number; >= 1; Table 'Hyperparameter settings': 128)", ge=1)
    max_turns: int = _f(6, "T decision turns (>= 1; Table 'Hyperparameter settings': 6)", ge=1)
    temperature: float = _f(1.0, "sampling temperature for rollouts (>= 0; 0 = greedy)", ge=0.0)
    top_p: float = _f(1.0, "nucleus sampling, in (0, 1]", gt=0.0, le=1.0)
    max_action_tokens: int = _f(8, "max new tokens per action reply (>= 1)", ge=1)
    max_answer_tokens: int = _f(24, "max new tokens for the final answer (>= 1)", ge=1)
    max_prompt_tokens: int = _f(8192, "prompt budget in tokens (>= 1; paper: max prompt tokens); a longer multi-turn "
                                      "context drops whole older turns (logged as dropped_turns_max), never cuts text",
                                ge=1)
    context: str = _f("multi-turn", "policy context: multi-turn = the paper's growing chat, trained as one sequence per "
                                    "trajectory with environment turns loss-masked (Harness-G §3.4, Integration "
                                    "with GRPO); "
                                    "markov = the instruction + current observation only, one short sequence per turn "
                                    "(an option for small CPU runs)", choices=("multi-turn", "markov"))
    max_response_tokens: int = _f(2048, "budget of policy-generated tokens per rollout, all action replies + the answer "
                                        "(paper: max response tokens); refused when max_turns x max_action_tokens + "
                                        "max_answer_tokens exceeds it", ge=1)
    max_observation_tokens: int = _f(4096, "budget of environment-response tokens per turn (paper: max tool-response "
                                           "tokens); bounded by construction through K_s/K_e, the largest is logged as "
                                           "observation_tokens_max and a warning names any turn over it", ge=1)
    reward: str = _f("f1", "outcome reward R_out: f1 = token-level answer F1, max over gold aliases (the only one)",
                     choices=("f1",))
    generator: str = _f("transformers", "rollout generator: transformers (CPU/GPU, in the policy's own weights) | vllm "
                                        "(colocated in-process engine, weights synced after every optimiser step)",
                        choices=RegistryNames("harness_g.training.generators:GENERATORS"))
    prefix_cache: bool = _f(True, "transformers generator: keep each episode's key/value cache from one turn to the "
                                  "next, so a multi-turn prompt is prefilled once, not again every turn (execution only: "
                                  "the same prompts and samples up to float summation order; training/prefix_cache.py)")
    vllm: dict = _f({}, "vllm.LLM keyword arguments for generator vllm (gpu_memory_utilization, max_model_len, dtype, "
                        "enforce_eager, ...); the engine's seed is the run's seed")
    env: EnvConfig = inherit_field(
        EnvConfig, "the rollouts' menu environment (Harness-G §3.3): K_s, K_e, ANSWER_WITH, ...; its preset is the "
                   "top-level preset and its T is rollout.max_turns",
        {"preset": ("preset", "set the top-level preset instead (it fills rollout.env and data.build)"),
         "max_turns": ("rollout.max_turns", "set rollout.max_turns instead (the environment takes T from there)")})
    constrain_actions: bool = _f(False, "constrained decoding: action replies can only be a valid menu id (small models)")
    interface: str = _f("menu", "menu | free-query (the transition-matched free-query arm: commits and answers by "
                                "handle as in the menu arm, any other reply is a search string a frozen resolver maps "
                                "to the nearest LOOKUP target; logs D_query; give it max_action_tokens ~32)",
                        choices=RegistryNames("harness_g.agent.eval.interfaces:trainable_interfaces"))


@dataclass(frozen=True)
class CreditConfig(Config):
    scheme: str = _f("snc", "step credit: outcome | snc | snc_no_enablement | snc_no_frontier | igpo",
                     choices=RegistryNames("harness_g.training.credit:CREDIT_SCHEMES"))
    lam: float = _f(0.2, "λ, weight of the SNC advantage on action tokens (>= 0; Harness-G §3.4 "
                         "'Integration with GRPO', 0.2)", ge=0.0)
    gamma: float = _f(1.0, "γ, enablement propagation discount, in [0, 1] (Harness-G §3.4 "
                           "'Structured enablement credit', 1.0)", ge=0.0, le=1.0)
    frontier_size: int = _f(4, "K_f frontier alternatives per information-acquiring step (type-stratified; >= 1; "
                               "appendix 'Frontier construction', 4)", ge=1)
    frontier_baseline: str = _f("mean", "frontier baseline: the mean gain of the frontier alternatives (the only one)",
                                choices=("mean",))
    dependency: str = _f("provenance", "dependency rule of enablement credit: provenance edges (the only one)",
                         choices=("provenance",))
    dead_zone: float = _f(1e-4, "information-gain dead-zone: |p| below this is treated as 0 (>= 0; "
                                "Table 'Hyperparameter settings': 1e-4)", ge=0.0)
    clip: float = _f(5.0, "c, SNC token credits are clipped to [-c, c] (> 0; Table 'Hyperparameter settings': 5.0)",
                     gt=0.0)
    scale_floor: float = _f(5e-4, "s_min, floor of the batch-global SNC scale (> 0; "
                                  "Table 'Hyperparameter settings': 5e-4)", gt=0.0)
    answerer: str = _f("reference", "frozen answerer g scoring SNC previews: 'reference' (the initial reference "
                                    "checkpoint, the paper's choice) or a model (hub id / path / 'tiny-random') loaded "
                                    "frozen next to the policy")
    max_aliases: int = _f(0, "score at most this many normalised gold aliases (max over them; 0 = all, the paper's "
                             "max over accepted aliases)", ge=0)
    igpo_gain: str = _f("prob", "credit.scheme igpo: a turn's information gain, prob = exp(ℓ_t+1) − exp(ℓ_t), the rise in "
                                "the policy's length-normalised probability of the gold answer (IGPO, arXiv 2510.14967, "
                                "and its code's default); log_prob = ℓ_t+1 − ℓ_t (its code's log_prob_diff option)",
                        choices=("prob", "log_prob"))
    equivalence_jaccard: float = _f(0.8, "evidence-overlap threshold for retrieval-equivalence classes, in [0, 1]",
                                    ge=0.0, le=1.0)


@dataclass(frozen=True)
class OptimConfig(Config):
    estimator: str = _f("grpo", "advantage estimator: grpo | dapo | reinforce_pp; dapo (arXiv 2503.14476) requires "
                                "kl_coef 0, clip_eps_high > clip_eps and drop_zero_advantage_groups true, refused "
                                "otherwise. The loss is a token mean over each update for every estimator (verl's default)",
                        choices=RegistryNames("harness_g.training.advantages:ESTIMATORS"))
    lr: float = _f(5e-7, "learning rate (> 0; Table 'Hyperparameter settings': 5e-7)", gt=0.0)
    weight_decay: float = _f(0.0, "AdamW weight decay (>= 0)", ge=0.0)
    warmup_steps: int = _f(0, "linear warm-up steps (>= 0)", ge=0)
    steps: int = _f(120, "training steps (>= 1; Table 'Hyperparameter settings': 120)", ge=1)
    mini_batch_questions: int = _f(32, "questions per optimiser update, over all processes: the paper's mini-batch (all "
                                       "the sequences of that many questions form one update, so a step makes "
                                       "ceil(questions_per_step / this) updates; >= 1; paper: 32)", ge=1)
    micro_batch_sequences: int = _f(0, "at most this many sequences per forward/backward pass inside a mini-batch, "
                                        "gradients accumulated (memory knob; 0 = no sequence cap)", ge=0)
    micro_batch_tokens: int = _f(0, "at most this many padded tokens (rows x longest row) per forward/backward pass; "
                                    "rows are length-sorted within the mini-batch and each pass is trimmed to its own "
                                    "longest row (memory knob; 0 = no token cap)", ge=0)
    ppo_epochs: int = _f(1, "passes over each rollout batch (>= 1)", ge=1)
    clip_eps: float = _f(0.2, "ε of the clipped surrogate (> 0; Table 'Hyperparameter settings': 0.2)", gt=0.0)
    clip_eps_high: float | None = _f(None, "upper ε (DAPO clip-higher, 0.28 in DAPO); None = clip_eps", gt=0.0)
    dual_clip: float | None = _f(3.0, "C of dual-clip (> 1; None disables; "
                                      "Table 'Hyperparameter settings': 3.0)", gt=1.0)
    kl_coef: float = _f(0.001, "β_KL of the KL to the reference (>= 0; "
                               "Table 'Hyperparameter settings': 0.001)", ge=0.0)
    kl_estimator: str = _f("k3", "KL estimator: k3 = the low-variance KL (verl's low_var_kl; the only one)", choices=("k3",))
    loss_mask_observations: bool = _f(True, "retrieved-token loss mask: environment/observation tokens get no loss "
                                            "(the only setting)", choices=(True,))
    max_grad_norm: float = _f(1.0, "gradient clipping (> 0)", gt=0.0)
    drop_zero_advantage_groups: bool = _f(False, "DAPO dynamic sampling: drop the groups whose outcome advantages are all "
                                                 "zero (all rewards equal) from the update")


@dataclass(frozen=True)
class LogConfig(Config):
    every: int = _f(1, "log every N steps (>= 1)", ge=1)
    save_every: int = _f(10, "checkpoint every N steps (0: only at the end)", ge=0)
    tensorboard: bool = _f(True, "also log to TensorBoard when installed")
    wandb: bool = _f(False, "also log to Weights & Biases when installed")
    keep_trajectories: int = _f(2, "trajectories per step written to rollouts.jsonl (>= 0)", ge=0)
    eval_train_questions: int = _f(0, "also evaluate (greedy) this many training questions before and after training (>= 0)",
                                   ge=0)


@dataclass(frozen=True)
class TrainConfig(Config):
    preset: str = preset_field(
        "which rules fill rollout.env and data.build (the keys marked [preset ...]): paper (default) = every menu and "
        "build rule as the paper defines it; extended = the project's extensions (README 'Presets and "
        "extensions'); a key given explicitly beats it; the graph must have been built under the same preset")
    seed: int = _f(0, "seed for sampling, data order and initialisation (>= 0)", ge=0)
    torch_threads: int | None = _f(None, "torch CPU threads (None: torch's default; 1 is fastest on a busy 2-core machine)",
                                   ge=1)
    model: ModelConfig = field(default_factory=ModelConfig, metadata={"help": "policy model"})
    data: DataConfig = field(default_factory=DataConfig, metadata={"help": "graph and questions"})
    rollout: RolloutConfig = field(default_factory=RolloutConfig, metadata={"help": "rollout collection"})
    credit: CreditConfig = field(default_factory=CreditConfig, metadata={"help": "SNC and ablations"})
    optim: OptimConfig = field(default_factory=OptimConfig, metadata={"help": "optimisation"})
    log: LogConfig = field(default_factory=LogConfig, metadata={"help": "logging and checkpoints"})

    def env_config(self) -> EnvConfig:
        """The rollouts' environment: ``rollout.env`` (under ``preset``, T = ``rollout.max_turns``)."""
        return self.rollout.env

    def build_config(self) -> BuildConfig:
        """The build rules of ``data.build`` (preset-filled) under ``preset``: what ``data.build_format`` builds with."""
        return BuildConfig.from_dict({**self.data.build, "preset": self.preset})


#: fields that were renamed or retyped: old dotted name -> what to write instead (refused, never guessed)
RENAMED = {
    "model.dtype": "model.compute_dtype (model.dtype was the parameter dtype: bf16 parameters without fp32 master "
                   "weights round away updates at lr 5e-7; trainable weights are now always fp32 and this sets the "
                   "autocast compute dtype)",
    "optim.mini_batch_sequences": "optim.mini_batch_questions (the number of questions whose sequences form one "
                                  "optimiser update; mini_batch_sequences counted per-turn sequences)",
}


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None, *,
                preset: str | None = None) -> TrainConfig:
    """Read a YAML config (missing fields take defaults) and apply dotted overrides like {'optim.lr': 1e-6} or
    {'optim.lr': '1e-6'} (strings are parsed by the field's type, as ``--set`` gives them; they win over the file).
    Relative ``data.graph_dir``/``data.build_input`` in a file are relative to that file (``path=True`` fields).
    ``preset``: the ``--preset`` flag (the file's ``preset:`` otherwise, else paper)."""
    return load(TrainConfig, path, overrides, preset=preset, renamed=RENAMED, validate=_validate)


def _validate(c: TrainConfig) -> None:
    """Cross-field checks (single fields are checked by their declared type and range when loaded)."""
    if not c.credit.answerer.strip():
        raise ConfigError("credit.answerer: expected 'reference' or a model name/path, got ''")
    r = c.rollout
    if r.interface == "free-query" and r.constrain_actions:
        raise ConfigError("rollout.constrain_actions needs the menu interface (free-query replies have no ids)")
    from harness_g.training.credit import MENU_ONLY_SCHEMES

    if r.interface == "free-query" and c.credit.scheme in MENU_ONLY_SCHEMES:
        # appendix "Factorial credit control": the free-query arms are outcome-only or IGPO; frontier-relative credit
        # needs an enumerable same-state action set, which only the menu has
        raise ConfigError(f"credit.scheme {c.credit.scheme!r} needs rollout.interface menu: the paper evaluates SNC only "
                          "on the action menu (paper appendix 'Factorial credit control'); train the free-query "
                          "arm with credit.scheme outcome or igpo")
    _check_dapo(c.optim)
    if r.vllm and r.generator != "vllm":
        raise ConfigError(f"rollout.vllm settings are given but rollout.generator is {r.generator!r}")
    # the paper's response budget (Table "Hyperparameter settings for Harness-G (3B)"): every rollout's policy tokens
    # fit in it
    longest = r.max_turns * r.max_action_tokens + r.max_answer_tokens
    if longest > r.max_response_tokens:
        raise ConfigError(f"rollout.max_response_tokens ({r.max_response_tokens}) < max_turns x max_action_tokens + "
                          f"max_answer_tokens ({longest}): a rollout could generate more than its budget")
    try:
        c.build_config()
    except ConfigError as exc:
        raise ConfigError(f"data.build: {exc}") from None


def _check_dapo(o: OptimConfig) -> None:
    """``optim.estimator: dapo`` is DAPO as its paper defines it (Yu et al. 2025, arXiv 2503.14476; verl's
    recipe/dapo): GRPO's group-normalised advantages with clip-higher (ε_low 0.2, ε_high 0.28), dynamic sampling
    (groups whose rewards are all equal are dropped), no KL term and a token-level loss. The loss is a token mean for
    every estimator here; the other three are settings, required rather than silently changed, so a run's
    config.yaml says what it ran. One line names every setting that contradicts DAPO."""
    if o.estimator != "dapo":
        return
    wrong = []
    if o.kl_coef != 0.0:
        wrong.append(f"optim.kl_coef=0 (no KL term; got {o.kl_coef})")
    if o.clip_eps_high is None or o.clip_eps_high <= o.clip_eps:
        wrong.append(f"optim.clip_eps_high > optim.clip_eps (clip-higher, DAPO: 0.28 over 0.2; got {o.clip_eps_high})")
    if not o.drop_zero_advantage_groups:
        wrong.append("optim.drop_zero_advantage_groups=true (dynamic sampling)")
    if wrong:
        raise ConfigError("optim.estimator dapo (arXiv 2503.14476) needs " + ", ".join(wrong) +
                          "; e.g. --set optim.kl_coef=0 --set optim.clip_eps_high=0.28 "
                          "--set optim.drop_zero_advantage_groups=true")
