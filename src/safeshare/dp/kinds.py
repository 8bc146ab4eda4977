"""Column kinds measured with differential privacy, when no schema gives them.

Whether a column holds numbers, dates in some layout or words decides how it is released,
and a guess read straight off the records leaks: one text value in ``age`` would turn the
column categorical, one repeated value would keep a record-number column.  Here each
record's value in a column falls in one *class* (:data:`CLASSES`: missing, an integer, a
decimal, a date in one of the public layouts or in ISO 8601, text); one discrete Gaussian
measurement releases every guessed column's class histogram and its count of distinct
values.  One record moves one class count and the distinct count of each column by one: L2
sensitivity sqrt(2 x columns).

The decisions are post-processing of the noisy counts (:func:`decide`):

* a kind (numbers, dates) is taken where the records that are not of it are no more than
  1% of those present or than the noise explains (:data:`Z` deviations), so a clean column
  keeps its kind at any noise; the few values of another class are then released as
  missing.  A date in another layout (``2013.03.05``) is text: every engine reads a date
  column in its layout, then as ISO 8601, and nothing else
  (:func:`~safeshare.data.dates.parse_dates`);
* a column of near-unique values is dropped where its noisy distinct share reaches 80% of
  the values present (also where too few are present to tell its kind): dropping one with
  some repeats costs nothing, as DP discovery would fold its rare values anyway.  A record
  number (integers, all distinct) needs clear evidence, the noisy share minus its noise,
  since numbers with a few repeats are worth keeping.  Names mark identifiers as they always
  do (:func:`~safeshare.data.inference.identifier_by_name`); text is one class, so e-mail
  addresses and free text are found by their distinct values;
* where too few values are present to tell (under :data:`MIN_PRESENT_SIGMAS` deviations), the
  column is categorical, with a note.

Plan first (the cost is known before the data is read), then run:

>>> import pandas as pd
>>> from safeshare.dp.randomness import Randomness
>>> frame = pd.DataFrame({"age": [str(20 + i % 50) for i in range(4000)],
...                       "seen": ["2021-03-%02d" % (1 + i % 28) for i in range(4000)]})
>>> plan = plan_kinds(["age", "seen"], rho=0.5)
>>> round(plan.event.rho, 6)
0.5
>>> [(g.name, g.kind.value, g.integer) for g in plan.run(frame, Randomness(0)).guesses]
[('age', 'numeric', True), ('seen', 'datetime', True)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from safeshare.data.dates import (
    DATE_FORMATS,
    ISO,
    read_iso,
    read_layout,
    unpadded_layout,
    write_dates,
)
from safeshare.data.domain import Kind
from safeshare.data.inference import (
    DATE_SHAPE,
    MIN_ROWS_FOR_UNIQUENESS,
    RECORD_NUMBER,
    GuessedColumn,
    identifier_by_name,
)
from safeshare.dp.events import GaussianEvent
from safeshare.dp.mechanisms import GaussianMechanism
from safeshare.dp.randomness import Randomness
from safeshare.errors import BudgetError

Z = 4.0  # deviations of noise a kind allows for: a clean column misjudged in ~1 of 30,000
MOSTLY = 0.99  # as without DP: the share of present records that makes a column of a kind
MIN_PRESENT_SIGMAS = 2 * Z * math.sqrt(3)  # fewer present values (in deviations of the noise)
# and text could pass for numbers or dates within the noise Z allows: too few to tell
NEAR_UNIQUE_DP = 0.8  # below the exact guess's 90%: a column this distinct keeps no category
# under DP discovery anyway, and at 90% a column of all-distinct codes is missed in ~1 of 20
# draws on COMPAS (5,771 records, noise 268)
UNIQUE_PRESENT_SIGMAS = 5.0  # the least present values (in deviations) a distinct share needs
DISTINCT_NUMBERS = 0.95  # a distinct share of integers that, clearly reached, marks a record number
LABEL = "column kinds"


def _swapped(layout: str) -> str:
    return layout.replace("%m", "\0").replace("%d", "%m").replace("\0", "%d")


def _layout_sets() -> tuple[tuple[int, ...], ...]:
    """The sets of layouts one value can read in: each layout alone, and each month-first /
    day-first pair (``03/05/2013`` reads in both)."""
    singles = [(i,) for i in range(len(DATE_FORMATS))]
    pairs = [
        (i, DATE_FORMATS.index(_swapped(layout)))
        for i, layout in enumerate(DATE_FORMATS)
        if _swapped(layout) in DATE_FORMATS[i + 1 :]
    ]
    return (*singles, *pairs)


LAYOUT_SETS = _layout_sets()
PADDINGS = ("", "zero-padded", "unpadded")  # how a date's month and day are written
MISSING, INTEGER, DECIMAL = 0, 1, 2
FIRST_DATE = 3
TEXT = FIRST_DATE + len(LAYOUT_SETS) * len(PADDINGS)  # a date in no layout read is text
ISO_LAYOUTS = tuple(i for i, layout in enumerate(DATE_FORMATS) if layout.startswith("%Y-%m-%d"))
"""The layouts whose dates every engine also reads as ISO 8601, whatever a column's layout."""
CLASSES: tuple[str, ...] = (
    "missing",
    "integer",
    "decimal",
    *(
        f"date in {' or '.join(DATE_FORMATS[i] for i in layouts)}{', ' + pad if pad else ''}"
        for layouts in LAYOUT_SETS
        for pad in PADDINGS
    ),
    "text",
)
"""The classes a value falls in, in the order the measurement releases their counts."""


