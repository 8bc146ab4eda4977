"""Reading losses off pilots' learning curves, and the noise-batch pilots that feed them."""

import json
import math

import numpy as np
import pytest

from safeshare.errors import InputError
from safeshare.train.loss_model import PilotPoint
from safeshare.train.pilot_curves import PilotCurves
from safeshare.train.pilots import (
    PILOT_LEAST_SIGMA,
    LanguageModelPilot,
    noise_batch_pilot_grid,
    run_language_model_pilots,
)
from safeshare.train.planner import plan_compute, rank_by_loss

RATIOS = (0.005, 0.01, 0.02, 0.04)
STEPS = (100, 200, 400, 800)


def log_linear(ratio: float, steps: float, parameters: float = 1e5) -> float:
    """A loss linear in log r, log T and log N: what the curves read exactly."""
    return 3.0 + 0.2 * math.log(ratio) - 0.1 * math.log(steps) - 0.05 * math.log(parameters)


def points(loss=log_linear, sizes=(None,), ratios=RATIOS, steps=STEPS):
    return [
        PilotPoint(r, t, loss(r, t, n or 1e5), n, run=run)
        for run, (n, r) in enumerate((n, r) for n in sizes for r in ratios)
        for t in steps
    ]


def test_a_loss_linear_in_the_logs_is_read_exactly_between_and_beyond_the_pilots():
    curves = PilotCurves.fit(points())
    for ratio, steps in [(0.007, 150), (0.03, 750), (0.003, 300), (0.06, 100)]:
        assert curves.predict(ratio, steps) == pytest.approx(log_linear(ratio, steps))
    assert curves.error == pytest.approx(0.0, abs=1e-12)
    # the two middle pilots left out, each read at its four points
    assert curves.left_out == 8 and not curves.sized


def test_sizes_are_read_between_the_piloted_ones_and_refused_beyond():
    curves = PilotCurves.fit(points(sizes=(10**4, 10**6)))
    assert curves.sized
    assert curves.predict(0.01, 300, 10**5) == pytest.approx(log_linear(0.01, 300, 1e5))
    assert curves.predict(0.01, 300, 10**6) == pytest.approx(log_linear(0.01, 300, 1e6))
    with pytest.raises(InputError, match="outside the piloted sizes"):
        curves.predict(0.01, 300, 10**7)
    with pytest.raises(InputError, match="give the parameters"):
        curves.predict(0.01, 300)


def test_the_error_is_what_leaving_each_inner_pilot_out_misses():
    def curved(ratio, steps, parameters):
        return 2.0 + 40 * ratio + 30 / steps

    curves = PilotCurves.fit(points(loss=curved, ratios=(0.01, 0.02, 0.04), steps=(100, 400)))
    # the middle pilot, read on a straight line in log r between 0.01 and 0.04: 0.5 + 0.5
    # of the way, at both its points; the outer ones have no pilot beyond them
    miss = 40 * 0.02 - (40 * 0.01 + 40 * 0.04) / 2
    assert curves.left_out == 2
    assert curves.error == pytest.approx(abs(miss))


def test_steps_no_two_pilots_reach_are_refused_naming_the_steps():
    short = points(steps=(100, 200))
    curves = PilotCurves.fit(short)
    with pytest.raises(InputError, match=r"reach 500 steps.*run the pilots at least that long"):
        curves.predict(0.01, 500)
    with pytest.raises(InputError, match="at least 3 noise-batch ratios"):
        PilotCurves.fit(points(ratios=(0.01, 0.02)))
    with pytest.raises(InputError, match="share its noise-batch ratio"):
        PilotCurves.fit([PilotPoint(0.01, 10, 1.0, run=0), PilotPoint(0.02, 20, 1.0, run=0)])


def test_ranking_by_curves_orders_by_the_read_loss_and_refuses_an_error_above_the_spread():
    plan = plan_compute(
        2000, 8.0, 1e-5, tokens_per_record=64, flops=1e12, model_sizes=[56369],
        batch_sizes=[16, 32, 64, 128], accountant="rdp",
    )  # fmt: skip
    ratios = [c.noise_batch_ratio for c in plan.candidates]
    grid_ratios = np.geomspace(min(ratios) / 1.2, max(ratios) * 1.2, 4)

    def loss(ratio, steps, parameters):  # more steps help, noise hurts: an optimum inside
        return 2.0 + 8 * ratio + 20 / steps

    pilots = points(loss=loss, sizes=(56369,), ratios=grid_ratios, steps=(100, 300, 1000, 3200))
    ranked = rank_by_loss(plan, PilotCurves.fit(pilots))
    assert ranked.refused is None
    read = [p.loss for p in ranked.predictions]
    assert read == sorted(read)
    assert "read off the pilots' learning curves" in ranked.describe()["loss_model"]["method"]
    noisy = [
        PilotPoint(p.noise_batch_ratio, p.steps, p.loss + (0.3 if p.run == 1 else 0.0),
                   p.parameters, run=p.run)
        for p in pilots
    ]  # fmt: skip
    refused = rank_by_loss(plan, PilotCurves.fit(noisy))
    assert refused.refused is not None and "leave-one-out error" in refused.refused


