"""DP-SGD on Opacus with Poisson sampling, exact accounting of our own, and no silent footguns.

Opacus accounts every run as Poisson sampling, even when the data loader draws
shuffled fixed-size batches (``poisson_sampling=False``): epsilon is then understated.
Here the loader is always Opacus's ``DPDataLoader`` at the exact rate q = B / N that
the accountant uses (:func:`check_poisson_loader` refuses anything else), the noise
multiplier comes from :func:`~safeshare.train.accounting.calibrate_noise`, and exactly
the accounted number of steps is taken.  torch and opacus are imported lazily.

Training runs on ``device`` (:mod:`safeshare.train.device`: the CPU, or CUDA when torch
sees a GPU); the module comes back on the CPU.

Per-record clipping: ``"linear-ghost"`` (:mod:`safeshare.train.clipping`, exact for
networks of Linear layers, one ordinary backward pass per step) or Opacus's ``"ghost"``
and ``"hooks"`` for other architectures.  All three add the noise with Opacus's
optimizer, from the same generator (or Opacus's secure mode).
"""

from __future__ import annotations

import importlib.util
import math
import secrets
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from safeshare.dp.randomness import check_seed
from safeshare.errors import BudgetError, InputError, MissingDependencyError
from safeshare.train.accounting import (
    ACCOUNTANT_SOURCE,
    Accounting,
    calibrate_noise,
    dpsgd_epsilon,
)
from safeshare.train.device import describe_device, noise_generator, resolve_device

SAMPLINGS: tuple[str, ...] = ("poisson",)
# linear-ghost: ours (train/clipping.py), exact and fastest, for networks of Linear layers;
# ghost and hooks: Opacus's, for any architecture Opacus supports
CLIPPINGS: tuple[str, ...] = ("linear-ghost", "ghost", "hooks")


def require_torch() -> tuple[Any, Any]:
    """``(torch, opacus)``, or a clear error naming what to install."""
    try:
        import opacus
        import torch
    except ImportError as err:
        raise MissingDependencyError(
            f"DP training needs torch and opacus ({err.name} is missing); "
            "install them with: pip install 'safeshare[train]'"
        ) from None
    return torch, opacus


def check_sampling(sampling: str) -> None:
    """Refuse any sampling the accountant does not model exactly."""
    if sampling == "shuffle":
        raise BudgetError(
            "sampling='shuffle' draws shuffled fixed-size batches, which are not Poisson "
            "sampling: accounting them as Poisson (as Opacus does silently) understates "
            "epsilon; use sampling='poisson'"
        )
    if sampling not in SAMPLINGS:
        raise BudgetError(f"sampling {sampling!r} is unknown; use 'poisson'")


def check_poisson_loader(loader: Any, sampling_rate: float) -> None:
    """Refuse a data loader that is not Poisson sampling at exactly ``sampling_rate``."""
    from opacus.utils.uniform_sampler import (
        UniformWithReplacementSampler,
    )

    sampler = getattr(loader, "batch_sampler", None)
    if not isinstance(sampler, UniformWithReplacementSampler):
        raise BudgetError(
            f"the data loader draws batches with {type(sampler).__name__}, not Poisson "
            "sampling; DP-SGD accounting here assumes Poisson sampling: build the loader with "
            "opacus.data_loader.DPDataLoader(dataset, sample_rate=q)"
        )
    if not math.isclose(sampler.sample_rate, sampling_rate, rel_tol=1e-12):
        raise BudgetError(
            f"the loader samples at rate {sampler.sample_rate:.6g} but the accountant was "
            f"given {sampling_rate:.6g}; use one rate for both"
        )


def secure_noise_available() -> bool:
    """Opacus's secure mode needs torchcsprng."""
    return importlib.util.find_spec("torchcsprng") is not None


