"""AIM: an adaptive and iterative mechanism for DP synthetic data, tuned to a workload.

McKenna, Mullins, Sheldon & Miklau, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data" (PVLDB 2022).  After measuring every 1-way
marginal, each round selects the marginal (from the workload's downward closure)
whose model estimate is furthest from the data, with a bias-corrected score and
the exponential mechanism, measures it with Gaussian noise, and refits the model
(warm-started).  The budget is annealed: when a measurement barely changes the
model, the noise is halved.  Candidates that would grow the model beyond a cap
(which rises with the budget spent) are skipped; the last round spends whatever
is left, so the total is exactly the declared rho.

>>> from safeshare.data.examples import load_example
>>> from safeshare.data import Table
>>> frame, schema = load_example("fair")
>>> table, _ = Table.from_frame(frame, schema.domain())
>>> model = AIM(epsilon=1.0, delta=1e-9, workload="2way", rng=0).fit(table)
>>> round(sum(e.rho for e in model.privacy_spent()), 10) == round(model.total_rho(), 10)
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np

from safeshare._progress import Progress, no_progress
from safeshare.data.domain import Domain
from safeshare.data.table import CodedTable, Table
from safeshare.dp.events import PrivacyEvent, ZCDPEvent
from safeshare.dp.mechanisms import ExponentialMechanism, GaussianMechanism
from safeshare.dp.randomness import Randomness, RandomSource
from safeshare.engine import CountingEngine, engine_for
from safeshare.errors import EncodingError, SchemaError
from safeshare.synth.base import FitOnce, budget_rho
from safeshare.synth.compress import Compression
from safeshare.synth.constraints import Constraint
from safeshare.synth.marginals import (
    Estimate,
    JunctionTree,
    Measurement,
    estimate,
    noise_loss,
    sample_records,
)
from safeshare.synth.workload import Workload

_MEASURE_SHARE = 0.9  # of each round's rho: the rest selects
_ROUNDS_PER_COLUMN = 4  # the paper uses 16; see docs/architecture.md
_BYTES_PER_CELL = 8
# mirror-descent iterations run before the noise-level stop may end a fit (each round; final)
_MIN_ROUND_ITERATIONS = 100
_MIN_FINAL_ITERATIONS = 300
_EXPECTED_ABS = math.sqrt(2 / math.pi)  # E|N(0, 1)|


class AIM(FitOnce):
    """The AIM synthesizer.

    ``workload``: ``"3way"`` (default), ``"2way"``, a YAML file or a :class:`Workload`.
    ``max_model_size``: cap in MB on the model's clique tables.  ``time_limit``
    (seconds) stops selecting early and spends the rest on a final measurement.
    ``constraints``: public structural zeros (dicts, see :mod:`.constraints`).
    ``iterations`` / ``final_iterations``: the most mirror-descent iterations of each
    round's refit / of the final fit (default 1000 each, as mbi).  A fit stops earlier,
    after at least 100 / 300 iterations, once it matches the measurements as closely as
    the true marginals would (loss at most 1/2 per measured cell): at small epsilon that
    is soon (fitting further would fit the noise), at large epsilon it takes longer.
    """

    def __init__(
        self,
        epsilon: float | None = 1.0,
        delta: float = 1e-9,
        *,
        rho: float | None = None,
        workload: str | Path | Workload | None = None,
        max_model_size: float = 80.0,
        max_rounds: int | None = None,
        time_limit: float | None = None,
        iterations: int = 1000,
        final_iterations: int = 1000,
        compress: bool = True,
        constraints: Sequence[dict[str, Any] | Constraint] = (),
        engine: CountingEngine | None = None,
        rng: RandomSource = None,
        progress: Progress | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.workload = workload
        self.max_model_size = max_model_size
        self.max_rounds = max_rounds
        self.time_limit = time_limit
        self.iterations = iterations
        self.final_iterations = final_iterations
        self.compress = compress
        self.constraints = constraints
        self.engine = engine
        self.rng = rng
        self.progress = progress

    def total_rho(self) -> float:
        return budget_rho(self.epsilon, self.delta, self.rho)

    def privacy_events(self, columns: Domain | Sequence[str]) -> list[PrivacyEvent]:
        """AIM picks each round's noise as it goes; it never spends more than ``total_rho``."""
        if len(columns) < 1:
            raise EncodingError("AIM needs at least one column to model")
        return [ZCDPEvent(self.total_rho(), "aim: adaptive rounds (total)")]

    def one_way_sigma(self, n_columns: int) -> float:
        """The noise scale of the first (1-way) measurements."""
        rounds = self.max_rounds or _ROUNDS_PER_COLUMN * n_columns
        return math.sqrt(rounds / (2 * _MEASURE_SHARE * self.total_rho()))

    def describe(self) -> dict[str, Any]:
        """What AIM measured, for the privacy card (DP: chosen by the mechanism)."""
        self._check_fitted()
        return {
            "workload": [{"columns": list(c), "weight": w} for c, w in self.workload_.marginals],
            "rounds": self.rounds_,
            "measured": [list(m) for m in self.measured_],
            "model_size_mb": self.model_size_mb_,
            "notes": list(self.notes_),
        }

    def privacy_spent(self) -> list[PrivacyEvent]:
        """What each step spent (after ``fit``; the declared total before it)."""
        return list(self.spent_) if self.fitted_ else self.privacy_events(["_"])

    def check(self, domain: Domain) -> None:
        """Refuse, before any budget is spent, a workload or cap that cannot work on ``domain``."""
        names = domain.names
        sizes = dict(zip(names, domain.shape(), strict=True))
        closure = Workload.parse(self.workload, names).downward_closure()
        beyond = [r for r in closure if len(r) > 1]
        if not beyond:
            return
        singles = tuple((n,) for n in names)
        smallest = min(beyond, key=lambda r: _cells(r, sizes))
        if not _fitting([smallest], sizes, singles, self.max_model_size):
            need = _model_size_mb((*singles, smallest), sizes)
            raise SchemaError(
                f"max_model_size={self.max_model_size:g} MB is too small for any workload marginal: "
                f"the smallest, {list(smallest)}, needs a model of {need:.3g} MB; raise the cap"
            )

    # -- fit ------------------------------------------------------------------------------

    def fit(self, table: CodedTable) -> Self:
        self._begin_fit()
        if len(table) == 0:
            raise EncodingError("cannot fit AIM on an empty table")
        started = time.process_time()
        report = self.progress or no_progress
        engine = self.engine or engine_for(table)
        rand = Randomness(self.rng)
        domain, names = table.domain, table.columns
        self.check(domain)
        sizes = dict(zip(names, domain.shape(), strict=True))
        workload = Workload.parse(self.workload, names)
        constraints = [
            c if isinstance(c, Constraint) else Constraint.from_dict(c, domain)
            for c in self.constraints
        ]
        zeros = [(c.attrs, c.allowed) for c in constraints]
        rho = self.total_rho()
        rounds = self.max_rounds or _ROUNDS_PER_COLUMN * len(names)
        sigma = self.one_way_sigma(len(names))
        epsilon = math.sqrt(8 * (1 - _MEASURE_SHARE) * rho / rounds)
        spent: list[PrivacyEvent] = []
        cache: dict[tuple[str, ...], np.ndarray] = {}

        report("aim: 1-way marginals", 0.0)
        noisy = self._one_way(table, names, engine, sigma, rand, spent)
        # fold values indistinguishable from noise (post-processing); constrained columns stay whole
        exempt = set(names) if not self.compress else {a for c in constraints for a in c.attrs}
        compression = Compression.from_noisy_counts(noisy, sigma, exempt=exempt)
        small = compression.apply_table(table)
        sizes = compression.sizes
        measurements = [compression.measurement(n, noisy[n], sigma) for n in names]

        def data(r: tuple[str, ...]) -> np.ndarray:
            if r not in cache:
                cache[r] = engine.counts(small, list(r)).astype(np.float64)
            return cache[r]

        fit = estimate(sizes, measurements, iterations=self.iterations, zeros=zeros)
        candidates = sorted(workload.downward_closure(), key=lambda r: (len(r), r))
        weights = {r: workload.weight_of(r) for r in candidates}
        used = math.fsum(e.rho for e in spent)
        notes: list[str] = []
        if self._nothing_measurable(candidates, sizes, rho - used, fit.model.total):
            notes.append(
                "epsilon is too small for AIM to measure anything beyond the 1-way marginals: "
                "the rest of the budget re-measured them, and the release is the 1-way model"
            )
            again = math.sqrt(len(names) / (2 * (rho - used)))
            repeat = self._one_way(small, names, engine, again, rand, spent, "again")
            measurements += [Measurement((n,), repeat[n].astype(float), again) for n in names]
            fit = estimate(
                sizes, measurements, iterations=self.final_iterations, zeros=zeros, warm_start=fit
            )
            candidates = []

        t = 0
        while candidates:
            t += 1
            used = math.fsum(e.rho for e in spent)
            final = rho - used <= 2 * (1 / (2 * sigma**2) + epsilon**2 / 8)
            if self.time_limit is not None and time.process_time() - started > self.time_limit:
                final = True
                notes.append(f"the time limit stopped selection after {t - 1} rounds")
            if final:
                left = rho - used
                sigma = math.sqrt(1 / (2 * _MEASURE_SHARE * left))
                epsilon = math.sqrt(8 * (1 - _MEASURE_SHARE) * left)
            limit = self.max_model_size * (used + 1 / (2 * sigma**2) + epsilon**2 / 8) / rho
            fitting = _fitting(candidates, sizes, fit.model.tree.cliques, limit)
            chosen = self._select(fitting, weights, data, fit, sigma, epsilon, rand, spent, t)
            before = fit.model.project(chosen)
            measurements.append(self._measure(chosen, data, sigma, rand, spent, t))
            fit = estimate(
                sizes,
                measurements,
                iterations=self.iterations,
                zeros=zeros,
                warm_start=fit,
                target_loss=noise_loss(measurements),
                min_iterations=_MIN_ROUND_ITERATIONS,
            )
            after = fit.model.project(chosen)
            if np.abs(after - before).sum() <= _EXPECTED_ABS * sigma * after.size:
                sigma, epsilon = sigma / 2, epsilon * 2
            report(f"aim: round {t}", min(math.fsum(e.rho for e in spent) / rho, 1.0) * 0.9)
            if final:
                break

        report("aim: final estimate", 0.9)
        fit = estimate(
            sizes,
            measurements,
            iterations=self.final_iterations,
            zeros=zeros,
            warm_start=fit,
            target_loss=noise_loss(measurements),
            min_iterations=_MIN_FINAL_ITERATIONS,
        )
        self.domain_ = domain
        self.compression_ = compression
        self.model_ = fit.model
        self.workload_ = workload
        self.constraints_ = constraints
        self.measured_ = [m.attrs for m in measurements]
        self.model_size_mb_ = _model_size_mb(fit.model.tree.cliques, sizes)
        self.rounds_ = t
        self.spent_ = spent
        self.notes_ = notes
        self._rand = rand
        self._end_fit()
        report("aim: final estimate", 1.0)
        return self

    @staticmethod
    def _one_way(
        table: CodedTable,
        names: Sequence[str],
        engine: CountingEngine,
        sigma: float,
        rand: Randomness,
        spent: list[PrivacyEvent],
        label: str = "",
    ) -> dict[str, np.ndarray]:
        """Noisy counts of every 1-way marginal (one Gaussian release, L2 sensitivity sqrt(d))."""
        exact = engine.counts_many(table, [[n] for n in names])
        mechanism = GaussianMechanism(
            sigma, math.sqrt(len(names)), f"aim: 1-way marginals {label}".strip()
        )
        noisy = mechanism.release(np.concatenate(exact), rand)
        spent.append(mechanism.event)
        parts = np.split(noisy, np.cumsum([e.size for e in exact])[:-1])
        return dict(zip(names, parts, strict=True))

    def _select(
        self,
        candidates: list[tuple[str, ...]],
        weights: dict[tuple[str, ...], float],
        data: Any,
        fit: Estimate,
        sigma: float,
        epsilon: float,
        rand: Randomness,
        spent: list[PrivacyEvent],
        t: int,
    ) -> tuple[str, ...]:
        scores = []
        for r in candidates:
            error = float(np.abs(data(r) - fit.model.project(r)).sum())
            scores.append(weights[r] * (error - _EXPECTED_ABS * sigma * data(r).size))
        sensitivity = max(weights[r] for r in candidates)
        mechanism = ExponentialMechanism(epsilon, sensitivity, f"aim: round {t} select")
        spent.append(mechanism.event)
        return candidates[mechanism.select(scores, rand)]

    def _measure(
        self,
        r: tuple[str, ...],
        data: Any,
        sigma: float,
        rand: Randomness,
        spent: list[PrivacyEvent],
        t: int,
    ) -> Measurement:
        mechanism = GaussianMechanism(sigma, 1.0, f"aim: round {t} measure {'+'.join(r)}")
        exact = data(r)
        noisy = mechanism.release(exact.astype(np.int64), rand)
        spent.append(mechanism.event)
        return Measurement(r, noisy.astype(float), sigma)

    @staticmethod
    def _nothing_measurable(
        candidates: list[tuple[str, ...]], sizes: dict[str, int], left: float, total: float
    ) -> bool:
        beyond = [r for r in candidates if len(r) > 1]
        if not beyond or left <= 0:
            return bool(beyond)
        best_sigma = math.sqrt(1 / (2 * _MEASURE_SHARE * left))
        smallest = min(_cells(r, sizes) for r in beyond)
        return _EXPECTED_ABS * best_sigma * smallest >= total

    # -- sample ---------------------------------------------------------------------------

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


def _cells(r: tuple[str, ...], sizes: dict[str, int]) -> int:
    return math.prod(sizes[a] for a in r)


def _fitting(
    candidates: list[tuple[str, ...]],
    sizes: dict[str, int],
    cliques: tuple[tuple[str, ...], ...],
    limit_mb: float,
) -> list[tuple[str, ...]]:
    """Candidates whose addition keeps the model's clique tables within ``limit_mb``."""
    names = list(sizes)
    current = [set(c) for c in cliques]
    fitting = []
    for r in candidates:
        if any(set(r) <= c for c in current):
            fitting.append(r)
            continue
        if _cells(r, sizes) * _BYTES_PER_CELL / 2**20 > limit_mb:
            continue
        tree = JunctionTree.build(names, sizes, [*cliques, r])
        if _model_size_mb(tree.cliques, sizes) <= limit_mb:
            fitting.append(r)
    return fitting


def _model_size_mb(cliques: Sequence[tuple[str, ...]], sizes: dict[str, int]) -> float:
    return sum(_cells(c, sizes) for c in cliques) * _BYTES_PER_CELL / 2**20
