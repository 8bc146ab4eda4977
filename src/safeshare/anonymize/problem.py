"""The anonymization problem over distinct rows, and the group-by every roll-up uses.

The data are reduced to their *distinct* quasi-identifier rows with a weight (how many records
share the row) and, per sensitive attribute, a count of each value (:class:`Problem`).  The
classes of a node (:class:`NodeClasses`) are computed from those of a finer node: its rows
are keyed at the node (:meth:`Problem.keys`) and summed per key
(:func:`~safeshare.anonymize.grouping.group_sums`).

Two functions touch rows, and they are what an engine (DuckDB's or Spark's ``GROUP BY``)
would implement to run the search on data larger than memory: :meth:`Problem.build`, the one
pass over the records (distinct quasi-identifier rows with counts and sensitive counts), and
:func:`~safeshare.anonymize.grouping.group_rows`, the group-by of every roll-up (over those
distinct rows, or fewer).  The
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
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from operator import itemgetter

import numpy as np

from safeshare.anonymize.grouping import (
    KEY_LIMIT,
    NonZero,
    dense_limit,
    group_rows,
    group_sums,
    marking_limit,
    relabel,
    representatives,
)
from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.lattice import Lattice
from safeshare.anonymize.models import AnonymizationError, Classes, PrivacyModel, SensitiveInfo
from safeshare.anonymize.quality import QualityContext

_FLOAT_EXACT = 1 << 53  # keys computed in float64 below this are exact
_MAX_LATTICE = 20_000_000  # the search keeps a few arrays of the lattice's size


def _integers(values: np.ndarray) -> np.ndarray:
    """``values`` as an array that adds to int64 keys in place (converted only if needed)."""
    array = np.asarray(values)
    return array if np.can_cast(array.dtype, np.int64, "safe") else array.astype(np.int64)


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
        out = np.empty((n, len(self.groups)), dtype=np.intp)  # (intp: indexes without a cast)
        for g, columns in enumerate(self.groups):
            value = codes[columns[0]].astype(np.intp)
            for c in columns[1:]:
                value *= self.column_sizes[c]
                value += codes[c]
            value += self.offsets[g]
            out[:, g] = value
        return out

    def decode(self, chunks: np.ndarray) -> np.ndarray:
        """Rows of chunk codes back to rows of level-0 codes (one column per column)."""
        out = np.empty((len(chunks), len(self.group_of)), dtype=np.int32)
        for c, g in enumerate(self.group_of):
            out[:, c] = self.flat_decode[c][chunks[:, g]]
        return out


@lru_cache(maxsize=64)
def _chunking(sizes: tuple[int, ...]) -> Chunking:
    """The :class:`Chunking` of columns with ``sizes`` values, shared by the problems of the
    same sizes (it is never changed once made)."""
    return Chunking(sizes)


class NodeClasses:
    """The classes of one node: one record's codes per class, sizes, sensitive counts.

    Give the classes' ``chunks``, or the ``source`` chunks with the rows' ``keys`` in
    ``[0, space)`` and the keys ``present`` (one per class): the chunks of one row per class
    are then picked when first read (most nodes are never rolled up from).
    """

    __slots__ = ("_chunking", "_chunks", "_rep", "_summable", "classes", "node")

    def __init__(
        self,
        node: tuple[int, ...],
        classes: Classes,
        chunking: Chunking,
        chunks: np.ndarray | None = None,
        pending: tuple[np.ndarray, np.ndarray, int, np.ndarray] | None = None,
    ) -> None:
        self.node = node
        self.classes = classes
        self._chunking = chunking
        self._chunks: np.ndarray | tuple[np.ndarray, np.ndarray, int, np.ndarray]
        if chunks is not None:
            self._chunks = chunks
        elif pending is not None:
            self._chunks = pending
        else:
            raise TypeError("NodeClasses needs chunks, or source chunks with keys")
        self._rep: np.ndarray | None = None
        self._summable: dict[str, np.ndarray | NonZero] = {}

    def summable(self, name: str) -> np.ndarray | NonZero:
        """The counts of sensitive attribute ``name`` as a roll-up from these classes sums them:
        by their non-zero cells where few are (fine classes hold a value or two each)."""
        found = self._summable.get(name)
        if found is None:
            counts = self.classes.sensitive[name]
            found = NonZero.of(counts) if NonZero.worth(counts) else counts
            self._summable[name] = found
        return found

    @property
    def chunks(self) -> np.ndarray:
        """The chunk codes (see :class:`Chunking`) of one record of each class."""
        chunks = self._chunks
        if isinstance(chunks, tuple):
            source, keys, space, present = chunks
            self._chunks = chunks = source[representatives(keys, space, present)]
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
    importance: tuple[float, ...] | None = None  # the quality models' attribute weights
    target: str | None = None  # the sensitive column the classification model predicts

    def __post_init__(self) -> None:
        self.n = int(self.weights.sum())
        self.max_suppressed = math.floor(self.suppression_limit * self.n + 1e-9)
        heights = [h.height for h in self.hierarchies]
        self.lattice = Lattice(self.hi or heights, self.lo)
        self.maps = [[m.astype(np.int64) for m in h.maps] for h in self.hierarchies]
        self.level_sizes = [h.sizes() for h in self.hierarchies]
        self.chunking = _chunking(tuple(len(h.values) for h in self.hierarchies))
        # per group, its columns' levels at a node (the key of its cached tables)
        self._levels_of = [itemgetter(*columns) for columns in self.chunking.groups]
        self._tables: list[dict[object, tuple[np.ndarray, int]]] = [
            {} for _ in self.chunking.groups
        ]

    @cached_property
    def quality(self) -> QualityContext:
        """What each quality model charges, per column and level (from the value counts)."""
        counts = [
            np.bincount(c, weights=self.weights, minlength=len(h.values))
            for c, h in zip(self.codes, self.hierarchies, strict=True)
        ]
        return QualityContext(self.hierarchies, counts, self.importance)

    @cached_property
    def chunks(self) -> np.ndarray:
        """The distinct rows as chunk codes (see :class:`Chunking`)."""
        return self.chunking.encode(self.codes)

    def check_lattice(self) -> None:
        """Refuse a lattice too large for the search's per-node arrays."""
        if self.lattice.size > _MAX_LATTICE:
            raise AnonymizationError(
                f"the generalization lattice has {self.lattice.size:,} transformations (the "
                f"product of every quasi-identifier's number of levels), more than "
                f"{_MAX_LATTICE:,}; search: heuristic finds a transformation in any lattice "
                "within time_limit seconds (with its gap to the optimum), or cap levels with "
                "max_level/min_level, use fewer quasi-identifiers, or search: local"
            )

    def key_table(self, node: tuple[int, ...]) -> tuple[np.ndarray, list[int]]:
        """A node's lookup table over (offset) chunk codes, and the key space of each group.

        ``table[chunk_g]`` is the mixed-radix code of a row's labels at the node's levels over
        the columns of group ``g``; the groups' codes combine into the row's key.
        """
        parts, spaces = [], []
        for g, (levels_of, tables) in enumerate(zip(self._levels_of, self._tables, strict=True)):
            levels = levels_of(node)
            cached = tables.get(levels)
            if cached is None:
                tables[levels] = cached = self._group_table(g, node)
            parts.append(cached[0])
            spaces.append(cached[1])
        table = np.concatenate(parts) if len(parts) > 1 else parts[0] if parts else np.zeros(0)
        return table, spaces

    def _group_table(self, g: int, node: tuple[int, ...]) -> tuple[np.ndarray, int]:
        """Group ``g``'s part of the key table at ``node``, and its key space."""
        # (chunk codes are mixed-radix, first column first: the table is the outer sum of the
        # columns' codes at their levels, each scaled by the sizes of the columns after it)
        table = np.zeros(1)
        space = 1
        for c in self.chunking.groups[g]:
            level = node[c]
            size = self.level_sizes[c][level]
            table = np.add.outer(table * size, self.maps[c][level]).reshape(-1)
            space *= size
        return table, space

    def keys(self, node: tuple[int, ...], chunks: np.ndarray) -> tuple[np.ndarray, int]:
        """Keys in ``[0, space)`` of rows (as chunk codes) at ``node``, and ``space``.

        Two rows share a key when they share their labels at the node's levels.  The key is
        the labels' mixed-radix code (a table lookup per group and a BLAS product, exact in
        float64 below ``2**53``), relabelled densely when its space is too large to count in.
        """
        table, spaces = self.key_table(node)
        space = math.prod(spaces)
        if space < _FLOAT_EXACT:
            strides = [1.0] * len(spaces)
            for g in range(len(spaces) - 1, 0, -1):
                strides[g - 1] = strides[g] * spaces[g]
            keys = (table.take(chunks) @ np.array(strides)).astype(np.intp)
            return (keys, space) if space <= dense_limit(len(keys)) else relabel(keys, space)
        keys, space = np.zeros(len(chunks), dtype=np.intp), 1
        for g, size in enumerate(spaces):
            if space * size >= KEY_LIMIT:
                keys, space = relabel(keys, space)
            keys = keys * size + table.take(chunks[:, g]).astype(np.intp)
            space *= size
        return relabel(keys, space)

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
        weights: np.ndarray | None = None,
        importance: Sequence[float] | None = None,
        target: str | None = None,
    ) -> Problem:
        """From per-record level-0 codes (and per-record sensitive codes): distinct rows.

        ``weights`` (one count per row, default 1) lets each row stand for that many records:
        the distinct rows with counts that an engine's ``GROUP BY`` returns give the same
        problem as the records they count.  ``importance`` weighs the columns in the quality
        models (equal by default).
        """
        sensitive = dict(sensitive or {})
        arrays = [_integers(c) for c in codes]
        n = len(arrays[0]) if arrays else 0
        key, space = np.zeros(n, dtype=np.intp), 1
        marking = marking_limit(n)
        for array, h in zip(arrays, hierarchies, strict=True):
            size = len(h.values)
            # (relabelled while marking can, before a sort would be needed; ids keep key order)
            if space * size >= KEY_LIMIT or n < space <= marking < space * size:
                key, space = relabel(key, space)
            key *= size
            key += array
            space *= size
        inverse, groups = relabel(key, space)
        counts = None if weights is None else _counts(weights, n)
        total = np.bincount(inverse, weights=counts, minlength=groups)
        row_weights = np.rint(total).astype(np.int64) if counts is not None else total
        first = representatives(inverse, groups, np.arange(groups))
        distinct = [a[first].astype(np.int64) for a in arrays]
        sens_counts = {}
        for name, given in sensitive.items():
            values = np.asarray(given, dtype=np.int64)
            m = int(values.max()) + 1 if len(values) else 1
            if infos and name in infos:
                m = max(m, len(infos[name].values))
            flat = np.bincount(inverse * m + values, weights=counts, minlength=groups * m)
            if counts is not None:
                flat = np.rint(flat).astype(np.int64)
            sens_counts[name] = flat.reshape(groups, m)
        pop = None
        if population is not None:
            pop_arrays = [np.asarray(c, dtype=np.int64) for c in population]
            pop = (pop_arrays, np.ones(len(pop_arrays[0]), dtype=np.int64))
        return cls(
            list(hierarchies),
            distinct,
            row_weights.astype(np.int64, copy=False),
            list(models),
            sens_counts,
            dict(infos or {}),
            suppression_limit,
            tuple(lo) if lo is not None else None,
            tuple(hi) if hi is not None else None,
            pop,
            inverse.astype(np.int64, copy=False),
            None if importance is None else tuple(float(w) for w in importance),
            target,
        )


def _counts(weights: np.ndarray, n: int) -> np.ndarray:
    """Row weights as float64 record counts (exact below 2**53), checked."""
    given = np.asarray(weights)
    if given.shape != (n,) or not np.issubdtype(given.dtype, np.integer) or (given < 1).any():
        raise AnonymizationError(
            f"weights must be one positive integer count per row ({n} rows); got shape "
            f"{given.shape} of {given.dtype}"
        )
    return given.astype(np.float64)


__all__ = [
    "KEY_LIMIT",
    "Chunking",
    "NodeClasses",
    "Problem",
    "dense_limit",
    "group_rows",
    "group_sums",
    "relabel",
    "representatives",
]
