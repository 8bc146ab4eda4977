"""Exact samplers on rationals (Canonne, Kamath & Steinke, NeurIPS 2020).

No floating point touches the probabilities: every coin is a comparison of a
uniform integer with a rational, so the output distribution is exactly the
stated one (no floating-point attack in the style of Mironov 2012).  Randomness
comes from a ``uniform_below(n)`` function: the OS's secure source by default,
or a seeded generator when a caller asks for reproducible, non-secure runs.

>>> from fractions import Fraction
>>> import random
>>> below = random.Random(0).randrange
>>> sample_discrete_gaussian(Fraction(4), below) in range(-40, 41)
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

UniformBelow = Callable[[int], int]
"""``uniform_below(n)`` returns an integer uniformly distributed on ``{0, ..., n-1}``."""


def bernoulli(p: Fraction, uniform_below: UniformBelow) -> bool:
    """True with probability exactly ``p`` (0 <= p <= 1)."""
    return uniform_below(p.denominator) < p.numerator


def bernoulli_exp(gamma: Fraction, uniform_below: UniformBelow) -> bool:
    """True with probability exactly ``exp(-gamma)`` (gamma >= 0)."""
    if gamma < 0:
        raise ValueError("gamma must be non-negative")
    whole = math.floor(gamma)
    for _ in range(whole):
        if not _bernoulli_exp_below_one(Fraction(1), uniform_below):
            return False
    return _bernoulli_exp_below_one(gamma - whole, uniform_below)


def _bernoulli_exp_below_one(gamma: Fraction, uniform_below: UniformBelow) -> bool:
    # exp(-gamma) = sum_k (-gamma)^k / k!: count successes of Bernoulli(gamma / k)
    k = 1
    while bernoulli(gamma / k, uniform_below):
        k += 1
    return k % 2 == 1


def sample_discrete_laplace(scale: Fraction, uniform_below: UniformBelow) -> int:
    """An integer Y with P(Y = y) proportional to exp(-|y| / scale)."""
    if scale <= 0:
        raise ValueError("scale must be positive")
    s, t = scale.denominator, scale.numerator  # exp(-|y| * s / t)
    while True:
        u = uniform_below(t)
        if not bernoulli_exp(Fraction(u, t), uniform_below):
            continue
        v = 0
        while bernoulli_exp(Fraction(1), uniform_below):
            v += 1
        y = (u + t * v) // s
        negative = uniform_below(2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def sample_discrete_gaussian(sigma2: Fraction, uniform_below: UniformBelow) -> int:
    """An integer Y with P(Y = y) proportional to exp(-y^2 / (2 sigma2))."""
    if sigma2 <= 0:
        raise ValueError("sigma2 must be positive")
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    while True:
        y = sample_discrete_laplace(Fraction(t), uniform_below)
        bias = abs(y) - sigma2 / t
        if bernoulli_exp(bias * bias / (2 * sigma2), uniform_below):
            return y


def sample_exponential_mechanism(distances: list[Fraction], uniform_below: UniformBelow) -> int:
    """An index i drawn with probability proportional to ``exp(-distances[i])``.

    Rejection sampling: propose i uniformly, accept with probability
    ``exp(-(distances[i] - min(distances)))``; exact for rational distances.
    """
    if not distances:
        raise ValueError("the exponential mechanism needs at least one candidate")
    best = min(distances)
    shifted = [d - best for d in distances]
    while True:
        i = uniform_below(len(shifted))
        if bernoulli_exp(shifted[i], uniform_below):
            return i
