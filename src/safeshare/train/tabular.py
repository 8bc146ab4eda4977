"""A DP-trained MLP classifier over a Table: one-hot codes in, the target's classes out.

The features are the one-hot codes of every column but the target, laid out by the
Table's Domain (public: nothing about the layout is learned from the records).
Training is DP-SGD (:mod:`safeshare.train.dpsgd`): Poisson sampling, per-sample
clipping (by default ``"linear-ghost"``, :mod:`safeshare.train.clipping`: exact for this
all-Linear MLP and one backward pass per step; ``"ghost"`` and ``"hooks"`` run Opacus's),
noise calibrated so the card's epsilon is exact.

>>> import numpy as np
>>> from safeshare.data import Domain, Table
>>> rng = np.random.default_rng(0)
>>> x = rng.integers(0, 4, 2000)
>>> table = Table({"x": x, "y": (x >= 2).astype(int)}, Domain.from_sizes({"x": 4, "y": 2}))
>>> model = train_tabular(table, "y", epsilon=2.0, epochs=5, batch_size=200, seed=0,
...                       accountant="rdp")
>>> model.accuracy(table) > 0.9, model.card["privacy"]["epsilon"] <= 2.0
(True, True)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from safeshare.data import Table
from safeshare.errors import InputError, InputFileNotFoundError, SchemaError
from safeshare.output_folder import read_json, read_weights, staged_output
from safeshare.train.accounting import Accounting
from safeshare.train.device import describe_device, resolve_device
from safeshare.train.dpsgd import (
    DPSGDSettings,
    require_torch,
    run_dpsgd,
    torch_generator,
    train_shuffled,
)


def one_hot(table: Table, features: Sequence[str]) -> np.ndarray:
    """``(rows, sum of sizes)`` float32 one-hot codes of ``features``, in that order."""
    sizes = [table.domain[name].size for name in features]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    out = np.zeros((len(table), int(sum(sizes))), dtype=np.float32)
    rows = np.arange(len(table))
    for name, offset in zip(features, offsets, strict=True):
        out[rows, offset + table.column(name).astype(np.int64)] = 1.0
    return out


def _target(table: Table, target: str) -> tuple[np.ndarray, int]:
    if target not in table.columns:
        raise SchemaError(f"target column {target!r} is not in the table; columns: {table.columns}")
    codes = table.column(target).astype(np.int64)
    if np.unique(codes).size < 2:
        raise InputError(
            f"target column {target!r} has a single class in the training records; a classifier "
            "needs at least two: choose another target or more data"
        )
    return codes, table.domain[target].size


def _mlp(inputs: int, hidden: int, classes: int, generator: Any) -> Any:
    torch, _ = require_torch()
    module = torch.nn.Sequential(
        torch.nn.Linear(inputs, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes)
    )
    with torch.no_grad():  # torch's default init, but drawn from our generator
        for layer in (module[0], module[2]):
            bound = 1.0 / float(np.sqrt(layer.in_features))
            layer.weight.uniform_(-bound, bound, generator=generator)
            layer.bias.uniform_(-bound, bound, generator=generator)
    return module


@dataclass(frozen=True)
class TabularModel:
    """A trained classifier, its feature layout and its card (``card["privacy"]``)."""

    module: Any
    features: tuple[str, ...]
    target: str
    card: dict[str, Any]

    def _logits(self, table: Table) -> Any:
        torch, _ = require_torch()
        missing = [n for n in (*self.features, self.target) if n not in table.columns]
        if missing:
            raise SchemaError(f"the table lacks columns {missing} the model was trained with")
        self.module.eval()
        with torch.no_grad():
            return self.module(torch.from_numpy(one_hot(table, self.features)))

    def logits(self, table: Table) -> np.ndarray:
        """``(rows, classes)`` logits (what LiRA turns into a confidence)."""
        return np.asarray(self._logits(table).numpy(), dtype=np.float64)

    def predict(self, table: Table) -> np.ndarray:
        """The most likely class code of each row."""
        return np.asarray(self._logits(table).argmax(dim=1).numpy())

    def accuracy(self, table: Table) -> float:
        return float(np.mean(self.predict(table) == table.column(self.target)))

    def losses(self, table: Table) -> np.ndarray:
        """Per-record cross-entropy: what a loss-threshold membership attack scores."""
        torch, _ = require_torch()
        labels = torch.from_numpy(table.column(self.target).astype(np.int64))
        loss = torch.nn.functional.cross_entropy(self._logits(table), labels, reduction="none")
        return np.asarray(loss.numpy(), dtype=np.float64)

    def save(self, out: str | Path, *, force: bool = False) -> Path:
        """Write ``model.safetensors`` (weights only, no pickle) and ``card.json`` atomically."""
        return write_model(out, self.module, self.card, force=force)


def write_model(
    out: str | Path,
    module: Any,
    card: dict[str, Any],
    *,
    force: bool = False,
    extra: dict[str, str] | None = None,
) -> Path:
    """Write ``module``'s weights (``model.safetensors``, no pickle), ``card.json`` and the
    ``extra`` text files (name -> content) atomically."""
    try:
        from safetensors.torch import save_file
    except ImportError:
        raise InputError(
            "saving a model needs safetensors: pip install 'safeshare[train]'"
        ) from None
    with staged_output(out, force=force) as staging:
        weights = {k: v.detach().contiguous() for k, v in module.state_dict().items()}
        save_file(weights, str(staging / "model.safetensors"))
        text = json.dumps(card, indent=2, allow_nan=False) + "\n"
        (staging / "card.json").write_text(text, encoding="utf-8")
        for name, content in (extra or {}).items():
            if name in ("model.safetensors", "card.json") or Path(name).name != name:
                raise InputError(f"extra file name {name!r} must be a plain, new file name")
            (staging / name).write_text(content, encoding="utf-8")
    return Path(out)


def read_model(folder: str | Path, kind: str, written_by: str) -> tuple[dict[str, Any], Any]:
    """The card and the weights (name -> tensor) that :func:`write_model` wrote to ``folder``,
    refused unless the card is a ``kind``'s (``written_by`` names what writes such folders)."""
    from safetensors.torch import load_file

    path = Path(folder)
    card_path, weights = path / "card.json", path / "model.safetensors"
    if not card_path.is_file() or not weights.is_file():
        raise InputFileNotFoundError(
            f"{str(path)!r} lacks card.json or model.safetensors; give the directory that "
            f"{written_by} wrote"
        )
    card = read_json(card_path, f"the card of a {kind}")
    model = card.get("model")
    if not isinstance(model, dict) or model.get("kind") != kind:
        raise InputError(f"{str(card_path)!r} is not the card of a {kind}")
    return card, read_weights(weights, load_file)


