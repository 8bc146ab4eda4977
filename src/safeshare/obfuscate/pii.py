"""Planted PII: synthetic names and numbers put into texts, and how much of them attacks recover.

The tokens an attacker most wants are the identifying ones.  :func:`plant_pii` inserts, into
each text at a random word boundary near its start, a synthetic person's name (a first name
and a surname drawn from short public lists of common names) and a generated 11-digit phone
number (digits from the seeded ``numpy`` generator passed in); :func:`pii_positions` finds
their token positions through the tokenizer's character offsets; :func:`score_pii` gives, per
kind, the share of planted tokens an attack recovered and the share of whole entities it
recovered exactly (every token), each with a Wilson interval.  An entity cut by truncation is
not counted.  The planted values are synthetic: nobody's.

>>> import numpy as np
>>> planted = plant_pii(["see you at six"], np.random.default_rng(0))
>>> [kind for _, _, kind in planted[0].spans]
['name', 'number']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.evaluate import Proportion
from safeshare.obfuscate.model import FrozenModel

# common given names and surnames (US SSA baby-name and 2010 Census surname lists): public
FIRST_NAMES = (
    "James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "William",
    "Elizabeth", "David", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah",
    "Charles", "Karen", "Daniel", "Nancy", "Matthew", "Lisa", "Anthony", "Betty", "Mark",
    "Margaret", "Steven", "Sandra", "Paul", "Ashley", "Andrew", "Emily", "Joshua", "Donna",
    "Kevin", "Michelle", "Brian", "Carol", "George", "Amanda", "Edward", "Melissa", "Ronald",
    "Deborah", "Timothy", "Stephanie", "Jason", "Rebecca",
)  # fmt: skip
SURNAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
    "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor",
    "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez",
    "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright",
    "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall",
    "Rivera", "Campbell", "Mitchell", "Carter", "Roberts",
)  # fmt: skip
KINDS = ("name", "number")


@dataclass(frozen=True)
class PlantedText:
    """A text with planted entities: ``spans`` are ``(start, end, kind)`` character ranges."""

    text: str
    spans: tuple[tuple[int, int, str], ...]


@dataclass(frozen=True)
class PIIRecovery:
    """How much of one kind of planted entity an attack recovered: tokens and whole entities."""

    attack: str
    kind: str
    tokens: Proportion
    entities: Proportion

    def to_dict(self) -> dict[str, Any]:
        """Numbers only (never an entity)."""
        return {
            "attack": self.attack,
            "kind": self.kind,
            "tokens_recovered": self.tokens.value,
            "tokens_interval": list(self.tokens.interval),
            "tokens": self.tokens.trials,
            "entities_recovered": self.entities.value,
            "entities_interval": list(self.entities.interval),
            "entities": self.entities.trials,
        }


def plant_pii(
    texts: Sequence[str], rng: np.random.Generator, *, within_words: int = 6
) -> list[PlantedText]:
    """Insert ``"<First> <Surname> on <number>"`` into each text within its first words."""
    if not isinstance(rng, np.random.Generator):
        raise InputError(
            f"rng must be a numpy Generator (np.random.default_rng(seed)), not {type(rng).__name__}"
        )
    planted = []
    for text in texts:
        words = text.split(" ")
        at = int(rng.integers(0, min(len(words), within_words) + 1))
        name = (
            f"{FIRST_NAMES[rng.integers(len(FIRST_NAMES))]} {SURNAMES[rng.integers(len(SURNAMES))]}"
        )
        number = "0" + "".join(str(d) for d in rng.integers(0, 10, size=10))
        before = " ".join(words[:at])
        prefix = f"{before} " if before else ""
        start = len(prefix)
        middle = f"{name} on {number}"
        after = " ".join(words[at:])
        spans = (
            (start, start + len(name), "name"),
            (start + len(name) + 4, start + len(middle), "number"),
        )
        planted.append(PlantedText(prefix + middle + (f" {after}" if after else ""), spans))
    return planted


def pii_positions(model: FrozenModel, planted: Sequence[PlantedText]) -> tuple[Any, list[str]]:
    """``(entity, kinds)``: per token position of ``model.tokenize(texts)``, the index of the
    planted entity it belongs to (-1: none), and each entity's kind.  Truncated entities: -1."""
    encoded = model.tokenizer(
        [p.text for p in planted],
        padding=True,
        truncation=True,
        max_length=model.max_length,
        return_offsets_mapping=True,
    )
    width = max((len(ids) for ids in encoded["input_ids"]), default=0)
    entity = np.full((len(planted), width), -1, dtype=np.int64)
    kinds: list[str] = []
    for row, (item, offsets) in enumerate(zip(planted, encoded["offset_mapping"], strict=True)):
        for start, end, kind in item.spans:
            inside = [i for i, (a, b) in enumerate(offsets) if b > a >= start and b <= end]
            if not inside or offsets[inside[-1]][1] != end:  # cut by truncation
                continue
            entity[row, inside] = len(kinds)
            kinds.append(kind)
    return entity, kinds


def score_pii(
    guessed: Any, input_ids: Any, entity: Any, kinds: Sequence[str], attack: str
) -> tuple[PIIRecovery, ...]:
    """Per kind: planted tokens recovered and whole entities recovered exactly."""
    guessed, input_ids, entity = (np.asarray(x) for x in (guessed, input_ids, entity))
    if not guessed.shape == input_ids.shape == entity.shape:
        raise InputError(
            f"guesses {guessed.shape}, token ids {input_ids.shape} and planted positions "
            f"{entity.shape} do not match; tokenize the planted texts with the same model"
        )
    hits = guessed == input_ids
    labels = np.asarray(kinds)
    found = []
    for kind in KINDS:
        ids = np.flatnonzero(labels == kind)
        if ids.size == 0:
            continue
        positions = np.isin(entity, ids)
        whole = [bool(hits[entity == i].all()) for i in ids]
        found.append(
            PIIRecovery(
                attack,
                kind,
                Proportion.of(int(hits[positions].sum()), int(positions.sum())),
                Proportion.of(sum(whole), len(whole)),
            )
        )
    return tuple(found)
