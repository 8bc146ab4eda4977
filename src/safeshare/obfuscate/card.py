"""A transform's card: the attacks it was measured against and their figures.

``safeshare obfuscate attack --transform DIR`` writes ``DIR/attacks.json`` beside
``transform.json``: the transform's identity (:func:`identity`: a hash of its model, settings
and weights) and, per attack, the share of tokens it recovered from the transform's outputs
(with the Gaussian baselines' and the planted-PII figures kept in ``attack.json``).  A server
started with ``--transform DIR`` reads the cards (:func:`read_card`) and, for a request whose
transform it cannot vouch for (not registered, no figures, or figures of other weights),
answers with a ``Warning`` header and logs the reason once.

>>> card = TransformCard("ab" * 32, ({"attack": "learned inverter", "recovered": 0.012},))
>>> card.measured, card.strongest
(True, {'attack': 'learned inverter', 'recovered': 0.012})
>>> TransformCard("ab" * 32, ()).problem()
'transform abababababababab... has no attack figures; run safeshare obfuscate attack --transform DIR on its folder'
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from safeshare.errors import InputError
from safeshare.output_folder import read_json

if TYPE_CHECKING:
    from safeshare.obfuscate.transform import ObfuscationTransform

ATTACKS = "attacks.json"
ATTACKS_FORMAT = "safeshare-obfuscation-attacks/1"


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
            "attack --transform DIR on its folder"
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


def write_attacks(
    folder: str | Path, transform: ObfuscationTransform, report: dict[str, Any]
) -> Path:
    """Record ``report`` (an attack report's JSON form) in the transform's folder as its card:
    the transform's identity and each attack's recovery on its outputs."""
    rows = [
        {"attack": row["attack"], "recovered": row["recovered"], "tokens": row["tokens"]}
        for row in report["attacks"]
        if row["input"] == "obfuscated"
    ]
    card = {
        "format": ATTACKS_FORMAT,
        "transform": identity(transform),
        "model_fingerprint": report["model_fingerprint"],
        "texts": report["texts"],
        "attacks": rows,
        "pii": report["pii"],
    }
    path = Path(folder) / ATTACKS
    staged = path.with_name(f".{ATTACKS}.tmp")
    staged.write_text(json.dumps(card, indent=2), encoding="utf-8")
    staged.replace(path)  # (all or nothing)
    return path


def read_card(folder: str | Path, transform: ObfuscationTransform) -> TransformCard:
    """The card of the transform saved in ``folder``: its attack figures when ``attacks.json``
    holds some for these very weights, else none."""
    key = identity(transform)
    path = Path(folder) / ATTACKS
    if not path.is_file():
        return TransformCard(key, ())
    record = read_json(path, f"a {ATTACKS_FORMAT} file")
    if record.get("format") != ATTACKS_FORMAT:
        raise InputError(f"{path} is not a {ATTACKS_FORMAT} file (format {record.get('format')!r})")
    if record.get("transform") != key:  # measured on weights the folder no longer holds
        return TransformCard(key, ())
    try:
        attacks = tuple(
            {"attack": str(a["attack"]), "recovered": float(a["recovered"])}
            for a in record["attacks"]
        )
    except (KeyError, TypeError, ValueError):
        raise InputError(
            f"{path} lacks the attacks' figures; run safeshare obfuscate attack --transform "
            f"{Path(folder)} again"
        ) from None
    return TransformCard(key, attacks)
