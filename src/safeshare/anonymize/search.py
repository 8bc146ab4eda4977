"""Optimal full-domain generalization: the lattice search that returns the exact optimum.

The data are first reduced to their *distinct* quasi-identifier rows with a weight (how many
records share the row) and, per sensitive attribute, a count of each value.  A node's
equivalence classes are computed from the classes of any node below it (a *roll-up*: the
classes of a finer node are a smaller weighted table than the data), so most checks touch a
few hundred rows.  The problem lives in :mod:`safeshare.anonymize.problem` (with the one
group-by an engine would implement), the roll-ups and checks in
:mod:`safeshare.anonymize.evaluator`.

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
from dataclasses import dataclass

import numpy as np

from safeshare.anonymize.evaluator import Assessment, Evaluator
from safeshare.anonymize.models import NoSolutionError
from safeshare.anonymize.problem import Chunking, NodeClasses, Problem, group_rows
from safeshare.anonymize.quality import SEPARABLE

_EPS = 1e-12


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


__all__ = [
    "SEPARABLE",
    "Assessment",
    "Chunking",
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
