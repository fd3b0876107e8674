"""Issue 31 items 1-2 pooled over result sets: one rollout setting's questions of several datasets (or several blocks
of one dataset's list) read together, from the folders ``repro_small.py equivalence`` / ``credit`` wrote.

    python benchmarks/repro_small.py pool --from DIR [DIR ...] --out POOL_DIR   ->  POOL_DIR/pooled.json

Ten or twenty questions of one set give wide intervals; the paper's claims are not about one dataset, so the same
claims over every question played under one setting are the sharper test. Nothing is replayed or re-scored: the
numbers are re-aggregated from each folder's ``equivalence.json`` (its per-question N_eq, D_ret, aliasing) and its
``cache/credit/`` (every step's label and signals), with the same bootstrap as one folder (95%, questions resampled
with replacement, fixed seed), over the questions of all folders together (not stratified by folder), taken in one
order whatever the order of ``--from``: by dataset name, then list position (:func:`in_question_order`; the page's
pooled claim-(a) row resamples in the same order, so for the same questions it shows the same interval).

Claim (a) pools the folders that have an ``equivalence.json``, claim (b) those that have a ``credit.json`` (a
credit-only replication block counts for (b) alone); ``pooled.json`` lists each folder's questions per claim.
Refused, one line each, before anything is written: folders whose settings differ in anything but the dataset (its
graph, questions file and format) and the block of the list (``--skip-questions``); a question in two folders; a
folder whose credit cache does not hold exactly the questions of its ``credit.json`` or does not reproduce its SNC
AUC (a folder caught between runs).
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import fmt_interval, utc_stamp, write_results  # noqa: E402
from repro_small import (ARMS, BASELINES, BOOTSTRAP, BOOTSTRAP_SEED, SETTINGS, SIGNALS, _safe, auc,  # noqa: E402
                         credit_aucs, equivalence_means, pool_order, read_json_gz, signal_value)

from harness_g.config_diff import flatten  # noqa: E402
from harness_g.errors import ConfigError  # noqa: E402

POOLED = "pooled.json"
#: settings.json keys that name the dataset or the block of its list: they may differ between pooled folders
DATASET_KEYS = ("graph", "content_hash", "questions", "format", "skip_questions")
#: rests_on keys that describe one folder's questions or costs, not the setting (not compared, summed or listed)
PER_FOLDER_KEYS = ("dataset", "questions", "first_question", "rollouts_per_arm", "rollout_seconds", "steps",
                   "positive_steps", "credit_seconds")
#: the tolerance of the check that a folder's credit cache reproduces its credit.json (the same floats, re-summed)
AUC_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Source:
    """One result folder as pooling reads it: its settings, its JSON files and its questions in order."""

    folder: Path
    settings: dict[str, Any]
    equivalence: dict[str, Any]  # {} when the folder has no equivalence.json (a credit-only run)
    credit: dict[str, Any]  # {} when the folder has no credit.json
    question_ids: tuple[str, ...]  # claim (a)'s questions, in play order (equivalence.json's)
    credit_files: tuple[Path, ...]  # claim (b)'s per-question credit caches, in play order where it is recorded

    @property
    def rests_on(self) -> dict[str, Any]:
        return (self.equivalence or self.credit)["rests_on"]


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: unreadable ({exc})") from None


def load_source(folder: Path) -> Source:
    """Read ``folder`` (a ``repro_small.py`` result set). Claim (b)'s questions are ``credit.json``'s
    ``question_ids``; a credit.json written before it recorded them counts every file of ``cache/credit/``, which
    :func:`check_credit` then holds to the recorded question count and SNC AUC."""
    if not (folder / SETTINGS).is_file():
        raise ConfigError(f"--from {folder}: no {SETTINGS} there (pool folders that `repro_small.py` wrote)")
    eq = _read(folder / "equivalence.json") if (folder / "equivalence.json").is_file() else {}
    cr = _read(folder / "credit.json") if (folder / "credit.json").is_file() else {}
    if not eq and not cr:
        raise ConfigError(f"--from {folder}: neither equivalence.json nor credit.json there; run `repro_small.py "
                          "equivalence` or `credit` first")
    ids = tuple(q["question_id"] for q in eq["per_question"]["menu"]) if eq else ()
    cache = folder / "cache" / "credit"
    files: tuple[Path, ...] = ()
    if cr:
        files = (tuple(cache / f"{_safe(q)}.json.gz" for q in cr["question_ids"]) if "question_ids" in cr
                 else tuple(sorted(cache.glob("*.json.gz"))))
    return Source(folder=folder, settings=_read(folder / SETTINGS), equivalence=eq, credit=cr, question_ids=ids,
                  credit_files=files)


def in_question_order(sources: Sequence[Source]) -> list[Source]:
    """``sources`` sorted by ``repro_small.pool_order`` of their first question (dataset name, then list position;
    then folder path, for two graphs of one dataset), the order the page's pooled row uses too, so a pool does not
    depend on how ``--from`` lists its folders. Within a folder questions keep their play order, which is list
    order. Pools written before this order (their ``bootstrap`` block has no ``order``) resampled in ``--from`` order:
    the same means and verdict rule, an interval whose ends can differ by a step or two of 1/n."""
    def key(s: Source) -> tuple[str, int, str]:
        return (*pool_order(s.rests_on.get("dataset"), s.rests_on.get("first_question") or 1), str(s.folder))

    return sorted(sources, key=key)


def setting_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """``key: a -> b`` for every dotted setting both records hold with different values, except :data:`DATASET_KEYS`.
    A key only one side records is a setting a newer harness-g added at its earlier behaviour (as a resume reads it,
    :func:`harness_g.config_diff.differences`), so it is not a difference."""
    fa, fb = flatten(a), flatten(b)
    return [f"{k}: {fa[k]!r} -> {fb[k]!r}" for k in sorted(set(fa) & set(fb))
            if k not in DATASET_KEYS and fa[k] != fb[k]]


def check_poolable(sources: Sequence[Source]) -> None:
    """Refuse (one line) sources played under different settings or a question in two of them."""
    if len(sources) < 2:
        raise ConfigError("--from: give two or more result folders to pool")
    first = sources[0]
    for s in sources[1:]:
        diffs = setting_differences(first.settings, s.settings)
        if diffs:
            raise ConfigError(f"--from {s.folder}: played with other settings than {first.folder} ({diffs[0]}); only "
                              "the dataset and the block of questions may differ")
    for claim, names in (("(a)", lambda s: [_safe(q) for q in s.question_ids]),
                         ("(b)", lambda s: [f.name.removesuffix(".json.gz") for f in s.credit_files])):
        seen: dict[tuple[Any, str], Path] = {}
        for s in sources:
            for name in names(s):
                key = (s.settings.get("content_hash"), name)
                if key in seen:
                    raise ConfigError(f"--from {s.folder}: question {name} is also in {seen[key]} (claim {claim}); a "
                                      "question counts once")
                seen[key] = s.folder


def check_credit(source: Source) -> list[list[dict[str, Any]]]:
    """Per question of ``source``'s credit, its scored steps; refuses a folder whose credit caches are not the
    questions of its credit.json (a missing file, another count) or do not reproduce its SNC AUC."""
    missing = next((f for f in source.credit_files if not f.is_file()), None)
    if missing is not None:
        raise ConfigError(f"--from {source.folder}: {missing.name} is missing from cache/credit; rerun `credit` there")
    recorded_n = source.credit["rests_on"].get("questions")
    if len(source.credit_files) != recorded_n:
        raise ConfigError(f"--from {source.folder}: credit.json rests on {recorded_n} questions, cache/credit holds "
                          f"{len(source.credit_files)}; rerun `credit` there with the --n-questions it has cached")
    steps = [read_json_gz(f)["steps"] for f in source.credit_files]
    flat = [(signal_value(s, "snc"), bool(s["label"])) for c in steps for s in c]
    value, recorded = auc([x for x, _ in flat], [y for _, y in flat]), source.credit["signals"]["snc"]["auc"]
    if (value is None) != (recorded is None) or (value is not None and abs(value - recorded) > AUC_TOLERANCE):
        raise ConfigError(f"--from {source.folder}: its credit cache gives SNC AUC {value}, its credit.json {recorded}; "
                          "rerun `credit` there so the two agree")
    return steps


def pool(sources: Sequence[Source], *, resamples: int = BOOTSTRAP) -> dict[str, Any]:
    """The pooled claims over ``sources`` (checked by :func:`check_poolable`): claim (a) over the folders with an
    equivalence.json, claim (b) over those with a credit.json; ``{kind, rests_on, equivalence?, credit?,
    definitions}``, intervals as ``repro_small.py``'s (``resamples`` draws), resampled in :func:`in_question_order`."""
    sources = in_question_order(sources)
    first = sources[0].rests_on
    rests_on = {**{k: v for k, v in first.items() if k not in PER_FOLDER_KEYS},
                "sources": [{"folder": str(s.folder), "dataset": s.rests_on.get("dataset"),
                             "first_question": s.rests_on.get("first_question") or 1,
                             "equivalence_questions": len(s.question_ids),
                             "credit_questions": len(s.credit_files) if s.credit else 0,
                             "content_hash": s.settings.get("content_hash")} for s in sources],
                "bootstrap": {"resamples": resamples, "seed": BOOTSTRAP_SEED,
                              "over": "questions of every folder together (not stratified by folder)",
                              "order": "by dataset name, then list position (the page's pooled row's order), "
                                       "whatever the --from order"}}
    data: dict[str, Any] = {"kind": "pooled", "generated": utc_stamp(), "rests_on": rests_on}
    with_eq = [s for s in sources if s.equivalence]
    if with_eq:
        data["equivalence"] = equivalence_summary(with_eq, resamples)
    with_cr = [s for s in sources if s.credit]
    if with_cr:
        clusters = [c for s in with_cr for c in check_credit(s)]
        data["credit"] = {**credit_summary(clusters, resamples), "questions": len(clusters),
                          "steps": sum(len(c) for c in clusters),
                          "positive_steps": sum(1 for c in clusters for s in c if s["label"])}
    data["definitions"] = {
        "pooled": "every question of every folder once; per-question values exactly as each folder's equivalence.json "
                  "and credit cache hold them (nothing replayed)",
        "n_eq, d_ret, aliasing, auc, within_lookups": "as in each folder's equivalence.json and credit.json",
        "interval": "bootstrap 95% over the pooled questions (percentile), fixed seed"}
    return data