def _date_class(layout_set: int, padding: int) -> int:
    return FIRST_DATE + layout_set * len(PADDINGS) + padding


@dataclass(frozen=True)
class Profile:
    """One column's counts: records per class (:data:`CLASSES`) and distinct present values;
    exact before the measurement, noisy after."""

    counts: np.ndarray
    distinct: float

    @classmethod
    def of(cls, values: pd.Series) -> Profile:
        """The exact profile of ``values`` (read as text, as the release reads them)."""
        counts = np.zeros(len(CLASSES), dtype=np.int64)
        text = values.astype("string")
        blank = text.isna() | text.str.strip().eq("")  # missing, as the codec reads it
        counts[MISSING] = int(blank.sum())
        tally = text[~blank].value_counts(sort=False)
        text = pd.Series(tally.index, dtype="string")
        weights = tally.to_numpy(dtype=np.int64)
        np.add.at(counts, classes_of(text), weights)
        return cls(counts, float(len(text)))

    def vector(self) -> np.ndarray:
        return np.append(self.counts, int(self.distinct))

    @classmethod
    def from_vector(cls, vector: np.ndarray) -> Profile:
        return cls(np.asarray(vector[:-1], dtype=float), float(vector[-1]))


def classes_of(text: pd.Series) -> np.ndarray:
    """The class (an index into :data:`CLASSES`) of each present value in ``text``.

    >>> [CLASSES[c] for c in classes_of(pd.Series(["7", "7.5", "3/15/2013", "red"]))]
    ['integer', 'decimal', 'date in %m/%d/%Y, unpadded', 'text']
    """
    text = text.reset_index(drop=True)
    out = np.full(len(text), TEXT, dtype=np.int64)
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    numeric = ~np.isnan(numbers)
    integral = numeric & np.isfinite(numbers) & (np.mod(np.where(numeric, numbers, 0), 1) == 0)
    out[numeric] = DECIMAL
    out[integral] = INTEGER
    shaped = np.flatnonzero(
        ~numeric & text.str.contains(DATE_SHAPE, regex=True).to_numpy(dtype=bool, na_value=False)
    )
    if shaped.size:
        out[shaped] = _date_classes(text.iloc[shaped])
    return out


