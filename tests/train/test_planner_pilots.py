"""The planner's loss model: pilot runs on Adult, a fit that states its error, exact privacy."""

import json

import numpy as np
import pytest

from safeshare.errors import InputError, SafeshareError
from safeshare.train.accounting import dpsgd_epsilon
from safeshare.train.loss_model import LossModel, PilotPoint
from safeshare.train.pilots import NOT_PRIVATE, pilot_ratios, run_pilots
from safeshare.train.planner import plan_training, rank_by_loss
from tests.conftest import SHARED, needs_shared

pytest.importorskip("torch")
pytest.importorskip("opacus")

TARGET = "income>50K"


@pytest.fixture(scope="module")
def adult_pilots(adult_pgm):
    """Six short pilots on 2,000 Adult records, scored on 1,000 others (about 5 s)."""
    import torch

    torch.set_num_threads(1)
    plan = plan_training(20_000, 1.0, 1e-6, epochs=10, accountant="rdp")
    ratios = [c.noise_batch_ratio for c in plan.candidates]
    study = run_pilots(
        adult_pgm, TARGET, pilot_ratios(min(ratios) / 1.1, max(ratios) * 1.1, 6),
        steps=(40, 120), train_records=2000, holdout_records=1000, rng=np.random.default_rng(3),
    )  # fmt: skip
    return plan, study


@needs_shared
def test_the_fit_reproduces_the_pilot_losses_within_its_stated_error(adult_pilots):
    _, study = adult_pilots
    assert study.train_records == 2000 and study.holdout_records == 1000
    assert len({r.noise_batch_ratio for r in study.runs}) == 6
    model = LossModel.fit(study.points())
    assert 0 < model.error < 0.2  # cross-entropy of a binary classifier: ~0.3-0.7 here
    assert model.residual <= model.error
    for run in study.runs:
        assert abs(model.predict(run.noise_batch_ratio, run.steps) - run.loss) <= 2 * model.error
    assert model.describe()["label"] == "estimate"
    assert study.describe()["differentially_private"] is False


@needs_shared
def test_ranking_by_loss_keeps_every_candidates_privacy_exact(adult_pilots):
    plan, study = adult_pilots
    ranked = rank_by_loss(plan, LossModel.fit(study.points()))
    assert set(ranked.candidates) == set(plan.candidates)  # the same frozen candidates
    losses = [p.loss for p in ranked.predictions]
    assert len(losses) == len(ranked.candidates)
    if ranked.refused is None:
        assert losses == sorted(losses)
        assert "estimate" in ranked.describe()["ranking"]
    else:  # short pilots on a small table: their error can drown the differences
        assert ranked.candidates == plan.candidates
        assert "leave-one-out error" in ranked.describe()["ranking"]
    for c in ranked.candidates:
        exact = dpsgd_epsilon(c.noise_multiplier, c.sampling_rate, c.steps, 1e-6, accountant="rdp")
        assert c.epsilon == exact and exact <= 1.0
    described = ranked.describe()
    assert described["candidates"][0]["predicted_loss"]["label"] == "estimate"


def test_a_much_lower_noise_batch_ratio_ranks_first_when_the_model_says_so():
    plan = plan_training(50_000, 1.0, 1e-6, epochs=10, batch_sizes=(64, 1024), accountant="rdp")
    # noise dominates: loss climbs steeply with sigma/B, barely with steps
    noisy = [PilotPoint(r, t, 0.35 + 30 * r + 1 / t) for r, t in
             [(1e-3, 60), (2e-3, 180), (4e-3, 60), (8e-3, 180), (1.6e-2, 60)]]  # fmt: skip
    ranked = rank_by_loss(plan, LossModel.fit(noisy))
    assert [c.batch_size for c in ranked.candidates] == [1024, 64]
    # 10 epochs of 50,000 records: 488 and 7,813 steps, beyond the pilots' 60-180
    steps = {c.batch_size: c.steps for c in ranked.candidates}
    assert all(s > 180 for s in steps.values())
    assert not any(p.within_pilot_steps for p in ranked.predictions)
    assert ranked.describe()["candidates"][0]["predicted_loss"]["within_pilot_steps"] is False
    # compute dominates: the small batch's 16x more steps win despite its larger ratio
    slow = [PilotPoint(r, t, 0.35 + 0.1 * r + 400 / t) for r, t in
            [(1e-3, 60), (2e-3, 180), (4e-3, 60), (8e-3, 180), (1.6e-2, 60)]]  # fmt: skip
    assert [c.batch_size for c in rank_by_loss(plan, LossModel.fit(slow)).candidates] == [64, 1024]