def equivalence_summary(sources: Sequence[Source], resamples: int) -> dict[str, Any]:
    """Claim (a) over the questions of ``sources``: ``repro_small.equivalence_means`` of their per-question values."""
    per_q = {arm: [v for s in sources for v in s.equivalence["per_question"][arm]] for arm in ARMS}
    arms, diff = equivalence_means(per_q, resamples=resamples)
    return {"questions": len(per_q["menu"]), "rollouts_per_arm": sum(s.rests_on["rollouts_per_arm"] for s in sources),
            "arms": arms, "menu_minus_free_query": diff}


def credit_summary(clusters: Sequence[Sequence[dict[str, Any]]], resamples: int) -> dict[str, Any]:
    """Claim (b) over ``clusters`` (per question, its scored steps): ``repro_small.credit_aucs``, the signals' labels
    and the gold-surfacing steps with a gain of exactly 0."""
    return {**credit_aucs(clusters, resamples=resamples), "labels": {**SIGNALS, **BASELINES},
            "zero_gain": {"gold_surfacing_steps": sum(1 for c in clusters for s in c if s["label"]),
                          "of_which_gain_zero": sum(1 for c in clusters for s in c if s["label"] and s["gain"] == 0.0)}}


def cmd_pool(folders: Sequence[Path], out: Path, *, resamples: int = BOOTSTRAP) -> dict[str, Any]:
    """Check and pool ``folders`` and write ``out/pooled.json`` (nothing is written when a check refuses)."""
    if resamples < 100:
        raise ConfigError(f"--resamples must be >= 100, got {resamples}")
    if out.resolve() in {f.resolve() for f in folders}:
        raise ConfigError(f"--out {out}: is one of the pooled folders; write the pool to a folder of its own")
    sources = [load_source(f) for f in folders]
    check_poolable(sources)
    data = pool(sources, resamples=resamples)
    out.mkdir(parents=True, exist_ok=True)
    write_results(out / POOLED, data)
    return data


