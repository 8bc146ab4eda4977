"""Training an obfuscation transform against a frozen model.

The loss is ``utility + weight * obfuscation``.  Utility is ``1 - cos`` between the frozen
model's pooled sentence embedding of the obfuscated tokens and of the clean ones (what a
downstream classifier reads).  Obfuscation rewards hiding the tokens from the attack that
matters: the mean log-probability that the nearest-neighbour attacker's softmax (cosine to
every row of the embedding table, sharpness :data:`ATTACK_TEMPERATURE`) gives each true
token, divided by log(vocabulary) so it lies in [-1, 0] (down), minus the mean noise level,
the log-scale mapped to [0, 1] (up).  An earlier version pushed down the cosine of each
obfuscated token to its clean one instead; MiniLM's token rows are so far apart that a token
at cosine 0.5 to its row is still nearest to it, and nearest neighbour kept recovering about
90% of tokens.  ``weight`` trades the two: 0 keeps utility only, larger values hide more.
Every ``record_every`` steps the run records a :class:`CurvePoint` on a fixed probe batch
(utility, nearest-neighbour token recovery, noise level), so the utility/recovery trade is
visible while it trains.

>>> point = CurvePoint(step=10, loss=0.5, utility=0.97, recovery=0.25, noise_level=0.6)
>>> point.recovery
0.25
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from safeshare._progress import Progress, no_progress
from safeshare.errors import InputError
from safeshare.obfuscate.attacks import nearest_neighbour_attack
from safeshare.obfuscate.model import Batch, FrozenModel, require_torch
from safeshare.obfuscate.transform import ObfuscationTransform, torch_generator

#: sharpness of the nearest-neighbour attacker's softmax over the table (cosine logits)
ATTACK_TEMPERATURE = 20.0


@dataclass(frozen=True)
class CurvePoint:
    """The probe batch's state at one step: mean pooled cosine, NN recovery, noise level."""

    step: int
    loss: float
    utility: float
    recovery: float
    noise_level: float


@dataclass(frozen=True)
class TrainingResult:
    """The trained transform, its curve, and whether its randomness was seeded."""

    transform: ObfuscationTransform
    curve: tuple[CurvePoint, ...]
    seeded: bool


def _losses(
    model: FrozenModel, transform: ObfuscationTransform, batch: Batch, generator: object
) -> tuple[Any, Any, Any, Any]:
    torch = require_torch()
    mask = batch.attention_mask
    clean = model.embed_tokens(batch.input_ids)
    with torch.no_grad():
        target = model.pooled(clean, mask)
    _, log_scale = transform.distribution(clean, mask)
    noisy = transform.sample(clean, mask, generator)
    utility = torch.nn.functional.cosine_similarity(model.pooled(noisy, mask), target).mean()
    weights = mask.to(clean.dtype)
    real = mask.bool()
    rows = torch.nn.functional.normalize(model.table, dim=-1)
    cosine = torch.nn.functional.normalize(noisy[real], dim=-1) @ rows.T
    found = torch.log_softmax(ATTACK_TEMPERATURE * cosine, dim=-1)
    # in [-1, 0]: 0 when the attacker is sure of the true token, -1 when it gives it 1 / vocab
    exposure = found.gather(1, batch.input_ids[real][:, None]).mean() / math.log(rows.shape[0])
    config = transform.config
    level = (log_scale - config.min_log_scale) / (config.max_log_scale - config.min_log_scale)
    level = (level.mean(dim=-1) * weights).sum() / weights.sum()
    return 1 - utility, exposure - level, utility, level


def train_transform(
    model: FrozenModel,
    texts: Sequence[str],
    *,
    weight: float = 0.2,
    steps: int = 200,
    batch_size: int = 16,
    learning_rate: float = 2e-3,
    record_every: int = 25,
    probe_size: int = 32,
    seed: int | None = None,
    progress: Progress | None = None,
) -> TrainingResult:
    """Train a fresh transform for ``model`` on ``texts`` (cycled in batches) for ``steps``.

    ``seed=None`` draws every initialisation and noise sample from ``secrets``-seeded
    generators; a seed makes the run reproducible.  The first ``probe_size`` texts form the
    fixed probe batch of the curve.
    """
    torch = require_torch()
    if not weight >= 0 or math.isinf(weight):
        raise InputError(f"weight must be a finite number >= 0, not {weight!r}")
    if steps < 1 or batch_size < 1 or record_every < 1:
        raise InputError(
            f"steps={steps}, batch_size={batch_size}, record_every={record_every}: each must be "
            ">= 1"
        )
    texts = list(texts)
    if len(texts) < 2:
        raise InputError(f"need at least 2 training texts, got {len(texts)}")
    report = progress or no_progress
    generator, seeded = torch_generator(seed)
    order_rng, _ = torch_generator(None if seed is None else seed + 1)
    transform = ObfuscationTransform.for_model(model, seed=None if seed is None else seed + 2)
    optimizer = torch.optim.Adam(transform.parameters(), lr=learning_rate)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        probe = model.tokenize(texts[:probe_size])
        batches = [
            model.tokenize(texts[start : start + batch_size])
            for start in range(0, len(texts), batch_size)
        ]
    truncated = sum(batch.truncated for batch in batches)
    if truncated:
        warnings.warn(
            f"{truncated} of {len(texts)} training texts are longer than {model.max_length} "
            "tokens and were truncated to it; pass a larger max_length or shorter texts",
            UserWarning,
            stacklevel=2,
        )
    del caught
    curve: list[CurvePoint] = []
    order = torch.randperm(len(batches), generator=order_rng)
    for step in range(1, steps + 1):
        batch = batches[int(order[(step - 1) % len(batches)])]
        transform.network.train()
        utility_loss, obfuscation, _, _ = _losses(model, transform, batch, generator)
        loss = utility_loss + weight * obfuscation
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % record_every == 0 or step == steps:
            curve.append(_probe(model, transform, probe, generator, step, float(loss.detach())))
        report("training the obfuscation transform", step / steps)
    transform.network.eval()
    return TrainingResult(transform, tuple(curve), seeded)


def _probe(
    model: FrozenModel,
    transform: ObfuscationTransform,
    probe: Batch,
    generator: object,
    step: int,
    loss: float,
) -> CurvePoint:
    torch = require_torch()
    transform.network.eval()
    with torch.no_grad():
        _, _, utility, level = _losses(model, transform, probe, generator)
        noisy = transform.sample(
            model.embed_tokens(probe.input_ids), probe.attention_mask, generator
        )
    found = nearest_neighbour_attack(model, noisy, probe.input_ids, probe.attention_mask)
    return CurvePoint(step, loss, float(utility), found.recovered.value, float(level))
