"""What a noisy histogram over a public grid shows of a numeric or date column: its range, the
tails beyond it and its bins (post-processing of the one measurement
:mod:`safeshare.dp.discovery` makes: no extra cost).

* **grids**: public cell edges, fixed before any data is read: one cell per integer up to
  1,024 for integer columns and log-linear beyond (8 cells per power of two, both signs), the
  same log-linear grid for decimals, months for dates; integers and dates are also counted on
  a coarse grid (log-linear at integer edges, years) in the same measurement.
* **the range**: the outermost cells, or aligned blocks of cells, clearly above the noise
  (:func:`occupied_range`); where none is, the column is not released.
* **the bins**: an integer range of at most 128 values keeps one code per value, else bins of
  about equal noisy mass; the noisy cells inside them are kept for decoding to follow.
* **the tails**: where the range stops short of the data, the runs of cells beyond each end
  whose noisy sum stands above the noise, smoothed to a density falling away from the range.

>>> grid = integer_grid()
>>> noisy = np.zeros(len(grid) - 1)
>>> noisy[np.searchsorted(grid, 20) : np.searchsorted(grid, 60)] = 400.0  # ages 20-59
>>> first, last = occupied_range(noisy, sigma=10.0)
>>> float(grid[first]), float(grid[last + 1])
(20.0, 60.0)
"""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from safeshare.data.codec import singleton_edges
from safeshare.data.domain import Column, Kind, day_number

if TYPE_CHECKING:
    from safeshare.dp.discovery import Target

MAX_SINGLETON_INTEGERS = 128  # integer ranges this short keep one code per value
UNIT_CELLS_UP_TO = 1024  # integers up to this size are counted one cell per value
FALSE_OCCUPANCY = 1e-4  # the chance that noise alone makes a range reach an empty cell
GROWN_SHARE = 0.9
BEYOND_NOISE = 3.5  # deviations the part of a clearing block outside the range must stand above 0
MAX_CELLS = 4096  # the finer histogram kept for decoding, at most this many cells
TAIL_SPANS = (1, 2, 4, 8, 16)  # the runs of cells beyond an end of the range tried as its tail
TAIL_NOISE = 2.5  # deviations a run's noisy sum must stand above 0 to be decoded into


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


def grid_of(target: Target) -> np.ndarray:
    if target.kind is Kind.DATETIME:
        return date_grid()
    return integer_grid() if target.integer else numeric_grid()


def two_resolutions(target: Target) -> bool:
    """Whether the column is also counted on a coarse grid: integers and dates (decimals'
    grid is log-linear already; categories have no grid)."""
    return target.kind is Kind.DATETIME or (target.kind is Kind.NUMERIC and target.integer)


def coarse_grid_of(target: Target) -> np.ndarray | None:
    """The coarser public grid an integer or date column is also counted on, else None."""
    if not two_resolutions(target):
        return None
    if target.kind is Kind.DATETIME:
        return date_grid()[::12]  # years
    # log-linear at integer edges: unit cells up to 16, then 8 cells per power of two
    return np.unique(np.ceil(numeric_grid())) + 0.0


def histogram(numbers: np.ndarray, grid: np.ndarray) -> np.ndarray:
    cells = np.clip(np.searchsorted(grid, numbers, side="right") - 1, 0, len(grid) - 2)
    return np.bincount(cells, minlength=len(grid) - 1)


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


def numeric_column(target: Target, counts: np.ndarray, sigma: float) -> Column | None:
    """A numeric or date column's bounds, bins and cells from its noisy ``counts`` (the fine
    grid's, then the coarse grid's where it has one) at noise ``sigma``; None where no part of
    the range stands above the noise: a range picked from noise would clip every value into
    it, so the column is not released.

    Integers and dates are counted at two resolutions in one measurement: the fine grid
    (one cell per integer, per month) keeps point masses, the coarse one (log-linear, years)
    finds a range spread too thin for any fine cell or block, and its totals rescale the fine
    histogram inside it (post-processing of the same measurement)."""
    grid, coarse = grid_of(target), coarse_grid_of(target)
    noisy, noisy_coarse = counts[: len(grid) - 1], counts[len(grid) - 1 :]
    found = _hull(
        occupied_range(noisy, sigma),
        _on_grid(grid, coarse, noisy_coarse if coarse is not None else None, sigma),
    )
    if found is None:
        return None
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
        strays_missing=target.strays_missing,
    )
    below, above = _tails(target, counts, sigma, column)
    return _with_cells(column, grid[first : last + 2], mass, below, above)


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


Cells = list[tuple[float, float, float]]  # (start, stop, weight), in order


def _tails(target: Target, counts: np.ndarray, sigma: float, column: Column) -> tuple[Cells, Cells]:
    """The tails beyond each end of ``column``'s range that its first and last bins decode
    into (post-processing: no extra cost).

    The range stops where the noise hides the data, not where the data stop: the records
    beyond it are clipped into the end bins (ages 48-70 counted as 47), which would decode
    as a pile at the edge.  Beyond each end, runs of :data:`TAIL_SPANS` cells (coarse ones
    where the column has them) are tried; the longest whose noisy sum stands
    :data:`TAIL_NOISE` deviations above 0 is the tail, its counts smoothed to a density that
    falls away from the range (isotonic regression), so its noise cannot raise a far cell
    over a near one.  Bounds a schema declares are never crossed."""
    grid, coarse = grid_of(target), coarse_grid_of(target)
    fine = counts[: len(grid) - 1]
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
            cells = _outward(coarse, counts[len(grid) - 1 :], end, up, (grid, fine))
        tails.append(_within(_tail(cells, sigma), low, high))
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
