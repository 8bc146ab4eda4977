"""Re-identification risks and population-uniqueness estimators against hand-computed values."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import special

from safeshare.data import Column, Domain, Kind, Table
from safeshare.evaluate.reidentification import reidentification_risk
from safeshare.evaluate.uniqueness import (
    dankar_choice,
    pitman,
    pitman_fit,
    pitman_log_likelihood,
    population_uniqueness,
    shlosser,
    snb_estimate,
    snb_expected,
    zayatz,
)

ZIP = Domain((Column("zip", Kind.CATEGORICAL, categories=tuple("abcdefghij")),))


def table_of(codes: list[int]) -> Table:
    return Table({"zip": np.array(codes)}, ZIP)


def test_five_anonymous_table_has_prosecutor_risk_at_most_a_fifth(train):
    # generalize until every class on (region, sex) holds at least 5 records
    quasi = ["region", "sex"]
    result = reidentification_risk(train, quasi)
    assert result.prosecutor_max <= 0.2 and result.records_at_risk == 0.0
    assert result.sample_uniques == 0 and result.class_histogram["1"] == 0


def test_class_risks_by_hand():
    # classes of sizes 5, 2, 1 (8 records)
    result = reidentification_risk(table_of([0, 0, 0, 0, 0, 1, 1, 2]), ["zip"])
    assert result.sample_uniqueness == pytest.approx(1 / 8)
    assert result.prosecutor_max == 1.0
    assert result.prosecutor_average == pytest.approx(3 / 8)
    assert result.records_at_risk == pytest.approx(3 / 8)  # classes of 1 and 2 exceed 20%
    assert result.journalist_max == 1.0 and result.marketer == pytest.approx(3 / 8)


def test_journalist_and_marketer_with_a_population_table():
    sample = table_of([0, 0, 1, 2])
    population = table_of([0] * 10 + [1] * 4 + [2] * 2 + [3] * 7)
    result = reidentification_risk(sample, ["zip"], population=population)
    # F = 10, 4, 2 for the sample's classes (f = 2, 1, 1)
    assert result.journalist_max == pytest.approx(1 / 2)
    assert result.marketer == pytest.approx((2 / 10 + 1 / 4 + 1 / 2) / 4)
    assert result.population_source == "population table"


def test_zayatz_by_hand():
    # c1 = 2 classes of size 1, c2 = 1 of size 2; n = 4, N = 10
    # P(f=1 | F=1) = 4/10; P(f=1 | F=2) = C(2,1) C(8,3) / C(10,4) = 112/210
    # P(F=1 | f=1) = (2/3 * 0.4) / (2/3 * 0.4 + 1/3 * 112/210) = 0.6; uniques = 2 * 0.6 / 0.4
    assert zayatz(np.array([1, 1, 2]), 10) == pytest.approx(3.0)


def test_pitman_maximises_its_likelihood_and_gives_hoshinos_formula():
    rng = np.random.default_rng(0)
    sizes = np.bincount(rng.zipf(1.8, 4000) % 3000)
    sizes = sizes[sizes > 0]
    theta, alpha = pitman_fit(sizes)
    best = pitman_log_likelihood(theta, alpha, sizes)
    for dt, da in ((1e-3 * theta, 0), (-1e-3 * theta, 0), (0, 1e-3), (0, -1e-3)):
        assert pitman_log_likelihood(theta + dt, alpha + da, sizes) <= best + 1e-6
    n_population = 100 * int(sizes.sum())
    expected = math.exp(
        special.gammaln(theta + 1) - special.gammaln(theta + alpha) + alpha * math.log(n_population)
    )
    assert pitman(sizes, n_population) == pytest.approx(expected)


def test_pitman_log_likelihood_by_hand():
    # partition of 3 records into classes {2, 1}: L = log(theta + alpha) - log(theta+1) - log(theta+2)
    #                                              + log(1 - alpha)
    theta, alpha = 1.5, 0.3
    by_hand = (
        math.log(theta + alpha) - math.log(theta + 1) - math.log(theta + 2) + math.log(1 - alpha)
    )
    assert pitman_log_likelihood(theta, alpha, np.array([2, 1])) == pytest.approx(by_hand)


def test_shlosser_by_hand():
    # sizes 1, 1, 2 at q = 0.5: u + c1 * (2*0.5 + 0.25) / (2*0.5 + 2*0.5*0.5) = 3 + 2 * 1.25 / 1.5
    assert shlosser(np.array([1, 1, 2]), 0.5) == pytest.approx(3 + 2 * 1.25 / 1.5)


def test_snb_solves_its_moment_equations():
    rng = np.random.default_rng(1)
    population = 1 + rng.negative_binomial(0.8, 0.3, 20000)
    labels = np.repeat(np.arange(len(population)), population)
    sample = rng.choice(labels, size=len(labels) // 4, replace=False)
    sizes = np.unique(sample, return_counts=True)[1]
    estimate = snb_estimate(sizes, len(labels))
    assert estimate is not None
    truth = int((population == 1).sum())
    assert 0.5 * truth < estimate < 2 * truth
    # with pi = 1 the model's expected sample uniques are its population uniques, K * b^a
    c1, _ = snb_expected(0.7, 0.4, 100.0, 1.0)
    assert c1 == pytest.approx(100 * 0.4**0.7)


def test_dankar_rule():
    assert dankar_choice(0.05, 10.0, 12.0, 8.0) == ("pitman", 12.0)
    assert dankar_choice(0.05, 10.0, None, 8.0) == ("zayatz", 10.0)
    assert dankar_choice(0.5, 10.0, 12.0, 8.0) == ("snb", 8.0)
    assert dankar_choice(0.5, 10.0, 12.0, 11.0) == ("zayatz", 10.0)
    assert dankar_choice(0.5, 10.0, 12.0, None) == ("zayatz", 10.0)


def test_estimates_on_a_sampled_population():
    rng = np.random.default_rng(0)
    classes = rng.zipf(1.6, 40000)
    classes = classes[classes < 2000]
    labels = np.repeat(np.arange(len(classes)), classes)
    truth = int((classes == 1).sum())
    sample = rng.choice(labels, size=len(labels) // 20, replace=False)
    est = population_uniqueness(np.unique(sample, return_counts=True)[1], len(labels))
    assert est.dankar_model == "pitman"
    assert 0.5 * truth < est.dankar < 2 * truth
    exact = population_uniqueness(np.array([1, 1, 3]), 5)
    assert exact.dankar == 2 and exact.dankar_model == "exact"


def test_journalist_and_marketer_follow_the_population_model():
    """A population of 50,000 (3 skewed quasi-identifiers), a 10% sample: the risks estimated
    from the population model are near those counted against the population itself."""
    rng = np.random.default_rng(0)
    columns = {f"q{i}": np.minimum(rng.zipf(1.3, 50_000), 60).astype(str) for i in range(3)}
    population = pd.DataFrame(columns)
    labels = tuple(str(v) for v in range(1, 61))
    domain = Domain(tuple(Column(c, Kind.CATEGORICAL, categories=labels) for c in columns))
    sample = population.sample(5_000, random_state=1)
    tables = [Table.from_frame(f, domain)[0] for f in (sample, population)]
    truth = reidentification_risk(tables[0], list(columns), population=tables[1])
    model = reidentification_risk(tables[0], list(columns), population_size=50_000)

    assert model.population is not None and model.population.dankar > 10
    assert truth.journalist_max == model.journalist_max == 1.0  # (f / pi said 0.1)
    assert model.marketer == pytest.approx(truth.marketer, rel=0.15)  # 0.209 vs 0.221
    assert "population model" in model.population_source
