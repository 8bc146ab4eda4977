import math

import numpy as np
import pandas as pd
import pytest

from safeshare.data import Domain, Kind, Table
from safeshare.dp import Randomness, Target, plan_discovery
from safeshare.dp.discovery import gaussian_tail_bound
from safeshare.dp.events import ThresholdedGaussianEvent
from safeshare.dp.ranges import _outward, _tail, numeric_grid
from safeshare.errors import BudgetError


@pytest.mark.parametrize(("sigma", "k"), [(1.0, 3), (5.0, 20), (37.5, 200), (2.0, 0)])
def test_tail_bound_is_an_upper_bound(sigma, k):
    grid = np.arange(-int(60 * sigma) - 10, int(60 * sigma) + 11)
    pmf = np.exp(-(grid.astype(float) ** 2) / (2 * sigma**2))
    exact = pmf[grid >= k].sum() / pmf.sum()
    bound = gaussian_tail_bound(k, sigma)
    assert exact <= bound <= 3 * exact + 1e-300


def test_plan_states_its_cost_before_data():
    targets = [Target("city", Kind.CATEGORICAL), Target("age", Kind.NUMERIC, integer=True)]
    plan = plan_discovery(targets, rho=0.02, delta=1e-9)
    events = plan.events
    assert math.fsum(e.rho for e in events) == pytest.approx(0.02)
    assert isinstance(events[0], ThresholdedGaussianEvent) and events[0].delta <= 1e-9
    assert events[1].delta == 0
    assert gaussian_tail_bound(plan.threshold - 1, plan.sigma) <= 1e-9


def test_rare_categories_never_appear_and_frequent_ones_do():
    values = ["London"] * 3000 + ["Paris"] * 2000 + [f"rare-{i}" for i in range(300)] + [None] * 50
    frame = pd.DataFrame({"city": values})
    plan = plan_discovery([Target("city", Kind.CATEGORICAL)], rho=0.05, delta=1e-9)
    column = plan.run(frame, Randomness(3)).columns[0]
    assert column.categories == ("London", "Paris")
    assert column.other_code is not None and column.missing


def test_numeric_bounds_and_bins_follow_the_data():
    rng = np.random.default_rng(0)
    ages = rng.integers(18, 91, 8000)
    frame = pd.DataFrame({"age": ages.astype(str)})
    plan = plan_discovery([Target("age", Kind.NUMERIC, integer=True)], rho=0.05, delta=1e-9)
    column = plan.run(frame, Randomness(1)).columns[0]
    lo, hi = column.bounds
    assert 14 <= lo <= 20 and 85 <= hi <= 130
    assert column.n_values == math.floor(hi) - math.ceil(lo) + 1  # one code per age


def test_skewed_numbers_get_equal_mass_bins():
    rng = np.random.default_rng(1)
    incomes = np.round(rng.lognormal(10, 1, 20_000), 2)
    frame = pd.DataFrame({"income": incomes.astype(str)})
    plan = plan_discovery([Target("income", Kind.NUMERIC)], rho=0.1, delta=1e-9)
    column = plan.run(frame, Randomness(2)).columns[0]
    counts = np.histogram(np.clip(incomes, *column.bounds), bins=np.array(column.edges))[0]
    assert counts.max() < 0.3 * len(incomes)  # no bin holds most of the data
    assert column.bounds[0] < np.quantile(incomes, 0.01) and column.bounds[1] > np.quantile(
        incomes, 0.99
    )


def test_dates_use_month_cells():
    days = pd.date_range("2019-01-01", "2021-12-31", freq="D")
    frame = pd.DataFrame({"visit": np.repeat(days.strftime("%Y-%m-%d"), 10)})
    plan = plan_discovery([Target("visit", Kind.DATETIME)], rho=0.05, delta=1e-9)
    column = plan.run(frame, Randomness(4)).columns[0]
    assert column.kind is Kind.DATETIME and column.labels()[0].startswith("[2019-01-01")
    assert column.labels()[-2].endswith("2021-12-31]")  # the last bin is closed


def test_the_grid_is_public_and_ordered():
    grid = numeric_grid()
    assert np.all(np.diff(grid) > 0) and grid[0] < -1e12 and grid[-1] > 1e12
    assert np.searchsorted(grid, 0.0, side="right") - 1 == len(grid) // 2 - 1


