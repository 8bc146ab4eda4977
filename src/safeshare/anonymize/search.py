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
2. **Settling**: every node whose bound is under the cutoff must be either ruled out or
   scored.  A check rules out a whole cone below the node checked: if it violates the models,
   every node below does; and its suppressed count (under the models that stay monotone with
   suppression, plus the share of each class that the others force out however it splits:
   t-closeness's, by the convexity of the distance) bounds that of every node below, which
   may put them all over the cutoff or over the suppression limit.
   The higher the node checked, the larger its cone, but the likelier it satisfies the
   models.  So, taking the unsettled nodes highest bound first, a *guide* (a model of the
   suppressed count learnt from the checks so far, :mod:`safeshare.anonymize.guide`) walks a
   path upwards through untagged nodes and the highest node on it that it expects to violate
   is checked; if that does not settle the start, nodes lower on the path are, each step
   twice the last, down to the start itself.  Each check tags whole cones with one slice
   assignment on an array of the lattice's shape: a satisfying node's successors satisfy, a
   violating node's predecessors violate.
3. **Optimum**: the candidates left are scored in order of their bounds, stopping at the
   first bound above the best score.  Without suppression every model and quality model is
   monotone, so only the minimal satisfying nodes are candidates.

The result is exact: a node is skipped only when a check proves it violates the models or
costs more than a node already found (tests compare it with exhaustive enumeration).  The
guide only orders the checks: a poor guess costs checks, never the optimum.

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
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from safeshare.anonymize.evaluator import Assessment, Evaluator
from safeshare.anonymize.grouping import group_rows
from safeshare.anonymize.guide import SuppressionGuide
from safeshare.anonymize.models import DeltaPresence, KAnonymity, NoSolutionError
from safeshare.anonymize.problem import Chunking, NodeClasses, Problem
from safeshare.anonymize.quality import SEPARABLE

_EPS = 1e-12
_BLOCK = 64  # nodes scanned at once for the next one to settle
_SORTED_AT_ONCE = 4096  # nodes put in order at once (the rest wait for the checks to settle them)


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
    bound: float | None = None  # a proven lower bound of the optimum; None: score is optimal

    @property
    def gap(self) -> float:
        """How far the score may lie above the optimum (0 when it is the optimum)."""
        return 0.0 if self.bound is None else max(self.score - self.bound, 0.0)


def lower_bounds(problem: Problem, metric: str) -> np.ndarray:
    """Per node (in lattice order), a lower bound of ``metric`` (exact for separable ones)."""
    bounds = problem.quality.bounds(metric)
    lattice = problem.lattice
    if bounds is None:
        return np.zeros(lattice.size)
    importance = problem.quality.importance
    total = np.zeros(1)
    for c in reversed(range(len(bounds))):  # (the outer sum of the columns' shares, from the
        # last column: each step adds one share to the whole sum so far, a long contiguous run,
        # where from the first column each run would be as short as the column added)
        share = importance[c] * bounds[c][lattice.lo[c] : lattice.hi[c] + 1]
        total = np.add.outer(share, total).reshape(-1)
    # to 12 decimals (a change under the search's tolerance): bounds that are equal but for
    # the order of their sum's terms become equal, so the lowest index comes first among them
    np.multiply(total, 1e12, out=total)
    np.rint(total, out=total)
    return np.divide(total, 1e12, out=total)


def _about_the_largest(values: np.ndarray, mask: np.ndarray, wanted: int) -> float:
    """A value that about ``wanted`` of the ``values`` in ``mask`` (more than ``wanted``) are
    at least, and one of them: exactly the ``wanted``-th largest on small lattices; on large
    ones the 32nd largest of a sample drawn at ``32 * size / wanted`` positions
    ``i * P mod size``, for a large prime ``P`` (positions that follow no lattice's order)."""
    size = values.size
    sample_size = 32 * size // wanted
    if sample_size >= size:
        return float(-np.partition(-values[mask], wanted - 1)[wanted - 1])
    positions = np.arange(sample_size, dtype=np.int64) * 2_654_435_761 % size
    chosen = values[positions[mask[positions]]]
    if chosen.size <= 32:  # (unlikely: over 32 of those in the mask are drawn on average)
        return float(chosen.min()) if chosen.size else -math.inf
    return float(-np.partition(-chosen, 31)[31])


def optimal_search(problem: Problem, metric: str = "precision") -> SearchResult:
    """The node of minimal ``metric`` among those satisfying every model within the limit."""
    return _Search(problem, metric).run()


class _Search:
    """One optimal search: per node of the lattice, what the checks so far prove about it."""

    def __init__(self, problem: Problem, metric: str) -> None:
        self.problem, self.metric = problem, metric
        self.evaluator = evaluator = Evaluator(problem)
        self.lattice = lattice = problem.lattice
        self.bounds = lower_bounds(problem, metric)
        self.state = np.zeros(lattice.size, dtype=np.int8)  # 1: satisfies the monotone models
        self.grid = self.state.reshape(lattice.shape)  # -1: violates them; 0: not known
        # suppression under the monotone models never grows upwards: a checked node's count
        # is a lower bound for every node below it, which raises precision's bound there
        self.at_least = np.zeros(lattice.size, dtype=np.int64)
        self.floor = self.at_least.reshape(lattice.shape)
        self.uses_floor = metric == "precision" and evaluator.suppression_monotone
        self.assessed: dict[int, Assessment] = {}
        self.checked = np.zeros(lattice.size, dtype=bool)
        self.n = max(problem.n, 1)
        self.limit = limit = problem.max_suppressed
        # with a separable model a satisfying node costs at most its bound + the suppressed share
        self.slack = limit / self.n if metric in ("precision", "loss", "ncp") else math.inf
        self.cutoff = math.inf  # no optimum lies above this bound
        self.guide = SuppressionGuide(lattice.lo, lattice.hi, limit)

    def run(self) -> SearchResult:
        self._descend()
        if not self.evaluator.fully_monotone:
            self._incumbent()
        self._settle()
        return self._optimum()

    # ---- checks -------------------------------------------------------------------------

    def _check(self, index: int, complete: bool) -> Assessment:
        """Assess node ``index`` and tag what it proves: cones, floors, the cutoff
        (``complete``: judge the models that are not monotone too, else only those that are)."""
        lattice = self.lattice
        node = lattice.node(index)
        assessment = self.evaluator.assess(node, complete=complete)
        self.assessed[index] = assessment
        self.checked[index] = True
        suppressed = assessment.suppressed_monotone
        if assessment.feasible_monotone:
            self.grid[lattice.above(node)] = 1
            # (what it suppresses, every node below suppresses too; below a node that violates
            # the models all do)
            below = assessment.suppressed_below
            suppressed = max(suppressed, below)
            if below:
                cone = self.floor[lattice.below(node)]
                np.maximum(cone, below, out=cone)
            if below > self.limit:  # (every node below suppresses too many)
                self.grid[lattice.below(node)] = -1
            if self.evaluator.fully_monotone:
                self.cutoff = min(self.cutoff, float(self.bounds[index]) + self.slack)
            self._lower_cutoff(index, assessment)
        else:
            self.grid[lattice.below(node)] = -1
        self.guide.learn(
            node, suppressed, assessment.feasible_monotone and suppressed <= self.limit
        )
        return assessment

    def _lower_cutoff(self, index: int, assessment: Assessment) -> None:
        if assessment.feasible and self.metric == "precision":  # its score, exactly
            bound = float(self.bounds[index])
            self.cutoff = min(self.cutoff, bound + assessment.suppressed * (1 - bound) / self.n)

    def _get(self, index: int, complete: bool = False) -> Assessment:
        """Node ``index``'s assessment (checked once; ``complete``: with every model judged,
        which the settling does not need: it rules nodes out by the monotone models)."""
        assessment = self.assessed.get(index)
        if assessment is None:
            return self._check(index, complete)
        if complete and not assessment.complete:
            assessment = self.evaluator.judge(assessment.groups)
            self.assessed[index] = assessment
            self._lower_cutoff(index, assessment)
        return assessment

    def _reach(self, index: int, suppressed: int | None = None) -> float:
        """The lowest score node ``index`` can have (``suppressed``: a count known above it)."""
        bound = float(self.bounds[index])
        if not self.uses_floor:
            return bound
        count = int(self.at_least[index]) if suppressed is None else suppressed
        return bound + count * (1 - bound) / self.n

    def _covers(self, start: int, index: int) -> bool:
        """Whether checking ``index`` (above ``start``) settles ``start``."""
        assessment = self._get(index)
        if not assessment.feasible_monotone or assessment.suppressed_below > self.limit:
            return True
        return self.uses_floor and self._reach(start, assessment.suppressed_below) > (
            self.cutoff + _EPS
        )

    # ---- phases -------------------------------------------------------------------------

    def _descend(self) -> None:
        """From the top, step down along satisfying nodes, lowest bound first.

        This finds a good solution at once (a low cutoff), and the violating predecessors met on
        the way sit just below the frontier, so their cones of violating nodes are large.
        """
        lattice, bounds = self.lattice, self.bounds
        current = lattice.size - 1
        moving = self._get(current).feasible_monotone
        while moving:
            moving = False
            options = lattice.predecessors_of(current, lattice.node(current))
            for option in sorted(options, key=lambda o: (bounds[o], o)):
                if self.state[option] >= 0 and self._get(option).feasible_monotone:
                    current, moving = option, True
                    break

    def _incumbent(self) -> None:
        """With models that are not monotone, a descent from the top along nodes that satisfy
        every model, to the predecessor that scores lowest: its score is a cutoff before the
        settling starts (the monotone descent's nodes may break the other models)."""
        lattice, bounds, evaluator = self.lattice, self.bounds, self.evaluator
        current = lattice.size - 1
        top = self._get(current, complete=True)
        if not top.feasible:
            return
        score = evaluator.score(top, self.metric)
        while True:
            options = lattice.predecessors_of(current, lattice.node(current))
            best, best_score = -1, score
            for option in options:
                if self.state[option] < 0 or bounds[option] >= best_score - _EPS:
                    continue
                assessment = self._get(option, complete=True)
                if assessment.feasible:
                    value = evaluator.score(assessment, self.metric)
                    if value < best_score - _EPS:
                        best, best_score = option, value
            if best < 0:
                break
            current, score = best, best_score
        self.cutoff = min(self.cutoff, score)

    def _settle(self) -> None:
        """Settle every node whose bound is under the cutoff, highest bound first.

        A node is settled by a check above it that violates the models (or that suppresses so
        many records that every node below it costs more than the cutoff); the higher that
        node, the larger the cone it settles.  From each unsettled node the guide picks the
        highest node on a path upwards that it expects to violate, and checks it; if it does
        not settle the start, nodes lower on the path are tried, each step twice the last.
        """
        for order in self._highest_first():
            self._settle_in_order(order)

    def _highest_first(self) -> Iterator[np.ndarray]:
        """The open nodes under the cutoff by bound, highest first and ties lowest index first,
        in slices of about :data:`_SORTED_AT_ONCE`: each slice is found and sorted once the
        checks before it have settled what they can, so the nodes they settle are never sorted
        (on a lattice of 400,000 nodes a few dozen checks settle nearly all).  A slice holds
        every node tied with its last; finding one costs a few passes over lattice-wide masks,
        never an array of all open nodes."""
        bounds = self.bounds
        ceiling = math.inf  # (the bounds of every slice so far are at least this)
        while True:
            open_ = (self.state == 0) & ~self.checked & (bounds <= self.cutoff + _EPS)
            if ceiling < math.inf:
                open_ &= bounds < ceiling
            count = int(np.count_nonzero(open_))
            if count == 0:
                return
            if count > _SORTED_AT_ONCE:
                ceiling = _about_the_largest(bounds, open_, _SORTED_AT_ONCE)
                open_ &= bounds >= ceiling
            nodes = np.flatnonzero(open_)
            yield nodes[np.argsort(-bounds[nodes], kind="stable")]
            if count <= _SORTED_AT_ONCE:
                return

    def _settle_in_order(self, order: np.ndarray) -> None:
        """Settle the nodes of ``order`` that are still open, in order."""
        bounds, state, checked = self.bounds, self.state, self.checked
        position = 0
        width = _BLOCK
        while position < len(order):  # in blocks, wider while they hold nothing to settle
            block = order[position : position + width]
            position += width
            reach = bounds[block]
            if self.uses_floor:
                reach = reach + self.at_least[block] * (1 - reach) / self.n
            starts = block[
                (state[block] == 0)
                & ~checked[block]
                & (reach <= self.cutoff + _EPS)
                & (self.at_least[block] <= self.limit)
            ]
            width = _BLOCK if len(starts) else 2 * width
            for start in starts.tolist():
                if (
                    state[start] == 0
                    and not checked[start]
                    and self.at_least[start] <= self.limit
                    and self._reach(start) <= (self.cutoff + _EPS)
                ):
                    self._settle_from(start)

    def _settle_from(self, start: int) -> None:
        """Check the highest node on the guide's path that it expects to violate; while that
        does not settle ``start``, check nodes lower on the path, each step twice the last."""
        path, top = self._path(start)
        step = 1
        while not self._covers(start, path[top]) and top > 0:
            top, step = max(top - step, 0), 2 * step

    def _path(self, start: int) -> tuple[list[int], int]:
        """A path up from ``start`` through untagged nodes, each step the one the guide expects
        to shrink suppression least, and the position of the last node on it that the guide
        expects to violate the models (0: none)."""
        lattice, state, guide = self.lattice, self.state, self.guide
        columns = list(enumerate(lattice.strides))[::-1]  # (ties: the last column)
        node = list(lattice.node(start))
        guess = guide.guess(node)
        path, top = [start], 0
        index = start
        while True:
            rises = guide.rises(node)
            step, best = -1, -math.inf
            for c, stride in columns:
                if rises[c] > best and state[index + stride] == 0:
                    step, best = c, rises[c]
            if step < 0:
                return path, top
            index += lattice.strides[step]
            node[step] += 1
            guess += best
            if guess <= guide.threshold:  # (expected to satisfy them from here on)
                return path, top
            path.append(index)
            top = len(path) - 1

    def _optimum(self) -> SearchResult:
        """Score the candidates left in order of their bounds, up to the first bound above the
        best score.  Without suppression every model and quality model is monotone, so only the
        minimal satisfying nodes are candidates."""
        problem, evaluator, lattice = self.problem, self.evaluator, self.lattice
        bounds, state, n = self.bounds, self.state, self.n
        satisfying = state > 0
        if not satisfying.any() and not any(a.feasible for a in self.assessed.values()):
            raise no_solution(problem, evaluator)
        order = np.flatnonzero((state >= 0) & (bounds <= self.cutoff + _EPS))
        at_least = self.at_least[order]
        reachable = bounds[order]
        if self.uses_floor:
            reachable = reachable + at_least * (1 - reachable) / n
        kept = (reachable <= self.cutoff + _EPS) & (at_least <= self.limit)
        order, reachable = order[kept], reachable[kept]
        if evaluator.fully_monotone and problem.max_suppressed == 0:
            kept = satisfying[order] & ~lattice.has_lower_in(order, satisfying)
            order, reachable = order[kept], reachable[kept]
        sort = np.lexsort((order, reachable))
        order, reachable = order[sort], reachable[sort]
        best, best_node, best_suppressed = math.inf, None, 0
        ties: list[tuple[int, ...]] = []
        for candidate, reach in zip(order.tolist(), reachable.tolist(), strict=True):
            if reach > best + _EPS:
                break
            if candidate not in self.assessed and (
                state[candidate] < 0 or self._reach(candidate) > best + _EPS
            ):
                continue
            assessment = self._get(candidate, complete=True)
            if not assessment.feasible:
                continue
            score = evaluator.score(assessment, self.metric)
            if score < best - _EPS:
                best, best_node, best_suppressed, ties = (
                    score,
                    assessment.node,
                    assessment.suppressed,
                    [],
                )
            elif abs(score - best) <= _EPS:
                ties.append(assessment.node)
        if best_node is None:
            raise no_solution(problem, evaluator)
        return SearchResult(
            best_node,
            best,
            best_suppressed,
            self.metric,
            tuple(ties),
            evaluator.checked,
            lattice.size,
        )


def exhaustive_search(problem: Problem, metric: str = "precision") -> SearchResult:
    """Every node assessed and scored: the reference the optimal search is tested against."""
    evaluator = Evaluator(problem)
    lattice = problem.lattice
    best, best_node, best_suppressed = math.inf, None, 0
    ties: list[tuple[int, ...]] = []
    for index in range(lattice.size):
        assessment = evaluator.assess(lattice.node(index))
        if not assessment.feasible:
            continue
        score, node = evaluator.score(assessment, metric), assessment.node
        if score < best - _EPS:
            best, best_node, best_suppressed, ties = score, node, assessment.suppressed, []
        elif abs(score - best) <= _EPS:
            ties.append(node)
    if best_node is None:
        raise no_solution(problem, evaluator)
    return SearchResult(
        best_node, best, best_suppressed, metric, tuple(ties), evaluator.checked, lattice.size, True
    )


def best_achievable_k(problem: Problem, evaluator: Evaluator | None = None) -> int:
    """The largest smallest-class size reachable at the lattice's top within the limit."""
    evaluator = evaluator or Evaluator(problem, dense=False)
    sizes = np.sort(evaluator.classes(problem.lattice.top).classes.sizes)
    dropped = np.cumsum(sizes)
    allowed = int(np.searchsorted(dropped, problem.max_suppressed, side="right"))
    return int(sizes[allowed]) if allowed < len(sizes) else int(sizes[-1]) if len(sizes) else 0


def no_solution(problem: Problem, evaluator: Evaluator) -> NoSolutionError:
    """The error for a problem no transformation solves, with the best reachable k."""
    best_k = best_achievable_k(problem, evaluator)
    limit = problem.max_suppressed
    presence = [m for m in problem.models if isinstance(m, DeltaPresence)]
    if presence and problem.population is not None:
        people = int(problem.population[1].sum())
        if problem.n - limit > presence[0].delta_max * people:
            return NoSolutionError(
                f"delta-presence with delta_max={presence[0].delta_max:g} lets the data hold at most "
                f"{presence[0].delta_max * people:,.0f} of the population's {people:,} people, "
                f"but the data hold {problem.n:,} records and at most {limit:,} may be "
                f"suppressed; raise delta_max to at least {(problem.n - limit) / people:.3g}, "
                "allow more suppression or release a smaller sample",
                best_k=best_k,
            )
    asked = f"no transformation satisfies {', '.join(m.describe() for m in problem.models)}"
    within = f"with at most {limit} suppressed record(s) ({problem.suppression_limit:.2%})"
    capped = problem.lattice.top != tuple(h.height for h in problem.hierarchies)
    higher = "higher levels (a max_level lowers the top), " if capped else ""
    ks = [m.k for m in problem.models if isinstance(m, KAnonymity)]
    others = [m.describe() for m in problem.models if not isinstance(m, KAnonymity)]
    if others and (not ks or best_k >= max(ks)):  # (k is met: the other models are what fails)
        reached = f"k={max(ks)} alone is reachable (up to k={best_k}), so " if ks else ""
        return NoSolutionError(
            f"{asked} {within}: {reached}{', '.join(others)} cannot be met within that limit "
            f"at the levels allowed. Allow {higher}more suppression, or weaker models",
            best_k=best_k,
        )
    return NoSolutionError(
        f"{asked} {within}; the best achievable k within that limit is {best_k}. Allow higher "
        "levels, more suppression, or weaker models",
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
