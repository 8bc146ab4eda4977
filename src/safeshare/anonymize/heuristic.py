"""A search with a time budget for lattices beyond the exact search's reach, with its gap.

The exact search (:mod:`safeshare.anonymize.search`) keeps arrays of the lattice's size; past
20 million transformations it refuses.  This search keeps only the nodes it has checked, and
within ``seconds`` returns the best transformation it found and a *proven lower bound* of the
optimum, so the card can say how far from optimal the release may be.  Two parts interleave:

* **Local search**, for a good solution early: from the top, step down to the predecessor
  that scores lowest while one satisfies the models; then move one column up and another
  down while that lowers the score; then restart from kicks (a few columns of the best node
  set at random, climbing back up along the successor that suppresses least when the kick
  breaks the models).
* **Best-first proof** (in the manner of ARX's Lightning, with cones): nodes are taken in
  order of their lower bound (the quality model with nothing suppressed, separable over the
  columns, so it grows with every level).  A node below one known to break the monotone
  models breaks them too, so the search jumps over that node's cone (each column one level
  above it); a node not known to break them is checked, and the nodes one level above it
  follow.  When the smallest bound left is at least the best score, the best node is proven
  optimal; when time runs out, that smallest bound is the lower bound returned.

The result is never worse than the first local descent and is exact when proven (tests
compare it with exhaustive enumeration).  Non-separable quality models (entropy,
discernibility, AECS) have no bound: the search then returns a lower bound of 0.

>>> import numpy as np
>>> from safeshare.anonymize.hierarchy import Hierarchy
>>> from safeshare.anonymize.models import KAnonymity
>>> h = Hierarchy.from_rows("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["3", "3-4", "*"]])
>>> problem = Problem.build([h], [np.array([0, 1, 2, 2, 0, 2])], models=[KAnonymity(3)])
>>> result = heuristic_search(problem, "precision", seconds=1.0)
>>> result.node, result.score, result.gap
((1,), 0.5, 0.0)
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from safeshare.anonymize.evaluator import Evaluator
from safeshare.anonymize.guide import SuppressionGuide
from safeshare.anonymize.models import NoSolutionError
from safeshare.anonymize.problem import Problem
from safeshare.anonymize.search import SearchResult, no_solution

_EPS = 1e-12
_PROOF_STEPS = 256  # best-first nodes taken between two turns of exploration
_POPULATION = 16  # the genetic exploration's population
_MAX_FRONTIER = 4_000_000  # nodes held by the best-first frontier at most


@dataclass(frozen=True, slots=True)
class _Check:
    """What a check of one node found (its classes are not kept)."""

    feasible: bool
    feasible_monotone: bool
    suppressed_monotone: int
    suppressed: int
    score: float


def heuristic_search(
    problem: Problem,
    metric: str = "precision",
    *,
    seconds: float = 10.0,
    seed: int = 0,
    genetic: bool = False,
) -> SearchResult:
    """The best node found within ``seconds`` (``bound``: a proven lower bound of the optimum).

    ``genetic`` explores with a genetic algorithm (a population of satisfying nodes, uniform
    crossover, one-level mutations, repaired by climbing) in place of the local restarts.
    Raises :class:`NoSolutionError` when no node satisfies the models (proven, or none found
    in time)."""
    if seconds <= 0:
        raise ValueError(f"the search's time limit must be above 0 seconds, got {seconds}")
    search = _Heuristic(problem, metric, seconds, np.random.default_rng(seed))
    return search.run(search.breed if genetic else search.restart)


class _Heuristic:
    """One heuristic search: the checks so far, the best node, the best-first frontier."""

    def __init__(
        self, problem: Problem, metric: str, seconds: float, rng: np.random.Generator
    ) -> None:
        self.problem, self.metric, self.rng = problem, metric, rng
        self.evaluator = Evaluator(problem, dense=False)
        self.deadline = time.perf_counter() + seconds
        lattice = problem.lattice
        self.lo, self.hi = np.asarray(lattice.lo), np.asarray(lattice.hi)
        values = problem.quality.bounds(metric)
        weights = problem.quality.importance
        self.separable = values is not None
        # per column, each level's share of the bound (indexed by absolute level)
        self.costs = [weights[c] * v for c, v in enumerate(values or [])]
        self.checks: dict[tuple[int, ...], _Check] = {}
        # the maximal checked nodes that break the monotone models or suppress too many
        # (every node below does)
        self.broken = _Rows(len(self.lo))
        # checked nodes that suppress records under them: a count bounds every node below
        self.floors = _Rows(len(self.lo))
        self.n = max(problem.n, 1)
        self.uses_floor = metric == "precision" and self.evaluator.suppression_monotone
        self.guide = SuppressionGuide(lattice.lo, lattice.hi, problem.max_suppressed)
        self.best_score = math.inf
        self.best_node: tuple[int, ...] | None = None
        self.best_suppressed = 0
        start = tuple(lattice.lo)
        self.frontier: list[tuple[float, tuple[int, ...]]] = [(self.bound(start), start)]
        self.queued = {start}
        self.dropped = math.inf  # the lowest bound of a node the full frontier could not hold
        self.proven = False
        self.population: list[tuple[int, ...]] = []  # satisfying nodes the exploration found

    # ---- nodes --------------------------------------------------------------------------

    def bound(self, node: tuple[int, ...]) -> float:
        """The node's lower bound (its score with nothing suppressed, when separable)."""
        if not self.separable:
            return 0.0
        return float(sum(cost[level] for cost, level in zip(self.costs, node, strict=True)))

    def check(self, node: tuple[int, ...]) -> _Check:
        found = self.checks.get(node)
        if found is not None:
            return found
        a = self.evaluator.assess(node)
        score = self.evaluator.score(a, self.metric) if a.feasible else math.inf
        found = _Check(a.feasible, a.feasible_monotone, a.suppressed_monotone, a.suppressed, score)
        self.checks[node] = found
        # (what it suppresses, every node below suppresses too: the cone below suppresses too
        # many, or costs at least that)
        below, limit = a.suppressed_below, self.problem.max_suppressed
        if not a.feasible_monotone or below > limit:
            self.broken.add_maximal(node)
        elif self.uses_floor and below:
            self.floors.add(node, below)
        suppressed = max(a.suppressed_monotone, below)
        self.guide.learn(node, suppressed, a.feasible_monotone and suppressed <= limit)
        if score < self.best_score - _EPS:
            self.best_score, self.best_node, self.best_suppressed = score, node, a.suppressed
        return found

    def covering(self, node: tuple[int, ...]) -> np.ndarray | None:
        """The largest checked node at or above ``node`` whose cone (below it, above
        ``node``) holds nothing better than the best score: it breaks the monotone models, or
        (precision) suppresses so many records that the cone costs more than the best."""
        levels = np.asarray(node)
        found = [self.broken.above(levels)]
        if self.uses_floor and math.isfinite(self.best_score):
            bound = self.bound(node)  # (a count over this makes the cone cost more)
            enough = self.n * (self.best_score + _EPS - bound) / max(1 - bound, _EPS)
            found.append(self.floors.above(levels, more_than=enough))
        rows = np.concatenate(found)
        return rows[int(rows.sum(axis=1).argmax())] if len(rows) else None

    def settle(self, node: tuple[int, ...]) -> np.ndarray | None:
        """Check the highest node on a path up from ``node`` that the guide expects to break
        the models (its cone is large); while that does not settle ``node``, check nodes lower
        on the path, each step twice the last, down to ``node`` itself.  The cone that
        settles it, if any."""
        path = self._path(node)
        position, step = len(path) - 1, 1
        while True:
            self.check(path[position])
            cover = self.covering(node)
            if cover is not None or position == 0:
                return cover
            position, step = max(position - step, 0), 2 * step

    def _path(self, start: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Up from ``start``, each step in the column the guide expects to shrink the suppressed
        count least, while it expects the models broken."""
        guide, node = self.guide, list(start)
        guess, path = guide.guess(node), [start]
        while True:
            rises = guide.rises(node)
            column = int(np.argmax(rises))
            if rises[column] == -math.inf:
                return path
            node[column] += 1
            guess += rises[column]
            if guess <= guide.threshold:
                return path
            path.append(tuple(node))

    def out_of_time(self) -> bool:
        return time.perf_counter() > self.deadline

    # ---- the search ---------------------------------------------------------------------

    def run(self, explore: Callable[[], None]) -> SearchResult:
        """The search: a first descent, then turns of the proof and of ``explore``."""
        top = tuple(self.problem.lattice.hi)
        if not self.check(top).feasible and self.evaluator.fully_monotone:
            raise no_solution(self.problem, self.evaluator)
        if self.best_node is not None:
            self.population.append(self.improve(self.descend(top)))
        while not self.proven and not self.out_of_time():
            self.prove(_PROOF_STEPS)
            if self.proven or self.out_of_time():
                break
            explore()
        return self.result()

    def descend(self, node: tuple[int, ...]) -> tuple[int, ...]:
        """From a satisfying node, step to the lowest-scoring satisfying predecessor while one
        scores lower."""
        current = node
        while not self.out_of_time():
            score = self.check(current).score
            options = [
                p for p in self._neighbours(current, down=True) if self.bound(p) < score - _EPS
            ]
            scored = [(self.check(p).score, p) for p in sorted(options, key=self.bound)]
            better = [(s, p) for s, p in scored if s < score - _EPS]
            if not better:
                break
            current = min(better)[1]
        return current

    def improve(self, node: tuple[int, ...]) -> tuple[int, ...]:
        """Move one column up and another down while that lowers the score (first found, in
        order of bound)."""
        current = node
        while not self.out_of_time():
            score = self.check(current).score
            moves = []
            for up in range(len(current)):
                if current[up] >= self.hi[up]:
                    continue
                for down in range(len(current)):
                    if down != up and current[down] > self.lo[down]:
                        moved = list(current)
                        moved[up] += 1
                        moved[down] -= 1
                        moves.append(tuple(moved))
            moves = sorted((m for m in moves if self.bound(m) < score - _EPS), key=self.bound)
            better = next(
                (m for m in moves if not self.out_of_time() and self.check(m).score < score - _EPS),
                None,
            )
            if better is None:
                return current
            current = self.descend(better)
        return current

    def restart(self) -> None:
        """Kick the best node (or the top) at a few random columns, climb back to a satisfying
        node, and search locally from there."""
        base = np.asarray(self.best_node if self.best_node is not None else self.hi)
        kicked = base.copy()
        for c in self.rng.choice(
            len(base), size=min(len(base), int(self.rng.integers(1, 4))), replace=False
        ):
            kicked[c] = int(self.rng.integers(self.lo[c], self.hi[c] + 1))
        node = self.climb(tuple(int(v) for v in kicked))
        if node is not None:
            self.improve(self.descend(node))

    def breed(self) -> None:
        """One generation of the genetic exploration: children of two parents (each the better
        of two drawn at random), a uniform crossover of their levels, each level moved by one
        with chance 1/d, climbed back to a satisfying node; the best child descends; the
        population keeps the best distinct nodes."""
        rng, d = self.rng, len(self.lo)
        while len(self.population) < 2 and not self.out_of_time():  # (random founders)
            node = self.climb(tuple(int(v) for v in rng.integers(self.lo, self.hi + 1)))
            if node is None:
                return
            self.population.append(node)

        def parent() -> tuple[int, ...]:
            a, b = rng.choice(len(self.population), size=2)
            first, second = self.population[a], self.population[b]
            return first if self.check(first).score <= self.check(second).score else second

        children = []
        for _ in range(_POPULATION):
            if self.out_of_time():
                break
            mother, father = parent(), parent()
            child = np.where(rng.random(d) < 0.5, mother, father)
            child += np.where(rng.random(d) < 1 / d, rng.choice([-1, 1], size=d), 0)
            node = self.climb(tuple(int(v) for v in np.clip(child, self.lo, self.hi)))
            if node is not None:
                children.append(node)
        if children:
            children.append(self.descend(min(children, key=lambda n: self.check(n).score)))
        ranked = sorted(set(self.population) | set(children), key=lambda n: self.check(n).score)
        self.population = ranked[:_POPULATION]

    def climb(self, node: tuple[int, ...]) -> tuple[int, ...] | None:
        """Up from ``node`` along the successor that suppresses least, to a satisfying node."""
        current = node
        while not self.check(current).feasible:
            ups = self._neighbours(current, down=False)
            if not ups or self.out_of_time():
                return None
            current = min(ups, key=lambda u: (self.check(u).suppressed_monotone, self.bound(u)))
        return current

    def prove(self, steps: int) -> None:
        """Take up to ``steps`` nodes from the best-first frontier (lowest bound first)."""
        frontier = self.frontier
        for _ in range(steps):
            if not frontier:
                self.proven = self.dropped >= self.best_score - _EPS
                return
            bound, node = frontier[0]
            if bound >= self.best_score - _EPS:
                self.proven = self.dropped >= self.best_score - _EPS
                return
            heapq.heappop(frontier)
            cover = self.covering(node)
            if cover is None:
                cover = self.settle(node)
            if cover is not None:  # jump out of the violating cone, one column at a time
                nexts = [
                    tuple(int(cover[i]) + 1 if i == c else v for i, v in enumerate(node))
                    for c in range(len(node))
                    if cover[c] < self.hi[c]
                ]
            else:
                nexts = self._neighbours(node, down=False)
            for after in nexts:
                if after in self.queued:
                    continue
                if len(frontier) >= _MAX_FRONTIER:  # (the lower bound stays below it)
                    self.dropped = min(self.dropped, self.bound(after))
                    continue
                self.queued.add(after)
                heapq.heappush(frontier, (self.bound(after), after))

    def _neighbours(self, node: tuple[int, ...], *, down: bool) -> list[tuple[int, ...]]:
        step = -1 if down else 1
        out = []
        for c, level in enumerate(node):
            if (level > self.lo[c]) if down else (level < self.hi[c]):
                out.append(tuple(v + step if i == c else v for i, v in enumerate(node)))
        return out

    def result(self) -> SearchResult:
        if self.best_node is None:
            if self.proven and not self.frontier:
                raise no_solution(self.problem, self.evaluator)
            raise NoSolutionError(
                "the heuristic search found no transformation that satisfies the models within "
                "its time limit; allow more time (time_limit), higher levels or more suppression",
                best_k=0,
            )
        left = self.frontier[0][0] if self.frontier else math.inf
        bound = min(left, self.dropped, self.best_score)
        return SearchResult(
            self.best_node,
            self.best_score,
            self.best_suppressed,
            self.metric,
            (),
            self.evaluator.checked,
            self.problem.lattice.size,
            bound=None if self.proven else max(bound, 0.0),
        )


class _Rows:
    """A growing array of nodes' levels, each with a count."""

    def __init__(self, columns: int) -> None:
        self.levels = np.zeros((64, columns), dtype=np.int16)
        self.counts = np.zeros(64, dtype=np.int64)
        self.size = 0

    def add(self, node: tuple[int, ...], count: int = 0) -> None:
        if self.size == len(self.counts):
            self.levels = np.concatenate([self.levels, np.zeros_like(self.levels)])
            self.counts = np.concatenate([self.counts, np.zeros_like(self.counts)])
        self.levels[self.size] = node
        self.counts[self.size] = count
        self.size += 1

    def add_maximal(self, node: tuple[int, ...]) -> None:
        """Add ``node`` unless a row lies above it, dropping the rows below it."""
        levels, new = self.levels[: self.size], np.asarray(node)
        if (levels >= new).all(axis=1).any():
            return
        keep = np.flatnonzero(~(levels <= new).all(axis=1))
        self.size = len(keep)
        self.levels[: self.size] = levels[keep]
        self.counts[: self.size] = self.counts[keep]
        self.add(node)

    def above(self, node: np.ndarray, more_than: float = -math.inf) -> np.ndarray:
        """The rows at or above ``node`` whose count is over ``more_than``."""
        levels, counts = self.levels[: self.size], self.counts[: self.size]
        if more_than > -math.inf:
            levels = levels[counts > more_than]
        return levels[(levels >= node).all(axis=1)]
