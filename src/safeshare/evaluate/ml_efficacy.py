"""Machine-learning utility: train on the release, test on real records; and a detection score.

**Efficacy** (train-synthetic-test-real): a gradient-boosting model (scikit-learn's
``HistGradientBoostingClassifier`` / ``Regressor``) learns a target column from the other
columns of the release, and is scored on holdout records; the same model trained on the real
training records is the reference.  A ratio near 1 means the release teaches what the real
data teaches.

**Detection**: a gradient-boosting classifier learns to tell real records (holdout records,
so that no released copy of a training record sits in both classes) from released ones
(3-fold cross-validation on equal numbers of each); its AUC is 0.5 when they are
indistinguishable and 1 when every released record gives itself away.

Both need scikit-learn (``pip install "scikit-learn>=1.4"``).

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain(tuple(Column(c, Kind.CATEGORICAL, categories=tuple("abcd")) for c in "xyz"))
>>> rng = np.random.default_rng(0)
>>> def table(n):
...     x = rng.integers(0, 4, n)
...     return Table({"x": x, "y": (x + (rng.random(n) < 0.1)) % 4, "z": rng.integers(0, 4, n)}, domain)
>>> train, holdout, release = table(2000), table(1000), table(2000)
>>> result = ml_efficacy(release, train, holdout, "y", rng)
>>> result.task, round(result.real_score, 1), result.ratio > 0.9
('classification', 0.9, True)
>>> 0.4 < detection(release, train, rng).auc < 0.6
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.data.domain import Kind
from safeshare.data.table import Table
from safeshare.errors import MissingDependencyError
from safeshare.evaluate.membership import auc_score

MAX_TRAIN = 20_000
MAX_CLASSES = 32
_MAX_CATEGORICAL_CODES = 250
# early stopping on a 10% validation split; one OpenMP thread (more oversubscribes small machines)
_PARAMS: dict[str, Any] = {"early_stopping": True, "max_iter": 200}


@dataclass(frozen=True)
class EfficacyResult:
    """A model trained on the release vs on real data, both scored on holdout records."""

    target: str
    task: str
    metric: str
    real_score: float
    release_score: float
    test_records: int

    @property
    def ratio(self) -> float:
        return self.release_score / self.real_score if self.real_score > 0 else float("nan")

    @property
    def reading(self) -> str:
        return (
            f"predicting {self.target}: trained on the release, {self.metric} {self.release_score:.3f} "
            f"on unseen records vs {self.real_score:.3f} trained on real data ({self.ratio:.0%})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "task": self.task,
            "metric": self.metric,
            "trained_on_real": self.real_score,
            "trained_on_release": self.release_score,
            "ratio": self.ratio,
            "test_records": self.test_records,
            "model": "scikit-learn HistGradientBoosting (default parameters)",
            "reading": self.reading,
        }


@dataclass(frozen=True)
class DetectionResult:
    """How well a classifier tells real from released records."""

    auc: float
    interval: tuple[float, float]
    records: int

    @property
    def reading(self) -> str:
        if self.interval[0] <= 0.5:
            return (
                f"a classifier cannot tell released records from real ones (AUC {self.auc:.3f}, "
                "0.5 is indistinguishable)"
            )
        return (
            f"a classifier tells released from real records with AUC {self.auc:.3f} (95% interval "
            f"{self.interval[0]:.3f}-{self.interval[1]:.3f}; 0.5 is indistinguishable, 1 is obvious)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "auc": self.auc,
            "interval": list(self.interval),
            "ideal": 0.5,
            "records_per_class": self.records,
            "score": 1 - 2 * abs(self.auc - 0.5),
            "reading": self.reading,
        }


def ml_efficacy(
    release: Table, train: Table, holdout: Table, target: str, rng: np.random.Generator
) -> EfficacyResult:
    """Train-on-release vs train-on-real, scored on ``holdout`` (see the module docstring)."""
    ensemble, metrics = _sklearn()
    column = train.domain[target]
    features = [c for c in train.columns if c != target]
    if not features:
        raise ValueError("ML efficacy needs at least one feature column besides the target")
    classify = column.kind is Kind.CATEGORICAL or column.size <= MAX_CLASSES
    mask = _categorical_mask(train, features)
    test_x, test_y = holdout.matrix(features), holdout.column(target)
    with _one_thread():
        scores = _fit_and_score(
            ensemble, metrics, train, release, features, target, classify, mask, test_x, test_y, rng
        )
    return EfficacyResult(
        target,
        "classification" if classify else "regression",
        "macro F1" if classify else "R2",
        scores[0],
        scores[1],
        len(holdout),
    )


def _fit_and_score(
    ensemble: Any,
    metrics: Any,
    train: Table,
    release: Table,
    features: list[str],
    target: str,
    classify: bool,
    mask: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    rng: np.random.Generator,
) -> list[float]:
    scores = []
    for full in (train, release):
        source = full
        if len(full) > MAX_TRAIN:
            source = full.take(rng.choice(len(full), size=MAX_TRAIN, replace=False))
        x, y = source.matrix(features), source.column(target)
        seed = int(rng.integers(2**31))
        if classify:
            if len(np.unique(y)) < 2:
                predicted = np.full(len(test_y), y[0] if len(y) else 0)
            else:
                model = ensemble.HistGradientBoostingClassifier(
                    categorical_features=mask, random_state=seed, **_PARAMS
                )
                predicted = model.fit(x, y).predict(test_x)
            scores.append(float(metrics.f1_score(test_y, predicted, average="macro")))
        else:
            model = ensemble.HistGradientBoostingRegressor(
                categorical_features=mask, random_state=seed, **_PARAMS
            )
            scores.append(float(metrics.r2_score(test_y, model.fit(x, y).predict(test_x))))
    return scores


def detection(
    release: Table, real: Table, rng: np.random.Generator, *, max_records: int = 10_000
) -> DetectionResult:
    """Cross-validated AUC of a classifier separating ``real`` from ``release`` records."""
    ensemble, _ = _sklearn()
    from sklearn import model_selection  # type: ignore[import-untyped]

    m = min(len(release), len(real), max_records)
    if m < 10:
        raise ValueError("detection needs at least 10 released and 10 real records")
    rows_real = rng.choice(len(real), size=m, replace=False)
    rows_release = rng.choice(len(release), size=m, replace=False)
    x = np.concatenate([real.take(rows_real).matrix(), release.take(rows_release).matrix()])
    y = np.concatenate([np.zeros(m, dtype=int), np.ones(m, dtype=int)])
    model = ensemble.HistGradientBoostingClassifier(
        categorical_features=_categorical_mask(real, list(real.columns)),
        random_state=int(rng.integers(2**31)),
        **_PARAMS,
    )
    folds = model_selection.StratifiedKFold(3, shuffle=True, random_state=int(rng.integers(2**31)))
    with _one_thread():
        scores = model_selection.cross_val_predict(model, x, y, cv=folds, method="predict_proba")
    scores = scores[:, 1]
    labels = y.astype(bool)
    boot = []
    for _ in range(200):
        rows = np.concatenate([rng.choice(m, m), m + rng.choice(m, m)])
        boot.append(auc_score(scores[rows], labels[rows]))
    return DetectionResult(
        auc_score(scores, labels),
        (float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))),
        m,
    )


def _categorical_mask(table: Table, features: list[str]) -> np.ndarray:
    return np.array(
        [
            table.domain[c].kind is Kind.CATEGORICAL
            and table.domain[c].size <= _MAX_CATEGORICAL_CODES
            for c in features
        ]
    )


def _one_thread() -> Any:
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    return threadpool_limits(limits=1, user_api="openmp")


def _sklearn() -> tuple[Any, Any]:
    try:
        from sklearn import ensemble, metrics
    except ImportError:
        raise MissingDependencyError(
            "ML efficacy and the detection score need scikit-learn: pip install 'scikit-learn>=1.4'"
        ) from None
    return ensemble, metrics