def test_small_integer_ranges_keep_every_value_and_its_point_mass():
    rng = np.random.default_rng(3)
    hours = np.where(rng.random(20_000) < 0.47, 40, rng.integers(1, 100, 20_000))
    plan = plan_discovery([Target("hours", Kind.NUMERIC, integer=True)], rho=0.5, delta=1e-9)
    column = plan.run(pd.DataFrame({"hours": hours.astype(str)}), Randomness(4)).columns[0]
    assert column.n_values > 90  # one code per hour, not 16 bins
    assert column.labels()[40 - int(column.edges[0])] == "40"


def test_a_thin_tail_keeps_its_range_and_decoding_follows_the_noisy_histogram():
    rng = np.random.default_rng(5)
    n = 30_000
    tail = np.exp(rng.uniform(np.log(200), np.log(50_000), n)).round()
    gains = np.where(rng.random(n) < 0.9, 0, tail)  # 10% non-zero, spread over 8 octaves
    plan = plan_discovery([Target("gain", Kind.NUMERIC, integer=True)], rho=0.05, delta=1e-9)
    column = plan.run(pd.DataFrame({"gain": gains.astype(str)}), Randomness(6)).columns[0]
    assert column.edges[0] == 0
    assert column.edges[-1] > 5_000  # the tail is in the range, not clipped to zero
    assert column.cells and len(column.weights) == len(column.cells) - 1
    table = Table.from_frame(pd.DataFrame({"gain": gains.astype(str)}), Domain((column,)))[0]
    decoded = table.decode(np.random.default_rng(7))["gain"].to_numpy(dtype=float)
    assert abs((decoded > 0).mean() - (gains > 0).mean()) < 0.02
    assert abs((decoded == 0).mean() - (gains == 0).mean()) < 0.02


def test_a_range_no_single_cell_shows_starts_at_the_blocks_that_do() -> None:
    from safeshare.dp.ranges import occupied_range, occupied_threshold

    # 40 records at each age 17..90 on a 1,100-cell grid, noise sigma 30: no cell clears its
    # threshold (~156), but the 32-cell blocks [32, 64) and [64, 96) clear theirs (~907),
    # so the range spans them whole instead of one noisy cell; the 64-cell block [0, 64)
    # overlapping it clears too, its part below 32 holds more than noise, and the range goes
    # down to where that part holds 90% of its mass
    counts = np.zeros(1_100)
    counts[17:91] = 40.0
    sigma = 30.0
    assert counts.max() < occupied_threshold(len(counts), sigma)
    assert occupied_range(counts, sigma) == (18, 95)
    # pure noise still shows nothing (the blocks share the false-occupancy chance)
    empty = [
        occupied_range(np.random.default_rng(s).normal(0, sigma, 1_100), sigma) for s in range(50)
    ]
    assert sum(found is not None for found in empty) <= 2


