"""A keyed random order of row positions that every engine computes identically.

Splitting records into train and holdout, or picking a sample to evaluate, must
give the same rows whether numpy holds the table or DuckDB/Spark count it from a
file.  A permutation drawn in memory cannot be shipped to an engine cheaply, so
rows are ordered by a keyed bijection of their position instead: ``rank(i)`` is
``((a*i + b) mod p) ** 5 mod p`` with ``p = 2**31 - 1`` (a prime; ``x -> x**5`` is a
bijection of the integers mod ``p`` because 5 does not divide ``p - 1``).  Distinct
rows get distinct ranks, so "the ``n`` rows of smallest rank" is exact and
tie-free, in numpy and in SQL alike.  The key comes from the run's generator.

This is bookkeeping for evaluation, not a privacy mechanism.

>>> import numpy as np
>>> order = RowOrder.draw(np.random.default_rng(0))
>>> ranks = order.ranks(np.arange(10))
>>> len(set(ranks.tolist())), order.smallest(10, 3).tolist() == sorted(np.argsort(ranks)[:3])
(10, True)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from safeshare.errors import InputError

PRIME = 2**31 - 1
MAX_ROWS = PRIME - 1  # positions must stay below p for ranks to be distinct
_SHIFT = 15  # ranks < 2**31: 2**16 histogram buckets of 2**15 ranks each
_BUCKETS = 1 << 16
_CHUNK = 1 << 22


@dataclass(frozen=True)
class RowOrder:
    """The key ``(a, b)`` of the order; ``a`` in ``[1, p)``, ``b`` in ``[0, p)``."""

    a: int
    b: int

    def __post_init__(self) -> None:
        if not (1 <= self.a < PRIME and 0 <= self.b < PRIME):
            raise InputError(f"a row order's key must lie in [1, {PRIME}) x [0, {PRIME})")

    @classmethod
    def draw(cls, rng: np.random.Generator) -> RowOrder:
        """A fresh key from the run's generator."""
        return cls(int(rng.integers(1, PRIME)), int(rng.integers(0, PRIME)))

    def ranks(self, positions: np.ndarray) -> np.ndarray:
        """The rank of each row position (int64; distinct for distinct positions)."""
        positions = np.asarray(positions, dtype=np.int64)
        if positions.size and int(positions.max()) >= MAX_ROWS:
            raise InputError(f"row orders cover tables of up to {MAX_ROWS:,} rows")
        y = (self.a * (positions % PRIME) + self.b) % PRIME  # a, i < 2**31: fits in int64
        y2 = y * y % PRIME
        return y2 * y2 % PRIME * y % PRIME

    def sql(self, position: str) -> str:
        """The same rank as a SQL expression over the BIGINT expression ``position``."""
        y = f"(({self.a} * ({position}) + {self.b}) % {PRIME})"
        return f"(((({y} * {y}) % {PRIME}) * (({y} * {y}) % {PRIME})) % {PRIME} * {y} % {PRIME})"

    def thresholds(self, n_rows: int, counts: Sequence[int]) -> list[int]:
        """For each count ``k``: the largest rank among the ``k`` rows of smallest rank (-1 if 0).

        Exact, in two passes over the positions in chunks (memory stays flat for any
        ``n_rows``): a histogram of the ranks' top bits finds each threshold's bucket,
        then the few ranks inside that bucket are sorted.

        >>> order = RowOrder(3, 1)
        >>> order.thresholds(1000, [0, 5, 1000]) == [-1, int(np.sort(order.ranks(np.arange(1000)))[4]),
        ...                                            int(order.ranks(np.arange(1000)).max())]
        True
        """
        wanted = [min(max(int(k), 0), n_rows) for k in counts]
        histogram = np.zeros(_BUCKETS, dtype=np.int64)
        for ranks in self._chunks(n_rows):
            histogram += np.bincount(ranks >> _SHIFT, minlength=_BUCKETS)
        below = np.concatenate([[0], np.cumsum(histogram)])  # ranks in buckets before b
        buckets = {k: int(np.searchsorted(below, k, side="left")) - 1 for k in wanted if k > 0}
        inside: dict[int, list[np.ndarray]] = {b: [] for b in set(buckets.values())}
        for ranks in self._chunks(n_rows):
            top = ranks >> _SHIFT
            for bucket, found in inside.items():
                found.append(ranks[top == bucket])
        result = []
        for k in wanted:
            if k == 0:
                result.append(-1)
                continue
            bucket = buckets[k]
            members = np.sort(np.concatenate(inside[bucket]))
            result.append(int(members[k - below[bucket] - 1]))
        return result

    def _chunks(self, n_rows: int) -> Iterator[np.ndarray]:
        for start in range(0, n_rows, _CHUNK):
            yield self.ranks(np.arange(start, min(start + _CHUNK, n_rows), dtype=np.int64))

    def smallest(self, n_rows: int, count: int) -> np.ndarray:
        """Positions (sorted) of the ``count`` rows of smallest rank among ``0..n_rows-1``."""
        if count <= 0:
            return np.zeros(0, dtype=np.int64)
        ranks = self.ranks(np.arange(n_rows, dtype=np.int64))
        if count >= n_rows:
            return np.arange(n_rows, dtype=np.int64)
        return np.sort(np.argpartition(ranks, count - 1)[:count]).astype(np.int64)