def _date_classes(text: pd.Series) -> np.ndarray:
    """The date class of each date-shaped value (:data:`TEXT` where it reads as no date)."""
    stripped = text.str.strip()
    read = np.stack(
        [read_layout(stripped, layout).notna().to_numpy() for layout in DATE_FORMATS], axis=1
    )
    which = {layouts: i for i, layouts in enumerate(LAYOUT_SETS)}
    iso = _date_class(which[(0,)], 0)  # ISO 8601 outside the listed layouts
    out = np.where(read_iso(stripped).notna().to_numpy(), iso, TEXT)
    masks = read.astype(np.int64) @ (1 << np.arange(len(DATE_FORMATS), dtype=np.int64))
    for mask in np.unique(masks[masks > 0]):
        layouts = tuple(i for i in range(len(DATE_FORMATS)) if mask >> i & 1)
        index = which.get(layouts, which[(layouts[0],)])  # an unforeseen set: its first layout
        rows = np.flatnonzero(masks == mask)
        pads = _paddings(stripped.iloc[rows], DATE_FORMATS[layouts[0]])
        out[rows] = FIRST_DATE + index * len(PADDINGS) + pads  # _date_class of each
    return out


def _paddings(text: pd.Series, layout: str) -> np.ndarray:
    """Per value, whether only the zero-padded writing (1) or only the unpadded one (2) of
    ``layout`` gives it back as written; 0 where both or neither do."""
    parsed = read_layout(text, layout)
    unpadded = unpadded_layout(layout)
    padded_match = write_dates(parsed, layout).to_numpy() == text.to_numpy()
    unpadded_match = write_dates(parsed, unpadded).to_numpy() == text.to_numpy()
    return np.where(
        padded_match & ~unpadded_match, 1, np.where(unpadded_match & ~padded_match, 2, 0)
    )


@dataclass(frozen=True)
class KindsResult:
    """The guesses, one per measured column, and notes that quote DP figures only;
    ``wanted_sigma``: where some columns had too few values present to tell their kind, the
    noise at which the one with the most (by its noisy count) would be told."""

    guesses: list[GuessedColumn]
    notes: list[str] = field(default_factory=list)
    wanted_sigma: float | None = None


@dataclass(frozen=True)
class KindsPlan:
    """The measurement of ``columns``' kinds at noise ``sigma`` per count; :meth:`run` does it."""

    columns: tuple[str, ...]
    sigma: float

    @property
    def mechanism(self) -> GaussianMechanism:
        return GaussianMechanism(self.sigma, math.sqrt(2 * len(self.columns)), LABEL)

    @property
    def event(self) -> GaussianEvent:
        return self.mechanism.event

    def rho_at(self, sigma: float) -> float:
        """The zCDP cost of this measurement at noise ``sigma`` (:func:`plan_kinds` inverted):
        what a job works the least --epsilon for :attr:`KindsResult.wanted_sigma` out from."""
        return self.mechanism.event.rho * (self.sigma / sigma) ** 2

    def counts(self, frame: pd.DataFrame) -> np.ndarray:
        """The exact counts the measurement releases: each column's profile, end to end."""
        return np.concatenate([Profile.of(frame[name]).vector() for name in self.columns])

    def noisy_profiles(self, counts: np.ndarray, rand: Randomness) -> list[Profile]:
        """One release of every count of :meth:`counts`, as each column's noisy profile."""
        noisy = self.mechanism.release(counts, rand).reshape(len(self.columns), -1)
        return [Profile.from_vector(vector) for vector in noisy]

    def run(self, frame: pd.DataFrame, rand: Randomness) -> KindsResult:
        """Measure the columns' profiles in ``frame`` (one release of every count) and decide."""
        profiles = self.noisy_profiles(self.counts(frame), rand)
        rows = len(frame)
        guesses = [
            decide(name, profile, rows, self.sigma)
            for name, profile in zip(self.columns, profiles, strict=True)
        ]
        notes = [
            note
            for guess, profile in zip(guesses, profiles, strict=True)
            if (note := stray_note(guess, profile, rows, self.sigma))
        ]
        unsure = {
            g.name: rows - p.counts[MISSING]
            for g, p in zip(guesses, profiles, strict=True)
            if g.kind is Kind.CATEGORICAL and too_few(p, rows, self.sigma)
        }
        most = max(unsure.values(), default=0.0)
        wanted = most / (MIN_PRESENT_SIGMAS + Z) if most > 0 else None  # Z: its own noise
        if unsure:
            notes.append(
                f"too few values are present in {_listed(list(unsure))} to tell numbers, dates and "
                f"text apart against the kinds' noise (about {self.sigma:,.0f} records per "
                "count): released as categorical; declare their kinds in a schema, or raise "
                "--epsilon"
            )
        return KindsResult(guesses, notes, wanted)


