"""The compute-aware planner: model size, batch and steps under a compute budget, a loss model
fitted across model sizes, and a ranking refused when its error exceeds what it ranks on."""

import json

import numpy as np
import pytest

from safeshare.errors import InputError
from safeshare.train.accounting import dpsgd_epsilon
from safeshare.train.loss_model import MIN_SIZED_PILOTS, LossModel, PilotPoint
from safeshare.train.planner import (
    FLOPS_PER_PARAMETER_TOKEN,
    plan_compute,
    plan_training,
    rank_by_loss,
)


def law(r: float, steps: int, n: int) -> float:
    """A known curve: noise hurts larger models more, larger models reach lower losses."""
    return 1.0 + 0.5 * (r / 5e-3) ** 1.2 * (n / 1e5) ** 0.5 + 30 / steps + 0.4 * (1e5 / n) ** 0.6


def sized_pilots(noise: float = 0.0, seed: int = 0) -> list[PilotPoint]:
    rng = np.random.default_rng(seed)
    return [
        PilotPoint(r, t, law(r, t, n) + rng.normal(0, noise), n)
        for n in (3 * 10**4, 10**5, 3 * 10**5)
        for r, t in [(1e-3, 100), (4e-3, 300), (1.5e-2, 100), (3e-2, 300)]
    ]


def test_the_sized_fit_recovers_a_known_curve_and_extrapolates_in_size():
    model = LossModel.fit(sized_pilots())
    assert model.sized and (model.c, model.h, model.g) == pytest.approx((1.2, 0.5, 0.6))
    assert model.error < 1e-6
    assert model.predict(5e-3, 1000, 10**6) == pytest.approx(law(5e-3, 1000, 10**6), rel=1e-6)
    with pytest.raises(InputError, match="give parameters"):
        model.predict(5e-3, 1000)
    assert "N0" in model.describe()["formula"] and model.describe()["n0"] > 0


def test_sized_pilots_must_all_name_their_size_and_be_enough():
    pilots = sized_pilots()
    with pytest.raises(InputError, match="every pilot its model's parameters, or none"):
        LossModel.fit([*pilots[:-1], PilotPoint(1e-3, 100, 1.0)])
    with pytest.raises(InputError, match=f"at least {MIN_SIZED_PILOTS} pilot runs"):
        LossModel.fit(pilots[: MIN_SIZED_PILOTS - 1])


def test_a_compute_plan_spends_the_flops_and_the_budget_exactly():
    plan = plan_compute(
        100_000, 2.0, 1e-8, tokens_per_record=128, flops=5e16,
        model_sizes=[10**6, 10**7], batch_sizes=[256, 1024, 4096], accountant="rdp",
    )  # fmt: skip
    assert len(plan.candidates) == 6 and not plan.ranked
    for c in plan.candidates:
        step = FLOPS_PER_PARAMETER_TOKEN * c.parameters * c.batch_size * 128
        assert c.steps == 5e16 // step  # every step the budget pays for, no more
        assert c.compute.tokens == c.steps * c.batch_size * 128
        assert c.compute.flops <= 5e16
        exact = dpsgd_epsilon(c.noise_multiplier, c.sampling_rate, c.steps, 1e-8, accountant="rdp")
        assert exact == pytest.approx(c.epsilon) and exact <= 2.0
    # ten times the parameters: a tenth of the steps at each batch
    steps = {(c.parameters, c.batch_size): c.steps for c in plan.candidates}
    assert steps[(10**7, 256)] == pytest.approx(steps[(10**6, 256)] / 10, abs=1)
    described = plan.describe()
    assert described["ranking"].startswith("none") and described["compute"]["flops"] == 5e16


def test_the_data_budget_caps_the_steps_and_a_tiny_compute_is_refused():
    plan = plan_compute(
        10_000, 2.0, 1e-6, tokens_per_record=64, flops=1e18, model_sizes=[10**5],
        batch_sizes=[100], max_epochs=3, accountant="rdp",
    )  # fmt: skip
    assert plan.best.steps == 300 and plan.best.epochs == pytest.approx(3.0)
    with pytest.raises(InputError, match=r"fits no step .* needs 3.84e\+09 FLOPs a step"):
        plan_compute(10_000, 2.0, 1e-6, tokens_per_record=64, flops=1e6,
                     model_sizes=[10**5], batch_sizes=[100], accountant="rdp")  # fmt: skip