def train_tabular(
    table: Table,
    target: str,
    *,
    epsilon: float,
    delta: float | None = None,
    epochs: float = 10.0,
    batch_size: int = 512,
    max_grad_norm: float = 1.0,
    learning_rate: float = 2e-3,
    hidden: int = 64,
    clipping: str = "linear-ghost",
    sampling: str = "poisson",
    accountant: Accounting = "pld",
    seed: int | None = None,
    progress: Callable[[str, float], None] | None = None,
    user_column: str | None = None,
    users: Any = None,
    max_records_per_user: int = 64,
    device: str = "auto",
) -> TabularModel:
    """Train an MLP on every column but ``target`` under (epsilon, delta)-DP, unit = one record.

    ``delta`` defaults to 1 / (10 x records).  ``rng=None`` draws the model's
    initialisation, the batches and the noise from an OS-seeded generator; an integer
    seed makes the run reproducible and the card says it is not secure.  ``device``:
    ``"auto"`` (CUDA when torch sees a GPU), ``"cpu"`` or ``"cuda[:N]"``
    (:mod:`safeshare.train.device`); the model comes back on the CPU.

    With ``user_column`` the privacy unit is a **user**: all records sharing that column's
    value (:mod:`safeshare.train.user_level`; the column is not a feature).  ``users``
    gives the ids beside the table instead (one per row; ``user_column`` then only names
    them).  ``batch_size`` is then the expected number of users per batch, ``delta``
    defaults to 1 / (10 x users), and each user keeps at most ``max_records_per_user``
    records (drawn at random; bounds a step's memory, not the guarantee).
    """
    torch, opacus = require_torch()
    place = resolve_device(device)
    labels, classes = _target(table, target)
    if users is None and user_column is not None:
        if user_column not in table.columns or user_column == target:
            raise SchemaError(
                f"user column {user_column!r} is not a column of the table besides the target"
            )
        users = table.column(user_column)
    if users is not None and user_column is None:
        raise InputError("users given without user_column: name the column they come from")
    features = tuple(n for n in table.columns if n not in (target, user_column))
    if not features:
        raise SchemaError(f"the table has no column besides the target {target!r} to learn from")
    if users is not None and user_column is not None:
        if len(users) != len(table):
            raise InputError(f"users must give one id per row ({len(table)}), got {len(users)}")
        return _train_user_level(
            table.project([*features, target]),
            target,
            user_column,
            users,
            max_records_per_user,
            epsilon=epsilon,
            delta=delta,
            epochs=epochs,
            batch_size=batch_size,
            max_grad_norm=max_grad_norm,
            learning_rate=learning_rate,
            hidden=hidden,
            clipping=clipping,
            sampling=sampling,
            accountant=accountant,
            seed=seed,
            progress=progress,
            device=place,
        )
    records = len(table)
    settings = DPSGDSettings(
        records=records,
        batch_size=batch_size,
        epochs=epochs,
        epsilon=epsilon,
        delta=1.0 / (10 * records) if delta is None else delta,
        max_grad_norm=max_grad_norm,
        accountant=accountant,
        clipping=clipping,
        sampling=sampling,
    )
    if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1:
        raise InputError(f"hidden must be a positive whole number of units, got {hidden!r}")
    generator, seeded = torch_generator(seed)
    inputs = torch.from_numpy(one_hot(table, features))
    module = _mlp(inputs.shape[1], hidden, classes, generator)
    run = run_dpsgd(
        module,
        inputs,
        torch.from_numpy(labels),
        settings,
        make_optimizer=lambda params: torch.optim.Adam(params, lr=learning_rate),
        generator=generator,
        seeded=seeded,
        progress=progress,
        device=place,
    )
    trained = getattr(module, "_module", module)
    card = {
        "model": _model_card(int(inputs.shape[1]), hidden, classes, features, target),
        "privacy": run.privacy(),
        "training": {
            "records": records,
            "epochs": run.steps_taken * settings.sampling_rate,
            "optimizer": "adam",
            "learning_rate": learning_rate,
            "seeded": seeded,
            "device": run.device,
        },
        "versions": {"torch": str(torch.__version__), "opacus": str(opacus.__version__)},
    }
    return TabularModel(trained, features, target, card)


