"""The anonymization problem over distinct rows, and the group-by every roll-up uses.

The data are reduced to their *distinct* quasi-identifier rows with a weight (how many records
share the row) and, per sensitive attribute, a count of each value (:class:`Problem`).  The
classes of a node (:class:`NodeClasses`) are computed from those of a finer node by
:func:`group_rows`.

Two functions touch rows, and they are what an engine (DuckDB's or Spark's ``GROUP BY``)
would implement to run the search on data larger than memory: :meth:`Problem.build`, the one
pass over the records (distinct quasi-identifier rows with counts and sensitive counts), and
:func:`group_rows`, the group-by of every roll-up (over those distinct rows, or fewer).  The
anonymizer then counts the released classes with the engine
(``default_engine().group_sizes``) as a check.  Keys are built from *chunks* (a few columns
packed per code; see :class:`Chunking`) with one table lookup per chunk and a BLAS product.

>>> import numpy as np
>>> from safeshare.anonymize.hierarchy import Hierarchy
>>> from safeshare.anonymize.models import KAnonymity
>>> h = Hierarchy.from_rows("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
>>> problem = Problem.build([h], [np.array([0, 1, 2, 2, 0, 1])], models=[KAnonymity(2)])
>>> problem.codes[0].tolist(), problem.weights.tolist(), problem.record_rows.tolist()
([0, 1, 2], [2, 2, 2], [0, 1, 2, 2, 0, 1])
>>> where, (sums,) = group_rows(np.array([2, 0, 2, 1]), 3, [np.array([1, 1, 1, 1])])
>>> where.tolist(), sums.tolist()
([1, 3, 0], [1.0, 1.0, 2.0])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.lattice import Lattice
from safeshare.anonymize.models import AnonymizationError, Classes, PrivacyModel, SensitiveInfo
from safeshare.anonymize.quality import QualityContext

_DENSE_FACTOR = 4
_DENSE_MIN = 1 << 12
KEY_LIMIT = 1 << 62  # integer keys stay below this (else they are relabelled densely)
_MAX_LATTICE = 20_000_000  # the search keeps a few arrays of the lattice's size


def group_rows(
    keys: np.ndarray, space: int, weights: Sequence[np.ndarray], first: bool = True
) -> tuple[np.ndarray | None, list[np.ndarray]]:
    """Group rows by an integer key in ``[0, space)`` and sum weights per group.

    Returns the position of one row of each group (groups in key order; ``None`` unless
    ``first``) and, per array of ``weights`` (1-D, or 2-D with rows first), its sums per
    group.  ``weights[0]`` must be positive (it is the number of records).  Dense keys are
    counted with ``bincount``, sparse ones sorted.  This is the search's only group-by: an
    engine implements it as ``SELECT key, any(row), sum(w) ... GROUP BY key``.
    """
    n = len(keys)
    if n == 0:
        return (np.zeros(0, dtype=np.int64) if first else None), [w[:0] for w in weights]
    if space <= _DENSE_FACTOR * n + _DENSE_MIN:
        total = np.bincount(keys, weights=weights[0], minlength=space)
        present = np.flatnonzero(total > 0)  # (nonzero on floats is ten times slower)
        sums = [total[present]]
        for w in weights[1:]:
            columns = w.reshape(n, -1)
            summed = [
                np.bincount(keys, weights=columns[:, j], minlength=space)[present]
                for j in range(columns.shape[1])
            ]
            sums.append(np.stack(summed, axis=1).reshape((len(present), *w.shape[1:])))
        where = None
        if first:
            positions = np.empty(space, dtype=np.int64)
            positions[keys[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
            where = positions[present]
        return where, sums
    order = np.argsort(keys)
    ordered = keys[order]
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    begin = np.flatnonzero(starts)
    sums = [np.add.reduceat(w[order], begin, axis=0) for w in weights]
    return (order[begin] if first else None), sums


def relabel(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense group ids ``0..g-1`` for arbitrary keys, and ``g``."""
    _, inverse = np.unique(keys, return_inverse=True)
    return inverse.astype(np.int64, copy=False), int(inverse.max()) + 1 if len(keys) else 1


