"""``harness-g report RUN_DIR… --out report.html``: one self-contained HTML page per set of eval runs.

Loading (this module) reads each run directory written by :func:`harness_g.agent.eval.run.run_eval`
(``records.jsonl``, ``summary.json``, ``config.json``), resolves the dataset name (config, else the
graph's manifest), sentence texts and gold evidence ids (from the records, else the graph artifact
named in ``config.json``), and diagnoses each wrong answer:

* ``gold not reachable``             — the menu-reachability search proved the gold evidence unreachable;
* ``gold visible but not committed`` — a gold sentence was on some step's visible set but is not in C_T;
* ``wrong answer string``            — every gold evidence unit is in C_T, the answer still misses;
* ``gold never surfaced``            — no gold sentence was ever visible (or retrieved, for rag);
* ``part of the gold never surfaced`` — some gold units are in C_T, the missing ones were never visible;
* ``no retrieval (naive)`` / ``no gold evidence annotated``.

Rendering lives in :mod:`.html` (page) and :mod:`.plots` (inline SVG).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from harness_g.agent.eval.metrics import gold_units, unit_satisfied
from harness_g.errors import InputError
from harness_g.graph.types import paragraph_of

RECORDS = "records.jsonl"
SUMMARY = "summary.json"
CONFIG = "config.json"

CORRECT = "correct"
REASONS = ("gold not reachable", "gold visible but not committed", "wrong answer string", "part of the gold never surfaced",
           "gold never surfaced", "no retrieval (naive)", "no gold evidence annotated")


@dataclass
class Sentence:
    id: str
    title: str
    text: str


@dataclass
class Run:
    path: Path
    config: dict[str, Any]
    summary: dict[str, Any]
    records: list[dict[str, Any]]
    dataset: str
    interface: str
    policy: str
    label: str = ""
    sentences: dict[str, Sentence] = field(default_factory=dict)
    gold: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # question id -> {sentence_ids, paragraph_ids}

    @property
    def scored(self) -> list[dict[str, Any]]:
        return [r for r in self.records if "error" not in r]


def read_json(path: Path) -> dict[str, Any]:
    """A run's JSON object file (``config.json``, ``summary.json``, a manifest); ``{}`` when absent; InputError naming
    the file and line when it is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except json.JSONDecodeError as exc:
        raise InputError(f"corrupt JSON ({exc.msg})", str(path), exc.lineno) from exc


def _read_records(path: Path) -> list[dict[str, Any]]:
    from harness_g.agent.eval.run import read_records

    return list(read_records(path).values())


def _graph_manifest(config: dict[str, Any]) -> dict[str, Any]:
    graph = config.get("graph")
    if not graph:
        return {}
    return read_json(Path(graph) / "manifest.json") if Path(graph).is_dir() else {}


def referenced_sentence_ids(records: Iterable[dict[str, Any]]) -> set[str]:
    """Every sentence id a record mentions (menus, committed, visible, retrieved, gold)."""
    ids: set[str] = set()
    for r in records:
        t = r.get("trajectory") or {}
        ids.update(t.get("initial_visible") or ())
        ids.update(t.get("committed") or ())
        for s in t.get("steps") or ():
            for a in s.get("menu") or ():
                if a.get("type") in ("SELECT", "ANSWER_WITH"):
                    ids.update(a.get("targets") or ())
            ids.update(s.get("introduced") or ())
            ids.update(s.get("visible_after") or ())
        for c in (t.get("meta") or {}).get("retrieved") or ():
            ids.update(c.get("sentence_ids") or ())
        ids.update((r.get("gold") or {}).get("sentence_ids") or ())
    return ids


def load_sentences(graph_dir: str | Path | None, ids: Iterable[str]) -> dict[str, Sentence]:
    """Sentence records for ``ids`` from the graph artifact's ``sentences.parquet`` (empty when it is gone)."""
    ids = sorted(set(ids))
    if not graph_dir or not ids:
        return {}
    path = Path(graph_dir) / "sentences.parquet"
    if not path.exists():
        return {}
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["id", "title", "text"], filters=[("id", "in", ids)])
    return {i: Sentence(i, t or "", x or "") for i, t, x in zip(table.column("id").to_pylist(), table.column("title").to_pylist(),
                                                                table.column("text").to_pylist())}


def _gold_from_artifact(graph_dir: str | Path | None) -> dict[str, dict[str, list[str]]]:
    if not graph_dir:
        return {}
    path = Path(graph_dir) / "questions.jsonl"
    if not path.exists():
        return {}
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                q = json.loads(line)
                out[str(q["id"])] = {"sentence_ids": list(q.get("gold_sentence_ids") or ()),
                                     "paragraph_ids": list(q.get("gold_paragraph_ids") or ())}
    return out