def least_epsilon_note(epsilon: float) -> str:
    """The note that says from which --epsilon the kinds of a table too small for them show
    (the job that spends the budget works ``epsilon`` out from :attr:`KindsResult.wanted_sigma`).

    >>> "show from about --epsilon 2.7 " in least_epsilon_note(2.71)
    True
    """
    return (
        f"at this table's size the kinds of those columns show from about --epsilon {epsilon:.2g} "
        "(for the one with the most values present); a schema that declares their kinds costs "
        "nothing"
    )


def _listed(names: list[str], most: int = 5) -> str:
    shown = ", ".join(repr(n) for n in names[:most])
    more = len(names) - most
    return f"columns {shown}" + (f" and {more} more" if more > 0 else "")


def plan_kinds(columns: Sequence[str], rho: float) -> KindsPlan:
    """Spend ``rho`` (zCDP) on the kinds of ``columns``: noise sqrt(columns / rho) per count."""
    if not columns:
        raise BudgetError("no column's kind is to be measured")
    if not (math.isfinite(rho) and rho > 0):
        raise BudgetError(f"measuring column kinds needs a positive rho, got {rho}")
    return KindsPlan(tuple(columns), math.sqrt(len(columns) / rho))


def decide(name: str, profile: Profile, rows: int, sigma: float) -> GuessedColumn:
    """The kind of column ``name`` from its noisy ``profile`` over ``rows`` records.

    >>> counts = np.zeros(len(CLASSES)); counts[INTEGER] = 900; counts[MISSING] = 100
    >>> decide("visits", Profile(counts, 40.0), rows=1000, sigma=5.0)
    GuessedColumn(name='visits', kind=<Kind.NUMERIC: 'numeric'>, integer=True, identifier=None, date_format='')
    """
    c = profile.counts
    present = rows - c[MISSING]
    if not too_few(profile, rows, sigma):
        numbers = c[INTEGER] + c[DECIMAL]
        if _within_noise(present - numbers, present, sigma, cells=3):
            integer = bool(c[DECIMAL] <= Z * sigma)
            reason = identifier_by_name(name)
            if reason is None and integer and _record_number(profile.distinct, numbers, sigma):
                reason = RECORD_NUMBER
            return GuessedColumn(name, Kind.NUMERIC, integer=integer, identifier=reason)
        not_dates = c[INTEGER] + c[DECIMAL] + c[TEXT]
        if _within_noise(not_dates, present, sigma, cells=3):
            return GuessedColumn.of_dates(name, _layout(c, sigma))
    reason = identifier_by_name(name)
    if reason is None and _near_unique(profile.distinct, present, sigma):
        reason = "near-unique values"
    return GuessedColumn(name, Kind.TEXT if reason else Kind.CATEGORICAL, identifier=reason)


def _near_unique(distinct: float, present: float, sigma: float) -> bool:
    """Categories nearly all distinct (:data:`NEAR_UNIQUE_DP` of those present, noisy), among
    enough present values to stand above the noise: DP discovery would fold all of them."""
    enough = max(MIN_ROWS_FOR_UNIQUENESS, UNIQUE_PRESENT_SIGMAS * sigma)
    return bool(present >= enough and distinct >= NEAR_UNIQUE_DP * present)