@dataclass(frozen=True)
class DPSGDSettings:
    """What the accountant needs and what the card reports."""

    records: int
    batch_size: int
    epochs: float
    epsilon: float
    delta: float
    max_grad_norm: float = 1.0
    accountant: Accounting = "pld"
    clipping: str = "ghost"
    sampling: str = "poisson"

    def __post_init__(self) -> None:
        check_sampling(self.sampling)
        if self.clipping not in CLIPPINGS:
            raise InputError(f"clipping {self.clipping!r} is unknown; use one of {CLIPPINGS}")
        if isinstance(self.batch_size, bool) or not 1 <= self.batch_size <= self.records // 2:
            raise InputError(
                f"batch size {self.batch_size!r} must lie in [1, {self.records // 2}] (half the "
                f"{self.records} training records); try a smaller batch"
            )
        if not (math.isfinite(self.epochs) and self.epochs > 0):
            raise InputError(f"epochs must be a positive number, got {self.epochs!r}")
        if not (math.isfinite(self.max_grad_norm) and self.max_grad_norm > 0):
            raise InputError(f"max_grad_norm must be positive, got {self.max_grad_norm!r}")

    @classmethod
    def of(
        cls, settings: Any, *, records: int, epsilon: float, delta: float | None, clipping: str
    ) -> DPSGDSettings:
        """From a model's settings (``batch_size``, ``epochs``, ``max_grad_norm``,
        ``accountant``) for ``records`` records; ``delta`` defaults to 1 / (10 x records)."""
        return cls(
            records=records,
            batch_size=settings.batch_size,
            epochs=settings.epochs,
            epsilon=epsilon,
            delta=1.0 / (10 * records) if delta is None else delta,
            max_grad_norm=settings.max_grad_norm,
            accountant=settings.accountant,
            clipping=clipping,
        )

    @property
    def sampling_rate(self) -> float:
        return self.batch_size / self.records

    @property
    def steps(self) -> int:
        return math.ceil(self.epochs * self.records / self.batch_size)


@dataclass(frozen=True)
class RecordLosses:
    """How linear-ghost clipping finds each record's loss in a batch.

    ``losses(output, labels)``: one loss per record (shape: records), e.g. a sequence's
    mean token loss; ``pieces(features, labels)``: the pieces a batch runs in, one after
    another (e.g. texts of like length, each piece cut to its longest), or None: whole.
    Each record is clipped on its own, so the pieces' clipped sums add up to the batch's.
    """

    losses: Callable[..., Any]
    pieces: Callable[..., Iterable[tuple[Any, Any]]] | None = None

    def split(self, features: Any, labels: Any) -> Iterable[tuple[Any, Any]]:
        """The batch's pieces (the whole batch when no ``pieces`` is given)."""
        pieces = self.pieces
        return [(features, labels)] if pieces is None else pieces(features, labels)


def _each_cross_entropy(output: Any, labels: Any) -> Any:
    """A classifier's loss of each record (logits: records x classes)."""
    torch, _ = require_torch()
    return torch.nn.functional.cross_entropy(output, labels, reduction="none")


CLASSIFIER_LOSSES = RecordLosses(_each_cross_entropy)


_CLIPPING_SOURCE = {
    "linear-ghost": "safeshare; noise by Opacus",
    "ghost": "Opacus",
    "hooks": "Opacus",
}


@dataclass(frozen=True)
class DPSGDRun:
    """The privacy facts of a finished run."""

    settings: DPSGDSettings
    noise_multiplier: float
    epsilon: float
    steps_taken: int
    noise_source: str
    secure_noise: bool
    device: str = "cpu"

    def privacy(self) -> dict[str, Any]:
        s = self.settings
        return {
            "guarantee": f"({self.epsilon:.4g}, {s.delta:.3g})-DP",
            "epsilon": self.epsilon,
            "epsilon_budget": s.epsilon,
            "delta": s.delta,
            "privacy_unit": "record",
            "accountant": f"{s.accountant} ({ACCOUNTANT_SOURCE[s.accountant]}), Poisson-subsampled Gaussian",
            "sampling": "poisson",
            "sampling_rate": s.sampling_rate,
            "expected_batch_size": s.batch_size,
            "steps": self.steps_taken,
            "noise_multiplier": self.noise_multiplier,
            "clipping_norm": s.max_grad_norm,
            "clipping": f"per-sample, flat ({s.clipping}, {_CLIPPING_SOURCE[s.clipping]})",
            "noise_source": self.noise_source,
            "secure_noise": self.secure_noise,
            "public": "the number of training records and the feature domain",
        }


