"""Finding a table's domain with differential privacy, when no schema gives it.

Reading categories or bounds straight from private data leaks them (a rare
category *is* a person).  Here every fact costs budget and is itemized:

* **categories**: a discrete Gaussian histogram over the values present in the
  data, released only above a threshold, so a value held by one record appears
  with probability at most ``tail`` (an additive delta); rarer values fold into
  "(other)".  The same histogram counts each public spelling of a missing value
  ('?', 'NA', ...), so the release writes missing values as the input does.
* **numeric and datetime bounds and bins**: a discrete Gaussian histogram over a
  fixed public grid (one cell per integer up to 1,024 for integer columns, log-linear
  beyond and for decimals, months for dates; integers and dates also on a coarse grid,
  log-linear or years, in the same measurement); the bounds are the outermost cells or
  blocks of cells clearly above the noise (a column with none is left out); an integer
  range of at most 128 values keeps one code per value, otherwise bins of roughly equal
  mass are read off the same noisy histograms, which decoding then follows inside each
  bin (post-processing, no extra cost).  Where the range stops short of the data (the noise
  hides a thin tail), the records beyond it are clipped into the end bins, and those decode
  into the tail the same histograms show beyond the range, not onto the edge.
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
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from safeshare.data.codec import as_numbers, singleton_edges
from safeshare.data.domain import Column, Kind, Role, day_number
from safeshare.dp.events import PrivacyEvent, ThresholdedGaussianEvent, ZCDPEvent
from safeshare.dp.mechanisms import GaussianMechanism
from safeshare.dp.randomness import Randomness
from safeshare.errors import BudgetError

MAX_CATEGORIES = 100
MAX_BINS = 16
MAX_SINGLETON_INTEGERS = 128  # integer ranges this short keep one code per value
UNIT_CELLS_UP_TO = 1024  # integers up to this size are counted one cell per value
FALSE_OCCUPANCY = 1e-4  # the chance that noise alone makes a range reach an empty cell
GROWN_SHARE = 0.9
BEYOND_NOISE = 3.5  # deviations the part of a clearing block outside the range must stand above 0
MAX_CELLS = 4096  # the finer histogram kept for decoding, at most this many cells
SATISFIED = 0.95  # a first round that keeps this share of a column's records needs no second
SECOND_ROUND = "domain, second round (shared by the columns the first left short)"
FED_SHARE = 0.05  # the share of the records a category holds in the starved-column estimate
BELOW_NOISE = "no part of its range stands above the discovery noise at this budget"
TAIL_SPANS = (1, 2, 4, 8, 16)  # the runs of cells beyond an end of the range tried as its tail
TAIL_NOISE = 2.5  # deviations a run's noisy sum must stand above 0 to be decoded into


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
        resolutions (:func:`_coarse_grid`) puts each record in one cell of each histogram:
        sensitivity sqrt(2), noise sqrt(2) x sigma, the same cost as one histogram."""
        label = f"domain of {target.name!r}"
        if not _two_resolutions(target):
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
        grid, coarse = _grid(target), _coarse_grid(target)
        numbers = as_numbers(values, target.name, target.kind, date_format=target.date_format)
        numbers = numbers[~np.isnan(numbers)]
        histogram = _histogram(numbers, grid)
        if coarse is not None:
            histogram = np.concatenate([histogram, _histogram(numbers, coarse)])
        return _Counts(target, mechanism.release(histogram, rand).astype(float), mechanism.sigma)

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


def numeric_grid(sub_bins: int = 8, low_exponent: int = -10, high_exponent: int = 41) -> np.ndarray:
    """Public cell edges for numbers: ``sub_bins`` linear cells per power of two, both signs."""
    positive = [
        2.0**k * (1 + j / sub_bins)
        for k in range(low_exponent, high_exponent)
        for j in range(sub_bins)
    ]
    positive.append(2.0**high_exponent)
    return np.array([-x for x in reversed(positive)] + positive)


def date_grid(first_year: int = 1900, last_year: int = 2100) -> np.ndarray:
    """Public cell edges for dates: the first day of every month, as day numbers."""
    months = pd.date_range(f"{first_year}-01-01", f"{last_year}-01-01", freq="MS")
    return np.array([day_number(m.date()) for m in months])


