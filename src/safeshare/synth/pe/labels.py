"""Labelled PE: one PE run per label on disjoint private subsets, sized by DP label counts.

Aug-PE conditions generation on a label; the reference code then reads each label's
share of the private data *without noise*.  Here the label counts are a Gaussian
histogram (discrete Gaussian from :class:`~safeshare.dp.randomness.Randomness`, L2
sensitivity 1 under add/remove-one), declared in :meth:`privacy_events` before any data
is read and added to the total; output sizes and the per-label checks use the noisy
counts only.

Privacy.  A record belongs to exactly one label, so it votes in one label's PE run
only: the runs compose in *parallel* and cost the ``T`` histograms of one run (the max
over labels, not the sum).  With the label counts (``mu_c = 1 / sigma_c``) the whole is
``mu``-GDP, ``mu^2 = mu_c^2 + T / sigma^2``; ``label_share`` of ``mu^2`` goes to the
counts.  The labels themselves (their names and values) are public inputs.

>>> class Fixed:                        # a toy API and embedder: numbers in one column
...     def __init__(self, label): self.label = label
...     def random(self, n, rng): return pd.DataFrame({"x": rng.normal(size=n)})
...     def vary(self, s, degree, rng): return s + rng.normal(scale=degree, size=s.shape)
>>> class Identity:
...     def embed(self, s): return s[["x"]].to_numpy()
>>> model = LabelledEvolution(Fixed, Identity(), labels=[0, 1], epsilon=4.0, delta=1e-5,
...                           iterations=2, samples_per_iteration=20, rng=0)
>>> [e.label for e in model.privacy_events()][:2]
['pe: label counts', 'pe: nearest-neighbour histogram 1/2']
>>> round(model.total_epsilon(), 6)
4.0
>>> data = pd.DataFrame({"x": np.r_[np.zeros(300), np.ones(200)], "label": [0] * 300 + [1] * 200})
>>> synthetic = model.fit(data).sample(50)
>>> sorted(synthetic.columns), len(synthetic)
(['label', 'x'], 50)
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
import pandas as pd

from safeshare.dp.events import GaussianEvent, PrivacyEvent
from safeshare.dp.gdp import gdp_epsilon, gdp_mu
from safeshare.dp.mechanisms import GaussianMechanism
from safeshare.dp.randomness import Randomness, RandomSource
from safeshare.errors import BudgetError, InputError, NotFittedError, RefitError
from safeshare.synth.pe.accounting import histogram_events
from safeshare.synth.pe.api import Embedder
from safeshare.synth.pe.evolution import PrivateEvolution

COUNTS_FILE = "label_counts.json"


class LabelledEvolution:
    """PE per label.  ``api_for(label)`` gives the APIs for one label (e.g.
    ``WordAPI.for_label``, after mapping a code to its public name); ``labels``: the public
    label values in ``label_column``.  Other keywords go to each label's
    :class:`PrivateEvolution` (``iterations``, ``samples_per_iteration``, ...)."""

    def __init__(
        self,
        api_for: Callable[[Any], Any],
        embedder: Embedder,
        *,
        labels: Sequence[Hashable],
        label_column: str = "label",
        epsilon: float | None = 1.0,
        delta: float = 1e-9,
        rho: float | None = None,
        label_share: float = 0.05,
        iterations: int = 10,
        samples_per_iteration: int | Sequence[int] = 1000,
        checkpoint: str | Path | None = None,
        rng: RandomSource = None,
        **options: Any,
    ) -> None:
        self.api_for = api_for
        self.embedder = embedder
        self.labels = list(labels)
        self.label_column = label_column
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.label_share = label_share
        self.iterations = iterations
        self.samples_per_iteration = samples_per_iteration
        self.checkpoint = checkpoint
        self.rng = rng
        self.options = options

    # -- cost, stated before any data is read ----------------------------------------------

    def _mu(self) -> float:
        if self.rho is not None:
            if not (math.isfinite(self.rho) and self.rho > 0):
                raise BudgetError(f"rho must be a positive number, got {self.rho!r}")
            return math.sqrt(2 * self.rho)
        if self.epsilon is None:
            raise BudgetError("give LabelledEvolution a budget: epsilon (with delta) or rho")
        return gdp_mu(self.epsilon, self.delta)

    def count_sigma(self) -> float:
        """The noise scale of the label counts."""
        if not 0 < self.label_share < 1:
            raise BudgetError(f"label_share must lie in (0, 1), got {self.label_share}")
        return 1.0 / (math.sqrt(self.label_share) * self._mu())

    def _rho_pe(self) -> float:
        return (1 - self.label_share) * self._mu() ** 2 / 2

    def _model(
        self, label: Hashable, rng: Any, checkpoint: Path | None, api: bool = True
    ) -> PrivateEvolution:
        return PrivateEvolution(
            api=self.api_for(label) if api else None,
            embedder=self.embedder,
            epsilon=None,
            delta=self.delta,
            rho=self._rho_pe(),
            iterations=self.iterations,
            samples_per_iteration=self.samples_per_iteration,
            checkpoint=checkpoint,
            rng=rng,
            **self.options,
        )

    def noise_scale(self) -> float:
        """The noise scale ``sigma`` of each nearest-neighbour histogram (every label's)."""
        return self._model(None, None, None, api=False).noise_scale()

    def privacy_events(self) -> list[PrivacyEvent]:
        """The label counts, then one run's ``T`` histograms (parallel over labels)."""
        if not self.labels:
            raise InputError("give at least one label in labels=[...]")
        counts = GaussianEvent(self.count_sigma(), 1.0, "pe: label counts")
        return [counts, *histogram_events(self.noise_scale(), self.iterations)]

    def total_epsilon(self) -> float:
        """The exact epsilon (at ``delta``) of all the events, by Gaussian DP."""
        mu = math.sqrt(self.count_sigma() ** -2 + self.iterations / self.noise_scale() ** 2)
        return gdp_epsilon(mu, self.delta)

    # -- fit and sample ----------------------------------------------------------------------

    fitted_: bool = False

    def fit(self, data: pd.DataFrame) -> Self:
        """Noisy label counts, then one PE run per label on that label's rows."""
        if self.fitted_:
            raise RefitError(
                "LabelledEvolution is already fitted; a second fit would spend the budget again"
            )
        events = self.privacy_events()  # validates the budget before the data is read
        if not isinstance(data, pd.DataFrame) or self.label_column not in data.columns:
            raise InputError(
                f"fit takes a DataFrame with the label column {self.label_column!r}; pass "
                "label_column=..."
            )
        known = data[self.label_column].isin(self.labels)
        if not known.all():
            raise InputError(
                f"{int((~known).sum())} rows have a {self.label_column!r} outside the public "
                f"labels {self.labels}; drop those rows or add their label to labels=[...]"
            )
        streams = self._streams()
        root = Path(self.checkpoint) if self.checkpoint is not None else None
        noisy = self._noisy_counts(data, events[0], streams[0], root)
        sigma, biggest = (
            self.noise_scale(),
            max(self._model(None, None, None, api=False).schedule()),
        )
        needed = math.ceil(sigma * biggest)
        for label, count in zip(self.labels, noisy, strict=True):
            if count < needed:
                raise BudgetError(
                    f"label {label!r} has about {count:.0f} records (a DP count); each vote needs "
                    f"at least {needed} (sigma={sigma:.3g} x samples_per_iteration={biggest}). "
                    f"Use samples_per_iteration <= {max(1, int(count / sigma))}, more epsilon, "
                    "or merge this label with another"
                )
        self.models_: dict[Hashable, PrivateEvolution] = {}
        features = [c for c in data.columns if c != self.label_column]
        for i, label in enumerate(self.labels):
            rows = data.loc[data[self.label_column] == label, features]
            folder = root / f"label-{i}" if root is not None else None
            self.models_[label] = self._model(label, streams[1 + i], folder).fit(rows)
        self.label_counts_ = noisy
        self._sampler = streams[-1]
        self.fitted_ = True
        return self

    def sample(self, n: int | None = None) -> pd.DataFrame:
        """``n`` rows (default: the noisy total), split over labels by the noisy counts."""
        if not self.fitted_:
            raise NotFittedError("LabelledEvolution is not fitted yet; call fit(data) first")
        weights = np.clip(self.label_counts_, 0.0, None)
        n = round(float(weights.sum())) if n is None else n
        if n < 0:
            raise InputError(f"n must be non-negative, got {n}")
        shares = weights / weights.sum() if weights.sum() > 0 else np.full(weights.size, 1.0)
        sizes = np.floor(shares * n).astype(int)
        rest = n - int(sizes.sum())  # largest remainders get the rest
        sizes[np.argsort(-(shares * n - sizes), kind="stable")[:rest]] += 1
        parts = []
        for label, size in zip(self.labels, sizes, strict=True):
            part = self.models_[label].sample(int(size))
            parts.append(part.assign(**{self.label_column: [label] * len(part)}))
        frame = pd.concat(parts, ignore_index=True)
        order = self._sampler.generator().permutation(len(frame))
        return frame.iloc[order].reset_index(drop=True)

    def initial(self) -> pd.DataFrame | None:
        """Every label's first population (iteration 0: what the API wrote before any private
        vote), with its label; None when a label's is not at hand (a resumed run whose folder
        lost it)."""
        if not self.fitted_:
            raise NotFittedError("LabelledEvolution is not fitted yet; call fit(data) first")
        parts = []
        for label in self.labels:
            first = self.models_[label].initial_
            if first is None:
                return None
            part = first.copy()
            part[self.label_column] = np.full(len(part), label, dtype=object)
            parts.append(part)
        return pd.concat(parts, ignore_index=True)

    def describe(self) -> dict[str, Any]:
        """Parameters and what was public, for the privacy card."""
        return {
            "method": "private evolution, per label (parallel composition)",
            "labels": [str(label) for label in self.labels],
            "label_count_sigma": self.count_sigma(),
            "sigma": self.noise_scale(),
            "iterations": self.iterations,
            "epsilon_exact_gdp": self.total_epsilon(),
            "delta": self.delta,
            "public": ["the label values and names", "the APIs and their inputs", "the embedder"],
            "private": ["the records: noisy label counts and noisy nearest-neighbour votes"],
        }

    # -- helpers ------------------------------------------------------------------------------

    def _streams(self) -> list[Any]:
        """Randomness for the counts, a seed source per label, and one for sampling."""
        count = len(self.labels) + 2
        if self.rng is None:
            return [Randomness()] + [None] * len(self.labels) + [Randomness()]
        children = Randomness(self.rng).generator().spawn(count)
        return [Randomness(children[0]), *children[1:-1], Randomness(children[-1])]

    def _noisy_counts(
        self, data: pd.DataFrame, event: PrivacyEvent, rand: Randomness, root: Path | None
    ) -> np.ndarray:
        """The DP label counts; saved with a checkpoint so a resumed run never redraws them."""
        settings = {"labels": [str(label) for label in self.labels], "sigma": self.count_sigma()}
        file = root / COUNTS_FILE if root is not None else None
        if file is not None and file.is_file():
            saved = json.loads(file.read_text())
            if saved.get("settings") != settings:
                raise InputError(
                    f"the checkpoint {str(root)!r} holds label counts of other settings; use a "
                    "new folder"
                )
            return np.asarray(saved["counts"], dtype=float)
        exact = np.array([(data[self.label_column] == label).sum() for label in self.labels])
        mechanism = GaussianMechanism(self.count_sigma(), 1.0, event.label)
        noisy = mechanism.release(exact, rand).astype(float)
        if file is not None and root is not None:
            root.mkdir(parents=True, exist_ok=True)
            temporary = file.with_suffix(".tmp")
            temporary.write_text(json.dumps({"settings": settings, "counts": noisy.tolist()}))
            temporary.replace(file)
        return noisy
