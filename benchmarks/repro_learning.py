"""Issue 31 item 3: does training with the menu and SNC improve a policy more than outcome-only training and more than
the free-query arm (the paper's Tables 1-2, at the scale a machine here allows)?

    python benchmarks/repro_small.py learn --graph GRAPH_DIR --out DIR [--arms outcome,snc,free-query] [--seeds 0]
        [--steps 60] [--round-steps 10] [--eval-questions 50] [--budget-s S] [--set KEY=VALUE ...]

Each arm is the packaged training config of the same name (``training/configs/learning/<arm>.yaml``: SmolLM2-135M
with LoRA; the three differ only in their ``# arm`` lines), trained by ``harness-g train`` into
``DIR/learning/<arm>-seed<S>`` on ``--graph`` (its own questions; the last ``--eval-questions`` are held out and never
trained on, the same for every arm). Same seeds, data order (``DataOrder`` of the seed) and step budget for all arms.

**In pieces.** Arms advance in rounds of ``--round-steps`` steps, every arm and seed in turn, each piece resuming
from its run's latest checkpoint (``harness-g train --resume``: optimiser, scheduler, RNG and data position), so a
budget cut (``--budget-s``: no piece starts after it; or a killed process: the trainer checkpoints every step) leaves
the arms at equal steps, give or take one round, and the next call — on this machine or a GPU session's — goes on.
A later call may add seeds (``--seeds 0,1`` after ``--seeds 0``): the new seeds' runs start beside the old ones.
Every piece ends with the trainer's greedy held-out evaluation (F1, EM, evidence recall per question, eval.jsonl), so
the held-out curve has a point per round; ``DIR/learning/pieces.jsonl`` records each piece's steps, device and time.

``DIR/learning.json``: per arm and seed the steps reached, the training curve (rollout reward F1, zero-advantage
fraction, KL per step), the held-out evaluations, and at the last step every arm reached, each arm's gain over its
own step-0 evaluation and the paired differences of gains (SNC minus outcome-only, SNC minus free-query), each a mean
over held-out questions with a bootstrap 95% interval (questions resampled; seeds averaged per question first).
``python benchmarks/repro_small.py learn-summary --out DIR --seeds 3,4`` prints the same gains and differences over
some of the seeds only (one seed's, or a group's), and writes nothing.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import fmt_interval, fmt_num  # noqa: E402
from repro_small import MIN_QUESTIONS, bootstrap_mean, graph_identity, verdict  # noqa: E402

from harness_g.errors import ConfigError, HarnessError  # noqa: E402

LEARN_ARMS = ("outcome", "snc", "free-query")
ARM_LABELS = {"outcome": "menu, outcome-only GRPO", "snc": "menu, GRPO + SNC", "free-query": "free-query, outcome-only GRPO"}
#: set by this script or by the arm's own config: a --set of these would make the arms differ in more than the arm
RESERVED = ("seed", "optim.steps", "data.graph_dir", "data.build_format", "data.build_input", "data.eval_questions",
            "rollout.interface", "rollout.constrain_actions", "credit.scheme", "log.save_every")
METRICS = ("f1", "em", "evidence_recall")  # the held-out scores compared (eval.jsonl "scores" order)
CURVE_KEYS = ("reward_f1", "zero_adv_frac", "kl", "snc_credit_nonzero_frac", "time_total_s")
SETTINGS = "settings.json"
PIECES = "pieces.jsonl"


@dataclass(frozen=True)
class Learn:
    """One learning comparison: the graph, the arms and seeds, the held-out split and the shared ``--set`` overrides."""

    graph: Path
    out: Path
    arms: tuple[str, ...]
    seeds: tuple[int, ...]
    steps: int
    round_steps: int
    eval_questions: int
    free_action_tokens: int
    sets: tuple[str, ...]
    budget_s: float | None
    sft_questions: int = 0  # > 0: every arm warm-starts from an oracle-demonstration SFT on this many questions
    sft_epochs: int = 2

    @property
    def sft(self) -> dict[str, int] | None:
        """The warm start's settings as recorded (None: GRPO from the untrained model, the paper's)."""
        return {"questions": self.sft_questions, "epochs": self.sft_epochs} if self.sft_questions else None

    def sft_dir(self, arm: str, seed: int) -> Path:
        """The warm start of ``arm``: one per interface and seed (the two menu arms share theirs)."""
        return self.root / f"sft-{'free-query' if arm == 'free-query' else 'menu'}-seed{seed}"

    @property
    def root(self) -> Path:
        return self.out / "learning"

    def run_dir(self, arm: str, seed: int) -> Path:
        return self.root / f"{arm}-seed{seed}"


def parse_arms(text: str) -> tuple[str, ...]:
    arms = tuple(a.strip() for a in text.split(",") if a.strip())
    bad = [a for a in arms if a not in LEARN_ARMS]
    if bad or not arms:
        raise ConfigError(f"--arms {text!r}: expected a comma-separated subset of {', '.join(LEARN_ARMS)}")
    return arms


def check_sets(sets: Sequence[str]) -> None:
    from harness_g import config_loader

    for text in sets:
        key, _ = config_loader.parse_set(text)
        if key in RESERVED:
            raise ConfigError(f"--set {key}: set by the script or by the arm (--seeds, --steps, --graph, "
                              "--eval-questions, the arm configs)")


def settings_record(run: Learn) -> dict[str, Any]:
    """What every arm's numbers depend on (a later call must match it; ``steps``, ``round_steps`` and the budget may
    change, and the trainer's own resume check refuses any other difference of a run's config)."""
    record = {**graph_identity(run.graph), "arms": list(run.arms), "seeds": list(run.seeds),
              "eval_questions": run.eval_questions, "free_action_tokens": run.free_action_tokens, "sets": list(run.sets)}
    if run.sft is not None:  # absent without a warm start, so the records of earlier runs still match
        record["sft"] = run.sft
    return record


def check_settings(run: Learn) -> None:
    """Refuse a call whose settings differ from the runs already in ``run.root`` (one line naming the setting).
    Seeds may be *added*: a new seed is a new run beside the others and changes none of them, so ``--seeds 0,1``
    goes on from a ``--seeds 0`` comparison (the record is rewritten); dropping a seed is refused, since the summary
    would silently leave its runs out."""
    path = run.root / SETTINGS
    now = settings_record(run)
    if path.is_file():
        before = json.loads(path.read_text(encoding="utf-8"))
        for key in sorted(set(now) | set(before)):
            if key == "seeds" and set(before.get(key) or ()) <= set(now.get(key) or ()):
                continue
            if before.get(key) != now.get(key):
                raise ConfigError(f"{path}: these runs were made with {key}={before.get(key)!r}, now {key}="
                                  f"{now.get(key)!r}; go on with the same settings (more seeds may be added) or "
                                  "choose another --out")
        if before.get("seeds") == now["seeds"]:
            return
        now["seeds"] = list(before["seeds"]) + [s for s in now["seeds"] if s not in before["seeds"]]
    run.root.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(now, indent=1) + "\n", encoding="utf-8")


def latest_checkpoint(run_dir: Path) -> tuple[Path | None, int]:
    """The run's checkpoint with the highest step (``checkpoints/step-N`` or ``checkpoints/final``) and that step;
    ``(None, 0)`` for a run not started. A damaged checkpoint is the trainer's to refuse on resume."""
    from harness_g.training.checkpoint import STATE_FILE

    best: tuple[Path | None, int] = (None, 0)
    for state in sorted((run_dir / "checkpoints").glob(f"*/{STATE_FILE}")):
        step = int(json.loads(state.read_text(encoding="utf-8"))["step"])
        if step >= best[1]:
            best = (state.parent, step)
    return best