def integer_grid(unit_limit: int = UNIT_CELLS_UP_TO) -> np.ndarray:
    """Public cell edges for integers: one cell per integer up to ``unit_limit`` in size, the
    log-linear :func:`numeric_grid` beyond (so ages, hours and counts keep every value)."""
    log = numeric_grid()
    outer = log[np.abs(log) > unit_limit]
    units = np.arange(-unit_limit, unit_limit + 1, dtype=float)
    return np.concatenate([outer[outer < 0], units, outer[outer > 0]])


def occupied_threshold(cells: int, sigma: float) -> float:
    """The noisy count above which one of ``cells`` cells counts as occupied: noise alone
    crosses it somewhere with probability at most :data:`FALSE_OCCUPANCY`."""
    z = statistics.NormalDist().inv_cdf(1 - FALSE_OCCUPANCY / max(cells, 1))
    return z * sigma


def occupied_range(noisy: np.ndarray, sigma: float) -> tuple[int, int] | None:
    """The first and last cell of the range the noisy histogram shows, or None.

    The range starts at the outermost cells above :func:`occupied_threshold` (where none
    is, it spans the smallest aligned blocks that clear as below, whole).  It then
    takes in every aligned block of 2, 4, 8, ... cells reaching outside it whose noisy sum clears
    the threshold scaled by the square root of the block's length - a tail spread thin over
    many cells (capital gains, long hours) shows in a block before it shows in any cell - and
    whose part outside the range holds more than noise, up to the cell where that part reaches
    :data:`GROWN_SHARE` of its noisy mass.  The blocks of all sizes share the false-occupancy
    chance.
    """
    occupied = np.flatnonzero(noisy >= occupied_threshold(len(noisy), sigma))
    size = 2
    if occupied.size:
        first, last = int(occupied[0]), int(occupied[-1])
    else:  # no cell clears: the range starts at the smallest blocks that do, if any
        while size <= len(noisy) and not _clearing_blocks(noisy, size, sigma).size:
            size *= 2
        if size > len(noisy):
            return None
        clear = _clearing_blocks(noisy, size, sigma)  # whole blocks: where in them is noise
        first, last = int(clear[0]) * size, int(clear[-1]) * size + size - 1
    cumulative = np.concatenate([[0.0], np.cumsum(noisy, dtype=float)])

    def beyond_noise(start: int, stop: int) -> bool:
        """Whether the cells ``[start, stop)`` outside the range found so far hold more than
        noise: a block that clears on a point mass already inside the range (96% of counts
        at 0) must not stretch the range over empty cells."""
        total = cumulative[stop] - cumulative[start]
        return stop > start and total >= BEYOND_NOISE * sigma * math.sqrt(stop - start)

    while size <= len(noisy):
        for block in _clearing_blocks(noisy, size, sigma):
            start, stop = int(block) * size, int(block) * size + size
            above, below = (max(start, last + 1), stop), (start, min(stop, first))
            if beyond_noise(*above):  # a tail beyond the top: to most of that part's mass
                last = max(last, _top_of(noisy, *above))
            if beyond_noise(*below):  # below the bottom, the same from the other side
                first = min(first, _bottom_of(noisy, *below))
        size *= 2
    return first, last


def _clearing_blocks(noisy: np.ndarray, size: int, sigma: float) -> np.ndarray:
    """The aligned blocks of ``size`` cells whose noisy sum clears the scaled threshold."""
    blocks = len(noisy) // size
    sums = noisy[: blocks * size].reshape(blocks, size).sum(axis=1, dtype=float)
    return np.flatnonzero(sums >= occupied_threshold(2 * len(noisy), sigma) * math.sqrt(size))


def _top_of(noisy: np.ndarray, start: int, stop: int) -> int:
    """The cell where the block ``[start, stop)`` reaches :data:`GROWN_SHARE` of its mass."""
    mass = np.cumsum(noisy[start:stop].astype(float))
    return start + int(np.argmax(mass >= GROWN_SHARE * mass[-1]))


def _bottom_of(noisy: np.ndarray, start: int, stop: int) -> int:
    """The same from the block's top down."""
    from_top = np.cumsum(noisy[start:stop][::-1].astype(float))
    return stop - 1 - int(np.argmax(from_top >= GROWN_SHARE * from_top[-1]))


