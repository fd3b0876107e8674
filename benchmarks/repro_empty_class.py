"""Does the shared empty class explain a menu group's lower N_eq? A check of issue 31 item 1 from cached rollouts only.

    python benchmarks/repro_empty_class.py --from DIR [DIR ...] --out FILE.json

Appendix "Retrieval-equivalence diagnostics" clusters a group's rollouts by their evidence E(tau) (Jaccard >= 0.8);
every rollout that retrieved nothing has E(tau) = {} and all of them fall into one class. The untrained menu policy
often answers without a LOOKUP, the free-query arm searches every turn, so a menu group can lose classes to that one
empty class rather than to aliasing. This script recounts each question's classes two ways, per arm:

- ``n_eq``: the appendix's count (``training/diagnostics.equivalence_classes``), which must equal what the folder's
  ``equivalence.json`` recorded for the question (refused otherwise: the cache is not the folder's);
- ``n_eq_empty_apart``: the classes of the rollouts with evidence plus one class per rollout without any: the most
  classes the empty rollouts could have added had each retrieved something of its own (an upper bound, ours; the
  paper defines no such number).

and, pairing the arms per question, a matched count (ours): ``menu_retrieving``, the classes of the k menu rollouts
that retrieved something, against ``free_matched``, the mean classes of every k-subset of the free-query group
(rollout order kept), over the questions with k >= 1. The bound says whether the empty rollouts are enough to explain
the gap; the matched count says whether the retrieving ones reach as many classes as as many free-query rollouts.

It reports, with ``repro_small.py``'s bootstrap (95%, questions resampled, fixed seed), both means per arm, their
paired menu-minus-free-query differences, and the share of rollouts with no evidence, pooled over the folders and per
folder. Reading: if the menu's difference reaches 0 or above with the empty rollouts apart, the shared empty class
is large enough to account for the gap (if it stays below 0, it is not); if the matched difference is not below 0,
the menu's retrieving rollouts are not where the gap comes from. Folders are checked as ``repro_small.py pool``
checks them (one setting; a question counted once) and read in its order (by dataset, then list position). Nothing
is replayed.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import fmt_interval, utc_stamp, write_results  # noqa: E402
from repro_pool import Source, check_poolable, in_question_order, load_source  # noqa: E402
from repro_small import ARMS, BOOTSTRAP, _safe, bootstrap_mean, paired_difference, read_json_gz  # noqa: E402

from harness_g.errors import ConfigError  # noqa: E402

#: the file name a check is filed under beside a pool's ``pooled.json``, where the page finds it
EMPTY_CLASS = "empty_class.json"


def class_counts(evidence_sets: Sequence[frozenset[str]], threshold: float) -> dict[str, float]:
    """One group's ``n_eq`` (the appendix's classes), ``n_eq_empty_apart`` (classes of the rollouts with evidence
    plus one per rollout without) and ``empty_frac`` (share of the group's rollouts with E(tau) = {})."""
    from harness_g.training.diagnostics import equivalence_classes

    with_evidence = [e for e in evidence_sets if e]
    empty = len(evidence_sets) - len(with_evidence)
    return {"n_eq": float(len(set(equivalence_classes(evidence_sets, threshold)))),
            "n_eq_empty_apart": float(len(set(equivalence_classes(with_evidence, threshold))) + empty),
            "empty_frac": empty / len(evidence_sets) if evidence_sets else 0.0}


def matched_counts(menu: Sequence[frozenset[str]], free: Sequence[frozenset[str]], threshold: float) -> dict[str, float]:
    """One question's matched count: ``k`` (menu rollouts with evidence), ``menu_retrieving`` (their classes) and
    ``free_matched`` (the mean classes over every k-subset of the free-query group, in rollout order; C(8, k) <= 70
    subsets). Both 0 when k = 0."""
    from itertools import combinations

    from harness_g.training.diagnostics import equivalence_classes

    retrieving = [e for e in menu if e]
    k = len(retrieving)
    if k == 0:
        return {"k": 0.0, "menu_retrieving": 0.0, "free_matched": 0.0}
    if k > len(free):
        raise ConfigError(f"a menu group has {k} rollouts with evidence, its free-query group only {len(free)} rollouts")
    subsets = [len(set(equivalence_classes(list(c), threshold))) for c in combinations(free, k)]
    return {"k": float(k), "menu_retrieving": float(len(set(equivalence_classes(retrieving, threshold)))),
            "free_matched": sum(subsets) / len(subsets)}


def folder_values(source: Source) -> dict[str, list[dict[str, float]]]:
    """Per arm, per question of ``source`` (equivalence.json's order), :func:`class_counts` of its cached group;
    refuses a folder whose cached rollouts do not give the N_eq its equivalence.json recorded."""
    from harness_g.training.diagnostics import retrieval_evidence

    if not source.equivalence:
        raise ConfigError(f"--from {source.folder}: no equivalence.json there; run `repro_small.py equivalence` first")
    threshold = float(source.equivalence["jaccard_threshold"])
    values: dict[str, list[dict[str, float]]] = {arm: [] for arm in ARMS}
    values["matched"] = []
    for i, qid in enumerate(source.question_ids):
        evidence = {}
        for arm in ARMS:
            path = source.folder / "cache" / "rollouts" / arm / f"{_safe(qid)}.json.gz"
            if not path.is_file():
                raise ConfigError(f"--from {source.folder}: {path.name} is missing from cache/rollouts/{arm}")
            evidence[arm] = [retrieval_evidence(r["trajectory"]) for r in read_json_gz(path)["rollouts"]]
            counts = class_counts(evidence[arm], threshold)
            recorded = source.equivalence["per_question"][arm][i]["n_eq"]
            if counts["n_eq"] != recorded:
                raise ConfigError(f"--from {source.folder}: question {qid} ({arm}) gives N_eq {counts['n_eq']:g} from "
                                  f"its cache, {recorded:g} in equivalence.json; the cache is not this folder's")
            values[arm].append(counts)
        values["matched"].append(matched_counts(evidence["menu"], evidence["free-query"], threshold))
    return values


def summarise(values: dict[str, list[dict[str, float]]], resamples: int) -> dict[str, Any]:
    """Bootstrap means per arm and paired menu-minus-free-query differences of ``values`` (:func:`folder_values`,
    possibly several folders' lists joined)."""
    keys = ("n_eq", "n_eq_empty_apart", "empty_frac")
    arms = {arm: {k: bootstrap_mean([v[k] for v in values[arm]], resamples=resamples) for k in keys} for arm in ARMS}
    menu, free = values["menu"], values["free-query"]
    diff = {k: paired_difference([v[k] for v in menu], [v[k] for v in free], resamples=resamples) for k in keys}
    matched = [v for v in values["matched"] if v["k"] >= 1]
    return {"questions": len(menu), "arms": arms, "menu_minus_free_query": diff,
            "matched": {"questions": len(matched),
                        "k": bootstrap_mean([v["k"] for v in matched], resamples=resamples),
                        "menu_retrieving": bootstrap_mean([v["menu_retrieving"] for v in matched], resamples=resamples),
                        "free_matched": bootstrap_mean([v["free_matched"] for v in matched], resamples=resamples),
                        "menu_minus_free": paired_difference([v["menu_retrieving"] for v in matched],
                                                             [v["free_matched"] for v in matched],
                                                             resamples=resamples)}}


def check(folders: Sequence[Path], *, resamples: int = BOOTSTRAP) -> dict[str, Any]:
    """The check over ``folders`` (pooled, and per folder): ``{kind, generated, pooled, per_folder, definitions}``."""
    if resamples < 100:
        raise ConfigError(f"--resamples must be >= 100, got {resamples}")
    sources = in_question_order([load_source(f) for f in folders])  # the pool's order, whatever --from's
    if len(sources) > 1:
        check_poolable(sources)
    per = [(s, folder_values(s)) for s in sources]
    joined = {key: [v for _, vals in per for v in vals[key]] for key in (*ARMS, "matched")}
    return {"kind": "empty_class_check", "generated": utc_stamp(),
            "pooled": summarise(joined, resamples),
            "per_folder": [{"folder": str(s.folder), "dataset": s.rests_on.get("dataset"),
                            "first_question": s.rests_on.get("first_question") or 1,
                            **summarise(vals, resamples)} for s, vals in per],
            "definitions": {
                "n_eq": "the appendix's retrieval-equivalence classes of a question's N_g rollouts (as equivalence.json)",
                "n_eq_empty_apart": "ours: classes of the rollouts with evidence plus one class per rollout without any "
                                    "(the most the empty rollouts could add)",
                "empty_frac": "share of a question's rollouts whose evidence E(tau) is empty",
                "matched": "ours: over the questions where k >= 1 menu rollouts retrieved something, the classes of "
                           "those k (menu_retrieving) and the mean classes of every k-subset of the free-query group "
                           "(free_matched), paired",
                "interval": "bootstrap 95% over questions (percentile), fixed seed, as repro_small.py"}}


def paragraph(data: dict[str, Any]) -> str:
    """The page's sentence for a check filed beside a pool (HTML): the arms' empty shares and the N_eq difference
    both ways. A diagnostic, not a claim, so it gets no verdict."""
    from html import escape

    pooled = data["pooled"]
    arms, d, m = pooled["arms"], pooled["menu_minus_free_query"], pooled["matched"]
    k = m["k"]["mean"]
    menu, free = arms["menu"]["empty_frac"]["mean"], arms["free-query"]["empty_frac"]["mean"]
    return ("<p class='basis'>" + escape(
        f"Ours, a check of claim (a)'s difference from the cached rollouts ({pooled['questions']} questions, "
        f"benchmarks/repro_empty_class.py): {menu:.1%} of the menu's rollouts and {free:.1%} of the free-query arm's "
        f"retrieved nothing and share one class. Counting each of them as a class of its own (the most they could "
        f"add), menu minus free-query N_eq is {fmt_interval(d['n_eq_empty_apart'], '+.2f')}, against "
        f"{fmt_interval(d['n_eq'], '+.2f')} as defined. "
        "Where the first lies above 0, the shared empty class is large enough to account for the difference; what "
        "those rollouts would have retrieved is not known. "
        f"Matched: over the {m['questions']} questions where some menu rollout retrieved (k = "
        f"{'n/a' if k is None else f'{k:.1f}'} of them on average), their classes minus the mean classes of k "
        f"free-query rollouts: {fmt_interval(m['menu_minus_free'], '+.2f')}.") + "</p>")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--from", dest="folders", nargs="+", type=Path, required=True,
                   help="result folders `repro_small.py equivalence` wrote (one setting; pooled when several)")
    p.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    p.add_argument("--resamples", type=int, default=BOOTSTRAP, help="bootstrap resamples (default %(default)s)")
    args = p.parse_args(argv)
    try:
        data = check(args.folders, resamples=args.resamples)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_results(args.out, data)
    d, m = data["pooled"]["menu_minus_free_query"], data["pooled"]["matched"]["menu_minus_free"]
    print(f"{data['pooled']['questions']} questions: menu minus free-query N_eq {fmt_interval(d['n_eq'], '+.2f')}; "
          f"with empty rollouts apart {fmt_interval(d['n_eq_empty_apart'], '+.2f')}; "
          f"matched ({m['n']} questions) {fmt_interval(m, '+.2f')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
