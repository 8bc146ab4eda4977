"""``DPTextClassifier``: the DP text classifier with scikit-learn habits (fit once, predict).

Labels are any values; ``classes`` lists them (public).  Without ``classes`` they are read
from the training labels, which is not DP, and the card says so.  Training is
:func:`safeshare.train.text.train_text` (DP-SGD on the top of all-MiniLM-L6-v2).

>>> clf = DPTextClassifier(epsilon=3.0, classes=["ham", "spam"], max_length=32)
>>> clf.settings.max_length, clf.settings.train_layers, clf.epsilon
(32, 1, 3.0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.errors import InputError, NotFittedError, RefitError
from safeshare.train.accounting import Accounting
from safeshare.train.text import DEFAULT_MAX_LENGTH, TextModel, TextSettings, train_text


def label_codes(
    labels: Any, classes: Sequence[str] | None, target: str
) -> tuple[np.ndarray, list[str], bool]:
    """Codes of ``labels`` in ``classes`` (as text), the classes, and whether they were read.

    >>> codes, classes, read = label_codes(["b", "a", "b"], None, "y")
    >>> codes.tolist(), classes, read
    ([1, 0, 1], ['a', 'b'], True)
    """
    values = list(labels)
    missing = sum(1 for v in values if v is None or bool(pd.isna(v)))
    if missing:
        raise InputError(
            f"target {target!r} has {missing} missing label(s); drop those records or give them a "
            "label before training"
        )
    text = [str(v) for v in values]
    read = classes is None
    names = sorted(set(text)) if classes is None else [str(c) for c in classes]
    if len(set(names)) != len(names):
        raise InputError(f"classes of target {target!r} repeat a label; list each class once")
    index = {name: i for i, name in enumerate(names)}
    unknown = sum(1 for v in text if v not in index)
    if unknown:
        raise InputError(
            f"{unknown} label(s) of target {target!r} are not among the {len(names)} classes "
            "given; add them to classes (or drop those records)"
        )
    return np.array([index[v] for v in text], dtype=np.int64), names, read


class DPTextClassifier:
    """Fine-tune all-MiniLM-L6-v2's top layer(s) and a head under (epsilon, delta)-DP.

    ``epsilon=None`` trains without DP (a baseline; the card says it has no guarantee).
    ``seed``: an integer makes the run reproducible and NOT secure (the card says so);
    None draws from the OS.
    """

    def __init__(
        self,
        *,
        epsilon: float | None,
        delta: float | None = None,
        classes: Sequence[str] | None = None,
        max_length: int = DEFAULT_MAX_LENGTH,
        train_layers: int = 1,
        epochs: float = 3.0,
        batch_size: int = 256,
        learning_rate: float = 1e-2,
        layer_learning_rate: float = 1e-4,
        max_grad_norm: float = 1.0,
        clipping: str = "ghost",
        accountant: Accounting = "pld",
        seed: int | None = None,
        progress: Callable[[str, float], None] | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.classes = None if classes is None else [str(c) for c in classes]
        self.settings = TextSettings(
            max_length=max_length,
            train_layers=train_layers,
            epochs=epochs,
            batch_size=batch_size,
            learning_rate=learning_rate,
            layer_learning_rate=layer_learning_rate,
            max_grad_norm=max_grad_norm,
            clipping=clipping,
            accountant=accountant,
        )
        self.seed = seed
        self.progress = progress
        self.model_: TextModel | None = None

    def fit(self, texts: Sequence[str], labels: Any) -> DPTextClassifier:
        """Train once on ``texts`` and their ``labels`` (a second fit raises ``RefitError``)."""
        if self.model_ is not None:
            raise RefitError(
                "this DPTextClassifier is already fitted (a second fit would spend the budget "
                "again); make a new one"
            )
        codes, classes, read = label_codes(labels, self.classes, "label")
        model = train_text(
            texts,
            codes,
            classes,
            epsilon=self.epsilon,
            delta=self.delta,
            settings=self.settings,
            seed=self.seed,
            progress=self.progress,
        )
        if read:
            model.card["model"]["class_labels_source"] = (
                "read from the training labels without DP (pass classes=... to keep them public)"
            )
        else:
            model.card["model"]["class_labels_source"] = "given (public)"
        self.model_ = model
        return self

    @property
    def model(self) -> TextModel:
        if self.model_ is None:
            raise NotFittedError("this DPTextClassifier is not fitted yet; call fit(texts, labels)")
        return self.model_

    @property
    def card_(self) -> dict[str, Any]:
        """The model card (privacy, model, training)."""
        return self.model.card

    @property
    def classes_(self) -> tuple[str, ...]:
        return self.model.classes

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        """The most likely class label of each text."""
        return self.model.predict(texts)

    def predict_proba(self, texts: Sequence[str]) -> np.ndarray:
        """``(texts, classes)`` probabilities, columns in the order of ``classes_``."""
        return self.model.predict_proba(texts)

    def score(self, texts: Sequence[str], labels: Any) -> float:
        """Accuracy on ``texts`` with true ``labels``."""
        codes, _, _ = label_codes(labels, self.model.classes, "label")
        return self.model.accuracy(texts, codes)

    def save(self, out: str | Path, *, force: bool = False) -> Path:
        """``model.safetensors`` (trained layers and head, no pickle) and ``card.json``."""
        return self.model.save(out, force=force)