@dataclass(frozen=True)
class _StepReport:
    """What follows each step: progress every 20 steps, and the caller's ``after_step``."""

    steps: int
    module: Any
    progress: Callable[[str, float], None] | None
    after_step: Callable[[int], None] | None

    def __call__(self, taken: int) -> None:
        if self.progress is not None and taken % 20 == 0:
            self.progress("DP-SGD steps", taken / self.steps)
        if self.after_step is not None:
            self.after_step(taken)
            self.module.train()  # the caller may have scored it in evaluation mode


def run_dpsgd(
    module: Any,
    features: Any,
    labels: Any,
    settings: DPSGDSettings,
    *,
    make_optimizer: Callable[[Any], Any],
    generator: Any,
    seeded: bool,
    progress: Callable[[str, float], None] | None = None,
    device: Any = "auto",
    record_losses: RecordLosses | None = None,
    after_step: Callable[[int], None] | None = None,
) -> DPSGDRun:
    """Train ``module`` in place on tensors (features, labels) with cross-entropy under DP-SGD.

    ``features`` is one tensor, or a tuple of tensors (one row per record each) that the
    module takes as its positional inputs, e.g. hidden states and an attention mask.
    ``labels`` of shape (records, tokens) train a sequence model whose output is
    (records, tokens, vocabulary): the loss of a record is its mean over the tokens whose
    label is not -100, and the whole sequence is the privacy unit (``"ghost"`` clipping).
    ``device`` (a name or a ``torch.device``): where the steps run; ``module`` is handed
    back on the CPU.  ``record_losses`` (linear-ghost clipping only): each record's loss
    from the module's output, when it is not the classifier's cross-entropy, e.g. a
    sequence's mean token loss (with 2-d labels).  ``after_step(steps_taken)`` is called
    after every step, the module on the training device (e.g. to score it along the way for
    a learning curve); the module is put back in training mode after it.
    """
    torch, _ = require_torch()
    from opacus import PrivacyEngine
    from opacus.data_loader import DPDataLoader

    target = resolve_device(device)
    inputs = tuple(features) if isinstance(features, tuple | list) else (features,)
    if record_losses is not None and settings.clipping != "linear-ghost":
        raise InputError("record_losses takes linear-ghost clipping; Opacus's use its own loss")
    sequence_losses = settings.clipping == "ghost" or record_losses is not None
    if labels.dim() == 2 and not sequence_losses:
        raise InputError(
            f"clipping {settings.clipping!r} cannot train a sequence model (labels per token); "
            "use clipping='ghost', which clips each record's (sequence's) whole gradient"
        )
    if settings.clipping == "linear-ghost":
        from safeshare.train.clipping import check_linear_network

        if len(inputs) != 1:
            raise InputError(
                "linear-ghost clipping takes one feature matrix; for a module with several "
                "inputs use clipping='ghost' (Opacus)"
            )
        check_linear_network(module)
    else:
        check_opacus_layers(module)
    q, steps = settings.sampling_rate, settings.steps
    sigma = calibrate_noise(
        settings.epsilon, settings.delta, q, steps, accountant=settings.accountant
    )
    spent = dpsgd_epsilon(sigma, q, steps, settings.delta, accountant=settings.accountant)
    loader = DPDataLoader(
        torch.utils.data.TensorDataset(*inputs, labels), sample_rate=q, generator=generator
    )
    check_poisson_loader(loader, q)
    secure = not seeded and secure_noise_available()
    if secure and target.type != "cpu":
        raise InputError(
            "Opacus's secure noise (torchcsprng, installed here) draws on the CPU; train with "
            "device='cpu' for secure noise, or uninstall torchcsprng to train on the GPU "
            "with noise from an OS-seeded generator"
        )
    with warnings.catch_warnings():  # the card states whether the noise is secure
        warnings.filterwarnings("ignore", message="Secure RNG turned off")
        engine = PrivacyEngine(secure_mode=secure)
    on_device = tuple(x.to(target) for x in inputs), labels.to(target)
    module.to(target)
    report = _StepReport(steps, module, progress, after_step)
    try:
        if settings.clipping == "linear-ghost":
            taken = _run_linear_ghost(
                module,
                on_device[0][0],
                on_device[1],
                settings,
                loader,
                optimizer=make_optimizer(module.parameters()),
                noise_multiplier=sigma,
                # Opacus's choice in make_private: its secure generator, else the caller's
                noise_generator=engine.secure_rng if secure else noise_generator(target, generator),
                secure=secure,
                report=report,
                record_losses=record_losses or CLASSIFIER_LOSSES,
            )
        else:
            taken = _run_opacus(
                engine,
                module,
                settings,
                loader,
                on_device,
                optimizer=make_optimizer(module.parameters()),
                noise_multiplier=sigma,
                noise_generator=None if secure else noise_generator(target, generator),
                report=report,
            )
    finally:
        module.to("cpu")
    if seeded:
        source = "torch.Generator from the caller's seed: reproducible, NOT secure"
    elif secure:
        source = "torchcsprng (Opacus secure mode)"
    else:
        source = (
            "torch.Generator seeded from the OS's CSPRNG (secrets); the stream itself is not "
            "cryptographically secure: torchcsprng is not installed for Opacus's secure mode"
        )
    return DPSGDRun(settings, sigma, spent, taken, source, secure, describe_device(target))


