"""``row_cosines`` (agent/env/graph_view.py): identical rows get identical cosines wherever they sit in the matrix, so
the rankings' "ties broken by id" holds for a sentence repeated in two paragraphs or two entities with one name. BLAS
gemv (``matrix @ vector``) rounds a row by its position in its block and gave identical rows different float32
values on this machine's numpy; the menu fixture of the extended preset had recorded two such rounding artifacts."""
from __future__ import annotations

import numpy as np

from harness_g.agent.env.graph_view import row_cosines


def _unit(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def test_identical_rows_get_identical_cosines_at_every_position() -> None:
    rng = np.random.default_rng(0)
    for n in (2, 5, 13, 64, 1001):
        for seed in range(5):
            vector = _unit(np.random.default_rng(seed), (384,))
            rows = np.repeat(_unit(rng, (1, 384)), n, axis=0)
            assert len(set(row_cosines(rows, vector).tolist())) == 1
            mixed = _unit(rng, (n, 384))
            mixed[::3] = mixed[0]  # twins spread over every position of the blocks, the tail included
            sims = row_cosines(mixed, vector)
            assert len(set(sims[::3].tolist())) == 1


def test_the_cosines_are_the_matrix_product_up_to_float_rounding() -> None:
    rng = np.random.default_rng(1)
    matrix, vector = _unit(rng, (500, 384)), _unit(rng, (384,))
    sims = row_cosines(matrix, vector)
    assert sims.dtype == np.float32 and sims.shape == (500,)
    assert np.allclose(sims, matrix.astype(np.float64) @ vector.astype(np.float64), atol=1e-6)
