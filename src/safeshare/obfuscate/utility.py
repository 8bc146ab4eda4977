"""What "keeping utility" means for the frozen model: pooled cosine, or next-token distributions.

An encoder's output is a sentence embedding, so its utility is the cosine between the pooled
outputs of obfuscated and clean inputs (:data:`POOLED`).  A causal language model's output is a
**next-token distribution at every position**, so its utility (:data:`NEXT_TOKEN`, chosen by
:func:`default_utility` for a causal :class:`~safeshare.obfuscate.model.FrozenModel`) is the
mean, over real positions, of ``KL(p_clean || p_obfuscated)`` between the model's next-token
distributions on clean and on obfuscated inputs.

Why KL of the next-token distributions rather than ``1 - cos`` of the last hidden states:
the distribution is what every use of a causal LM consumes (generation samples from it,
scoring and classification by continuation read its log-probabilities), and
``KL(p_clean || p_obfuscated)`` is exactly the extra log-loss, in nats per token, of predicting
with the obfuscated input where the clean one would have been used: the distillation loss with
the clean model as teacher.  It weighs each hidden direction by how much it moves the
prediction (through the final norm and the language-model head), while a hidden-state cosine
treats all directions alike and has no unit a user can read.  It costs a vocabulary-sized
softmax per position (49,152 for SmolLM2), affordable at the lengths obfuscation trains on.
Reported beside it: :class:`NextTokenUtility` (top-1 agreement: the share of real positions
where the obfuscated input's most likely next token is the clean input's, and the mean KL).

>>> NextTokenUtility(agreement=0.75, kl=0.4, positions=8).to_dict()["next_token_agreement"]
0.75
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from safeshare.errors import InputError
from safeshare.obfuscate.model import FrozenModel, require_torch

POOLED = "pooled-cosine"
NEXT_TOKEN = "next-token-kl"
UTILITIES = (POOLED, NEXT_TOKEN)


def default_utility(model: FrozenModel) -> str:
    """:data:`NEXT_TOKEN` for a causal language model, else :data:`POOLED`."""
    return NEXT_TOKEN if model.causal else POOLED


def check_utility(model: FrozenModel, utility: str | None) -> str:
    """The utility to use: ``utility``, or the model's default; refuse an unknown one."""
    if utility is None:
        return default_utility(model)
    if utility not in UTILITIES:
        raise InputError(f"utility must be one of {list(UTILITIES)}, not {utility!r}")
    if utility == NEXT_TOKEN and not model.causal:
        raise InputError(
            f"utility {NEXT_TOKEN!r} needs a causal language model (next-token logits); this "
            f"model is an encoder: use {POOLED!r}"
        )
    return utility


def next_token_kl(clean_logits: Any, logits: Any, attention_mask: Any) -> Any:
    """Mean over real positions of ``KL(softmax(clean_logits) || softmax(logits))`` (nats)."""
    torch = require_torch()
    target = torch.log_softmax(clean_logits.float(), dim=-1)
    guess = torch.log_softmax(logits.float(), dim=-1)
    kl = torch.nn.functional.kl_div(guess, target, log_target=True, reduction="none").sum(-1)
    weights = attention_mask.to(kl.dtype)
    return (kl * weights).sum() / weights.sum().clamp(min=1.0)


def top1_agreement(clean_logits: Any, logits: Any, attention_mask: Any) -> Any:
    """The share of real positions whose most likely next token is the clean input's."""
    same = (clean_logits.argmax(dim=-1) == logits.argmax(dim=-1)).to(clean_logits.dtype)
    weights = attention_mask.to(same.dtype)
    return (same * weights).sum() / weights.sum().clamp(min=1.0)


@dataclass(frozen=True)
class NextTokenUtility:
    """Next-token utility of obfuscated inputs against clean ones, over ``positions``."""

    agreement: float
    kl: float
    positions: int

    def to_dict(self) -> dict[str, Any]:
        """Numbers only."""
        return {
            "next_token_agreement": self.agreement,
            "next_token_kl": self.kl,
            "next_token_positions": self.positions,
        }

    def __str__(self) -> str:
        return (
            f"next-token top-1 agreement {self.agreement:.1%}, mean KL {self.kl:.3f} nats over "
            f"{self.positions} positions"
        )


def next_token_utility(
    model: FrozenModel, clean: Any, obfuscated: Any, attention_mask: Any, *, chunk: int = 8
) -> NextTokenUtility:
    """Compare the causal model's next-token distributions on ``obfuscated`` and ``clean``
    embeddings (``(n, length, dim)`` each), ``chunk`` texts a forward pass (logits are
    vocabulary-sized, so whole batches would not fit in memory)."""
    torch = require_torch()
    if not model.causal:
        raise InputError("next-token utility needs a causal language model, not an encoder")
    agree = kl = 0.0
    positions = 0
    with torch.no_grad():
        for start in range(0, int(clean.shape[0]), chunk):
            part = slice(start, start + chunk)
            mask = attention_mask[part]
            reference = model.outputs(clean[part], mask).logits
            logits = model.outputs(obfuscated[part], mask).logits
            count = int(mask.sum())
            agree += float(top1_agreement(reference, logits, mask)) * count
            kl += float(next_token_kl(reference, logits, mask)) * count
            positions += count
    if positions == 0:
        raise InputError("no real token positions to compare; pass non-empty texts")
    return NextTokenUtility(agree / positions, kl / positions, positions)