def prune_checkpoints(run_dir: Path) -> None:
    """Keep only the latest resume checkpoint of ``run_dir/checkpoints`` (the trainer saves one every step, ~20 MB
    each for SmolLM2 + LoRA); the exported ``checkpoint-N`` folders the held-out evaluations name are kept."""
    import shutil

    keep, _ = latest_checkpoint(run_dir)
    for path in (run_dir / "checkpoints").glob("*"):
        if path.is_dir() and path != keep:
            shutil.rmtree(path)


def _arm_sets(run: Learn, arm: str, seed: int) -> list[str]:
    """The ``--set`` arguments every command of ``arm`` and ``seed`` shares (training and its warm start)."""
    cmd = ["--set", f"data.graph_dir={run.graph}", "--set", "data.build_format=", "--set", "data.build_input=",
           "--set", f"data.eval_questions={run.eval_questions}", "--set", f"seed={seed}"]
    for text in run.sets:
        cmd += ["--set", text]
    if arm == "free-query":
        cmd += ["--set", f"rollout.max_action_tokens={run.free_action_tokens}"]
    return cmd


def train_command(run: Learn, arm: str, seed: int, steps: int, resume: Path | None) -> list[str]:
    """``harness-g train`` for ``arm`` and ``seed`` up to ``steps`` (resuming from ``resume``): the graph's own
    questions, the shared held-out split, a checkpoint every step; the free-query arm's replies get
    ``free_action_tokens`` tokens (a search string; ``rollout.max_action_tokens`` in --set is the menu arms'); with a
    warm start, ``model.init_adapter`` is the arm's SFT policy."""
    cmd = [sys.executable, "-m", "harness_g", "train", "--config", f"learning/{arm}", "--out", str(run.run_dir(arm, seed)),
           *_arm_sets(run, arm, seed), "--set", f"optim.steps={steps}", "--set", "log.save_every=1", "-q"]
    if run.sft is not None:
        cmd += ["--set", f"model.init_adapter={run.sft_dir(arm, seed) / 'policy'}"]
    if resume is not None:
        cmd += ["--resume", str(resume)]
    return cmd