def _bins(counts: _Counts) -> tuple[Column | None, str | None]:
    """The column's bounds and bins from its noisy histograms; None (and a note) where no part
    of the range stands above the noise: a range picked from noise would clip every value
    into it, so the column is not released.

    Integers and dates are counted at two resolutions in one measurement: the fine grid
    (one cell per integer, per month) keeps point masses, the coarse one (log-linear, years)
    finds a range spread too thin for any fine cell or block, and its totals rescale the fine
    histogram inside it (post-processing of the same measurement)."""
    target = counts.target
    grid, coarse = _grid(target), _coarse_grid(target)
    noisy, noisy_coarse = counts.noisy[: len(grid) - 1], counts.noisy[len(grid) - 1 :]
    found = _hull(
        occupied_range(noisy, counts.sigma),
        _on_grid(grid, coarse, noisy_coarse if coarse is not None else None, counts.sigma),
    )
    if found is None:
        return None, (
            f"column {target.name!r}: {BELOW_NOISE} (noise scale {counts.sigma:.0f} records); "
            "it is left out of the release. Declare its min and max in a schema, or raise "
            "--epsilon"
        )
    first, last = found
    lo, hi = float(grid[first]), float(grid[last + 1])
    if target.minimum is not None:
        lo = max(lo, target.minimum) if target.minimum < hi else target.minimum
    if target.maximum is not None:
        hi = min(hi, target.maximum) if target.maximum > lo else target.maximum
    mass = np.maximum(noisy[first : last + 1], 0).astype(float)
    if coarse is not None:
        mass = _rescaled(mass, grid[first : last + 1], coarse, noisy_coarse)
    edges = _equal_mass_edges(grid[first : last + 2], mass, target.max_bins, lo, hi)
    integer = target.integer or target.kind is Kind.DATETIME
    if integer:
        edges = _integer_edges(edges, target.max_bins)
    column = Column(
        target.name,
        target.kind,
        target.role,
        edges=edges,
        integer=integer,
        date_format=target.date_format,
    )
    below, above = _tails(counts, column)
    return _with_cells(column, grid[first : last + 2], mass, below, above), None


Cells = list[tuple[float, float, float]]  # (start, stop, weight), in order


def _tails(counts: _Counts, column: Column) -> tuple[Cells, Cells]:
    """The tails beyond each end of ``column``'s range that its first and last bins decode
    into (post-processing: no extra cost).

    The range stops where the noise hides the data, not where the data stop: the records
    beyond it are clipped into the end bins (ages 48-70 counted as 47), which would decode
    as a pile at the edge.  Beyond each end, runs of :data:`TAIL_SPANS` cells (coarse ones
    where the column has them) are tried; the longest whose noisy sum stands
    :data:`TAIL_NOISE` deviations above 0 is the tail, its counts smoothed to a density that
    falls away from the range (isotonic regression), so its noise cannot raise a far cell
    over a near one.  Bounds a schema declares are never crossed."""
    target = counts.target
    grid, coarse = _grid(target), _coarse_grid(target)
    fine = counts.noisy[: len(grid) - 1]
    lo, hi = column.bounds
    if column.integer:  # the last bin holds its upper edge's integer
        lo, hi = float(math.ceil(lo)), float(math.floor(hi) + 1)
    low = -math.inf if target.minimum is None else target.minimum
    high = math.inf if target.maximum is None else target.maximum
    if target.kind is Kind.NUMERIC:  # numbers on one side of 0 (counts, amounts) stay there
        low = max(low, 0.0) if lo >= 0 else low
        high = min(high, 0.0) if hi <= 0 else high
    tails = []
    for end, up in ((lo, False), (hi, True)):
        if coarse is None:
            cells = _outward(grid, fine, end, up)
        else:
            cells = _outward(coarse, counts.noisy[len(grid) - 1 :], end, up, (grid, fine))
        tails.append(_within(_tail(cells, counts.sigma), low, high))
    return tails[0][::-1], tails[1]


def _outward(
    edges: np.ndarray,
    noisy: np.ndarray,
    end: float,
    up: bool,
    finer: tuple[np.ndarray, np.ndarray] | None = None,
) -> Cells:
    """Up to the longest of :data:`TAIL_SPANS` cells of ``edges`` beyond ``end``, outward.  A
    cell that ``end`` cuts holds records of the range too: its part beyond ``end`` is counted
    by the ``finer`` grid's cells inside it (its edges and noisy counts), else by its share of
    the cell's width."""
    j = int(np.searchsorted(edges, end, side="right" if up else "left")) - 1  # the cell at end
    cells: Cells = []
    if 0 <= j < len(noisy) and edges[j] < end < edges[j + 1]:
        a, b = (end, float(edges[j + 1])) if up else (float(edges[j]), end)
        if finer is None:
            weight = float(noisy[j]) * (b - a) / float(edges[j + 1] - edges[j])
        else:
            fine_edges, fine_noisy = finer
            inside = (fine_edges[:-1] >= a) & (fine_edges[1:] <= b)
            weight = float(fine_noisy[inside].sum())
        cells.append((a, b, weight))
        j += 1 if up else -1
    while 0 <= j < len(noisy) and len(cells) < TAIL_SPANS[-1]:
        cells.append((float(edges[j]), float(edges[j + 1]), float(noisy[j])))
        j += 1 if up else -1
    return cells


