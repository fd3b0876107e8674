"""The small-pool check (ours, a diagnostic; issue 31 item 3): does GRPO raise the sampled reward on the questions it
trains on?

    python benchmarks/repro_small.py small-pool --runs RUN_DIR [RUN_DIR ...] [--window 3] [--steps S] [--out FILE]

Each RUN_DIR is a ``harness-g train`` run on a fixed pool (``data.train_questions`` = ``rollout.questions_per_step``,
so every step plays the whole pool) that wrote every rollout (``log.keep_trajectories`` >= rollouts per step). Per run:
the mean rollout reward F1 (the training rollouts, sampled) in the last ``--window`` steps up to ``S`` minus that in the
first ``--window`` steps; per-question window means are differenced first, then averaged over the pool's questions.
The 95% interval resamples the rollouts within each question and window (``window_change``): it is an interval over
rollouts of those fixed questions, not over questions. Beside it: greedy F1 on the pool and held-out F1 / evidence
recall at step 0 and the last evaluation, the zero-advantage fraction per step, and the same change over only the
pool's questions that do not offer their answer (``offers_its_answer``: no gold answer appears in the question's
text, so choosing between the names a question shows cannot answer it). Runs are paired by their config's
``seed`` and arm (``arm_of``: ``credit.scheme``, with another ``rollout.interface`` prefixed): for each seed with an
``outcome`` and an ``snc`` run, SNC minus outcome-only on the change, and menu outcome-only minus the free-query arm
(``free-query/outcome``); per arm, the verdicts by seed (the replication on seeds 1 and 2). One call reads runs of one pool (the same
questions in their rollouts); another pool (``data.train_offset``) gets its own ``--out``, e.g.
``small-pool/offset4/small_pool.json``, and the page shows every ``small-pool/**/small_pool.json``. The rule declared
with the check (``benchmarks/results/repro_small/README.md``): the run *learns the pool* if the interval's lower end is
above 0, *loses on the pool* if its upper end is below 0, else *not decided*; a run short of step S gets no verdict.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import fmt_interval  # noqa: E402
from repro_learning import _jsonl as _read_jsonl  # noqa: E402
from repro_small import BOOTSTRAP, BOOTSTRAP_SEED, _percentile  # noqa: E402

from harness_g.errors import ConfigError  # noqa: E402

#: per question: (rewards in the first window, rewards in the last window)
Windows = dict[str, tuple[list[float], list[float]]]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a run's log; refused when the file is missing (``repro_learning._jsonl`` reads it as empty)."""
    if not path.is_file():
        raise ConfigError(f"{path}: missing (is {path.parent} a harness-g train run?)")
    return _read_jsonl(path)


def _config(run: Path) -> dict[str, Any]:
    import yaml

    path = run / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{path}: missing (is {run} a harness-g train run?)")
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}


def rewards_by_step(run: Path, config: dict[str, Any],
                    rows: list[dict[str, Any]]) -> dict[int, list[tuple[str, float]]]:
    """``{step: [(question, reward F1), ...]}`` from ``rows`` (``run/rollouts.jsonl``); refuses a run whose steps
    logged fewer rollouts than they played (``rollout.group_size`` x ``rollout.questions_per_step`` of its
    ``config``): a window of a sample is not the measure."""
    rollout = config.get("rollout", {})
    per_step = int(rollout.get("group_size", 0)) * int(rollout.get("questions_per_step", 0))
    steps: dict[int, list[tuple[str, float]]] = {}
    for row in rows:
        steps.setdefault(int(row["step"]), []).append((str(row["question"]), float(row["reward"])))
    short = sorted(s for s, rows in steps.items() if len(rows) != per_step)
    if short:
        raise ConfigError(f"{run}: step {short[0]} logged {len(steps[short[0]])} rollouts of {per_step} played "
                          f"(set log.keep_trajectories >= {per_step})")
    return steps


def offers_its_answer(question: str, answers: Sequence[str]) -> bool:
    """The rule declared with the second pool (README, "another pool"): a question *offers its answer* when one of its
    gold answers (any alias), lower-cased, appears in its lower-cased text, e.g. a comparison question that names the
    two films it asks about. Such a question can be answered by choosing between names it shows, without the graph."""
    text = question.lower()
    return any(a.strip() and a.strip().lower() in text for a in answers)


def offered_questions(rows: list[dict[str, Any]]) -> list[str]:
    """The questions of a run's rollout ``rows`` that offer their answer (:func:`offers_its_answer`, the gold answers
    the rollouts logged), sorted."""
    return sorted({str(r["question"]) for r in rows if offers_its_answer(str(r["question"]), r.get("answers") or [])})


