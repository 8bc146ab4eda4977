"""Linkability: can the release join two pieces of information about the same person?

The attacker holds two separate sets of attributes about its targets (say, a health record
and a shopping profile, from two sources) and uses the release as a bridge: for each piece,
it looks up the ``k`` released records closest on those attributes; when the two lists share
a record, it concludes the pieces belong to one person.  Success is counted for training
records and for an equal number of control records; random lists are the baseline.

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain(tuple(Column(c, Kind.CATEGORICAL, categories=tuple("abcdefgh")) for c in "stuvwxyz"))
>>> def table(seed): return Table({c: np.random.default_rng(seed + i).integers(0, 8, 400)
...                                for i, c in enumerate("stuvwxyz")}, domain)
>>> train, control = table(0), table(10)
>>> result = linkability(train, train, control, np.random.default_rng(0), attacks=200)
>>> result = linkability(train, train, control, np.random.default_rng(0), attacks=200,
...                      columns_a=["s", "u", "w", "y"], columns_b=["t", "v", "x", "z"])
>>> result.risk > 0.5, result.details["split"]
(True, 'given')
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from safeshare.data.table import Table
from safeshare.evaluate.attack_risk import (
    AttackResult,
    EvaluationInputError,
    attack_risk,
    check_attacks,
    equal_sizes,
)
from safeshare.evaluate.neighbors import Covers, GowerIndex

THREAT = (
    "An attacker holding two separate sets of attributes about people (from two sources) uses "
    "the release to tell which pieces belong to the same person."
)


def linkability(
    release: Table,
    train: Table,
    control: Table,
    rng: np.random.Generator,
    *,
    attacks: int = 500,
    columns_a: Sequence[str] | None = None,
    columns_b: Sequence[str] | None = None,
    neighbors: int = 1,
    covers: Covers | None = None,
) -> AttackResult:
    """Link two column sets of each target through its ``neighbors`` closest released records.

    By default the columns are split by :func:`balanced_split`.  ``covers``: the release's
    generalized cells, read at the distance of the closest code they cover
    (:class:`~safeshare.evaluate.neighbors.GowerIndex`).
    """
    if len(release.columns) < 2:
        raise ValueError("linkability needs at least two columns to split between two sources")
    given = columns_a is not None and columns_b is not None
    if columns_a is None or columns_b is None:
        columns_a, columns_b = balanced_split(release)
    check_split(release, columns_a, columns_b)
    check_attacks(attacks, len(release), "the release")
    main_set, control_set = equal_sizes(train, control, rng)
    check_attacks(attacks, len(main_set), "the smaller of train and control")
    index_a = GowerIndex(release, columns_a, covers)
    index_b = GowerIndex(release, columns_b, covers)

    def links(pool: Table) -> int:
        targets = pool.take(rng.choice(len(pool), size=attacks, replace=False))
        near_a, _ = index_a.kneighbors(targets, neighbors, rng)
        near_b, _ = index_b.kneighbors(targets, neighbors, rng)
        return _shared(near_a, near_b)

    main, ctrl = links(main_set), links(control_set)
    k = min(neighbors, len(release))
    random_a = (
        np.argsort(rng.random((attacks, len(release))), axis=1)[:, :k]
        if k > 1
        else (rng.integers(0, len(release), (attacks, 1)))
    )
    random_b = (
        np.argsort(rng.random((attacks, len(release))), axis=1)[:, :k]
        if k > 1
        else (rng.integers(0, len(release), (attacks, 1)))
    )
    return attack_risk(
        "linkability",
        THREAT,
        main=main,
        control=ctrl,
        baseline=_shared(random_a, random_b),
        attacks=attacks,
        details={
            "columns_a": list(columns_a),
            "columns_b": list(columns_b),
            "split": "given" if given else "balanced by the release's entropy",
            "neighbors": k,
            "interval_covers": "the targets drawn, not another choice of the two column sets",
        },
    )


def balanced_split(release: Table) -> tuple[list[str], list[str]]:
    """Two column sets that each tell people apart about as well as the other: columns by
    falling entropy (of the release's values) go to the set with less entropy so far.

    An attacker links best when neither source leaves hundreds of records alike; alternating
    the columns can put every identifying column on one side (Adult's ``fnlwgt`` beside
    ``age`` and ``capital-gain``, say) and leave the other side shared by whole classes.

    >>> import numpy as np
    >>> from safeshare.data import Domain
    >>> rng = np.random.default_rng(0)
    >>> sizes = {"a": 100, "b": 100, "c": 2, "d": 2}
    >>> table = Table({c: rng.integers(0, n, 1000) for c, n in sizes.items()}, Domain.from_sizes(sizes))
    >>> balanced_split(table)
    (['a', 'c'], ['b', 'd'])
    >>> constant = Table({c: np.zeros(10, int) for c in "ab"}, Domain.from_sizes({"a": 1, "b": 1}))
    >>> balanced_split(constant)  # no column tells anyone apart: still one on each side
    (['a'], ['b'])
    """
    entropy = {}
    for name in release.columns:
        counts = np.bincount(release.column(name))
        share = counts[counts > 0] / len(release)
        entropy[name] = float(-(share * np.log2(share)).sum())
    sides: tuple[list[str], list[str]] = ([], [])
    totals = [0.0, 0.0]
    for name in sorted(entropy, key=lambda n: -entropy[n]):  # ties: the side with fewer
        side = 0 if (totals[0], len(sides[0])) <= (totals[1], len(sides[1])) else 1
        sides[side].append(name)
        totals[side] += entropy[name]
    order = {name: i for i, name in enumerate(release.columns)}
    first, second = (sorted(side, key=order.__getitem__) for side in sides)
    return (first, second) if first[0] == release.columns[0] else (second, first)


def check_split(release: Table, columns_a: Sequence[str], columns_b: Sequence[str]) -> None:
    """Refuse column sets that are empty, overlap or name columns the release lacks."""
    known = set(release.columns)
    for name, columns in (("first", columns_a), ("second", columns_b)):
        if not columns:
            raise EvaluationInputError(f"the {name} set of --link-columns is empty")
        unknown = [c for c in columns if c not in known]
        if unknown:
            raise EvaluationInputError(
                f"--link-columns names {unknown[0]!r}, which the evaluation does not model; "
                f"choose among {sorted(known)}"
            )
    shared = sorted(set(columns_a) & set(columns_b))
    if shared:
        raise EvaluationInputError(
            f"--link-columns: {shared[0]!r} is in both sets; each column belongs to one source"
        )


def _shared(a: np.ndarray, b: np.ndarray) -> int:
    """How many rows of ``a`` and ``b`` (index lists) share at least one index."""
    return int(sum(bool(np.intersect1d(x, y).size) for x, y in zip(a, b, strict=True)))