def test_the_fit_recovers_a_known_curve():
    points = [PilotPoint(r, t, 0.2 + 0.1 * (r / 4e-3) ** 1.5 + 20 / t)
              for r, t in [(1e-3, 50), (2e-3, 150), (4e-3, 50), (8e-3, 150), (1.6e-2, 100),
                           (3e-3, 100)]]  # fmt: skip
    model = LossModel.fit(points)
    assert model.c == pytest.approx(1.5) and model.error < 1e-6
    assert model.predict(5e-3, 1000) == pytest.approx(0.2 + 0.1 * 1.25**1.5 + 0.02, rel=1e-6)


def test_learning_curves_pin_how_the_loss_falls_with_the_steps():
    def law(r: float, t: int) -> float:  # the loss falls as steps ** -0.5, not 1 / steps
        return 0.2 + 0.1 * (r / 4e-3) ** 1.5 + 2.0 / t**0.5

    runs = [(1e-3, 60), (2e-3, 180), (4e-3, 60), (8e-3, 180), (1.6e-2, 60), (3e-3, 180)]
    curves = [
        PilotPoint(r, s, law(r, s), run=i)
        for i, (r, t) in enumerate(runs)
        for s in (t // 4, t // 2, t)
    ]
    blind, seeing = LossModel.fit(curves, curves=False), LossModel.fit(curves, curves=True)
    assert blind.e == 1.0  # two numbers of steps cannot show the exponent
    assert seeing.e == pytest.approx(0.5) and seeing.error < 1e-6 and seeing.curves
    far = law(5e-3, 2000)
    assert seeing.predict(5e-3, 2000) == pytest.approx(far, rel=1e-6)
    assert abs(blind.predict(5e-3, 2000) - far) > 0.05
    described = seeing.describe()
    assert described["pilots"] == 6 and described["points"] == 18
    assert "learning curve" in described["points_fitted"]
    # both fit the pilots' results exactly: left to itself the fit keeps the simpler
    chosen = LossModel.fit(curves)
    assert not chosen.curves and [(c, k) for c, k, _ in chosen.tried] == [
        ("steps", False),
        ("steps", True),
    ]
    # a curve's points are left out together: 5 runs (of 15 points) still refused
    with pytest.raises(InputError, match="at least 5 pilot runs"):
        LossModel.fit([p for p in curves if p.run < 4])


def test_compute_counted_in_records_where_the_loss_follows_them():
    """At a fixed number of records processed, a larger batch takes fewer steps: a loss that
    falls with the records (not the steps) is found, and chosen by its leave-one-out error."""

    def law(r: float, records: int) -> float:
        return 0.3 + 0.05 * (r / 4e-3) + 30.0 / records**0.5

    runs = [(1e-3, 60, 512), (2e-3, 180, 64), (4e-3, 60, 256), (8e-3, 180, 32), (1.6e-2, 60, 128),
            (3e-3, 180, 16), (6e-3, 120, 400)]  # fmt: skip
    points = [PilotPoint(r, t, law(r, t * b), batch_size=b) for r, t, b in runs]
    model = LossModel.fit(points)
    assert model.compute == "records" and model.error < 1e-6
    assert model.describe()["T"].startswith("records processed")
    assert model.predict(5e-3, 1000, batch_size=64) == pytest.approx(law(5e-3, 64_000), rel=1e-5)
    steps_only = [e for c, _, e in model.tried if c == "steps"]
    assert steps_only and min(steps_only) > 0.01  # steps alone cannot follow it
    with pytest.raises(InputError, match="give batch_size"):
        model.predict(5e-3, 1000)
    without_batches = [PilotPoint(r, t, law(r, t * b)) for r, t, b in runs]
    assert LossModel.fit(without_batches).compute == "steps"
    with pytest.raises(InputError, match="needs every pilot's batch size"):
        LossModel.fit(without_batches, compute="records")


def test_too_few_pilots_or_ratios_are_refused():
    with pytest.raises(InputError, match="at least 5 pilot runs"):
        LossModel.fit([PilotPoint(1e-3 * (i + 1), 50, 0.5) for i in range(4)])
    with pytest.raises(InputError, match="3 different noise-batch ratios"):
        LossModel.fit([PilotPoint(1e-3 * (i % 2 + 1), 50, 0.5) for i in range(6)])
    with pytest.raises(InputError, match="--pilots must be at least 5"):
        pilot_ratios(1e-3, 1e-2, 3)


@needs_shared
def test_a_target_with_one_class_is_refused_without_values(adult_pgm):
    rows = np.flatnonzero(adult_pgm.column(TARGET) == 0)[:600]
    with pytest.raises(InputError, match=r"'income>50K' has a single class") as caught:
        run_pilots(adult_pgm.take(rows), TARGET, [1e-3, 2e-3, 4e-3, 8e-3, 1.6e-2],
                   rng=np.random.default_rng(0))  # fmt: skip
    assert "<=50K" not in str(caught.value)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--records", "50000", "--pilots", "6"], "--pilots needs --data"),
        (["--records", "50000", "--target", "y"], "--target needs --data"),
        ([], "give --records"),
    ],
)
def test_cli_refuses_pilot_flags_without_data(plan_main, capsys, argv, message):
    assert plan_main(["plan", "--epsilon", "1", "--epochs", "10", *argv]) == 2
    assert message in capsys.readouterr().err


