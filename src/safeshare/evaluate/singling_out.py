"""Singling out: can the release be used to write a description that fits exactly one person?

The attacker reads the release and writes predicates that match exactly one released record:
a conjunction over a few columns of a released record's values (``==`` for categories, ``<=``
or ``>=`` toward the extreme side of the median for ordered columns, which makes predicates
rarer).  A predicate *singles out* a data set when exactly one of its records satisfies it.
Success is counted on the training records and on an equal number of control records the
release was not made from; random predicates (random columns, values and operators) are the
baseline.  This is the attack of Giomi et al. (PoPETs 2023), written on integer codes: every
(column, operator, value) condition is a bitset of the records it matches, so a predicate's
matches are the population count of the AND of a few bitsets (about a microsecond each).

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain(tuple(Column(c, Kind.CATEGORICAL, categories=tuple("abcdefgh")) for c in "xyz"))
>>> rng = np.random.default_rng(0)
>>> def table(seed): return Table({c: np.random.default_rng(seed + i).integers(0, 8, 300)
...                                for i, c in enumerate("xyz")}, domain)
>>> train, control = table(0), table(10)
>>> copied = singling_out(train, train, control, rng, attacks=100)
>>> copied.risk > 0.5, copied.significant
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from safeshare.data.domain import Kind
from safeshare.data.table import Table
from safeshare.evaluate.attack_risk import AttackResult, attack_risk, check_attacks, equal_sizes

THREAT = (
    "An attacker holding only the release writes a description (a few attribute values) that "
    "it believes fits exactly one real person - the first step of re-identification."
)
EQ, LE, GE = 0, 1, 2
_BATCH = 4096
_BYTE_COUNTS = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


@dataclass(frozen=True)
class Predicates:
    """Conjunctions: per predicate and slot, a column position, an operator and a code."""

    columns: np.ndarray  # (n, width)
    operators: np.ndarray
    values: np.ndarray

    def __len__(self) -> int:
        return len(self.columns)


class Bitsets:
    """For every column, operator and code, the set of a table's records it matches, as bits."""

    def __init__(self, table: Table) -> None:
        self.sizes = np.array(table.domain.shape())
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])
        blocks = {EQ: [], LE: [], GE: []}  # type: dict[int, list[np.ndarray]]
        for j, name in enumerate(table.columns):
            codes = table.column(name)
            equal = np.packbits(codes[None, :] == np.arange(self.sizes[j])[:, None], axis=1)
            blocks[EQ].append(equal)
            blocks[LE].append(np.bitwise_or.accumulate(equal, axis=0))
            blocks[GE].append(np.bitwise_or.accumulate(equal[::-1], axis=0)[::-1])
        pad = (-blocks[EQ][0].shape[1]) % 8
        self.bits = np.stack(
            [np.pad(np.concatenate(blocks[op]), ((0, 0), (0, pad))) for op in (EQ, LE, GE)]
        ).view(np.uint64)

    def count(self, predicates: Predicates) -> np.ndarray:
        """How many records each predicate matches."""
        out = np.empty(len(predicates), dtype=np.int64)
        for start in range(0, len(predicates), _BATCH):
            stop = min(start + _BATCH, len(predicates))
            rows = self.offsets[predicates.columns[start:stop]] + predicates.values[start:stop]
            ops = predicates.operators[start:stop]
            matched = self.bits[ops[:, 0], rows[:, 0]]
            for slot in range(1, rows.shape[1]):
                matched = matched & self.bits[ops[:, slot], rows[:, slot]]
            out[start:stop] = _popcount(matched)
        return out


def _popcount(words: np.ndarray) -> np.ndarray:
    count = getattr(np, "bitwise_count", None)
    if count is not None:
        return np.asarray(count(words).sum(axis=1, dtype=np.int64))
    return _BYTE_COUNTS[words.view(np.uint8)].sum(axis=1, dtype=np.int64)


def singling_out(
    release: Table,
    train: Table,
    control: Table,
    rng: np.random.Generator,
    *,
    attacks: int = 500,
    width: int = 3,
    max_attempts: int = 1_000_000,
) -> AttackResult:
    """Singling out with ``width`` columns per predicate (1 is the univariate attack)."""
    check_attacks(attacks, len(release), "the release")
    main_set, control_set = equal_sizes(train, control, rng)
    check_attacks(attacks, len(control_set), "the smaller of train and control")
    width = max(1, min(width, len(release.columns)))
    found = _predicates(release, attacks, width, max_attempts, rng)
    n = len(found)
    main_bits = Bitsets(main_set)
    main = int((main_bits.count(found) == 1).sum()) if n else 0
    ctrl = int((Bitsets(control_set).count(found) == 1).sum()) if n else 0
    guesses = _random_predicates(release, max(n, 1), width, rng)
    base = int((main_bits.count(guesses) == 1).sum())
    return attack_risk(
        f"singling out ({width} column{'s' if width > 1 else ''})",
        THREAT,
        main=main,
        control=ctrl,
        baseline=base,
        attacks=n,
        baseline_attacks=max(n, 1),
        details={"predicates": n, "requested": attacks, "targets": len(main_set)},
    )


def _predicates(
    release: Table, wanted: int, width: int, max_attempts: int, rng: np.random.Generator
) -> Predicates:
    """Up to ``wanted`` distinct predicates, each matching exactly one released record."""
    codes = release.matrix()
    ordered = _ordered_values(release)
    limits = np.array([c.n_values for c in release.domain])
    medians = np.median(codes, axis=0)
    bits = Bitsets(release)
    kept: list[Predicates] = []
    seen: set[bytes] = set()
    total, attempts = 0, 0
    while total < wanted and attempts < max_attempts:
        batch = min(_BATCH, max_attempts - attempts)
        attempts += batch
        rows = rng.integers(0, len(codes), batch)
        columns = np.sort(
            np.argsort(rng.random((batch, codes.shape[1])), axis=1)[:, :width], axis=1
        )
        values = codes[rows[:, None], columns]
        regular = ordered[columns] & (values < limits[columns])
        operators = np.where(regular, np.where(values > medians[columns], GE, LE), EQ)
        candidates = Predicates(columns, operators, values)
        keys = np.ascontiguousarray(np.concatenate([columns, operators, values], axis=1))
        for i in np.flatnonzero(bits.count(candidates) == 1):
            key = keys[i].tobytes()
            if key in seen:
                continue
            seen.add(key)
            kept.append(Predicates(columns[i : i + 1], operators[i : i + 1], values[i : i + 1]))
            total += 1
            if total == wanted:
                break
    if not kept:
        empty = np.zeros((0, width), dtype=np.int64)
        return Predicates(empty, empty, empty)
    return Predicates(
        *(np.concatenate([getattr(p, f) for p in kept]) for f in ("columns", "operators", "values"))
    )


def _random_predicates(release: Table, n: int, width: int, rng: np.random.Generator) -> Predicates:
    """The baseline: random columns, a random released value of each, random operators."""
    codes = release.matrix()
    ordered = _ordered_values(release)
    limits = np.array([c.n_values for c in release.domain])
    columns = np.sort(np.argsort(rng.random((n, codes.shape[1])), axis=1)[:, :width], axis=1)
    values = codes[rng.integers(0, len(codes), (n, width)), columns]
    regular = ordered[columns] & (values < limits[columns])
    operators = np.where(regular, rng.integers(0, 3, (n, width)), EQ)
    return Predicates(columns, operators, values)


def _ordered_values(table: Table) -> np.ndarray:
    return np.array([c.kind is not Kind.CATEGORICAL for c in table.domain])
