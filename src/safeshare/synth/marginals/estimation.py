"""Estimating a graphical model from noisy marginals (the Private-PGM idea).

Given noisy counts ``y_m`` of marginals over attribute sets ``C_m`` with noise
scales ``sigma_m``, find the distribution on the junction tree of the measured
sets whose marginals minimise the weighted squared error

    L(mu) = sum_m 1/2 * || (mu_{C_m} - y_m) / sigma_m ||^2,

subject to the marginals being consistent (one distribution) and non-negative.
Entropic mirror descent on the clique potentials does this: a step moves
``theta_C`` against the gradient of L with respect to ``mu_C``, and belief
propagation maps potentials back to consistent marginals.  The step size follows
a backtracking line search.  Everything here is post-processing of DP
measurements: it costs no budget.

>>> import numpy as np
>>> exact = np.array([[30.0, 10.0], [5.0, 55.0]])
>>> fit = estimate({"a": 2, "b": 2}, [Measurement(("a", "b"), exact, 1.0)], iterations=300)
>>> np.round(fit.model.project(["a", "b"])).tolist()
[[30.0, 10.0], [5.0, 55.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from safeshare.synth.marginals.factor import expand_to, sum_to
from safeshare.synth.marginals.junction_tree import JunctionTree
from safeshare.synth.marginals.model import GraphicalModel

_LINE_SEARCH_STEPS = 30
# cliques above this many cells compute their measured marginals through shared partial sums
_SHARED_SUMS_CELLS = 1 << 16


@dataclass(frozen=True)
class Measurement:
    """Noisy counts of the marginal over ``attrs``, with noise scale ``sigma``.

    ``sigma`` is a scalar or an array of the marginal's shape (cells measured with
    different precision, e.g. after folding rare values together).
    """

    attrs: tuple[str, ...]
    values: np.ndarray
    sigma: float | np.ndarray

    @property
    def weight(self) -> float | np.ndarray:
        return 1.0 / np.square(self.sigma)


@dataclass(frozen=True)
class Estimate:
    """A fitted model, its final loss, the iterations run and the last step size."""

    model: GraphicalModel
    loss: float
    iterations: int
    step: float


def estimate_total(measurements: Sequence[Measurement]) -> float:
    """The number of records, from the measurements' sums (inverse-variance weighted)."""
    estimates, weights = [], []
    for m in measurements:
        variance = float(np.sum(np.broadcast_to(np.square(m.sigma), m.values.shape)))
        estimates.append(float(m.values.sum()))
        weights.append(1.0 / variance)
    total = float(np.dot(estimates, weights) / np.sum(weights))
    return max(total, 1.0)