# what to put in place of a layer Opacus refuses (by class name)
_REPLACEMENTS = {
    "BatchNorm": "GroupNorm or LayerNorm",
    "LSTM": "opacus.layers.DPLSTM",
    "GRU": "opacus.layers.DPGRU",
    "RNN": "opacus.layers.DPRNN",
    "MultiheadAttention": "opacus.layers.DPMultiheadAttention",
    "InstanceNorm": "the same layer with track_running_stats=False",
}


def check_opacus_layers(module: Any) -> None:
    """Refuse, before any budget is calibrated, a model with layers Opacus cannot train with DP.

    The error names each such layer (its path in the model and its class) and what to put in
    its place; ``opacus.validators.ModuleValidator.fix(model)`` makes the usual replacements.
    """
    from opacus.validators import ModuleValidator

    refused = []
    for path, layer in module.named_modules():
        if next(layer.children(), None) is not None:
            continue  # containers: their leaves are checked
        if ModuleValidator.validate(layer, strict=False):
            kind = type(layer).__name__
            fix = next((v for k, v in _REPLACEMENTS.items() if kind.startswith(k)), None)
            refused.append(f"{path or 'the model'} ({kind}" + (f" -> {fix})" if fix else ")"))
    if refused:
        raise InputError(
            f"Opacus cannot train these layers with DP: {', '.join(refused)}; replace them "
            "(opacus.validators.ModuleValidator.fix(model) does the usual replacements)"
        )


def train_shuffled(
    module: Any,
    features: Any,
    labels: Any,
    *,
    batch_size: int,
    epochs: float,
    optimizer: Any,
    generator: Any,
    loss: Callable[[Any, Any], Any],
    device: Any = "auto",
    pieces: Callable[[Any, Any], Iterable[tuple[Any, Any]]] | None = None,
) -> float:
    """The non-private baseline: shuffled fixed-size batches, no clipping, no noise.

    ``features`` is one tensor or a tuple of them (the module's positional inputs);
    ``loss(output, labels)`` is the batch's mean loss over its records; ``pieces(features,
    labels)`` (one feature tensor) runs each batch in pieces, as :class:`RecordLosses`
    does, their losses weighted by their share of the batch.  The steps run on ``device``;
    the module is handed back on the CPU.  Returns the epochs run.
    """
    torch, _ = require_torch()
    target = resolve_device(device)
    inputs = tuple(
        x.to(target) for x in (features if isinstance(features, tuple | list) else (features,))
    )
    if pieces is not None and len(inputs) != 1:
        raise InputError("training in pieces takes one feature tensor")
    labels = labels.to(target)
    records = int(labels.shape[0])
    batch = min(batch_size, records)
    steps = math.ceil(epochs * records / batch)
    module.to(target)
    module.train()
    taken = 0
    try:
        while taken < steps:
            order = torch.randperm(records, generator=generator).to(target)
            for start in range(0, records, batch):
                if taken == steps:
                    break
                rows = order[start : start + batch]
                batch_x, batch_y = tuple(x[rows] for x in inputs), labels[rows]
                split = [(batch_x, batch_y)]
                if pieces is not None:  # one feature tensor (checked)
                    split = [((x,), y) for x, y in pieces(batch_x[0], batch_y)]
                optimizer.zero_grad()
                for piece_x, piece_y in split:
                    share = len(piece_y) / len(batch_y)
                    (loss(module(*piece_x), piece_y) * share).backward()
                optimizer.step()
                taken += 1
    finally:
        module.to("cpu")
    return taken * batch / records


