"""Training an obfuscation transform against a frozen model.

The loss is ``utility + weight * obfuscation``. Utility is ``1 - cos`` between the frozen
model's pooled sentence embedding of the obfuscated tokens and of the clean ones (what a
downstream classifier reads); given a classification ``head`` (fitted on clean embeddings) and
the texts' ``labels``, the head's cross-entropy on the obfuscated pooled embeddings is added
(the task loss): the transform then keeps what the task needs and may drop the rest.
Obfuscation rewards hiding the tokens from an attacker: how surely it names each true token
(down), minus the mean noise level, the log-scale mapped to [0, 1] (up). The attacker is, by
default, an inversion network trained **alongside** the transform
(:class:`~safeshare.obfuscate.inversion.Adversary`: two of its steps on fresh obfuscations of
the batch before each of the transform's), so the transform cannot hide from one fixed attack
only; ``attacker="nearest-neighbour"`` trains against the fixed nearest-neighbour softmax
(cosine to every table row, sharpness :data:`ATTACK_TEMPERATURE`), which earlier versions did
and which a learned inverter trained afterwards undoes (movie-review sentences, weight 0.5, seed
0, 60 steps: a fresh inverter read back 71% of the tokens, against 13% when the transform trained
alongside an adversary, and 3.3% after 150 steps; ``benchmarks/obfuscation_frontier.py``).
``weight`` trades the two: 0 keeps utility only, larger values hide more.  Given a
``utility_budget`` instead, the weight is the starting point of a dual ascent that holds the
utility loss near the budget: after each step the weight grows while the batch's utility loss is
below the budget and shrinks while it is above (by ``exp(-BUDGET_RATE * (loss / budget - 1))``,
the excess capped at 1), and a step whose batch spends more than the budget trains on the
utility alone (the switching rule of constrained optimization), so the user states what
utility they can spend (for a causal model: the next-token KL in nats) and training finds the
weight that spends it.  Every
``record_every`` steps the run records a :class:`CurvePoint` on a fixed probe batch (utility,
nearest-neighbour token recovery, the adversary's recovery, noise level), so the
utility/recovery trade is visible while it trains.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from safeshare._progress import Progress, no_progress
from safeshare.errors import InputError
from safeshare.obfuscate.attacks import nearest_neighbour_attack, recovery
from safeshare.obfuscate.head import ClassificationHead
from safeshare.obfuscate.inversion import ATTACK_NAME, Adversary
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
#: the privacy term's attackers: an inverter trained alongside the transform (the default), or
#: the fixed nearest-neighbour softmax (what earlier versions trained against)
LEARNED_ATTACKER = "learned-inverter"
NEAREST_ATTACKER = "nearest-neighbour"
ATTACKERS = (LEARNED_ATTACKER, NEAREST_ATTACKER)
#: the obfuscation weight by default: with the task loss, and with the pooled cosine alone
TASK_WEIGHT = 0.5
COSINE_WEIGHT = 0.2
#: the obfuscation weight by default with the next-token (KL) utility of a causal model
NEXT_TOKEN_WEIGHT = 1.0
#: Adam's step size by default: a causal LM's next tokens move at far smaller input shifts than
#: MiniLM's pooled cosine (at 2e-3 three steps took SmolLM2's top-1 agreement from 86% to 22%)
LEARNING_RATE = 2e-3
NEXT_TOKEN_LEARNING_RATE = 5e-4
#: how fast a utility budget moves the weight: the log-weight's step per unit of relative excess
BUDGET_RATE = 0.05
#: the weight a utility budget may reach, at least and at most
BUDGET_WEIGHTS = (1e-3, 1e3)


@dataclass(frozen=True)
class CurvePoint:
    """The probe batch's state at one step: utility, NN recovery, noise level.

    ``utility``: the mean pooled cosine, or with the next-token utility the top-1 next-token
    agreement with the clean model.  ``inverter_recovery``: the share of the probe's tokens the
    adversary trained alongside names (None when training against nearest neighbour); it sees
    the probe's texts, so it runs above an attacker from scratch on unseen texts.  ``weight``:
    the obfuscation weight the step trained with (it moves under a utility budget);
    ``utility_loss``: the probe's utility loss, what a budget holds (next-token KL, or
    ``1 - cos`` plus the task's cross-entropy).
    """

    step: int
    loss: float
    utility: float
    recovery: float
    noise_level: float
    inverter_recovery: float | None = None
    weight: float | None = None
    utility_loss: float | None = None


@dataclass(frozen=True)
class TrainingResult:
    """The trained transform, its curve, and whether its randomness was seeded.

    ``weight``: the obfuscation weight of the last step (under a ``utility_budget``, where the
    dual ascent left it).
    """

    transform: ObfuscationTransform
    curve: tuple[CurvePoint, ...]
    seeded: bool
    task_loss: bool = False
    weight: float = COSINE_WEIGHT
    utility: str = POOLED
    attacker: str = LEARNED_ATTACKER
    utility_budget: float | None = None


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


def nearest_exposure(model: FrozenModel, noisy: Any, batch: Batch) -> Any:
    """How surely the nearest-neighbour attacker's softmax (cosine to every table row, sharpness
    :data:`ATTACK_TEMPERATURE`) names each true token: the mean log-probability over
    log(vocabulary), in [-1, 0]; 0 when it is sure of every token, -1 at 1 / vocabulary."""
    torch = require_torch()
    real = batch.attention_mask.bool()
    rows = torch.nn.functional.normalize(model.table, dim=-1)
    cosine = torch.nn.functional.normalize(noisy[real], dim=-1) @ rows.T
    found = torch.log_softmax(ATTACK_TEMPERATURE * cosine, dim=-1)
    return found.gather(1, batch.input_ids[real][:, None]).mean() / math.log(rows.shape[0])


#: ``exposure(noisy, batch) -> tensor``, larger when the attacker names more tokens: the
#: privacy term's attacker
Exposure = Callable[[Any, Batch], Any]


def _losses(
    model: FrozenModel,
    transform: ObfuscationTransform,
    batch: Batch,
    generator: object,
    task: tuple[_Task, Any] | None = None,
    utility_kind: str = POOLED,
    exposure: Exposure | None = None,
) -> tuple[Any, Any, Any, Any]:
    """(utility loss, obfuscation loss, utility, noise level) of one batch.

    ``task``: the head and the batch's class indices, for the task loss.  ``utility_kind``:
    :data:`POOLED` (utility = mean pooled cosine) or :data:`NEXT_TOKEN` (loss = mean next-token
    KL, utility = top-1 next-token agreement).  ``exposure``: the attacker the obfuscation term
    hides from (by default the nearest-neighbour one, :func:`nearest_exposure`).
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
    found = (exposure or (lambda sent, b: nearest_exposure(model, sent, b)))(noisy, batch)
    config = transform.config
    level = (log_scale - config.min_log_scale) / (config.max_log_scale - config.min_log_scale)
    level = (level.mean(dim=-1) * weights).sum() / weights.sum()
    return utility_loss, found - level, utility, level


