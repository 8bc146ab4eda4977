import math

import numpy as np
import pytest

from safeshare.dp import Accountant, PrivacyBudget, ZCDPEvent
from safeshare.errors import SchemaError
from safeshare.evaluate import marginal_tvd
from safeshare.synth import AIM, MST, Constraint, Workload
from safeshare.synth.constraints import violations


def test_declared_cost_and_itemized_rounds_add_up(fair_table):
    model = AIM(epsilon=1.0, delta=1e-9, workload="2way", rng=1)
    declared = model.privacy_events(fair_table.domain)
    assert len(declared) == 1 and isinstance(declared[0], ZCDPEvent)
    assert declared[0].rho == pytest.approx(PrivacyBudget(1.0, 1e-9).rho())
    model.fit(fair_table)
    spent = model.privacy_spent()
    assert len(spent) >= 3 and spent[0].label == "aim: 1-way marginals"
    assert any(e.label.endswith("select") for e in spent)
    assert math.fsum(e.rho for e in spent) == pytest.approx(declared[0].rho, rel=1e-9)
    assert Accountant(spent).check_within(PrivacyBudget(1.0, 1e-9)) <= 1.0 + 1e-9
    card = model.describe()
    assert card["rounds"] == model.rounds_ and len(spent) == 1 + 2 * model.rounds_
    assert len(card["measured"]) == len(fair_table.columns) + model.rounds_


def test_aim_is_more_accurate_than_mst_on_its_workload(fair_table):
    aim = AIM(epsilon=1.0, delta=1e-9, workload="3way", rng=5).fit(fair_table).sample()
    mst = MST(epsilon=1.0, delta=1e-9, rng=5).fit(fair_table).sample()
    aim_error = marginal_tvd(aim, fair_table, ways=(3,))[0].mean
    mst_error = marginal_tvd(mst, fair_table, ways=(3,))[0].mean
    assert aim_error < mst_error


def test_constraints_hold_in_every_sampled_row(fair, fair_table):
    rules = [
        {"when": {"age": ["17.5"]}, "then": {"yrs_married": ["0.5", "2.5", "6"]}},
        {"when": {"children": ["0"]}, "then": {"rate_marriage": ["3", "4", "5"]}},
    ]
    model = AIM(epsilon=1.0, workload="2way", constraints=rules, rng=2).fit(fair_table)
    synthetic = model.sample(5000)
    codes = {c: synthetic.column(c).astype(np.int64) for c in synthetic.columns}
    parsed = [Constraint.from_dict(r, fair_table.domain) for r in rules]
    assert violations(parsed, codes) == 0
    assert (codes["age"] == 0).sum() > 50  # the constrained group is present, not removed
    real = {c: fair_table.column(c).astype(np.int64) for c in fair_table.columns}
    assert (
        violations(parsed, real) > 0
    )  # the real data breaks the second rule: it is a real constraint


def test_time_limit_spends_the_rest_at_once(fair_table):
    model = AIM(epsilon=1.0, workload="3way", time_limit=0.0, rng=3).fit(fair_table)
    assert model.rounds_ == 1
    assert any("time limit" in note for note in model.describe()["notes"])
    assert math.fsum(e.rho for e in model.privacy_spent()) == pytest.approx(model.total_rho())


def test_tiny_epsilon_falls_back_to_the_one_way_model(fair_table):
    model = AIM(epsilon=0.001, delta=1e-9, workload="2way", rng=4).fit(fair_table)
    assert model.rounds_ == 0
    assert "1-way" in model.describe()["notes"][0]
    assert math.fsum(e.rho for e in model.privacy_spent()) == pytest.approx(model.total_rho())


def test_bad_workloads_and_caps(fair_table, tmp_path):
    with pytest.raises(SchemaError, match=r"unknown columns \['height'\]"):
        AIM(workload=Workload(((("age", "height"), 1.0),)), rng=0).fit(fair_table)
    spec = tmp_path / "w.yaml"
    spec.write_text("marginals:\n  - columns: [age, zodiac]\n")
    with pytest.raises(SchemaError, match=r"marginal 1 names unknown columns \['zodiac'\]"):
        AIM(workload=spec, rng=0).fit(fair_table)
    with pytest.raises(SchemaError, match="neither 'Nway'"):
        AIM(workload="four-way", rng=0).fit(fair_table)
    with pytest.raises(SchemaError, match=r"too small for any workload marginal: the smallest, \["):
        AIM(workload="3way", max_model_size=1e-4, rng=0).fit(fair_table)


def test_workload_yaml_weights(tmp_path):
    spec = tmp_path / "w.yaml"
    spec.write_text("marginals:\n  - columns: [b, a]\n    weight: 2\n  - columns: [c]\n")
    workload = Workload.parse(spec, ["a", "b", "c"])
    assert workload.marginals == ((("a", "b"), 2.0), (("c",), 1.0))
    assert workload.weight_of(("a", "b")) == 4.0 and workload.weight_of(("c",)) == 1.0
    assert Workload.parse("2way", ["a", "b", "c"]).cliques == (("a", "b"), ("a", "c"), ("b", "c"))


@pytest.mark.slow
def test_adult_aim_beats_mst_on_the_three_way_workload(adult_pgm):
    """The issue's check: a fixed-seed AIM run on Adult beats MST's 3-way workload error."""
    rng = np.random.default_rng(2026)
    aim = AIM(epsilon=1.0, delta=1e-9, workload="3way", rng=rng).fit(adult_pgm)
    mst = MST(epsilon=1.0, delta=1e-9, rng=np.random.default_rng(2026)).fit(adult_pgm)
    aim_error = marginal_tvd(aim.sample(), adult_pgm, ways=(3,))[0].mean
    mst_error = marginal_tvd(mst.sample(), adult_pgm, ways=(3,))[0].mean
    assert aim_error < mst_error - 0.01
