"""Labelled PE: DP label counts, disjoint subsets, parallel composition, clear refusals."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from safeshare.dp.events import GaussianEvent
from safeshare.dp.gdp import gdp_epsilon
from safeshare.errors import BudgetError, InputError
from safeshare.synth.pe.labels import LabelledEvolution


class Gaussian:
    """A toy API around a label's centre (0 or 100): numbers in column ``x``."""

    def __init__(self, label: int) -> None:
        self.centre = 100.0 * label

    def random(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        return pd.DataFrame({"x": self.centre + rng.normal(scale=5.0, size=n)})

    def vary(self, samples: pd.DataFrame, degree: float, rng: np.random.Generator) -> pd.DataFrame:
        return samples + rng.normal(scale=degree, size=samples.shape)


class Recorder:
    """Embeds ``x`` and remembers every frame it was given."""

    def __init__(self) -> None:
        self.seen: list[np.ndarray] = []

    def embed(self, samples: pd.DataFrame) -> np.ndarray:
        self.seen.append(samples["x"].to_numpy().copy())
        return samples[["x"]].to_numpy()


def data(negatives: int = 600, positives: int = 300) -> pd.DataFrame:
    x = np.r_[np.full(negatives, 1.0), np.full(positives, 101.0)]
    return pd.DataFrame({"x": x, "label": [0] * negatives + [1] * positives})


def model(**kw: object) -> LabelledEvolution:
    options: dict = dict(labels=[0, 1], epsilon=4.0, delta=1e-5, iterations=3)
    options |= dict(samples_per_iteration=50, rng=0)
    return LabelledEvolution(Gaussian, Recorder(), **(options | kw))


def test_cost_is_the_counts_plus_one_runs_histograms_and_meets_the_target() -> None:
    pe = model()
    events = pe.privacy_events()
    assert len(events) == 1 + 3  # parallel over the labels: not 1 + 2 * 3
    assert all(isinstance(e, GaussianEvent) for e in events)
    mu = math.sqrt(sum(2 * e.rho for e in events))  # 2 rho = (sensitivity / sigma)^2
    assert gdp_epsilon(mu, 1e-5) == pytest.approx(4.0, abs=1e-6)
    assert pe.total_epsilon() == pytest.approx(4.0, abs=1e-6)
    assert (1 / pe.count_sigma()) ** 2 == pytest.approx(0.05 * mu**2)


def test_each_label_votes_only_with_its_own_records() -> None:
    pe = model()
    pe.fit(data())
    private = [s for s in pe.embedder.seen if len(s) in (600, 300)]  # type: ignore[attr-defined]
    assert [set(s) for s in private] == [{1.0}, {101.0}]
    for label, centre in ((0, 1.0), (1, 101.0)):
        final = pe.models_[label].population_.samples["x"]
        assert abs(final.median() - centre) < 10


def test_output_sizes_follow_the_noisy_counts_not_the_raw_ones() -> None:
    pe = model(epsilon=0.5, label_share=0.01, samples_per_iteration=10)  # very noisy counts
    synthetic = pe.fit(data()).sample(10_000)
    noisy = pe.label_counts_
    assert not np.array_equal(noisy, [600, 300])
    share = (synthetic["label"] == 0).mean()
    assert share == pytest.approx(noisy[0] / noisy.sum(), abs=1e-3)
    assert len(pe.sample()) == round(noisy.sum())  # default n: the noisy total


def test_a_label_with_too_few_records_says_how_many_are_needed() -> None:
    with pytest.raises(BudgetError, match=r"label 1 has about \d+ records .* at least \d+"):
        model(samples_per_iteration=200).fit(data(positives=60))


def test_unknown_label_values_are_counted_not_quoted() -> None:
    frame = data()
    frame.loc[0, "label"] = 7
    with pytest.raises(InputError, match="1 rows have a 'label' outside") as error:
        model().fit(frame)
    assert "7" not in str(error.value).split("labels")[0]
    with pytest.raises(InputError, match="label column 'y'"):
        model(label_column="y").fit(frame)


def test_a_resumed_run_reuses_the_saved_counts(tmp_path: Path) -> None:
    first = model(checkpoint=tmp_path).fit(data())
    again = model(checkpoint=tmp_path, rng=99).fit(data())  # another seed would draw others
    assert np.array_equal(first.label_counts_, again.label_counts_)
    with pytest.raises(InputError, match="other settings"):
        model(checkpoint=tmp_path, epsilon=2.0).fit(data())


def test_budget_shares_are_checked() -> None:
    with pytest.raises(BudgetError, match="label_share"):
        model(label_share=1.0).privacy_events()
    assert model(epsilon=None, rho=0.5).noise_scale() == pytest.approx(math.sqrt(3 / (0.95 * 1.0)))