def load_run(run_dir: str | Path) -> Run:
    path = Path(run_dir)
    if not (path / RECORDS).exists():
        raise InputError(f"not an eval run directory (no {RECORDS}; make one with `harness-g eval --out DIR`)", str(path))
    config = read_json(path / CONFIG)
    summary = read_json(path / SUMMARY)
    records = _read_records(path / RECORDS)
    manifest = _graph_manifest(config)
    dataset = (config.get("dataset") or summary.get("dataset") or manifest.get("dataset")
               or next((r.get("dataset") for r in records if r.get("dataset")), None) or "unknown")
    interface = (config.get("interface") or (config.get("eval") or {}).get("interface") or summary.get("interface")
                 or next(((r.get("trajectory") or {}).get("meta", {}).get("interface") for r in records), None) or "menu")
    policy = summary.get("policy") or (config.get("eval") or {}).get("policy") or "?"
    run = Run(path, config, summary, records, str(dataset), str(interface), str(policy))
    run.sentences = load_sentences(config.get("graph"), referenced_sentence_ids(records))
    need_gold = [r for r in records if "gold" not in r]
    fallback = _gold_from_artifact(config.get("graph")) if need_gold else {}
    for r in records:
        run.gold[str(r["id"])] = r.get("gold") or fallback.get(str(r["id"])) or {"sentence_ids": [], "paragraph_ids": []}
    return run


def load_runs(run_dirs: Sequence[str | Path]) -> list[Run]:
    runs = [load_run(d) for d in run_dirs]
    base = [f"{r.dataset} · {r.interface} · {r.policy}" for r in runs]
    for r, b in zip(runs, base):
        r.label = b if base.count(b) == 1 else f"{b} ({r.path.name})"
    return runs


# -- per-question diagnosis ------------------------------------------------------------------------
def visible_ever(record: dict[str, Any]) -> list[str]:
    """Every sentence that was visible at some step (or retrieved, for rag), first-seen order."""
    t = record.get("trajectory") or {}
    seen: dict[str, None] = dict.fromkeys(t.get("initial_visible") or ())
    for s in t.get("steps") or ():
        for a in s.get("menu") or ():
            if a.get("type") in ("SELECT", "ANSWER_WITH"):
                seen.update(dict.fromkeys(a.get("targets") or ()))
        seen.update(dict.fromkeys(s.get("visible_after") or ()))
    for c in (t.get("meta") or {}).get("retrieved") or ():
        seen.update(dict.fromkeys(c.get("sentence_ids") or ()))
    return list(seen)


def is_gold(sentence_id: str, gold: dict[str, list[str]]) -> bool:
    if gold.get("sentence_ids"):
        return sentence_id in gold["sentence_ids"]
    return paragraph_of(sentence_id) in (gold.get("paragraph_ids") or ())


def diagnose(record: dict[str, Any], gold: dict[str, list[str]], interface: str = "menu") -> str:
    """``"correct"`` (EM = 1) or the failure reason (see the module docstring); ``"error"`` for failed records."""
    if "error" in record:
        return "error"
    m = record.get("metrics") or {}
    if m.get("em") == 1:
        return CORRECT
    if interface == "naive" or (record.get("trajectory") or {}).get("terminated_by") == "naive":
        return "no retrieval (naive)"
    units = gold_units(gold.get("sentence_ids") or (), gold.get("paragraph_ids") or ())
    if not units:
        return "no gold evidence annotated"
    reach = (record.get("reachability") or {}).get("status")
    if reach == "unreachable":
        return "gold not reachable"
    committed = (record.get("trajectory") or {}).get("committed") or []
    missing = [u for u in units if not unit_satisfied(u, committed)]
    if not missing:
        return "wrong answer string"
    seen = visible_ever(record)
    if any(unit_satisfied(u, seen) for u in missing):
        return "gold visible but not committed"
    return "part of the gold never surfaced" if len(missing) < len(units) else "gold never surfaced"


_LABEL = re.compile(r"^A\d+\s*=\s*(?P<type>\w+)(?:\s+(?P<refs>[SE]\d+(?:\s+[SE]\d+)*))?(?:\s*\|\s*entity:\s*(?P<entity>.*))?$")


def parse_label(label: str) -> dict[str, str]:
    """``"A6 = LOOKUP E3 | entity: Caroline Leaf"`` -> ``{type, refs: "E3", entity: "Caroline Leaf"}``."""
    m = _LABEL.match(label or "")
    if not m:
        return {"type": "", "refs": "", "entity": ""}
    return {k: (m.group(k) or "") for k in ("type", "refs", "entity")}


def build_report(run_dirs: Sequence[str | Path], out: str | Path, *, title: str = "harness-g evaluation report",
                 max_questions: int | None = None, expand: bool = False) -> Path:
    """Write the HTML report for ``run_dirs`` to ``out``; returns the path. ``expand``: trajectories start open."""
    from harness_g.agent.eval.report.html import render_report

    if not run_dirs:
        raise InputError("report needs at least one RUN_DIR")
    runs = load_runs(run_dirs)
    page = render_report(runs, title=title, max_questions=max_questions, expand=expand)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out


__all__ = ["Run", "Sentence", "build_report", "diagnose", "load_run", "load_runs", "parse_label", "visible_ever", "REASONS"]