def _train_user_level(
    table: Table,
    target: str,
    user_column: str,
    ids: Any,
    cap: int,
    *,
    epsilon: float,
    delta: float | None,
    epochs: float,
    batch_size: int,
    max_grad_norm: float,
    learning_rate: float,
    hidden: int,
    clipping: str,
    sampling: str,
    accountant: Accounting,
    seed: int | None,
    progress: Callable[[str, float], None] | None,
    device: Any,
) -> TabularModel:
    """:func:`train_tabular` with a user as the privacy unit (``table``: features, target)."""
    from safeshare.train.user_level import run_user_dpsgd, user_privacy, user_settings

    torch, opacus = require_torch()
    if clipping != "linear-ghost":  # the default; another explicit choice does not apply
        raise InputError(
            f"clipping {clipping!r} clips per record; with a user column the gradient is "
            "clipped per user (its own method): leave clipping at its default"
        )
    generator, seeded = torch_generator(seed)
    grouped, settings = user_settings(
        ids,
        cap,
        generator,
        batch_size=batch_size,
        epochs=epochs,
        epsilon=epsilon,
        delta=delta,
        max_grad_norm=max_grad_norm,
        accountant=accountant,
        sampling=sampling,
    )
    if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1:
        raise InputError(f"hidden must be a positive whole number of units, got {hidden!r}")
    features = tuple(n for n in table.columns if n != target)
    kept = table.take(grouped.rows)
    inputs = torch.from_numpy(one_hot(kept, features))
    classes = table.domain[target].size
    module = _mlp(inputs.shape[1], hidden, classes, generator)
    run = run_user_dpsgd(
        module,
        (inputs,),
        torch.from_numpy(kept.column(target).astype(np.int64)),
        grouped.user,
        settings,
        make_optimizer=lambda params: torch.optim.Adam(params, lr=learning_rate),
        generator=generator,
        seeded=seeded,
        progress=progress,
        device=device,
    )
    card = {
        "model": _model_card(int(inputs.shape[1]), hidden, classes, features, target),
        "privacy": user_privacy(run, user_column, grouped, cap),
        "training": {
            "records": len(table),
            "records_used": len(kept),
            "users": grouped.users,
            "epochs": run.steps_taken * settings.sampling_rate,
            "optimizer": "adam",
            "learning_rate": learning_rate,
            "seeded": seeded,
            "device": run.device,
        },
        "versions": {"torch": str(torch.__version__), "opacus": str(opacus.__version__)},
    }
    return TabularModel(module, features, target, card)


