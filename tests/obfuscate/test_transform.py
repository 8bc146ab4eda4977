"""The transform: stochastic, norm-bounded, explicit randomness, saved and refused by model."""

from __future__ import annotations

import copy

import pytest
import torch

from safeshare.errors import InputError, OutputExistsError
from safeshare.obfuscate.model import FrozenModel
from safeshare.obfuscate.transform import (
    ObfuscationTransform,
    TransformConfig,
    gaussian_noise,
    torch_generator,
)
from tests.obfuscate.conftest import TEXTS


def test_two_calls_differ_yet_a_seed_reproduces(minilm: FrozenModel) -> None:
    transform = ObfuscationTransform.for_model(minilm, seed=1)
    first, mask = transform.obfuscate(minilm, TEXTS, torch_generator()[0])
    second, _ = transform.obfuscate(minilm, TEXTS, torch_generator()[0])
    assert not torch.equal(first, second)
    again = [transform.obfuscate(minilm, TEXTS, torch_generator(7)[0])[0] for _ in range(2)]
    assert torch.equal(again[0], again[1])
    assert mask.shape == first.shape[:2]


def test_a_seeded_transform_does_not_depend_on_torchs_global_rng(minilm: FrozenModel) -> None:
    transform = ObfuscationTransform.for_model(minilm, seed=3)
    torch.rand(5)  # move the global generator: a seeded transform must not notice
    other = ObfuscationTransform.for_model(minilm, seed=3)
    for a, b in zip(transform.parameters(), other.parameters(), strict=True):
        assert torch.equal(a, b)
    torch.rand(5)
    a = transform.obfuscate(minilm, TEXTS, torch_generator(4)[0])[0]
    b = other.obfuscate(minilm, TEXTS, torch_generator(4)[0])[0]
    assert torch.equal(a, b)


def test_norms_stay_in_the_tables_range_and_padding_is_kept(minilm: FrozenModel) -> None:
    config = TransformConfig(dim=384, max_norm=float(minilm.table.norm(dim=1).max()))
    transform = ObfuscationTransform(config, minilm.fingerprint, seed=0)
    with torch.no_grad():
        transform.network.log_scale.bias.fill_(10.0)  # maximal noise
    batch = minilm.tokenize(TEXTS)
    clean = minilm.embed_tokens(batch.input_ids)
    with torch.no_grad():
        noisy = transform.sample(clean, batch.attention_mask, torch_generator(0)[0])
    assert float(noisy.norm(dim=-1).max()) <= config.max_norm * (1 + 1e-5)
    padding = batch.attention_mask == 0
    assert padding.any() and torch.equal(noisy[padding], clean[padding])


def test_save_load_round_trip_and_refusal_for_another_model(minilm: FrozenModel, tmp_path) -> None:
    transform = ObfuscationTransform.for_model(minilm, seed=5)
    with torch.no_grad():
        transform.network.mean.bias.fill_(0.01)
    folder = transform.save(tmp_path / "transform")
    assert (folder / "transform.json").is_file() and (folder / "transform.safetensors").is_file()
    with pytest.raises(OutputExistsError):
        transform.save(folder)
    loaded = ObfuscationTransform.load(folder, minilm)
    a = transform.obfuscate(minilm, TEXTS, torch_generator(9)[0])[0]
    b = loaded.obfuscate(minilm, TEXTS, torch_generator(9)[0])[0]
    assert torch.equal(a, b)
    network = copy.deepcopy(minilm.network)
    with torch.no_grad():
        network.get_input_embeddings().weight[0, 0] += 1.0
    other = FrozenModel.wrap(network, minilm.tokenizer, max_length=64)
    with pytest.raises(InputError, match="trained for the model with embedding table"):
        ObfuscationTransform.load(folder, other)


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(InputError, match="hidden divisible by heads"):
        TransformConfig(dim=8, hidden=10, heads=4)
    with pytest.raises(InputError, match="seed"):
        torch_generator(-1)
    with pytest.raises(InputError, match="sigma"):
        gaussian_noise(torch.zeros(1, 2, 3), torch.ones(1, 2), -0.1, torch_generator(0)[0])
