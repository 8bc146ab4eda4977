"""Linear-ghost clipping: the clipped sum of per-record gradients, checked against brute force."""

import math

import pytest

from safeshare.errors import InputError

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus.data_loader import DPDataLoader  # noqa: E402

from safeshare.train.clipping import LinearGhostClipping  # noqa: E402
from safeshare.train.dpsgd import DPSGDSettings, run_dpsgd  # noqa: E402

nn = torch.nn


def mlp(seed: int = 0) -> "torch.nn.Module":
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(7, 16), nn.ReLU(), nn.Linear(16, 8), nn.Tanh(), nn.Dropout(0.0), nn.Linear(8, 3)
    )


def data(records: int = 32, seed: int = 1) -> tuple["torch.Tensor", "torch.Tensor"]:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(records, 7, generator=generator) * 3
    return x, torch.randint(0, 3, (records,), generator=generator)


def losses_of(y):
    return lambda logits: nn.functional.cross_entropy(logits, y, reduction="none")


def brute_force(module, x, y, clip):
    """Per-record gradients one record at a time, clipped as Opacus does, then summed."""
    params = [p for p in module.parameters() if p.requires_grad]
    per_record = []
    for i in range(len(x)):
        loss = nn.functional.cross_entropy(module(x[i : i + 1]), y[i : i + 1], reduction="sum")
        per_record.append(torch.autograd.grad(loss, params))
    norms = torch.stack([torch.sqrt(sum(g.square().sum() for g in gs)) for gs in per_record])
    factors = (clip / (norms + 1e-6)).clamp(max=1.0)
    sums = [
        sum(f * gs[k] for f, gs in zip(factors, per_record, strict=True))
        for k in range(len(params))
    ]
    return norms, sums


def test_clipped_sum_equals_brute_force_with_some_records_clipped_and_some_not():
    module, (x, y) = mlp(), data()
    norms, _ = brute_force(module, x, y, 1.0)
    middle = float(norms.median())
    for clip in (float(norms.min()) / 10, middle, float(norms.max()) * 10, 0.37):
        expected_norms, expected = brute_force(module, x, y, clip)
        with LinearGhostClipping(module, clip) as clipping:
            got_norms = clipping.backward(x, losses_of(y))
        torch.testing.assert_close(got_norms, expected_norms, rtol=1e-5, atol=1e-5)
        params = [p for p in module.parameters() if p.requires_grad]
        for param, want in zip(params, expected, strict=True):
            torch.testing.assert_close(param.grad, want, rtol=1e-5, atol=1e-5)
    clipped = int((norms > middle).sum())
    assert 0 < clipped < len(x)  # the median clip norm clips some records and not others


class Sequences(nn.Module):
    """Per-token Linear layers with a causal running mean within each record between them
    (mixing tokens, never records), a frozen projection and a wide output layer."""

    def __init__(self, width_out: int) -> None:
        super().__init__()
        torch.manual_seed(3)
        self.inner = nn.Linear(7, 5)  # 35 weights > 16 = tokens^2: the ghost identity
        self.frozen = nn.Linear(5, 5)
        self.frozen.requires_grad_(False)
        self.outer = nn.Linear(5, width_out, bias=False)  # 10 weights < 16: formed

    def forward(self, x):
        hidden = torch.tanh(self.inner(x))
        steps = torch.arange(1, x.shape[1] + 1, dtype=x.dtype).view(1, -1, 1)
        return self.outer(self.frozen(hidden.cumsum(dim=1) / steps))


def sequence_losses(target, padding):
    """Each record's mean token loss over its tokens before ``padding`` (zero after)."""

    def losses(logits):
        each = nn.functional.cross_entropy(logits.transpose(1, 2), target, reduction="none")
        return (each * padding).sum(dim=1) / padding.sum(dim=1)

    return losses


def test_sequences_clip_each_record_exactly_by_both_norm_routes():
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(6, 4, 7, generator=generator) * 2
    y = torch.randint(0, 2, (6, 4), generator=generator)
    padding = torch.ones(6, 4)
    padding[0, 2:] = 0.0  # a short record: its padding must add nothing
    module = Sequences(width_out=2)
    params = [p for p in module.parameters() if p.requires_grad]
    per_record = []
    for i in range(6):
        loss = sequence_losses(y[i : i + 1], padding[i : i + 1])(module(x[i : i + 1])).sum()
        per_record.append(torch.autograd.grad(loss, params))
    norms = torch.stack([torch.sqrt(sum(g.square().sum() for g in gs)) for gs in per_record])
    clip = float(norms.median())
    factors = (clip / (norms + 1e-6)).clamp(max=1.0)
    with LinearGhostClipping(module, clip) as clipping:
        got = clipping.backward(x, sequence_losses(y, padding))
    torch.testing.assert_close(got, norms, rtol=1e-5, atol=1e-6)
    for k, parameter in enumerate(params):
        expected = sum(f * gs[k] for f, gs in zip(factors, per_record, strict=True))
        torch.testing.assert_close(parameter.grad, expected, rtol=1e-5, atol=1e-6)
    assert module.frozen.weight.grad is None


