"""The small-pool check (ours, a diagnostic; issue 31 item 3): does GRPO raise the sampled reward on the questions it
trains on?

    python benchmarks/repro_small.py small-pool --runs RUN_DIR [RUN_DIR ...] [--window 3] [--steps S] [--out FILE]

Each RUN_DIR is a ``harness-g train`` run on a fixed pool (``data.train_questions`` = ``rollout.questions_per_step``,
so every step plays the whole pool) that wrote every rollout (``log.keep_trajectories`` >= rollouts per step). Per run:
the mean rollout reward F1 (the training rollouts, sampled) in the last ``--window`` steps up to ``S`` minus that in the
first ``--window`` steps; per-question window means are differenced first, then averaged over the pool's questions.
The 95% interval resamples the rollouts within each question and window (``window_change``): it is an interval over
rollouts of those fixed questions, not over questions. Beside it: greedy F1 on the pool and held-out F1 / evidence
recall at step 0 and the last evaluation, the zero-advantage fraction per step, and, for two runs named ``outcome`` and
``snc`` (the folder names), SNC minus outcome-only on the change. The rule declared with the check
(``benchmarks/results/repro_small/README.md``): the run *learns the pool* if the interval's lower end is above 0,
*loses on the pool* if its upper end is below 0, else *not decided*; a run short of step S gets no verdict.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from repro_small import BOOTSTRAP, BOOTSTRAP_SEED, _percentile  # noqa: E402

from harness_g.errors import ConfigError  # noqa: E402

#: per question: (rewards in the first window, rewards in the last window)
Windows = dict[str, tuple[list[float], list[float]]]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ConfigError(f"{path}: missing (is {path.parent} a harness-g train run?)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _config(run: Path) -> dict[str, Any]:
    import yaml

    path = run / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{path}: missing (is {run} a harness-g train run?)")
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def rewards_by_step(run: Path) -> dict[int, list[tuple[str, float]]]:
    """``{step: [(question, reward F1), ...]}`` from ``run/rollouts.jsonl``; refuses a run whose steps logged fewer
    rollouts than they played (``rollout.group_size`` x ``rollout.questions_per_step``): a window of a sample is not
    the measure."""
    rollout = _config(run).get("rollout", {})
    per_step = int(rollout.get("group_size", 0)) * int(rollout.get("questions_per_step", 0))
    steps: dict[int, list[tuple[str, float]]] = {}
    for row in _jsonl(run / "rollouts.jsonl"):
        steps.setdefault(int(row["step"]), []).append((str(row["question"]), float(row["reward"])))
    short = sorted(s for s, rows in steps.items() if len(rows) != per_step)
    if short:
        raise ConfigError(f"{run}: step {short[0]} logged {len(steps[short[0]])} rollouts of {per_step} played "
                          f"(set log.keep_trajectories >= {per_step})")
    return steps


def windows(steps: dict[int, list[tuple[str, float]]], first: Sequence[int], last: Sequence[int]) -> Windows:
    """Per question (sorted, so the bootstrap below does not depend on dict order): its rewards in the ``first`` steps
    and in the ``last`` steps. A question missing from either window is refused (the pool is not fixed)."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for which, span in ((0, first), (1, last)):
        for step in span:
            for q, r in steps.get(step, []):
                out.setdefault(q, ([], []))[which].append(r)
    missing = [q for q, (a, b) in out.items() if not a or not b]
    if missing or not out:
        raise ConfigError(f"question {missing[0]!r} is not in both windows: not a fixed pool" if missing
                          else "no rollouts in the windows")
    return {q: out[q] for q in sorted(out)}


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def _change(w: Windows) -> float:
    return _mean([_mean(b) - _mean(a) for a, b in w.values()])


def _resample(w: Windows, rng: random.Random) -> Windows:
    return {q: ([rng.choice(a) for _ in a], [rng.choice(b) for _ in b]) for q, (a, b) in w.items()}


