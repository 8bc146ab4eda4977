"""Tabular PE as a release synthesizer: what the release pipeline needs beyond the estimator.

:class:`TabularPE` is :class:`~safeshare.synth.pe.evolution.PrivateEvolution` over a Table's
public Domain (``DomainAPI`` proposes and varies codes, ``TabularEmbedder`` embeds them)
with the habits of the other synthesizers: a DP default size (:meth:`default_rows`), and a
:meth:`describe` for the privacy card that states the Gaussian-DP accounting, what was
public and what was private, and, plainly, how PE's tabular quality compares with AIM's.

>>> from safeshare.data import Table
>>> from safeshare.data.examples import load_example
>>> frame, schema = load_example("fair")
>>> table, _ = Table.from_frame(frame, schema.domain())
>>> model = TabularPE(rho=0.5, delta=1e-9, iterations=3, samples_per_iteration=100, rng=0)
>>> round(model.noise_scale(), 3), len(model.privacy_events(table.domain))
(1.732, 3)
>>> synthetic = model.fit(table).sample(model.default_rows())
>>> synthetic.columns == table.columns, model.describe()["accountant"].startswith("Gaussian DP")
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import pandas as pd

from safeshare._progress import Progress
from safeshare.data.table import CodedTable, Table
from safeshare.dp.randomness import RandomSource
from safeshare.errors import InputError, NotFittedError
from safeshare.synth.pe.evolution import PrivateEvolution
from safeshare.synth.pe.histogram import Selection
from safeshare.synth.pe.neighbors import Search

# Measured by benchmarks/pe_adult.py (adult-pgm, epsilon=1, delta=1e-9, 3 runs each): the mean
# TVD over all 364 3-way marginals.  Stated next to every tabular PE release's figures.
QUALITY_WARNING = (
    "Private Evolution's tabular quality is far below AIM's and MST's: on adult-pgm at epsilon=1 "
    "its mean 3-way TVD is 0.52, against 0.08 for AIM (benchmarks/pe_adult.py). Prefer --method "
    "aim (or mst) for tables; PE is meant for data a foundation model can generate (text)"
)
DEFAULT_ITERATIONS = 10
DEFAULT_SAMPLES = 1000
DEFAULT_DEGREE = 0.15  # the setting benchmarks/pe_adult.py measured


class TabularPE(PrivateEvolution):
    """PE over the Domain of the Table it is fitted on; a share ``rho`` of a release's budget.

    ``delta`` is the release's delta, used only to state the exact (epsilon, delta) of the
    histograms by Gaussian DP in :meth:`describe`.  ``checkpoint``: a folder to resume from.
    """

    def __init__(
        self,
        *,
        rho: float,
        delta: float = 1e-9,
        iterations: int = DEFAULT_ITERATIONS,
        samples_per_iteration: int | Sequence[int] = DEFAULT_SAMPLES,
        variation_degrees: float | Sequence[float] | None = DEFAULT_DEGREE,
        lookahead: int = 0,
        neighbour_search: Search = "auto",
        selection: Selection = "sample",
        offspring: int | None = None,
        checkpoint: str | Path | None = None,
        rng: RandomSource = None,
        progress: Progress | None = None,
    ) -> None:
        super().__init__(
            epsilon=None,
            delta=delta,
            rho=rho,
            iterations=iterations,
            samples_per_iteration=samples_per_iteration,
            variation_degrees=variation_degrees,
            lookahead=lookahead,
            neighbour_search=neighbour_search,
            selection=selection,
            offspring=offspring,
            checkpoint=checkpoint,
            rng=rng,
            progress=progress,
        )

    def fit(self, data: CodedTable | pd.DataFrame) -> Self:
        """Evolve against a Table of codes (tabular PE needs the Domain)."""
        if not isinstance(data, Table):
            raise InputError(
                "tabular PE reads the table into memory; run it with --engine numpy (got a "
                f"{type(data).__name__})"
            )
        return super().fit(data)

    def default_rows(self) -> int:
        """The record count read off the last noisy votes (DP post-processing)."""
        if not self.fitted_:
            raise NotFittedError("TabularPE is not fitted yet; call fit(table) first")
        votes = float(self.population_.weights().sum())
        return max(1, round(votes / math.sqrt(self.neighbours)))

    def describe(self) -> dict[str, Any]:
        """The card's model entry: parameters, accounting, public and private, the warning."""
        out = super().describe()
        out.update(
            {
                "method": "private evolution (tabular)",
                "accountant": "Gaussian DP: T histograms of L2 sensitivity 1 and noise sigma are "
                "mu-GDP with mu = sqrt(T)/sigma, converted exactly to (epsilon, delta) (Dong, Roth "
                "& Su 2022); in the release's budget as T zCDP Gaussian events (rho = mu^2/2)",
                "variation_degrees": self.degrees(),
                "public": [
                    "the domain (categories and bins of every column): the random API draws "
                    "uniform codes from it and the variation API re-draws or copies a few columns",
                    "the embedding of codes (one-hot for categories, bin position for ordered "
                    "columns)",
                ],
                "private": [
                    "the training records, only through the T noisy nearest-neighbour histograms"
                ],
                "quality_warning": QUALITY_WARNING,
                "notes": [QUALITY_WARNING],
                "warnings": [QUALITY_WARNING],
            }
        )
        return out
