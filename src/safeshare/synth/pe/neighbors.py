"""Exact nearest neighbours in Euclidean space, vectorized; faiss for large searches when installed.

Low-dimensional embeddings (up to 16 dimensions) go through scipy's cKDTree; others
through blocked matrix products (``|q|^2 - 2 q.p + |p|^2``) in float32, so memory stays
bounded whatever the number of queries, or through faiss's exact ``IndexFlatL2``
(``method="faiss"``; ``pip install 'safeshare[faiss]'``, imported only then).  ``"numpy"``
is the k-d tree or the matrix products by dimension, never faiss; ``"auto"`` picks faiss
only for searches of at least ``FAISS_MIN_PAIRS`` query-point pairs, which is off (None):
benchmarks/pe_neighbors.py measured faiss-cpu 1.15.1 about 3 times slower than numpy's
OpenBLAS products on 40,000 x 10,000 vectors of 384 dimensions here.

All backends give the same neighbours.  Float32 rounding can order two nearly
equidistant points either way, and differently in numpy and faiss (the k-d tree orders
exact ties its own way), so a query whose
``k + 1`` nearest float32 distances are within the rounding bound of each other (a near
tie, or an exact one) is decided again: its candidates are ranked by float64 distance, and
equal distances by the lower index.  Elsewhere float32 cannot have changed the order.

>>> import numpy as np
>>> points = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
>>> nearest(np.array([[1.0, 1.0], [9.0, 1.0]]), points, k=1).tolist()
[[0], [1]]
>>> nearest(np.array([[1.0, 1.0]]), points, k=2, method="blas").tolist()
[[0, 1]]
>>> nearest(np.array([[10.0, 10.0]]), points, method="blas").tolist()  # a tie: the lower
[[1]]
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Literal

import numpy as np
from scipy.spatial import cKDTree

from safeshare.errors import InputError, MissingDependencyError

Method = Literal["auto", "numpy", "kdtree", "blas", "faiss"]
Search = Literal["auto", "numpy", "faiss"]
SEARCHES: tuple[Search, ...] = ("auto", "numpy", "faiss")
FAISS_HINT = "install the faiss extra: pip install 'safeshare[faiss]' (or pip install faiss-cpu)"
KDTREE_MAX_DIMS = 16
FAISS_MIN_PAIRS: int | None = None  # set where faiss beats numpy (see benchmarks/pe_neighbors.py)
_BLOCK_CELLS = 1 << 23  # distances held at once (32 MiB of float32)
_UNIT = 2.0**-24  # float32 unit roundoff


def faiss_available() -> bool:
    """True when faiss can be imported (``pip install faiss-cpu``); it is not imported here."""
    return importlib.util.find_spec("faiss") is not None


def check_search(search: object) -> Search:
    """``search`` if it is a known choice ("auto", "numpy", "faiss") that can run here.

    >>> check_search("numpy")
    'numpy'
    """
    if search not in SEARCHES:
        raise InputError(
            f"the neighbour search must be one of {list(SEARCHES)}, not {search!r} (the number "
            "of neighbours per record is a separate setting)"
        )
    if search == "faiss" and not faiss_available():
        raise MissingDependencyError(f"the neighbour search 'faiss' needs faiss; {FAISS_HINT}")
    return search


def _matrix(name: str, values: np.ndarray) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.number):
        raise InputError(f"{name} must be a 2-D numeric array (one vector per row)")
    return array


def nearest(
    queries: np.ndarray,
    points: np.ndarray,
    k: int = 1,
    method: Method = "auto",
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
    if method in ("auto", "numpy"):
        if p.shape[1] <= KDTREE_MAX_DIMS:
            method = "kdtree"
        elif (
            method == "auto"
            and FAISS_MIN_PAIRS is not None
            and len(q) * len(p) >= FAISS_MIN_PAIRS
            and faiss_available()
        ):
            method = "faiss"
        else:
            method = "blas"
    q32 = np.ascontiguousarray(q, dtype=np.float32)
    p32 = np.ascontiguousarray(p, dtype=np.float32)
    tolerance = _tolerance(q32, p32)
    if method == "kdtree":
        out, ambiguous = _kdtree(q, p, k, tolerance)
    elif method == "faiss":
        out, ambiguous = _faiss(q32, p32, k, tolerance)
    elif method == "blas":
        out, ambiguous = _blas(q32, p32, k, tolerance)
    else:
        raise InputError(
            f"method must be 'auto', 'numpy', 'kdtree', 'blas' or 'faiss', not {method!r}"
        )
    rows = np.flatnonzero(ambiguous)
    if rows.size:
        out[rows] = _decide(q32, p32, k, tolerance, rows)
    return out


def _tolerance(q: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per query, a bound (with margin) on how far float32 can move two squared distances apart.

    A float32 dot product of ``d`` terms errs by at most about ``d`` unit roundoffs times
    ``|q| |p|``, and the norms alike, so a computed squared distance lies within
    ``(d + 8) u (|q| + max |p|)^2`` of the exact one, in numpy's products as in faiss's.
    """
    scale = (np.linalg.norm(q.astype(np.float64), axis=1) + _largest_norm(p)) ** 2
    return np.asarray(2.5 * (q.shape[1] + 8) * _UNIT * scale)