def estimate(
    sizes: Mapping[str, int],
    measurements: Sequence[Measurement],
    *,
    total: float | None = None,
    iterations: int = 1000,
    cliques: Sequence[Sequence[str]] = (),
    zeros: Sequence[tuple[tuple[str, ...], np.ndarray]] = (),
    warm_start: Estimate | None = None,
    tolerance: float = 1e-7,
    target_loss: float | None = None,
    min_iterations: int = 0,
    progress: Callable[[int, float], None] | None = None,
) -> Estimate:
    """Fit a graphical model to the measurements by mirror descent.

    ``cliques`` adds attribute sets the model must be able to represent beyond
    the measured ones.  ``zeros`` are structural zeros: ``(attrs, allowed)`` with
    a boolean array over ``attrs``; forbidden cells get probability exactly zero.
    ``warm_start`` reuses a previous fit's potentials (where its cliques fit) and
    step size.  Stops early when the relative loss change falls below
    ``tolerance`` over 25 iterations, or, with ``target_loss``, once the loss is at
    most ``target_loss`` after at least ``min_iterations`` (fitting noisy marginals
    closer than their noise only fits the noise; see :func:`noise_loss`).
    """
    if not measurements:
        raise ValueError("estimation needs at least one measurement")
    attrs = list(sizes)
    tree = JunctionTree.build(
        attrs,
        sizes,
        [m.attrs for m in measurements] + [tuple(c) for c in cliques] + [z[0] for z in zeros],
    )
    n = total if total is not None else estimate_total(measurements)
    potentials = _initial_potentials(tree, sizes, warm_start.model if warm_start else None)
    for zero_attrs, allowed in zeros:
        i = tree.clique_containing(zero_attrs)
        if i is None:  # unreachable: the tree was built to hold them
            raise ValueError(f"no clique holds the constrained attributes {zero_attrs}")
        mask = expand_to(np.asarray(allowed, dtype=bool), zero_attrs, tree.cliques[i])
        potentials[i] = np.where(mask, potentials[i], -np.inf)
    model = GraphicalModel(tree, sizes, potentials, n)
    placed = [(m, _clique_of(tree, m), _first_axis(tree, m, sizes)) for m in measurements]

    def loss_and_gradient(marginals: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        loss = 0.0
        gradient = [np.zeros_like(mu) for mu in marginals]
        # in a large clique, measurements that drop the same largest axis share its sum (and
        # their gradients meet on that smaller array before one pass over the clique)
        partial: dict[tuple[int, str], tuple[np.ndarray, np.ndarray, tuple[str, ...]]] = {}
        for m, c, axis in placed:
            clique = tree.cliques[c]
            if axis is None:
                source, grad, attrs = marginals[c], gradient[c], clique
            else:
                if (c, axis) not in partial:
                    summed = marginals[c].sum(axis=clique.index(axis))
                    rest = tuple(a for a in clique if a != axis)
                    partial[(c, axis)] = (summed, np.zeros_like(summed), rest)
                source, grad, attrs = partial[(c, axis)]
            diff = sum_to(source, attrs, m.attrs) - m.values
            weighted = m.weight * diff
            loss += 0.5 * float(np.sum(weighted * diff))
            grad += expand_to(weighted, m.attrs, attrs)
        for (c, _), (_, grad, attrs) in partial.items():
            gradient[c] += expand_to(grad, attrs, tree.cliques[c])
        return loss, gradient

    marginals = model.marginals()
    loss, gradient = loss_and_gradient(marginals)
    step = (
        warm_start.step
        if warm_start is not None
        else 1.0 / (n * max(float(np.max(m.weight)) for m in measurements))
    )
    history = [loss]
    iteration = 0
    for iteration in range(1, iterations + 1):
        step *= 2.0
        for _ in range(_LINE_SEARCH_STEPS):
            potentials = [t - step * g for t, g in zip(model.log_potentials, gradient, strict=True)]
            candidate = model.with_potentials(potentials)
            new_marginals = candidate.marginals()
            new_loss, new_gradient = loss_and_gradient(new_marginals)
            predicted = sum(
                float(np.sum(g * (old - new)))
                for g, old, new in zip(gradient, marginals, new_marginals, strict=True)
            )
            if loss - new_loss >= 0.5 * predicted:
                break
            step *= 0.5
        else:
            break  # no step decreases the loss: at a minimum (to float precision)
        model, marginals, loss, gradient = candidate, new_marginals, new_loss, new_gradient
        history.append(loss)
        if progress is not None:
            progress(iteration, loss)
        if target_loss is not None and iteration >= min_iterations and loss <= target_loss:
            break  # as close to the measurements as the true marginals: further fits the noise
        if len(history) > 25 and history[-26] - loss <= tolerance * max(abs(loss), 1.0):
            break
    return Estimate(model, loss, iteration, step)


def noise_loss(measurements: Sequence[Measurement]) -> float:
    """The expected loss at the true marginals: 1/2 per measured cell (its noise, squared, in sigmas).

    >>> noise_loss([Measurement(("a",), np.zeros(4), 2.0)])
    2.0
    """
    return 0.5 * sum(m.values.size for m in measurements)


def _clique_of(tree: JunctionTree, m: Measurement) -> int:
    index = tree.clique_containing(m.attrs)
    if index is None:
        raise ValueError(f"no clique holds the measured attributes {m.attrs}")
    return index


def _first_axis(tree: JunctionTree, m: Measurement, sizes: Mapping[str, int]) -> str | None:
    """The largest axis of a large clique that ``m`` sums out (None: sum directly)."""
    clique = tree.cliques[_clique_of(tree, m)]
    dropped = [a for a in clique if a not in m.attrs]
    if not dropped or int(np.prod([sizes[a] for a in clique])) < _SHARED_SUMS_CELLS:
        return None
    return max(dropped, key=lambda a: sizes[a])


def _initial_potentials(
    tree: JunctionTree, sizes: Mapping[str, int], warm_start: GraphicalModel | None
) -> list[np.ndarray]:
    potentials = [np.zeros(tuple(sizes[a] for a in c)) for c in tree.cliques]
    if warm_start is None:
        return potentials
    for old_clique, old in zip(warm_start.tree.cliques, warm_start.log_potentials, strict=True):
        i = tree.clique_containing(old_clique)
        if i is not None:  # each old potential goes to one new clique, so none counts twice
            potentials[i] = potentials[i] + expand_to(old, old_clique, tree.cliques[i])
    return potentials
