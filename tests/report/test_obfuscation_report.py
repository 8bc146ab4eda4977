"""The HTML report of ``safeshare obfuscate attack`` puts the utility of the model at hand
against recovery: a causal model's next-token KL, a head's F1, else the outputs' cosine."""

from __future__ import annotations

from typing import Any

from safeshare.report.obfuscation import render_obfuscation_report


def _report(**kept: Any) -> dict[str, Any]:
    def condition(name: str, sigma: float | None, recovered: float, **utility: Any) -> dict:
        found = {"attack": "nearest neighbour", "input": name, "recovered": recovered,
                 "interval": [0.0, 1.0], "tokens": 50}  # fmt: skip
        return {"input": name, "sigma": sigma, "utility_cosine": 0.9, "f1": None, "pii": [],
                "attacks": [found], **utility}  # fmt: skip

    return {
        "texts": 2, "public_texts": 5, "model_fingerprint": "ab" * 32, "f1": None,
        "f1_positive_class": None, "utility_cosine": 0.9, "secure_noise": True,
        "guarantee": "empirical, not formal", "inverter_steps": 0, "pii": [],
        "attacks": [{"attack": "nearest neighbour", "input": "clean", "recovered": 1.0,
                     "interval": [0.9, 1.0], "tokens": 50}],
        "conditions": [
            condition("learned transform", None, 0.2, **kept.get("learned", {})),
            condition("Gaussian noise σ=0.3", 0.3, 0.9, **kept.get("gaussian", {})),
        ],
    }  # fmt: skip


def test_a_causal_model_is_read_by_its_next_token() -> None:
    html = render_obfuscation_report(
        _report(
            learned={"next_token_kl": 3.25, "next_token_agreement": 0.125},
            gaussian={"next_token_kl": 4.5, "next_token_agreement": 0.09},
        )
    )
    assert "KL 3.250" in html and "12.5%" in html  # the tile: KL and top-1 agreement
    assert "next-token KL (nats)" in html and "top-1 agreement" in html  # the table
    assert "4.500" in html and "9.0%" in html  # the Gaussian row's (agreement as the tile's)
    assert "lower keeps more" in html


def test_without_next_token_or_labels_the_cosine_is_the_utility() -> None:
    html = render_obfuscation_report(_report())
    assert "cosine 0.900" in html and "next-token" not in html


def test_a_causal_model_with_a_head_is_read_by_the_head_first() -> None:
    kept = {"next_token_kl": 1.5, "next_token_agreement": 0.5, "f1": 0.75}
    report = {**_report(learned=kept, gaussian={**kept, "f1": 0.5}), "f1": 0.75}
    html = render_obfuscation_report({**report, "f1_positive_class": "spam", "clean_f1": 0.8})
    assert "F1 0.750" in html and "spam" in html and "0.800" in html  # (the clean row's F1)
