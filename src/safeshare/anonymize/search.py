"""Optimal full-domain generalization: the lattice search that returns the exact optimum.

The data are first reduced to their *distinct* quasi-identifier rows with a weight (how many
records share the row) and, per sensitive attribute, a count of each value.  A node's
equivalence classes are computed from the classes of any node below it (a *roll-up*: the
classes of a finer node are a smaller weighted table than the data), so most checks touch a
few hundred rows.

The search has two phases.

1. **Tagging** (after ARX's Flash): the nodes that satisfy the monotone part of the models
   within the suppression limit form an up-set of the lattice.  Walk a path upwards from the
   lowest untagged node through untagged nodes, binary-search it for its lowest satisfying
   node, and tag whole cones: a satisfying node's successors satisfy, a violating node's
   predecessors violate.  Each tag is one slice assignment on an array of the lattice's shape.
2. **Optimum**: without suppression every model and quality model is monotone, so the optimum
   is one of the up-set's minimal nodes, and only those are scored.  Otherwise the
   candidates are scored in order of an exact lower bound (for the separable quality models,
   their value with nothing suppressed, a sum of one term per column and level); the search
   stops at the first candidate whose bound exceeds the best score found.

Every group-by goes through :func:`group_rows`, the one function an engine (DuckDB's or
Spark's ``GROUP BY``) replaces to run the search on data larger than memory.

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
_DENSE_MIN = 1 << 10
_KEY_LIMIT = 1 << 62
_CACHE_ROWS = 4_000_000
_CACHE_SHARE = 0.9  # remember a node whose classes are at most this share of its source's
_EPS = 1e-12


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
        present = np.flatnonzero(total)
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


class NodeClasses:
    """The classes of one node: a member's level-0 codes per column, sizes, sensitive counts."""

    __slots__ = ("_first", "_rep", "_source", "classes", "node")

    def __init__(
        self,
        node: tuple[int, ...],
        classes: Classes,
        rep: np.ndarray | None = None,
        source: np.ndarray | None = None,
        first: np.ndarray | None = None,
    ) -> None:
        self.node = node
        self.classes = classes
        self._rep = rep
        self._source = source
        self._first = first

    @property
    def rep(self) -> np.ndarray:
        """The level-0 codes (one column per quasi-identifier) of one record of each class."""
        if self._rep is None:
            assert self._source is not None and self._first is not None
            self._rep = self._source[self._first]
            self._source = self._first = None
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
        # every (column, level) map in one array: codes of a node in one gather
        self.flat_maps = np.concatenate(
            [m for maps in self.maps for m in maps] or [np.zeros(0, dtype=np.int64)]
        )
        self.map_offsets: list[list[int]] = []
        offset = 0
        for maps in self.maps:
            self.map_offsets.append([])
            for m in maps:
                self.map_offsets[-1].append(offset)
                offset += len(m)
        counts = [
            np.bincount(c, weights=self.weights, minlength=len(h.values))
            for c, h in zip(self.codes, self.hierarchies, strict=True)
        ]
        self.quality = QualityContext(self.hierarchies, counts)

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
        self.problem = problem
        suppression = problem.max_suppressed > 0
        self.monotone_models = [m for m in problem.models if m.monotone(suppression)]
        self.other_models = [m for m in problem.models if not m.monotone(suppression)]
        self.fully_monotone = not self.other_models
        # whether kept classes stay kept when merged (so suppression shrinks going up)
        self.suppression_monotone = all(
            m.monotone(True) for m in self.monotone_models if m.per_class
        )
        base = NodeClasses(
            (0,) * len(problem.hierarchies),
            Classes(problem.weights, problem.sensitive),
            np.ascontiguousarray(np.stack(problem.codes, axis=1), dtype=np.int64)
            if problem.codes
            else np.zeros((len(problem.weights), 0), dtype=np.int64),
        )
        self.base = base
        self.cache: dict[tuple[int, ...], NodeClasses] = {}
        self._cached: list[NodeClasses] = []
        self._levels = np.zeros((64, len(problem.hierarchies)), dtype=np.int64)
        self._rows = np.zeros(64, dtype=np.int64)
        self.cached_rows = 0
        self.checked = 0

    def _source(self, node: tuple[int, ...]) -> NodeClasses:
        count = len(self._cached)
        if not count:
            return self.base
        below = (self._levels[:count] <= np.asarray(node)).all(axis=1)
        if not below.any():
            return self.base
        rows = np.where(below, self._rows[:count], np.iinfo(np.int64).max)
        return self._cached[int(rows.argmin())]

    def _remember(self, groups: NodeClasses) -> None:
        count = len(self._cached)
        if count == len(self._rows):
            self._levels = np.concatenate([self._levels, np.zeros_like(self._levels)])
            self._rows = np.concatenate([self._rows, np.zeros_like(self._rows)])
        self._levels[count] = groups.node
        self._rows[count] = len(groups)
        self._cached.append(groups)
        self.cache[groups.node] = groups
        self.cached_rows += len(groups)
        if self.cached_rows > _CACHE_ROWS:  # keep the smaller half
            keep = sorted(self._cached, key=len)[: max(1, count // 2)]
            self._cached, self.cache, self.cached_rows = [], {}, 0
            self._rows[:] = 0
            for old in keep:
                self._remember(old)

    def classes(self, node: tuple[int, ...]) -> NodeClasses:
        """The classes of ``node`` (rolled up from a finer node's classes)."""
        cached = self.cache.get(node)
        if cached is not None:
            return cached
        source = self._source(node)
        if source is self.base:
            hub = tuple(min(level, 1) for level in node)
            if hub not in (node, source.node):
                source = self.classes(hub)
        return self._roll_up(node, source)

    def _roll_up(self, node: tuple[int, ...], source: NodeClasses) -> NodeClasses:
        p = self.problem
        rows = len(source)
        rep = source.rep
        sizes_at = [p.level_sizes[c][level] for c, level in enumerate(node)]
        space = math.prod(sizes_at)
        if space < _KEY_LIMIT:
            offsets = np.array([p.map_offsets[c][level] for c, level in enumerate(node)])
            strides = np.ones(len(node), dtype=np.int64)
            for c in range(len(node) - 2, -1, -1):
                strides[c] = strides[c + 1] * sizes_at[c + 1]
            key = p.flat_maps[rep + offsets] @ strides
        else:
            key, space = np.zeros(rows, dtype=np.int64), 1
            for c, level in enumerate(node):
                size = sizes_at[c]
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
        result = NodeClasses(node, Classes(sizes, sensitive), source=rep, first=first)
        if p.population is not None:
            result = NodeClasses(
                node, Classes(sizes, sensitive, self._population(node, result.rep)), result.rep
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
        kept_monotone = np.ones(len(classes), dtype=bool)
        for model in self.monotone_models:
            if model.per_class:
                kept_monotone &= model.class_ok(
                    classes, p.infos.get(getattr(model, "attribute", ""))
                )
        kept = kept_monotone.copy()
        for model in self.other_models:
            if model.per_class:
                kept &= model.class_ok(classes, p.infos.get(getattr(model, "attribute", "")))
        suppressed_monotone = int(classes.sizes[~kept_monotone].sum())
        suppressed = int(classes.sizes[~kept].sum())
        table_monotone = all(
            m.table_ok(classes, kept_monotone) for m in self.monotone_models if not m.per_class
        )
        table_all = all(m.table_ok(classes, kept) for m in p.models if not m.per_class)
        feasible_monotone = suppressed_monotone <= p.max_suppressed and table_monotone
        feasible = suppressed <= p.max_suppressed and table_all
        return Assessment(
            node, groups, kept, suppressed, suppressed_monotone, feasible, feasible_monotone
        )

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
    successors = lattice.successor_table()
    assessed: dict[int, Assessment] = {}
    n = max(problem.n, 1)
    # with a separable model a satisfying node costs at most its bound + the suppressed share
    slack = problem.max_suppressed / n if metric in ("precision", "loss", "ncp") else math.inf
    best = math.inf  # exact score of the best node assessed so far (precision only)
    cutoff = math.inf  # no optimum lies above this bound
    # suppression under the monotone models never grows upwards: an assessed node's count
    # bounds the count of every node below it, which tightens precision's bound
    seen = _SuppressionBound(lattice.all_levels, evaluator.suppression_monotone)
    fractions = _fractions(problem) if metric == "precision" else None

    def bound(index: int) -> float:
        if fractions is None or not seen.count:
            return float(bounds[index])
        suppressed = seen.at_least(index)
        return float(np.mean(fractions[index] + suppressed * (1 - fractions[index]) / n))

    def check(index: int) -> bool:
        nonlocal best, cutoff
        node = tuple(int(v) for v in lattice.levels(index))
        assessment = evaluator.assess(node)
        assessed[index] = assessment
        seen.add(index, assessment.suppressed_monotone)
        if assessment.feasible_monotone:
            grid[lattice.above(node)] = 1
            if evaluator.fully_monotone:
                cutoff = min(cutoff, bounds[index] + slack)
            if assessment.feasible and metric == "precision":
                best = min(best, evaluator.score(assessment, metric))
                cutoff = min(cutoff, best)
        else:
            grid[lattice.below(node)] = -1
        return assessment.feasible_monotone

    for start in np.lexsort((np.arange(size), bounds)):
        if bounds[start] > cutoff + _EPS:
            break
        if state[start] or bound(start) > cutoff + _EPS:
            continue
        path = [int(start)]
        while True:
            options = successors[path[-1]]
            options = options[options >= 0]
            options = options[state[options] == 0]
            if not len(options):
                break
            path.append(int(options[np.argmin(bounds[options])]))
        low, high = 0, len(path) - 1
        while low <= high:
            middle = (low + high) // 2
            tag = state[path[middle]]
            if check(path[middle]) if tag == 0 else tag > 0:
                high = middle - 1
            else:
                low = middle + 1

    satisfying = (state == 1) & (bounds <= cutoff + _EPS)
    if not (state == 1).any():
        raise _no_solution(problem, evaluator)
    if evaluator.fully_monotone and problem.max_suppressed == 0:
        minimal = np.zeros(size, dtype=bool)
        minimal[lattice.minimal(grid == 1)] = True
        satisfying &= minimal
    candidates = np.flatnonzero(satisfying)
    candidates = candidates[np.lexsort((candidates, bounds[candidates]))]
    best, best_node, best_suppressed = math.inf, None, 0
    ties: list[tuple[int, ...]] = []
    for index in candidates:
        if bounds[index] > best + _EPS:
            break
        if int(index) not in assessed and bound(int(index)) > best + _EPS:
            continue
        node = tuple(int(v) for v in lattice.levels(int(index)))
        assessment = assessed.get(int(index)) or evaluator.assess(node)
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
        best_node, best, best_suppressed, metric, tuple(ties), evaluator.checked, lattice.size
    )


class _SuppressionBound:
    """The largest monotone suppression count among assessed nodes above a node."""

    def __init__(self, levels: np.ndarray, active: bool) -> None:
        self.levels = levels
        self.active = active
        self.rows = np.zeros((64, levels.shape[1]), dtype=levels.dtype)
        self.counts = np.zeros(64, dtype=np.int64)
        self.count = 0

    def add(self, index: int, suppressed: int) -> None:
        if not self.active or suppressed == 0:
            return
        if self.count == len(self.counts):
            self.rows = np.concatenate([self.rows, np.zeros_like(self.rows)])
            self.counts = np.concatenate([self.counts, np.zeros_like(self.counts)])
        self.rows[self.count] = self.levels[index]
        self.counts[self.count] = suppressed
        self.count += 1

    def at_least(self, index: int) -> int:
        above = (self.rows[: self.count] >= self.levels[index]).all(axis=1)
        return int(self.counts[: self.count][above].max(initial=0))


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