# -- the page -------------------------------------------------------------------------------------------------------
def pooled_sections(root: Path) -> str:
    """One page section per ``pooled.json`` under ``root``: claims (a) and (b) over the pooled questions, each with
    its interval and the page's verdict rule, and the empty-class check's sentence where an ``empty_class.json``
    (``repro_empty_class.py``) lies beside it; "" when there is none."""
    from repro_empty_class import EMPTY_CLASS, paragraph

    paths = sorted(p for p in root.rglob(POOLED) if "cache" not in p.relative_to(root).parts)
    return "".join(_pooled_section(json.loads(p.read_text(encoding="utf-8")), p.parent.relative_to(root))
                   + (paragraph(json.loads((p.parent / EMPTY_CLASS).read_text(encoding="utf-8")))
                      if (p.parent / EMPTY_CLASS).is_file() else "")
                   for p in paths)


def _pooled_section(data: dict[str, Any], where: Path) -> str:
    from html import escape

    from repro_small import verdict

    r = data["rests_on"]
    env = r.get("env") or {}

    def blocks(key: str) -> str:
        return ", ".join(f"{s['dataset']} q{s['first_question']}-{s['first_question'] + s[key] - 1}"
                         for s in r["sources"] if s[key])

    basis = (f"N_g = {r.get('group_size')} rollouts per question, seed {', '.join(map(str, r.get('seeds') or []))}, "
             f"{r.get('model')}, {r.get('device')}; T = {r.get('max_turns')}, {r.get('context')} context, K_s = "
             f"{env.get('visible_cap')}, K_e = {env.get('lookup_cap')}, temperature {r.get('temperature')}; bootstrap "
             "over the pooled questions")
    rows = []

    def row(label: str, interval: dict[str, Any], key: str, null: float, n: int, claim: str) -> None:
        status, _ = verdict(interval, key, null=null, claim=claim, n=n)
        rows.append(f"<tr><td>{escape(label)}</td><td>{n}</td><td>{fmt_interval(interval, key=key)}</td>"
                    f"<td class='verdict {status.replace(' ', '-')}'>{escape(status)}</td></tr>")

    notes = []
    eq = data.get("equivalence")
    if eq:
        d = eq["menu_minus_free_query"]
        row("(a) menu minus free-query N_eq", d["n_eq"], "mean", 0.0, d["n_eq"]["n"], "N_eq difference")
        alias = d["aliasing"]
        if alias.get("mean") is not None:  # shown as free-query minus menu: the claimed side is above 0
            row("(a, ours) aliasing, free-query minus menu", {"mean": -alias["mean"], "lo": -alias["hi"],
                                                              "hi": -alias["lo"]}, "mean", 0.0, alias["n"], "aliasing")
        notes.append(f"claim (a): {blocks('equivalence_questions')}, {eq['rollouts_per_arm']} rollouts per arm")
    cr = data.get("credit")
    if cr:
        n = cr["questions"]
        row("(b) SNC AUC, all steps", cr["signals"]["snc"], "auc", 0.5, n, "SNC AUC")
        for other in ("outcome", "igpo"):
            row(f"(b) SNC minus {other} AUC, all steps", cr["snc_versus"][f"snc_minus_{other}"], "diff", 0.0, n, other)
        w = cr["within_lookups"]
        row("(b) SNC AUC among LOOKUPs", w["signals"]["snc"], "auc", 0.5, n, "SNC AUC")
        for other in ("outcome", "igpo"):
            row(f"(b) SNC minus {other} AUC among LOOKUPs", w["snc_versus"][f"snc_minus_{other}"], "diff", 0.0, n, other)
        notes.append(f"claim (b): {blocks('credit_questions')}, {cr['steps']} menu steps ({w['signals']['snc']['n_steps']} "
                     f"LOOKUPs), {cr['positive_steps']} gold-surfacing, {cr['zero_gain']['of_which_gain_zero']} of them "
                     "with a gain of exactly 0")
    title = "; ".join(sorted({s["dataset"] for s in r["sources"]}))
    return (f"<h2>Pooled over {escape(title)} ({escape(str(where))})</h2><p class='basis'>Rests on: "
            f"{escape('; '.join(notes))}. {escape(basis)}.</p><table><tr><th>claim</th><th>questions</th>"
            f"<th>value [95% interval]</th><th>verdict</th></tr>{''.join(rows)}</table>")
