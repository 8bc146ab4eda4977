"""Finding a table's domain with differential privacy, when no schema gives it.

Reading categories or bounds straight from private data leaks them (a rare
category *is* a person).  Here every fact costs budget and is itemized:

* **categories**: a discrete Gaussian histogram over the values present in the
  data, released only above a threshold, so a value held by one record appears
  with probability at most ``tail`` (an additive delta); rarer values fold into
  "(other)".  The same histogram counts each public spelling of a missing value
  ('?', 'NA', ...), so the release writes missing values as the input does.
* **numeric and datetime bounds and bins**: a discrete Gaussian histogram over a fixed
  public grid (integers and dates at two resolutions in one measurement); its range, bins
  and the tails beyond the range are read off it by :mod:`safeshare.dp.ranges`
  (post-processing, no extra cost), and a column whose range stays below the noise is left
  out.
* **budget by need** (``first_share`` < 1): the rest of the budget is a second round, fixed
  in advance, shared by the columns the first round left short and averaged with it.

Plan first (costs are known before data is read), then run:

>>> import pandas as pd
>>> from safeshare.data.domain import Kind
>>> from safeshare.dp.randomness import Randomness
>>> plan = plan_discovery([Target("sex", Kind.CATEGORICAL)], rho=0.5, delta=1e-9)
>>> round(plan.events[0].rho, 3)
0.5
>>> frame = pd.DataFrame({"sex": ["F"] * 500 + ["M"] * 400 + ["X"]})
>>> plan.run(frame, Randomness(1)).columns[0].categories
('F', 'M')
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from safeshare.data.codec import as_numbers
from safeshare.data.domain import Column, Kind, Role
from safeshare.dp.events import PrivacyEvent, ThresholdedGaussianEvent, ZCDPEvent
from safeshare.dp.mechanisms import GaussianMechanism
from safeshare.dp.randomness import Randomness
from safeshare.dp.ranges import (
    coarse_grid_of,
    grid_of,
    histogram,
    numeric_column,
    occupied_threshold,
    two_resolutions,
)
from safeshare.errors import BudgetError

MAX_CATEGORIES = 100
MAX_BINS = 16
SATISFIED = 0.95  # a first round that keeps this share of a column's records needs no second
SECOND_ROUND = "domain, second round (shared by the columns the first left short)"
FED_SHARE = 0.05  # the share of the records a category holds in the starved-column estimate
BELOW_NOISE = "no part of its range stands above the discovery noise at this budget"


@dataclass(frozen=True)
class Target:
    """A column whose domain is to be discovered (with optional public hints)."""

    name: str
    kind: Kind
    role: Role = Role.OTHER
    integer: bool = False
    max_bins: int = MAX_BINS
    minimum: float | None = None
    maximum: float | None = None
    date_format: str = ""  # the layout a date column is read and written in (public or guessed)
    strays_missing: bool = False  # a value that is no number (date) counts as missing


@dataclass(frozen=True)
class DiscoveryResult:
    """The columns discovery found (a numeric or date column whose range stays below the
    noise is missing, with a note) and its notes."""

    columns: list[Column]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DiscoveryPlan:
    """What discovery will measure and spend; :meth:`run` does it.

    The first round measures every target at ``sigma``; a second round of ``second_rho``
    (and ``second_delta`` for its thresholds), when planned, is shared by the targets the
    first left short (:meth:`run`): its total is fixed before any data is read, how it is
    split is decided from the first round's released results."""

    targets: tuple[Target, ...]
    sigma: float
    threshold: int
    tail: float
    max_categories: int = MAX_CATEGORIES
    epsilon: float | None = None  # the release's, to say how much more a starved column needs
    second_rho: float = 0.0
    second_delta: float = 0.0

    @property
    def delta(self) -> float:
        """The additive delta the thresholds spend (0 without categorical targets)."""
        return math.fsum(e.delta for e in self.events)

    @property
    def events(self) -> list[PrivacyEvent]:
        events: list[PrivacyEvent] = []
        for target in self.targets:
            label = f"domain of {target.name!r}"
            if _is_categorical(target):
                events.append(
                    ThresholdedGaussianEvent(self.sigma, 1.0, label, self.threshold, self.tail)
                )
            else:
                events.append(self._mechanism(target, self.sigma).event)
        if self.second_rho > 0:
            events.append(ZCDPEvent(self.second_rho, SECOND_ROUND, self.second_delta))
        return events

    @staticmethod
    def _mechanism(target: Target, sigma: float) -> GaussianMechanism:
        """The noise on a target's counts.  A numeric or date column measured at two
        resolutions (:func:`~safeshare.dp.ranges.coarse_grid_of`) puts each record in one cell of each histogram:
        sensitivity sqrt(2), noise sqrt(2) x sigma, the same cost as one histogram."""
        label = f"domain of {target.name!r}"
        if not two_resolutions(target):
            return GaussianMechanism(sigma, 1.0, label)
        return GaussianMechanism(sigma * math.sqrt(2), math.sqrt(2), label)

    def run(
        self, frame: pd.DataFrame, rand: Randomness, spellings: Spellings | None = None
    ) -> DiscoveryResult:
        """The columns the plan finds in ``frame``; with ``spellings``, a categorical column
        also learns how the input writes a missing value (:class:`Spellings`).

        With a second round (:attr:`second_rho`), the columns the first round left short
        share it: each is counted again and its two noisy histograms are averaged by their
        precision, so a column that needs it gets the budget the easy ones leave.  A
        categorical column is short when its kept categories and missing values hold under
        :data:`SATISFIED` of the records (sex or a yes/no flag is not); a numeric or date
        column always is (a range's need cannot be read off its noisy cells: the sum over
        hundreds of them is mostly noise)."""
        counts = [
            self._measure(target, frame, rand, spellings, self.sigma) for target in self.targets
        ]
        thresholds = [float(self.threshold)] * len(counts)
        found = [self._found(c, self.threshold) for c in counts]
        if self.second_rho > 0:
            short = [
                i for i, c in enumerate(counts) if not self._satisfied(c, found[i][0], len(frame))
            ]
            short = short or list(range(len(counts)))  # nobody short: every column gains
            sigma = math.sqrt(len(short) / (2 * self.second_rho))
            categorical = max(1, sum(_is_categorical(self.targets[i]) for i in short))
            for i in short:
                again = self._measure(self.targets[i], frame, rand, spellings, sigma)
                counts[i] = counts[i].combined(again)
                if _is_categorical(self.targets[i]):
                    share = self.second_delta / categorical
                    thresholds[i] = combined_threshold(counts[i].sigma, share)
                found[i] = self._found(counts[i], thresholds[i])
        columns = [column for column, _ in found if column is not None]
        notes = [note for _, note in found if note]
        starved = [
            (c, threshold)
            for c, threshold, (column, _) in zip(counts, thresholds, found, strict=True)
            if column is None or (column.is_categorical and not column.categories)
        ]
        if starved:
            notes.append(self._starved(starved, len(frame)))
        return DiscoveryResult(columns, notes)

    def _measure(
        self,
        target: Target,
        frame: pd.DataFrame,
        rand: Randomness,
        spellings: Spellings | None,
        sigma: float,
    ) -> _Counts:
        """One target's noisy counts at noise ``sigma`` (sqrt(2) x for two resolutions)."""
        values, mechanism = frame[target.name], self._mechanism(target, sigma)
        if _is_categorical(target):
            exact = values.dropna().astype("string").str.strip().value_counts(sort=False)
            # one histogram: each record is in one cell, a value's or its missing spelling's
            tokens = spellings.of(values) if spellings is not None else pd.Series(dtype=np.int64)
            both = np.concatenate([exact.to_numpy(), tokens.to_numpy()])
            noisy = mechanism.release(both, rand).astype(float)
            return _Counts(target, noisy, mechanism.sigma, exact.index, tokens.index)
        grid, coarse = grid_of(target), coarse_grid_of(target)
        numbers = as_numbers(
            values, target.name, target.kind, date_format=target.date_format,
            strays_missing=target.strays_missing,
        )  # fmt: skip
        numbers = numbers[~np.isnan(numbers)]
        cells = histogram(numbers, grid)
        if coarse is not None:
            cells = np.concatenate([cells, histogram(numbers, coarse)])
        return _Counts(target, mechanism.release(cells, rand).astype(float), mechanism.sigma)

    def _found(self, counts: _Counts, threshold: float) -> tuple[Column | None, str | None]:
        if _is_categorical(counts.target):
            return self._categories(counts, threshold)
        return _bins(counts)

    def _satisfied(self, counts: _Counts, column: Column | None, records: int) -> bool:
        """Whether a first-round categorical result needs no more budget, read from what it
        released: the categories kept and their noisy counts, the missing spellings' counts."""
        if column is None or not column.is_categorical:
            return False
        if len(column.categories) >= self.max_categories:
            return True
        kept = counts.keys.astype("string").isin(list(column.categories))
        held = counts.noisy[: len(counts.keys)][kept].sum() + counts.noisy[len(counts.keys) :].sum()
        return bool(held >= SATISFIED * records)

    def _starved(self, starved: list[tuple[_Counts, float]], records: int) -> str:
        """One line on the columns discovery found nothing in and, where some are categorical,
        what a category needs to be kept: the threshold in records and the epsilon at which
        one held by :data:`FED_SHARE` of the records would clear it.  Only public figures
        enter it (the plan, the thresholds and the record count, which the card reports as
        exact): counts below a threshold are never read, as the threshold's delta requires."""
        line = (
            f"{len(starved)} column(s) found nothing above the discovery noise at this budget "
            f"({_listed(c.target.name for c, _ in starved)})"
        )
        categorical = [(c, t) for c, t in starved if _is_categorical(c.target)]
        if categorical and records > 0:
            threshold = max(t for _, t in categorical)
            least = min(t for _, t in categorical)
            single = round(least) == round(threshold)
            held = f"{threshold:.0f}" if single else f"{least:.0f}-{threshold:.0f}"
            share = f"{threshold / records:.1%}" if single else f"up to {threshold / records:.1%}"
            line += (
                f"; a category is kept once about {held} records hold it "
                f"({share} of the {records} read)"
            )
            if self.epsilon is not None:
                # noise and threshold fall about as 1 / epsilon (exactly as 1 / sqrt(rho))
                fed = self.epsilon * threshold / (FED_SHARE * records)
                line += (
                    f", so the categories of {_listed(c.target.name for c, _ in categorical)} "
                    f"that hold {FED_SHARE:.0%} of the records or more show from --epsilon "
                    f"{fed:.2g}"
                )
        return line + ". A schema that declares their categories or min and max costs nothing"

    def _categories(self, counts: _Counts, threshold: float) -> tuple[Column, str | None]:
        target, values = counts.target, counts.keys
        noisy, noisy_tokens = counts.noisy[: len(values)], counts.noisy[len(values) :]
        kept = [(float(c), str(v)) for v, c in zip(values, noisy, strict=True) if c >= threshold]
        note = None
        if len(kept) > self.max_categories:
            kept = sorted(kept, reverse=True)[: self.max_categories]
            note = (
                f"column {target.name!r}: kept the {self.max_categories} most frequent categories"
            )
        if not kept:
            note = (
                f"column {target.name!r}: no category is frequent enough to release at this budget; "
                "all its values map to '(other)'. Declare its categories in a schema to keep them"
            )
        categories = tuple(sorted(v for _, v in kept))
        label = _missing_label(counts.tokens, noisy_tokens, counts.sigma)
        column = Column(
            target.name, target.kind, target.role, categories=categories, missing_label=label
        )
        return column, note