class Chunking:
    """Quasi-identifiers packed into a few *chunks*: one mixed-radix code per group of columns.

    Columns are grouped (in order) while the product of their value counts stays within
    ``limit``; a row then carries one code per group instead of one per column, and a node's
    key is one table lookup per group (the table maps a chunk code to the group's part of
    the key at the node's levels), so a roll-up touches two or three numbers per row, not one
    per quasi-identifier.
    """

    def __init__(self, sizes: Sequence[int], limit: int = 4096) -> None:
        self.groups: list[list[int]] = []
        product = limit + 1
        for c, size in enumerate(sizes):
            if product * size > limit:
                self.groups.append([])
                product = 1
            self.groups[-1].append(c)
            product *= size
        self.group_of = [0] * len(sizes)
        self.decode_tables: list[np.ndarray] = [np.zeros(0, dtype=np.int32)] * len(sizes)
        self.sizes: list[int] = []
        for g, columns in enumerate(self.groups):
            total = math.prod(sizes[c] for c in columns)
            self.sizes.append(total)
            values = np.arange(total, dtype=np.int64)
            for c in reversed(columns):
                self.group_of[c] = g
                self.decode_tables[c] = (values % sizes[c]).astype(np.int32)
                values //= sizes[c]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int32)
        self.column_sizes = list(sizes)
        # chunk codes are stored with their group's offset added: indices into the flat table
        total = int(sum(self.sizes))
        self.flat_decode = [np.zeros(total, dtype=np.int32) for _ in sizes]
        for c, g in enumerate(self.group_of):
            start = int(self.offsets[g])
            self.flat_decode[c][start : start + self.sizes[g]] = self.decode_tables[c]

    def encode(self, codes: Sequence[np.ndarray]) -> np.ndarray:
        """Rows of level-0 codes (one array per column) as rows of (offset) chunk codes."""
        n = len(codes[0]) if len(codes) else 0
        out = np.zeros((n, len(self.groups)), dtype=np.int32)
        for g, columns in enumerate(self.groups):
            value = np.full(n, 0, dtype=np.int64)
            for c in columns:
                value = value * self.column_sizes[c] + codes[c]
            out[:, g] = value + self.offsets[g]
        return out

    def decode(self, chunks: np.ndarray) -> np.ndarray:
        """Rows of chunk codes back to rows of level-0 codes (one column per column)."""
        out = np.empty((len(chunks), len(self.group_of)), dtype=np.int32)
        for c, g in enumerate(self.group_of):
            out[:, c] = self.flat_decode[c][chunks[:, g]]
        return out


class NodeClasses:
    """The classes of one node: one record's codes per class, sizes, sensitive counts.

    Give the classes' ``chunks``, or the ``source`` chunks and the rows ``first`` of them
    that represent the classes (then they are taken when first read).
    """

    __slots__ = ("_chunking", "_chunks", "_rep", "classes", "node")

    def __init__(
        self,
        node: tuple[int, ...],
        classes: Classes,
        chunking: Chunking,
        chunks: np.ndarray | None = None,
        source: np.ndarray | None = None,
        first: np.ndarray | None = None,
    ) -> None:
        self.node = node
        self.classes = classes
        self._chunking = chunking
        self._chunks: np.ndarray | tuple[np.ndarray, np.ndarray]
        if chunks is not None:
            self._chunks = chunks
        elif source is not None and first is not None:
            self._chunks = (source, first)
        else:
            raise TypeError("NodeClasses needs chunks, or both source and first")
        self._rep: np.ndarray | None = None

    @property
    def chunks(self) -> np.ndarray:
        """The chunk codes (see :class:`Chunking`) of one record of each class."""
        chunks = self._chunks
        if isinstance(chunks, tuple):
            source, first = chunks
            self._chunks = chunks = source[first]
        return chunks

    @property
    def rep(self) -> np.ndarray:
        """The level-0 codes (one column per quasi-identifier) of one record of each class."""
        if self._rep is None:
            self._rep = self._chunking.decode(self.chunks)
        return self._rep

    def __len__(self) -> int:
        return len(self.classes)


