"""The main job: sensitive table in, safe artifact + privacy card + report out.

One pipeline: read -> decide each column's domain -> split train/holdout ->
plan the privacy cost and commit it to the ledger -> discover the domain (DP) ->
synthesize -> evaluate -> write ``synthetic.csv``, ``card.json`` and
``report.html`` into a temporary directory and move it into place only when all
three are complete.

>>> import tempfile, pathlib
>>> from safeshare.data.examples import load_example
>>> frame, schema = load_example("fair")
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> result = release(frame, out=tmp / "out", settings=SynthesisSettings(epsilon=1.0),
...                  reading=Reading(schema=schema, name="fair"), ledger=tmp / "ledger.sqlite",
...                  seed=0)
>>> sorted(p.name for p in (tmp / "out").iterdir())
['.safeshare-output', 'card.json', 'report.html', 'synthetic.csv']
>>> result.card["domain_source"], result.card["secure_noise"]
('schema', False)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare._progress import Progress, no_progress
from safeshare.data.domain import Domain, Kind
from safeshare.data.identity import Identity
from safeshare.data.inference import GuessedColumn, identifier_by_name
from safeshare.data.plan import (
    ColumnDecision,
    Source,
    check_values,
    decide_columns,
    declared_columns,
    guessed_names,
    infer_column_unsafe,
    left_out,
)
from safeshare.data.readers import MISSING_TOKENS
from safeshare.data.row_order import RowOrder
from safeshare.data.schema import Schema
from safeshare.data.table import Table
from safeshare.dp.accountant import Accountant
from safeshare.dp.budget import PrivacyBudget, check_delta, check_epsilon, epsilon_from_rho
from safeshare.dp.discovery import MAX_BINS, DiscoveryPlan, Spellings, Target, plan_discovery
from safeshare.dp.events import PrivacyEvent
from safeshare.dp.kinds import KindsPlan, least_epsilon_note, plan_kinds
from safeshare.dp.ledger import Ledger
from safeshare.dp.randomness import Randomness
from safeshare.errors import BudgetError, InputError
from safeshare.evaluate.assessment import Assessment, EvaluationOptions, assess
from safeshare.evaluate.neutral import value_utility
from safeshare.evaluate.risk import memorization_risk, risk_from_memorization
from safeshare.evaluate.suite import release_utility
from safeshare.output_folder import check_output
from safeshare.release.inputs import EVALUATION_ROWS, Parts, Reading, ReleaseInput, open_input
from safeshare.release.job import Bill, Job, Payment, paid
from safeshare.release.output import (
    OUTPUT_FORMATS,
    SampledRelease,
    sample_release,
    write_release,
)
from safeshare.release.resume import Spend, check_kept, measurement_recorder, save_results
from safeshare.report import card as card_module
from safeshare.report.html import render_report
from safeshare.synth.aim import AIM
from safeshare.synth.constraints import Order
from safeshare.synth.mst import MST
from safeshare.synth.pe.histogram import check_sizes, samples_per_parent
from safeshare.synth.pe.lookahead import check_lookahead
from safeshare.synth.pe.neighbors import check_search
from safeshare.synth.pe.synthesizer import TabularPE

METHODS = ("mst", "aim", "pe")  # DP synthesis; anonymization is release.anonymize
DOMAIN_SHARE = 0.2  # share of rho that finds the domains the schema leaves open (Adult: 0.1 -> 0.2
# took MST's neutral 3-way TVD from 0.143 to 0.121; 0.3 gave 0.124)
THRESHOLD_DELTA_SHARE = 0.25  # share of delta for thresholds of category discovery
KINDS_SHARE = 0.05  # share of rho that measures the kinds the schema does not give
FIRST_ROUND_SHARE = 0.5  # of discovery's rho and delta, spent evenly before the columns left short
# share the rest (COMPAS, MST, epsilon 1, seeds 0-3: neutral 3-way TVD 0.396 -> 0.381)
MAX_ROWS = 2**31 - 1  # the most records one release writes (--rows)


@dataclass(frozen=True)
class ReleaseResult:
    """What a release wrote, and the card it wrote."""

    out: Path
    card: dict[str, Any]
    synthetic: pd.DataFrame
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class SynthesisSettings:
    """What a synthesis release computes: the method, its budget and the technique's options.

    ``rows``: records to write (default: the synthesizer's own, about the input's size).
    ``unsafe_infer`` decides the domains of the columns the schema leaves open from the data
    *without* DP (the card says so).  ``output_format`` writes ``synthetic.csv`` or
    ``synthetic.parquet`` (streamed, for large releases).  ``workload``, ``max_model_size`` and
    ``time_limit`` are AIM's; ``pe_options`` go to
    :class:`~safeshare.synth.pe.synthesizer.TabularPE` (``iterations``,
    ``samples_per_iteration``, ``variation_degrees``, ``checkpoint``).

    >>> SynthesisSettings(method="aim", epsilon=2.0).budget
    PrivacyBudget(epsilon=2.0, delta=1e-09)
    >>> SynthesisSettings(method="gan").check()
    Traceback (most recent call last):
    ...
    safeshare.errors.InputError: unknown method 'gan'; choose one of ['mst', 'aim', 'pe']
    """

    method: str = "mst"
    epsilon: float = 1.0
    delta: float = 1e-9
    holdout_fraction: float = 0.2
    rows: int | None = None
    unsafe_infer: bool = False
    output_format: str = "csv"
    workload: str | Path | None = None
    max_model_size: float = 80.0
    time_limit: float | None = None
    pe_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def budget(self) -> PrivacyBudget:
        """This release's budget (checked when built)."""
        return PrivacyBudget(self.epsilon, self.delta)

    def check(self) -> None:
        """Refuse an unknown method, budget, format or row count before anything is read."""
        if self.method not in METHODS:
            hint = (
                ": anonymization is not DP synthesis, call "
                "safeshare.release.anonymize.release_anonymized(source, config=..., out=...)"
                if self.method == "anonymize"
                else ""
            )
            raise InputError(f"unknown method {self.method!r}; choose one of {list(METHODS)}{hint}")
        check_epsilon(self.epsilon)
        check_delta(self.delta)
        if self.output_format not in OUTPUT_FORMATS:
            raise InputError(
                f"unknown output format {self.output_format!r}; "
                f"choose one of {list(OUTPUT_FORMATS)}"
            )
        if self.rows is not None and not 1 <= self.rows <= MAX_ROWS:
            raise InputError(
                f"--rows must lie in [1, {MAX_ROWS:,}] (the most records one release writes), "
                f"got {self.rows:,}"
            )
        if self.method == "pe":
            options = self.pe_options
            samples_per_parent(options.get("selection", "sample"), options.get("offspring"))
            check_sizes(options.get("iterations"), options.get("samples_per_iteration"))
            check_lookahead(options.get("lookahead", 0))


