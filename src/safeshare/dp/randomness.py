"""Where randomness comes from: a secure source by default, a seeded one on request.

:class:`Randomness` is passed explicitly to everything that draws at random; there
is no global generator.  ``Randomness()`` (or ``Randomness(None)``) is secure: DP
noise is drawn by OpenDP's exact discrete Gaussian sampler from the operating
system's cryptographic source, and other coins by :mod:`secrets`.  A seed (or a
``numpy.random.Generator``) makes a run reproducible but *not* private against
anyone who knows the seed; artifacts then say ``secure_noise: false``.

>>> rand = Randomness(7)
>>> rand.secure, rand.discrete_gaussian(3.0, 4).shape
(False, (4,))

Each mechanism of a run draws from a child stream of its own, so no two replay one stream:

>>> discovery, synthesis = Randomness(7).spawn(2)
>>> bool((discovery.discrete_gaussian(3.0, 8) != synthesis.discrete_gaussian(3.0, 8)).any())
True
"""

from __future__ import annotations

import secrets
from fractions import Fraction
from functools import lru_cache
from typing import Any, TypeAlias

import numpy as np

from safeshare.dp.samplers import sample_discrete_gaussian
from safeshare.errors import BudgetError, InputError, MissingDependencyError

_INT64_LIMIT = 1 << 62


class Randomness:
    """A source of random integers, DP noise and generators for post-processing."""

    def __init__(self, seed: RandomSource = None) -> None:
        if seed is None:
            self._generator: np.random.Generator | None = None
        elif isinstance(seed, Randomness):  # the same source (a child made by spawn)
            self._generator = seed._generator
        elif isinstance(seed, np.random.Generator):
            self._generator = seed
        elif isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            check_seed(int(seed))
            self._generator = np.random.default_rng(int(seed))
        else:
            raise TypeError(
                "seed must be an int, a numpy Generator, a Randomness or None, "
                f"not {type(seed).__name__}"
            )

    @property
    def secure(self) -> bool:
        """True when every draw comes from a cryptographically secure source."""
        return self._generator is None

    def uniform_below(self, n: int) -> int:
        """A uniform integer in ``{0, ..., n-1}`` (exact, any size of ``n``)."""
        if n <= 0:
            raise ValueError("n must be positive")
        if self._generator is None:
            return secrets.randbelow(n)
        if n <= _INT64_LIMIT:
            return int(self._generator.integers(0, n))
        bits = n.bit_length()
        while True:  # rejection from uniform bits, for n beyond int64
            value = int.from_bytes(self._generator.bytes((bits + 7) // 8), "little") >> (-bits % 8)
            if value < n:
                return value

    def discrete_gaussian(self, sigma: float, size: int) -> np.ndarray:
        """``size`` independent draws of the discrete Gaussian of scale ``sigma`` (int64)."""
        if not sigma > 0:
            raise BudgetError(f"noise scale must be positive, got {sigma}")
        if size == 0:
            return np.zeros(0, dtype=np.int64)
        if self._generator is None:
            noise = _opendp_gaussian(float(sigma))([0] * size)
            return np.asarray(noise, dtype=np.int64)
        sigma2 = Fraction(sigma) ** 2
        below = self.uniform_below
        return np.array(
            [sample_discrete_gaussian(sigma2, below) for _ in range(size)], dtype=np.int64
        )

    def spawn(self, count: int) -> list[Randomness]:
        """``count`` independent sources, one for each mechanism of a run: secure when this
        one is, else deterministic children of its seed (never its own stream)."""
        if self._generator is None:
            return [Randomness() for _ in range(count)]
        return [Randomness(child) for child in self._generator.spawn(count)]

    def generator(self) -> np.random.Generator:
        """A fresh numpy Generator for randomness that is not DP noise (sampling rows, splits)."""
        if self._generator is None:
            return np.random.default_rng(secrets.randbits(128))
        return self._generator.spawn(1)[0]


def check_seed(seed: int | None) -> None:
    """Refuse a seed no generator takes (checked before any budget is spent).

    >>> check_seed(-1)
    Traceback (most recent call last):
    ...
    safeshare.errors.InputError: --seed must be a whole number from 0 to 2**63 - 1, got -1
    """
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < 2**63:
        raise InputError(f"--seed must be a whole number from 0 to 2**63 - 1, got {seed!r}")


RandomSource: TypeAlias = int | np.random.Generator | Randomness | None
"""What an estimator's ``rng`` takes: a seed, a Generator, a run's child stream, or None
(secure)."""


@lru_cache(maxsize=64)
def _opendp_gaussian(sigma: float) -> Any:
    try:
        import opendp.prelude as dp
    except ImportError:
        raise MissingDependencyError(
            "secure noise needs OpenDP; install it with `pip install opendp`"
        ) from None
    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T="i64"))
    return dp.m.make_gaussian(domain, dp.l2_distance(T="i64"), scale=sigma)