def sft_command(run: Learn, arm: str, seed: int) -> list[str]:
    """``harness-g sft`` (the oracle-demonstration warm start, ours) under ``arm``'s config and shared settings."""
    return [sys.executable, "-m", "harness_g", "sft", "--config", f"learning/{arm}", "--out", str(run.sft_dir(arm, seed)),
            *_arm_sets(run, arm, seed), "--sft", f"questions={run.sft_questions}", "--sft", f"epochs={run.sft_epochs}", "-q"]


def warm_starts(run: Learn, log: Callable[[str], None], device: str) -> None:
    """Make every missing warm start (one per interface and seed) before any arm trains; each is a piece."""
    if run.sft is None:
        return
    for seed in run.seeds:
        for arm in run.arms:
            out = run.sft_dir(arm, seed)
            if (out / "sft.json").is_file():
                continue
            if out.exists():  # a killed SFT leaves a partial folder: it starts again from scratch
                import shutil

                shutil.rmtree(out)
            log(f"warm start {out.name}: SFT on {run.sft_questions} questions x {run.sft_epochs} epochs on {device}")
            start = time.monotonic()
            rc = run_piece(sft_command(run, arm, seed))
            with open(run.root / PIECES, "a", encoding="utf-8") as fh:
                fh.write(json.dumps({"sft": out.name, "seed": seed, "device": device,
                                     "seconds": round(time.monotonic() - start, 1), "rc": rc}) + "\n")
            if rc != 0:
                raise HarnessError(f"harness-g sft for {out.name} failed (rc {rc})")


def device_name() -> str:
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"


class Stopped(Exception):
    """SIGTERM reached this process while a piece trained (``timeout`` at the end of a device call)."""