@dataclass(frozen=True)
class _Counts:
    """One target's noisy counts and their noise's standard deviation: a categorical column's
    values present (``keys``) then its missing spellings (``tokens``); a numeric or date
    column's fine grid then its coarse one."""

    target: Target
    noisy: np.ndarray
    sigma: float
    keys: pd.Index = field(default_factory=lambda: pd.Index([]))
    tokens: pd.Index = field(default_factory=lambda: pd.Index([]))

    def combined(self, again: _Counts) -> _Counts:
        """The precision-weighted mean of two measurements of the same cells (post-processing
        of both): noise sd sigma1 sigma2 / sqrt(sigma1^2 + sigma2^2)."""
        first, second = self.sigma**2, again.sigma**2
        noisy = (self.noisy * second + again.noisy * first) / (first + second)
        return replace(self, noisy=noisy, sigma=math.sqrt(first * second / (first + second)))


def _is_categorical(target: Target) -> bool:
    return target.kind in (Kind.CATEGORICAL, Kind.ORDINAL)


def _bins(counts: _Counts) -> tuple[Column | None, str | None]:
    """A numeric or date column from its noisy histograms (:func:`numeric_column`), or a note
    saying why it is left out."""
    target = counts.target
    column = numeric_column(target, counts.noisy, counts.sigma)
    if column is not None:
        return column, None
    return None, (
        f"column {target.name!r}: {BELOW_NOISE} (noise scale {counts.sigma:.0f} records); "
        "it is left out of the release. Declare its min and max in a schema, or raise --epsilon"
    )


