"""DP training of a tabular MLP on Opacus: exact card, Poisson only, clear errors, safe saving."""

import json
import subprocess
import sys

import numpy as np
import pytest

from safeshare.data import Domain, Table
from safeshare.errors import BudgetError, InputError, OutputExistsError
from safeshare.train.accounting import dpsgd_epsilon

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from safeshare.train.dpsgd import check_poisson_loader  # noqa: E402
from safeshare.train.tabular import one_hot, train_tabular  # noqa: E402
from tests.conftest import SHARED, needs_shared  # noqa: E402


def small_table(n: int = 2000, seed: int = 0) -> Table:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, n)
    z = rng.integers(0, 3, n)
    return Table({"x": x, "z": z, "y": (x >= 2).astype(int)},
                 Domain.from_sizes({"x": 4, "z": 3, "y": 2}))  # fmt: skip


def test_importing_safeshare_train_does_not_import_torch():
    code = "import sys, safeshare, safeshare.train; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"  # fmt: skip


def test_one_hot_follows_the_domain():
    table = small_table(5)
    encoded = one_hot(table, ("x", "z"))
    assert encoded.shape == (5, 7) and (encoded.sum(axis=1) == 2).all()
    assert (encoded[:, :4].argmax(axis=1) == table.column("x")).all()


def test_card_epsilon_is_exact_and_within_budget():
    table = small_table()
    # lr 1e-2: 30 seeds of 30 reach accuracy 1.0 in these 60 steps (at 2e-3 one in six stalls)
    model = train_tabular(table, "y", epsilon=1.0, delta=1e-5, epochs=3, batch_size=100, seed=1,
                          learning_rate=1e-2)  # fmt: skip
    privacy = model.card["privacy"]
    assert privacy["privacy_unit"] == "record" and privacy["sampling"] == "poisson"
    assert privacy["steps"] == 60 and privacy["sampling_rate"] == 100 / 2000
    exact = dpsgd_epsilon(privacy["noise_multiplier"], 0.05, 60, 1e-5)
    assert privacy["epsilon"] == exact and 0.99 < exact <= 1.0
    assert privacy["clipping_norm"] == 1.0 and "linear-ghost" in privacy["clipping"]
    assert privacy["secure_noise"] is False and "NOT secure" in privacy["noise_source"]
    assert model.accuracy(table) > 0.9  # y is a function of x: learnable even at epsilon 1


def test_per_sample_hooks_work_too_and_seeds_reproduce():
    table = small_table()
    args = {"epsilon": 2.0, "epochs": 2, "batch_size": 200, "seed": 5, "accountant": "rdp"}
    first = train_tabular(table, "y", clipping="hooks", **args)
    again = train_tabular(table, "y", clipping="hooks", **args)
    assert "hooks" in first.card["privacy"]["clipping"]
    for a, b in zip(first.module.parameters(), again.module.parameters(), strict=True):
        assert torch.equal(a, b)


def test_unseeded_runs_differ_and_say_where_the_noise_comes_from():
    table = small_table()
    a = train_tabular(table, "y", epsilon=2.0, epochs=1, batch_size=200, accountant="rdp")
    b = train_tabular(table, "y", epsilon=2.0, epochs=1, batch_size=200, accountant="rdp")
    assert not torch.equal(next(a.module.parameters()), next(b.module.parameters()))
    assert "OS" in a.card["privacy"]["noise_source"] and not a.card["training"]["seeded"]


def test_shuffled_fixed_batches_are_refused():
    with pytest.raises(BudgetError, match="not Poisson"):
        train_tabular(small_table(), "y", epsilon=1.0, sampling="shuffle", seed=0)
    from torch.utils.data import DataLoader, TensorDataset

    shuffled = DataLoader(TensorDataset(torch.zeros(10, 2)), batch_size=2, shuffle=True)
    with pytest.raises(BudgetError, match="not Poisson sampling"):
        check_poisson_loader(shuffled, 0.2)
    from opacus.data_loader import DPDataLoader

    poisson = DPDataLoader(TensorDataset(torch.zeros(10, 2)), sample_rate=0.3)
    check_poisson_loader(poisson, 0.3)
    with pytest.raises(BudgetError, match="rate"):
        check_poisson_loader(poisson, 0.2)


def test_single_class_target_is_refused_without_quoting_values():
    rng = np.random.default_rng(0)
    table = Table({"x": rng.integers(0, 4, 100), "y": np.zeros(100, dtype=int)},
                  Domain.from_sizes({"x": 4, "y": 2}))  # fmt: skip
    with pytest.raises(InputError, match="single class"):
        train_tabular(table, "y", epsilon=1.0, batch_size=10, seed=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"batch_size": 5000}, "batch size"), ({"epochs": 0.0}, "epochs"),
     ({"clipping": "none"}, "clipping"), ({"hidden": 0}, "hidden"),
     ({"max_grad_norm": -1.0}, "max_grad_norm")],
)  # fmt: skip
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(InputError, match=message):
        train_tabular(small_table(), "y", epsilon=1.0, seed=0, **kwargs)


def test_save_writes_weights_and_card_atomically(tmp_path):
    safetensors = pytest.importorskip("safetensors.torch")
    table = small_table()
    model = train_tabular(table, "y", epsilon=1.0, epochs=1, batch_size=200, seed=2,
                          accountant="rdp")  # fmt: skip
    out = model.save(tmp_path / "model")
    assert sorted(p.name for p in out.iterdir()) == [
        ".safeshare-output",
        "card.json",
        "model.safetensors",
    ]
    card = json.loads((out / "card.json").read_text())
    assert card["privacy"]["epsilon"] == model.card["privacy"]["epsilon"]
    weights = safetensors.load_file(str(out / "model.safetensors"))
    for name, tensor in model.module.state_dict().items():
        assert torch.equal(weights[name], tensor)
    with pytest.raises(OutputExistsError):
        model.save(out)
    model.save(out, force=True)


@needs_shared
@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adult_at_epsilon_one_reaches_the_goal_accuracy(seed):
    """The issue's goal: DP MLP on Adult at epsilon=1, held-out accuracy >= 0.82."""
    import pandas as pd

    from safeshare.evaluate.split import train_holdout_split

    sizes = json.loads((SHARED / "adult-pgm" / "adult-domain.json").read_text())
    frame = pd.read_csv(SHARED / "adult-pgm" / "adult.csv")
    table = Table({n: frame[n].to_numpy() for n in sizes}, Domain.from_sizes(sizes))
    train, holdout = train_holdout_split(len(table), 0.2, np.random.default_rng(seed))
    model = train_tabular(table.take(train), "income>50K", epsilon=1.0, epochs=5,
                          batch_size=512, seed=seed)  # fmt: skip
    assert model.card["privacy"]["epsilon"] <= 1.0
    assert model.accuracy(table.take(holdout)) >= 0.82
