"""Folding rare values together before modelling (MST's domain compression).

After the 1-way marginals are measured, values whose noisy count is below three
noise deviations are indistinguishable from absent ones; they are folded into one
code per column.  This is post-processing of the noisy counts: it costs nothing,
and it shrinks the 2-way marginals to measure.

>>> import numpy as np
>>> fold = Compression.from_noisy_counts({"a": np.array([50, 1, 80, -2])}, sigma=5.0)
>>> fold.sizes, fold.forward["a"].tolist()
({'a': 3}, [0, 2, 1, 2])
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np

from safeshare.data.domain import Domain
from safeshare.data.table import CodedTable, Table
from safeshare.synth.marginals.estimation import Measurement
from safeshare.synth.marginals.sampling import similarity_rank, spread_slots

_KEEP_SIGMAS = 3.0


@dataclass(frozen=True)
class Compression:
    """Per column: original code -> compressed code, which codes were folded, and their weights.

    ``weights`` are the folded values' noisy counts clipped at zero: a folded code
    decodes to one of its values in proportion to them (uniformly if all are zero).
    """

    forward: dict[str, np.ndarray]
    folded: dict[str, np.ndarray]
    weights: dict[str, np.ndarray]

    @classmethod
    def from_noisy_counts(
        cls, noisy: Mapping[str, np.ndarray], sigma: float, exempt: Collection[str] = ()
    ) -> Compression:
        """Fold, per column, the values whose noisy count is below 3 sigma (not in ``exempt``)."""
        forward, folded, weights = {}, {}, {}
        for name, counts in noisy.items():
            keep = (
                counts >= _KEEP_SIGMAS * sigma if name not in exempt else np.ones(counts.size, bool)
            )
            mapping = np.full(counts.size, int(keep.sum()), dtype=np.int64)
            mapping[keep] = np.arange(int(keep.sum()))
            forward[name] = mapping
            folded[name] = np.flatnonzero(~keep)
            weights[name] = np.maximum(counts[~keep], 0).astype(float)
        return cls(forward, folded, weights)

    @property
    def sizes(self) -> dict[str, int]:
        return {n: int(m.max()) + 1 if m.size else 1 for n, m in self.forward.items()}

    def measurement(self, name: str, noisy: np.ndarray, sigma: float) -> Measurement:
        """The 1-way measurement re-expressed on the compressed codes.

        The folded cell is the sum of the folded noisy counts, whose noise has
        variance ``k * sigma**2`` for ``k`` folded values.
        """
        size = self.sizes[name]
        values = np.zeros(size)
        np.add.at(values, self.forward[name], noisy.astype(float))
        scale = np.full(size, float(sigma))
        if self.folded[name].size:
            scale[-1] = sigma * np.sqrt(self.folded[name].size)
        return Measurement((name,), values, scale)

    def apply(self, name: str, codes: np.ndarray) -> np.ndarray:
        return self.forward[name][codes]

    def apply_table(self, table: CodedTable) -> CodedTable:
        """The table on compressed codes (a plain integer-coded domain), where the table lives."""
        domain = Domain.from_sizes({c: self.sizes[c] for c in table.columns})
        return table.recode(self.forward, domain)

    def invert_table(
        self, codes: Mapping[str, np.ndarray], domain: Domain, rng: np.random.Generator
    ) -> Table:
        """A table on the original ``domain`` from compressed codes (see :meth:`invert`).

        Records are lined up by all their codes (columns in random order), so records alike
        get their folded values spread over the folded values' distribution.
        """
        names = domain.names
        n = len(codes[names[0]]) if names else 0
        shuffled = [names[i] for i in rng.permutation(len(names))]
        line = similarity_rank({c: codes[c] for c in shuffled}, n, rng)
        return Table({c: self.invert(c, codes[c], rng, line) for c in names}, domain)

    def invert(
        self,
        name: str,
        codes: np.ndarray,
        rng: np.random.Generator,
        line: np.ndarray | None = None,
    ) -> np.ndarray:
        """Original codes; a folded code becomes one of its values, in proportion to ``weights``.

        The records holding the folded code get the folded values systematically (each value
        ``floor`` or ``ceil`` of its share), dealt along ``line`` (a similarity rank of the
        records; random order when None) from a random start, so each record's value
        follows the weights whatever its place.
        """
        folded = self.folded[name]
        kept = np.setdiff1d(
            np.arange(self.forward[name].size), folded
        )  # compressed code i <-> kept[i]
        if folded.size == 0:
            return kept[codes]
        originals = np.empty(codes.size, dtype=np.int64)
        is_folded = codes == kept.size
        originals[~is_folded] = kept[codes[~is_folded]]
        weights = self.weights[name]
        if weights.sum() <= 0:
            weights = np.ones(folded.size)
        cdf = np.cumsum(weights / weights.sum())
        cdf[-1] = 1.0
        holders = np.flatnonzero(is_folded)
        rank = line[holders] if line is not None else rng.permutation(holders.size)
        holders = holders[np.argsort(rank, kind="stable")]
        m = holders.size
        slots = spread_slots(np.zeros(m, dtype=np.int64), np.zeros(1, dtype=np.int64))
        picks = np.searchsorted(cdf, np.mod(slots / m + rng.random(), 1.0), side="right")
        originals[holders] = folded[np.minimum(picks, folded.size - 1)]
        return originals
