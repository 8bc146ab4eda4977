"""Auditing a training procedure with canaries: insert half, train, score all, bound epsilon.

A canary is a record that should be hard to learn unless it is memorized:

* ``"random-label"``: a real record whose target is replaced by a different class drawn
  at random (the record itself is removed from the training data);
* ``"out-of-distribution"``: feature codes drawn uniformly from the domain, with a
  random class.

Each canary joins the training data independently with probability 1/2 (as the
one-run audit's theorem requires).  After one training run, every canary is scored
by the model's loss on its canary label; the inserted canaries should score lower.
The scores feed :func:`~safeshare.train.audit.one_run_audit` (an epsilon lower bound),
the loss-threshold membership attack (AUC, TPR at low FPR) and an exposure in bits
(Carlini et al., "The Secret Sharer", 2019): an inserted canary's loss ranked among
the held-out canaries', ``log2(held_out + 1) - log2(rank)``.  A canary the model never
saw averages about ``log2(e) = 1.44`` bits; a memorized one reaches the maximum.

What is audited is the *training procedure* at given settings (one run on this
data plus canaries), not the weights of a model trained without them.

>>> import numpy as np
>>> from safeshare.data import Domain, Table
>>> x = np.random.default_rng(0).integers(0, 4, 300)
>>> table = Table({"x": x, "y": (x >= 2).astype(int)}, Domain.from_sizes({"x": 4, "y": 2}))
>>> canaries, base = make_canaries(table, "y", 100, rng=np.random.default_rng(1))
>>> len(canaries.table), len(base), 30 < int(canaries.included.sum()) < 70
(100, 200, True)
>>> bool(np.all(canaries.table.column("y") != table.column("y")[canaries.source_rows]))
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.data import Table
from safeshare.errors import InputError, SchemaError
from safeshare.train.audit import OneRunAudit, against_claim, one_run_audit
from safeshare.train.membership import LOW_FPRS, MembershipAttack, loss_threshold_attack

if TYPE_CHECKING:
    from safeshare.train.tabular import TabularModel

CANARY_KINDS: tuple[str, ...] = ("random-label", "out-of-distribution")
UNSEEN_EXPOSURE = math.log2(math.e)  # mean exposure of a canary the model never saw


@dataclass(frozen=True)
class Canaries:
    """Canary records (features and canary label), which were inserted, and how they were made."""

    table: Table
    included: np.ndarray
    kind: str
    source_rows: np.ndarray  # rows of the original table used (random-label), else empty


def make_canaries(
    table: Table,
    target: str,
    count: int,
    *,
    kind: str = "random-label",
    candidates: np.ndarray | None = None,
    rng: np.random.Generator,
) -> tuple[Canaries, Table]:
    """``count`` canaries and the rest of ``table`` (without the records the canaries reuse).

    Random-label canaries reuse records drawn from ``candidates`` (row positions;
    default: any row).
    """
    if target not in table.columns:
        raise SchemaError(f"target column {target!r} is not in the table; columns: {table.columns}")
    if kind not in CANARY_KINDS:
        raise InputError(f"canary kind {kind!r} is unknown; use one of {list(CANARY_KINDS)}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 2:
        raise InputError(f"the number of canaries must be a whole number >= 2, got {count!r}")
    classes = table.domain[target].size
    if classes < 2:
        raise InputError(f"target column {target!r} has a single class: no label can be a canary")
    if kind == "random-label":
        if count > len(table) // 2:
            raise InputError(
                f"{count} random-label canaries need at least {2 * count} records (half are "
                f"reused as canaries); the table has {len(table)}: use fewer canaries"
            )
        pool = np.arange(len(table)) if candidates is None else np.asarray(candidates)
        if pool.size < count:
            raise InputError(
                f"{count} random-label canaries need {count} candidate records, only "
                f"{pool.size} are given; use fewer canaries"
            )
        rows = rng.choice(pool, size=count, replace=False)
        codes = {n: table.column(n)[rows] for n in table.columns}
        # a different class, uniformly: shift the true label by 1 .. classes-1
        codes[target] = (codes[target] + rng.integers(1, classes, count)) % classes
        keep = np.ones(len(table), dtype=bool)
        keep[rows] = False
        base = table.take(np.flatnonzero(keep))
    else:
        rows = np.zeros(0, dtype=np.int64)
        codes = {c.name: rng.integers(0, c.size, count) for c in table.domain}
        base = table
    included = rng.random(count) < 0.5
    canaries = Canaries(Table(codes, table.domain), included, kind, rows)
    return canaries, base


def with_inserted(base: Table, canaries: Canaries) -> Table:
    """``base`` plus the canaries drawn "in" (appended; order does not matter to training)."""
    inserted = canaries.table.take(np.flatnonzero(canaries.included))
    codes = {n: np.concatenate([base.column(n), inserted.column(n)]) for n in base.columns}
    return Table(codes, base.domain)


def exposure(in_losses: np.ndarray, out_losses: np.ndarray) -> np.ndarray:
    """Bits of exposure of each inserted canary, ranked by loss among the held-out canaries.

    >>> exposure(np.array([0.0, 5.0]), np.array([1.0, 2.0, 3.0]))  # ranks 1 and 4 of 4
    array([2., 0.])
    """
    ranks = 1 + np.searchsorted(np.sort(out_losses), in_losses, side="left")
    return np.asarray(np.log2(out_losses.size + 1) - np.log2(ranks), dtype=np.float64)


@dataclass(frozen=True)
class CanaryAudit:
    """What an audit with canaries found: epsilon lower bound, membership attack, exposure."""

    audit: OneRunAudit
    membership: MembershipAttack
    exposure: np.ndarray
    kind: str
    claimed_epsilon: float | None
    copies: int | None = None  # canary users (user-level audits): records per canary user

    @property
    def max_exposure(self) -> float:
        """The most bits a canary can show: every held-out canary has a higher loss."""
        return math.log2(self.membership.nonmembers + 1)

    def readings(self) -> list[str]:
        """Plain sentences: the bound against the claim, the attack, the exposure."""
        bound = self.audit.epsilon
        claim = against_claim(
            bound, self.claimed_epsilon, unclaimed="the model claims no DP guarantee"
        )
        canaries = f"{self.audit.canaries} {self.kind} canaries"
        if self.copies is not None:
            canaries = (
                f"{self.audit.canaries} canary users, each {self.copies} copies of a "
                f"{self.kind} record"
            )
        return [
            f"empirical epsilon >= {bound:.3g} at {1 - self.audit.significance:.0%} confidence "
            f"({canaries}): {claim}",
            f"loss-threshold attack on the canaries: AUC {self.membership.auc:.3f}",
            *self.membership.readings(),
            f"exposure of inserted canaries: median {np.median(self.exposure):.2f} bits, max "
            f"{self.exposure.max():.2f} of {self.max_exposure:.2f} (unseen: about "
            f"{UNSEEN_EXPOSURE:.2f})",
        ]

    def describe(self) -> dict[str, Any]:
        """JSON-ready fields (aggregates only: no record, no score of a single canary)."""
        return {
            "audits": "the training procedure at these settings, one run with canaries",
            "canary_kind": self.kind,
            "canary_unit": "record"
            if self.copies is None
            else f"user ({self.copies} copies of one canary record)",
            "claimed_epsilon": self.claimed_epsilon,
            "one_run": self.audit.describe(),
            "membership": self.membership.describe(),
            "exposure_bits": {
                "median": float(np.median(self.exposure)),
                "mean": float(self.exposure.mean()),
                "max": float(self.exposure.max()),
                "max_possible": self.max_exposure,
                "unseen_mean": UNSEEN_EXPOSURE,
            },
            "readings": self.readings(),
        }


def typical_rows(table: Table, target: str, count: int, rng: np.random.Generator) -> np.ndarray:
    """The ``count`` rows whose label a briefly trained (non-memorizing) model finds likeliest.

    Flipping the label of a record that the model would get wrong anyway makes a poor
    canary: held out, it already looks "learned".  Choosing canaries among typical
    records (before the coin flips, so independently of them) sharpens the audit.
    """
    from safeshare.train.tabular import train_tabular_nonprivate

    if count >= len(table):
        return np.arange(len(table))
    reference = train_tabular_nonprivate(
        table, target, epochs=2, batch_size=min(256, len(table)), seed=int(rng.integers(2**62))
    )
    return np.argsort(reference.losses(table), kind="stable")[:count]


def audit_training(
    table: Table,
    target: str,
    train: Callable[[Table], TabularModel],
    *,
    canaries: int = 1000,
    kind: str = "random-label",
    significance: float = 0.05,
    delta: float | None = None,
    rng: np.random.Generator,
) -> CanaryAudit:
    """Audit ``train`` (a Table -> TabularModel procedure) with ``canaries`` canaries.

    ``delta`` is the claim's delta; by default the model card's, or 1e-6 for a model
    without a DP claim.  The claimed epsilon is read from the card.
    """
    candidates = typical_rows(table, target, 2 * canaries, rng) if kind == "random-label" else None
    made, base = make_canaries(table, target, canaries, kind=kind, candidates=candidates, rng=rng)
    if made.included.sum() == 0 or made.included.all():
        raise InputError("every canary fell on one side; use more canaries (at least 20)")
    model = train(with_inserted(base, made))
    return _score(model, made, significance, delta)


def audit_user_training(
    table: Table,
    target: str,
    users: Any,
    train: Callable[[Table, np.ndarray], TabularModel],
    *,
    canaries: int = 1000,
    copies: int = 8,
    significance: float = 0.05,
    delta: float | None = None,
    rng: np.random.Generator,
) -> CanaryAudit:
    """Audit a user-level procedure ``train(table, user_codes)`` with canary *users*.

    ``users`` gives each row's user id.  A canary user holds ``copies`` copies of one
    random-label canary record (as hard as one user can push a label); each canary user
    joins the data with probability 1/2, as a new user beside the table's (the procedure
    gets user codes: the table's users 0..U-1, then the canary users).  Each is scored by
    the model's loss on its record.  Under user-level DP the bound stays below the claim
    however many copies a user holds; record-level DP protects each copy, and a user only
    by group privacy (up to ``copies`` x epsilon).
    """
    from safeshare.train.user_level import user_codes, with_canary_users

    if isinstance(copies, bool) or not isinstance(copies, int) or copies < 1:
        raise InputError(f"copies must be a whole number >= 1, got {copies!r}")
    codes, count = user_codes(users, len(table))
    candidates = typical_rows(table, target, 2 * canaries, rng)
    made, base = make_canaries(
        table, target, canaries, kind="random-label", candidates=candidates, rng=rng
    )
    if made.included.sum() == 0 or made.included.all():
        raise InputError("every canary fell on one side; use more canaries (at least 20)")
    kept = np.ones(len(table), dtype=bool)
    kept[made.source_rows] = False  # make_canaries took these records out of the base
    joining = np.flatnonzero(made.included)
    copied = made.table.take(np.repeat(joining, copies))
    data = Table(
        {n: np.concatenate([base.column(n), copied.column(n)]) for n in base.columns},
        base.domain,
    )
    owners = with_canary_users(codes[kept], count, joining.size, copies)
    return _score(train(data, owners), made, significance, delta, copies)


def _score(
    model: TabularModel,
    made: Canaries,
    significance: float,
    delta: float | None,
    copies: int | None = None,
) -> CanaryAudit:
    """Score every canary by ``model``'s loss on it: the one-run bound, the attack, exposure."""
    losses = model.losses(made.table)
    inside, outside = losses[made.included], losses[~made.included]
    privacy = model.card.get("privacy", {})
    claimed = privacy.get("epsilon")
    if delta is None:
        delta = float(privacy.get("delta") or 1e-6)
    return CanaryAudit(
        audit=one_run_audit(-inside, -outside, significance=significance, delta=delta),
        # only false-positive rates that the held-out canaries can resolve (>= 1 of them)
        membership=loss_threshold_attack(
            inside, outside, fprs=tuple(f for f in LOW_FPRS if f * outside.size >= 1)
        ),
        exposure=exposure(inside, outside),
        kind=made.kind,
        claimed_epsilon=None if claimed is None else float(claimed),
        copies=copies,
    )
