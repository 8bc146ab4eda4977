"""Singling out: can the release be used to write a description that fits exactly one person?

The attacker reads the release and writes predicates that match exactly one released record.
On one column (the univariate attack) these are every value held by one released record
(``==``, numbers and categories alike) and the two extremes of an ordered column (``<=`` its
smallest value, ``>=`` its largest) where one record holds them: all the univariate
predicates that single out a released record, as many as the attacks asked for drawn from
them.  On several columns, a conjunction over a few columns of a released record's values
(``==`` for categories, ``<=`` or ``>=`` toward the extreme side of the median for ordered
columns, which makes predicates rarer).  A predicate *singles out* a data set when exactly
one of its records satisfies it.  On a generalized release (``17-26``, ``Married|Divorced``,
``*``) a condition names a cell as written, and a record satisfies it when its value lies in
the cell: an ``age`` of 17 to 26, not one age drawn inside the cell.
Success is counted on the training records and on an equal number of control records the
release was not made from; random predicates (random columns, values and operators) are the
baseline.  This is the attack of Giomi et al. (PoPETs 2023), written on integer codes: every
(column, operator, value) condition is a bitset of the records it matches, so a predicate's
matches are the population count of the AND of a few bitsets (about a microsecond each).

Unlike the other attacks, whose trials are target records (independent of one another), the
trials here are predicates, and predicates that describe one region of the data succeed or
fail together: the successes are over-dispersed, and a binomial interval is too narrow (on a
survey with few distinct values, independent releases read significant three times as often
as they should).  Under the null (a release that does not depend on which records are
training ones) the training and control records are exchangeable, so the attack is re-counted
on random re-splits of the two sets together: the spread of the difference over re-splits,
against the binomial one, is the over-dispersion, and the interval is widened by its root
(``details["overdispersion"]``).

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

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from safeshare.data.domain import Domain, Kind
from safeshare.data.table import Table
from safeshare.evaluate.attack_risk import AttackResult, attack_risk, check_attacks, equal_sizes
from safeshare.evaluate.neighbors import Covers

Sets = Mapping[str, np.ndarray]
"""Per column, the masks (over the column's codes) of a generalized release's wide cells."""

THREAT = (
    "An attacker holding only the release writes a description (a few attribute values) that "
    "it believes fits exactly one real person - the first step of re-identification."
)
EQ, LE, GE = 0, 1, 2
_BATCH = 4096
RESPLITS = 200  # re-splits of train and control that measure the over-dispersion
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
    """For every column, operator and code, the set of a table's records it matches, as bits.

    ``sets``: per column, the masks of a generalized release's wide cells (``17-26``, ``*``);
    the code ``size + i`` then stands for the condition "the value lies in ``masks[i]``".
    With ``cells`` the table *is* that release, its cells written as such codes, and a
    record matches a wide condition when its cell is that one; otherwise its records hold
    exact values and match when the value lies in the set.
    """

    def __init__(
        self, domain: Domain, codes: np.ndarray, sets: Sets | None = None, *, cells: bool = False
    ) -> None:
        sets = sets or {}
        self.sizes = np.array([c.size + len(sets.get(c.name, ())) for c in domain])
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])
        blocks = {EQ: [], LE: [], GE: []}  # type: dict[int, list[np.ndarray]]
        for j, column in enumerate(domain):
            codes_j = codes[:, j]
            equal = np.packbits(codes_j[None, :] == np.arange(column.size)[:, None], axis=1)
            masks = sets.get(column.name, np.zeros((0, column.size), dtype=bool))
            if cells:
                held = column.size + np.arange(len(masks))
                wide = np.packbits(codes_j[None, :] == held[:, None], axis=1)
            else:
                wide = np.array(
                    [np.bitwise_or.reduce(equal[m], axis=0) for m in masks], dtype=np.uint8
                ).reshape(len(masks), equal.shape[1])
            blocks[EQ].append(np.concatenate([equal, wide]))
            blocks[LE].append(np.concatenate([np.bitwise_or.accumulate(equal, axis=0), wide]))
            blocks[GE].append(
                np.concatenate([np.bitwise_or.accumulate(equal[::-1], axis=0)[::-1], wide])
            )
        pad = (-blocks[EQ][0].shape[1]) % 8
        self.bits = np.stack(
            [np.pad(np.concatenate(blocks[op]), ((0, 0), (0, pad))) for op in (EQ, LE, GE)]
        ).view(np.uint64)

    def count(self, predicates: Predicates) -> np.ndarray:
        """How many records each predicate matches."""
        out = np.empty(len(predicates), dtype=np.int64)
        for start in range(0, len(predicates), _BATCH):
            stop = min(start + _BATCH, len(predicates))
            out[start:stop] = _popcount(self.matches(predicates, start, stop))
        return out

    def matches(
        self, predicates: Predicates, start: int = 0, stop: int | None = None
    ) -> np.ndarray:
        """The records each predicate (from ``start`` to ``stop``) matches, as rows of bits."""
        stop = len(predicates) if stop is None else stop
        rows = self.offsets[predicates.columns[start:stop]] + predicates.values[start:stop]
        ops = predicates.operators[start:stop]
        matched = self.bits[ops[:, 0], rows[:, 0]]
        for slot in range(1, rows.shape[1]):
            matched = matched & self.bits[ops[:, slot], rows[:, slot]]
        return matched


def packed(mask: np.ndarray) -> np.ndarray:
    """A boolean mask over records as the words of a :class:`Bitsets` row."""
    bits = np.packbits(mask)
    return np.pad(bits, (0, (-len(bits)) % 8)).view(np.uint64)


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
    covers: Covers | None = None,
) -> AttackResult:
    """Singling out with ``width`` columns per predicate (1 is the univariate attack).

    ``covers``: the release's generalized cells (see
    :meth:`~safeshare.evaluate.generalized.CellSets.covers`).  A predicate then names a cell
    as written (``age`` in ``17-26``), which a record matches when its value lies in the cell:
    the predicate an attacker who reads the release writes.
    """
    check_attacks(attacks, len(release), "the release")
    main_set, control_set = equal_sizes(train, control, rng)
    check_attacks(attacks, len(control_set), "the smaller of train and control")
    width = max(1, min(width, len(release.columns)))
    covers = {c: v for c, v in (covers or {}).items() if len(v[1])}
    sets = {c: masks for c, (_, masks) in covers.items()}
    codes = release.matrix()
    for j, name in enumerate(release.columns):
        if name in covers:
            codes[:, j] = covers[name][0]
    found = (
        _univariate_predicates(release.domain, codes, sets, attacks, rng)
        if width == 1
        else _predicates(release.domain, codes, sets, attacks, width, max_attempts, rng)
    )
    n = len(found)
    records = np.concatenate([main_set.matrix(), control_set.matrix()])  # the main ones first
    both = Bitsets(release.domain, records, sets)
    is_main = np.arange(2 * len(main_set)) < len(main_set)
    matched = both.matches(found)
    main, ctrl = _singled_out(matched, packed(is_main)), _singled_out(matched, packed(~is_main))
    guesses = _random_predicates(release.domain, codes, max(n, 1), width, rng)
    base = _singled_out(both.matches(guesses), packed(is_main))
    return attack_risk(
        f"singling out ({width} column{'s' if width > 1 else ''})",
        THREAT,
        main=main,
        control=ctrl,
        baseline=base,
        attacks=n,
        baseline_attacks=max(n, 1),
        details={"predicates": n, "requested": attacks, "targets": len(main_set)},
        overdispersion=_overdispersion(matched, is_main, main + ctrl, rng) if n > 1 else 1.0,
    )


def _singled_out(matched: np.ndarray, records: np.ndarray) -> int:
    """How many predicates (rows of ``matched``) match exactly one of ``records`` (bits)."""
    return int((_popcount(matched & records) == 1).sum())


def _overdispersion(
    matched: np.ndarray, is_main: np.ndarray, successes: int, rng: np.random.Generator
) -> float:
    """The variance of the success difference over random re-splits of the records into two
    halves, over the binomial variance of two independent samples of as many predicates at
    the pooled rate (``successes`` on both halves; at least 1: a paired design can only
    narrow, which the interval does not claim)."""
    n, trials = int(is_main.sum()), len(matched)
    differences = np.empty(RESPLITS)
    for i in range(RESPLITS):
        half = np.zeros(len(is_main), dtype=bool)
        half[rng.choice(len(is_main), size=n, replace=False)] = True
        first, second = _singled_out(matched, packed(half)), _singled_out(matched, packed(~half))
        differences[i] = (first - second) / trials
    rate = successes / (2 * trials)
    binomial = 2 * rate * (1 - rate) / trials
    return max(1.0, float(differences.var() / binomial)) if binomial > 0 else 1.0


def _predicates(
    domain: Domain,
    codes: np.ndarray,
    sets: Sets,
    wanted: int,
    width: int,
    max_attempts: int,
    rng: np.random.Generator,
) -> Predicates:
    """Up to ``wanted`` distinct predicates, each matching exactly one released record."""
    ordered = _ordered_values(domain)
    limits = np.array([c.n_values for c in domain])
    medians = _medians(codes, np.array([c.size for c in domain]))
    bits = Bitsets(domain, codes, sets, cells=True)
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


def _univariate_predicates(
    domain: Domain, codes: np.ndarray, sets: Sets, wanted: int, rng: np.random.Generator
) -> Predicates:
    """Up to ``wanted`` of the one-column predicates that match exactly one released record:
    ``==`` a value (or a generalized cell) one record holds, ``<=`` / ``>=`` an ordered
    column's extreme held by one."""
    ordered = _ordered_values(domain)
    found: list[tuple[int, int, int]] = []
    for j, column in enumerate(domain):
        size = column.size + len(sets.get(column.name, ()))
        counts = np.bincount(codes[:, j], minlength=size)
        found += [(j, EQ, int(v)) for v in np.flatnonzero(counts == 1)]
        held = np.flatnonzero(counts[: column.n_values])
        if ordered[j] and len(held) > 1:
            low, high = held[0], held[-1]
            found += [(j, LE, int(low))] if counts[low] == 1 else []
            found += [(j, GE, int(high))] if counts[high] == 1 else []
    chosen = np.array(found, dtype=np.int64).reshape(-1, 3)
    if len(chosen) > wanted:
        chosen = chosen[np.sort(rng.choice(len(chosen), size=wanted, replace=False))]
    return Predicates(chosen[:, :1], chosen[:, 1:2], chosen[:, 2:])


def _random_predicates(
    domain: Domain, codes: np.ndarray, n: int, width: int, rng: np.random.Generator
) -> Predicates:
    """The baseline: random columns, a random released value of each, random operators."""
    ordered = _ordered_values(domain)
    limits = np.array([c.n_values for c in domain])
    columns = np.sort(np.argsort(rng.random((n, codes.shape[1])), axis=1)[:, :width], axis=1)
    values = codes[rng.integers(0, len(codes), (n, width)), columns]
    regular = ordered[columns] & (values < limits[columns])
    operators = np.where(regular, rng.integers(0, 3, (n, width)), EQ)
    return Predicates(columns, operators, values)


def _ordered_values(domain: Domain) -> np.ndarray:
    return np.array([c.kind is not Kind.CATEGORICAL for c in domain])


def _medians(codes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each column's median code over the released cells that hold one code."""
    held = [codes[:, j][codes[:, j] < size] for j, size in enumerate(sizes)]
    return np.array([np.median(h) if len(h) else 0.0 for h in held])
