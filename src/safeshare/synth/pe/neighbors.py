"""Exact nearest neighbours in Euclidean space, vectorized.

Low-dimensional embeddings (up to 16 dimensions) go through scipy's cKDTree; others
through blocked matrix products (``|q|^2 - 2 q.p + |p|^2``) in float32, so memory stays
bounded whatever the number of queries.  Ties go to the lower index.

>>> import numpy as np
>>> points = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
>>> nearest(np.array([[1.0, 1.0], [9.0, 1.0]]), points, k=1).tolist()
[[0], [1]]
>>> nearest(np.array([[1.0, 1.0]]), points, k=2, method="blas").tolist()
[[0, 1]]
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.spatial import cKDTree

from safeshare.errors import InputError

KDTREE_MAX_DIMS = 16
_BLOCK_CELLS = 1 << 23  # distances held at once (32 MiB of float32)


def _matrix(name: str, values: np.ndarray) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.number):
        raise InputError(f"{name} must be a 2-D numeric array (one vector per row)")
    return array


def nearest(
    queries: np.ndarray,
    points: np.ndarray,
    k: int = 1,
    method: Literal["auto", "kdtree", "blas"] = "auto",
) -> np.ndarray:
    """For each query row, the rows of ``points`` of its ``k`` nearest (int64, nearest first)."""
    q = _matrix("queries", queries)
    p = _matrix("points", points)
    if q.shape[1] != p.shape[1]:
        raise InputError(
            f"queries have {q.shape[1]} dimensions but points have {p.shape[1]}; embed both "
            "with the same embedder"
        )
    if not 1 <= k <= len(p):
        raise InputError(f"k={k} neighbours asked among {len(p)} points; use 1 <= k <= {len(p)}")
    if method == "auto":
        method = "kdtree" if p.shape[1] <= KDTREE_MAX_DIMS else "blas"
    if method == "kdtree":
        _, rows = cKDTree(p).query(q, k=k)
        return np.asarray(rows, dtype=np.int64).reshape(len(q), k)
    return _blas(q.astype(np.float32), p.astype(np.float32), k)


def _blas(q: np.ndarray, p: np.ndarray, k: int) -> np.ndarray:
    out = np.empty((len(q), k), dtype=np.int64)
    norms = np.einsum("ij,ij->i", p, p)
    step = max(1, _BLOCK_CELLS // max(len(p), 1))
    for start in range(0, len(q), step):
        block = q[start : start + step]
        # |q|^2 is the same along a row: it does not change which point is nearest
        distances = norms[None, :] - 2.0 * (block @ p.T)
        if k == 1:
            out[start : start + step, 0] = np.argmin(distances, axis=1)
            continue
        part = np.argpartition(distances, k - 1, axis=1)[:, :k]
        order = np.argsort(np.take_along_axis(distances, part, axis=1), axis=1, kind="stable")
        out[start : start + step] = np.take_along_axis(part, order, axis=1)
    return out
