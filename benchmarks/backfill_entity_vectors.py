"""Add entity_embeddings.npy to a GRAPH_DIR built before the build stored entity-name vectors
(pipeline version 1), without rebuilding: encodes the display names of lookup-able entities.

    python benchmarks/backfill_entity_vectors.py /tmp/hg-dev/hotpotqa /tmp/hg-dev/2wiki
"""
import sys
from pathlib import Path

import numpy as np

from harness_g.graph import artifact as art
from harness_g.graph.embed import get_embedder

for graph_dir in map(Path, sys.argv[1:]):
    a = art.Artifact.open(graph_dir)
    table = a.table("entities", columns=["surface", "lookupable"]).to_pydict()
    mask = np.array(table["lookupable"], dtype=bool)
    embedder = get_embedder(a.embedding_model)
    vecs = np.zeros((len(mask), embedder.dim), dtype=np.float32)
    names = [s for s, ok in zip(table["surface"], mask) if ok]
    vecs[mask] = embedder.encode(names)
    art.write_embeddings(graph_dir, vecs, art.ENTITY_EMBEDDINGS)
    print(f"{graph_dir}: {int(mask.sum())} entity vectors written")
