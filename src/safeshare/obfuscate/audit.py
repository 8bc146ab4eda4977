"""Attack a released transform on a set of texts: what ``safeshare obfuscate attack`` reports.

:func:`attack_transform` obfuscates the texts with the transform (as a client would), then
runs the nearest-neighbour attack and the BeamClean-style attack, whose noise estimate and
bigram prior come from **public** texts only (the attacker's side knowledge: never the
evaluated texts).  The clean embeddings are attacked too (nearest neighbour), to show the
attack works.  The
:class:`AttackReport` holds token recoveries with Wilson intervals and the utility kept (mean
cosine between the pooled outputs of obfuscated and clean inputs); it never holds a text.

>>> print(GUARANTEE.split(":")[0])
empirical, not formal
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from safeshare.errors import InputError
from safeshare.obfuscate.attacks import (
    NoiseEstimate,
    TokenRecovery,
    beam_attack,
    nearest_neighbour_attack,
)
from safeshare.obfuscate.model import FrozenModel, require_torch
from safeshare.obfuscate.prior import BigramPrior
from safeshare.obfuscate.transform import ObfuscationTransform, torch_generator

REPORT_FORMAT = "safeshare-obfuscation-attack/1"
GUARANTEE = (
    "empirical, not formal: the share of tokens these attacks recover from the obfuscated "
    "embeddings; a stronger attacker may recover more"
)


@dataclass(frozen=True)
class AttackReport:
    """Token recovery of each attack on obfuscated (and clean) embeddings, and utility kept."""

    texts: int
    public_texts: int
    fingerprint: str
    utility: float
    obfuscated: tuple[TokenRecovery, ...]
    clean: tuple[TokenRecovery, ...]
    seeded: bool

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``attack.json``): numbers only, no text."""

        def row(found: TokenRecovery, source: str) -> dict[str, Any]:
            low, high = found.recovered.interval
            return {
                "attack": found.attack,
                "input": source,
                "recovered": found.recovered.value,
                "interval": [low, high],
                "tokens": found.recovered.trials,
            }

        return {
            "format": REPORT_FORMAT,
            "model_fingerprint": self.fingerprint,
            "texts": self.texts,
            "public_texts": self.public_texts,
            "utility_cosine": self.utility,
            "attacks": [row(f, "obfuscated") for f in self.obfuscated]
            + [row(f, "clean") for f in self.clean],
            "secure_noise": not self.seeded,
            "guarantee": GUARANTEE,
        }

    def markdown(self) -> str:
        """A short report: one line per attack, the utility, and what the guarantee is."""
        lines = [
            "# Obfuscation attack report",
            "",
            f"{self.texts} texts attacked; noise estimate and language-model prior from "
            f"{self.public_texts} public texts. Utility kept: mean cosine {self.utility:.3f} "
            "between the model's outputs on obfuscated and clean inputs.",
            "",
            "| attack | input | tokens recovered | 95% interval |",
            "|---|---|---|---|",
        ]
        for source, rows in (("obfuscated", self.obfuscated), ("clean", self.clean)):
            for found in rows:
                low, high = found.recovered.interval
                lines.append(
                    f"| {found.attack} | {source} | {found.recovered.value:.1%} of "
                    f"{found.recovered.trials} | {low:.1%}-{high:.1%} |"
                )
        lines += ["", f"Guarantee: {GUARANTEE}."]
        if self.seeded:
            lines.append("The obfuscation noise was seeded (reproducible, not secure).")
        return "\n".join(lines) + "\n"


def attack_transform(
    model: FrozenModel,
    transform: ObfuscationTransform,
    texts: Sequence[str],
    public: Sequence[str],
    *,
    beam: int = 8,
    max_public: int = 2000,
    seed: int | None = None,
) -> AttackReport:
    """Obfuscate ``texts`` with ``transform`` and attack them; ``public`` trains the attacker."""
    torch = require_torch()
    transform.check_model(model)
    texts, public = list(texts), [p for p in public if p.strip()][:max_public]
    if not texts:
        raise InputError("no texts to attack; pass a data file with at least one text")
    if len(public) < 2:
        raise InputError(
            f"need at least 2 public texts for the attacker's noise estimate and prior, got "
            f"{len(public)}; pass a public text file (one text per line)"
        )
    if beam < 1:
        raise InputError(f"beam must be >= 1, not {beam!r}")
    generator, seeded = torch_generator(seed)
    batch = model.tokenize(texts)
    reference = model.tokenize(public)
    with torch.no_grad():
        clean = model.embed_tokens(batch.input_ids)
        sent = transform.sample(clean, batch.attention_mask, generator)
        cosine = torch.nn.functional.cosine_similarity(
            model.pooled(sent, batch.attention_mask), model.pooled(clean, batch.attention_mask)
        )
        clean_public = model.embed_tokens(reference.input_ids)
        sent_public = transform.sample(clean_public, reference.attention_mask, generator)
    prior = BigramPrior.from_texts(model.tokenizer, public)
    ids, mask = batch.input_ids, batch.attention_mask
    noise = NoiseEstimate.fit(clean_public, sent_public, reference.attention_mask)
    obfuscated = (
        nearest_neighbour_attack(model, sent, ids, mask),
        beam_attack(model, sent, mask, ids, noise, prior, beam=beam),
    )
    plain = (nearest_neighbour_attack(model, clean, ids, mask),)
    return AttackReport(
        len(texts),
        len(public),
        model.fingerprint,
        float(cosine.mean()),
        obfuscated,
        plain,
        seeded,
    )