def _run_opacus(
    engine: Any,
    module: Any,
    settings: DPSGDSettings,
    loader: Any,
    tensors: tuple[tuple[Any, ...], Any],
    *,
    optimizer: Any,
    noise_multiplier: float,
    noise_generator: Any,
    report: _StepReport,
) -> int:
    """Opacus's ghost clipping or per-sample hooks: any architecture Opacus supports.

    ``tensors``: (the inputs, the labels) on the training device, indexed by the checked
    loader's Poisson draws (no per-record collation).
    """
    torch, _ = require_torch()
    criterion = torch.nn.CrossEntropyLoss()
    wrapped = engine.make_private(
        module=module,
        optimizer=optimizer,
        criterion=criterion,
        data_loader=loader,
        noise_multiplier=noise_multiplier,
        max_grad_norm=settings.max_grad_norm,
        poisson_sampling=False,  # the loader is already Poisson at exactly q (checked)
        grad_sample_mode=settings.clipping,
        noise_generator=noise_generator,
    )
    if settings.clipping == "ghost":
        model, optimizer, criterion, loader = wrapped
    else:
        model, optimizer, loader = wrapped
    check_poisson_loader(loader, settings.sampling_rate)
    model.train()
    with warnings.catch_warnings():
        # ghost clipping's double backward on inputs that need no gradient: expected, harmless
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        taken = _steps(model, optimizer, criterion, loader, tensors, settings.steps, report)
    remove_hooks = getattr(model, "remove_hooks", None)
    if callable(remove_hooks):  # leave the caller's module as it was, without Opacus's hooks
        remove_hooks()
    return taken


def _steps(
    model: Any,
    optimizer: Any,
    criterion: Any,
    loader: Any,
    tensors: tuple[tuple[Any, ...], Any],
    steps: int,
    report: _StepReport,
) -> int:
    """Exactly ``steps`` optimizer steps over Poisson batches (the accounted number)."""
    torch, _ = require_torch()
    inputs, labels = tensors
    taken = 0
    while taken < steps:
        for indices in loader.batch_sampler:
            if taken == steps:
                break
            rows = torch.as_tensor(indices, dtype=torch.long, device=labels.device)
            batch_y = labels[rows]
            optimizer.zero_grad()
            if not len(rows):  # a Poisson draw of no record: the noise alone
                _no_records(optimizer)
            else:
                output = model(*(x[rows] for x in inputs))
                if output.dim() == 3:  # (records, tokens, vocabulary): one loss per sequence
                    loss = criterion(output.flatten(0, 1), batch_y.flatten(), shape=output.shape)
                else:
                    loss = criterion(output, batch_y)
                loss.backward()
            optimizer.step()
            taken += 1
            report(taken)
    return taken


def _no_records(optimizer: Any) -> None:
    """An empty Poisson batch's clipped sum, zero, where Opacus's optimizer reads it (the
    module is not run on no records: Opacus's norm samplers cannot take an empty batch);
    the step then adds the noise alone, as the accountant assumes."""
    torch, _ = require_torch()
    from opacus.optimizers import DPOptimizerFastGradientClipping

    ghost = isinstance(optimizer, DPOptimizerFastGradientClipping)
    for p in optimizer.params:
        if ghost:  # it sums .grad, the clipped sum
            p.grad = torch.zeros_like(p)
        else:  # it clips .grad_sample, one row per record
            p.grad_sample = torch.zeros((0, *p.shape), dtype=p.dtype, device=p.device)


