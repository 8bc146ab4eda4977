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
>>> result.risk > 0.5, result.details["columns_a"], result.details["columns_b"]
(True, ['s', 'u', 'w', 'y'], ['t', 'v', 'x', 'z'])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from safeshare.data.table import Table
from safeshare.evaluate.attack_risk import AttackResult, attack_risk, check_attacks, equal_sizes
from safeshare.evaluate.neighbors import GowerIndex

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
) -> AttackResult:
    """Link two column sets of each target through its ``neighbors`` closest released records.

    By default the columns are split in two alternating halves.
    """
    if len(release.columns) < 2:
        raise ValueError("linkability needs at least two columns to split between two sources")
    if columns_a is None or columns_b is None:
        names = list(release.columns)
        columns_a, columns_b = names[0::2], names[1::2]
    check_attacks(attacks, len(release), "the release")
    main_set, control_set = equal_sizes(train, control, rng)
    check_attacks(attacks, len(main_set), "the smaller of train and control")
    index_a = GowerIndex(release, columns_a)
    index_b = GowerIndex(release, columns_b)

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
        details={"columns_a": list(columns_a), "columns_b": list(columns_b), "neighbors": k},
    )


def _shared(a: np.ndarray, b: np.ndarray) -> int:
    """How many rows of ``a`` and ``b`` (index lists) share at least one index."""
    return int(sum(bool(np.intersect1d(x, y).size) for x, y in zip(a, b, strict=True)))