def run_piece(cmd: list[str]) -> int:
    """Run one ``harness-g train`` piece; a SIGTERM to this process is passed on to it (the trainer stops cleanly at
    the end of its step, its last checkpoint kept; killed after 120 s) and raises :class:`Stopped`."""
    proc = subprocess.Popen(cmd)
    previous = signal.getsignal(signal.SIGTERM)

    def forward(signum: int, frame: Any) -> None:
        proc.send_signal(signal.SIGTERM)
        raise Stopped()

    signal.signal(signal.SIGTERM, forward)
    try:
        return proc.wait()
    except Stopped:
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def cmd_learn(run: Learn, log: Callable[[str], None]) -> dict[str, Any]:
    """Advance every arm and seed to ``run.steps`` in rounds (see the module docstring). ``learning.json`` is rewritten
    after every piece, so a run stopped by its budget, a SIGTERM or a failed piece still reports what it reached."""
    check_settings(run)
    t0, device = time.monotonic(), device_name()
    warm_starts(run, log, device)
    target = 0
    while target < run.steps:
        target = min(run.steps, target + run.round_steps)
        for seed in run.seeds:
            for arm in run.arms:
                resume, at = latest_checkpoint(run.run_dir(arm, seed))
                if at >= target:
                    continue
                if run.budget_s is not None and time.monotonic() - t0 > run.budget_s:
                    log(f"budget of {run.budget_s:.0f} s spent: stopping before {arm} seed {seed} step {at} -> {target}")
                    return aggregate(run.out)
                log(f"{arm} seed {seed}: steps {at} -> {target} on {device}")
                start, rc = time.monotonic(), None
                try:
                    rc = run_piece(train_command(run, arm, seed, target, resume))
                finally:  # also when stopped: the piece's finished steps count
                    reached = latest_checkpoint(run.run_dir(arm, seed))[1]
                    with open(run.root / PIECES, "a", encoding="utf-8") as fh:
                        fh.write(json.dumps({"arm": arm, "seed": seed, "from": at, "to": reached, "target": target,
                                             "device": device, "seconds": round(time.monotonic() - start, 1),
                                             "rc": rc}) + "\n")
                    prune_checkpoints(run.run_dir(arm, seed))
                    aggregate(run.out)
                if rc != 0:
                    raise HarnessError(f"harness-g train for {arm} seed {seed} failed (rc {rc}); its run "
                                       f"directory {run.run_dir(arm, seed)} keeps every finished step")
    return aggregate(run.out)


# -- aggregation ----------------------------------------------------------------------------------------------------
def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()] if path.is_file() else []


def read_run(run_dir: Path) -> dict[str, Any]:
    """One arm-seed run: its curve (one row per step), held-out evaluations by step and steps reached."""
    metrics = _jsonl(run_dir / "metrics.jsonl")
    evals = {r["step"]: r for r in _jsonl(run_dir / "eval.jsonl") if r.get("split") == "heldout" and "scores" in r}
    return {"steps": max([r["step"] for r in metrics], default=0),
            "curve": [{"step": r["step"], **{k: r.get(k) for k in CURVE_KEYS}} for r in metrics],
            "heldout": {step: {"f1": r["f1"], "em": r["em"], "evidence_recall": r.get("evidence_recall"),
                               "questions": r["questions"], "ids": [a[3] for a in r["answers"]], "scores": r["scores"]}
                        for step, r in sorted(evals.items())}}


def per_question(evaluation: dict[str, Any], metric: str) -> dict[str, float]:
    i = METRICS.index(metric)
    return {qid: s[i] for qid, s in zip(evaluation["ids"], evaluation["scores"]) if s[i] is not None}


def gains(runs: dict[int, dict[str, Any]], step: int, metric: str) -> dict[str, float]:
    """Per held-out question: the arm's score at ``step`` minus at step 0, averaged over the seeds that have both.
    Keyed in sorted question order, so the bootstrap that resamples these values does not depend on set order
    (``PYTHONHASHSEED``)."""
    per: dict[str, list[float]] = {}
    for r in runs.values():
        if 0 in r["heldout"] and step in r["heldout"]:
            before, after = per_question(r["heldout"][0], metric), per_question(r["heldout"][step], metric)
            for q in before.keys() & after.keys():
                per.setdefault(q, []).append(after[q] - before[q])
    return {q: sum(per[q]) / len(per[q]) for q in sorted(per)}