def windows(steps: dict[int, list[tuple[str, float]]], first: Sequence[int], last: Sequence[int]) -> Windows:
    """Per question (sorted, so the bootstrap below does not depend on dict order): its rewards in the ``first`` steps
    and in the ``last`` steps. A question missing from either window is refused (the pool is not fixed)."""
    out: dict[str, tuple[list[float], list[float]]] = {}
    for which, span in ((0, first), (1, last)):
        for step in span:
            for q, r in steps.get(step, []):
                out.setdefault(q, ([], []))[which].append(r)
    missing = [q for q, (a, b) in out.items() if not a or not b]
    if missing:
        raise ConfigError(f"question {missing[0]!r} is not in both windows: not a fixed pool")
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


def summarise_run(run: Path, window: int, steps: int | None,
                  device: str = "not recorded") -> tuple[dict[str, Any], Windows | None]:
    """One run's record and its windows (None when it is short of ``steps``, default its ``optim.steps``)."""
    config = _config(run)
    target = steps or int(config.get("optim", {}).get("steps", 0))
    if window < 1 or 2 * window > target:
        raise ConfigError(f"--window {window}: needs 1 <= window and two windows within {target} steps")
    rows = _jsonl(run / "rollouts.jsonl")
    by_step = rewards_by_step(run, config, rows)
    metrics = _jsonl(run / "metrics.jsonl")
    reached = max(by_step, default=0)
    record: dict[str, Any] = {
        "run": str(run), "arm": arm_of(config), "seed": config.get("seed"),
        "pool": sorted({q for rows in by_step.values() for q, _ in rows}), "steps": target, "reached": reached,
        "rests_on": _rests_on(config, device), "offers_its_answer": offered_questions(rows),
        "reward_f1_by_step": {str(s): round(_mean([r for _, r in by_step[s]]), 4) for s in sorted(by_step)},
        "zero_adv_frac_by_step": {str(m["step"]): m.get("zero_adv_frac") for m in metrics},
        "evaluations": _evaluations(run)}
    if reached < target:
        record.update(change=None, change_not_offered=None,
                      verdict=f"not run to step {target} (reached {reached}): no verdict")
        return record, None
    first, last = range(1, window + 1), range(target - window + 1, target + 1)
    unlogged = [s for s in (*first, *last) if s not in by_step]
    if unlogged:
        raise ConfigError(f"{run}: step {unlogged[0]} of the windows logged no rollouts (rollouts.jsonl)")
    w = windows(by_step, first, last)
    record["change"] = window_change(w)
    record["first_steps"], record["last_steps"] = [1, window], [target - window + 1, target]
    record["per_question"] = {q: {"first": round(_mean(a), 4), "last": round(_mean(b), 4)} for q, (a, b) in w.items()}
    record["verdict"] = verdict(record["change"])
    rest = {q: v for q, v in w.items() if q not in record["offers_its_answer"]}
    record["change_not_offered"] = window_change(rest) if rest else None
    return record, w


def arm_of(config: dict[str, Any]) -> str | None:
    """A run's arm from its ``config.yaml``: the menu arms by ``credit.scheme`` (``outcome``, ``snc``, ...), another
    ``rollout.interface`` prefixed to it (``free-query/outcome``, the paper's free-query arm), so the free-query arm
    does not pair as the menu's outcome-only run; None without a ``credit.scheme``."""
    scheme = config.get("credit", {}).get("scheme")
    interface = config.get("rollout", {}).get("interface", "menu")
    return scheme if scheme is None or interface == "menu" else f"{interface}/{scheme}"


def _rests_on(c: dict[str, Any], device: str) -> dict[str, Any]:
    """What a run's numbers rest on, from its ``config.yaml`` (``c``)."""
    model, rollout = c.get("model", {}), c.get("rollout", {})
    return {"model": model.get("name"), "lora": model.get("lora"), "warm_start": model.get("init_adapter"),
            "pool_questions": c.get("data", {}).get("train_questions"),
            "pool_offset": c.get("data", {}).get("train_offset", 0), "group_size": rollout.get("group_size"),
            "questions_per_step": rollout.get("questions_per_step"), "max_turns": rollout.get("max_turns"),
            "context": rollout.get("context"), "lr": c.get("optim", {}).get("lr"), "seed": c.get("seed"),
            "preset": c.get("preset"), "device": device}