def combined_threshold(sigma: float, delta: float) -> float:
    """The threshold a precision-weighted mean of discrete Gaussian counts with noise sd
    ``sigma`` must clear so that a value held by one record clears it with probability at
    most ``delta``: a weighted sum of discrete Gaussians is sub-Gaussian with that sd
    (Canonne, Kamath & Steinke 2020), so P(1 + noise >= t) <= exp(-(t - 1)^2 / (2 sigma^2))."""
    return 1.0 + sigma * math.sqrt(2 * math.log(1 / delta))


@dataclass(frozen=True)
class Spellings:
    """How the missing values of the rows discovery reads were written.

    ``frame`` holds, for those rows, the spelling of each missing value other than the empty
    field ('?', 'NA', ...; NA elsewhere and in columns it lacks); ``tokens`` is the public
    list of spellings that mean missing.  Discovery counts every token of a categorical
    column in the same histogram as its values (a record falls in one cell: no extra cost)
    and writes missing values back with the spelling whose noisy count is clearly the most
    frequent.
    """

    frame: pd.DataFrame
    tokens: tuple[str, ...]

    def of(self, values: pd.Series) -> pd.Series:
        """The count of each token among the missing values of ``values`` (every token listed)."""
        missing = values.isna().to_numpy()
        if values.name in self.frame.columns:
            written = self.frame[values.name].astype("string").fillna("").to_numpy(dtype=object)
        else:
            written = np.full(len(values), "", dtype=object)
        spelled = pd.Series(written[missing], dtype=object)
        counts = spelled.value_counts().reindex(list(self.tokens), fill_value=0)
        return counts.astype(np.int64)