def test_frozen_parameters_keep_no_gradient_and_count_in_no_norm():
    module, (x, y) = mlp(2), data(20, seed=3)
    module[0].bias.requires_grad_(False)
    module[2].weight.requires_grad_(False)
    expected_norms, expected = brute_force(module, x, y, 0.5)
    with LinearGhostClipping(module, 0.5) as clipping:
        torch.testing.assert_close(clipping.backward(x, losses_of(y)), expected_norms)
    assert module[0].bias.grad is None and module[2].weight.grad is None
    params = [p for p in module.parameters() if p.requires_grad]
    for param, want in zip(params, expected, strict=True):
        torch.testing.assert_close(param.grad, want, rtol=1e-5, atol=1e-5)


def test_an_empty_batch_gives_zero_gradients():
    module = mlp()
    x, y = data()
    for param in module.parameters():
        param.grad = torch.ones_like(param)  # replaced, not accumulated
    with LinearGhostClipping(module, 1.0) as clipping:
        norms = clipping.backward(x[:0], losses_of(y[:0]))
    assert norms.shape == (0,)
    assert all(not p.grad.any() for p in module.parameters())


def test_the_hooks_leave_with_the_block():
    module, (x, y) = mlp(), data()
    with LinearGhostClipping(module, 1.0) as clipping:
        clipping.backward(x, losses_of(y))
    assert all(not layer._forward_hooks for layer in module)
    with pytest.raises(InputError, match="closed"):
        clipping.backward(x, losses_of(y))


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(7, 7)

    def forward(self, x):
        return self.layer(torch.relu(self.layer(x)))


@pytest.mark.parametrize(
    ("module", "message"),
    [
        (nn.Sequential(nn.Linear(7, 4), nn.LayerNorm(4), nn.Linear(4, 3)), "LayerNorm"),
        (nn.Sequential(nn.Linear(7, 7, bias=False), nn.Linear(7, 3)), None),
        (nn.Sequential(nn.ReLU()), "no trainable parameters"),
        (nn.Sequential(nn.Linear(7, 4), nn.BatchNorm1d(4, affine=False)), "mixes the records"),
    ],
)
def test_networks_that_are_not_all_linear_are_refused(module, message):
    if message is None:  # tie the first layer's weight to a second layer's
        module = nn.Sequential(module[0], nn.ReLU(), nn.Linear(7, 7, bias=False))
        module[2].weight = module[0].weight
        message = "share a parameter"
    with pytest.raises(InputError, match=message):
        LinearGhostClipping(module, 1.0)


def test_forwards_it_cannot_clip_exactly_are_refused():
    x, y = data()
    twice = LinearGhostClipping(Twice(), 1.0)
    with pytest.raises(InputError, match="twice"):
        twice.backward(x, losses_of(y))
    inplace = nn.Sequential(nn.Linear(7, 4), nn.ReLU(inplace=True), nn.Linear(4, 3))
    with pytest.raises(InputError, match="in-place"):
        LinearGhostClipping(inplace, 1.0).backward(x, losses_of(y))
    with LinearGhostClipping(mlp(), 1.0) as clipping:
        with pytest.raises(InputError, match="2-d"):
            clipping.backward(x.reshape(2, 2, 8, 7), losses_of(y))
        with pytest.raises(InputError, match="reduction='none'"):
            clipping.backward(x, lambda logits: nn.functional.cross_entropy(logits, y))
    with pytest.raises(InputError, match="max_grad_norm"):
        LinearGhostClipping(mlp(), 0.0)


