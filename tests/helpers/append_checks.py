"""Helpers for the append tests and benchmark: split a question file into two parts, and compare two artifacts the
way ``harness-g build --append`` promises they are equal (graph/append.py)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from harness_g.graph.artifact import SCHEMAS, Artifact

#: sentence and entity-name vectors of an appended graph and of a full build of the union may differ by the
#: encoder's batching (other padding, other batch shapes): at most this much per component (measured ~1e-7)
EMBEDDING_ATOL = 1e-5
#: SYNONYM scores (cosines rounded to 6 places, stored as float32) may differ by as much
SCORE_ATOL = 1e-5


def split_records(source: Path, first: Sequence[int], out_dir: Path) -> tuple[Path, Path]:
    """Write the records of a JSON-array question file at indexes ``first`` to ``out_dir/a.json`` and the others to
    ``out_dir/b.json``; returns both paths."""
    records = json.loads(Path(source).read_text(encoding="utf-8"))
    keep = set(first)
    out_dir.mkdir(parents=True, exist_ok=True)
    a, b = out_dir / "a.json", out_dir / "b.json"
    a.write_text(json.dumps([r for i, r in enumerate(records) if i in keep]), encoding="utf-8")
    b.write_text(json.dumps([r for i, r in enumerate(records) if i not in keep]), encoding="utf-8")
    return a, b


def _sorted_rows(artifact: Artifact, table: str) -> list[tuple[Any, ...]]:
    names = list(SCHEMAS[table].names)
    t = artifact.table(table)
    return sorted(zip(*(t.column(c).to_pylist() for c in names)), key=repr)


def table_differences(appended: Artifact, full: Artifact) -> list[str]:
    """What differs between two artifacts' tables after a canonical sort (an empty list when equal); SYNONYM scores
    within :data:`SCORE_ATOL`."""
    out = []
    for table in SCHEMAS:
        a, b = _sorted_rows(appended, table), _sorted_rows(full, table)
        if table == "synonyms":
            sa = {r[:3]: r[3] for r in a}
            sb = {r[:3]: r[3] for r in b}
            if set(sa) != set(sb):
                out.append(f"synonyms: {len(set(sa) - set(sb))} only appended {sorted(set(sa) - set(sb))[:3]}, "
                           f"{len(set(sb) - set(sa))} only full {sorted(set(sb) - set(sa))[:3]}")
            else:
                worst = max((abs(sa[k] - sb[k]) for k in sa), default=0.0)
                if worst > SCORE_ATOL:
                    out.append(f"synonyms: a score differs by {worst}")
        elif a != b:
            only_a, only_b = set(a) - set(b), set(b) - set(a)
            out.append(f"{table}: {len(only_a)} rows only appended {sorted(only_a, key=repr)[:2]}, "
                       f"{len(only_b)} only full {sorted(only_b, key=repr)[:2]}")
    qa = sorted(json.dumps(q.to_json(), sort_keys=True) for q in appended.questions())
    qb = sorted(json.dumps(q.to_json(), sort_keys=True) for q in full.questions())
    if qa != qb:
        out.append("questions differ")
    return out


def embedding_difference(appended: Artifact, full: Artifact) -> float:
    """The largest absolute difference of a sentence or entity-name vector component, rows matched by id."""
    worst = 0.0
    for table, matrix in (("sentences", lambda a: a.embeddings(mmap=False)), ("entities", lambda a: a.entity_embeddings())):
        rows = []
        for art in (appended, full):
            ids = art.table(table, columns=["id"]).column("id").to_pylist()
            m = matrix(art)
            rows.append({i: m[k] for k, i in enumerate(ids)})
        assert set(rows[0]) == set(rows[1]), f"{table}: other ids"
        for i, v in rows[0].items():
            worst = max(worst, float(np.abs(v - rows[1][i]).max()) if v.size else 0.0)
    return worst
