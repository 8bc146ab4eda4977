"""The evaluator: a node's equivalence classes, whether they satisfy the models, its score.

A node's classes are rolled up from those of the smallest cached node below it (the classes
of a finer node are a smaller weighted table than the data), so most checks touch a few
hundred rows; the nodes whose classes shrink the most are remembered for later roll-ups.

>>> import numpy as np
>>> from safeshare.anonymize.hierarchy import Hierarchy
>>> from safeshare.anonymize.models import KAnonymity
>>> h = Hierarchy.from_rows("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
>>> problem = Problem.build([h], [np.array([0, 1, 2, 2, 0, 2])], models=[KAnonymity(3)])
>>> evaluator = Evaluator(problem)
>>> evaluator.classes((1,)).classes.sizes.tolist()
[3, 3]
>>> evaluator.assess((0,)).feasible, evaluator.assess((1,)).feasible
(False, True)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from safeshare.anonymize.grouping import group_sums
from safeshare.anonymize.models import Classes, PrivacyModel, SensitiveInfo
from safeshare.anonymize.problem import NodeClasses, Problem

_CACHE_ROWS = 4_000_000
_CACHE_SHARE = 0.9  # remember a node whose classes are at most this share of its source's
_NUMBER = (1 << 24) - 1  # cached nodes are numbered below this
_NONE = np.iinfo(np.int64).max


@dataclass(frozen=True, slots=True)
class Assessment:
    """How one node fares: which classes are kept, how many records are suppressed."""

    node: tuple[int, ...]
    groups: NodeClasses
    kept: np.ndarray
    suppressed: int
    suppressed_monotone: int
    feasible: bool
    feasible_monotone: bool
    complete: bool = True  # False: only the monotone models judged (feasible unknown: False)
    # records that this node and every node below it suppress under every model (0 where
    # kept classes need not stay kept when merged: nothing is known then)
    suppressed_below: int = 0


class Evaluator:
    """Computes and assesses nodes, rolling each up from the smallest cached node below it.

    ``dense`` keeps, per node of the lattice, its best cached source (an array of the
    lattice's size: the exact search's lattices); otherwise the cached nodes are scanned
    (any lattice size: the heuristic search's).
    """

    def __init__(self, problem: Problem, *, dense: bool = True) -> None:
        if dense:
            problem.check_lattice()
        self.problem = problem
        suppression = problem.max_suppressed > 0
        self.monotone_models = [m for m in problem.models if m.monotone(suppression)]
        self.other_models = [m for m in problem.models if not m.monotone(suppression)]
        self.fully_monotone = not self.other_models
        self._monotone_per_class = self._with_infos(m for m in self.monotone_models if m.per_class)
        self._other_per_class = self._with_infos(m for m in self.other_models if m.per_class)
        self._monotone_table = [m for m in self.monotone_models if not m.per_class]
        self._all_table = [m for m in problem.models if not m.per_class]
        # whether the other models bound what every node below a checked one suppresses
        self._forcing = suppression and any(
            type(m).forced_share is not PrivacyModel.forced_share for m, _ in self._other_per_class
        )
        # whether kept classes stay kept when merged (so suppression shrinks going up)
        self.suppression_monotone = all(
            m.monotone(True) for m in self.monotone_models if m.per_class
        )
        base = NodeClasses(
            (0,) * len(problem.hierarchies),
            Classes(problem.weights, problem.sensitive),
            problem.chunking,
            chunks=problem.chunks,
        )
        self.base = base
        self.cache: dict[tuple[int, ...], NodeClasses] = {}
        self._cached: list[NodeClasses] = []
        # per node, the smallest cached node below it (-1: none; then the base)
        # packed as rows << 24 | number, so that one np.minimum over a cone keeps the best
        self._best = np.full(problem.lattice.shape, _NONE, dtype=np.int64) if dense else None
        self._cached_levels = np.zeros((0, len(problem.hierarchies)), dtype=np.int64)
        self.cached_rows = 0
        self.checked = 0

    def _source(self, node: tuple[int, ...]) -> NodeClasses:
        if self._best is None:
            below = np.flatnonzero((self._cached_levels <= np.asarray(node)).all(axis=1))
            if not len(below):
                return self.base
            return min((self._cached[i] for i in below.tolist()), key=len)
        lo = self.problem.lattice.lo
        best = int(self._best[tuple([v - a for v, a in zip(node, lo, strict=True)])])
        return self.base if best == _NONE else self._cached[best & _NUMBER]

    def _remember(self, groups: NodeClasses) -> None:
        number = len(self._cached)
        self._cached.append(groups)
        self.cache[groups.node] = groups
        self.cached_rows += len(groups)
        if self._best is None:
            self._cached_levels = np.vstack([self._cached_levels, [groups.node]])
        else:
            cone = self._best[self.problem.lattice.above(groups.node)]
            np.minimum(cone, (len(groups) << 24) | number, out=cone)
        if self.cached_rows > _CACHE_ROWS or number >= _NUMBER:  # keep the smaller half
            keep = sorted(self._cached, key=len)[: max(1, number // 2)]
            self._cached, self.cache, self.cached_rows = [], {}, 0
            self._cached_levels = self._cached_levels[:0]
            if self._best is not None:
                self._best.fill(_NONE)
            for old in keep:
                self._remember(old)

    def classes(self, node: tuple[int, ...]) -> NodeClasses:
        """The classes of ``node`` (rolled up from a finer node's classes).

        With no finer node cached, a *hub* one level under ``node`` in every column is rolled
        up from the data first: it serves the nodes around ``node`` that are checked later.
        """
        cached = self.cache.get(node)
        if cached is not None:
            return cached
        source = self._source(node)
        if source is self.base:
            lo = self.problem.lattice.lo
            hub = tuple([max(level - 1, low) for level, low in zip(node, lo, strict=True)])
            if hub != node:
                source = self._roll_up(hub, source)
        return self._roll_up(node, source)

    def _roll_up(self, node: tuple[int, ...], source: NodeClasses) -> NodeClasses:
        keys, space = self.problem.keys(node, source.chunks)
        result, _ = self._group(node, source, keys, space)
        self.checked += 1
        if len(result) <= len(source) * _CACHE_SHARE or source is self.base:
            self._remember(result)
        return result

    def _group(
        self, node: tuple[int, ...], source: NodeClasses, keys: np.ndarray, space: int
    ) -> tuple[NodeClasses, np.ndarray]:
        """The classes of ``node`` from those of ``source`` (keyed at ``node``), and the keys
        present (one per class, ascending)."""
        p = self.problem
        names = list(source.classes.sensitive)
        present, sums = group_sums(
            keys, space, [source.classes.sizes, *(source.summable(a) for a in names)]
        )
        sizes = sums[0].astype(np.int64)
        sensitive = {a: sums[i + 1].astype(np.int64) for i, a in enumerate(names)}
        pending = (source.chunks, keys, space, present)
        result = NodeClasses(node, Classes(sizes, sensitive), p.chunking, pending=pending)
        if p.population is not None:
            population = self._population(node, result.rep, p.population)
            result = NodeClasses(
                node, Classes(sizes, sensitive, population), p.chunking, chunks=result.chunks
            )
        return result, present

    def partition(self, node: tuple[int, ...]) -> tuple[np.ndarray, Assessment]:
        """Each distinct row's class at ``node`` (the data grouped afresh), and its assessment."""
        keys, space = self.problem.keys(node, self.base.chunks)
        groups, present = self._group(node, self.base, keys, space)
        ids = np.empty(space, dtype=np.intp)
        ids[present] = np.arange(len(present), dtype=np.intp)
        return ids[keys], self.judge(groups)

    def _population(
        self,
        node: tuple[int, ...],
        rep: np.ndarray,
        population: tuple[list[np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """Per class of ``node`` (one record's codes each), its size in the population."""
        p = self.problem
        pop_codes, pop_weights = population
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

    def assess(self, node: tuple[int, ...], complete: bool = True) -> Assessment:
        """Which classes of ``node`` survive; whether its suppression stays within the limit."""
        return self.judge(self.classes(node), complete)

    def judge(self, groups: NodeClasses, complete: bool = True) -> Assessment:
        """Which of a node's classes survive; whether its suppression stays within the limit
        (``complete``: under every model; else under the monotone ones only, ``feasible``
        then False until judged completely, unless the shares the others force out judged
        them on the way)."""
        p = self.problem
        classes = groups.classes
        sizes = classes.sizes
        kept_monotone = self._kept(self._monotone_per_class, classes)
        suppressed_monotone = p.n - int(sizes[kept_monotone].sum())
        feasible_monotone = suppressed_monotone <= p.max_suppressed and all(
            m.table_ok(classes, kept_monotone) for m in self._monotone_table
        )
        complete = complete or self.fully_monotone
        kept, below = kept_monotone, suppressed_monotone if self.suppression_monotone else 0
        if self._other_per_class and (complete or (self._forcing and feasible_monotone)):
            among = np.flatnonzero(kept_monotone)  # (the others judge only these classes)
            every = len(among) == len(classes)
            kept_among, forced, judged = self._others(
                classes if every else classes.subset(among), complete
            )
            if forced is not None:
                below += math.ceil(float(sizes[among] @ forced) - 1e-9)
            complete = judged  # (the shares forced out judge their models: nothing is left)
            if complete:
                kept = kept_monotone.copy()
                kept[among] = kept_among
        if not complete:
            return Assessment(
                groups.node, groups, kept_monotone, suppressed_monotone, suppressed_monotone,
                False, feasible_monotone, complete=False, suppressed_below=below,
            )  # fmt: skip
        suppressed = suppressed_monotone if kept is kept_monotone else p.n - int(sizes[kept].sum())
        feasible = suppressed <= p.max_suppressed and all(
            m.table_ok(classes, kept) for m in self._all_table
        )
        return Assessment(
            groups.node, groups, kept, suppressed, suppressed_monotone, feasible,
            feasible_monotone, suppressed_below=below,
        )  # fmt: skip

    def _others(
        self, classes: Classes, complete: bool
    ) -> tuple[np.ndarray, np.ndarray | None, bool]:
        """Which ``classes`` the models that are not monotone keep (all, unless ``complete``),
        the share of each that they force out at every node below (a model's
        ``forced_share``, 0 exactly for the classes it keeps; None: nothing known), and whether
        every model was judged (``complete``, or each gave its forced shares)."""
        kept = np.ones(len(classes), dtype=bool)
        forced: np.ndarray | None = None
        judged = True
        for model, info in self._other_per_class:
            share = model.forced_share(classes, info) if self._forcing else None
            if share is not None:
                forced = share if forced is None else np.maximum(forced, share)
                kept &= share == 0
            elif complete:
                kept &= model.class_ok(classes, info)
            else:
                judged = False
        return kept, forced, judged

    def _with_infos(
        self, models: Iterable[PrivacyModel]
    ) -> list[tuple[PrivacyModel, SensitiveInfo | None]]:
        infos = self.problem.infos
        return [(m, infos.get(getattr(m, "attribute", ""))) for m in models]

    @staticmethod
    def _kept(
        models: list[tuple[PrivacyModel, SensitiveInfo | None]], classes: Classes
    ) -> np.ndarray:
        kept: np.ndarray | None = None
        for model, info in models:
            ok = model.class_ok(classes, info)
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
            return p.quality.combine([((n - s) * f + s) / n for f in fractions])
        groups, kept = assessment.groups, assessment.kept
        levels = [np.full(int(kept.sum()), level) for level in node]
        labels = [p.maps[c][level][groups.rep[kept, c]] for c, level in enumerate(node)]
        target = None if p.target is None else groups.classes.sensitive[p.target][kept]
        return p.quality.score(
            metric, levels, labels, groups.classes.sizes[kept], assessment.suppressed, target
        )