def test_pilots_across_sizes_rank_a_compute_plan_by_predicted_loss():
    plan = plan_compute(
        200_000, 4.0, 1e-8, tokens_per_record=64, flops=3e15,
        model_sizes=[3 * 10**4, 3 * 10**5], batch_sizes=[256, 1024, 4096], accountant="rdp",
    )  # fmt: skip
    ranked = rank_by_loss(plan, LossModel.fit(sized_pilots()))
    assert ranked.ranked and ranked.refused is None
    losses = [p.loss for p in ranked.predictions]
    assert losses == sorted(losses)
    for c, p in zip(ranked.candidates, ranked.predictions, strict=True):
        assert p.loss == pytest.approx(law(c.noise_batch_ratio, c.steps, c.parameters), rel=1e-5)
    assert ranked.describe()["candidates"][0]["predicted_loss"]["within_pilot_sizes"] is True
    # a tabular plan (no sizes) cannot be ranked by a model fitted across sizes
    with pytest.raises(InputError, match="compute-aware plan"):
        rank_by_loss(plan_training(50_000, 1.0, 1e-6, epochs=1, accountant="rdp"),
                     LossModel.fit(sized_pilots()))  # fmt: skip


def test_a_loss_model_whose_error_exceeds_the_spread_does_not_rank():
    plan = plan_training(50_000, 1.0, 1e-6, epochs=10, batch_sizes=(64, 256, 1024),
                         accountant="rdp")  # fmt: skip
    rng = np.random.default_rng(1)
    # losses that do not depend on the configuration: all noise
    noise = [PilotPoint(r, t, 0.6 + rng.normal(0, 0.05)) for r, t in
             [(1e-3, 60), (2e-3, 180), (4e-3, 60), (8e-3, 180), (1.6e-2, 60), (3e-3, 120)]]  # fmt: skip
    ranked = rank_by_loss(plan, LossModel.fit(noise))
    assert ranked.refused is not None and "leave-one-out error" in ranked.refused
    assert ranked.candidates == plan.candidates  # the sigma/B order is kept
    assert len(ranked.predictions) == 3
    assert ranked.describe()["ranking"].startswith("none, refused")


def test_the_command_plans_under_a_compute_budget(plan_main, capsys):
    argv = ["plan", "--records", "976562", "--epsilon", "2", "--delta", "1e-10",
            "--compute", "1e21", "--model-sizes", "1e8,1e9", "--tokens-per-record", "1024",
            "--batch-sizes", "4096,65536", "--accountant", "rdp", "--json"]  # fmt: skip
    assert plan_main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [(c["parameters"], c["batch_size"]) for c in plan["candidates"]] == [
        (10**8, 4096), (10**8, 65536), (10**9, 4096), (10**9, 65536)
    ]  # fmt: skip
    assert plan["compute"]["flops"] == 1e21 and plan["ranking"].startswith("none")
    assert plan_main(["plan", "--records", "1000", "--epsilon", "1", "--compute", "1e12"]) == 2
    assert "add --model-sizes, --tokens-per-record" in capsys.readouterr().err
    argv = ["plan", "--records", "1000", "--epsilon", "1", "--compute", "1e12",
            "--model-sizes", "1e8,big", "--tokens-per-record", "64"]  # fmt: skip
    assert plan_main(argv) == 2
    assert "--model-sizes takes parameter counts" in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore:.*were cut to it")
@pytest.mark.usefixtures("one_torch_thread")
def test_language_model_pilots_span_sizes_and_fit_the_sized_model():
    pytest.importorskip("opacus")
    from safeshare.train.pilots import language_model_pilot_grid, run_language_model_pilots

    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "a",
        "lazy",
        "dog",
        "and",
        "runs",
        "far",
        "away",
    ]
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, size=8)) for _ in range(60)]
    grid = language_model_pilot_grid([8, 24], [0.02, 0.05, 0.1, 0.2], steps=(4, 40))
    study = run_language_model_pilots(
        texts[:48], grid, held_out=texts[48:], context=32, rng=np.random.default_rng(1)
    )
    assert len(study.runs) == 8 and study.describe()["differentially_private"] is False
    # each 40-step pilot was also scored at 20 steps (the floor), the 4-step ones never
    assert {r.steps: tuple(s for s, _ in r.curve) for r in study.runs} == {4: (), 40: (20,)}
    assert len(study.points()) == 8 + 4 and {p.run for p in study.points()} == set(range(8))
    assert "learning_curve" in study.describe()["runs"][1]
    sizes = sorted({r.parameters for r in study.runs})
    assert len(sizes) == 2 and sizes[0] < sizes[1]
    assert all(np.isfinite(r.loss) and 0 < r.loss < 10 for r in study.runs)
    assert {r.steps for r in study.runs} == {4, 40}
    model = LossModel.fit(study.points())
    assert model.sized and np.isfinite(model.error)
    with pytest.raises(InputError, match="at least 40 texts"):
        run_language_model_pilots(texts[:10], grid, held_out=texts[48:], rng=rng)