def small_pool(runs: Sequence[Path], *, window: int = 3, steps: int | None = None,
               device: str = "not recorded") -> dict[str, Any]:
    """The check's record over ``runs`` (keyed by folder name). Runs pair by (arm, ``seed``) of their configs (the arm:
    :func:`arm_of`): ``snc_minus_outcome_by_seed`` for each seed whose outcome and snc runs both reached the step,
    ``menu_outcome_minus_free_query_by_seed`` likewise for the menu's and the free-query arm's outcome-only runs;
    ``by_arm`` the verdicts per arm and seed. Two runs of the same arm and seed are refused (which pairs is ambiguous), and
    so are runs whose rollouts played other questions than the first run's (another pool: its own call);
    ``device`` is a label (the runs do not record where they ran)."""
    records: dict[str, Any] = {}
    wins: dict[tuple[Any, Any], Windows] = {}
    owner: dict[tuple[Any, Any], Path] = {}
    by_arm: dict[str, Any] = {}
    for run in runs:
        if run.name in records:
            raise ConfigError(f"{run}: two runs named {run.name!r}")
        rec, w = summarise_run(run, window, steps, device)
        first = next(iter(records.values()), rec)
        if rec["pool"] != first["pool"]:
            raise ConfigError(f"{run}: its rollouts play another pool than {first['run']}'s ({len(rec['pool'])} "
                              f"question(s), {len(set(rec['pool']) - set(first['pool']))} not in it): pass the runs of "
                              "one pool per call, each pool with its own --out")
        key = (rec["arm"], rec["seed"])
        if rec["arm"] is not None and key in owner:
            raise ConfigError(f"{run}: a second {rec['arm']} run of seed {rec['seed']} (after {owner[key]}): "
                              "pass one run per arm and seed")
        owner[key], records[run.name] = run, rec
        if w is not None:
            wins[key] = w
        if rec["arm"] is not None:
            by_arm.setdefault(rec["arm"], {"verdicts": {}})["verdicts"][str(rec["seed"])] = rec["verdict"]
    for arm in by_arm.values():
        verdicts = list(arm["verdicts"].values())
        arm.update(seeds=len(verdicts), learns_the_pool=verdicts.count("learns the pool"),
                   loses_on_the_pool=verdicts.count("loses on the pool"))
    def minus(a: str, b: str) -> dict[str, Any]:
        return {str(seed): difference(wins[a, seed], w)
                for (arm, seed), w in sorted(wins.items(), key=str) if arm == b and (a, seed) in wins}

    return {"kind": "small_pool", "window": window, "runs": records, "by_arm": by_arm,
            "snc_minus_outcome_by_seed": minus("snc", "outcome"),
            "menu_outcome_minus_free_query_by_seed": minus("outcome", FREE_QUERY)}


#: the free-query arm's label (:func:`arm_of`): outcome-only GRPO on the free-query interface
FREE_QUERY = "free-query/outcome"


#: where ``page`` looks for the check's records under the result root: one file per pool
PAGE_DIR, PAGE_NAME = Path("small-pool"), "small_pool.json"


def small_pool_section(root: Path) -> str:
    """The page's section for every ``root/small-pool/**/small_pool.json`` ("" when there is none), one table per pool
    (:func:`_pool_table`)."""
    paths = sorted((root / PAGE_DIR).glob(f"**/{PAGE_NAME}"), key=lambda p: (len(p.parts), str(p)))
    if not paths:
        return ""
    return ("<h2>Does training raise the reward on the questions it trains on? (ours: the small-pool check)</h2>"
            + "".join(_pool_table(json.loads(p.read_text(encoding="utf-8")), p.relative_to(root)) for p in paths))


