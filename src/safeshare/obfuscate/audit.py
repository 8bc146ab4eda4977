"""Attack a released transform on a set of texts: what ``safeshare obfuscate attack`` reports.

:func:`attack_transform` obfuscates the texts with the transform (as a client would), and, side
by side, with plain Gaussian noise at several scales (the baseline), then runs on each: the
nearest-neighbour attack, the BeamClean-style attack and (on the transform by default) the
learned inversion network.  The attacker's side knowledge, the BeamClean noise estimate, the
bigram prior and the inverter's training pairs, comes from **public** texts only, never the
evaluated ones.  A causal frozen model is also attacked by BeamClean-style decoding under its
own next-token distribution (:class:`~safeshare.obfuscate.prior.LanguageModelPrior`): the
attacker knows the public model a transform is made for, and no offline prior over its tokens
is stronger.  Synthetic names and phone numbers are planted into the attacked texts
(:mod:`safeshare.obfuscate.pii`) and their recovery is reported separately.  Utility is the mean
cosine between pooled outputs of obfuscated and clean inputs, and, when the transform carries a
classification head and labels are given, the F1 of the head's predictions on obfuscated
inputs; for a causal language model also the next-token utility
(:class:`~safeshare.obfuscate.utility.NextTokenUtility`: top-1 agreement with the clean model
and mean KL of the next-token distributions).  The clean embeddings are attacked too, to show the attacks work.  The
:class:`AttackReport` holds numbers only, never a text.

>>> print(GUARANTEE.split(":")[0])
empirical, not formal
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare._progress import Progress
from safeshare.errors import InputError
from safeshare.obfuscate.attacks import (
    BEAM_MODEL_NAME,
    BEAM_NAME,
    NoiseEstimate,
    TokenRecovery,
    beam_tokens,
    nearest_neighbour_tokens,
    recovery,
    scored_positions,
)
from safeshare.obfuscate.card import identity
from safeshare.obfuscate.inversion import (
    ATTACK_NAME,
    INFORMATION_METHOD,
    InformationEstimate,
    Obfuscator,
    information_estimate,
    train_inverter,
)
from safeshare.obfuscate.model import FrozenModel, require_torch
from safeshare.obfuscate.pii import PIIRecovery, pii_positions, plant_pii, score_pii
from safeshare.obfuscate.prior import BigramPrior, LanguageModelPrior
from safeshare.obfuscate.transform import ObfuscationTransform, gaussian_noise, torch_generator
from safeshare.obfuscate.utility import NextTokenUtility, next_token_utility

REPORT_FORMAT = "safeshare-obfuscation-attack/2"
MAX_BEAM = 1024  # the BeamClean-style attack's widest beam
MAX_INVERTER_STEPS = 1_000_000  # the learned inverter's training steps at most
NN_NAME = "nearest neighbour"
LEARNED = "learned transform"
GUARANTEE = (
    "empirical, not formal: the share of tokens these attacks recover from the obfuscated "
    "embeddings; a stronger attacker may recover more"
)


def _row(found: TokenRecovery, source: str) -> dict[str, Any]:
    low, high = found.recovered.interval
    return {
        "attack": found.attack,
        "input": source,
        "recovered": found.recovered.value,
        "interval": [low, high],
        "tokens": found.recovered.trials,
    }


@dataclass(frozen=True)
class Condition:
    """One way of sending the texts (the transform, or Gaussian noise) and what attacks got."""

    name: str
    sigma: float | None
    utility: float
    f1: float | None
    recoveries: tuple[TokenRecovery, ...]
    pii: tuple[PIIRecovery, ...]
    next_token: NextTokenUtility | None = None
    information: InformationEstimate | None = None

    @property
    def strongest(self) -> TokenRecovery:
        """The attack that recovered the most tokens here."""
        return max(self.recoveries, key=lambda found: found.recovered.value)

    def to_dict(self) -> dict[str, Any]:
        """Numbers only (the next-token keys only for a causal model)."""
        out = {
            "input": self.name,
            "sigma": self.sigma,
            "utility_cosine": self.utility,
            "f1": self.f1,
            "attacks": [_row(found, self.name) for found in self.recoveries],
            "strongest": self.strongest.attack,
            "pii": [found.to_dict() for found in self.pii],
            "information": None if self.information is None else self.information.to_dict(),
        }
        return out if self.next_token is None else {**out, **self.next_token.to_dict()}


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
    conditions: tuple[Condition, ...] = ()
    positive: str | None = None
    inverter_steps: int = 0
    clean_f1: float | None = None
    transform: str = ""  # the identity of the transform measured (safeshare.obfuscate.card)

    @property
    def f1(self) -> float | None:
        """F1 of the head on the transform's obfuscated inputs (None without head and labels)."""
        return self.conditions[0].f1 if self.conditions else None

    @property
    def pii(self) -> tuple[PIIRecovery, ...]:
        """Planted-PII recovery of each attack on the transform's obfuscated inputs."""
        return self.conditions[0].pii if self.conditions else ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``attack.json``): numbers only, no text."""
        return {
            "format": REPORT_FORMAT,
            "model_fingerprint": self.fingerprint,
            "transform": self.transform,
            "texts": self.texts,
            "public_texts": self.public_texts,
            "utility_cosine": self.utility,
            "f1": self.f1,
            "f1_positive_class": self.positive,
            "clean_f1": self.clean_f1,
            "attacks": [_row(f, "obfuscated") for f in self.obfuscated]
            + [_row(f, "clean") for f in self.clean],
            "pii": [found.to_dict() for found in self.pii],
            "conditions": [condition.to_dict() for condition in self.conditions],
            "inverter_steps": self.inverter_steps,
            "secure_noise": not self.seeded,
            "guarantee": GUARANTEE,
        }

    def markdown(self) -> str:
        """A short report: one line per attack, the utility, and what the guarantee is."""
        f1 = "" if self.f1 is None else f" F1 of the head ({self.positive}) {self.f1:.3f}"
        if f1:
            f1 += "." if self.clean_f1 is None else f" ({self.clean_f1:.3f} on clean inputs)."
        lines = [
            "# Obfuscation attack report",
            "",
            f"{self.texts} texts attacked; noise estimate, language-model prior and inverter "
            f"training from {self.public_texts} public texts. Utility kept: mean cosine "
            f"{self.utility:.3f} between the model's outputs on obfuscated and clean inputs.{f1}",
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
        planted = [(c.name, p) for c in self.conditions for p in c.pii]  # (every row's)
        if planted:
            lines += [
                "",
                "| input | attack | planted | tokens recovered | whole entities recovered |",
                "|---|---|---|---|---|",
            ]
            for name, p in planted:
                lines.append(
                    f"| {name} | {p.attack} | {p.kind} | {p.tokens.value:.1%} of "
                    f"{p.tokens.trials} | {p.entities.value:.1%} of {p.entities.trials} |"
                )
        if self.conditions:
            lines += ["", *self._conditions_table()]
        causal = [(c.name, c.next_token) for c in self.conditions if c.next_token is not None]
        if causal:
            lines += [
                "",
                "| input | next-token top-1 agreement | mean KL (nats) |",
                "|---|---|---|",
            ]
            for name, kept in causal:
                lines.append(f"| {name} | {kept.agreement:.1%} | {kept.kl:.3f} |")
        lines += ["", f"Guarantee: {GUARANTEE}."]
        if self.seeded:
            lines.append("The obfuscation noise was seeded (reproducible, not secure).")
        return "\n".join(lines) + "\n"

    def _conditions_table(self) -> list[str]:
        """Every way of sending: utility, each attack, the strongest, the bits it reads."""
        attacks = [found.attack for found in self.conditions[0].recoveries]
        for condition in self.conditions[1:]:
            attacks += [f.attack for f in condition.recoveries if f.attack not in attacks]
        utility = "F1" if self.f1 is not None else "mean cosine"
        lines = [
            f"| input | {utility} | " + " | ".join(attacks) + " | strongest | bits a token read |",
            "|---|---|" + "---|" * len(attacks) + "---|---|",
        ]
        for condition in self.conditions:
            kept = condition.f1 if condition.f1 is not None else condition.utility
            found = {f.attack: f"{f.recovered.value:.1%}" for f in condition.recoveries}
            cells = " | ".join(found.get(attack, "not run") for attack in attacks)
            read = condition.information
            bits = "—" if read is None else f"{read.extracted:.2f} of {read.prior_bits:.2f}"
            lines.append(
                f"| {condition.name} | {kept:.3f} | {cells} | "
                f"{condition.strongest.recovered.value:.1%} | {bits} |"
            )
        lines += [
            "",
            "Bits a token read: what the learned inverter reads about each token, "
            f"{INFORMATION_METHOD}.",
        ]
        return lines


def f1_score(truth: Sequence[str], predicted: Sequence[str], positive: str) -> float:
    """F1 of ``positive`` (0 when it is never predicted nor true).

    >>> f1_score(["a", "b", "b"], ["b", "b", "a"], "b")
    0.5
    """
    hits = sum(t == positive and p == positive for t, p in zip(truth, predicted, strict=True))
    guessed = sum(p == positive for p in predicted)
    actual = sum(t == positive for t in truth)
    return 0.0 if guessed + actual == 0 else 2 * hits / (guessed + actual)


def attack_transform(
    model: FrozenModel,
    transform: ObfuscationTransform,
    texts: Sequence[str],
    public: Sequence[str],
    *,
    labels: Sequence[str] | None = None,
    positive: str | None = None,
    sigmas: Sequence[float] = (),
    plant: bool = True,
    inverter_steps: int = 300,
    invert_baselines: bool = True,
    beam: int = 8,
    max_public: int = 2000,
    seed: int | None = None,
    progress: Progress | None = None,
) -> AttackReport:
    """Obfuscate ``texts`` with ``transform`` (and Gaussian ``sigmas``) and attack them.

    ``public`` trains the attackers.  ``labels`` (one per text) with the transform's head give
    F1 (``positive``: the class scored, by default the rarer one).  ``inverter_steps=0`` skips
    the learned inversion; every row gets it by default (a fresh inverter each, trained on the
    row's own obfuscation of ``public``), ``invert_baselines=False`` keeps it to the
    transform's row.  Where the inverter runs, the row also gets the information it reads
    (:class:`~safeshare.obfuscate.inversion.InformationEstimate`).
    """
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
    if not (1 <= beam <= MAX_BEAM and 0 <= inverter_steps <= MAX_INVERTER_STEPS):
        raise InputError(
            f"beam={beam}, inverter_steps={inverter_steps}: need a beam in [1, {MAX_BEAM}] "
            f"and inverter steps in [0, {MAX_INVERTER_STEPS:,}]"
        )
    if any(not 0 < s < math.inf for s in sigmas):
        raise InputError(f"Gaussian sigmas must be finite numbers > 0, not {list(sigmas)}")
    truth, positive = _labels(transform, texts, labels, positive)
    generator, seeded = torch_generator(seed)
    planted = plant_pii(texts, np.random.default_rng(seed)) if plant else []
    attacked = [p.text for p in planted] if plant else texts
    batch, original, reference = (model.tokenize(x) for x in (attacked, texts, public))
    entity, kinds = pii_positions(model, planted) if plant else (None, [])
    prior = BigramPrior.from_texts(model.tokenizer, public)
    model_prior = LanguageModelPrior.of(model, public) if model.causal else None
    with torch.no_grad():
        clean = model.embed_tokens(batch.input_ids)
        clean_original = model.embed_tokens(original.input_ids)
        target = model.pooled(clean_original, original.attention_mask)
        clean_public = model.embed_tokens(reference.input_ids)
    ids, mask = batch.input_ids, batch.attention_mask
    scored = scored_positions(model, ids, mask)

    def run(name: str, sigma: float | None, obfuscate: Obfuscator, invert: bool) -> Condition:
        with torch.no_grad():
            sent = obfuscate(clean, mask, generator)
            sent_original = obfuscate(clean_original, original.attention_mask, generator)
            pooled = model.pooled(sent_original, original.attention_mask)
            sent_public = obfuscate(clean_public, reference.attention_mask, generator)
        cosine = float(torch.nn.functional.cosine_similarity(pooled, target).mean())
        next_token = None
        if model.causal:
            next_token = next_token_utility(
                model, clean_original, sent_original, original.attention_mask
            )
        f1 = None
        if truth is not None and transform.head is not None and positive is not None:
            f1 = f1_score(truth, transform.head.predict(pooled.numpy()), positive)
        noise = NoiseEstimate.fit(clean_public, sent_public, reference.attention_mask)
        guesses: list[tuple[str, Any]] = [
            (NN_NAME, nearest_neighbour_tokens(sent, model.table)),
            (BEAM_NAME, beam_tokens(model, sent, mask, noise, prior, beam=beam)),
        ]
        if model_prior is not None:
            guesses.append(
                (BEAM_MODEL_NAME, beam_tokens(model, sent, mask, noise, model_prior, beam=beam))
            )
        information = None
        if invert:
            inverter = train_inverter(
                model, obfuscate, public, steps=inverter_steps, seed=seed, progress=progress
            )
            guesses.append((ATTACK_NAME, inverter.tokens(sent, mask)))
            information = information_estimate(inverter, sent, mask, ids, scored, prior.unigram)
        found = tuple(recovery(model, g, ids, mask, attack) for attack, g in guesses)
        pii = tuple(
            row
            for attack, g in guesses
            if plant
            for row in score_pii(g, ids, entity, kinds, attack)
        )
        return Condition(name, sigma, cosine, f1, found, pii, next_token, information)

    learned = run(LEARNED, None, transform.sample, inverter_steps > 0)
    baselines = tuple(
        run(f"Gaussian noise σ={s:g}", s, _gaussian(s), invert_baselines and inverter_steps > 0)
        for s in sigmas
    )
    plain = (recovery(model, nearest_neighbour_tokens(clean, model.table), ids, mask, NN_NAME),)
    clean_f1 = None
    if truth is not None and transform.head is not None and positive is not None:
        clean_f1 = f1_score(truth, transform.head.predict(target.numpy()), positive)
    return AttackReport(
        len(texts),
        len(public),
        model.fingerprint,
        learned.utility,
        learned.recoveries,
        plain,
        seeded,
        (learned, *baselines),
        positive,
        inverter_steps,
        clean_f1,
        identity(transform),
    )


def _gaussian(sigma: float) -> Callable[[Any, Any, Any], Any]:
    def obfuscate(embeds: Any, attention_mask: Any, generator: Any) -> Any:
        return gaussian_noise(embeds, attention_mask, sigma, generator)

    return obfuscate


def _labels(
    transform: ObfuscationTransform,
    texts: Sequence[str],
    labels: Sequence[str] | None,
    positive: str | None,
) -> tuple[list[str] | None, str | None]:
    """The labels as strings and the class F1 scores (by default the rarer of the head's)."""
    if labels is None:
        return None, None
    truth = [str(label) for label in labels]
    if len(truth) != len(texts):
        raise InputError(f"{len(truth)} labels for {len(texts)} texts; pass one label per text")
    head = transform.head
    if head is None:
        raise InputError(
            "labels were given but the transform has no classification head to score; train "
            "it with `safeshare obfuscate train --label-column ...`"
        )
    unknown = [label for label in truth if label not in head.classes]
    if unknown:  # (an F1 of 0 for labels written another way would read as a lost utility)
        raise InputError(
            f"{len(unknown)} of the {len(truth)} labels ({len(set(unknown))} distinct) are none "
            f"of the head's classes {list(head.classes)}; write them as in the head's training "
            "data"
        )
    if positive is None:
        counts = {c: truth.count(c) for c in head.classes}
        positive = min(head.classes, key=lambda c: (counts[c], c))
    if positive not in head.classes:
        raise InputError(
            f"positive class {positive!r} is not one of the head's classes {list(head.classes)}"
        )
    if positive not in truth:
        raise InputError(
            f"no attacked text is of the class {positive!r}, so its F1 says nothing; attack "
            "texts of both classes (a larger --limit) or pass another --positive"
        )
    return truth, positive