def _listed(names: Iterable[str], most: int = 5) -> str:
    """``'a', 'b', ...``: up to ``most`` names, sorted."""
    ordered = sorted(names)
    return ", ".join(repr(n) for n in ordered[:most]) + (", ..." if len(ordered) > most else "")


def _missing_label(tokens: pd.Index, noisy: np.ndarray, sigma: float) -> str:
    """The token clearly the most frequent way to write a missing value ('' when none is)."""
    if len(tokens) == 0:
        return ""
    best = int(np.argmax(noisy))
    if str(tokens[best]) == "" or noisy[best] < occupied_threshold(len(tokens), sigma):
        return ""
    return str(tokens[best])


def plan_discovery(
    targets: list[Target],
    rho: float,
    delta: float,
    max_categories: int = MAX_CATEGORIES,
    first_share: float = 1.0,
) -> DiscoveryPlan:
    """Split ``first_share`` of ``rho`` (and of ``delta``, which covers the categorical
    thresholds) evenly over the targets; the rest is the second round's, shared by the
    targets the first leaves short (:meth:`DiscoveryPlan.run`)."""
    if not targets:
        return DiscoveryPlan((), 1.0, 1, 0.0, max_categories)
    if rho <= 0:
        raise BudgetError("domain discovery needs a positive share of the budget")
    if not 0 < first_share <= 1:
        raise BudgetError(f"the first round's share must be in (0, 1], got {first_share}")
    sigma = math.sqrt(len(targets) / (2 * rho * first_share))
    n_categorical = sum(_is_categorical(t) for t in targets)
    threshold, tail = 1, 0.0
    if n_categorical:
        if not 0 < delta < 1:
            raise BudgetError("discovering categories needs a positive delta for its threshold")
        k = _threshold_offset(sigma, delta * first_share / n_categorical)
        threshold, tail = k + 1, gaussian_tail_bound(k, sigma)
    second_rho = rho * (1 - first_share)
    second_delta = delta * (1 - first_share) if n_categorical else 0.0
    return DiscoveryPlan(
        tuple(targets), sigma, threshold, tail, max_categories,
        second_rho=second_rho, second_delta=second_delta,
    )  # fmt: skip


def gaussian_tail_bound(k: int, sigma: float) -> float:
    """An upper bound on P(X >= k) for X discrete Gaussian of scale sigma (k >= 0).

    The normaliser is at least sqrt(2 pi) sigma (Poisson summation) and the tail
    sum is at most its first term plus the Gaussian integral beyond k.
    """
    normal = math.sqrt(2 * math.pi) * sigma
    first = math.exp(-(k * k) / (2 * sigma * sigma))
    return first / normal + 0.5 * math.erfc(k / (sigma * math.sqrt(2)))


def _threshold_offset(sigma: float, delta: float) -> int:
    """The smallest k >= 0 whose tail bound is at most ``delta`` (the bound falls with k), by
    bisection: a handful of steps at any sigma."""
    low, high = -1, max(1, int(sigma))  # tail(low) > delta is taken for low = -1
    while gaussian_tail_bound(high, sigma) > delta:
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        if gaussian_tail_bound(middle, sigma) <= delta:
            high = middle
        else:
            low = middle
    return high