def _within(cells: Cells, low: float, high: float) -> Cells:
    """The parts of ``cells`` between ``low`` and ``high``, their weights by the share kept."""
    kept = [
        (max(a, low), min(b, high), w * (min(b, high) - max(a, low)) / (b - a)) for a, b, w in cells
    ]
    return [(a, b, w) for a, b, w in kept if b > a]


def _tail(cells: Cells, sigma: float) -> Cells:
    """The tail read off ``cells`` (outward from a range's end) at noise ``sigma``: the longest
    run of :data:`TAIL_SPANS` cells whose noisy sum stands :data:`TAIL_NOISE` deviations above
    0, as a density that falls away from the range, or nothing."""
    sums = np.cumsum([w for _, _, w in cells])
    spans = [k for k in TAIL_SPANS if k <= len(cells)]
    kept = [k for k in spans if sums[k - 1] >= TAIL_NOISE * sigma * math.sqrt(k)]
    if not kept:
        return []
    run = cells[: max(kept)]
    widths = np.array([b - a for a, b, _ in run])
    density = _falling(np.array([w for _, _, w in run]) / widths, widths)
    tail = [(a, b, float(max(d, 0.0) * (b - a))) for (a, b, _), d in zip(run, density, strict=True)]
    while tail and tail[-1][2] == 0:  # the density fell to 0: nothing decodes further out
        tail.pop()
    return tail


