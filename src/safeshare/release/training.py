"""``safeshare train``'s job: a DP-SGD classifier from a sensitive table, with its card.

The table is read as a release reads it, and each column's kind and domain come from the
same place: the public schema (free), DP measurements on the records (the kinds, then
discovery: a share of the budget, composed with DP-SGD by sequential composition), or, with
``unsafe_infer``, the records without DP (flagged: no guarantee).  The whole budget is
committed to the ledger before any value is read.  The card names columns and sources, never
a value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from safeshare._progress import Progress, no_progress
from safeshare.data.identity import Identity
from safeshare.data.inference import identifier_by_name
from safeshare.data.plan import (
    ColumnDecision,
    Source,
    check_values,
    decide_columns,
    declared_columns,
    guessed_names,
    left_out,
)
from safeshare.data.readers import shown_columns
from safeshare.data.schema import Schema
from safeshare.data.table import Table
from safeshare.dp.accountant import NEIGHBOURING, Accountant
from safeshare.dp.budget import PrivacyBudget, epsilon_from_rho, rho_from_epsilon
from safeshare.dp.discovery import plan_discovery
from safeshare.dp.events import PrivacyEvent
from safeshare.dp.kinds import least_epsilon_note, plan_kinds
from safeshare.dp.randomness import Randomness
from safeshare.errors import InputError, SchemaError
from safeshare.release.job import JobRequest
from safeshare.release.pipeline import discovery_target, read_input, resolve_domain
from safeshare.report.card import card_header, column_entry, domain_source, kinds_condition
from safeshare.train.accounting import Accounting, DPSGDEvent, check_reachable
from safeshare.train.device import resolve_device
from safeshare.train.dpsgd import CLIPPINGS, DPSGDSettings, check_settings, require_torch
from safeshare.train.tabular import TabularModel, train_tabular
from safeshare.train.user_level import check_user_batch, count_users

DOMAIN_SHARE = 0.1  # of epsilon and of delta, spent on the kinds and domains the schema leaves open
KINDS_OF_DOMAIN_SHARE = 0.25  # of that share's rho, measuring the kinds (the release: 5% of 24%)


@dataclass(frozen=True)
class Prepared:
    """A table encoded under its resolved domain, and what resolving it spent."""

    table: Table
    decisions: list[ColumnDecision]
    name: str
    identity: Identity
    discovery_epsilon: float
    discovery_delta: float
    delta: float  # the whole budget's delta
    notes: list[str]
    discovery_events: tuple[PrivacyEvent, ...] = ()


@dataclass(frozen=True)
class TrainingSettings:
    """How the MLP is trained (everything but the data and the budget)."""

    epochs: float = 5.0
    batch_size: int = 512
    hidden: int = 64
    learning_rate: float = 2e-3
    max_grad_norm: float = 1.0
    clipping: str = "linear-ghost"
    accountant: Accounting = "pld"
    # the privacy unit: None = one record; a column name = a user (the records sharing it)
    user_column: str | None = None
    max_records_per_user: int = 64

    def __post_init__(self) -> None:
        check_settings(self)
        if self.clipping not in CLIPPINGS:
            raise InputError(
                f"--clipping {self.clipping!r} is unknown; use one of {', '.join(CLIPPINGS)}"
            )


def train_release(
    request: JobRequest,
    target: str,
    settings: TrainingSettings | None = None,
    *,
    unsafe_infer: bool = False,
    progress: Progress | None = None,
    device: str = "auto",
) -> TabularModel:
    """Train a DP-SGD MLP on ``request.data`` to predict ``target``; write weights and card
    to ``request.out``.

    ``unsafe_infer`` reads the domains the schema leaves open without DP (flagged: no
    guarantee).  ``device``: auto (CUDA when torch sees a GPU), cpu, cuda or cuda:N.
    """
    settings = settings or TrainingSettings()
    report = progress or no_progress
    check_training_job(request, device)
    report("reading", 0.0)
    source = read_table(request.data, target, request.schema_path, request.header)
    ids = None
    units = len(source.frame)
    if settings.user_column is not None:  # checked before any budget is spent
        source, ids = split_users(source, settings.user_column, target, unsafe_infer)
        units = count_users(ids, settings.max_records_per_user)
        check_user_batch(settings.batch_size, units)
    check_reachable_budget(units, settings, request.budget(units))
    with request.paid(source, units, "train dp-sgd") as (budget, payment):
        prepared = prepare_table(
            source, target, budget, unsafe_infer=unsafe_infer, seed=request.seed
        )
        model = train_tabular(
            prepared.table,
            target,
            epsilon=budget.epsilon - prepared.discovery_epsilon,
            delta=budget.delta - prepared.discovery_delta,
            epochs=settings.epochs,
            batch_size=settings.batch_size,
            max_grad_norm=settings.max_grad_norm,
            learning_rate=settings.learning_rate,
            hidden=settings.hidden,
            clipping=settings.clipping,
            accountant=settings.accountant,
            seed=request.seed,
            progress=report,
            user_column=settings.user_column,
            users=ids,
            max_records_per_user=settings.max_records_per_user,
            device=device,
        )
        card = training_card(
            prepared, model.card, budget.epsilon, "dp-sgd (tabular MLP)", settings.accountant
        )
        card["ledger"] = payment.summary()
        model = TabularModel(model.module, model.features, model.target, card)
        report("writing", 1.0)
        model.save(request.out, force=request.force)
    return model


class _Sized(Protocol):
    """The training settings the budget check reads (every job's settings have them)."""

    @property
    def batch_size(self) -> int: ...

    @property
    def epochs(self) -> float: ...

    @property
    def accountant(self) -> Accounting: ...


def check_reachable_budget(units: int, settings: _Sized, budget: PrivacyBudget) -> None:
    """Before the spend: refuse a batch over half of the ``units`` DP-SGD samples from, or a
    budget even the most noise cannot meet with them (all of the budget: a necessary
    condition, the run's own calibration is exact)."""
    dp = DPSGDSettings(
        records=units,
        batch_size=settings.batch_size,
        epochs=settings.epochs,
        epsilon=budget.epsilon,
        delta=budget.delta,
        accountant=settings.accountant,
    )
    check_reachable(dp.epsilon, dp.delta, dp.sampling_rate, dp.steps, accountant=dp.accountant)


def check_training_job(request: JobRequest, device: str) -> None:
    """Every check a training job makes before it reads: the request, torch, the device."""
    request.check()
    require_torch()  # before any budget is spent
    resolve_device(device)


@dataclass(frozen=True)
class SensitiveTable:
    """The sensitive table as read (text columns), its schema, identity and name."""

    frame: pd.DataFrame
    schema: Schema | None
    identity: Identity
    name: str

    @property
    def fingerprint(self) -> str:
        return self.identity.records


def split_users(
    source: SensitiveTable, user_column: str, target: str, unsafe_infer: bool
) -> tuple[SensitiveTable, Any]:
    """The table without its user column, and the column's ids (one per record).

    The user column is no feature.  Every domain must come from the schema (or
    ``unsafe_infer``): DP discovery protects records, not users.
    """
    frame = source.frame
    if user_column not in frame.columns or user_column == target:
        raise SchemaError(
            f"--user-column {user_column!r} is not a column of the data besides the target; "
            f"columns: {shown_columns(frame.columns)}"
        )
    schema = source.schema
    if schema is not None and user_column in schema.names:
        raise SchemaError(
            f"--user-column {user_column!r} is declared in the schema; the user column is not "
            "a feature: remove it from the schema"
        )
    rest = frame.drop(columns=[user_column])
    if not unsafe_infer:  # from the header and the schema alone: no value is read
        columns = list(map(str, rest.columns))
        declared = declared_columns(columns, schema)
        open_domains = [d.name for d in declared if d.modelled and d.source is Source.DP] + [
            n for n in guessed_names(columns, schema) if identifier_by_name(n) is None
        ]
        if open_domains:
            raise InputError(
                f"with --user-column every domain must come from the schema: DP discovery "
                f"protects records, not users; declare {open_domains} in the schema"
            )
    ids = frame[user_column].to_numpy(dtype=object)
    return SensitiveTable(rest, schema, source.identity, source.name), ids


def read_table(
    data: Path, target: str, schema_path: Path | None = None, header: bool | None = None
) -> SensitiveTable:
    """Read ``data`` as a release does; refuse a ``target`` it does not have."""
    schema = Schema.load(schema_path) if schema_path is not None else None
    frame, identity, name = read_input(data, schema, None, header)
    if target not in frame.columns:
        raise SchemaError(
            f"--target {target!r} is not a column of {data.name}; columns: {shown_columns(frame.columns)}"
        )
    return SensitiveTable(frame, schema, identity, name)


def prepare_table(
    source: SensitiveTable,
    target: str,
    budget: PrivacyBudget,
    *,
    unsafe_infer: bool = False,
    seed: int | None = None,
) -> Prepared:
    """Decide the columns and resolve the domain as a release does: where the schema leaves
    kinds or domains open, :data:`DOMAIN_SHARE` of the budget measures the kinds with DP
    (:data:`KINDS_OF_DOMAIN_SHARE` of its rho) and discovers the domains; whether it is spent
    is decided from the header and the schema alone."""
    frame, name, schema = source.frame, source.name, source.schema
    columns = list(map(str, frame.columns))
    guessed = [] if unsafe_infer else guessed_names(columns, schema)
    share = PrivacyBudget(DOMAIN_SHARE * budget.epsilon, DOMAIN_SHARE * budget.delta)
    reserved = share.delta / 2  # thresholds of category discovery
    rho = rho_from_epsilon(share.epsilon, reserved)
    kinds_events: list[PrivacyEvent] = []
    notes: list[str] = []
    if guessed:
        kinds = plan_kinds(guessed, KINDS_OF_DOMAIN_SHARE * rho)
        (kinds_noise,) = Randomness(seed).spawn(1)
        measured = kinds.run(frame[guessed], kinds_noise)
        decisions = decide_columns(frame, schema, measured={g.name: g for g in measured.guesses})
        kinds_events, notes, rho = (
            [kinds.event],
            list(measured.notes),
            rho * (1 - KINDS_OF_DOMAIN_SHARE),
        )
        if measured.wanted_sigma is not None:
            wanted = kinds.rho_at(measured.wanted_sigma) / KINDS_OF_DOMAIN_SHARE
            least = epsilon_from_rho(wanted, reserved) / DOMAIN_SHARE
            notes.append(least_epsilon_note(least))
    else:
        decisions = decide_columns(frame, schema, unsafe=unsafe_infer)
    check_values(frame, decisions)
    by_name = {d.name: d for d in decisions}
    if not by_name[target].modelled:
        raise SchemaError(
            f"--target {target!r} is dropped ({by_name[target].reason}); a classifier needs a "
            "categorical target: declare it in the schema (kind: categorical)"
        )
    targets = [discovery_target(d) for d in decisions if d.modelled and d.source is Source.DP]
    spent_epsilon = spent_delta = 0.0
    discovery = plan_discovery([], 0.0, 0.0)
    if guessed or targets:  # the share: without guessed kinds, targets come from the schema
        if targets:
            discovery = plan_discovery(targets, rho, reserved)
        spent_delta = share.delta
        spent_epsilon = Accountant([*kinds_events, *discovery.events]).check_within(share)
    domain, found = resolve_domain(decisions, discovery, frame, Randomness(seed))
    notes += found
    decisions = left_out(decisions, domain)
    table, _ = Table.from_frame(frame, domain)
    return Prepared(
        table,
        decisions,
        name,
        source.identity,
        spent_epsilon,
        spent_delta,
        budget.delta,
        notes,
        (*kinds_events, *discovery.events),
    )


def training_card(
    prepared: Prepared,
    model_card: dict[str, Any],
    epsilon: float,
    method: str,
    accounting: Accounting,
) -> dict[str, Any]:
    """The model's card under the header every card has (:func:`card_header`), plus where
    every column's domain came from and the whole budget, composed under ``accounting``."""
    privacy = model_card["privacy"]
    total_delta = prepared.discovery_delta + privacy["delta"]
    total_epsilon, composition = _composed(prepared, privacy, total_delta, accounting)
    user_level = str(privacy.get("privacy_unit", "record")).startswith("user")
    header = card_header(
        method,
        _guarantee(prepared, privacy, total_epsilon, total_delta, user_level),
        budget=PrivacyBudget(epsilon, total_delta),
        secure_noise=privacy.get("secure_noise"),
        source={"name": prepared.name, **prepared.identity.card()},
    )
    public, not_dp = _disclosed(prepared, user_level)
    return {
        **header,
        **model_card,
        "privacy": {**privacy, "public": "see 'public' and each column's 'source'"},
        "budget": {
            "epsilon": epsilon,
            "epsilon_spent": total_epsilon,
            "delta": total_delta,
            **composition,
            "items": [
                {
                    "step": "column kinds and domain discovery",
                    "epsilon": prepared.discovery_epsilon,
                    "delta": prepared.discovery_delta,
                },
                {"step": "dp-sgd", "epsilon": privacy["epsilon"], "delta": privacy["delta"]},
            ],
        },
        "domain_source": domain_source(prepared.decisions),
        "columns": {d.name: column_entry(d, prepared.table.domain) for d in prepared.decisions},
        "public": public,
        "not_dp": not_dp,
        "notes": prepared.notes,
    }


def _guarantee(
    prepared: Prepared, privacy: dict[str, Any], epsilon: float, delta: float, user_level: bool
) -> str:
    """The card's guarantee line: none where the domain was read without DP."""
    if any(d.source is Source.NOT_DP for d in prepared.decisions):
        return "none: the domain was read from the private data without DP (--unsafe-infer)"
    unit = "every user" if user_level else "every training record"
    seeded = "" if privacy["secure_noise"] else ", for anyone who does not know the seed"
    given = kinds_condition(prepared.decisions)
    return f"({epsilon:.4g}, {delta:.3g})-DP for {unit}{given}{seeded}"


def _disclosed(prepared: Prepared, user_level: bool) -> tuple[list[str], list[str]]:
    """What the card lists as public, and what was read from the private data without DP."""
    public = ["the number of training records", "the column names"]
    if any(d.source is Source.SCHEMA for d in prepared.decisions):
        public.append("the domains of the columns whose source is 'schema'")
    not_dp = ["the number of training records is exact"]
    if user_level:
        public.append("the number of users")
        not_dp.append(
            "the number of users and the records dropped by --max-records-per-user are exact"
        )
    if any(d.kind_guessed and not d.kind_measured for d in prepared.decisions):
        not_dp.append("column kinds and identifier detection read the private data (not DP)")
    if any(d.source is Source.NOT_DP for d in prepared.decisions):
        not_dp.append("--unsafe-infer: categories and bounds were read without noise")
    return public, not_dp


def _composed(
    prepared: Prepared, privacy: dict[str, Any], delta: float, accounting: Accounting
) -> tuple[float, dict[str, Any]]:
    """The epsilon of discovery and DP-SGD together at ``delta``, and how it was composed.

    Under PLD or RDP the project's accountant composes every step (dp-accounting); that is
    never above the sum of the steps' own epsilons, which bounds it too, so the smaller of
    the two is the claim.  The PRV accountant (Opacus) bounds DP-SGD alone, so with it the
    steps add up.
    """
    added = prepared.discovery_epsilon + privacy["epsilon"]
    named = {"accounting": accounting, "neighbouring": NEIGHBOURING}
    if not prepared.discovery_events:  # DP-SGD alone: its own accountant's figure
        return privacy["epsilon"], {**named, "composition": "one step: dp-sgd"}
    if accounting == "prv":
        return added, {**named, "composition": "sequential (epsilons and deltas add up)"}
    dpsgd = DPSGDEvent(privacy["noise_multiplier"], privacy["sampling_rate"], privacy["steps"])
    together = Accountant([*prepared.discovery_events, dpsgd], accounting)
    composition = (
        f"{accounting} over every step (dp-accounting); the steps' own epsilons (items) add "
        "up to no less"
    )
    return min(together.epsilon(delta), added), {**named, "composition": composition}
