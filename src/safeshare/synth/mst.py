"""MST: DP synthetic data from a maximum spanning tree of 2-way marginals.

McKenna, Sheldon & Miklau, "Winning the NIST Contest: A scalable and general
approach to differentially private synthetic data" (JPC 2021).  The zCDP budget
is split in three equal parts:

1. measure every 1-way marginal with discrete Gaussian noise, and fold values
   whose noisy count is below 3 sigma into one code per column;
2. choose a spanning tree of column pairs, one edge at a time, with the
   exponential mechanism scoring each pair by how far its true 2-way marginal is
   from what the noisy 1-way marginals predict (L1 distance, sensitivity 1);
3. measure the chosen 2-way marginals;

then fit a graphical model to all measurements (mirror descent) and sample.

>>> from safeshare.data.examples import load_example
>>> from safeshare.data import Table
>>> frame, schema = load_example("fair")
>>> table, _ = Table.from_frame(frame, schema.domain())
>>> model = MST(epsilon=1.0, delta=1e-9, rng=0).fit(table)
>>> synthetic = model.sample()
>>> synthetic.columns == table.columns and abs(len(synthetic) - len(table)) < 200
True
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, Self

import numpy as np

from safeshare._progress import Progress, no_progress
from safeshare.data.domain import Domain
from safeshare.data.table import CodedTable, Table
from safeshare.dp.events import ComposedEvent, ExponentialEvent, GaussianEvent, PrivacyEvent
from safeshare.dp.mechanisms import ExponentialMechanism, GaussianMechanism
from safeshare.dp.randomness import Randomness, RandomSource
from safeshare.engine import CountingEngine, engine_for
from safeshare.errors import EncodingError
from safeshare.synth.base import FitOnce, budget_rho
from safeshare.synth.compress import Compression
from safeshare.synth.marginals import GraphicalModel, Measurement, estimate, sample_records


class MST(FitOnce):
    """The MST synthesizer.

    Give the budget as ``epsilon``/``delta`` or directly as zCDP ``rho`` (a share
    of a larger budget).  ``rng=None`` draws secure noise; an int or a numpy
    Generator makes the run reproducible and not private against whoever knows it.
    """

    def __init__(
        self,
        epsilon: float | None = 1.0,
        delta: float = 1e-9,
        *,
        rho: float | None = None,
        iterations: int = 500,
        engine: CountingEngine | None = None,
        rng: RandomSource = None,
        progress: Progress | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.iterations = iterations
        self.engine = engine
        self.rng = rng
        self.progress = progress

    # -- cost, stated before any data is read ---------------------------------------------

    def total_rho(self) -> float:
        return budget_rho(self.epsilon, self.delta, self.rho)

    def noise_scales(self, n_columns: int) -> tuple[float, float, float]:
        """(sigma of 1-way counts, epsilon per tree edge, sigma of 2-way counts)."""
        if n_columns < 1:
            raise EncodingError("MST needs at least one column to model")
        rho = self.total_rho()
        if n_columns == 1:
            return math.sqrt(1 / (2 * rho)), 0.0, 0.0
        part = rho / 3
        edges = n_columns - 1
        return (
            math.sqrt(n_columns / (2 * part)),
            math.sqrt(8 * part / edges),
            math.sqrt(edges / (2 * part)),
        )

    def privacy_events(self, columns: Domain | Sequence[str]) -> list[PrivacyEvent]:
        """The cost of fitting on a table with these columns (only their number matters)."""
        d = len(columns)
        sigma1, epsilon_edge, sigma2 = self.noise_scales(d)
        events: list[PrivacyEvent] = [GaussianEvent(sigma1, math.sqrt(d), "mst: 1-way marginals")]
        if d > 1:
            picks = tuple(
                ExponentialEvent(epsilon_edge, f"mst: tree edge {i + 1}") for i in range(d - 1)
            )
            events.append(ComposedEvent(picks, "mst: select tree (exponential mechanism)"))
            events.append(GaussianEvent(sigma2, math.sqrt(d - 1), "mst: 2-way marginals"))
        return events

    def one_way_sigma(self, n_columns: int) -> float:
        """The noise scale of the 1-way counts (how coarse the first measurement is)."""
        return self.noise_scales(n_columns)[0]

    def describe(self) -> dict[str, Any]:
        """The fitted structure, for the privacy card (DP: chosen by the mechanism)."""
        self._check_fitted()
        return {"tree_edges": [list(e) for e in self.edges_]}

    def privacy_spent(self) -> list[PrivacyEvent]:
        """MST's steps are fixed in advance: it spends exactly what it declares."""
        return self.privacy_events(self.domain_ if self.fitted_ else ["_"] * 2)

    # -- fit and sample -------------------------------------------------------------------

    def fit(self, table: CodedTable) -> Self:
        self._begin_fit()
        if len(table) == 0:
            raise EncodingError("cannot fit MST on an empty table")
        report = self.progress or no_progress
        engine = self.engine or engine_for(table)
        rand = Randomness(self.rng)
        domain = table.domain
        d = len(domain)
        sigma1, epsilon_edge, sigma2 = self.noise_scales(d)

        report("measuring 1-way marginals", 0.0)
        exact = engine.counts_many(table, [[c] for c in domain.names])
        noisy_all = GaussianMechanism(sigma1, math.sqrt(d), "mst: 1-way marginals").release(
            np.concatenate(exact), rand
        )
        noisy = dict(
            zip(
                domain.names,
                np.split(noisy_all, np.cumsum([e.size for e in exact])[:-1]),
                strict=True,
            )
        )
        compression = Compression.from_noisy_counts(noisy, sigma1)
        small = compression.apply_table(table)
        one_way = [compression.measurement(c, noisy[c], sigma1) for c in domain.names]

        edges: list[tuple[str, str]] = []
        two_way: list[Measurement] = []
        if d > 1:
            report("selecting the tree", 0.2)
            edges = self._select(small, one_way, epsilon_edge, engine, rand)
            report("measuring 2-way marginals", 0.4)
            exact2 = engine.counts_many(small, edges)
            noisy2 = GaussianMechanism(sigma2, math.sqrt(d - 1), "mst: 2-way marginals").release(
                np.concatenate([x.ravel() for x in exact2]), rand
            )
            parts = np.split(noisy2, np.cumsum([x.size for x in exact2])[:-1])
            two_way = [
                Measurement(e, p.reshape(x.shape).astype(float), sigma2)
                for e, p, x in zip(edges, parts, exact2, strict=True)
            ]

        report("estimating the model", 0.5)
        fitted = estimate(
            compression.sizes,
            one_way + two_way,
            iterations=self.iterations,
            progress=lambda i, _: report("estimating the model", 0.5 + 0.5 * i / self.iterations),
        )
        self.domain_ = domain
        self.compression_ = compression
        self.edges_ = edges
        self.model_: GraphicalModel = fitted.model
        self.estimation_iterations_ = fitted.iterations
        self._rand = rand
        self._end_fit()
        report("estimating the model", 1.0)
        return self

    def _select(
        self,
        small: CodedTable,
        one_way: list[Measurement],
        epsilon_edge: float,
        engine: CountingEngine,
        rand: Randomness,
    ) -> list[tuple[str, str]]:
        names = small.columns
        sizes = dict(zip(names, small.domain.shape(), strict=True))
        independent = estimate(sizes, one_way, iterations=500)
        total = independent.model.total
        marginal = {a: independent.model.project([a]) for a in names}
        scores: dict[tuple[str, str], float] = {}
        pairs = list(itertools.combinations(names, 2))
        for (a, b), exact in zip(pairs, engine.counts_many(small, pairs), strict=True):
            predicted = np.outer(marginal[a], marginal[b]) / total
            scores[(a, b)] = float(np.abs(exact - predicted).sum())
        component = {a: a for a in names}

        def root(a: str) -> str:
            while component[a] != a:
                a = component[a]
            return a

        chosen: list[tuple[str, str]] = []
        for i in range(len(names) - 1):
            candidates = [e for e in scores if root(e[0]) != root(e[1])]
            mechanism = ExponentialMechanism(epsilon_edge, 1.0, f"mst: tree edge {i + 1}")
            a, b = candidates[mechanism.select([scores[e] for e in candidates], rand)]
            component[root(a)] = root(b)
            chosen.append((a, b))
        return chosen

    def default_rows(self) -> int:
        """How many records :meth:`sample` draws by default: the model's noisy record count."""
        self._check_fitted()
        return max(round(self.model_.total), 1)

    def sample(self, n: int | None = None) -> Table:
        """``n`` synthetic records (default: the model's noisy estimate of the input size)."""
        self._check_fitted()
        rows = self.default_rows() if n is None else int(n)
        if rows < 0:
            raise ValueError(f"cannot sample {rows} rows; ask for zero or more")
        rng = self._rand.generator()
        return self.compression_.invert_table(
            sample_records(self.model_, rows, rng), self.domain_, rng
        )