@dataclass
class Problem:
    """An anonymization problem over distinct rows: what the search needs, nothing else."""

    hierarchies: list[Hierarchy]
    codes: list[np.ndarray]
    weights: np.ndarray
    models: list[PrivacyModel]
    sensitive: dict[str, np.ndarray] = field(default_factory=dict)
    infos: dict[str, SensitiveInfo] = field(default_factory=dict)
    suppression_limit: float = 0.0
    lo: tuple[int, ...] | None = None
    hi: tuple[int, ...] | None = None
    population: tuple[list[np.ndarray], np.ndarray] | None = None
    record_rows: np.ndarray | None = None  # the distinct row of each input record

    def __post_init__(self) -> None:
        self.n = int(self.weights.sum())
        self.max_suppressed = math.floor(self.suppression_limit * self.n + 1e-9)
        heights = [h.height for h in self.hierarchies]
        self.lattice = Lattice(self.hi or heights, self.lo)
        self.maps = [[m.astype(np.int64) for m in h.maps] for h in self.hierarchies]
        self.level_sizes = [h.sizes() for h in self.hierarchies]
        self.chunking = Chunking([len(h.values) for h in self.hierarchies])
        # per column and level, the level's code of each chunk code (the table of a node is
        # built from these, per group, and kept per group and levels)
        self.chunk_maps = [
            [m[self.chunking.decode_tables[c]] for m in maps] for c, maps in enumerate(self.maps)
        ]
        self._tables: dict[tuple[int, tuple[int, ...]], tuple[np.ndarray, int]] = {}
        counts = [
            np.bincount(c, weights=self.weights, minlength=len(h.values))
            for c, h in zip(self.codes, self.hierarchies, strict=True)
        ]
        self.quality = QualityContext(self.hierarchies, counts)

    def check_lattice(self) -> None:
        """Refuse a lattice too large for the search's per-node arrays."""
        if self.lattice.size > _MAX_LATTICE:
            raise AnonymizationError(
                f"the generalization lattice has {self.lattice.size:,} transformations (the "
                f"product of every quasi-identifier's number of levels), more than "
                f"{_MAX_LATTICE:,}; cap levels with max_level/min_level, use fewer "
                "quasi-identifiers, or search: local"
            )

    def key_table(self, node: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, int]:
        """A node's lookup table over chunk codes, the strides of the groups, and its key space.

        A row's key is ``sum_g table[offset_g + chunk_g] * stride_g``: the dense mixed-radix
        code of its labels at the node's levels.
        """
        parts, spaces = [], []
        for g, columns in enumerate(self.chunking.groups):
            levels = tuple([node[c] for c in columns])
            cached = self._tables.get((g, levels))
            if cached is None:
                table = np.zeros(self.chunking.sizes[g], dtype=np.float64)
                space = 1
                for c in columns:
                    size = self.level_sizes[c][node[c]]
                    table *= size
                    table += self.chunk_maps[c][node[c]]
                    space *= size
                self._tables[(g, levels)] = cached = (table, space)
            parts.append(cached[0])
            spaces.append(cached[1])
        strides = [1.0] * len(spaces)
        for g in range(len(spaces) - 2, -1, -1):
            strides[g] = strides[g + 1] * spaces[g + 1]
        table = np.concatenate(parts) if len(parts) > 1 else parts[0] if parts else np.zeros(0)
        return table, np.array(strides), math.prod(spaces)

    @classmethod
    def build(
        cls,
        hierarchies: Sequence[Hierarchy],
        codes: Sequence[np.ndarray],
        *,
        models: Sequence[PrivacyModel],
        sensitive: Mapping[str, np.ndarray] | None = None,
        infos: Mapping[str, SensitiveInfo] | None = None,
        suppression_limit: float = 0.0,
        lo: Sequence[int] | None = None,
        hi: Sequence[int] | None = None,
        population: Sequence[np.ndarray] | None = None,
    ) -> Problem:
        """From per-record level-0 codes (and per-record sensitive codes): distinct rows."""
        sensitive = dict(sensitive or {})
        arrays = [np.asarray(c, dtype=np.int64) for c in codes]
        n = len(arrays[0]) if arrays else 0
        key, space = np.zeros(n, dtype=np.int64), 1
        for array, h in zip(arrays, hierarchies, strict=True):
            size = len(h.values)
            if space * size >= KEY_LIMIT:
                key, space = relabel(key)
            key = key * size + array
            space *= size
        if space <= _DENSE_FACTOR * n + _DENSE_MIN:
            counts = np.bincount(key, minlength=space)
            present = np.flatnonzero(counts)
            ids = np.zeros(space, dtype=np.int64)
            ids[present] = np.arange(len(present))
            inverse, weights, groups = ids[key], counts[present].astype(np.int64), len(present)
        else:
            distinct_keys, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
            weights, groups = counts.astype(np.int64), len(distinct_keys)
        first = np.empty(groups, dtype=np.int64)
        first[inverse[::-1]] = np.arange(n - 1, -1, -1, dtype=np.int64)
        distinct = [a[first] for a in arrays]
        sens_counts = {}
        for name, given in sensitive.items():
            values = np.asarray(given, dtype=np.int64)
            m = int(values.max()) + 1 if len(values) else 1
            if infos and name in infos:
                m = max(m, len(infos[name].values))
            flat = np.bincount(inverse * m + values, minlength=groups * m)
            sens_counts[name] = flat.reshape(groups, m)
        pop = None
        if population is not None:
            pop_arrays = [np.asarray(c, dtype=np.int64) for c in population]
            pop = (pop_arrays, np.ones(len(pop_arrays[0]), dtype=np.int64))
        return cls(
            list(hierarchies),
            distinct,
            weights,
            list(models),
            sens_counts,
            dict(infos or {}),
            suppression_limit,
            tuple(lo) if lo is not None else None,
            tuple(hi) if hi is not None else None,
            pop,
            inverse.astype(np.int64, copy=False),
        )
