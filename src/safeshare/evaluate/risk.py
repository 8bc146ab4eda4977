"""Memorization risk of a release: exact copies and distance to closest record (DCR).

Both compare the release with the training records *and* with holdout records the
generator never saw, of the same number: a generator that generalises is as close
to unseen people as to the ones it trained on.  Distances between coded records
are Gower-style: per column 0/1 for a categorical mismatch, the rank distance
(scaled to [0, 1]) for ordered columns, then averaged over columns.

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain((Column("a", Kind.CATEGORICAL, categories=tuple("abcdefgh")),))
>>> rng = np.random.default_rng(0)
>>> train = Table({"a": rng.integers(0, 8, 400)}, domain)
>>> holdout = Table({"a": rng.integers(0, 8, 400)}, domain)
>>> result = memorization_risk(train.take(np.arange(200)), train, holdout, rng)
>>> result.copies_of_train.value
1.0
"""

from __future__ import annotations

import numpy as np

from safeshare.data.domain import Kind
from safeshare.data.table import Table
from safeshare.evaluate.results import Proportion, RiskResult, dcr_verdict

MAX_RELEASE_SAMPLE = 2000
_CHUNK_CELLS = 4_000_000


def memorization_risk(
    release: Table,
    train: Table,
    holdout: Table | None,
    rng: np.random.Generator,
    *,
    max_release_sample: int = MAX_RELEASE_SAMPLE,
) -> RiskResult:
    """Exact-copy shares and the DCR share, each with a 95% interval."""
    if len(release) == 0:
        raise ValueError("the release has no rows: nothing to measure")
    if holdout is None or len(holdout) == 0:
        copies = Proportion.of(_copies(release, train), len(release))
        reading = f"{copies.value:.1%} of released records equal a training record (no holdout to compare)"
        return RiskResult(copies, None, None, [reading])
    reference = train.take(
        rng.choice(len(train), size=min(len(holdout), len(train)), replace=False)
    )
    copies_train = Proportion.of(_copies(release, reference), len(release))
    copies_holdout = Proportion.of(_copies(release, holdout), len(release))
    sample = release
    if len(release) > max_release_sample:
        sample = release.take(rng.choice(len(release), size=max_release_sample, replace=False))
    to_train = nearest_distances(sample, reference)
    to_holdout = nearest_distances(sample, holdout)
    closer = float(np.sum(to_train < to_holdout) + 0.5 * np.sum(to_train == to_holdout))
    share = Proportion.of(closer, len(sample))
    readings = _readings(copies_train, copies_holdout, share)
    distances = {"train": to_train, "holdout": to_holdout}
    return RiskResult(copies_train, copies_holdout, share, readings, distances)


def _readings(train: Proportion, holdout: Proportion, closer: Proportion) -> list[str]:
    _, verdict = dcr_verdict(closer, train, holdout)
    lines = [
        f"{closer.value:.1%} of released records sit closer to a training record than to an "
        f"unseen one (95% interval {closer.interval[0]:.1%}-{closer.interval[1]:.1%}; "
        f"ideal 50%): {verdict}."
    ]
    lines.append(
        f"{train.value:.1%} of released records equal a training record, against {holdout.value:.1%} "
        "that equal an unseen record (what chance alone gives on this domain)."
    )
    return lines


def _copies(release: Table, reference: Table) -> int:
    """How many released rows equal some reference row on every column."""
    left, right = _row_keys(release), _row_keys(reference)
    return int(np.isin(left, right).sum())


def _row_keys(table: Table) -> np.ndarray:
    matrix = np.ascontiguousarray(table.matrix())
    return matrix.view(np.dtype((np.void, matrix.dtype.itemsize * matrix.shape[1]))).ravel()


def nearest_distances(queries: Table, reference: Table) -> np.ndarray:
    """For each query row, the Gower distance to its closest reference row."""
    positions_q, positions_r, ordered = (
        _positions(queries),
        _positions(reference),
        _ordered(queries),
    )
    n_ref = len(reference)
    chunk = max(1, _CHUNK_CELLS // max(n_ref, 1))
    best = np.empty(len(queries), dtype=np.float32)
    for start in range(0, len(queries), chunk):
        stop = min(start + chunk, len(queries))
        distance = np.zeros((stop - start, n_ref), dtype=np.float32)
        for j, is_ordered in enumerate(ordered):
            q = positions_q[start:stop, j][:, None]
            r = positions_r[:, j][None, :]
            if is_ordered:
                distance += np.minimum(np.abs(q - r), 1.0)
            else:
                distance += q != r
        best[start:stop] = distance.min(axis=1) / max(len(ordered), 1)
    return best


def _ordered(table: Table) -> list[bool]:
    return [c.kind is not Kind.CATEGORICAL for c in table.domain]


def _positions(table: Table) -> np.ndarray:
    """Per column: rank scaled to [0, 1] for ordered values; special codes far away."""
    out = np.empty((len(table), len(table.columns)), dtype=np.float32)
    for j, column in enumerate(table.domain):
        codes = table.column(column.name).astype(np.float32)
        if column.kind is Kind.CATEGORICAL:
            out[:, j] = codes
            continue
        scale = max(column.n_values - 1, 1)
        positions = codes / scale
        special = codes >= column.n_values  # other / missing: distance 1 from any value
        positions[special] = 10.0 + codes[special]
        out[:, j] = positions
    return out