def _pool_table(data: dict[str, Any], path: Path) -> str:
    """One pool's table from its record ``data`` (read from ``path``): per run, the sampled reward of the pool by step,
    the window change with its interval and verdict, the pool's and the held-out greedy scores at step 0 and after;
    SNC minus outcome-only."""
    from html import escape

    def num(x: Any) -> str:
        return "-" if x is None else f"{x:.3f}"

    def evals(rec: dict[str, Any], split: str, metric: str) -> str:
        by = rec["evaluations"].get(split, {})
        if not by:
            return "-"
        first, last = by[min(by, key=int)], by[max(by, key=int)]
        return f"{num(first.get(metric))} &rarr; {num(last.get(metric))}"

    recs = list(data["runs"].values())
    rows = []
    for name, rec in data["runs"].items():
        curve = " ".join(f"{v:.2f}" for v in rec["reward_f1_by_step"].values())
        change, rest = (fmt_interval(rec.get(k), "+.3f", none="-") for k in ("change", "change_not_offered"))
        zero = [v for v in rec["zero_adv_frac_by_step"].values() if v is not None]
        rows.append(f"<tr><td>{escape(name)}</td><td>{rec.get('seed')}</td><td>{rec['reached']} of {rec['steps']}</td>"
                    f"<td>{curve}</td><td>{change}</td><td>{escape(rec['verdict'])}</td><td>{rest}</td>"
                    f"<td>{evals(rec, 'train', 'f1')}</td><td>{evals(rec, 'heldout', 'f1')}</td>"
                    f"<td>{evals(rec, 'heldout', 'evidence_recall')}</td>"
                    f"<td>{num(sum(zero) / len(zero)) if zero else '-'}</td></tr>")
    basis = _basis([r["rests_on"] for r in recs], [r["steps"] for r in recs])
    extra = "".join(f"<p>{label} on the change, seed {escape(seed)}: {fmt_interval(d, '+.3f', none='-')}</p>"
                    for key, label in (("snc_minus_outcome_by_seed", "SNC minus outcome-only"),
                                       ("menu_outcome_minus_free_query_by_seed",
                                        "menu outcome-only minus the free-query arm"))
                    for seed, d in data.get(key, {}).items())
    extra += "".join(f"<p>{escape(arm)}: learns the pool in {a['learns_the_pool']} of {a['seeds']} seed(s), loses on "
                     f"it in {a['loses_on_the_pool']}</p>" for arm, a in data.get("by_arm", {}).items())
    w = data["window"]
    pool, offered = recs[0]["pool"], recs[0]["offers_its_answer"]
    return (f"<h3>{escape(str(path))}: a pool of {len(pool)} question(s): {escape('; '.join(pool))}</h3>"
            f"<p class='basis'>Rests on: {escape(basis)}. The change is the mean sampled reward F1 of the last {w} "
            f"steps minus the first {w}, per question then averaged, with a 95% bootstrap interval over each "
            "question's rollouts (an interval over rollouts of these questions, not over questions). "
            f"{len(offered)} of the {len(pool)} offer their answer (a gold answer appears in the question's text, e.g. "
            "one of two names it compares): the second change leaves them out.</p>"
            "<table><tr><th>run</th><th>seed</th><th>steps</th><th>pool reward F1 by step (sampled)</th>"
            "<th>change [95% CI]</th><th>verdict (declared rule)</th>"
            "<th>change over the questions that do not offer their answer [95% CI]</th>"
            "<th>pool greedy F1, step 0 &rarr; last</th>"
            "<th>held-out F1</th>"
            "<th>held-out evidence recall</th><th>zero-advantage fraction of groups (mean)</th></tr>"
            + "".join(rows) + "</table>" + extra)


def _basis(rests: list[dict[str, Any]], steps: list[int]) -> str:
    """The page's "Rests on" sentence for the runs' ``rests_on`` records: each setting's value when the runs share it,
    else "varies by run"; the seeds listed (the table names each run's seed)."""
    def v(key: str) -> Any:
        values = {json.dumps(r.get(key), sort_keys=True) for r in rests}
        return rests[0].get(key) if len(values) == 1 else "varies by run"

    seeds = ", ".join(str(s) for s in sorted({r.get("seed") for r in rests}, key=str))
    warm = [bool(r.get("warm_start")) for r in rests]
    start = ("each warm-started from an SFT adapter" if all(warm) else "no warm start" if not any(warm)
             else "some warm-started from an SFT adapter")
    lora = v("lora")
    lora = " (LoRA varies by run)" if lora == "varies by run" else " + LoRA" if lora else ""
    n_steps = steps[0] if len(set(steps)) == 1 else "varies by run"
    offset = v("pool_offset")
    where = (f"training questions {offset + 1}-{offset + v('pool_questions')} of the split"
             if isinstance(offset, int) and isinstance(v("pool_questions"), int) else f"offset {offset}")
    return (f"a pool of {v('pool_questions')} training questions ({where}), all played every step, "
            f"{v('group_size')} rollouts each (temperature 1.0), {n_steps} steps, seed(s) {seeds}, {v('model')}{lora} "
            f"(lr {v('lr')}), "
            f"T = {v('max_turns')} ({v('context')} context), {v('preset')} preset, {start}, {v('device')}")
