"""The mention sets of a graph's entities, counted in plain Python from its artifact (the tests' independent check on
the hub samples and the benchmarks that measure them)."""
from __future__ import annotations

from collections import defaultdict

from harness_g.graph.artifact import Artifact


def mentioned_sentences(artifact: Artifact) -> dict[str, set[str]]:
    """``{entity id: the distinct sentence ids that mention it}`` over every MENTIONS kind (what makes a hub)."""
    table = artifact.table("mentions", columns=["entity_id", "sentence_id"])
    out: dict[str, set[str]] = defaultdict(set)
    for eid, sid in zip(table.column("entity_id").to_pylist(), table.column("sentence_id").to_pylist()):
        out[eid].add(sid)
    return out
