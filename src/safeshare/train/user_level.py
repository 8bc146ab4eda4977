"""DP-SGD with a *user* as the privacy unit: all the records that share a user id.

Record-level DP-SGD protects one record; a user with many records gets only group
privacy, which degrades with the group's size.  Here the unit is the user:

* each step Poisson-samples *users*, each with probability ``q = B / U`` (``B`` the
  expected users per batch, ``U`` the number of users), and takes all their records;
* a sampled user's gradient is the **sum** of the per-record gradients of their records
  (``torch.func``: ``vmap`` of ``grad`` of a per-record loss, :class:`PerRecord`: a
  classifier's cross-entropy, a sequence's mean token loss, ...; or, for a network whose
  trained parameters are all Linear layers such as low-rank adapters, formed from the
  layers' inputs and output gradients in one ordinary backward pass,
  :class:`LinearPerRecord`), clipped as a whole to norm ``C``; the records run in chunks
  so that a step's memory does not grow with the records per batch;
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
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.train.accounting import Accounting, calibrate_noise, dpsgd_epsilon
from safeshare.train.device import describe_device, noise_generator, resolve_device
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


@dataclass(frozen=True)
class UserColumn:
    """Whose records a run trains on: one user id per record, the column the ids come from
    (named in the card, never an id) and the records each user keeps at most (drawn at
    random; bounds a step's memory, not the guarantee)."""

    ids: Any
    column: str
    max_records_per_user: int = 64


def count_users(ids: Any, max_records_per_user: int) -> int:
    """The number of users in ``ids`` (one per record), with :func:`group_users`' checks.

    >>> count_users(["a", "a", "b", "c"], 64)
    3
    """
    return len(_numbered(ids, max_records_per_user)[1])


def group_users(ids: Any, max_records_per_user: int, rng: np.random.Generator) -> Users:
    """Number the users of ``ids`` (one per record) and cap each one's records.

    Raises :class:`InputError` on missing ids, a single user, or every record its own user
    (the messages name no id).
    """
    codes, uniques = _numbered(ids, max_records_per_user)
    users = len(uniques)
    # a random order, then stable by user: each user's first `cap` records are a uniform draw
    shuffled = rng.permutation(len(codes))
    ordered = shuffled[np.argsort(codes[shuffled], kind="stable")]
    counts = np.bincount(codes, minlength=users)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.arange(len(codes)) - np.repeat(starts, counts)
    kept = np.sort(ordered[rank < max_records_per_user])
    return Users(kept, codes[kept], users, len(codes) - len(kept))


def _numbered(ids: Any, max_records_per_user: int) -> tuple[np.ndarray, Any]:
    """Each record's user number and the users, refusing what cannot be user-level DP."""
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
    return np.asarray(codes, dtype=np.int64), uniques


def check_user_ids(
    users: Any, user_column: str | None, epsilon: float | None, records: int, what: str
) -> tuple[str, float]:
    """Refuse user ids without DP, without a column name or not one per record (``what``)."""
    if users is None or user_column is None:
        raise InputError(
            "user-level training needs both users (one id per record) and user_column (the "
            "name of the column they come from)"
        )
    if epsilon is None:
        raise InputError(
            "user ids were given but epsilon is None: the user as privacy unit only means "
            "something with DP; give an epsilon, or drop the user ids to train without DP"
        )
    if isinstance(users, str) or len(users) != records:
        raise InputError(f"users must give one id per {what} ({records})")
    return user_column, epsilon


def check_user_batch(batch_size: int, users: int) -> None:
    """Refuse an expected batch of users outside [1, users / 2] (what Poisson sampling needs)."""
    if isinstance(batch_size, bool) or not 1 <= batch_size <= users // 2:
        raise InputError(
            f"batch size {batch_size!r} (expected users per batch) must lie in "
            f"[1, {users // 2}] (half the users, {users}); try a smaller batch"
        )


def user_codes(users: Any, records: int) -> tuple[np.ndarray, int]:
    """Each record's user as a code in [0, U), and U; refuses missing ids or a count other
    than ``records`` (naming no id)."""
    import pandas as pd

    ids = pd.Series(np.asarray(users, dtype=object))
    if len(ids) != records:
        raise InputError(f"users must give one id per record ({records}), got {len(ids)}")
    codes, uniques = pd.factorize(ids)
    if (codes < 0).any():
        raise InputError(
            "the user column has missing values: every record needs its user; fill them or "
            "drop those records"
        )
    return np.asarray(codes, dtype=np.int64), len(uniques)


def with_canary_users(codes: np.ndarray, users: int, canary_users: int, copies: int) -> np.ndarray:
    """``codes`` (of ``users`` users) followed by ``canary_users`` new users, numbered from
    ``users`` on, of ``copies`` records each."""
    return np.concatenate([codes, users + np.repeat(np.arange(canary_users), copies)])


def user_settings(
    ids: Any,
    cap: int,
    generator: Any,
    *,
    batch_size: int,
    epochs: float,
    epsilon: float,
    delta: float | None,
    max_grad_norm: float,
    accountant: Accounting,
    sampling: str = "poisson",
) -> tuple[Users, DPSGDSettings]:
    """The users of ``ids`` (the cap's draw from the run's ``generator``: a seed reproduces
    it) and the run's settings over them: ``batch_size`` counts users, ``delta`` defaults
    to 1 / (10 x users).  Refuses a batch over half the users."""
    torch, _ = require_torch()
    seed = int(torch.randint(0, 2**62, (1,), generator=generator))
    grouped = group_users(ids, cap, np.random.default_rng(seed))
    check_user_batch(batch_size, grouped.users)
    settings = DPSGDSettings(
        records=grouped.users,
        batch_size=batch_size,
        epochs=epochs,
        epsilon=epsilon,
        delta=1.0 / (10 * grouped.users) if delta is None else delta,
        max_grad_norm=max_grad_norm,
        accountant=accountant,
        sampling=sampling,
    )
    return grouped, settings


def _cross_entropy(output: Any, target: Any) -> Any:
    """One record's cross-entropy: ``output`` (1, classes), ``target`` (1,)."""
    torch, _ = require_torch()
    return torch.nn.functional.cross_entropy(output, target)


@dataclass(frozen=True)
class PerRecord:
    """How the model computes one record's loss under ``torch.func`` (the default: a classifier).

    ``loss(output, target)``: the scalar loss of one record, its output and target each with
    a leading dimension of 1.  ``forward_kwargs``: keyword arguments of the module's forward
    for that per-record path (e.g. one without data-dependent Python numbers, which
    ``vmap`` cannot trace).  ``trim(inputs, targets)``: applied to each chunk of records
    outside ``vmap`` (e.g. cut all-padding columns); None keeps them.  ``chunk``: records
    whose gradients are held at once, so a step's memory is about ``2 x chunk x
    parameters`` floats whatever the number of sampled users.
    """

    loss: Callable[[Any, Any], Any] = _cross_entropy
    forward_kwargs: Mapping[str, Any] = field(default_factory=dict)
    trim: Callable[[tuple[Any, ...], Any], tuple[tuple[Any, ...], Any]] | None = None
    chunk: int = 256

    def __post_init__(self) -> None:
        _check_chunk(self.chunk)

    def clipped_sum(
        self, module: Any, inputs: Any, targets: Any, group: Any, groups: int, clip: float
    ) -> tuple[dict[str, Any], Any]:
        """:func:`clipped_user_sum` with this way of finding a record's loss."""
        return clipped_user_sum(module, inputs, targets, group, groups, clip, self)


def _check_chunk(chunk: object) -> None:
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise InputError(f"chunk must be a positive whole number, got {chunk!r}")


CLASSIFIER = PerRecord()


@dataclass(frozen=True)
class LinearPerRecord:
    """Per-user clipping for a network whose trainable parameters all sit in Linear layers
    (e.g. low-rank adapters on a frozen model), without ``torch.func``: each record's
    gradient is formed from :class:`~safeshare.train.clipping.LinearGhostClipping`'s hooks
    in one ordinary backward pass, then summed per user.

    ``losses(output, labels)``: one loss per record (shape: records); ``trim`` and
    ``chunk`` as :class:`PerRecord`'s.  A step holds (sampled users + chunk) x trainable
    parameters numbers.
    """

    losses: Callable[..., Any]
    trim: Callable[[tuple[Any, ...], Any], tuple[tuple[Any, ...], Any]] | None = None
    chunk: int = 64

    def __post_init__(self) -> None:
        _check_chunk(self.chunk)

    def clipped_sum(
        self, module: Any, inputs: Any, targets: Any, group: Any, groups: int, clip: float
    ) -> tuple[dict[str, Any], Any]:
        """The sum over ``groups`` users of each user's summed per-record gradient, clipped
        to ``clip`` (as :func:`clipped_user_sum`); ``inputs``: the one feature tensor."""
        torch, _ = require_torch()
        from safeshare.train.clipping import LinearGhostClipping

        (features,) = _as_inputs(inputs)
        named = {id(p): k for k, p in module.named_parameters() if p.requires_grad}
        group = torch.as_tensor(group, dtype=torch.long, device=targets.device)
        per_user = {
            k: torch.zeros((groups, *p.shape), dtype=p.dtype, device=p.device)
            for k, p in module.named_parameters()
            if p.requires_grad
        }
        with LinearGhostClipping(module, clip) as clipping:
            for start in range(0, int(targets.shape[0]), self.chunk):
                chunk_x, chunk_y = (
                    (features[start : start + self.chunk],),
                    targets[start : start + self.chunk],
                )
                if self.trim is not None:
                    chunk_x, chunk_y = self.trim(chunk_x, chunk_y)
                owners = group[start : start + self.chunk]
                losses = partial(self.losses, labels=chunk_y)
                for parameter, grads in clipping.record_gradients(chunk_x[0], losses):
                    per_user[named[id(parameter)]].index_add_(0, owners, grads)
        first = next(iter(per_user.values()))
        squared = torch.zeros(groups, dtype=first.dtype, device=first.device)
        for g in per_user.values():
            squared += g.flatten(1).square().sum(dim=1)
        norms = squared.sqrt()
        factors = (clip / (norms + _STABILITY)).clamp(max=1.0)
        summed = {
            k: (g * factors.view(-1, *([1] * (g.dim() - 1)))).sum(dim=0)
            for k, g in per_user.items()
        }
        return summed, norms


def _as_inputs(features: Any) -> tuple[Any, ...]:
    return tuple(features) if isinstance(features, tuple | list) else (features,)


def clipped_user_sum(
    module: Any,
    inputs: Any,
    targets: Any,
    group: Any,
    groups: int,
    max_grad_norm: float,
    per_record: PerRecord = CLASSIFIER,
) -> tuple[dict[str, Any], Any]:
    """The sum over ``groups`` users of each user's summed per-record gradient, clipped to C.

    ``inputs``: one tensor or a tuple of tensors (the module's positional inputs, one row
    per record); ``group[i]`` is record i's user in [0, groups).  Records run in chunks of
    ``per_record.chunk`` (sorted by user: a user's partial sum carries over to the next
    chunk), so memory does not grow with the batch.  Returns (parameter name -> clipped
    sum, each user's gradient norm before clipping).  Each user's share of the sum has norm
    at most ``max_grad_norm``, whatever their number of records.
    """
    torch, _ = require_torch()
    from torch.func import functional_call, grad, vmap

    xs = _as_inputs(inputs)
    params = {k: p.detach() for k, p in module.named_parameters() if p.requires_grad}
    kwargs = dict(per_record.forward_kwargs)

    def loss(p: Mapping[str, Any], x: tuple[Any, ...], y: Any) -> Any:
        out = functional_call(module, dict(p), tuple(v.unsqueeze(0) for v in x), kwargs)
        return per_record.loss(out, y.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    group = torch.as_tensor(group, dtype=torch.long, device=targets.device)
    order = torch.argsort(group, stable=True)
    first = next(iter(params.values()))
    summed = {k: torch.zeros_like(p) for k, p in params.items()}
    norms = torch.zeros(groups, dtype=first.dtype, device=first.device)
    carry: dict[str, Any] | None = None  # the partial sum of a user who continues
    records = int(order.shape[0])
    for start in range(0, records, per_record.chunk):
        rows = order[start : start + per_record.chunk]
        chunk_x, chunk_y = tuple(x[rows] for x in xs), targets[rows]
        if per_record.trim is not None:
            chunk_x, chunk_y = per_record.trim(chunk_x, chunk_y)
        grads = per_sample(params, chunk_x, chunk_y)
        owners = group[rows]
        low = int(owners[0])
        local = owners - low  # sorted: the chunk holds users low .. low + k - 1
        k = int(local[-1]) + 1
        per_user = {
            name: torch.zeros((k, *g.shape[1:]), dtype=g.dtype, device=g.device).index_add_(
                0, local, g
            )
            for name, g in grads.items()
        }
        if carry is not None:
            for name, g in per_user.items():
                g[0] += carry[name]
        end = start + per_record.chunk
        continues = end < records and int(group[order[end]]) == low + k - 1
        done = k - 1 if continues else k
        carry = {name: g[k - 1].clone() for name, g in per_user.items()} if continues else None
        if done:
            squared = torch.zeros(done, dtype=norms.dtype, device=norms.device)
            for g in per_user.values():
                squared += g[:done].flatten(1).square().sum(dim=1)
            user_norms = squared.sqrt()
            norms[low : low + done] = user_norms
            factors = (max_grad_norm / (user_norms + _STABILITY)).clamp(max=1.0)
            for name, g in per_user.items():
                shape = (-1, *([1] * (g.dim() - 1)))
                summed[name] += (g[:done] * factors.view(shape)).sum(dim=0)
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
    per_record: PerRecord | LinearPerRecord = CLASSIFIER,
    device: Any = "auto",
) -> DPSGDRun:
    """Train ``module`` in place with DP-SGD at user level (see the module's docstring).

    ``features``: one tensor or a tuple of them (the module's inputs, one row per record);
    ``labels``: the targets ``per_record.loss`` takes.  ``user`` numbers each record's user
    in [0, settings.records): ``settings.records`` is the number of users and
    ``settings.batch_size`` the expected users per batch.  The steps run on ``device``
    (users are sampled on the CPU from ``generator``, the noise drawn on the device); the
    module is handed back on the CPU.
    """
    torch, _ = require_torch()
    place = resolve_device(device)
    module.to(place)
    try:
        taken = _user_steps(
            module,
            tuple(x.to(place) for x in _as_inputs(features)),
            labels.to(place),
            torch.from_numpy(np.asarray(user, dtype=np.int64)).to(place),
            settings,
            make_optimizer=make_optimizer,
            generator=generator,
            noise=noise_generator(place, generator),
            progress=progress,
            per_record=per_record,
        )
    finally:
        module.to("cpu")
    source = (
        "torch.Generator from the caller's seed: reproducible, NOT secure"
        if seeded
        else "torch.Generator seeded from the OS's CSPRNG (secrets); the stream itself is not "
        "cryptographically secure"
    )
    return DPSGDRun(settings, *taken, source, False, describe_device(place))


def _user_steps(
    module: Any,
    inputs: tuple[Any, ...],
    labels: Any,
    owner: Any,
    settings: DPSGDSettings,
    *,
    make_optimizer: Callable[[Any], Any],
    generator: Any,
    noise: Any,
    progress: Callable[[str, float], None] | None,
    per_record: PerRecord | LinearPerRecord,
) -> tuple[float, float, int]:
    """The steps of :func:`run_user_dpsgd` on the module's device: (sigma, epsilon, steps)."""
    torch, _ = require_torch()
    users = settings.records
    q, steps = settings.sampling_rate, settings.steps
    sigma = calibrate_noise(
        settings.epsilon, settings.delta, q, steps, accountant=settings.accountant
    )
    spent = dpsgd_epsilon(sigma, q, steps, settings.delta, accountant=settings.accountant)
    clip = settings.max_grad_norm
    optimizer = make_optimizer(list(module.parameters()))
    named = [(k, p) for k, p in module.named_parameters() if p.requires_grad]
    module.train()
    for taken in range(1, steps + 1):
        # Poisson sampling of users, on the CPU from the run's generator
        chosen = (torch.rand(users, generator=generator) < q).to(owner.device)
        position = torch.cumsum(chosen.long(), 0) - 1  # a chosen user's place in the batch
        rows = chosen[owner].nonzero().squeeze(1)
        sampled = int(chosen.sum())
        if sampled:
            summed, _ = per_record.clipped_sum(
                module,
                tuple(x[rows] for x in inputs),
                labels[rows],
                position[owner[rows]],
                sampled,
                clip,
            )
        for name, parameter in named:
            drawn = torch.normal(
                0.0,
                sigma * clip,
                size=parameter.shape,
                generator=noise,
                dtype=parameter.dtype,
                device=parameter.device,
            )
            total = summed[name] + drawn if sampled else drawn
            parameter.grad = total / settings.batch_size  # the expected users per batch
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if progress is not None and taken % 20 == 0:
            progress("DP-SGD steps", taken / steps)
    return sigma, spent, steps


def user_privacy(run: DPSGDRun, column: str, users: Users, cap: int) -> dict[str, Any]:
    """The run's privacy facts with the user as the unit (the card's ``privacy``)."""
    privacy = run.privacy()
    privacy.update(
        {
            "privacy_unit": f"user (column {column})",
            "user_column": column,
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
