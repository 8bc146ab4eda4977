"""obfuscate/: learned stochastic obfuscation of model inputs, and the attacks that test it.

A client sends a frozen model not its tokens but a fresh random transform of their embeddings
(:class:`ObfuscationTransform`, trained by :func:`train_transform` to keep the model's output
while hiding the tokens); :func:`nearest_neighbour_attack`, :func:`beam_attack` and the
learned :func:`inversion_attack` measure how many tokens (and planted PII, :func:`plant_pii`)
an attacker still recovers; a :class:`ClassificationHead` saved with the transform lets
:class:`ObfuscatingClient` classify through the server.  The guarantee is empirical, not formal.

Importing this package never imports torch: the names below load their module on first use.

>>> import sys, safeshare.obfuscate
>>> "safeshare.obfuscate.transform" in sys.modules or "torch" not in sys.modules
True
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "FrozenModel": "model",
    "load_model": "model",
    "table_fingerprint": "model",
    "ObfuscationTransform": "transform",
    "TransformConfig": "transform",
    "gaussian_noise": "transform",
    "torch_generator": "transform",
    "train_transform": "training",
    "TrainingResult": "training",
    "CurvePoint": "training",
    "TokenRecovery": "attacks",
    "NoiseEstimate": "attacks",
    "nearest_neighbour_attack": "attacks",
    "beam_attack": "attacks",
    "BigramPrior": "prior",
    "LanguageModelPrior": "prior",
    "ObfuscatingClient": "client",
    "create_app": "server",
    "serve": "server",
    "serve_in_thread": "server",
    "AttackReport": "audit",
    "attack_transform": "audit",
    "Condition": "audit",
    "ClassificationHead": "head",
    "fit_head": "head",
    "Classification": "client",
    "Inverter": "inversion",
    "train_inverter": "inversion",
    "inversion_attack": "inversion",
    "PIIRecovery": "pii",
    "plant_pii": "pii",
    "score_pii": "pii",
    "NextTokenUtility": "utility",
    "next_token_utility": "utility",
}

__all__ = [
    "AttackReport",
    "BigramPrior",
    "Classification",
    "ClassificationHead",
    "Condition",
    "CurvePoint",
    "FrozenModel",
    "Inverter",
    "LanguageModelPrior",
    "NextTokenUtility",
    "NoiseEstimate",
    "ObfuscatingClient",
    "ObfuscationTransform",
    "PIIRecovery",
    "TokenRecovery",
    "TrainingResult",
    "TransformConfig",
    "attack_transform",
    "beam_attack",
    "create_app",
    "fit_head",
    "gaussian_noise",
    "inversion_attack",
    "load_model",
    "nearest_neighbour_attack",
    "next_token_utility",
    "plant_pii",
    "score_pii",
    "serve",
    "serve_in_thread",
    "table_fingerprint",
    "torch_generator",
    "train_inverter",
    "train_transform",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'safeshare.obfuscate' has no attribute {name!r}")
    return getattr(importlib.import_module(f"safeshare.obfuscate.{_EXPORTS[name]}"), name)
