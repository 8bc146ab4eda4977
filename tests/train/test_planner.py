"""The planner: exact privacy per candidate, ranking by sigma/B, clear errors; its CLI."""

import json

import pytest

from safeshare.errors import BudgetError, InputError
from safeshare.train.accounting import dpsgd_epsilon
from safeshare.train.planner import plan_training


def test_every_candidate_spends_the_budget_and_ranks_by_noise_batch_ratio():
    plan = plan_training(50_000, 1.0, 1e-6, epochs=10, batch_sizes=(128, 512, 2048),
                         accountant="rdp")  # fmt: skip
    ratios = [c.noise_batch_ratio for c in plan.candidates]
    assert ratios == sorted(ratios)
    assert [c.batch_size for c in plan.candidates] == [2048, 512, 128]
    for c in plan.candidates:
        assert c.steps == -(-10 * 50_000 // c.batch_size)
        assert c.epochs == pytest.approx(10, rel=0.01)
        exact = dpsgd_epsilon(c.noise_multiplier, c.sampling_rate, c.steps, 1e-6, accountant="rdp")
        assert c.epsilon == exact and 0.99 < exact <= 1.0
        # a little less noise would overspend: the calibration is tight
        less = dpsgd_epsilon(c.noise_multiplier / 1.01, c.sampling_rate, c.steps, 1e-6,
                             accountant="rdp")  # fmt: skip
        assert less > 1.0


def test_pld_plan_needs_less_noise_than_rdp():
    pld = plan_training(50_000, 1.0, 1e-6, epochs=10, batch_sizes=(1024,)).best
    rdp = plan_training(50_000, 1.0, 1e-6, epochs=10, batch_sizes=(1024,), accountant="rdp").best
    assert pld.noise_multiplier < rdp.noise_multiplier


def test_max_steps_caps_the_compute():
    plan = plan_training(50_000, 1.0, 1e-6, epochs=10, batch_sizes=(256,), max_steps=500,
                         accountant="rdp")  # fmt: skip
    assert plan.best.steps == 500 and plan.best.epochs == pytest.approx(500 * 256 / 50_000)
    steps_only = plan_training(50_000, 1.0, 1e-6, batch_sizes=(256,), max_steps=500,
                               accountant="rdp")  # fmt: skip
    assert steps_only.best.steps == 500


def test_batches_larger_than_half_the_records_are_left_out_with_a_reason():
    plan = plan_training(1000, 2.0, 1e-5, epochs=5, batch_sizes=(100, 800), accountant="rdp")
    assert [c.batch_size for c in plan.candidates] == [100]
    assert "half" in plan.skipped[800]
    with pytest.raises(BudgetError, match="no batch size fits"):
        plan_training(1000, 2.0, 1e-5, epochs=5, batch_sizes=(800,), accountant="rdp")


def test_unreachable_epsilon_says_what_can_be_reached():
    with pytest.raises(BudgetError, match=r"cannot be reached.*spends at least epsilon="):
        plan_training(100, 1e-3, 1e-6, epochs=5000, batch_sizes=(50,), accountant="rdp")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"records": 1}, "records"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"delta": 2.0}, "delta"),
        ({"epochs": 0.0}, "epochs"),
        ({"epochs": None}, "epochs or max_steps"),
        ({"batch_sizes": (0,)}, "batch sizes"),
    ],
)
def test_bad_input_is_named(kwargs, message):
    args = {"records": 1000, "epsilon": 1.0, "delta": 1e-6, "epochs": 1.0, **kwargs}
    with pytest.raises((InputError, BudgetError), match=message):
        plan_training(args.pop("records"), args.pop("epsilon"), args.pop("delta"),
                      accountant="rdp", **args)  # fmt: skip


def test_cli_prints_the_ranked_table(plan_main, capsys):
    argv = ["plan", "--records", "50000", "--epsilon", "1", "--delta", "1e-6", "--epochs", "10",
            "--batch-sizes", "256,1024", "--accountant", "rdp"]  # fmt: skip
    assert plan_main(argv) == 0
    out = capsys.readouterr().out
    assert "σ/B" in out and "1024" in out and "exact" in out


def test_cli_json_is_machine_readable(plan_main, capsys):
    argv = ["plan", "--records", "50000", "--epsilon", "1", "--epochs", "10",
            "--batch-sizes", "1024", "--accountant", "rdp", "--json"]  # fmt: skip
    assert plan_main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["privacy_unit"] == "record" and plan["sampling"] == "poisson"
    assert plan["candidates"][0]["batch_size"] == 1024


def test_cli_plans_with_the_prv_accountant(plan_main, capsys):
    pytest.importorskip("opacus")
    argv = ["plan", "--records", "50000", "--epsilon", "1", "--epochs", "2",
            "--batch-sizes", "1024", "--accountant", "prv", "--json"]  # fmt: skip
    assert plan_main(argv) == 0
    best = json.loads(capsys.readouterr().out)["candidates"][0]
    spent = dpsgd_epsilon(best["noise_multiplier"], 1024 / 50_000, best["steps"], 1e-6,
                          accountant="prv")  # fmt: skip
    assert spent <= 1.0


def test_cli_errors_are_one_line(plan_main, capsys):
    assert plan_main(["plan", "--records", "50000", "--epsilon", "1", "--epochs", "10",
                      "--batch-sizes", "big"]) == 2  # fmt: skip
    assert "--batch-sizes takes whole numbers" in capsys.readouterr().err
    assert plan_main(["plan", "--records", "5", "--epsilon", "1", "--epochs", "1",
                      "--accountant", "moments"]) == 2  # fmt: skip


def test_cli_plans_user_level_training_in_users(plan_main, capsys):
    argv = ["plan", "--users", "13025", "--epsilon", "1", "--delta", "1e-5", "--epochs", "3",
            "--batch-sizes", "256,8192", "--accountant", "rdp", "--json"]  # fmt: skip
    assert plan_main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["privacy_unit"] == "user" and plan["users"] == 13025 and "records" not in plan
    best = plan["candidates"][0]
    # the arithmetic is record-level's with users as the units: q = users per batch / users
    assert best["batch_size"] == 256 and best["steps"] == 153
    assert dpsgd_epsilon(best["noise_multiplier"], 256 / 13025, 153, 1e-5, accountant="rdp") <= 1
    assert "above half the 13025 users" in plan["skipped"]["8192"]
    argv = ["plan", "--users", "13025", "--epsilon", "1", "--epochs", "3",
            "--batch-sizes", "256", "--accountant", "rdp"]  # fmt: skip
    assert plan_main(argv) == 0
    assert "13025 users" in capsys.readouterr().out


def test_cli_refuses_users_with_records_or_data(plan_main, capsys):
    assert plan_main(["plan", "--users", "100", "--records", "300", "--epsilon", "1",
                      "--epochs", "1"]) == 2  # fmt: skip
    assert "give --users alone" in capsys.readouterr().err


def test_an_unreachable_user_plan_speaks_of_users():
    with pytest.raises(BudgetError, match="more users"):
        plan_training(20, 0.01, 1e-6, epochs=50, batch_sizes=(4,), accountant="rdp", unit="user")
    with pytest.raises(InputError, match="unit 'group' is unknown"):
        plan_training(2000, 1.0, 1e-6, epochs=1, unit="group")
