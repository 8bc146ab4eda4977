"""A classification head saved with a transform: logistic regression over the pooled output.

:meth:`ClassificationHead.fit` trains a multinomial logistic regression (L2-penalised, L-BFGS,
deterministic: no randomness) on the frozen model's pooled sentence embeddings of labelled
**clean** texts, the way ``safeshare obfuscate train --label-column`` does; the client applies
it to the pooled outputs the server returns for obfuscated inputs
(:meth:`~safeshare.obfuscate.client.ObfuscatingClient.classify`), so the prediction is made on
the client and the server never sees it.  Saved as ``head.safetensors`` (weights, no pickle)
and ``head.json`` (classes and the fingerprint of the model's embedding table) beside the
transform; :meth:`ClassificationHead.load` refuses a head trained for another model.

>>> import numpy as np
>>> x = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]], dtype=np.float32)
>>> head = ClassificationHead.fit(x, ["ham", "ham", "spam", "spam"], fingerprint="0" * 64)
>>> head.predict(x[:1] + 0.05)
['ham']
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.obfuscate.model import FrozenModel, require_torch
from safeshare.output_folder import read_json, read_weights

HEAD_WEIGHTS = "head.safetensors"
HEAD_CONFIG = "head.json"
HEAD_FORMAT = "safeshare-obfuscation-head/1"


class ClassificationHead:
    """``softmax(pooled @ weight.T + bias)`` over ``classes``, for one model (``fingerprint``)."""

    def __init__(self, weight: Any, bias: Any, classes: Sequence[str], fingerprint: str) -> None:
        self.weight = np.asarray(weight, dtype=np.float32)
        self.bias = np.asarray(bias, dtype=np.float32)
        self.classes = tuple(str(c) for c in classes)
        self.fingerprint = fingerprint
        if (
            self.weight.ndim != 2
            or self.weight.shape[0] != len(self.classes)
            or self.bias.shape != (len(self.classes),)
        ):
            raise InputError(
                f"head weight {self.weight.shape} and bias {self.bias.shape} do not fit "
                f"{len(self.classes)} classes; pass (classes, dim) and (classes,)"
            )

    @classmethod
    def fit(
        cls,
        pooled: Any,
        labels: Sequence[object],
        *,
        fingerprint: str,
        l2: float = 1e-3,
        iterations: int = 200,
    ) -> ClassificationHead:
        """Fit on pooled embeddings ``(n, dim)`` of clean texts and their labels."""
        torch = require_torch()
        features = torch.as_tensor(np.asarray(pooled, dtype=np.float32))
        names = [str(label) for label in labels]
        classes = sorted(set(names))
        if features.ndim != 2 or features.shape[0] != len(names):
            raise InputError(
                f"{len(names)} labels for pooled embeddings of shape {tuple(features.shape)}; "
                "pass one label per text"
            )
        if len(classes) < 2:
            raise InputError(
                f"the label column has {len(classes)} distinct value(s); a classifier needs at "
                "least 2"
            )
        if not l2 >= 0:
            raise InputError(f"l2 must be >= 0, not {l2!r}")
        index = {name: i for i, name in enumerate(classes)}
        target = torch.tensor([index[name] for name in names])
        weight = torch.zeros(len(classes), features.shape[1], requires_grad=True)
        bias = torch.zeros(len(classes), requires_grad=True)
        optimizer = torch.optim.LBFGS(
            [weight, bias], max_iter=iterations, line_search_fn="strong_wolfe"
        )

        def closure() -> Any:
            optimizer.zero_grad()
            logits = features @ weight.T + bias
            loss = torch.nn.functional.cross_entropy(logits, target) + l2 * (weight**2).sum()
            loss.backward()
            return loss

        optimizer.step(closure)
        return cls(weight.detach().numpy(), bias.detach().numpy(), classes, fingerprint)

    def probabilities(self, pooled: Any) -> Any:
        """Class probabilities ``(n, classes)`` (float64) of pooled embeddings."""
        logits = np.asarray(pooled, dtype=np.float64) @ self.weight.T.astype(np.float64)
        logits += self.bias
        logits -= logits.max(axis=1, keepdims=True)
        odds = np.exp(logits)
        return odds / odds.sum(axis=1, keepdims=True)

    def predict(self, pooled: Any) -> list[str]:
        """The most probable class of each pooled embedding."""
        return [self.classes[i] for i in self.probabilities(pooled).argmax(axis=1)]

    def check_model(self, model: FrozenModel) -> None:
        """Refuse a model whose embedding table differs from the one this head is for."""
        if model.fingerprint != self.fingerprint:
            raise InputError(
                f"this classification head was trained for the model with embedding table "
                f"{self.fingerprint[:16]}…, not {model.fingerprint[:16]}…; train it again "
                "(`safeshare obfuscate train --label-column ...`) for this model"
            )

    def write(self, folder: Path) -> None:
        """Write ``head.safetensors`` and ``head.json`` into ``folder`` (each atomically)."""
        from safetensors.numpy import save_file

        folder.mkdir(parents=True, exist_ok=True)
        meta = {"format": HEAD_FORMAT, "fingerprint": self.fingerprint, "classes": self.classes}
        tensors = {"weight": self.weight, "bias": self.bias}
        for name, write in (
            (HEAD_WEIGHTS, lambda path: save_file(tensors, path)),
            (HEAD_CONFIG, lambda path: Path(path).write_text(json.dumps(meta, indent=2))),
        ):
            handle, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
            os.close(handle)
            write(temporary)
            os.replace(temporary, folder / name)

    @classmethod
    def read(cls, folder: Path, model: FrozenModel) -> ClassificationHead | None:
        """The head saved in ``folder``, None if there is none; refused for another model."""
        from safetensors.numpy import load_file

        if not (folder / HEAD_CONFIG).is_file():
            return None
        meta = read_json(folder / HEAD_CONFIG, f"a {HEAD_FORMAT} file")
        if meta.get("format") != HEAD_FORMAT or not (folder / HEAD_WEIGHTS).is_file():
            raise InputError(
                f"{folder / HEAD_CONFIG} is not a {HEAD_FORMAT} file with {HEAD_WEIGHTS} beside "
                "it; train the transform again with --label-column"
            )
        tensors = read_weights(folder / HEAD_WEIGHTS, load_file)
        if not {"weight", "bias"} <= tensors.keys() or not isinstance(meta.get("classes"), list):
            raise InputError(f"{folder / HEAD_CONFIG} does not describe a saved head; train again")
        head = cls(
            tensors["weight"], tensors["bias"], meta["classes"], str(meta.get("fingerprint"))
        )
        head.check_model(model)
        return head


def fit_head(
    model: FrozenModel, texts: Sequence[str], labels: Sequence[object], *, batch_size: int = 64
) -> ClassificationHead:
    """Fit a head on ``model``'s pooled embeddings of the **clean** ``texts`` and ``labels``."""
    torch = require_torch()
    if len(texts) != len(labels):
        raise InputError(f"{len(labels)} labels for {len(texts)} texts; pass one label per text")
    parts, truncated = [], 0
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # counted per batch, warned once below
        for start in range(0, len(texts), batch_size):
            batch = model.tokenize(list(texts[start : start + batch_size]))
            truncated += batch.truncated
            embeds = model.embed_tokens(batch.input_ids)
            parts.append(model.pooled(embeds, batch.attention_mask).numpy())
    if truncated:
        warnings.warn(
            f"{truncated} of {len(texts)} texts the head is fitted on are longer than "
            f"{model.max_length} tokens and were truncated to it; pass a larger max_length or "
            "shorter texts",
            UserWarning,
            stacklevel=2,
        )
    pooled = np.vstack(parts) if parts else np.zeros((0, int(model.table.shape[1])))
    return ClassificationHead.fit(pooled, labels, fingerprint=model.fingerprint)