def stray_note(guess: GuessedColumn, profile: Profile, rows: int, sigma: float) -> str | None:
    """Where a numeric or date column clearly holds values of another class: about how many
    (a DP estimate), and that they are released as missing."""
    if guess.identifier is not None or guess.kind not in (Kind.NUMERIC, Kind.DATETIME):
        return None
    c = profile.counts
    present = rows - c[MISSING]
    if guess.kind is Kind.NUMERIC:
        others, cells = present - c[INTEGER] - c[DECIMAL], 3
        what = "numbers"
    else:
        unread = _unread_dates(guess.date_format)
        others, cells = c[INTEGER] + c[DECIMAL] + c[TEXT] + c[unread].sum(), 3 + len(unread)
        what = f"dates in {guess.date_format or 'ISO 8601'}"
    if others <= Z * sigma * math.sqrt(cells):
        return None
    return (
        f"column {guess.name!r} reads as {guess.kind}, but about {round(others):,} of its "
        f"values (a DP estimate) are not {what}: they are released as missing; declare the "
        "column in a schema (kind: categorical keeps them as text)"
    )


def _unread_dates(date_format: str) -> list[int]:
    """The date classes a column read in ``date_format`` leaves unread: dates in the other
    layouts, which every engine releases as missing (:func:`~safeshare.data.dates.parse_dates`
    reads the column's layout, then ISO 8601)."""
    layout = DATE_FORMATS.index(date_format.replace("%-", "%")) if date_format else 0
    read = {*ISO_LAYOUTS, layout}
    return [
        _date_class(index, pad)
        for index, layouts in enumerate(LAYOUT_SETS)
        if not read.intersection(layouts)
        for pad in range(len(PADDINGS))
    ]


def too_few(profile: Profile, rows: int, sigma: float) -> bool:
    """Whether too few values are present (under :data:`MIN_PRESENT_SIGMAS` deviations of the
    noise) to tell numbers, dates and text apart."""
    return bool(rows - profile.counts[MISSING] < MIN_PRESENT_SIGMAS * sigma)


def _within_noise(others: float, present: float, sigma: float, cells: int) -> bool:
    """Whether ``others`` records of another class are few: at most 1 - :data:`MOSTLY` of those
    present, or no more than :data:`Z` deviations of their noise (a sum of ``cells`` counts)."""
    return bool(others <= max((1 - MOSTLY) * present, Z * sigma * math.sqrt(cells)))


def _clearly(part: float, whole: float, share: float, sigma: float) -> bool:
    """Whether ``part`` is at least ``share`` of ``whole`` beyond :data:`Z` deviations of noise."""
    return bool(part - Z * sigma >= share * (whole + Z * sigma))


def _record_number(distinct: float, numbers: float, sigma: float) -> bool:
    """Integers that are all distinct, clearly (a few repeats hide in the noise)."""
    return numbers >= MIN_ROWS_FOR_UNIQUENESS and _clearly(
        distinct, numbers, DISTINCT_NUMBERS, sigma
    )


def _layout(counts: np.ndarray, sigma: float) -> str:
    """The layout of :data:`DATE_FORMATS` that reads the most records (ISO where none clearly
    reads any), written unpadded where more of its values are unpadded than padded."""
    reads = np.zeros(len(DATE_FORMATS))
    padded = np.zeros(len(DATE_FORMATS))
    unpadded = np.zeros(len(DATE_FORMATS))
    for index, layouts in enumerate(LAYOUT_SETS):
        cells = counts[[_date_class(index, pad) for pad in range(len(PADDINGS))]]
        for i in layouts:
            reads[i] += cells.sum()
            padded[i] += cells[1]
            unpadded[i] += cells[2]
    best = int(np.argmax(reads))
    if best == 0 or reads[best] <= Z * sigma * math.sqrt(2 * len(PADDINGS)):
        return ISO
    return (
        unpadded_layout(DATE_FORMATS[best]) if unpadded[best] > padded[best] else DATE_FORMATS[best]
    )