def aggregate(out: Path) -> dict[str, Any]:
    """``OUT/learning.json`` from the run directories under ``OUT/learning`` (see the module docstring)."""
    data = summarise(out)
    (out / "learning.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return data


def summarise(out: Path, seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """What ``learning.json`` holds, over ``seeds`` only (default: every seed of the comparison), written nowhere.
    A subset is read exactly as if the comparison had only those seeds: per-seed numbers (``seeds=[3]``) or a group
    of seeds apart from the rest (``seeds=[3, 4]``, e.g. a test declared after seeing the others)."""
    root = out / "learning"
    settings_path = root / SETTINGS
    if not settings_path.is_file():
        raise ConfigError(f"{root}: no learning runs there (run `learn` first)")
    settings = json.loads(settings_path.read_text(encoding="utf-8"))
    if seeds is not None:
        unknown = [s for s in seeds if s not in settings["seeds"]]
        if unknown or not seeds:
            raise ConfigError(f"--seeds {','.join(map(str, seeds))}: the comparison in {root} has seeds "
                              f"{','.join(map(str, settings['seeds']))}")
        settings = {**settings, "seeds": list(seeds)}
    runs = {arm: {seed: read_run(root / f"{arm}-seed{seed}") for seed in settings["seeds"]} for arm in settings["arms"]}
    common = set.intersection(*[set(r["heldout"]) for per in runs.values() for r in per.values()]) - {0}
    at = max(common, default=None)
    pieces = [p for p in _jsonl(root / PIECES) if seeds is None or p.get("seed") in seeds]
    arms: dict[str, Any] = {}
    for arm, per in runs.items():
        arms[arm] = {"label": ARM_LABELS[arm], "steps": {str(s): r["steps"] for s, r in per.items()},
                     "curve": {str(s): r["curve"] for s, r in per.items()},
                     "heldout": {str(s): {str(k): {m: v[m] for m in ("f1", "em", "evidence_recall", "questions")}
                                          for k, v in r["heldout"].items()} for s, r in per.items()},
                     "gain": {m: bootstrap_mean(list(gains(per, at, m).values())) for m in METRICS} if at else None,
                     "train_seconds": round(sum(p["seconds"] for p in pieces if p.get("arm") == arm), 1)}
    comparisons: dict[str, Any] = {}
    if at:
        for a, b in (("snc", "outcome"), ("snc", "free-query"), ("outcome", "free-query")):
            if a in runs and b in runs:
                comparisons[f"{a}_minus_{b}"] = {}
                for m in METRICS:
                    ga, gb = gains(runs[a], at, m), gains(runs[b], at, m)
                    comparisons[f"{a}_minus_{b}"][m] = bootstrap_mean([ga[q] - gb[q] for q in sorted(ga.keys() & gb.keys())])
    held = next((r["heldout"][0]["questions"] for per in runs.values() for r in per.values() if 0 in r["heldout"]), 0)
    config = _first_config(root, settings)
    data = {"kind": "learning", "settings": settings, "compared_at_step": at, "arms": arms, "comparisons": comparisons,
            "warm_starts": warm_start_records(root),
            "rests_on": {"heldout_questions": held, "seeds": settings["seeds"], "step": at, "sft": settings.get("sft"),
                         "devices": sorted({p["device"] for p in pieces}), "pieces": sum("arm" in p for p in pieces),
                         "model": config.get("model", {}).get("name"), "lora": config.get("model", {}).get("lora"),
                         "group_size": config.get("rollout", {}).get("group_size"),
                         "questions_per_step": config.get("rollout", {}).get("questions_per_step"),
                         "max_turns": config.get("rollout", {}).get("max_turns"),
                         "context": config.get("rollout", {}).get("context"),
                         "lr": config.get("optim", {}).get("lr"), "preset": config.get("preset")}}
    return data


def warm_start_records(root: Path) -> dict[str, Any]:
    """Per warm start under ``root`` (``sft-<interface>-seed<S>/sft.json``): its demonstrations (oracle agreement,
    action types, evidence recall, cut replies), sequences, steps, first and last loss, seconds and device."""
    out = {}
    for path in sorted(root.glob("sft-*/sft.json")):
        rec = json.loads(path.read_text(encoding="utf-8"))
        out[path.parent.name] = {k: rec.get(k) for k in ("sft", "demonstrations", "sequences", "trained_tokens", "steps",
                                                         "loss_first", "loss_last", "demonstrate_s", "train_s", "device")}
    return out


def _first_config(root: Path, settings: dict[str, Any]) -> dict[str, Any]:
    import yaml

    for arm in settings["arms"]:
        path = root / f"{arm}-seed{settings['seeds'][0]}" / "config.yaml"
        if path.is_file():
            return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {}


# -- the page's section ---------------------------------------------------------------------------------------------
def learning_section(data: dict[str, Any], plots: Path, stem: str = "learning") -> str:
    """Claim (c) on the page: the setting, per arm the held-out scores before and at the compared step with the gain
    and its interval, the paired differences of gains with a verdict each, and the curves."""
    from html import escape

    from harness_g.training.curves import line_chart

    r, at = data["rests_on"], data["compared_at_step"]
    n = r["heldout_questions"]
    basis = (f"{n} held-out questions (never trained on), seeds {', '.join(map(str, r['seeds']))}, "
             f"{r['model']}{' + LoRA' if r['lora'] else ''}, {r['preset']} preset, N_g = {r['group_size']}, "
             f"{r['questions_per_step']} question(s) per step, T = {r['max_turns']} ({r['context']} context), lr {r['lr']}; "
             f"{r['pieces']} training pieces on {', '.join(r['devices']) or 'no device yet'}"
             + (f"; changed from the arm configs: {', '.join(data['settings']['sets'])}" if data["settings"].get("sets") else ""))
    head = ("<h2>Claim (c): menu + SNC training improves the policy more than outcome-only and the free-query arm</h2>"
            f"<p class='basis'>Rests on: {escape(basis)}. {escape(warm_start_line(data))}</p>")
    if at is None:
        return head + "<p class='verdict'><b>Not measured yet.</b> No step after 0 has a held-out evaluation in every arm.</p>"
    rows = []
    for arm, a in data["arms"].items():
        seeds = list(a["heldout"])
        before = [a["heldout"][s].get("0") for s in seeds]
        after = [a["heldout"][s].get(str(at)) for s in seeds]
        g = a["gain"] or {}
        rows.append(f"<tr><td>{escape(a['label'])}</td><td>{', '.join(map(str, a['steps'].values()))}</td>"
                    + "".join(f"<td>{_seed_mean(before, m)} &rarr; {_seed_mean(after, m)}</td>"
                              f"<td>{fmt_interval(g[m], '.3f')}</td>" for m in METRICS)
                    + f"<td>{a['train_seconds']:.0f}</td></tr>")
    verdicts = []
    for name, comp in data["comparisons"].items():
        a, b = name.split("_minus_")
        if a == "outcome":
            continue
        st, sent = verdict(comp["f1"], "mean", null=0.0, claim=f"held-out F1 gain of {a} minus {b}", n=n)
        verdicts.append(f"<li><b>{escape(ARM_LABELS[a])} gains more held-out F1 than {escape(ARM_LABELS[b])} "
                        f"(difference {fmt_interval(comp['f1'], '.3f')}): "
                        f"{escape(st)}.</b> {escape(sent)} "
                        f"Evidence recall: {fmt_interval(comp['evidence_recall'], '.3f')}.</li>")
    charts = []
    for key, title in (("reward_f1", "Training rollout reward F1 (seed mean)"),
                       ("zero_adv_frac", "Zero-advantage group fraction (seed mean)")):
        steps, series = _curves(data, key)
        if steps:
            chart = line_chart(title, steps, series)
            (plots / f"{stem}_{key}.svg").write_text(chart, encoding="utf-8")
            charts.append(chart)
    steps, series = _heldout_curves(data)
    if steps:
        chart = line_chart("Held-out greedy F1 (seed mean)", steps, series)
        (plots / f"{stem}_heldout_f1.svg").write_text(chart, encoding="utf-8")
        charts.append(chart)
    return (head + f"<p>Compared at step {at} (the last step every arm and seed reached with a held-out evaluation); "
            "gains are each arm's own change from its step-0 evaluation, per question, with a bootstrap 95% interval "
            f"over questions. A verdict needs at least {MIN_QUESTIONS} questions and a whole interval on one side.</p>"
            "<table><tr><th>arm</th><th>steps</th><th>F1 before &rarr; after</th><th>F1 gain</th><th>EM before &rarr; after</th>"
            "<th>EM gain</th><th>evidence recall before &rarr; after</th><th>recall gain</th><th>train s</th></tr>" + "".join(rows)
            + f"</table><ul>{''.join(verdicts)}</ul><div class='charts'>{''.join(charts)}</div>")


def warm_start_line(data: dict[str, Any]) -> str:
    """One sentence on how the arms started: the untrained model, or the oracle-demonstration SFT (ours)."""
    sft = data["rests_on"].get("sft")
    if not sft:
        return "GRPO from the untrained model: no SFT warm start."
    parts = [f"{name}: {w['demonstrations']['questions']} questions, {w['sequences']} sequences, {w['steps']} steps, "
             f"loss {w['loss_first']:.3f} -> {w['loss_last']:.3f}, oracle agreement {w['demonstrations']['agreement']:.2f}"
             for name, w in data.get("warm_starts", {}).items()]
    return (f"Every arm warm-started from an SFT on oracle demonstrations (ours, not the paper's; {sft['questions']} "
            f"training questions x {sft['epochs']} epochs; step 0 is the warm-started policy): " + "; ".join(parts) + ".")


def _seed_mean(evals: list[dict[str, Any] | None], metric: str) -> str:
    """The mean of ``metric`` over the seeds' evaluations that have it, formatted; "n/a" when none has."""
    vs = [e[metric] for e in evals if e and e.get(metric) is not None]
    return fmt_num(sum(vs) / len(vs), ".3f") if vs else "n/a"


def _series(points: dict[str, list[tuple[int, float]]]) -> tuple[list[int], dict[str, list[float | None]]]:
    """Per arm ``(step, value)`` points (several seeds may share a step) -> the union of steps and, per arm, the
    seed mean at each step (None where the arm has no point)."""
    by_arm: dict[str, dict[int, list[float]]] = {}
    for arm, pts in points.items():
        for step, value in pts:
            by_arm.setdefault(arm, {}).setdefault(step, []).append(value)
    steps = sorted({s for per in by_arm.values() for s in per})
    return steps, {arm: [sum(per[s]) / len(per[s]) if s in per else None for s in steps] for arm, per in by_arm.items()}


def _curves(data: dict[str, Any], key: str) -> tuple[list[int], dict[str, list[float | None]]]:
    """The training curve of ``key`` (metrics.jsonl) per arm, seed mean per step."""
    return _series({arm: [(row["step"], row[key]) for rows in a["curve"].values() for row in rows
                          if row.get(key) is not None] for arm, a in data["arms"].items()})


def _heldout_curves(data: dict[str, Any]) -> tuple[list[int], dict[str, list[float | None]]]:
    """Held-out greedy F1 per arm at every evaluated step, seed mean."""
    return _series({arm: [(int(step), e["f1"]) for evals in a["heldout"].values() for step, e in evals.items()]
                    for arm, a in data["arms"].items()})
