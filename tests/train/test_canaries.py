"""Canary audits of real training: a memorizing model audits far above a DP one, never above."""

import json

import numpy as np
import pytest

from safeshare.data import Domain, Table
from safeshare.errors import InputError
from safeshare.train.canaries import (
    UNSEEN_EXPOSURE,
    audit_training,
    exposure,
    make_canaries,
    with_inserted,
)

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from safeshare.train.tabular import train_tabular, train_tabular_nonprivate  # noqa: E402
from tests.conftest import SHARED, needs_shared  # noqa: E402

TARGET = "income>50K"


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Two shared cores: one torch thread is several times faster than two fighting."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def adult_2000() -> Table:
    import pandas as pd

    sizes = json.loads((SHARED / "adult-pgm" / "adult-domain.json").read_text())
    frame = pd.read_csv(SHARED / "adult-pgm" / "adult.csv")
    table = Table({n: frame[n].to_numpy() for n in sizes}, Domain.from_sizes(sizes))
    return table.take(np.random.default_rng(0).choice(len(table), 2000, replace=False))


def small_table(n: int = 400) -> Table:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, n)
    return Table({"x": x, "z": rng.integers(0, 3, n), "y": (x >= 2).astype(int)},
                 Domain.from_sizes({"x": 4, "z": 3, "y": 2}))  # fmt: skip


def test_random_label_canaries_reuse_records_with_another_label():
    table = small_table()
    canaries, base = make_canaries(table, "y", 100, rng=np.random.default_rng(3))
    assert len(base) == 300 and len(canaries.table) == 100
    assert np.all(canaries.table.column("y") != table.column("y")[canaries.source_rows])
    assert np.array_equal(canaries.table.column("x"), table.column("x")[canaries.source_rows])
    merged = with_inserted(base, canaries)
    assert len(merged) == 300 + int(canaries.included.sum())


def test_out_of_distribution_canaries_are_fresh_draws_from_the_domain():
    table = small_table()
    canaries, base = make_canaries(
        table, "y", 200, kind="out-of-distribution", rng=np.random.default_rng(4)
    )
    assert base is table and canaries.source_rows.size == 0
    assert set(np.unique(canaries.table.column("z"))) == {0, 1, 2}
    # independent coin flips: about half inserted
    assert 70 < canaries.included.sum() < 130


@pytest.mark.parametrize(
    ("count", "kind", "message"),
    [(1, "random-label", "canaries"), (300, "random-label", "records"),
     (10, "gradient", "unknown")],
)  # fmt: skip
def test_bad_canary_requests_are_named(count, kind, message):
    with pytest.raises(InputError, match=message):
        make_canaries(small_table(), "y", count, kind=kind, rng=np.random.default_rng(0))


def test_exposure_ranks_against_the_held_out_canaries():
    out = np.linspace(1.0, 2.0, 255)
    bits = exposure(np.array([0.0, 1.5, 9.0]), out)
    assert bits[0] == 8.0 and bits[2] == 0.0 and 0.9 < bits[1] < 1.1
    # unseen canaries drawn like the held-out ones average about log2(e) bits
    rng = np.random.default_rng(0)
    mean = np.mean([exposure(rng.random(1), rng.random(999))[0] for _ in range(4000)])
    assert mean == pytest.approx(UNSEEN_EXPOSURE, abs=0.08)


@needs_shared
def test_a_memorizing_model_audits_far_above_a_dp_one(adult_2000):
    """The issue's goal, on 2,000 Adult records with 500 random-label canaries."""

    def memorize(table: Table):
        return train_tabular_nonprivate(table, TARGET, epochs=100, batch_size=128, seed=0)

    def dp(table: Table):
        return train_tabular(table, TARGET, epsilon=1.0, epochs=3, batch_size=100, seed=0,
                             accountant="rdp")  # fmt: skip

    leaky = audit_training(adult_2000, TARGET, memorize, canaries=500, rng=np.random.default_rng(1))
    assert leaky.claimed_epsilon is None and leaky.audit.delta == 1e-6
    assert leaky.audit.epsilon > 1.5  # measured 2.20
    assert leaky.membership.auc > 0.9 and np.median(leaky.exposure) > 2 * UNSEEN_EXPOSURE
    private = audit_training(adult_2000, TARGET, dp, canaries=500, rng=np.random.default_rng(1))
    assert private.claimed_epsilon is not None and private.claimed_epsilon <= 1.0
    assert 1e-5 < private.audit.delta < 1e-4  # the card's delta, 1 / (10 x training records)
    assert private.audit.epsilon <= private.claimed_epsilon  # above would be a bug
    assert private.audit.epsilon < leaky.audit.epsilon - 1.0
    assert private.membership.auc < 0.7
    described = json.loads(json.dumps(private.describe()))
    assert "consistent with the claimed" in described["readings"][0]
    assert described["exposure_bits"]["max"] <= described["exposure_bits"]["max_possible"]


@needs_shared
@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
def test_dp_audits_stay_below_the_claim_across_seeds(adult_2000, seed):
    """The bound of a DP procedure stays below its epsilon (here with 1,000 canaries)."""

    def dp(table: Table):
        return train_tabular(table, TARGET, epsilon=1.0, epochs=5, batch_size=50, seed=seed)

    audit = audit_training(adult_2000, TARGET, dp, canaries=1000, rng=np.random.default_rng(seed))
    assert audit.claimed_epsilon is not None
    assert audit.audit.epsilon <= audit.claimed_epsilon