def train_tabular_nonprivate(
    table: Table,
    target: str,
    *,
    epochs: float = 10.0,
    batch_size: int = 512,
    learning_rate: float = 2e-3,
    hidden: int = 64,
    seed: int | None = None,
    device: str = "auto",
) -> TabularModel:
    """The same MLP trained WITHOUT DP (shuffled batches, no clipping, no noise): a baseline.

    What an audit of a model that is free to memorize is measured against; its card
    says plainly that it carries no guarantee.

    >>> import numpy as np
    >>> from safeshare.data import Domain, Table
    >>> x = np.random.default_rng(0).integers(0, 4, 400)
    >>> table = Table({"x": x, "y": (x >= 2).astype(int)}, Domain.from_sizes({"x": 4, "y": 2}))
    >>> model = train_tabular_nonprivate(table, "y", epochs=5, batch_size=50, seed=0)
    >>> model.accuracy(table), model.card["privacy"]["guarantee"]
    (1.0, 'none (not differentially private)')
    """
    torch, _ = require_torch()
    place = resolve_device(device)
    labels, classes = _target(table, target)
    features = tuple(n for n in table.columns if n != target)
    if not features:
        raise SchemaError(f"the table has no column besides the target {target!r} to learn from")
    if isinstance(hidden, bool) or not isinstance(hidden, int) or hidden < 1:
        raise InputError(f"hidden must be a positive whole number of units, got {hidden!r}")
    if isinstance(batch_size, bool) or not 1 <= batch_size <= len(table):
        raise InputError(f"batch size {batch_size!r} must lie in [1, {len(table)}]")
    if not (np.isfinite(epochs) and epochs > 0):
        raise InputError(f"epochs must be a positive number, got {epochs!r}")
    generator, seeded = torch_generator(seed)
    inputs = torch.from_numpy(one_hot(table, features))
    targets = torch.from_numpy(labels)
    module = _mlp(inputs.shape[1], hidden, classes, generator)
    optimizer = torch.optim.Adam(module.parameters(), lr=learning_rate)
    epochs_run = train_shuffled(
        module,
        inputs,
        targets,
        batch_size=batch_size,
        epochs=epochs,
        optimizer=optimizer,
        generator=generator,
        loss=torch.nn.functional.cross_entropy,
        device=place,
    )
    card = {
        "model": _model_card(int(inputs.shape[1]), hidden, classes, features, target),
        "privacy": {"guarantee": "none (not differentially private)", "epsilon": None},
        "training": {
            "records": len(table),
            "epochs": epochs_run,
            "batch_size": batch_size,
            "optimizer": "adam",
            "learning_rate": learning_rate,
            "seeded": seeded,
            "device": describe_device(place),
        },
    }
    return TabularModel(module, features, target, card)


def _model_card(
    inputs: int, hidden: int, classes: int, features: Sequence[str], target: str
) -> dict[str, Any]:
    return {
        "kind": "mlp classifier",
        "layers": [inputs, hidden, classes],
        "features": "one-hot codes of the domain",
        "feature_columns": list(features),
        "target": target,
        "classes": classes,
        "weights": "model.safetensors",
    }
