"""Optimal full-domain generalization: the lattice search that returns the exact optimum.

The data are first reduced to their *distinct* quasi-identifier rows with a weight (how many
records share the row) and, per sensitive attribute, a count of each value.  A node's
equivalence classes are computed from the classes of any node below it (a *roll-up*: the
classes of a finer node are a smaller weighted table than the data), so most checks touch a
few hundred rows.

The search, for a quality model with a lower bound per node (its value with nothing
suppressed; for precision the suppressed count known from a coarser node adds to it):

1. **Descent**: from the top, step down to the satisfying predecessor of lowest bound until
   none satisfies.  This finds a good solution at once (the *cutoff*: no optimum lies above
   it), and the violating predecessors met on the way sit just under the frontier.
2. **Settling** (after ARX's Flash): every node whose bound is under the cutoff must be either
   ruled out or scored.  Take the lowest such node, walk a path upwards through untagged
   nodes, and bisect it for the highest node that settles the start (it violates the models;
   or it suppresses so many records that every node below it costs more than the cutoff);
   then climb on from there while a successor still settles it.  Each check tags whole cones
   with one slice assignment on an array of the lattice's shape: a satisfying node's
   successors satisfy, a violating node's predecessors violate, and a node's suppressed count
   (under the models that stay monotone with suppression) bounds that of every node below.
3. **Optimum**: the candidates left are scored in order of their bounds, stopping at the
   first bound above the best score.  Without suppression every model and quality model is
   monotone, so only the minimal satisfying nodes are candidates.

The result is exact: a node is skipped only when a check proves it violates the models or
costs more than a node already found (tests compare it with exhaustive enumeration).

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
>>> optimal_search(problem, "precision").node
(0,)
>>> problem = Problem.build([h], [np.array([0, 1, 2, 2, 0, 2])], models=[KAnonymity(3)])
>>> result = optimal_search(problem, "precision")
>>> result.node, result.score
((1,), 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.lattice import Lattice
from safeshare.anonymize.models import (
    AnonymizationError,
    Classes,
    NoSolutionError,
    PrivacyModel,
    SensitiveInfo,
)
from safeshare.anonymize.quality import SEPARABLE, QualityContext

_DENSE_FACTOR = 4
_DENSE_MIN = 1 << 12
_KEY_LIMIT = 1 << 62
_CACHE_ROWS = 4_000_000
_CACHE_SHARE = 0.9  # remember a node whose classes are at most this share of its source's
_EPS = 1e-12
_FLOAT_EXACT = 1 << 53
_NUMBER = (1 << 24) - 1  # cached nodes are numbered below this
_NONE = np.iinfo(np.int64).max
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


def _relabel(keys: np.ndarray) -> tuple[np.ndarray, int]:
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
    """The classes of one node: one record's codes per class, sizes, sensitive counts."""

    __slots__ = ("_chunking", "_chunks", "_first", "_rep", "_source", "classes", "node")

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
        self._chunks = chunks
        self._source = source
        self._first = first
        self._rep: np.ndarray | None = None

    @property
    def chunks(self) -> np.ndarray:
        """The chunk codes (see :class:`Chunking`) of one record of each class."""
        if self._chunks is None:
            assert self._source is not None and self._first is not None
            self._chunks = self._source[self._first]
            self._source = self._first = None
        return self._chunks

    @property
    def rep(self) -> np.ndarray:
        """The level-0 codes (one column per quasi-identifier) of one record of each class."""
        if self._rep is None:
            self._rep = self._chunking.decode(self.chunks)
        return self._rep

    def __len__(self) -> int:
        return len(self.classes)


@dataclass(frozen=True)
class Assessment:
    """How one node fares: which classes are kept, how many records are suppressed."""

    node: tuple[int, ...]
    groups: NodeClasses
    kept: np.ndarray
    suppressed: int
    suppressed_monotone: int
    feasible: bool
    feasible_monotone: bool


@dataclass(frozen=True)
class SearchResult:
    """The optimal node, its score, the transformations that tie with it, and the effort."""

    node: tuple[int, ...]
    score: float
    suppressed: int
    metric: str
    ties: tuple[tuple[int, ...], ...]
    checked: int
    lattice_size: int
    exhaustive: bool = False


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
            if space * size >= _KEY_LIMIT:
                key, space = _relabel(key)
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


