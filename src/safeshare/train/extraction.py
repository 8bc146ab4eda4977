"""What a language model gives back: prefix -> suffix extraction and canary exposure.

**Extraction** (Carlini et al. 2021): give the model the first ``prefix`` units of a
text (bytes for the byte-level model, tokens for a fine-tuned one: :class:`Decoder`) and
greedy-decode ``suffix`` units; an *exact* extraction reproduces the text's
next ``suffix`` units, an *approximate* one reaches a normalised edit similarity of at
least ``approximate``.  Rates on training texts against held-out texts (Wilson
intervals) separate memorization from what any model of the language would guess.

**Exposure** (Carlini et al. 2019, "The Secret Sharer"): a canary is a template with a
random secret, ``"my number is 7 3 9 1"``; the model ranks it among all candidates of
the template by likelihood, and ``exposure = log2 |candidates| - log2 rank``.  A canary
the model never saw averages about ``log2(e) = 1.44`` bits; a memorized one reaches
``log2 |candidates|``.  The rank is exact when the candidates are enumerated; for a
larger space it is estimated from sampled candidates as in the paper, which cannot
resolve exposures above ``log2(samples + 1)``.

>>> round(edit_similarity(b"my number", b"my numbex"), 3)
0.889
>>> canaries = make_digit_canaries(2, 2, digits=4, rng=np.random.default_rng(0))
>>> len(canaries.texts), int(canaries.inserted.sum()), canaries.texts[0].startswith("my number is ")
(4, 2, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from safeshare.errors import InputError
from safeshare.evaluate.results import Proportion
from safeshare.train.canaries import UNSEEN_EXPOSURE

DEFAULT_TEMPLATE = "my number is {}"


class Scorer(Protocol):
    """A language model that scores texts (what exposure needs)."""

    @property
    def card(self) -> dict[str, Any]: ...

    def log_likelihoods(self, texts: Sequence[str]) -> np.ndarray: ...


class Decoder(Scorer, Protocol):
    """A language model that also decodes greedily, in its own units (bytes or tokens)."""

    @property
    def unit(self) -> str: ...  # "bytes" or "tokens"

    @property
    def context(self) -> int: ...

    def units(self, text: str) -> list[int]: ...

    def losses(self, texts: Sequence[str]) -> np.ndarray: ...

    def greedy(self, prompts: Sequence[Sequence[int]], tokens: int) -> list[list[int]]: ...


def edit_similarity(a: Sequence[int] | bytes, b: Sequence[int] | bytes) -> float:
    """``1 - Levenshtein(a, b) / max(len a, len b)`` (1.0 for two empty sequences)."""
    if not a and not b:
        return 1.0
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return 1.0 - previous[-1] / max(len(a), len(b))


@dataclass(frozen=True)
class Extraction:
    """Exact and approximate extraction rates on training and held-out texts."""

    exact_members: Proportion
    exact_nonmembers: Proportion
    approximate_members: Proportion
    approximate_nonmembers: Proportion
    prefix: int
    suffix: int
    approximate: float
    too_short: tuple[int, int]  # texts under prefix + suffix units, left out (train, held-out)
    unit: str = "bytes"

    def readings(self) -> list[str]:
        """Plain sentences: do training texts come back more often than held-out ones?"""
        lines = []
        for name, inside, outside in (
            ("exact", self.exact_members, self.exact_nonmembers),
            (f"approximate (similarity >= {self.approximate:g})", *self._approximate()),
        ):
            apart = inside.interval[0] > outside.interval[1]
            lines.append(
                f"{name} extraction of {self.suffix} {self.unit} after {self.prefix}: training texts "
                f"{inside.value:.1%} ({inside.interval[0]:.1%}-{inside.interval[1]:.1%}), "
                f"held-out {outside.value:.1%} ({outside.interval[0]:.1%}-"
                f"{outside.interval[1]:.1%}): "
                + ("memorization (intervals apart)" if apart else "no clear memorization")
            )
        return lines

    def _approximate(self) -> tuple[Proportion, Proportion]:
        return self.approximate_members, self.approximate_nonmembers

    def describe(self) -> dict[str, Any]:
        def share(p: Proportion) -> dict[str, Any]:
            return {"value": p.value, "interval": list(p.interval), "texts": p.trials}

        return {
            "method": "greedy prefix -> suffix extraction (Carlini et al. 2021)",
            f"prefix_{self.unit}": self.prefix,
            f"suffix_{self.unit}": self.suffix,
            "approximate_similarity": self.approximate,
            "exact": {
                "members": share(self.exact_members),
                "nonmembers": share(self.exact_nonmembers),
            },
            "approximate": {
                "members": share(self.approximate_members),
                "nonmembers": share(self.approximate_nonmembers),
            },
            "too_short": {"members": self.too_short[0], "nonmembers": self.too_short[1]},
        }


def _extract(
    model: Decoder, texts: Sequence[str], prefix: int, suffix: int, approximate: float
) -> tuple[Proportion, Proportion, int]:
    encoded = [model.units(t) for t in texts]
    usable = [e for e in encoded if len(e) >= prefix + suffix]
    exact = close = 0
    for start in range(0, len(usable), 512):
        part = usable[start : start + 512]
        decoded = model.greedy([e[:prefix] for e in part], suffix)
        for text, guess in zip(part, decoded, strict=True):
            truth = text[prefix : prefix + suffix]
            exact += guess == truth
            close += edit_similarity(guess, truth) >= approximate
    return (
        Proportion.of(exact, len(usable)),
        Proportion.of(close, len(usable)),
        len(encoded) - len(usable),
    )


def extraction_rates(
    model: Decoder,
    members: Sequence[str],
    nonmembers: Sequence[str],
    *,
    prefix: int = 16,
    suffix: int = 16,
    approximate: float = 0.9,
) -> Extraction:
    """Extraction rates on ``members`` (training texts) and ``nonmembers`` (held out).

    Texts shorter than ``prefix + suffix`` units are left out (counted, never shown).
    """
    unit = model.unit
    for name, value in (("prefix", prefix), ("suffix", suffix)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a positive whole number of {unit}, got {value!r}")
    if prefix + suffix > model.context:
        raise InputError(
            f"prefix + suffix ({prefix + suffix} {unit}) exceed the model's context "
            f"({model.context}); shorten them"
        )
    if not 0 < approximate <= 1:
        raise InputError(f"approximate must lie in (0, 1], got {approximate!r}; try 0.9")
    exact_in, close_in, short_in = _extract(model, members, prefix, suffix, approximate)
    exact_out, close_out, short_out = _extract(model, nonmembers, prefix, suffix, approximate)
    if not exact_in.trials or not exact_out.trials:
        raise InputError(
            f"no training or no held-out text has {prefix + suffix} {unit} or more; shorten "
            "prefix and suffix"
        )
    return Extraction(
        exact_in,
        exact_out,
        close_in,
        close_out,
        prefix,
        suffix,
        approximate,
        (short_in, short_out),
        unit,
    )


@dataclass(frozen=True)
class DigitCanaries:
    """Canary texts (a template with random digits) and which of them go into training."""

    secrets: np.ndarray  # the random numbers, int64 per canary
    inserted: np.ndarray  # bool per canary
    template: str
    digits: int

    @property
    def texts(self) -> list[str]:
        return [self.candidate(int(s)) for s in self.secrets]

    def training_texts(self, repetitions: int = 1) -> list[str]:
        """The inserted canaries, each ``repetitions`` times (records of their own)."""
        if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
            raise InputError(f"repetitions must be a positive whole number, got {repetitions!r}")
        chosen = [t for t, keep in zip(self.texts, self.inserted, strict=True) if keep]
        return [t for t in chosen for _ in range(repetitions)]

    def candidate(self, secret: int) -> str:
        """The template with ``secret``'s digits, space-separated."""
        return self.template.format(" ".join(f"{secret:0{self.digits}d}"))