def test_a_column_whose_range_stays_below_the_noise_is_left_out_not_guessed() -> None:
    """Where no cell or block clears the noise, no range is picked from noise: the column is
    left out with a note, and the columns that do show keep theirs."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "income": 10 ** rng.uniform(3, 6, 300),  # 300 values spread over 24 octaves
            "age": np.repeat([30.0, 31.0], 150),
        }
    )
    plan = plan_discovery(
        [Target("income", Kind.NUMERIC), Target("age", Kind.NUMERIC, integer=True)],
        rho=0.005,  # noise scale 14 records
        delta=1e-9,
    )
    found = plan.run(frame, Randomness(4))
    assert [c.name for c in found.columns] == ["age"]
    assert {"30", "31"} <= set(found.columns[0].labels())
    note, summary = found.notes
    assert note.startswith("column 'income': no part of its range stands above the discovery")
    assert "left out of the release" in note
    assert summary.startswith("1 column(s) found nothing") and "--epsilon" not in summary


def test_integers_spread_too_thin_for_any_unit_cell_are_found_by_the_coarse_count() -> None:
    """7,000 follow-up days spread over 0..1,186 (about 5 records per value) at noise 88: no
    unit cell or block shows them, but the log-linear count of the same measurement does, so
    the range holds most of the data (one histogram alone found only the top coarse cell,
    1,024..1,152: 29% of the records inside, on these draws)."""
    rng = np.random.default_rng(8)
    days = np.concatenate([rng.integers(0, 1_024, 5_000), rng.integers(1_024, 1_187, 2_000)])
    frame = pd.DataFrame({"end": days.astype(str)})
    plan = plan_discovery(
        [Target("end", Kind.NUMERIC, integer=True)], rho=1 / (2 * 88.0**2), delta=0
    )
    inside = []
    for seed in range(8):
        low, high = plan.run(frame, Randomness(seed)).columns[0].bounds
        inside.append(np.mean((days >= low) & (days <= high)))
    assert np.mean(inside) > 0.85


def test_two_resolutions_cost_what_one_histogram_costs() -> None:
    """Each record is in one cell of each histogram (sensitivity sqrt 2) and the noise is
    sqrt 2 larger: the integer column's event costs the categorical column's rho."""
    plan = plan_discovery(
        [Target("n", Kind.NUMERIC, integer=True), Target("d", Kind.DATETIME)], rho=0.5, delta=0
    )
    numeric, date = plan.events
    assert numeric.rho == pytest.approx(0.25) and date.rho == pytest.approx(0.25)
    assert numeric.sigma == pytest.approx(plan.sigma * math.sqrt(2))


def test_a_point_mass_is_a_bin_of_its_own_and_the_tail_keeps_the_other_bins() -> None:
    from safeshare.dp.ranges import _equal_mass_edges

    cell_edges = np.arange(0.0, 101.0)
    mass = np.full(100, 1.0)
    mass[0] = 900.0  # 90% at zero
    edges = _equal_mass_edges(cell_edges, mass, 16, 0.0, 100.0)
    assert edges[:2] == (0.0, 1.0)
    assert len(edges) - 2 >= 12  # the tail's 10% is cut into most of the other bins


def test_a_starved_table_hears_what_a_category_needs_from_public_figures_alone():
    """Two columns of 300 records, too few for the noise at this budget: one line names them,
    the threshold in records and the epsilon at which a category holding 5% of the records
    shows; at that epsilon (with a margin) such a category does show.  The line depends on the
    plan and the record count only: two tables of 300 records whose values differ (so their
    counts under the threshold differ) hear the same line, as the threshold's delta needs."""
    from dataclasses import replace

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "city": rng.choice(["London", "Paris", "Rome"], 300, p=[0.46, 0.46, 0.08]),
            "age": rng.integers(20, 60, 300),
        }
    )
    unique = pd.DataFrame({"city": [f"c{i}" for i in range(300)], "age": np.arange(300)})
    targets = [Target("city", Kind.CATEGORICAL), Target("age", Kind.NUMERIC, integer=True)]
    starved = replace(plan_discovery(targets, rho=0.0005, delta=1e-9), epsilon=1.0)
    found = starved.run(frame, Randomness(1))
    assert found.columns[0].categories == () and [c.name for c in found.columns] == ["city"]
    line = found.notes[-1]
    assert line.startswith("2 column(s) found nothing") and "('age', 'city')" in line
    assert f"about {starved.threshold} records hold it" in line, line
    assert line == starved.run(unique, Randomness(2)).notes[-1]
    fed = float(line.split("--epsilon ")[1].split(". ")[0])
    assert fed > 1.0 and "the categories of 'city'" in line
    richer = plan_discovery(targets, rho=0.0005 * (1.5 * fed) ** 2, delta=1e-9)
    for seed in range(5):
        assert richer.run(frame, Randomness(seed)).columns[0].categories == (
            "London",
            "Paris",
            "Rome",
        )


def test_a_point_mass_cannot_stretch_the_range_over_empty_cells() -> None:
    """96% of the records at 0 and a thin tail on 1-19, under heavy noise: a block that clears
    on the zeros alone must not stretch the range below 0 (it did in 19 of 40 draws, to -240:
    counts of -66 written for a count that is never negative); only blocks outside the range
    found so far count (0 of 400 draws stretch now)."""
    rng = np.random.default_rng(0)
    values = np.where(rng.random(5771) < 0.96, 0, rng.integers(1, 20, 5771))
    plan = plan_discovery(
        [Target("count", Kind.NUMERIC, integer=True)], rho=1 / (2 * 125**2), delta=1e-9
    )
    frame = pd.DataFrame({"count": values})
    columns = [plan.run(frame, Randomness(seed)).columns[0] for seed in range(40)]
    assert min(c.bounds[0] for c in columns) == 0.0
    assert min(c.cells[0] for c in columns if c.cells) >= 0.0  # nor does a tail below it