def release(
    source: str | Path | pd.DataFrame,
    *,
    out: str | Path,
    settings: SynthesisSettings | None = None,
    reading: Reading | None = None,
    ledger: Ledger | str | Path | None = None,
    total_budget: PrivacyBudget | None = None,
    seed: int | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> ReleaseResult:
    """Release ``source`` as DP synthetic data; see the module docstring for the steps.

    ``settings`` say what to compute (:class:`SynthesisSettings`: method, budget, options),
    ``reading`` how to read the input (:class:`~safeshare.release.inputs.Reading`: schema,
    name, engine).  ``total_budget`` is the dataset's total in the ``ledger`` when it is seen
    for the first time (default: this release's own budget).  ``seed`` makes the run
    reproducible and *not* private against whoever knows the seed.  Anonymization, which is
    not DP, is :func:`safeshare.release.anonymize.release_anonymized`.
    """
    settings = settings or SynthesisSettings()
    reading = reading or Reading()
    settings.check()
    reading.check()
    inputs = (source, *reading.files(), settings.workload, ledger)
    job = Job(check_output(out, force=force, inputs=inputs), ledger, seed, force)
    schema = Schema.given(reading.schema)
    report = progress or no_progress
    report("reading", 0.0)
    with open_input(source, schema, reading) as data:
        label = f"release {settings.method}"
        bill = Bill(data.identity, data.name, settings.budget, label, total_budget)
        return _release_input(data, settings, schema, job, bill, report)


@dataclass(frozen=True)
class _Split:
    """How a release's budget is shared, fixed before any value is read: zCDP for the kinds
    measurement, domain discovery and the synthesizer, and the delta discovery's thresholds
    keep."""

    kinds: float
    domain: float
    synthesis: float
    delta_reserved: float


@dataclass(frozen=True)
class _Plan:
    """What a release fixes before its spend: its streams, split, budget shares and
    mechanisms.  Where DP measures the column kinds (``kinds``), the columns are decided in the
    paid block (:func:`_decided`): ``decisions``, ``discovery`` and ``orders`` are set there."""

    rand: Randomness
    rng: np.random.Generator
    discovery_noise: Randomness
    kinds_noise: Randomness
    n_train: int
    n_holdout: int
    split: _Split
    kinds: KindsPlan | None
    synthesizer: MST | AIM | TabularPE
    discovery_rows: pd.DataFrame
    spellings: Spellings | None
    checkpoint: Path | None
    order_rules: tuple[Mapping[str, Any], ...] = ()  # the schema's order constraints
    decisions: list[ColumnDecision] = field(default_factory=list)
    discovery: DiscoveryPlan = field(default_factory=lambda: plan_discovery([], 0.0, 0.0))
    orders: tuple[Order, ...] = ()  # kept after decoding, by every method

    @property
    def events(self) -> list[PrivacyEvent]:
        """What the kinds measurement and discovery spend (the synthesizer's are its own)."""
        kinds = [self.kinds.event] if self.kinds is not None else []
        return [*kinds, *self.discovery.events]


def _release_input(
    data: ReleaseInput,
    settings: SynthesisSettings,
    schema: Schema | None,
    job: Job,
    bill: Bill,
    report: Progress,
) -> ReleaseResult:
    """The release of one opened input (see :func:`release`): plan, one spend, then run."""
    plan = _plan(data, settings, schema, job.seed, report)
    # an engine's failed job refunds the spend: nothing is released before the final write
    with paid(job.ledger, bill, plan.checkpoint) as payment:
        check_kept(plan.checkpoint, payment.spend)
        kind_notes: list[str] = []
        if plan.kinds is not None:
            report("measuring the column kinds", 0.05)
            plan, kind_notes = _measured_kinds(plan, plan.kinds, settings, schema, payment.spend)
        report("discovering the domain", 0.1)
        domain, notes = _checkpointed_domain(
            plan.decisions,
            plan.discovery,
            plan.discovery_rows,
            plan.spellings,
            plan.discovery_noise,
            payment.spend,
            plan.checkpoint,
        )
        notes = kind_notes + notes
        if not domain.columns:
            raise BudgetError(
                "no column's range stood above the discovery noise at this budget, so nothing "
                "is left to release (the discovery's share stays spent): declare the columns' "
                "min and max in a schema, or raise --epsilon"
            )
        plan = replace(plan, decisions=left_out(plan.decisions, domain))
        notes += [
            f"order constraint {list(o.columns)}: {missing} left out of the release, so the "
            "order holds among the other columns"
            for o in plan.orders
            if (missing := [c for c in o.columns if c not in domain.names])
        ]
        parts = data.encode(domain)
        report("synthesizing", 0.2)
        synthesizer = plan.synthesizer
        synthesizer.fit(parts.train)
        rows_out = synthesizer.default_rows() if settings.rows is None else settings.rows
        out = job.out
        sampled = sample_release(
            synthesizer,
            rows_out,
            plan.rng,
            out.parent,
            settings.output_format,
            orders=[o.columns for o in plan.orders],
        )
        try:
            report("evaluating", 0.8)
            card, html = _evaluated(data, settings, plan, parts, sampled, domain, notes, payment)
            report("writing", 0.9)
            files = {
                card["synthetic_file"]: sampled.content,
                "card.json": card,
                "report.html": html,
            }
            # the paid block's last step: once the release is in place nothing refunds it
            write_release(out, files, job.force)
        except BaseException:  # a streamed file never outlives a failed run
            sampled.discard()
            raise
    report("done", 1.0)
    # folding and clipping are expected where DP chose the domain; against a schema they are news
    declared = [d.name for d in plan.decisions if d.source is Source.SCHEMA]
    warnings = parts.report.warnings(declared) + notes
    warnings += synthesizer.describe().get("warnings", [])
    return ReleaseResult(out, card, sampled.first_frame, warnings)


def _plan(
    data: ReleaseInput,
    settings: SynthesisSettings,
    schema: Schema | None,
    seed: int | None,
    report: Progress,
) -> _Plan:
    """Split, plan every mechanism and share the budget; decide the columns where no kind is
    to be measured; refuse what cannot work, all before the spend (the rows discovery reads
    are fetched here too: a failed engine job costs nothing)."""
    budget, method = settings.budget, settings.method
    rand = Randomness(seed)
    rng = rand.generator()
    discovery_noise, synthesis_noise = rand.spawn(2)  # a stream of its own for each mechanism
    (kinds_noise,) = rand.spawn(1)
    n_train, n_holdout = data.split(settings.holdout_fraction, RowOrder.draw(rng))
    # kinds are guessed from the training rows alone: the holdout, which measures the
    # release, must not shape it; every row's values are checked before the spend
    train_rows = data.discovery_frame()
    guessed = [] if settings.unsafe_infer else guessed_names(list(train_rows.columns), schema)
    declared = (
        declared_columns(list(train_rows.columns), schema)
        if guessed
        else decide_columns(train_rows, schema, unsafe=settings.unsafe_infer)
    )
    check_values(data.checked_frame(), declared)
    rules = list(schema.constraints) if schema is not None else []
    order_rules = tuple(c for c in rules if Order.declared_by(c))
    constraints = [c for c in rules if not Order.declared_by(c)]
    if constraints and method != "aim":
        raise InputError(
            f"the schema declares {len(constraints)} constraint(s) on combinations of values; "
            f"--method {method} cannot honour them: use --method aim, or remove them from the "
            "schema (order constraints are kept by every method)"
        )
    known = {d.name: d.kind for d in declared if d.modelled}
    for rule in order_rules:  # their shape and columns are public: checked before the spend
        Order.from_dict(rule, {**known, **dict.fromkeys(guessed)})
    split = _split_budget(budget, declared, guessed)
    kinds = plan_kinds(guessed, split.kinds) if guessed else None
    synthesizer = _synthesizer(
        settings, split.synthesis, synthesis_noise, _subrange(report, 0.2, 0.8), constraints
    )
    plan = _Plan(
        rand,
        rng,
        discovery_noise,
        kinds_noise,
        n_train,
        n_holdout,
        split,
        kinds,
        synthesizer,
        train_rows,
        _spellings(data, schema),
        _checkpoint(synthesizer),
        order_rules,
    )
    candidates = sum(d.modelled for d in declared) + sum(
        identifier_by_name(name) is None for name in guessed
    )
    if kinds is None:  # every kind is public: the columns are decided before the spend
        plan, _ = _decided(plan, budget, declared)  # every order is checked: no note
        modelled = [d for d in plan.decisions if d.modelled]
        candidates = len(modelled)
        if isinstance(synthesizer, AIM) and all(d.source is Source.SCHEMA for d in modelled):
            synthesizer.check(Domain(tuple(d.spec.to_column(d.name) for d in modelled if d.spec)))
    if isinstance(synthesizer, TabularPE):
        check_search(synthesizer.neighbour_search)  # a missing faiss is refused before any spend
        synthesizer.check_useful(n_train)
    else:
        _check_useful(synthesizer, max(candidates, 1), n_train, budget, split.delta_reserved)
    return plan


def _split_budget(
    budget: PrivacyBudget, declared: list[ColumnDecision], guessed: list[str]
) -> _Split:
    """The budget's shares, from public facts alone: which columns the schema declares and
    which are guessed (a guessed column may turn out categorical, so its thresholds keep
    their delta)."""
    open_declared = [d for d in declared if d.modelled and d.source is Source.DP]
    categorical = bool(guessed) or any(
        d.kind in (Kind.CATEGORICAL, Kind.ORDINAL) for d in open_declared
    )
    delta_reserved = budget.delta * THRESHOLD_DELTA_SHARE if categorical else 0.0
    rho = budget.rho(delta_reserved)
    rho_kinds = KINDS_SHARE * rho if guessed else 0.0
    rho_domain = DOMAIN_SHARE * (rho - rho_kinds) if (guessed or open_declared) else 0.0
    return _Split(rho_kinds, rho_domain, rho - rho_kinds - rho_domain, delta_reserved)


def _decided(
    plan: _Plan, budget: PrivacyBudget, decisions: list[ColumnDecision]
) -> tuple[_Plan, list[str]]:
    """``plan`` with its columns decided: discovery and the order constraints planned against
    them (with notes on the orders left out), and every event checked within ``budget``."""
    modelled = [d for d in decisions if d.modelled]
    discovery = _plan_discovery(plan.split, modelled, budget.epsilon)
    orders, notes = _orders(plan.order_rules, decisions)
    plan = replace(plan, decisions=decisions, discovery=discovery, orders=orders)
    synthesis = plan.synthesizer.privacy_events([d.name for d in modelled])
    Accountant([*plan.events, *synthesis]).check_within(budget)
    return plan, notes


def _orders(
    rules: Sequence[Mapping[str, Any]], decisions: list[ColumnDecision]
) -> tuple[tuple[Order, ...], list[str]]:
    """The schema's order constraints over the decided columns.  A bad rule is refused (before
    any spend where the schema gives its columns' kinds); one over a column whose kind DP
    measured is kept where the measured kinds fit it, else left out with a note."""
    measured = {d.name for d in decisions if d.kind_measured}
    kinds = {d.name: d.kind for d in decisions if d.modelled}
    orders, notes = [], []
    for rule in rules:
        order = Order.from_dict(rule, {**kinds, **dict.fromkeys(measured)})
        found = {kinds[c] for c in order.columns if c in kinds}
        if set(order.columns) <= set(kinds) and Order.fits(found):
            orders.append(order)
            continue
        notes.append(
            f"order constraint {list(order.columns)}: the kinds DP measured for "
            f"{sorted(measured & set(order.columns))} are not all numbers or all dates (or the "
            "column was dropped), so the order is not kept; declare the columns' kinds in "
            "the schema"
        )
    return tuple(orders), notes


KINDS_KEY = "kinds"  # the receipt's entries a resumed release reuses: the measured kinds
KINDS_NOTES_KEY = "kinds_notes"


def _measured_kinds(
    plan: _Plan,
    kinds: KindsPlan,
    settings: SynthesisSettings,
    schema: Schema | None,
    spend: Spend,
) -> tuple[_Plan, list[str]]:
    """Measure the kinds no schema gives as ``kinds`` plans (paid for by ``spend``; a resumed
    attempt reuses the first attempt's, kept in its checkpoint folder) and decide the columns
    by them."""
    saved = spend.saved.get(KINDS_KEY) if spend.resumed else None
    if saved is not None:
        guesses = [GuessedColumn.from_dict(g) for g in saved]
        notes = [str(n) for n in spend.saved.get(KINDS_NOTES_KEY, [])]
    else:
        result = kinds.run(plan.discovery_rows[list(kinds.columns)], plan.kinds_noise)
        guesses, notes = result.guesses, result.notes
        if result.wanted_sigma is not None:
            notes.append(_kinds_epsilon(kinds, result.wanted_sigma, settings.budget, plan.split))
        save_results(
            plan.checkpoint,
            {KINDS_KEY: [g.to_dict() for g in guesses], KINDS_NOTES_KEY: notes},
        )
    measured = {g.name: g for g in guesses}
    decisions = decide_columns(plan.discovery_rows, schema, measured=measured)
    plan, order_notes = _decided(plan, settings.budget, decisions)
    return plan, notes + order_notes


def _kinds_epsilon(kinds: KindsPlan, sigma: float, budget: PrivacyBudget, split: _Split) -> str:
    """The --epsilon at which the kinds measurement's noise falls to ``sigma``, in a note."""
    rho = kinds.rho_at(sigma) / KINDS_SHARE
    return least_epsilon_note(epsilon_from_rho(rho, budget.delta - split.delta_reserved))


def _evaluated(
    data: ReleaseInput,
    settings: SynthesisSettings,
    plan: _Plan,
    parts: Parts,
    sampled: SampledRelease,
    domain: Domain,
    notes: list[str],
    payment: Payment,
) -> tuple[dict[str, Any], str]:
    """The card (what was spent, utility, risk, attacks) and the report of a sampled release."""
    synthesizer, rng = plan.synthesizer, plan.rng
    train, holdout = parts.train_sample, parts.holdout_sample
    synthetic = sampled.first
    if len(synthetic) > EVALUATION_ROWS:
        synthetic = synthetic.take(np.arange(EVALUATION_ROWS))
    accountant = Accountant([*plan.events, *synthesizer.privacy_spent()])
    epsilon_spent = accountant.check_within(settings.budget)
    code_utility = release_utility(synthetic, train, holdout, rng)
    written = sampled.first_frame.iloc[: len(synthetic)]
    utility = value_utility(written, parts.train_values, parts.holdout_values, rng)
    assessment = _attack(synthetic, train, holdout, rng)
    risk = (  # the suite's memorization measures, when it ran: one distance search
        memorization_risk(synthetic, train, holdout, rng)
        if assessment is None
        else risk_from_memorization(assessment.memorization)
    )
    metrics = {"utility": utility.to_dict(), "risk": risk.to_dict()}
    metrics["utility_codes"] = code_utility.to_dict()
    if assessment is not None:
        metrics["evaluation"] = assessment.to_dict()
    spending = card_module.Spending(
        settings.method, settings.budget, accountant, epsilon_spent, plan.rand.secure
    )
    rows = card_module.RowCounts(
        len(data), plan.n_train, plan.n_holdout, sampled.rows, settings.holdout_fraction
    )
    card = card_module.build_card(
        spending,
        decisions=plan.decisions,
        domain=domain,
        dataset={"name": data.name, **data.identity.card()},
        rows=rows,
        metrics=metrics,
        ledger=payment.summary(),
        notes=notes + parts.notes + synthesizer.describe().get("notes", []),
        model=synthesizer.describe(),
    )
    card["engine"] = data.describe()
    card["synthetic_file"] = f"synthetic.{settings.output_format}"
    card = card_module.as_json(card)
    html = render_report(card, train=train, synthetic=synthetic, risk=risk, assessment=assessment)
    return card, html


DOMAIN_KEY = "domain"  # the receipt's entries a resumed tabular PE release reuses
NOTES_KEY = "domain_notes"
ATTACKS = 500  # attacks of each kind a release runs on itself (fewer when the data are smaller)


def _attack(
    synthetic: Table, train: Table, holdout: Table | None, rng: np.random.Generator
) -> Assessment | None:
    """The attack suite against the release (singling out, linkability, inference, membership)."""
    if holdout is None or min(len(holdout), len(synthetic), len(train)) < 20:
        return None
    attacks = min(ATTACKS, len(holdout), len(synthetic), len(train))
    return assess(synthetic, train, holdout, rng, EvaluationOptions(attacks=attacks, ml=False))


def read_input(
    source: str | Path | pd.DataFrame,
    schema: Schema | None,
    dataset_name: str | None,
    header: bool | None = None,
) -> tuple[pd.DataFrame, Identity, str]:
    """The table as text columns, its identity in the ledger and its name (``header``: whether a
    CSV's first row is a header, over the schema's word; None detects it)."""
    if isinstance(source, pd.DataFrame):
        if source.shape[0] == 0 or source.shape[1] == 0:
            raise InputError("the table is empty; give at least one column and one record")
        frame = source.copy()
        frame.columns = [str(c) for c in frame.columns]
        return frame, Identity.of_frame(frame), dataset_name or "dataframe"
    path = Path(source)
    layout = Schema.layout_of(schema, header)
    return layout.read(path), Identity.of_file(path, layout.header), dataset_name or path.name


def _plan_discovery(split: _Split, modelled: list[ColumnDecision], epsilon: float) -> DiscoveryPlan:
    """Domain discovery's plan, on its share of the budget, before reading values."""
    targets = [discovery_target(d) for d in modelled if d.source is Source.DP]
    plan = plan_discovery(
        targets, split.domain, split.delta_reserved, first_share=FIRST_ROUND_SHARE
    )
    return replace(plan, epsilon=epsilon)


def _synthesizer(
    settings: SynthesisSettings,
    rho: float,
    noise: Randomness,
    progress: Progress,
    constraints: list[dict[str, Any]],
) -> MST | AIM | TabularPE:
    """The method's synthesizer for the ``rho`` left after discovery, on its own stream."""
    if settings.method == "pe":
        options = dict(settings.pe_options)
        model = TabularPE(rho=rho, delta=settings.delta, rng=noise, progress=progress, **options)
        if model.checkpoint is not None:  # the receipt counts what the folder measured
            model.callbacks = (measurement_recorder(model.checkpoint),)
        return model
    if settings.method == "aim":
        return AIM(
            rho=rho,
            workload=settings.workload,
            max_model_size=settings.max_model_size,
            time_limit=settings.time_limit,
            constraints=constraints,
            rng=noise,
            progress=progress,
        )
    return MST(rho=rho, rng=noise, progress=progress)


def discovery_target(decision: ColumnDecision) -> Target:
    """What DP domain discovery must find for a column the schema leaves open."""
    spec = decision.spec
    if spec is None:
        return Target(
            decision.name,
            decision.kind,
            decision.role,
            decision.integer,
            date_format=decision.date_format,
            strays_missing=decision.kind_measured,
        )
    return Target(
        decision.name,
        decision.kind,
        decision.role,
        decision.integer,
        max_bins=spec.bins or MAX_BINS,
        minimum=spec.lower,
        maximum=spec.upper,
        date_format=decision.date_format,
    )


def _check_useful(
    synthesizer: MST | AIM,
    n_columns: int,
    n_rows: int,
    budget: PrivacyBudget,
    delta_reserved: float,
) -> None:
    """Refuse a budget whose noise would drown every count of this table."""
    sigma = synthesizer.one_way_sigma(n_columns)
    if 3 * sigma < n_rows:
        return
    wanted_rho = synthesizer.total_rho() * (sigma / (n_rows / 20)) ** 2 / (1 - DOMAIN_SHARE)
    suggestion = epsilon_from_rho(wanted_rho, budget.delta - delta_reserved)
    raise BudgetError(
        f"epsilon={budget.epsilon:g} is too small to measure anything useful in this table: each "
        f"count would get noise of about {sigma:,.0f} records. Use --epsilon {suggestion:.2g} or more"
    )


def _spellings(data: ReleaseInput, schema: Schema | None) -> Spellings | None:
    """How the discovery rows write missing values, with the public list of spellings."""
    written = data.discovery_spellings()
    if written is None:
        return None
    return Spellings(written, schema.missing_values if schema is not None else MISSING_TOKENS)


def resolve_domain(
    decisions: list[ColumnDecision],
    discovery: DiscoveryPlan,
    frame: pd.DataFrame,
    rand: Randomness,
    spellings: Spellings | None = None,
) -> tuple[Domain, list[str]]:
    """The Domain: schema columns as declared, the others as DP discovery finds them (a
    column it finds no range for is left out: see :func:`~safeshare.data.plan.left_out`)."""
    found = discovery.run(frame, rand, spellings)
    discovered = {c.name: c for c in found.columns}
    columns = []
    for d in decisions:
        if d.source is Source.SCHEMA and d.spec is not None:
            columns.append(d.spec.to_column(d.name))
        elif d.source is Source.DP and d.name in discovered:
            columns.append(discovered[d.name])
        elif d.source is Source.NOT_DP:
            columns.append(infer_column_unsafe(frame[d.name], d))
    return Domain(tuple(columns)), list(found.notes)


def _checkpoint(synthesizer: MST | AIM | TabularPE) -> Path | None:
    """PE's checkpoint folder (it also holds the receipt and the domain of the first attempt)."""
    folder = synthesizer.checkpoint if isinstance(synthesizer, TabularPE) else None
    return None if folder is None else Path(folder)


def _checkpointed_domain(
    decisions: list[ColumnDecision],
    discovery: DiscoveryPlan,
    frame: pd.DataFrame,
    spellings: Spellings | None,
    rand: Randomness,
    spend: Spend,
    folder: Path | None,
) -> tuple[Domain, list[str]]:
    """The Domain, found once per checkpoint folder.

    The first attempt resolves it (DP discovery for the columns the schema leaves open,
    paid for by the spend) and keeps it, with its notes, in the folder's receipt; a resumed
    attempt reuses it instead of discovering again (new noise, an unpaid second release).
    Columns the schema declares must be declared as they were.
    """
    saved = spend.saved.get(DOMAIN_KEY) if spend.resumed else None
    if saved is None:
        if spend.resumed and discovery.targets and (folder is not None) and _has_population(folder):
            raise InputError(
                f"the checkpoint folder {str(folder)!r} holds populations but not the domain "
                "they were drawn in; resume with the schema of the first run, or use a new "
                "--checkpoint folder"
            )
        domain, notes = resolve_domain(decisions, discovery, frame, rand, spellings)
        if folder is not None:
            save_results(folder, {DOMAIN_KEY: domain.to_dict(), NOTES_KEY: notes})
        return domain, notes
    domain = Domain.from_dict(saved)
    wanted = [d.name for d in decisions if d.modelled]
    left = [d.name for d in decisions if d.source is Source.DP and d.name not in domain.names]
    if list(domain.names) != [name for name in wanted if name not in left]:
        raise InputError(
            f"the checkpoint folder {str(folder)!r} was written for the columns "
            f"{list(domain.names)}, this run models {wanted}; resume with the same schema and "
            "data, or use a new --checkpoint folder"
        )
    for d in decisions:
        declared = d.spec.to_column(d.name).to_dict() if d.spec is not None else None
        if d.source is Source.SCHEMA and declared != domain[d.name].to_dict():
            raise InputError(
                f"the schema declares column {d.name!r} differently from the run that wrote "
                f"the checkpoint folder {str(folder)!r}; resume with the same schema, or use "
                "a new --checkpoint folder"
            )
    notes = [str(n) for n in spend.saved.get(NOTES_KEY, [])]
    resumed = (
        f"resumed from the checkpoint {str(folder)!r}: the domain is the one the first run "
        "found (and paid for); it was not discovered again"
    )
    return domain, [*notes, resumed]


def _has_population(folder: Path) -> bool:
    return (folder / "state.json").is_file()


def _subrange(report: Progress, start: float, stop: float) -> Progress:
    return lambda step, done: report(step, start + (stop - start) * done)
