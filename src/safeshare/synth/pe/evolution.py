"""PrivateEvolution: DP synthetic data from a model's inference API, no training on private data.

Lin et al., "Differentially Private Synthetic Data via Foundation Model APIs" (ICLR
2024).  The random API proposes a population; for ``T`` iterations the private
records vote for their nearest samples (a DP histogram, see
:mod:`safeshare.synth.pe.histogram`), the best voted are selected and varied into the next
population.  The last population, weighted by its noisy votes, is the model:
``sample(n)`` draws from it for free (post-processing).

The budget is spent by the ``T`` histograms only.  ``epsilon``/``delta`` calibrate
their noise exactly through Gaussian DP (:mod:`safeshare.synth.pe.accounting`); ``rho`` (a
zCDP share, as the release pipeline passes it) uses ``sigma = sqrt(T / (2 rho))``.
``privacy_events()`` states the cost before any data is read.

>>> from safeshare.data.examples import load_example
>>> from safeshare.data import Table
>>> from safeshare.synth.pe.tabular import DomainAPI, TabularEmbedder
>>> frame, schema = load_example("fair")
>>> table, _ = Table.from_frame(frame, schema.domain())
>>> model = PrivateEvolution(api=DomainAPI(table.domain), embedder=TabularEmbedder(table.domain),
...                          epsilon=1.0, delta=1e-9, iterations=4, samples_per_iteration=200,
...                          rng=0)
>>> len(model.privacy_events()), round(model.noise_scale(), 2)
(4, 10.99)
>>> synthetic = model.fit(table).sample(100)
>>> synthetic.columns == table.columns, len(synthetic)
(True, 100)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Self

import numpy as np
import pandas as pd

from safeshare._progress import Progress, no_progress
from safeshare.data.domain import Domain
from safeshare.data.table import Table
from safeshare.dp.events import PrivacyEvent
from safeshare.dp.gdp import gdp_epsilon
from safeshare.dp.randomness import Randomness, RandomSource
from safeshare.errors import BudgetError, InputError, NotFittedError, RefitError
from safeshare.synth.pe.accounting import histogram_events, noise_from_rho, noise_multiplier
from safeshare.synth.pe.api import Embedder, RandomAPI, VariationAPI
from safeshare.synth.pe.checkpoint import Checkpoint
from safeshare.synth.pe.histogram import (
    Choice,
    NearestNeighbourHistogram,
    Selection,
    samples_per_parent,
    select,
    systematic,
)
from safeshare.synth.pe.lookahead import check_lookahead, lookahead_degrees, lookahead_embedding
from safeshare.synth.pe.neighbors import Search, check_search
from safeshare.synth.pe.population import Population

MAX_DUPLICATES = 0.05  # the share of sampled texts that may repeat an earlier one
REDRAW_ROUNDS = 5  # rounds of variations sample() asks for, at most, to reach it
FINEST_DEGREE = 0.1  # the variation degree of a single-iteration run's redraws


@dataclass(frozen=True)
class IterationInfo:
    """What a callback sees after each histogram: DP outputs only, never private records."""

    iteration: int
    iterations: int
    population: Population
    sigma: float


Callback = Callable[[IterationInfo], None]


class PrivateEvolution:
    """The PE estimator: ``api`` has ``random`` and ``vary``; ``embedder`` has ``embed``
    (both default, for a Table, to :mod:`safeshare.synth.pe.tabular` over its Domain).

    ``samples_per_iteration``: population size measured at each iteration (an int or one
    per iteration).  ``variation_degrees``: how far variations move (one per iteration
    after the first; default decreasing from 0.5 to 0.1).  ``neighbours``: votes per
    record (k).  ``neighbour_search``: the neighbour search, ``"auto"`` (the default), ``"numpy"``
    or ``"faiss"`` (the ``faiss`` extra); all find the same neighbours, so the votes and
    a seeded run's population do not depend on it (:mod:`safeshare.synth.pe.neighbors`).
    ``threshold``: subtracted from every vote, what falls below 0 counting 0 (``max(h - H,
    0)``).  ``selection``: ``"sample"`` (PE: the next population's parents drawn in
    proportion to the votes, each varied once) or ``"rank"`` (Aug-PE: the ``n / offspring``
    most voted, each kept unchanged when ``keep_selected`` and varied into the rest of its
    ``offspring`` samples; ``offspring`` defaults to 4).  ``lookahead``: vote on the mean
    embedding of that many variations of each sample (0, the default, votes on the samples
    themselves; see :mod:`safeshare.synth.pe.lookahead`).  ``checkpoint``: a folder to
    save each step into and resume from.  ``rng=None`` draws secure noise; an int makes
    the run (and its resumption) reproducible and not private against whoever knows it.
    """

    def __init__(
        self,
        api: Any = None,
        embedder: Embedder | None = None,
        *,
        epsilon: float | None = 1.0,
        delta: float = 1e-9,
        rho: float | None = None,
        iterations: int = 10,
        samples_per_iteration: int | Sequence[int] = 1000,
        variation_degrees: float | Sequence[float] | None = None,
        neighbours: int = 1,
        threshold: float = 0.0,
        selection: Selection = "sample",
        offspring: int | None = None,
        keep_selected: bool = True,
        lookahead: int = 0,
        neighbour_search: Search = "auto",
        checkpoint: str | Path | None = None,
        callbacks: Sequence[Callback] = (),
        rng: RandomSource = None,
        progress: Progress | None = None,
        max_duplicates: float = MAX_DUPLICATES,
    ) -> None:
        self.api = api
        self.embedder = embedder
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.iterations = iterations
        self.samples_per_iteration = samples_per_iteration
        self.variation_degrees = variation_degrees
        self.neighbours = neighbours
        self.threshold = threshold
        self.selection = selection
        self.offspring = offspring
        self.keep_selected = keep_selected
        self.lookahead = lookahead
        self.neighbour_search = neighbour_search
        self.checkpoint = checkpoint
        self.callbacks = callbacks
        self.rng = rng
        self.progress = progress
        self.max_duplicates = max_duplicates

    # -- cost, stated before any data is read ----------------------------------------------

    def noise_scale(self) -> float:
        """The Gaussian noise scale ``sigma`` of each histogram."""
        if self.rho is not None:
            return noise_from_rho(self.rho, self.iterations)
        if self.epsilon is None:
            raise BudgetError("give PrivateEvolution a budget: epsilon (with delta) or rho")
        return noise_multiplier(self.epsilon, self.delta, self.iterations)

    def privacy_events(self, columns: Domain | Sequence[str] | None = None) -> list[PrivacyEvent]:
        """One sensitivity-1 Gaussian histogram per iteration (columns do not matter)."""
        return list(histogram_events(self.noise_scale(), self.iterations))

    def privacy_spent(self) -> list[PrivacyEvent]:
        """PE's steps are fixed in advance: it spends exactly what it declares."""
        return self.privacy_events()

    def schedule(self) -> list[int]:
        """The population size measured at each iteration."""
        sizes = self.samples_per_iteration
        out = [sizes] * self.iterations if isinstance(sizes, int) else list(sizes)
        if len(out) != self.iterations or any(
            not isinstance(n, int | np.integer) or n < 1 for n in out
        ):
            raise InputError(
                f"samples_per_iteration must be a positive int or {self.iterations} of them "
                "(one per iteration)"
            )
        return [int(n) for n in out]

    def degrees(self) -> list[float]:
        """The variation degree used after each iteration but the last."""
        count = self.iterations - 1
        given = self.variation_degrees
        if given is None:
            out = list(np.linspace(0.5, 0.1, count)) if count > 1 else [0.5] * count
        elif isinstance(given, int | float):
            out = [float(given)] * count
        else:
            out = [float(d) for d in given]
        if len(out) != count or not all(0 < d <= 1 for d in out):
            raise InputError(
                f"variation_degrees must be a number in (0, 1] or {count} of them (one per "
                "iteration after the first)"
            )
        return [float(d) for d in out]

    def check_useful(self, n_private: int) -> None:
        """Refuse a budget whose noise would drown the average vote; say what would work."""
        sigma, biggest = self.noise_scale(), max(self.schedule())
        mean_votes = n_private / biggest
        if mean_votes >= sigma:
            return
        fewer = max(1, int(n_private / sigma))
        wanted = gdp_epsilon(math.sqrt(self.iterations) / (mean_votes or 1.0), self.delta)
        raise BudgetError(
            f"the noise (sigma={sigma:.3g} votes) exceeds the {mean_votes:.3g} votes a sample gets "
            f"on average; use samples_per_iteration <= {fewer}, fewer iterations, or epsilon >= "
            f"{wanted:.2g}"
        )

    # -- fit and sample ----------------------------------------------------------------------

    fitted_: bool = False
    initial_: pd.DataFrame | None = None  # the first population: what the API wrote unaided

    def fit(self, data: Table | pd.DataFrame) -> Self:
        """Evolve the population against ``data`` (a Table of codes, or a frame for text)."""
        if self.fitted_:
            raise RefitError(
                "PrivateEvolution is already fitted; a second fit would spend the privacy budget "
                "again. Create a new one (and check the ledger) instead"
            )
        search = check_search(self.neighbour_search)  # before any data is read
        if not 0 <= self.max_duplicates <= 1:
            raise InputError(f"max_duplicates is a share in [0, 1], not {self.max_duplicates!r}")
        frame = self._frame(data)
        api, embedder = self._parts()
        if not isinstance(api, RandomAPI) or not isinstance(api, VariationAPI):
            raise InputError("api must have random(n, rng) and vary(samples, degree, rng)")
        sigma, sizes, degrees = self.noise_scale(), self.schedule(), self.degrees()
        histogram = NearestNeighbourHistogram(sigma, self.neighbours, self.threshold, search=search)
        offspring = self.samples_per_parent()
        if len(frame) == 0:
            raise InputError("cannot fit PrivateEvolution on an empty table")
        self.check_useful(len(frame))
        lookahead = check_lookahead(self.lookahead)
        ahead = lookahead_degrees(degrees, self.iterations, self.variation_degrees)
        report = self.progress or no_progress
        streams = self._streams()
        store = (
            Checkpoint(self.checkpoint, self._settings(sigma, sizes, degrees, streams[0].secure))
            if self.checkpoint is not None
            else None
        )
        keep_replies = getattr(api, "keep_replies", None)
        if store is not None and callable(keep_replies):  # an LLM API: no reply paid twice
            keep_replies(store.replies_path)
        public = partial(self._public_choices, streams=streams, store=store)
        private = self._embed(embedder, frame, "the private data")

        population = store.load() if store is not None else None
        self.initial_ = store.first() if store is not None else None
        if population is None:
            report("drawing the first population", 0.0)
            first = self._checked(api.random(sizes[0], public(0)), sizes[0])
            population = Population.random(first)
            self.initial_ = first
            if store is not None:
                store.save(population)
        while True:
            t = population.iteration + 1  # the histogram this population gets, 1..T
            if not population.measured:
                report(f"private votes {t}/{self.iterations}", (t - 1) / self.iterations)
                what = f"the population of iteration {t}"
                if lookahead:
                    embedded = lookahead_embedding(
                        api,
                        partial(self._embed, embedder, what=f"the variations of {what}"),
                        population.samples,
                        lookahead,
                        ahead[t - 1],
                        public(self.iterations + 1 + t),
                    )
                else:
                    embedded = self._embed(embedder, population.samples, what)
                votes = histogram.release(private, embedded, streams[t])
                population = population.with_votes(votes)
                if store is not None:
                    store.save(population)
                for callback in self.callbacks:
                    callback(IterationInfo(t, self.iterations, population, sigma))
            if t >= self.iterations:
                break
            rng = public(t)
            choice = select(
                population.weights(), sizes[t], self.selection, rng,
                offspring=offspring, keep=self.keep_selected,
            )  # fmt: skip
            population = self._next(population, choice, api.vary, degrees[t - 1], rng)
            if store is not None:
                store.save(population)
        report("done", 1.0)
        self.population_ = population
        self.sigma_ = sigma
        self.secure_noise_ = streams[0].secure
        self._sampler = streams[self.iterations + 1]
        self.fitted_ = True
        return self

    def sample(self, n: int | None = None) -> Any:
        """``n`` rows drawn in proportion to the votes.

        The default ``n`` is the record count read off the last noisy votes (each record
        casts ``sqrt(k)`` votes in all): DP post-processing, never the exact private count.
        Texts (a frame, not a Table) drawn more than once are varied at the finest degree
        until at most ``max_duplicates`` of the rows repeat an earlier one (public work on
        synthetic texts, no privacy cost; one variation call per repeated row and round, at
        most :data:`REDRAW_ROUNDS` rounds, stopping after a round that removed no repeat); a
        table's repeated records are its distribution and stay.
        """
        if not self.fitted_:
            raise NotFittedError("PrivateEvolution is not fitted yet; call fit(data) first")
        if n is None:
            votes = float(self.population_.weights().sum())
            n = max(1, round(votes / math.sqrt(self.neighbours)))
        if n < 0:
            raise InputError(f"n must be non-negative, got {n}")
        rng = self._sampler.generator()
        rows = systematic(self.population_.weights(), n, rng)
        frame = self.population_.samples.iloc[rows].reset_index(drop=True)
        if self.domain_ is None:
            return self._fewer_repeats(frame, rng)
        return Table({c: frame[c].to_numpy() for c in self.domain_.names}, self.domain_)

    def _fewer_repeats(self, frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        """``frame`` with its repeated rows varied until at most ``max_duplicates`` repeat."""
        api, _ = self._parts()
        degree = min(self.degrees(), default=FINEST_DEGREE)
        before = len(frame) + 1
        for _ in range(REDRAW_ROUNDS):
            repeats = frame.duplicated(keep="first").to_numpy()
            count = int(repeats.sum())
            if count <= self.max_duplicates * len(frame) or count >= before:
                break  # few enough, or the last round's variations repeated as much
            asked = frame[repeats].reset_index(drop=True)
            varied = self._checked(api.vary(asked, degree, rng), len(asked))
            frame.loc[repeats, list(frame.columns)] = varied[list(frame.columns)].to_numpy()
            before = count
        return frame

    def samples_per_parent(self) -> int:
        """How many samples each selected sample gives the next population: 1 for
        ``sample``; ``offspring`` (default 4, at least 2) for ``rank``."""
        return samples_per_parent(self.selection, self.offspring)

    def describe(self) -> dict[str, Any]:
        """Parameters and what was public, for the privacy card."""
        sigma = self.noise_scale()
        mu = math.sqrt(self.iterations) / sigma
        return {
            "method": "private evolution",
            "iterations": self.iterations,
            "sigma": sigma,
            "gdp_mu": mu,
            "epsilon_exact_gdp": gdp_epsilon(mu, self.delta),
            "delta": self.delta,
            "samples_per_iteration": self.schedule(),
            "neighbours": self.neighbours,
            "threshold": self.threshold,
            "selection": self.selection,
            **self._rank_settings(),
            "lookahead": self.lookahead,
            "neighbour_search": self.neighbour_search,
            "max_duplicates": self.max_duplicates,
            "public": ["the random and variation APIs and their inputs", "the embedder"],
            "private": ["the records, through the noisy nearest-neighbour votes only"],
        }

    # -- helpers ------------------------------------------------------------------------------

    domain_: Domain | None = None

    def _frame(self, data: Table | pd.DataFrame) -> pd.DataFrame:
        if isinstance(data, Table):
            self.domain_ = data.domain
            return pd.DataFrame({c: data.column(c) for c in data.columns})
        if isinstance(data, pd.DataFrame):
            return data.reset_index(drop=True)
        raise InputError(f"fit takes a Table or a DataFrame, not {type(data).__name__}")

    def _streams(self) -> list[Randomness]:
        """One source per step (0: first draw, 1..T: iterations, T+1: sampling, T+1+t: the
        lookahead variations before vote t).  Extra streams leave the first ones unchanged."""
        count = 2 * self.iterations + 2
        if self.rng is None:
            return [Randomness() for _ in range(count)]
        base = Randomness(self.rng).generator()  # seeded: a deterministic child of the seed
        return [Randomness(g) for g in base.spawn(count)]

    @staticmethod
    def _public_choices(
        step: int, streams: list[Randomness], store: Checkpoint | None
    ) -> np.random.Generator:
        """The generator of a step's public choices (what is asked of the API, selection).  A
        seeded run draws it from its stream; a secure run with a checkpoint from a seed the
        checkpoint keeps, so a resumed step asks the same requests (no reply paid twice)."""
        if store is None or not streams[step].secure:
            return streams[step].generator()
        return np.random.default_rng(store.public_seed(step))

    def _parts(self) -> tuple[Any, Embedder]:
        """The APIs and embedder; for a Table without them, the Domain's (tabular PE)."""
        api, embedder = self.api, self.embedder
        if api is None or embedder is None:
            if self.domain_ is None:
                raise InputError("give api= and embedder= (only a Table's Domain provides them)")
            from safeshare.synth.pe.tabular import DomainAPI, TabularEmbedder

            api = DomainAPI(self.domain_) if api is None else api
            embedder = TabularEmbedder(self.domain_) if embedder is None else embedder
        return api, embedder

    @staticmethod
    def _embed(embedder: Embedder, samples: pd.DataFrame, what: str) -> np.ndarray:
        vectors = np.asarray(embedder.embed(samples))
        if vectors.ndim != 2 or len(vectors) != len(samples):
            raise InputError(
                f"the embedder returned shape {vectors.shape} for {what} ({len(samples)} rows); "
                "it must return one vector per row"
            )
        if not np.isfinite(vectors).all():
            raise InputError(f"the embedder returned NaN or infinite values for {what}")
        return vectors

    def _rank_settings(self) -> dict[str, Any]:
        if self.selection != "rank":
            return {}
        return {"offspring": self.samples_per_parent(), "keep_selected": self.keep_selected}

    def _next(
        self,
        population: Population,
        choice: Choice,
        vary: Callable[[pd.DataFrame, float, np.random.Generator], pd.DataFrame],
        degree: float,
        rng: np.random.Generator,
    ) -> Population:
        """The next population: the kept samples as they are, then the variations."""
        varied_rows = choice.varied
        chosen = population.samples.iloc[varied_rows].reset_index(drop=True)
        varied = (
            self._checked(vary(chosen, degree, rng), len(varied_rows)) if len(chosen) else chosen
        )
        kept_rows = choice.rows[choice.kept]
        if not len(kept_rows):
            return population.offspring(varied, varied_rows)
        kept = population.samples.iloc[kept_rows]
        return population.offspring(
            pd.concat([kept, varied], ignore_index=True), np.concatenate([kept_rows, varied_rows])
        )

    @staticmethod
    def _checked(samples: pd.DataFrame, n: int) -> pd.DataFrame:
        if not isinstance(samples, pd.DataFrame) or len(samples) != n:
            got = len(samples) if isinstance(samples, pd.DataFrame) else type(samples).__name__
            raise InputError(f"the API returned {got} samples where {n} were asked for")
        return samples.reset_index(drop=True)

    def _settings(
        self, sigma: float, sizes: list[int], degrees: list[float], secure: bool
    ) -> dict[str, Any]:
        settings: dict[str, Any] = {
            "sigma": sigma,
            "iterations": self.iterations,
            "samples_per_iteration": sizes,
            "variation_degrees": degrees,
            "neighbours": self.neighbours,
            "threshold": self.threshold,
            "selection": self.selection,
            "secure_noise": secure,
            **self._rank_settings(),  # absent for sample, so earlier checkpoints resume
        }
        if self.lookahead:  # absent when off, so checkpoints written before lookahead resume
            settings["lookahead"] = self.lookahead
        return settings