class Evaluator:
    """Computes and assesses nodes, rolling each up from the smallest cached node below it."""

    def __init__(self, problem: Problem) -> None:
        problem.check_lattice()
        self.problem = problem
        suppression = problem.max_suppressed > 0
        self.monotone_models = [m for m in problem.models if m.monotone(suppression)]
        self.other_models = [m for m in problem.models if not m.monotone(suppression)]
        self.fully_monotone = not self.other_models
        self._monotone_per_class = [m for m in self.monotone_models if m.per_class]
        self._other_per_class = [m for m in self.other_models if m.per_class]
        self._monotone_table = [m for m in self.monotone_models if not m.per_class]
        self._all_table = [m for m in problem.models if not m.per_class]
        # whether kept classes stay kept when merged (so suppression shrinks going up)
        self.suppression_monotone = all(
            m.monotone(True) for m in self.monotone_models if m.per_class
        )
        base = NodeClasses(
            (0,) * len(problem.hierarchies),
            Classes(problem.weights, problem.sensitive),
            problem.chunking,
            chunks=problem.chunking.encode(problem.codes),
        )
        self.base = base
        self.cache: dict[tuple[int, ...], NodeClasses] = {}
        self._cached: list[NodeClasses] = []
        # per node, the smallest cached node below it (-1: none; then the base)
        # packed as rows << 24 | number, so that one np.minimum over a cone keeps the best
        self._best = np.full(problem.lattice.shape, _NONE, dtype=np.int64)
        self.cached_rows = 0
        self.checked = 0

    def _source(self, node: tuple[int, ...]) -> NodeClasses:
        best = int(self._best[self.problem.lattice.cell(node)])
        return self.base if best == _NONE else self._cached[best & _NUMBER]

    def _remember(self, groups: NodeClasses) -> None:
        number = len(self._cached)
        self._cached.append(groups)
        self.cache[groups.node] = groups
        self.cached_rows += len(groups)
        cone = self._best[self.problem.lattice.above(groups.node)]
        np.minimum(cone, (len(groups) << 24) | number, out=cone)
        if self.cached_rows > _CACHE_ROWS or number >= _NUMBER:  # keep the smaller half
            keep = sorted(self._cached, key=len)[: max(1, number // 2)]
            self._cached, self.cache, self.cached_rows = [], {}, 0
            self._best.fill(_NONE)
            for old in keep:
                self._remember(old)

    def classes(self, node: tuple[int, ...]) -> NodeClasses:
        """The classes of ``node`` (rolled up from a finer node's classes)."""
        cached = self.cache.get(node)
        if cached is not None:
            return cached
        source = self._source(node)
        if source is self.base:
            lo = self.problem.lattice.lo
            hub = tuple(max(min(level, 1), low) for level, low in zip(node, lo, strict=True))
            if hub not in (node, source.node):
                source = self.classes(hub)
        return self._roll_up(node, source)

    def _roll_up(self, node: tuple[int, ...], source: NodeClasses) -> NodeClasses:
        p = self.problem
        rows = len(source)
        chunks = source.chunks
        table, strides, space = p.key_table(node)
        if space < _FLOAT_EXACT:  # BLAS: exact in float64 below 2**53
            key = (table[chunks] @ strides).astype(np.int64)
        else:
            rep = source.rep
            key, space = np.zeros(rows, dtype=np.int64), 1
            for c, level in enumerate(node):
                size = p.level_sizes[c][level]
                if space * size >= _KEY_LIMIT:
                    key, space = _relabel(key)
                key = key * size + p.maps[c][level][rep[:, c]]
                space *= size
        names = list(source.classes.sensitive)
        first, sums = group_rows(
            key,
            space,
            [source.classes.sizes, *(source.classes.sensitive[a] for a in names)],
        )
        sizes = sums[0].astype(np.int64)
        sensitive = {a: sums[i + 1].astype(np.int64) for i, a in enumerate(names)}
        result = NodeClasses(
            node, Classes(sizes, sensitive), p.chunking, source=chunks, first=first
        )
        if p.population is not None:
            population = self._population(node, result.rep)
            result = NodeClasses(
                node, Classes(sizes, sensitive, population), p.chunking, chunks=result.chunks
            )
        self.checked += 1
        if len(sizes) <= rows * _CACHE_SHARE or source is self.base:
            self._remember(result)
        return result

    def _population(self, node: tuple[int, ...], rep: np.ndarray) -> np.ndarray:
        p = self.problem
        assert p.population is not None
        pop_codes, pop_weights = p.population
        pop_key = np.zeros(len(pop_weights), dtype=np.int64)
        key = np.zeros(len(rep), dtype=np.int64)
        for c, level in enumerate(node):
            size = p.level_sizes[c][level]
            pop_key = pop_key * size + p.maps[c][level][pop_codes[c]]
            key = key * size + p.maps[c][level][rep[:, c]]
        order = np.argsort(pop_key, kind="stable")
        sorted_keys = pop_key[order]
        cumulative = np.concatenate([[0], np.cumsum(pop_weights[order])])
        lo = np.searchsorted(sorted_keys, key, side="left")
        hi = np.searchsorted(sorted_keys, key, side="right")
        return (cumulative[hi] - cumulative[lo]).astype(np.int64)

    def assess(self, node: tuple[int, ...]) -> Assessment:
        """Which classes of ``node`` survive; whether its suppression stays within the limit."""
        p = self.problem
        groups = self.classes(node)
        classes = groups.classes
        kept_monotone = self._kept(self._monotone_per_class, classes)
        kept = kept_monotone
        if self._other_per_class:
            kept = kept_monotone & self._kept(self._other_per_class, classes)
        sizes = classes.sizes
        total = int(sizes.sum())
        suppressed_monotone = total - int(sizes[kept_monotone].sum())
        suppressed = (
            suppressed_monotone if kept is kept_monotone else total - int(sizes[kept].sum())
        )
        table_monotone = all(m.table_ok(classes, kept_monotone) for m in self._monotone_table)
        table_all = all(m.table_ok(classes, kept) for m in self._all_table)
        feasible_monotone = suppressed_monotone <= p.max_suppressed and table_monotone
        feasible = suppressed <= p.max_suppressed and table_all
        return Assessment(
            node, groups, kept, suppressed, suppressed_monotone, feasible, feasible_monotone
        )

    def _kept(self, models: list[PrivacyModel], classes: Classes) -> np.ndarray:
        kept: np.ndarray | None = None
        for model in models:
            ok = model.class_ok(classes, self.problem.infos.get(getattr(model, "attribute", "")))
            kept = ok if kept is None else kept & ok
        return kept if kept is not None else np.ones(len(classes), dtype=bool)

    def score(self, assessment: Assessment, metric: str) -> float:
        """The overall value of ``metric`` at an assessed node."""
        p = self.problem
        node = assessment.node
        if metric == "precision":
            n = max(p.n, 1)
            s = assessment.suppressed
            fractions = [
                level / h.height if h.height else 0.0
                for level, h in zip(node, p.hierarchies, strict=True)
            ]
            return float(np.mean([((n - s) * f + s) / n for f in fractions]))
        groups, kept = assessment.groups, assessment.kept
        levels = [np.full(int(kept.sum()), level) for level in node]
        labels = [p.maps[c][level][groups.rep[kept, c]] for c, level in enumerate(node)]
        return p.quality.score(
            metric, levels, labels, groups.classes.sizes[kept], assessment.suppressed
        )


def lower_bounds(problem: Problem, metric: str) -> np.ndarray:
    """Per node (in lattice order), a lower bound of ``metric`` (exact for separable ones)."""
    bounds = problem.quality.bounds(metric)
    levels = problem.lattice.all_levels
    if bounds is None:
        return np.zeros(problem.lattice.size)
    total = np.zeros(problem.lattice.size)
    for c, values in enumerate(bounds):
        total += values[levels[:, c]]
    return total / max(len(bounds), 1)


def optimal_search(problem: Problem, metric: str = "precision") -> SearchResult:
    """The node of minimal ``metric`` among those satisfying every model within the limit."""
    evaluator = Evaluator(problem)
    lattice = problem.lattice
    size = lattice.size
    bounds = lower_bounds(problem, metric)
    state = np.zeros(size, dtype=np.int8)  # 1: satisfies the monotone models, -1: violates
    grid = state.reshape(lattice.shape)
    # suppression under the monotone models never grows upwards: a checked node's count is a
    # lower bound for every node below it, which raises precision's bound there
    at_least = np.zeros(size, dtype=np.int64)
    floor = at_least.reshape(lattice.shape)
    uses_floor = metric == "precision" and evaluator.suppression_monotone
    successors = lattice.successor_table()
    # each node's successors, lowest bound first (-1s last): the path steps
    ranked = np.where(successors >= 0, bounds[np.maximum(successors, 0)], np.inf)
    upward = np.take_along_axis(successors, np.argsort(ranked, axis=1, kind="stable"), axis=1)
    assessed: dict[int, Assessment] = {}
    checked = np.zeros(size, dtype=bool)
    n = max(problem.n, 1)
    limit = problem.max_suppressed
    # with a separable model a satisfying node costs at most its bound + the suppressed share
    slack = limit / n if metric in ("precision", "loss", "ncp") else math.inf
    cutoff = math.inf  # no optimum lies above this bound

    def bound(index: int, suppressed: int | None = None) -> float:
        if not uses_floor:
            return float(bounds[index])
        count = int(at_least[index]) if suppressed is None else suppressed
        return float(bounds[index] + count * (1 - bounds[index]) / n)

    def check(index: int) -> Assessment:
        nonlocal cutoff
        node = tuple(int(v) for v in lattice.levels(index))
        assessment = evaluator.assess(node)
        assessed[index] = assessment
        checked[index] = True
        if uses_floor and assessment.suppressed_monotone:
            cone = floor[lattice.below(node)]
            np.maximum(cone, assessment.suppressed_monotone, out=cone)
        if assessment.feasible_monotone:
            grid[lattice.above(node)] = 1
            if evaluator.fully_monotone:
                cutoff = min(cutoff, bounds[index] + slack)
            if assessment.feasible and metric == "precision":  # its score, exactly
                f = float(bounds[index])
                cutoff = min(cutoff, f + assessment.suppressed * (1 - f) / n)
        else:
            grid[lattice.below(node)] = -1
        return assessment

    def covers(start: int, index: int) -> bool:
        """Whether checking ``index`` (above ``start``) settles ``start``."""
        assessment = assessed.get(index) or check(index)
        if not assessment.feasible_monotone:
            return True
        return uses_floor and bound(start, assessment.suppressed_monotone) > cutoff + _EPS

    # descend from the top along satisfying nodes, lowest bound first: a good solution early
    # (a low cutoff), and the violating predecessors met on the way sit just below the frontier,
    # so their cones of violating nodes are large
    predecessors = lattice.predecessor_table()
    current = size - 1
    if (assessed.get(current) or check(current)).feasible_monotone:
        moving = True
        while moving:
            moving = False
            options = predecessors[current]
            options = options[options >= 0]
            for found in options[np.lexsort((options, bounds[options]))]:
                option = int(found)
                if state[option] < 0:
                    continue
                if (assessed.get(option) or check(option)).feasible_monotone:
                    current, moving = option, True
                    break

    # settle every node whose bound is below the cutoff, lowest first: walk a path upwards
    # through untagged nodes and bisect it for the highest node that settles the start (one that
    # violates the models, or whose suppressed count puts everything below it over the cutoff),
    # probing first where the path crosses the cutoff; then climb on while a successor still
    # settles the start, to tag as large a cone as possible
    order = np.lexsort((np.arange(size), bounds))
    ordered_bounds = bounds[order]
    position = 0
    while position < size:
        end = int(np.searchsorted(ordered_bounds, cutoff + _EPS, side="right"))
        rest = order[position:end]
        reach = (
            bounds[rest] + at_least[rest] * (1 - bounds[rest]) / n if uses_floor else bounds[rest]
        )
        open_ = np.flatnonzero((state[rest] >= 0) & (reach <= cutoff + _EPS) & ~checked[rest])
        if not len(open_):
            break
        position += int(open_[0]) + 1
        start = int(rest[open_[0]])
        path = [start]
        while True:
            step = next((int(o) for o in upward[path[-1]] if o >= 0 and state[o] == 0), -1)
            if step < 0:
                break
            path.append(step)
        low, high, top = 0, len(path) - 1, -1
        probe = (
            min(int(np.searchsorted(bounds[path], cutoff)), high) if math.isfinite(cutoff) else -1
        )
        while low <= high:
            middle = (low + high) // 2 if not low <= probe <= high else probe
            probe = -1
            if state[path[middle]] > 0 and not uses_floor:
                high = middle - 1
            elif (state[path[middle]] < 0) or covers(start, path[middle]):
                top, low = middle, middle + 1

            else:
                high = middle - 1
        if top < 0:
            continue
        current = path[top]
        climbing = True
        while climbing:
            climbing = False
            for found in successors[current]:
                option = int(found)
                if option < 0 or state[option] > 0 or option in assessed:
                    continue
                if covers(start, option):
                    current, climbing = option, True
                    break
    if not (state > 0).any() and not any(a.feasible for a in assessed.values()):
        raise _no_solution(problem, evaluator)
    reachable = bounds + at_least * (1 - bounds) / n if uses_floor else bounds.copy()
    candidates = (state >= 0) & (reachable <= cutoff + _EPS)
    if evaluator.fully_monotone and limit == 0:
        minimal = np.zeros(size, dtype=bool)
        minimal[lattice.minimal(grid > 0)] = True
        candidates &= minimal
    order = np.flatnonzero(candidates)
    order = order[np.lexsort((order, reachable[order]))]
    best, best_node, best_suppressed = math.inf, None, 0
    ties: list[tuple[int, ...]] = []
    for candidate in order:
        index = int(candidate)
        if reachable[index] > best + _EPS:
            break
        if index not in assessed and bound(index) > best + _EPS:
            continue
        assessment = assessed.get(index) or check(index)
        if not assessment.feasible:
            continue
        score = evaluator.score(assessment, metric)
        node = assessment.node
        if score < best - _EPS:
            best, best_node, best_suppressed, ties = score, node, assessment.suppressed, []
        elif abs(score - best) <= _EPS:
            ties.append(node)
    if best_node is None:
        raise _no_solution(problem, evaluator)
    return SearchResult(
        best_node, best, best_suppressed, metric, tuple(ties), evaluator.checked, lattice.size
    )


def _fractions(problem: Problem) -> np.ndarray:
    """Per node and column, level / height (precision's charge for a kept record)."""
    heights = np.array([max(h.height, 1) for h in problem.hierarchies], dtype=np.float64)
    return problem.lattice.all_levels / heights


def exhaustive_search(problem: Problem, metric: str = "precision") -> SearchResult:
    """Every node assessed and scored: the reference the optimal search is tested against."""
    evaluator = Evaluator(problem)
    lattice = problem.lattice
    best, best_node, best_suppressed = math.inf, None, 0
    ties: list[tuple[int, ...]] = []
    for index in range(lattice.size):
        node = tuple(int(v) for v in lattice.levels(index))
        assessment = evaluator.assess(node)
        if not assessment.feasible:
            continue
        score = evaluator.score(assessment, metric)
        if score < best - _EPS:
            best, best_node, best_suppressed, ties = score, node, assessment.suppressed, []
        elif abs(score - best) <= _EPS:
            ties.append(node)
    if best_node is None:
        raise _no_solution(problem, evaluator)
    return SearchResult(
        best_node, best, best_suppressed, metric, tuple(ties), evaluator.checked, lattice.size, True
    )


def best_achievable_k(problem: Problem, evaluator: Evaluator | None = None) -> int:
    """The largest smallest-class size reachable at the lattice's top within the limit."""
    evaluator = evaluator or Evaluator(problem)
    sizes = np.sort(evaluator.classes(problem.lattice.top).classes.sizes)
    dropped = np.cumsum(sizes)
    allowed = int(np.searchsorted(dropped, problem.max_suppressed, side="right"))
    return int(sizes[allowed]) if allowed < len(sizes) else int(sizes[-1]) if len(sizes) else 0


def _no_solution(problem: Problem, evaluator: Evaluator) -> NoSolutionError:
    best_k = best_achievable_k(problem, evaluator)
    limit = problem.max_suppressed
    return NoSolutionError(
        f"no transformation satisfies {', '.join(m.describe() for m in problem.models)} with at "
        f"most {limit} suppressed record(s) ({problem.suppression_limit:.2%}); the best "
        f"achievable k within that limit is {best_k}. Allow higher levels, more suppression, "
        "or weaker models",
        best_k=best_k,
    )


def check_metric(metric: str) -> str:
    from safeshare.anonymize.quality import QUALITY_MODELS

    if metric not in QUALITY_MODELS:
        raise AnonymizationError(
            f"unknown quality model {metric!r}; use one of {list(QUALITY_MODELS)}"
        )
    return metric


__all__ = [
    "SEPARABLE",
    "Assessment",
    "Evaluator",
    "NodeClasses",
    "Problem",
    "SearchResult",
    "best_achievable_k",
    "exhaustive_search",
    "group_rows",
    "lower_bounds",
    "optimal_search",
]
