"""A transform's card: the attacks it was measured against and their figures.

``safeshare obfuscate attack --transform DIR --out OUT`` names the transform it measured in
``OUT/attack.json`` (``transform``: its identity, :func:`identity`, a hash of its model,
settings and weights) beside each attack's share of tokens recovered.  A server started with
``--transform DIR`` (a transform whose requests it serves) and ``--attacks OUT`` (an attack
report) knows the cards (:func:`registered`, :func:`measured`): for a request made with a
transform it cannot vouch for (not registered, never attacked, or attacked before its weights
changed) it answers with a ``Warning`` header and logs the reason once.

>>> card = TransformCard("ab" * 32, ({"attack": "learned inverter", "recovered": 0.012},))
>>> card.measured, card.strongest
(True, {'attack': 'learned inverter', 'recovered': 0.012})
>>> TransformCard("ab" * 32, ()).problem()
'transform abababababababab... has no attack figures; run safeshare obfuscate attack on it and serve with --attacks OUT'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safeshare.errors import InputError
from safeshare.output_folder import read_json

if TYPE_CHECKING:
    from safeshare.obfuscate.transform import ObfuscationTransform

REPORT = "attack.json"


def identity(transform: ObfuscationTransform) -> str:
    """The SHA-256 of ``transform``: its model's fingerprint, its settings and its weights (a
    saved and reloaded transform keeps it; retraining changes it)."""
    digest = hashlib.sha256(transform.fingerprint.encode())
    digest.update(json.dumps(asdict(transform.config), sort_keys=True).encode())
    for name, tensor in sorted(transform.network.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


@dataclass(frozen=True)
class TransformCard:
    """What a server knows of a transform: its identity and the attacks measured on it (each
    ``{"attack": name, "recovered": share of tokens}``; empty when none was run)."""

    transform: str
    attacks: tuple[dict[str, Any], ...]

    @property
    def measured(self) -> bool:
        return bool(self.attacks)

    @property
    def strongest(self) -> dict[str, Any] | None:
        """The attack that recovered the most tokens."""
        return max(self.attacks, key=lambda a: a["recovered"]) if self.attacks else None

    def problem(self) -> str | None:
        """Why a request under this transform is served with a warning (None: it is not)."""
        if self.measured:
            return None
        return (
            f"transform {self.transform[:16]}... has no attack figures; run safeshare obfuscate "
            "attack on it and serve with --attacks OUT"
        )

    def public(self) -> dict[str, Any]:
        """The card as ``/v1/info`` shows it."""
        return {"attacks": list(self.attacks), "strongest": self.strongest}


def unvouched(transform: str | None, cards: dict[str, TransformCard]) -> str | None:
    """Why a request made with ``transform`` (its identity, if the request names one) is served
    with a warning by a server that knows ``cards`` (None: its card has attack figures).

    >>> unvouched(None, {})[:33]
    'the request names no transform, s'
    """
    if transform is None:
        return (
            "the request names no transform, so the attacks measured on it are unknown; send "
            "it with safeshare's ObfuscatingClient"
        )
    card = cards.get(transform)
    if card is None:
        return (
            f"transform {transform[:16]}... is not registered with this server, so the attacks "
            "measured on it are unknown; serve with --transform DIR for its folder"
        )
    return card.problem()


def registered(transform: ObfuscationTransform) -> TransformCard:
    """A transform the server serves, with no figures yet (:func:`with_figures` adds them)."""
    return TransformCard(identity(transform), ())


def measured(folder: str | Path) -> TransformCard:
    """The card an attack report (``attack.json`` in ``folder``) gives the transform it measured:
    its identity and each attack's recovery on the transform's own outputs."""
    path = Path(folder) / REPORT
    record = read_json(path, "an obfuscation attack report")
    try:
        attacks = tuple(
            {"attack": str(row["attack"]), "recovered": float(row["recovered"])}
            for row in record["attacks"]
            if row["input"] == "obfuscated"
        )
        transform = str(record["transform"])
    except (KeyError, TypeError, ValueError):
        raise InputError(
            f"{path} names no transform or lacks the attacks' figures; run safeshare obfuscate "
            "attack again"
        ) from None
    return TransformCard(transform, attacks)


def with_figures(
    registry: Sequence[TransformCard], reports: Sequence[TransformCard]
) -> list[TransformCard]:
    """The registered transforms' cards, each with the figures of a report on these very weights
    (a report on other weights vouches for nothing served here)."""
    figures = {card.transform: card for card in reports}
    return [figures.get(card.transform, card) for card in registry]