def make_digit_canaries(
    inserted: int,
    held_out: int,
    *,
    digits: int = 6,
    template: str = DEFAULT_TEMPLATE,
    rng: np.random.Generator,
) -> DigitCanaries:
    """``inserted + held_out`` canaries with distinct random secrets of ``digits`` digits."""
    if template.count("{}") != 1:
        raise InputError("the canary template must hold exactly one {} for the secret")
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 12:
        raise InputError(f"digits must be a whole number in [1, 12], got {digits!r}")
    total = inserted + held_out
    if inserted < 1 or held_out < 1 or total > 10**digits // 2:
        raise InputError(
            f"ask for at least one inserted and one held-out canary, and at most "
            f"{10**digits // 2} in all with {digits} digits"
        )
    secrets: set[int] = set()
    while len(secrets) < total:
        secrets.add(int(rng.integers(10**digits)))
    order = rng.permutation(np.array(sorted(secrets), dtype=np.int64))
    flags = np.zeros(total, dtype=bool)
    flags[:inserted] = True
    return DigitCanaries(order, flags, template, digits)


def draw_digit_canaries(
    count: int,
    *,
    digits: int = 6,
    template: str = DEFAULT_TEMPLATE,
    rng: np.random.Generator,
) -> DigitCanaries:
    """``count`` canaries with distinct random secrets, each inserted independently with
    probability 1/2 (what the one-run audit's theorem requires; counts vary from run to run).

    >>> drawn = draw_digit_canaries(200, digits=4, rng=np.random.default_rng(0))
    >>> len(drawn.texts), 70 < int(drawn.inserted.sum()) < 130
    (200, True)
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 2:
        raise InputError(f"the number of canaries must be a whole number >= 2, got {count!r}")
    made = make_digit_canaries(count - 1, 1, digits=digits, template=template, rng=rng)
    return DigitCanaries(made.secrets, rng.random(count) < 0.5, template, digits)


@dataclass(frozen=True)
class Exposure:
    """Exposure in bits of each canary, and how the ranks were found."""

    exposures: np.ndarray
    inserted: np.ndarray
    space_bits: float
    method: str

    @property
    def inserted_mean(self) -> float:
        return float(self.exposures[self.inserted].mean())

    @property
    def held_out_mean(self) -> float:
        return float(self.exposures[~self.inserted].mean())

    def readings(self) -> list[str]:
        return [
            f"canary exposure ({self.method}, at most {self.space_bits:.1f} bits): inserted "
            f"{self.inserted_mean:.2f} bits (mean of {int(self.inserted.sum())}), never inserted "
            f"{self.held_out_mean:.2f} bits (mean of {int((~self.inserted).sum())}; a canary "
            f"the model never saw averages {UNSEEN_EXPOSURE:.2f})"
        ]

    def describe(self) -> dict[str, Any]:
        return {
            "method": f"exposure (Carlini et al. 2019), {self.method}",
            "space_bits": self.space_bits,
            "inserted_mean": self.inserted_mean,
            "held_out_mean": self.held_out_mean,
            "inserted": [float(x) for x in self.exposures[self.inserted]],
            "held_out": [float(x) for x in self.exposures[~self.inserted]],
        }


def canary_exposure(
    model: Scorer,
    canaries: DigitCanaries,
    *,
    enumerate_up_to: int = 10_000,
    samples: int = 10_000,
    rng: np.random.Generator,
    scores: np.ndarray | None = None,
) -> Exposure:
    """Each canary's exposure: exact over all ``10**digits`` candidates when there are at
    most ``enumerate_up_to``, else estimated from ``samples`` uniform candidates (``rng``).
    ``scores``: the canaries' log-likelihoods when the caller has them (not scored again)."""
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise InputError(f"samples must be a positive whole number, got {samples!r}")
    space = 10**canaries.digits
    if space <= enumerate_up_to:
        pool = np.arange(space)
        method = f"exact rank among all {space} candidates"
    else:
        pool = rng.integers(space, size=samples)
        method = f"rank estimated from {samples} sampled candidates"
    likelihoods = model.log_likelihoods([canaries.candidate(int(s)) for s in pool])
    # enumerated: the canaries' own scores come from the same pass as the candidates'
    enumerated = space <= enumerate_up_to
    if enumerated:
        scores = likelihoods[canaries.secrets]
    elif scores is None:
        scores = model.log_likelihoods(canaries.texts)
    ranked = np.sort(likelihoods)
    # candidates at least as likely as the canary (ties count against it: conservative)
    above = ranked.size - np.searchsorted(ranked, scores, side="left")
    if enumerated:
        ranks = np.maximum(above, 1).astype(np.float64)  # the canary is one of them
    else:
        ranks = np.maximum(space * (above + 1) / (samples + 1), 1.0)
    bits = math.log2(space)
    return Exposure(bits - np.log2(ranks), canaries.inserted.copy(), bits, method)
