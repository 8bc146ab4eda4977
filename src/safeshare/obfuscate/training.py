"""Training an obfuscation transform against a frozen model.

The loss is ``utility + weight * obfuscation``. Utility is ``1 - cos`` between the frozen
model's pooled sentence embedding of the obfuscated tokens and of the clean ones (what a
downstream classifier reads); given a classification ``head`` (fitted on clean embeddings) and
the texts' ``labels``, the head's cross-entropy on the obfuscated pooled embeddings is added
(the task loss): the transform then keeps what the task needs and may drop the rest.
Obfuscation rewards hiding the tokens from the attack that matters: the mean log-probability
that the nearest-neighbour attacker's softmax (cosine to every row of the embedding table,
sharpness :data:`ATTACK_TEMPERATURE`) gives each true token, divided by log(vocabulary) so it
lies in [-1, 0] (down), minus the mean noise level, the log-scale mapped to [0, 1] (up). An
earlier version pushed down the cosine of each obfuscated token to its clean one instead;
MiniLM's token rows are so far apart that a token at cosine 0.5 to its row is still nearest to
it, and nearest neighbour kept recovering about 90% of tokens. ``weight`` trades the two: 0
keeps utility only, larger values hide more. Every ``record_every`` steps the run records a
:class:`CurvePoint` on a fixed probe batch (utility, nearest-neighbour token recovery, noise
level), so the utility/recovery trade is visible while it trains.

Measured on SMS spam (``benchmarks/obfuscation_sms.py``, docs/obfuscate.md): with the task
loss, weight 0.5 keeps the head's F1 above the clean embeddings' while nearest neighbour finds
about 1-12% of the tokens; without it the trade-off swings widely from seed to seed.

For a causal language model (``model.causal``) the utility term is by default
:data:`~safeshare.obfuscate.utility.NEXT_TOKEN` instead: the mean KL divergence between the
model's next-token distributions on clean and on obfuscated inputs, over real positions (why:
:mod:`safeshare.obfuscate.utility`); the curve's ``utility`` is then the probe batch's top-1
next-token agreement with the clean model instead of the pooled cosine.  A task head, if
given, still adds its cross-entropy on the pooled output.

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
from safeshare.obfuscate.head import ClassificationHead
from safeshare.obfuscate.model import Batch, FrozenModel, require_torch
from safeshare.obfuscate.transform import ObfuscationTransform, torch_generator
from safeshare.obfuscate.utility import (
    NEXT_TOKEN,
    POOLED,
    check_utility,
    next_token_kl,
    top1_agreement,
)

#: sharpness of the nearest-neighbour attacker's softmax over the table (cosine logits)
ATTACK_TEMPERATURE = 20.0
#: the obfuscation weight by default: with the task loss, and with the pooled cosine alone
TASK_WEIGHT = 0.5
COSINE_WEIGHT = 0.2
#: the obfuscation weight by default with the next-token (KL) utility of a causal model
NEXT_TOKEN_WEIGHT = 1.0
#: Adam's step size by default: a causal LM's next tokens move at far smaller input shifts than
#: MiniLM's pooled cosine (at 2e-3 three steps took SmolLM2's top-1 agreement from 86% to 22%)
LEARNING_RATE = 2e-3
NEXT_TOKEN_LEARNING_RATE = 5e-4


@dataclass(frozen=True)
class CurvePoint:
    """The probe batch's state at one step: utility, NN recovery, noise level.

    ``utility``: the mean pooled cosine, or with the next-token utility the top-1 next-token
    agreement with the clean model.
    """

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
    task_loss: bool = False
    weight: float = COSINE_WEIGHT
    utility: str = POOLED


@dataclass(frozen=True)
class _Task:
    """The head as tensors, and each training text's class index."""

    weight: Any
    bias: Any
    targets: Any

    @classmethod
    def build(cls, head: ClassificationHead, labels: Sequence[object], texts: int) -> _Task:
        torch = require_torch()
        names = [str(label) for label in labels]
        if len(names) != texts:
            raise InputError(f"{len(names)} labels for {texts} texts; pass one label per text")
        index = {name: i for i, name in enumerate(head.classes)}
        unknown = sum(name not in index for name in names)
        if unknown:
            raise InputError(
                f"{unknown} label(s) are not among the head's {len(head.classes)} classes; fit "
                "the head on the same labelled texts"
            )
        return cls(
            torch.as_tensor(head.weight),
            torch.as_tensor(head.bias),
            torch.tensor([index[name] for name in names]),
        )