def test_records_beyond_a_short_range_decode_into_its_tail_not_onto_its_edge() -> None:
    """6,000 ages spread over 20-39 and 1,280 thinly over 40-71, under the noise a 45-column
    table leaves each column at epsilon 1: the range stops at 39, and the records clipped
    into its last bin decode into the tail the noisy histograms show beyond it (ages up to
    71), not onto 39 (which held 21.5% of the decoded values against 3.9% of the data)."""
    rng = np.random.default_rng(3)
    ages = np.concatenate([rng.integers(20, 40, 6000), rng.integers(40, 72, 1280)])
    plan = plan_discovery(
        [Target("age", Kind.NUMERIC, integer=True)], rho=1 / (2 * 85.0**2), delta=1e-9
    )
    frame = pd.DataFrame({"age": ages})
    for seed in (0, 3):  # draws whose range stops at 39 (most of the others reach 63 or 71)
        column = plan.run(frame, Randomness(seed)).columns[0]
        assert column.bounds == (20.0, 39.5)  # one code per age, the last 39
        table = Table.from_frame(frame, Domain((column,)))[0]
        decoded = table.decode(np.random.default_rng(seed))["age"].to_numpy(dtype=float)
        assert abs((decoded == 39).mean() - (ages == 39).mean()) < 0.03
        assert abs((decoded > 39).mean() - (ages > 39).mean()) < 0.03
        assert decoded.max() > 60


def test_noise_alone_beyond_a_range_rarely_makes_a_tail() -> None:
    """Beyond a range the data do not reach, the cells hold noise alone: a tail is read from
    them in about 2% of draws (the five runs tried share the 2.5-deviation bar)."""
    rng = np.random.default_rng(0)
    edges = np.arange(0.0, 40.0)
    draws = 4000
    runs = (_outward(edges, rng.normal(0, 100, 39), 5.0, True) for _ in range(draws))
    found = sum(bool(_tail(cells, 100.0)) for cells in runs)
    assert found / draws < 0.035


def test_a_second_round_is_planned_as_one_total_and_the_costs_add_up() -> None:
    """Half of rho and delta go evenly to the first round; the second round is one event of the
    other half, fixed before any data is read, whoever shares it."""
    from safeshare.dp.events import ZCDPEvent

    targets = [Target("a", Kind.CATEGORICAL), Target("n", Kind.NUMERIC, integer=True)]
    plan = plan_discovery(targets, rho=0.4, delta=1e-8, first_share=0.5)
    *first, second = plan.events
    assert [e.rho for e in first] == pytest.approx([0.1, 0.1])
    assert isinstance(second, ZCDPEvent) and second.rho == pytest.approx(0.2)
    assert math.fsum(e.rho for e in plan.events) == pytest.approx(0.4)
    assert plan.delta <= 1e-8 and second.delta == pytest.approx(5e-9)
    with pytest.raises(BudgetError, match="first round"):
        plan_discovery(targets, rho=0.4, delta=1e-8, first_share=0.0)


def test_a_short_column_gets_the_budget_the_easy_ones_leave() -> None:
    """Nine yes/no columns clear in the first round; the tenth, whose categories hold 6% of
    the records each, is short and alone shares the second round: its categories show in
    most draws, where one round at the same total budget keeps almost none of them."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"flag{i}": rng.choice(["yes", "no"], 3_000) for i in range(9)})
    frame["city"] = rng.choice([f"city{i}" for i in range(16)], 3_000)
    targets = [Target(name, Kind.CATEGORICAL) for name in frame.columns]
    kept = {}
    for share in (1.0, 0.5):
        plan = plan_discovery(targets, rho=0.003, delta=1e-9, first_share=share)
        runs = [plan.run(frame, Randomness(seed)).columns for seed in range(6)]
        assert all(len(columns[0].categories) == 2 for columns in runs)
        kept[share] = np.mean([len(columns[-1].categories) for columns in runs])
    assert kept[1.0] <= 3 and kept[0.5] >= 12, kept


def test_the_combined_threshold_keeps_values_of_one_record_out() -> None:
    """The second round's threshold is set by a sub-Gaussian tail bound on the precision-
    weighted mean of two discrete Gaussians: on 40,000 values held by one record each, the
    share that clears it at delta 0.01 stays under 0.01, and so does the bound's own check."""
    from safeshare.dp.discovery import combined_threshold

    rand = Randomness(3)
    first, second = 3.0, 2.0
    ones = np.ones(40_000)
    a = ones + rand.discrete_gaussian(first, ones.size)
    b = ones + rand.discrete_gaussian(second, ones.size)
    weight = second**2 / (first**2 + second**2)
    mean = weight * a + (1 - weight) * b
    sigma = first * second / math.sqrt(first**2 + second**2)
    threshold = combined_threshold(sigma, 0.01)
    assert (mean >= threshold).mean() < 0.01
    assert (mean >= threshold - 2 * sigma).mean() > 0.01  # the bound is not vacuous
