"""Issue 31: retrieval-equivalence, credit quality and (repro_learning.py) learning with real models, and the page.

    python benchmarks/repro_small.py equivalence --graph GRAPH_DIR --questions FILE --format FMT --n-questions N --out DIR
    python benchmarks/repro_small.py credit      --graph GRAPH_DIR --questions FILE --format FMT --n-questions N --out DIR
    python benchmarks/repro_small.py learn       --graph GRAPH_DIR --out DIR [--steps N --round-steps R ...]  (repro_learning.py)
    python benchmarks/repro_small.py learn-summary --out DIR --seeds 3,4   (learn's numbers over some seeds; writes nothing)
    python benchmarks/repro_small.py small-pool --runs RUN_DIR ... [--window 3] [--out FILE]   (ours: a fixed pool's reward)
    python benchmarks/repro_small.py pool --from DIR [DIR ...] --out POOL_DIR   (repro_pool.py)
    python benchmarks/repro_small.py replay --from SRC --skip-questions K --n-questions N --out DST   (repro_replay.py)
    python benchmarks/repro_small.py page --out DIR

``equivalence``: N_g rollouts (``--group-size``, 8) per question of the same untrained policy (``--model``, SmolLM2-135M
by default; temperature 1.0), on the menu arm and on the transition-matched free-query arm, played by the trainer's
batched rollout path (:func:`harness_g.training.rollout.collect_rollouts`: one generate call per turn for every rollout
of ``--batch-questions`` groups). Per question: N_eq (the number of retrieval-equivalence classes of its group),
D_ret (N_eq >= 2) and D_query (>= 2 distinct query strings) as training/diagnostics.py defines them; per arm their
mean over questions with a bootstrap 95% interval (questions resampled, fixed seed) -> ``DIR/equivalence.json``.

``credit``: for every step of the menu rollouts, the label "this step surfaced a gold evidence unit" (it brought into
the scorer context a gold sentence, or a sentence of a gold paragraph, that was not there before) and the credit each
signal gives the step: SNC and its two ablations (frozen answerer g on read-only previews,
training/snc_scoring.py + training/credit.py), outcome-only (the rollout's GRPO A_out on each of its steps) and IGPO
(the turn advantage IGPO puts on the step, from the policy's beliefs). Per signal: the AUC of ranking gold-surfacing
steps above the others, with a bootstrap 95% interval over questions -> ``DIR/credit.json``.

``pool``: claims (a) and (b) over the questions of several result folders played under one setting (datasets, or
blocks of one list), re-aggregated from their JSON and caches -> ``POOL_DIR/pooled.json`` (repro_pool.py).

``replay``: questions K+1..K+N of an earlier result folder played again from its caches into a folder of their own
(nothing sampled; every record checked equal to the source's), the other side of a pair at another seed
(repro_replay.py).

``page``: ``DIR/index.html`` and ``DIR/plots/*.svg`` from the JSON files of DIR and of its sub-folders (one result
set per folder: a dataset, a preset).

Resumable: every question's rollouts (``DIR/cache/rollouts/<arm>/``) and credit (``DIR/cache/credit/``) are written
when done, so an interrupted run continues where it stopped; ``DIR/settings.json`` records what the numbers depend on
and a resume with other settings (graph, questions, model, seed, device, ...) is refused naming the first
difference. ``--n-questions`` may grow between runs (the first N questions are always the same ones).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import random
import re
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, fmt_interval, fmt_num, utc_stamp, write_results  # noqa: E402

from harness_g.config_diff import differences  # noqa: E402
from harness_g.errors import ConfigError, HarnessError  # noqa: E402

DEFAULT_OUT = RESULTS / "repro_small"
ARMS = ("menu", "free-query")
#: the credit signals compared (name -> how the step's value is made; the page shows these labels)
SIGNALS = {
    "snc": "SNC (r_fr + r_en, frozen answerer g on previews)",
    "snc_no_enablement": "SNC without enablement (r_fr only)",
    "snc_no_frontier": "SNC without frontier (r_en only)",
    "outcome": "outcome-only (the rollout's GRPO A_out on every step)",
    "igpo": "IGPO (the step's cumulative turn advantage, policy-belief gain + outcome)",
}
#: a reference ranking, not a credit scheme: how much of the label the action type alone gives away
BASELINES = {"is_lookup": "reference: 1 for a LOOKUP step, 0 otherwise (no credit scheme)"}


def signal_value(step: dict[str, Any], name: str) -> float:
    """A step's value of signal ``name`` (a cached credit scheme's, or a :data:`BASELINES` one derived here)."""
    if name == "is_lookup":
        return float(step.get("action_type") == "LOOKUP")
    return float(step[name])
BOOTSTRAP = 2000  # resamples of the bootstrap intervals
BOOTSTRAP_SEED = 0
SETTINGS = "settings.json"


# -- pure maths (tested on hand-computed cases) -----------------------------------------------------------------
def bootstrap_mean(values: Sequence[float], *, resamples: int = BOOTSTRAP, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """``{mean, lo, hi, n}``: the mean of ``values`` (one per question) and the 2.5 / 97.5 percentiles of the means of
    ``resamples`` resamples with replacement (fixed ``seed``); ``lo = hi = mean`` for one value, None for none."""
    xs = [float(v) for v in values]
    if not xs:
        return {"mean": None, "lo": None, "hi": None, "n": 0}
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(xs) for _ in xs) / len(xs) for _ in range(resamples))
    return {"mean": sum(xs) / len(xs), "lo": _percentile(means, 2.5), "hi": _percentile(means, 97.5), "n": len(xs)}


def _percentile(sorted_xs: Sequence[float], q: float) -> float:
    pos = (len(sorted_xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """The probability that a random positive step scores above a random negative one, ties counting 1/2 (the
    Mann-Whitney AUC); None without a positive or without a negative. Computed from ranks (tied scores share their
    average rank) in O(n log n): U = (sum of the positives' ranks) - P(P+1)/2 counts each (positive, negative) pair
    won as 1 and tied as 1/2, exactly (ranks are multiples of 1/2), so it equals the pairwise count."""
    n_pos = sum(1 for y in labels if y)
    n_neg = len(labels) - n_pos
    if not n_pos or not n_neg:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    rank_sum, start = 0.0, 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and scores[order[end + 1]] == scores[order[start]]:
            end += 1
        mid = (start + end + 2) / 2  # the average of 1-based ranks start+1 .. end+1
        rank_sum += mid * sum(1 for i in order[start:end + 1] if labels[i])
        start = end + 1
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def bootstrap_auc(clusters: Sequence[Sequence[tuple[float, bool]]], *, resamples: int = BOOTSTRAP,
                  seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """AUC over every step of every cluster (a question's steps: ``(score, label)``) and its 95% interval from
    resampling whole questions (steps of one question are not independent); resamples without both classes are
    skipped. ``{auc, lo, hi, n_questions, n_steps, n_positive}``."""
    flat = [s for c in clusters for s in c]
    value = auc([s for s, _ in flat], [y for _, y in flat])
    out = {"auc": value, "lo": None, "hi": None, "n_questions": len(clusters), "n_steps": len(flat),
           "n_positive": sum(1 for _, y in flat if y)}
    if value is None:
        return out
    rng = random.Random(seed)
    draws = []
    for _ in range(resamples):
        sample = [s for _ in clusters for s in rng.choice(clusters)]
        a = auc([s for s, _ in sample], [y for _, y in sample])
        if a is not None:
            draws.append(a)
    if draws:
        draws.sort()
        out.update(lo=_percentile(draws, 2.5), hi=_percentile(draws, 97.5))
    return out


def bootstrap_auc_difference(clusters_a: Sequence[Sequence[tuple[float, bool]]], clusters_b: Sequence[Sequence[tuple[float, bool]]],
                             *, resamples: int = BOOTSTRAP, seed: int = BOOTSTRAP_SEED) -> dict[str, Any]:
    """AUC(a) - AUC(b) on the same steps (paired: one question resample serves both) with its 95% interval."""
    def both(idx: Sequence[int]) -> float | None:
        a = auc([s for i in idx for s, _ in clusters_a[i]], [y for i in idx for _, y in clusters_a[i]])
        b = auc([s for i in idx for s, _ in clusters_b[i]], [y for i in idx for _, y in clusters_b[i]])
        return None if a is None or b is None else a - b

    n = len(clusters_a)
    value = both(range(n))
    out = {"diff": value, "lo": None, "hi": None, "n_questions": n}
    if value is None:
        return out
    rng = random.Random(seed)
    draws = sorted(d for d in (both([rng.randrange(n) for _ in range(n)]) for _ in range(resamples)) if d is not None)
    if draws:
        out.update(lo=_percentile(draws, 2.5), hi=_percentile(draws, 97.5))
    return out


def paired_difference(a: Sequence[float], b: Sequence[float], *, resamples: int = BOOTSTRAP) -> dict[str, Any]:
    """mean(a - b) over questions (a[i], b[i] are the same question's values) with its bootstrap interval."""
    return bootstrap_mean([x - y for x, y in zip(a, b)], resamples=resamples)


def surfaced_gold(step: Any, gold_sentences: set[str], gold_paragraphs: set[str]) -> bool:
    """Whether a step record surfaced a gold evidence unit: one of the sentences it introduced was not yet in the
    scorer context O_t (``observed_before``) and is a gold sentence or (paragraph-level gold, MuSiQue) a sentence of a
    gold paragraph. Re-showing a sentence already seen surfaces nothing, as SNC's gain counts it."""
    from harness_g.graph.types import paragraph_of

    seen = set(step.observed_before)
    for sid in step.introduced:
        if sid in seen:
            continue
        if sid in gold_sentences or (gold_paragraphs and paragraph_of(sid) in gold_paragraphs):
            return True
    return False


#: fewer questions than this and no verdict is drawn: a percentile bootstrap over so few is far too narrow (one
#: question gives a zero-width interval)
MIN_QUESTIONS = 10


def verdict(interval: dict[str, Any], key: str, *, null: float, claim: str, n: int) -> tuple[str, str]:
    """(status, sentence) for a claim that ``interval[key]`` is above ``null`` over ``n`` questions: holds when the
    whole 95% interval is above it, fails when the whole interval is below it, otherwise (or with fewer than
    :data:`MIN_QUESTIONS` questions) not shown at this n."""
    value, lo, hi = interval.get(key), interval.get("lo"), interval.get("hi")
    if value is None or lo is None or hi is None:
        return "not measured", f"Not measured here ({claim}: no value at n={n})."
    if n < MIN_QUESTIONS:
        return "not shown", (f"Not shown at n={n}: {value:.3g} (interval [{lo:.3g}, {hi:.3g}]) rests on fewer than "
                             f"{MIN_QUESTIONS} questions, too few for a bootstrap interval to support or refute the claim.")
    if lo > null:
        return "holds", f"Holds at this scale (n={n}): the whole 95% interval [{lo:.3g}, {hi:.3g}] is above {null:g}."
    if hi < null:
        return "does not hold", (f"Does not hold at this scale (n={n}): the whole 95% interval [{lo:.3g}, {hi:.3g}] is "
                                 f"below {null:g}, the opposite of the claim.")
    return "not shown", (f"Not shown at n={n}: the 95% interval [{lo:.3g}, {hi:.3g}] contains {null:g}, so these numbers "
                         "neither support nor refute the claim.")


# -- settings, cache ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    """One result set: the graph, the questions and how they are played (everything the numbers depend on)."""

    graph: Path
    questions: Path | None
    fmt: str | None
    n_questions: int
    out: Path
    preset: str
    model: str
    group_size: int
    seed: int
    device: str
    batch_questions: int
    free_action_tokens: int
    sets: tuple[str, ...]
    store: str | None
    threads: int | None
    #: questions passed over before the ``n_questions`` played: a later block of the same list (a replication on
    #: questions a result did not see), 0 for the first N
    skip_questions: int = 0
    #: read every question from the cache and refuse one that is not there (``replay``: nothing is sampled or scored)
    cache_only: bool = False


def _safe(name: str) -> str:
    """A file name for a question id (ids may hold '/', spaces, ...): kept when plain, else hashed."""
    return name if re.fullmatch(r"[A-Za-z0-9_.-]{1,80}", name) else hashlib.sha1(name.encode()).hexdigest()


def write_json_gz(path: Path, data: Any) -> None:
    """Atomically write ``data`` as gzip'd JSON (a killed run leaves the old file or none, never half of one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with gzip.open(tmp, "wt", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


def read_json_gz(path: Path) -> Any:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError) as exc:
        raise HarnessError(f"{path}: unreadable cache file ({exc}); delete it to recompute that question") from None


def graph_identity(graph: Path) -> dict[str, Any]:
    """The graph a result set was computed on: its path and the manifest's content hash."""
    from harness_g.graph.artifact import MANIFEST

    path = graph / MANIFEST
    if not path.is_file():
        raise ConfigError(f"--graph {graph}: no graph there (no {MANIFEST}); build it with `harness-g build`")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    return {"graph": str(graph.resolve()), "content_hash": manifest.get("content_hash")}


def settings_record(run: Run) -> dict[str, Any]:
    """What the numbers depend on (a resume must match it; ``n_questions`` may grow)."""
    return {**graph_identity(run.graph), "questions": str(run.questions.resolve()) if run.questions else None,
            "format": run.fmt, "preset": run.preset, "model": run.model, "group_size": run.group_size, "seed": run.seed,
            "device": run.device, "batch_questions": run.batch_questions, "free_action_tokens": run.free_action_tokens,
            "sets": list(run.sets), "skip_questions": run.skip_questions, "arms": arm_settings(run)}


def check_settings(run: Run) -> None:
    """Write ``DIR/settings.json`` on a first run; on a resume refuse (one line, the first difference) other settings.
    A setting a newer harness-g added is not compared (:func:`~harness_g.config_diff.differences`): the recorded run
    cannot have differed in it, since every new switch defaults to the behaviour it had before."""
    path = run.out / SETTINGS
    now = settings_record(run)
    if path.is_file():
        try:
            before = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"{path}: unreadable ({exc})") from None
        diffs = differences(before, now)
        if diffs:
            raise ConfigError(f"{path}: this --out was computed with other settings ({diffs[0]}); resume with the same "
                              "settings or choose another --out")
        return
    run.out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(now, indent=1) + "\n", encoding="utf-8")


def arm_config(run: Run, arm: str) -> Any:
    """The arm's TrainConfig (its ``rollout`` and ``credit`` sections are what the rollouts and credit use): the
    paper's rollout settings, N_g, temperature 1.0, the run's model/preset/graph/questions and ``--set`` overrides;
    the menu arm decodes constrained to menu ids (as the packaged SmolLM2 configs), the free-query arm writes up to
    ``free_action_tokens`` tokens per reply (a search string) and has no SNC (the paper evaluates SNC on the menu)."""
    from harness_g import config_loader
    from harness_g.training.config import load_config

    overrides: dict[str, Any] = {
        "model.name": run.model, "data.graph_dir": str(run.graph), "data.store": run.store,
        "data.questions": str(run.questions) if run.questions else None, "data.questions_format": run.fmt,
        "data.limit": run.skip_questions + run.n_questions, "data.eval_questions": 0, "rollout.questions_per_step": 1,
        "rollout.group_size": run.group_size, "rollout.temperature": 1.0, "seed": run.seed,
        "torch_threads": run.threads,
        "rollout.constrain_actions": arm == "menu", "rollout.interface": arm,
    }
    if run.device == "cuda":
        overrides["model.compute_dtype"] = "bfloat16"
    for text in run.sets:
        key, value = config_loader.parse_set(text)
        if key in ("rollout.interface", "rollout.constrain_actions", "data.limit", "seed", "model.name"):
            raise ConfigError(f"--set {key}: set by the script (arms, --n-questions, --seed, --model)")
        overrides[key] = value
    if arm == "free-query":  # after --set: rollout.max_action_tokens there is the menu arm's reply length
        overrides.update({"rollout.max_action_tokens": run.free_action_tokens, "credit.scheme": "outcome"})
    return load_config(None, overrides, preset=run.preset)


def arm_settings(run: Run) -> dict[str, Any]:
    """Per arm, the resolved rollout settings the rollouts depend on (part of the resume check)."""
    out = {}
    for arm in ARMS:
        c = arm_config(run, arm)
        out[arm] = {**c.to_dict()["rollout"], "env": c.env_config().to_dict()}
    return out


# -- models ---------------------------------------------------------------------------------------------------------
class Models:
    """The untrained policy, loaded once: it samples the rollouts, it is the frozen answerer g (the reference
    checkpoint is the initial policy) and it gives IGPO's policy beliefs (the current policy is the initial one)."""

    def __init__(self, config: Any, device: str):
        self._config, self._device, self._loaded = config, device, False

    def __getattr__(self, name: str) -> Any:
        """Load on first use: a run whose every question is cached re-aggregates without loading a model."""
        if name.startswith("_") or self.__dict__.get("_loaded"):
            raise AttributeError(name)
        self._load(self._config, self._device)
        return getattr(self, name)

    def _load(self, config: Any, device: str) -> None:
        import torch

        from harness_g.training.context_budget import prompt_budget
        from harness_g.training.modeling import load_policy, load_tokenizer

        self._loaded = True
        if config.torch_threads:
            torch.set_num_threads(config.torch_threads)
        self.tokenizer = load_tokenizer(config.model)
        self.model = load_policy(config.model, self.tokenizer, config.seed, trainable=False).to(device).eval()
        self.model.requires_grad_(False)
        self.max_positions = getattr(self.model.config, "max_position_embeddings", None)
        self.score_batch = 64 if device == "cuda" else 8  # teacher-forced contexts per forward (answerer, beliefs)
        self._budget = prompt_budget

    def generator(self, config: Any) -> Any:
        """The trainer's transformers generator over the policy, with ``config.rollout``'s sampling settings."""
        from harness_g.training.prefix_cache import enabled as prefix_cache_enabled
        from harness_g.training.rollout import Generator

        r = config.rollout
        return Generator(self.model, self.tokenizer, temperature=r.temperature, top_p=r.top_p,
                         max_prompt_tokens=self._budget(r, self.max_positions),
                         prefix_cache=prefix_cache_enabled(r))


# -- rollouts -------------------------------------------------------------------------------------------------------
def questions(config: Any, view: Any) -> list[Any]:
    """The first ``data.limit`` questions with answers (training/data.py's split with nothing held out)."""
    from harness_g.training.data import split_questions

    train, _ = split_questions(config, view)
    return train


def question_seed(seed: int, qid: str) -> int:
    """The torch seed of a batch starting at question ``qid``: the same on both arms and on a resume."""
    return zlib.crc32(f"{seed}:{qid}".encode())


def rollout_record(ro: Any) -> dict[str, Any]:
    return {"trajectory": ro.trajectory.to_json(), "reward": ro.reward, "em": ro.em, "answer": ro.answer,
            "queries": ro.queries}


def play_arm(run: Run, arm: str, config: Any, view: Any, models: Models, items: Sequence[Any],
             log: Callable[[str], None]) -> dict[str, list[dict[str, Any]]]:
    """Every question's group on ``arm``: from the cache, else played ``batch_questions`` groups per
    ``collect_rollouts`` call and cached per question. Returns {question id: rollout records}."""
    import torch

    from harness_g.training.rollout import collect_rollouts

    folder = run.out / "cache" / "rollouts" / arm
    done = {it.id: folder / f"{_safe(it.id)}.json.gz" for it in items}
    todo = [it for it in items if not done[it.id].is_file()]
    if todo and run.cache_only:
        raise HarnessError(f"{arm}: question {todo[0].id} has no cached group in {folder} and this run samples nothing "
                           f"({len(todo)} such question(s)); a replay plays only what its source cached")
    r = config.rollout
    generator = models.generator(config) if todo else None
    for start in range(0, len(todo), run.batch_questions):
        chunk = todo[start: start + run.batch_questions]
        torch.manual_seed(question_seed(run.seed, chunk[0].id))
        t0, c0 = time.perf_counter(), time.process_time()
        rollouts, stats = collect_rollouts(view, generator, chunk, r.group_size, config.env_config(),
                                           max_action_tokens=r.max_action_tokens, max_answer_tokens=r.max_answer_tokens,
                                           constrain_actions=r.constrain_actions, interface=arm,
                                           max_observation_tokens=r.max_observation_tokens, context=r.context)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        for g, item in enumerate(chunk):
            group = [rollout_record(ro) for ro in rollouts if ro.group == g]
            write_json_gz(done[item.id], {"question_id": item.id, "arm": arm, "rollouts": group,
                                          "seconds": seconds / len(chunk), "cpu_s": cpu / len(chunk),
                                          "batch": [it.id for it in chunk],
                                          "generate_s": stats["generate_s"] / len(chunk), "env_s": stats["env_s"] / len(chunk)})
        log(f"{arm}: {start + len(chunk)}/{len(todo)} new groups ({seconds:.0f} s for {len(chunk)})")
    return {it.id: read_json_gz(done[it.id])["rollouts"] for it in items}


def cached_seconds(run: Run, arm: str, items: Sequence[Any], key: str = "seconds") -> float:
    """Wall seconds (``key`` "seconds") or this process's CPU seconds ("cpu_s"; 0 where a cache file predates it) the
    questions' groups took on ``arm``."""
    folder = run.out / "cache" / "rollouts" / arm
    return sum(read_json_gz(folder / f"{_safe(it.id)}.json.gz").get(key, 0.0) for it in items)


def group_values(records: Sequence[dict[str, Any]], arm: str, threshold: float) -> dict[str, float]:
    """One question's N_eq, D_ret, D_query (training/diagnostics.py over its group) and descriptive numbers."""
    from harness_g.training.diagnostics import aliasing_rate, group_diagnostics, menu_requests, retrieval_evidence

    evidence = [retrieval_evidence(r["trajectory"]) for r in records]
    if arm == "menu":
        requests = [menu_requests(r["trajectory"]) for r in records]
    else:
        requests = [list(r["queries"]) for r in records]
    stats = group_diagnostics([evidence], [[q for rs in requests for q in rs]], threshold)
    steps = [s for r in records for s in r["trajectory"]["steps"]]
    return {"n_eq": stats.mean_n_eq, "d_ret": stats.d_ret, "d_query": float(stats.d_query or 0.0),
            "aliasing": aliasing_rate(evidence, requests, threshold),
            "requests": len({tuple(rs) for rs in requests}),
            "reward_f1": sum(r["reward"] for r in records) / len(records),
            "em": sum(r["em"] for r in records) / len(records),
            "turns": len(steps) / len(records),
            "lookups": sum(s.get("action_type") == "LOOKUP" for s in steps) / len(records),
            "invalid_frac": sum(s.get("chosen") is None for s in steps) / max(1, len(steps)),
            "empty_evidence_frac": sum(not e for e in evidence) / len(records)}


# -- credit ---------------------------------------------------------------------------------------------------------
def step_signals(view: Any, models: Models, config: Any, items: Sequence[Any],
                 groups: Sequence[Sequence[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """Per question, per step of its menu rollouts: ``{rollout, turn, action_type, label, <signal>: value}``."""
    import torch

    from harness_g.agent.env.trajectory import Trajectory
    from harness_g.training.advantages import compute_advantages
    from harness_g.training.answerer import FrozenAnswerer, PolicyBelief
    from harness_g.training.credit import compute_credit, igpo_advantages, igpo_step_advantage
    from harness_g.training.rollout import Rollout, scorer_user_text
    from harness_g.training.snc_scoring import score_beliefs, score_rollouts

    c = config.credit
    rollouts = []
    for g, (item, records) in enumerate(zip(items, groups)):
        for rec in records:
            ro = Rollout(item=item, group=g, trajectory=Trajectory.from_json(rec["trajectory"]))
            ro.reward, ro.em, ro.answer = rec["reward"], rec["em"], rec["answer"]
            rollouts.append(ro)
    batch = models.score_batch
    answerer = FrozenAnswerer(models.model, models.tokenizer, scorer_user_text, max_aliases=c.max_aliases, batch_size=batch)
    gains, _ = score_rollouts(view, answerer, rollouts, frontier_size=c.frontier_size, eps=c.dead_zone)
    belief = PolicyBelief(models.model, models.tokenizer, scorer_user_text, max_aliases=c.max_aliases, batch_size=batch)
    beliefs, _ = score_beliefs(view, belief, rollouts)
    rewards = torch.tensor([ro.reward for ro in rollouts], dtype=torch.float32)
    group_ids = torch.tensor([ro.group for ro in rollouts])
    a_out = compute_advantages(config.optim.estimator, rewards, group_ids).tolist()
    turn_adv = igpo_advantages(beliefs, rewards.tolist(), group_ids.tolist(), gamma=c.gamma, gain=c.igpo_gain)
    out: list[list[dict[str, Any]]] = [[] for _ in items]
    per_question_index: dict[int, int] = {}
    for i, ro in enumerate(rollouts):
        k = per_question_index.setdefault(ro.group, 0)
        per_question_index[ro.group] = k + 1
        credits = {name: compute_credit(name, gains[i], c.gamma) for name in ("snc", "snc_no_enablement", "snc_no_frontier")}
        gold_s, gold_p = set(ro.item.gold_sentence_ids), set(ro.item.gold_paragraph_ids)
        for t, step in enumerate(ro.trajectory.steps):
            out[ro.group].append({
                "rollout": k, "turn": t, "action_type": step.action_type, "label": surfaced_gold(step, gold_s, gold_p),
                "gain": gains[i][t].gain, **{name: credits[name][t].total for name in credits},
                "outcome": a_out[i], "igpo": igpo_step_advantage(turn_adv[i], t)})
    return out


def credit_for(run: Run, config: Any, view: Any, models: Models, items: Sequence[Any],
               groups: dict[str, list[dict[str, Any]]], log: Callable[[str], None]) -> dict[str, list[dict[str, Any]]]:
    """Every question's per-step labels and signals: from the cache, else scored one question at a time and cached."""
    folder = run.out / "cache" / "credit"
    out = {}
    for n, item in enumerate(items):
        path = folder / f"{_safe(item.id)}.json.gz"
        if not path.is_file() and run.cache_only:
            raise HarnessError(f"credit: question {item.id} has no cached record in {folder} and this run scores "
                               "nothing; a replay plays only what its source cached")
        if not path.is_file():
            t0, c0 = time.perf_counter(), time.process_time()
            steps = step_signals(view, models, config, [item], [groups[item.id]])[0]
            write_json_gz(path, {"question_id": item.id, "steps": steps, "seconds": time.perf_counter() - t0,
                                 "cpu_s": time.process_time() - c0})
            log(f"credit: question {n + 1}/{len(items)} scored ({time.perf_counter() - t0:.0f} s)")
        out[item.id] = read_json_gz(path)["steps"]
    return out


# -- the subcommands -----------------------------------------------------------------------------------------------
def device_label(device: str) -> str:
    """How the page names the device: "CPU (2-core)" or the GPU's name."""
    if device == "cuda":
        import torch

        return f"GPU ({torch.cuda.get_device_name(0)})"
    return f"CPU ({os.cpu_count()}-core)"


def rests_on(run: Run, config: Any, items: Sequence[Any], seconds: float) -> dict[str, Any]:
    r = config.rollout
    return {"dataset": items[0].dataset if items else run.fmt, "preset": run.preset, "model": run.model,
            "questions": len(items), "first_question": run.skip_questions + 1, "group_size": run.group_size, "rollouts_per_arm": len(items) * run.group_size,
            "seeds": [run.seed], "device": device_label(run.device), "temperature": r.temperature,
            "max_turns": r.max_turns, "context": r.context, "env": {"visible_cap": config.env_config().visible_cap,
                                                                    "lookup_cap": config.env_config().lookup_cap},
            "overrides": list(run.sets), "rollout_seconds": round(seconds, 1),
            "bootstrap": {"resamples": BOOTSTRAP, "seed": BOOTSTRAP_SEED, "over": "questions"}}


def _open(run: Run) -> tuple[Any, Any, list[Any]]:
    from harness_g.agent.env.session import open_view

    config = arm_config(run, "menu")
    check_settings(run)
    view_cm = open_view(str(run.graph), run.store)
    view = view_cm.__enter__()
    return view_cm, view, questions(config, view)[run.skip_questions:]


def equivalence_means(per_q: dict[str, Sequence[dict[str, Any]]], *, resamples: int = BOOTSTRAP,
                      ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Claim (a) over per-question group values (``per_q[arm][i]``: question i's, the arms' lists in one question
    order): per arm the mean N_eq, D_ret, D_query and aliasing (over the questions with a differing pair), and menu
    minus free-query paired per question (aliasing over the questions where both arms have a value); bootstrap
    intervals over questions (``resamples`` draws)."""
    arms = {}
    for arm in ARMS:
        vals = per_q[arm]
        arms[arm] = {k: bootstrap_mean([v[k] for v in vals], resamples=resamples) for k in ("n_eq", "d_ret", "d_query")}
        arms[arm]["aliasing"] = bootstrap_mean([v["aliasing"] for v in vals if v.get("aliasing") is not None],
                                               resamples=resamples)
    diff = {k: paired_difference([v[k] for v in per_q["menu"]], [v[k] for v in per_q["free-query"]], resamples=resamples)
            for k in ("n_eq", "d_ret")}
    both = [(m["aliasing"], f["aliasing"]) for m, f in zip(per_q["menu"], per_q["free-query"])
            if m.get("aliasing") is not None and f.get("aliasing") is not None]
    diff["aliasing"] = paired_difference([m for m, _ in both], [f for _, f in both], resamples=resamples)
    return arms, diff


def cmd_equivalence(run: Run, log: Callable[[str], None]) -> dict[str, Any]:
    """Play both arms (cached per question) and write ``DIR/equivalence.json``."""
    view_cm, view, items = _open(run)
    try:
        configs = {arm: arm_config(run, arm) for arm in ARMS}
        models = Models(configs["menu"], run.device)
        groups = {arm: play_arm(run, arm, configs[arm], view, models, items, log) for arm in ARMS}
    finally:
        view_cm.__exit__(None, None, None)
    threshold = configs["menu"].credit.equivalence_jaccard
    per_q = {arm: [group_values(groups[arm][it.id], arm, threshold) for it in items] for arm in ARMS}
    arms, diff = equivalence_means(per_q)
    for arm in ARMS:
        vals = per_q[arm]
        arms[arm]["describe"] = {k: bootstrap_mean([v[k] for v in vals])
                                 for k in ("reward_f1", "em", "turns", "lookups", "invalid_frac", "empty_evidence_frac",
                                           "requests")}
        arms[arm]["settings"] = {"max_action_tokens": configs[arm].rollout.max_action_tokens,
                                 "constrain_actions": configs[arm].rollout.constrain_actions,
                                 "seconds": round(cached_seconds(run, arm, items), 1),
                                 "cpu_seconds": round(cached_seconds(run, arm, items, "cpu_s"), 1)}
    data = {"kind": "equivalence", "generated": utc_stamp(), "rests_on": rests_on(run, configs["menu"], items,
            sum(cached_seconds(run, arm, items) for arm in ARMS)),
            "arms": arms, "menu_minus_free_query": diff, "jaccard_threshold": threshold,
            "per_question": {arm: [{"question_id": it.id, **v} for it, v in zip(items, per_q[arm])] for arm in ARMS},
            "definitions": {
                "n_eq": "retrieval-equivalence classes of a question's N_g rollouts: E(tau) = union of the sentences its "
                        "LOOKUPs returned (t >= 1, not U_0), greedy Jaccard >= threshold clustering "
                        "(training/diagnostics.py)",
                "d_ret": "1 when N_eq >= 2", "d_query": "1 when the group wrote >= 2 distinct queries: free-query = its "
                "search strings; menu = its LOOKUP targets (the menu arm's retrieval requests)",
                "aliasing": "harness-g's diagnostic, not the paper's: among pairs of a group's rollouts whose request "
                            "sequences differ, the fraction in one retrieval-equivalence class (training/diagnostics.py "
                            "aliasing_rate); mean over the questions where some pair differs (n); the difference is "
                            "paired over questions where both arms have one",
                "requests": "distinct request sequences (search strings / LOOKUP targets per rollout) in a group",
                "interval": "bootstrap 95% over questions (percentile), fixed seed"}}
    write_results(run.out / "equivalence.json", data)
    return data


def credit_aucs(clusters: Sequence[Sequence[dict[str, Any]]], *, resamples: int = BOOTSTRAP) -> dict[str, Any]:
    """Claim (b) over ``clusters`` (per question, its scored steps): ``{signals, snc_versus, within_lookups}``, the AUC
    per signal of ranking gold-surfacing steps first, SNC minus each other signal (paired), and the same among LOOKUP
    steps, each with its bootstrap interval over questions (``resamples`` draws)."""
    names = [*SIGNALS, *BASELINES]
    scored = {n: [[(signal_value(s, n), bool(s["label"])) for s in c] for c in clusters] for n in names}
    # the same among LOOKUP steps only: only a LOOKUP surfaces new sentences after U_0 (so "is a LOOKUP" ranks well
    # without any credit); here a signal must tell the LOOKUPs that surfaced gold from those that did not
    lookups = {n: [[(signal_value(s, n), bool(s["label"])) for s in c if s["action_type"] == "LOOKUP"] for c in clusters]
               for n in SIGNALS}
    return {"signals": {n: bootstrap_auc(scored[n], resamples=resamples) for n in names},
            "snc_versus": {f"snc_minus_{n}": bootstrap_auc_difference(scored["snc"], scored[n], resamples=resamples)
                           for n in names if n != "snc"},
            "within_lookups": {
                "signals": {n: bootstrap_auc(lookups[n], resamples=resamples) for n in SIGNALS},
                "snc_versus": {f"snc_minus_{n}": bootstrap_auc_difference(lookups["snc"], lookups[n], resamples=resamples)
                               for n in SIGNALS if n != "snc"}}}


def cmd_credit(run: Run, log: Callable[[str], None]) -> dict[str, Any]:
    """Menu rollouts (cached, shared with ``equivalence``), their per-step labels and signals (cached), and
    ``DIR/credit.json``: AUC per signal with bootstrap intervals and the SNC-minus-other differences."""
    view_cm, view, items = _open(run)
    try:
        config = arm_config(run, "menu")
        models = Models(config, run.device)
        items = [it for it in items if it.gold_sentence_ids or it.gold_paragraph_ids]
        groups = play_arm(run, "menu", config, view, models, items, log)
        steps = credit_for(run, config, view, models, items, groups, log)
    finally:
        view_cm.__exit__(None, None, None)
    aucs = credit_aucs([steps[it.id] for it in items])
    all_steps = [s for it in items for s in steps[it.id]]
    by_type: dict[str, list[int]] = {}
    for s in all_steps:
        by_type.setdefault(str(s["action_type"]), [0, 0])
        by_type[str(s["action_type"])][0] += 1
        by_type[str(s["action_type"])][1] += int(s["label"])
    c = config.credit
    data = {"kind": "credit", "generated": utc_stamp(),
            "rests_on": {**rests_on(run, config, items, cached_seconds(run, "menu", items)),
                         "steps": len(all_steps), "positive_steps": sum(s["label"] for s in all_steps),
                         "credit_seconds": round(sum(read_json_gz(run.out / "cache" / "credit" / f"{_safe(it.id)}.json.gz")
                                                     .get("seconds", 0.0) for it in items), 1)},
            "question_ids": [it.id for it in items],
            **aucs, "labels": {**SIGNALS, **BASELINES},
            "steps_by_action": {k: {"steps": v[0], "gold_surfacing": v[1]} for k, v in sorted(by_type.items())},
            "zero_gain": {"gold_surfacing_steps": sum(1 for s in all_steps if s["label"]),
                          "of_which_gain_zero": sum(1 for s in all_steps if s["label"] and s["gain"] == 0.0),
                          "note": "p_t(a_t) after the dead-zone (|gain| < credit.dead_zone is 0): a gold-surfacing "
                                  "step with zero gain gets no frontier credit"},
            "credit_settings": {"frontier_size": c.frontier_size, "gamma": c.gamma, "dead_zone": c.dead_zone,
                                "igpo_gain": c.igpo_gain, "estimator": config.optim.estimator,
                                "answerer": "the initial policy (frozen reference = the untrained policy)"},
            "definitions": {
                "label": "the step brought into the scorer context O_t a gold sentence (gold paragraph: one of its "
                         "sentences) that was not in it before (the dataset's supporting facts)",
                "auc": "P(a gold-surfacing step scores above another step), ties 1/2, over every step of every menu rollout",
                "within_lookups": "the same AUCs over LOOKUP steps only (the steps that can surface new sentences)",
                "interval": "bootstrap 95% over questions (a question's steps resampled together), fixed seed"}}
    write_results(run.out / "credit.json", data)
    return data


# -- the page -------------------------------------------------------------------------------------------------------
def result_sets(root: Path) -> list[tuple[Path, dict[str, Any], dict[str, Any]]]:
    """(folder, equivalence.json or {}, credit.json or {}) for ``root`` and every folder below it holding either
    (a dataset, a preset, a device's run), ``root`` first, then by path."""
    found = {p.parent for name in ("equivalence.json", "credit.json") for p in root.rglob(name)
             if "cache" not in p.relative_to(root).parts}
    return [(folder, _load(folder / "equivalence.json"), _load(folder / "credit.json"))
            for folder in sorted(found, key=lambda f: (f != root, str(f)))]


def _load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise HarnessError(f"{path}: not JSON ({exc})") from None


def _basis(r: dict[str, Any], extra: str = "") -> str:
    env = r.get("env") or {}
    changed = f"; changed from the defaults: {', '.join(r['overrides'])}" if r.get("overrides") else ""
    n, first = r.get("questions"), r.get("first_question") or 1
    which = "" if first == 1 else f" (questions {first}-{first + n - 1} of the list, a later block)"
    return (f"{n} question{'' if n == 1 else 's'}{which} of {r.get('dataset')} ({r.get('preset')} preset), N_g = {r.get('group_size')} "
            f"rollouts each{extra}, seed {', '.join(map(str, r.get('seeds') or []))}, {r.get('model')}, "
            f"{r.get('device')}; T = {r.get('max_turns')}, {r.get('context')} context, K_s = {env.get('visible_cap')}, "
            f"K_e = {env.get('lookup_cap')}, temperature {r.get('temperature')}{changed}")


def _block(meta: dict[str, Any]) -> str:
    """A result set's questions as the pooled row names them: the dataset, and the block when it is not the first N."""
    first, n = meta.get("first_question") or 1, meta.get("questions") or 0
    return str(meta["dataset"]) + ("" if first == 1 else f" q{first}-{first + n - 1}")


def _seeds(meta: dict[str, Any]) -> str:
    """A result set's sampling seeds as the page names them: "seed 0" ("seed ?" when none is recorded)."""
    return "seed " + (", ".join(map(str, meta.get("seeds") or [])) or "?")


def _where(folder: Path, root: Path) -> str:
    """A result set's folder as the page names it: relative to the page's root, "." for the root itself."""
    return "." if folder == root else folder.relative_to(root).as_posix() + "/"


def _ranges(positions: Sequence[int]) -> str:
    """1-based list positions as compact ranges: [1, 2, 3, 7] -> "q1-3, q7"."""
    out, ps = [], sorted(set(positions))
    start = prev = ps[0]
    for p in ps[1:] + [None]:
        if p is not None and p == prev + 1:
            prev = p
            continue
        out.append(f"q{start}" if start == prev else f"q{start}-{prev}")
        if p is not None:
            start = prev = p
    return ", ".join(out)


def pool_order(dataset: Any, position: int) -> tuple[str, int]:
    """The order every pooled bootstrap resamples questions in: dataset name, then list position (1-based). The page's
    pooled row (:func:`pool_claim_a`) sorts questions by it and ``repro_pool.in_question_order`` sorts folders by it
    (their first question's), so the two resample the same questions alike."""
    return str(dataset), position


@dataclass(frozen=True)
class PooledClaimA:
    """Claim (a) over every question one rollout setting and seed has (the summary's pooled row): ``diffs`` are the
    per-question menu-minus-free-query N_eq differences (classes per group of N_g), ordered by dataset then list
    position, each question once; ``label`` names the datasets' question ranges; ``conflict`` is a one-line reason
    when one question has two different records (nothing is pooled then)."""

    diffs: tuple[float, ...]
    label: str
    folders: int
    conflict: str | None


def pool_claim_a(entries: Sequence[tuple[str, int, str, float, str]]) -> PooledClaimA:
    """Pool ``(dataset, list position, question id, N_eq difference, folder)`` rows of result sets that share a rollout
    setting and a seed. A question held by two folders (a replayed window beside the run it came from) counts once
    when both give the same difference; two different differences for one question are a conflict, reported, never
    averaged or silently overwritten. The differences are in :func:`pool_order`, as a pool's questions."""
    seen: dict[tuple[str, str], tuple[int, float, str]] = {}
    conflict = None
    for dataset, position, qid, diff, folder in entries:
        old = seen.get((dataset, qid))
        if old is None:
            seen[(dataset, qid)] = (position, diff, folder)
        elif old[1] != diff and conflict is None:
            conflict = (f"question {qid} of {dataset} has N_eq difference {old[1]:g} in {old[2]} and {diff:g} in "
                        f"{folder}")
    ordered = sorted(((d, p, diff, f) for (d, _), (p, diff, f) in seen.items()), key=lambda r: pool_order(r[0], r[1]))
    by_dataset: dict[str, list[int]] = {}
    for d, p, _, _ in ordered:
        by_dataset.setdefault(d, []).append(p)
    label = ", ".join(f"{d} {_ranges(ps)}" for d, ps in sorted(by_dataset.items()))
    return PooledClaimA(tuple(r[2] for r in ordered), label, len({r[3] for r in ordered}), conflict)


def summary_section(sets: Sequence[tuple[Path, dict[str, Any], dict[str, Any]]], root: Path) -> str:
    """The page's first table: per result set, claim (a)'s N_eq difference and claim (b)'s SNC AUC and SNC-minus-other
    differences with their verdicts; then claim (a) again over the questions of every dataset run under one rollout
    setting (preset, seed, T, context, K_s, K_e), where two or more folders hold them (their paired differences pooled,
    each question once: :func:`pool_claim_a`). Seeds are never pooled together: two seeds of one question are not two
    questions. Each row names its folder relative to ``root``, the page's folder."""
    from html import escape

    def cell(interval: dict[str, Any] | None, key: str, null: float, claim: str, n: int) -> str:
        if not interval:
            return "<td>not run</td>"
        if interval.get(key) is None:  # run, but no question defines it (aliasing: no two requests differed)
            return "<td>n/a (no question defines it)</td>"
        status, _ = verdict(interval, key, null=null, claim=claim, n=n)
        return (f"<td class='verdict {status.replace(' ', '-')}'>{fmt_interval(interval, key=key)}: "
                f"{escape(status)}</td>")

    def setting(meta: dict[str, Any]) -> str:
        env = meta.get("env") or {}
        return (f"T = {meta['max_turns']}, {meta.get('context')}, K_s = {env.get('visible_cap')}, "
                f"K_e = {env.get('lookup_cap')}")

    rows, pooled = [], {}  # pooled: preset, seed and rollout setting -> [(dataset, position, id, N_eq difference, folder)]
    for folder, eq, cr in sets:
        meta = (eq or cr)["rests_on"]
        name = _where(folder, root)
        n_eq = dict(eq["menu_minus_free_query"]["n_eq"], value=eq["menu_minus_free_query"]["n_eq"]["mean"]) if eq else None
        if eq:
            first = meta.get("first_question") or 1
            pooled.setdefault(f"{meta['preset']} preset, {_seeds(meta)}, {setting(meta)}", []).extend(
                (meta["dataset"], first + i, m["question_id"], m["n_eq"] - f["n_eq"], name)
                for i, (m, f) in enumerate(zip(eq["per_question"]["menu"], eq["per_question"]["free-query"])))
        versus = (cr or {}).get("snc_versus", {})
        n_a, n_b = (eq or {}).get("rests_on", {}).get("questions", 0), (cr or {}).get("rests_on", {}).get("questions", 0)
        alias = (eq or {}).get("menu_minus_free_query", {}).get("aliasing")
        if alias and alias.get("mean") is not None:  # shown as free-query minus menu: the claimed side is above 0
            alias = {"value": -alias["mean"], "lo": -alias["hi"], "hi": -alias["lo"], "n": alias["n"]}
        elif alias:
            alias = {"value": None, "n": 0}
        rows.append(f"<tr><td>{escape(_block(meta))} ({escape(meta['preset'])}, {escape(_seeds(meta))}, "
                    f"{escape(setting(meta))}, {escape(meta['device'])}) <code>{escape(name)}</code></td><td>{n_a or n_b}</td>"
                    + cell(n_eq, "value", 0.0, "N_eq difference", n_a)
                    + cell(alias, "value", 0.0, "aliasing difference", (alias or {}).get("n", 0))
                    + cell((cr or {}).get("signals", {}).get("snc"), "auc", 0.5, "SNC AUC", n_b)
                    + cell(versus.get("snc_minus_outcome"), "diff", 0.0, "SNC minus outcome", n_b)
                    + cell(versus.get("snc_minus_igpo"), "diff", 0.0, "SNC minus IGPO", n_b) + "</tr>")
    for key, entries in pooled.items():  # one pooled row per rollout setting and seed held by two or more folders
        pool = pool_claim_a(entries)
        if pool.folders < 2:
            continue
        head = f"<tr><td>{escape(pool.label)} pooled ({escape(key)}; claim (a) only)</td><td>{len(pool.diffs)}</td>"
        if pool.conflict:
            rows.append(head + f"<td>not pooled: {escape(pool.conflict)}</td><td></td><td></td><td></td><td></td></tr>")
            continue
        p = bootstrap_mean(pool.diffs)
        rows.append(head + cell(dict(p, value=p["mean"]), "value", 0.0, "N_eq difference", len(pool.diffs))
                    + "<td></td><td></td><td></td><td></td></tr>")
    return ("<h2>Summary</h2><table><tr><th>result set</th><th>questions</th><th>(a) menu minus free-query N_eq</th>"
            "<th>(a, ours) aliasing, free-query minus menu</th>"
            "<th>(b) SNC AUC</th><th>(b) SNC minus outcome-only AUC</th><th>(b) SNC minus IGPO AUC</th></tr>"
            + "".join(rows) + "</table><p class='basis'>Each cell: the value, its 95% bootstrap interval over questions "
            "and the verdict of the rule above; the sections below give what each rests on.</p>")


def equivalence_section(eq: dict[str, Any], plots: Path, stem: str) -> str:
    from html import escape

    from harness_g.agent.eval.report.plots import interval_chart

    r = eq["rests_on"]
    rows = []
    for arm in ARMS:
        a = eq["arms"][arm]
        rows.append(f"<tr><td>{arm}</td>" + "".join(f"<td>{fmt_interval(a[k])}</td>"
                                                    for k in ("n_eq", "d_ret", "d_query"))
                    + "".join(f"<td>{fmt_num(a['describe'][k]['mean'])}</td>"
                              for k in ("reward_f1", "lookups", "invalid_frac"))
                    + f"<td>{a['settings']['seconds']}</td></tr>")
    n = r["questions"]
    status, sentence = verdict({**eq["menu_minus_free_query"]["n_eq"], "value": eq["menu_minus_free_query"]["n_eq"]["mean"]},
                               "value", null=0.0, claim="menu N_eq minus free-query N_eq", n=n)
    d = eq["menu_minus_free_query"]
    chart = interval_chart("Mean N_eq per arm (95% bootstrap interval)",
                           [(arm, eq["arms"][arm]["n_eq"]) for arm in ARMS], lo=1.0,
                           hi=float(r["group_size"]))
    chart2 = interval_chart("D_ret and D_query per arm", [(f"{arm} {k}", eq["arms"][arm][k]) for arm in ARMS
                                                            for k in ("d_ret", "d_query")], lo=0.0, hi=1.0)
    (plots / f"{stem}_n_eq.svg").write_text(chart, encoding="utf-8")
    (plots / f"{stem}_d_ret.svg").write_text(chart2, encoding="utf-8")
    return (f"<h3>Claim (a): free-query groups collapse into fewer retrieval-equivalence classes than menu groups</h3>"
            f"<p class='basis'>Rests on: {escape(_basis(r))}; {r['questions'] * r['group_size']} rollouts per arm; "
            f"the untrained policy (step 0), so this is the starting point of the paper's training-time curves.</p>"
            f"<table><tr><th>arm</th><th>mean N_eq</th><th>D_ret</th><th>D_query</th><th>reward F1</th>"
            f"<th>LOOKUPs / rollout</th><th>invalid turns</th><th>rollout s</th></tr>{''.join(rows)}</table>"
            f"<p>Menu minus free-query (paired over questions): N_eq {fmt_interval(d['n_eq'])}, "
            f"D_ret {fmt_interval(d['d_ret'])}.</p>"
            f"<p class='verdict {status.replace(' ', '-')}'><b>{escape(status)}.</b> {escape(sentence)}</p>"
            + aliasing_paragraph(eq) + f"<div class='charts'>{chart}{chart2}</div>")


def aliasing_paragraph(eq: dict[str, Any]) -> str:
    """The aliasing diagnostic (ours, not the paper's) under claim (a): per arm, and the paired difference; empty for
    an equivalence.json written before it existed."""
    if "aliasing" not in eq.get("menu_minus_free_query", {}):
        return ""
    cells = "; ".join(f"{arm} {fmt_interval(eq['arms'][arm]['aliasing'])} over {eq['arms'][arm]['aliasing']['n']} "
                      "questions"
                      for arm in ARMS)
    d = eq["menu_minus_free_query"]["aliasing"]
    return ("<p class='basis'>Aliasing (harness-g's diagnostic, not one of the paper's): of the pairs of a group's "
            "rollouts whose requests differ (search strings; LOOKUP targets on the menu), the fraction that reached "
            f"one retrieval-equivalence class. It does not depend on how often a policy retrieves. {cells}; menu minus "
            f"free-query {fmt_interval(d)} (paired, {d['n']} questions).</p>")


def credit_section(cr: dict[str, Any], plots: Path, stem: str) -> str:
    from html import escape

    from harness_g.agent.eval.report.plots import interval_chart

    r = cr["rests_on"]
    rows = "".join(f"<tr><td>{escape(cr['labels'][k])}</td><td>{fmt_num(v['auc'])}</td>"
                   f"<td>[{fmt_num(v['lo'])}, {fmt_num(v['hi'])}]</td>"
                   f"<td>{v['n_steps']}</td><td>{v['n_positive']}</td></tr>" for k, v in cr["signals"].items())
    n = r["questions"]
    steps_note = f", {r['steps']} steps of which {r['positive_steps']} surfaced gold"
    verdicts = []
    s_status, s_sentence = verdict(cr["signals"]["snc"], "auc", null=0.5, claim="SNC AUC above chance", n=n)
    verdicts.append(f"<li><b>SNC ranks gold-surfacing steps above the rest (AUC &gt; 0.5): {escape(s_status)}.</b> "
                    f"{escape(s_sentence)}</li>")
    for other in ("outcome", "igpo"):
        v = cr["snc_versus"][f"snc_minus_{other}"]
        st, sent = verdict(v, "diff", null=0.0, claim=f"SNC AUC minus {other} AUC", n=n)
        verdicts.append(f"<li><b>SNC above {escape(other)} (AUC difference {fmt_num(v['diff'])}): {escape(st)}.</b> "
                        f"{escape(sent)}</li>")
    z = cr.get("zero_gain") or {}
    if z:
        verdicts.append(f"<li>Of the {z['gold_surfacing_steps']} gold-surfacing steps, {z['of_which_gain_zero']} had a "
                        f"frozen-answerer gain of exactly 0 after the dead-zone ({cr['credit_settings']['dead_zone']}): the "
                        "answerer's gold-answer likelihood barely moved.</li>")
    w = cr.get("within_lookups")
    if w:
        cells = "; ".join(f"{escape(k)} {fmt_interval(v, key='auc')}" for k, v in w["signals"].items())
        d = w["snc_versus"].get("snc_minus_outcome") or {}
        st, sent = verdict(d, "diff", null=0.0, claim="SNC minus outcome AUC among LOOKUPs", n=n)
        snc_w = w["signals"]["snc"]
        verdicts.append(f"<li>Among LOOKUP steps only ({snc_w['n_steps']}, {snc_w['n_positive']} surfaced gold), where "
                        f"the action type tells nothing: {cells}. <b>SNC above outcome-only there: {escape(st)}.</b> "
                        f"{escape(sent)}</li>")
    chart = interval_chart("AUC of each signal for gold-surfacing steps (95% bootstrap interval)",
                           [(k, v) for k, v in cr["signals"].items()], key="auc", lo=0.0, hi=1.0, ref=0.5)
    (plots / f"{stem}_auc.svg").write_text(chart, encoding="utf-8")
    return (f"<h3>Claim (b): SNC's step credit points at the steps that surfaced the evidence; outcome-only and IGPO's "
            f"do not</h3><p class='basis'>Rests on: {escape(_basis(r, steps_note))}"
            f"; the untrained policy as frozen answerer and as IGPO's belief.</p>"
            f"<table><tr><th>signal</th><th>AUC</th><th>95% interval</th><th>steps</th><th>gold-surfacing</th></tr>{rows}"
            f"</table><ul>{''.join(verdicts)}</ul><div class='charts'>{chart}</div>")


PAGE_CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
            "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
            "td:first-child,th:first-child{text-align:left}.basis{color:#555}.verdict{padding:4px 8px;border-left:4px solid #999}"
            ".holds{border-color:#4a9d5b}.does-not-hold{border-color:#c4484e}.charts svg{max-width:100%;margin-right:1em}")


def learning_results(root: Path) -> list[Path]:
    """Every ``learning.json`` under ``root`` (the CPU run at the top, a GPU session's in a sub-folder)."""
    return sorted(root.glob("learning.json")) + sorted(root.glob("*/learning.json"))


def learning_sections(root: Path, plots: Path) -> str:
    """Claim (c), one section per learning result (benchmarks/repro_learning.py), or the line saying it is not run."""
    from html import escape

    from repro_learning import learning_section

    found = learning_results(root)
    if not found:
        return ("<h2>Claim (c): menu + SNC training improves the policy more than outcome-only and the free-query arm"
                "</h2><p class='verdict'><b>Not measured here.</b> Run <code>python benchmarks/repro_small.py learn</code>"
                " (the three arms: <code>learning/outcome</code>, <code>learning/snc</code>, <code>learning/free-query"
                "</code>, same seeds, data order and budget).</p>")
    parts = []
    for path in found:
        where = "" if path.parent == root else f" ({escape(path.parent.name)})"
        section = learning_section(json.loads(path.read_text(encoding="utf-8")), plots,
                                   stem="learning" if path.parent == root else f"learning_{path.parent.name}")
        parts.append(section.replace("</h2>", f"{where}</h2>", 1))
    return "".join(parts)


def cmd_page(root: Path) -> Path:
    """Render ``ROOT/index.html`` (and ``ROOT/plots/*.svg``) from every result set under ``root``."""
    from html import escape

    if not root.is_dir():
        raise ConfigError(f"--out {root}: no such folder (run `equivalence` / `credit` first)")
    from repro_pool import pooled_sections
    from repro_seed_pair import pair_sections

    sets = result_sets(root)
    combined = pooled_sections(root) + pair_sections(root)  # pools of several folders, then pairs of pools
    if not sets and not combined and not learning_results(root):
        raise ConfigError(f"--out {root}: no equivalence.json, credit.json, pooled.json, *pair*.json or learning.json "
                          "there or in its sub-folders")
    plots = root / "plots"
    plots.mkdir(exist_ok=True)
    sections = []
    for folder, eq, cr in sets:
        stem = "main" if folder == root else "_".join(folder.relative_to(root).parts)
        meta = (eq or cr)["rests_on"]
        head = (f"<h2>{escape(_block(meta))}, {escape(meta['preset'])} preset, {escape(_seeds(meta))} "
                f"({escape(meta['device'])}) <code>{escape(_where(folder, root))}</code></h2>")
        parts = [head]
        parts.append(equivalence_section(eq, plots, stem) if eq else "<p>Claim (a): not run for this set.</p>")
        parts.append(credit_section(cr, plots, stem) if cr else "<p>Claim (b): not run for this set.</p>")
        sections.append("".join(parts))
    from repro_small_pool import small_pool_section

    learning = learning_sections(root, plots) + small_pool_section(root) + warm_start_section(root)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>harness-g: issue 31 small-scale reproduction</title>"
            f"<style>{PAGE_CSS}</style></head><body><h1>Do the mechanisms work at small scale?</h1>"
            "<p>Each claim of the paper with the number measured here, its 95% interval and what it rests on. A claim "
            "holds only when its whole interval is on the claimed side; a wide interval, or one from fewer than "
            f"{MIN_QUESTIONS} questions, reads \"not shown at n=...\". "
            "Source: <code>benchmarks/repro_small.py</code>; the JSON beside this page has every number.</p>"
            + (summary_section(sets, root) if sets else "") + combined + "".join(sections) + learning + "</body></html>")
    path = root / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


WARM_START_FILE = "sft_warm_start.json"  # benchmarks/bench_sft_warm_start.py's result, one folder per SFT
#: the same measurement per interface: folder under the result root, in page order (``bench_sft_warm_start.py --out``)
WARM_START_DIRS = {"menu": "sft_warm_start", "free-query": "sft_warm_start_free_query", "menu, T = 4": "sft_warm_start_t4"}


def warm_start_section(root: Path) -> str:
    """The oracle-demonstration SFT warm start by itself (ours; ``benchmarks/bench_sft_warm_start.py``): per interface
    measured (:data:`WARM_START_DIRS`), the SFT policy against the untrained model on questions the SFT never saw, per
    part, with the page's rule; with both interfaces, the two SFT policies compared on the questions both played;
    "" when none was run."""
    found = {arm: json.loads((root / folder / WARM_START_FILE).read_text(encoding="utf-8"))
             for arm, folder in WARM_START_DIRS.items() if (root / folder / WARM_START_FILE).is_file()}
    if not found:
        return ""
    html = ["<h2>Warm start (ours, not the paper's): SFT on oracle demonstrations, before any GRPO</h2>"]
    for data in found.values():
        html.append(_warm_start_table(data))
    if "menu" in found and "free-query" in found:
        html.append(_warm_start_arms(root))
    html.append("<p class='verdict'>The policy learns the oracle's plan at this T: a gold sentence of U_0 and the gold "
                "answers' form; compare its LOOKUPs before and after. Not evidence for the paper's credit or menu "
                "claims.</p>")
    return "".join(html)


def _warm_start_table(data: dict[str, Any]) -> str:
    """One SFT's SFT-minus-untrained table (its interface and T in the heading)."""
    from html import escape

    sft, demos = data["sft"], data["sft"]["demonstrations"]
    basis = (f"{data['play']['base_model']} + LoRA, {data['play']['interface']} interface, an SFT on "
             f"{demos['questions']} oracle demonstrations ({sft['steps']} steps, loss {sft['loss_first']:.2f} -> "
             f"{sft['loss_last']:.2f}), T = {data['env']['max_turns']} ({data['play']['policy']['context']} context), "
             f"K_s = {data['env']['visible_cap']}, K_e = {data['env']['lookup_cap']}, greedy, one seed, "
             f"{data['device']}; the baseline is the same checkpoint with its LoRA deltas zeroed")
    rows = []
    for part, label in (("heldout", "held-out"), ("undemonstrated_train", "undemonstrated training questions"),
                        ("pooled", "pooled")):
        r = data[part]
        if not r["questions"]:
            continue
        cells = []
        for m in ("f1", "em", "evidence_recall"):
            d = r["sft_minus_base"][m]
            cells.append(f"<td>{r['base'][m]:.3f} &rarr; {r['sft'][m]:.3f}<br>{d['mean']:+.3f} [{d['lo']:+.3f}, "
                         f"{d['hi']:+.3f}]</td>")
        status, _ = verdict(r["sft_minus_base"]["f1"], "mean", null=0.0, claim="SFT raises F1", n=r["questions"])
        gold = "".join(f"<br>{label}: {r['base'][key]:.2f} &rarr; {r['sft'][key]:.2f}"
                       for key, label in (("gold_lookups", "new gold"), ("gold_lookups_committed", "committed"))
                       if key in r["base"])
        rows.append(f"<tr><td>{escape(label)}</td><td>{r['questions']}</td>{''.join(cells)}<td>{r['base']['lookups']:.2f}"
                    f" &rarr; {r['sft']['lookups']:.2f}{gold}</td><td>{escape(status)}</td></tr>")
    return (f"<h3>{escape(data['play']['interface'])} arm, T = {data['env']['max_turns']}</h3><p class='basis'>Rests on: {escape(basis)}.</p><table><tr><th>questions the SFT "
            "never saw</th><th>n</th><th>F1</th><th>EM</th><th>evidence recall</th><th>LOOKUPs per episode (new gold: "
            "those that surfaced a gold sentence not visible before; committed: and it ended in C_T)</th>"
            "<th>F1 gain</th></tr>" + "".join(rows) + "</table>")


def _warm_start_arms(root: Path) -> str:
    """After SFT, the menu policy minus the free-query policy (and the same for the untrained model), paired over the
    questions both measurements played (``per_question.jsonl``)."""
    from html import escape

    per = {arm: {r["id"]: r for r in map(json.loads, (root / WARM_START_DIRS[arm] / "per_question.jsonl").read_text(
        encoding="utf-8").splitlines())} for arm in ("menu", "free-query")}
    ids = [q for q in per["menu"] if q in per["free-query"]]
    rows = []
    for who, label in (("base", "untrained"), ("sft", "after SFT")):
        cells = []
        for m in ("f1", "em", "evidence_recall"):
            d = bootstrap_mean([per["menu"][q][who][m] - per["free-query"][q][who][m] for q in ids])
            cells.append(f"<td>{d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]</td>")
        status, _ = verdict(bootstrap_mean([per["menu"][q][who]["f1"] - per["free-query"][q][who]["f1"] for q in ids]),
                            "mean", null=0.0, claim="menu above free-query", n=len(ids))
        rows.append(f"<tr><td>{label}</td><td>{len(ids)}</td>{''.join(cells)}<td>{escape(status)}</td></tr>")
    return ("<h3>menu minus free-query, same questions</h3><table><tr><th>policy</th><th>n</th><th>F1</th><th>EM</th>"
            "<th>evidence recall</th><th>menu above free-query (F1)</th></tr>" + "".join(rows) + "</table>")


# -- CLI ------------------------------------------------------------------------------------------------------------
def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="repro_small.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("equivalence", "credit"):
        p = sub.add_parser(name)
        p.add_argument("--graph", required=True, type=Path, help="GRAPH_DIR (built with harness-g build)")
        p.add_argument("--questions", type=Path, help="questions file (default: the graph's own questions)")
        p.add_argument("--format", help="format of --questions (hotpotqa, 2wiki, musique, ...)")
        p.add_argument("--n-questions", type=int, default=50, help="the first N questions with answers (default 50)")
        p.add_argument("--skip-questions", type=int, default=0,
                       help="pass over the first K questions and play the N after them (a replication on questions an "
                            "earlier result did not see; default 0)")
        p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"result folder (default {DEFAULT_OUT})")
        p.add_argument("--preset", choices=("paper", "extended"), default="paper", help="menu rules (the graph's own)")
        p.add_argument("--model", default="smollm2", help="policy = frozen answerer (default smollm2: SmolLM2-135M-Instruct)")
        p.add_argument("--group-size", type=int, default=8, help="N_g rollouts per question (default 8)")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
        p.add_argument("--batch-questions", type=int, default=1, help="groups per generate call (GPU: 16 or more)")
        p.add_argument("--free-action-tokens", type=int, default=32,
                       help="max tokens of a free-query reply (a search string; the menu arm's is rollout.max_action_tokens)")
        p.add_argument("--store", help="store spec (default: the graph's remembered store)")
        p.add_argument("--threads", type=int, help="torch CPU threads")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="a TrainConfig field for both arms, e.g. rollout.max_turns=4 (repeatable)")
    p = sub.add_parser("learn", help="issue 31 item 3: the three training arms, in resumable rounds (repro_learning.py)")
    p.add_argument("--graph", required=True, type=Path, help="GRAPH_DIR (built with harness-g build; its own questions)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"result folder (default {DEFAULT_OUT})")
    p.add_argument("--arms", default="outcome,snc,free-query", help="comma-separated: outcome, snc, free-query")
    p.add_argument("--seeds", default="0",
                   help="comma-separated seeds (default 0); a later call may add seeds to the same --out, not drop any")
    p.add_argument("--steps", type=int, default=60, help="optimiser steps per arm and seed (default 60, the configs')")
    p.add_argument("--round-steps", type=int, default=10, help="steps per piece: arms advance together (default 10)")
    p.add_argument("--eval-questions", type=int, default=50, help="the graph's last N questions, held out (default 50)")
    p.add_argument("--free-action-tokens", type=int, default=32, help="max tokens of a free-query reply (default 32)")
    p.add_argument("--budget-s", type=float, help="start no training piece after this many seconds")
    p.add_argument("--sft-questions", type=int, default=0,
                   help="warm-start every arm from an SFT on oracle demonstrations of this many training questions "
                        "(harness-g sft; ours, not the paper's; default 0: GRPO from the untrained model)")
    p.add_argument("--sft-epochs", type=int, default=2, help="epochs of that SFT (default 2)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a TrainConfig field for every arm, e.g. rollout.group_size=4 (repeatable)")
    p = sub.add_parser("learn-summary", help="learn's gains and differences over some of its seeds; writes nothing")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the learn result folder (default {DEFAULT_OUT})")
    p.add_argument("--seeds", required=True, help="comma-separated seeds of that comparison, e.g. 3,4 or 2")
    p = sub.add_parser("small-pool", help="did GRPO raise the sampled reward on a fixed training pool? (ours; "
                                          "repro_small_pool.py)")
    p.add_argument("--runs", required=True, nargs="+", type=Path, metavar="RUN_DIR",
                   help="harness-g train runs on a fixed pool that logged every rollout (log.keep_trajectories); "
                        "paired by the seed and credit.scheme in their config.yaml, one run per scheme and seed")
    p.add_argument("--window", type=int, default=3, help="steps per window: the first N against the last N (default 3)")
    p.add_argument("--steps", type=int, help="the step the last window ends at (default: each run's optim.steps)")
    p.add_argument("--device", default="not recorded", help="where the runs ran, e.g. 'CPU (2 cores)' (a label)")
    p.add_argument("--out", type=Path, help="also write the record to this JSON file (the page reads "
                                            "OUT_DIR/small-pool/small_pool.json)")
    p = sub.add_parser("pool", help="items 1-2 over several result folders of one setting (repro_pool.py)")
    p.add_argument("--from", dest="sources", required=True, nargs="+", type=Path, metavar="DIR",
                   help="result folders written by equivalence (and credit) with the same settings but the dataset")
    p.add_argument("--out", type=Path, required=True, help="folder for pooled.json (not one of --from)")
    p.add_argument("--resamples", type=int, default=BOOTSTRAP, help=f"bootstrap resamples (default {BOOTSTRAP})")
    p = sub.add_parser("replay", help="a block of a result folder's questions from its caches into a new folder "
                                      "(repro_replay.py; nothing sampled, records checked equal)")
    p.add_argument("--from", dest="source", required=True, type=Path, metavar="SRC",
                   help="a result folder equivalence (and credit) wrote")
    p.add_argument("--skip-questions", type=int, default=0, help="the block starts after the list's first K questions")
    p.add_argument("--n-questions", type=int, required=True, help="the block's N questions (all held by SRC)")
    p.add_argument("--out", type=Path, required=True, help="a new or empty folder for the block")
    p.add_argument("--graph", type=Path, help="GRAPH_DIR when SRC's graph moved (its content hash must be the same)")
    p.add_argument("--store", help="store spec (default: the graph's remembered store)")
    p = sub.add_parser("page")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return ap


def parse_seeds(text: str) -> tuple[int, ...]:
    """``--seeds 0,1,2`` -> ``(0, 1, 2)`` (duplicates dropped, order kept); refused in one line when not integers."""
    try:
        seeds = tuple(dict.fromkeys(int(s) for s in text.split(",") if s.strip()))
    except ValueError:
        raise ConfigError(f"--seeds {text!r}: expected comma-separated integers") from None
    if not seeds:
        raise ConfigError("--seeds: give at least one seed")
    return seeds


def learn_of(args: argparse.Namespace) -> Any:
    from repro_learning import Learn, check_sets, parse_arms

    for flag in ("steps", "round_steps", "eval_questions", "free_action_tokens", "sft_epochs"):
        if getattr(args, flag) < 1:
            raise ConfigError(f"--{flag.replace('_', '-')} must be >= 1, got {getattr(args, flag)}")
    if args.sft_questions < 0:
        raise ConfigError(f"--sft-questions must be >= 0, got {args.sft_questions}")
    seeds = parse_seeds(args.seeds)
    check_sets(args.set)
    return Learn(graph=args.graph, out=args.out, arms=parse_arms(args.arms), seeds=seeds, steps=args.steps,
                 round_steps=args.round_steps, eval_questions=args.eval_questions,
                 free_action_tokens=args.free_action_tokens, sets=tuple(args.set), budget_s=args.budget_s,
                 sft_questions=args.sft_questions, sft_epochs=args.sft_epochs)


def run_of(args: argparse.Namespace) -> Run:
    if (args.questions is None) != (args.format is None):
        raise ConfigError("--questions and --format go together")
    for flag in ("n_questions", "group_size", "batch_questions", "free_action_tokens"):
        if getattr(args, flag) < 1:
            raise ConfigError(f"--{flag.replace('_', '-')} must be >= 1, got {getattr(args, flag)}")
    if args.skip_questions < 0:
        raise ConfigError(f"--skip-questions must be >= 0, got {args.skip_questions}")
    return Run(graph=args.graph, questions=args.questions, fmt=args.format, n_questions=args.n_questions, out=args.out,
               preset=args.preset, model=args.model, group_size=args.group_size, seed=args.seed, device=args.device,
               batch_questions=args.batch_questions, free_action_tokens=args.free_action_tokens, sets=tuple(args.set),
               store=args.store, threads=args.threads, skip_questions=args.skip_questions)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    try:
        if args.command == "page":
            print(cmd_page(args.out))
            return 0
        if args.command == "pool":
            from repro_pool import POOLED, cmd_pool

            cmd_pool(args.sources, args.out, resamples=args.resamples)
            print(args.out / POOLED)
            return 0
        if args.command == "replay":
            from repro_replay import REPLAY, cmd_replay

            cmd_replay(args.source, args.out, args.skip_questions, args.n_questions, log, graph=args.graph,
                       store=args.store)
            print(args.out / REPLAY)
            return 0
        if args.command == "small-pool":
            from repro_small_pool import small_pool

            data = small_pool(args.runs, window=args.window, steps=args.steps, device=args.device)
            text = json.dumps(data, indent=1) + "\n"
            if args.out:
                args.out.parent.mkdir(parents=True, exist_ok=True)
                args.out.write_text(text, encoding="utf-8")
            print(text, end="")
            return 0
        if args.command == "learn-summary":
            from repro_learning import summarise

            data = summarise(args.out, parse_seeds(args.seeds))
            print(json.dumps({"rests_on": data["rests_on"], "compared_at_step": data["compared_at_step"],
                              "gain": {arm: a["gain"] for arm, a in data["arms"].items()},
                              "comparisons": data["comparisons"]}, indent=1))
            return 0
        if args.command == "learn":
            from repro_learning import Stopped, cmd_learn

            try:
                cmd_learn(learn_of(args), log)
            except Stopped:
                print(f"error: stopped by SIGTERM; {args.out / 'learning.json'} has what the runs reached", file=sys.stderr)
                return 143
            print(args.out / "learning.json")
            return 0
        run = run_of(args)
        data = cmd_equivalence(run, log) if args.command == "equivalence" else cmd_credit(run, log)
        print(run.out / f"{data['kind']}.json")
        return 0
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