def window_change(w: Windows, *, resamples: int = BOOTSTRAP, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """``{mean, lo, hi, questions, rollouts_first, rollouts_last}``: the last window's mean reward minus the first's,
    per question then averaged over questions, with the 2.5 / 97.5 percentiles of ``resamples`` stratified resamples
    (the rollouts of each question and window drawn with replacement, fixed ``seed``)."""
    rng = random.Random(seed)
    draws = sorted(_change(_resample(w, rng)) for _ in range(resamples))
    return {"mean": _change(w), "lo": _percentile(draws, 2.5), "hi": _percentile(draws, 97.5), "questions": len(w),
            "rollouts_first": sum(len(a) for a, _ in w.values()), "rollouts_last": sum(len(b) for _, b in w.values())}


def difference(wa: Windows, wb: Windows, *, resamples: int = BOOTSTRAP, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """Run a's change minus run b's (``window_change``), the two runs resampled independently (their rollouts are)."""
    rng = random.Random(seed)
    draws = sorted(_change(_resample(wa, rng)) - _change(_resample(wb, rng)) for _ in range(resamples))
    return {"mean": _change(wa) - _change(wb), "lo": _percentile(draws, 2.5), "hi": _percentile(draws, 97.5)}


def verdict(change: dict[str, Any]) -> str:
    """The declared rule: lower end above 0 -> learns the pool; upper end below 0 -> loses on the pool."""
    return "learns the pool" if change["lo"] > 0 else "loses on the pool" if change["hi"] < 0 else "not decided"


def _evaluations(run: Path) -> dict[str, dict[int, dict[str, Any]]]:
    out: dict[str, dict[int, dict[str, Any]]] = {}
    for r in _jsonl(run / "eval.jsonl"):
        out.setdefault(r["split"], {})[int(r["step"])] = {k: r.get(k) for k in ("questions", "f1", "em", "evidence_recall")}
    return out


def summarise_run(run: Path, window: int, steps: int | None) -> tuple[dict[str, Any], Windows | None]:
    """One run's record and its windows (None when it is short of ``steps``, default its ``optim.steps``)."""
    target = steps or int(_config(run).get("optim", {}).get("steps", 0))
    if window < 1 or 2 * window > target:
        raise ConfigError(f"--window {window}: needs 1 <= window and two windows within {target} steps")
    by_step = rewards_by_step(run)
    metrics = _jsonl(run / "metrics.jsonl")
    reached = max(by_step, default=0)
    record: dict[str, Any] = {
        "run": str(run), "steps": target, "reached": reached,
        "reward_f1_by_step": {str(s): round(_mean([r for _, r in by_step[s]]), 4) for s in sorted(by_step)},
        "zero_adv_frac_by_step": {str(m["step"]): m.get("zero_adv_frac") for m in metrics},
        "evaluations": _evaluations(run)}
    if reached < target:
        record.update(change=None, verdict=f"not run to step {target} (reached {reached}): no verdict")
        return record, None
    w = windows(by_step, range(1, window + 1), range(target - window + 1, target + 1))
    record["change"] = window_change(w)
    record["first_steps"], record["last_steps"] = [1, window], [target - window + 1, target]
    record["per_question"] = {q: {"first": round(_mean(a), 4), "last": round(_mean(b), 4)} for q, (a, b) in w.items()}
    record["verdict"] = verdict(record["change"])
    return record, w


def small_pool(runs: Sequence[Path], *, window: int = 3, steps: int | None = None) -> dict[str, Any]:
    """The check's record over ``runs`` (keyed by folder name); ``snc_minus_outcome`` when runs named outcome and snc
    both reached the step."""
    records: dict[str, Any] = {}
    wins: dict[str, Windows] = {}
    for run in runs:
        if run.name in records:
            raise ConfigError(f"{run}: two runs named {run.name!r}")
        records[run.name], w = summarise_run(run, window, steps)
        if w is not None:
            wins[run.name] = w
    data: dict[str, Any] = {"kind": "small_pool", "window": window, "runs": records}
    if "snc" in wins and "outcome" in wins:
        data["snc_minus_outcome"] = difference(wins["snc"], wins["outcome"])
    return data
