"""DP-SGD with a *user* as the privacy unit: all the records that share a user id.

Record-level DP-SGD protects one record; a user with many records gets only group
privacy, which degrades with the group's size.  Here the unit is the user:

* each step Poisson-samples *users*, each with probability ``q = B / U`` (``B`` the
  expected users per batch, ``U`` the number of users), and takes all their records;
* a sampled user's gradient is the **sum** of the per-record gradients of their records
  (``torch.func``: ``vmap`` of ``grad``), clipped as a whole to norm ``C``;
* Gaussian noise of scale ``sigma * C`` is added to the sum over users, and the result
  divided by ``B``;
* the accountant sees ``U`` units, rate ``q`` and the steps taken.

Adding or removing a user changes the clipped sum by at most ``C`` however many records
they hold, so the guarantee does not depend on the records per user.  Those are capped
(``max_records_per_user``, extra records dropped uniformly at random) only to bound the
memory of a step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.train.accounting import calibrate_noise, dpsgd_epsilon
from safeshare.train.dpsgd import DPSGDRun, DPSGDSettings, require_torch

# added to each norm before dividing, as Opacus does (see train/clipping.py)
_STABILITY = 1e-6


@dataclass(frozen=True)
class Users:
    """Which records are kept and whose they are.

    ``rows``: positions of the kept records in the input; ``user``: each kept record's user
    number in [0, users); ``dropped``: records dropped by the cap (read from the private
    data: exact, not DP).
    """

    rows: np.ndarray
    user: np.ndarray
    users: int
    dropped: int


def group_users(ids: Any, max_records_per_user: int, rng: np.random.Generator) -> Users:
    """Number the users of ``ids`` (one per record) and cap each one's records.

    Raises :class:`InputError` on missing ids, a single user, or every record its own user
    (the messages name no id).
    """
    import pandas as pd

    if isinstance(max_records_per_user, bool) or not isinstance(max_records_per_user, int):
        raise InputError(
            f"max_records_per_user must be a whole number, got {max_records_per_user!r}"
        )
    if max_records_per_user < 1:
        raise InputError(f"max_records_per_user must be at least 1, got {max_records_per_user!r}")
    values = pd.Series(np.asarray(ids, dtype=object))
    if values.isna().any() or values.map(lambda v: isinstance(v, str) and not v.strip()).any():
        raise InputError(
            "the user column has missing (empty) values: every record needs its user; fill "
            "them or drop those records"
        )
    codes, uniques = pd.factorize(values)
    users = len(uniques)
    if users < 2:
        raise InputError(
            "the user column holds a single user: user-level DP-SGD needs many users (the "
            "privacy unit); check --user-column"
        )
    if users == len(values):
        raise InputError(
            "every record has its own value in the user column: it does not group records, "
            "and user-level privacy would equal record-level; train without --user-column or "
            "name the column that identifies users"
        )
    codes = np.asarray(codes, dtype=np.int64)
    # a random order, then stable by user: each user's first `cap` records are a uniform draw
    shuffled = rng.permutation(len(codes))
    ordered = shuffled[np.argsort(codes[shuffled], kind="stable")]
    counts = np.bincount(codes, minlength=users)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(len(codes)) - np.repeat(starts, counts)
    kept = np.sort(ordered[rank < max_records_per_user])
    return Users(kept, codes[kept], users, len(codes) - len(kept))


def clipped_user_sum(
    module: Any,
    features: Any,
    labels: Any,
    group: Any,
    groups: int,
    max_grad_norm: float,
) -> tuple[dict[str, Any], Any]:
    """The sum over ``groups`` users of each user's summed per-record gradient, clipped to C.

    ``group[i]`` is record i's user in [0, groups).  Returns (parameter name -> clipped
    sum, each user's gradient norm before clipping).  Each user's share of the sum has norm
    at most ``max_grad_norm``, whatever their number of records.
    """
    torch, _ = require_torch()
    from torch.func import functional_call, grad, vmap

    params = {k: p.detach() for k, p in module.named_parameters() if p.requires_grad}

    def loss(p: Mapping[str, Any], x: Any, y: Any) -> Any:
        out = functional_call(module, dict(p), (x.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, y.unsqueeze(0))

    per_record = vmap(grad(loss), in_dims=(None, 0, 0))(params, features, labels)
    per_user = {
        k: torch.zeros((groups, *g.shape[1:]), dtype=g.dtype).index_add_(0, group, g)
        for k, g in per_record.items()
    }
    squared = torch.zeros(groups, dtype=features.dtype)
    for g in per_user.values():
        squared += g.flatten(1).square().sum(dim=1)
    norms = squared.sqrt()
    factors = (max_grad_norm / (norms + _STABILITY)).clamp(max=1.0)
    summed = {
        k: (g * factors.view(-1, *([1] * (g.dim() - 1)))).sum(dim=0) for k, g in per_user.items()
    }
    return summed, norms


def run_user_dpsgd(
    module: Any,
    features: Any,
    labels: Any,
    user: np.ndarray,
    settings: DPSGDSettings,
    *,
    make_optimizer: Callable[[Any], Any],
    generator: Any,
    seeded: bool,
    progress: Callable[[str, float], None] | None = None,
) -> DPSGDRun:
    """Train ``module`` in place with DP-SGD at user level (see the module's docstring).

    ``user`` numbers each record's user in [0, settings.records): ``settings.records`` is
    the number of users and ``settings.batch_size`` the expected users per batch.
    """
    torch, _ = require_torch()
    users = settings.records
    q, steps = settings.sampling_rate, settings.steps
    sigma = calibrate_noise(
        settings.epsilon, settings.delta, q, steps, accountant=settings.accountant
    )
    spent = dpsgd_epsilon(sigma, q, steps, settings.delta, accountant=settings.accountant)
    owner = torch.from_numpy(np.asarray(user, dtype=np.int64))
    clip = settings.max_grad_norm
    optimizer = make_optimizer(list(module.parameters()))
    named = [(k, p) for k, p in module.named_parameters() if p.requires_grad]
    module.train()
    for taken in range(1, steps + 1):
        chosen = torch.rand(users, generator=generator) < q  # Poisson sampling of users
        position = torch.cumsum(chosen.long(), 0) - 1  # a chosen user's place in the batch
        rows = chosen[owner].nonzero().squeeze(1)
        sampled = int(chosen.sum())
        if sampled:
            summed, _ = clipped_user_sum(
                module, features[rows], labels[rows], position[owner[rows]], sampled, clip
            )
        for name, parameter in named:
            noise = torch.normal(
                0.0, sigma * clip, size=parameter.shape, generator=generator, dtype=parameter.dtype
            )
            total = summed[name] + noise if sampled else noise
            parameter.grad = total / settings.batch_size  # the expected users per batch
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if progress is not None and taken % 20 == 0:
            progress("DP-SGD steps", taken / steps)
    source = (
        "torch.Generator from the caller's seed: reproducible, NOT secure"
        if seeded
        else "torch.Generator seeded from the OS's CSPRNG (secrets); the stream itself is not "
        "cryptographically secure"
    )
    return DPSGDRun(settings, sigma, spent, steps, source, False)


def user_privacy(run: DPSGDRun, column: str, users: Users, cap: int) -> dict[str, Any]:
    """The run's privacy facts with the user as the unit (the card's ``privacy``)."""
    privacy = run.privacy()
    privacy.update(
        {
            "privacy_unit": f"user (column {column})",
            "users": users.users,
            "sampling": "poisson (users)",
            "expected_batch_size": run.settings.batch_size,
            "expected_batch_unit": "users",
            "clipping": "per-user, flat (sum of the user's per-record gradients, torch.func)",
            "max_records_per_user": cap,
            "records_dropped_by_cap": users.dropped,
            "public": "the number of users and the feature domain",
            "not_dp": "the numbers of users, of records and of records dropped by the cap "
            "are exact (read from the data, like the record count)",
        }
    )
    return privacy
