"""The generalization lattice: every full-domain transformation, one level per quasi-identifier.

A node is a vector of levels ``(l_1, ..., l_d)`` with ``lo_c <= l_c <= hi_c``.  Node ``M`` is
below ``N`` (``M <= N``) when every level of ``M`` is at most that of ``N``: ``N`` generalizes
at least as much.  Nodes are numbered in C order over the grid of levels, so the successors
of a node (all nodes above it) and its predecessors (all below) are *slices* of an array of
the lattice's shape: tagging a whole cone costs one numpy assignment.

>>> lattice = Lattice((2, 1), lo=(0, 0))
>>> lattice.size, lattice.levels(lattice.index((1, 1))).tolist()
(6, [1, 1])
>>> grid = np.zeros(lattice.shape, dtype=bool)
>>> grid[lattice.above((1, 0))] = True
>>> grid.sum().item()  # (1,0), (1,1), (2,0), (2,1)
4
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


class Lattice:
    """Nodes ``lo <= levels <= hi`` of the product of per-column level ranges."""

    def __init__(self, hi: Sequence[int], lo: Sequence[int] | None = None) -> None:
        self.hi = tuple(int(h) for h in hi)
        self.lo = tuple(int(v) for v in lo) if lo is not None else (0,) * len(self.hi)
        if len(self.lo) != len(self.hi) or any(
            a > b for a, b in zip(self.lo, self.hi, strict=True)
        ):
            raise ValueError("each column's lowest level must not exceed its highest")
        self.shape = tuple(b - a + 1 for a, b in zip(self.lo, self.hi, strict=True))
        self.size = math.prod(self.shape)
        # one level up in column c adds strides[c] to a node's index
        self.strides = tuple(math.prod(self.shape[c + 1 :]) for c in range(len(self.shape)))
        self._levels: np.ndarray | None = None

    @property
    def all_levels(self) -> np.ndarray:
        """Every node's levels, one row per node in lattice order (built on first use)."""
        if self._levels is None:
            base = np.asarray(self.lo, dtype=np.int64)
            if self.shape:
                grid = np.indices(self.shape).reshape(len(self.shape), -1).T
                self._levels = grid.astype(np.int64) + base
            else:
                self._levels = np.zeros((1, 0), np.int64)
            self._levels.flags.writeable = False
        return self._levels

    @property
    def heights(self) -> np.ndarray:
        """Each node's sum of levels above the bottom."""
        return self.all_levels.sum(axis=1) - sum(self.lo)

    @property
    def bottom(self) -> tuple[int, ...]:
        return self.lo

    @property
    def top(self) -> tuple[int, ...]:
        return self.hi

    def index(self, levels: Sequence[int]) -> int:
        offsets = [int(v) - a for v, a in zip(levels, self.lo, strict=True)]
        return int(np.ravel_multi_index(offsets, self.shape)) if self.shape else 0

    def levels(self, index: int) -> np.ndarray:
        return self.all_levels[index]

    def node(self, index: int) -> tuple[int, ...]:
        """The levels of node ``index``, as a tuple."""
        if not self.shape:
            return ()
        offsets = np.unravel_index(index, self.shape)
        return tuple([int(v) + a for v, a in zip(offsets, self.lo, strict=True)])

    def cell(self, levels: Sequence[int]) -> tuple[int, ...]:
        """The position of a node in an array of the lattice's shape."""
        return tuple(int(v) - a for v, a in zip(levels, self.lo, strict=True))

    def above(self, levels: Sequence[int]) -> tuple[slice, ...]:
        """The slice of all nodes ``>= levels`` (the node and its successors)."""
        return tuple([slice(v - a, None) for v, a in zip(levels, self.lo, strict=True)])

    def below(self, levels: Sequence[int]) -> tuple[slice, ...]:
        """The slice of all nodes ``<= levels`` (the node and its predecessors)."""
        return tuple([slice(0, v - a + 1) for v, a in zip(levels, self.lo, strict=True)])

    def successors(self, levels: Sequence[int]) -> list[tuple[int, ...]]:
        """The direct successors: one column one level up."""
        out = []
        for c, (v, h) in enumerate(zip(levels, self.hi, strict=True)):
            if v < h:
                out.append(tuple(int(x) + (i == c) for i, x in enumerate(levels)))
        return out

    def predecessors_of(self, index: int, levels: Sequence[int]) -> list[int]:
        """The indices of the direct predecessors of node ``index`` (at ``levels``)."""
        return [
            index - stride
            for stride, v, a in zip(self.strides, levels, self.lo, strict=True)
            if v > a
        ]

    def minimal(self, mask: np.ndarray) -> np.ndarray:
        """Indices of the minimal nodes of an up-closed boolean ``mask`` (lattice-shaped)."""
        flat = mask.reshape(-1)
        indices = np.flatnonzero(flat)
        return indices[~self.has_lower_in(indices, flat)]

    def has_lower_in(self, indices: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Per node of ``indices``, whether one of its direct predecessors is in the boolean
        ``mask`` (flat): those of an up-closed mask's nodes without one are its minimal nodes,
        found at a cost in the number of ``indices``, not the lattice's size."""
        lower = np.zeros(len(indices), dtype=bool)
        for size, stride in zip(self.shape, self.strides, strict=True):
            if size > 1:
                has_lower = (indices // stride) % size > 0
                lower[np.flatnonzero(has_lower)[mask[indices[has_lower] - stride]]] = True
        return lower