def _largest_norm(p: np.ndarray) -> float:
    return float(np.sqrt(np.einsum("ij,ij->i", p, p, dtype=np.float64).max(initial=0.0)))


def _ambiguous(distances: np.ndarray, tolerance: np.ndarray) -> np.ndarray:
    """Rows whose sorted nearest distances (``k + 1`` of them) come within ``tolerance``."""
    if distances.shape[1] < 2:
        return np.zeros(len(distances), dtype=bool)
    gaps = np.diff(distances.astype(np.float64), axis=1)
    return np.asarray((gaps <= tolerance[:, None]).any(axis=1))


def _kdtree(
    q: np.ndarray, p: np.ndarray, k: int, tolerance: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """scipy's k-d tree; its order among (near) ties is its own, so those are decided again."""
    wanted = min(k + 1, len(p))
    distances, rows = cKDTree(p).query(q, k=wanted)
    distances = np.asarray(distances, dtype=np.float64).reshape(len(q), wanted)
    rows = np.asarray(rows, dtype=np.int64).reshape(len(q), wanted)
    return rows[:, :k].copy(), _ambiguous(distances**2, tolerance)


def _faiss(
    q: np.ndarray, p: np.ndarray, k: int, tolerance: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    if not faiss_available():
        raise MissingDependencyError(f"the neighbour search 'faiss' needs faiss; {FAISS_HINT}")
    faiss = importlib.import_module("faiss")  # lazily: optional (the `faiss` extra)
    index = faiss.IndexFlatL2(p.shape[1])
    index.add(p)
    distances, rows = index.search(q, min(k + 1, len(p)))
    return np.asarray(rows[:, :k], dtype=np.int64), _ambiguous(distances, tolerance)


def _decide(
    q: np.ndarray, p: np.ndarray, k: int, tolerance: np.ndarray, rows: np.ndarray
) -> np.ndarray:
    """The ``k`` nearest of the near-tied ``rows``: float64 distance, then the lower index.

    Candidates are the points within ``tolerance`` of the ``k``-th float32 distance, a set
    that holds every point the exact ranking could put among the ``k`` nearest.
    """
    out = np.empty((len(rows), k), dtype=np.int64)
    norms = np.einsum("ij,ij->i", p, p)
    step = max(1, _BLOCK_CELLS // max(len(p), 1))
    for start in range(0, len(rows), step):
        chosen = rows[start : start + step]
        distances = norms[None, :] - 2.0 * (q[chosen] @ p.T)
        kth = np.partition(distances, k - 1, axis=1)[:, k - 1]
        for at, row in enumerate(chosen):
            near = np.flatnonzero(distances[at] <= kth[at] + tolerance[row])
            exact = ((p[near].astype(np.float64) - q[row].astype(np.float64)) ** 2).sum(axis=1)
            out[start + at] = near[np.lexsort((near, exact))[:k]]
    return out


def _blas(
    q: np.ndarray, p: np.ndarray, k: int, tolerance: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    out = np.empty((len(q), k), dtype=np.int64)
    ambiguous = np.zeros(len(q), dtype=bool)
    norms = np.einsum("ij,ij->i", p, p)
    step = max(1, _BLOCK_CELLS // max(len(p), 1))
    for start in range(0, len(q), step):
        block = q[start : start + step]
        rows = slice(start, start + len(block))
        # |q|^2 is the same along a row: it does not change which point is nearest
        distances = norms[None, :] - 2.0 * (block @ p.T)
        if k == 1:
            best = np.argmin(distances, axis=1)
            out[rows, 0] = best
            if len(p) > 1:  # a near tie: another point within the tolerance of the nearest
                least = np.take_along_axis(distances, best[:, None], axis=1)
                close = distances <= least + tolerance[rows, None]
                ambiguous[rows] = np.count_nonzero(close, axis=1) > 1
            continue
        wanted = min(k + 1, len(p))
        part = np.argpartition(distances, wanted - 1, axis=1)[:, :wanted]
        values = np.take_along_axis(distances, part, axis=1)
        order = np.argsort(values, axis=1, kind="stable")
        out[rows] = np.take_along_axis(part, order, axis=1)[:, :k]
        ambiguous[rows] = _ambiguous(np.take_along_axis(values, order, axis=1), tolerance[rows])
    return out, ambiguous
