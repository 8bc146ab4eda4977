"""Linkage attack: join an auxiliary table of known people to the release on quasi-identifiers.

The attacker holds, for some people, their quasi-identifiers (and names): a voter roll, a
leaked customer list.  For each person it looks for released records whose (possibly
generalized) quasi-identifiers *contain* the person's values; when exactly one record
matches best, it claims that record is the person and reads its other attributes.  A claim is
**correct** when that record's other attributes contain the person's true values (for an
anonymized table, their own row; for synthetic data, a record that discloses them); when every
column is a quasi-identifier, when the record contains all of the person's values.

* **exact** matching accepts only records containing every known value;
* **error-tolerant** matching, for people with no exact match (a typo, a birthday off by a
  year, a changed status), accepts one disagreeing quasi-identifier and ordered values one bin
  away, and claims the record with the fewest disagreements when it is the only one.

People in the training data are the targets; as many people from the holdout are the control
(what matching on population patterns alone yields); the baseline claims a random record for
each target the attack claimed one for (as many claims: guessing for everyone would read a
binary attribute right half the time, from any release).

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> from safeshare.evaluate.generalized import from_table
>>> domain = Domain(tuple(Column(c, Kind.CATEGORICAL, categories=tuple("abcdefgh")) for c in "vwxyz"))
>>> def table(seed, n): return Table({c: np.random.default_rng(seed + i).integers(0, 8, n)
...                                   for i, c in enumerate("vwxyz")}, domain)
>>> train, holdout = table(0, 500), table(10, 500)
>>> result = linkage(from_table(train), train, holdout, ["v", "w", "x", "y"], np.random.default_rng(0), attacks=200)
>>> result.risk > 0.5
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from safeshare.data.domain import Kind
from safeshare.data.table import Table
from safeshare.evaluate.attack_risk import (
    AttackResult,
    EvaluationInputError,
    attack_risk,
    check_attacks,
)
from safeshare.evaluate.generalized import CellSets

THREAT = (
    "An attacker holding an auxiliary table of known people (names with their quasi-identifiers) "
    "joins it to the release and reads the sensitive attributes of whoever matches."
)
_CHUNK = 256


def linkage(
    release: CellSets,
    train: Table,
    control: Table,
    quasi_identifiers: Sequence[str],
    rng: np.random.Generator,
    *,
    attacks: int = 500,
    tolerant: bool = False,
    auxiliary: Table | None = None,
) -> AttackResult:
    """The linkage attack (see the module docstring); ``auxiliary`` picks the targets."""
    quasi = list(quasi_identifiers)
    if not quasi:
        raise EvaluationInputError("the linkage attack needs at least one quasi-identifier column")
    if len(release) == 0:
        raise EvaluationInputError("the release has no records to link to")
    payload = [c for c in release.domain.names if c not in quasi and c in train.domain]
    if not payload:  # every column is a quasi-identifier: a correct claim contains the whole record
        payload = list(quasi)
    members, controls = _targets(train, control, quasi, auxiliary, attacks, rng)
    main, claimed = _correct(release, members, quasi, payload, tolerant)
    ctrl, _ = _correct(release, controls, quasi, payload, tolerant)
    guesses = rng.integers(0, len(release), len(claimed))
    base = int(_contains(release, guesses, members.take(claimed), payload).sum())
    mode = "error-tolerant" if tolerant else "exact"
    return attack_risk(
        f"linkage ({mode} matching)",
        THREAT,
        main=main,
        control=ctrl,
        baseline=base,
        attacks=len(members),
        control_attacks=len(controls),
        details={
            "quasi_identifiers": quasi,
            "disclosed_columns": payload,
            "targets": len(members),
            "auxiliary": auxiliary is not None,
        },
    )


def _targets(
    train: Table,
    control: Table,
    quasi: list[str],
    auxiliary: Table | None,
    attacks: int,
    rng: np.random.Generator,
) -> tuple[Table, Table]:
    """Equal numbers of training and control people the attacker knows."""
    if auxiliary is None:
        n = min(len(train), len(control))
        check_attacks(attacks, n, "the smaller of train and control")
        return (
            train.take(rng.choice(len(train), size=attacks, replace=False)),
            control.take(rng.choice(len(control), size=attacks, replace=False)),
        )
    known = [c for c in auxiliary.columns if c in train.domain]
    in_train = _unique_match(auxiliary, train, known)
    in_control = _unique_match(auxiliary, control, known)
    found_train = np.flatnonzero((in_train >= 0) & (in_control < 0))
    found_control = np.flatnonzero((in_control >= 0) & (in_train < 0))
    n = min(len(found_train), len(found_control), attacks)
    if n == 0:
        raise EvaluationInputError(
            "no auxiliary record identifies exactly one training record and none one holdout "
            "record; the auxiliary table must hold people of both (on the same columns)"
        )
    rows_train = in_train[rng.choice(found_train, size=n, replace=False)]
    rows_control = in_control[rng.choice(found_control, size=n, replace=False)]
    return train.take(rows_train), control.take(rows_control)


def _unique_match(auxiliary: Table, table: Table, columns: list[str]) -> np.ndarray:
    """For each auxiliary row, the one row of ``table`` equal on ``columns`` (-1 if none or many)."""
    rows = np.concatenate([auxiliary.matrix(columns), table.matrix(columns)])
    _, inverse = np.unique(rows, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    table_keys = inverse[len(auxiliary) :]
    counts = np.bincount(table_keys, minlength=inverse.max() + 1)
    first = np.full(inverse.max() + 1, -1)
    first[table_keys[::-1]] = np.arange(len(table))[::-1]
    aux_keys = inverse[: len(auxiliary)]
    return np.where(counts[aux_keys] == 1, first[aux_keys], -1)


def _correct(
    release: CellSets, targets: Table, quasi: list[str], payload: list[str], tolerant: bool
) -> tuple[int, np.ndarray]:
    """How many targets the attacker links to exactly one record that discloses them, and
    which targets it links (to any record)."""
    claimed = np.full(len(targets), -1)
    for start in range(0, len(targets), _CHUNK):
        stop = min(start + _CHUNK, len(targets))
        exact = _misses(release, targets, quasi, start, stop, widen=False)
        best = exact.min(axis=0)
        unique = (best == 0) & ((exact == 0).sum(axis=0) == 1)
        choice = np.where(unique, np.argmin(exact, axis=0), -1)
        if tolerant:  # no exact match: accept one disagreement and ordered values a bin away
            loose = _misses(release, targets, quasi, start, stop, widen=True)
            low = loose.min(axis=0)
            alone = (low <= 1) & ((loose == low[None, :]).sum(axis=0) == 1) & (best > 0)
            choice = np.where(alone, np.argmin(loose, axis=0), choice)
        claimed[start:stop] = choice
    linked = np.flatnonzero(claimed >= 0)
    if not len(linked):
        return 0, linked
    discloses = _contains(release, claimed[linked], targets.take(linked), payload)
    return int(discloses.sum()), linked


def _misses(
    release: CellSets, targets: Table, quasi: list[str], start: int, stop: int, *, widen: bool
) -> np.ndarray:
    """Per released row and target: the number of quasi-identifiers not containing its value."""
    misses = np.zeros((len(release), stop - start), dtype=np.int16)
    for name in quasi:
        masks = release.masks[name]
        if widen and release.domain[name].kind is not Kind.CATEGORICAL:
            masks = _widen(masks, release.domain[name].n_values)
        codes = targets.column(name)[start:stop]
        misses += ~masks[:, codes][release.rows[name]]
    return misses


def _contains(release: CellSets, rows: np.ndarray, people: Table, payload: list[str]) -> np.ndarray:
    """Whether each released row's cells contain the matching person's values on ``payload``."""
    ok = np.ones(len(rows), dtype=bool)
    for name in payload:
        masks = release.masks[name][release.rows[name][rows]]
        ok &= masks[np.arange(len(rows)), people.column(name)]
    return ok


def _widen(masks: np.ndarray, n_values: int) -> np.ndarray:
    """Each set plus the bins next to its bins (ordered values one step away)."""
    out = masks.copy()
    out[:, 1:n_values] |= masks[:, : n_values - 1]
    out[:, : n_values - 1] |= masks[:, 1:n_values]
    return out