MAX_STEPS = 1_000_000  # steps (and texts a batch) one training run takes at most


def train_transform(
    model: FrozenModel,
    texts: Sequence[str],
    *,
    head: ClassificationHead | None = None,
    labels: Sequence[object] | None = None,
    weight: float | None = None,
    utility: str | None = None,
    utility_budget: float | None = None,
    transform: ObfuscationTransform | None = None,
    steps: int = 200,
    batch_size: int = 16,
    learning_rate: float | None = None,
    record_every: int = 25,
    probe_size: int = 32,
    attacker: str = LEARNED_ATTACKER,
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
    ``utility_budget``: hold the utility loss near this value (next-token KL in nats, or
    ``1 - cos`` plus the task's cross-entropy) by moving the weight, which starts at ``weight``.
    ``transform``: train this one (made for ``model``, e.g. by
    :meth:`~safeshare.obfuscate.transform.ObfuscationTransform.for_model` with a lower noise
    ceiling, or trained before) instead of a fresh one; it is trained in place.
    """
    torch = require_torch()
    utility = check_utility(model, utility)
    if attacker not in ATTACKERS:
        raise InputError(f"attacker {attacker!r} is not one of {', '.join(ATTACKERS)}")
    weight = _starting_weight(weight, utility, head is not None, utility_budget)
    if learning_rate is None:
        learning_rate = NEXT_TOKEN_LEARNING_RATE if utility == NEXT_TOKEN else LEARNING_RATE
    for name, value, most in (
        ("steps (--steps)", steps, MAX_STEPS),
        ("batch_size (--batch-size)", batch_size, MAX_STEPS),
        ("record_every", record_every, None),
    ):
        if not (value >= 1 and (most is None or value <= most)):
            limit = f" and at most {most:,}" if most is not None else ""
            raise InputError(f"{name} is {value}; it must be at least 1{limit}")
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
    if transform is None:
        transform = ObfuscationTransform.for_model(model, seed=None if seed is None else seed + 2)
    transform.check_model(model)
    optimizer = torch.optim.Adam(transform.parameters(), lr=learning_rate)
    adversary = None
    if attacker == LEARNED_ATTACKER:
        adversary = Adversary(model, seed=None if seed is None else seed + 3)
    data = _Batches.of(model, texts, task, batch_size, probe_size)
    run = _Run(model, transform, optimizer, adversary, data, generator, utility)
    curve: list[CurvePoint] = []
    order = torch.randperm(len(data.batches), generator=order_rng)
    for step in range(1, steps + 1):
        loss, spent = run.step(int(order[(step - 1) % len(data.batches)]), weight, utility_budget)
        if step % record_every == 0 or step == steps:
            curve.append(run.probe(step, loss, weight))
        if utility_budget is not None:
            weight = spend_budget(weight, spent, utility_budget)
        report("training the obfuscation transform", step / steps)
    transform.network.eval()
    return TrainingResult(
        transform,
        tuple(curve),
        seeded,
        task is not None,
        weight,
        utility,
        attacker,
        utility_budget,
    )


def _starting_weight(
    weight: float | None, utility: str, has_task: bool, budget: float | None
) -> float:
    """The privacy weight training starts from (checked; the default when ``None``), kept
    within :data:`BUDGET_WEIGHTS` under a ``budget`` (which is checked too)."""
    if weight is None and utility == NEXT_TOKEN:
        weight = NEXT_TOKEN_WEIGHT
    elif weight is None:
        weight = TASK_WEIGHT if has_task else COSINE_WEIGHT
    if not weight >= 0 or math.isinf(weight):
        raise InputError(f"weight must be a finite number >= 0, not {weight!r}")
    if budget is None:
        return weight
    if not 0 < budget < math.inf:
        raise InputError(
            f"utility budget must be a finite number > 0 (for a causal model the next-token KL "
            f"in nats, e.g. 2), not {budget!r}"
        )
    return min(max(weight, BUDGET_WEIGHTS[0]), BUDGET_WEIGHTS[1])


@dataclass(frozen=True)
class _Batches:
    """The training texts tokenized once: the batches training cycles through, the fixed probe
    batch of the curve, and each one's slice of the task's targets (None without a task)."""

    batches: list[Batch]
    targets: list[Any]
    probe: Batch
    probe_task: tuple[_Task, Any] | None
    task: _Task | None

    @classmethod
    def of(
        cls,
        model: FrozenModel,
        texts: list[str],
        task: _Task | None,
        batch_size: int,
        probe_size: int,
    ) -> _Batches:
        """Tokenize ``texts`` in batches (warning once, with the count, when some are cut to
        the model's length) and the first ``probe_size`` as the probe."""
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")  # (the per-call warnings are summed up below)
            probe = model.tokenize(texts[:probe_size])
            starts = range(0, len(texts), batch_size)
            batches = [model.tokenize(texts[start : start + batch_size]) for start in starts]
        truncated = sum(batch.truncated for batch in batches)
        if truncated:
            warnings.warn(
                f"{truncated} of {len(texts)} training texts are longer than "
                f"{model.max_length} tokens and were truncated to it; pass a larger max_length "
                "or shorter texts",
                UserWarning,
                stacklevel=3,
            )
        targets = [None if task is None else task.targets[s : s + batch_size] for s in starts]
        probe_task = None if task is None else (task, task.targets[: len(probe.input_ids)])
        return cls(batches, targets, probe, probe_task, task)

    def task_of(self, index: int) -> tuple[_Task, Any] | None:
        """Batch ``index``'s task and targets, for the loss (None without a task)."""
        return None if self.task is None else (self.task, self.targets[index])


def spend_budget(weight: float, utility_loss: float, budget: float) -> float:
    """The next weight of a dual ascent holding ``utility_loss`` near ``budget``.

    >>> round(spend_budget(1.0, 1.0, 2.0), 4)  # under budget: hide more
    1.0253
    >>> spend_budget(1.0, 2.0, 2.0)  # on budget: stay
    1.0
    """
    excess = min(utility_loss / budget - 1, 1.0)
    low, high = BUDGET_WEIGHTS
    return min(max(weight * math.exp(-BUDGET_RATE * excess), low), high)


@dataclass(frozen=True)
class _Run:
    """One training run: the frozen model, the transform and its optimizer, the adversary
    trained alongside (None: the nearest-neighbour exposure), the batches, the noise."""

    model: FrozenModel
    transform: ObfuscationTransform
    optimizer: Any
    adversary: Adversary | None
    data: _Batches
    generator: object
    utility: str

    def step(self, index: int, weight: float, budget: float | None) -> tuple[float, float]:
        """One update on batch ``index`` (the adversary's first): the loss and the utility loss
        it spent (over ``budget``, the step trains on the utility alone)."""
        self.transform.network.train()
        batch = self.data.batches[index]
        exposure = None if self.adversary is None else self._adversarial(self.adversary, batch)
        utility_loss, obfuscation, _, _ = _losses(
            self.model, self.transform, batch, self.generator, self.data.task_of(index),
            self.utility, exposure,
        )  # fmt: skip
        spent = float(utility_loss.detach())
        over = budget is not None and spent > budget
        loss = utility_loss if over else utility_loss + weight * obfuscation
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        return float(loss.detach()), spent

    def _adversarial(self, adversary: Adversary, batch: Batch) -> Exposure:
        """Update ``adversary`` on fresh obfuscations of ``batch``; its exposure for the step."""
        torch = require_torch()
        generator = self.generator
        with torch.no_grad():
            clean = self.model.embed_tokens(batch.input_ids)
        adversary.learn(
            lambda: self.transform.sample(clean, batch.attention_mask, generator), batch, generator
        )
        return lambda sent, b: adversary.exposure(sent, b, generator)

    def probe(self, step: int, loss: float, weight: float) -> CurvePoint:
        """The curve's point at ``step`` (with its ``loss``) on the probe batch: utility, noise
        level and recoveries (with the task, the utility loss holds its cross-entropy too, as
        the training loss does)."""
        torch = require_torch()
        model, transform, probe = self.model, self.transform, self.data.probe
        transform.network.eval()
        with torch.no_grad():
            utility_loss, _, utility, level = _losses(
                model, transform, probe, self.generator, self.data.probe_task, self.utility
            )
            noisy = transform.sample(
                model.embed_tokens(probe.input_ids), probe.attention_mask, self.generator
            )
        ids, mask = probe.input_ids, probe.attention_mask
        found = nearest_neighbour_attack(model, noisy, ids, mask)
        inverted = None
        if self.adversary is not None:
            guessed = self.adversary.inverter.tokens(noisy, mask)
            inverted = recovery(model, guessed, ids, mask, ATTACK_NAME).recovered.value
        return CurvePoint(
            step,
            loss,
            float(utility),
            found.recovered.value,
            float(level),
            inverted,
            utility_loss=float(utility_loss),
            weight=weight,
        )