@pytest.mark.parametrize("clipping", ["linear-ghost", "ghost"])
def test_a_step_adds_noise_of_sigma_c_over_the_expected_batch(clipping):
    """One SGD step (lr 1) on a batch of ~5: the update is the noise, std sigma C / 5.

    The clipped sum's norm is at most 5 C against the noise's sigma C sqrt(6594) ~ 74 C.
    """
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(100, 64), nn.ReLU(), nn.Linear(64, 2))
    features, labels = torch.randn(1000, 100), torch.randint(0, 2, (1000,))
    settings = DPSGDSettings(records=1000, batch_size=5, epochs=0.005, epsilon=1.0,
                             delta=1e-5, max_grad_norm=0.5, accountant="rdp",
                             clipping=clipping)  # fmt: skip
    before = [p.detach().clone() for p in module.parameters()]
    run = run_dpsgd(module, features, labels, settings,
                    make_optimizer=lambda params: torch.optim.SGD(params, lr=1.0),
                    generator=torch.Generator().manual_seed(4), seeded=True)  # fmt: skip
    assert run.steps_taken == 1 and run.noise_multiplier > 0.5
    update = torch.cat(
        [(b - p.detach()).flatten() for b, p in zip(before, module.parameters(), strict=True)]
    )
    expected = run.noise_multiplier * 0.5 / 5
    assert update.numel() == 6594
    assert float(update.std()) == pytest.approx(expected, rel=0.05)
    assert abs(float(update.mean())) < 5 * expected / math.sqrt(update.numel())


@pytest.mark.parametrize("clipping", ["ghost", "hooks"])
def test_empty_poisson_draws_step_with_the_noise_alone(clipping):
    """Opacus's clippings on a batch of 1 in 200 expected: about a third of the draws hold no
    record (certain over 40 steps, seeded); each such step adds the noise alone, as the
    accountant assumes, instead of running the module on nothing (its embedding's norm
    sampler cannot take an empty batch)."""
    torch.manual_seed(0)
    module = nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(12, 2))
    features, labels = torch.randint(0, 10, (200, 3)), torch.randint(0, 2, (200,))
    settings = DPSGDSettings(records=200, batch_size=1, epochs=0.2, epsilon=8.0, delta=1e-5,
                             accountant="rdp", clipping=clipping)  # fmt: skip
    generator = torch.Generator().manual_seed(1)
    draws = [len(b) for b, _ in zip(
        DPDataLoader(torch.utils.data.TensorDataset(labels), sample_rate=0.005,
                     generator=torch.Generator().manual_seed(1)).batch_sampler, range(40),
        strict=False)]  # fmt: skip
    assert draws.count(0) > 5  # such a sampler: at 0.005 of 200, a third of the draws empty
    before = [p.detach().clone() for p in module.parameters()]
    run = run_dpsgd(module, features, labels, settings,
                    make_optimizer=lambda params: torch.optim.SGD(params, lr=0.1),
                    generator=generator, seeded=True)  # fmt: skip
    assert run.steps_taken == 40
    moved = [not torch.equal(b, p) for b, p in zip(before, module.parameters(), strict=True)]
    assert all(moved) and all(bool(torch.isfinite(p).all()) for p in module.parameters())


def test_dp_sgd_refuses_a_network_it_cannot_clip_before_calibrating():
    module = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    settings = DPSGDSettings(records=100, batch_size=10, epochs=1, epsilon=1.0, delta=1e-5,
                             clipping="linear-ghost")  # fmt: skip
    with pytest.raises(InputError, match="BatchNorm1d mixes the records"):
        run_dpsgd(module, torch.zeros(100, 4), torch.zeros(100, dtype=torch.long), settings,
                  make_optimizer=lambda params: torch.optim.SGD(params, lr=0.1),
                  generator=torch.Generator(), seeded=True)  # fmt: skip


def test_tabular_training_says_linear_ghost_and_seeds_reproduce():
    import numpy as np

    from safeshare.data import Domain, Table
    from safeshare.train.tabular import train_tabular

    x = np.random.default_rng(0).integers(0, 4, 1000)
    table = Table({"x": x, "y": (x >= 2).astype(int)}, Domain.from_sizes({"x": 4, "y": 2}))
    args = {"epsilon": 2.0, "epochs": 2, "batch_size": 100, "seed": 3, "accountant": "rdp"}
    first, again = train_tabular(table, "y", **args), train_tabular(table, "y", **args)
    assert (
        first.card["privacy"]["clipping"]
        == "per-sample, flat (linear-ghost, safeshare; noise by Opacus)"
    )
    assert first.card["privacy"]["steps"] == 20
    for a, b in zip(first.module.parameters(), again.module.parameters(), strict=True):
        assert torch.equal(a, b)
    assert all(not layer._forward_hooks for layer in first.module)


def test_opacus_refuses_layers_by_name_with_the_fix_before_calibrating():
    module = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    settings = DPSGDSettings(records=100, batch_size=10, epochs=1, epsilon=1.0, delta=1e-5,
                             clipping="ghost")  # fmt: skip
    with pytest.raises(InputError, match=r"layers with DP: 1 \(BatchNorm1d -> GroupNorm"):
        run_dpsgd(module, torch.zeros(100, 4), torch.zeros(100, dtype=torch.long), settings,
                  make_optimizer=lambda params: torch.optim.SGD(params, lr=0.1),
                  generator=torch.Generator(), seeded=True)  # fmt: skip