def _run_linear_ghost(
    module: Any,
    features: Any,
    labels: Any,
    settings: DPSGDSettings,
    loader: Any,
    *,
    optimizer: Any,
    noise_multiplier: float,
    noise_generator: Any,
    secure: bool,
    report: _StepReport,
    record_losses: RecordLosses,
) -> int:
    """Our one-pass clipping for Linear networks; the noise and the step are Opacus's.

    The clipped sum goes into ``.grad`` where Opacus's ghost-clipping optimizer expects
    it, which adds N(0, (sigma C)^2) noise from the same generator (or secure mode) as
    the other clippings and divides by the expected batch size.  The batches are the
    checked loader's Poisson draws, taken as row indices (no per-record collation).
    """
    torch, _ = require_torch()
    from opacus.optimizers import DPOptimizerFastGradientClipping

    from safeshare.train.clipping import LinearGhostClipping

    class _NoiseOnClippedSum(DPOptimizerFastGradientClipping):  # type: ignore[misc]
        """Opacus's ghost-clipping optimizer, taking ``.grad`` as the clipped sum without copy."""

        def accumulate(self) -> None:  # Opacus deep-copies .grad here: 10% of a step
            for p in self.params:
                p.summed_grad = p.grad if p.summed_grad is None else p.summed_grad + p.grad

    private = _NoiseOnClippedSum(
        optimizer,
        noise_multiplier=noise_multiplier,
        max_grad_norm=settings.max_grad_norm,
        expected_batch_size=settings.batch_size,  # q x records, exactly
        loss_reduction="mean",
        generator=noise_generator,
        secure_mode=secure,
    )
    batches = loader.batch_sampler  # the UniformWithReplacementSampler check_poisson_loader saw
    module.train()
    taken = 0
    with LinearGhostClipping(module, settings.max_grad_norm) as clipping:
        while taken < settings.steps:
            for indices in batches:
                if taken == settings.steps:
                    break
                rows = torch.as_tensor(indices, dtype=torch.long, device=labels.device)
                private.zero_grad(set_to_none=True)
                if not len(rows):  # a Poisson draw of no record: the sum is zero, noise follows
                    clipping.zero()
                for index, (piece_x, piece_y) in enumerate(
                    record_losses.split(features[rows], labels[rows]) if len(rows) else ()
                ):
                    clipping.backward(
                        piece_x,
                        partial(record_losses.losses, labels=piece_y),
                        accumulate=index > 0,
                    )
                private.step()
                taken += 1
                report(taken)
    return taken


# each setting's largest value: beyond it no run is meant (a typo's extra digits), and the
# run would overflow, exhaust memory or not end
MAX_EPOCHS = 10_000
_POSITIVE = {
    "epochs": MAX_EPOCHS,
    "learning_rate": 10.0,
    "layer_learning_rate": 10.0,
    "max_grad_norm": 1e6,
}
_WHOLE = {
    "batch_size": 100_000_000,
    "hidden": 65_536,
    "width": 65_536,
    "train_layers": 64,
    "layers": 64,
    "heads": 64,
    "max_records_per_user": 1_000_000,
}


def check_settings(settings: object) -> None:
    """Refuse training settings no run could use (a settings object calls it on creation, so
    a command refuses them before any budget is spent).

    >>> from types import SimpleNamespace
    >>> check_settings(SimpleNamespace(learning_rate=float("nan")))
    Traceback (most recent call last):
    ...
    safeshare.errors.InputError: --learning-rate must be a positive, finite number of at most 10, got nan
    >>> check_settings(SimpleNamespace(hidden=2**32 + 1))
    Traceback (most recent call last):
    ...
    safeshare.errors.InputError: --hidden must be a whole number in [1, 65536], got 4294967297
    """
    for name, most in _POSITIVE.items():
        value = getattr(settings, name, 1.0)
        if isinstance(value, bool) or not isinstance(value, int | float):
            value = math.nan
        if not (math.isfinite(value) and 0 < value <= most):
            flag = "--" + name.replace("_", "-")
            raise InputError(
                f"{flag} must be a positive, finite number of at most {most:g}, "
                f"got {getattr(settings, name)!r}"
            )
    for name, largest in _WHOLE.items():
        value = getattr(settings, name, 1)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= largest:
            flag = "--" + name.replace("_", "-")
            raise InputError(f"{flag} must be a whole number in [1, {largest}], got {value!r}")


def torch_generator(seed: int | None) -> tuple[Any, bool]:
    """A ``torch.Generator`` from the caller's seed, or from the OS when ``seed`` is None."""
    torch, _ = require_torch()
    generator = torch.Generator()
    if seed is None:
        generator.manual_seed(secrets.randbits(63))
        return generator, False
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"rng must be a whole-number seed or None (secure), got {seed!r}")
    check_seed(seed)
    generator.manual_seed(seed)
    return generator, True
