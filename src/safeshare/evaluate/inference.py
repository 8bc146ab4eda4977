"""Attribute inference: can the release reveal a secret attribute of someone the attacker knows?

The attacker knows every attribute of its target except a secret one (a diagnosis, an
income band) and guesses the secret as the value of the released record closest on the known
attributes.  Success (the right category, or the right bin of an ordered column) is counted
for training records and for an equal number of control records: what the release teaches
about the population in general is the control's success, what it leaks about its own
records is the excess.  The baseline guesses the value of a random released record.

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain(tuple(Column(c, Kind.CATEGORICAL, categories=tuple("abcdefgh")) for c in "uvwxyz"))
>>> def table(seed): return Table({c: np.random.default_rng(seed + i).integers(0, 8, 400)
...                                for i, c in enumerate("uvwxyz")}, domain)
>>> train, control = table(0), table(10)
>>> result = inference(train, train, control, "z", np.random.default_rng(0), attacks=200)
>>> result.name, result.risk > 0.5
('inference of z', True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from safeshare.data.table import Table
from safeshare.evaluate.attack_risk import AttackResult, attack_risk, check_attacks, equal_sizes
from safeshare.evaluate.neighbors import Covers, GowerIndex

THREAT = (
    "An attacker who knows everything about a person except one secret attribute uses the "
    "release to guess it."
)


def inference(
    release: Table,
    train: Table,
    control: Table,
    secret: str,
    rng: np.random.Generator,
    *,
    attacks: int = 500,
    known: Sequence[str] | None = None,
    covers: Covers | None = None,
) -> AttackResult:
    """Guess ``secret`` from ``known`` columns (default: all others) via the closest release row
    (``covers``: the release's generalized cells, read at the distance of the closest code
    they cover)."""
    release.domain[secret]  # a clear error for an unknown column
    known = [c for c in (known or release.columns) if c != secret]
    if not known:
        raise ValueError("inference needs at least one known column besides the secret")
    check_attacks(attacks, len(release), "the release")
    main_set, control_set = equal_sizes(train, control, rng)
    check_attacks(attacks, len(main_set), "the smaller of train and control")
    index = GowerIndex(release, known, covers)
    released = release.column(secret)

    def correct(pool: Table) -> int:
        targets = pool.take(rng.choice(len(pool), size=attacks, replace=False))
        nearest, _ = index.kneighbors(targets, 1, rng)
        return int((released[nearest[:, 0]] == targets.column(secret)).sum())

    main, ctrl = correct(main_set), correct(control_set)
    truth = main_set.column(secret)[rng.choice(len(main_set), size=attacks, replace=False)]
    guesses = released[rng.integers(0, len(release), attacks)]
    return attack_risk(
        f"inference of {secret}",
        THREAT,
        main=main,
        control=ctrl,
        baseline=int((guesses == truth).sum()),
        attacks=attacks,
        details={"secret": secret, "known": known},
    )