def _losses(
    model: FrozenModel,
    transform: ObfuscationTransform,
    batch: Batch,
    generator: object,
    task: tuple[_Task, Any] | None = None,
    utility_kind: str = POOLED,
) -> tuple[Any, Any, Any, Any]:
    """(utility loss, obfuscation loss, utility, noise level) of one batch.

    ``task``: the head and the batch's class indices, for the task loss.  ``utility_kind``:
    :data:`POOLED` (utility = mean pooled cosine) or :data:`NEXT_TOKEN` (loss = mean next-token
    KL, utility = top-1 next-token agreement).
    """
    torch = require_torch()
    mask = batch.attention_mask
    clean = model.embed_tokens(batch.input_ids)
    _, log_scale = transform.distribution(clean, mask)
    if utility_kind == NEXT_TOKEN:
        with torch.no_grad():
            reference = model.outputs(clean, mask).logits
        noisy = transform.sample(clean, mask, generator)
        out = model.outputs(noisy, mask)
        pooled = out.pooled
        utility = top1_agreement(reference, out.logits.detach(), mask)
        utility_loss = next_token_kl(reference, out.logits, mask)
    else:
        with torch.no_grad():
            target = model.pooled(clean, mask)
        noisy = transform.sample(clean, mask, generator)
        pooled = model.pooled(noisy, mask)
        utility = torch.nn.functional.cosine_similarity(pooled, target).mean()
        utility_loss = 1 - utility
    if task is not None:
        head, classes = task
        logits = pooled @ head.weight.T + head.bias
        utility_loss = utility_loss + torch.nn.functional.cross_entropy(logits, classes)
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
    return utility_loss, exposure - level, utility, level


def train_transform(
    model: FrozenModel,
    texts: Sequence[str],
    *,
    head: ClassificationHead | None = None,
    labels: Sequence[object] | None = None,
    weight: float | None = None,
    utility: str | None = None,
    steps: int = 200,
    batch_size: int = 16,
    learning_rate: float | None = None,
    record_every: int = 25,
    probe_size: int = 32,
    seed: int | None = None,
    progress: Progress | None = None,
) -> TrainingResult:
    """Train a fresh transform for ``model`` on ``texts`` (cycled in batches) for ``steps``.

    ``seed=None`` draws every initialisation and noise sample from ``secrets``-seeded
    generators; a seed makes the run reproducible.  The first ``probe_size`` texts form the
    fixed probe batch of the curve.  ``head`` (fitted on the clean ``texts``, see
    :func:`~safeshare.obfuscate.head.fit_head`) and ``labels`` (one per text) add the task loss.
    ``utility``: :data:`~safeshare.obfuscate.utility.POOLED` or
    :data:`~safeshare.obfuscate.utility.NEXT_TOKEN`; None picks the model's
    (:func:`~safeshare.obfuscate.utility.default_utility`: next-token for a causal model).
    ``weight=None``: :data:`TASK_WEIGHT` with the task loss, else :data:`COSINE_WEIGHT`
    (:data:`NEXT_TOKEN_WEIGHT` with the next-token utility).  ``learning_rate=None``:
    :data:`LEARNING_RATE`, or :data:`NEXT_TOKEN_LEARNING_RATE` with the next-token utility.
    """
    torch = require_torch()
    utility = check_utility(model, utility)
    if weight is None and utility == NEXT_TOKEN:
        weight = NEXT_TOKEN_WEIGHT
    elif weight is None:
        weight = COSINE_WEIGHT if head is None else TASK_WEIGHT
    if learning_rate is None:
        learning_rate = NEXT_TOKEN_LEARNING_RATE if utility == NEXT_TOKEN else LEARNING_RATE
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
    if (head is None) != (labels is None):
        raise InputError(
            "the task loss needs both a classification head and the texts' labels; pass both "
            "or neither"
        )
    if head is not None:
        head.check_model(model)
    task = None if head is None or labels is None else _Task.build(head, labels, len(texts))
    report = progress or no_progress
    generator, seeded = torch_generator(seed)
    order_rng, _ = torch_generator(None if seed is None else seed + 1)
    transform = ObfuscationTransform.for_model(model, seed=None if seed is None else seed + 2)
    optimizer = torch.optim.Adam(transform.parameters(), lr=learning_rate)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        probe = model.tokenize(texts[:probe_size])
        starts = range(0, len(texts), batch_size)
        batches = [model.tokenize(texts[start : start + batch_size]) for start in starts]
    classes = [None if task is None else task.targets[s : s + batch_size] for s in starts]
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
        chosen = int(order[(step - 1) % len(batches)])
        transform.network.train()
        batch_task = None if task is None else (task, classes[chosen])
        utility_loss, obfuscation, _, _ = _losses(
            model, transform, batches[chosen], generator, batch_task, utility
        )
        loss = utility_loss + weight * obfuscation
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % record_every == 0 or step == steps:
            value = float(loss.detach())
            curve.append(_probe(model, transform, probe, generator, step, value, utility))
        report("training the obfuscation transform", step / steps)
    transform.network.eval()
    return TrainingResult(transform, tuple(curve), seeded, task is not None, weight, utility)


def _probe(
    model: FrozenModel,
    transform: ObfuscationTransform,
    probe: Batch,
    generator: object,
    step: int,
    loss: float,
    utility_kind: str = POOLED,
) -> CurvePoint:
    torch = require_torch()
    transform.network.eval()
    with torch.no_grad():
        _, _, utility, level = _losses(
            model, transform, probe, generator, utility_kind=utility_kind
        )
        noisy = transform.sample(
            model.embed_tokens(probe.input_ids), probe.attention_mask, generator
        )
    found = nearest_neighbour_attack(model, noisy, probe.input_ids, probe.attention_mask)
    return CurvePoint(step, loss, float(utility), found.recovered.value, float(level))