@needs_shared
def test_cli_with_data_flags_the_pilots_and_refuses_a_ranking_its_error_drowns(
    plan_main, capsys, tmp_path
):
    import pandas as pd

    frame = pd.read_csv(SHARED / "adult-arx" / "adult.csv", sep=";").head(1500)
    path = tmp_path / "adult.csv"
    frame.to_csv(path, index=False)
    base = ["plan", "--data", str(path), "--epsilon", "1", "--epochs", "5", "--batch-sizes",
            "32,128,512", "--accountant", "rdp", "--seed", "0", "-q"]  # fmt: skip
    assert plan_main([*base, "--target", "salary-class", "--pilots", "3"]) == 2
    assert "--pilots 3 is too few" in capsys.readouterr().err
    assert plan_main([*base[:3], "--epsilon", "1", "--epochs", "5"]) == 2
    assert "--data needs --target" in capsys.readouterr().err
    assert plan_main([*base, "--target", "salary-class", "--pilots", "5", "--json"]) == 0
    captured = capsys.readouterr()
    assert "NOT differentially private" in captured.err  # said before the pilots ran
    plan = json.loads(captured.out)
    # 5 short pilots on 1,200 records: their leave-one-out error is several times the spread
    # between the best and the median candidate, so the planner refuses to rank by them
    refused = plan["loss_model"]["ranking_refused"]
    assert plan["records"] == 1500 and plan["ranking"] == f"none, refused: {refused}"
    error = plan["loss_model"]["leave_one_out_rms_error"]
    assert f"leave-one-out error ({error:.3g})" in refused
    assert [c["batch_size"] for c in plan["candidates"]] == [512, 128, 32]  # sigma/B order
    assert plan["pilots"]["differentially_private"] is False
    assert plan["pilots"]["privacy"] == NOT_PRIVATE and len(plan["pilots"]["runs"]) == 5
    for c in plan["candidates"]:
        assert c["epsilon"] <= 1.0 and c["predicted_loss"]["label"] == "estimate"


def test_errors_are_of_the_family():
    assert issubclass(InputError, SafeshareError)