def _falling(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The non-increasing sequence closest to ``values`` in weighted least squares (pool
    adjacent violators).

    >>> _falling(np.array([3.0, 1.0, 2.0]), np.ones(3)).tolist()
    [3.0, 1.5, 1.5]
    """
    pools: list[list[float]] = []  # [mean, weight, cells]
    for value, weight in zip(values.tolist(), weights.tolist(), strict=True):
        pools.append([value, weight, 1])
        while len(pools) > 1 and pools[-2][0] < pools[-1][0]:
            mean, weight2, n2 = pools.pop()
            previous = pools[-1]
            total = previous[1] + weight2
            previous[0] = (previous[0] * previous[1] + mean * weight2) / total
            previous[1], previous[2] = total, previous[2] + n2
    return np.repeat([p[0] for p in pools], [int(p[2]) for p in pools])


def _histogram(numbers: np.ndarray, grid: np.ndarray) -> np.ndarray:
    cells = np.clip(np.searchsorted(grid, numbers, side="right") - 1, 0, len(grid) - 2)
    return np.bincount(cells, minlength=len(grid) - 1)


def _grid(target: Target) -> np.ndarray:
    if target.kind is Kind.DATETIME:
        return date_grid()
    return integer_grid() if target.integer else numeric_grid()


def _two_resolutions(target: Target) -> bool:
    """Whether the column is also counted on a coarse grid: integers and dates (decimals'
    grid is log-linear already; categories have no grid)."""
    return target.kind is Kind.DATETIME or (target.kind is Kind.NUMERIC and target.integer)


def _coarse_grid(target: Target) -> np.ndarray | None:
    """The coarser public grid an integer or date column is also counted on, else None."""
    if not _two_resolutions(target):
        return None
    if target.kind is Kind.DATETIME:
        return date_grid()[::12]  # years
    # log-linear at integer edges: unit cells up to 16, then 8 cells per power of two
    return np.unique(np.ceil(numeric_grid())) + 0.0


def _on_grid(
    grid: np.ndarray, coarse: np.ndarray | None, noisy: np.ndarray | None, sigma: float
) -> tuple[int, int] | None:
    """The coarse histogram's range, as the first and last cell of the fine grid it covers."""
    if coarse is None or noisy is None:
        return None
    found = occupied_range(noisy, sigma)
    if found is None:
        return None
    low, high = coarse[found[0]], coarse[found[1] + 1]
    # the fine cells that start inside [low, high): an integer's cell starts at the integer
    first = int(np.searchsorted(grid, low, side="left"))
    last = int(np.searchsorted(grid, high, side="left")) - 1
    return max(first, 0), min(max(last, first), len(grid) - 2)


def _hull(*ranges: tuple[int, int] | None) -> tuple[int, int] | None:
    found = [r for r in ranges if r is not None]
    if not found:
        return None
    return min(r[0] for r in found), max(r[1] for r in found)


def _rescaled(
    mass: np.ndarray, starts: np.ndarray, coarse: np.ndarray, noisy: np.ndarray
) -> np.ndarray:
    """The fine cells' mass, rescaled so that the cells in each coarse cell add up to its
    noisy count (spread evenly where the fine cells show nothing): where the data are spread
    thin, the fine cells hold mostly noise and the coarse count says how much is there."""
    owner = np.clip(np.searchsorted(coarse, starts, side="right") - 1, 0, len(noisy) - 1)
    fine = np.bincount(owner, weights=mass, minlength=len(noisy))[owner]
    cells = np.bincount(owner, minlength=len(noisy))[owner]
    share = np.where(fine > 0, mass / np.where(fine > 0, fine, 1.0), 1.0 / cells)
    return np.maximum(noisy, 0).astype(float)[owner] * share


def _with_cells(
    column: Column, grid: np.ndarray, mass: np.ndarray, below: Cells, above: Cells
) -> Column:
    """``column`` with the noisy grid histogram inside its bounds and the tails beyond them
    (:func:`_tails`), for decoding (post-processing of the same measurement: no extra cost);
    unchanged when it holds no mass or too many cells."""
    lo, hi = column.bounds
    singletons = column.integer and column.n_values == math.floor(hi) - math.ceil(lo) + 1
    if singletons and not (below or above):
        return column  # one code per value and no tail: nothing to follow inside a bin
    if column.integer:  # the last integer bin is closed: its cell reaches past the top edge
        hi = max(hi, math.floor(hi) + 1.0)
    cells = np.unique(np.concatenate([[lo, hi], grid[(grid > lo) & (grid < hi)]]))
    pieces = np.clip(np.searchsorted(grid, cells[:-1], side="right") - 1, 0, len(mass) - 1)
    weights = mass[pieces]
    if below:
        cells = np.concatenate([[a for a, _, _ in below], cells])
        weights = np.concatenate([[w for _, _, w in below], weights])
    if above:
        cells = np.concatenate([cells, [b for _, b, _ in above]])
        weights = np.concatenate([weights, [w for _, _, w in above]])
    if weights.sum() <= 0 or len(weights) > MAX_CELLS:
        return column
    return replace(column, cells=tuple(cells.tolist()), weights=tuple(weights.tolist()))


def _equal_mass_edges(
    cell_edges: np.ndarray, mass: np.ndarray, bins: int, lo: float, hi: float
) -> tuple[float, ...]:
    """Cut the cells into at most ``bins`` groups of about equal mass, within [lo, hi]: a cell
    holding more than a group's share (a point mass: 0 gains) is a group of its own, and the
    other groups share the rest of the mass equally (a point mass does not eat the tail's)."""
    if mass.sum() <= 0:
        return tuple(float(e) for e in np.linspace(lo, hi, bins + 1))
    heavy = np.flatnonzero(mass > mass.sum() / bins)
    cuts = {0, len(mass), *heavy.tolist(), *(heavy + 1).tolist()}
    rest = mass.copy()
    rest[heavy] = 0.0
    groups = bins - (len(cuts) - 1)
    if rest.sum() > 0 and groups > 1:
        cumulative = np.concatenate([[0.0], np.cumsum(rest)]) / rest.sum()
        for q in np.arange(1, groups) / groups:
            cuts.add(int(np.argmin(np.abs(cumulative - q))))
    inner = [float(cell_edges[c]) for c in sorted(cuts) if lo < cell_edges[c] < hi]
    return tuple([lo, *inner, hi])


def _integer_edges(edges: tuple[float, ...], max_bins: int) -> tuple[float, ...]:
    """Integer bin edges; one bin per value when the range holds few integers."""
    lo, hi = math.ceil(edges[0]), max(math.ceil(edges[-1]) - 1, math.ceil(edges[0]))
    if hi - lo + 1 <= max(MAX_SINGLETON_INTEGERS, max_bins):
        return singleton_edges(lo, hi)
    inner = sorted({math.ceil(e) for e in edges[1:-1]} - {lo} if len(edges) > 2 else set())
    inner = [e for e in inner if lo < e < hi]
    return tuple(float(e) for e in [lo, *inner, hi])
