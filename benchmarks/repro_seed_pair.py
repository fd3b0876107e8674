"""Does a result of issue 31 item 1 depend on the sampling seed (or the preset)? The same questions at two seeds, or
under two presets, paired by question.

    python benchmarks/repro_seed_pair.py --a DIR [DIR ...] --b DIR [DIR ...] --out FILE.json [--vary preset]

``--a`` and ``--b`` are result folders ``repro_small.py equivalence`` wrote (each side read as one sample, as
``repro_small.py pool`` reads several folders), played under the same settings but the seed (``--seed``: it draws
every group's rollouts, ``crc32("<seed>:<question id>")``) on exactly the same questions. Nothing is replayed: for
every question its recorded values (``equivalence.json``'s ``per_question``) are paired across the sides, and for
each quantity this reports the mean at a, the mean at b, the paired difference a minus b with ``repro_small.py``'s
bootstrap (95%, questions resampled, fixed seed), and the Pearson correlation of the two sides over questions (ours:
how much of a question's value carries over to another seed; None where a side does not vary).

Quantities: N_eq per arm and menu minus free-query (the appendix "Retrieval-equivalence diagnostics" count, as
``equivalence.json``), and per arm the share of a group's rollouts whose evidence is empty (``empty_evidence_frac``,
the share behind ``repro_empty_class.py``'s check). Refused, one line each, before anything is written: sides whose
settings differ in anything but the seed (within a side, the dataset and block of questions may differ, as for a
pool, and a question counts once); the same seed on both sides; a question on one side only.

``--vary preset`` pairs the same questions at the same seed under two presets instead (``paper`` against
``extended``): each side is played on the graph its preset builds, so the graphs (and their content hashes) differ and
questions are paired by dataset format and question id. The sides may differ only in the preset and in the values it
sets: every other differing setting is refused, as is a menu setting that is not its side's preset value (an
override), and the same preset on both sides (kind ``preset_pair``; the key ``presets`` holds the two).

Each file records what the comparison held fixed (``rests_on``), and ``repro_small.py page`` shows every comparison
under its results folder (:func:`pair_sections`): a diagnostic of ours, read "differs" only where the paired interval
excludes 0, never a verdict on a claim of the paper.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import fmt_interval, fmt_num, utc_stamp, write_results  # noqa: E402
from repro_pool import Source, check_poolable, in_question_order, load_source, setting_differences  # noqa: E402
from repro_small import ARMS, BOOTSTRAP, bootstrap_mean, paired_difference  # noqa: E402

from harness_g.agent.env.config import ENV_PRESETS  # noqa: E402
from harness_g.config_diff import flatten  # noqa: E402
from harness_g.errors import ConfigError  # noqa: E402

#: (name, arm or None for menu minus free-query, per_question key)
QUANTITIES = (("n_eq_menu", "menu", "n_eq"), ("n_eq_free_query", "free-query", "n_eq"),
              ("n_eq_menu_minus_free_query", None, "n_eq"),
              ("empty_frac_menu", "menu", "empty_evidence_frac"),
              ("empty_frac_free_query", "free-query", "empty_evidence_frac"))
#: what may differ between the two sides: the sampling seed (default) or the preset (and the menu settings it sets)
VARIES = ("seed", "preset")


def question_key(source: Source, qid: str, vary: str = "seed") -> tuple[Any, str]:
    """How a question is paired across the sides: by (graph content hash, id) when only the seed differs (one graph);
    by (dataset format, id) when the preset differs (each side has its own preset's graph)."""
    return (source.settings.get("content_hash") if vary == "seed" else source.settings.get("format"), qid)


def side_values(sources: Sequence[Source], flag: str, vary: str = "seed") -> dict[tuple[Any, str], dict[str, float]]:
    """``{question key: {quantity: value}}`` over one side's folders (checked as a pool: one setting, each question
    once); the key is :func:`question_key`."""
    if not sources:
        raise ConfigError(f"{flag}: give at least one result folder")
    if len(sources) > 1:
        check_poolable(sources)
    values: dict[tuple[Any, str], dict[str, float]] = {}
    for s in sources:
        if not s.equivalence:
            raise ConfigError(f"{flag} {s.folder}: no equivalence.json there; run `repro_small.py equivalence` first")
        rows = {arm: s.equivalence["per_question"][arm] for arm in ARMS}
        for i, qid in enumerate(s.question_ids):
            if any(rows[arm][i]["question_id"] != qid for arm in ARMS):
                raise ConfigError(f"{flag} {s.folder}: equivalence.json lists its arms' questions in different orders")
            v: dict[str, float] = {}
            for name, arm, field in QUANTITIES:
                v[name] = (float(rows[arm][i][field]) if arm is not None
                           else float(rows["menu"][i][field]) - float(rows["free-query"][i][field]))
            key = question_key(s, qid, vary)
            if key in values:  # the same question on two graphs of one dataset (check_poolable keys by graph)
                raise ConfigError(f"{flag} {s.folder}: question {qid} is also in another folder of this side; a "
                                  "question counts once")
            values[key] = v
    return values


def preset_explains(key: str, a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether the differing setting ``key`` (dotted) is the preset itself or a menu setting each side holds at its
    own preset's value (:data:`ENV_PRESETS`); ``a``/``b`` are the sides' flattened settings."""
    name = key.rsplit(".", 1)[-1]
    if name == "preset":
        return True
    if "env" not in key.split(".")[:-1]:  # not a menu (EnvConfig) setting
        return False
    pa, pb = ENV_PRESETS.get(a.get("preset"), {}), ENV_PRESETS.get(b.get("preset"), {})
    return name in pa and name in pb and a[key] == pa[name] and b[key] == pb[name]


def check_sides(a: Sequence[Source], b: Sequence[Source], vary: str = "seed") -> None:
    """Refuse sides played under other settings than each other in anything but ``vary`` (for ``preset``: what the
    preset sets, :func:`preset_explains`), or with the same value of it."""
    sa, sb = a[0].settings, b[0].settings
    if vary == "seed":
        diffs = [d for d in setting_differences(sa, sb) if not d.startswith("seed:")]
    else:
        fa, fb = flatten(sa), flatten(sb)
        diffs = [d for d in setting_differences(sa, sb) if not preset_explains(d.split(":", 1)[0], fa, fb)]
    if diffs:
        extra = "" if vary == "seed" else " (and the menu settings it sets)"
        raise ConfigError(f"--b {b[0].folder}: played with other settings than --a {a[0].folder} ({diffs[0]}); only the "
                          f"{vary}{extra} may differ between the sides")
    if sa.get(vary) == sb.get(vary):
        raise ConfigError(f"--a and --b were both played with {vary} {sa.get(vary)}; give two {vary}s")


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """The Pearson correlation of paired values (:func:`statistics.correlation`); None for fewer than 2 pairs or a
    side that does not vary."""
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return None


def held_fixed(vary: str) -> str:
    """The setting a comparison keeps equal beside the one it varies: the preset when the seed varies, and back."""
    return "preset" if vary == "seed" else "seed"


def rests_on(settings: dict[str, Any], vary: str) -> dict[str, Any]:
    """What a comparison holds fixed, from one side's ``settings.json``: model, device, N_g, T, temperature and the
    seed (under ``--vary preset``) or the preset (under ``--vary seed``)."""
    menu = (settings.get("arms") or {}).get("menu") or {}
    fixed = held_fixed(vary)
    return {"model": settings.get("model"), "device": settings.get("device"), "group_size": settings.get("group_size"),
            "max_turns": menu.get("max_turns"), "temperature": menu.get("temperature"), fixed: settings.get(fixed)}


def compare(a_folders: Sequence[Path], b_folders: Sequence[Path], *, resamples: int = BOOTSTRAP,
            vary: str = "seed") -> dict[str, Any]:
    """The paired comparison: ``{kind, generated, seeds | presets, questions, per_dataset, quantities,
    definitions}`` (``kind`` ``seed_pair`` or ``preset_pair``, after ``vary``)."""
    if resamples < 100:
        raise ConfigError(f"--resamples must be >= 100, got {resamples}")
    if vary not in VARIES:
        raise ConfigError(f"--vary must be one of {', '.join(VARIES)}, got {vary!r}")
    # questions paired by id; resampled in the pool's order (in_question_order on --a), whatever the order given
    a, b = in_question_order([load_source(f) for f in a_folders]), in_question_order([load_source(f) for f in b_folders])
    va, vb = side_values(a, "--a", vary), side_values(b, "--b", vary)
    check_sides(a, b, vary)
    only = next((k for k in va if k not in vb), None) or next((k for k in vb if k not in va), None)
    if only is not None:
        side = "--a" if only in va else "--b"
        raise ConfigError(f"question {only[1]} is on {side} only; both sides must hold the same questions")
    keys = list(va)

    def summary(ks: Sequence[tuple[Any, str]]) -> dict[str, Any]:
        out = {}
        for name, _, _ in QUANTITIES:
            xa, xb = [va[k][name] for k in ks], [vb[k][name] for k in ks]
            out[name] = {"a": bootstrap_mean(xa, resamples=resamples), "b": bootstrap_mean(xb, resamples=resamples),
                         "a_minus_b": paired_difference(xa, xb, resamples=resamples), "pearson": pearson(xa, xb)}
        return out

    by_dataset: dict[Any, list[tuple[Any, str]]] = {}
    for s in a:  # grouped by dataset name (two graphs of one dataset are one group)
        by_dataset.setdefault(s.rests_on.get("dataset"), []).extend(question_key(s, q, vary) for q in s.question_ids)
    return {"kind": f"{vary}_pair", "generated": utc_stamp(),
            f"{vary}s": {"a": a[0].settings.get(vary), "b": b[0].settings.get(vary)},
            "folders": {"a": [str(s.folder) for s in a], "b": [str(s.folder) for s in b]},
            "rests_on": rests_on(a[0].settings, vary),
            "questions": len(keys), "quantities": summary(keys),
            "per_dataset": {name: {"questions": len(ks), "quantities": summary(ks)} for name, ks in by_dataset.items()},
            "definitions": {
                "n_eq": "the appendix's retrieval-equivalence classes of a question's N_g rollouts (equivalence.json)",
                "empty_frac": "share of a question's rollouts whose evidence E(tau) is empty (empty_evidence_frac)",
                "a_minus_b": f"per question, the value at --a's {vary} minus at --b's; bootstrap 95% over "
                             "questions (percentile), fixed seed, as repro_small.py",
                "pearson": f"ours: correlation of the two {vary}s' values over questions"}}


#: the page's row label of each quantity (QUANTITIES' names)
LABELS = {"n_eq_menu": "N_eq, menu", "n_eq_free_query": "N_eq, free-query",
          "n_eq_menu_minus_free_query": "N_eq, menu minus free-query",
          "empty_frac_menu": "menu rollouts that retrieve nothing (share)",
          "empty_frac_free_query": "free-query rollouts that retrieve nothing (share)"}
KINDS = ("seed_pair", "preset_pair")


def pair_files(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every comparison this script wrote under ``root``, read: ``(path, data)`` for each ``*pair*.json`` whose
    ``kind`` is one of :data:`KINDS` (other JSON is not ours and is passed over), caches excepted, in path order. A
    ``*pair*.json`` that is not JSON is refused (ConfigError), so a damaged result is not left off the page unseen."""
    found = []
    for path in sorted(root.rglob("*pair*.json")):
        if "cache" in path.relative_to(root).parts:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ConfigError(f"{path}: not valid JSON ({exc})") from exc
        if isinstance(data, dict) and data.get("kind") in KINDS:
            found.append((path, data))
    return found


def varied(data: dict[str, Any]) -> str:
    """What a comparison file varies, from its ``kind``: ``preset`` or ``seed``."""
    return data["kind"].removesuffix("_pair")


def pair_section(data: dict[str, Any], where: Path) -> str:
    """The page's table for one comparison (HTML): per quantity the two sides' means, the paired difference a minus b
    with its interval and the correlation r. Ours, a check of how a result depends on the seed or the preset rather
    than a claim of the paper, so its reading is "differs" (the interval excludes 0) or "not shown to differ"."""
    from html import escape

    vary = varied(data)
    sides = data[f"{vary}s"]
    a, b = f"{vary} {sides['a']}", f"{vary} {sides['b']}"
    sets = ", ".join(f"{name} {d['questions']}" for name, d in data["per_dataset"].items())
    rows = []
    for name, q in data["quantities"].items():
        d, corr = q["a_minus_b"], q["pearson"]
        if d.get("mean") is None:
            reading = "n/a"
        else:
            reading = "differs" if d["lo"] > 0 or d["hi"] < 0 else "not shown to differ"
        rows.append(f"<tr><td>{escape(LABELS.get(name, name))}</td><td>{fmt_num(q['a'].get('mean'), '.3f')}</td>"
                    f"<td>{fmt_num(q['b'].get('mean'), '.3f')}</td><td>{fmt_interval(d, '+.3f')}</td>"
                    f"<td>{'n/a' if corr is None else f'{corr:.2f}'}</td><td class='verdict'>{escape(reading)}</td>"
                    "</tr>")
    folders = f"{', '.join(data['folders']['a'])} against {', '.join(data['folders']['b'])}"
    r = data.get("rests_on") or {}
    fixed = held_fixed(vary)
    held = (f"{r.get('model')}, {r.get('device')}, {fixed} {r.get(fixed)}, N_g = {r.get('group_size')} rollouts per "
            f"question and arm, T = {r.get('max_turns')}, temperature {r.get('temperature')}; " if r
            else f"what it held fixed is not recorded ({data['folders']['a'][0]} has no settings.json here); ")
    basis = (f"Ours, not a claim of the paper: the same {data['questions']} questions ({sets}) under the two {vary}s, "
             f"{held}"
             "each question paired with itself; a minus b per question, bootstrap 95% over questions; r the "
             f"correlation of the two sides over questions. It reads differs only when the interval excludes 0. "
             f"Folders: {folders}.")
    return (f"<h2>Paired by question: {escape(a)} against {escape(b)} <code>{escape(str(where))}</code></h2>"
            f"<p class='basis'>{escape(basis)}</p>"
            f"<table><tr><th>quantity</th><th>{escape(a)}</th><th>{escape(b)}</th><th>a minus b [95%]</th>"
            f"<th>r</th><th>reading</th></tr>{''.join(rows)}</table>")


def pair_sections(root: Path) -> str:
    """One page section per comparison under ``root`` (:func:`pair_files`); "" when there is none."""
    sections = []
    for path, data in pair_files(root):
        if "rests_on" not in data:  # written before rests_on was recorded: read it from the first --a folder
            settings = root / data["folders"]["a"][0] / "settings.json"
            if settings.is_file():
                data["rests_on"] = rests_on(json.loads(settings.read_text(encoding="utf-8")), varied(data))
        sections.append(pair_section(data, path.relative_to(root)))
    return "".join(sections)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", nargs="+", type=Path, required=True, help="result folders at one seed (or preset)")
    p.add_argument("--b", nargs="+", type=Path, required=True,
                   help="the same questions' folders at another seed (or preset)")
    p.add_argument("--vary", choices=VARIES, default="seed",
                   help="what differs between the sides: the sampling seed (default) or the preset")
    p.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    p.add_argument("--resamples", type=int, default=BOOTSTRAP, help="bootstrap resamples (default %(default)s)")
    args = p.parse_args(argv)
    try:
        data = compare(args.a, args.b, resamples=args.resamples, vary=args.vary)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_results(args.out, data)
    q = data["quantities"]
    for name, _, _ in QUANTITIES:
        d, r = q[name]["a_minus_b"], q[name]["pearson"]
        labels = data[f"{args.vary}s"]
        print(f"{name}: {args.vary} {labels['a']} {q[name]['a']['mean']:.3f}, {args.vary} {labels['b']} "
              f"{q[name]['b']['mean']:.3f}, difference {d['mean']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}] "
              f"(r = {'n/a' if r is None else f'{r:.2f}'}, {data['questions']} questions)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