def test_the_noise_batch_grid_brackets_every_candidate_with_two_pilots_that_reach_it():
    plan = plan_compute(
        2000, 8.0, 1e-5, tokens_per_record=64, flops=5e11, model_sizes=[43177, 124497],
        batch_sizes=[8, 16, 32, 64, 128], accountant="rdp",
    )  # fmt: skip
    grid = noise_batch_pilot_grid(plan, {43177: 40, 124497: 80})
    assert len(grid) == 8 and {p.width for p in grid} == {40, 80}
    for pilot in grid:
        batch = round(pilot.noise_multiplier / pilot.noise_batch_ratio)
        assert batch >= 4 and pilot.noise_multiplier >= PILOT_LEAST_SIGMA - 1e-12
        assert all(1 <= s < pilot.steps for s in pilot.checkpoints)
    width = {43177: 40, 124497: 80}
    for c in plan.candidates:
        mine = [p for p in grid if p.width == width[c.parameters]]
        below = [p for p in mine if p.noise_batch_ratio < c.noise_batch_ratio]
        above = [p for p in mine if p.noise_batch_ratio > c.noise_batch_ratio]
        assert below and above
        assert below[-1].steps >= c.steps and above[0].steps >= c.steps
    # pilots process a fraction of the records the candidates do
    pilot_records = sum(round(p.noise_multiplier / p.noise_batch_ratio) * p.steps for p in grid)
    assert pilot_records < 0.5 * sum(c.batch_size * c.steps for c in plan.candidates)
    with pytest.raises(InputError, match="give the width"):
        noise_batch_pilot_grid(plan, {43177: 40})
    with pytest.raises(InputError, match="at least 3 ratios"):
        noise_batch_pilot_grid(plan, width, ratios=2)


@pytest.mark.filterwarnings("ignore:.*were cut to it")
@pytest.mark.usefixtures("one_torch_thread")
def test_a_pilot_keeps_its_ratio_at_a_larger_batch_and_is_scored_at_its_checkpoints():
    pytest.importorskip("opacus")
    rng = np.random.default_rng(0)
    words = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog"]
    texts = [" ".join(rng.choice(words, size=6)) for _ in range(240)]
    # batch 4 would need noise multiplier 0.08: below the least, so the batch grows to 8
    # (0.15 / 0.02); at 8 and 16 of 200 texts RDP's calibration would land above the
    # wanted noise, at 32 on it: the ratio is kept
    grid = [LanguageModelPilot(8, 0.02, 30, 0.08, checkpoints=(3, 25, 40))]
    study = run_language_model_pilots(
        texts[:200], grid, held_out=texts[200:], context=16, rng=np.random.default_rng(1)
    )
    (run,) = study.runs
    assert run.batch_size == 32 and run.noise_batch_ratio == pytest.approx(0.02, rel=2e-3)
    assert [s for s, _ in run.curve] == [3, 25]  # 40 lies beyond the run's 30 steps


@pytest.mark.filterwarnings("ignore:.*were cut to it")
@pytest.mark.usefixtures("one_torch_thread")
def test_the_command_pilots_a_language_model_on_texts_and_ranks_by_their_curves(
    plan_main, capsys, tmp_path
):
    pytest.importorskip("opacus")
    rng = np.random.default_rng(0)
    words = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "runs"]
    data = tmp_path / "texts.csv"
    data.write_text(
        "text\n" + "\n".join(" ".join(rng.choice(words, size=5)) for _ in range(400)) + "\n"
    )
    argv = ["plan", "--data", str(data), "--text-column", "text", "--epsilon", "8",
            "--delta", "1e-4", "--compute", "3.3e8", "--widths", "8,16",
            "--tokens-per-record", "16", "--batch-sizes", "8,16,32", "--accountant", "rdp",
            "--seed", "0", "--json"]  # fmt: skip
    assert plan_main(argv) == 0
    captured = capsys.readouterr()
    plan = json.loads(captured.out)
    assert "NOT differentially private" in captured.err
    assert plan["records"] == 400 and plan["pilots"]["differentially_private"] is False
    assert plan["pilots"]["holdout_records"] == 80 and plan["pilots"]["train_records"] == 320
    assert len(plan["pilots"]["runs"]) == 8  # 4 ratios at each of the 2 widths
    assert "read off the pilots' learning curves" in plan["loss_model"]["method"]
    estimates = [c["predicted_loss"]["estimate"] for c in plan["candidates"]]
    assert len(estimates) == 6 and all(0 < e < 8 for e in estimates)
    if not plan["ranking"].startswith("none"):
        assert estimates == sorted(estimates)
    for wrong, message in [
        (["--target", "text"], "not both"),
        (["--model-sizes", "1e4"], "give --widths or --model-sizes"),
        (["--widths", "8,x"], "--widths takes whole numbers"),
    ]:
        bad = [a for a in argv if a != "--json"] + wrong
        if wrong[0] == "--widths":
            bad = bad[: bad.index("--widths")] + bad[bad.index("--widths") + 2 :]
        assert plan_main(bad) == 2
        assert message in capsys.readouterr().err
    no_compute = ["plan", "--data", str(data), "--text-column", "text", "--epsilon", "8"]
    assert plan_main(no_compute) == 2
    assert "add --compute, --widths and --tokens-per-record" in capsys.readouterr().err
